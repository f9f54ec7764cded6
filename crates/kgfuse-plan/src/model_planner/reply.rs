//! A model's reading, as the JSON `prompts/read_question.md` describes: a plan,
//! read into a [`QueryPlan`] over the menu's IRIs, and its gist (the names its
//! conditions mention). Every name of the plan is looked up; an
//! unknown one is an error the model is told about.

use super::menu::Menu;
use crate::plan::{
    Aggregation, Column, Comparison, Constraint, Form, Grouping, Measure, Order, Path, QueryPlan,
    SetFunction, SortKey, Step, Value,
};
use kgfuse_core::vocab::XSD;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The plan as the model writes it.
#[derive(Debug, Deserialize)]
struct Reply {
    answer: String,
    class: Option<String>,
    #[serde(default, rename = "where")]
    conditions: Vec<Condition>,
    group: Option<Group>,
    order: Option<OrderBy>,
    limit: Option<usize>,
    offset: Option<usize>,
    #[serde(default)]
    show: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Condition {
    #[serde(default)]
    not: bool,
    path: String,
    is: Option<String>,
    op: Option<String>,
    value: Option<serde_json::Value>,
    than: Option<String>,
    contains: Option<String>,
    exists: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Group {
    function: String,
    of: String,
    per: String,
    having: Option<Having>,
}

#[derive(Debug, Deserialize)]
struct Having {
    op: String,
    value: serde_json::Value,
}

#[derive(Debug, Deserialize)]
struct OrderBy {
    by: String,
    desc: bool,
}

/// What a reading says of its question besides the plan to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gist {
    /// The entities its conditions name (`"is"`) and the texts they look for
    /// (`"contains"`), trimmed, each once, in the reply's order.
    pub names: Vec<String>,
    /// The plan asks for nothing: no class, no condition, no grouping.
    pub no_plan: bool,
}

#[derive(Debug, Deserialize)]
struct GistReply {
    #[serde(default)]
    class: Option<serde_json::Value>,
    #[serde(default, rename = "where")]
    conditions: Vec<serde_json::Value>,
    #[serde(default)]
    group: Option<serde_json::Value>,
}

/// The reply's gist; a reply that is not a JSON object has an empty gist.
/// Read leniently: a plan that names an unknown property still tells which
/// entities the model saw in the question.
pub fn gist(reply: &str) -> Gist {
    let Ok(parsed) = serde_json::from_str::<GistReply>(reply) else {
        return Gist::default();
    };
    let mut names: Vec<String> = Vec::new();
    let named = parsed.conditions.iter().flat_map(|condition| {
        ["is", "contains"]
            .into_iter()
            .filter_map(|key| condition.get(key)?.as_str())
    });
    for name in named {
        let name = name.trim();
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    let no_plan = parsed.class.is_none_or(|c| c.is_null())
        && parsed.conditions.is_empty()
        && parsed.group.is_none();
    Gist { names, no_plan }
}

/// The names a reply may use: the menu's, and the question's entities (a name
/// to every node it may mean).
pub struct Names<'a> {
    /// The store's menu.
    pub menu: &'a Menu,
    /// Entity names to IRIs.
    pub entities: &'a BTreeMap<String, Vec<String>>,
}

/// The reply's plan, or what is wrong with it (told to the model).
pub fn plan(reply: &str, names: &Names) -> Result<QueryPlan, String> {
    let reply: Reply = serde_json::from_str(reply)
        .map_err(|e| format!("the plan is not of the form asked: {e}"))?;
    let mut plan = QueryPlan {
        form: match reply.answer.as_str() {
            "yes/no" => Form::Ask,
            _ => Form::Select,
        },
        limit: reply.limit,
        offset: reply.offset,
        ..QueryPlan::default()
    };
    if let Some(class) = &reply.class {
        let iri = names
            .menu
            .classes
            .get(class)
            .ok_or_else(|| format!("there is no class {class}"))?;
        plan.classes.push(iri.clone());
    }
    for condition in &reply.conditions {
        plan.constraints.push(constraint(condition, names)?);
    }
    if plan.classes.is_empty() && plan.constraints.is_empty() {
        return Err("the plan says nothing of its answers: name their class or a condition".into());
    }
    let shown = reply
        .show
        .iter()
        .map(|p| path(p, names))
        .collect::<Result<Vec<_>, _>>()?;
    match &reply.group {
        Some(group) => grouped(&mut plan, group, shown, names)?,
        None => plan.columns = shown.into_iter().map(Column::Value).collect(),
    }
    if let Some(order) = &reply.order {
        let key = if order.by == "measure" {
            if plan.aggregation.is_none() {
                return Err("\"by\": \"measure\" needs a group".into());
            }
            SortKey::Measure(0)
        } else {
            SortKey::Value(path(&order.by, names)?)
        };
        plan.order = Some(Order {
            key,
            descending: order.desc,
        });
    }
    Ok(plan)
}

/// The group's measure, grouping and condition, and the columns it shows: the
/// group (the answer or the value it is per), the paths shown, the measure.
fn grouped(
    plan: &mut QueryPlan,
    group: &Group,
    shown: Vec<Path>,
    names: &Names,
) -> Result<(), String> {
    let function = match group.function.as_str() {
        "count" => SetFunction::Count,
        "sum" => SetFunction::Sum,
        "avg" => SetFunction::Avg,
        "min" => SetFunction::Min,
        "max" => SetFunction::Max,
        other => return Err(format!("there is no function {other}")),
    };
    let of = match group.of.as_str() {
        "answer" => Path::new(),
        walk => path(walk, names)?,
    };
    let (grouping, mut columns) = match group.per.as_str() {
        "all" => (Grouping::All, Vec::new()),
        "answer" if shown.is_empty() => (Grouping::PerAnswer, vec![Column::Value(Path::new())]),
        "answer" => (Grouping::PerAnswer, Vec::new()),
        walk => {
            let per = path(walk, names)?;
            (Grouping::PerValue(per.clone()), vec![Column::Value(per)])
        }
    };
    if grouping != Grouping::All {
        columns.extend(shown.into_iter().map(Column::Value));
    }
    columns.push(Column::Measure(0));
    let having = match &group.having {
        Some(having) => Some((0, comparison(&having.op)?, number(&having.value)?)),
        None => None,
    };
    plan.aggregation = Some(Aggregation {
        measures: vec![Measure { function, of }],
        group: grouping,
        having,
    });
    plan.columns = columns;
    Ok(())
}

/// One condition as a constraint, negated when it says `not`.
fn constraint(condition: &Condition, names: &Names) -> Result<Constraint, String> {
    let walk = path(&condition.path, names)?;
    let made = if let Some(entity) = &condition.is {
        let iris = names
            .entities
            .get(entity)
            .ok_or_else(|| format!("there is no entity {entity:?} in the question"))?;
        Constraint::Reaches {
            path: walk,
            any_of: iris.iter().map(|iri| Value::iri(iri)).collect(),
        }
    } else if let Some(text) = &condition.contains {
        Constraint::Contains {
            path: walk,
            text: text.clone(),
        }
    } else if let Some(op) = &condition.op {
        let op = comparison(op)?;
        match (&condition.value, &condition.than) {
            (_, Some(other)) => Constraint::CompareValues {
                left: walk,
                op,
                right: path(other, names)?,
            },
            // A text is compared as the data writes it only in order; for
            // (in)equality, any case and a part will do ("Oslo" for "OSLO").
            (Some(serde_json::Value::String(text)), None)
                if matches!(op, Comparison::Equal | Comparison::NotEqual)
                    && date_datatype(text).is_none() =>
            {
                let contains = Constraint::Contains {
                    path: walk,
                    text: text.clone(),
                };
                if op == Comparison::Equal {
                    contains
                } else {
                    Constraint::Not(Box::new(contains))
                }
            }
            (Some(value), None) => Constraint::Compare {
                path: walk,
                op,
                value: literal(value)?,
            },
            (None, None) => return Err(format!("{:?} compares with nothing", condition.path)),
        }
    } else if condition.exists.is_some() {
        Constraint::Exists { path: walk }
    } else {
        return Err(format!(
            "the condition on {:?} says nothing of it",
            condition.path
        ));
    };
    Ok(if condition.not {
        Constraint::Not(Box::new(made))
    } else {
        made
    })
}

/// A path: `.` the answer, else steps joined by `/`, `^` for a step backwards.
fn path(text: &str, names: &Names) -> Result<Path, String> {
    if text == "." {
        return Ok(Path::new());
    }
    text.split('/')
        .map(|step| {
            let (name, inverse) = match step.strip_prefix('^') {
                Some(name) => (name, true),
                None => (step, false),
            };
            let iri = names
                .menu
                .properties
                .get(name)
                .ok_or_else(|| format!("there is no property {name}"))?;
            Ok(if inverse {
                Step::back(iri)
            } else {
                Step::forward(iri)
            })
        })
        .collect()
}

fn comparison(op: &str) -> Result<Comparison, String> {
    Ok(match op {
        "=" => Comparison::Equal,
        "!=" => Comparison::NotEqual,
        "<" => Comparison::Less,
        "<=" => Comparison::LessOrEqual,
        ">" => Comparison::Greater,
        ">=" => Comparison::GreaterOrEqual,
        other => return Err(format!("there is no comparison {other}")),
    })
}

/// A number as an `xsd:integer` or `xsd:decimal` literal.
fn number(value: &serde_json::Value) -> Result<Value, String> {
    match value {
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => {
            Ok(Value::typed(&n.to_string(), &format!("{XSD}integer")))
        }
        serde_json::Value::Number(n) => Ok(Value::typed(&n.to_string(), &format!("{XSD}decimal"))),
        other => Err(format!("{other} is not a number")),
    }
}

/// A number, a date (`2020-01-31`, with a time or not) or a text.
fn literal(value: &serde_json::Value) -> Result<Value, String> {
    match value {
        serde_json::Value::String(text) => Ok(match date_datatype(text) {
            Some(datatype) => Value::typed(text, &format!("{XSD}{datatype}")),
            None => Value::text(text),
        }),
        other => number(other),
    }
}

/// `date` or `dateTime` for a text written as one.
fn date_datatype(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    let is_date = bytes.len() >= 10
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10);
    match (is_date, bytes.len()) {
        (true, 10) => Some("date"),
        (true, _) if bytes[10] == b'T' => Some("dateTime"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EX: &str = "http://ex.org/";

    fn menu() -> Menu {
        let mut menu = Menu::default();
        for class in ["Film", "Person", "Studio"] {
            menu.classes.insert(class.into(), format!("{EX}{class}"));
        }
        for property in [
            "director",
            "runtime",
            "budget",
            "boxOffice",
            "name",
            "studio",
            "title",
        ] {
            menu.properties
                .insert(property.into(), format!("{EX}{property}"));
        }
        menu
    }

    fn read(reply: &str) -> Result<QueryPlan, String> {
        let menu = menu();
        let entities = BTreeMap::from([("Ava Lind".to_owned(), vec![format!("{EX}ava")])]);
        plan(
            reply,
            &Names {
                menu: &menu,
                entities: &entities,
            },
        )
    }

    #[test]
    fn a_lookup_a_count_and_a_superlative_read_into_plans() {
        let lookup = read(r#"{"answer": "rows", "class": "Film", "where": [{"path": "director", "is": "Ava Lind"}]}"#)
            .expect("a plan");
        assert_eq!(lookup.classes, vec![format!("{EX}Film")]);
        assert_eq!(
            lookup.constraints,
            vec![Constraint::Reaches {
                path: vec![Step::forward(&format!("{EX}director"))],
                any_of: vec![Value::iri(&format!("{EX}ava"))],
            }]
        );
        let count = read(r#"{"answer": "rows", "class": "Film", "group": {"function": "count", "of": "answer", "per": "all"}}"#)
            .expect("a plan");
        let aggregation = count.aggregation.expect("a count");
        assert_eq!(aggregation.group, Grouping::All);
        // One row: the count alone, not one per film.
        assert_eq!(count.columns, vec![Column::Measure(0)]);
        let longest = read(r#"{"answer": "rows", "class": "Film", "order": {"by": "runtime", "desc": true}, "limit": 1}"#)
            .expect("a plan");
        assert_eq!(longest.limit, Some(1));
        assert!(longest.order.expect("an order").descending);
    }

    #[test]
    fn a_group_per_answer_shows_the_answer_or_the_asked_columns_then_the_measure() {
        let per_director = read(r#"{"answer": "rows", "class": "Person", "group": {"function": "count", "of": "^director", "per": "answer", "having": {"op": ">", "value": 3}}, "show": ["name"]}"#)
            .expect("a plan");
        assert_eq!(
            per_director.columns,
            vec![
                Column::Value(vec![Step::forward(&format!("{EX}name"))]),
                Column::Measure(0)
            ]
        );
        let aggregation = per_director.aggregation.expect("grouped");
        assert_eq!(
            aggregation.measures[0].of,
            vec![Step::back(&format!("{EX}director"))]
        );
        assert_eq!(aggregation.having.expect("having").1, Comparison::Greater);
        let per_studio = read(r#"{"answer": "rows", "class": "Film", "group": {"function": "avg", "of": "budget", "per": "studio"}}"#)
            .expect("a plan");
        assert_eq!(
            per_studio.columns,
            vec![
                Column::Value(vec![Step::forward(&format!("{EX}studio"))]),
                Column::Measure(0)
            ]
        );
    }

    #[test]
    fn comparisons_negations_and_texts_become_their_constraints() {
        let plan = read(r#"{"answer": "yes/no", "class": "Film", "where": [{"path": "boxOffice", "op": "<", "than": "budget"}, {"not": true, "path": "director", "exists": true}, {"path": "studio/name", "op": "=", "value": "nordlys"}, {"path": "runtime", "op": ">=", "value": 90.5}]}"#)
            .expect("a plan");
        assert_eq!(plan.form, Form::Ask);
        assert!(matches!(
            plan.constraints[0],
            Constraint::CompareValues { .. }
        ));
        assert!(
            matches!(&plan.constraints[1], Constraint::Not(inner) if matches!(**inner, Constraint::Exists { .. }))
        );
        // A text said equal matches in any case, as a part.
        assert!(
            matches!(&plan.constraints[2], Constraint::Contains { text, path } if text == "nordlys" && path.len() == 2)
        );
        assert!(
            matches!(&plan.constraints[3], Constraint::Compare { value: Value::Literal { datatype: Some(d), .. }, .. } if d.ends_with("decimal"))
        );
    }

    #[test]
    fn unknown_names_and_unusable_shapes_are_told_back() {
        let unknown = read(r#"{"answer": "rows", "class": "Planet"}"#).expect_err("refused");
        assert!(unknown.contains("no class Planet"), "{unknown}");
        let property =
            read(r#"{"answer": "rows", "class": "Film", "show": ["orbit"]}"#).expect_err("refused");
        assert!(property.contains("no property orbit"), "{property}");
        let entity = read(
            r#"{"answer": "rows", "class": "Film", "where": [{"path": "director", "is": "Bo"}]}"#,
        )
        .expect_err("refused");
        assert!(entity.contains("no entity \"Bo\""), "{entity}");
        let measure = read(
            r#"{"answer": "rows", "class": "Film", "order": {"by": "measure", "desc": true}}"#,
        )
        .expect_err("refused");
        assert!(measure.contains("needs a group"), "{measure}");
        let empty = read(r#"{"answer": "rows", "class": "Film", "where": [{"path": "title"}]}"#)
            .expect_err("refused");
        assert!(empty.contains("says nothing"), "{empty}");
        assert!(read("not json").is_err());
        let nothing = read(r#"{"answer": "rows", "class": null}"#).expect_err("refused");
        assert!(nothing.contains("says nothing"), "{nothing}");
    }

    #[test]
    fn dates_are_typed_and_other_texts_are_plain() {
        assert_eq!(date_datatype("2020-01-31"), Some("date"));
        assert_eq!(date_datatype("2020-01-31T10:00:00"), Some("dateTime"));
        assert_eq!(date_datatype("2020"), None);
        assert_eq!(date_datatype("Oslo and more"), None);
    }

    #[test]
    fn a_gist_names_the_entities_and_texts_of_the_conditions_once() {
        let said = gist(
            r#"{"answer": "rows", "class": "Film", "where": [{"path": "director", "is": "Ava Lind"}, {"path": "title", "contains": " night "}, {"path": "actor", "is": "Ava Lind"}, {"path": "runtime", "op": ">", "value": 90}]}"#,
        );
        assert_eq!(said.names, ["Ava Lind", "night"]);
        assert!(!said.no_plan);
        assert!(gist(r#"{"answer": "rows", "class": null}"#).no_plan);
        assert_eq!(gist("not json"), Gist::default());
    }
}
