//! Serving a team: one `kgfuse serve` with two stores and scoped tokens, probed
//! as an attacker with a token for store `a` would probe it for store `b`'s data;
//! HTTPS with a certificate made here, checked by curl.

use crate::harness::Kgfuse;
use crate::http::{Server, curl};
use std::path::Path;

/// Store `a`'s data: what its token holders may read.
const A_DATA: &str = r#"
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<urn:team:shared> {
    <http://a.example/notes> rdfs:label "alpha team notes" ; rdfs:comment "the alpha plan" .
}
"#;

/// Store `b`'s data, in a graph of the same name as `a`'s: nothing of it may
/// reach a caller holding only `a`.
const B_DATA: &str = r#"
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<urn:team:shared> {
    <http://b.example/secret> rdfs:label "bravo secret" ; rdfs:comment "the bravo salary table" ;
        <http://b.example/linksTo> <http://a.example/notes> .
}
"#;

/// What a response must never carry for a caller without `b`: b's IRIs and
/// texts (the attacker's questions use other words, as responses echo them).
fn leaks_b(body: &str) -> bool {
    body.contains("b.example") || body.contains("bravo secret") || body.contains("salary table")
}

/// A store with one TriG file of `data`.
fn store_with(data: &str) -> Kgfuse {
    let k = Kgfuse::hash();
    let file = k.tmp.path().join("data.trig");
    std::fs::write(&file, data).expect("write data");
    k.ok(&["load", &file.display().to_string()]);
    k
}

/// `kgfuse token add ID --scope S [--store NAME]` on `file`: the token.
fn add_token(k: &Kgfuse, file: &Path, id: &str, scope: &str, store: Option<&str>) -> String {
    let mut args = vec![
        "token",
        "--tokens",
        file.to_str().expect("utf-8"),
        "add",
        id,
    ];
    args.extend(["--scope", scope]);
    if let Some(store) = store {
        args.extend(["--store", store]);
    }
    let out = k.ok(&args);
    let token = out.trim().to_owned();
    assert!(token.starts_with("kgf_") && token.len() > 40, "{out:?}");
    token
}

/// curl with a bearer token (or none): status and body.
fn call(token: Option<&str>, args: &[&str]) -> (u16, String) {
    let header = token.map(|t| format!("Authorization: Bearer {t}"));
    let mut all: Vec<&str> = Vec::new();
    if let Some(header) = &header {
        all.extend(["-H", header]);
    }
    all.extend(args);
    let (status, _, body) = curl(&all);
    (status, body)
}

/// A SPARQL query by GET.
fn query(server: &Server, token: Option<&str>, store: &str, text: &str) -> (u16, String) {
    let url = server.url(&format!("/s/{store}/sparql"));
    let text = format!("query={text}");
    call(token, &["-G", &url, "--data-urlencode", &text])
}

#[test]
fn team_tokens_scope_stores_and_isolate_them_from_an_attacker() {
    let a = store_with(A_DATA);
    let b = store_with(B_DATA);
    let tokens = a.tmp.path().join("secrets/tokens.toml");
    let reader_a = add_token(&a, &tokens, "reader-a", "read", Some("a"));
    let writer_a = add_token(&a, &tokens, "writer-a", "write", Some("a"));
    let admin = add_token(&a, &tokens, "admin", "admin", None);
    let audit = a.tmp.path().join("audit.jsonl");
    let (store_a, store_b) = (
        format!("a={}", a.data().display()),
        format!("b={}", b.data().display()),
    );
    let server = Server::start(
        &a,
        &[
            "--store",
            &store_a,
            "--store",
            &store_b,
            "--tokens",
            tokens.to_str().expect("utf-8"),
            "--allow-updates",
            "--audit",
            audit.to_str().expect("utf-8"),
        ],
    );
    let everything = "SELECT * WHERE { ?s ?p ?o }";

    // Who may read what.
    let (status, body) = query(&server, None, "a", everything);
    assert_eq!(status, 401, "{body}");
    let (status, bad_token) = query(&server, Some("kgf_not-a-token"), "a", everything);
    assert_eq!(
        (status, &bad_token),
        (401, &body),
        "a wrong token reads as none"
    );
    let (status, body) = query(&server, Some(&reader_a), "a", everything);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("alpha team notes") && !leaks_b(&body),
        "{body}"
    );
    let (status, body) = query(&server, Some(&admin), "b", everything);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("bravo secret"),
        "the admin token holds every store"
    );

    // Store b, and a store that does not exist, look the same to reader-a.
    let (status_b, body_b) = query(&server, Some(&reader_a), "b", everything);
    let (status_none, body_none) = query(&server, Some(&reader_a), "nosuch", everything);
    assert_eq!(
        (status_b, &body_b),
        (403, &body_none),
        "existence must not show"
    );
    assert_eq!(status_none, 403);
    assert!(!leaks_b(&body_b));

    // Every path into b's data with reader-a's token: the request's status, and
    // nothing of b in its body.
    let sparql_a = server.url("/s/a/sparql");
    let base = server.base.clone();
    let port = base.rsplit(':').next().expect("port").to_owned();
    let attempts: Vec<(&str, Vec<String>)> = vec![
        (
            "FROM the graph b also names",
            q(
                &sparql_a,
                "SELECT * FROM <urn:team:shared> WHERE { ?s ?p ?o }",
            ),
        ),
        (
            "FROM NAMED and GRAPH",
            q(
                &sparql_a,
                "SELECT * FROM NAMED <urn:team:shared> WHERE { GRAPH ?g { ?s ?p ?o } }",
            ),
        ),
        (
            "GRAPH over every graph",
            q(&sparql_a, "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"),
        ),
        (
            "default-graph-uri",
            vec![
                "-G".into(),
                sparql_a.clone(),
                "--data-urlencode".into(),
                format!("query={everything}"),
                "--data-urlencode".into(),
                "default-graph-uri=urn:team:shared".into(),
            ],
        ),
        (
            "a property path from a's node",
            q(
                &sparql_a,
                "SELECT ?x WHERE { <http://a.example/notes> (<http://b.example/linksTo>|^<http://b.example/linksTo>|!<urn:x:none>)* ?x }",
            ),
        ),
        (
            "b's node by IRI",
            q(&sparql_a, "DESCRIBE <http://b.example/secret>"),
        ),
        (
            "SERVICE to this server's store b",
            q(
                &sparql_a,
                &format!(
                    "SELECT * WHERE {{ SERVICE <http://127.0.0.1:{port}/s/b/sparql> {{ ?s ?p ?o }} }}"
                ),
            ),
        ),
        (
            "SERVICE SILENT to this server's store b",
            q(
                &sparql_a,
                &format!(
                    "SELECT * WHERE {{ SERVICE SILENT <http://127.0.0.1:{port}/s/b/sparql> {{ ?s ?p ?o }} }}"
                ),
            ),
        ),
        (
            "Graph Store GET of the graph b also names",
            vec![server.url("/s/a/store?graph=urn%3Ateam%3Ashared")],
        ),
        (
            "Graph Store GET on b",
            vec![server.url("/s/b/store?graph=urn%3Ateam%3Ashared")],
        ),
        (
            "dot segments after a",
            vec![
                "--path-as-is".into(),
                format!("{base}/s/a/../b/sparql?query=ASK%7B%7D"),
            ],
        ),
        (
            "encoded dot segments after a",
            vec![
                "--path-as-is".into(),
                format!("{base}/s/a/%2e%2e/b/sparql?query=ASK%7B%7D"),
            ],
        ),
        (
            "an encoded slash in the store name",
            vec![
                "--path-as-is".into(),
                format!("{base}/s/a%2fb/sparql?query=ASK%7B%7D"),
            ],
        ),
        (
            "a doubled slash",
            vec![
                "--path-as-is".into(),
                format!("{base}//s/b/sparql?query=ASK%7B%7D"),
            ],
        ),
        (
            "the store name in capitals",
            vec![format!("{base}/s/B/sparql?query=ASK%7B%7D")],
        ),
        (
            "the bare path of a two-store server",
            vec![format!("{base}/sparql?query=ASK%7B%7D")],
        ),
        (
            "retrieve with b's words",
            json_post(&server.url("/s/a/retrieve"), "bravo salary"),
        ),
        (
            "ask with b's words",
            json_post(&server.url("/s/a/ask"), "What is the bravo salary?"),
        ),
        (
            "text2sparql with b's words",
            vec![
                "-G".into(),
                server.url("/s/a/text2sparql"),
                "--data-urlencode".into(),
                "question=Which things link to bravo?".into(),
                "--data-urlencode".into(),
                "dataset=https://example.org/any".into(),
            ],
        ),
        ("stats of b", vec![server.url("/s/b/stats")]),
        ("the console of b", vec![server.url("/s/b/")]),
    ];
    let mut report = Vec::new();
    for (what, args) in &attempts {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, body) = call(Some(&reader_a), &args);
        report.push(format!("{status} {what}"));
        assert!(!leaks_b(&body), "{what}: {status} leaks b: {body}");
        assert!(
            !body.contains(&reader_a) && !body.contains(b.data().to_str().expect("utf-8")),
            "{what}: the token or a server path in {body}"
        );
    }
    eprintln!(
        "isolation paths tried with a token for store a:\n  {}",
        report.join("\n  ")
    );
    // The console page is the same for every name: it shows no data.
    let (_, console_b) = call(None, &[&server.url("/s/b/")]);
    let (_, console_none) = call(None, &[&server.url("/s/nosuch/")]);
    assert_eq!(console_b, console_none);

    // Scopes: read cannot write; write cannot clear the whole store; revoked at once.
    let insert = "update=INSERT DATA { GRAPH <urn:team:shared> { <http://a.example/n2> <http://a.example/p> 1 } }";
    let (status, body) = call(Some(&reader_a), &[&sparql_a, "--data-urlencode", insert]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("needs write"), "{body}");
    let (status, body) = call(Some(&writer_a), &[&sparql_a, "--data-urlencode", insert]);
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        Some(&writer_a),
        &[
            &sparql_a,
            "-H",
            "Content-Type: application/sparql-update",
            "--data",
            "CLEAR ALL",
        ],
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("needs admin"), "{body}");
    // LOAD would read b's files on the server's behalf: refused, nothing read.
    let load = format!(
        "update=LOAD <file://{}> INTO GRAPH <urn:team:stolen>",
        b.tmp.path().join("data.trig").display()
    );
    let (status, body) = call(Some(&writer_a), &[&sparql_a, "--data-urlencode", &load]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("LOAD") && !leaks_b(&body), "{body}");
    let (_, body) = query(&server, Some(&writer_a), "a", everything);
    assert!(
        !leaks_b(&body) && !body.contains("urn:team:stolen"),
        "{body}"
    );
    let (status, body) = call(
        Some(&writer_a),
        &[&server.url("/s/b/sparql"), "--data-urlencode", insert],
    );
    assert_eq!(status, 403, "writer-a on b: {body}");
    let (status, _) = query(&server, Some(&reader_a), "b", everything);
    assert_eq!(status, 403);
    a.ok(&[
        "token",
        "--tokens",
        tokens.to_str().expect("utf-8"),
        "revoke",
        "reader-a",
    ]);
    let (status, body) = query(&server, Some(&reader_a), "a", everything);
    assert_eq!(status, 401, "a revoked token stops at once: {body}");
    let (status, _) = query(&server, Some(&writer_a), "a", everything);
    assert_eq!(status, 200, "the other tokens go on");

    // The audit log: a line per request, token ids, never a token.
    let log = std::fs::read_to_string(&audit).expect("audit log");
    assert!(!log.contains(&reader_a) && !log.contains(&writer_a) && !log.contains(&admin));
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert!(lines.len() >= attempts.len() + 10, "{} lines", lines.len());
    assert!(
        lines
            .iter()
            .any(|l| l["token"] == "reader-a" && l["store"] == "b" && l["status"] == 403)
    );
    assert!(lines.iter().any(|l| l["token"] == "admin"
        && l["store"] == "b"
        && l["status"] == 200
        && l["rows"].as_u64().is_some_and(|rows| rows > 0)));
    assert!(
        lines.iter().any(|l| l["endpoint"] == "/s/a/retrieve"
            && l["status"] == 200
            && l["rows"].as_u64().is_some_and(|rows| rows > 0)),
        "a retrieval's items are its rows: {log}"
    );
    // SERVICE never reached the server itself: every request to b's endpoint
    // carried a token, so a token-less one would be the server calling itself.
    assert!(
        !lines
            .iter()
            .any(|l| l["token"].is_null() && l["endpoint"] == "/s/b/sparql"),
        "{log}"
    );
    server.stop();
}

/// curl arguments of a form-encoded query to `endpoint`.
fn q(endpoint: &str, text: &str) -> Vec<String> {
    vec![
        "-G".into(),
        endpoint.to_owned(),
        "--data-urlencode".into(),
        format!("query={text}"),
    ]
}

/// curl arguments of `POST {question}` to a JSON endpoint.
fn json_post(url: &str, question: &str) -> Vec<String> {
    vec![
        url.to_owned(),
        "-H".into(),
        "Content-Type: application/json".into(),
        "--data".into(),
        serde_json::json!({ "question": question }).to_string(),
    ]
}

#[test]
fn team_serve_refuses_an_open_non_loopback_bind_and_serves_https() {
    let k = store_with(A_DATA);
    // Reachable from other machines without a token file: refused before binding.
    let out = k
        .cmd()
        .args(["serve", "--bind", "0.0.0.0:0", "--offline"])
        .output()
        .expect("run serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tokens") && stderr.contains("--public"),
        "{stderr}"
    );

    // HTTPS with a self-signed certificate made here, checked by curl.
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("a certificate");
    let dir = k.tmp.path();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).expect("cert");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("key");
    let server = Server::start(
        &k,
        &[
            "--tls-cert",
            cert.to_str().expect("utf-8"),
            "--tls-key",
            key.to_str().expect("utf-8"),
        ],
    );
    assert!(
        server.base.starts_with("https://127.0.0.1:"),
        "{}",
        server.base
    );
    let cert = cert.to_str().expect("utf-8");
    let (status, body) = call(
        None,
        &[
            "--cacert",
            cert,
            "-G",
            &server.url("/sparql"),
            "--data-urlencode",
            "query=SELECT ?l WHERE { GRAPH ?g { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l } }",
        ],
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("alpha team notes"), "{body}");
    // Without the certificate, curl refuses the server (exit 60: peer
    // certificate cannot be authenticated); plain HTTP gets no answer.
    let untrusted = std::process::Command::new("curl")
        .args(["-sS", &server.url("/health")])
        .output()
        .expect("curl");
    assert_eq!(untrusted.status.code(), Some(60), "{untrusted:?}");
    let plain = std::process::Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "5",
            &server.base.replacen("https", "http", 1),
        ])
        .output()
        .expect("curl");
    assert!(!plain.status.success(), "{plain:?}");
    server.stop();
}

#[test]
fn team_serve_file_gives_each_store_its_own_limits() {
    let a = store_with(A_DATA);
    let b = store_with(B_DATA);
    let file = a.tmp.path().join("serve.toml");
    std::fs::write(
        &file,
        format!(
            "[stores.a]\ndata = {:?}\nmax_rows = 1\noffline = true\n\n[stores.b]\ndata = {:?}\n",
            a.data().display().to_string(),
            b.data().display().to_string()
        ),
    )
    .expect("serve.toml");
    let server = Server::start(&a, &["--config", file.to_str().expect("utf-8")]);
    for (store, cut) in [("a", true), ("b", false)] {
        let (status, _, body) = curl(&[
            "-D",
            "-",
            "-G",
            &server.url(&format!("/s/{store}/sparql")),
            "--data-urlencode",
            "query=SELECT * WHERE { GRAPH <urn:team:shared> { ?s ?p ?o } }",
        ]);
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body.to_ascii_lowercase()
                .contains("x-kgfuse-truncated: true"),
            cut,
            "store {store}: {body}"
        );
    }
    server.stop();
}
