//! The tools through a real rmcp client, in process, over `tokio::io::duplex`, on a
//! store holding the ontology, the CAN SDK and the policy fixtures (hash embedder).

use super::*;
use kgfuse::{CaseBaseOptions, EngineInit, NoProgress};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{QuitReason, RunningService};
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const CAN: &str = "https://w3id.org/kgfuse/fixtures/can-sdk/";
const KGFUSE: &str = "https://w3id.org/kgfuse/ontology#";

type Client = RunningService<RoleClient, ()>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn fixture_store(dir: &Path) -> Engine {
    let engine = Engine::init(dir.join("data"), EngineInit::hash(128))
        .await
        .expect("init");
    let files = [
        "ontology/kgfuse.ttl",
        "fixtures/can-sdk/can-sdk.ttl",
        "fixtures/policy/policy.ttl",
    ]
    .map(|f| root().join(f));
    engine.load(&files, None, &NoProgress).await.expect("load");
    engine
        .build_case_base(CaseBaseOptions::default(), &NoProgress)
        .await
        .expect("case base");
    engine
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

/// A successful call: its structured content and its text.
async fn ok(client: &Client, tool: &str, arguments: Value) -> (Value, String) {
    let result = call(client, tool, arguments.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {arguments}: {e}"));
    let text = text_of(&result);
    assert_ne!(result.is_error, Some(true), "{tool} {arguments}: {text}");
    let value = result
        .structured_content
        .unwrap_or_else(|| panic!("{tool}: no structured content"));
    assert!(!text.is_empty() && !text.contains('\u{0}'));
    (value, text)
}

/// A call that ends in a tool error: its message.
async fn tool_error(client: &Client, tool: &str, arguments: Value) -> String {
    let result = call(client, tool, arguments.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {arguments}: protocol error {e}"));
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} {arguments} should fail"
    );
    let message = text_of(&result);
    assert!(!message.contains('\n'), "one line: {message}");
    message
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_serve_an_in_process_client() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let engine = fixture_store(tmp.path()).await;
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(async move {
        KgfuseMcp::new(engine)
            .serve(server_io)
            .await
            .expect("server starts")
            .waiting()
            .await
    });
    let client: Client = ().serve(client_io).await.expect("client connects");

    // The server introduces itself.
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("kgfuse")
    );
    assert!(info.capabilities.tools.is_some());
    assert!(
        info.instructions
            .as_deref()
            .is_some_and(|i| i.contains("search_domain_kg"))
    );

    // tools/list: six read-only tools, each with a described object schema.
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
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
    for tool in &tools {
        let schema = &tool.input_schema;
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("{}: no properties", tool.name));
        assert!(!properties.is_empty(), "{}", tool.name);
        for (name, property) in properties {
            assert!(
                property.get("description").is_some(),
                "{}.{name} has no description",
                tool.name
            );
        }
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 40),
            "{}",
            tool.name
        );
        assert_eq!(
            tool.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true),
            "{}",
            tool.name
        );
    }
    let retrieve = tools
        .iter()
        .find(|t| t.name == "retrieve_context")
        .expect("retrieve_context");
    let properties = &retrieve.input_schema["properties"];
    assert_eq!(properties["strategy"]["default"], "auto");
    assert_eq!(properties["top_k"]["default"], 8);
    assert_eq!(
        retrieve.input_schema.get("required"),
        Some(&json!(["query"]))
    );

    // search_domain_kg: DomAgent's worked example.
    let (domain, text) = ok(
        &client,
        "search_domain_kg",
        json!({"query": "Write a function to activate high-beam headlights on bus 1"}),
    )
    .await;
    let functions = domain["functions"].as_array().expect("functions");
    assert!(!functions.is_empty() && functions.len() <= 5, "{domain}");
    let top = &functions[0];
    assert_eq!(top["name"], "set_headlight_mode", "{domain}");
    assert_eq!(top["package"], "body");
    assert_eq!(top["module"], "body.lights");
    assert_eq!(
        strings(&top["params"]),
        ["bus: Bus", "channel: int", "mode: str"]
    );
    assert_eq!(top["returns"], "None");
    assert!(
        strings(&top["depends_on"])
            .contains(&format!("{CAN}fn/can_bus.interface.send_frame").as_str())
    );
    assert!(!strings(&top["siblings"]).is_empty());
    assert!(!strings(&top["knowledge"]).is_empty());
    assert!(top["score"].is_number());
    assert!(top.get("code").is_none(), "lean: no code");
    assert!(!domain["trace"].as_array().expect("trace").is_empty());
    assert!(text.starts_with("1. def set_headlight_mode("), "{text}");
    let (two, _) = ok(
        &client,
        "search_domain_kg",
        json!({"query": "Write a function to activate high-beam headlights on bus 1", "top_t": 2}),
    )
    .await;
    assert!(two["functions"].as_array().expect("functions").len() <= 2);

    // search_case_base: the hazard-light case, with its code and functions.
    let (cases, text) = ok(
        &client,
        "search_case_base",
        json!({"query": "flash the hazard lights on bus 1"}),
    )
    .await;
    let list = cases["cases"].as_array().expect("cases");
    assert!(!list.is_empty() && list.len() <= 3, "{cases}");
    let hazard = list
        .iter()
        .find(|c| c["iri"] == format!("{CAN}case/flash-hazard-lights-on-bus-1"))
        .unwrap_or_else(|| panic!("no hazard case: {cases}"));
    assert!(hazard["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(
        hazard["code"]
            .as_str()
            .is_some_and(|c| c.contains("send_frame("))
    );
    assert!(
        strings(&hazard["exercises"])
            .contains(&format!("{CAN}fn/body.lights.set_hazard_lights").as_str())
    );
    assert!(text.contains("flash-hazard-lights-on-bus-1"), "{text}");

    // retrieve_context: an unknown strategy does not deserialise (the tool's
    // schema lists the names), and the tool error names the valid ones.
    let result = call(
        &client,
        "retrieve_context",
        json!({"query": "remote work", "strategy": "bogus"}),
    )
    .await
    .expect("a tool result");
    assert_eq!(result.is_error, Some(true));
    let message = text_of(&result);
    for name in Strategy::ALL.map(Strategy::name) {
        assert!(message.contains(name), "{message}");
    }
    assert!(message.contains("bogus"), "{message}");
    // ... and a known one gives the whole FusedContext.
    let (context, _) = ok(
        &client,
        "retrieve_context",
        json!({"query": "Can I work remotely from another country?", "strategy": "hybrid", "top_k": 4}),
    )
    .await;
    assert_eq!(context["strategy"], "hybrid");
    let passages = context["unstructured"].as_array().expect("unstructured");
    assert!(!passages.is_empty() && passages.len() <= 4, "{context}");
    for field in [
        "structured_facts",
        "functions",
        "cases",
        "paths",
        "sparql",
        "trace",
    ] {
        assert!(context.get(field).is_some(), "missing {field}");
    }
    let (auto, _) = ok(
        &client,
        "retrieve_context",
        json!({"query": "Write a function to activate high-beam headlights on bus 1"}),
    )
    .await;
    assert_eq!(auto["strategy"], "unified");
    assert_eq!(auto["functions"][0]["name"], "set_headlight_mode");
    // Bad counts and blank questions are invalid params too.
    for (tool, arguments) in [
        (
            "search_domain_kg",
            json!({"query": "headlights", "top_t": 0}),
        ),
        ("search_case_base", json!({"query": "   "})),
        ("retrieve_context", json!({"query": "x", "top_k": 500})),
        ("ask", json!({"question": "\n"})),
    ] {
        let error = call(&client, tool, arguments.clone())
            .await
            .expect_err("invalid params");
        assert!(
            matches!(&error, ServiceError::McpError(e) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS),
            "{tool} {arguments}: {error}"
        );
    }

    // Arguments that do not deserialise are tool errors (rmcp lets the model retry).
    let message = tool_error(&client, "ask", json!({})).await;
    assert!(message.contains("missing field `question`"), "{message}");

    // sparql_query: updates are refused, and nothing is written.
    let message = tool_error(
        &client,
        "sparql_query",
        json!({"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}),
    )
    .await;
    assert!(message.contains("read-only"), "{message}");
    let message = tool_error(
        &client,
        "sparql_query",
        json!({"query": "PREFIX ex: <urn:ex:> DELETE WHERE { ?s ex:p ?o }"}),
    )
    .await;
    assert!(message.contains("read-only"), "{message}");
    let (ask, text) = ok(
        &client,
        "sparql_query",
        json!({"query": "ASK { <urn:a> <urn:b> <urn:c> }"}),
    )
    .await;
    assert_eq!(ask, json!({"boolean": false}));
    assert_eq!(text, "false");
    // A SELECT answers with variables and rows of N-Triples terms.
    let (select, text) = ok(
        &client,
        "sparql_query",
        json!({"query": "SELECT ?f ?sig ?nothing WHERE { ?f a kgfuse:Function ; kgfuse:signature ?sig } ORDER BY ?f LIMIT 3"}),
    )
    .await;
    assert_eq!(select["variables"], json!(["f", "sig", "nothing"]));
    assert_eq!(select["truncated"], false);
    let rows = select["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    assert!(
        rows[0][0]
            .as_str()
            .is_some_and(|f| f.starts_with(&format!("<{CAN}fn/"))),
        "{select}"
    );
    assert!(
        rows[0][1].as_str().is_some_and(|s| s.starts_with("\"def ")),
        "{select}"
    );
    assert!(rows[0][2].is_null());
    assert!(text.starts_with("?f\t?sig\t?nothing\n<"), "{text}");
    assert!(text.ends_with("3 row(s)"), "{text}");
    // The row limit cuts and says so.
    let (all, text) = ok(
        &client,
        "sparql_query",
        json!({"query": "SELECT * WHERE { ?s ?p ?o }"}),
    )
    .await;
    assert_eq!(all["rows"].as_array().expect("rows").len(), SPARQL_MAX_ROWS);
    assert_eq!(all["truncated"], true);
    assert!(text.contains("truncated at 1000"), "{text}");
    let (limited, _) = ok(
        &client,
        "sparql_query",
        json!({"query": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 2000"}),
    )
    .await;
    assert_eq!(
        limited["rows"].as_array().expect("rows").len(),
        SPARQL_MAX_ROWS
    );
    assert_eq!(limited["truncated"], true);
    let (exact, _) = ok(
        &client,
        "sparql_query",
        json!({"query": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1000"}),
    )
    .await;
    assert_eq!(
        exact["rows"].as_array().expect("rows").len(),
        SPARQL_MAX_ROWS
    );
    assert_eq!(exact["truncated"], false, "exactly the limit is not a cut");
    let (graph, _) = ok(
        &client,
        "sparql_query",
        json!({"query": "CONSTRUCT { ?f rdfs:label ?l } WHERE { ?f a kgfuse:Function ; rdfs:label ?l } LIMIT 4"}),
    )
    .await;
    let triples = graph["triples"].as_array().expect("triples");
    assert_eq!(triples.len(), 4, "{graph}");
    assert_eq!(
        triples[0][1],
        "<http://www.w3.org/2000/01/rdf-schema#label>"
    );
    assert_eq!(graph["truncated"], false);
    let (described, _) = ok(
        &client,
        "sparql_query",
        json!({"query": "DESCRIBE ?s WHERE { ?s a kgfuse:Case }"}),
    )
    .await;
    assert!(!described["triples"].as_array().expect("triples").is_empty());
    let message = tool_error(
        &client,
        "sparql_query",
        json!({"query": "SELECT ?s WHERE { ?s ?p }"}),
    )
    .await;
    assert!(
        message.contains("1:"),
        "syntax errors carry a position: {message}"
    );

    // describe_entity: by label, by IRI, by prefixed name; ambiguity; nothing.
    let headlight = format!("{CAN}fn/body.lights.set_headlight_mode");
    let (entity, text) = ok(
        &client,
        "describe_entity",
        json!({"iri_or_label": "set_headlight_mode"}),
    )
    .await;
    assert_eq!(entity["status"], "resolved", "{entity}");
    assert_eq!(entity["matched_by"], "label");
    assert_eq!(entity["iri"], headlight.as_str());
    // Its asserted type (the classes above it are entailed: among its outgoing
    // triples, in the derived graph).
    assert_eq!(
        strings(&entity["types"]),
        [format!("{KGFUSE}Function").as_str()]
    );
    assert_eq!(strings(&entity["labels"]), ["set_headlight_mode"]);
    assert!(
        entity["comment"]
            .as_str()
            .is_some_and(|c| c.contains("headlights"))
    );
    let outgoing = entity["outgoing"].as_array().expect("outgoing");
    assert!(outgoing.iter().any(|t| {
        t["predicate"] == format!("{KGFUSE}calls")
            && t["object"] == format!("{CAN}fn/can_bus.interface.send_frame")
            && t["object_kind"] == "iri"
            && t["graph"]
                .as_str()
                .is_some_and(|g| g.ends_with("can-sdk.ttl"))
    }));
    assert!(
        outgoing.iter().any(
            |t| t["predicate"] == format!("{KGFUSE}signature") && t["object_kind"] == "literal"
        )
    );
    let incoming = entity["incoming"].as_array().expect("incoming");
    assert!(
        incoming
            .iter()
            .any(|t| t["subject"] == format!("{CAN}mod/body.lights")
                && t["predicate"] == format!("{KGFUSE}hasFunction"))
    );
    assert_eq!(entity["outgoing_truncated"], false);
    assert!(entity["candidates"].as_array().is_some_and(Vec::is_empty));
    assert!(
        text.starts_with(&format!("<{headlight}> set_headlight_mode [Function]")),
        "{text}"
    );

    for (input, matched_by) in [
        (format!("<{headlight}>"), "iri"),
        (headlight.clone(), "iri"),
        ("SET_HEADLIGHT_MODE".to_owned(), "label_ignoring_case"),
        ("body.lights.set_headlight_mode".to_owned(), "label"),
    ] {
        let (entity, _) = ok(&client, "describe_entity", json!({"iri_or_label": input})).await;
        assert_eq!(entity["status"], "resolved", "{input}: {entity}");
        assert_eq!(entity["matched_by"], matched_by, "{input}");
        assert_eq!(entity["iri"], headlight.as_str(), "{input}");
    }
    // A language-tagged label matches exactly; a class has many incoming triples.
    let (class, _) = ok(
        &client,
        "describe_entity",
        json!({"iri_or_label": "function cluster"}),
    )
    .await;
    assert_eq!(class["iri"], format!("{KGFUSE}FunctionCluster"), "{class}");
    assert_eq!(class["matched_by"], "label");
    assert_eq!(strings(&class["labels"]), ["function cluster"]);
    let (prefixed, _) = ok(
        &client,
        "describe_entity",
        json!({"iri_or_label": "kgfuse:Function"}),
    )
    .await;
    assert_eq!(prefixed["iri"], format!("{KGFUSE}Function"));
    assert_eq!(prefixed["matched_by"], "prefixed_name");
    assert_eq!(prefixed["incoming"].as_array().expect("incoming").len(), 50);
    assert_eq!(prefixed["incoming_truncated"], true);
    // "function" is the class's label (@en) and a parameter's name: both exact.
    let (two, _) = ok(
        &client,
        "describe_entity",
        json!({"iri_or_label": "function"}),
    )
    .await;
    assert_eq!(two["status"], "ambiguous", "{two}");
    let iris: Vec<&str> = two["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["iri"].as_str())
        .collect();
    assert!(
        iris.contains(&format!("{KGFUSE}Function").as_str()),
        "{iris:?}"
    );
    assert!(
        iris.contains(&format!("{CAN}fn/j1939.address.build_name/param/function").as_str()),
        "{iris:?}"
    );
    // Every parameter called `bus`: candidates, no pick.
    let (ambiguous, text) = ok(&client, "describe_entity", json!({"iri_or_label": "bus"})).await;
    assert_eq!(ambiguous["status"], "ambiguous", "{ambiguous}");
    assert!(ambiguous["iri"].is_null());
    let candidates = ambiguous["candidates"].as_array().expect("candidates");
    assert!(candidates.len() > 1 && candidates.len() <= kgfuse::MAX_CANDIDATES);
    assert!(
        candidates
            .iter()
            .all(|c| strings(&c["labels"]).contains(&"bus"))
    );
    assert!(
        text.contains("call describe_entity again with one IRI"),
        "{text}"
    );
    // A label with quotes and braces is a bound literal, not query text.
    let message = tool_error(
        &client,
        "describe_entity",
        json!({"iri_or_label": "x\" } ; DROP ALL ; #"}),
    )
    .await;
    assert!(
        message.starts_with("no entity has the IRI or label"),
        "{message}"
    );
    let message = tool_error(
        &client,
        "describe_entity",
        json!({"iri_or_label": "https://example.org/not/in/the/store"}),
    )
    .await;
    assert!(message.contains("no entity"), "{message}");
    let message = tool_error(
        &client,
        "describe_entity",
        json!({"iri_or_label": "<not an iri>"}),
    )
    .await;
    assert!(message.contains("not a valid IRI"), "{message}");

    // ask: a grounded, cited answer from the policy documents.
    let (answer, text) = ok(
        &client,
        "ask",
        json!({"question": "How many days per week can employees work remotely under the current handbook?"}),
    )
    .await;
    assert_eq!(answer["status"], "answered", "{answer}");
    assert!(
        answer["answer"]
            .as_str()
            .is_some_and(|a| a.contains("2 days per week")),
        "{answer}"
    );
    assert!(
        !answer["citations"]
            .as_array()
            .expect("citations")
            .is_empty()
    );
    assert!(text.contains("[1]"), "{text}");

    // The client hangs up; the server ends cleanly.
    client.cancel().await.expect("client closes");
    let reason = server.await.expect("server task").expect("server session");
    assert!(
        matches!(reason, QuitReason::Closed | QuitReason::Cancelled),
        "{reason:?}"
    );
}

#[test]
fn mcp_strategy_names_are_the_cli_ones_and_the_schema_lists_them() {
    let args = |strategy: Value| {
        serde_json::from_value::<RetrieveContextArgs>(json!({"query": "q", "strategy": strategy}))
    };
    for name in Strategy::ALL.map(Strategy::name) {
        assert_eq!(args(json!(name)).expect(name).strategy.name(), name);
    }
    assert_eq!(
        args(json!(" Hybrid ")).expect("hybrid").strategy,
        Strategy::Hybrid
    );
    let defaulted: RetrieveContextArgs =
        serde_json::from_value(json!({"query": "q"})).expect("no strategy");
    assert_eq!(defaulted.strategy, Strategy::Auto);
    let error = args(json!("vector")).expect_err("unknown").to_string();
    assert!(
        error.contains("auto, bm25, flat, hybrid, unified, domain, paths, neighborhood"),
        "{error}"
    );
    let schema = schemars::schema_for!(RetrieveContextArgs)
        .as_value()
        .to_string();
    assert!(
        schema.contains(
            r#""enum":["auto","bm25","flat","hybrid","unified","domain","paths","neighborhood"]"#
        ),
        "{schema}"
    );
}

#[test]
fn mcp_errors_are_one_line() {
    assert_eq!(one_line("a\n  b\tc "), "a b c");
    let error = required_text("query", " \n ").expect_err("blank");
    assert_eq!(error.message, "query is empty");
    assert!(in_range("k", 21, 1, 20).is_err());
    assert_eq!(in_range("k", 20, 1, 20).expect("in range"), 20);
}

#[test]
fn mcp_server_is_cheap_to_share() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    assert_shareable::<KgfuseMcp>();
}
