//! `kgfuse mcp`: the real binary speaking newline-delimited JSON-RPC 2.0 on
//! stdin/stdout, driven by hand the way an MCP client launches a server.

use crate::harness::Kgfuse;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(120);

/// `k.cmd()` as a std command, so the child can be spawned with pipes.
fn spawn_mcp(k: &Kgfuse) -> Child {
    k.std_cmd()
        .args(["mcp", "--offline"])
        .env("KGFUSE_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kgfuse mcp")
}

/// Every stdout line, as read, on a channel.
fn lines(child: &mut Child) -> Receiver<String> {
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn send(stdin: &mut ChildStdin, message: &Value) {
    let mut line = serde_json::to_string(message).expect("json");
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .expect("write to kgfuse mcp");
    stdin.flush().expect("flush");
}

/// Parses a stdout line, which must be a JSON-RPC 2.0 message.
fn message(line: &str) -> Value {
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("stdout carries something other than JSON ({e}): {line}"));
    assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC 2.0: {line}");
    value
}

/// The reply to request `id` (notifications in between are checked and skipped).
fn reply(rx: &Receiver<String>, id: u64) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no reply to request {id} within {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("stdout closed before reply {id}"),
        };
        let value = message(&line);
        if value.get("id") == Some(&json!(id)) {
            return value;
        }
        assert!(
            value.get("method").is_some(),
            "a reply to another request: {line}"
        );
    }
}

fn call(stdin: &mut ChildStdin, rx: &Receiver<String>, id: u64, tool: &str, args: Value) -> Value {
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}),
    );
    reply(rx, id)
}

/// The MCP handshake as id 1: `initialize`, then `notifications/initialized`;
/// returns the reply to `initialize`.
fn handshake(stdin: &mut ChildStdin, rx: &Receiver<String>) -> Value {
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "kgfuse-e2e", "version": "0.0.0"}
        }}),
    );
    let init = reply(rx, 1);
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    init
}

#[test]
fn mcp_over_stdio_initializes_lists_tools_runs_sparql_and_exits_on_eof() {
    let k = Kgfuse::hash();
    k.load(&["ontology/kgfuse.ttl", "fixtures/can-sdk/can-sdk.ttl"]);
    let mut child = spawn_mcp(&k);
    let rx = lines(&mut child);
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut text);
        text
    });
    let mut stdin = child.stdin.take().expect("stdin");

    let init = handshake(&mut stdin, &rx);
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(result["serverInfo"]["name"], "kgfuse", "{init}");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");

    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    );
    let list = reply(&rx, 2);
    let tools = list["result"]["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "ask",
            "describe_entity",
            "retrieve_context",
            "search_case_base",
            "search_domain_kg",
            "sparql_query"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    let select = call(
        &mut stdin,
        &rx,
        3,
        "sparql_query",
        json!({"query": "SELECT ?f ?sig WHERE { ?f a kgfuse:Function ; kgfuse:name \"set_headlight_mode\" ; kgfuse:signature ?sig }"}),
    );
    let result = &select["result"];
    assert_eq!(result["isError"], false, "{select}");
    assert_eq!(
        result["structuredContent"]["variables"],
        json!(["f", "sig"])
    );
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([[
            "<https://w3id.org/kgfuse/fixtures/can-sdk/fn/body.lights.set_headlight_mode>",
            "\"def set_headlight_mode(bus: Bus, channel: int, mode: str) -> None\""
        ]]),
        "{select}"
    );
    assert_eq!(result["structuredContent"]["truncated"], false);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("?f\t?sig\n")),
        "{select}"
    );

    let update = call(
        &mut stdin,
        &rx,
        4,
        "sparql_query",
        json!({"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}),
    );
    assert_eq!(update["result"]["isError"], true, "{update}");
    assert!(
        update["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("read-only")),
        "{update}"
    );

    let bogus = call(
        &mut stdin,
        &rx,
        5,
        "retrieve_context",
        json!({"query": "headlights", "strategy": "bogus"}),
    );
    assert_eq!(bogus["result"]["isError"], true, "{bogus}");
    assert!(
        bogus["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("valid strategies")),
        "{bogus}"
    );

    // End of input ends the session and the process, cleanly.
    drop(stdin);
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "kgfuse mcp did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = stderr.join().expect("stderr reader");
    assert!(status.success(), "exit {status}; stderr: {stderr}");
    // Logs went to stderr, and nothing but JSON-RPC to stdout.
    assert!(stderr.contains("MCP session"), "{stderr}");
    for line in rx.try_iter() {
        message(&line);
    }
}

#[test]
fn mcp_over_a_graph_on_a_sparql_server_answers_like_the_cli() {
    let Some(server) = crate::remote::SparqlServer::oxigraph("mcp") else {
        return;
    };
    let k = server.init();
    k.load(&["fixtures/policy/policy.ttl"]);
    let question = "Can I work remotely from another country?";
    let cli = k.retrieve(question, "unified");
    let mut child = spawn_mcp(&k);
    let rx = lines(&mut child);
    let mut stdin = child.stdin.take().expect("stdin");
    handshake(&mut stdin, &rx);
    let retrieved = call(
        &mut stdin,
        &rx,
        2,
        "retrieve_context",
        json!({"query": question, "strategy": "unified"}),
    );
    assert_eq!(retrieved["result"]["isError"], false, "{retrieved}");
    let iris = |context: &Value| -> Vec<String> {
        context["unstructured"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|hit| hit["iri"].as_str().map(str::to_owned))
            .collect()
    };
    let over_mcp = iris(&retrieved["result"]["structuredContent"]);
    assert!(!over_mcp.is_empty(), "{retrieved}");
    assert_eq!(over_mcp, iris(&cli), "MCP and CLI on the same remote store");
    let select = call(
        &mut stdin,
        &rx,
        3,
        "sparql_query",
        json!({"query": "ASK { <https://w3id.org/kgfuse/fixtures/policy/RemoteWorkPolicy2025> ?p ?o }"}),
    );
    assert_eq!(select["result"]["isError"], false, "{select}");
    assert_eq!(
        select["result"]["structuredContent"],
        json!({"boolean": true}),
        "{select}"
    );
    drop(stdin);
    let _ = child.wait();
}
