//! Question dispatch: SEMANTIC (explain, describe), FACTUAL (relationships, types,
//! properties) or HYBRID (both, or named entities with an open question).

use kgfuse_core::context::{Dispatch, TraceStage};

/// Phrases that ask for relationships, types or properties.
const FACTUAL_CUES: &[&str] = &[
    "relationship",
    "related to",
    "connects to",
    "connected to",
    "connection",
    "subclass of",
    "property of",
    "properties of",
    "type of",
    "instance of",
    "depends on",
    "which ",
    "who ",
    "how many",
    "list ",
    "escalate",
];

/// Phrases that ask for an explanation.
const SEMANTIC_CUES: &[&str] = &[
    "describe",
    "explain",
    "how does",
    "how do",
    "how can",
    "how to",
    "purpose of",
    "what is",
    "what are",
    "why",
    "overview",
];

fn cues(question: &str, list: &[&str]) -> Vec<String> {
    let lower = format!("{} ", question.to_lowercase());
    list.iter()
        .filter(|cue| lower.contains(*cue))
        .map(|cue| cue.trim().to_owned())
        .collect()
}

/// Classifies a question with keyword cues and the names it mentions; the
/// returned trace stage says which cues and names decided it. Makes no model
/// call.
pub fn dispatch(question: &str, names: &[String]) -> (Dispatch, TraceStage) {
    let factual = cues(question, FACTUAL_CUES);
    let semantic = cues(question, SEMANTIC_CUES);
    let dispatch = match (!factual.is_empty(), !semantic.is_empty(), !names.is_empty()) {
        (true, true, _) => Dispatch::Hybrid,
        (true, false, _) => Dispatch::Factual,
        (false, _, true) => Dispatch::Hybrid,
        (false, _, false) => Dispatch::Semantic,
    };
    let mut kept: Vec<String> = Vec::new();
    kept.extend(factual.iter().map(|c| format!("factual cue: {c}")));
    kept.extend(semantic.iter().map(|c| format!("semantic cue: {c}")));
    kept.extend(names.iter().map(|e| format!("entity: {e}")));
    (
        dispatch,
        TraceStage {
            stage: "dispatch".into(),
            kept,
            dropped: Vec::new(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_llm::{LanguageModel, RuleBased};

    #[test]
    fn cues_and_entities_decide_the_dispatch() {
        let model = RuleBased::default();
        let cases = [
            ("explain how retries work", Dispatch::Semantic),
            (
                "what is the relationship between orders and invoices",
                Dispatch::Hybrid,
            ),
            ("which module depends on the parser", Dispatch::Factual),
            (
                "Explain the ingestion pipeline and its connection to the KnowledgeGraphUpdateAgent",
                Dispatch::Hybrid,
            ),
            ("Describe the EmployeeHandbook rules", Dispatch::Hybrid),
            ("can I work from another country?", Dispatch::Semantic),
        ];
        for (question, expected) in cases {
            let names = model
                .extract_entities(question)
                .expect("offline extraction");
            let (dispatch, stage) = dispatch(question, &names);
            assert_eq!(dispatch, expected, "{question}: {:?}", stage.kept);
        }
    }
}
