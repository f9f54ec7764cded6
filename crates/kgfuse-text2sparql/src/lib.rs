//! Text-to-SPARQL: a language model writes the query, kgfuse checks it before it runs.
//!
//! 1. *Ontology slice.* The question's nearest vector rows (plus the nearest rows
//!    whose kind is a class or property, so a large store's data cannot crowd the
//!    ontology out) are kept when the store declares them as a class or property
//!    (one query, the IRIs bound in a `VALUES` block), the best
//!    [`TextToSparqlOptions::slice_size`] of them are described (type, label,
//!    comment, `subClassOf`, domain, range) and rendered as Turtle.
//! 2. *Generation.* [`LanguageModel::generate_sparql`] gets the question, the slice,
//!    the linked entities, the prefixes the parser resolves, one or two example
//!    queries over the slice's own terms, and a GBNF grammar
//!    ([`grammar`]) whose IRIs can only be the store's known terms
//!    and the linked entities (a server that takes grammars, such as llama.cpp,
//!    holds the reply to it; others get the plain prompt).
//! 3. *Checks.* The reply is parsed (with the store's prefixes) and rejected when
//!    it does not parse, is an update, is not a SELECT or ASK, contains `SERVICE`,
//!    names predicates or classes the store neither declares nor uses
//!    ([`kgfuse_graph::Graph::unknown_terms`]), or contradicts declared domains and
//!    ranges ([`kgfuse_graph::Graph::domain_range_violations_with_prefixes`]).
//! 4. *Execution.* The parsed query (never the text) runs with a timeout and a row
//!    limit added to its algebra. A rejection or an execution error is sent back to
//!    the model as `previous`, at most [`TextToSparqlOptions::max_repairs`] times;
//!    an unknown term comes with the nearest known ones ("did you mean
//!    ex:worksFor?"), a query that matched nothing is repaired too (and kept if
//!    nothing better follows), and a query the model already wrote ends the loop.
//!
//! An offline model ([`kgfuse_llm::RuleBased`]) answers [`LlmError::Unsupported`]:
//! the result then has no query and its trace stage says that template queries are
//! used instead, which is what callers do.

use grammar::{GrammarEntity, GrammarTerms, select_ask_grammar, written_term};
use kgfuse_core::context::{Dropped, Fact, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::kg::FILE_RECORD;
use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_graph::{
    GraphError, KnownTerms, LimitedOutcome, QueryOutcome, is_update, parse_query, query_vocabulary,
};
use kgfuse_lexicon::lexicon::analyze::identifier_parts;
use kgfuse_lexicon::sparql::{cell_is_true, cell_text};
use kgfuse_lexicon::sparql::{run, values, with_values};
use kgfuse_llm::{LanguageModel, LlmError, SparqlEntity, SparqlRequest};
use kgfuse_store::{KindFilter, Question, Store};
use spargebra::algebra::GraphPattern;
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub mod grammar;

pub use kgfuse_lexicon::RetrieveError;

/// Name of the trace stage a text-to-SPARQL run reports in.
pub const STAGE: &str = "text-to-sparql";

/// Most properties, and most classes, a generated query may name through the
/// grammar (the most used ones).
const MAX_GRAMMAR_TERMS: usize = 300;
/// Most used properties, and classes, named after the slice.
const USED_TERMS_SHOWN: usize = 40;

/// Nearest vector rows considered for the ontology slice (per search).
const SLICE_CANDIDATES: usize = 200;

/// Types that make a node part of the ontology.
const ONTOLOGY_KINDS: [&str; 5] = [
    "http://www.w3.org/2002/07/owl#Class",
    "http://www.w3.org/2000/01/rdf-schema#Class",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#Property",
    "http://www.w3.org/2002/07/owl#ObjectProperty",
    "http://www.w3.org/2002/07/owl#DatatypeProperty",
];

/// The vector rows of those types, by the `kind` column the store writes (the
/// prefixed name of a node's first type). A constant: no text enters it.
const ONTOLOGY_KIND_FILTER: KindFilter<'static> = KindFilter::OneOf(&[
    "owl:Class",
    "rdfs:Class",
    "rdf:Property",
    "owl:ObjectProperty",
    "owl:DatatypeProperty",
]);

/// What the slice says about each term, in this order.
const DESCRIBED: [&str; 6] = [
    w3c::RDF_TYPE,
    w3c::RDFS_LABEL,
    w3c::RDFS_COMMENT,
    w3c::RDFS_SUBCLASS_OF,
    w3c::RDFS_DOMAIN,
    w3c::RDFS_RANGE,
];

/// Most values of one predicate shown per term.
const VALUES_PER_PREDICATE: usize = 4;
/// Longest label or comment shown, in characters.
const LITERAL_CHARS: usize = 120;
/// Longest literal taken as a fact's object (prose is the unstructured side's).
const FACT_OBJECT_CHARS: usize = 400;

/// Limits of a text-to-SPARQL run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextToSparqlOptions {
    /// How many times a rejected or failing query is sent back to the model.
    pub max_repairs: usize,
    /// Classes and properties in the ontology slice given to the model.
    pub slice_size: usize,
    /// Most result rows kept.
    pub row_limit: usize,
    /// Time limit of the query's execution.
    pub timeout: Duration,
    /// Send a grammar of the store's terms with the request (used by servers
    /// that take one, such as llama.cpp; others get the plain prompt).
    pub grammar: bool,
}

impl Default for TextToSparqlOptions {
    fn default() -> Self {
        Self {
            max_repairs: 2,
            slice_size: 12,
            row_limit: 100,
            timeout: Duration::from_secs(10),
            grammar: true,
        }
    }
}

/// An entity the question names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionEntity {
    /// Its name.
    pub label: String,
    /// Its IRI.
    pub iri: String,
    /// Whether the question asks about it, rather than naming it only to tell
    /// another entity apart ("Department0" in "FullProfessor2 of Department0"):
    /// with a grammar, the query must use an entity the question asks about.
    pub anchor: bool,
}

/// What the retriever already knows about a question, for the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grounding {
    /// The entities the question names.
    pub entities: Vec<QuestionEntity>,
    /// The property and class IRIs its words name, best first: an entity's
    /// properties are offered with those first, and the examples use them.
    pub named: Vec<String>,
}

/// Most properties shown and offered per entity and direction (most used first).
const PROPERTIES_PER_ENTITY: usize = 30;

/// One query the model wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attempt {
    /// The query text (code fences removed).
    pub query: String,
    /// Why it was rejected or failed; `None` for the accepted query.
    pub error: Option<String>,
}

/// What a text-to-SPARQL run produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextToSparql {
    /// The accepted query as it ran: as the model wrote it, or rewritten when it
    /// projected a variable no pattern binds (`project_what_is_bound`); `None`
    /// when the model cannot write SPARQL or no attempt was accepted (callers use
    /// template queries then).
    pub query: Option<String>,
    /// Projected variables of an accepted SELECT, without `?`.
    pub variables: Vec<String>,
    /// Its solutions, one cell per variable (`None` = unbound), at most
    /// [`TextToSparqlOptions::row_limit`].
    pub rows: Vec<Vec<Option<Term>>>,
    /// The result of an accepted ASK.
    pub answer: Option<bool>,
    /// True when more solutions matched than the row limit kept.
    pub truncated: bool,
    /// The triples the solutions assert: the query's triple patterns that hold in
    /// every solution (not under UNION, OPTIONAL or MINUS), instantiated with each
    /// row's bindings where all three positions are bound, with the graph holding
    /// them (empty when it is not found in a named graph).
    pub facts: Vec<Fact>,
    /// Every query the model wrote, in order.
    pub attempts: Vec<Attempt>,
    /// The `text-to-sparql` trace stage: the accepted query kept, each rejected one
    /// dropped with its reason, or a note why no generated query is used.
    pub trace: TraceStage,
}

impl TextToSparql {
    /// Each row as `?variable = value` pairs, for traces.
    pub fn row_summaries(&self) -> Vec<String> {
        if let Some(answer) = self.answer {
            return vec![format!("ASK: {answer}")];
        }
        self.rows
            .iter()
            .map(|row| {
                self.variables
                    .iter()
                    .zip(row)
                    .filter_map(|(name, cell)| {
                        cell.as_ref()
                            .map(|term| format!("?{name} = {}", show(term)))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .collect()
    }
}

/// A term for a trace: an IRI or a literal's value.
fn show(term: &Term) -> String {
    cell_text(Some(&Some(term.clone()))).unwrap_or_default()
}

/// Asks `model` for a SPARQL query answering `question`, checks it against the store
/// and runs it; see the module documentation and [`Grounding`].
///
/// A rejected or failing query is never an error: it is recorded in
/// [`TextToSparql::attempts`] and the trace. Errors are failures of the store.
pub async fn text_to_sparql(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    grounding: &Grounding,
    options: &TextToSparqlOptions,
) -> Result<TextToSparql, RetrieveError> {
    let known = known_terms(store)?;
    let request = sparql_request(store, question, grounding, options, &known).await?;
    generate_check_repair(store, model, request, options, &known)
}

/// The store's classes and properties a query may name: bookkeeping left out.
struct AskableTerms(KnownTerms);

impl kgfuse_store::WholeStore for AskableTerms {}

impl std::ops::Deref for AskableTerms {
    type Target = KnownTerms;
    fn deref(&self) -> &KnownTerms {
        &self.0
    }
}

/// The store's classes and properties (bookkeeping left out), once per store state.
fn known_terms(store: &Store) -> Result<std::sync::Arc<AskableTerms>, RetrieveError> {
    Ok(store.derived(|| {
        store
            .graph()
            .known_terms(MAX_GRAMMAR_TERMS)
            .map(|mut known| {
                known
                    .properties
                    .retain(|p| !FILE_RECORD.contains(&p.as_str()));
                known.classes.retain(|c| !FILE_RECORD.contains(&c.as_str()));
                AskableTerms(known)
            })
    })?)
}

/// What the model is told: the ontology slice, worked examples, the entities with
/// the properties each is used with, the prefixes, and (with `options.grammar`) a
/// grammar over the store's terms.
async fn sparql_request(
    store: &Store,
    question: &Question,
    grounding: &Grounding,
    options: &TextToSparqlOptions,
    known: &KnownTerms,
) -> Result<SparqlRequest, RetrieveError> {
    let Grounding { entities, named } = grounding;
    let prefixes = store.query_options().prefixes;
    let slice = ontology_slice(store, question, options.slice_size, known).await?;
    let mut uses = entity_uses(store, entities)?;
    for (as_subject, as_object) in &mut uses {
        named_first(as_subject, named);
        named_first(as_object, named);
    }
    let grammar = options.grammar.then(|| {
        select_ask_grammar(&GrammarTerms {
            properties: known.properties.clone(),
            classes: known.classes.clone(),
            entities: entities
                .iter()
                .zip(&uses)
                .map(|(entity, (as_subject, as_object))| GrammarEntity {
                    iri: entity.iri.clone(),
                    as_subject: as_subject.clone(),
                    as_object: as_object.clone(),
                    anchor: entity.anchor,
                })
                .collect(),
            prefixes: prefixes.clone(),
        })
    });
    let chain = match entities.first() {
        Some(entity) => named_chain(store, entity, named, known)?,
        None => None,
    };
    let written = |iri: &String| written_term(iri, &prefixes);
    let request_entities: Vec<SparqlEntity> = entities
        .iter()
        .zip(&uses)
        .map(|(entity, (as_subject, as_object))| SparqlEntity {
            label: entity.label.clone(),
            iri: entity.iri.clone(),
            as_subject: as_subject.iter().map(written).collect(),
            as_object: as_object.iter().map(written).collect(),
        })
        .collect();
    Ok(SparqlRequest {
        question: question.text().to_owned(),
        ontology: vocabulary_text(store, &slice, known, &prefixes)?,
        examples: examples(
            &slice,
            known,
            &prefixes,
            entities.first().zip(uses.first()),
            named,
            chain.as_ref(),
        ),
        entities: request_entities,
        prefixes: prefixes.clone(),
        previous: None,
        grammar: grammar.flatten(),
    })
}

/// Asks the model, checks and runs its query, and on a rejection or an empty
/// result asks again with the reason, up to `options.max_repairs` times.
fn generate_check_repair(
    store: &Store,
    model: &dyn LanguageModel,
    mut request: SparqlRequest,
    options: &TextToSparqlOptions,
    known: &KnownTerms,
) -> Result<TextToSparql, RetrieveError> {
    let mut out = TextToSparql {
        trace: TraceStage {
            stage: STAGE.to_owned(),
            ..TraceStage::default()
        },
        ..TextToSparql::default()
    };
    let prefixes = request.prefixes.clone();
    // A query that ran but matched nothing, kept in case no later one does better.
    let mut empty: Option<(String, Run)> = None;
    for _ in 0..=options.max_repairs {
        let reply = match model.generate_sparql(&request) {
            Ok(reply) => reply,
            Err(error @ LlmError::Unsupported { .. }) => {
                out.trace
                    .kept
                    .push(format!("template queries are used instead: {error}"));
                return Ok(out);
            }
            Err(error) => {
                out.trace.kept.push(format!(
                    "no generated query: {error}; template queries are used instead"
                ));
                return Ok(out);
            }
        };
        let text = kgfuse_core::text::strip_fences(&reply).trim().to_owned();
        if out.attempts.iter().any(|a| a.query == text) {
            // A small model asked again often repeats itself: another round would
            // only cost time.
            out.trace
                .kept
                .push("the model repeated a query it had written; no further attempts".to_owned());
            break;
        }
        match check_and_run(store, &text, &prefixes, options, known)? {
            Ok(run) if run.rows.is_empty() && run.answer.is_none() => {
                let reason = "the query ran but matched nothing: check the direction of each \
                              property, the classes used and how literals are written"
                    .to_owned();
                empty.get_or_insert((text.clone(), run));
                reject(&mut out, &mut request, text, reason);
            }
            Ok(run) => {
                accept(store, &mut out, text, run, options)?;
                return Ok(out);
            }
            Err(reason) => reject(&mut out, &mut request, text, reason),
        }
    }
    if let Some((text, run)) = empty {
        // Nothing better came: the valid query that matched nothing is the answer
        // (an empty result is one), recorded as accepted.
        if let Some(attempt) = out.attempts.iter_mut().find(|a| a.query == text) {
            attempt.error = None;
        }
        out.trace.dropped.retain(|d| d.iri != text);
        accept(store, &mut out, text, run, options)?;
        return Ok(out);
    }
    out.trace.kept.push(format!(
        "no generated query was accepted after {} attempts; template queries are used instead",
        out.attempts.len()
    ));
    Ok(out)
}

/// Records a query the model must write again, and tells the model why.
fn reject(out: &mut TextToSparql, request: &mut SparqlRequest, text: String, reason: String) {
    out.attempts.push(Attempt {
        query: text.clone(),
        error: Some(reason.clone()),
    });
    out.trace.dropped.push(Dropped {
        iri: text.clone(),
        why: reason.clone(),
    });
    request.previous = Some((text, reason));
}

/// Records `run` of the query `text` as the result.
fn accept(
    store: &Store,
    out: &mut TextToSparql,
    text: String,
    run: Run,
    options: &TextToSparqlOptions,
) -> Result<(), RetrieveError> {
    out.facts = facts_of(store, &run, options.row_limit)?;
    // The query that ran: the model's text, unless it was changed before running.
    let ran = match &run.note {
        Some(note) => {
            out.trace.kept.push(note.clone());
            run.query.to_string()
        }
        None => text.clone(),
    };
    out.variables = run.variables;
    out.rows = run.rows;
    out.answer = run.answer;
    out.truncated = run.truncated;
    out.trace.kept.push(ran.clone());
    if !out.attempts.iter().any(|a| a.query == text) {
        out.attempts.push(Attempt {
            query: text,
            error: None,
        });
    }
    out.query = Some(ran);
    Ok(())
}

/// Two or three small queries for the model to imitate, over terms the data
/// uses: the instances of a class (one the question names, else the slice's
/// first used one) and, when the question names an entity, one query with it as
/// subject and one with it as object (each with a property the data has for it
/// in that direction; only the one whose property the question names, when it
/// names one), else the values of a property. Each term is the slice's first
/// fitting one, else the store's most used one.
fn examples(
    slice: &[NamedNode],
    known: &KnownTerms,
    prefixes: &[(String, String)],
    entity: Option<(&QuestionEntity, &Uses)>,
    named: &[String],
    chain: Option<&Chain>,
) -> Vec<(String, String)> {
    let name = |iri: &str| written_term(iri, prefixes);
    let words = |iri: &str| term_words(iri).join(" ");
    let pick = |pool: &[String], skip: &[&str]| -> Option<String> {
        slice
            .iter()
            .map(NamedNode::as_str)
            .find(|t| pool.iter().any(|p| p == t))
            .map(str::to_owned)
            .or_else(|| pool.iter().find(|p| !skip.contains(&p.as_str())).cloned())
    };
    let plain = [w3c::RDF_TYPE, w3c::RDFS_LABEL];
    let mut out = Vec::new();
    // The question's best named class (the linker's order) that the data uses.
    let named_class = named
        .iter()
        .find(|iri| known.classes.contains(iri))
        .cloned();
    if let Some(class) = named_class.or_else(|| pick(&known.classes, &[])) {
        out.push((
            format!("Which things are of type {}?", words(&class)),
            format!("SELECT ?x WHERE {{ ?x a {} }}", name(&class)),
        ));
    }
    let Some((entity, (as_subject, as_object))) = entity else {
        if let Some(property) = pick(&known.properties, &plain) {
            out.push((
                format!(
                    "What is the {} of each thing that has one?",
                    words(&property)
                ),
                format!("SELECT ?x ?value WHERE {{ ?x {} ?value }}", name(&property)),
            ));
        }
        return out;
    };
    // A property of the entity for the example, and whether the question names
    // it: the first one when it is named (`named_first` put it there), else as
    // `pick` chooses.
    let example_property = |pool: &[String]| -> Option<(String, bool)> {
        match pool.first() {
            Some(first) if named.contains(first) => Some((first.clone(), true)),
            _ => pick(pool, &plain).map(|p| (p, false)),
        }
    };
    let iri = name(&entity.iri);
    // Two named properties that chain from the entity in the data: that chain
    // is the example, else a 1.5B model copies a one-step example and stops
    // after the first step (measured on LUBM: "the email address of the head of
    // Department5").
    if let Some(chain) = chain {
        out.push(chain_example(chain, entity, prefixes));
        return out;
    }
    let mut pair = Vec::new();
    if let Some((property, named)) = example_property(as_subject) {
        pair.push((
            named,
            subject_question(&words(&property), &entity.label),
            format!("SELECT ?x WHERE {{ {iri} {} ?x }}", name(&property)),
        ));
    }
    if let Some((property, named)) = example_property(as_object) {
        pair.push((
            named,
            object_question(&words(&property), &entity.label),
            format!("SELECT ?x WHERE {{ ?x {} {iri} }}", name(&property)),
        ));
    }
    // When the question names one of the entity's properties, only that example
    // is shown: beside another one, a 1.5B model copied the other (measured on
    // LUBM: "Which students does FullProfessor4 advise?").
    if pair.iter().any(|(named, _, _)| *named) {
        pair.retain(|(named, _, _)| *named);
    }
    out.extend(
        pair.into_iter()
            .map(|(_, question, query)| (question, query)),
    );
    out
}

/// The two-step example of a chain of named properties from the entity: the
/// question phrased along each step's direction, and its query.
fn chain_example(
    chain: &Chain,
    entity: &QuestionEntity,
    prefixes: &[(String, String)],
) -> (String, String) {
    let name = |iri: &str| written_term(iri, prefixes);
    let words = |iri: &str| term_words(iri).join(" ");
    let iri = name(&entity.iri);
    let (first, second) = (name(&chain.first.0), name(&chain.second.0));
    let (first_words, second_words) = (words(&chain.first.0), words(&chain.second.0));
    let (phrase, first_step) = if chain.first.1 {
        (
            format!("the {first_words} of {}", entity.label),
            format!("{iri} {first} ?y"),
        )
    } else if first_words.ends_with(" of") {
        (
            format!("the {first_words} {}", entity.label),
            format!("?y {first} {iri}"),
        )
    } else {
        (
            format!("the things with {} as their {first_words}", entity.label),
            format!("?y {first} {iri}"),
        )
    };
    let (question, second_step) = if chain.second.1 {
        (
            subject_question(&second_words, &phrase),
            format!("?y {second} ?x"),
        )
    } else {
        (
            object_question(&second_words, &phrase),
            format!("?x {second} ?y"),
        )
    };
    (
        question,
        format!("SELECT ?x WHERE {{ {first_step} . {second_step} }}"),
    )
}

/// Moves the properties the question names to the front, in the question's
/// order of preference; the others keep their order.
fn named_first(list: &mut [String], named: &[String]) {
    let rank = |p: &String| named.iter().position(|n| n == p).unwrap_or(named.len());
    list.sort_by_key(rank);
}

/// An example question for `<entity> p ?x`, from the words of `p`: "What is
/// Alice head of?", "What is the email address of Alice?".
fn subject_question(words: &str, label: &str) -> String {
    if words.ends_with(" of") {
        format!("What is {label} {words}?")
    } else {
        format!("What is the {words} of {label}?")
    }
}

/// An example question for `?x p <entity>`: "Which things are head of Alice?",
/// "Which things have Alice as their advisor?".
fn object_question(words: &str, label: &str) -> String {
    if words.ends_with(" of") {
        format!("Which things are {words} {label}?")
    } else {
        format!("Which things have {label} as their {words}?")
    }
}

/// Two properties that lead from an entity in two steps, each with its
/// direction (`true`: the step's node is the subject).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chain {
    first: (String, bool),
    second: (String, bool),
}

/// The first chain of two different properties the question names (in the
/// linker's order) that the data has starting from `entity`: `entity p ?y`
/// or `?y p entity`, then `?y q ?z` or `?z q ?y`. One query.
fn named_chain(
    store: &Store,
    entity: &QuestionEntity,
    named: &[String],
    known: &KnownTerms,
) -> Result<Option<Chain>, RetrieveError> {
    let properties: Vec<&String> = named
        .iter()
        .filter(|iri| known.properties.contains(iri) && !FILE_RECORD.contains(&iri.as_str()))
        .collect();
    let Ok(start) = NamedNode::new(entity.iri.as_str()) else {
        return Ok(None);
    };
    if properties.len() < 2 {
        return Ok(None);
    }
    let terms: Vec<Term> = properties
        .iter()
        .filter_map(|iri| NamedNode::new(iri.as_str()).ok())
        .map(Term::from)
        .collect();
    let solutions = run(
        store,
        format!(
            "SELECT DISTINCT ?p ?out ?q ?qout WHERE {{ {} {} {} \
             {{ ?e ?p ?y BIND(true AS ?out) }} UNION {{ ?y ?p ?e BIND(false AS ?out) }} \
             {{ ?y ?q ?z BIND(true AS ?qout) }} UNION {{ ?z ?q ?y BIND(false AS ?qout) }} \
             FILTER(?p != ?q && ?z != ?e) }}",
            values("e", &[Term::from(start)]),
            values("p", &terms),
            values("q", &terms),
        ),
    )?;
    let (Some(p), Some(out), Some(q), Some(qout)) = (
        solutions.column("p"),
        solutions.column("out"),
        solutions.column("q"),
        solutions.column("qout"),
    ) else {
        return Ok(None);
    };
    let rank = |iri: &str| properties.iter().position(|named| *named == iri);
    let mut chains: Vec<(usize, usize, Chain)> = solutions
        .rows
        .iter()
        .filter_map(|row| {
            let (first, second) = (cell_text(row.get(p))?, cell_text(row.get(q))?);
            Some((
                rank(&first)?,
                rank(&second)?,
                Chain {
                    first: (first, cell_is_true(row.get(out))),
                    second: (second, cell_is_true(row.get(qout))),
                },
            ))
        })
        .collect();
    chains.sort_by_key(|(first, second, _)| (*first, *second));
    Ok(chains.into_iter().next().map(|(_, _, chain)| chain))
}

/// The properties of one entity's triples: (as subject, as object).
type Uses = (Vec<String>, Vec<String>);

/// For each entity, the properties of the triples it is the subject of and of
/// those it is the object of, most used first (kgfuse's bookkeeping left out).
fn entity_uses(store: &Store, entities: &[QuestionEntity]) -> Result<Vec<Uses>, RetrieveError> {
    let terms: Vec<Term> = entities
        .iter()
        .filter_map(|e| NamedNode::new(e.iri.as_str()).ok())
        .map(Term::from)
        .collect();
    let mut uses = vec![(Vec::new(), Vec::new()); entities.len()];
    if terms.is_empty() {
        return Ok(uses);
    }
    for (pattern, as_subject) in [("?e ?p ?o", true), ("?o ?p ?e", false)] {
        let solutions = run(
            store,
            format!(
                "SELECT ?e ?p (COUNT(*) AS ?n) WHERE {{ {} {pattern} }} \
                 GROUP BY ?e ?p ORDER BY DESC(?n) ?p",
                values("e", &terms)
            ),
        )?;
        let (Some(e), Some(p)) = (solutions.column("e"), solutions.column("p")) else {
            continue;
        };
        for row in &solutions.rows {
            let (Some(entity), Some(property)) = (cell_text(row.get(e)), cell_text(row.get(p)))
            else {
                continue;
            };
            if FILE_RECORD.contains(&property.as_str()) {
                continue;
            }
            for (i, _) in entities.iter().enumerate().filter(|(_, q)| q.iri == entity) {
                let list = if as_subject {
                    &mut uses[i].0
                } else {
                    &mut uses[i].1
                };
                if list.len() < PROPERTIES_PER_ENTITY && !list.contains(&property) {
                    list.push(property.clone());
                }
            }
        }
    }
    Ok(uses)
}

/// (label, IRI) of each node: its first `rdfs:label`, else the end of its IRI.
pub fn entity_labels(
    store: &Store,
    nodes: &[NamedNode],
) -> Result<Vec<(String, String)>, RetrieveError> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let terms: Vec<Term> = nodes.iter().cloned().map(Term::from).collect();
    let pattern = format!("OPTIONAL {{ ?e <{}> ?label }}", w3c::RDFS_LABEL);
    let solutions = run(
        store,
        with_values(
            &pattern,
            "e",
            &terms,
            nodes.len() * VALUES_PER_PREDICATE * 4,
        ),
    )?;
    let (Some(e), Some(l)) = (solutions.column("e"), solutions.column("label")) else {
        return Ok(Vec::new());
    };
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    for row in &solutions.rows {
        if let (Some(iri), Some(label)) = (cell_text(row.get(e)), cell_text(row.get(l))) {
            labels.entry(iri).or_insert(label);
        }
    }
    Ok(nodes
        .iter()
        .map(|node| {
            let iri = node.as_str();
            let label = labels.get(iri).cloned().unwrap_or_else(|| {
                iri.rsplit(['/', '#', ':'])
                    .find(|part| !part.is_empty())
                    .unwrap_or(iri)
                    .to_owned()
            });
            (label, iri.to_owned())
        })
        .collect())
}

/// The ontology terms nearest to the question, best first.
async fn ontology_slice(
    store: &Store,
    question: &Question,
    size: usize,
    known: &KnownTerms,
) -> Result<Vec<NamedNode>, RetrieveError> {
    if size == 0 {
        return Ok(Vec::new());
    }
    // Nearest rows overall, and nearest rows of an ontology kind; best score first.
    let mut candidates: Vec<(String, f32)> = Vec::new();
    for filter in [KindFilter::Any, ONTOLOGY_KIND_FILTER] {
        for hit in store.search(question, SLICE_CANDIDATES, filter).await? {
            match candidates.iter_mut().find(|(iri, _)| *iri == hit.iri) {
                Some(known) => known.1 = known.1.max(hit.score),
                None => candidates.push((hit.iri, hit.score)),
            }
        }
    }
    candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let terms: Vec<Term> = candidates
        .iter()
        .filter_map(|(iri, _)| NamedNode::new(iri.as_str()).ok())
        .map(Term::from)
        .collect();
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    // Which of them the store declares as a class or property.
    let kinds: Vec<Term> = ONTOLOGY_KINDS
        .iter()
        .filter_map(|k| NamedNode::new(*k).ok())
        .map(Term::from)
        .collect();
    let pattern = format!("{} ?term a ?kind", values("kind", &kinds));
    let declared = run(
        store,
        with_values(&pattern, "term", &terms, terms.len() * kinds.len()),
    )?;
    let column = declared.column("term").unwrap_or(0);
    let declared: BTreeSet<String> = declared
        .rows
        .iter()
        .filter_map(|row| cell_text(row.get(column)))
        .collect();
    // Only declared terms the data uses: a carried vocabulary the data never
    // uses (kgfuse's own, in a store of other data) can only mislead. The terms
    // the data uses follow the slice (`vocabulary_text`). A store without
    // data yet (no instance of any class: an ontology types its terms only with
    // RDFS and OWL classes) shows its whole vocabulary.
    let no_data = known.classes.is_empty();
    let used =
        |iri: &String| no_data || known.properties.contains(iri) || known.classes.contains(iri);
    let chosen: Vec<NamedNode> = candidates
        .iter()
        .filter(|(iri, _)| declared.contains(iri) && used(iri))
        .take(size)
        .filter_map(|(iri, _)| NamedNode::new(iri.as_str()).ok())
        .collect();
    Ok(chosen)
}

/// What the store says about `terms` by the predicates of [`DESCRIBED`]:
/// (term, predicate) → values, blank nodes left out.
fn descriptions(
    store: &Store,
    terms: &[NamedNode],
) -> Result<BTreeMap<(String, String), Vec<Term>>, RetrieveError> {
    let mut described: BTreeMap<(String, String), Vec<Term>> = BTreeMap::new();
    if terms.is_empty() {
        return Ok(described);
    }
    let predicates: Vec<Term> = DESCRIBED
        .iter()
        .filter_map(|p| NamedNode::new(*p).ok())
        .map(Term::from)
        .collect();
    let pattern = format!("?term ?p ?o . {}", values("p", &predicates));
    let values_of: Vec<Term> = terms.iter().cloned().map(Term::from).collect();
    let solutions = run(
        store,
        with_values(
            &pattern,
            "term",
            &values_of,
            terms.len() * DESCRIBED.len() * VALUES_PER_PREDICATE * 4,
        ),
    )?;
    let (Some(t), Some(p), Some(o)) = (
        solutions.column("term"),
        solutions.column("p"),
        solutions.column("o"),
    ) else {
        return Ok(described);
    };
    for row in &solutions.rows {
        let (Some(term), Some(predicate), Some(Some(object))) =
            (cell_text(row.get(t)), cell_text(row.get(p)), row.get(o))
        else {
            continue;
        };
        if matches!(object, Term::BlankNode(_)) {
            continue;
        }
        let values = described.entry((term, predicate)).or_default();
        if !values.contains(object) {
            values.push(object.clone());
        }
    }
    for values in described.values_mut() {
        values.sort_by_key(ToString::to_string);
    }
    Ok(described)
}

/// The vocabulary a query may use, compact (a small model reads the prompt at
/// about 80 tokens a second on two cores): the classes, then one line per
/// property with its domain, range and label, e.g.
/// `- ub:advisor: ub:Person → ub:Professor, "is being advised by"`. The slice's
/// terms come first (with their comments, and a class's label and superclass),
/// then the terms the data uses most; at most [`USED_TERMS_SHOWN`] of each.
/// `rdf:type` is not listed: queries write it `a`.
fn vocabulary_text(
    store: &Store,
    slice: &[NamedNode],
    known: &KnownTerms,
    prefixes: &[(String, String)],
) -> Result<String, RetrieveError> {
    let mut terms: Vec<NamedNode> = slice.to_vec();
    for iri in known
        .properties
        .iter()
        .take(USED_TERMS_SHOWN)
        .chain(known.classes.iter().take(USED_TERMS_SHOWN))
    {
        if let Ok(node) = NamedNode::new(iri.as_str())
            && !terms.contains(&node)
        {
            terms.push(node);
        }
    }
    let vocabulary = Vocabulary {
        slice,
        known,
        prefixes,
        described: descriptions(store, &terms)?,
    };
    let classes: Vec<String> = vocabulary
        .ordered(&known.classes, true)
        .iter()
        .map(|iri| vocabulary.class_entry(iri))
        .collect();
    let mut lines = Vec::new();
    if !classes.is_empty() {
        lines.push(format!("Classes: {}", classes.join(", ")));
    }
    let properties: Vec<String> = vocabulary
        .ordered(&known.properties, false)
        .iter()
        .map(|iri| vocabulary.property_line(iri))
        .collect();
    if !properties.is_empty() {
        lines.push("Properties (subject's class → object's class):".to_owned());
        lines.extend(properties);
    }
    Ok(lines.join("\n"))
}

/// The terms shown to the model and what the store says about them.
struct Vocabulary<'a> {
    slice: &'a [NamedNode],
    known: &'a KnownTerms,
    prefixes: &'a [(String, String)],
    /// (term, predicate) -> values.
    described: BTreeMap<(String, String), Vec<Term>>,
}

impl Vocabulary<'_> {
    fn name(&self, iri: &str) -> String {
        kgfuse_core::iri::compact(iri, self.prefixes)
    }

    fn in_slice(&self, iri: &str) -> bool {
        self.slice.iter().any(|t| t.as_str() == iri)
    }

    fn get(&self, iri: &str, predicate: &str) -> &[Term] {
        self.described
            .get(&(iri.to_owned(), predicate.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    fn shown(&self, term: &Term) -> String {
        match term {
            Term::NamedNode(n) => self.name(n.as_str()),
            Term::Literal(l) => format!("\"{}\"", shorten(l.value())),
            other => other.to_string(),
        }
    }

    fn is_class(&self, iri: &str) -> bool {
        self.known.classes.iter().any(|c| c == iri)
            || self.get(iri, w3c::RDF_TYPE).iter().any(
                |t| matches!(t, Term::NamedNode(n) if ONTOLOGY_KINDS[..2].contains(&n.as_str())),
            )
    }

    /// The slice's terms of the kind first, then the most used of `pool`.
    fn ordered(&self, pool: &[String], class: bool) -> Vec<String> {
        let mut out: Vec<String> = self
            .slice
            .iter()
            .map(|t| t.as_str().to_owned())
            .filter(|t| self.is_class(t) == class)
            .collect();
        for iri in pool {
            if !out.contains(iri) {
                out.push(iri.clone());
            }
        }
        out.retain(|iri| iri != w3c::RDF_TYPE);
        out.truncate(USED_TERMS_SHOWN);
        out
    }

    /// A label worth showing: one that says more than the name's own words.
    fn label(&self, iri: &str) -> Option<String> {
        let label = self.get(iri, w3c::RDFS_LABEL).first()?;
        let Term::Literal(text) = label else {
            return None;
        };
        let said = text.value().to_lowercase().replace([' ', '_', '-'], "");
        let named = term_words(iri).concat();
        (said != named).then(|| self.shown(label))
    }

    /// A class, with its label and (in the slice) its superclasses.
    fn class_entry(&self, iri: &str) -> String {
        let mut notes: Vec<String> = self.label(iri).into_iter().collect();
        if self.in_slice(iri) {
            let parents: Vec<String> = self
                .get(iri, w3c::RDFS_SUBCLASS_OF)
                .iter()
                .map(|t| self.shown(t))
                .collect();
            if !parents.is_empty() {
                notes.push(format!("subclass of {}", parents.join(", ")));
            }
        }
        if notes.is_empty() {
            self.name(iri)
        } else {
            format!("{} ({})", self.name(iri), notes.join("; "))
        }
    }

    /// A property with its domain and range, its label and (in the slice) its comment.
    fn property_line(&self, iri: &str) -> String {
        let mut line = format!("- {}", self.name(iri));
        let ends = |predicate: &str| {
            let values: Vec<String> = self
                .get(iri, predicate)
                .iter()
                .map(|t| self.shown(t))
                .collect();
            (!values.is_empty()).then(|| values.join(" or "))
        };
        match (ends(w3c::RDFS_DOMAIN), ends(w3c::RDFS_RANGE)) {
            (None, None) => {}
            (domain, range) => line.push_str(&format!(
                ": {} → {}",
                domain.as_deref().unwrap_or("any"),
                range.as_deref().unwrap_or("any")
            )),
        }
        let mut notes: Vec<String> = self.label(iri).into_iter().collect();
        if self.in_slice(iri) {
            notes.extend(
                self.get(iri, w3c::RDFS_COMMENT)
                    .first()
                    .map(|t| self.shown(t)),
            );
        }
        if !notes.is_empty() {
            line.push_str(&format!(", {}", notes.join(", ")));
        }
        line
    }
}

/// Text cut to [`LITERAL_CHARS`] characters.
fn shorten(text: &str) -> String {
    if text.chars().count() <= LITERAL_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(LITERAL_CHARS).collect();
    format!("{}…", cut.trim_end())
}

/// An accepted query's results, with the parsed query for [`facts_of`].
struct Run {
    query: spargebra::Query,
    variables: Vec<String>,
    rows: Vec<Vec<Option<Term>>>,
    answer: Option<bool>,
    truncated: bool,
    /// What was changed before it ran (see [`project_what_is_bound`]).
    note: Option<String>,
}

/// A SELECT that projects a variable none of its patterns binds ("SELECT ?x
/// WHERE { e p ?y . ?y q ?z }", common from small models) returns an empty
/// column: it projects the variables the patterns bind instead, the nearest
/// query that returns what the patterns matched. Returns what was changed.
fn project_what_is_bound(query: &mut spargebra::Query) -> Option<String> {
    let spargebra::Query::Select { pattern, .. } = query else {
        return None;
    };
    let mut current = pattern;
    loop {
        match current {
            GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Slice { inner, .. }
            | GraphPattern::OrderBy { inner, .. } => current = inner,
            GraphPattern::Project { inner, variables } => {
                let mut bound = Vec::new();
                inner.on_in_scope_variable(|v| {
                    if !bound.contains(v) {
                        bound.push(v.clone());
                    }
                });
                let unbound: Vec<String> = variables
                    .iter()
                    .filter(|v| !bound.contains(v))
                    .map(ToString::to_string)
                    .collect();
                if unbound.is_empty() || bound.is_empty() {
                    return None;
                }
                // The projected variables that are bound keep their place first.
                let mut projected: Vec<_> = variables
                    .iter()
                    .filter(|v| bound.contains(v))
                    .cloned()
                    .collect();
                projected.extend(bound.into_iter().filter(|v| !variables.contains(v)));
                let shown: Vec<String> = projected.iter().map(ToString::to_string).collect();
                *variables = projected;
                return Some(format!(
                    "no pattern binds {}: projected {} instead",
                    unbound.join(" "),
                    shown.join(" ")
                ));
            }
            _ => return None,
        }
    }
}

/// Checks a generated query and runs it. `Ok(Err(reason))` is a rejection or an
/// execution failure to send back to the model; `Err` is a failure of the store.
fn check_and_run(
    store: &Store,
    text: &str,
    prefixes: &[(String, String)],
    options: &TextToSparqlOptions,
    known: &KnownTerms,
) -> Result<Result<Run, String>, RetrieveError> {
    if text.is_empty() {
        return Ok(Err("the reply holds no query".to_owned()));
    }
    let mut query_options = store.query_options();
    let mut query = match parse_query(text, &query_options) {
        Ok(query) => query,
        Err(GraphError::Syntax(message)) => {
            return Ok(Err(if is_update(text, prefixes) {
                "this is a SPARQL Update; updates are never run: write a read-only SELECT or ASK query"
                    .to_owned()
            } else {
                format!("the query does not parse: {message}")
            }));
        }
        Err(other) => return Err(other.into()),
    };
    let form = match &query {
        spargebra::Query::Select { .. } | spargebra::Query::Ask { .. } => None,
        spargebra::Query::Construct { .. } => Some("CONSTRUCT"),
        spargebra::Query::Describe { .. } => Some("DESCRIBE"),
    };
    if let Some(form) = form {
        return Ok(Err(format!(
            "{form} queries are not accepted here: write a SELECT of the wanted bindings, or an ASK"
        )));
    }
    let note = project_what_is_bound(&mut query);
    let (spargebra::Query::Select { pattern, .. } | spargebra::Query::Ask { pattern, .. }) = &query
    else {
        return Ok(Err("only SELECT and ASK queries are accepted".to_owned()));
    };
    if let Some(service) = kgfuse_graph::service_call(pattern) {
        return Ok(Err(format!(
            "SERVICE {service} is not allowed: queries run against the local store only"
        )));
    }
    let unknown = store.graph().unknown_terms(&query_vocabulary(&query))?;
    if !unknown.is_empty() {
        let hints: Vec<String> = unknown
            .iter()
            .filter_map(|term| {
                let iri = term.split_once('<')?.1.split('>').next()?;
                let pool = if term.starts_with("class") {
                    &known.classes
                } else {
                    &known.properties
                };
                let near = nearest_terms(iri, pool, 2);
                (!near.is_empty()).then(|| {
                    let near: Vec<String> = near
                        .iter()
                        .map(|n| kgfuse_core::iri::compact(n, prefixes))
                        .collect();
                    format!("instead of <{iri}>, did you mean {}?", near.join(" or "))
                })
            })
            .collect();
        let mut reason = format!(
            "the query names terms the store neither declares nor uses: {}",
            unknown.join(", ")
        );
        if !hints.is_empty() {
            reason.push_str(&format!("; {}", hints.join("; ")));
        }
        return Ok(Err(reason));
    }
    let violations = store
        .graph()
        .domain_range_violations_with_prefixes(&query, prefixes)?;
    if !violations.is_empty() {
        return Ok(Err(format!(
            "the query contradicts the ontology: {}",
            violations.join("; ")
        )));
    }
    query_options.timeout = Some(options.timeout);
    let limited =
        store
            .graph()
            .query_algebra_limited(query.clone(), options.row_limit, &query_options);
    let LimitedOutcome { outcome, truncated } = match limited {
        Ok(limited) => limited,
        Err(
            error @ (GraphError::Timeout(_)
            | GraphError::Evaluation(_)
            | GraphError::Usage(_)
            | GraphError::Syntax(_)),
        ) => return Ok(Err(format!("the query failed: {error}"))),
        Err(other) => return Err(other.into()),
    };
    Ok(Ok(match outcome {
        QueryOutcome::Solutions { variables, rows } => Run {
            query,
            variables,
            rows,
            answer: None,
            truncated,
            note,
        },
        QueryOutcome::Boolean(answer) => Run {
            query,
            variables: Vec::new(),
            rows: Vec::new(),
            answer: Some(answer),
            truncated: false,
            note,
        },
        QueryOutcome::Graph(_) => {
            return Ok(Err("only SELECT and ASK queries are accepted".to_owned()));
        }
    }))
}

/// The `n` known terms whose local names are nearest to `iri`'s: shared words
/// (identifier parts, lower-cased) first, then shared letter pairs.
fn nearest_terms(iri: &str, known: &[String], n: usize) -> Vec<String> {
    fn pairs(text: &str) -> BTreeSet<(char, char)> {
        let chars: Vec<char> = text.to_lowercase().chars().collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    }
    let wanted_words: BTreeSet<String> = term_words(iri).into_iter().collect();
    let wanted_pairs = pairs(local_name(iri));
    let mut scored: Vec<(f32, &String)> = known
        .iter()
        .map(|candidate| {
            let shared_words = term_words(candidate)
                .iter()
                .filter(|w| wanted_words.contains(*w))
                .count() as f32;
            let theirs = pairs(local_name(candidate));
            let union = theirs.union(&wanted_pairs).count().max(1) as f32;
            let shared_pairs = theirs.intersection(&wanted_pairs).count() as f32 / union;
            (shared_words + shared_pairs, candidate)
        })
        .filter(|(score, _)| *score >= 0.3)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(n).map(|(_, c)| c.clone()).collect()
}

/// The lowercased words of a term's local name (`worksFor` -> works, for).
fn term_words(iri: &str) -> Vec<String> {
    identifier_parts(local_name(iri))
        .into_iter()
        .map(str::to_lowercase)
        .collect()
}

/// A triple pattern that holds in every solution, and the GRAPH it is inside.
struct CertainPattern {
    triple: TriplePattern,
    graph: Option<NamedNodePattern>,
}

fn pattern_variables(triple: &TriplePattern) -> Vec<&str> {
    let mut out = Vec::new();
    for term in [&triple.subject, &triple.object] {
        if let TermPattern::Variable(v) = term {
            out.push(v.as_str());
        }
    }
    if let NamedNodePattern::Variable(v) = &triple.predicate {
        out.push(v.as_str());
    }
    out
}

/// The triple patterns every solution of `pattern` satisfies: those of its basic
/// graph patterns outside UNION, the right of OPTIONAL and MINUS, property paths
/// and blank nodes; inside a projection or grouping, only those whose variables it
/// keeps (the others are not the outer query's variables).
fn certain_patterns(
    pattern: &GraphPattern,
    graph: Option<&NamedNodePattern>,
    visible: Option<&BTreeSet<String>>,
    out: &mut Vec<CertainPattern>,
) {
    match pattern {
        GraphPattern::Bgp { patterns } => {
            for triple in patterns {
                let blank = [&triple.subject, &triple.object]
                    .iter()
                    .any(|t| matches!(t, TermPattern::BlankNode(_)));
                let hidden = visible.is_some_and(|visible| {
                    pattern_variables(triple)
                        .iter()
                        .any(|v| !visible.contains(*v))
                });
                if !blank && !hidden {
                    out.push(CertainPattern {
                        triple: triple.clone(),
                        graph: graph.cloned(),
                    });
                }
            }
        }
        GraphPattern::Join { left, right } | GraphPattern::Lateral { left, right } => {
            certain_patterns(left, graph, visible, out);
            certain_patterns(right, graph, visible, out);
        }
        GraphPattern::LeftJoin { left, .. } | GraphPattern::Minus { left, .. } => {
            certain_patterns(left, graph, visible, out);
        }
        GraphPattern::Graph { name, inner } => {
            let name = match name {
                NamedNodePattern::Variable(v)
                    if visible.is_some_and(|visible| !visible.contains(v.as_str())) =>
                {
                    None
                }
                other => Some(other),
            };
            certain_patterns(inner, name, visible, out);
        }
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. } => certain_patterns(inner, graph, visible, out),
        GraphPattern::Project { inner, variables }
        | GraphPattern::Group {
            inner, variables, ..
        } => {
            let kept: BTreeSet<String> = variables
                .iter()
                .map(|v| v.as_str().to_owned())
                .filter(|v| visible.is_none_or(|visible| visible.contains(v)))
                .collect();
            certain_patterns(inner, graph, Some(&kept), out);
        }
        GraphPattern::Union { .. }
        | GraphPattern::Path { .. }
        | GraphPattern::Values { .. }
        | GraphPattern::Service { .. } => {}
    }
}

/// The facts an accepted SELECT's rows assert (see [`TextToSparql::facts`]), at most
/// `limit`.
fn facts_of(store: &Store, run: &Run, limit: usize) -> Result<Vec<Fact>, RetrieveError> {
    let spargebra::Query::Select { pattern, .. } = &run.query else {
        return Ok(Vec::new());
    };
    let mut patterns = Vec::new();
    certain_patterns(pattern, None, None, &mut patterns);
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    let found = asserted(run, &patterns, limit);
    // The graph of each fact, looked up with the terms bound (never pasted).
    let options = store.query_options();
    let lookup = parse_query(
        "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 1",
        &options,
    )?;
    let mut facts = Vec::new();
    for (subject, predicate, object, graph) in found {
        let graph = match graph {
            Some(graph) => graph,
            None if matches!(subject, Term::NamedNode(_)) => {
                let bindings = [
                    ("s".to_owned(), subject.clone()),
                    ("p".to_owned(), Term::NamedNode(predicate.clone())),
                    ("o".to_owned(), object.clone()),
                ];
                match store
                    .graph()
                    .query_algebra(lookup.clone(), &bindings, &options)?
                {
                    QueryOutcome::Solutions { variables, rows } => {
                        let at = variables.iter().position(|v| v == "g");
                        rows.first()
                            .and_then(|row| cell_text(at.and_then(|at| row.get(at))))
                            .unwrap_or_default()
                    }
                    _ => String::new(),
                }
            }
            None => String::new(),
        };
        facts.push(Fact {
            subject: show(&subject),
            predicate: predicate.into_string(),
            object: show(&object),
            graph,
        });
    }
    Ok(facts)
}

/// A triple a query's row asserts, with its graph when the query names it.
type Asserted = (Term, NamedNode, Term, Option<String>);

/// The distinct triples the rows assert through the query's certain patterns
/// (no literal subject, no long literal object), at most `limit`.
fn asserted(run: &Run, patterns: &[CertainPattern], limit: usize) -> Vec<Asserted> {
    let cell = |row: &[Option<Term>], name: &str| -> Option<Term> {
        let at = run.variables.iter().position(|v| v == name)?;
        row.get(at).cloned().flatten()
    };
    let term = |row: &[Option<Term>], pattern: &TermPattern| -> Option<Term> {
        match pattern {
            TermPattern::NamedNode(n) => Some(n.clone().into()),
            TermPattern::Literal(l) => Some(l.clone().into()),
            TermPattern::Variable(v) => cell(row, v.as_str()),
            TermPattern::BlankNode(_) => None,
        }
    };
    let mut found: Vec<Asserted> = Vec::new();
    for row in &run.rows {
        for certain in patterns {
            let triple = &certain.triple;
            let subject = term(row, &triple.subject);
            let predicate = match &triple.predicate {
                NamedNodePattern::NamedNode(n) => Some(n.clone()),
                NamedNodePattern::Variable(v) => match cell(row, v.as_str()) {
                    Some(Term::NamedNode(n)) => Some(n),
                    _ => None,
                },
            };
            let object = term(row, &triple.object);
            let (Some(subject), Some(predicate), Some(object)) = (subject, predicate, object)
            else {
                continue;
            };
            if matches!(subject, Term::Literal(_))
                || matches!(&object, Term::Literal(l) if l.value().chars().count() > FACT_OBJECT_CHARS)
            {
                continue;
            }
            let graph = match &certain.graph {
                Some(NamedNodePattern::NamedNode(g)) => Some(g.as_str().to_owned()),
                Some(NamedNodePattern::Variable(v)) => match cell(row, v.as_str()) {
                    Some(Term::NamedNode(g)) => Some(g.into_string()),
                    _ => None,
                },
                None => None,
            };
            if !found
                .iter()
                .any(|(s, p, o, _)| *s == subject && *p == predicate && *o == object)
            {
                found.push((subject, predicate, object, graph));
                if found.len() >= limit {
                    return found;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::config::StoreConfig;
    use kgfuse_lexicon::testing::Scripted;
    use kgfuse_llm::RuleBased;

    /// A store with the hash embedder holding [`ONTOLOGY`], reopened so the prefixes
    /// learned from the file are known to the parser.
    async fn store() -> (tempfile::TempDir, Store) {
        store_with(kgfuse_lexicon::testing::EMPLOYEES).await
    }

    /// A store like [`store`] holding `turtle`.
    async fn store_with(turtle: &str) -> (tempfile::TempDir, Store) {
        kgfuse_lexicon::testing::with_turtle(turtle).await
    }

    /// Runs text-to-SPARQL with no linked entities or terms and the default options.
    async fn ungrounded(store: &Store, model: &dyn LanguageModel, question: &str) -> TextToSparql {
        text_to_sparql(
            store,
            model,
            &Question::new(question),
            &Grounding::default(),
            &TextToSparqlOptions::default(),
        )
        .await
        .expect("run")
    }

    fn grounded(entities: &[QuestionEntity]) -> Grounding {
        Grounding {
            entities: entities.to_vec(),
            ..Grounding::default()
        }
    }

    fn entity(label: &str, iri: &str) -> QuestionEntity {
        QuestionEntity {
            label: label.to_owned(),
            iri: iri.to_owned(),
            anchor: true,
        }
    }

    const INVENTED: &str = "SELECT ?o WHERE { ex:alice ex:employer ?o }";
    // (Not `?x a ex:Person`: with RDFS entailment Alice the employee is a person,
    // so that query is answerable and passes.)
    const WRONG_DOMAIN: &str = "SELECT ?x ?o WHERE { ?x a ex:Volcano ; ex:worksFor ?o }";
    const VALID: &str = "```sparql\nSELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }\n```";
    const VALID_TEXT: &str = "SELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }";

    #[tokio::test]
    async fn rejected_queries_are_repaired_until_one_passes_the_checks() {
        let (_dir, store) = store().await;
        let model = Scripted::new(&[INVENTED, WRONG_DOMAIN, VALID]);
        let entities = [entity("Alice", "http://example.org/alice")];
        let result = text_to_sparql(
            &store,
            &model,
            &Question::new("Who works for which organisation?"),
            &grounded(&entities),
            &TextToSparqlOptions::default(),
        )
        .await
        .expect("run");

        assert_eq!(result.query.as_deref(), Some(VALID_TEXT));
        assert_eq!(result.attempts.len(), 3);
        let reasons: Vec<&str> = result
            .trace
            .dropped
            .iter()
            .map(|d| d.why.as_str())
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons[0].contains("predicate <http://example.org/employer>"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("?x is a ex:Volcano but ex:worksFor expects ex:Employee"),
            "{reasons:?}"
        );
        assert_eq!(result.trace.dropped[0].iri, INVENTED);
        assert_eq!(result.trace.kept, [VALID_TEXT]);
        assert_eq!(result.attempts[2].error, None);

        // Each repair shows the model its previous query and what was wrong with it.
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].previous, None);
        assert_eq!(
            requests[1].previous,
            Some((INVENTED.to_owned(), reasons[0].to_owned()))
        );
        assert_eq!(
            requests[2].previous.as_ref().map(|p| p.0.as_str()),
            Some(WRONG_DOMAIN)
        );
        // The entity reaches the model with the properties the data has for it,
        // in each direction.
        let alice = &requests[0].entities[0];
        assert_eq!(
            (alice.label.as_str(), alice.iri.as_str()),
            ("Alice", "http://example.org/alice")
        );
        for used in ["a", "rdfs:label", "ex:worksFor"] {
            assert!(alice.as_subject.iter().any(|p| p == used), "{alice:?}");
        }
        assert!(alice.as_object.is_empty(), "{alice:?}");

        // The rows, and the facts they assert, with the graph holding each.
        assert_eq!(result.variables, ["x", "o"]);
        assert_eq!(result.rows.len(), 1);
        assert_eq!(
            result.row_summaries(),
            ["?x = http://example.org/alice; ?o = http://example.org/acme"]
        );
        let works = result
            .facts
            .iter()
            .find(|f| f.predicate == "http://example.org/worksFor")
            .expect("worksFor fact");
        assert_eq!(works.subject, "http://example.org/alice");
        assert_eq!(works.object, "http://example.org/acme");
        assert!(works.graph.starts_with("file://"), "{works:?}");
        assert!(
            result
                .facts
                .iter()
                .any(|f| f.predicate == w3c::RDF_TYPE && f.object == "http://example.org/Employee")
        );
    }

    #[tokio::test]
    async fn small_model_help_grammar_examples_did_you_mean_and_a_zero_row_repair() {
        let (_dir, store) = store().await;
        let model = Scripted::new(&[
            // An unknown property close to a known one.
            "SELECT ?x WHERE { ?x ex:workFor ex:acme }",
            // Valid, but the literal is written wrong: nothing matches.
            "SELECT ?x WHERE { ?x rdfs:label \"acme\" }",
            "SELECT ?x WHERE { ?x ex:worksFor ex:acme }",
        ]);
        let options = TextToSparqlOptions {
            max_repairs: 3,
            ..TextToSparqlOptions::default()
        };
        let entities = [entity("Acme", "http://example.org/acme")];
        let result = text_to_sparql(
            &store,
            &model,
            &Question::new("Who works for Acme?"),
            &grounded(&entities),
            &options,
        )
        .await
        .expect("run");
        assert_eq!(
            result.query.as_deref(),
            Some("SELECT ?x WHERE { ?x ex:worksFor ex:acme }")
        );
        assert_eq!(result.rows.len(), 1);
        let requests = model.requests();
        let first = &requests[0];
        let grammar = first.grammar.as_deref().expect("a grammar");
        assert!(grammar.contains("\"ex:worksFor\""), "{grammar}");
        assert!(grammar.contains("e0 ::= \"ex:acme\""), "{grammar}");
        // Acme is the object of ex:worksFor, never its subject: the grammar
        // offers each direction only with the properties the data has.
        assert!(grammar.contains("e0in ::= \"ex:worksFor\"\n"), "{grammar}");
        assert!(grammar.contains("e0out ::= \"rdfs:label\"\n"), "{grammar}");
        assert!(grammar.contains("e0 \" a \" (class | var)"), "{grammar}");
        assert!(grammar.contains("anchored ::= e0pattern"), "{grammar}");
        // An example uses Acme in its direction.
        assert!(
            first
                .examples
                .iter()
                .any(|(_, q)| q == "SELECT ?x WHERE { ?x ex:worksFor ex:acme }"),
            "{:?}",
            first.examples
        );
        assert!(
            first.examples.iter().all(|(_, q)| q.starts_with("SELECT ")),
            "{:?}",
            first.examples
        );
        let hint = &requests[1].previous.as_ref().expect("a repair").1;
        assert!(hint.contains("did you mean ex:worksFor"), "{hint}");
        let zero = &requests[2].previous.as_ref().expect("a repair").1;
        assert!(zero.contains("matched nothing"), "{zero}");

        // When nothing better follows, the valid zero-row query is the result.
        let model = Scripted::new(&["SELECT ?x WHERE { ?x rdfs:label \"acme\" }"]);
        let result = text_to_sparql(
            &store,
            &model,
            &Question::new("Who works for Acme?"),
            &grounded(&entities),
            &options,
        )
        .await
        .expect("run");
        assert_eq!(
            result.query.as_deref(),
            Some("SELECT ?x WHERE { ?x rdfs:label \"acme\" }")
        );
        assert!(result.rows.is_empty());
        assert_eq!(model.requests().len(), 2, "the repeat ends the loop");
    }

    #[tokio::test]
    async fn updates_and_describe_are_rejected_and_the_loop_stops() {
        let (_dir, store) = store().await;
        let before = store.graph().len().expect("len");
        for (reply, repairs, expected) in [
            (
                "INSERT DATA { ex:mallory ex:worksFor ex:acme }",
                2,
                "SPARQL Update",
            ),
            ("DELETE WHERE { ?s ?p ?o }", 0, "SPARQL Update"),
            ("DESCRIBE ex:alice", 1, "DESCRIBE queries are not accepted"),
            (
                "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
                0,
                "CONSTRUCT queries are not accepted",
            ),
        ] {
            let model = Scripted::new(&[reply]);
            let options = TextToSparqlOptions {
                max_repairs: repairs,
                ..TextToSparqlOptions::default()
            };
            let result = text_to_sparql(
                &store,
                &model,
                &Question::new("Who works for Acme?"),
                &Grounding::default(),
                &options,
            )
            .await
            .expect("run");
            assert_eq!(result.query, None, "{reply}");
            // The scripted model repeats itself: the repeat ends the loop at once.
            assert_eq!(result.attempts.len(), 1, "{reply}");
            assert_eq!(model.requests().len(), repairs.min(1) + 1, "{reply}");
            if repairs > 0 {
                assert!(
                    result.trace.kept[0].contains("repeated a query"),
                    "{:?}",
                    result.trace
                );
            }
            assert!(
                result
                    .attempts
                    .iter()
                    .all(|a| a.error.as_deref().is_some_and(|e| e.contains(expected))),
                "{reply}: {:?}",
                result.attempts
            );
            assert!(
                result
                    .trace
                    .kept
                    .iter()
                    .any(|k| k.contains("template queries are used instead")),
                "{:?}",
                result.trace
            );
        }
        assert_eq!(store.graph().len().expect("len"), before, "nothing written");
    }

    #[tokio::test]
    async fn service_is_rejected_and_ask_is_answered() {
        let (_dir, store) = store().await;
        let model = Scripted::new(&[
            "SELECT * WHERE { ?s ?p ?o FILTER EXISTS { SERVICE <http://example.org/sparql> { ?s ?p ?o } } }",
            "not sparql at all",
            "ASK { ex:alice ex:worksFor ex:acme }",
        ]);
        let result = ungrounded(&store, &model, "Does Alice work for Acme?").await;
        let errors: Vec<String> = result
            .attempts
            .iter()
            .filter_map(|a| a.error.clone())
            .collect();
        assert!(
            errors[0].contains("SERVICE <http://example.org/sparql>"),
            "{errors:?}"
        );
        assert!(errors[1].contains("does not parse"), "{errors:?}");
        assert_eq!(result.answer, Some(true));
        assert_eq!(result.row_summaries(), ["ASK: true"]);
        assert!(result.facts.is_empty());
    }

    #[tokio::test]
    async fn a_projection_no_pattern_binds_becomes_the_bound_variables() {
        let (_dir, store) = store().await;
        let written = "SELECT ?x WHERE { ex:alice ex:worksFor ?y }";
        let model = Scripted::new(&[written]);
        let result = ungrounded(&store, &model, "Who does Alice work for?").await;
        assert_eq!(result.variables, ["y"]);
        assert_eq!(result.row_summaries(), ["?y = http://example.org/acme"]);
        let ran = result.query.as_deref().expect("accepted");
        assert!(ran.starts_with("SELECT ?y WHERE"), "{ran}");
        assert_eq!(result.attempts[0].query, written);
        assert_eq!(
            result.trace.kept[0], "no pattern binds ?x: projected ?y instead",
            "{:?}",
            result.trace
        );
        // A projection the patterns bind is left alone, and so is COUNT.
        for fine in [
            "SELECT ?y WHERE { ex:alice ex:worksFor ?y }",
            "SELECT (COUNT(?y) AS ?count) WHERE { ex:alice ex:worksFor ?y }",
        ] {
            let model = Scripted::new(&[fine]);
            let result = ungrounded(&store, &model, "q").await;
            assert_eq!(result.query.as_deref(), Some(fine));
        }
    }

    #[tokio::test]
    async fn the_row_limit_caps_the_rows() {
        let (_dir, store) = store().await;
        let model = Scripted::new(&["SELECT ?s ?p ?o WHERE { ?s ?p ?o }"]);
        let options = TextToSparqlOptions {
            row_limit: 3,
            ..TextToSparqlOptions::default()
        };
        let result = text_to_sparql(
            &store,
            &model,
            &Question::new("everything"),
            &Grounding::default(),
            &options,
        )
        .await
        .expect("run");
        assert_eq!(result.rows.len(), 3);
        assert!(result.truncated);
        // ?s ?p ?o rows are facts themselves.
        assert_eq!(result.facts.len(), 3);
    }

    #[tokio::test]
    async fn an_offline_model_leaves_the_templates_in_charge() {
        let (_dir, store) = store().await;
        let result = ungrounded(&store, &RuleBased::default(), "Who works for Acme?").await;
        assert_eq!(result.query, None);
        assert!(result.attempts.is_empty());
        assert_eq!(result.trace.stage, STAGE);
        assert_eq!(result.trace.kept.len(), 1);
        assert!(
            result.trace.kept[0].contains("template queries are used instead"),
            "{:?}",
            result.trace
        );
    }

    #[tokio::test]
    async fn the_model_sees_the_relevant_slice_of_the_ontology() {
        let (_dir, store) = store().await;
        let model = Scripted::new(&[VALID]);
        let options = TextToSparqlOptions {
            slice_size: 3,
            ..TextToSparqlOptions::default()
        };
        text_to_sparql(
            &store,
            &model,
            &Question::new("Which organisation does each employee work for?"),
            &Grounding::default(),
            &options,
        )
        .await
        .expect("run");
        let request = &model.requests()[0];
        let slice = &request.ontology;
        // The slice's terms first, each property with its domain, range and
        // comment; a label that only repeats the name is left out.
        assert!(
            slice.starts_with("Classes: ex:Employee (subclass of ex:Person), "),
            "{slice}"
        );
        let works_for = "- ex:worksFor: ex:Employee → ex:Organisation, \
                         \"The organisation an employee works for.\"";
        let position = |line: &str| slice.lines().position(|l| l.starts_with(line));
        assert!(
            position(works_for).is_some(),
            "{works_for} missing from\n{slice}"
        );
        // Terms the data uses follow, by name.
        assert!(
            position("- ex:lastEruption: ex:Volcano → any") > position(works_for),
            "{slice}"
        );
        for absent in ["recipe", "Acme", "Alice", "rdf:type", "\"employee\""] {
            assert!(!slice.contains(absent), "{absent} in\n{slice}");
        }
        assert!(
            request
                .prefixes
                .contains(&("ex".to_owned(), "http://example.org/".to_owned()))
        );
        assert_eq!(
            request.question,
            "Which organisation does each employee work for?"
        );
    }

    #[tokio::test]
    async fn a_fresh_store_offers_the_carried_kgfuse_vocabulary_as_the_slice() {
        // Nothing loaded: the slice comes from the vocabulary `init` carries.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(
            &dir.path().join("data"),
            StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 384),
        )
        .await
        .expect("init");
        let model = Scripted::new(&[VALID]);
        ungrounded(
            &store,
            &model,
            "Which functions does a module define, and what parameters do they take?",
        )
        .await;
        let slice = &model.requests()[0].ontology;
        let declared = slice.lines().filter(|l| l.starts_with("- kgfuse:")).count();
        assert!(declared >= 5, "{declared} kgfuse properties in\n{slice}");
        for wanted in [
            "Classes: kgfuse:Module (subclass of ",
            "- kgfuse:hasParameter: kgfuse:Function → kgfuse:Parameter, ",
        ] {
            assert!(slice.contains(wanted), "{wanted} missing from\n{slice}");
        }
    }

    #[test]
    fn an_entity_example_uses_its_properties_in_their_direction_and_the_named_one_alone() {
        let prefixes = [("ex".to_owned(), "http://example.org/".to_owned())];
        let mut as_subject = vec![
            "http://example.org/name".to_owned(),
            "http://example.org/headOf".to_owned(),
        ];
        let mut as_object = vec!["http://example.org/advisor".to_owned()];
        let named = ["http://example.org/headOf".to_owned()];
        named_first(&mut as_subject, &named);
        named_first(&mut as_object, &named);
        assert_eq!(as_subject[0], "http://example.org/headOf");
        assert_eq!(as_object, ["http://example.org/advisor"]);
        let alice = QuestionEntity {
            label: "Alice".into(),
            iri: "http://example.org/alice".into(),
            anchor: true,
        };
        let uses = (as_subject, as_object);
        let known = KnownTerms::default();
        let with_named = examples(&[], &known, &prefixes, Some((&alice, &uses)), &named, None);
        assert_eq!(
            with_named,
            [(
                "What is Alice head of?".to_owned(),
                "SELECT ?x WHERE { ex:alice ex:headOf ?x }".to_owned()
            )]
        );
        // Without a named property, one example per direction.
        let unnamed = examples(&[], &known, &prefixes, Some((&alice, &uses)), &[], None);
        assert_eq!(
            unnamed,
            [
                (
                    "What is Alice head of?".to_owned(),
                    "SELECT ?x WHERE { ex:alice ex:headOf ?x }".to_owned()
                ),
                (
                    "Which things have Alice as their advisor?".to_owned(),
                    "SELECT ?x WHERE { ?x ex:advisor ex:alice }".to_owned()
                ),
            ]
        );
        // The class example is the question's best named class, not the most used.
        let classes = KnownTerms {
            classes: vec![
                "http://example.org/Work".into(),
                "http://example.org/Lecturer".into(),
            ],
            ..KnownTerms::default()
        };
        let named = [
            "http://example.org/Lecturer".to_owned(),
            "http://example.org/Work".to_owned(),
        ];
        assert_eq!(
            examples(&[], &classes, &prefixes, None, &named, None)[0].1,
            "SELECT ?x WHERE { ?x a ex:Lecturer }"
        );
    }

    #[tokio::test]
    async fn two_named_properties_that_chain_in_the_data_make_the_example() {
        let turtle = format!(
            "{}\nex:locatedIn a owl:ObjectProperty ; rdfs:label \"located in\" .\n\
             ex:acme ex:locatedIn ex:lyon .\n",
            kgfuse_lexicon::testing::EMPLOYEES
        );
        let (_dir, store) = store_with(&turtle).await;
        let known = store.graph().known_terms(100).expect("known terms");
        let alice = entity("Alice", "http://example.org/alice");
        let works_for = "http://example.org/worksFor".to_owned();
        let located_in = "http://example.org/locatedIn".to_owned();
        // Whatever order the question names them in, the data decides the chain:
        // Alice works for Acme, which is located in Lyon.
        for named in [
            [works_for.clone(), located_in.clone()],
            [located_in.clone(), works_for.clone()],
        ] {
            let chain = named_chain(&store, &alice, &named, &known).expect("query");
            assert_eq!(
                chain,
                Some(Chain {
                    first: (works_for.clone(), true),
                    second: (located_in.clone(), true),
                })
            );
        }
        // One named property is no chain.
        let one = named_chain(&store, &alice, std::slice::from_ref(&works_for), &known);
        assert_eq!(one.expect("query"), None);
        let chain = Chain {
            first: (works_for.clone(), true),
            second: (located_in.clone(), true),
        };
        let prefixes = vec![("ex".to_owned(), "http://example.org/".to_owned())];
        let uses = (vec![works_for.clone()], Vec::new());
        let shown = examples(
            &[],
            &KnownTerms::default(),
            &prefixes,
            Some((&alice, &uses)),
            &[works_for, located_in],
            Some(&chain),
        );
        assert_eq!(
            shown,
            [(
                "What is the located in of the works for of Alice?".to_owned(),
                "SELECT ?x WHERE { ex:alice ex:worksFor ?y . ?y ex:locatedIn ?x }".to_owned()
            )]
        );
    }
}
