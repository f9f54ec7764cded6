//! The model chooses: the offline planner's best plans are run, those that
//! answer (with answers of their own) are its readings of the question, and a
//! model is shown each as a short sentence in the store's own names with a few
//! of its answers, and picks one or says none fits. A small model cannot write
//! a three-step query over a vocabulary it has never seen; it can tell which of
//! a few answered readings says what the question says.

use super::menu::Menu;
use crate::RetrieveError;
use crate::plan::{Column, Constraint, Form, Grouping, QueryPlan, SortKey, Value};
use crate::planner::{self, Planned, Run};
use kgfuse_core::context::{AnswerSet, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_lexicon::lexicon::Lexicon;
use kgfuse_llm::{ChoiceRequest, LanguageModel, LlmError};
use kgfuse_store::Store;
use std::time::Instant;

/// Most readings shown to the model.
pub const MAX_READINGS: usize = 5;
/// Answers shown per reading.
const SAMPLES: usize = 3;
/// The trace stage's name.
pub const STAGE: &str = "model choice";

/// A plan the graph answered.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The plan.
    pub plan: QueryPlan,
    /// Its answer.
    pub answers: AnswerSet,
}

/// The best plans (at most [`MAX_READINGS`] of those tried) that answered, each
/// with answers no better plan gave. Runs the plans again, best first: the
/// offline answer ran only until its first answer, and a few read-only
/// queries cost milliseconds beside the model's request (only a real model
/// asks for readings).
pub fn answered_readings(
    store: &Store,
    planned: &[Planned],
) -> Result<Vec<Answered>, RetrieveError> {
    let mut answered: Vec<Answered> = Vec::new();
    for candidate in planned.iter().take(MAX_READINGS * 2) {
        if answered.len() == MAX_READINGS {
            break;
        }
        if let Run::Answered(set) = planner::run(store, &candidate.plan, planner::SOURCE)?
            && answered
                .iter()
                .all(|a| a.answers.rows != set.rows || a.answers.boolean != set.boolean)
        {
            answered.push(Answered {
                plan: candidate.plan.clone(),
                answers: set,
            });
        }
    }
    Ok(answered)
}

/// Which reading the model chose (its index), `None` when it chose none or
/// could not be asked; the trace says which. One request.
pub fn choose(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    readings: &[Answered],
) -> Result<(Option<usize>, TraceStage), RetrieveError> {
    let mut trace = TraceStage {
        stage: STAGE.into(),
        ..TraceStage::default()
    };
    let menu = Menu::of(store)?;
    let lexicon = Lexicon::of(store)?;
    let name_of = |iri: &str| {
        lexicon
            .entry_of(iri)
            .map(|e| e.name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| local_name(iri).to_owned())
    };
    let sentences: Vec<String> = readings
        .iter()
        .map(|r| sentence(&menu, &r.plan, &r.answers, &name_of))
        .collect();
    let request = ChoiceRequest {
        question: question.to_owned(),
        schema: menu.text.clone(),
        readings: sentences.clone(),
    };
    let started = Instant::now();
    let chosen = match model.choose_reading(&request) {
        Ok(chosen) => chosen,
        Err(LlmError::Unsupported { .. }) => return Ok((None, trace)),
        Err(error) => {
            trace.dropped.push(kgfuse_core::context::Dropped {
                iri: model.name().to_owned(),
                why: format!("no choice: {error}"),
            });
            return Ok((None, trace));
        }
    };
    for (i, sentence) in sentences.iter().enumerate() {
        trace.kept.push(format!("reading {}: {sentence}", i + 1));
    }
    trace.kept.push(match chosen {
        Some(i) => format!(
            "chose reading {} ({:.1} s)",
            i + 1,
            started.elapsed().as_secs_f64()
        ),
        None => format!(
            "chose none ({:.1} s): the model plans the question itself",
            started.elapsed().as_secs_f64()
        ),
    });
    Ok((chosen, trace))
}

/// A reading as the model reads it: what is asked for and what must hold, in
/// the menu's names, then a few answers.
/// `Film where director is "Ava Lind", counted -> 2`
pub fn sentence(
    menu: &Menu,
    plan: &QueryPlan,
    answers: &AnswerSet,
    name_of: &dyn Fn(&str) -> String,
) -> String {
    let path = |steps: &[crate::plan::Step]| {
        if steps.is_empty() {
            "it".to_owned()
        } else {
            menu.path_name(steps).unwrap_or_else(|| {
                steps
                    .iter()
                    .map(|s| local_name(&s.property).to_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
        }
    };
    let value = |v: &Value| match v {
        Value::Iri(iri) => format!("\"{}\"", name_of(iri)),
        Value::Literal { value, .. } => format!("\"{value}\""),
    };
    let mut text = match menu.class_names(&plan.classes).join(" or ") {
        names if names.is_empty() => "things".to_owned(),
        names => names,
    };
    let conditions: Vec<String> = plan
        .constraints
        .iter()
        .map(|c| condition(c, &path, &value))
        .collect();
    if !conditions.is_empty() {
        text.push_str(" where ");
        text.push_str(&conditions.join(" and "));
    }
    if let Some(aggregation) = &plan.aggregation {
        let measures: Vec<String> = aggregation
            .measures
            .iter()
            .map(|m| match m.of.as_slice() {
                [] if m.function.name() == "count" => "counted".to_owned(),
                [] => m.function.name().to_owned(),
                of => format!("{} of {}", m.function.name(), path(of)),
            })
            .collect();
        text.push_str(&format!(", {}", measures.join(", ")));
        match &aggregation.group {
            Grouping::All => {}
            Grouping::PerAnswer => text.push_str(" per each"),
            Grouping::PerValue(of) => text.push_str(&format!(" per {}", path(of))),
        }
    }
    if let Some(order) = &plan.order {
        let key = match &order.key {
            SortKey::Value(of) => path(of),
            SortKey::Measure(_) => "that".to_owned(),
        };
        let way = if order.descending { "most" } else { "least" };
        text.push_str(&format!(", {way} {key} first"));
    }
    if let Some(limit) = plan.limit {
        text.push_str(&format!(", the first {limit}"));
    }
    let shown: Vec<String> = plan
        .columns
        .iter()
        .filter_map(|c| match c {
            Column::Value(of) if !of.is_empty() => Some(path(of)),
            _ => None,
        })
        .collect();
    if !shown.is_empty() {
        text.push_str(&format!(", showing {}", shown.join(", ")));
    }
    text.push_str(" -> ");
    text.push_str(&samples(plan, answers, name_of));
    text
}

/// One condition in words.
fn condition(
    constraint: &Constraint,
    path: &dyn Fn(&[crate::plan::Step]) -> String,
    value: &dyn Fn(&Value) -> String,
) -> String {
    match constraint {
        Constraint::Reaches { path: p, any_of } => format!(
            "{} is {}",
            path(p),
            any_of.iter().map(value).collect::<Vec<_>>().join(" or ")
        ),
        Constraint::Compare {
            path: p,
            op,
            value: v,
        } => {
            format!("{} {} {}", path(p), op.symbol(), value(v))
        }
        Constraint::CompareValues { left, op, right } => {
            format!("{} {} {}", path(left), op.symbol(), path(right))
        }
        Constraint::Contains { path: p, text } => format!("{} contains \"{text}\"", path(p)),
        Constraint::IsA { path: p, classes } => format!(
            "{} is a {}",
            path(p),
            classes
                .iter()
                .map(|c| local_name(c))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        Constraint::Exists { path: p } => format!("has {}", path(p)),
        Constraint::Not(inner) => format!("not ({})", condition(inner, path, value)),
    }
}

/// The answer in a few values: yes or no, or the first rows' cells.
fn samples(plan: &QueryPlan, answers: &AnswerSet, name_of: &dyn Fn(&str) -> String) -> String {
    if plan.form == Form::Ask || answers.boolean.is_some() {
        return if answers.boolean == Some(true) {
            "yes"
        } else {
            "no"
        }
        .to_owned();
    }
    let cell = |c: &Option<String>| match c.as_deref() {
        None => "-".to_owned(),
        Some(v) if v.contains("://") || v.starts_with("urn:") => name_of(v),
        Some(v) => v.to_owned(),
    };
    let rows: Vec<String> = answers
        .rows
        .iter()
        .take(SAMPLES)
        .map(|row| row.iter().map(cell).collect::<Vec<_>>().join(" | "))
        .collect();
    let more = answers.rows.len().saturating_sub(SAMPLES);
    if more > 0 || answers.truncated {
        format!("{}; {} answers in all", rows.join("; "), answers.rows.len())
    } else {
        rows.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Step;
    use kgfuse_lexicon::testing::{LIBRARY, Scripted, with_turtle};

    fn books_where(property: &str, value: &str) -> Planned {
        Planned {
            plan: QueryPlan {
                classes: vec!["http://example.org/library/Book".into()],
                constraints: vec![Constraint::Reaches {
                    path: vec![Step::forward(&format!(
                        "http://example.org/library/{property}"
                    ))],
                    any_of: vec![Value::text(value)],
                }],
                ..QueryPlan::default()
            },
            score: 1.0,
        }
    }

    /// The readings are the plans that answered, each once; the model sees
    /// them as sentences in the store's names with their answers by name, and
    /// its choice is the reading's index.
    #[tokio::test]
    async fn the_model_picks_one_of_the_answered_readings() {
        let (_dir, store) = with_turtle(LIBRARY).await;
        let planned = [
            books_where("writer", "Mara Holt"),
            books_where("writer", "Nobody"),
            books_where("writer", "Mara Holt"),
            books_where("genre", "poetry"),
        ];
        let readings = answered_readings(&store, &planned).expect("run");
        assert_eq!(
            readings.len(),
            2,
            "no rows and the same rows are no readings"
        );
        let model = Scripted::new(&[]).choosing(Some(1));
        let (chosen, trace) =
            choose(&store, &model, "Which poetry books are there?", &readings).expect("choose");
        assert_eq!(chosen, Some(1));
        let asked = model.choice_requests();
        assert_eq!(asked.len(), 1);
        let sentences = &asked[0].readings;
        assert!(
            sentences[0].contains("writer is \"Mara Holt\""),
            "{sentences:?}"
        );
        assert!(
            sentences[1].contains("genre is \"poetry\""),
            "{sentences:?}"
        );
        assert!(sentences[1].contains("Salt Winds"), "{sentences:?}");
        assert!(
            trace
                .kept
                .iter()
                .any(|k| k == "chose reading 2 (0.0 s)" || k.starts_with("chose reading 2"))
        );

        // A model that cannot choose is not asked; the graph's best stands.
        let offline = kgfuse_llm::RuleBased::default();
        let (chosen, _) =
            choose(&store, &offline, "Which poetry books are there?", &readings).expect("choose");
        assert_eq!(chosen, None);
    }
}
