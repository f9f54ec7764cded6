//! Human-readable rendering of query results: aligned tables with compact IRIs.

use kgfuse::QueryOutcome;
use kgfuse::iri::compact;
use kgfuse::model::Term;
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

/// `kgfuse why`, readable: where the triple is asserted, then one line per
/// derivation (rule, premise, the premise's graphs).
pub fn provenance(provenance: &kgfuse::Provenance) -> String {
    let mut out = format!("{}\n", provenance.triple);
    if !provenance.asserted_in.is_empty() {
        out.push_str(&format!(
            "  asserted in {}\n",
            provenance.asserted_in.join(", ")
        ));
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
