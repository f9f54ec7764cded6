//! The model planner: a language model reads a question in one reply, a
//! [`QueryPlan`] chosen among the store's own names, and kgfuse runs the plan
//! like an offline plan; the entities the plan names are the question's names.
//!
//! 1. **Menu** ([`menu::Menu`]): the store's classes and properties under short
//!    names, with how the data uses each (read once per store).
//! 2. **Entities**: the linked mentions' candidates, by name, with their classes.
//! 3. **Read**: the model writes its reading as JSON held to a grammar over
//!    those names ([`LanguageModel::read_question`]); it cannot name a term the
//!    store lacks. A plan that asks for nothing (no class, condition or
//!    grouping: the question wants an explanation) has nothing to run.
//! 4. **Run**: the reply is read into a plan ([`reply::plan`]), compiled, checked
//!    and run read-only with a row cap ([`planner::run`]).
//! 5. **Feedback** (`judge`): a plan that leaves out what the question's words
//!    ask for (checked before it runs), an unreadable plan, a refused or failed
//!    query, no rows, a count of nothing, a "no" or a negation that excludes
//!    nothing goes back to the model once with the reason and the walks the
//!    data has to the plan's entities; the second plan runs. That repair is the
//!    only second request made here; in JSON mode (a server that takes no
//!    grammar) the model client re-asks once a reply that is not JSON
//!    ([`kgfuse_llm::OpenAiChat`]).
//!
//! The caller keeps the offline planner's answer when the model's has none.

pub mod choose;
pub mod menu;
pub mod reply;

use crate::RetrieveError;
use crate::cues::Cues;
use crate::plan::{Constraint, Form, Grouping, QueryPlan, SetFunction, Value};
use crate::planner::probe::{self, Start};
use crate::planner::{self, Run};
use kgfuse_core::context::{AnswerSet, Dropped, TraceStage};
use kgfuse_lexicon::linking::Linked;
use kgfuse_llm::{LanguageModel, LlmError, PlanEntity, ReadingRequest};
use kgfuse_store::Store;
use menu::Menu;
use reply::Names;
use std::collections::BTreeMap;
use std::time::Instant;

/// The trace stage's name.
pub const STAGE: &str = "model plan";
/// `AnswerSet::source` of the model planner's answers.
pub const SOURCE: &str = "model";
/// Readings asked of the model per question: the first, and one repair of its plan.
const ATTEMPTS: usize = 2;
/// Most entities shown to the model.
const MAX_ENTITIES: usize = 12;

/// What a model read in a question.
#[derive(Debug, Clone, Default)]
pub struct ModelReading {
    /// The answer of the model's plan, when one answered.
    pub answers: Option<AnswerSet>,
    /// The entities and texts its first plan names, as the model spelled them.
    pub names: Vec<String>,
    /// The model's attempts (empty for a model that reads no questions).
    pub trace: TraceStage,
}

impl ModelReading {
    /// Whether the model was asked at all (its trace says something).
    pub fn asked(&self) -> bool {
        !self.trace.kept.is_empty() || !self.trace.dropped.is_empty()
    }
}

/// The model's reading of `question` (kind, names, a plan) and the answer of
/// its plan, from one request and at most one repair. Nothing is asked of an
/// offline model; a model that fails is told in the trace.
pub fn read(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    cues: &Cues,
    linked: &Linked,
) -> Result<ModelReading, RetrieveError> {
    read_with(store, model, question, cues, linked, ATTEMPTS)
}

/// [`read`] with no repair: the one request a question has left when the
/// model has already been asked to choose among the graph's readings.
pub fn read_without_repair(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    cues: &Cues,
    linked: &Linked,
) -> Result<ModelReading, RetrieveError> {
    read_with(store, model, question, cues, linked, 1)
}

fn read_with(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    cues: &Cues,
    linked: &Linked,
    attempts: usize,
) -> Result<ModelReading, RetrieveError> {
    let mut reading = ModelReading {
        trace: TraceStage {
            stage: STAGE.into(),
            ..TraceStage::default()
        },
        ..ModelReading::default()
    };
    if model.is_offline() {
        return Ok(reading);
    }
    let menu = Menu::of(store)?;
    let (entities, iris) = entities(linked, &menu);
    let names: Vec<String> = entities.iter().map(|e| e.name.clone()).collect();
    let mut request = ReadingRequest {
        question: question.to_owned(),
        schema: menu.text.clone(),
        grammar: Some(menu.grammar(&names)),
        entities,
        previous: None,
    };
    let names = Names {
        menu: &menu,
        entities: &iris,
    };
    let trace = &mut reading.trace;
    for attempt in 1..=attempts {
        let started = Instant::now();
        let reply = match model.read_question(&request) {
            Ok(reply) => reply,
            Err(LlmError::Unsupported { .. }) => return Ok(reading),
            Err(error) => {
                trace.dropped.push(Dropped {
                    iri: model.name().to_owned(),
                    why: format!("no reading: {error}"),
                });
                return Ok(reading);
            }
        };
        trace.kept.push(format!(
            "reading {attempt} ({:.1} s): {reply}",
            started.elapsed().as_secs_f64()
        ));
        if attempt == 1 {
            let gist = reply::gist(&reply);
            reading.names = gist.names;
            if gist.no_plan {
                trace
                    .kept
                    .push("the plan asks for nothing: no plan to run".into());
                return Ok(reading);
            }
        }
        let last = attempt == attempts;
        let why = match reply::plan(&reply, &names) {
            Err(why) => why,
            Ok(plan) => match judge(store, cues, &menu, &plan, last)? {
                Ok(set) => {
                    trace.kept.push(format!("answered: {}", set.query));
                    reading.answers = Some(set);
                    return Ok(reading);
                }
                Err(why) => why,
            },
        };
        trace.dropped.push(Dropped {
            iri: reply.clone(),
            why: why.clone(),
        });
        request.previous = Some((reply, why));
    }
    Ok(reading)
}

/// The entities the model may name (each name once, with every node it may
/// mean) and the map from those names to the nodes.
fn entities(linked: &Linked, menu: &Menu) -> (Vec<PlanEntity>, BTreeMap<String, Vec<String>>) {
    let mut shown: Vec<PlanEntity> = Vec::new();
    let mut iris: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for candidate in linked.entities() {
        let name = candidate.name.trim();
        if name.is_empty() {
            continue;
        }
        let nodes = iris.entry(name.to_owned()).or_default();
        if !nodes.contains(&candidate.iri) {
            nodes.push(candidate.iri.clone());
        }
        if shown.iter().all(|e| e.name != name) && shown.len() < MAX_ENTITIES {
            shown.push(PlanEntity {
                name: name.to_owned(),
                classes: candidate
                    .kinds
                    .iter()
                    .filter(|kind| menu.classes.contains_key(*kind))
                    .cloned()
                    .collect(),
            });
        }
    }
    iris.retain(|name, _| shown.iter().any(|e| &e.name == name));
    (shown, iris)
}

/// Stages 4 and 5 for one plan: its answer, or why it goes back to the model
/// (before it runs, what it leaves out of the question; after, that it was
/// refused, found or counted nothing, or that its negation excludes nothing).
/// On the last attempt a "no" stands; a negation that excludes nothing never
/// does (the offline answer is taken instead).
fn judge(
    store: &Store,
    cues: &Cues,
    menu: &Menu,
    plan: &QueryPlan,
    last: bool,
) -> Result<Result<AnswerSet, String>, RetrieveError> {
    if let Some(problem) = shape_problem(cues, plan) {
        return Ok(Err(problem));
    }
    let set = match planner::run(store, plan, SOURCE)? {
        Run::Refused { why, .. } => return Ok(Err(why)),
        Run::Answered(set) | Run::Empty(set) => set,
    };
    let nothing = if !set.answered() {
        "it finds nothing"
    } else if set.boolean == Some(false) && !last {
        "it says no"
    } else if counts_nothing(plan, &set) {
        "it counts nothing"
    } else if negation_excludes_nothing(store, plan, &set)? {
        "its \"not\" condition excludes nothing: check the direction of its path"
    } else {
        return Ok(Ok(set));
    };
    let advice = walks_to_entities(store, plan, menu)?;
    Ok(Err(format!("{nothing}. {advice}").trim_end().to_owned()))
}

/// Whether a list with "not" conditions has as many rows without them: the
/// negated walk holds for none of the answers (often a step the wrong way).
fn negation_excludes_nothing(
    store: &Store,
    plan: &QueryPlan,
    set: &AnswerSet,
) -> Result<bool, RetrieveError> {
    let negated = |c: &Constraint| matches!(c, Constraint::Not(_));
    if plan.form != Form::Select
        || plan.aggregation.is_some()
        || set.truncated
        || !plan.constraints.iter().any(negated)
    {
        return Ok(false);
    }
    let mut without = plan.clone();
    without.constraints.retain(|c| !negated(c));
    Ok(match planner::run(store, &without, SOURCE)? {
        Run::Answered(all) => !all.truncated && all.rows.len() == set.rows.len(),
        _ => false,
    })
}

/// What the plan leaves out of what the question's words ask for (a yes or
/// no, a count, a total or an average, one row per something, N of them, the
/// most or least), as advice for the next plan.
fn shape_problem(cues: &Cues, plan: &QueryPlan) -> Option<String> {
    let measures = || plan.aggregation.iter().flat_map(|a| &a.measures);
    if cues.ask && plan.form != Form::Ask {
        return Some("the question asks yes or no: answer \"yes/no\"".into());
    }
    if cues.count.is_some()
        && plan.form == Form::Select
        && !measures().any(|m| m.function == SetFunction::Count)
    {
        return Some(
            "the question asks how many: count with \"group\": {\"function\": \"count\", ...}"
                .into(),
        );
    }
    if let Some((function @ (SetFunction::Sum | SetFunction::Avg), _)) = cues.function
        && !measures().any(|m| m.function == function)
    {
        return Some(format!(
            "the question asks for the {} of values: use \"group\": {{\"function\": \"{}\", \"of\": PATH, ...}}",
            if function == SetFunction::Sum {
                "total"
            } else {
                "average"
            },
            function.name()
        ));
    }
    if cues.per.is_some()
        && plan
            .aggregation
            .as_ref()
            .is_some_and(|a| a.group == Grouping::All)
    {
        return Some(
            "the question asks for one row per each of something: set \"per\" to the path to it"
                .into(),
        );
    }
    if let Some(n) = cues.limit
        && plan.limit.is_none()
    {
        return Some(format!(
            "the question asks for {n} of them: use \"order\" and \"limit\""
        ));
    }
    let extreme = measures().any(|m| matches!(m.function, SetFunction::Min | SetFunction::Max));
    if cues.superlative.is_some() && plan.order.is_none() && !extreme {
        return Some(
            "the question asks for the most or the least: use \"order\" and \"limit\"".into(),
        );
    }
    None
}

/// Advice for a plan that found nothing: by which walks the data reaches each
/// entity the plan names from the answer's class, in the menu's names.
fn walks_to_entities(
    store: &Store,
    plan: &QueryPlan,
    menu: &Menu,
) -> Result<String, RetrieveError> {
    if plan.classes.is_empty() {
        return Ok(String::new());
    }
    let class = menu.class_names(&plan.classes).join(", ");
    let mut advice = Vec::new();
    for constraint in &plan.constraints {
        let Constraint::Reaches { any_of, .. } = constraint else {
            continue;
        };
        let nodes: Vec<String> = any_of
            .iter()
            .filter_map(|v| match v {
                Value::Iri(iri) => Some(iri.clone()),
                Value::Literal { .. } => None,
            })
            .collect();
        let paths = probe::entity_paths(store, &Start::Classes(plan.classes.clone()), &nodes)?;
        let written: Vec<String> = paths
            .iter()
            .filter_map(|p| menu.path_name(&p.steps))
            .take(3)
            .collect();
        let entity = nodes
            .first()
            .map_or("", |n| kgfuse_core::iri::local_name(n));
        advice.push(if written.is_empty() {
            format!(
                "No {class} reaches {entity} in one or two steps: the answer may be another class."
            )
        } else {
            format!(
                "From {class} the data reaches {entity} by the path {}.",
                written.join(" or ")
            )
        });
    }
    Ok(advice.join(" "))
}

/// A grouped answer whose measures are all zero or unbound: a count over a walk
/// the data does not have.
fn counts_nothing(plan: &QueryPlan, set: &AnswerSet) -> bool {
    plan.aggregation.is_some()
        && set.rows.iter().all(|row| {
            row.last()
                .is_none_or(|cell| cell.as_deref().is_none_or(|v| v == "0"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_lexicon::linking::link;
    use kgfuse_lexicon::testing::{Scripted, with_turtle};

    /// The reading's answer and trace.
    fn answer(
        store: &Store,
        model: &dyn LanguageModel,
        question: &str,
        linked: &Linked,
    ) -> Result<(Option<AnswerSet>, TraceStage), RetrieveError> {
        let reading = read(store, model, question, &Cues::of(question), linked)?;
        Ok((reading.answers, reading.trace))
    }

    const SHOP: &str = r#"
@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:anna a ex:Seller ; rdfs:label "Anna Berg" .
ex:olaf a ex:Seller ; rdfs:label "Olaf Lund" .
ex:lamp a ex:Item ; rdfs:label "Desk lamp" ; ex:price 40 ; ex:seller ex:anna .
ex:sofa a ex:Item ; rdfs:label "Green sofa" ; ex:price 900 ; ex:seller ex:anna .
ex:rug a ex:Item ; rdfs:label "Wool rug" ; ex:price 120 ; ex:seller ex:olaf .
"#;

    #[tokio::test]
    async fn the_model_chooses_from_the_menu_and_its_plan_answers() {
        let (_dir, store) = with_turtle(SHOP).await;
        let store = &store;
        {
            let question = "What is the most expensive item Anna Berg sells?";
            let linked = link(store, question).expect("linked");
            let model = Scripted::with_plans(&[
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Anna Berg"}], "order": {"by": "price", "desc": true}, "limit": 1}"#,
            ]);
            let (answer, trace) = answer(store, &model, question, &linked).expect("planned");
            let answer = answer.expect("an answer");
            assert_eq!(answer.source, SOURCE);
            assert_eq!(
                answer.rows,
                vec![vec![Some("http://ex.org/sofa".to_owned())]]
            );
            let request = &model.plan_requests()[0];
            assert!(
                request.schema.contains("- price: Item -> number, e.g."),
                "{}",
                request.schema
            );
            assert!(
                request.schema.contains("- seller: Item -> Seller"),
                "{}",
                request.schema
            );
            assert_eq!(request.entities[0].name, "Anna Berg");
            assert_eq!(request.entities[0].classes, vec!["Seller".to_owned()]);
            let grammar = request.grammar.as_deref().expect("a grammar");
            assert!(
                grammar.contains("entity ::= \"\\\"Anna Berg\\\"\""),
                "{grammar}"
            );
            assert!(
                trace.kept.iter().any(|k| k.starts_with("answered: SELECT")),
                "{trace:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_plan_that_fails_goes_back_once_with_the_reason() {
        let (_dir, store) = with_turtle(SHOP).await;
        let store = &store;
        {
            let question = "How many items does Olaf Lund sell?";
            let linked = link(store, question).expect("linked");
            let model = Scripted::with_plans(&[
                // Backwards: sellers have no seller, so the count is nothing.
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "^seller", "is": "Olaf Lund"}], "group": {"function": "count", "of": "answer", "per": "all"}}"#,
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Olaf Lund"}], "group": {"function": "count", "of": "answer", "per": "all"}}"#,
            ]);
            let (answer, trace) = answer(store, &model, question, &linked).expect("planned");
            assert_eq!(
                answer.expect("an answer").rows,
                vec![vec![Some("1".to_owned())]]
            );
            let requests = model.plan_requests();
            assert_eq!(requests.len(), 2);
            let (previous, why) = requests[1].previous.clone().expect("the repair");
            assert!(previous.contains("^seller"), "{previous}");
            assert!(why.contains("counts nothing"), "{why}");
            // The walk the data has is told back, in the menu's names.
            assert!(why.contains("reaches olaf by the path seller"), "{why}");
            assert_eq!(trace.dropped.len(), 1, "{trace:?}");
        }
    }

    #[tokio::test]
    async fn a_plan_that_leaves_out_what_the_words_ask_for_is_sent_back_before_it_runs() {
        let (_dir, store) = with_turtle(SHOP).await;
        let store = &store;
        {
            let question = "How many items does Anna Berg sell?";
            let linked = link(store, question).expect("linked");
            let model = Scripted::with_plans(&[
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Anna Berg"}]}"#,
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Anna Berg"}], "group": {"function": "count", "of": "answer", "per": "all"}}"#,
            ]);
            let (counted, _) = answer(store, &model, question, &linked).expect("planned");
            assert_eq!(
                counted.expect("an answer").rows,
                vec![vec![Some("2".to_owned())]]
            );
            let (_, why) = model.plan_requests()[1]
                .previous
                .clone()
                .expect("the repair");
            assert!(why.contains("asks how many"), "{why}");
            // Twice without the count: the offline planner's answer stands.
            let stubborn = Scripted::with_plans(&[
                r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Anna Berg"}]}"#,
            ]);
            let (none, _) = answer(store, &stubborn, question, &linked).expect("planned");
            assert!(none.is_none());
        }
    }

    #[tokio::test]
    async fn a_negation_that_excludes_nothing_goes_back_once() {
        let (_dir, store) = with_turtle(SHOP).await;
        let store = &store;
        let question = "Which sellers sell no item?";
        let linked = link(store, question).expect("linked");
        let model = Scripted::with_plans(&[
            // Sellers have no seller: the negation holds for every seller.
            r#"{"answer": "rows", "class": "Seller", "where": [{"not": true, "path": "seller", "exists": true}]}"#,
            r#"{"answer": "rows", "class": "Seller", "where": [{"not": true, "path": "^seller", "exists": true}]}"#,
        ]);
        let (none, _) = answer(store, &model, question, &linked).expect("planned");
        // Both sell something: the corrected plan finds no seller at all.
        assert!(none.is_none());
        let (_, why) = model.plan_requests()[1]
            .previous
            .clone()
            .expect("the repair");
        assert!(why.contains("excludes nothing"), "{why}");
    }

    /// The entities a plan names are the question's names; a plan that asks
    /// for nothing (an explanation) has nothing to run, so nothing is repaired.
    #[tokio::test]
    async fn a_reading_names_its_entities_and_a_plan_of_nothing_runs_nothing() {
        let (_dir, store) = with_turtle(SHOP).await;
        let question = "How many items does Anna Berg sell?";
        let linked = link(&store, question).expect("linked");
        let model = Scripted::with_plans(&[
            r#"{"answer": "rows", "class": "Item", "where": [{"path": "seller", "is": "Anna Berg"}], "group": {"function": "count", "of": "answer", "per": "all"}}"#,
        ]);
        let reading = read(&store, &model, question, &Cues::of(question), &linked).expect("read");
        assert_eq!(reading.names, ["Anna Berg"]);
        assert_eq!(
            reading.answers.expect("an answer").rows,
            vec![vec![Some("2".to_owned())]]
        );
        assert_eq!(model.plan_requests().len(), 1);

        let question = "Explain how Anna Berg prices an item";
        let linked = link(&store, question).expect("linked");
        let model = Scripted::with_plans(&[r#"{"answer": "rows", "class": null}"#]);
        let reading = read(&store, &model, question, &Cues::of(question), &linked).expect("read");
        assert!(reading.names.is_empty());
        assert!(reading.answers.is_none());
        assert_eq!(
            model.plan_requests().len(),
            1,
            "no repair of a plan that asks for nothing"
        );
    }

    #[test]
    fn the_words_shape_check_names_what_a_plan_leaves_out() {
        let rows = QueryPlan {
            classes: vec!["http://ex.org/Item".into()],
            ..QueryPlan::default()
        };
        let problem = |question: &str, plan: &QueryPlan| shape_problem(&Cues::of(question), plan);
        assert!(problem("Which items are green?", &rows).is_none());
        let said = |question: &str| problem(question, &rows).unwrap_or_default();
        assert!(said("Is there a green item?").contains("yes or no"));
        assert!(said("What is the total price of the items?").contains("\"sum\""));
        assert!(said("List the top 3 items by price.").contains("limit"));
        assert!(said("Which is the cheapest item?").contains("order"));
        let counted = QueryPlan {
            aggregation: Some(crate::plan::Aggregation {
                measures: vec![crate::plan::Measure {
                    function: SetFunction::Count,
                    of: Vec::new(),
                }],
                group: Grouping::All,
                having: None,
            }),
            ..rows.clone()
        };
        assert!(problem("How many items are there?", &counted).is_none());
        let per = problem("How many items does each seller have?", &counted).unwrap_or_default();
        assert!(per.contains("\"per\""), "{per}");
    }

    #[tokio::test]
    async fn an_offline_model_or_two_failed_plans_leave_the_answer_to_the_offline_planner() {
        let (_dir, store) = with_turtle(SHOP).await;
        let store = &store;
        {
            let question = "Which items cost more than 100?";
            let linked = link(store, question).expect("linked");
            let offline = kgfuse_llm::RuleBased::default();
            let (none, _) = answer(store, &offline, question, &linked).expect("planned");
            assert!(none.is_none());
            let model = Scripted::with_plans(&[r#"{"answer": "rows", "class": "Planet"}"#]);
            let (none, trace) = answer(store, &model, question, &linked).expect("planned");
            assert!(none.is_none());
            assert_eq!(model.plan_requests().len(), ATTEMPTS);
            assert!(
                trace
                    .dropped
                    .iter()
                    .all(|d| d.why.contains("no class Planet")),
                "{trace:?}"
            );
        }
    }
}
