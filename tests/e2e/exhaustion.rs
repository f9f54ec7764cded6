//! A write that runs out of disk says exactly what it did: nothing, when the
//! graph commit itself failed, or what it committed and that the store is
//! marked for repair, which the next command carries out once there is space.
//!
//! The disk is a real tmpfs mounted over the store's `graph/` or `vectors/`
//! directory, so one side fills while the other has room. Mounting needs root
//! with the right to mount (as on this project's machines and CI); where
//! `mount` is not permitted the tests say so and skip, any other failure fails.

use crate::harness::{Kgfuse, root};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the life of the value.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `kib` KiB on `dir` (created); `None` when mounting is
    /// not permitted here (not root, or a container without the right).
    fn mount(dir: &Path, kib: u64) -> Option<Self> {
        std::fs::create_dir_all(dir).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir)
            .output()
            .expect("run mount");
        if out.status.success() {
            return Some(Self {
                dir: dir.to_owned(),
            });
        }
        let why = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(
            [
                "permission denied",
                "not permitted",
                "must be superuser",
                "only root"
            ]
            .iter()
            .any(|refusal| why.contains(refusal)),
            "mount tmpfs on {}: {why}",
            dir.display()
        );
        eprintln!(
            "skipped: mounting a tmpfs is not permitted here ({})",
            why.trim()
        );
        None
    }

    /// Gives the file system room (what freeing space on a real disk does).
    fn grow(&self, kib: u64) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={kib}k")])
            .arg(&self.dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount {}", self.dir.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// A store (hash embedder) whose `side` directory (`graph` or `vectors`) is a
/// tmpfs of `kib` KiB, mounted before `init` so the store is made on it.
fn store_with_small(side: &str, kib: u64) -> Option<(Kgfuse, Tmpfs)> {
    let k = Kgfuse::empty();
    let disk = Tmpfs::mount(&k.data().join(side), kib)?;
    k.ok(&["init", "--embedder", "hash", "--dimension", "128"]);
    Some((k, disk))
}

fn triples(k: &Kgfuse) -> u64 {
    k.stats()["triples"].as_u64().expect("triples")
}

#[test]
fn a_load_that_fills_the_disk_changes_nothing_and_says_so() {
    let Some((k, disk)) = store_with_small("graph", 1024) else {
        return;
    };
    let before = triples(&k);
    // ~1 MB of Turtle: its bulk load needs more than the room left.
    let mut text = String::from("@prefix ex: <http://example.org/> .\n");
    for i in 0..20_000 {
        let _ = writeln!(text, "ex:n{i} ex:p \"value {i} of the filler data\" .");
    }
    let file = k.file("big.ttl", &text);
    let stderr = k.fails(&["load", &file]);
    assert!(
        stderr.contains("load failed before its commit and changed nothing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: the disk holding the store is full"),
        "{stderr}"
    );
    assert!(
        !k.data().join("journal.json").exists(),
        "nothing to repair: no journal"
    );
    disk.grow(64 * 1024);
    k.assert_consistent();
    assert_eq!(triples(&k), before, "the store is as it was");
    // With room, the same load goes through.
    k.ok(&["load", &file]);
    assert!(triples(&k) >= before + 20_000);
}

#[test]
fn an_ingest_whose_vectors_do_not_fit_says_what_it_committed() {
    let Some((k, disk)) = store_with_small("vectors", 200) else {
        return;
    };
    let fixture = root().join("fixtures/payment-fees").display().to_string();
    let stderr = k.fails(&["ingest", "code", &fixture]);
    assert!(
        stderr.contains("ingest: the graph change is committed (19 sources written, 0 dropped)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("writing the vector rows failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the store is marked for repair"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: the disk holding the store is full"),
        "{stderr}"
    );
    assert!(k.data().join("journal.json").exists(), "the repair mark");
    disk.grow(64 * 1024);
    // The next command repairs (vectors of the committed graph), then checks.
    k.assert_consistent();
    assert!(!k.data().join("journal.json").exists());
    let again = k.ok(&["ingest", "code", &fixture]);
    assert!(again.contains("0 written, 19 unchanged"), "{again}");
    let check = k.check_json();
    assert!(check["nodes"].as_u64().expect("nodes") > 200, "{check}");
}
