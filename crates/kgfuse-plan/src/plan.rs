//! A query plan: what a question asks, between its words and the SPARQL.
//!
//! A plan says which things are the answer (a class), what must hold of them
//! (constraints along property paths from the answer), how they are counted or
//! summed (aggregation, grouping, a condition on the groups), which come first
//! (order, limit, offset), and which columns the answer has. It is filled by the
//! offline planner ([`crate::planner`]) or by a language model, and
//! [`QueryPlan::compile`] turns it into SPARQL algebra: terms enter as RDF terms,
//! never as query text, so nothing a question or a model writes can change the
//! query's shape.
//!
//! Variables are named by the walk that reaches them: the answer is `?x`, and
//! every path from the answer with the same steps names the same node (a city
//! both constrained and shown is one city). Inside a negation the walk is
//! fresh: "departments with no manager" asks that no manager exists, whatever
//! other nodes the query binds.

use crate::algebra::{empty, join, type_path, values_of, variable};
use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::{Literal, NamedNode, Term, Variable};
use serde::{Deserialize, Serialize};
use spargebra::Query;
use spargebra::algebra::{
    AggregateExpression, AggregateFunction, Expression, Function, GraphPattern, OrderExpression,
};
use spargebra::term::{GroundTerm, NamedNodePattern, TermPattern, TriplePattern};
use std::collections::BTreeMap;
use std::fmt;

/// One step along a property: subject to object, or back (`inverse`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Step {
    /// The property.
    pub property: String,
    /// Walked from object to subject.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inverse: bool,
}

impl Step {
    /// A step from subject to object.
    pub fn forward(property: &str) -> Self {
        Self {
            property: property.to_owned(),
            inverse: false,
        }
    }

    /// A step from object to subject.
    pub fn back(property: &str) -> Self {
        Self {
            property: property.to_owned(),
            inverse: true,
        }
    }
}

/// A walk from the answer node; empty: the answer itself.
pub type Path = Vec<Step>;

/// A node or a literal a plan names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// A node, by IRI.
    Iri(String),
    /// A literal: its lexical form with its datatype IRI, or its language, or
    /// neither (a plain string).
    Literal {
        /// The lexical form.
        value: String,
        /// The datatype IRI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        datatype: Option<String>,
        /// The language tag.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
    },
}

impl Value {
    /// A node.
    pub fn iri(iri: &str) -> Self {
        Self::Iri(iri.to_owned())
    }

    /// A literal of a datatype (`xsd:decimal`, say).
    pub fn typed(value: &str, datatype: &str) -> Self {
        Self::Literal {
            value: value.to_owned(),
            datatype: Some(datatype.to_owned()),
            language: None,
        }
    }

    /// A plain string.
    pub fn text(value: &str) -> Self {
        Self::Literal {
            value: value.to_owned(),
            datatype: None,
            language: None,
        }
    }

    /// The RDF term, when the IRIs and the language tag are valid.
    pub fn term(&self) -> Result<Term, InvalidPlan> {
        Ok(match self {
            Self::Iri(iri) => named(iri)?.into(),
            Self::Literal {
                value,
                datatype: Some(datatype),
                ..
            } => Literal::new_typed_literal(value, named(datatype)?).into(),
            Self::Literal {
                value,
                language: Some(language),
                ..
            } => Literal::new_language_tagged_literal(value, language)
                .map_err(|e| InvalidPlan(format!("language tag {language}: {e}")))?
                .into(),
            Self::Literal { value, .. } => Literal::new_simple_literal(value).into(),
        })
    }

    /// The literal, or an error for a node.
    fn literal(&self) -> Result<Literal, InvalidPlan> {
        match self.term()? {
            Term::Literal(l) => Ok(l),
            other => Err(InvalidPlan(format!("{other} is compared as a value"))),
        }
    }
}

/// A comparison of two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
}

impl Comparison {
    fn expression(self, left: Expression, right: Expression) -> Expression {
        let (l, r) = (Box::new(left), Box::new(right));
        match self {
            Self::Equal => Expression::Equal(l, r),
            Self::NotEqual => Expression::Not(Box::new(Expression::Equal(l, r))),
            Self::Less => Expression::Less(l, r),
            Self::LessOrEqual => Expression::LessOrEqual(l, r),
            Self::Greater => Expression::Greater(l, r),
            Self::GreaterOrEqual => Expression::GreaterOrEqual(l, r),
        }
    }

    /// The operator as SPARQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Equal => "=",
            Self::NotEqual => "!=",
            Self::Less => "<",
            Self::LessOrEqual => "<=",
            Self::Greater => ">",
            Self::GreaterOrEqual => ">=",
        }
    }
}

/// What must hold of an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// The walk ends at one of these nodes or literals.
    Reaches {
        /// The walk.
        path: Path,
        /// The nodes or literals, any of which will do.
        any_of: Vec<Value>,
    },
    /// The value at the walk's end compares with a literal.
    Compare {
        /// The walk to the value.
        path: Path,
        /// The comparison, value on the left.
        op: Comparison,
        /// The literal on the right.
        value: Value,
    },
    /// Two values of the answer compare ("wider than they are tall").
    CompareValues {
        /// The walk to the left value.
        left: Path,
        /// The comparison.
        op: Comparison,
        /// The walk to the right value.
        right: Path,
    },
    /// The value at the walk's end contains this text, in any case.
    Contains {
        /// The walk to the value.
        path: Path,
        /// The text.
        text: String,
    },
    /// The walk's end is of one of these classes.
    IsA {
        /// The walk.
        path: Path,
        /// The classes, any of which will do.
        classes: Vec<String>,
    },
    /// The walk has an end.
    Exists {
        /// The walk.
        path: Path,
    },
    /// The inner constraint does not hold (`FILTER NOT EXISTS`).
    Not(Box<Constraint>),
}

/// A set function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetFunction {
    /// How many distinct nodes or values.
    Count,
    /// Their sum.
    Sum,
    /// Their mean.
    Avg,
    /// The least.
    Min,
    /// The greatest.
    Max,
}

impl SetFunction {
    /// The function's SPARQL name, lower case (also the column's name).
    pub fn name(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Sum => "sum",
            Self::Avg => "avg",
            Self::Min => "min",
            Self::Max => "max",
        }
    }
}

/// A set function over the answers or over values reached from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// The function.
    pub function: SetFunction,
    /// The walk to the values; empty: the answers themselves.
    #[serde(default)]
    pub of: Path,
}

/// What the measures are computed per.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// One row over every answer.
    All,
    /// One row per answer ("departments with more than ten members").
    PerAnswer,
    /// One row per value at the walk's end ("per category").
    PerValue(Path),
}

/// Counting, summing and the like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregation {
    /// The set functions, each a column.
    pub measures: Vec<Measure>,
    /// What they are computed per.
    pub group: Grouping,
    /// A condition on a measure (`HAVING`): its index, the comparison, the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub having: Option<(usize, Comparison, Value)>,
}

/// What the answers are ordered by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// The value at the walk's end.
    Value(Path),
    /// A measure of the aggregation, by index.
    Measure(usize),
}

/// An order with its direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// The key.
    pub key: SortKey,
    /// Greatest first.
    pub descending: bool,
}

/// A column of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// The node or value at the walk's end (empty: the answer).
    Value(Path),
    /// A measure of the aggregation, by index.
    Measure(usize),
}

/// Whether the question wants rows or a yes or no.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// Rows.
    #[default]
    Select,
    /// Whether any row exists.
    Ask,
}

/// What a question asks, in terms of the store's classes and properties.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryPlan {
    /// Rows or a yes or no.
    #[serde(default)]
    pub form: Form,
    /// The answers' classes, any of which will do; none: any node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<String>,
    /// What must hold of each answer.
    #[serde(default)]
    pub constraints: Vec<Constraint>,
    /// Counting, summing and the like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<Aggregation>,
    /// Which answers come first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// At most this many rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Rows skipped before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// The answer's columns; none: the answer node.
    #[serde(default)]
    pub columns: Vec<Column>,
}

/// A plan that does not make a query, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the plan does not make a query: {0}")]
pub struct InvalidPlan(pub String);

/// How a plan's queries type their answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompileOptions {
    /// The store materialises RDFS entailment: `?x a C` finds the members of
    /// C's subclasses. Without it the class is matched through
    /// `rdf:type/rdfs:subClassOf*`.
    pub entailment: bool,
}

impl QueryPlan {
    /// The plan as SPARQL algebra, after checking that it is whole: every IRI
    /// valid, every index in range, a measure for a grouped order or column.
    pub fn compile(&self, options: CompileOptions) -> Result<Query, InvalidPlan> {
        self.check()?;
        let mut walks = Walks::default();
        let mut pattern = self.where_pattern(&mut walks, options)?;
        if self.form == Form::Ask {
            if let Some(aggregation) = &self.aggregation {
                pattern = self.grouped(pattern, aggregation, &mut walks)?;
            }
            return Ok(Query::Ask {
                dataset: None,
                pattern,
                base_iri: None,
            });
        }
        let columns = self.column_variables(&mut walks)?;
        let order = match &self.order {
            Some(Order {
                key: SortKey::Value(path),
                descending,
            }) => Some((walks.end(path)?, *descending)),
            Some(Order {
                key: SortKey::Measure(i),
                descending,
            }) => Some((measure_variable(self.measures(), *i), *descending)),
            None => None,
        };
        // The walks columns and the order added join before any grouping.
        pattern = match &self.aggregation {
            Some(aggregation) => self.grouped(pattern, aggregation, &mut walks)?,
            None => join(pattern, walks.take_pending()),
        };
        if let Some((variable, descending)) = order {
            let expression = Expression::Variable(variable);
            pattern = GraphPattern::OrderBy {
                inner: Box::new(pattern),
                expression: vec![if descending {
                    OrderExpression::Desc(expression)
                } else {
                    OrderExpression::Asc(expression)
                }],
            };
        }
        pattern = GraphPattern::Project {
            inner: Box::new(pattern),
            variables: columns,
        };
        if self.aggregation.is_none() {
            pattern = GraphPattern::Distinct {
                inner: Box::new(pattern),
            };
        }
        if self.limit.is_some() || self.offset.is_some() {
            pattern = GraphPattern::Slice {
                inner: Box::new(pattern),
                start: self.offset.unwrap_or(0),
                length: self.limit,
            };
        }
        Ok(Query::Select {
            dataset: None,
            pattern,
            base_iri: None,
        })
    }

    /// Indices in range, IRIs valid, grouped columns computable.
    fn check(&self) -> Result<(), InvalidPlan> {
        let measures = self.aggregation.as_ref().map_or(0, |a| a.measures.len());
        let in_range = |i: usize| {
            if i < measures {
                Ok(())
            } else {
                Err(InvalidPlan(format!("measure {i} of {measures}")))
            }
        };
        if let Some(aggregation) = &self.aggregation {
            if aggregation.measures.is_empty() {
                return Err(InvalidPlan("an aggregation without a measure".into()));
            }
            if let Some((i, _, _)) = &aggregation.having {
                in_range(*i)?;
            }
        }
        for column in &self.columns {
            if let Column::Measure(i) = column {
                in_range(*i)?;
            }
        }
        if let Some(Order {
            key: SortKey::Measure(i),
            ..
        }) = &self.order
        {
            in_range(*i)?;
        }
        for class in &self.classes {
            named(class)?;
        }
        Ok(())
    }

    /// The answers' class and every constraint.
    fn where_pattern(
        &self,
        walks: &mut Walks,
        options: CompileOptions,
    ) -> Result<GraphPattern, InvalidPlan> {
        let mut pattern = empty();
        pattern = join(pattern, typed(&answer(), &self.classes, options)?);
        let mut filters = Vec::new();
        for constraint in &self.constraints {
            let (triples, filter) = constraint_pattern(constraint, walks, options)?;
            pattern = join(pattern, walks.take_pending());
            pattern = join(pattern, triples);
            filters.extend(filter);
        }
        pattern = join(pattern, walks.take_pending());
        for filter in filters {
            pattern = GraphPattern::Filter {
                expr: filter,
                inner: Box::new(pattern),
            };
        }
        Ok(pattern)
    }

    /// The projected variables, in column order (the answer alone when none).
    fn column_variables(&self, walks: &mut Walks) -> Result<Vec<Variable>, InvalidPlan> {
        let columns = if self.columns.is_empty() {
            vec![Column::Value(Vec::new())]
        } else {
            self.columns.clone()
        };
        let mut variables = Vec::new();
        for column in &columns {
            let variable = match column {
                Column::Value(path) => walks.end(path)?,
                Column::Measure(i) => measure_variable(self.measures(), *i),
            };
            if !variables.contains(&variable) {
                variables.push(variable);
            }
        }
        Ok(variables)
    }

    /// `pattern` grouped and measured, with the condition on the groups.
    fn grouped(
        &self,
        pattern: GraphPattern,
        aggregation: &Aggregation,
        walks: &mut Walks,
    ) -> Result<GraphPattern, InvalidPlan> {
        let mut keys = match &aggregation.group {
            Grouping::All => Vec::new(),
            Grouping::PerAnswer => vec![answer()],
            Grouping::PerValue(path) => vec![walks.end(path)?],
        };
        // Columns that are values (a group's name) are grouped by too: they are
        // one per group.
        for column in &self.columns {
            if let Column::Value(path) = column {
                let variable = walks.end(path)?;
                if !keys.contains(&variable) {
                    keys.push(variable);
                }
            }
        }
        let mut aggregates = Vec::new();
        for (i, measure) in aggregation.measures.iter().enumerate() {
            let value = walks.end(&measure.of)?;
            let expression = match measure.function {
                SetFunction::Count => AggregateExpression::FunctionCall {
                    name: AggregateFunction::Count,
                    expr: Expression::Variable(value),
                    distinct: true,
                },
                other => AggregateExpression::FunctionCall {
                    name: match other {
                        SetFunction::Sum => AggregateFunction::Sum,
                        SetFunction::Avg => AggregateFunction::Avg,
                        SetFunction::Min => AggregateFunction::Min,
                        _ => AggregateFunction::Max,
                    },
                    expr: Expression::Variable(value),
                    distinct: false,
                },
            };
            aggregates.push((measure_variable(&aggregation.measures, i), expression));
        }
        // The walks the measures and keys added join the pattern before grouping.
        let pattern = join(pattern, walks.take_pending());
        let mut grouped = GraphPattern::Group {
            inner: Box::new(pattern),
            variables: keys,
            aggregates,
        };
        if let Some((i, op, value)) = &aggregation.having {
            grouped = GraphPattern::Filter {
                expr: op.expression(
                    Expression::Variable(measure_variable(&aggregation.measures, *i)),
                    Expression::Literal(value.literal()?),
                ),
                inner: Box::new(grouped),
            };
        }
        Ok(grouped)
    }

    /// The aggregation's measures (none without one).
    fn measures(&self) -> &[Measure] {
        self.aggregation.as_ref().map_or(&[], |a| &a.measures)
    }
}

impl fmt::Display for QueryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&json)
    }
}

/// The variable of measure `i`: its function's name (`?count`, `?max`), with
/// its index when an earlier measure has the same function (`?max2`).
fn measure_variable(measures: &[Measure], i: usize) -> Variable {
    let function = measures.get(i).map_or("m", |m| m.function.name());
    let earlier = measures
        .iter()
        .take(i)
        .any(|m| m.function.name() == function);
    if earlier {
        Variable::new_unchecked(format!("{function}{i}"))
    } else {
        Variable::new_unchecked(function)
    }
}

fn answer() -> Variable {
    variable("x")
}

fn named(iri: &str) -> Result<NamedNode, InvalidPlan> {
    NamedNode::new(iri).map_err(|e| InvalidPlan(format!("<{iri}> is not an IRI: {e}")))
}

/// `?v a C` for one of `classes` (a `VALUES` table when several), or
/// `?v rdf:type/rdfs:subClassOf* C` without entailment; nothing without classes.
fn typed(
    variable: &Variable,
    classes: &[String],
    options: CompileOptions,
) -> Result<GraphPattern, InvalidPlan> {
    let class = match classes {
        [] => return Ok(empty()),
        [one] => TermPattern::NamedNode(named(one)?),
        _ => TermPattern::Variable(Variable::new_unchecked(format!(
            "class_{}",
            variable.as_str()
        ))),
    };
    let subject = TermPattern::Variable(variable.clone());
    let mut pattern = if options.entailment {
        GraphPattern::Bgp {
            patterns: vec![TriplePattern {
                subject,
                predicate: NamedNodePattern::NamedNode(NamedNode::new_unchecked(w3c::RDF_TYPE)),
                object: class.clone(),
            }],
        }
    } else {
        type_path(subject, class.clone())
    };
    if let TermPattern::Variable(v) = class {
        let nodes = classes
            .iter()
            .map(|c| named(c))
            .collect::<Result<Vec<_>, _>>()?;
        pattern = join(values_of(v, nodes), pattern);
    }
    Ok(pattern)
}

/// The triples and filter of one constraint; walks it shares with the rest of
/// the plan stay in `walks` (joined once, by the caller).
fn constraint_pattern(
    constraint: &Constraint,
    walks: &mut Walks,
    options: CompileOptions,
) -> Result<(GraphPattern, Option<Expression>), InvalidPlan> {
    Ok(match constraint {
        Constraint::Reaches { path, any_of } => (reaches(path, any_of, walks)?, None),
        Constraint::Compare { path, op, value } => {
            let end = walks.end(path)?;
            let filter = op.expression(
                Expression::Variable(end),
                Expression::Literal(value.literal()?),
            );
            (empty(), Some(filter))
        }
        Constraint::CompareValues { left, op, right } => {
            let l = walks.end(left)?;
            let r = walks.end(right)?;
            (
                empty(),
                Some(op.expression(Expression::Variable(l), Expression::Variable(r))),
            )
        }
        Constraint::Contains { path, text } => {
            let end = walks.end(path)?;
            let lowered = |e: Expression| {
                Expression::FunctionCall(
                    Function::LCase,
                    vec![Expression::FunctionCall(Function::Str, vec![e])],
                )
            };
            let filter = Expression::FunctionCall(
                Function::Contains,
                vec![
                    lowered(Expression::Variable(end)),
                    Expression::Literal(Literal::new_simple_literal(text.to_lowercase())),
                ],
            );
            (empty(), Some(filter))
        }
        Constraint::IsA { path, classes } => {
            let end = walks.end(path)?;
            (typed(&end, classes, options)?, None)
        }
        Constraint::Exists { path } => {
            walks.end(path)?;
            (empty(), None)
        }
        Constraint::Not(inner) => (empty(), Some(not_exists(inner, walks, options)?)),
    })
}

/// The walk `path` ends at one of `any_of`: with one end, the last step's
/// triple names it; with several, a `VALUES` table of them.
fn reaches(
    path: &[Step],
    any_of: &[Value],
    walks: &mut Walks,
) -> Result<GraphPattern, InvalidPlan> {
    match (path.split_last(), any_of) {
        (_, []) => Err(InvalidPlan("a walk that must reach nothing".into())),
        (Some((last, prefix)), [one]) => {
            let from = walks.end(prefix)?;
            triple_to(&from, last, term_pattern(one.term()?))
        }
        _ => {
            let end = walks.end(path)?;
            let bindings = any_of
                .iter()
                .map(|v| ground(v.term()?).map(|g| vec![Some(g)]))
                .collect::<Result<_, _>>()?;
            Ok(GraphPattern::Values {
                variables: vec![end],
                bindings,
            })
        }
    }
}

/// `NOT EXISTS` of a constraint, on walks of its own: only `?x` is shared.
fn not_exists(
    inner: &Constraint,
    walks: &mut Walks,
    options: CompileOptions,
) -> Result<Expression, InvalidPlan> {
    let mut inside = Walks::nested(walks);
    let (triples, filter) = constraint_pattern(inner, &mut inside, options)?;
    let mut pattern = join(triples, inside.take_pending());
    if let Some(filter) = filter {
        pattern = GraphPattern::Filter {
            expr: filter,
            inner: Box::new(pattern),
        };
    }
    walks.absorb_counter(&inside);
    Ok(Expression::Not(Box::new(Expression::Exists(Box::new(
        pattern,
    )))))
}

fn ground(term: Term) -> Result<GroundTerm, InvalidPlan> {
    match term {
        Term::NamedNode(n) => Ok(GroundTerm::NamedNode(n)),
        Term::Literal(l) => Ok(GroundTerm::Literal(l)),
        _ => Err(InvalidPlan("a blank node cannot be asked for".into())),
    }
}

fn term_pattern(term: Term) -> TermPattern {
    match term {
        Term::NamedNode(n) => TermPattern::NamedNode(n),
        Term::Literal(l) => TermPattern::Literal(l),
        Term::BlankNode(b) => TermPattern::BlankNode(b),
    }
}

/// The triple of one step from `from` to `to`.
fn triple_to(from: &Variable, step: &Step, to: TermPattern) -> Result<GraphPattern, InvalidPlan> {
    let predicate = NamedNodePattern::NamedNode(named(&step.property)?);
    let from = TermPattern::Variable(from.clone());
    let (subject, object) = if step.inverse { (to, from) } else { (from, to) };
    Ok(GraphPattern::Bgp {
        patterns: vec![TriplePattern {
            subject,
            predicate,
            object,
        }],
    })
}

/// The nodes walks from the answer reach: one variable per distinct walk. A
/// walk whose end a constraint names (`?x basedIn <oslo>`) gets no variable:
/// another part of the plan walking the same steps gets its own.
#[derive(Default)]
struct Walks {
    /// Variable of each walk named so far.
    names: BTreeMap<Path, Variable>,
    /// Triples of walks not yet joined into the pattern.
    pending: Vec<TriplePattern>,
    /// Variables made, here and in nested walks (names stay unique).
    made: usize,
}

impl Walks {
    /// Walks inside a negation: the same counter, no shared nodes but the answer.
    fn nested(outer: &Self) -> Self {
        Self {
            made: outer.made,
            ..Self::default()
        }
    }

    fn absorb_counter(&mut self, inner: &Self) {
        self.made = self.made.max(inner.made);
    }

    /// The variable at the end of `path`, with every step's triple noted.
    fn end(&mut self, path: &[Step]) -> Result<Variable, InvalidPlan> {
        let Some((step, prefix)) = path.split_last() else {
            return Ok(answer());
        };
        if let Some(v) = self.names.get(path) {
            return Ok(v.clone());
        }
        let from = self.end(prefix)?;
        self.made += 1;
        let to = Variable::new_unchecked(format!("v{}", self.made));
        if let GraphPattern::Bgp { patterns } =
            triple_to(&from, step, TermPattern::Variable(to.clone()))?
        {
            self.pending.extend(patterns);
        }
        self.names.insert(path.to_vec(), to.clone());
        Ok(to)
    }

    /// The triples noted since the last call, as one group.
    fn take_pending(&mut self) -> GraphPattern {
        GraphPattern::Bgp {
            patterns: std::mem::take(&mut self.pending),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EX: &str = "http://example.org/";

    fn ex(name: &str) -> String {
        format!("{EX}{name}")
    }

    fn compiled(plan: &QueryPlan) -> String {
        plan.compile(CompileOptions { entailment: true })
            .expect("compiles")
            .to_string()
    }

    /// A plan of one class, for each shape below to add to.
    fn vendors() -> QueryPlan {
        QueryPlan {
            classes: vec![ex("Vendor")],
            ..QueryPlan::default()
        }
    }

    #[test]
    fn a_lookup_projects_only_the_answer() {
        let mut plan = vendors();
        plan.constraints.push(Constraint::Reaches {
            path: vec![
                Step::forward(&ex("basedIn")),
                Step::forward(&ex("inCountry")),
            ],
            any_of: vec![Value::iri(&ex("norway"))],
        });
        assert_eq!(
            compiled(&plan),
            "SELECT DISTINCT ?x WHERE { ?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Vendor> .?x <http://example.org/basedIn> ?v1 .?v1 <http://example.org/inCountry> <http://example.org/norway> . }"
        );
    }

    #[test]
    fn a_count_is_one_row_and_not_a_list() {
        let mut plan = vendors();
        plan.aggregation = Some(Aggregation {
            measures: vec![Measure {
                function: SetFunction::Count,
                of: Vec::new(),
            }],
            group: Grouping::All,
            having: None,
        });
        plan.columns = vec![Column::Measure(0)];
        let text = compiled(&plan);
        assert!(text.contains("(COUNT(DISTINCT ?x) AS ?count)"), "{text}");
        assert!(!text.contains("GROUP BY"), "{text}");
        assert!(!text.starts_with("SELECT DISTINCT ?x"), "{text}");
    }

    #[test]
    fn a_superlative_orders_and_cuts_and_offsets() {
        let mut plan = QueryPlan {
            classes: vec![ex("Product")],
            order: Some(Order {
                key: SortKey::Value(vec![Step::forward(&ex("price"))]),
                descending: true,
            }),
            limit: Some(5),
            offset: Some(5),
            ..QueryPlan::default()
        };
        let text = compiled(&plan);
        assert!(
            text.ends_with("ORDER BY DESC(?v1) OFFSET 5 LIMIT 5"),
            "{text}"
        );
        plan.order = Some(Order {
            key: SortKey::Value(vec![Step::forward(&ex("price"))]),
            descending: false,
        });
        plan.offset = None;
        plan.limit = Some(1);
        assert!(compiled(&plan).ends_with("ORDER BY ASC(?v1) LIMIT 1"));
    }

    #[test]
    fn groups_with_a_condition_and_named_columns() {
        // "Which departments have more than 10 members, with their names and counts?"
        let plan = QueryPlan {
            classes: vec![ex("Department")],
            aggregation: Some(Aggregation {
                measures: vec![Measure {
                    function: SetFunction::Count,
                    of: vec![Step::back(&ex("memberOf"))],
                }],
                group: Grouping::PerAnswer,
                having: Some((
                    0,
                    Comparison::Greater,
                    Value::typed("10", "http://www.w3.org/2001/XMLSchema#integer"),
                )),
            }),
            columns: vec![
                Column::Value(Vec::new()),
                Column::Value(vec![Step::forward(&ex("name"))]),
                Column::Measure(0),
            ],
            ..QueryPlan::default()
        };
        let text = compiled(&plan);
        assert!(text.starts_with("SELECT ?x ?v1 ?count WHERE"), "{text}");
        assert!(text.contains("(COUNT(DISTINCT ?v2) AS ?count)"), "{text}");
        assert!(
            text.contains("?v2 <http://example.org/memberOf> ?x"),
            "{text}"
        );
        assert!(text.contains("GROUP BY ?x ?v1"), "{text}");
        assert!(
            text.contains("FILTER((?count > \"10\"^^<http://www.w3.org/2001/XMLSchema#integer>))"),
            "{text}"
        );
    }

    #[test]
    fn per_value_groups_show_the_group_and_each_measure() {
        // "Per category, the lightest and the heaviest product's weight."
        let weight = vec![Step::forward(&ex("weight"))];
        let plan = QueryPlan {
            classes: vec![ex("Product")],
            aggregation: Some(Aggregation {
                measures: vec![
                    Measure {
                        function: SetFunction::Min,
                        of: weight.clone(),
                    },
                    Measure {
                        function: SetFunction::Max,
                        of: weight,
                    },
                ],
                group: Grouping::PerValue(vec![Step::forward(&ex("category"))]),
                having: None,
            }),
            columns: vec![
                Column::Value(vec![Step::forward(&ex("category"))]),
                Column::Measure(0),
                Column::Measure(1),
            ],
            ..QueryPlan::default()
        };
        let text = compiled(&plan);
        assert!(text.starts_with("SELECT ?v1 ?min ?max WHERE"), "{text}");
        assert!(text.contains("GROUP BY ?v1"), "{text}");
    }

    #[test]
    fn negation_is_not_exists_with_walks_of_its_own() {
        // "Which departments have no manager?", not "which departments have a manager".
        let mut plan = QueryPlan {
            classes: vec![ex("Department")],
            constraints: vec![Constraint::Not(Box::new(Constraint::IsA {
                path: vec![Step::back(&ex("manages"))],
                classes: vec![ex("Manager")],
            }))],
            ..QueryPlan::default()
        };
        let text = compiled(&plan);
        assert!(text.contains("FILTER(NOT EXISTS {"), "{text}");
        assert!(
            text.contains("?v1 <http://example.org/manages> ?x"),
            "{text}"
        );
        plan.constraints = vec![Constraint::IsA {
            path: vec![Step::back(&ex("manages"))],
            classes: vec![ex("Manager")],
        }];
        assert!(!compiled(&plan).contains("EXISTS"));
    }

    #[test]
    fn comparisons_with_a_number_and_between_two_values() {
        let plan = QueryPlan {
            classes: vec![ex("Box")],
            constraints: vec![
                Constraint::CompareValues {
                    left: vec![Step::forward(&ex("width"))],
                    op: Comparison::Greater,
                    right: vec![Step::forward(&ex("height"))],
                },
                Constraint::Compare {
                    path: vec![Step::forward(&ex("weight"))],
                    op: Comparison::LessOrEqual,
                    value: Value::typed("2.5", "http://www.w3.org/2001/XMLSchema#decimal"),
                },
            ],
            ..QueryPlan::default()
        };
        let text = compiled(&plan);
        assert!(text.contains("(?v1 > ?v2)"), "{text}");
        assert!(
            text.contains("(?v3 <= \"2.5\"^^<http://www.w3.org/2001/XMLSchema#decimal>)"),
            "{text}"
        );
    }

    #[test]
    fn a_yes_or_no_question_is_an_ask() {
        let mut plan = vendors();
        plan.form = Form::Ask;
        plan.constraints.push(Constraint::Reaches {
            path: vec![Step::forward(&ex("basedIn"))],
            any_of: vec![Value::iri(&ex("oslo")), Value::iri(&ex("bergen"))],
        });
        let text = compiled(&plan);
        assert!(text.starts_with("ASK WHERE"), "{text}");
        assert!(
            text.contains(
                "VALUES ( ?v1 ) { ( <http://example.org/oslo> ) ( <http://example.org/bergen> )"
            ),
            "{text}"
        );
    }

    #[test]
    fn hostile_text_stays_one_literal() {
        let mut plan = vendors();
        plan.constraints.push(Constraint::Contains {
            path: vec![Step::forward(&ex("name"))],
            text: "x\") } ; DROP ALL #".into(),
        });
        let text = compiled(&plan);
        let reparsed = spargebra::SparqlParser::new()
            .parse_query(&text)
            .expect("parses");
        assert_eq!(reparsed.to_string(), text);
        assert!(
            text.contains(r#"FILTER(CONTAINS(LCASE(STR(?v1)), "x\") } ; drop all #"))"#),
            "{text}"
        );
    }

    #[test]
    fn broken_plans_are_refused_with_a_reason() {
        let mut plan = vendors();
        plan.columns = vec![Column::Measure(0)];
        assert!(plan.compile(CompileOptions::default()).is_err());
        let plan = QueryPlan {
            classes: vec!["not an iri".into()],
            ..QueryPlan::default()
        };
        let error = plan
            .compile(CompileOptions::default())
            .expect_err("refused");
        assert!(error.to_string().contains("not an IRI"), "{error}");
    }

    #[test]
    fn without_entailment_classes_are_matched_through_subclasses() {
        let text = vendors()
            .compile(CompileOptions { entailment: false })
            .expect("compiles")
            .to_string();
        assert!(text.contains("(<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> / (<http://www.w3.org/2000/01/rdf-schema#subClassOf>)*)"), "{text}");
    }

    #[test]
    fn plans_round_trip_through_json() {
        let mut plan = vendors();
        plan.constraints
            .push(Constraint::Not(Box::new(Constraint::Exists {
                path: vec![Step::forward(&ex("sells"))],
            })));
        let json = serde_json::to_string(&plan).expect("json");
        let back: QueryPlan = serde_json::from_str(&json).expect("back");
        assert_eq!(back, plan);
    }
}
