//! The offline planner: a question's words to ranked [`QueryPlan`]s, with no
//! model.
//!
//! 1. **Cues** ([`Cues`]): the shape the words ask for (yes or no, how many, the
//!    most, more than N, no X, per X, which columns).
//! 2. **Classes**: the linked classes, split into the answer's (the one asked
//!    about: "which departments", "how many students") and a related one ("the
//!    most *students*", "more than 10 *students*").
//! 3. **Profile** ([`probe::profile`]): which properties the answer class's
//!    members use, in which direction, towards which classes, with numbers.
//! 4. **Anchors** ([`probe::entity_paths`]): each linked entity becomes a
//!    constraint along the walk the data has from the answer class to it,
//!    walks over the properties the question names first.
//! 5. **Shape**: counts, set functions, grouping, order and limit, comparisons,
//!    negation and columns, each from its cue and the profile.
//!
//! Plans are ranked; [`answer`] runs them best first and keeps the first that
//! returns rows.

pub mod probe;
pub mod values;

use crate::RetrieveError;
use crate::cues::{Cues, Direction, NumberComparison};
use crate::plan::{
    Aggregation, Column, CompileOptions, Constraint, Form, Grouping, Measure, Order, Path,
    QueryPlan, SetFunction, SortKey, Step, Value,
};
use kgfuse_core::context::{AnswerSet, Dropped, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::Term;
use kgfuse_graph::{QueryOutcome, query_vocabulary};
use kgfuse_lexicon::lexicon::Lexicon;
use kgfuse_lexicon::lexicon::analyze::{analyze, stem};
use kgfuse_lexicon::linking::{Candidate, Linked, Mention, WHOLE_NAME};
use kgfuse_store::Store;
use probe::{EntityPath, Profile, PropertyUse, Start};

/// The trace stage's name.
pub const STAGE: &str = "plan";
/// `AnswerSet::source` of the planner's answers.
pub const SOURCE: &str = "planner";
/// Most rows an answer keeps.
pub const MAX_ROWS: usize = 1_000;
/// Most plans run for one question.
const MAX_RUNS: usize = 6;
/// A class linked with this score is named whole.
const WHOLE_CLASS: f32 = 0.99;
/// Classes named by the same words within this share of a whole name stay.
const CLASS_TIE: f32 = 0.95;
/// A property shown as a column is named at least this much ("e-mail
/// addresses" for `emailAddress`).
const MOST_OF_A_NAME: f32 = 0.5;
/// How many walks to each anchor are tried.
const PATHS_PER_ANCHOR: usize = 2;
/// Most choices of walks kept while the anchors are added: each mention
/// multiplies them by up to [`PATHS_PER_ANCHOR`], so a long question (a code
/// snippet names dozens of things) would make billions. The best ones are
/// kept, and a plan runs from the first [`MAX_RUNS`] of them.
const MAX_CHOICES: usize = 64;

/// A plan with how much of the question it uses.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The plan.
    pub plan: QueryPlan,
    /// Higher first.
    pub score: f32,
}

/// What the planner read about a question, computed once and passed down.
struct Reading<'a> {
    cues: &'a Cues,
    linked: &'a Linked,
    lexicon: &'a Lexicon,
    /// The answer's classes (any of them).
    answer: Vec<String>,
    /// Another class the question counts or compares ("the most students").
    related: Option<ClassWords>,
    /// Runs of the question's words the data holds as literal values.
    values: Vec<values::ValueMention>,
    /// The answers: the answer classes' members, or with no class the entity
    /// the question asks about.
    start: Start,
    profile: Profile,
}

/// Classes named by the same words.
#[derive(Debug, Clone)]
struct ClassWords {
    classes: Vec<String>,
    words: Vec<usize>,
}

/// The question's plans, best first, with the trace of how they were made. No
/// plan when the question is a lookup with no class (the query graphs answer
/// those) or names nothing of the store.
pub fn plans(
    store: &Store,
    cues: &Cues,
    linked: &Linked,
) -> Result<(Vec<Planned>, TraceStage), RetrieveError> {
    let lexicon = Lexicon::of(store)?;
    let mut trace = TraceStage {
        stage: STAGE.into(),
        ..TraceStage::default()
    };
    let (mut answer, mut related) = classes(cues, linked);
    if let Some(counted) = counted_class(&lexicon, cues, linked) {
        if answer.is_empty() {
            answer = counted.classes;
        } else if related.is_none() {
            related = Some(counted);
        }
    }
    if answer.is_empty() && !cues.is_lookup() {
        answer = owner_of_named_property(store, linked)?;
    }
    if cues.is_lookup() && answer.is_empty() && !several_attributes_of_one_entity(linked) {
        trace
            .kept
            .push("a lookup without a class: the query graphs answer it".into());
        return Ok((Vec::new(), trace));
    }
    if answer.is_empty() && linked.mentions.iter().all(|m| m.qualifier) {
        trace
            .kept
            .push("no class and no entity of the store named: nothing to plan".into());
        return Ok((Vec::new(), trace));
    }
    let start = if answer.is_empty() {
        let first = linked.mentions.iter().find(|m| !m.qualifier);
        Start::Nodes(
            first
                .map(|m| m.candidates.iter().map(|c| c.iri.clone()).collect())
                .unwrap_or_default(),
        )
    } else {
        Start::Classes(answer.clone())
    };
    let profile = probe::profile(store, &start)?;
    let values = values::quoted_values(store, cues, linked)?;
    for value in &values {
        trace.kept.push(format!(
            "value at words {:?}: {}",
            value.words,
            value
                .literals
                .iter()
                .map(|l| format!("{l:?}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    let reading = Reading {
        cues,
        linked,
        lexicon: &lexicon,
        answer,
        related,
        start,
        profile,
        values,
    };
    let anchors = anchors(store, &reading)?;
    let mut planned = Vec::new();
    for (constraints, score) in anchors {
        if let Some(plan) = shape(&reading, constraints, &mut trace) {
            planned.push(Planned { plan, score });
        }
    }
    planned.sort_by(|a, b| b.score.total_cmp(&a.score));
    planned.dedup_by(|a, b| a.plan == b.plan);
    trace.kept.push(format!(
        "answer classes {:?}, related {:?}, {} plans",
        reading.answer,
        reading.related.as_ref().map(|r| &r.classes),
        planned.len()
    ));
    Ok((planned, trace))
}

/// Stage 2: the answer's classes and a related class, each a group of classes
/// named by the same words. The answer's is the group the question asks for
/// ("which X", "how many X"), else the first named.
fn classes(cues: &Cues, linked: &Linked) -> (Vec<String>, Option<ClassWords>) {
    let mut groups: Vec<(ClassWords, bool)> = Vec::new();
    for class in &linked.classes {
        // A class inside an entity's words is the entity's ("FullProfessor2").
        if linked
            .mentions
            .iter()
            .filter(|m| !is_number_mention(cues, m))
            .any(|m| class.words.iter().all(|w| m.words.contains(w)))
        {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| g.words == class.words) {
            Some((group, asked)) => {
                group.classes.push(class.iri.clone());
                *asked |= class.asked;
            }
            None => groups.push((
                ClassWords {
                    classes: vec![class.iri.clone()],
                    words: class.words.clone(),
                },
                class.asked,
            )),
        }
    }
    groups.sort_by_key(|(g, _)| g.words.first().copied().unwrap_or(usize::MAX));
    // Of the classes named by the same words, the ones named whole: "merchants"
    // is the merchant class, not "merchant category" named in part. Classes
    // all named in part ("students": graduate and undergraduate) all stay.
    for (group, _) in &mut groups {
        let score = |iri: &String| {
            linked
                .classes
                .iter()
                .find(|c| &c.iri == iri)
                .map_or(0.0, |c| c.score)
        };
        let best = group.classes.iter().map(score).fold(0.0, f32::max);
        if best >= WHOLE_CLASS {
            group.classes.retain(|c| score(c) >= best * CLASS_TIE);
        }
    }
    let counted = cues.count.map(|at| at + 2);
    let answer_at = groups
        .iter()
        .position(|(g, _)| {
            counted.is_some_and(|at| g.words.first().is_some_and(|w| *w <= at + 1 && *w >= at))
        })
        .or_else(|| groups.iter().position(|(_, asked)| *asked))
        .unwrap_or(0);
    if groups.is_empty() {
        return (Vec::new(), None);
    }
    // "the average price per category": the class after "per" is what the
    // answers are grouped by; the answers are what has the price.
    let per_only = cues.per.is_some_and(|at| {
        groups.len() == 1
            && groups[0]
                .0
                .words
                .first()
                .is_some_and(|&w| w >= at && w <= at + 2)
    });
    if per_only {
        return (Vec::new(), groups.pop().map(|(g, _)| g));
    }
    let (answer, _) = groups.remove(answer_at);
    let related = groups.into_iter().map(|(g, _)| g).next();
    (answer.classes, related)
}

/// "What are the fixed amount and the rate of fee rule 10?": one entity and
/// two or more of its properties, which one query graph (one answer column)
/// cannot show.
fn several_attributes_of_one_entity(linked: &Linked) -> bool {
    let mut mentions = linked.mentions.iter().filter(|m| !m.qualifier);
    let (Some(mention), None) = (mentions.next(), mentions.next()) else {
        return false;
    };
    linked
        .properties
        .iter()
        .filter(|p| {
            p.name_coverage >= MOST_OF_A_NAME && !p.words.iter().any(|w| mention.words.contains(w))
        })
        .count()
        >= 2
}

/// The class a compared number counts when linking took its words for a
/// node: "more than 140 graduate students" read as `GraduateStudent140`.
fn counted_class(lexicon: &Lexicon, cues: &Cues, linked: &Linked) -> Option<ClassWords> {
    let mention = linked
        .mentions
        .iter()
        .find(|m| is_number_mention(cues, m))?;
    let words: Vec<usize> = mention
        .words
        .iter()
        .copied()
        .filter(|w| !cues.numbers.iter().any(|n| n.number_word == *w))
        .collect();
    let text: Vec<&str> = words
        .iter()
        .filter_map(|&w| cues.words.get(w).map(String::as_str))
        .collect();
    let terms: Vec<kgfuse_lexicon::lexicon::analyze::Term> = analyze(&text.join(" "))
        .into_iter()
        .map(|mut t| {
            t.word = words.get(t.word).copied().unwrap_or(t.word);
            t
        })
        .collect();
    let matches = lexicon
        .name_matches(&terms, kgfuse_lexicon::lexicon::Role::Class)
        .ok()?;
    let best = matches.iter().map(|m| m.score()).fold(0.0, f32::max);
    let classes: Vec<String> = matches
        .iter()
        .filter(|m| best > 0.0 && m.score() >= best * CLASS_TIE)
        .map(|m| m.entry.iri.clone())
        .collect();
    (!classes.is_empty()).then_some(ClassWords { classes, words })
}

/// The class whose members have the first property the question names ("the
/// average *price*" of what has one), when the question names no class.
fn owner_of_named_property(store: &Store, linked: &Linked) -> Result<Vec<String>, RetrieveError> {
    let Some(property) = linked.properties.first() else {
        return Ok(Vec::new());
    };
    Ok(probe::subject_classes(store, &property.iri)?
        .into_iter()
        .take(1)
        .collect())
}

/// Stage 4: the constraints that tie the answer to the question's entities,
/// one set per choice of walks, with a score. One empty set when the question
/// names no entity.
fn anchors(store: &Store, reading: &Reading) -> Result<Vec<(Vec<Constraint>, f32)>, RetrieveError> {
    let mut choices: Vec<(Vec<Constraint>, f32)> = vec![(Vec::new(), 1.0)];
    // A node named in part gives way to what names the same words whole: a
    // value the data holds ("English" the language, not the channel "English
    // Rock TV"), a class or a property ("TV" in "TV channels").
    let partial = |m: &Mention| m.candidates.iter().all(|c| c.name_coverage < WHOLE_NAME);
    let named_otherwise = |m: &Mention| {
        let within = |words: &[usize]| m.words.iter().all(|w| words.contains(w));
        reading.values.iter().any(|v| within(&v.words))
            || reading
                .linked
                .classes
                .iter()
                .chain(&reading.linked.properties)
                .any(|c| c.name_coverage >= WHOLE_NAME && within(&c.words))
    };
    let mentions: Vec<&Mention> = reading
        .linked
        .mentions
        .iter()
        .filter(|m| !m.qualifier && !is_number_mention(reading.cues, m))
        .filter(|m| !(partial(m) && named_otherwise(m)))
        .collect();
    for (i, mention) in mentions.iter().enumerate() {
        let nodes: Vec<String> = mention.candidates.iter().map(|c| c.iri.clone()).collect();
        let negated = negated(reading.cues, &mention.words);
        // With no class, the answer is the entity the question asks about
        // ("Is Anna a member of Sales?" walks from Anna).
        if reading.answer.is_empty() && i == 0 {
            for choice in &mut choices {
                choice.0.push(Constraint::Reaches {
                    path: Vec::new(),
                    any_of: nodes.iter().map(|n| Value::iri(n)).collect(),
                });
            }
            continue;
        }
        let start = &reading.start;
        let mut paths = probe::entity_paths(store, start, &nodes)?;
        rank_paths(&mut paths, reading.linked);
        if paths.is_empty() {
            // No member reaches it: the walk the schema has to its class, so
            // that the answer is "none" or "no" rather than the entity ignored.
            let types = probe::types_of(store, &nodes)?;
            paths = reading
                .profile
                .towards(&types)
                .into_iter()
                .take(1)
                .map(|u| EntityPath {
                    steps: vec![u.step.clone()],
                    count: 0,
                })
                .collect();
        }
        if paths.is_empty() && partial(mention) {
            // A node named only in part that nothing reaches is a wrong
            // anchor: it costs this reading, not the question.
            continue;
        }
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut next = Vec::new();
        for (constraints, score) in &choices {
            for (rank, path) in paths.iter().take(PATHS_PER_ANCHOR).enumerate() {
                let reaches = Constraint::Reaches {
                    path: path.steps.clone(),
                    any_of: nodes.iter().map(|n| Value::iri(n)).collect(),
                };
                let constraint = if negated {
                    Constraint::Not(Box::new(reaches))
                } else {
                    reaches
                };
                let mut constraints = constraints.clone();
                constraints.push(constraint);
                next.push((
                    constraints,
                    score - 0.1 * rank as f32 - 0.05 * (path.steps.len() - 1) as f32,
                ));
            }
        }
        choices = best_choices(next);
    }
    for value in &reading.values {
        choices = value_anchor(store, reading, value, choices)?;
    }
    Ok(choices)
}

/// The choices extended by a value the question quotes: the walks from the
/// answer to that value (`?x language "English"`, or one node further). A value
/// no walk reaches is left out: it is not what the question is about here.
fn value_anchor(
    store: &Store,
    reading: &Reading,
    value: &values::ValueMention,
    choices: Vec<(Vec<Constraint>, f32)>,
) -> Result<Vec<(Vec<Constraint>, f32)>, RetrieveError> {
    let targets: Vec<Term> = value
        .literals
        .iter()
        .filter_map(|l| l.term().ok())
        .collect();
    let mut paths = probe::paths_to(store, &reading.start, &targets)?;
    rank_paths(&mut paths, reading.linked);
    if paths.is_empty() {
        return Ok(choices);
    }
    let negated = negated(reading.cues, &value.words);
    let mut next = Vec::new();
    for (constraints, score) in &choices {
        for (rank, path) in paths.iter().take(PATHS_PER_ANCHOR).enumerate() {
            let reaches = Constraint::Reaches {
                path: path.steps.clone(),
                any_of: value.literals.clone(),
            };
            let mut constraints = constraints.clone();
            constraints.push(if negated {
                Constraint::Not(Box::new(reaches))
            } else {
                reaches
            });
            next.push((
                constraints,
                score - 0.1 * rank as f32 - 0.05 * (path.steps.len() - 1) as f32,
            ));
        }
    }
    Ok(best_choices(next))
}

/// The [`MAX_CHOICES`] best choices (by score, then by the order they were
/// made), in the order they were made. A score is a sum of one penalty per
/// anchor, so the best choices of all anchors extend the best choices of the
/// first ones: the ones dropped could never have ranked among the kept.
fn best_choices(mut made: Vec<(Vec<Constraint>, f32)>) -> Vec<(Vec<Constraint>, f32)> {
    if made.len() <= MAX_CHOICES {
        return made;
    }
    let mut order: Vec<usize> = (0..made.len()).collect();
    order.sort_by(|&a, &b| made[b].1.total_cmp(&made[a].1).then(a.cmp(&b)));
    order.truncate(MAX_CHOICES);
    order.sort_unstable();
    let mut kept = Vec::with_capacity(MAX_CHOICES);
    for (at, choice) in made.drain(..).enumerate() {
        if order.binary_search(&at).is_ok() {
            kept.push(choice);
        }
    }
    kept
}

/// A mention that takes in a number the question compares with: "more than
/// 140 graduate students" is not the node `GraduateStudent140`.
fn is_number_mention(cues: &Cues, mention: &Mention) -> bool {
    cues.numbers
        .iter()
        .any(|n| mention.words.contains(&n.number_word))
}

/// Walks over the properties the question names first, then shorter, then
/// more used.
fn rank_paths(paths: &mut [EntityPath], linked: &Linked) {
    let named = |p: &EntityPath| {
        p.steps
            .iter()
            .filter(|s| linked.properties.iter().any(|c| c.iri == s.property))
            .count()
    };
    paths.sort_by(|a, b| {
        named(b)
            .cmp(&named(a))
            .then(a.steps.len().cmp(&b.steps.len()))
            .then(b.count.cmp(&a.count))
    });
}

/// Whether a negation word stands at most three words before `words`.
fn negated(cues: &Cues, words: &[usize]) -> bool {
    let Some(&first) = words.first() else {
        return false;
    };
    cues.negations.iter().any(|&n| n < first && first - n <= 3)
}

/// Stage 5: the plan's shape around its anchors, from the cues. `None` when a
/// cue needs a property or class the question does not give.
fn shape(
    reading: &Reading,
    constraints: Vec<Constraint>,
    trace: &mut TraceStage,
) -> Option<QueryPlan> {
    let cues = reading.cues;
    let mut plan = QueryPlan {
        form: if cues.ask { Form::Ask } else { Form::Select },
        classes: reading.answer.clone(),
        constraints,
        ..QueryPlan::default()
    };
    comparisons(reading, &mut plan, trace)?;
    negations(reading, &mut plan);
    aggregation(reading, &mut plan, trace)?;
    order(reading, &mut plan, trace)?;
    columns(reading, &mut plan);
    Some(plan)
}

/// Comparisons with numbers (a measure of the answer, or how many related
/// nodes it has) and between two measures.
fn comparisons(reading: &Reading, plan: &mut QueryPlan, trace: &mut TraceStage) -> Option<()> {
    for number in &reading.cues.numbers {
        if let Some(related) = related_after(reading, number) {
            let i = count_related(reading, plan, related)?;
            if let Some(aggregation) = plan.aggregation.as_mut() {
                aggregation.having = Some((i, number.op, integer(&number.number)));
            }
            continue;
        }
        let Some(measure) = measure(reading, number.measure, number.word) else {
            trace.dropped.push(Dropped {
                iri: number.number.clone(),
                why: "a number compared with no measure of the answer found".into(),
            });
            return None;
        };
        plan.constraints.push(Constraint::Compare {
            path: vec![measure],
            op: number.op,
            value: decimal(&number.number),
        });
    }
    if let Some(compared) = &reading.cues.measures_compared {
        let left = measure(reading, compared.left, usize::MAX)?;
        let right = measure(reading, compared.right, usize::MAX)?;
        plan.constraints.push(Constraint::CompareValues {
            left: vec![left],
            op: compared.op,
            right: vec![right],
        });
    }
    Some(())
}

/// Counts, per answer, the nodes of the related class it reaches: a measure
/// of the plan's aggregation (made per answer), and the walk's end typed. The
/// measure's index.
fn count_related(reading: &Reading, plan: &mut QueryPlan, related: &ClassWords) -> Option<usize> {
    let path = towards(reading, &related.classes)?;
    plan.constraints.push(Constraint::IsA {
        path: path.clone(),
        classes: related.classes.clone(),
    });
    let aggregation = plan.aggregation.get_or_insert(Aggregation {
        measures: Vec::new(),
        group: Grouping::PerAnswer,
        having: None,
    });
    aggregation.measures.push(Measure {
        function: SetFunction::Count,
        of: path,
    });
    Some(aggregation.measures.len() - 1)
}

/// The related class named right after a number ("more than 10 students").
fn related_after<'a>(reading: &'a Reading, number: &NumberComparison) -> Option<&'a ClassWords> {
    reading.related.as_ref().filter(|r| {
        r.words
            .first()
            .is_some_and(|&w| w > number.number_word && w <= number.number_word + 2)
    })
}

/// "no manager", "without an advisor": the property or class the negation is
/// about, when it is not an entity (those were negated as anchors).
fn negations(reading: &Reading, plan: &mut QueryPlan) {
    for &at in &reading.cues.negations {
        let near = |words: &[usize]| words.first().is_some_and(|&w| w > at && w <= at + 3);
        if reading.linked.mentions.iter().any(|m| near(&m.words)) {
            continue;
        }
        if let Some(related) = reading.related.as_ref().filter(|r| near(&r.words))
            && let Some(path) = towards(reading, &related.classes)
        {
            plan.constraints
                .push(Constraint::Not(Box::new(Constraint::IsA {
                    path,
                    classes: related.classes.clone(),
                })));
            continue;
        }
        let property = reading
            .linked
            .properties
            .iter()
            .filter(|p| near(&p.words))
            .find_map(|p| {
                reading
                    .profile
                    .find(&p.iri)
                    .cloned()
                    .or_else(|| Some(any_use(&p.iri)))
            });
        if let Some(use_) = property {
            plan.constraints
                .push(Constraint::Not(Box::new(Constraint::Exists {
                    path: vec![use_.step.clone()],
                })));
        }
    }
}

/// A use of a property the sample did not show: outgoing.
fn any_use(property: &str) -> PropertyUse {
    PropertyUse {
        step: Step::forward(property),
        count: 0,
        numeric: 0,
        literal: 0,
        classes: Default::default(),
    }
}

/// Counts ("how many"), set functions ("average rate"), grouping ("per X").
fn aggregation(reading: &Reading, plan: &mut QueryPlan, trace: &mut TraceStage) -> Option<()> {
    let cues = reading.cues;
    let group = match cues.per {
        Some(at) => Some(group_by(reading, at)?),
        None => None,
    };
    let measure = if let Some((function, word)) = cues.function {
        let Some(step) = measure(reading, &[], word) else {
            trace.dropped.push(Dropped {
                iri: function.name().into(),
                why: "a set function with no measure of the answer found".into(),
            });
            return None;
        };
        Some(Measure {
            function,
            of: vec![step],
        })
    } else if cues.count.is_some() {
        Some(Measure {
            function: SetFunction::Count,
            of: Vec::new(),
        })
    } else {
        None
    };
    if let Some(measure) = measure {
        let aggregation = plan.aggregation.get_or_insert(Aggregation {
            measures: Vec::new(),
            group: Grouping::All,
            having: None,
        });
        aggregation.measures.insert(0, measure);
        if let Some(having) = aggregation.having.as_mut() {
            having.0 += 1;
        }
    }
    if let (Some(group), Some(aggregation)) = (group, plan.aggregation.as_mut()) {
        aggregation.group = Grouping::PerValue(group);
    }
    Some(())
}

/// The walk to what "per X" names: a class reached from the answer, or a
/// property of it.
fn group_by(reading: &Reading, at: usize) -> Option<Path> {
    let near = |words: &[usize]| words.first().is_some_and(|&w| w >= at && w <= at + 2);
    if let Some(related) = reading.related.as_ref().filter(|r| near(&r.words)) {
        return towards(reading, &related.classes);
    }
    reading
        .linked
        .properties
        .iter()
        .filter(|p| near(&p.words))
        .find_map(|p| reading.profile.find(&p.iri))
        .map(|u| vec![u.step.clone()])
}

/// Superlatives and top-N: by a measure of the answer, or by how many related
/// nodes it has ("the most students").
fn order(reading: &Reading, plan: &mut QueryPlan, trace: &mut TraceStage) -> Option<()> {
    let cues = reading.cues;
    plan.limit = cues.limit;
    plan.offset = cues.offset;
    let Some(superlative) = &cues.superlative else {
        return Some(());
    };
    if cues.function.is_some() {
        return Some(());
    }
    let descending = superlative.direction == Direction::Descending;
    let by_count = superlative.measure.is_empty()
        && reading
            .related
            .as_ref()
            .is_some_and(|r| r.words.first().is_some_and(|&w| w > superlative.word));
    if by_count {
        let related = reading.related.as_ref()?;
        let measure = count_related(reading, plan, related)?;
        plan.order = Some(Order {
            key: SortKey::Measure(measure),
            descending,
        });
        return Some(());
    }
    let Some(step) = measure(reading, superlative.measure, superlative.word) else {
        trace.dropped.push(Dropped {
            iri: cues
                .words
                .get(superlative.word)
                .cloned()
                .unwrap_or_default(),
            why: "a superlative with no measure of the answer found".into(),
        });
        return None;
    };
    plan.order = Some(Order {
        key: SortKey::Value(vec![step]),
        descending,
    });
    Some(())
}

/// The answer's columns: the answer itself (unless the question asks for its
/// attributes: "the names and e-mails *of* the lecturers"), its name when
/// names are asked for, the literal properties the question names, and the
/// measures when the question asks for a number.
fn columns(reading: &Reading, plan: &mut QueryPlan) {
    if plan.form == Form::Ask {
        return;
    }
    let grouped_by = plan.aggregation.as_ref().map(|a| a.group.clone());
    let answer_rows = !matches!(
        grouped_by,
        Some(Grouping::All) | Some(Grouping::PerValue(_))
    );
    let mut attributes = Vec::new();
    if answer_rows {
        if reading.cues.names
            && let Some(name) = name_use(reading)
        {
            attributes.push(Column::Value(vec![name.step.clone()]));
        }
        let used = plan_properties(plan);
        for property in asked_properties(reading) {
            let Some(use_) = reading.profile.find(&property.iri) else {
                continue;
            };
            let column = Column::Value(vec![use_.step.clone()]);
            if use_.is_literal()
                && !used.contains(&property.iri.as_str())
                && !attributes.contains(&column)
            {
                attributes.push(column);
            }
        }
    }
    let mut columns = Vec::new();
    match &grouped_by {
        Some(Grouping::All) => {}
        Some(Grouping::PerValue(path)) => columns.push(Column::Value(path.clone())),
        Some(Grouping::PerAnswer) | None => {
            // The entity a question names is not shown beside its attributes.
            let named_entity = reading.answer.is_empty();
            if attributes.is_empty() || !(named_entity || attributes_of_the_answer(reading)) {
                columns.push(Column::Value(Vec::new()));
            }
        }
    }
    columns.extend(attributes);
    if let Some(aggregation) = &plan.aggregation
        && (asks_for_a_number(reading.cues) || columns.is_empty())
    {
        columns.extend((0..aggregation.measures.len()).map(Column::Measure));
    }
    plan.columns = columns;
}

/// The properties the question names (most of their name), on words that name neither
/// the answer's class nor an entity.
fn asked_properties<'a>(reading: &'a Reading) -> impl Iterator<Item = &'a Candidate> {
    let taken: Vec<usize> = reading
        .linked
        .mentions
        .iter()
        .flat_map(|m| m.words.iter().copied())
        .chain(
            reading
                .linked
                .classes
                .iter()
                .filter(|c| reading.answer.contains(&c.iri))
                .flat_map(|c| c.words.iter().copied()),
        )
        .collect();
    reading.linked.properties.iter().filter(move |p| {
        p.name_coverage >= MOST_OF_A_NAME && !p.words.iter().any(|w| taken.contains(w))
    })
}

/// "the names and e-mails of the lecturers", "the name and area of the
/// largest Asian country": the attributes come before "of" and the answer's
/// class at most five words after it.
fn attributes_of_the_answer(reading: &Reading) -> bool {
    let class_at = reading
        .linked
        .classes
        .iter()
        .filter(|c| reading.answer.contains(&c.iri))
        .filter_map(|c| c.words.first().copied())
        .min();
    let Some(class_at) = class_at else {
        return false;
    };
    reading.cues.words[..class_at.min(reading.cues.words.len())]
        .iter()
        .rev()
        .take(5)
        .any(|w| w == "of")
}

/// The question asks for a number: how many, a sum or mean, or counts.
fn asks_for_a_number(cues: &Cues) -> bool {
    cues.count.is_some()
        || cues.function.is_some()
        || cues
            .words
            .iter()
            .any(|w| matches!(w.as_str(), "counts" | "numbers" | "totals"))
}

/// The properties a plan's constraints and order already use.
fn plan_properties(plan: &QueryPlan) -> Vec<&str> {
    let mut out = Vec::new();
    fn walk<'a>(c: &'a Constraint, out: &mut Vec<&'a str>) {
        match c {
            Constraint::Reaches { path, .. }
            | Constraint::Compare { path, .. }
            | Constraint::Contains { path, .. }
            | Constraint::Exists { path }
            | Constraint::IsA { path, .. } => out.extend(path.iter().map(|s| s.property.as_str())),
            Constraint::CompareValues { left, right, .. } => {
                out.extend(left.iter().chain(right).map(|s| s.property.as_str()));
            }
            Constraint::Not(inner) => walk(inner, out),
        }
    }
    for c in &plan.constraints {
        walk(c, &mut out);
    }
    if let Some(Order {
        key: SortKey::Value(path),
        ..
    }) = &plan.order
    {
        out.extend(path.iter().map(|s| s.property.as_str()));
    }
    out
}

/// The property the answer's members are named by (a label or a `name`).
fn name_use<'a>(reading: &'a Reading) -> Option<&'a PropertyUse> {
    reading
        .profile
        .uses
        .iter()
        .filter(|u| !u.step.inverse && u.is_literal())
        .find(|u| is_name_property(&u.step.property))
}

/// Label predicates and properties whose local name ends in `name`, `label` or
/// `title`.
fn is_name_property(iri: &str) -> bool {
    let lower = local_name(iri).to_lowercase();
    iri == w3c::RDFS_LABEL
        || ["name", "label", "title"]
            .iter()
            .any(|s| lower.ends_with(s))
}

/// The step from the answer to a node of one of `classes`, the most used.
fn towards(reading: &Reading, classes: &[String]) -> Option<Path> {
    reading
        .profile
        .towards(classes)
        .first()
        .map(|u| vec![u.step.clone()])
}

/// The numeric property of the answer a measure means: one the question names
/// near `word` (or anywhere), else one named by the measure's nouns.
fn measure(reading: &Reading, nouns: &[&str], word: usize) -> Option<Step> {
    let numeric: Vec<&PropertyUse> = reading
        .profile
        .uses
        .iter()
        .filter(|u| !u.step.inverse && u.is_numeric())
        .collect();
    let distance = |c: &Candidate| {
        c.words
            .iter()
            .map(|&w| w.abs_diff(word))
            .min()
            .unwrap_or(usize::MAX)
    };
    let mut named: Vec<(&Candidate, &PropertyUse)> = reading
        .linked
        .properties
        .iter()
        .filter_map(|c| {
            numeric
                .iter()
                .find(|u| u.step.property == c.iri)
                .map(|u| (c, *u))
        })
        .collect();
    // "the total fraud volume": the cue's own word ("total") names no measure,
    // so a property matched on it ("total volume") comes after the others.
    named.sort_by_key(|(c, _)| (c.words.contains(&word), distance(c)));
    if let Some((_, use_)) = named.first() {
        return Some(use_.step.clone());
    }
    let stems: Vec<String> = nouns.iter().map(|n| stem(n)).collect();
    numeric
        .iter()
        .find(|u| {
            let name = reading.lexicon.entry_of(&u.step.property).map_or_else(
                || local_name(&u.step.property).to_owned(),
                |e| e.name.clone(),
            );
            let parts = analyze(&format!("{name} {}", local_name(&u.step.property)));
            parts.iter().any(|p| stems.contains(&p.text))
        })
        .map(|u| u.step.clone())
}

fn integer(text: &str) -> Value {
    Value::typed(text, "http://www.w3.org/2001/XMLSchema#integer")
}

fn decimal(text: &str) -> Value {
    let datatype = if text.contains('.') {
        "decimal"
    } else {
        "integer"
    };
    Value::typed(
        text,
        &format!("http://www.w3.org/2001/XMLSchema#{datatype}"),
    )
}

/// Runs the plans best first and returns the first that answers (a yes-or-no
/// question: the first that says yes, else the best plan's no), with the
/// trace. `None` when no plan answered.
pub fn answer(
    store: &Store,
    planned: &[Planned],
    trace: &mut TraceStage,
) -> Result<Option<AnswerSet>, RetrieveError> {
    let mut first_no = None;
    for planned in planned.iter().take(MAX_RUNS) {
        match run(store, &planned.plan, SOURCE)? {
            Run::Answered(set) => {
                trace
                    .kept
                    .push(format!("answered ({:.2}): {}", planned.score, set.query));
                return Ok(Some(set));
            }
            Run::Empty(set) if set.boolean == Some(false) => {
                first_no.get_or_insert(set);
            }
            Run::Empty(set) => trace.dropped.push(Dropped {
                iri: set.query,
                why: format!("({:.2}) no rows", planned.score),
            }),
            Run::Refused { query, why } => trace.dropped.push(Dropped { iri: query, why }),
        }
    }
    if let Some(no) = &first_no {
        trace.kept.push(format!("answered no: {}", no.query));
    }
    Ok(first_no)
}

/// How one plan ran.
#[derive(Debug)]
pub enum Run {
    /// Rows, or a yes.
    Answered(AnswerSet),
    /// No rows, or a no.
    Empty(AnswerSet),
    /// Not run, or failed: the query (the plan when it made none) and why.
    Refused {
        /// The query, or the plan.
        query: String,
        /// Why.
        why: String,
    },
}

/// Compiles `plan`, checks its vocabulary against the store and runs it
/// read-only with the store's timeout; a SELECT reads at most [`MAX_ROWS`] rows
/// (the query says so itself, so that running its text again gives the same
/// rows). `source` goes into the answer set.
pub fn run(store: &Store, plan: &QueryPlan, source: &str) -> Result<Run, RetrieveError> {
    let options = CompileOptions {
        entailment: store.config().reasoning.entailment == kgfuse_core::config::Entailment::Rdfs,
    };
    let mut plan = plan.clone();
    if plan.form == Form::Select && plan.limit.is_none() {
        plan.limit = Some(MAX_ROWS);
    }
    let query = match plan.compile(options) {
        Ok(query) => query,
        Err(e) => {
            return Ok(Run::Refused {
                query: plan.to_string(),
                why: e.to_string(),
            });
        }
    };
    let text = query.to_string();
    let unknown = store.graph().unknown_terms(&query_vocabulary(&query))?;
    if !unknown.is_empty() {
        return Ok(Run::Refused {
            query: text,
            why: format!("not in the store: {}", unknown.join(", ")),
        });
    }
    let limited = match store
        .graph()
        .query_algebra_limited(query, MAX_ROWS, &store.query_options())
    {
        Ok(limited) => limited,
        Err(e) => {
            return Ok(Run::Refused {
                query: text,
                why: format!("failed: {e}"),
            });
        }
    };
    let set = answer_set(&plan, source, text, limited.outcome, limited.truncated);
    Ok(if set.answered() && set.boolean != Some(false) {
        Run::Answered(set)
    } else {
        Run::Empty(set)
    })
}

/// Whether an answer set came from a plan that names a class of the store
/// (read back from the plan it carries).
pub fn answered_for_a_class(set: &AnswerSet) -> bool {
    set.plan
        .as_ref()
        .and_then(|plan| serde_json::from_value::<QueryPlan>(plan.clone()).ok())
        .is_some_and(|plan| !plan.classes.is_empty())
}

/// A query's outcome as an answer set.
fn answer_set(
    plan: &QueryPlan,
    source: &str,
    query: String,
    outcome: QueryOutcome,
    truncated: bool,
) -> AnswerSet {
    let mut set = AnswerSet {
        source: source.into(),
        plan: serde_json::to_value(plan).ok(),
        query,
        truncated,
        ..AnswerSet::default()
    };
    match outcome {
        QueryOutcome::Boolean(b) => set.boolean = Some(b),
        QueryOutcome::Solutions { variables, rows } => {
            set.columns = variables;
            set.rows = rows
                .iter()
                .map(|row| row.iter().map(|cell| cell_value(cell.as_ref())).collect())
                .collect();
        }
        QueryOutcome::Graph(_) => {}
    }
    set
}

/// A cell as the answer shows it: an IRI, a literal's value, `_:id`.
fn cell_value(cell: Option<&Term>) -> Option<String> {
    kgfuse_lexicon::sparql::cell_text(Some(&cell.cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_lexicon::linking::link;

    /// Adding anchors one by one with [`best_choices`] between them keeps the
    /// same best choices, in the same order, as making every combination first:
    /// here 2^20 combinations of penalties with ties, of which the kept 64
    /// are compared with the best 64 of all.
    #[test]
    fn the_choices_kept_are_the_best_of_all_combinations() {
        let anchors = 20;
        let penalty = |anchor: usize, option: usize| -> f32 {
            // Ties within and across anchors: a few distinct penalties.
            f32::from(u8::try_from((anchor * 7 + option * 3) % 4).expect("small")) * 0.05
        };
        let reach = |anchor: usize, option: usize| Constraint::Reaches {
            path: Vec::new(),
            any_of: vec![Value::iri(&format!("urn:a{anchor}:{option}"))],
        };
        let mut kept: Vec<(Vec<Constraint>, f32)> = vec![(Vec::new(), 1.0)];
        for anchor in 0..anchors {
            let mut next = Vec::new();
            for (constraints, score) in &kept {
                for option in 0..PATHS_PER_ANCHOR {
                    let mut constraints = constraints.clone();
                    constraints.push(reach(anchor, option));
                    next.push((constraints, score - penalty(anchor, option)));
                }
            }
            kept = best_choices(next);
        }
        assert_eq!(kept.len(), MAX_CHOICES);
        // Every combination, as an index whose bits are the options, in the
        // order the nested loops make them (first anchor most significant).
        let all: Vec<(usize, f32)> = (0..1usize << anchors)
            .map(|bits| {
                let score = (0..anchors).fold(1.0, |score, anchor| {
                    score - penalty(anchor, (bits >> (anchors - 1 - anchor)) & 1)
                });
                (bits, score)
            })
            .collect();
        let mut best: Vec<&(usize, f32)> = all.iter().collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        best.truncate(MAX_CHOICES);
        let mut kept_best: Vec<&(Vec<Constraint>, f32)> = kept.iter().collect();
        kept_best.sort_by(|a, b| b.1.total_cmp(&a.1));
        for ((constraints, score), (bits, expected)) in kept_best.into_iter().zip(best) {
            assert!((score - expected).abs() < 1e-4, "{score} {expected}");
            let options: Vec<Constraint> = (0..anchors)
                .map(|anchor| reach(anchor, (bits >> (anchors - 1 - anchor)) & 1))
                .collect();
            assert_eq!(constraints, &options);
        }
    }

    /// A small shop, written for these tests: products with prices, weights
    /// and sizes, in categories, from suppliers in cities.
    const SHOP: &str = r#"
@prefix s: <http://example.org/shop/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

s:Product a owl:Class ; rdfs:label "product" .
s:Category a owl:Class ; rdfs:label "category" .
s:Supplier a owl:Class ; rdfs:label "supplier" .
s:City a owl:Class ; rdfs:label "city" .
s:price a owl:DatatypeProperty ; rdfs:label "price" ; rdfs:domain s:Product ; rdfs:range xsd:decimal .
s:weight a owl:DatatypeProperty ; rdfs:label "weight" ; rdfs:domain s:Product ; rdfs:range xsd:decimal .
s:width a owl:DatatypeProperty ; rdfs:label "width" ; rdfs:domain s:Product ; rdfs:range xsd:decimal .
s:height a owl:DatatypeProperty ; rdfs:label "height" ; rdfs:domain s:Product ; rdfs:range xsd:decimal .
s:inCategory a owl:ObjectProperty ; rdfs:label "in category" ; rdfs:domain s:Product ; rdfs:range s:Category .
s:suppliedBy a owl:ObjectProperty ; rdfs:label "supplied by" ; rdfs:domain s:Product ; rdfs:range s:Supplier .
s:locatedIn a owl:ObjectProperty ; rdfs:label "located in" ; rdfs:domain s:Supplier ; rdfs:range s:City .

s:kitchen a s:Category ; rdfs:label "Kitchen" .
s:lighting a s:Category ; rdfs:label "Lighting" .
s:furniture a s:Category ; rdfs:label "Furniture" .
s:oslo a s:City ; rdfs:label "Oslo" .
s:bergen a s:City ; rdfs:label "Bergen" .
s:paris a s:City ; rdfs:label "Paris" .
s:acme a s:Supplier ; rdfs:label "Acme" ; s:locatedIn s:oslo .
s:bolt a s:Supplier ; rdfs:label "Boltworks" ; s:locatedIn s:bergen .
s:corvid a s:Supplier ; rdfs:label "Corvid" ; s:locatedIn s:bergen .
s:delta a s:Supplier ; rdfs:label "Delta" ; s:locatedIn s:oslo .

s:p1 a s:Product ; rdfs:label "Kettle" ; s:price 25.0 ; s:weight 1.2 ; s:width 20 ; s:height 25 ; s:inCategory s:kitchen ; s:suppliedBy s:acme .
s:p2 a s:Product ; rdfs:label "Toaster" ; s:price 40.0 ; s:weight 2.0 ; s:width 30 ; s:height 20 ; s:inCategory s:kitchen ; s:suppliedBy s:bolt .
s:p3 a s:Product ; rdfs:label "Lamp" ; s:price 15.0 ; s:weight 0.8 ; s:width 15 ; s:height 40 ; s:inCategory s:lighting ; s:suppliedBy s:acme .
s:p4 a s:Product ; rdfs:label "Desk" ; s:price 120.0 ; s:weight 20.0 ; s:width 120 ; s:height 75 ; s:inCategory s:furniture ; s:suppliedBy s:bolt .
s:p5 a s:Product ; rdfs:label "Chair" ; s:price 60.0 ; s:weight 6.0 ; s:width 50 ; s:height 90 ; s:inCategory s:furniture ; s:suppliedBy s:corvid .
s:p6 a s:Product ; rdfs:label "Blender" ; s:price 55.0 ; s:weight 1.5 ; s:width 15 ; s:height 35 ; s:inCategory s:kitchen ; s:suppliedBy s:bolt .
"#;

    const S: &str = "http://example.org/shop/";

    /// The answer the planner gives on the shop store.
    async fn answered(question: &str) -> AnswerSet {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(SHOP).await;
        answer_on(&store, question)
    }

    fn answer_on(store: &Store, question: &str) -> AnswerSet {
        let linked = link(store, question).expect("link");
        let (planned, mut trace) = plans(store, &Cues::of(question), &linked).expect("plans");
        let set = answer(store, &planned, &mut trace).expect("answer");
        set.unwrap_or_else(|| {
            panic!(
                "no answer to {question:?}: {trace:#?}\n{:#?}",
                linked.trace()
            )
        })
    }

    /// The first column's values, sorted, with the shop's namespace cut.
    fn first_column(set: &AnswerSet) -> Vec<String> {
        let mut values: Vec<String> = set
            .rows
            .iter()
            .filter_map(|r| r.first().cloned().flatten())
            .map(|v| v.trim_start_matches(S).to_owned())
            .collect();
        values.sort();
        values
    }

    #[tokio::test]
    async fn each_shape_answers_on_a_graph_it_was_not_written_for() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(SHOP).await;
        let cases: &[(&str, &[&str])] = &[
            ("How many products are there?", &["6"]),
            ("How many products does Acme supply?", &["2"]),
            ("Which product is the cheapest?", &["p3"]),
            ("What are the 2 most expensive products?", &["p4", "p5"]),
            ("Which products have a price above 50?", &["p4", "p5", "p6"]),
            (
                "Which products are wider than they are tall?",
                &["p2", "p4"],
            ),
            ("Which suppliers supply no products?", &["delta"]),
            ("Which category has the most products?", &["kitchen"]),
        ];
        let mut wrong = Vec::new();
        for (question, expected) in cases {
            let set = answer_on(&store, question);
            let got = first_column(&set);
            if got != *expected {
                wrong.push(format!("{question}: {got:?} from {}", set.query));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// A run of words the data holds as text becomes a condition on the rows
    /// (and beats a node the same word names only in part); a question that
    /// quotes no value gets none.
    #[tokio::test]
    async fn a_quoted_value_is_a_condition_and_a_partial_name_gives_way() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(kgfuse_lexicon::testing::LIBRARY).await;
        let book = |ids: &[&str]| -> Vec<String> {
            ids.iter()
                .map(|i| format!("http://example.org/library/{i}"))
                .collect()
        };
        let set = answer_on(&store, "Which books did Mara Holt write?");
        assert_eq!(first_column(&set), book(&["b1", "b3"]), "{}", set.query);
        let set = answer_on(&store, "How many books of the poetry genre are there?");
        assert_eq!(first_column(&set), ["2"], "{}", set.query);
        assert!(!set.query.contains("hall"), "{}", set.query);
        let set = answer_on(&store, "Which books are there?");
        assert_eq!(
            first_column(&set),
            book(&["b1", "b2", "b3"]),
            "{}",
            set.query
        );
    }

    #[tokio::test]
    async fn yes_or_no() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(SHOP).await;
        assert_eq!(
            answer_on(&store, "Are there suppliers in Oslo?").boolean,
            Some(true)
        );
        assert_eq!(
            answer_on(&store, "Are there suppliers in Paris?").boolean,
            Some(false)
        );
    }

    #[tokio::test]
    async fn a_set_function_per_group() {
        let set = answered("What is the average price per category?").await;
        assert_eq!(set.columns.len(), 2, "{set:?}");
        let mut rows: Vec<(String, f64)> = set
            .rows
            .iter()
            .map(|r| {
                let group = r[0]
                    .clone()
                    .unwrap_or_default()
                    .trim_start_matches(S)
                    .to_owned();
                let value = r[1]
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN);
                (group, value)
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            rows,
            [
                ("furniture".to_owned(), 90.0),
                ("kitchen".to_owned(), 40.0),
                ("lighting".to_owned(), 15.0)
            ],
            "{}",
            set.query
        );
    }

    #[tokio::test]
    async fn lookups_are_left_to_the_query_graphs_and_counts_are_not_lookups() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(SHOP).await;
        let question = "Which suppliers are located in Bergen?";
        let linked = link(&store, question).expect("link");
        let (planned, _) = plans(&store, &Cues::of(question), &linked).expect("plans");
        // A class is named, so a plan is made: it lists, it does not count.
        assert!(
            planned.iter().all(|p| p.plan.aggregation.is_none()),
            "{planned:?}"
        );
        let set = answer_on(&store, question);
        assert_eq!(first_column(&set), ["bolt", "corvid"]);
        let set = answer_on(&store, "How many suppliers are located in Bergen?");
        assert_eq!(first_column(&set), ["2"]);
    }
}
