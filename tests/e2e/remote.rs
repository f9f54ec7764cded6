//! The graph on a SPARQL server instead of in the data directory, against two
//! real servers that `make test-deps` installs: Oxigraph server (PyPI `oxigraph`,
//! the standards-strict one) and Virtuoso Open Source 7.2 (Debian
//! `virtuoso-opensource`, the one with traps; see kgfuse-graph's `remote`
//! module). Each test starts its servers on 127.0.0.1 with a scratch directory
//! under the target dir and stops them by pid. The tests run when the servers are
//! installed; `make test` sets KGFUSE_REQUIRE_SERVERS=1, which turns a missing
//! install into a failure.

use crate::harness::{Kgfuse, root};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A SPARQL server of one test; killed when dropped.
pub(crate) struct SparqlServer {
    name: &'static str,
    child: Child,
    port: u16,
    /// `kgfuse init` arguments naming its endpoints.
    endpoints: Vec<String>,
}

impl Drop for SparqlServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `program` if it is installed, else `None` with a note (a failure under
/// KGFUSE_REQUIRE_SERVERS).
pub(crate) fn installed(program: PathBuf) -> Option<PathBuf> {
    if program.exists() {
        return Some(program);
    }
    assert!(
        std::env::var_os("KGFUSE_REQUIRE_SERVERS").is_none(),
        "{} is not installed: run `make test-deps`",
        program.display()
    );
    eprintln!(
        "skipped: {} is not installed (make test-deps)",
        program.display()
    );
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("address")
        .port()
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

/// Waits until `port` accepts connections; panics with the log if the server exits.
fn wait_for(child: &mut Child, port: u16, log: &Path) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the server exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no server on port {port}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl SparqlServer {
    /// `oxigraph serve` (`KGFUSE_OXIGRAPH` overrides where the binary is).
    pub(crate) fn oxigraph(test: &str) -> Option<Self> {
        let binary = installed(std::env::var_os("KGFUSE_OXIGRAPH").map_or_else(
            || {
                PathBuf::from(std::env::var("HOME").expect("HOME"))
                    .join(".cache/kgfuse/servers/venv/bin/oxigraph")
            },
            PathBuf::from,
        ))?;
        let port = free_port();
        let dir = scratch(&format!("oxigraph-{test}-{port}"));
        let log = dir.join("server.log");
        let mut child = Command::new(binary)
            .arg("serve")
            .arg("--location")
            .arg(dir.join("store"))
            .args(["--bind", &format!("127.0.0.1:{port}")])
            // A query kgfuse gave up on must not run on for ever.
            .args(["--timeout-s", "60"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start oxigraph serve");
        wait_for(&mut child, port, &log);
        let url = |path: &str| format!("http://127.0.0.1:{port}/{path}");
        Some(Self {
            name: "oxigraph",
            child,
            port,
            endpoints: vec![
                "--graph".into(),
                url("query"),
                "--graph-update".into(),
                url("update"),
                "--graph-store".into(),
                url("store"),
            ],
        })
    }

    /// `virtuoso-t` with a scratch database, its SQL and HTTP ports on loopback,
    /// and SPARQL updates granted to the anonymous SPARQL user.
    fn virtuoso(test: &str) -> Option<Self> {
        let binary = installed(PathBuf::from("/usr/bin/virtuoso-t"))?;
        let (sql_port, port) = (free_port(), free_port());
        let dir = scratch(&format!("virtuoso-{test}-{port}"));
        let db = dir.display();
        let ini = format!(
            "[Database]\nDatabaseFile = {db}/virtuoso.db\nErrorLogFile = {db}/virtuoso.log\n\
             LockFile = {db}/virtuoso.lck\nTransactionFile = {db}/virtuoso.trx\n\
             xa_persistent_file = {db}/virtuoso.pxa\nStriping = 0\nTempStorage = TempDatabase\n\
             [TempDatabase]\nDatabaseFile = {db}/virtuoso-temp.db\n\
             TransactionFile = {db}/virtuoso-temp.trx\nStriping = 0\n\
             [Parameters]\nServerPort = 127.0.0.1:{sql_port}\nDisableUnixSocket = 1\n\
             CaseMode = 2\nDirsAllowed = ., {db}\nNumberOfBuffers = 10000\n\
             MaxDirtyBuffers = 6000\nThreadsPerQuery = 2\n\
             [HTTPServer]\nServerPort = 127.0.0.1:{port}\n\
             ServerRoot = /var/lib/virtuoso-opensource-7/vsp\nServerThreads = 10\n\
             Charset = UTF-8\n[SPARQL]\nResultSetMaxRows = 10000\nMaxQueryExecutionTime = 60\n"
        );
        std::fs::write(dir.join("virtuoso.ini"), ini).expect("virtuoso.ini");
        let log = dir.join("server.log");
        let mut child = Command::new(binary)
            .current_dir(&dir)
            .args(["+foreground", "+configfile"])
            .arg(dir.join("virtuoso.ini"))
            .stdout(std::fs::File::create(&log).expect("log file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("start virtuoso-t");
        wait_for(&mut child, sql_port, &log);
        wait_for(&mut child, port, &log);
        let granted = Command::new("isql-vt")
            .arg(format!("127.0.0.1:{sql_port}"))
            .args(["dba", "dba", "exec=GRANT SPARQL_UPDATE TO \"SPARQL\";"])
            .output()
            .expect("run isql-vt");
        assert!(granted.status.success(), "{granted:?}");
        let url = |path: &str| format!("http://127.0.0.1:{port}/{path}");
        Some(Self {
            name: "virtuoso",
            child,
            port,
            endpoints: vec![
                "--graph".into(),
                url("sparql"),
                "--graph-store".into(),
                url("sparql-graph-crud"),
            ],
        })
    }

    /// A data directory with the hash embedder whose graph is on this server.
    pub(crate) fn init(&self) -> Kgfuse {
        self.init_with(Vec::new(), Vec::new())
    }

    /// The error of an `init` on this server (hash embedder of `dimension`)
    /// with more arguments and the RGW environment; checks it wrote no data
    /// directory.
    fn init_fails(&self, dimension: &str, more: Vec<String>) -> String {
        let mut k = Kgfuse::empty();
        k.env = CephRgw::env();
        let mut args = vec!["init", "--embedder", "hash", "--dimension", dimension];
        args.extend(self.endpoints.iter().map(String::as_str));
        args.extend(more.iter().map(String::as_str));
        let error = k.fails(&args);
        assert!(!k.data().exists(), "nothing written: {error}");
        error
    }

    /// [`SparqlServer::init`] with more `init` arguments and environment.
    fn init_with(&self, more: Vec<String>, env: Vec<(String, String)>) -> Kgfuse {
        let mut k = Kgfuse::empty();
        k.env = env;
        let mut args = vec!["init", "--embedder", "hash", "--dimension", "128"];
        args.extend(self.endpoints.iter().map(String::as_str));
        args.extend(more.iter().map(String::as_str));
        k.ok(&args);
        k
    }
}

/// A single-node Ceph cluster with its S3 gateway (tests/servers/ceph-rgw.sh),
/// with a user and one bucket; stopped by the pids it wrote.
struct CephRgw {
    run: PathBuf,
    port: u16,
    bucket: &'static str,
}

impl Drop for CephRgw {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(&self.run).into_iter().flatten().flatten() {
            if entry.path().extension().is_some_and(|e| e == "pid")
                && let Ok(pid) = std::fs::read_to_string(entry.path())
            {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
    }
}

const S3_ACCESS: &str = "kgfuse-test-access";
const S3_SECRET: &str = "kgfuse-test-secret";

impl CephRgw {
    fn start(test: &str) -> Option<Self> {
        installed(PathBuf::from("/usr/bin/radosgw"))?;
        let (mon_port, port) = (free_port(), free_port());
        let dir = scratch(&format!("ceph-{test}-{port}"));
        let bucket = "kgfuse";
        let out = Command::new(root().join("tests/servers/ceph-rgw.sh"))
            .arg(&dir)
            .args([
                &mon_port.to_string(),
                &port.to_string(),
                S3_ACCESS,
                S3_SECRET,
                bucket,
            ])
            .output()
            .expect("run ceph-rgw.sh");
        let rgw = Self {
            run: dir.join("run"),
            port,
            bucket,
        };
        assert!(
            out.status.success(),
            "ceph-rgw.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(rgw)
    }

    /// `kgfuse init` arguments for vectors under `prefix` in the bucket.
    fn vectors_args(&self, prefix: &str) -> Vec<String> {
        vec![
            "--vectors".into(),
            format!("s3://{}/{prefix}", self.bucket),
            "--vectors-option".into(),
            format!("aws_endpoint=http://127.0.0.1:{}", self.port),
            "--vectors-option".into(),
            "aws_region=us-east-1".into(),
            "--vectors-option".into(),
            "allow_http=true".into(),
        ]
    }

    /// The credentials, from the environment as in production.
    fn env() -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".into(), S3_ACCESS.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), S3_SECRET.into()),
        ]
    }
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
    let embedded = Kgfuse::hash();
    load_fixtures(&embedded);
    for server in [
        SparqlServer::oxigraph("same-contexts"),
        SparqlServer::virtuoso("same-contexts"),
    ]
    .into_iter()
    .flatten()
    {
        same_contexts(server.name, &server.init(), &embedded);
    }
}

#[test]
fn a_graph_on_virtuoso_and_vectors_on_ceph_rgw_answer_like_an_embedded_store() {
    let (Some(virtuoso), Some(rgw)) =
        (SparqlServer::virtuoso("with-s3"), CephRgw::start("with-s3"))
    else {
        return;
    };
    let remote = virtuoso.init_with(rgw.vectors_args("kg"), CephRgw::env());
    let embedded = Kgfuse::hash();
    load_fixtures(&embedded);
    same_contexts("virtuoso + ceph rgw", &remote, &embedded);
    // The grounded answer loop (offline model) gives the same answer.
    let question = "Can I work remotely from another country, and how many days a week?";
    let ask = |k: &Kgfuse| {
        let mut answer = k.json(&["ask", question, "--format", "json"]);
        answer.as_object_mut().map(|a| a.remove("trace"));
        answer
    };
    assert_eq!(ask(&remote), ask(&embedded));
    // A second data directory cannot take over the same vectors by accident;
    // with --attach it shares the store (another server of it) and answers
    // alike, writing nothing. An embedder of another dimension is refused.
    let mut second = rgw.vectors_args("kg");
    let error = virtuoso.init_fails("128", second.clone());
    assert!(error.contains("--attach"), "{error}");
    second.push("--attach".into());
    let error = virtuoso.init_fails("64", second.clone());
    assert!(error.contains("128-dimensional"), "{error}");
    let attached = virtuoso.init_with(second, CephRgw::env());
    assert_eq!(ask(&attached), ask(&remote));
    assert!(attached.ok(&["check"]).contains("check ok"));
    // A missing bucket is named, and nothing is written.
    let mut missing = Kgfuse::empty();
    missing.env = CephRgw::env();
    let mut args = vec!["init".to_owned(), "--embedder".into(), "hash".into()];
    args.extend(
        rgw.vectors_args("kg")
            .into_iter()
            .map(|a| a.replace("s3://kgfuse/", "s3://no-such-bucket/")),
    );
    let error = missing.fails(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        error.contains("does not exist") && error.contains("no-such-bucket"),
        "{error}"
    );
    assert!(!missing.data().exists(), "nothing written");
}

fn load_fixtures(k: &Kgfuse) {
    k.load(&["fixtures/policy/policy.ttl", "fixtures/support/support.ttl"]);
    k.ingest_payment_fees();
    let files = many_graphs();
    k.load(&files.iter().map(String::as_str).collect::<Vec<_>>());
    k.load(&[&big_graph()]);
}

/// One file of 10,503 quads, over Virtuoso's row cap of 10,000 (which cuts a
/// CONSTRUCT without saying so), with schema triples that make every one of its
/// quads entail another: loading it rebuilds the derived graph from a scan of
/// every graph, which must read the file whole (the derived counts are
/// compared with the embedded store's).
fn big_graph() -> String {
    let file = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(std::env::temp_dir, PathBuf::from)
        .join("kgfuse-test-output")
        .join("big-graph.ttl");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("dir");
    let mut text = "@prefix ex: <http://example.org/> .\n\
                    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
                    ex:Squad rdfs:subClassOf ex:Team .\n\
                    ex:name rdfs:subPropertyOf rdfs:label .\n\
                    ex:size rdfs:subPropertyOf ex:measure .\n"
        .to_owned();
    for i in 0..3500 {
        text.push_str(&format!(
            "ex:squad{i} a ex:Squad ; ex:name \"Squad {i}\" ; ex:size {i} .\n"
        ));
    }
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

/// Files that are graphs of their own, more than Virtuoso can name in the
/// headers of one answer (it echoes a protocol dataset as one header per graph,
/// and the HTTP client reads at most 128): kgfuse must name them in the query.
fn many_graphs() -> Vec<String> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(std::env::temp_dir, PathBuf::from)
        .join("kgfuse-test-output")
        .join("many-graphs");
    std::fs::create_dir_all(&dir).expect("dir");
    (0..80)
        .map(|i| {
            let file = dir.join(format!("team{i:02}.ttl"));
            let text = format!(
                "@prefix ex: <http://example.org/> .\n\
                 @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
                 ex:team{i} a ex:Team ; rdfs:label \"Team {i}\" ; ex:size {i} .\n"
            );
            std::fs::write(&file, text).expect("write");
            file.display().to_string()
        })
        .collect()
}

fn same_contexts(name: &str, remote: &Kgfuse, embedded: &Kgfuse) {
    load_fixtures(remote);
    let count = |k: &Kgfuse| {
        let stats = k.stats();
        (stats["triples"].clone(), stats["inferred_triples"].clone())
    };
    assert_eq!(count(remote), count(embedded), "{name}");
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
        let ask = |k: &Kgfuse| comparable(k.retrieve(question, strategy));
        assert_eq!(ask(remote), ask(embedded), "{name} {strategy}: {question}");
    }
    // SPARQL from the console reads the same union of graphs, and nothing else
    // (Virtuoso's own default graph holds its system graphs too).
    for query in [
        "SELECT (COUNT(*) AS ?n) WHERE { ?s a ?class }",
        "ASK { GRAPH <file:///nowhere> { ?s ?p ?o } }",
        "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
    ] {
        let sparql = |k: &Kgfuse| k.json(&["sparql", query, "--format", "json"]);
        assert_eq!(sparql(remote), sparql(embedded), "{name}: {query}");
    }
    // Past eighty graphs, every query still reads them all.
    let teams = "SELECT (COUNT(*) AS ?n) WHERE { ?team a <http://example.org/Team> }";
    let count = |k: &Kgfuse| k.json(&["sparql", teams, "--format", "json"]);
    assert_eq!(count(remote), count(embedded), "{name}: {teams}");
    assert!(
        count(remote).to_string().contains("80"),
        "{name}: {}",
        count(remote)
    );
    // SERVICE is refused before anything is sent.
    let refused = remote.fails(&[
        "sparql",
        "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
    ]);
    assert!(refused.contains("SERVICE"), "{name}: {refused}");
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
    let Some(server) = SparqlServer::oxigraph("lost-mid-write") else {
        return;
    };
    let k = server.init();
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
    // A load of more than one batch: the big file's 10,506 quads fill a batch,
    // which the writer thread posts when the next file's graph starts, while
    // the rest is parsed; that post is the one cut short.
    let big = big_graph();
    let next = many_graphs().swap_remove(0);
    let second = Outage::start(server.port, 20_000);
    let config_text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        config_text.replace(
            &format!("127.0.0.1:{}/", outage.port),
            &format!("127.0.0.1:{}/", second.port),
        ),
    )
    .expect("config");
    let error = k.fails(&["load", &big, &next]);
    assert!(
        error.contains("did not answer") || error.contains("failed"),
        "{error}"
    );
    second.end();
    k.assert_consistent();
    k.load(&[&big, &next]);
    k.assert_consistent();
    assert_eq!(
        k.json(&[
            "sparql",
            "SELECT (COUNT(*) AS ?n) WHERE { ?s a <http://example.org/Squad> }",
            "--format",
            "json"
        ])["results"]["bindings"][0]["n"]["value"],
        "3500",
        "every squad of the file loaded in full"
    );
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

#[test]
fn a_server_over_a_remote_graph_sees_graphs_another_process_adds() {
    let Some(server) = SparqlServer::oxigraph("reader") else {
        return;
    };
    let reader = server.init();
    reader.load(&["fixtures/policy/policy.ttl"]);
    let serving = crate::http::Server::start(&reader, &[]);
    let ask = "ASK { <https://w3id.org/kgfuse/fixtures/support/Tier1> a \
               <https://w3id.org/kgfuse/examples/support#EscalationTier> }";
    let answer = || {
        let response = crate::http::agent()
            .post(serving.url("/sparql"))
            .header("Accept", "application/sparql-results+json")
            .send_form([("query", ask)])
            .expect("POST /sparql");
        let (status, _, body) = crate::http::read(response);
        assert_eq!(status, 200, "{body}\n{}", serving.log());
        serde_json::from_str::<Value>(&body).expect("JSON")["boolean"] == Value::Bool(true)
    };
    // What the reader derives from the graph (the lexicon retrieval links
    // with) is built by its first retrieval.
    let lexical = || {
        let (status, context) = crate::http::post_json(
            &serving,
            "/retrieve",
            &serde_json::json!({"question": "Tier 1 frontline support", "strategy": "bm25"}),
        );
        assert_eq!(status, 200, "{context}");
        context.to_string().contains("fixtures/support/Tier1")
    };
    assert!(!answer(), "not loaded yet");
    assert!(!lexical(), "not loaded yet");
    // Another process, with a data directory of its own, adds a graph on the
    // same server; the long-running reader sees it once it reads the registry
    // again (at most 5 s later), without a restart: in its queries, and in what
    // it derived from the graph (the write's change stamp tells it).
    let writer = server.init();
    writer.load(&["fixtures/support/support.ttl"]);
    let started = Instant::now();
    while !answer() || !lexical() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the reader never saw the new graph\n{}",
            serving.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn object_storage_that_ignores_conditional_put_is_refused() {
    // s3rver (npm) is an S3 fake that overwrites on `If-None-Match: *`; two
    // writers there silently lose commits, so kgfuse must refuse it, and write
    // nothing.
    let Some(binary) = installed(
        PathBuf::from(std::env::var("HOME").expect("HOME"))
            .join(".cache/kgfuse/servers/s3rver/node_modules/.bin/s3rver"),
    ) else {
        return;
    };
    let port = free_port();
    let dir = scratch(&format!("s3rver-{port}"));
    let log = dir.join("server.log");
    let mut child = Command::new(binary)
        .args(["--directory", &dir.join("data").display().to_string()])
        .args(["--address", "127.0.0.1", "--port", &port.to_string()])
        .args(["--configure-bucket", "kgfuse"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start s3rver");
    wait_for(&mut child, port, &log);
    let mut k = Kgfuse::empty();
    k.env = vec![
        ("AWS_ACCESS_KEY_ID".into(), "S3RVER".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "S3RVER".into()),
    ];
    let endpoint = format!("aws_endpoint=http://127.0.0.1:{port}");
    let error = k.fails(&[
        "init",
        "--embedder",
        "hash",
        "--vectors",
        "s3://kgfuse/kg",
        "--vectors-option",
        &endpoint,
        "--vectors-option",
        "aws_region=us-east-1",
        "--vectors-option",
        "allow_http=true",
    ]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(error.contains("conditional PUT"), "{error}");
    assert!(!k.data().exists(), "nothing written");
}
