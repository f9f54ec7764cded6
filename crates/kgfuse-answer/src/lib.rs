//! The grounded answer loop: an answer with citations from the retrieved context,
//! or "insufficient context" instead of a guess.
//!
//! ```text
//! prepare the question (blank -> failure, before any retrieval or model call)
//!   -> retrieve candidates (a strategy, top_k)
//!   -> rank and filter: relevance to the question (cosine, same for every
//!      strategy), drop below the threshold, drop superseded and stale sources,
//!      prefer higher authority then the newer effective date; sources that
//!      conflict are resolved the same way and recorded as contradictions
//!   -> assess the context: sufficient / weak / contradictory / missing
//!   -> weak or missing: expand once through policy relations (mentions,
//!      escalatesTo, requires, appliesTo), then rewrite the query with the labels
//!      and aliases of linked entities; never more than max_retrieval_attempts
//!   -> draft from the selected passages only (retrieved text is data: the prompt
//!      fences it, and instruction-like sentences are never evidence)
//!   -> validate grounding (every sentence supported by a selected passage it
//!      cites; every citation names a selected passage)
//!   -> answered | insufficient_context | failure
//! ```
//!
//! Every step is a [`TraceStage`] of the returned [`Answer`], ending with the
//! model calls and tokens it cost.

mod grounding;
mod metadata;

use grounding::covered;
use kgfuse_core::answer::{
    Answer, AnswerStatus, Citation, Contradiction, GroundingStatus, ModelUsage,
};
use kgfuse_core::context::{AnswerSet, Dropped, FusedContext, SourceRef, TextHit, TraceStage};
use kgfuse_core::math::cosine;
use kgfuse_llm::{
    Claim, Draft, LanguageModel, LlmError, Passage, RuleBased, contains_instruction, content_words,
    sentences,
};
use kgfuse_retrieve::{
    Depth, RetrieveError, RetrieveOptions, Strategy, Understanding, retrieve_understood,
    sources_of, understand,
};
use kgfuse_store::{Question, Store};
use metadata::{SourceFacts, related_nodes, related_terms, source_facts};
use std::collections::{BTreeMap, BTreeSet};

/// Knobs of the answer loop.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// How candidates are retrieved. Default: `hybrid` (BM25 + vectors), top 10,
    /// because the loop answers from text passages.
    pub retrieve: RetrieveOptions,
    /// Candidates whose cosine similarity to the question is below this are dropped.
    pub min_relevance: f32,
    /// Most passages given to the model.
    pub max_passages: usize,
    /// Retrievals at most: the first plus rewrites.
    pub max_retrieval_attempts: usize,
    /// Below this share of the question's content words found in the selected
    /// passages, the context is weak.
    pub min_coverage: f32,
    /// Share of a sentence's content words its citations must hold.
    pub min_support: f32,
    /// Follow policy relations from the selected items once when the context is weak.
    pub expand_related: bool,
    /// Today as `YYYY-MM-DD`, for `validUntil`; `None` reads the system clock.
    pub today: Option<String>,
    /// Longest question accepted, in characters.
    pub max_question_chars: usize,
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            retrieve: RetrieveOptions {
                strategy: Strategy::Hybrid,
                top_k: 10,
                ..RetrieveOptions::default()
            },
            min_relevance: 0.15,
            max_passages: 6,
            max_retrieval_attempts: 2,
            min_coverage: 0.6,
            min_support: 0.6,
            expand_related: true,
            today: None,
            max_question_chars: 2000,
        }
    }
}

/// A retrieved item the loop may use.
#[derive(Debug, Clone)]
struct Candidate {
    /// Node IRI.
    iri: String,
    /// The id the model cites: the chunk id, else the IRI.
    passage_id: String,
    /// The text.
    text: String,
    /// Cosine similarity to the (original) question.
    relevance: f32,
    /// Where the text comes from.
    source: SourceRef,
    /// How it was reached when not retrieved directly (`expanded via ...`).
    via: Option<String>,
}

/// Answers `question` from the store, or says why it cannot. Never fails: errors
/// end in status `failure` with the message in `errors`.
pub async fn ask(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    options: &AskOptions,
) -> Answer {
    let usage_before = model.usage();
    let mut answer = Answer::default();
    match prepare_query(question, options.max_question_chars) {
        Ok(prepared) => {
            answer
                .trace
                .push(stage("prepare", vec![prepared.clone()], Vec::new()));
            if let Err(e) = answer_loop(store, model, &prepared, options, &mut answer).await {
                answer.status = AnswerStatus::Failure;
                answer.answer = None;
                answer.citations.clear();
                answer.confidence = 0.0;
                answer.errors.push(e.to_string());
            }
        }
        Err(message) => {
            answer.status = AnswerStatus::Failure;
            answer.context.query = question.to_owned();
            answer.trace.push(stage(
                "prepare",
                Vec::new(),
                vec![Dropped {
                    iri: "question".into(),
                    why: message.clone(),
                }],
            ));
            answer.errors.push(message);
        }
    }
    let spent = model.usage().since(&usage_before);
    answer.usage = ModelUsage {
        model: model.name().to_owned(),
        calls: spent.calls,
        cached: spent.cached,
        prompt_tokens: spent.prompt_tokens,
        completion_tokens: spent.completion_tokens,
    };
    answer.trace.push(stage(
        "usage",
        vec![format!(
            "{}: {} model calls ({} cached), {} prompt + {} completion tokens",
            model.name(),
            spent.calls,
            spent.cached,
            spent.prompt_tokens,
            spent.completion_tokens
        )],
        Vec::new(),
    ));
    answer
}

/// Normalises white space and control characters; rejects blank and overlong input.
fn prepare_query(question: &str, max_chars: usize) -> Result<String, String> {
    let cleaned: String = question
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let normalised = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if normalised.is_empty() {
        return Err("the question is empty".into());
    }
    let length = normalised.chars().count();
    if length > max_chars {
        return Err(format!(
            "the question is {length} characters long; the limit is {max_chars}"
        ));
    }
    Ok(normalised)
}

/// What the loop has selected so far.
#[derive(Debug, Default)]
struct Selection {
    kept: Vec<Candidate>,
    dropped: Vec<Dropped>,
    contradictions: Vec<Contradiction>,
    /// Conflicting sources kept because neither outranks the other.
    unresolved: bool,
}

/// The verdict on a selection.
#[derive(Debug, Clone, PartialEq)]
enum Quality {
    Sufficient,
    Contradictory,
    Weak(String),
    Missing,
}

impl Quality {
    fn name(&self) -> &'static str {
        match self {
            Quality::Sufficient => "sufficient",
            Quality::Contradictory => "contradictory",
            Quality::Weak(_) => "weak",
            Quality::Missing => "missing",
        }
    }

    fn needs_more(&self) -> bool {
        matches!(self, Quality::Weak(_) | Quality::Missing)
    }
}

/// What the retrieval rounds leave for drafting.
struct Gathered {
    /// The last retrieval's context.
    context: FusedContext,
    /// Everything retrieved (or reached by expansion) in any round.
    pool: BTreeMap<String, Candidate>,
    selection: Selection,
    quality: Quality,
}

async fn answer_loop(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    options: &AskOptions,
    answer: &mut Answer,
) -> Result<(), RetrieveError> {
    // The question is understood once, as deep as its rows need: the same
    // understanding answers from rows and serves the first retrieval.
    let understanding = understand(store, model, Question::new(question), Depth::Graph)?;
    if answer_from_rows(store, &understanding, answer)? {
        return Ok(());
    }
    let gathered = gather(store, model, &understanding, options, answer).await?;
    answer.contradictions = gathered.selection.contradictions.clone();
    let mut context = gathered.context.clone();
    context.query = question.to_owned();
    context.unstructured = gathered
        .selection
        .kept
        .iter()
        .map(|c| TextHit {
            iri: c.iri.clone(),
            text: c.text.clone(),
            score: c.relevance,
            source: c.source.clone(),
        })
        .collect();
    answer.context = context;
    if let Some(gap) = knowledge_gap(store, question, &gathered, options, answer).await? {
        answer.status = AnswerStatus::InsufficientContext;
        answer.knowledge_gap = Some(gap);
        return Ok(());
    }
    draft_and_check(model, question, &gathered.selection, options, answer)?;
    if answer.status == AnswerStatus::Answered {
        check_anchors(store, &Anchors::of(&understanding), answer)?;
    }
    Ok(())
}

/// The entities a question is about, which an answer's support must reach:
/// the nodes linked to names the question says whole (a partial match or a
/// qualifier is no anchor), and the names its words give (quoted, identifiers,
/// capitalised runs).
#[derive(Debug, Default)]
struct Anchors {
    nodes: Vec<String>,
    /// Lower case, at least three characters.
    names: Vec<String>,
}

impl Anchors {
    fn of(understanding: &Understanding) -> Self {
        let mut anchors = Self::default();
        let whole = understanding
            .linked
            .mentions
            .iter()
            .filter(|m| !m.qualifier)
            .flat_map(|m| &m.candidates)
            .filter(|c| c.name_coverage >= kgfuse_lexicon::linking::WHOLE_NAME);
        for candidate in whole {
            anchors.nodes.push(candidate.iri.clone());
            anchors.add_name(&candidate.name);
        }
        for name in &understanding.names {
            anchors.add_name(name);
        }
        anchors
    }

    fn add_name(&mut self, name: &str) {
        let name = name.trim().to_lowercase();
        if name.chars().count() >= 3 && !self.names.contains(&name) {
            self.names.push(name);
        }
    }

    fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.names.is_empty()
    }
}

/// An answer about a named entity stands only if a cited passage reaches it:
/// the passage quotes its name, or the passage's node is the entity or one
/// edge from it. Otherwise the answer is withdrawn (status insufficient, what
/// was cited kept in the context): an item that shares a word with the
/// question but not its entity answers another question.
fn check_anchors(
    store: &Store,
    anchors: &Anchors,
    answer: &mut Answer,
) -> Result<(), RetrieveError> {
    if anchors.is_empty() {
        return Ok(());
    }
    let cited: Vec<&TextHit> = answer
        .context
        .unstructured
        .iter()
        .filter(|hit| {
            answer.citations.iter().any(|c| {
                c.chunk_id.as_deref() == hit.source.chunk_id.as_deref()
                    && (c.source_id == hit.iri || c.source_id == hit.source.id)
            })
        })
        .collect();
    let quoted = cited.iter().any(|hit| {
        let text = hit.text.to_lowercase();
        anchors
            .names
            .iter()
            .any(|name| text.contains(name.as_str()))
    });
    let nodes: Vec<String> = cited.iter().map(|hit| hit.iri.clone()).collect();
    let reached = quoted
        || nodes.iter().any(|n| anchors.nodes.contains(n))
        || metadata::one_edge_apart(store, &anchors.nodes, &nodes)?;
    let mut shown: Vec<String> = anchors.names.clone();
    shown.extend(anchors.nodes.iter().cloned());
    if reached {
        answer.trace.push(stage(
            "anchors",
            vec![format!("the cited passages reach {}", shown.join(", "))],
            Vec::new(),
        ));
        return Ok(());
    }
    let why = format!(
        "no cited passage names or is linked to what the question is about ({})",
        shown.join(", ")
    );
    answer.trace.push(stage(
        "anchors",
        Vec::new(),
        vec![Dropped {
            iri: answer.answer.clone().unwrap_or_default(),
            why: why.clone(),
        }],
    ));
    answer.status = AnswerStatus::InsufficientContext;
    answer.knowledge_gap = Some(why);
    answer.answer = None;
    answer.citations.clear();
    answer.confidence = 0.0;
    answer.grounding_status = GroundingStatus::Unsupported;
    Ok(())
}

/// A question about the store's own classes ("how many vendors", "which
/// department has the most members") is answered by the rows of a query plan,
/// cited to the query; when it names a class but no plan returns rows, the
/// context is insufficient. Whether it answered (or gave up) here.
fn answer_from_rows(
    store: &Store,
    understanding: &Understanding,
    answer: &mut Answer,
) -> Result<bool, RetrieveError> {
    let question = understanding.text();
    answer.trace.extend(understanding.trace.iter().cloned());
    let Some(rows) = understanding
        .answers
        .clone()
        .filter(|r| r.answered() && kgfuse_plan::planner::answered_for_a_class(r))
    else {
        if understanding.shaped {
            answer.status = AnswerStatus::InsufficientContext;
            answer.context.query = question.to_owned();
            answer.knowledge_gap = Some(
                "no query over the store's classes and properties returns rows for this question"
                    .into(),
            );
            return Ok(true);
        }
        return Ok(false);
    };
    answer.status = AnswerStatus::Answered;
    let lexicon = kgfuse_lexicon::lexicon::Lexicon::of(store)?;
    let name_of = |iri: &str| {
        lexicon
            .entry_of(iri)
            .map(|e| e.name.clone())
            .filter(|name| !name.is_empty())
    };
    answer.answer = Some(format!("{} [1]", rows_as_text(&rows, name_of)));
    answer.citations = vec![Citation {
        source_id: "sparql".into(),
        title: Some(rows.query.clone()),
        section: None,
        chunk_id: None,
    }];
    answer.confidence = 1.0;
    answer.grounding_status = GroundingStatus::Grounded;
    answer.retrieval_attempts = 1;
    answer.context.query = question.to_owned();
    answer.context.sparql = vec![rows.query.clone()];
    answer.context.answers = Some(rows);
    answer.trace.push(stage(
        "rows",
        vec!["answered from the rows of the plan's query".into()],
        Vec::new(),
    ));
    Ok(true)
}

/// A yes or no, one value, or the rows as `a | b; c | d`, a node shown by its
/// name (`name_of`) with its IRI.
fn rows_as_text(rows: &AnswerSet, name_of: impl Fn(&str) -> Option<String>) -> String {
    if let Some(yes) = rows.boolean {
        return if yes { "Yes." } else { "No." }.to_owned();
    }
    let cell = |c: &Option<String>| match c.as_deref() {
        None => "-".to_owned(),
        Some(value) => match name_of(value) {
            Some(name) if name != value => format!("{name} <{value}>"),
            _ => value.to_owned(),
        },
    };
    let cells: Vec<String> = rows
        .rows
        .iter()
        .map(|row| row.iter().map(cell).collect::<Vec<_>>().join(" | "))
        .collect();
    let more = if rows.truncated { "; and more" } else { "" };
    format!("{}{more}", cells.join("; "))
}

/// Retrieval rounds: retrieve, rank, assess; when weak, expand once and rewrite,
/// up to `max_retrieval_attempts` retrievals. The first retrieval reads the
/// question's understanding; a rewritten query is understood offline (the
/// rewrite itself is offline too), so the rounds add no model call.
async fn gather(
    store: &Store,
    model: &dyn LanguageModel,
    understanding: &Understanding,
    options: &AskOptions,
    answer: &mut Answer,
) -> Result<Gathered, RetrieveError> {
    let today = options.today.clone().unwrap_or_else(today_utc);
    let question = understanding.text();
    // One embedding of the question serves the first retrieval and the loop's
    // own similarity; a rewritten query is embedded when it is searched.
    let question_vector = store.vector_of(&understanding.question)?;
    let mut gathered = Gathered {
        context: FusedContext::default(),
        pool: BTreeMap::new(),
        selection: Selection::default(),
        quality: Quality::Missing,
    };
    let mut rewritten_query: Option<Understanding> = None;
    let mut expanded = false;
    for attempt in 1..=options.max_retrieval_attempts.max(1) {
        answer.retrieval_attempts = attempt;
        let query = rewritten_query.as_ref().unwrap_or(understanding);
        gathered.context = retrieve_understood(store, model, query, &options.retrieve).await?;
        let found = candidates_of(store, &gathered.context, question_vector).await?;
        answer.trace.push(stage(
            &format!("retrieve #{attempt}"),
            vec![format!(
                "{} candidates from `{}` for: {}",
                found.len(),
                gathered.context.strategy,
                query.text()
            )],
            Vec::new(),
        ));
        merge(&mut gathered.pool, found);
        reselect(
            store,
            question,
            options,
            &today,
            attempt,
            &mut gathered,
            answer,
        )?;
        if gathered.quality.needs_more()
            && options.expand_related
            && !expanded
            && !gathered.selection.kept.is_empty()
        {
            expanded = true;
            let added = expand(
                store,
                &gathered.selection.kept,
                question_vector,
                &mut gathered.pool,
            )
            .await?;
            answer.trace.push(stage("expand", added, Vec::new()));
            reselect(
                store,
                question,
                options,
                &today,
                attempt,
                &mut gathered,
                answer,
            )?;
        }
        if !gathered.quality.needs_more() || attempt == options.max_retrieval_attempts {
            break;
        }
        let rewritten = rewrite(store, question, &gathered)?;
        if rewritten == query.text() {
            answer.trace.push(stage(
                "rewrite",
                Vec::new(),
                vec![Dropped {
                    iri: query.text().to_owned(),
                    why: "no related term adds anything; not retrieving again".into(),
                }],
            ));
            break;
        }
        answer
            .trace
            .push(stage("rewrite", vec![rewritten.clone()], Vec::new()));
        rewritten_query = Some(understand(
            store,
            &RuleBased::default(),
            Question::new(rewritten),
            options.retrieve.strategy.depth(),
        )?);
    }
    Ok(gathered)
}

/// Ranks and assesses the pool again, recording both steps.
fn reselect(
    store: &Store,
    question: &str,
    options: &AskOptions,
    today: &str,
    attempt: usize,
    gathered: &mut Gathered,
    answer: &mut Answer,
) -> Result<(), RetrieveError> {
    gathered.selection = select(store, question, &gathered.pool, options, today)?;
    gathered.quality = assess(question, &gathered.selection, options);
    answer.trace.push(rank_stage(attempt, &gathered.selection));
    answer
        .trace
        .push(assess_stage(&gathered.quality, &gathered.selection));
    Ok(())
}

/// The question rewritten with the labels and aliases of the entities the kept
/// passages (else the three best candidates) mention, offline
/// ([`RuleBased::rewrite_query`]: the related terms that add content words).
fn rewrite(store: &Store, question: &str, gathered: &Gathered) -> Result<String, RetrieveError> {
    let mut basis: Vec<String> = gathered
        .selection
        .kept
        .iter()
        .map(|c| c.iri.clone())
        .collect();
    if basis.is_empty() {
        basis = ranked_pool(&gathered.pool)
            .iter()
            .take(3)
            .map(|c| c.iri.clone())
            .collect();
    }
    let terms = related_terms(store, &basis)?;
    Ok(RuleBased::default().rewrite_query(question, &terms)?)
}

/// Why the context cannot answer, when that is clear before asking the model:
/// nothing relevant, or question words the store does not know while the
/// passages cover too little of the question.
async fn knowledge_gap(
    store: &Store,
    question: &str,
    gathered: &Gathered,
    options: &AskOptions,
    answer: &mut Answer,
) -> Result<Option<String>, RetrieveError> {
    if gathered.quality == Quality::Missing {
        return Ok(Some(format!(
            "no retrieved source is relevant enough (cosine similarity at least {:.2})",
            options.min_relevance
        )));
    }
    let (covered_share, _) = coverage(question, &gathered.selection.kept);
    let unknown = unknown_words(store, question, gathered.pool.values()).await?;
    if unknown.is_empty() || covered_share >= options.min_coverage {
        return Ok(None);
    }
    answer.trace.push(stage(
        "gap",
        Vec::new(),
        vec![Dropped {
            iri: question.to_owned(),
            why: format!(
                "question words found nowhere in the store: {}; not asking the model",
                unknown.join(", ")
            ),
        }],
    ));
    Ok(Some(format!(
        "nothing in the store mentions: {}",
        unknown.join(", ")
    )))
}

/// The model's draft, unless it is unusable (malformed, or not in time) or says
/// "insufficient" where the extractive draft ([`RuleBased`], what the offline loop
/// answers) finds support: then the extractive draft, with the reason in the trace. A small local model
/// so never answers worse than no model (grounding still checks what follows).
fn draft_keeping_the_extractive_answer(
    model: &dyn LanguageModel,
    question: &str,
    passages: &[Passage],
    answer: &mut Answer,
) -> Result<Draft, RetrieveError> {
    let extractive = || RuleBased::default().draft_answer(question, passages);
    let note = |answer: &mut Answer, why: String| {
        answer.trace.push(stage(
            "draft",
            Vec::new(),
            vec![Dropped {
                iri: question.to_owned(),
                why,
            }],
        ));
    };
    if model.is_offline() {
        return Ok(model.draft_answer(question, passages)?);
    }
    match model.draft_answer(question, passages) {
        Ok(Draft::Insufficient { missing }) => match extractive()? {
            Draft::Answer(claims) if !claims.is_empty() => {
                note(
                    answer,
                    format!(
                        "the model found the passages insufficient ({missing}), but the extractive draft finds support: it is used"
                    ),
                );
                Ok(Draft::Answer(claims))
            }
            _ => Ok(Draft::Insufficient { missing }),
        },
        Ok(draft) => Ok(draft),
        Err(error @ (LlmError::Service(_) | LlmError::Timeout { .. })) => {
            note(
                answer,
                format!("the model's draft was unusable ({error}); the extractive draft is used"),
            );
            Ok(extractive()?)
        }
        Err(other) => Err(other.into()),
    }
}

/// Drafts from the kept passages, validates grounding, and finalises.
fn draft_and_check(
    model: &dyn LanguageModel,
    question: &str,
    selection: &Selection,
    options: &AskOptions,
    answer: &mut Answer,
) -> Result<(), RetrieveError> {
    let passages: Vec<Passage> = selection
        .kept
        .iter()
        .map(|c| Passage {
            id: c.passage_id.clone(),
            text: c.text.clone(),
        })
        .collect();
    let claims = match draft_keeping_the_extractive_answer(model, question, &passages, answer)? {
        Draft::Insufficient { missing } => {
            answer.trace.push(stage(
                "draft",
                Vec::new(),
                vec![Dropped {
                    iri: question.to_owned(),
                    why: format!("the model found the passages insufficient: {missing}"),
                }],
            ));
            answer.status = AnswerStatus::InsufficientContext;
            answer.knowledge_gap = Some(missing);
            return Ok(());
        }
        Draft::Answer(claims) => claims,
    };
    answer.trace.push(stage(
        "draft",
        claims
            .iter()
            .map(|c| format!("{} [{}]", c.text, c.citations.join(", ")))
            .collect(),
        Vec::new(),
    ));
    let (checks, grounding) = grounding::check(&claims, &passages, options.min_support);
    let problems: Vec<String> = checks.iter().filter_map(|c| c.problem.clone()).collect();
    answer.grounding_status = grounding;
    answer.trace.push(stage(
        "grounding",
        vec![format!("{grounding:?}")],
        problems
            .iter()
            .map(|why| Dropped {
                iri: "claim".into(),
                why: why.clone(),
            })
            .collect(),
    ));
    if grounding != GroundingStatus::Grounded {
        answer.status = AnswerStatus::InsufficientContext;
        answer.knowledge_gap =
            Some("the drafted answer is not supported by the selected sources".into());
        answer.errors.extend(problems);
        return Ok(());
    }
    let (text, citations) = render(&claims, &selection.kept);
    answer.status = AnswerStatus::Answered;
    answer.answer = Some(text);
    answer.citations = citations;
    #[allow(clippy::cast_precision_loss)]
    let support = checks.iter().map(|c| c.support).sum::<f32>() / checks.len().max(1) as f32;
    let (covered_share, _) = coverage(question, &selection.kept);
    answer.confidence = confidence(support, covered_share, selection);
    Ok(())
}

/// Confidence in [0, 1]: how well the sentences are supported (40 %), how much of
/// the question the passages cover (30 %) and the best passage's relevance (30 %),
/// halved when conflicting sources could not be resolved.
fn confidence(support: f32, covered_share: f32, selection: &Selection) -> f32 {
    let best = selection.kept.first().map_or(0.0, |c| c.relevance);
    let mut value = 0.4 * support + 0.3 * covered_share + 0.3 * best.clamp(0.0, 1.0);
    if selection.unresolved {
        value *= 0.5;
    }
    (value * 100.0).round() / 100.0
}

/// The text items of a context (and its functions) as candidates, scored by
/// cosine similarity to the question so every strategy is judged alike.
async fn candidates_of(
    store: &Store,
    context: &FusedContext,
    question_vector: &[f32],
) -> Result<Vec<Candidate>, RetrieveError> {
    let mut items: Vec<(String, String, SourceRef)> = context
        .unstructured
        .iter()
        .map(|hit| (hit.iri.clone(), hit.text.clone(), hit.source.clone()))
        .collect();
    for function in &context.functions {
        let mut text = format!(
            "{}{}",
            function.name,
            function.signature.as_deref().unwrap_or("")
        );
        for knowledge in &function.knowledge {
            text.push_str(". ");
            text.push_str(knowledge);
        }
        items.push((
            function.iri.clone(),
            text,
            SourceRef {
                id: function.module.clone().unwrap_or_default(),
                ..SourceRef::default()
            },
        ));
    }
    let iris: Vec<String> = items.iter().map(|i| i.0.clone()).collect();
    let vectors: BTreeMap<String, Vec<f32>> = store.vectors_of(&iris).await?.into_iter().collect();
    Ok(items
        .into_iter()
        .map(|(iri, text, source)| {
            let relevance = vectors
                .get(&iri)
                .map_or(0.0, |v| cosine(question_vector, v));
            Candidate {
                passage_id: source.chunk_id.clone().unwrap_or_else(|| iri.clone()),
                iri,
                text,
                relevance,
                source,
                via: None,
            }
        })
        .collect())
}

/// Adds candidates to the pool, keeping each node once.
fn merge(pool: &mut BTreeMap<String, Candidate>, found: Vec<Candidate>) {
    for candidate in found {
        pool.entry(candidate.iri.clone()).or_insert(candidate);
    }
}

/// The pool, most relevant first (ties by IRI).
fn ranked_pool(pool: &BTreeMap<String, Candidate>) -> Vec<&Candidate> {
    let mut ranked: Vec<&Candidate> = pool.values().collect();
    ranked.sort_by(|a, b| b.relevance.total_cmp(&a.relevance).then(a.iri.cmp(&b.iri)));
    ranked
}

/// A pooled candidate with its source's facts.
type Sourced<'p> = (&'p Candidate, SourceFacts);
/// A candidate set aside as outdated, its facts, and why.
type SetAside<'p> = (&'p Candidate, SourceFacts, String);

/// Ranks and filters the pool (see the module docs) and records contradictions:
/// outdated, schema and weak sources out; the rest by authority, a conflict
/// resolved for the preferred source; set-aside sources that disagree with a
/// kept one reported; the kept ones cited through their documents.
fn select(
    store: &Store,
    question: &str,
    pool: &BTreeMap<String, Candidate>,
    options: &AskOptions,
    today: &str,
) -> Result<Selection, RetrieveError> {
    let iris: Vec<String> = pool.keys().cloned().collect();
    let facts = source_facts(store, &iris)?;
    let mut selection = Selection::default();
    let (mut eligible, set_aside) = triage(pool, &facts, options, today, &mut selection);
    // Authority first, then relevance, then the newer source.
    eligible.sort_by(|(a, fa), (b, fb)| {
        let rank =
            |c: &Candidate, f: &SourceFacts| c.relevance * (0.75 + 0.25 * f.authority_or_default());
        rank(b, fb)
            .total_cmp(&rank(a, fa))
            .then_with(|| fb.effective.cmp(&fa.effective))
            .then_with(|| a.iri.cmp(&b.iri))
    });
    let kept = resolve_conflicts(question, eligible, options, &mut selection);
    // Set-aside sources that disagree with a kept one are contradictions too.
    for (candidate, f, why) in set_aside {
        if let Some((_, wf)) = kept.iter().find(|(k, kf)| conflicts(&f, candidate, kf, k)) {
            let resolution = prefer(wf, &f).unwrap_or(why);
            record(
                &mut selection.contradictions,
                question,
                candidate,
                &f,
                wf,
                &resolution,
            );
        }
    }
    selection.kept = kept
        .into_iter()
        .map(|(c, f)| {
            let mut c = c.clone();
            // A node that is not a chunk is cited through the document stating it.
            if c.source.chunk_id.is_none() && c.source.title.is_none() {
                c.source.id = f.document.clone();
                c.source.title = f.title.clone();
            }
            c
        })
        .collect();
    Ok(selection)
}

/// Sorts the pool, most relevant first: superseded and stale sources are set
/// aside whatever their relevance (if they disagree with a kept source, that is
/// worth reporting); ontology terms and sources below `min_relevance` are
/// dropped; the rest are eligible.
fn triage<'p>(
    pool: &'p BTreeMap<String, Candidate>,
    facts: &BTreeMap<String, SourceFacts>,
    options: &AskOptions,
    today: &str,
    selection: &mut Selection,
) -> (Vec<Sourced<'p>>, Vec<SetAside<'p>>) {
    let mut set_aside = Vec::new();
    let mut eligible = Vec::new();
    for candidate in ranked_pool(pool) {
        let f = facts
            .get(&candidate.iri)
            .cloned()
            .unwrap_or_else(|| SourceFacts {
                document: candidate.iri.clone(),
                ..SourceFacts::default()
            });
        let outdated = if !f.superseded_by.is_empty() {
            Some(format!("superseded by {}", f.superseded_by.join(", ")))
        } else if f.is_stale(today) {
            Some(format!(
                "stale: valid until {}",
                f.valid_until.as_deref().unwrap_or("?")
            ))
        } else {
            None
        };
        let dropped = |why: String| Dropped {
            iri: candidate.iri.clone(),
            why,
        };
        if let Some(why) = outdated {
            selection.dropped.push(dropped(why.clone()));
            set_aside.push((candidate, f, why));
        } else if f.is_schema {
            selection
                .dropped
                .push(dropped("an ontology term, not a source".into()));
        } else if candidate.relevance < options.min_relevance {
            selection.dropped.push(dropped(format!(
                "relevance {:.2} below {:.2}",
                candidate.relevance, options.min_relevance
            )));
        } else {
            eligible.push((candidate, f));
        }
    }
    (eligible, set_aside)
}

/// The eligible sources in order, a conflicting one kept only when neither is
/// preferred (both kept, the contradiction unresolved), at most `max_passages`.
fn resolve_conflicts<'p>(
    question: &str,
    eligible: Vec<Sourced<'p>>,
    options: &AskOptions,
    selection: &mut Selection,
) -> Vec<Sourced<'p>> {
    let mut kept: Vec<Sourced<'p>> = Vec::new();
    for (candidate, f) in eligible {
        let rival = kept.iter().find(|(k, kf)| conflicts(&f, candidate, kf, k));
        if let Some((winner, wf)) = rival {
            match prefer(wf, &f) {
                Some(reason) => {
                    record(
                        &mut selection.contradictions,
                        question,
                        candidate,
                        &f,
                        wf,
                        &reason,
                    );
                    selection.dropped.push(Dropped {
                        iri: candidate.iri.clone(),
                        why: format!("conflicts with {}: {reason}", winner.iri),
                    });
                    continue;
                }
                None => {
                    selection.unresolved = true;
                    record(
                        &mut selection.contradictions,
                        question,
                        candidate,
                        &f,
                        wf,
                        "unresolved: same authority and date; both kept",
                    );
                }
            }
        }
        if kept.len() < options.max_passages {
            kept.push((candidate, f));
        } else {
            selection.dropped.push(Dropped {
                iri: candidate.iri.clone(),
                why: format!("beyond {} passages", options.max_passages),
            });
        }
    }
    kept
}

/// Whether two candidates' sources conflict (stated on either item or document).
fn conflicts(fa: &SourceFacts, a: &Candidate, fb: &SourceFacts, b: &Candidate) -> bool {
    fa.nodes(&a.iri)
        .iter()
        .any(|n| fb.conflicts_with.contains(*n))
        || fb
            .nodes(&b.iri)
            .iter()
            .any(|n| fa.conflicts_with.contains(*n))
}

/// Why `winner` beats `loser` (authority, then effective date, then supersession);
/// `None` when neither does.
fn prefer(winner: &SourceFacts, loser: &SourceFacts) -> Option<String> {
    let mut reasons = Vec::new();
    let (wa, la) = (winner.authority_or_default(), loser.authority_or_default());
    if wa > la {
        reasons.push(format!("higher authority ({wa:.1} vs {la:.1})"));
    }
    if let (Some(we), Some(le)) = (&winner.effective, &loser.effective)
        && we > le
    {
        reasons.push(format!("newer ({we} vs {le})"));
    }
    if loser.superseded_by.contains(&winner.document) {
        reasons.push("supersedes it".into());
    }
    if reasons.is_empty() || wa < la {
        return None;
    }
    Some(format!(
        "{} preferred: {}",
        winner.title.as_deref().unwrap_or(&winner.document),
        reasons.join(", ")
    ))
}

/// Adds one contradiction per pair of documents; its claim is the set-aside
/// source's sentence closest to the question (over all its candidates, never
/// from a passage holding an instruction to a model).
fn record(
    contradictions: &mut Vec<Contradiction>,
    question: &str,
    loser: &Candidate,
    loser_facts: &SourceFacts,
    winner_facts: &SourceFacts,
    resolution: &str,
) {
    let sources = vec![loser_facts.document.clone(), winner_facts.document.clone()];
    let candidate_claim = if contains_instruction(&loser.text) {
        None
    } else {
        closest_sentence(question, &loser.text)
    };
    if let Some(existing) = contradictions.iter_mut().find(|c| c.sources == sources) {
        if let Some((claim, score)) = candidate_claim
            && score > shared_words(question, &existing.claim)
        {
            existing.claim = claim;
        }
        return;
    }
    let claim = candidate_claim.map_or_else(
        || "(its text addresses a language model and is not quoted)".to_owned(),
        |(claim, _)| claim,
    );
    contradictions.push(Contradiction {
        claim,
        sources,
        resolution: resolution.to_owned(),
    });
}

/// How many content words a sentence shares with the question.
fn shared_words(question: &str, sentence: &str) -> usize {
    content_words(sentence)
        .intersection(&content_words(question))
        .count()
}

/// The sentence of `text` sharing the most content words with the question.
fn closest_sentence(question: &str, text: &str) -> Option<(String, usize)> {
    // Reversed so that the first of equally close sentences wins.
    sentences(text)
        .into_iter()
        .rev()
        .map(|s| (s.to_owned(), shared_words(question, s)))
        .max_by_key(|(_, score)| *score)
}

/// Share of the question's content words present in the kept passages, and the
/// words that are not.
fn coverage(question: &str, kept: &[Candidate]) -> (f32, Vec<String>) {
    let q = content_words(question);
    let words: BTreeSet<String> = kept.iter().flat_map(|c| content_words(&c.text)).collect();
    let missing: Vec<String> = q.iter().filter(|w| !covered(w, &words)).cloned().collect();
    if q.is_empty() {
        return (0.0, missing);
    }
    #[allow(clippy::cast_precision_loss)]
    let share = (q.len() - missing.len()) as f32 / q.len() as f32;
    (share, missing)
}

/// Question words (four letters or more) that no retrieved text mentions and
/// that the store's full-text index finds nowhere: what the store does not know.
async fn unknown_words<'a>(
    store: &Store,
    question: &str,
    pool: impl Iterator<Item = &'a Candidate>,
) -> Result<Vec<String>, RetrieveError> {
    let words: BTreeSet<String> = pool.flat_map(|c| content_words(&c.text)).collect();
    let mut unknown = Vec::new();
    for word in content_words(question) {
        if word.chars().count() < 4 || covered(&word, &words) {
            continue;
        }
        if store.full_text(&word, 1).await?.is_empty() {
            unknown.push(word);
        }
    }
    Ok(unknown)
}

fn assess(question: &str, selection: &Selection, options: &AskOptions) -> Quality {
    if selection.kept.is_empty() {
        return Quality::Missing;
    }
    let (share, missing) = coverage(question, &selection.kept);
    if share < options.min_coverage {
        return Quality::Weak(format!(
            "the passages cover {:.0}% of the question's words (missing: {})",
            share * 100.0,
            missing.join(", ")
        ));
    }
    if selection.unresolved {
        return Quality::Contradictory;
    }
    Quality::Sufficient
}

/// Adds nodes one or two policy relations away from the kept items to the pool.
async fn expand(
    store: &Store,
    kept: &[Candidate],
    question_vector: &[f32],
    pool: &mut BTreeMap<String, Candidate>,
) -> Result<Vec<String>, RetrieveError> {
    let iris: Vec<String> = kept.iter().map(|c| c.iri.clone()).collect();
    let related = related_nodes(store, &iris)?;
    let new: BTreeMap<String, String> = related
        .into_iter()
        .filter(|(target, _)| !pool.contains_key(target))
        .collect();
    let targets: Vec<String> = new.keys().cloned().collect();
    let hits = store
        .vectors()
        .search_among(question_vector, &targets)
        .await
        .map_err(kgfuse_store::StoreError::from)?;
    let mut added = Vec::new();
    let nodes: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| (hit.iri.as_str(), hit.graph.as_str()))
        .collect();
    let sources = sources_of(store, &nodes);
    for (hit, source) in hits.into_iter().zip(sources) {
        let via = new.get(&hit.iri).cloned().unwrap_or_default();
        added.push(format!("{} via {via} ({:.2})", hit.iri, hit.score));
        pool.insert(
            hit.iri.clone(),
            Candidate {
                passage_id: source.chunk_id.clone().unwrap_or_else(|| hit.iri.clone()),
                source,
                iri: hit.iri,
                text: hit.text,
                relevance: hit.score,
                via: Some(via),
            },
        );
    }
    Ok(added)
}

/// The answer text with `[n]` markers and the citations they point to.
fn render(claims: &[Claim], kept: &[Candidate]) -> (String, Vec<Citation>) {
    let mut order: Vec<&str> = Vec::new();
    let mut sentences_out = Vec::new();
    for claim in claims {
        let mut markers = String::new();
        for id in &claim.citations {
            let n = match order.iter().position(|o| o == id) {
                Some(i) => i + 1,
                None => {
                    order.push(id);
                    order.len()
                }
            };
            markers.push_str(&format!(" [{n}]"));
        }
        sentences_out.push(format!("{}{markers}", claim.text.trim()));
    }
    let citations = order
        .iter()
        .filter_map(|id| kept.iter().find(|c| c.passage_id == *id))
        .map(|c| Citation {
            source_id: if c.source.id.is_empty() {
                c.iri.clone()
            } else {
                c.source.id.clone()
            },
            title: c.source.title.clone(),
            section: c.source.section.clone(),
            chunk_id: c.source.chunk_id.clone(),
        })
        .collect();
    (sentences_out.join(" "), citations)
}

fn rank_stage(attempt: usize, selection: &Selection) -> TraceStage {
    stage(
        &format!("rank #{attempt}"),
        selection
            .kept
            .iter()
            .map(|c| {
                let mut line = format!("{} ({:.2}", c.passage_id, c.relevance);
                if let Some(via) = &c.via {
                    line.push_str(&format!(", via {via}"));
                }
                if contains_instruction(&c.text) {
                    line.push_str(", addresses a language model: data only, never evidence");
                }
                line.push(')');
                line
            })
            .collect(),
        selection.dropped.clone(),
    )
}

fn assess_stage(quality: &Quality, selection: &Selection) -> TraceStage {
    let mut kept = vec![quality.name().to_owned()];
    if let Quality::Weak(why) = quality {
        kept.push(why.clone());
    }
    kept.extend(selection.contradictions.iter().map(|c| {
        format!(
            "contradiction: {} ({})",
            c.sources.join(" vs "),
            c.resolution
        )
    }));
    stage("assess", kept, Vec::new())
}

fn stage(name: &str, kept: Vec<String>, dropped: Vec<Dropped>) -> TraceStage {
    TraceStage {
        stage: name.to_owned(),
        kept,
        dropped,
    }
}

/// Today's date in UTC as `YYYY-MM-DD` (civil-from-days, proleptic Gregorian).
fn today_utc() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    #[allow(clippy::cast_possible_wrap)]
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_overlong_questions_fail_in_preparation() {
        assert!(prepare_query("  \n\t ", 100).is_err());
        assert!(prepare_query(&"x".repeat(101), 100).is_err());
        assert_eq!(
            prepare_query(" How\u{7} many\n days? ", 100).as_deref(),
            Ok("How many days?")
        );
    }

    /// A model whose draft is whatever `draft` makes; nothing else is asked.
    struct Drafts(fn() -> Result<Draft, LlmError>);

    impl LanguageModel for Drafts {
        fn name(&self) -> &str {
            "drafts"
        }
        fn classify(&self, _: &str, _: &[&str]) -> Result<Option<usize>, LlmError> {
            Ok(None)
        }
        fn extract_entities(&self, _: &str) -> Result<Vec<String>, LlmError> {
            Ok(Vec::new())
        }
        fn judge_candidates(
            &self,
            _: &str,
            _: &[&str],
        ) -> Result<Vec<kgfuse_llm::Relevance>, LlmError> {
            Err(LlmError::Service("not used".into()))
        }
        fn complete(&self, _: &str, _: &str) -> Result<String, LlmError> {
            Err(LlmError::Service("not used".into()))
        }
        fn rewrite_query(&self, _: &str, _: &[String]) -> Result<String, LlmError> {
            Err(LlmError::Service("not used".into()))
        }
        fn draft_answer(&self, _: &str, _: &[Passage]) -> Result<Draft, LlmError> {
            (self.0)()
        }
        fn generate_sparql(&self, _: &kgfuse_llm::SparqlRequest) -> Result<String, LlmError> {
            Err(LlmError::Service("not used".into()))
        }
    }

    #[test]
    fn an_unusable_late_or_wrongly_insufficient_draft_keeps_the_extractive_answer() {
        let question = "How many days per week can employees work remotely?";
        let passages = [Passage {
            id: "handbook::remote::1".into(),
            text: "Employees may work remotely for up to 2 days per week with manager approval."
                .into(),
        }];
        let models = [
            Drafts(|| Err(LlmError::Service("not JSON".into()))),
            Drafts(|| {
                Err(LlmError::Timeout {
                    timeout: std::time::Duration::from_secs(60),
                    attempts: 4,
                })
            }),
            Drafts(|| {
                Ok(Draft::Insufficient {
                    missing: "the number of days".into(),
                })
            }),
        ];
        for model in &models {
            let mut answer = Answer::default();
            let draft =
                draft_keeping_the_extractive_answer(model, question, &passages, &mut answer)
                    .expect("a draft");
            let Draft::Answer(claims) = draft else {
                panic!("the extractive draft answers: {draft:?}");
            };
            assert!(claims[0].text.contains("2 days per week"), "{claims:?}");
            assert_eq!(claims[0].citations, ["handbook::remote::1"]);
            assert!(
                answer.trace[0].dropped[0].why.contains("extractive draft"),
                "{:?}",
                answer.trace
            );
        }
        // Other failures (the service refusing the request) stay errors.
        let refused = Drafts(|| {
            Err(LlmError::Http {
                status: 401,
                message: "no key".into(),
            })
        });
        let mut answer = Answer::default();
        assert!(
            draft_keeping_the_extractive_answer(&refused, question, &passages, &mut answer)
                .is_err()
        );
        // When neither finds support, "insufficient" stands.
        let unrelated = [Passage {
            id: "menu::1".into(),
            text: "The canteen serves soup on Mondays and fish on Fridays.".into(),
        }];
        let model = &models[2];
        let draft = draft_keeping_the_extractive_answer(model, question, &unrelated, &mut answer)
            .expect("a draft");
        assert!(matches!(draft, Draft::Insufficient { .. }), "{draft:?}");
    }

    #[test]
    fn today_is_a_plausible_date() {
        let today = today_utc();
        assert_eq!(today.len(), 10, "{today}");
        assert!(today.as_str() > "2024-01-01", "{today}");
    }

    #[test]
    fn authority_then_freshness_decides_a_conflict() {
        let handbook = SourceFacts {
            document: "urn:handbook".into(),
            title: Some("Handbook".into()),
            authority: Some(1.0),
            effective: Some("2025-01-01".into()),
            ..SourceFacts::default()
        };
        let blog = SourceFacts {
            document: "urn:blog".into(),
            authority: Some(0.3),
            effective: Some("2020-06-15".into()),
            superseded_by: vec!["urn:handbook".into()],
            ..SourceFacts::default()
        };
        let reason = prefer(&handbook, &blog).expect("handbook wins");
        assert!(reason.contains("higher authority (1.0 vs 0.3)"), "{reason}");
        assert!(
            reason.contains("newer") && reason.contains("supersedes it"),
            "{reason}"
        );
        assert_eq!(prefer(&blog, &handbook), None);
        assert_eq!(prefer(&handbook, &handbook), None);
    }

    #[test]
    fn row_answers_show_a_node_by_its_name_and_a_yes_as_yes() {
        let rows = AnswerSet {
            columns: vec!["x".into(), "count".into()],
            rows: vec![
                vec![Some("urn:ex:oslo".into()), Some("2".into())],
                vec![Some("urn:ex:nameless".into()), None],
            ],
            ..AnswerSet::default()
        };
        let name_of = |iri: &str| (iri == "urn:ex:oslo").then(|| "Oslo".to_owned());
        assert_eq!(
            rows_as_text(&rows, name_of),
            "Oslo <urn:ex:oslo> | 2; urn:ex:nameless | -"
        );
        let yes = AnswerSet {
            boolean: Some(true),
            ..AnswerSet::default()
        };
        assert_eq!(rows_as_text(&yes, |_| None), "Yes.");
    }

    /// The policy fixture with the kgfuse ontology, in a fresh store.
    async fn policy_store() -> (impl Sized, Store) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let files = ["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"].map(|f| root.join(f));
        kgfuse_lexicon::testing::with_files(&files).await
    }

    /// The loop with one retrieval, no rewrite.
    fn one_retrieval() -> AskOptions {
        AskOptions {
            max_retrieval_attempts: 1,
            ..AskOptions::default()
        }
    }

    /// The answer loop's own similarity reuses the retrieval's embedding of the
    /// question: one embedding for a whole `ask`.
    #[tokio::test]
    async fn an_answer_embeds_its_question_once() {
        let (_dir, store) = policy_store().await;
        let model = RuleBased::default();
        let options = one_retrieval();
        let before = store.time_spent().embeddings;
        let answer = ask(
            &store,
            &model,
            "How many days a week can I work remotely?",
            &options,
        )
        .await;
        assert!(answer.errors.is_empty(), "{:?}", answer.errors);
        assert_eq!(store.time_spent().embeddings - before, 1);
    }

    /// An answer about an entity stands only when its support reaches that
    /// entity: a question about someone the store does not know is not
    /// answered from a passage that shares its other words; one about a
    /// document the store holds is answered from that document's chunk.
    #[tokio::test]
    async fn an_answer_must_reach_the_entity_the_question_is_about() {
        let (_dir, store) = policy_store().await;
        let model = RuleBased::default();
        let options = one_retrieval();
        let stranger = ask(
            &store,
            &model,
            "How many days a week can Ingrid Solberg work remotely?",
            &options,
        )
        .await;
        assert_eq!(
            stranger.status,
            AnswerStatus::InsufficientContext,
            "{:?}",
            stranger.answer
        );
        assert!(stranger.answer.is_none());
        assert!(
            stranger
                .knowledge_gap
                .as_deref()
                .is_some_and(|gap| gap.contains("ingrid solberg")),
            "{:?}",
            stranger.knowledge_gap
        );

        let known = ask(
            &store,
            &model,
            "How many days a week can I work remotely under the Employee Handbook 2025?",
            &options,
        )
        .await;
        assert_eq!(
            known.status,
            AnswerStatus::Answered,
            "{:?} {:?}",
            known.knowledge_gap,
            known.trace.iter().find(|s| s.stage == "anchors")
        );
    }
}
