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

/// The model's say on a question's kind: its name and the kind it read.
pub struct ModelKind<'a> {
    /// The model's name, for the trace.
    pub model: &'a str,
    /// The kind it read in the question.
    pub dispatch: Dispatch,
}

/// Classifies a question with keyword cues and the names it mentions; the
/// kind a model read in it, when there is one, wins. The returned trace stage
/// says which cues, names or model decided it. Makes no model call: the
/// model's kind comes with its reading of the question.
pub fn dispatch(
    question: &str,
    names: &[String],
    read: Option<ModelKind<'_>>,
) -> (Dispatch, TraceStage) {
    let factual = cues(question, FACTUAL_CUES);
    let semantic = cues(question, SEMANTIC_CUES);
    let by_cues = match (!factual.is_empty(), !semantic.is_empty(), !names.is_empty()) {
        (true, true, _) => Dispatch::Hybrid,
        (true, false, _) => Dispatch::Factual,
        (false, _, true) => Dispatch::Hybrid,
        (false, _, false) => Dispatch::Semantic,
    };
    let mut kept: Vec<String> = Vec::new();
    let dispatch = match read {
        Some(read) => {
            kept.push(format!("{}: {}", read.model, kind_name(read.dispatch)));
            read.dispatch
        }
        None => by_cues,
    };
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

/// How the trace names a kind of question.
fn kind_name(dispatch: Dispatch) -> &'static str {
    match dispatch {
        Dispatch::Semantic => "semantic: asks for an explanation or description",
        Dispatch::Factual => "factual: asks for relationships, types, properties or counts",
        Dispatch::Hybrid => "hybrid: both, or about named entities",
    }
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
            let (dispatch, stage) = dispatch(question, &names, None);
            assert_eq!(dispatch, expected, "{question}: {:?}", stage.kept);
        }
    }

    #[test]
    fn the_kind_a_model_read_wins_over_the_cues() {
        let read = ModelKind {
            model: "reader",
            dispatch: Dispatch::Factual,
        };
        let (dispatch, stage) = dispatch("explain how retries work", &[], Some(read));
        assert_eq!(dispatch, Dispatch::Factual);
        assert!(
            stage.kept[0].starts_with("reader: factual"),
            "{:?}",
            stage.kept
        );
        assert!(stage.kept.contains(&"semantic cue: explain".to_owned()));
    }
}
