//! The `LanguageModel` trait: the few judgements kgfuse asks of a language model.
//!
//! Retrieval and the answer loop never build prompts themselves; they call these
//! task-level methods, so the same pipeline runs with a real model (an
//! OpenAI-compatible client) or with [`RuleBased`], a deterministic offline
//! implementation with real, documented heuristics (word overlap, identifier and
//! capitalised-phrase spotting). `RuleBased` never pretends to write prose: its
//! [`LanguageModel::complete`] returns [`LlmError::Unsupported`], and callers fall back
//! to extractive behaviour.
//!
//! ```
//! use kgfuse_llm::{LanguageModel, RuleBased};
//!
//! let model = RuleBased::default();
//! let labels = ["remote work and travel", "passwords and security"];
//! let pick = model.classify("Can I work from another country?", &labels)?;
//! assert_eq!(pick, Some(0));
//! let entities = model.extract_entities("How does `decode_signal` use the EngineData message?")?;
//! assert!(entities.contains(&"decode_signal".to_owned()));
//! assert!(entities.contains(&"EngineData".to_owned()));
//! # Ok::<(), kgfuse_llm::LlmError>(())
//! ```

mod rule_based;

pub use rule_based::RuleBased;

/// Errors of a language model call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The model cannot do this task (e.g. free-text generation without a real model).
    #[error("{model} cannot {task}")]
    Unsupported {
        /// The model's name.
        model: String,
        /// The task.
        task: String,
    },
    /// The model service failed or answered something unusable.
    #[error("language model: {0}")]
    Service(String),
}

/// Whether a retrieved item helps answer a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relevance {
    /// Keep it?
    pub relevant: bool,
    /// A short reason, recorded in the retrieval trace.
    pub why: String,
}

/// The judgements retrieval and answering ask of a language model.
pub trait LanguageModel: Send + Sync {
    /// A short name for traces (`rule-based`, `openai:gpt-4o-mini`).
    fn name(&self) -> &str;

    /// Which of `labels` fits `text` best; `None` when none does.
    fn classify(&self, text: &str, labels: &[&str]) -> Result<Option<usize>, LlmError>;

    /// Entity names, identifiers and key terms mentioned in `text`, in order of
    /// first appearance, without duplicates.
    fn extract_entities(&self, text: &str) -> Result<Vec<String>, LlmError>;

    /// Whether `item` (a function, chunk or fact, as text) helps answer `question`.
    fn judge_relevance(&self, question: &str, item: &str) -> Result<Relevance, LlmError>;

    /// Free-text completion of `prompt` under `system` instructions.
    fn complete(&self, system: &str, prompt: &str) -> Result<String, LlmError>;

    /// True for deterministic offline stand-ins such as [`RuleBased`]. Retrieval
    /// then decides package choice and the refinement gate with its own
    /// similarity and structure rules, which beat word overlap; a real model's
    /// judgement is asked for instead.
    fn is_offline(&self) -> bool {
        false
    }
}
