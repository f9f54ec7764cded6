//! Human-readable rendering of query results: aligned tables with compact IRIs.

use kgfuse::QueryOutcome;
use kgfuse::iri::compact;
use kgfuse::model::Term;
use std::io::Write;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// One cell: IRIs compacted, literals as their text (with language or datatype
/// when it is not a plain string), blank nodes as `_:id`.
pub fn term_cell(term: &Term, prefixes: &[(String, String)]) -> String {
    match term {
        Term::NamedNode(n) => compact(n.as_str(), prefixes),
        Term::BlankNode(b) => b.to_string(),
        Term::Literal(l) => {
            // Tables are for reading: strings, language strings, numbers, booleans and
            // dates show as their text; other datatypes keep their ^^type.
            const PLAIN: &[&str] = &[
                "string", "integer", "decimal", "double", "float", "boolean", "date", "dateTime",
            ];
            let datatype = l.datatype().as_str();
            let plain = l.language().is_some()
                || datatype
                    .strip_prefix("http://www.w3.org/2001/XMLSchema#")
                    .is_some_and(|t| PLAIN.contains(&t));
            if plain {
                l.value().to_owned()
            } else {
                format!(
                    "{}^^{}",
                    l.value(),
                    compact(l.datatype().as_str(), prefixes)
                )
            }
        }
        #[allow(unreachable_patterns)]
        other => other.to_string(),
    }
}

/// Cuts a cell to `max` display columns, one line, ending with `…` when cut.
fn fit(cell: &str, max: usize) -> String {
    let flat: String = cell
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.width() <= max {
        return flat;
    }
    let mut out = String::new();
    let mut width = 0;
    for c in flat.chars() {
        let w = c.width().unwrap_or(0);
        if width + w + 1 > max {
            break;
        }
        out.push(c);
        width += w;
    }
    out.push('…');
    out
}

/// Renders rows as an aligned table with a header rule and a row count.
pub fn table(headers: &[String], rows: &[Vec<String>], max_cell: usize) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| fit(c, max_cell)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.width()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w.saturating_sub(c.width()))))
            .collect();
        padded.join(" │ ").trim_end().to_owned()
    };
    let mut out = String::new();
    out.push_str(&line(headers));
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    out.push_str(&rule.join("─┼─"));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out.push_str(&format!(
        "({} row{})\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    out
}

/// Renders any query outcome for a person (tables; graphs as Turtle-like triples).
pub fn outcome(outcome: &QueryOutcome, prefixes: &[(String, String)], max_cell: usize) -> String {
    match outcome {
        QueryOutcome::Boolean(value) => format!("{value}\n"),
        QueryOutcome::Solutions { variables, rows } => {
            let headers: Vec<String> = variables.iter().map(|v| format!("?{v}")).collect();
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|t| t.as_ref().map_or(String::new(), |t| term_cell(t, prefixes)))
                        .collect()
                })
                .collect();
            table(&headers, &cells, max_cell)
        }
        QueryOutcome::Graph(triples) => {
            let headers = ["subject", "predicate", "object"].map(String::from);
            let cells: Vec<Vec<String>> = triples
                .iter()
                .map(|t| {
                    vec![
                        term_cell(&Term::from(t.subject.clone()), prefixes),
                        compact(t.predicate.as_str(), prefixes),
                        term_cell(&t.object, prefixes),
                    ]
                })
                .collect();
            table(&headers, &cells, max_cell)
        }
    }
}

/// `kgfuse why`, readable: where the triple is asserted (and the fingerprint of each
/// asserting file graph that records one), then one line per
/// derivation (rule, premise, the premise's graphs).
pub fn provenance(provenance: &kgfuse::Provenance) -> String {
    let mut out = format!("{}\n", provenance.triple);
    if !provenance.asserted_in.is_empty() {
        out.push_str(&format!(
            "  asserted in {}\n",
            provenance.asserted_in.join(", ")
        ));
    }
    for (graph, fingerprint) in &provenance.fingerprints {
        out.push_str(&format!("    {graph} fingerprint {fingerprint}\n"));
    }
    if provenance.inferred {
        out.push_str("  inferred (in the derived graph)\n");
    }
    for derivation in &provenance.derivations {
        out.push_str(&format!(
            "  {} from {}\n      asserted in {}\n",
            derivation.rule,
            derivation.premise,
            derivation.premise_graphs.join(", ")
        ));
    }
    out
}

/// One SHACL validation result on a line: severity, focus node, path, message,
/// then the offending value and the shape.
pub fn validation_result(
    result: &kgfuse::ValidationResult,
    prefixes: &[(String, String)],
) -> String {
    let node = |text: &str| {
        if text.starts_with(['_', '"', '<']) {
            text.to_owned()
        } else {
            compact(text, prefixes)
        }
    };
    let mut line = format!(
        "{:<9} {} {}: {}",
        result.severity.to_lowercase(),
        node(&result.focus_node),
        result
            .path
            .as_deref()
            .map_or_else(|| "(node)".to_owned(), node),
        result.message
    );
    if let Some(value) = &result.value {
        line.push_str(&format!(" [value {}]", node(value)));
    }
    if let Some(shape) = result.shape.as_ref().filter(|s| !s.starts_with("_:")) {
        line.push_str(&format!(" [shape {}]", node(shape)));
    }
    line
}

/// Prints an answer for people: status, answer, sources, contradictions, gaps.
pub(crate) fn print_answer(answer: &kgfuse::Answer) {
    let status = match answer.status {
        kgfuse::AnswerStatus::Answered => "answered",
        kgfuse::AnswerStatus::InsufficientContext => "insufficient context",
        kgfuse::AnswerStatus::Failure => "failure",
    };
    println!(
        "{status} (confidence {:.2}, {} retrieval attempt(s), grounding {:?})",
        answer.confidence, answer.retrieval_attempts, answer.grounding_status
    );
    if let Some(text) = &answer.answer {
        println!("\n{text}\n");
    }
    for (i, citation) in answer.citations.iter().enumerate() {
        println!("[{}] {citation}", i + 1);
    }
    if let Some(gap) = &answer.knowledge_gap {
        println!("knowledge gap: {gap}");
    }
    for contradiction in &answer.contradictions {
        println!(
            "contradiction: \"{}\" ({}) -> {}",
            contradiction.claim,
            contradiction.sources.join(" vs "),
            contradiction.resolution
        );
    }
    println!(
        "model {}: {} call(s), {} prompt + {} completion tokens",
        answer.usage.model,
        answer.usage.calls,
        answer.usage.prompt_tokens,
        answer.usage.completion_tokens
    );
}

/// Prints a FusedContext as a readable summary.
pub(crate) fn print_context(context: &kgfuse::FusedContext) {
    println!(
        "strategy {}, dispatch {:?}: {}",
        context.strategy, context.dispatch, context.query
    );
    if let Some(answers) = &context.answers {
        print_answers(answers);
    }
    for (i, hit) in context.unstructured.iter().enumerate() {
        let mut source = hit.source.id.clone();
        if let Some(title) = &hit.source.title {
            source = format!("{title} <{source}>");
        }
        if let Some(chunk) = &hit.source.chunk_id {
            source.push_str(&format!(" [{chunk}]"));
        }
        let first_line = hit.text.lines().next().unwrap_or_default();
        println!(
            "{:>2}. {:.3}  {}
      {first_line}
      from {source}",
            i + 1,
            hit.score,
            hit.iri
        );
    }
    if let Some(status) = &context.status {
        println!("status: {status}");
    }
    for (i, function) in context.functions.iter().enumerate() {
        println!(
            "{:>2}. {:.3}  {}  ({})",
            i + 1,
            function.score,
            function.signature.as_deref().unwrap_or(&function.name),
            function.module.as_deref().unwrap_or_default()
        );
        if let Some(summary) = &function.summary {
            println!("      {summary}");
        }
        for knowledge in &function.knowledge {
            println!("      knowledge: {knowledge}");
        }
    }
    for path in &context.paths {
        let names: Vec<&str> = path
            .iter()
            .map(|iri| kgfuse::iri::local_name(iri))
            .collect();
        println!("path: {}", names.join(" -> "));
    }
    for fact in &context.structured_facts {
        println!("fact: {} {} {}", fact.subject, fact.predicate, fact.object);
    }
    // Results first, then the trace on stderr, without interleaving.
    let _ = std::io::stdout().flush();
    for stage in &context.trace {
        eprintln!(
            "trace {}: kept {}, dropped {}",
            stage.stage,
            stage.kept.len(),
            stage.dropped.len()
        );
    }
}

/// Most answer rows `--format text` prints (the JSON has them all).
const ANSWER_ROWS_SHOWN: usize = 20;

/// The answer first: a yes or no, or the rows under their columns, then the
/// query that gave them.
fn print_answers(answers: &kgfuse::AnswerSet) {
    match answers.boolean {
        Some(yes) => println!("answer: {}", if yes { "yes" } else { "no" }),
        None => {
            println!(
                "answer ({} row{}{}): {}",
                answers.rows.len(),
                if answers.rows.len() == 1 { "" } else { "s" },
                if answers.truncated {
                    ", more not shown"
                } else {
                    ""
                },
                answers.columns.join(" | ")
            );
            for row in answers.rows.iter().take(ANSWER_ROWS_SHOWN) {
                let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
                println!("  {}", cells.join(" | "));
            }
            if answers.rows.len() > ANSWER_ROWS_SHOWN {
                println!("  ... {} more", answers.rows.len() - ANSWER_ROWS_SHOWN);
            }
        }
    }
    println!("  from the {} query: {}", answers.source, answers.query);
}

/// Prints an ingestion report: a summary on stdout, problems on stderr.
pub(crate) fn print_ingest_report(report: &kgfuse::IngestReport) {
    for problem in &report.problems {
        eprintln!("warning: {problem}");
    }
    if let Some(code) = &report.code {
        println!(
            "{} files: {} modules, {} classes, {} functions, {} cases; {} calls resolved, {} by name",
            report.files,
            code.modules,
            code.classes,
            code.functions,
            code.cases,
            report.calls,
            report.calls_by_name
        );
    }
    if let Some(chunks) = report.chunks {
        println!("{} documents, {chunks} chunks", report.files);
    }
    println!(
        "{} written, {} unchanged, {} removed; {} triples; {}",
        report.written, report.unchanged, report.removed, report.triples, report.vectors
    );
    if !report.problems.is_empty() {
        eprintln!(
            "{} files had problems (listed above)",
            report.problems.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_truncate() {
        let rendered = table(
            &["?a".into(), "?b".into()],
            &[
                vec!["x".into(), "short".into()],
                vec!["a much longer cell value".into(), "é".into()],
            ],
            10,
        );
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(lines[0], "?a         │ ?b");
        assert_eq!(lines[3], "a much lo… │ é");
        assert_eq!(lines[4], "(2 rows)");
    }
}
