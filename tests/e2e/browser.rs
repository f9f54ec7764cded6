//! The web console of `kgfuse serve` in a real browser: headless Chromium driven
//! through ChromeDriver's WebDriver protocol (plain JSON over HTTP). It loads the
//! page, runs a SPARQL query and reads the rows, retrieves a context and counts
//! the nodes of the drawn path graph, and saves screenshots of both tabs.

use crate::harness::Kgfuse;
use crate::http::{Server, agent, read};
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian (first) and Ubuntu put the browser and its driver.
const CHROMIUM: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
const CHROMEDRIVER: [&str; 2] = [
    "/usr/bin/chromedriver",
    "/usr/lib/chromium-browser/chromedriver",
];

/// The first of `candidates` that exists.
fn installed(candidates: [&'static str; 2]) -> &'static str {
    candidates
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .unwrap_or_else(|| {
            panic!(
                "none of {candidates:?} exists: `make test` installs chromium and chromium-driver"
            )
        })
}

/// A ChromeDriver process and one browser session; both end on drop.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Self {
        let (chromium, chromedriver) = (installed(CHROMIUM), installed(CHROMEDRIVER));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = agent()
                .get(format!("{base}/status"))
                .call()
                .ok()
                .map(read)
                .and_then(|(_, _, body)| serde_json::from_str::<Value>(&body).ok())
                .is_some_and(|status| status["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().expect("profile dir");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    format!("--user-data-dir={}", profile.path().display()),
                    "--window-size=1280,900",
                ],
            },
        }}});
        let mut browser = Self {
            driver,
            base,
            session: String::new(),
            _profile: profile,
        };
        let created = browser.call("POST", "/session", Some(capabilities));
        browser.session = created["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser
    }

    /// One WebDriver command; returns its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let response = match method {
            "GET" => agent().get(&url).call(),
            _ => agent()
                .post(&url)
                .send_json(body.unwrap_or_else(|| json!({}))),
        }
        .expect("chromedriver request");
        let (status, _, text) = read(response);
        let value: Value = serde_json::from_str(&text).expect("WebDriver JSON");
        assert_eq!(status, 200, "WebDriver {method} {path}: {text}");
        value["value"].clone()
    }

    fn open(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url})));
    }

    fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .expect("element id")
            .to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/click"), None);
    }

    /// Replaces the text of an input or textarea, as a user typing.
    fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/clear"), None);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn text(&self, css: &str) -> String {
        self.script(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
            json!([css]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    fn count(&self, css: &str) -> u64 {
        self.script(
            "return document.querySelectorAll(arguments[0]).length;",
            json!([css]),
        )
        .as_u64()
        .unwrap_or(0)
    }

    /// Waits for the page's status line to say `done` or `error`.
    fn wait_for_status(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.text("#status");
            if status == "done" || status == "error" {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the page never finished: {status}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Saves a screenshot and names it in the test output.
    fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.call("GET", "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64 PNG"))
            .expect("decodes");
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(std::env::temp_dir, PathBuf::from)
            .join("kgfuse-test-output");
        std::fs::create_dir_all(&dir).expect("output dir");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).expect("write screenshot");
        eprintln!("screenshot: {}", path.display());
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = agent()
                .delete(format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[test]
fn http_console_runs_a_query_and_draws_retrieved_paths_in_chromium() {
    let k = Kgfuse::hash();
    k.load(&["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"]);
    k.ingest_payment_fees();
    let server = Server::start(&k, &[]);
    let browser = Browser::start();
    browser.open(&format!("{}/", server.base));
    assert!(
        browser.text("h1").contains("kgfuse"),
        "{}",
        browser.text("body")
    );

    // SPARQL tab: type a query, press Run, read the rows.
    browser.type_into(
        "#query",
        "SELECT ?doc ?title WHERE { ?doc a kgfuse:Document ; rdfs:label ?title } ORDER BY ?title",
    );
    browser.click("#run");
    assert_eq!(
        browser.wait_for_status(),
        "done",
        "{}",
        browser.text("#error")
    );
    assert_eq!(browser.count("#results th"), 2);
    let rows = browser.count("#results tbody tr");
    assert!(rows >= 3, "{rows} rows");
    let table = browser.text("#results tbody");
    assert!(table.contains("Employee Handbook 2025"), "{table}");
    assert!(browser.text("#row-count").contains(&rows.to_string()));
    browser.screenshot("console-sparql");

    // A query that does not parse: the parser's message, not a blank page.
    browser.type_into("#query", "SELECT ?x WHERE { ?x a ");
    browser.click("#run");
    assert_eq!(browser.wait_for_status(), "error");
    assert!(
        browser.text("#error").contains("SPARQL syntax error"),
        "{}",
        browser.text("#error")
    );

    // Retrieve tab: dependency paths of the payment-fees code, drawn as a graph.
    browser.click("#tab-retrieve");
    browser.type_into(
        "#question",
        "Given the transaction value and the MCC, what is the most expensive MCC?",
    );
    browser.script(
        "const s = document.getElementById('strategy'); s.value = 'paths'; \
         s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    browser.click("#retrieve-run");
    assert_eq!(
        browser.wait_for_status(),
        "done",
        "{}",
        browser.text("#error")
    );
    let nodes = browser.count("#paths-graph g.node");
    let edges = browser.count("#paths-graph .edge");
    assert!(nodes >= 3 && edges >= 2, "{nodes} nodes, {edges} edges");
    let labels = browser.text("#paths-graph");
    assert!(labels.contains("most"), "{labels}");
    browser.script(
        "document.getElementById('paths-graph').scrollIntoView();",
        json!([]),
    );
    browser.screenshot("console-retrieve-paths");
    drop(browser);
    server.stop();
}

#[test]
fn http_console_asks_a_token_server_for_a_token_and_keeps_it_in_the_tab() {
    let k = Kgfuse::hash();
    k.load(&["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"]);
    let tokens = k.tmp.path().join("tokens.toml");
    let tokens = tokens.to_str().expect("utf-8");
    let token = k
        .ok(&[
            "token", "--tokens", tokens, "add", "viewer", "--scope", "read", "--store", "docs",
        ])
        .trim()
        .to_owned();
    let store = format!("docs={}", k.data().display());
    let server = Server::start(&k, &["--store", &store, "--tokens", tokens]);
    let browser = Browser::start();
    browser.open(&format!("{}/s/docs/", server.base));

    // The page's first requests are refused (401): it shows the token form.
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser.script(
        "return document.getElementById('token-form').hidden;",
        json!([]),
    ) != Value::Bool(false)
    {
        assert!(
            Instant::now() < deadline,
            "no token form: {}",
            browser.text("body")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    browser.type_into("#token", &token);
    browser.click("#token-form button");
    browser.type_into(
        "#query",
        "SELECT ?doc ?title WHERE { ?doc a kgfuse:Document ; rdfs:label ?title }",
    );
    browser.click("#run");
    assert_eq!(
        browser.wait_for_status(),
        "done",
        "{}",
        browser.text("#error")
    );
    let table = browser.text("#results tbody");
    assert!(table.contains("Employee Handbook 2025"), "{table}");
    // The token lives in this tab's session storage only.
    let kept = browser.script(
        "return [sessionStorage.getItem('kgfuse.console.token'), \
         JSON.stringify(localStorage), document.cookie];",
        json!([]),
    );
    assert_eq!(kept[0], Value::String(token.clone()));
    assert!(
        !kept[1].as_str().unwrap_or_default().contains(&token),
        "{kept}"
    );
    assert_eq!(kept[2], Value::String(String::new()));
    browser.screenshot("console-with-token");
    drop(browser);
    server.stop();
}
