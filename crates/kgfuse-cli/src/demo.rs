//! `kgfuse demo`: build a store from the bundled ontology and fixtures, then show
//! what it can answer. `make demo` runs it on a fresh data directory.

use crate::progress::TerminalProgress;
use crate::render;
use anyhow::{Context, Result};
use kgfuse::{Engine, EngineInit};
use std::path::{Path, PathBuf};

/// Example questions for the graph, each as (title, SPARQL).
const QUERIES: &[(&str, &str)] = &[
    (
        "Packages with their function counts (CAN-signal SDK fixture, ingested payment_fees)",
        "SELECT ?package (COUNT(?f) AS ?functions) WHERE {
           VALUES ?kind { kgfuse:Function kgfuse:Method }
           ?f a ?kind ; kgfuse:inPackage ?p . ?p kgfuse:name ?package
         } GROUP BY ?package ORDER BY DESC(?functions) ?package LIMIT 8",
    ),
    (
        "Which policy supersedes which (authority and effective date decide)",
        "SELECT ?newer ?older ?authority ?since WHERE {
           ?n kgfuse:supersedes ?o . ?n rdfs:label ?newer . ?o rdfs:label ?older .
           OPTIONAL { ?n kgfuse:authority ?authority } OPTIONAL { ?n kgfuse:effectiveDate ?since }
         } ORDER BY ?newer",
    ),
    (
        "Escalation chain of the support domain",
        "SELECT ?from ?to WHERE {
           ?a kgfuse:escalatesTo ?b . ?a rdfs:label ?from . ?b rdfs:label ?to
         } ORDER BY ?from ?to LIMIT 20",
    ),
    (
        "What the ingestion pipeline is made of",
        "SELECT ?component ?comment WHERE {
           ?pipeline rdfs:label \"Ingestion pipeline\"@en ; ?has ?c .
           ?c rdfs:label ?component . OPTIONAL { ?c rdfs:comment ?comment }
           FILTER(CONTAINS(STR(?has), \"hasComponent\"))
         } ORDER BY ?component",
    ),
];

/// The worked examples of the sources, one per strategy.
const RETRIEVALS: &[(&str, kgfuse::Strategy)] = &[
    (
        "Write a function to activate high-beam headlights on bus 1",
        kgfuse::Strategy::Domain,
    ),
    (
        "What is the most expensive MCC for a transaction of 5 euros, in general?",
        kgfuse::Strategy::Paths,
    ),
    (
        "This is the third time my account has been locked this week",
        kgfuse::Strategy::Neighborhood,
    ),
];

/// Questions for the ingested payment-fees code (SGKR case study).
const CODE_QUERIES: &[(&str, &str)] = &[
    (
        "What average_fee calls, transitively (ingested Python call graph)",
        "SELECT DISTINCT ?callee ?signature WHERE {
           ?f kgfuse:qualifiedName \"payment_fees.fees.average_fee\" ; kgfuse:calls+ ?c .
           ?c kgfuse:qualifiedName ?callee ; kgfuse:signature ?signature
         } ORDER BY ?callee",
    ),
    (
        "Solved example questions and the functions they exercise",
        "SELECT ?question (GROUP_CONCAT(?name; separator=\", \") AS ?functions) WHERE {
           ?case a kgfuse:Case ; rdfs:label ?question ; kgfuse:exercises ?f . ?f kgfuse:name ?name
           FILTER(STRSTARTS(STR(?case), \"https://w3id.org/kgfuse/code/python/case/examples.\"))
         } GROUP BY ?question ORDER BY ?question LIMIT 5",
    ),
];

/// Example searches over the vector table.
const SEARCHES: &[&str] = &[
    "decode a physical signal value from a raw CAN frame",
    "average fee a card scheme charges for a transaction",
    "can I work from another country?",
    "who handles a GDPR deletion request?",
];

fn turtle_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            // Deliberately broken inputs for tests live in `malformed/`.
            if path.file_name().is_some_and(|n| n == "malformed") {
                continue;
            }
            turtle_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "ttl") {
            out.push(path);
        }
    }
    Ok(())
}

/// Questions the demo answers with the grounded answer loop: one the current
/// handbook answers (and an outdated blog post contradicts), one nothing covers.
const ASKS: [&str; 2] = [
    "How many days per week can employees work remotely under the current handbook?",
    "How many stock options do new employees receive, and what is the vesting schedule?",
];

pub async fn run(data: &Path, ontology: &Path, fixtures: &Path) -> Result<()> {
    let progress = TerminalProgress::new();
    let engine = if data.join("kgfuse.toml").exists() {
        Engine::open_with_progress(data, &progress).await?
    } else {
        match Engine::init(data, EngineInit::minilm(None)).await {
            Ok(engine) => engine,
            Err(kgfuse::Error::Store(kgfuse::StoreError::Embed(e))) => {
                eprintln!("note: {e}\nnote: the demo continues with the hash embedder");
                Engine::init(data, EngineInit::hash(384)).await?
            }
            Err(e) => return Err(e.into()),
        }
    };
    let mut files = Vec::new();
    turtle_files(ontology, &mut files)?;
    turtle_files(fixtures, &mut files)?;
    println!(
        "== Loading {} Turtle files into {}",
        files.len(),
        data.display()
    );
    let summary = engine.load(&files, None, &progress).await?;
    println!("{} quads written; {}", summary.quads, summary.vectors);

    let fees = fixtures.join("payment-fees");
    if fees.is_dir() {
        println!("\n== Ingesting the payment-fees Python package (code, cases, knowledge)");
        let options = kgfuse::IngestCodeOptions {
            knowledge_file: Some(fees.join("knowledge.toml")),
            ..kgfuse::IngestCodeOptions::default()
        };
        let report = engine.ingest_code(&fees, &options, &progress).await?;
        println!(
            "{} files, {} calls resolved, {} by name; {}",
            report.files, report.calls, report.calls_by_name, report.vectors
        );
    }

    let stats = engine.stats().await?;
    println!(
        "\n== Store: {} triples in {} graphs, {} vector rows ({} embedder, {} dimensions)",
        stats.triples, stats.graphs, stats.vector_rows, stats.embedder, stats.dimension
    );

    let options = engine.query_options();
    let code_queries = if fees.is_dir() { CODE_QUERIES } else { &[] };
    for (title, query) in QUERIES.iter().chain(code_queries) {
        println!(
            "\n== {title}\n{}\n",
            query.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let outcome = engine.sparql(query)?;
        print!("{}", render::outcome(&outcome, &options.prefixes, 70));
    }
    for question in SEARCHES {
        println!("\n== Vector search: \"{question}\"");
        let hits = engine.search(question, 3).await?;
        let rows: Vec<Vec<String>> = hits
            .iter()
            .map(|h| {
                vec![
                    format!("{:.3}", h.score),
                    h.kind.clone(),
                    kgfuse::iri::compact(&h.iri, &options.prefixes),
                    h.text.lines().next().unwrap_or_default().to_owned(),
                ]
            })
            .collect();
        let headers = ["score", "kind", "node", "text"].map(String::from);
        print!("{}", render::table(&headers, &rows, 60));
    }
    println!("\n== Case base (kgfuse index cases)");
    let cases = engine
        .build_case_base(kgfuse::CaseBaseOptions::default(), &progress)
        .await?;
    println!(
        "{} clusters over {} packages; {} of {} cases selected, covering {:.0}% of packages and {:.0}% of clusters",
        cases.clusters,
        cases.packages,
        cases.selected,
        cases.cases,
        cases.package_coverage * 100.0,
        cases.cluster_coverage * 100.0
    );
    for (question, strategy) in RETRIEVALS {
        println!(
            "\n== kgfuse retrieve \"{question}\" --strategy {}",
            strategy.name()
        );
        let retrieve_options = kgfuse::RetrieveOptions {
            strategy: *strategy,
            top_k: 5,
            ..kgfuse::RetrieveOptions::default()
        };
        let context = engine.retrieve(question, &retrieve_options).await?;
        for function in &context.functions {
            println!(
                "function {:<28} {}",
                function.name,
                function.signature.as_deref().unwrap_or_default()
            );
        }
        for case in &context.cases {
            println!("case     {}", case.title);
        }
        for hit in &context.unstructured {
            println!(
                "text     {:.3} {}",
                hit.score,
                kgfuse::iri::compact(&hit.iri, &options.prefixes)
            );
        }
        for stage in context.trace.iter().filter(|s| s.stage == "gate") {
            for dropped in stage.dropped.iter().take(3) {
                println!(
                    "gate     dropped {}: {}",
                    kgfuse::iri::compact(&dropped.iri, &options.prefixes),
                    dropped.why
                );
            }
        }
    }
    for question in ASKS {
        println!("\n== kgfuse ask \"{question}\"");
        let answer = engine.ask(question, &kgfuse::AskOptions::default()).await;
        println!("status   {:?}", answer.status);
        if let Some(text) = &answer.answer {
            println!("answer   {text}");
        }
        for (i, citation) in answer.citations.iter().enumerate() {
            println!(
                "[{}]      {} {}",
                i + 1,
                citation.title.as_deref().unwrap_or(&citation.source_id),
                citation.chunk_id.as_deref().unwrap_or_default()
            );
        }
        for contradiction in &answer.contradictions {
            println!(
                "conflict {} ({})",
                contradiction.claim, contradiction.resolution
            );
        }
        if let Some(gap) = &answer.knowledge_gap {
            println!("gap      {gap}");
        }
    }
    let check = engine.check().await?;
    println!(
        "\n== kgfuse check: {} ({} nodes, {} rows)",
        if check.is_ok() { "ok" } else { "FAILED" },
        check.nodes,
        check.rows
    );
    println!(
        "\nTry next:\n  kgfuse --data {0} console\n  kgfuse --data {0} sparql --file queries/classes.rq\n  \
         kgfuse --data {0} serve      (web console and SPARQL endpoint on http://127.0.0.1:7878/)\n  \
         kgfuse --data {0} mcp        (tools for an MCP client, on stdin/stdout)",
        data.display()
    );
    Ok(())
}
