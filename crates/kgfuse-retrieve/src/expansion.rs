//! Model-assisted retrieval (HyDE): before retrieving, one language model call
//! writes a short hypothetical snippet that would answer the question, and every
//! stage then searches with the question and the snippet together. A question
//! about an unseen package rarely names its functions; a guessed call such as
//! `email.message_from_string(s)` often does.

use kgfuse_core::context::TraceStage;
use kgfuse_llm::LanguageModel;
use kgfuse_store::Question;
use std::sync::Arc;

/// The model retrieval asks for a hypothetical snippet (one call per retrieval;
/// the model's timeout and response cache apply). It may differ from the model
/// of the other stages: an evaluation keeps those offline and measures the
/// snippet alone.
#[derive(Clone)]
pub struct Expander(pub Arc<dyn LanguageModel>);

impl std::fmt::Debug for Expander {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expander({})", self.0.name())
    }
}

/// The question to search with: `question` and the model's snippet on the
/// next line, or `question` alone when the model wrote none or failed (said in
/// the stage).
pub(crate) fn expand(expander: &Expander, question: &str) -> (Question, TraceStage) {
    let mut stage = TraceStage {
        stage: "expansion".into(),
        ..TraceStage::default()
    };
    let model = expander.0.name();
    match expander.0.hypothetical_snippet(question) {
        Ok(Some(snippet)) => {
            stage
                .kept
                .push(format!("{model} wrote a hypothetical snippet: {snippet}"));
            (Question::new(format!("{question}\n{snippet}")), stage)
        }
        Ok(None) => {
            stage.kept.push(format!(
                "{model} writes no snippet: searched with the question alone"
            ));
            (Question::new(question), stage)
        }
        Err(error) => {
            stage.kept.push(format!(
                "{model} failed to write a snippet ({error}): searched with the question alone"
            ));
            (Question::new(question), stage)
        }
    }
}
