//! Stages 3a and 3b: the question's generated queries — linking and the query
//! graphs beside the other stages, the planner's and a model's query plans, and a
//! real model's text-to-SPARQL query.

use super::*;

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
pub(super) struct LexicalStages {
    pub(super) linked: mpsc::Receiver<Result<Linked, RetrieveError>>,
    pub(super) constructed: Beside<Result<Lexical, RetrieveError>>,
}

/// What stages 3a and 3b read beside the rest: the query graphs' rows and the
/// question's answer (a plan's rows, or for a lookup the best query graph's
/// answer column).
#[derive(Default)]
pub(super) struct Lexical {
    pub(super) constructed: Constructed,
    pub(super) answers: Option<AnswerSet>,
    pub(super) plan_trace: TraceStage,
    /// The question counts, compares or asks yes or no about a class the
    /// store has: a plan was made for it.
    pub(super) shaped: bool,
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
pub(super) enum Beside<T> {
    Running(std::thread::JoinHandle<T>),
    Done(T),
}

impl LexicalStages {
    /// Starts linking `question` and building its query graphs.
    pub(super) fn start(store: &Store, question: &Question) -> Self {
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
    pub(super) fn linked(&mut self) -> Result<Linked, RetrieveError> {
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
    pub(super) fn constructed(self) -> Result<Lexical, RetrieveError> {
        self.constructed.wait()
    }
}

impl<T> Beside<T> {
    /// The work's result, once it is done; a panic on its thread goes on here.
    pub(super) fn wait(self) -> T {
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
pub(super) fn link_and_construct(
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

/// Stages 3a and 3b, their outcome in the context: the query graphs' queries and
/// trace, the question's answer set and the query that gave it, and the plans'
/// traces. Returns the query graphs' rows (facts for stage 5) and whether a
/// model's plan answered.
pub(super) fn answers_stage(
    store: &Store,
    model: &dyn LanguageModel,
    text: &str,
    linked: &Linked,
    lexical: LexicalStages,
    context: &mut FusedContext,
    rejected: &mut Vec<Rejected>,
) -> Result<(Constructed, bool), RetrieveError> {
    let Lexical {
        constructed,
        answers,
        plan_trace,
        ..
    } = lexical.constructed()?;
    context.sparql.extend(constructed.queries.iter().cloned());
    let (answers, model_plan_trace) = model_plan_stage(store, model, text, linked, answers)?;
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
    Ok((constructed, by_model))
}

/// Stage 3b with a real language model: the model fills a plan from the
/// store's names ([`model_planner::answer`]). Its answer, when it has one,
/// replaces the offline one, which stays the fallback.
pub(super) fn model_plan_stage(
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
pub(super) fn plan_stage(
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

/// Stage 3b, a query written by a real language model about the question,
/// grounded in the linked entities and terms, checked before it runs. Offline
/// there is none: the query graphs are the offline half.
pub(super) async fn model_query_stage(
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
