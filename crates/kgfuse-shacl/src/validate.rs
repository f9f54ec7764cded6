//! Validating a data graph against read shapes (SHACL 3 and 4): focus nodes from
//! each shape's targets, value nodes through its path, every constraint checked
//! against them, results collected as SHACL's validation results.

use crate::ValidationResult;
use crate::shapes::{Constraint, NodeKind, Path, SH, Shape, as_node};
use oxrdf::vocab::{rdf, rdfs};
use oxrdf::{Graph, Literal, NamedNode, NamedOrBlankNode, Term, TermRef};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// How deep `sh:node`, `sh:not`, `sh:and`, ... may nest while checking one
/// value (recursive shapes are undefined in SHACL: past this, an error).
const MAX_NESTING: usize = 64;

pub(crate) struct Validator<'a> {
    pub data: &'a Graph,
    pub shapes: &'a HashMap<NamedOrBlankNode, Shape>,
    /// Which focus nodes to check.
    pub keep: &'a dyn Fn(&Term) -> bool,
}

/// A shape nested past [`MAX_NESTING`] (a recursive shape).
#[derive(Debug)]
pub(crate) struct TooDeep(pub NamedOrBlankNode);

type Outcome = Result<(), TooDeep>;

/// Records one failed value: the value (if any), a result path other than the
/// shape's (`sh:closed` names the predicate), and what failed.
type Fail<'f> = dyn FnMut(Option<&Term>, Option<&NamedNode>, String) + 'f;

impl Validator<'_> {
    /// Every result of every shape with targets.
    pub fn run(&self) -> Result<Vec<ValidationResult>, TooDeep> {
        let mut results = Vec::new();
        for shape in self.shapes.values().filter(|s| s.has_targets()) {
            for focus in self.focus_nodes(shape).iter().filter(|f| (self.keep)(f)) {
                self.check(shape, focus, &mut results, 0)?;
            }
        }
        Ok(results)
    }

    /// The focus nodes of a shape's targets, each once.
    fn focus_nodes(&self, shape: &Shape) -> HashSet<Term> {
        let mut out: HashSet<Term> = shape.target_nodes.iter().cloned().collect();
        for class in &shape.target_classes {
            for class in self.subclasses(class) {
                out.extend(
                    self.data
                        .subjects_for_predicate_object(rdf::TYPE, &class)
                        .map(|s| Term::from(s.into_owned())),
                );
            }
        }
        for predicate in &shape.target_subjects_of {
            out.extend(
                self.data
                    .triples_for_predicate(predicate)
                    .map(|t| Term::from(t.subject.into_owned())),
            );
        }
        for predicate in &shape.target_objects_of {
            out.extend(
                self.data
                    .triples_for_predicate(predicate)
                    .map(|t| t.object.into_owned()),
            );
        }
        out
    }

    /// A class and its subclasses in the data graph (`rdfs:subClassOf*`, cycles
    /// included).
    fn subclasses(&self, class: &NamedNode) -> Vec<NamedNode> {
        let mut seen = BTreeSet::from([class.clone()]);
        let mut pending = vec![class.clone()];
        while let Some(next) = pending.pop() {
            for sub in self
                .data
                .subjects_for_predicate_object(rdfs::SUB_CLASS_OF, &next)
            {
                if let oxrdf::NamedOrBlankNodeRef::NamedNode(sub) = sub
                    && seen.insert(sub.into_owned())
                {
                    pending.push(sub.into_owned());
                }
            }
        }
        seen.into_iter().collect()
    }

    /// Whether `node` is a SHACL instance of `class` (a type that is the class or
    /// one of its subclasses).
    fn is_instance(&self, node: &Term, class: &NamedNode) -> bool {
        let Some(subject) = as_node(node) else {
            return false;
        };
        let classes: HashSet<NamedNode> = self.subclasses(class).into_iter().collect();
        self.data
            .objects_for_subject_predicate(&subject, rdf::TYPE)
            .any(|t| matches!(t, TermRef::NamedNode(n) if classes.contains(&n.into_owned())))
    }

    /// Checks `focus` against `shape`, adding a result per failed value.
    fn check(
        &self,
        shape: &Shape,
        focus: &Term,
        results: &mut Vec<ValidationResult>,
        depth: usize,
    ) -> Outcome {
        if shape.deactivated {
            return Ok(());
        }
        if depth > MAX_NESTING {
            return Err(TooDeep(shape.id.clone()));
        }
        let values: Vec<Term> = match &shape.path {
            Some(path) => self.follow(path, focus).into_iter().collect(),
            None => vec![focus.clone()],
        };
        for constraint in &shape.constraints {
            let mut failed = Vec::new();
            let mut fail = |value: Option<&Term>, path: Option<&NamedNode>, detail: String| {
                failed.push((value.cloned(), path.cloned(), detail));
            };
            self.check_constraint(shape, constraint, focus, &values, &mut fail, results, depth)?;
            for (value, path, detail) in failed {
                let mut result = self.result(shape, constraint, focus, value.as_ref(), detail);
                if let Some(path) = path {
                    result.path = Some(path.into_string());
                }
                results.push(result);
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn check_constraint(
        &self,
        shape: &Shape,
        constraint: &Constraint,
        focus: &Term,
        values: &[Term],
        fail: &mut Fail<'_>,
        results: &mut Vec<ValidationResult>,
        depth: usize,
    ) -> Outcome {
        let each =
            |fail: &mut Fail<'_>, ok: &dyn Fn(&Term) -> bool, detail: &dyn Fn(&Term) -> String| {
                for value in values {
                    if !ok(value) {
                        fail(Some(value), None, detail(value));
                    }
                }
            };
        match constraint {
            Constraint::Class(class) => each(fail, &|v| self.is_instance(v, class), &|v| {
                format!("{v} is not an instance of {class}")
            }),
            Constraint::Datatype(datatype) => each(
                fail,
                &|v| matches!(v, Term::Literal(l) if l.datatype() == datatype.as_ref() && well_formed(l)),
                &|v| format!("{v} is not a well-formed literal of datatype {datatype}"),
            ),
            Constraint::NodeKind(kind) => each(fail, &|v| node_kind_matches(*kind, v), &|v| {
                format!("{v} is not of node kind {kind:?}")
            }),
            Constraint::MinCount(min) => {
                if (values.len() as u64) < *min {
                    fail(
                        None,
                        None,
                        format!("needs at least {min} value(s), has {}", values.len()),
                    );
                }
            }
            Constraint::MaxCount(max) => {
                if values.len() as u64 > *max {
                    fail(
                        None,
                        None,
                        format!("allows at most {max} value(s), has {}", values.len()),
                    );
                }
            }
            Constraint::MinExclusive(bound) => each(
                fail,
                &|v| compare(v, bound) == Some(Ordering::Greater),
                &|v| format!("{v} is not greater than {bound}"),
            ),
            Constraint::MinInclusive(bound) => each(
                fail,
                &|v| matches!(compare(v, bound), Some(Ordering::Greater | Ordering::Equal)),
                &|v| format!("{v} is less than {bound}"),
            ),
            Constraint::MaxExclusive(bound) => {
                each(fail, &|v| compare(v, bound) == Some(Ordering::Less), &|v| {
                    format!("{v} is not less than {bound}")
                })
            }
            Constraint::MaxInclusive(bound) => each(
                fail,
                &|v| matches!(compare(v, bound), Some(Ordering::Less | Ordering::Equal)),
                &|v| format!("{v} is greater than {bound}"),
            ),
            Constraint::MinLength(min) => each(
                fail,
                &|v| string_of(v).is_some_and(|s| s.chars().count() as u64 >= *min),
                &|v| format!("{v} is shorter than {min} characters (or a blank node)"),
            ),
            Constraint::MaxLength(max) => each(
                fail,
                &|v| string_of(v).is_some_and(|s| s.chars().count() as u64 <= *max),
                &|v| format!("{v} is longer than {max} characters (or a blank node)"),
            ),
            Constraint::Pattern(regex, pattern) => each(
                fail,
                &|v| string_of(v).is_some_and(|s| regex.is_match(&s)),
                &|v| format!("{v} does not match {pattern:?}"),
            ),
            Constraint::LanguageIn(languages) => each(
                fail,
                &|v| matches!(v, Term::Literal(l) if l.language().is_some_and(|tag| language_in(tag, languages))),
                &|v| format!("{v} has no language tag among {}", languages.join(", ")),
            ),
            Constraint::UniqueLang => {
                let mut seen = BTreeMap::<String, usize>::new();
                for value in values {
                    if let Term::Literal(l) = value
                        && let Some(tag) = l.language()
                    {
                        *seen.entry(tag.to_ascii_lowercase()).or_default() += 1;
                    }
                }
                for (tag, n) in seen.into_iter().filter(|(_, n)| *n > 1) {
                    fail(
                        None,
                        None,
                        format!("{n} values share the language tag {tag}"),
                    );
                }
            }
            Constraint::Equals(predicate) | Constraint::Disjoint(predicate) => {
                let others: HashSet<Term> = self.follow(&Path::Predicate(predicate.clone()), focus);
                let own: HashSet<Term> = values.iter().cloned().collect();
                if matches!(constraint, Constraint::Equals(_)) {
                    for value in own.symmetric_difference(&others) {
                        fail(
                            Some(value),
                            None,
                            format!("{value} is not a value of both the path and {predicate}"),
                        );
                    }
                } else {
                    for value in own.intersection(&others) {
                        fail(
                            Some(value),
                            None,
                            format!("{value} is also a value of {predicate}"),
                        );
                    }
                }
            }
            Constraint::LessThan(predicate) | Constraint::LessThanOrEquals(predicate) => {
                let or_equal = matches!(constraint, Constraint::LessThanOrEquals(_));
                let others = self.follow(&Path::Predicate(predicate.clone()), focus);
                for value in values {
                    for other in &others {
                        let ok = match (value, other) {
                            (Term::Literal(_), Term::Literal(bound)) => match compare(value, bound)
                            {
                                Some(Ordering::Less) => true,
                                Some(Ordering::Equal) => or_equal,
                                _ => false,
                            },
                            _ => false,
                        };
                        if !ok {
                            fail(
                                Some(value),
                                None,
                                format!("{value} is not less than {other} ({predicate})"),
                            );
                        }
                    }
                }
            }
            Constraint::Qualified(q) => {
                let mut conforming = 0u64;
                for value in values {
                    let mut counts = self.conforms(&q.shape, value, depth)?;
                    for sibling in &q.disjoint_from {
                        if counts && self.conforms(sibling, value, depth)? {
                            counts = false;
                        }
                    }
                    conforming += u64::from(counts);
                }
                if q.min && conforming < q.count {
                    fail(
                        None,
                        None,
                        format!(
                            "{conforming} value(s) conform to {}, at least {} needed",
                            q.shape, q.count
                        ),
                    );
                } else if !q.min && conforming > q.count {
                    fail(
                        None,
                        None,
                        format!(
                            "{conforming} value(s) conform to {}, at most {} allowed",
                            q.shape, q.count
                        ),
                    );
                }
            }
            Constraint::Not(other) => {
                for value in values {
                    if self.conforms(other, value, depth)? {
                        fail(
                            Some(value),
                            None,
                            format!("{value} conforms to {other}, which sh:not forbids"),
                        );
                    }
                }
            }
            Constraint::And(list) | Constraint::Or(list) | Constraint::Xone(list) => {
                for value in values {
                    let mut passed = 0;
                    for other in list {
                        passed += usize::from(self.conforms(other, value, depth)?);
                    }
                    let ok = match constraint {
                        Constraint::And(_) => passed == list.len(),
                        Constraint::Or(_) => passed >= 1,
                        _ => passed == 1,
                    };
                    if !ok {
                        fail(
                            Some(value),
                            None,
                            format!("{value} conforms to {passed} of {} shapes", list.len()),
                        );
                    }
                }
            }
            Constraint::Node(other) => {
                for value in values {
                    if !self.conforms(other, value, depth)? {
                        fail(
                            Some(value),
                            None,
                            format!("{value} does not conform to {other}"),
                        );
                    }
                }
            }
            Constraint::Property(property) => {
                // A property shape reports its own results, for each value node.
                if let Some(property) = self.shapes.get(property) {
                    for value in values {
                        self.check(property, value, results, depth + 1)?;
                    }
                }
            }
            Constraint::In(allowed) => each(fail, &|v| allowed.contains(v), &|v| {
                format!("{v} is not one of the sh:in values")
            }),
            Constraint::HasValue(expected) => {
                if !values.contains(expected) {
                    fail(None, None, format!("does not have the value {expected}"));
                }
            }
            Constraint::Closed(allowed) => {
                if shape.path.is_none() {
                    for value in values {
                        for (predicate, object) in self.outgoing(value) {
                            if !allowed.contains(&predicate) {
                                fail(
                                    Some(&object),
                                    Some(&predicate),
                                    format!("{predicate} is not allowed on a closed shape"),
                                );
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `value` conforms to the shape named `shape` (no results at all).
    fn conforms(
        &self,
        shape: &NamedOrBlankNode,
        value: &Term,
        depth: usize,
    ) -> Result<bool, TooDeep> {
        let Some(shape) = self.shapes.get(shape) else {
            return Ok(true);
        };
        let mut results = Vec::new();
        self.check(shape, value, &mut results, depth + 1)?;
        Ok(results.is_empty())
    }

    fn outgoing(&self, node: &Term) -> Vec<(NamedNode, Term)> {
        let Some(subject) = as_node(node) else {
            return Vec::new();
        };
        self.data
            .triples_for_subject(&subject)
            .map(|t| (t.predicate.into_owned(), t.object.into_owned()))
            .collect()
    }

    /// The value nodes reached from `focus` through `path`.
    fn follow(&self, path: &Path, focus: &Term) -> HashSet<Term> {
        self.follow_all(path, &HashSet::from([focus.clone()]))
    }

    fn follow_all(&self, path: &Path, from: &HashSet<Term>) -> HashSet<Term> {
        match path {
            Path::Predicate(predicate) => from
                .iter()
                .filter_map(as_node)
                .flat_map(|s| {
                    self.data
                        .objects_for_subject_predicate(&s, predicate)
                        .map(TermRef::into_owned)
                        .collect::<Vec<_>>()
                })
                .collect(),
            Path::Inverse(inner) => match inner.as_ref() {
                Path::Predicate(predicate) => from
                    .iter()
                    .flat_map(|o| {
                        self.data
                            .subjects_for_predicate_object(predicate, o)
                            .map(|s| Term::from(s.into_owned()))
                            .collect::<Vec<_>>()
                    })
                    .collect(),
                inner => self.inverse(inner, from),
            },
            Path::Sequence(steps) => steps
                .iter()
                .fold(from.clone(), |nodes, step| self.follow_all(step, &nodes)),
            Path::Alternative(paths) => paths
                .iter()
                .flat_map(|p| self.follow_all(p, from))
                .collect(),
            Path::ZeroOrOne(inner) => {
                let mut out = from.clone();
                out.extend(self.follow_all(inner, from));
                out
            }
            Path::ZeroOrMore(inner) | Path::OneOrMore(inner) => {
                let mut reached = HashSet::new();
                let mut frontier = self.follow_all(inner, from);
                while !frontier.is_empty() {
                    let new: HashSet<Term> = frontier.difference(&reached).cloned().collect();
                    reached.extend(new.iter().cloned());
                    frontier = self.follow_all(inner, &new);
                }
                if matches!(path, Path::ZeroOrMore(_)) {
                    reached.extend(from.iter().cloned());
                }
                reached
            }
        }
    }

    /// The inverse of a complex path: every node from which `path` reaches one of
    /// `targets` (found by walking each candidate subject forward).
    fn inverse(&self, path: &Path, targets: &HashSet<Term>) -> HashSet<Term> {
        let mut candidates = HashSet::new();
        for triple in self.data.iter() {
            candidates.insert(Term::from(triple.subject.into_owned()));
            candidates.insert(triple.object.into_owned());
        }
        candidates
            .into_iter()
            .filter(|c| !self.follow(path, c).is_disjoint(targets))
            .collect()
    }

    fn result(
        &self,
        shape: &Shape,
        constraint: &Constraint,
        focus: &Term,
        value: Option<&Term>,
        detail: String,
    ) -> ValidationResult {
        let severity = match shape.severity.as_str().strip_prefix(SH) {
            Some(local @ ("Violation" | "Warning" | "Info")) => local.to_owned(),
            _ => shape.severity.as_str().to_owned(),
        };
        ValidationResult {
            focus_node: term_text(focus),
            path: shape.path.as_ref().map(path_text),
            component: format!("{SH}{}", constraint.component()),
            severity,
            message: shape.messages.first().cloned().unwrap_or(detail),
            value: value.map(term_text),
            shape: Some(term_text(&Term::from(shape.id.clone()))),
        }
    }
}

/// IRIs bare, other terms in N-Triples syntax.
pub(crate) fn term_text(term: &Term) -> String {
    match term {
        Term::NamedNode(n) => n.as_str().to_owned(),
        other => other.to_string(),
    }
}

/// A path in SPARQL property-path syntax with full IRIs.
fn path_text(path: &Path) -> String {
    let join =
        |paths: &[Path], sep: &str| paths.iter().map(path_text).collect::<Vec<_>>().join(sep);
    match path {
        Path::Predicate(p) => p.as_str().to_owned(),
        Path::Inverse(p) => format!("^{}", path_text(p)),
        Path::Sequence(ps) => format!("({})", join(ps, "/")),
        Path::Alternative(ps) => format!("({})", join(ps, "|")),
        Path::ZeroOrMore(p) => format!("{}*", path_text(p)),
        Path::OneOrMore(p) => format!("{}+", path_text(p)),
        Path::ZeroOrOne(p) => format!("{}?", path_text(p)),
    }
}

fn node_kind_matches(kind: NodeKind, term: &Term) -> bool {
    let (iri, blank, literal) = match term {
        Term::NamedNode(_) => (true, false, false),
        Term::BlankNode(_) => (false, true, false),
        Term::Literal(_) => (false, false, true),
    };
    match kind {
        NodeKind::Iri => iri,
        NodeKind::BlankNode => blank,
        NodeKind::Literal => literal,
        NodeKind::BlankNodeOrIri => blank || iri,
        NodeKind::BlankNodeOrLiteral => blank || literal,
        NodeKind::IriOrLiteral => iri || literal,
    }
}

/// The string value for length and pattern checks (none for a blank node).
fn string_of(term: &Term) -> Option<String> {
    match term {
        Term::NamedNode(n) => Some(n.as_str().to_owned()),
        Term::Literal(l) => Some(l.value().to_owned()),
        Term::BlankNode(_) => None,
    }
}

/// SPARQL `langMatches` basic filtering: `en` matches `en` and `en-GB`.
fn language_in(tag: &str, ranges: &[String]) -> bool {
    let tag = tag.to_ascii_lowercase();
    ranges.iter().any(|range| {
        range == "*"
            || tag == *range
            || tag
                .strip_prefix(range.as_str())
                .is_some_and(|rest| rest.starts_with('-'))
    })
}

/// The XSD type of a literal, by local name (none outside the XSD namespace).
fn xsd_local(literal: &Literal) -> Option<&str> {
    literal
        .datatype()
        .as_str()
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
}

/// The value range of an XSD integer type (`None` for a type that is not one).
fn integer_range(local: &str) -> Option<(i128, i128)> {
    Some(match local {
        "integer" => (i128::MIN, i128::MAX),
        "long" => (i64::MIN.into(), i64::MAX.into()),
        "int" => (i32::MIN.into(), i32::MAX.into()),
        "short" => (i16::MIN.into(), i16::MAX.into()),
        "byte" => (i8::MIN.into(), i8::MAX.into()),
        "nonNegativeInteger" => (0, i128::MAX),
        "positiveInteger" => (1, i128::MAX),
        "nonPositiveInteger" => (i128::MIN, 0),
        "negativeInteger" => (i128::MIN, -1),
        "unsignedLong" => (0, u64::MAX.into()),
        "unsignedInt" => (0, u32::MAX.into()),
        "unsignedShort" => (0, u16::MAX.into()),
        "unsignedByte" => (0, u8::MAX.into()),
        _ => return None,
    })
}

/// A literal's value as far as ordering goes.
enum Ordered {
    Decimal(oxsdatatypes::Decimal),
    Double(oxsdatatypes::Double),
    DateTime(oxsdatatypes::DateTime),
    Date(oxsdatatypes::Date),
    Time(oxsdatatypes::Time),
    String(String),
}

/// Reads a literal in the value space of its XSD type (`None`: ill-formed, or a
/// type kgfuse does not order).
fn ordered(literal: &Literal) -> Option<Ordered> {
    let text = literal.value();
    let local = xsd_local(literal)?;
    if integer_range(local).is_some() || local == "decimal" {
        return text.parse().ok().map(Ordered::Decimal);
    }
    Some(match local {
        "double" | "float" => Ordered::Double(text.parse().ok()?),
        "dateTime" | "dateTimeStamp" => Ordered::DateTime(text.parse().ok()?),
        "date" => Ordered::Date(text.parse().ok()?),
        "time" => Ordered::Time(text.parse().ok()?),
        "string" => Ordered::String(text.to_owned()),
        _ => return None,
    })
}

/// Compares two literals as XSD orders them (numbers across numeric types; dates
/// and times with time zones, a value without one being incomparable to one with
/// one that is within 14 hours); anything else is incomparable (`None`), which
/// fails a range constraint.
fn compare(value: &Term, bound: &Literal) -> Option<Ordering> {
    let Term::Literal(value) = value else {
        return None;
    };
    if !well_formed(value) {
        return None;
    }
    match (ordered(value)?, ordered(bound)?) {
        (Ordered::Decimal(a), Ordered::Decimal(b)) => a.partial_cmp(&b),
        (Ordered::Double(a), Ordered::Double(b)) => a.partial_cmp(&b),
        (Ordered::Decimal(a), Ordered::Double(b)) => oxsdatatypes::Double::from(a).partial_cmp(&b),
        (Ordered::Double(a), Ordered::Decimal(b)) => a.partial_cmp(&oxsdatatypes::Double::from(b)),
        (Ordered::DateTime(a), Ordered::DateTime(b)) => a.partial_cmp(&b),
        (Ordered::Date(a), Ordered::Date(b)) => a.partial_cmp(&b),
        (Ordered::Time(a), Ordered::Time(b)) => a.partial_cmp(&b),
        (Ordered::String(a), Ordered::String(b)) => Some(a.cmp(&b)),
        _ => None,
    }
}

/// Whether a literal's text is in the lexical space of its XSD type and its value
/// in the type's range (`"300"^^xsd:byte` is not); other types are taken as well
/// formed.
fn well_formed(literal: &Literal) -> bool {
    let text = literal.value();
    let Some(local) = xsd_local(literal) else {
        return true;
    };
    if let Some((min, max)) = integer_range(local) {
        let digits = text.strip_prefix('+').unwrap_or(text);
        return digits
            .parse::<i128>()
            .is_ok_and(|n| (min..=max).contains(&n));
    }
    match local {
        "decimal" => text.parse::<oxsdatatypes::Decimal>().is_ok(),
        "double" => text.parse::<oxsdatatypes::Double>().is_ok(),
        "float" => text.parse::<oxsdatatypes::Float>().is_ok(),
        "boolean" => text.parse::<oxsdatatypes::Boolean>().is_ok(),
        "date" => text.parse::<oxsdatatypes::Date>().is_ok(),
        "dateTime" => text.parse::<oxsdatatypes::DateTime>().is_ok(),
        "time" => text.parse::<oxsdatatypes::Time>().is_ok(),
        _ => true,
    }
}
