//! Question dispatch: SEMANTIC (explain, describe), FACTUAL (relationships, types,
//! properties) or HYBRID (both, or named entities with an open question).

use kgfuse_core::context::{Dispatch, TraceStage};
use kgfuse_llm::LanguageModel;

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

/// Classifies a question with keyword cues and the names the model extracted
/// from it (a real model, not the offline one, classifies it directly); the
/// returned trace stage says which cues, entities or model decided it.
pub fn dispatch(
    question: &str,
    entities: &[String],
    model: &dyn LanguageModel,
) -> (Dispatch, TraceStage) {
    let factual = cues(question, FACTUAL_CUES);
    let semantic = cues(question, SEMANTIC_CUES);
    let dispatch = match (
        !factual.is_empty(),
        !semantic.is_empty(),
        !entities.is_empty(),
    ) {
        (true, true, _) => Dispatch::Hybrid,
        (true, false, _) => Dispatch::Factual,
        (false, _, true) => Dispatch::Hybrid,
        (false, _, false) => Dispatch::Semantic,
    };
    let mut kept: Vec<String> = Vec::new();
    // A real model classifies the question itself; the cues stay in the trace.
    let dispatch = if model.is_offline() {
        dispatch
    } else {
        let labels = [
            "semantic: asks for an explanation or description",
            "factual: asks for relationships, types, properties or counts",
            "hybrid: both, or about named entities",
        ];
        match model.classify(question, &labels) {
            Ok(Some(i)) => {
                kept.push(format!("{}: {}", model.name(), labels[i.min(2)]));
                [Dispatch::Semantic, Dispatch::Factual, Dispatch::Hybrid][i.min(2)]
            }
            Ok(None) => dispatch,
            Err(e) => {
                kept.push(format!("{} failed, cues decide: {e}", model.name()));
                dispatch
            }
        }
    };
    kept.extend(factual.iter().map(|c| format!("factual cue: {c}")));
    kept.extend(semantic.iter().map(|c| format!("semantic cue: {c}")));
    kept.extend(entities.iter().map(|e| format!("entity: {e}")));
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
    use kgfuse_llm::RuleBased;

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
            let entities = model
                .extract_entities(question)
                .expect("offline extraction");
            let (dispatch, stage) = dispatch(question, &entities, &model);
            assert_eq!(dispatch, expected, "{question}: {:?}", stage.kept);
        }
    }

    /// A model that always picks the second label, to see that a real model's
    /// classification wins over the cues.
    struct PicksFactual;

    impl LanguageModel for PicksFactual {
        fn name(&self) -> &str {
            "picks-factual"
        }
        fn classify(&self, _: &str, _: &[&str]) -> Result<Option<usize>, kgfuse_llm::LlmError> {
            Ok(Some(1))
        }
        fn extract_entities(&self, _: &str) -> Result<Vec<String>, kgfuse_llm::LlmError> {
            Ok(Vec::new())
        }
        fn judge_relevance(
            &self,
            _: &str,
            _: &str,
        ) -> Result<kgfuse_llm::Relevance, kgfuse_llm::LlmError> {
            Err(kgfuse_llm::LlmError::Service("not used".into()))
        }
        fn complete(&self, _: &str, _: &str) -> Result<String, kgfuse_llm::LlmError> {
            Err(kgfuse_llm::LlmError::Service("not used".into()))
        }
        fn rewrite_query(&self, _: &str, _: &[String]) -> Result<String, kgfuse_llm::LlmError> {
            Err(kgfuse_llm::LlmError::Service("not used".into()))
        }
        fn draft_answer(
            &self,
            _: &str,
            _: &[kgfuse_llm::Passage],
        ) -> Result<kgfuse_llm::Draft, kgfuse_llm::LlmError> {
            Err(kgfuse_llm::LlmError::Service("not used".into()))
        }
        fn generate_sparql(
            &self,
            _: &kgfuse_llm::SparqlRequest,
        ) -> Result<String, kgfuse_llm::LlmError> {
            Err(kgfuse_llm::LlmError::Service("not used".into()))
        }
    }

    #[test]
    fn a_real_model_classifies_the_question_itself() {
        let (dispatch, stage) = dispatch("explain how retries work", &[], &PicksFactual);
        assert_eq!(dispatch, Dispatch::Factual);
        assert!(
            stage.kept[0].starts_with("picks-factual: factual"),
            "{:?}",
            stage.kept
        );
        assert!(stage.kept.contains(&"semantic cue: explain".to_owned()));
    }
}
