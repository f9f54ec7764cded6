//! Retrieval strategies over the paired store, each returning a
//! [`FusedContext`].
//!
//! Every strategy runs with the deterministic offline components (hash or MiniLM
//! embedder, [`kgfuse_llm::RuleBased`]) and accepts any [`LanguageModel`] for its
//! judgement steps:
//!
//! - [`Strategy::Bm25`]: BM25 over names and descriptions, the lexical baseline;
//! - [`Strategy::Flat`]: vector top-k, the baseline every other strategy is compared with;
//! - [`Strategy::Hybrid`]: BM25 full-text and vector ranks fused by RRF;
//! - [`Strategy::Unified`]: vector hits, entity linking, generated SPARQL, paths;
//! - [`Strategy::Paths`]: SGKR dependency paths from the question's input concepts to
//!   its output concepts;
//! - [`Strategy::Neighborhood`]: Graph-RAG scoring of a small neighbourhood, with
//!   evidence paths;
//! - [`Strategy::Domain`]: DomAgent package classification, function ranking, a
//!   refinement gate and coverage-selected cases (the case base is built at index
//!   time by [`case_base::build`]);
//! - [`Strategy::Auto`]: the default; today it runs `unified`, whose node
//!   ranking fuses the other strategies' channels (see [`Strategy::Auto`]).

mod expansion;
mod functions;
mod fusion;
mod kept;
mod sources;
mod strategies;

pub use expansion::Expander;
pub use kgfuse_understand::{Depth, Understanding, understand};
pub use sources::sources_of;
pub use strategies::domain::case_base::{self, CaseBaseOptions, CaseBaseReport};
pub use strategies::domain::{DomainOptions, check_packages, repair_packages};
pub use strategies::neighborhood::NeighborhoodOptions;
pub use strategies::paths::{FlowDifferences, PathLimits, check_data_flow, repair_data_flow};
use strategies::{bm25, domain, flat, hybrid, neighborhood, paths, unified};

use kgfuse_core::context::{FusedContext, TraceStage};
use kgfuse_llm::LanguageModel;
use kgfuse_store::{Question, Store};
use std::collections::BTreeSet;

pub use kgfuse_lexicon::lexicon::{Changes as LexiconChanges, Lexicon};
pub use kgfuse_lexicon::{LexiconError, RetrieveError, TimedOut};

/// A retrieval strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// BM25 over names and descriptions only: the lexical baseline.
    Bm25,
    /// Vector top-k over every embedded node.
    Flat,
    /// BM25 full-text and vector search fused by reciprocal rank.
    Hybrid,
    /// Dependency paths from the question's input tags to its output tags (SGKR).
    Paths,
    /// Graph-RAG: a scored neighbourhood of the linked entities with evidence paths.
    Neighborhood,
    /// Unified context retriever: entities, generated SPARQL, paths, and one fused
    /// node ranking of every channel.
    Unified,
    /// DomAgent: packages, functions ranked inside them, a refinement gate, cases.
    Domain,
    /// The default: `unified`, whose one fused node ranking takes in the lexical,
    /// graph-walk, query-answer, domain and path channels (measured on every
    /// evaluation set against each strategy alone, EVALUATION.md).
    #[default]
    Auto,
}

impl Strategy {
    /// Every strategy, in the order help texts list them.
    pub const ALL: [Self; 8] = [
        Self::Auto,
        Self::Bm25,
        Self::Flat,
        Self::Hybrid,
        Self::Unified,
        Self::Domain,
        Self::Paths,
        Self::Neighborhood,
    ];

    /// The strategy with this [`Strategy::name`] (any case; `neighbourhood` too),
    /// or an error naming the valid ones.
    pub fn from_name(name: &str) -> Result<Self, UnknownStrategy> {
        let wanted = name.trim().to_ascii_lowercase();
        let wanted = if wanted == "neighbourhood" {
            "neighborhood"
        } else {
            wanted.as_str()
        };
        Self::ALL
            .into_iter()
            .find(|s| s.name() == wanted)
            .ok_or_else(|| UnknownStrategy(name.split_whitespace().collect::<Vec<_>>().join(" ")))
    }

    /// How much of a question the strategy needs worked out: `unified` (and
    /// `auto`) read its linked terms, query graphs and plans, and a real
    /// model's reading; the others search by its words.
    pub fn depth(self) -> Depth {
        match self {
            Self::Unified | Self::Auto => Depth::Graph,
            _ => Depth::Words,
        }
    }

    /// Name used on the command line and in `FusedContext::strategy`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Flat => "flat",
            Self::Hybrid => "hybrid",
            Self::Paths => "paths",
            Self::Neighborhood => "neighborhood",
            Self::Unified => "unified",
            Self::Domain => "domain",
            Self::Auto => "auto",
        }
    }
}

/// Written as its [`Strategy::name`].
impl serde::Serialize for Strategy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read by [`Strategy::from_name`]: any case, and `neighbourhood` too; an unknown
/// name is an error that lists the valid ones. HTTP and MCP requests take their
/// strategy this way, so no interface parses the names itself.
impl<'de> serde::Deserialize<'de> for Strategy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::from_name(&name).map_err(serde::de::Error::custom)
    }
}

/// A string naming one of [`Strategy::ALL`] (the schema MCP tools publish).
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Strategy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Strategy".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": Self::ALL.map(Self::name),
        })
    }
}

/// A strategy name [`Strategy::from_name`] does not know; its message lists the
/// valid names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy '{0}'; valid strategies: {names}", names = Strategy::ALL.map(Strategy::name).join(", "))]
pub struct UnknownStrategy(pub String);

/// What to retrieve and how much.
#[derive(Debug, Clone)]
pub struct RetrieveOptions {
    /// The strategy.
    pub strategy: Strategy,
    /// How many items the strategy returns at most.
    pub top_k: usize,
    /// Depth and count limits of the `paths` strategy.
    pub paths: PathLimits,
    /// Distance, weighting and seeds of the `neighborhood` strategy.
    pub neighborhood: NeighborhoodOptions,
    /// Package choice, gate and case limits of the `domain` strategy.
    pub domain: DomainOptions,
    /// Nodes that must not appear in the result nor inform it (a held-out case in a
    /// leave-one-out evaluation): held out of every vector and lexical search
    /// ([`Question::holding_out`]) and of `unified`'s entities and graph walks,
    /// ignored by `domain` as structural ties and as cases, and removed from
    /// every list of the context.
    pub exclude: BTreeSet<String>,
    /// Model-assisted retrieval: this model's hypothetical snippet is searched
    /// with the question (see [`Expander`]); `None` searches with the question alone.
    pub expand_with: Option<Expander>,
    /// `unified` with a real model: also ask the model for a SPARQL query of
    /// its own (text-to-SPARQL, `kgfuse-text2sparql`) when its plan did not
    /// answer: one more request and up to two repairs, beyond the model-call
    /// budget of an understanding. Off by default.
    pub model_query: bool,
}

impl Default for RetrieveOptions {
    fn default() -> Self {
        Self {
            strategy: Strategy::Auto,
            top_k: 8,
            paths: PathLimits::default(),
            neighborhood: NeighborhoodOptions::default(),
            domain: DomainOptions::default(),
            exclude: BTreeSet::new(),
            expand_with: None,
            model_query: false,
        }
    }
}

/// Whether the store has any function or method.
pub(crate) fn holds_code(store: &Store) -> Result<bool, RetrieveError> {
    Ok(store.graph().has_instances(&[
        kgfuse_core::vocab::kg::FUNCTION,
        kgfuse_core::vocab::kg::METHOD,
    ])?)
}

/// Removes the items whose IRI is excluded, noting each in `dropped`.
fn remove_excluded<T>(
    items: &mut Vec<T>,
    iri_of: impl Fn(&T) -> &str,
    exclude: &BTreeSet<String>,
    dropped: &mut Vec<kgfuse_core::context::Dropped>,
) {
    items.retain(|item| {
        let iri = iri_of(item);
        let excluded = exclude.contains(iri);
        if excluded {
            dropped.push(kgfuse_core::context::Dropped {
                iri: iri.to_owned(),
                why: "excluded by the caller".into(),
            });
        }
        !excluded
    });
}

/// Removes excluded nodes from every list of a context, saying so in the trace.
fn drop_excluded(context: &mut FusedContext, exclude: &BTreeSet<String>) {
    let mut dropped = Vec::new();
    remove_excluded(&mut context.unstructured, |h| &h.iri, exclude, &mut dropped);
    remove_excluded(&mut context.functions, |f| &f.iri, exclude, &mut dropped);
    remove_excluded(&mut context.cases, |c| &c.iri, exclude, &mut dropped);
    context
        .structured_facts
        .retain(|f| !exclude.contains(&f.subject) && !exclude.contains(&f.object));
    context
        .paths
        .retain(|p| !p.iter().any(|node| exclude.contains(node)));
    // Held out of every search, most never come back: the trace names them all.
    for iri in exclude {
        if !dropped.iter().any(|d| &d.iri == iri) {
            dropped.push(kgfuse_core::context::Dropped {
                iri: iri.clone(),
                why: "held out by the caller: no stage returned it".into(),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "exclude".into(),
        kept: Vec::new(),
        dropped,
    });
}

/// Retrieves context for `question`: understands it as far as the strategy
/// needs ([`Strategy::depth`]), then retrieves.
pub async fn retrieve(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    options: &RetrieveOptions,
) -> Result<FusedContext, RetrieveError> {
    retrieve_question(store, model, Question::new(question), options).await
}

/// [`retrieve`] for a [`Question`] that may already carry its embedding.
/// With [`RetrieveOptions::expand_with`], the model's hypothetical snippet is
/// understood and searched with the question.
pub async fn retrieve_question(
    store: &Store,
    model: &dyn LanguageModel,
    question: Question,
    options: &RetrieveOptions,
) -> Result<FusedContext, RetrieveError> {
    check(question.text(), options)?;
    let Some(expander) = &options.expand_with else {
        let understanding = understand(store, model, question, options.strategy.depth())?;
        return retrieve_understood(store, model, &understanding, options).await;
    };
    let (expanded, stage) = expansion::expand(expander, question.text());
    let understanding = understand(store, model, expanded, options.strategy.depth())?;
    let mut context = retrieve_understood(store, model, &understanding, options).await?;
    context.query = question.text().to_owned();
    context.trace.insert(0, stage);
    Ok(context)
}

/// The request's own checks, before anything is worked out.
fn check(question: &str, options: &RetrieveOptions) -> Result<(), RetrieveError> {
    if question.trim().is_empty() {
        return Err(RetrieveError::Invalid("the question is empty".into()));
    }
    if options.top_k == 0 {
        return Err(RetrieveError::Invalid("top-k must be at least 1".into()));
    }
    Ok(())
}

/// Retrieves context for a question already understood (the answer loop
/// understands its question once for its rows and its retrieval). The
/// understanding must be as deep as the strategy needs ([`Strategy::depth`]).
pub async fn retrieve_understood(
    store: &Store,
    model: &dyn LanguageModel,
    understanding: &Understanding,
    options: &RetrieveOptions,
) -> Result<FusedContext, RetrieveError> {
    check(understanding.text(), options)?;
    if options.strategy.depth() == Depth::Graph && understanding.depth == Depth::Words {
        return Err(RetrieveError::Invalid(format!(
            "the question was understood to its words only; `{}` needs it linked to the graph",
            options.strategy.name()
        )));
    }
    // Excluded nodes are held out of every search, not only of the result, so
    // none of them seeds a walk or takes a slot another node would have had.
    let holding_out;
    let question = if options.exclude.is_empty() {
        &understanding.question
    } else {
        holding_out = understanding.question.holding_out(&options.exclude);
        &holding_out
    };
    let (strategy, auto_stage) = match options.strategy {
        Strategy::Auto => {
            let stage = TraceStage {
                stage: "auto".into(),
                kept: vec![
                    "unified: one fused ranking of every channel (lexical, graph walk, \
                     query answers, domain, paths) and the generated queries' facts"
                        .to_owned(),
                ],
                dropped: Vec::new(),
            };
            (Strategy::Unified, Some(stage))
        }
        other => (other, None),
    };
    let text = understanding.text();
    let mut context = match strategy {
        Strategy::Bm25 => bm25::retrieve(store, question, options.top_k)?,
        Strategy::Flat => flat::retrieve(store, question, options.top_k).await?,
        Strategy::Hybrid => hybrid::retrieve(store, question, options.top_k).await?,
        Strategy::Paths => paths::retrieve(store, text, options.top_k, options.paths).await?,
        // Auto became Unified above; the arm only keeps the match exhaustive.
        Strategy::Unified | Strategy::Auto => {
            unified::retrieve(store, model, understanding, question, options).await?
        }
        Strategy::Neighborhood => {
            neighborhood::retrieve(store, question, options.top_k, options.neighborhood).await?
        }
        Strategy::Domain => {
            domain::retrieve(
                store,
                model,
                question,
                options.top_k,
                options.domain,
                &options.exclude,
            )
            .await?
        }
    };
    if let Some(stage) = auto_stage {
        context.trace.insert(0, stage);
    }
    if !options.exclude.is_empty() {
        drop_excluded(&mut context, &options.exclude);
    }
    context.query = text.to_owned();
    context.strategy = strategy.name().to_owned();
    context.dispatch = understanding.dispatch;
    let mut trace = understanding.trace.clone();
    trace.append(&mut context.trace);
    context.trace = trace;
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::context::{CaseInfo, Fact, FunctionInfo, TextHit};
    use kgfuse_llm::LlmError;

    /// Every stage that searches by the question shares one embedding: each
    /// strategy embeds the question at most once per retrieval (the answer
    /// loop's test checks that it reuses it too).
    #[tokio::test]
    async fn a_retrieval_embeds_its_question_once() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let files = ["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"].map(|f| root.join(f));
        let (_dir, store) = kgfuse_lexicon::testing::with_files(&files).await;
        let model = kgfuse_llm::RuleBased::default();
        let question = "How many days a week can I work remotely?";
        for strategy in Strategy::ALL {
            let options = RetrieveOptions {
                strategy,
                ..RetrieveOptions::default()
            };
            let before = store.time_spent().embeddings;
            retrieve(&store, &model, question, &options)
                .await
                .expect("retrieve");
            let embedded = store.time_spent().embeddings - before;
            assert!(embedded <= 1, "{}: {embedded} embeddings", strategy.name());
        }
    }

    #[test]
    fn excluded_nodes_leave_every_list_and_the_trace_says_so() {
        let mut context = FusedContext {
            unstructured: vec![
                TextHit {
                    iri: "urn:held-out".into(),
                    ..TextHit::default()
                },
                TextHit {
                    iri: "urn:kept".into(),
                    ..TextHit::default()
                },
            ],
            functions: vec![FunctionInfo {
                iri: "urn:kept".into(),
                ..FunctionInfo::default()
            }],
            cases: vec![CaseInfo {
                iri: "urn:held-out".into(),
                ..CaseInfo::default()
            }],
            structured_facts: vec![Fact {
                subject: "urn:held-out".into(),
                ..Fact::default()
            }],
            paths: vec![vec!["urn:kept".into(), "urn:held-out".into()]],
            ..FusedContext::default()
        };
        drop_excluded(&mut context, &BTreeSet::from(["urn:held-out".to_owned()]));
        assert_eq!(context.unstructured.len(), 1);
        assert_eq!(context.functions.len(), 1);
        assert!(context.cases.is_empty());
        assert!(context.structured_facts.is_empty());
        assert!(context.paths.is_empty());
        let stage = context.trace.last().expect("exclude stage");
        assert_eq!(stage.stage, "exclude");
        assert_eq!(stage.dropped.len(), 2);
    }

    /// A real (not offline) model that counts every call and reads every
    /// question the same way: a factual question whose plan names no class.
    #[derive(Default)]
    struct Counting {
        calls: std::sync::Mutex<Vec<&'static str>>,
    }

    impl Counting {
        fn called(&self, task: &'static str) {
            self.calls.lock().expect("lock").push(task);
        }
        fn taken(&self) -> Vec<&'static str> {
            std::mem::take(&mut *self.calls.lock().expect("lock"))
        }
    }

    impl LanguageModel for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn classify(&self, _: &str, _: &[&str]) -> Result<Option<usize>, LlmError> {
            self.called("classify");
            Ok(None)
        }
        fn extract_entities(&self, _: &str) -> Result<Vec<String>, LlmError> {
            self.called("extract_entities");
            Ok(Vec::new())
        }
        fn judge_candidates(
            &self,
            _: &str,
            items: &[&str],
        ) -> Result<Vec<kgfuse_llm::Relevance>, LlmError> {
            self.called("judge_candidates");
            Ok(items
                .iter()
                .map(|_| kgfuse_llm::Relevance {
                    relevant: true,
                    why: "counted".into(),
                })
                .collect())
        }
        fn complete(&self, _: &str, _: &str) -> Result<String, LlmError> {
            self.called("complete");
            Err(LlmError::Service("not used".into()))
        }
        fn rewrite_query(&self, question: &str, _: &[String]) -> Result<String, LlmError> {
            self.called("rewrite_query");
            Ok(question.to_owned())
        }
        fn draft_answer(
            &self,
            _: &str,
            _: &[kgfuse_llm::Passage],
        ) -> Result<kgfuse_llm::Draft, LlmError> {
            self.called("draft_answer");
            Err(LlmError::Service("not used".into()))
        }
        fn generate_sparql(&self, _: &kgfuse_llm::SparqlRequest) -> Result<String, LlmError> {
            self.called("generate_sparql");
            Err(LlmError::Service("not used".into()))
        }
        fn read_question(&self, _: &kgfuse_llm::ReadingRequest) -> Result<String, LlmError> {
            self.called("read_question");
            Ok(r#"{"answer": "rows", "class": null}"#.into())
        }
    }

    /// The model-call budget of a retrieval: the strategies that search by the
    /// words ask a model nothing (but `domain`, its package pick and gate);
    /// `unified` (and `auto`) ask for one reading (a plan that asks for nothing
    /// is not repaired); nothing else.
    #[tokio::test]
    async fn a_retrieval_asks_a_model_for_its_reading_and_nothing_else() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let files = ["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"].map(|f| root.join(f));
        let (_dir, store) = kgfuse_lexicon::testing::with_files(&files).await;
        let model = Counting::default();
        for strategy in Strategy::ALL {
            let options = RetrieveOptions {
                strategy,
                ..RetrieveOptions::default()
            };
            let context = retrieve(&store, &model, "Who approves remote work?", &options)
                .await
                .expect("retrieve");
            let calls = model.taken();
            if strategy.depth() == Depth::Graph {
                assert_eq!(calls, ["read_question"], "{}", strategy.name());
                // Dispatch by the words ("who"): the model is not asked the kind.
                assert_eq!(context.dispatch, kgfuse_core::context::Dispatch::Factual);
                assert_eq!(context.trace[0].stage, "dispatch");
            } else if strategy == Strategy::Domain {
                // DomAgent's package pick, then its gate in one request.
                let allowed = ["classify", "judge_candidates"];
                assert!(
                    calls.len() <= 2 && calls.iter().zip(allowed).all(|(c, a)| *c == a),
                    "{calls:?}"
                );
            } else {
                assert!(calls.is_empty(), "{}: {calls:?}", strategy.name());
            }
        }
    }
}
