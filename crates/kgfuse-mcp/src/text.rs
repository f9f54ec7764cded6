//! The short text content beside each structured result, for clients that only
//! read text: the essentials, a few lines, never the whole payload.

use kgfuse::{Answer, AnswerStatus, CaseInfo, EntityDescription, EntityStatus, FusedContext};
use std::fmt::Write as _;

/// Items listed per section.
const SHOWN: usize = 10;
/// Longest single line of retrieved text, in characters.
const LINE_CHARS: usize = 240;

/// `search_domain_kg`: one line per function.
pub(crate) fn functions(context: &FusedContext) -> String {
    let mut out = String::new();
    if context.functions.is_empty() {
        out.push_str("no function found");
        if let Some(status) = &context.status {
            let _ = write!(out, " ({status})");
        }
        return out;
    }
    for (i, f) in context.functions.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {} [{}] score {:.3} <{}>",
            i + 1,
            f.signature.as_deref().unwrap_or(&f.name),
            f.module.as_deref().or(f.package.as_deref()).unwrap_or("?"),
            f.score,
            f.iri
        );
        for knowledge in f.knowledge.iter().take(2) {
            let _ = writeln!(out, "   knowledge: {}", clip(knowledge));
        }
    }
    out.push_str(
        "full details (params, returns, depends_on, siblings, trace) in the structured content",
    );
    out
}

/// `search_case_base`: one line per case, with the functions it exercises.
pub(crate) fn cases(cases: &[CaseInfo]) -> String {
    if cases.is_empty() {
        return "no worked example found".to_owned();
    }
    let mut out = String::new();
    for (i, case) in cases.iter().enumerate() {
        let exercised: Vec<&str> = case.exercises.iter().map(|iri| short(iri)).collect();
        let _ = writeln!(out, "{}. {} <{}>", i + 1, case.title, case.iri);
        if !exercised.is_empty() {
            let _ = writeln!(out, "   exercises: {}", exercised.join(", "));
        }
    }
    out.push_str("code in the structured content");
    out
}

/// `retrieve_context`: the strategy, then the first items of each kind.
pub(crate) fn context(context: &FusedContext) -> String {
    let mut out = format!(
        "strategy {}, dispatch {:?}: {} passages, {} facts, {} functions, {} cases, {} paths",
        context.strategy,
        context.dispatch,
        context.unstructured.len(),
        context.structured_facts.len(),
        context.functions.len(),
        context.cases.len(),
        context.paths.len()
    )
    .to_lowercase();
    if let Some(status) = &context.status {
        let _ = write!(out, " ({status})");
    }
    for (i, hit) in context.unstructured.iter().take(SHOWN).enumerate() {
        let source = hit.source.title.as_deref().unwrap_or(&hit.source.id);
        let _ = write!(
            out,
            "\n{}. {:.3} {} (from {source})",
            i + 1,
            hit.score,
            clip(&hit.text)
        );
    }
    for f in context.functions.iter().take(SHOWN) {
        let _ = write!(
            out,
            "\nfunction: {} <{}>",
            f.signature.as_deref().unwrap_or(&f.name),
            f.iri
        );
    }
    for case in context.cases.iter().take(SHOWN) {
        let _ = write!(out, "\ncase: {} <{}>", case.title, case.iri);
    }
    for fact in context.structured_facts.iter().take(SHOWN) {
        let _ = write!(
            out,
            "\nfact: {} {} {}",
            short(&fact.subject),
            short(&fact.predicate),
            clip(short(&fact.object))
        );
    }
    for path in context.paths.iter().take(SHOWN) {
        let names: Vec<&str> = path.iter().map(|iri| short(iri)).collect();
        let _ = write!(out, "\npath: {}", names.join(" -> "));
    }
    out
}

/// `describe_entity`: the entity in a few lines, or the candidates.
pub(crate) fn entity(description: &EntityDescription) -> String {
    let mut out = String::new();
    if description.status == EntityStatus::Ambiguous {
        let _ = write!(
            out,
            "'{}' names {} entities; call describe_entity again with one IRI:",
            description.query.trim(),
            description.candidates.len()
        );
        for candidate in &description.candidates {
            let types: Vec<&str> = candidate.types.iter().map(|t| short(t)).collect();
            let _ = write!(
                out,
                "\n<{}> {} [{}]",
                candidate.iri,
                candidate.labels.first().map(String::as_str).unwrap_or(""),
                types.join(", ")
            );
        }
        return out;
    }
    let types: Vec<&str> = description.types.iter().map(|t| short(t)).collect();
    let _ = write!(
        out,
        "<{}> {} [{}]",
        description.iri.as_deref().unwrap_or(""),
        description.labels.join(" / "),
        types.join(", ")
    );
    if let Some(comment) = &description.comment {
        let _ = write!(out, "\n{}", clip(comment));
    }
    for triple in description.outgoing.iter().take(SHOWN) {
        let _ = write!(
            out,
            "\n-> {} {}",
            short(&triple.predicate),
            clip(&triple.object)
        );
    }
    for triple in description.incoming.iter().take(SHOWN) {
        let _ = write!(out, "\n<- {} {}", short(&triple.predicate), triple.subject);
    }
    let _ = write!(
        out,
        "\n{} outgoing{}, {} incoming{} triple(s); all in the structured content",
        description.outgoing.len(),
        if description.outgoing_truncated {
            "+"
        } else {
            ""
        },
        description.incoming.len(),
        if description.incoming_truncated {
            "+"
        } else {
            ""
        },
    );
    out
}

/// `ask`: the answer and its sources, or why there is none.
pub(crate) fn answer(answer: &Answer) -> String {
    let mut out = String::new();
    match answer.status {
        AnswerStatus::Answered => {
            out.push_str(answer.answer.as_deref().unwrap_or(""));
            for (i, citation) in answer.citations.iter().enumerate() {
                let _ = write!(out, "\n[{}] {citation}", i + 1);
            }
            let _ = write!(
                out,
                "\n(confidence {:.2}, grounding {:?})",
                answer.confidence, answer.grounding_status
            );
        }
        AnswerStatus::InsufficientContext => {
            out.push_str("insufficient context");
            if let Some(gap) = &answer.knowledge_gap {
                let _ = write!(out, ": {gap}");
            }
        }
        AnswerStatus::Failure => {
            out.push_str("failure: ");
            out.push_str(&answer.errors.join("; "));
        }
    }
    for contradiction in &answer.contradictions {
        let _ = write!(
            out,
            "\ncontradiction: {} -> {}",
            clip(&contradiction.claim),
            contradiction.resolution
        );
    }
    out
}

/// The last segment of an IRI (after `/` or `#`), for compact lines.
fn short(iri: &str) -> &str {
    if iri.starts_with("http://") || iri.starts_with("https://") || iri.starts_with("file:") {
        kgfuse::iri::local_name(iri)
    } else {
        iri
    }
}

/// One line of at most [`LINE_CHARS`] characters.
fn clip(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= LINE_CHARS {
        line
    } else {
        let cut: String = line.chars().take(LINE_CHARS).collect();
        format!("{cut}…")
    }
}
