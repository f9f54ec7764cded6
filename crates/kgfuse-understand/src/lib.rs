//! A question worked out once: [`understand`] makes one [`Understanding`],
//! which retrieval, the answer loop and every front end read by reference;
//! nothing below it reads the raw question again.
//!
//! The stages, in order (each is one function below):
//!
//! 1. **words**: what the words ask for ([`Cues`]) and the names they mention
//!    (the offline extraction, [`RuleBased`]);
//! 2. **linking** ([`kgfuse_lexicon::linking`]) beside **embedding** (the
//!    question's vector, kept in its [`Question`]);
//! 3. **query graphs** ([`kgfuse_plan::query_graphs`]) over the linked terms and
//!    the **offline plans** ([`kgfuse_plan::planner`]), which give the answer set
//!    without a model;
//! 4. **the model's choice or reading**, with a real model only: when offline
//!    plans answer, the model picks one of them
//!    ([`kgfuse_plan::model_planner::choose`], one request) or none; otherwise,
//!    or after none, one request writes a plan
//!    ([`kgfuse_plan::model_planner::read`]) whose answer replaces the offline
//!    one and whose entities are the question's names; a plan that fails is
//!    repaired once (not after a choice: two requests at most). The answers are then ranked by how
//!    connected they are in the graph unless the plan orders them
//!    ([`kgfuse_plan::ranking`]);
//! 5. **dispatch**: by the cues and the names ([`dispatch`]). A model is not
//!    asked the kind: asking for it in the same reply made the small model's
//!    plans worse (EVALUATION.md).
//!
//! [`Depth::Words`] stops after stage 1 (and decides the dispatch by the cues):
//! the strategies that search by the words alone (`bm25`, `flat`, `hybrid`,
//! `paths`, `neighborhood`, `domain`) need no more, and make no model call for it.
//!
//! **The model-call budget.** Understanding makes at most one request to a
//! real model (the reading) plus one repair of its plan; in JSON mode (a
//! server that takes no grammar) a reply that is not JSON is re-asked once by
//! the model client and then given up. Offline it makes none.

mod dispatch;

pub use dispatch::dispatch;

use kgfuse_core::context::{AnswerSet, Dispatch, TraceStage};
use kgfuse_lexicon::linking::{self, Linked};
use kgfuse_llm::{LanguageModel, RuleBased};
use kgfuse_plan::cues::Cues;
use kgfuse_plan::model_planner::choose;
use kgfuse_plan::plan::{Constraint, QueryPlan, Value};
use kgfuse_plan::planner::Planned;
use kgfuse_plan::query_graphs::{Constructed, Construction};
use kgfuse_plan::{RetrieveError, model_planner, planner};
use kgfuse_store::{Question, Store};

/// How much of a question to work out: what a strategy needs of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Its words only: cues, names, dispatch by the cues. No graph read, no
    /// model call.
    Words,
    /// Its words linked to the store, the query graphs and plans with their
    /// rows, and a real model's reading.
    Graph,
}

/// Everything worked out about one question before retrieval.
#[derive(Debug)]
pub struct Understanding {
    /// The question (its text, the nodes held out of its searches, and its
    /// embedding once computed: every search shares it).
    pub question: Question,
    /// How far it was worked out.
    pub depth: Depth,
    /// What its words ask for.
    pub cues: Cues,
    /// The names it mentions: those the model's plan names when it names
    /// any, else the offline extraction's.
    pub names: Vec<String>,
    /// SEMANTIC, FACTUAL or HYBRID.
    pub dispatch: Dispatch,
    /// Its words linked to entities, classes and properties (empty at
    /// [`Depth::Words`]).
    pub linked: Linked,
    /// The query graphs the linked terms make, with their rows.
    pub constructed: Constructed,
    /// The question's answer as rows: the model's plan's, else an offline
    /// plan's, else the best query graph's answer column.
    pub answers: Option<AnswerSet>,
    /// A plan was made for a class the question names, beyond a lookup.
    pub shaped: bool,
    /// The trace of each stage: dispatch, then (at [`Depth::Graph`]) linking,
    /// query graphs, plans and the model's reading.
    pub trace: Vec<TraceStage>,
}

impl Understanding {
    /// The question's text.
    pub fn text(&self) -> &str {
        self.question.text()
    }

    /// Whether the answer set came from the model's plan.
    pub fn answered_by_model(&self) -> bool {
        self.answers
            .as_ref()
            .is_some_and(|a| a.source == model_planner::SOURCE)
    }
}

/// Works `question` out to `depth` (see the crate's stages). At
/// [`Depth::Graph`] the question is embedded while it is linked; a real model
/// is asked for its reading once (plus one repair of its plan).
pub fn understand(
    store: &Store,
    model: &dyn LanguageModel,
    question: Question,
    depth: Depth,
) -> Result<Understanding, RetrieveError> {
    let text = question.text().trim();
    if text.is_empty() {
        return Err(RetrieveError::Invalid("the question is empty".into()));
    }
    let cues = Cues::of(text);
    let offline_names = names_stage(text);
    let mut understanding = Understanding {
        depth,
        cues,
        names: offline_names,
        dispatch: Dispatch::default(),
        linked: Linked::default(),
        constructed: Constructed::default(),
        answers: None,
        shaped: false,
        trace: Vec::new(),
        question,
    };
    let mut reading = None;
    if depth == Depth::Graph {
        let linked = linking_stage(store, &understanding.question)?;
        understanding.trace.push(linked.trace());
        let (constructed, offline) = query_stage(store, &understanding.cues, &linked)?;
        understanding.trace.push(constructed.trace.clone());
        understanding.trace.push(offline.trace.clone());
        understanding.shaped = offline.shaped;
        // A lookup answered by a query graph is not a plan's: no choice.
        let by_plans = offline
            .answers
            .as_ref()
            .is_none_or(|a| a.source == planner::SOURCE);
        let planned: &[Planned] = if by_plans { &offline.planned } else { &[] };
        let (chosen, mut read) = model_stage(store, model, &understanding, &linked, planned)?;
        understanding.answers = match chosen {
            Some(answers) => Some(answers),
            None => choose_answers(offline.answers, &mut read),
        };
        if let Some(set) = understanding.answers.as_mut() {
            kgfuse_plan::ranking::by_connectedness(store, set)?;
        }
        if read.asked() {
            understanding.trace.push(read.trace.clone());
        }
        understanding.linked = linked;
        understanding.constructed = constructed;
        reading = Some(read);
    }
    if let Some(read) = reading.as_ref().filter(|read| !read.names.is_empty()) {
        understanding.names.clone_from(&read.names);
    }
    let (dispatch, stage) = dispatch(understanding.question.text(), &understanding.names);
    understanding.dispatch = dispatch;
    understanding.trace.insert(0, stage);
    Ok(understanding)
}

/// Stage 4, with a real model: when the graph gives readings that answer (the
/// offline planner's best plans, run), the model chooses one in one request,
/// or none; when it chooses none, or the graph gave none, it writes a plan
/// itself (with one repair when it was not asked to choose). A single reading
/// is offered too: the model's own plan then replaces the graph's answer only
/// when the model says that answer does not fit (measured: on Spider4SPARQL
/// development questions its own plans lost the columns and counts the offline
/// plans had). Offline, nothing is asked. The chosen reading's answers, if
/// any, and the model's own reading.
fn model_stage(
    store: &Store,
    model: &dyn LanguageModel,
    understanding: &Understanding,
    linked: &Linked,
    planned: &[Planned],
) -> Result<(Option<AnswerSet>, model_planner::ModelReading), RetrieveError> {
    let text = understanding.question.text();
    let cues = &understanding.cues;
    if model.is_offline() {
        return Ok((None, model_planner::read(store, model, text, cues, linked)?));
    }
    let readings = choose::answered_readings(store, planned)?;
    if readings.is_empty() {
        return Ok((None, model_planner::read(store, model, text, cues, linked)?));
    }
    let (chosen, choice_trace) = choose::choose(store, model, text, &readings)?;
    if let Some(i) = chosen {
        let mut read = model_planner::ModelReading {
            trace: choice_trace,
            ..model_planner::ModelReading::default()
        };
        read.names = quoted_values(&readings[i].plan);
        return Ok((Some(readings[i].answers.clone()), read));
    }
    let mut read = model_planner::read_without_repair(store, model, text, cues, linked)?;
    let mut trace = choice_trace;
    trace.kept.append(&mut read.trace.kept);
    trace.dropped.append(&mut read.trace.dropped);
    read.trace = TraceStage {
        stage: read.trace.stage.clone(),
        ..trace
    };
    Ok((None, read))
}

/// The text values a plan's conditions name: the names a chosen reading says
/// the question mentions (its nodes are linked already).
fn quoted_values(plan: &QueryPlan) -> Vec<String> {
    plan.constraints
        .iter()
        .filter_map(|c| match c {
            Constraint::Reaches { any_of, .. } => Some(any_of),
            _ => None,
        })
        .flatten()
        .filter_map(|v| match v {
            Value::Literal { value, .. } => Some(value.clone()),
            Value::Iri(_) => None,
        })
        .collect()
}

/// Stage 1: the names the words mention, by the offline extraction (which
/// cannot fail).
fn names_stage(text: &str) -> Vec<String> {
    RuleBased::default()
        .extract_entities(text)
        .unwrap_or_default()
}

/// Stage 2: linking on a thread of its own while the question is embedded
/// here (MiniLM: 6-11 ms); both are kept. When no thread can be started,
/// one after the other.
fn linking_stage(store: &Store, question: &Question) -> Result<Linked, RetrieveError> {
    std::thread::scope(|scope| {
        let linking = std::thread::Builder::new()
            .name("kgfuse-linking".into())
            .spawn_scoped(scope, || linking::link(store, question.text()));
        store.vector_of(question)?;
        match linking {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => linking::link(store, question.text()),
        }
    })
}

/// What the offline planner made of a question.
struct OfflinePlans {
    /// The plans, best first: the graph's readings of the question.
    planned: Vec<Planned>,
    answers: Option<AnswerSet>,
    trace: TraceStage,
    shaped: bool,
}

/// Stage 3: the query graphs the linked terms make, then the offline plans,
/// best first; a lookup, or a question no plan answers, is answered by the
/// best query graph's answer column when there is one.
fn query_stage(
    store: &Store,
    cues: &Cues,
    linked: &Linked,
) -> Result<(Constructed, OfflinePlans), RetrieveError> {
    let mut construction = Construction::new(store, linked);
    store
        .graph()
        .read_in_rounds(&mut [&mut construction], &store.query_options())?;
    let constructed = construction.finish();
    let (planned, mut trace) = planner::plans(store, cues, linked)?;
    let answers = planner::answer(store, &planned, &mut trace)?;
    let lookup = cues.is_lookup();
    let shaped = !lookup && planned.iter().any(|p| !p.plan.classes.is_empty());
    // A lookup is the query graphs' job, unless it asks for several columns
    // ("the names and e-mails of ..."), which a query graph's one answer
    // column cannot hold.
    let columns = answers.as_ref().is_some_and(|a| a.columns.len() > 1);
    let answers = match &constructed.answer {
        Some(answer) if lookup && !columns => {
            trace
                .kept
                .push("a lookup: the best query graph's answer column".into());
            Some(answer.clone())
        }
        Some(answer) if answers.is_none() => {
            trace
                .kept
                .push("no plan answered: the best query graph's answer column".into());
            Some(answer.clone())
        }
        _ => answers,
    };
    Ok((
        constructed,
        OfflinePlans {
            planned,
            answers,
            trace,
            shaped,
        },
    ))
}

/// Stage 4's answer: the model's plan's answer replaces the offline one, which
/// stays the fallback; a yes found by an offline plan beats the model's no.
/// The trace of the model's reading says which stood.
fn choose_answers(
    offline: Option<AnswerSet>,
    read: &mut model_planner::ModelReading,
) -> Option<AnswerSet> {
    let offline_yes = offline.as_ref().is_some_and(|a| a.boolean == Some(true));
    let tried = read.asked();
    match read.answers.take() {
        Some(answer) if answer.boolean == Some(false) && offline_yes => {
            read.trace
                .kept
                .push("the model's plan says no, an offline plan says yes: yes stands".into());
            offline
        }
        Some(answer) => Some(answer),
        None => {
            if tried && offline.is_some() {
                read.trace
                    .kept
                    .push("no plan of the model answered: the offline answer stands".into());
            }
            offline
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_lexicon::testing::{LIBRARY, Scripted, with_turtle};

    const QUESTION: &str = "How many books did Mara Holt write?";

    /// With readings the graph answered, the model is asked to choose: a
    /// choice is the whole model cost (one request), and a choice of none
    /// costs one plan more, not repaired (two requests, the budget).
    #[tokio::test]
    async fn a_model_chooses_a_reading_or_plans_once_more() {
        let (_dir, store) = with_turtle(LIBRARY).await;
        let chooser = Scripted::with_plans(&["{}"]).choosing(Some(0));
        let understood = understand(&store, &chooser, Question::new(QUESTION), Depth::Graph)
            .expect("understood");
        assert_eq!(chooser.choice_requests().len(), 1);
        assert!(chooser.plan_requests().is_empty());
        let answers = understood.answers.expect("the chosen reading's answers");
        assert_eq!(answers.rows, vec![vec![Some("2".to_owned())]]);

        let declining =
            Scripted::with_plans(&[r#"{"answer": "rows", "class": "Nope"}"#]).choosing(None);
        let understood = understand(&store, &declining, Question::new(QUESTION), Depth::Graph)
            .expect("understood");
        assert_eq!(declining.choice_requests().len(), 1);
        assert_eq!(
            declining.plan_requests().len(),
            1,
            "no repair after a choice"
        );
        // Its plan named no class of the store: the graph's answer stands.
        let answers = understood.answers.expect("the offline answer");
        assert_eq!(answers.rows, vec![vec![Some("2".to_owned())]]);
    }
}
