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
//! [`OpenAiChat`] is the real model: a client for any OpenAI-compatible
//! `/chat/completions` endpoint (OpenAI, Ollama, vLLM, llama.cpp server), with its
//! prompts in the repository's `prompts/` folder. [`OpenAiChatConfig::from_env`]
//! gives `None` when no model is configured; callers then use `RuleBased`.
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

mod openai;
mod rule_based;

pub use openai::{OpenAiChat, OpenAiChatConfig};
pub use rule_based::{
    RuleBased, contains_instruction, content_words, looks_like_instruction, sentences,
};

use std::time::Duration;

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
    /// The model service did not answer within the configured timeout.
    #[error("language model: no reply within {timeout:?} ({attempts} attempts)")]
    Timeout {
        /// The per-request timeout.
        timeout: Duration,
        /// Requests made before giving up.
        attempts: u32,
    },
    /// The model service answered with an HTTP error status.
    #[error("language model: HTTP {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The service's error message, shortened, never containing the API key.
        message: String,
    },
}

/// Whether a retrieved item helps answer a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relevance {
    /// Keep it?
    pub relevant: bool,
    /// A short reason, recorded in the retrieval trace.
    pub why: String,
}

/// A piece of retrieved context the model may cite, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Citation id (a chunk id such as `handbook-2025::remote-work::1`, or a fact id).
    pub id: String,
    /// The text, treated as data: instructions inside it are never followed.
    pub text: String,
}

/// One sentence of a drafted answer and the passages it relies on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The sentence.
    pub text: String,
    /// Ids of the [`Passage`]s supporting it.
    pub citations: Vec<String>,
}

/// What a model drafted from the passages it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Draft {
    /// An answer, sentence by sentence, each with its citations.
    Answer(Vec<Claim>),
    /// The passages do not answer the question; `missing` says what is lacking.
    Insufficient {
        /// What information would be needed.
        missing: String,
    },
}

/// An entity the question names, for a text-to-SPARQL request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparqlEntity {
    /// Its name.
    pub label: String,
    /// Its IRI.
    pub iri: String,
    /// Properties of the triples it is the subject of, as the query writes them
    /// (`a` for `rdf:type`): a small model then writes each property in the
    /// direction the data has it.
    pub as_subject: Vec<String>,
    /// Properties of the triples it is the object of.
    pub as_object: Vec<String>,
}

impl SparqlEntity {
    /// An entity with nothing known about its use.
    pub fn new(label: impl Into<String>, iri: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            iri: iri.into(),
            ..Self::default()
        }
    }
}

/// What a text-to-SPARQL step gives the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparqlRequest {
    /// The user's question.
    pub question: String,
    /// The relevant slice of the ontology (classes and properties with labels,
    /// comments, domains and ranges), as Turtle.
    pub ontology: String,
    /// Entities linked in the question, with how the data uses them.
    pub entities: Vec<SparqlEntity>,
    /// Prefix declarations the query may use (prefix, namespace IRI).
    pub prefixes: Vec<(String, String)>,
    /// The previous attempt and why it was rejected, when repairing.
    pub previous: Option<(String, String)>,
    /// Worked examples over the same vocabulary: (question, query), built from
    /// the store so a small model sees its terms in use.
    pub examples: Vec<(String, String)>,
    /// A GBNF grammar the reply must follow (llama.cpp's constrained decoding):
    /// with it the model replies with the bare query, and its IRIs can only be
    /// terms the store knows. Ignored by models that cannot take one.
    pub grammar: Option<String>,
}

/// An entity the question names, for a reading request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanEntity {
    /// Its name, as the plan writes it.
    pub name: String,
    /// Its classes, as the schema names them.
    pub classes: Vec<String>,
}

/// What reading a question gives the model: a menu to choose from, not a
/// language to write. The reply says in one JSON object what kind of question
/// it is, the names it mentions and a query plan (`prompts/read_question.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadingRequest {
    /// The user's question.
    pub question: String,
    /// The store's classes and properties as the plan names them, with how the
    /// data uses them. The same text for every question over one store, and the
    /// prompt puts it first, so a server that keeps the prompt prefix (llama.cpp)
    /// reads it once.
    pub schema: String,
    /// Entities linked in the question.
    pub entities: Vec<PlanEntity>,
    /// The previous reply and what went wrong with its plan, when repairing.
    pub previous: Option<(String, String)>,
    /// A GBNF grammar of the reply's JSON over the schema's and the entities'
    /// names. Ignored by models that cannot take one.
    pub grammar: Option<String>,
}

/// What [`LanguageModel::choose_reading`] is asked: a question and the
/// readings of it the graph answered, each a short sentence in the store's
/// names with some of its answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChoiceRequest {
    /// The user's question.
    pub question: String,
    /// The store's classes and properties, as [`ReadingRequest::schema`] has
    /// them (the same text, so the prompt prefix a server keeps serves both).
    pub schema: String,
    /// The readings, best first by the graph's score.
    pub readings: Vec<String>,
}

/// Model calls and tokens spent so far by one [`LanguageModel`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Requests answered (from the service or the response cache).
    pub calls: u64,
    /// Of those, answered from the response cache.
    pub cached: u64,
    /// Prompt tokens reported by the service.
    pub prompt_tokens: u64,
    /// Completion tokens reported by the service.
    pub completion_tokens: u64,
}

impl Usage {
    /// What was spent between `earlier` and `self`.
    #[must_use]
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            calls: self.calls.saturating_sub(earlier.calls),
            cached: self.cached.saturating_sub(earlier.cached),
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_sub(earlier.completion_tokens),
        }
    }
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

    /// Whether each of `items` (functions, chunks or facts, as text) helps
    /// answer `question`: one [`Relevance`] per item, in order, from one request
    /// however many items there are (none without items).
    fn judge_candidates(&self, question: &str, items: &[&str]) -> Result<Vec<Relevance>, LlmError>;

    /// Free-text completion of `prompt` under `system` instructions.
    fn complete(&self, system: &str, prompt: &str) -> Result<String, LlmError>;

    /// A short hypothetical snippet that would answer `question` (code for a code
    /// question, else a few sentences), for retrieval to search with beside the
    /// question; `None` from a model that cannot write one (the offline model).
    fn hypothetical_snippet(&self, _question: &str) -> Result<Option<String>, LlmError> {
        Ok(None)
    }

    /// True for deterministic offline stand-ins such as [`RuleBased`]. Retrieval
    /// then decides package choice and the refinement gate with its own
    /// similarity and structure rules, which beat word overlap; a real model's
    /// judgement is asked for instead.
    fn is_offline(&self) -> bool {
        false
    }

    /// A reformulation of `question` for another retrieval attempt, using
    /// `related_terms` (labels and aliases of entities linked so far).
    fn rewrite_query(&self, question: &str, related_terms: &[String]) -> Result<String, LlmError>;

    /// An answer to `question` from `passages` only, every sentence citing the
    /// passages it relies on, or [`Draft::Insufficient`].
    fn draft_answer(&self, question: &str, passages: &[Passage]) -> Result<Draft, LlmError>;

    /// A SPARQL query answering the request's question, using only its ontology
    /// slice and entities. Offline models return [`LlmError::Unsupported`] and
    /// callers use template queries instead.
    fn generate_sparql(&self, request: &SparqlRequest) -> Result<String, LlmError>;

    /// The request's question read in one reply: a query plan over the
    /// store's names, as the JSON text `prompts/read_question.md` describes. Offline models return [`LlmError::Unsupported`] and callers
    /// read the question offline instead.
    fn read_question(&self, request: &ReadingRequest) -> Result<String, LlmError> {
        let _ = request;
        Err(LlmError::Unsupported {
            model: self.name().to_owned(),
            task: "read a question".to_owned(),
        })
    }

    /// Which of the request's readings answers its question: its index from
    /// 0, or `None` when none does, as `prompts/choose_reading.md` asks.
    /// Offline models return [`LlmError::Unsupported`] and callers keep the
    /// graph's best reading.
    fn choose_reading(&self, request: &ChoiceRequest) -> Result<Option<usize>, LlmError> {
        let _ = request;
        Err(LlmError::Unsupported {
            model: self.name().to_owned(),
            task: "choose a reading".to_owned(),
        })
    }

    /// Calls and tokens spent so far (zero for offline models).
    fn usage(&self) -> Usage {
        Usage::default()
    }
}
