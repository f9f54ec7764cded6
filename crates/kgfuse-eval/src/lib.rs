//! Evaluating retrieval strategies on a question set.
//!
//! A question set is JSON Lines, one question per line:
//!
//! ```json
//! {"id": "q1", "query": "How do I decode a signal?", "gold": ["signal_codec.codec.decode_signal"],
//!  "gold_answers": ["decode_signal"], "package": "signal_codec", "exclude": []}
//! ```
//!
//! `gold` holds IRIs or names; a name matches every node whose `kgfuse:qualifiedName`,
//! `kgfuse:name` or `rdfs:label` equals it (any of them counts as the gold item), and
//! an entry may be a list of alternatives (`["numpy.mean", "numpy.core.fromnumeric.mean"]`). A
//! gold entry that matches no node stays in the denominator and is reported in
//! `unknown_gold`: a set with unknown gold fails loudly instead of looking better.
//! `exclude` lists nodes the retrieval must not use (a held-out case).
//!
//! For each strategy, [`evaluate`] runs every question once and reports recall@k,
//! precision@k, MRR, nDCG@k, the average number of nodes and of context tokens,
//! the answer-in-context rate, the package-classification accuracy and latency
//! percentiles. The ranking of a context is its functions, then its text hits, then
//! its cases, in order, without repeats; facts count as nodes and tokens but are not
//! ranked.

mod loo;
mod metrics;
mod plot;

pub use loo::{LooOptions, make_leave_one_out};
pub use metrics::{approx_tokens, ndcg, reciprocal_rank};
pub use plot::recall_vs_tokens_svg;

use kgfuse::math::percentile;
use kgfuse::model::{Literal, Term};
use kgfuse::{Engine, FusedContext, QueryOutcome, RetrieveOptions, Strategy};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

/// Errors of an evaluation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// Reading the question set failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of the question set is not a valid question.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] kgfuse::Error),
}

/// One question of a set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalItem {
    /// Stable id.
    pub id: String,
    /// The question.
    pub query: String,
    /// Gold items: an IRI or name, or a list of alternatives any of which counts.
    pub gold: Vec<Gold>,
    /// Strings an answer needs; one of them must appear in the context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gold_answers: Vec<String>,
    /// The package the question belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Nodes the retrieval must not use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// One gold item: a node (IRI or name), or alternatives of which any counts (an API
/// re-exported under several qualified names, say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Gold {
    /// One IRI or name.
    One(String),
    /// Alternatives.
    AnyOf(Vec<String>),
}

impl Gold {
    /// The IRIs or names this item accepts.
    pub fn alternatives(&self) -> &[String] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::AnyOf(any) => any,
        }
    }
}

impl std::fmt::Display for Gold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.alternatives().join(" | "))
    }
}

/// Reads a JSONL question set; blank lines and lines starting with `#` are skipped.
pub fn read_items(path: &Path) -> Result<Vec<EvalItem>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut items = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line_number = i + 1;
        let invalid = |message: String| EvalError::Invalid {
            path: path.display().to_string(),
            line: line_number,
            message,
        };
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let item: EvalItem = serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
        if item.query.trim().is_empty() {
            return Err(invalid("empty query".into()));
        }
        if item.gold.is_empty() {
            return Err(invalid(format!("{}: no gold", item.id)));
        }
        if !ids.insert(item.id.clone()) {
            return Err(invalid(format!("duplicate id {}", item.id)));
        }
        items.push(item);
    }
    Ok(items)
}

/// Scores of one strategy; the JSON names are a contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyScores {
    /// Share of gold items in the top k, averaged over questions.
    #[serde(rename = "recall@k")]
    pub recall_at_k: f64,
    /// Gold items in the top k divided by k, averaged.
    #[serde(rename = "precision@k")]
    pub precision_at_k: f64,
    /// Mean reciprocal rank of the first gold item (whole ranking).
    pub mrr: f64,
    /// Binary-relevance nDCG at k, averaged.
    #[serde(rename = "ndcg@k")]
    pub ndcg_at_k: f64,
    /// Distinct nodes in the context (ranked nodes and fact ends), averaged.
    pub avg_nodes: f64,
    /// Facts in the context, averaged.
    #[serde(default)]
    pub avg_facts: f64,
    /// Share of questions whose context holds every gold item somewhere: ranked,
    /// as a fact's subject or object, or on a path (what a lookup question needs,
    /// where the answers are many and need not be ranked).
    #[serde(default)]
    pub all_in_context: f64,
    /// Approximate tokens of the rendered context ([`approx_tokens`]), averaged.
    pub avg_context_tokens: f64,
    /// Share of questions with `gold_answers` whose context contains one of them.
    pub answer_in_context: Option<f64>,
    /// Share of questions with a `package` whose predicted package matches.
    pub package_accuracy: Option<f64>,
    /// Median latency.
    pub p50_ms: f64,
    /// 95th percentile latency.
    pub p95_ms: f64,
}

/// A gold entry that matched no node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownGold {
    /// The question.
    pub id: String,
    /// The gold entry.
    pub gold: String,
}

/// Per-question results of one strategy (for `--format json` and debugging).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// The question id.
    pub id: String,
    /// Recall at k.
    pub recall: f64,
    /// Rank (1-based) of the first gold item, if any.
    pub first_gold_rank: Option<usize>,
    /// The top k of the ranking.
    pub top: Vec<String>,
}

/// The report of [`evaluate`]; the JSON names are a contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The cut-off.
    pub k: usize,
    /// Questions evaluated.
    pub queries: usize,
    /// Scores by strategy name, in the order asked.
    pub strategies: BTreeMap<String, StrategyScores>,
    /// Gold entries that matched no node.
    pub unknown_gold: Vec<UnknownGold>,
    /// Per-question results by strategy name.
    pub per_query: BTreeMap<String, Vec<QueryResult>>,
}

/// Resolves a gold entry to the nodes it names.
fn resolve_gold(engine: &Engine, gold: &str) -> Result<BTreeSet<String>, EvalError> {
    let options = engine.query_options();
    let mut out = BTreeSet::new();
    if gold.contains("://") || gold.starts_with("urn:") {
        let bindings = [("node".to_owned(), named_or_literal(gold))];
        let QueryOutcome::Solutions { rows, .. } = engine.sparql_bound(
            "SELECT ?node WHERE { { ?node ?p ?o } UNION { ?s ?p ?node } } LIMIT 1",
            &bindings,
            &options,
        )?
        else {
            return Ok(out);
        };
        if !rows.is_empty() {
            out.insert(gold.to_owned());
        }
        return Ok(out);
    }
    let bindings = [(
        "value".to_owned(),
        Term::Literal(Literal::new_simple_literal(gold)),
    )];
    let query = "SELECT ?node ?value WHERE { \
        { ?node <https://w3id.org/kgfuse/ontology#qualifiedName> ?value } UNION \
        { ?node <https://w3id.org/kgfuse/ontology#name> ?value } UNION \
        { ?node <http://www.w3.org/2000/01/rdf-schema#label> ?value } \
        FILTER(isIRI(?node)) } LIMIT 100";
    if let QueryOutcome::Solutions { rows, .. } = engine.sparql_bound(query, &bindings, &options)? {
        for row in rows {
            if let Some(Some(Term::NamedNode(node))) = row.first() {
                out.insert(node.as_str().to_owned());
            }
        }
    }
    Ok(out)
}

fn named_or_literal(text: &str) -> Term {
    kgfuse::model::NamedNode::new(text).map_or_else(
        |_| Term::Literal(Literal::new_simple_literal(text)),
        Term::NamedNode,
    )
}

/// The ranking of a context: functions, text hits, cases; no repeats.
pub fn ranking(context: &FusedContext) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let candidates = context
        .functions
        .iter()
        .map(|f| &f.iri)
        .chain(context.unstructured.iter().map(|h| &h.iri))
        .chain(context.cases.iter().map(|c| &c.iri));
    for iri in candidates {
        if !out.contains(iri) {
            out.push(iri.clone());
        }
    }
    out
}

/// Everything an agent would read from a context, as one text (for token counts
/// and the answer-in-context check).
pub fn rendered(context: &FusedContext) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let mut owned: Vec<String> = Vec::new();
    for hit in &context.unstructured {
        parts.push(&hit.text);
    }
    for fact in &context.structured_facts {
        owned.push(format!(
            "{} {} {}",
            fact.subject, fact.predicate, fact.object
        ));
    }
    for function in &context.functions {
        owned.push(function.name.clone());
        owned.extend(function.signature.clone());
        owned.extend(function.params.iter().cloned());
        owned.extend(function.knowledge.iter().cloned());
        owned.extend(function.code.clone());
    }
    for case in &context.cases {
        owned.push(case.title.clone());
        owned.extend(case.code.clone());
    }
    parts.extend(owned.iter().map(String::as_str));
    parts.join("\n")
}

/// Distinct nodes a context holds: ranked nodes and the IRI ends of its facts.
fn node_count(context: &FusedContext, ranked: &[String]) -> usize {
    let mut nodes: BTreeSet<&str> = ranked.iter().map(String::as_str).collect();
    for fact in &context.structured_facts {
        nodes.insert(&fact.subject);
        if fact.object.contains("://") {
            nodes.insert(&fact.object);
        }
    }
    nodes.len()
}

/// Every node a context mentions anywhere: ranked nodes, both ends of its facts,
/// the nodes of its paths.
fn context_nodes<'a>(context: &'a FusedContext, ranked: &'a [String]) -> BTreeSet<&'a str> {
    let mut nodes: BTreeSet<&str> = ranked.iter().map(String::as_str).collect();
    for fact in &context.structured_facts {
        nodes.insert(&fact.subject);
        nodes.insert(&fact.object);
    }
    for path in &context.paths {
        nodes.extend(path.iter().map(String::as_str));
    }
    nodes
}

/// The package a context points at: `domain`'s first chosen package, else the
/// package of its first function.
fn predicted_package(context: &FusedContext) -> Option<String> {
    if let Some(stage) = context.trace.iter().find(|s| s.stage == "packages")
        && let Some(first) = stage.kept.first()
        && let Some(name) = first.split(" (").next()
    {
        return Some(name.to_owned());
    }
    context.functions.first().and_then(|f| f.package.clone())
}

fn same_package(predicted: &str, expected: &str) -> bool {
    let tail = |s: &str| kgfuse::iri::local_name(s).to_lowercase();
    tail(predicted) == tail(expected)
}

/// The mean (0 for none; never -0, which would print as "-0.000").
#[allow(clippy::cast_precision_loss)]
fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64 + 0.0
    }
}

/// Runs every strategy on every question. `base` supplies everything but the
/// strategy, `top_k` (which is `k`) and `exclude` (from each item). `progress` is
/// called after each question with (strategy, question number).
pub async fn evaluate(
    engine: &Engine,
    items: &[EvalItem],
    strategies: &[Strategy],
    k: usize,
    base: &RetrieveOptions,
    progress: &mut dyn FnMut(&str, usize),
) -> Result<EvalReport, EvalError> {
    let mut report = EvalReport {
        k,
        queries: items.len(),
        ..EvalReport::default()
    };
    let gold = gold_sets(engine, items, &mut report)?;
    for &strategy in strategies {
        let mut measured = Vec::with_capacity(items.len());
        for (n, (item, gold)) in items.iter().zip(&gold).enumerate() {
            let options = RetrieveOptions {
                strategy,
                top_k: k,
                exclude: item.exclude.iter().cloned().collect(),
                ..base.clone()
            };
            measured.push(measure(engine, item, gold, &options).await?);
            progress(strategy.name(), n + 1);
        }
        report
            .strategies
            .insert(strategy.name().to_owned(), scores(&measured));
        report.per_query.insert(
            strategy.name().to_owned(),
            measured.into_iter().map(|m| m.result).collect(),
        );
    }
    Ok(report)
}

/// Each item's gold entries as sets of acceptable nodes; an entry that names no
/// node of the store is listed in `report.unknown_gold`.
fn gold_sets(
    engine: &Engine,
    items: &[EvalItem],
    report: &mut EvalReport,
) -> Result<Vec<Vec<BTreeSet<String>>>, EvalError> {
    let mut gold = Vec::with_capacity(items.len());
    for item in items {
        let mut sets = Vec::new();
        for entry in &item.gold {
            let mut nodes = BTreeSet::new();
            for alternative in entry.alternatives() {
                nodes.extend(resolve_gold(engine, alternative)?);
            }
            if nodes.is_empty() {
                report.unknown_gold.push(UnknownGold {
                    id: item.id.clone(),
                    gold: entry.to_string(),
                });
            }
            sets.push(nodes);
        }
        gold.push(sets);
    }
    Ok(gold)
}

/// One question's measurements under one strategy.
struct Measured {
    recall: f64,
    precision: f64,
    reciprocal_rank: f64,
    ndcg: f64,
    nodes: f64,
    facts: f64,
    all_found: f64,
    tokens: f64,
    /// Whether a gold answer string is in the context (when the item has some).
    answer: Option<f64>,
    /// Whether the predicted package is the expected one (when the item has one).
    package: Option<f64>,
    latency_ms: f64,
    result: QueryResult,
}

/// Retrieves for one item and measures the context against its gold sets.
async fn measure(
    engine: &Engine,
    item: &EvalItem,
    gold: &[BTreeSet<String>],
    options: &RetrieveOptions,
) -> Result<Measured, EvalError> {
    let k = options.top_k;
    let start = Instant::now();
    let context = engine.retrieve(&item.query, options).await?;
    let latency_ms = start.elapsed().as_secs_f64() * 1000.0;
    let ranked = ranking(&context);
    let relevant: Vec<bool> = ranked
        .iter()
        .map(|iri| gold.iter().any(|set| set.contains(iri)))
        .collect();
    let top: Vec<String> = ranked.iter().take(k).cloned().collect();
    let found = gold
        .iter()
        .filter(|set| top.iter().any(|iri| set.contains(iri)))
        .count();
    #[allow(clippy::cast_precision_loss)]
    let recall = found as f64 / gold.len().max(1) as f64;
    let mentioned = context_nodes(&context, &ranked);
    let every = gold
        .iter()
        .all(|set| set.iter().any(|iri| mentioned.contains(iri.as_str())));
    let text = rendered(&context);
    let answer = (!item.gold_answers.is_empty()).then(|| {
        let lower = text.to_lowercase();
        let hit = item
            .gold_answers
            .iter()
            .any(|a| lower.contains(&a.to_lowercase()));
        if hit { 1.0 } else { 0.0 }
    });
    let package = item.package.as_ref().map(|expected| {
        let right = predicted_package(&context).is_some_and(|p| same_package(&p, expected));
        if right { 1.0 } else { 0.0 }
    });
    #[allow(clippy::cast_precision_loss)]
    Ok(Measured {
        recall,
        precision: found as f64 / k.max(1) as f64,
        reciprocal_rank: reciprocal_rank(&relevant),
        ndcg: ndcg(&relevant, gold.len(), k),
        nodes: node_count(&context, &ranked) as f64,
        facts: context.structured_facts.len() as f64,
        all_found: if every { 1.0 } else { 0.0 },
        tokens: approx_tokens(&text) as f64,
        answer,
        package,
        latency_ms,
        result: QueryResult {
            id: item.id.clone(),
            recall,
            first_gold_rank: relevant.iter().position(|r| *r).map(|p| p + 1),
            top,
        },
    })
}

/// A strategy's scores: the means of its questions' measurements.
fn scores(measured: &[Measured]) -> StrategyScores {
    let column = |value: fn(&Measured) -> f64| measured.iter().map(value).collect::<Vec<f64>>();
    let answers: Vec<f64> = measured.iter().filter_map(|m| m.answer).collect();
    let packages: Vec<f64> = measured.iter().filter_map(|m| m.package).collect();
    let mut latencies = column(|m| m.latency_ms);
    latencies.sort_by(f64::total_cmp);
    StrategyScores {
        recall_at_k: mean(&column(|m| m.recall)),
        precision_at_k: mean(&column(|m| m.precision)),
        mrr: mean(&column(|m| m.reciprocal_rank)),
        ndcg_at_k: mean(&column(|m| m.ndcg)),
        avg_nodes: mean(&column(|m| m.nodes)),
        avg_facts: mean(&column(|m| m.facts)),
        all_in_context: mean(&column(|m| m.all_found)),
        avg_context_tokens: mean(&column(|m| m.tokens)),
        answer_in_context: (!answers.is_empty()).then(|| mean(&answers)),
        package_accuracy: (!packages.is_empty()).then(|| mean(&packages)),
        p50_ms: percentile(&latencies, 0.5).unwrap_or(0.0),
        p95_ms: percentile(&latencies, 0.95).unwrap_or(0.0),
    }
}

/// The report as an aligned table, strategies in the given order.
pub fn table(report: &EvalReport, order: &[Strategy]) -> String {
    let k = report.k;
    let headers = [
        "strategy".to_owned(),
        format!("recall@{k}"),
        format!("precision@{k}"),
        "MRR".to_owned(),
        format!("nDCG@{k}"),
        "nodes".to_owned(),
        "facts".to_owned(),
        "all in ctx".to_owned(),
        "tokens".to_owned(),
        "answer in ctx".to_owned(),
        "package acc".to_owned(),
        "p50 ms".to_owned(),
        "p95 ms".to_owned(),
    ];
    let optional = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for strategy in order {
        let Some(s) = report.strategies.get(strategy.name()) else {
            continue;
        };
        rows.push(vec![
            strategy.name().to_owned(),
            format!("{:.3}", s.recall_at_k),
            format!("{:.3}", s.precision_at_k),
            format!("{:.3}", s.mrr),
            format!("{:.3}", s.ndcg_at_k),
            format!("{:.1}", s.avg_nodes),
            format!("{:.1}", s.avg_facts),
            format!("{:.3}", s.all_in_context),
            format!("{:.0}", s.avg_context_tokens),
            optional(s.answer_in_context),
            optional(s.package_accuracy),
            format!("{:.1}", s.p50_ms),
            format!("{:.1}", s.p95_ms),
        ]);
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .chain([headers[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = format!(
        "{} questions, k = {k}\n{}\n",
        report.queries,
        line(&headers)
    );
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_sets_are_checked_line_by_line() {
        let dir = std::env::temp_dir().join(format!("kgfuse-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("set.jsonl");
        std::fs::write(
            &path,
            "# comment\n{\"id\": \"a\", \"query\": \"q\", \"gold\": [\"x\"]}\n\n{\"id\": \"a\", \"query\": \"q\", \"gold\": [\"y\"]}\n",
        )
        .expect("write");
        let err = read_items(&path).expect_err("duplicate").to_string();
        assert!(err.ends_with("set.jsonl:4: duplicate id a"), "{err}");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"query\": \"q\", \"gold\": [], \"extra\": 1}\n",
        )
        .expect("write");
        let err = read_items(&path).expect_err("unknown field").to_string();
        assert!(err.contains("set.jsonl:1: unknown field"), "{err}");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"query\": \"q\", \"gold\": [\"x\"], \"package\": \"p\"}\n",
        )
        .expect("write");
        assert_eq!(
            read_items(&path).expect("ok")[0].package.as_deref(),
            Some("p")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_report_serialises_with_the_contract_names() {
        let mut report = EvalReport {
            k: 5,
            queries: 1,
            ..EvalReport::default()
        };
        report
            .strategies
            .insert("flat".into(), StrategyScores::default());
        let json = serde_json::to_value(&report).expect("json");
        let flat = &json["strategies"]["flat"];
        for name in [
            "recall@k",
            "precision@k",
            "mrr",
            "ndcg@k",
            "avg_nodes",
            "avg_facts",
            "all_in_context",
            "avg_context_tokens",
            "answer_in_context",
            "package_accuracy",
            "p50_ms",
            "p95_ms",
        ] {
            assert!(flat.get(name).is_some(), "missing {name}");
        }
        assert_eq!(json["k"], 5);
        assert!(json["unknown_gold"].is_array());
    }

    #[test]
    fn packages_compare_by_last_segment() {
        assert!(same_package("https://x/pkg/body", "body"));
        assert!(same_package("Body", "body"));
        assert!(!same_package("doors", "body"));
    }
}
