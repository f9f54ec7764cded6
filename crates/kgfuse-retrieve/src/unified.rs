//! `unified`: the unified context retriever's iterative refinement.
//!
//! 1. vector retrieval gives the unstructured side (chunks with their sources);
//! 2. entity linking ([`kgfuse_lexicon::linking`]): the question's mentions to nodes (partial
//!    names, inflections, identifiers, ties broken by the rest of the question),
//!    classes and properties; the entities are the linked nodes, then nodes whose
//!    label is a spelling of a name the language model extracts, then the best hits;
//! 3. generated SPARQL: the offline query graphs ([`kgfuse_plan::query_graphs`]: 1-3 joins
//!    from the linked entities along linked properties to nodes of the linked
//!    class), a real model's text-to-SPARQL query, and templates (outgoing and
//!    incoming facts of every entity, class membership; a second round for nodes
//!    the first round ties to two entities); every query is parsed and checked
//!    against the loaded ontology and the data before it runs;
//! 4. paths between pairs of entities (up to `MAX_PAIR_HOPS` edges) become evidence;
//! 5. one fact ranking under a bounded budget: rows the constructed query and the
//!    model's query agree on first, then the better-supported query's rows (mean
//!    relevance), the other's next, then path evidence and template facts by relevance (a linked
//!    property, a value of the linked class, a relation between entities), schema
//!    bookkeeping (ranges, `isDefinedBy`, pictures) last; the trace says what the
//!    budget cut.
//!
//! A FACTUAL question uses fewer vector hits as context, a SEMANTIC one fewer facts;
//! the two sides are never merged into one string.
//!
//! The graph reads of stages 3 (query graphs, templates), 4 (the walks around
//! the entities) and the fused ranking's walk and gate depend only on the linked
//! entities and the question, so they are read together, round by round
//! ([`kgfuse_graph::Graph::read_in_rounds`]): on a SPARQL server a retrieval
//! costs five requests (docs/scaling-out.md, "Round trips").

use crate::channels::{self, Signals, WalkStart, Walked, ranking_stage};
use crate::neighborhood::{Adjacency, add_edges, evidence, walk_starts};
use crate::{RetrieveError, RetrieveOptions, domain};
use kgfuse_core::context::{AnswerSet, Dispatch, Dropped, Fact, FusedContext, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kgfuse, w3c};
use kgfuse_graph::model::{Literal, NamedNode, Term};
use kgfuse_graph::templates::{Neighbourhood, WalkLimits, WalkRounds};
use kgfuse_graph::{EdgeIndex, GraphError, QueryOutcome, Rounds, parse_query};
use kgfuse_lexicon::lexicon::Lexicon;
use kgfuse_lexicon::linking::{self, Linked};
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_lexicon::sparql::{OneRead, Rejected, Solutions, run_checked, values, with_values};
use kgfuse_llm::LanguageModel;
use kgfuse_plan::cues::Cues;
use kgfuse_plan::query_graphs::{Constructed, Construction};
use kgfuse_plan::{model_planner, planner};
use kgfuse_store::{KindFilter, Question, Store, VectorHit};
use kgfuse_text2sparql::{
    Grounding, QuestionEntity, TextToSparqlOptions, entity_labels, text_to_sparql,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, mpsc};

/// Vector hits whose IRIs become linked entities.
const HIT_ENTITIES: usize = 3;
/// Most linked entities queried.
const MAX_ENTITIES: usize = 6;
/// Facts read per entity and direction.
const FACTS_PER_ENTITY: usize = 25;
/// Most facts per entity and direction sorted to choose those
/// [`FACTS_PER_ENTITY`] from.
const FACTS_SORTED: usize = 250;
/// Predicates whose values are prose or code: the unstructured side's business.
const LONG_TEXT: &[&str] = &[
    kgfuse::TEXT,
    kgfuse::CODE,
    kgfuse::KNOWLEDGE,
    w3c::RDFS_COMMENT,
    w3c::SKOS_DEFINITION,
    w3c::DCTERMS_DESCRIPTION,
];

/// Predicates that organise the store rather than state domain facts.
const BOOKKEEPING: &[&str] = &[
    w3c::RDF_TYPE,
    w3c::RDFS_LABEL,
    w3c::SKOS_ALT_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::DCTERMS_IS_PART_OF,
    kgfuse::MENTIONS,
    kgfuse::CHUNK_ID,
    kgfuse::SECTION,
    kgfuse::HAS_CHUNK,
    kgfuse::START_LINE,
    kgfuse::END_LINE,
];

/// Longest path searched between two linked entities.
const MAX_PAIR_HOPS: usize = 3;
/// Most nodes a path walk reaches from one entity.
const PAIR_WALK_NODES: usize = 400;

/// The spellings under which a name may be stored as a label: as written,
/// lowercased, capitalised, and, for identifiers, split into words
/// (`KnowledgeGraphUpdateAgent`, `knowledge_graph_update_agent` -> "Knowledge graph
/// update agent"); each also as an `@en` literal.
fn spellings(name: &str) -> Vec<Term> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch.is_whitespace() {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        word.push(ch);
    }
    words.extend((!word.is_empty()).then_some(word));
    let spaced = words.join(" ");
    let capitalise = |text: &str| {
        let mut chars = text.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        })
    };
    let mut forms = vec![
        name.to_owned(),
        name.to_lowercase(),
        capitalise(&name.to_lowercase()),
        spaced.to_lowercase(),
        capitalise(&spaced.to_lowercase()),
        spaced,
    ];
    forms.sort();
    forms.dedup();
    let mut out = Vec::new();
    for form in forms {
        out.push(Literal::new_simple_literal(form.clone()).into());
        if let Ok(tagged) = Literal::new_language_tagged_literal(form, "en") {
            out.push(tagged.into());
        }
    }
    out
}

/// Nodes whose label, alias or name is one of the spellings of `names`. The
/// spellings are the VALUES of the label, so Oxigraph looks them up in its object
/// index instead of scanning every label; the question's text only ever appears as
/// literal values.
fn nodes_named(
    store: &Store,
    names: &[String],
    sparql: &mut Vec<String>,
    rejected: &mut Vec<Rejected>,
) -> Result<Vec<String>, RetrieveError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<Term> = names.iter().flat_map(|n| spellings(n)).collect();
    let template = format!(
        "?node <{label}>|<{alt}>|<{pref}>|<{name}> ?needle . FILTER(isIRI(?node))",
        label = w3c::RDFS_LABEL,
        alt = w3c::SKOS_ALT_LABEL,
        pref = w3c::SKOS_PREF_LABEL,
        name = kgfuse::NAME,
    );
    let solutions = match run_checked(store, with_values(&template, "needle", &values, 50))? {
        Ok(solutions) => solutions,
        Err(rejection) => {
            rejected.push(rejection);
            return Ok(Vec::new());
        }
    };
    let column = solutions.column("node").unwrap_or(0);
    let mut out: Vec<String> = solutions
        .rows
        .iter()
        .filter_map(|r| cell_text(r.get(column)))
        .collect();
    sparql.push(solutions.text);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Most entities a second round adds.
const SECOND_ROUND_ENTITIES: usize = 3;

/// Nodes that domain facts of the first round link to at least two different
/// entities (a shared component, a common cause), most linked first.
fn second_round_entities(facts: &[Fact], entities: &[String]) -> Vec<NamedNode> {
    let mut links: std::collections::BTreeMap<&str, BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    for fact in facts {
        if BOOKKEEPING.contains(&fact.predicate.as_str()) {
            continue;
        }
        for (node, other) in [(&fact.object, &fact.subject), (&fact.subject, &fact.object)] {
            if !entities.contains(node) && entities.contains(other) {
                links
                    .entry(node.as_str())
                    .or_default()
                    .insert(other.as_str());
            }
        }
    }
    let mut ranked: Vec<(&str, usize)> = links
        .into_iter()
        .filter(|(_, linked)| linked.len() >= 2)
        .map(|(node, linked)| (node, linked.len()))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .filter_map(|(node, _)| NamedNode::new(node).ok())
        .take(SECOND_ROUND_ENTITIES)
        .collect()
}

/// The facts on one side of each of `nodes` (what it states when `outgoing`, what
/// states it otherwise, less its instances), with their graphs, as one SELECT of
/// a sub-select per node. Each takes at most [`FACTS_SORTED`] facts, leaving out
/// prose and code; [`first_facts_of_each`] then keeps the first
/// [`FACTS_PER_ENTITY`] of each node in the order of the predicate's, the other
/// end's and the graph's text: a hub cannot crowd out the other nodes, and every
/// engine keeps the same facts of a node with up to [`FACTS_SORTED`] on that side
/// (sorting all of a hub's thousands would cost more than the rest of the
/// retrieval). The sort is kgfuse's, not the engine's: Oxigraph reads a term's
/// text from disk at every comparison, which made sorting 250 facts cost about
/// seven times as much as reading them. The nodes enter as validated IRIs.
fn facts_query(nodes: &[NamedNode], outgoing: bool) -> String {
    let triple = if outgoing {
        "GRAPH ?g { ?e ?p ?x }"
    } else {
        "GRAPH ?g { ?x ?p ?e }"
    };
    let mut left_out: Vec<String> = LONG_TEXT.iter().map(|p| format!("<{p}>")).collect();
    if !outgoing {
        left_out.push(format!("<{}>", w3c::RDF_TYPE));
    }
    let per_node: Vec<String> = nodes
        .iter()
        .map(|node| {
            format!(
                "{{ SELECT ?e ?p ?x ?g WHERE {{ {} {triple} FILTER(?p NOT IN ({})) }} \
                 LIMIT {FACTS_SORTED} }}",
                values("e", &[Term::from(node.clone())]),
                left_out.join(", "),
            )
        })
        .collect();
    format!(
        "SELECT ?e ?p ?x ?g WHERE {{ {} }}",
        per_node.join(" UNION ")
    )
}

/// The rows of a [`facts_query`] as `[entity, predicate, other end, graph]`, the
/// first [`FACTS_PER_ENTITY`] of each entity in the text order of predicate,
/// other end and graph; entities keep the order of their first row. Prose and
/// code too long for a fact are left out before the cut.
fn first_facts_of_each(solutions: &Solutions) -> Vec<[String; 4]> {
    let at = |name: &str| solutions.column(name);
    let (Some(e), Some(p), Some(x), Some(g)) = (at("e"), at("p"), at("x"), at("g")) else {
        return Vec::new();
    };
    let mut first_row: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<(usize, [String; 4])> = Vec::new();
    for row in &solutions.rows {
        let [Some(entity), Some(predicate), Some(other), Some(graph)] =
            [e, p, x, g].map(|i| cell_text(row.get(i)))
        else {
            continue;
        };
        // Prose and code belong to the unstructured side (the query leaves out
        // their predicates); facts are relations and short values.
        if other.len() > 400 {
            continue;
        }
        let next = first_row.len();
        let order = *first_row.entry(entity.clone()).or_insert(next);
        rows.push((order, [entity, predicate, other, graph]));
    }
    rows.sort_unstable();
    rows.chunk_by(|a, b| a.0 == b.0)
        .flat_map(|of_one| of_one.iter().take(FACTS_PER_ENTITY))
        .map(|(_, row)| row.clone())
        .collect()
}

/// Stage 3c, the templates, as [`Rounds`]: the facts about each entity (both
/// directions, with the graph each lives in), then a second round about the
/// nodes the first round ties to two of them.
struct TemplateRounds<'a> {
    store: &'a Store,
    entities: Vec<String>,
    round: u8,
    /// The current round's queries that passed the check: text, and whether it
    /// reads the outgoing side.
    sent: Vec<(String, bool)>,
    facts: Vec<Fact>,
    /// The second round's entities.
    fresh: Vec<NamedNode>,
    sparql: Vec<String>,
    rejected: Vec<Rejected>,
}

impl<'a> TemplateRounds<'a> {
    fn new(store: &'a Store, entities: &[NamedNode]) -> Self {
        Self {
            store,
            entities: entities.iter().map(|e| e.as_str().to_owned()).collect(),
            round: 0,
            sent: Vec::new(),
            facts: Vec::new(),
            fresh: Vec::new(),
            sparql: Vec::new(),
            rejected: Vec::new(),
        }
    }

    /// The facts both rounds found; their queries, rejections and the second
    /// round's entities go to the context.
    fn finish(self, context: &mut FusedContext, rejected: &mut Vec<Rejected>) -> Vec<Fact> {
        context.sparql.extend(self.sparql);
        rejected.extend(self.rejected);
        if !self.fresh.is_empty() {
            context.trace.push(TraceStage {
                stage: "second round".into(),
                kept: self
                    .fresh
                    .iter()
                    .map(|n| format!("entity {}", n.as_str()))
                    .collect(),
                dropped: Vec::new(),
            });
        }
        self.facts
    }

    /// The outgoing and incoming facts of `nodes`, checked against the store's
    /// vocabulary like every generated query.
    fn ask(&mut self, nodes: &[NamedNode]) -> Result<Vec<spargebra::Query>, GraphError> {
        let outgoing = facts_query(nodes, true);
        let incoming = facts_query(nodes, false);
        let options = self.store.query_options();
        let mut queries = Vec::new();
        for (text, outgoing) in [(outgoing, true), (incoming, false)] {
            let parsed = parse_query(&text, &options)?;
            let unknown = self
                .store
                .graph()
                .unknown_terms(&kgfuse_graph::query_vocabulary(&parsed))?;
            if unknown.is_empty() {
                self.sent.push((text, outgoing));
                queries.push(parsed);
            } else {
                self.rejected.push(Rejected { text, unknown });
            }
        }
        Ok(queries)
    }

    /// The facts in the answers to the last round's queries.
    fn read(
        &mut self,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<Fact>, GraphError> {
        let mut facts = Vec::new();
        for ((text, outgoing), answer) in std::mem::take(&mut self.sent).into_iter().zip(answers) {
            let solutions = Solutions::of(text, answer?);
            for [entity, predicate, other, graph] in first_facts_of_each(&solutions) {
                let (subject, object) = if outgoing {
                    (entity, other)
                } else {
                    (other, entity)
                };
                let fact = Fact {
                    subject,
                    predicate,
                    object,
                    graph,
                };
                if !facts.iter().any(|f: &Fact| {
                    f.subject == fact.subject
                        && f.predicate == fact.predicate
                        && f.object == fact.object
                }) {
                    facts.push(fact);
                }
            }
            self.sparql.push(solutions.text);
        }
        Ok(facts)
    }
}

impl Rounds for TemplateRounds<'_> {
    fn next_round(
        &mut self,
        _graph: &kgfuse_graph::Graph,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<spargebra::Query>, GraphError> {
        self.round += 1;
        match self.round {
            1 if self.entities.is_empty() => Ok(Vec::new()),
            1 => {
                let entities: Vec<NamedNode> = self
                    .entities
                    .iter()
                    .filter_map(|e| NamedNode::new(e.as_str()).ok())
                    .collect();
                self.ask(&entities)
            }
            2 => {
                self.facts = self.read(answers)?;
                self.fresh = second_round_entities(&self.facts, &self.entities);
                let fresh = self.fresh.clone();
                if fresh.is_empty() {
                    Ok(Vec::new())
                } else {
                    self.ask(&fresh)
                }
            }
            _ => {
                let more = self.read(answers)?;
                self.facts.extend(
                    more.into_iter()
                        .filter(|f| !BOOKKEEPING.contains(&f.predicate.as_str())),
                );
                Ok(Vec::new())
            }
        }
    }
}

/// Runs the strategy, stage by stage.
pub(crate) async fn retrieve(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    named: &[String],
    dispatch: Dispatch,
    options: &RetrieveOptions,
) -> Result<FusedContext, RetrieveError> {
    let top_k = options.top_k;
    let mut context = FusedContext::default();
    let mut lexical = LexicalStages::start(store, question);
    let hits = vector_stage(store, question, top_k, &mut context).await?;
    let linked = lexical.linked()?;
    context.trace.push(linked.trace());
    let mut rejected = Vec::new();
    let entities = entity_stage(store, named, &hits, &linked, &mut context, &mut rejected)?;
    let holds_code = crate::holds_code(store)?;
    let code = channels::asks_for_code(store, holds_code, question.text(), &hits)?;
    let shortlist = domain_shortlist(store, model, question, holds_code, options).await?;
    let index = store.edge_index()?;
    let ties = match &shortlist {
        Some(shortlist) => shortlist.read_ties(store, model, index.as_deref())?,
        None => OneRead::new(store, None),
    };
    // Entity paths only for a question that does not ask for code.
    let path_from = match &code {
        None => &entities[..entities.len().saturating_sub(1)],
        Some(_) => &[],
    };
    let walks = Walks {
        path_from,
        start: WalkStart::new(store, question, options).await?,
        index,
    };
    let read = graph_stage(store, &entities, walks, ties, options)?;
    let domain_functions = domain_ranking(
        shortlist,
        model,
        question.text(),
        options,
        read.ties.as_ref(),
    )?;
    let Lexical {
        constructed,
        answers,
        plan_trace,
        ..
    } = lexical.constructed()?;
    context.sparql.extend(constructed.queries.iter().cloned());
    let (answers, model_plan_trace) =
        model_plan_stage(store, model, question.text(), &linked, answers)?;
    // A plan's query ran as it reads; a lookup's answer column is read from a
    // query graph's rows, already listed.
    let by_model = answers
        .as_ref()
        .is_some_and(|a| a.source == model_planner::SOURCE);
    if let Some(answer) = &answers
        && (answer.source == planner::SOURCE || by_model)
    {
        context.sparql.insert(0, answer.query.clone());
    }
    context.answers = answers;
    rejected.extend(constructed.rejected.iter().cloned());
    context.trace.push(constructed.trace.clone());
    context.trace.push(plan_trace);
    context.trace.extend(model_plan_trace);
    // A model whose plan answered has written this question's query.
    let generated = if by_model {
        Vec::new()
    } else {
        model_query_stage(store, model, question, &linked, &entities, &mut context).await?
    };
    let template = read.templates.finish(&mut context, &mut rejected);
    ontology_check_stage(&rejected, &mut context);
    let path_facts = path_stage(&entities, read.path_walks, code.as_deref(), &mut context);
    let relevance = Relevance::new(store, &linked, &entities)?;
    let signals = Signals {
        question,
        hits: &hits,
        linked: &linked,
        answers: &constructed.facts,
        code: code.as_deref(),
        holds_code,
        domain: &domain_functions,
    };
    ranking_stage(store, &signals, options, read.walked, &mut context).await?;
    let mut facts = rank_facts(
        constructed.facts,
        generated,
        path_facts,
        template,
        &relevance,
    );
    let mut off_code = Vec::new();
    if code.is_some() {
        (facts, off_code) = about_returned_code(facts, &context);
    }
    budget_stage(
        facts,
        off_code,
        fact_budget(dispatch, top_k),
        dispatch,
        &mut context,
    );
    Ok(context)
}

/// The `domain` channel's first half (stage 6), when the store holds code:
/// DomAgent's package choice and candidates, before its gate reads the graph.
async fn domain_shortlist(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    holds_code: bool,
    options: &RetrieveOptions,
) -> Result<Option<domain::Shortlist>, RetrieveError> {
    if !holds_code {
        return Ok(None);
    }
    let depth = channels::depth(options);
    Ok(Some(
        domain::shortlist(store, model, question, depth, options.domain).await?,
    ))
}

/// The `domain` channel's second half: the gate, given the ties read with the
/// other stages; empty when the store holds no code.
fn domain_ranking(
    shortlist: Option<domain::Shortlist>,
    model: &dyn LanguageModel,
    question: &str,
    options: &RetrieveOptions,
    ties: Option<&Solutions>,
) -> Result<Vec<String>, RetrieveError> {
    let Some(shortlist) = shortlist else {
        return Ok(Vec::new());
    };
    shortlist.ranked_functions(
        model,
        question,
        channels::depth(options),
        options.domain,
        &options.exclude,
        ties,
    )
}

/// Stage 3's verdict: how many generated queries passed the vocabulary check,
/// and which were rejected.
fn ontology_check_stage(rejected: &[Rejected], context: &mut FusedContext) {
    context.trace.push(TraceStage {
        stage: "ontology check".into(),
        kept: vec![format!(
            "{} generated queries use only known predicates and classes",
            context.sparql.len()
        )],
        dropped: rejected.iter().map(Rejected::dropped).collect(),
    });
}

/// A candidate fact and why it ranks where it does.
type RankedFact = (Fact, String);

/// For a question that asks for code, the facts between returned functions (or
/// from one to a literal), and the rest: each function already carries its
/// module, signature and dependencies, and facts about the classes, modules and
/// tags the question's words linked to would only add nodes. Entity paths are
/// not built for such a question either.
fn about_returned_code(
    facts: Vec<RankedFact>,
    context: &FusedContext,
) -> (Vec<RankedFact>, Vec<RankedFact>) {
    let returned: BTreeSet<&str> = context.functions.iter().map(|f| f.iri.as_str()).collect();
    let is_node = |term: &str| term.contains("://") || term.starts_with("urn:");
    facts.into_iter().partition(|(fact, _)| {
        returned.contains(fact.subject.as_str())
            && (returned.contains(fact.object.as_str()) || !is_node(&fact.object))
    })
}

/// Most facts kept for a question of this kind.
fn fact_budget(dispatch: Dispatch, top_k: usize) -> usize {
    match dispatch {
        Dispatch::Semantic => top_k * 2,
        _ => top_k * 6,
    }
}

/// Stages 2 (linking) and 3a (the query graphs the linked terms make), which
/// need no vector, on a thread of their own beside the rest of the retrieval:
/// linking runs while the question is embedded (MiniLM: 6-11 ms of the peer
/// store's 22-26), and the query graphs, which may run dozens of empty queries
/// before one answers, go on while this thread reads the graph for the
/// templates, walks and gate. The linked terms are handed over as soon as they
/// are known ([`LexicalStages::linked`]); the query graphs' answer only when
/// the fact ranking needs it ([`LexicalStages::constructed`]). On a SPARQL
/// server the query graphs' rounds are requests of their own, sent meanwhile.
/// When no thread can be started both run here, at once.
struct LexicalStages {
    linked: mpsc::Receiver<Result<Linked, RetrieveError>>,
    constructed: Beside<Result<Lexical, RetrieveError>>,
}

/// What stages 3a and 3b read beside the rest: the query graphs' rows and the
/// question's answer (a plan's rows, or for a lookup the best query graph's
/// answer column).
#[derive(Default)]
struct Lexical {
    constructed: Constructed,
    answers: Option<AnswerSet>,
    plan_trace: TraceStage,
    /// The question counts, compares or asks yes or no about a class the
    /// store has: a plan was made for it.
    shaped: bool,
}

/// The question's answer as rows, with how it was reached.
pub struct RowsAnswer {
    /// The answer, when a query returned rows (or a yes or no).
    pub answers: Option<AnswerSet>,
    /// The query graphs', the planner's and (with a model) the model planner's trace stages.
    pub stages: Vec<TraceStage>,
    /// A plan was made for a class the question names, beyond a lookup.
    pub shaped: bool,
}

/// Work on a thread of its own, or already done on this one.
enum Beside<T> {
    Running(std::thread::JoinHandle<T>),
    Done(T),
}

impl LexicalStages {
    /// Starts linking `question` and building its query graphs.
    fn start(store: &Store, question: &Question) -> Self {
        let (send, linked) = mpsc::channel();
        let (beside, text) = (store.clone(), question.text().to_owned());
        let thread = std::thread::Builder::new()
            .name("kgfuse-linking".into())
            .spawn(move || link_and_construct(&beside, &text, &send));
        if let Ok(thread) = thread {
            return Self {
                linked,
                constructed: Beside::Running(thread),
            };
        }
        let (send, linked) = mpsc::channel();
        let constructed = link_and_construct(store, question.text(), &send);
        Self {
            linked,
            constructed: Beside::Done(constructed),
        }
    }

    /// Stage 2's linked terms, once linking is done.
    fn linked(&mut self) -> Result<Linked, RetrieveError> {
        match self.linked.recv() {
            Ok(linked) => linked,
            // Every way through `link_and_construct` hands the terms over, so
            // its thread ended early: it panicked, and so does this retrieval.
            Err(mpsc::RecvError) => {
                let ended =
                    std::mem::replace(&mut self.constructed, Beside::Done(Ok(Lexical::default())));
                Err(ended.wait().err().unwrap_or_else(|| {
                    RetrieveError::Invalid("linking ended without handing over its terms".into())
                }))
            }
        }
    }

    /// Stage 3a's query graphs and 3b's answer, once they are read.
    fn constructed(self) -> Result<Lexical, RetrieveError> {
        self.constructed.wait()
    }
}

impl<T> Beside<T> {
    /// The work's result, once it is done; a panic on its thread goes on here.
    fn wait(self) -> T {
        match self {
            Self::Running(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Self::Done(result) => result,
        }
    }
}

/// Links `text`, hands the linked terms to `linked`, then reads the query
/// graphs they make and plans the answer. Should linking fail, the error is
/// what is handed over.
fn link_and_construct(
    store: &Store,
    text: &str,
    linked: &mpsc::Sender<Result<Linked, RetrieveError>>,
) -> Result<Lexical, RetrieveError> {
    let terms = match linking::link(store, text) {
        Ok(terms) => terms,
        Err(error) => {
            let _ = linked.send(Err(error.into()));
            return Ok(Lexical::default());
        }
    };
    let _ = linked.send(Ok(terms.clone()));
    let mut construction = Construction::new(store, &terms);
    store
        .graph()
        .read_in_rounds(&mut [&mut construction], &store.query_options())?;
    let constructed = construction.finish();
    let (answers, plan_trace, shaped) = plan_stage(store, text, &terms, &constructed)?;
    Ok(Lexical {
        constructed,
        answers,
        plan_trace,
        shaped,
    })
}

/// The question's answer as rows, without the rest of a retrieval: linking,
/// the query graphs, the planner and (with a real model) the model planner,
/// with their trace stages.
pub fn answer_by_query(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
) -> Result<RowsAnswer, RetrieveError> {
    if question.trim().is_empty() {
        return Err(RetrieveError::Invalid("the question is empty".into()));
    }
    let (send, linked) = mpsc::channel();
    let lexical = link_and_construct(store, question, &send)?;
    let linked = match linked.try_recv() {
        Ok(Err(error)) => return Err(error),
        Ok(Ok(linked)) => linked,
        Err(_) => Linked::default(),
    };
    let (answers, model_plan_trace) =
        model_plan_stage(store, model, question, &linked, lexical.answers)?;
    let mut stages = vec![lexical.constructed.trace, lexical.plan_trace];
    stages.extend(model_plan_trace);
    Ok(RowsAnswer {
        answers,
        stages,
        shaped: lexical.shaped,
    })
}

/// Stage 3b with a real language model: the model fills a plan from the
/// store's names ([`model_planner::answer`]). Its answer, when it has one,
/// replaces the offline one, which stays the fallback.
fn model_plan_stage(
    store: &Store,
    model: &dyn LanguageModel,
    text: &str,
    linked: &Linked,
    offline: Option<AnswerSet>,
) -> Result<(Option<AnswerSet>, Option<TraceStage>), RetrieveError> {
    if model.is_offline() {
        return Ok((offline, None));
    }
    let (answer, mut trace) = model_planner::answer(store, model, text, linked)?;
    if trace.kept.is_empty() && trace.dropped.is_empty() {
        // A model that fills no plans: nothing was tried.
        return Ok((offline, None));
    }
    // A yes found by a valid plan beats a no, as among the offline plans.
    let offline_yes = offline.as_ref().is_some_and(|a| a.boolean == Some(true));
    if answer.as_ref().is_some_and(|a| a.boolean == Some(false)) && offline_yes {
        trace
            .kept
            .push("the model's plan says no, an offline plan says yes: yes stands".into());
        return Ok((offline, Some(trace)));
    }
    if answer.is_some() {
        return Ok((answer, Some(trace)));
    }
    if offline.is_some() {
        trace
            .kept
            .push("no plan of the model answered: the offline answer stands".into());
    }
    Ok((offline, Some(trace)))
}

/// Stage 3b, the answer: the offline planner's plans run best first
/// ([`planner::answer`]); a lookup, or a question no plan answers, is answered
/// by the best query graph's answer column when there is one.
fn plan_stage(
    store: &Store,
    text: &str,
    linked: &Linked,
    constructed: &Constructed,
) -> Result<(Option<AnswerSet>, TraceStage, bool), RetrieveError> {
    let (planned, mut trace) = planner::plans(store, text, linked)?;
    let answers = planner::answer(store, &planned, &mut trace)?;
    let lookup = Cues::of(text).is_lookup();
    let shaped = !lookup && planned.iter().any(|p| !p.plan.classes.is_empty());
    // A lookup is the query graphs' job, unless it asks for several columns
    // ("the names and e-mails of ..."), which a query graph's one answer
    // column cannot hold.
    let columns = answers.as_ref().is_some_and(|a| a.columns.len() > 1);
    if let Some(answer) = &constructed.answer {
        if lookup && !columns {
            trace
                .kept
                .push("a lookup: the best query graph's answer column".into());
            return Ok((Some(answer.clone()), trace, shaped));
        }
        if answers.is_none() {
            trace
                .kept
                .push("no plan answered: the best query graph's answer column".into());
            return Ok((Some(answer.clone()), trace, shaped));
        }
    }
    Ok((answers, trace, shaped))
}

/// Stage 1, vector retrieval: the question's nearest rows, which seed the
/// entities and the graph walk of the fused ranking (stage 6).
async fn vector_stage(
    store: &Store,
    question: &Question,
    top_k: usize,
    context: &mut FusedContext,
) -> Result<Vec<VectorHit>, RetrieveError> {
    let hits = store.search(question, top_k, KindFilter::Any).await?;
    context.trace.push(TraceStage {
        stage: "vector".into(),
        kept: hits
            .iter()
            .map(|hit| format!("{} ({:.3})", hit.iri, hit.score))
            .collect(),
        dropped: Vec::new(),
    });
    Ok(hits)
}

/// Stage 2, entities: linked mentions first (best candidates of each), then nodes
/// whose label is a spelling of a name the language model extracted (`names`),
/// then the best vector hits; at most `MAX_ENTITIES`.
fn entity_stage(
    store: &Store,
    names: &[String],
    hits: &[VectorHit],
    linked: &Linked,
    context: &mut FusedContext,
    rejected: &mut Vec<Rejected>,
) -> Result<Vec<NamedNode>, RetrieveError> {
    let mut entities: Vec<String> = linked.entities().map(|c| c.iri.clone()).collect();
    for node in nodes_named(store, names, &mut context.sparql, rejected)? {
        if !entities.contains(&node) {
            entities.push(node);
        }
    }
    for hit in hits.iter().take(HIT_ENTITIES) {
        if !entities.contains(&hit.iri) {
            entities.push(hit.iri.clone());
        }
    }
    let mut dropped = Vec::new();
    if entities.len() > MAX_ENTITIES {
        for extra in entities.split_off(MAX_ENTITIES) {
            dropped.push(Dropped {
                iri: extra,
                why: format!("more than {MAX_ENTITIES} entities"),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "entities".into(),
        kept: names
            .iter()
            .map(|n| format!("named in question: {n}"))
            .chain(entities.iter().cloned())
            .collect(),
        dropped,
    });
    Ok(entities
        .iter()
        .filter_map(|e| NamedNode::new(e.as_str()).ok())
        .collect())
}

/// The entities the model is given: the linked mentions' candidates (those a
/// mention only qualifies are not anchors); when nothing linked, the entity
/// stage's first entities.
fn question_entities(
    store: &Store,
    linked: &Linked,
    entities: &[NamedNode],
) -> Result<Vec<QuestionEntity>, RetrieveError> {
    let named: Vec<QuestionEntity> = linked
        .mentions
        .iter()
        .flat_map(|mention| {
            mention.candidates.iter().map(|candidate| QuestionEntity {
                label: candidate.name.clone(),
                iri: candidate.iri.clone(),
                anchor: !mention.qualifier,
            })
        })
        .collect();
    if !named.is_empty() {
        return Ok(named);
    }
    let first = &entities[..entities.len().min(HIT_ENTITIES)];
    Ok(entity_labels(store, first)?
        .into_iter()
        .map(|(label, iri)| QuestionEntity {
            label,
            iri,
            anchor: false,
        })
        .collect())
}

/// Stage 3b, a query written by a real language model about the question,
/// grounded in the linked entities and terms, checked before it runs. Offline
/// there is none: the query graphs are the offline half.
async fn model_query_stage(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    linked: &Linked,
    entities: &[NamedNode],
    context: &mut FusedContext,
) -> Result<Vec<Fact>, RetrieveError> {
    if model.is_offline() {
        return Ok(Vec::new());
    }
    let grounding = Grounding {
        entities: question_entities(store, linked, entities)?,
        named: linked
            .properties
            .iter()
            .chain(&linked.classes)
            .map(|term| term.iri.clone())
            .collect(),
    };
    let generated = text_to_sparql(
        store,
        model,
        question,
        &grounding,
        &TextToSparqlOptions::default(),
    )
    .await?;
    let mut stage = generated.trace.clone();
    if let Some(query) = &generated.query {
        context.sparql.push(query.clone());
        if generated.facts.is_empty() {
            stage.kept.extend(generated.row_summaries());
        }
    }
    context.trace.push(stage);
    Ok(generated.facts)
}

/// What stages 3c, 4 and the walk of stage 6 read from the graph.
struct GraphReads<'a> {
    templates: TemplateRounds<'a>,
    /// The graph around every entity but the last (empty when no paths are
    /// wanted), in entity order.
    path_walks: Vec<Neighbourhood>,
    walked: Walked,
    /// The answer to the `domain` channel's gate query, when it has one.
    ties: Option<Solutions>,
}

/// The walks of stages 4 and 6: from every entity in `path_from` (for paths),
/// and from the ranking's seeds; over the edge index when there is one.
struct Walks<'e> {
    path_from: &'e [NamedNode],
    start: WalkStart,
    index: Option<Arc<EdgeIndex>>,
}

/// Stages 3c (the templates), 4 (the graph around the entities, for paths) and
/// the walk of stage 6 (around its seeds) read the graph together, round by
/// round ([`kgfuse_graph::Graph::read_in_rounds`]): on a SPARQL server one
/// request per round for all of them (three rounds: the walks' hops), instead of
/// one per stage, round and hop. (Stage 3a's query graphs were read beside the
/// question's embedding.)
fn graph_stage<'a>(
    store: &'a Store,
    entities: &[NamedNode],
    walks: Walks<'_>,
    mut ties: OneRead,
    options: &RetrieveOptions,
) -> Result<GraphReads<'a>, RetrieveError> {
    let Walks {
        path_from,
        start: walk_start,
        index,
    } = walks;
    let pair_walk = WalkLimits {
        hops: MAX_PAIR_HOPS,
        max_nodes: PAIR_WALK_NODES,
    };
    let mut starts: Vec<(NamedNode, WalkLimits)> = path_from
        .iter()
        .map(|entity| (entity.clone(), pair_walk))
        .collect();
    starts.extend(walk_starts(&walk_start.seeds, options.neighborhood));
    let mut templates = TemplateRounds::new(store, entities);
    let mut walks = WalkRounds::new(&starts).with_index(index);
    store.graph().read_in_rounds(
        &mut [&mut templates, &mut walks, &mut ties],
        &store.query_options(),
    )?;
    let mut path_walks = walks.into_neighbourhoods();
    let reached = path_walks.split_off(path_from.len());
    Ok(GraphReads {
        templates,
        path_walks,
        walked: Walked {
            start: walk_start,
            reached,
        },
        ties: ties.finish(),
    })
}

/// Stage 4, paths between pairs of entities, as evidence; their facts are
/// returned. `walks` holds the graph within `MAX_PAIR_HOPS` edges of every entity
/// but the last, in entity order; each is searched for every later entity. None
/// for a question that asks for code (`code` says why).
fn path_stage(
    entities: &[NamedNode],
    walks: Vec<Neighbourhood>,
    code: Option<&str>,
    context: &mut FusedContext,
) -> Vec<Fact> {
    if let Some(why) = code {
        context.trace.push(TraceStage {
            stage: "paths".into(),
            kept: vec![format!("no entity paths: {why}")],
            dropped: Vec::new(),
        });
        return Vec::new();
    }
    let mut kept = Vec::new();
    let mut facts = Vec::new();
    for (i, (from, (_, edges))) in entities.iter().zip(walks).enumerate() {
        let mut adjacency = Adjacency::new();
        add_edges(&mut adjacency, edges);
        for to in entities.iter().skip(i + 1) {
            if let Some((path, path_facts)) =
                evidence(&adjacency, &[from.as_str().to_owned()], to.as_str())
            {
                kept.push(path.join(" -> "));
                facts.extend(path_facts);
                context.paths.push(path);
            }
        }
    }
    context.trace.push(TraceStage {
        stage: "paths".into(),
        kept,
        dropped: Vec::new(),
    });
    facts
}

/// What makes a fact relevant to this question.
struct Relevance<'a> {
    properties: BTreeSet<&'a str>,
    classes: BTreeSet<&'a str>,
    mentioned: BTreeSet<&'a str>,
    entities: BTreeSet<String>,
    lexicon: Arc<Lexicon>,
}

impl<'a> Relevance<'a> {
    fn new(
        store: &Store,
        linked: &'a Linked,
        entities: &[NamedNode],
    ) -> Result<Self, RetrieveError> {
        Ok(Self {
            properties: linked.properties.iter().map(|p| p.iri.as_str()).collect(),
            classes: linked.classes.iter().map(|c| local_name(&c.iri)).collect(),
            mentioned: linked.entities().map(|c| c.iri.as_str()).collect(),
            entities: entities.iter().map(|e| e.as_str().to_owned()).collect(),
            lexicon: Lexicon::of(store)?,
        })
    }

    /// Higher is more relevant: a linked property, a value of a linked class, a
    /// relation between entities, a fact about a mentioned entity; schema
    /// bookkeeping about classes (ranges, definitions, pictures) lowest.
    fn score(&self, fact: &Fact) -> i32 {
        let mut score = 0;
        if self.properties.contains(fact.predicate.as_str()) {
            score += 3;
        }
        let of_class = |iri: &str| {
            self.lexicon.find(iri).is_some_and(|e| {
                self.lexicon
                    .entry(e)
                    .kinds
                    .iter()
                    .any(|k| self.classes.contains(k.as_str()))
            })
        };
        let (s, o) = (fact.subject.as_str(), fact.object.as_str());
        if (self.entities.contains(s) && of_class(o)) || (self.entities.contains(o) && of_class(s))
        {
            score += 2;
        }
        if self.entities.contains(s) && self.entities.contains(o) {
            score += 2;
        }
        if self.mentioned.contains(s) || self.mentioned.contains(o) {
            score += 1;
        }
        if BOOKKEEPING.contains(&fact.predicate.as_str()) {
            score -= 2;
        }
        if is_schema_bookkeeping(&fact.predicate) {
            score -= 4;
        }
        score
    }
}

/// Predicates that describe a vocabulary or decorate a node rather than state a
/// domain fact: RDFS/OWL axioms other than labels and comments, pictures and icons.
fn is_schema_bookkeeping(predicate: &str) -> bool {
    let axiom = (predicate.starts_with(kgfuse_core::vocab::RDFS)
        || predicate.starts_with(kgfuse_core::vocab::OWL))
        && predicate != w3c::RDFS_LABEL
        && predicate != w3c::RDFS_COMMENT;
    let local = local_name(predicate).to_ascii_lowercase();
    let decoration = ["depiction", "icon", "image", "logo", "thumbnail"]
        .iter()
        .any(|d| local.contains(d));
    axiom || decoration
}

/// All candidate facts in one order: rows both the constructed query and the
/// language model's query return first, then the rest of the better-supported of
/// the two (the higher mean relevance to the question's linked entities and
/// properties; the constructed query's on a tie), then the other's, then path
/// evidence and the template facts by relevance; no repeats.
fn rank_facts(
    constructed: Vec<Fact>,
    generated: Vec<Fact>,
    paths: Vec<Fact>,
    template: Vec<Fact>,
    relevance: &Relevance<'_>,
) -> Vec<(Fact, String)> {
    let same = |a: &Fact, b: &Fact| {
        a.subject == b.subject && a.predicate == b.predicate && a.object == b.object
    };
    let agreed: Vec<Fact> = constructed
        .iter()
        .filter(|c| generated.iter().any(|g| same(c, g)))
        .cloned()
        .collect();
    let support = |facts: &[Fact]| -> f32 {
        if facts.is_empty() {
            return f32::MIN;
        }
        facts.iter().map(|f| relevance.score(f) as f32).sum::<f32>() / facts.len() as f32
    };
    let model_first = support(&generated) > support(&constructed);
    let (first, first_why, second, second_why) = if model_first {
        (
            generated,
            "row of the model's query",
            constructed,
            "row of the constructed query",
        )
    } else {
        (
            constructed,
            "row of the constructed query",
            generated,
            "row of the model's query",
        )
    };
    let mut rest: Vec<(Fact, i32, bool)> = paths
        .into_iter()
        .map(|f| (f, 1, true))
        .chain(template.into_iter().map(|f| (f, 0, false)))
        .map(|(f, bonus, path)| {
            let score = relevance.score(&f) + bonus;
            (f, score, path)
        })
        .collect();
    // Ties in the order of the facts themselves, not of the store's answer (an
    // embedded store and a SPARQL server list the same rows differently).
    rest.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| {
            (&a.0.subject, &a.0.predicate, &a.0.object).cmp(&(
                &b.0.subject,
                &b.0.predicate,
                &b.0.object,
            ))
        })
    });
    let mut out: Vec<(Fact, String)> = Vec::new();
    let mut push = |fact: Fact, why: String| {
        if let Some((known, _)) = out.iter_mut().find(|(f, _)| {
            f.subject == fact.subject && f.predicate == fact.predicate && f.object == fact.object
        }) {
            if known.graph.is_empty() {
                known.graph = fact.graph;
            }
        } else {
            out.push((fact, why));
        }
    };
    for fact in agreed {
        push(
            fact,
            "row of both the constructed and the model's query".into(),
        );
    }
    for fact in first {
        push(fact, first_why.into());
    }
    for fact in second {
        push(fact, second_why.into());
    }
    for (fact, score, path) in rest {
        let why = if path {
            format!("path evidence, relevance {score}")
        } else {
            format!("relevance {score}")
        };
        push(fact, why);
    }
    out
}

/// Stage 5, the facts that fit the budget, in rank order; the trace says what
/// the budget cut.
fn budget_stage(
    facts: Vec<(Fact, String)>,
    off_code: Vec<(Fact, String)>,
    budget: usize,
    dispatch: Dispatch,
    context: &mut FusedContext,
) {
    let mut kept = vec![format!("fact budget {budget} for a {dispatch:?} question")];
    let mut dropped: Vec<Dropped> = off_code
        .into_iter()
        .map(|(fact, why)| Dropped {
            iri: fact.subject,
            why: format!("not about the returned functions of a code question ({why})"),
        })
        .collect();
    for (i, (fact, why)) in facts.into_iter().enumerate() {
        if i < budget {
            kept.push(format!(
                "{} {} {} ({why})",
                fact.subject, fact.predicate, fact.object
            ));
            context.structured_facts.push(fact);
        } else {
            dropped.push(Dropped {
                iri: fact.subject,
                why: format!("beyond the fact budget {budget} ({why})"),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "sparql".into(),
        kept,
        dropped,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hub with more facts than the cut keeps the first in text order, the
    /// other node keeps all of its own, and code is left out before the cut.
    #[tokio::test]
    async fn each_node_keeps_its_own_facts_in_text_order() {
        let mut turtle = String::from(
            "@prefix ex: <urn:ex:> .\n\
             @prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
             ex:small ex:links ex:o1 , ex:o2 .\n\
             ex:hub kg:code \"def hub(): pass\" .\n",
        );
        // `kg:code` sorts before `ex:links`, so it would take a place if it were
        // cut after; the links are written in reverse, so the store's order is
        // not the text order.
        for i in (0..40).rev() {
            turtle.push_str(&format!("ex:hub ex:links ex:o{i:02} .\n"));
        }
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(&turtle).await;
        let nodes = ["urn:ex:hub", "urn:ex:small"].map(|n| NamedNode::new(n).expect("iri"));
        let solutions = run_checked(&store, facts_query(&nodes, true))
            .expect("run")
            .unwrap_or_else(|rejected| panic!("rejected: {:?}", rejected.unknown));
        let kept = first_facts_of_each(&solutions);
        let objects = |node: &str| -> Vec<String> {
            kept.iter()
                .filter(|[entity, ..]| entity == node)
                .map(|[_, _, other, _]| other.clone())
                .collect()
        };
        let hub = objects("urn:ex:hub");
        let expected: Vec<String> = (0..FACTS_PER_ENTITY)
            .map(|i| format!("urn:ex:o{i:02}"))
            .collect();
        assert_eq!(hub, expected);
        assert_eq!(objects("urn:ex:small").len(), 2);
    }

    /// A remote graph runs the printed algebra: the facts query must print as
    /// itself (each node's LIMIT where it was).
    #[test]
    fn the_facts_query_prints_as_itself() {
        let nodes = ["urn:ex:a", "urn:ex:b"].map(|n| NamedNode::new(n).expect("iri"));
        for outgoing in [true, false] {
            let parse = |text: &str| {
                spargebra::SparqlParser::new()
                    .parse_query(text)
                    .unwrap_or_else(|e| panic!("{e}: {text}"))
            };
            let query = parse(&facts_query(&nodes, outgoing));
            let printed = query.to_string();
            assert_eq!(parse(&printed), query, "{printed}");
            assert_eq!(printed.matches("LIMIT 250 ").count(), 2, "{printed}");
        }
    }

    #[test]
    fn a_node_tied_to_two_entities_joins_the_second_round() {
        let fact = |s: &str, p: &str, o: &str| Fact {
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            graph: "urn:g".into(),
        };
        let facts = [
            fact("urn:a", "urn:uses", "urn:shared"),
            fact("urn:b", "urn:uses", "urn:shared"),
            fact("urn:a", "urn:uses", "urn:only-a"),
            fact("urn:b", w3c::RDF_TYPE, "urn:Class"),
            fact("urn:a", w3c::RDF_TYPE, "urn:Class"),
        ];
        let entities = ["urn:a".to_owned(), "urn:b".to_owned()];
        let fresh: Vec<String> = second_round_entities(&facts, &entities)
            .into_iter()
            .map(NamedNode::into_string)
            .collect();
        assert_eq!(fresh, ["urn:shared"]);
    }

    #[test]
    fn identifiers_are_spelled_as_labels() {
        let forms: Vec<String> = spellings("KnowledgeGraphUpdateAgent")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            forms.contains(&"\"Knowledge graph update agent\"@en".to_owned()),
            "{forms:?}"
        );
        assert!(forms.contains(&"\"KnowledgeGraphUpdateAgent\"".to_owned()));
        let snake: Vec<String> = spellings("decode_signal")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(snake.contains(&"\"decode signal\"".to_owned()), "{snake:?}");
        assert!(snake.contains(&"\"decode_signal\"".to_owned()));
    }

    const INVENTED: &str = "SELECT ?o WHERE { ex:alice ex:employer ?o }";
    const VALID: &str = "```sparql\nSELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }\n```";
    const VALID_TEXT: &str = "SELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }";

    #[tokio::test]
    async fn unified_adds_the_generated_query_its_facts_and_its_trace() {
        use kgfuse_core::context::Dispatch;
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(kgfuse_lexicon::testing::EMPLOYEES).await;
        let model = kgfuse_lexicon::testing::Scripted::new(&[INVENTED, VALID]);
        let context = retrieve(
            &store,
            &model,
            &Question::new("Who works for which organisation?"),
            &[],
            Dispatch::Factual,
            &RetrieveOptions {
                top_k: 4,
                ..RetrieveOptions::default()
            },
        )
        .await
        .expect("unified");
        assert!(
            context.sparql.iter().any(|q| q == VALID_TEXT),
            "{:?}",
            context.sparql
        );
        let stage = context
            .trace
            .iter()
            .find(|s| s.stage == kgfuse_text2sparql::STAGE)
            .expect("text-to-sparql stage");
        assert_eq!(stage.dropped.len(), 1);
        assert_eq!(stage.kept, [VALID_TEXT]);
        let first = context.structured_facts.first().expect("facts");
        assert!(
            context
                .structured_facts
                .iter()
                .any(|f| f.subject == "http://example.org/alice"
                    && f.predicate == "http://example.org/worksFor"
                    && f.object == "http://example.org/acme"),
            "{first:?}"
        );
        // The linked entities reach the model with their labels.
        let request = &model.requests()[0];
        assert!(!request.entities.is_empty());
        assert!(
            request
                .entities
                .iter()
                .all(|e| !e.label.is_empty() && e.iri.starts_with("http"))
        );

        // Rows that are not triples become trace items.
        let model = kgfuse_lexicon::testing::Scripted::new(&[
            "SELECT ?name WHERE { ?x ex:worksFor ex:acme ; rdfs:label ?name }",
        ]);
        let context = retrieve(
            &store,
            &model,
            &Question::new("What are the names of Acme's employees?"),
            &[],
            Dispatch::Factual,
            &RetrieveOptions {
                top_k: 4,
                ..RetrieveOptions::default()
            },
        )
        .await
        .expect("unified");
        let stage = context
            .trace
            .iter()
            .find(|s| s.stage == kgfuse_text2sparql::STAGE)
            .expect("text-to-sparql stage");
        assert!(stage.kept.iter().any(|k| k == "?name = Alice"), "{stage:?}");
    }
}
