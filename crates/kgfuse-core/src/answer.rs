//! `Answer`: what the grounded answer loop (`kgfuse ask`, `Engine::ask`) returns.
//!
//! The field names are a contract shared by the CLI's JSON, the HTTP `/ask` route
//! and the MCP `ask` tool. Every field is always present (empty lists and `null`s
//! rather than missing keys). Nothing in it comes from hidden metadata, credentials
//! or stack traces: errors are one-line messages.

use crate::context::{FusedContext, TraceStage};
use serde::{Deserialize, Serialize};

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// A grounded answer with citations.
    Answered,
    /// The selected context does not answer the question; see `knowledge_gap`.
    #[default]
    InsufficientContext,
    /// Something failed (blank question, retriever or model error); see `errors`.
    Failure,
}

/// Whether the answer's sentences are supported by the context it cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GroundingStatus {
    /// Every sentence is supported by a selected chunk or fact it cites.
    Grounded,
    /// Some sentences are supported, some are not.
    PartiallySupported,
    /// No sentence is supported.
    Unsupported,
    /// There was no answer to check.
    #[default]
    NotChecked,
}

/// A source an answer cites.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The source document (IRI), or the cited node itself when it has none.
    pub source_id: String,
    /// The document's title, when known.
    pub title: Option<String>,
    /// Section path inside the document, when known.
    pub section: Option<String>,
    /// The cited chunk's id, when the cited item is a chunk.
    pub chunk_id: Option<String>,
}

impl std::fmt::Display for Citation {
    /// `Title > section [chunk-id]`, the title falling back to the source id.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.title.as_deref().unwrap_or(&self.source_id))?;
        if let Some(section) = &self.section {
            write!(f, " > {section}")?;
        }
        if let Some(chunk) = &self.chunk_id {
            write!(f, " [{chunk}]")?;
        }
        Ok(())
    }
}

/// Two sources that disagree, and which one the answer follows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contradiction {
    /// What the set-aside source says (its sentence closest to the question).
    pub claim: String,
    /// The sources involved: the set-aside one first, then the preferred one.
    pub sources: Vec<String>,
    /// How it was resolved (authority, freshness, supersession) or why it was not.
    pub resolution: String,
}

/// Model calls and tokens one answer cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// The model's name (`rule-based`, `openai:llama3.1`).
    pub model: String,
    /// Requests made (including those served from the response cache).
    pub calls: u64,
    /// Of those, served from the cache.
    pub cached: u64,
    /// Prompt tokens reported by the service.
    pub prompt_tokens: u64,
    /// Completion tokens reported by the service.
    pub completion_tokens: u64,
}

/// The final output of the answer loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// `answered`, `insufficient_context` or `failure`.
    pub status: AnswerStatus,
    /// The answer with citation markers `[1]`, `[2]` into `citations`; `null`
    /// unless `status` is `answered`.
    pub answer: Option<String>,
    /// The sources cited, in marker order.
    pub citations: Vec<Citation>,
    /// How much to trust the answer, in [0, 1].
    pub confidence: f32,
    /// Retrievals run (the first one plus rewrites).
    pub retrieval_attempts: usize,
    /// Whether the answer's sentences are supported by what they cite.
    pub grounding_status: GroundingStatus,
    /// Disagreeing sources found in the context and how each was resolved.
    pub contradictions: Vec<Contradiction>,
    /// What is missing, when `status` is `insufficient_context`.
    pub knowledge_gap: Option<String>,
    /// One-line error messages.
    pub errors: Vec<String>,
    /// The context the answer was drafted from (after ranking and filtering).
    pub context: FusedContext,
    /// Each step of the loop: what it kept and dropped.
    pub trace: Vec<TraceStage>,
    /// Model calls and tokens spent.
    pub usage: ModelUsage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_present_with_the_contract_names() {
        let json = serde_json::to_value(Answer::default()).expect("json");
        for field in [
            "status",
            "answer",
            "citations",
            "confidence",
            "retrieval_attempts",
            "grounding_status",
            "contradictions",
            "knowledge_gap",
            "errors",
            "context",
        ] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        assert_eq!(json["status"], "insufficient_context");
        assert_eq!(json["grounding_status"], "not_checked");
        assert!(json["answer"].is_null());
    }
}
