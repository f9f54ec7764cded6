//! The graph on a SPARQL server instead of in the data directory: Oxigraph server
//! (PyPI `oxigraph`, installed by `make test-deps`), started by each test on
//! 127.0.0.1 with a scratch directory under the target dir and stopped by pid.
//! The tests run when the server is installed; `make test` sets
//! KGFUSE_REQUIRE_SERVERS=1, which turns a missing install into a failure.

use crate::harness::{Kgfuse, root};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One Oxigraph server; killed when dropped.
struct OxigraphServer {
    child: Child,
    port: u16,
}

impl Drop for OxigraphServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `oxigraph` binary `make test-deps` installs (`KGFUSE_OXIGRAPH` overrides).
fn oxigraph_binary() -> Option<PathBuf> {
    let binary = std::env::var_os("KGFUSE_OXIGRAPH").map_or_else(
        || {
            PathBuf::from(std::env::var("HOME").expect("HOME"))
                .join(".cache/kgfuse/servers/venv/bin/oxigraph")
        },
        PathBuf::from,
    );
    if binary.exists() {
        return Some(binary);
    }
    assert!(
        std::env::var_os("KGFUSE_REQUIRE_SERVERS").is_none(),
        "no Oxigraph server at {}: run `make test-deps`",
        binary.display()
    );
    eprintln!(
        "skipped: no Oxigraph server at {} (make test-deps)",
        binary.display()
    );
    None
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(std::env::temp_dir, PathBuf::from)
        .join("kgfuse-test-servers")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

impl OxigraphServer {
    /// A server on a free loopback port with a fresh store, or `None` (see the
    /// module documentation).
    fn start(name: &str) -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("address")
            .port();
        let dir = scratch(&format!("{name}-{port}"));
        let log = dir.join("server.log");
        let child = Command::new(oxigraph_binary()?)
            .arg("serve")
            .arg("--location")
            .arg(dir.join("store"))
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start oxigraph serve");
        let mut server = Self { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "oxigraph serve exited ({status}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "oxigraph serve did not listen on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// `kgfuse init` arguments for this server.
    fn init_args(&self) -> Vec<String> {
        [
            "init",
            "--embedder",
            "hash",
            "--dimension",
            "128",
            "--graph",
            &self.url("query"),
            "--graph-update",
            &self.url("update"),
            "--graph-store",
            &self.url("store"),
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

fn init_remote(server: &OxigraphServer) -> Kgfuse {
    let k = Kgfuse::empty();
    let args = server.init_args();
    k.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    k
}

/// A context without what depends on timing or on where the graph is.
fn comparable(mut context: Value) -> Value {
    if let Some(object) = context.as_object_mut() {
        object.remove("trace");
        object.remove("timing");
    }
    context
}

#[test]
fn a_graph_on_a_sparql_server_gives_the_same_contexts_as_an_embedded_one() {
    let Some(server) = OxigraphServer::start("same-contexts") else {
        return;
    };
    let remote = init_remote(&server);
    let embedded = Kgfuse::hash();
    for k in [&remote, &embedded] {
        k.load(&["fixtures/policy/policy.ttl", "fixtures/support/support.ttl"]);
        k.ingest_payment_fees();
    }
    let count = |k: &Kgfuse| {
        let stats = k.stats();
        (stats["triples"].clone(), stats["inferred_triples"].clone())
    };
    assert_eq!(count(&remote), count(&embedded));
    for (question, strategy) in [
        ("Can I work remotely from another country?", "unified"),
        ("Which tier does a payment outage escalate to?", "unified"),
        ("How is the average fee of a payment computed?", "unified"),
        ("How is the average fee of a payment computed?", "domain"),
        ("How is the average fee of a payment computed?", "paths"),
        (
            "How is the average fee of a payment computed?",
            "neighborhood",
        ),
        ("Who approves remote work?", "hybrid"),
        ("Who approves remote work?", "bm25"),
    ] {
        let ask = |k: &Kgfuse| {
            comparable(k.json(&[
                "retrieve",
                question,
                "--strategy",
                strategy,
                "--format",
                "json",
            ]))
        };
        assert_eq!(ask(&remote), ask(&embedded), "{strategy}: {question}");
    }
    // SPARQL from the console reads the same union of graphs.
    let query = "SELECT (COUNT(*) AS ?n) WHERE { ?s a ?class }";
    let sparql = |k: &Kgfuse| k.json(&["sparql", query, "--format", "json"]);
    assert_eq!(sparql(&remote), sparql(&embedded));
    // SERVICE is refused before anything is sent.
    let refused = remote.fails(&[
        "sparql",
        "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
    ]);
    assert!(refused.contains("SERVICE"), "{refused}");
    remote.assert_consistent();
}

/// A TCP relay between kgfuse and the server that goes down, like a server or a
/// network does, once the client has sent `budget` bytes (0: never): open
/// connections are cut and new ones closed at once, until [`Outage::end`].
struct Outage {
    port: u16,
    down: Arc<AtomicBool>,
    budget: Arc<AtomicUsize>,
}

impl Outage {
    fn start(server_port: u16, budget: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay port");
        let port = listener.local_addr().expect("address").port();
        let down = Arc::new(AtomicBool::new(false));
        let budget = Arc::new(AtomicUsize::new(budget));
        let sent = Arc::new(AtomicUsize::new(0));
        let relay_down = Arc::clone(&down);
        let relay_budget = Arc::clone(&budget);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if relay_down.load(Ordering::SeqCst) {
                    continue; // dropped: the connection closes at once
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let (down, sent) = (Arc::clone(&relay_down), Arc::clone(&sent));
                relay(client, server, down, sent, Arc::clone(&relay_budget));
            }
        });
        Self { port, down, budget }
    }

    /// The server is reachable again, for good.
    fn end(&self) {
        self.budget.store(0, Ordering::SeqCst);
        self.down.store(false, Ordering::SeqCst);
    }
}

/// Copies both ways; the client-to-server side counts bytes against the budget
/// and takes the relay down when it runs out.
fn relay(
    client: TcpStream,
    server: TcpStream,
    down: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    budget: Arc<AtomicUsize>,
) {
    let (mut client_in, mut server_out) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    let (mut server_in, mut client_out) = (server, client);
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        loop {
            let n = match client_in.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if down.load(Ordering::SeqCst) {
                break;
            }
            let budget = budget.load(Ordering::SeqCst);
            if budget > 0 && sent.fetch_add(n, Ordering::SeqCst) + n > budget {
                down.store(true, Ordering::SeqCst);
                break;
            }
            if server_out.write_all(&buffer[..n]).is_err() {
                break;
            }
        }
        let _ = client_in.shutdown(Shutdown::Both);
        let _ = server_out.shutdown(Shutdown::Both);
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_in, &mut client_out);
        let _ = client_out.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_write_cut_short_by_a_lost_server_is_repaired_on_the_next_open() {
    let Some(server) = OxigraphServer::start("lost-mid-write") else {
        return;
    };
    let k = init_remote(&server);
    k.load(&["fixtures/policy/policy.ttl"]);
    let before = k.stats();
    // From now on kgfuse reaches the server through a relay that goes down 20 kB
    // into the next command: after it has planned the load, while it writes.
    let outage = Outage::start(server.port, 20_000);
    let config = k.data().join("kgfuse.toml");
    let rewired = std::fs::read_to_string(&config).expect("config").replace(
        &format!("127.0.0.1:{}/", server.port),
        &format!("127.0.0.1:{}/", outage.port),
    );
    std::fs::write(&config, rewired).expect("config");
    let support = root().join("fixtures/support/support.ttl");
    let error = k.fails(&["load", &support.display().to_string()]);
    assert!(
        error.contains("did not answer") || error.contains("failed"),
        "{error}"
    );
    assert!(
        k.data().join("journal.json").exists(),
        "journal left behind after: {error}"
    );
    // The server is back: the next open repairs the pair, and loading the file
    // again completes what was cut short.
    outage.end();
    k.assert_consistent();
    assert!(!k.data().join("journal.json").exists());
    assert!(k.stats()["triples"].as_u64() >= before["triples"].as_u64());
    k.load(&["fixtures/support/support.ttl"]);
    k.assert_consistent();
    let context = k.json(&[
        "retrieve",
        "Which tier does a payment outage escalate to?",
        "--format",
        "json",
    ]);
    assert!(
        !context["structured_facts"]
            .as_array()
            .expect("facts")
            .is_empty(),
        "{context}"
    );
}
