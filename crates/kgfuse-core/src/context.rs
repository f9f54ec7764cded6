//! `FusedContext`: what every retrieval strategy returns.
//!
//! Unstructured text (chunks, with their sources) and structured facts (triples,
//! with labels and graphs) are kept apart, never one concatenated string, so an
//! agent can cite each piece. The field names are a contract (`kgfuse retrieve
//! --format json`, the HTTP and MCP tools); see `../shared/DESIGN.md`.

use serde::{Deserialize, Serialize};

/// How a question was classified before retrieval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Dispatch {
    /// Explanations, descriptions: the vector side leads.
    #[default]
    Semantic,
    /// Relationships, types, properties: the graph side leads.
    Factual,
    /// Both, or named entities with an open question.
    Hybrid,
}

/// Where a piece of text comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceRef {
    /// The source document or file (IRI).
    pub id: String,
    /// Its title, when known.
    pub title: Option<String>,
    /// Section path inside the source, when known.
    pub section: Option<String>,
    /// Stable chunk id, when the text is a chunk.
    pub chunk_id: Option<String>,
}

/// A retrieved piece of text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextHit {
    /// The node the text belongs to.
    pub iri: String,
    /// The text.
    pub text: String,
    /// Relevance score of the strategy that found it (higher is better).
    pub score: f32,
    /// Where it comes from.
    pub source: SourceRef,
}

/// A triple, with the graph it was read from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Subject (IRI, or label when `labels` were requested).
    pub subject: String,
    /// Predicate IRI.
    pub predicate: String,
    /// Object (IRI or literal value).
    pub object: String,
    /// Named graph holding the triple.
    pub graph: String,
}

/// An API function with what an agent needs to call it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionInfo {
    /// Node IRI.
    pub iri: String,
    /// Short name.
    pub name: String,
    /// Package (qualified name).
    pub package: Option<String>,
    /// Module (qualified name).
    pub module: Option<String>,
    /// Signature text.
    pub signature: Option<String>,
    /// What it does: the first paragraph of its docstring, at most
    /// [`FunctionInfo::SUMMARY_CHARS`] characters.
    pub summary: Option<String>,
    /// Parameters as `name: type = default`, in order.
    pub params: Vec<String>,
    /// Return type.
    pub returns: Option<String>,
    /// Functions it calls (IRIs).
    pub depends_on: Vec<String>,
    /// Other functions of the same module or class (IRIs).
    pub siblings: Vec<String>,
    /// Attached domain knowledge.
    pub knowledge: Vec<String>,
    /// Source code.
    pub code: Option<String>,
    /// Relevance score.
    pub score: f32,
}

impl FunctionInfo {
    /// Longest [`FunctionInfo::summary`], in characters.
    pub const SUMMARY_CHARS: usize = 300;
}

/// A worked example.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseInfo {
    /// Node IRI.
    pub iri: String,
    /// Title.
    pub title: String,
    /// Example code.
    pub code: Option<String>,
    /// Functions it exercises (IRIs).
    pub exercises: Vec<String>,
}

/// Something a stage dropped, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The dropped node.
    pub iri: String,
    /// Why it was dropped.
    pub why: String,
}

/// What one stage of a strategy kept and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStage {
    /// Stage name (`vector`, `entities`, `sparql`, `gate`, ...).
    pub stage: String,
    /// Kept items (IRIs or short descriptions).
    pub kept: Vec<String>,
    /// Dropped items with reasons.
    pub dropped: Vec<Dropped>,
}

/// A question's answer as rows of an executed query: what the question asked,
/// the query that ran, and what it returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerSet {
    /// Who made the query: `planner` (offline), `model` or `query graph`.
    pub source: String,
    /// The query plan, as JSON (absent for a query not made from a plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
    /// The query that ran, as SPARQL text.
    pub query: String,
    /// The column names (none for a yes-or-no question).
    pub columns: Vec<String>,
    /// The rows: each cell an IRI, a literal's value, or null when unbound.
    pub rows: Vec<Vec<Option<String>>>,
    /// A yes-or-no question's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// More rows matched than `rows` holds.
    #[serde(default)]
    pub truncated: bool,
}

impl AnswerSet {
    /// Whether the query answered: a boolean, or at least one row.
    pub fn answered(&self) -> bool {
        self.boolean.is_some() || !self.rows.is_empty()
    }
}

/// The result of a retrieval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FusedContext {
    /// The question as asked.
    pub query: String,
    /// The strategy that produced this context.
    pub strategy: String,
    /// How the question was classified.
    pub dispatch: Dispatch,
    /// The question's answer as the rows of a query, ahead of the facts;
    /// null when no query answered it.
    #[serde(default)]
    pub answers: Option<AnswerSet>,
    /// Retrieved text with sources.
    pub unstructured: Vec<TextHit>,
    /// Retrieved triples.
    pub structured_facts: Vec<Fact>,
    /// API functions.
    pub functions: Vec<FunctionInfo>,
    /// Worked examples.
    pub cases: Vec<CaseInfo>,
    /// Evidence or dependency paths, as IRI sequences.
    pub paths: Vec<Vec<String>>,
    /// SPARQL queries that were executed.
    pub sparql: Vec<String>,
    /// What each stage kept and dropped.
    pub trace: Vec<TraceStage>,
    /// Why a strategy returned nothing on purpose (`no_tags`, ...); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_field_names_follow_the_design() {
        let context = FusedContext {
            query: "q".into(),
            strategy: "flat".into(),
            dispatch: Dispatch::Hybrid,
            unstructured: vec![TextHit {
                iri: "urn:a".into(),
                text: "t".into(),
                score: 0.5,
                source: SourceRef {
                    id: "urn:doc".into(),
                    chunk_id: Some("doc::s::1".into()),
                    ..SourceRef::default()
                },
            }],
            trace: vec![TraceStage {
                stage: "vector".into(),
                kept: vec!["urn:a".into()],
                dropped: vec![Dropped {
                    iri: "urn:b".into(),
                    why: "below k".into(),
                }],
            }],
            ..FusedContext::default()
        };
        let json = serde_json::to_value(&context).expect("json");
        for field in [
            "query",
            "strategy",
            "dispatch",
            "unstructured",
            "structured_facts",
            "functions",
            "cases",
            "paths",
            "sparql",
            "trace",
            "answers",
        ] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        assert_eq!(json["dispatch"], "hybrid");
        assert_eq!(json["unstructured"][0]["source"]["chunk_id"], "doc::s::1");
        assert_eq!(json["trace"][0]["dropped"][0]["why"], "below k");
        let back: FusedContext = serde_json::from_value(json).expect("round trip");
        assert_eq!(back, context);
    }
}
