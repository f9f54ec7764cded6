//! # Loading an ontology and querying it: SPARQL, templates, vectors, entities
//!
//! kgfuse describes every domain with Turtle ontology files. A fresh store already
//! carries kgfuse's core vocabulary (`ontology/kgfuse.ttl`, in a graph of its own);
//! this program loads the two example domain ontologies that extend it
//! (`ontology/examples/*.ttl`: contact-centre coaching and an ingestion pipeline),
//! then asks the store questions in each of the ways the Rust API offers:
//!
//! 1. **Loading.** `Engine::load` puts each file into its own named graph and
//!    embeds every node that has text (labels, comments) in the vector table.
//! 2. **SPARQL, typed.** `Engine::sparql` returns a `QueryOutcome`: `Solutions`
//!    (SELECT: variables and rows of RDF terms), `Boolean` (ASK) or `Graph`
//!    (CONSTRUCT, DESCRIBE: triples). The program walks each kind and reads the
//!    terms (IRIs, literals with their language) instead of printing strings.
//! 3. **A canned query.** `Engine::run_template` runs one of the queries in
//!    `queries/` with its variables bound to terms (never pasted into the text).
//! 4. **Vector search.** `Engine::search` finds the nodes whose text is nearest to
//!    a question.
//! 5. **One entity.** `Engine::describe_entity` resolves a label or a prefixed name
//!    to one node and lists its types, comment and the triples around it.
//! 6. **The invariant.** `Engine::check` confirms that graph and vectors agree.
//!
//! Run it from the workspace root (paths are relative to it):
//!
//! ```sh
//! cargo run --example ontology_query
//! ```
#![allow(clippy::print_stdout)]

use kgfuse::model::{NamedNode, Term};
use kgfuse::{Engine, EngineInit, EntityStatus, NoProgress, QueryOutcome, Template};
use std::path::{Path, PathBuf};

const EXAMPLES: &str = "ontology/examples";

/// Namespace of the support-escalation example ontology.
const SUP: &str = "https://w3id.org/kgfuse/examples/support#";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !Path::new(EXAMPLES).is_dir() {
        return Err(format!(
            "{EXAMPLES} not found: run this example from the workspace root (cargo run --example ontology_query)"
        )
        .into());
    }

    // ------------------------------------------------------------------
    // 1. A fresh store, and the ontologies loaded into it.
    // ------------------------------------------------------------------
    println!("== 1. Loading the ontologies\n");
    let tmp = tempfile::tempdir()?;
    let engine = Engine::builder(tmp.path().join("data"))
        // A new directory: created with the model-free hashing embedder.
        .embedder(EngineInit::hash(256))
        .build()
        .await?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(EXAMPLES)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "ttl"))
        .collect();
    // The core vocabulary is not among them: `init` put it in the store.
    files.sort();
    let summary = engine.load(&files, None, &NoProgress).await?;
    for file in &summary.files {
        println!(
            "{:>9} {:>4} quads  {}  -> graph <{}>",
            file.action,
            file.quads,
            file.path.display(),
            file.graph
        );
    }
    println!(
        "{} quads; {} vector rows added",
        summary.quads, summary.vectors.added
    );
    // Prefixes declared by the loaded files (sup:, pipe:, kgfuse:, ...) now work in
    // queries without PREFIX lines; we use them to print IRIs compactly too.
    let prefixes = engine.query_options().prefixes;

    // ------------------------------------------------------------------
    // 2. SPARQL, reading typed results.
    // ------------------------------------------------------------------
    println!("\n== 2a. SELECT: the support ontology's classes and their parents\n");
    let select = "SELECT ?class ?label ?parent WHERE { \
                    ?class a owl:Class ; rdfs:label ?label . \
                    OPTIONAL { ?class rdfs:subClassOf ?parent } \
                    FILTER(STRSTARTS(STR(?class), STR(sup:))) \
                  } ORDER BY ?class";
    match engine.sparql(select)? {
        QueryOutcome::Solutions { variables, rows } => {
            println!("columns: {}", variables.join(", "));
            for row in &rows {
                // One cell per variable, `None` where OPTIONAL found nothing.
                let class = row[0].as_ref().map_or("-".into(), |t| show(t, &prefixes));
                let label = match &row[1] {
                    Some(Term::Literal(l)) => match l.language() {
                        Some(lang) => format!("{:?}@{lang}", l.value()),
                        None => format!("{:?}", l.value()),
                    },
                    _ => "-".into(),
                };
                let parent = row[2]
                    .as_ref()
                    .map_or("(no parent)".into(), |t| show(t, &prefixes));
                println!("  {class:<26} {label:<28} subclass of {parent}");
            }
        }
        other => return Err(format!("a SELECT gave {other:?}").into()),
    }

    println!("\n== 2b. ASK: is a performance gap a kind of learning need?\n");
    let ask = "ASK { sup:PerformanceGap rdfs:subClassOf+ sup:LearningNeed }";
    if let QueryOutcome::Boolean(yes) = engine.sparql(ask)? {
        println!("  {ask}\n  -> {yes}");
    }

    println!("\n== 2c. CONSTRUCT: which class each support property links to which\n");
    let construct = "CONSTRUCT { ?domain ?property ?range } WHERE { \
                       ?property a owl:ObjectProperty ; rdfs:domain ?domain ; rdfs:range ?range . \
                       FILTER(STRSTARTS(STR(?property), STR(sup:))) }";
    if let QueryOutcome::Graph(triples) = engine.sparql(construct)? {
        let mut lines: Vec<String> = triples
            .iter()
            .map(|t| {
                format!(
                    "  {} --{}--> {}",
                    show(&Term::from(t.subject.clone()), &prefixes),
                    show(&Term::from(t.predicate.clone()), &prefixes),
                    show(&t.object, &prefixes)
                )
            })
            .collect();
        lines.sort();
        println!("{}", lines.join("\n"));
    }

    // ------------------------------------------------------------------
    // 3. A canned query from queries/, its variable bound to a term.
    // ------------------------------------------------------------------
    println!(
        "\n== 3. Template {}: one hop around sup:PerformanceGap\n",
        Template::Neighbours.file_name()
    );
    let gap = NamedNode::new(format!("{SUP}PerformanceGap"))?;
    let outcome = engine.run_template(Template::Neighbours, &[("entity", gap.into())])?;
    if let QueryOutcome::Solutions { variables, rows } = outcome {
        let column = |name: &str| variables.iter().position(|v| v == name);
        let (Some(n), Some(p), Some(d)) = (
            column("neighbour"),
            column("predicate"),
            column("direction"),
        ) else {
            return Err(format!("unexpected columns {variables:?}").into());
        };
        for row in &rows {
            let cell = |i: usize| row[i].as_ref().map_or("-".into(), |t| show(t, &prefixes));
            // ?direction is a plain literal, "in" or "out": print its value.
            let direction = match &row[d] {
                Some(Term::Literal(l)) => l.value().to_owned(),
                _ => "?".into(),
            };
            println!("  {direction:<4} {:<20} {}", cell(p), cell(n));
        }
    }

    // ------------------------------------------------------------------
    // 4. Vector search over the nodes' text.
    // ------------------------------------------------------------------
    let question = "training that closes an agent's performance gap";
    println!("\n== 4. Vector search: {question:?}\n");
    for hit in engine.search(question, 5).await? {
        let first_line = hit.text.lines().next().unwrap_or_default();
        println!(
            "  {:.3}  {:<12} {:<28} {first_line}",
            hit.score,
            hit.kind,
            compact(&hit.iri, &prefixes)
        );
    }

    // ------------------------------------------------------------------
    // 5. One entity, by label and by prefixed name.
    // ------------------------------------------------------------------
    for name in ["performance gap", "kgfuse:Case"] {
        println!("\n== 5. describe_entity({name:?})\n");
        let entity = engine.describe_entity(name)?;
        match entity.status {
            EntityStatus::Resolved => {
                let iri = entity.iri.as_deref().unwrap_or_default();
                let how = entity
                    .matched_by
                    .map(|m| format!("{m:?}"))
                    .unwrap_or_default();
                println!("  {} (matched by {how})", compact(iri, &prefixes));
                let types: Vec<String> =
                    entity.types.iter().map(|t| compact(t, &prefixes)).collect();
                println!("  types:   {}", types.join(", "));
                println!("  labels:  {}", entity.labels.join(", "));
                if let Some(comment) = &entity.comment {
                    println!("  comment: {comment}");
                }
                println!(
                    "  {} outgoing and {} incoming triples, for example:",
                    entity.outgoing.len(),
                    entity.incoming.len()
                );
                for triple in entity.incoming.iter().take(4) {
                    println!(
                        "    {} {} <this>",
                        compact(&triple.subject, &prefixes),
                        compact(&triple.predicate, &prefixes)
                    );
                }
            }
            EntityStatus::Ambiguous => {
                for candidate in &entity.candidates {
                    println!("  candidate {} {:?}", candidate.iri, candidate.labels);
                }
            }
            EntityStatus::NotFound => println!("  not found"),
        }
    }

    // ------------------------------------------------------------------
    // 6. Graph and vectors agree.
    // ------------------------------------------------------------------
    println!("\n== 6. check\n");
    let check = engine.check().await?;
    println!(
        "  {} text-bearing nodes, {} vector rows: {}",
        check.nodes,
        check.rows,
        if check.is_ok() {
            "in step"
        } else {
            "out of step"
        }
    );
    if !check.is_ok() {
        return Err("graph and vectors disagree".into());
    }
    Ok(())
}

/// An IRI as `prefix:local` when a known prefix covers it, else `<iri>`.
fn compact(iri: &str, prefixes: &[(String, String)]) -> String {
    prefixes
        .iter()
        .filter(|(_, namespace)| !namespace.is_empty() && iri.starts_with(namespace.as_str()))
        .max_by_key(|(_, namespace)| namespace.len())
        .map_or_else(
            || format!("<{iri}>"),
            |(prefix, namespace)| format!("{prefix}:{}", &iri[namespace.len()..]),
        )
}

/// A term for display: compact IRIs, quoted literals.
fn show(term: &Term, prefixes: &[(String, String)]) -> String {
    match term {
        Term::NamedNode(n) => compact(n.as_str(), prefixes),
        Term::Literal(l) => format!("{:?}", l.value()),
        other => other.to_string(),
    }
}
