//! Reading a shapes graph into [`Shape`]s: targets, a path for property shapes,
//! and the constraints kgfuse evaluates (SHACL Core without SPARQL-based
//! constraints and qualified value shapes, which are refused by name).

use crate::ShaclError;
use oxrdf::vocab::{rdf, rdfs};
use oxrdf::{Graph, Literal, NamedNode, NamedNodeRef, NamedOrBlankNode, Term, TermRef};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The SHACL namespace.
pub(crate) const SH: &str = "http://www.w3.org/ns/shacl#";
const OWL_CLASS: &str = "http://www.w3.org/2002/07/owl#Class";

/// `sh:<local>` as an IRI.
pub(crate) fn sh(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{SH}{local}"))
}

/// Constraint parameters kgfuse does not evaluate (SHACL-SPARQL and SHACL-AF): a
/// shapes graph using one is refused rather than half-checked.
const UNSUPPORTED: [&str; 2] = ["sparql", "target"];

/// A property path (SHACL 2.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Path {
    Predicate(NamedNode),
    Inverse(Box<Path>),
    Sequence(Vec<Path>),
    Alternative(Vec<Path>),
    ZeroOrMore(Box<Path>),
    OneOrMore(Box<Path>),
    ZeroOrOne(Box<Path>),
}

/// `sh:nodeKind` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Iri,
    BlankNode,
    Literal,
    BlankNodeOrIri,
    BlankNodeOrLiteral,
    IriOrLiteral,
}

/// One constraint of a shape, with its parameters read.
#[derive(Debug, Clone)]
pub(crate) enum Constraint {
    Class(NamedNode),
    Datatype(NamedNode),
    NodeKind(NodeKind),
    MinCount(u64),
    MaxCount(u64),
    MinExclusive(Literal),
    MinInclusive(Literal),
    MaxExclusive(Literal),
    MaxInclusive(Literal),
    MinLength(u64),
    MaxLength(u64),
    Pattern(regex::Regex, String),
    LanguageIn(Vec<String>),
    UniqueLang,
    Equals(NamedNode),
    Disjoint(NamedNode),
    LessThan(NamedNode),
    LessThanOrEquals(NamedNode),
    /// `sh:qualifiedValueShape` with `sh:qualifiedMinCount` (`min`) or
    /// `sh:qualifiedMaxCount`: how many values conform to `shape` (and, when
    /// disjoint, to none of the sibling shapes).
    Qualified(Qualified),
    Not(NamedOrBlankNode),
    And(Vec<NamedOrBlankNode>),
    Or(Vec<NamedOrBlankNode>),
    Xone(Vec<NamedOrBlankNode>),
    Node(NamedOrBlankNode),
    Property(NamedOrBlankNode),
    In(Vec<Term>),
    HasValue(Term),
    Closed(BTreeSet<NamedNode>),
}

impl Constraint {
    /// The constraint component's local name (`MinCountConstraintComponent`, ...).
    pub(crate) fn component(&self) -> &'static str {
        match self {
            Self::Class(_) => "ClassConstraintComponent",
            Self::Datatype(_) => "DatatypeConstraintComponent",
            Self::NodeKind(_) => "NodeKindConstraintComponent",
            Self::MinCount(_) => "MinCountConstraintComponent",
            Self::MaxCount(_) => "MaxCountConstraintComponent",
            Self::MinExclusive(_) => "MinExclusiveConstraintComponent",
            Self::MinInclusive(_) => "MinInclusiveConstraintComponent",
            Self::MaxExclusive(_) => "MaxExclusiveConstraintComponent",
            Self::MaxInclusive(_) => "MaxInclusiveConstraintComponent",
            Self::MinLength(_) => "MinLengthConstraintComponent",
            Self::MaxLength(_) => "MaxLengthConstraintComponent",
            Self::Pattern(..) => "PatternConstraintComponent",
            Self::LanguageIn(_) => "LanguageInConstraintComponent",
            Self::UniqueLang => "UniqueLangConstraintComponent",
            Self::Equals(_) => "EqualsConstraintComponent",
            Self::Disjoint(_) => "DisjointConstraintComponent",
            Self::LessThan(_) => "LessThanConstraintComponent",
            Self::LessThanOrEquals(_) => "LessThanOrEqualsConstraintComponent",
            Self::Qualified(q) if q.min => "QualifiedMinCountConstraintComponent",
            Self::Qualified(_) => "QualifiedMaxCountConstraintComponent",
            Self::Not(_) => "NotConstraintComponent",
            Self::And(_) => "AndConstraintComponent",
            Self::Or(_) => "OrConstraintComponent",
            Self::Xone(_) => "XoneConstraintComponent",
            Self::Node(_) => "NodeConstraintComponent",
            Self::Property(_) => "PropertyConstraintComponent",
            Self::In(_) => "InConstraintComponent",
            Self::HasValue(_) => "HasValueConstraintComponent",
            Self::Closed(_) => "ClosedConstraintComponent",
        }
    }
}

/// The parameters of a qualified value shape constraint.
#[derive(Debug, Clone)]
pub(crate) struct Qualified {
    pub shape: NamedOrBlankNode,
    /// Set for `sh:qualifiedMinCount`, unset for `sh:qualifiedMaxCount`.
    pub min: bool,
    pub count: u64,
    /// The qualified value shapes of the sibling property shapes, when
    /// `sh:qualifiedValueShapesDisjoint` is true.
    pub disjoint_from: Vec<NamedOrBlankNode>,
}

/// A node or property shape.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub id: NamedOrBlankNode,
    /// `sh:path`: set for a property shape.
    pub path: Option<Path>,
    pub target_nodes: Vec<Term>,
    pub target_classes: Vec<NamedNode>,
    pub target_subjects_of: Vec<NamedNode>,
    pub target_objects_of: Vec<NamedNode>,
    pub constraints: Vec<Constraint>,
    /// `sh:severity` (IRI), `sh:Violation` by default.
    pub severity: NamedNode,
    /// `sh:message`, in the order given (the first is reported).
    pub messages: Vec<String>,
    pub deactivated: bool,
}

impl Shape {
    /// Whether the shape has any target (only those start a validation).
    pub fn has_targets(&self) -> bool {
        !(self.target_nodes.is_empty()
            && self.target_classes.is_empty()
            && self.target_subjects_of.is_empty()
            && self.target_objects_of.is_empty())
    }
}

/// A term as a node (a subject or a shape), `None` for a literal.
pub(crate) fn as_node(term: &Term) -> Option<NamedOrBlankNode> {
    match term {
        Term::NamedNode(n) => Some(n.clone().into()),
        Term::BlankNode(b) => Some(b.clone().into()),
        Term::Literal(_) => None,
    }
}

/// An invalid-shape error about the node (or path or list) `at`.
fn invalid_at(at: &impl std::fmt::Display, message: impl Into<String>) -> ShaclError {
    ShaclError::InvalidShape {
        shape: at.to_string(),
        message: message.into(),
    }
}

/// Every shape of a shapes graph, by its node.
pub(crate) fn read_shapes(graph: &Graph) -> Result<HashMap<NamedOrBlankNode, Shape>, ShaclError> {
    let reader = Reader { graph };
    let mut shapes = HashMap::new();
    let mut pending: Vec<NamedOrBlankNode> = reader.shape_nodes();
    while let Some(node) = pending.pop() {
        if shapes.contains_key(&node) {
            continue;
        }
        let shape = reader.shape(&node)?;
        for constraint in &shape.constraints {
            match constraint {
                Constraint::Not(s) | Constraint::Node(s) | Constraint::Property(s) => {
                    pending.push(s.clone());
                }
                Constraint::Qualified(q) => {
                    pending.push(q.shape.clone());
                    pending.extend(q.disjoint_from.iter().cloned());
                }
                Constraint::And(list) | Constraint::Or(list) | Constraint::Xone(list) => {
                    pending.extend(list.iter().cloned());
                }
                _ => {}
            }
        }
        shapes.insert(node, shape);
    }
    Ok(shapes)
}

struct Reader<'a> {
    graph: &'a Graph,
}

impl Reader<'_> {
    /// Nodes that are shapes by declaration or by having a target or a path.
    fn shape_nodes(&self) -> Vec<NamedOrBlankNode> {
        let mut nodes = HashSet::new();
        for class in ["NodeShape", "PropertyShape"] {
            let class = sh(class);
            nodes.extend(
                self.graph
                    .subjects_for_predicate_object(rdf::TYPE, &class)
                    .map(|s| s.into_owned()),
            );
        }
        for predicate in [
            "targetNode",
            "targetClass",
            "targetSubjectsOf",
            "targetObjectsOf",
            "path",
        ] {
            let predicate = sh(predicate);
            nodes.extend(
                self.graph
                    .triples_for_predicate(&predicate)
                    .map(|t| t.subject.into_owned()),
            );
        }
        nodes.into_iter().collect()
    }

    fn objects(&self, node: &NamedOrBlankNode, local: &str) -> Vec<Term> {
        let predicate = sh(local);
        self.graph
            .objects_for_subject_predicate(node, &predicate)
            .map(TermRef::into_owned)
            .collect()
    }

    fn shape(&self, node: &NamedOrBlankNode) -> Result<Shape, ShaclError> {
        let invalid = |message: String| invalid_at(node, message);
        for local in UNSUPPORTED {
            if !self.objects(node, local).is_empty() {
                return Err(ShaclError::Unsupported {
                    shape: node.to_string(),
                    parameter: format!("sh:{local}"),
                });
            }
        }
        let iris = |local: &str| -> Result<Vec<NamedNode>, ShaclError> {
            self.objects(node, local)
                .into_iter()
                .map(|t| match t {
                    Term::NamedNode(n) => Ok(n),
                    other => Err(invalid(format!("sh:{local} must be an IRI, not {other}"))),
                })
                .collect()
        };
        let mut target_classes = iris("targetClass")?;
        // A shape that is also a class targets its own instances (implicit target).
        let is_class = [rdfs::CLASS, NamedNodeRef::new_unchecked(OWL_CLASS)]
            .iter()
            .any(|class| {
                self.graph
                    .contains(oxrdf::TripleRef::new(node, rdf::TYPE, *class))
            });
        if is_class && let NamedOrBlankNode::NamedNode(n) = node {
            target_classes.push(n.clone());
        }
        let paths = self.objects(node, "path");
        if paths.len() > 1 {
            return Err(invalid("a shape has at most one sh:path".into()));
        }
        let path = paths.first().map(|p| self.path(p, 0)).transpose()?;
        let severity = iris("severity")?
            .into_iter()
            .next()
            .unwrap_or_else(|| sh("Violation"));
        let messages = self
            .objects(node, "message")
            .into_iter()
            .filter_map(|t| match t {
                Term::Literal(l) => Some(l.value().to_owned()),
                _ => None,
            })
            .collect();
        let deactivated = self
            .objects(node, "deactivated")
            .iter()
            .any(|t| matches!(t, Term::Literal(l) if l.value() == "true"));
        Ok(Shape {
            id: node.clone(),
            path,
            target_nodes: self.objects(node, "targetNode"),
            target_classes,
            target_subjects_of: iris("targetSubjectsOf")?,
            target_objects_of: iris("targetObjectsOf")?,
            constraints: self.constraints(node)?,
            severity,
            messages,
            deactivated,
        })
    }

    fn constraints(&self, node: &NamedOrBlankNode) -> Result<Vec<Constraint>, ShaclError> {
        let invalid = |message: String| invalid_at(node, message);
        let iri = |term: Term, local: &str| match term {
            Term::NamedNode(n) => Ok(n),
            other => Err(invalid(format!("sh:{local} must be an IRI, not {other}"))),
        };
        let shape_ref = |term: Term, local: &str| {
            as_node(&term)
                .ok_or_else(|| invalid(format!("sh:{local} must name a shape, not {term}")))
        };
        let count = |term: Term, local: &str| match &term {
            Term::Literal(l) => l.value().parse::<u64>().map_err(|_| {
                invalid(format!(
                    "sh:{local} must be a non-negative integer, not {term}"
                ))
            }),
            _ => Err(invalid(format!(
                "sh:{local} must be a non-negative integer, not {term}"
            ))),
        };
        let literal = |term: Term, local: &str| match term {
            Term::Literal(l) => Ok(l),
            other => Err(invalid(format!(
                "sh:{local} must be a literal, not {other}"
            ))),
        };
        let mut out = Vec::new();
        for local in [
            "class",
            "datatype",
            "nodeKind",
            "minCount",
            "maxCount",
            "minExclusive",
            "minInclusive",
            "maxExclusive",
            "maxInclusive",
            "minLength",
            "maxLength",
            "languageIn",
            "uniqueLang",
            "equals",
            "disjoint",
            "lessThan",
            "lessThanOrEquals",
            "not",
            "and",
            "or",
            "xone",
            "node",
            "property",
            "in",
            "hasValue",
        ] {
            for value in self.objects(node, local) {
                let constraint = match local {
                    "class" => Constraint::Class(iri(value, local)?),
                    "datatype" => Constraint::Datatype(iri(value, local)?),
                    "nodeKind" => {
                        Constraint::NodeKind(node_kind(&iri(value, local)?).ok_or_else(|| {
                            invalid(
                                "sh:nodeKind must be sh:IRI, sh:BlankNode, sh:Literal, or a pair"
                                    .into(),
                            )
                        })?)
                    }
                    "minCount" => Constraint::MinCount(count(value, local)?),
                    "maxCount" => Constraint::MaxCount(count(value, local)?),
                    "minExclusive" => Constraint::MinExclusive(literal(value, local)?),
                    "minInclusive" => Constraint::MinInclusive(literal(value, local)?),
                    "maxExclusive" => Constraint::MaxExclusive(literal(value, local)?),
                    "maxInclusive" => Constraint::MaxInclusive(literal(value, local)?),
                    "minLength" => Constraint::MinLength(count(value, local)?),
                    "maxLength" => Constraint::MaxLength(count(value, local)?),
                    "languageIn" => Constraint::LanguageIn(
                        self.list(&value)?
                            .into_iter()
                            .map(|t| literal(t, local).map(|l| l.value().to_ascii_lowercase()))
                            .collect::<Result<_, _>>()?,
                    ),
                    "uniqueLang" => {
                        if matches!(&value, Term::Literal(l) if l.value() == "true") {
                            Constraint::UniqueLang
                        } else {
                            continue;
                        }
                    }
                    "equals" => Constraint::Equals(iri(value, local)?),
                    "disjoint" => Constraint::Disjoint(iri(value, local)?),
                    "lessThan" => Constraint::LessThan(iri(value, local)?),
                    "lessThanOrEquals" => Constraint::LessThanOrEquals(iri(value, local)?),
                    "not" => Constraint::Not(shape_ref(value, local)?),
                    "node" => Constraint::Node(shape_ref(value, local)?),
                    "property" => Constraint::Property(shape_ref(value, local)?),
                    "and" | "or" | "xone" => {
                        let list = self
                            .list(&value)?
                            .into_iter()
                            .map(|t| shape_ref(t, local))
                            .collect::<Result<Vec<_>, _>>()?;
                        match local {
                            "and" => Constraint::And(list),
                            "or" => Constraint::Or(list),
                            _ => Constraint::Xone(list),
                        }
                    }
                    "in" => Constraint::In(self.list(&value)?),
                    "hasValue" => Constraint::HasValue(value),
                    _ => unreachable!("every listed parameter is matched"),
                };
                out.push(constraint);
            }
        }
        for pattern in self.objects(node, "pattern") {
            let pattern = literal(pattern, "pattern")?;
            let flags = self
                .objects(node, "flags")
                .into_iter()
                .find_map(|t| match t {
                    Term::Literal(l) => Some(l.value().to_owned()),
                    _ => None,
                })
                .unwrap_or_default();
            let regex = regex::RegexBuilder::new(pattern.value())
                .case_insensitive(flags.contains('i'))
                .dot_matches_new_line(flags.contains('s'))
                .multi_line(flags.contains('m'))
                .ignore_whitespace(flags.contains('x'))
                .build()
                .map_err(|e| invalid(format!("sh:pattern {:?}: {e}", pattern.value())))?;
            out.push(Constraint::Pattern(regex, pattern.value().to_owned()));
        }
        out.extend(self.qualified(node)?);
        let closed = self
            .objects(node, "closed")
            .iter()
            .any(|t| matches!(t, Term::Literal(l) if l.value() == "true"));
        if closed {
            let mut allowed = BTreeSet::new();
            for ignored in self.objects(node, "ignoredProperties") {
                for term in self.list(&ignored)? {
                    allowed.insert(iri(term, "ignoredProperties")?);
                }
            }
            for property in self.objects(node, "property") {
                let property = shape_ref(property, "property")?;
                for path in self.objects(&property, "path") {
                    if let Term::NamedNode(p) = path {
                        allowed.insert(p);
                    }
                }
            }
            out.push(Constraint::Closed(allowed));
        }
        Ok(out)
    }

    /// The qualified value shape constraints of a property shape.
    fn qualified(&self, node: &NamedOrBlankNode) -> Result<Vec<Constraint>, ShaclError> {
        let invalid = |message: String| invalid_at(node, message);
        let Some(shape) = self.objects(node, "qualifiedValueShape").into_iter().next() else {
            return Ok(Vec::new());
        };
        let shape = as_node(&shape)
            .ok_or_else(|| invalid("sh:qualifiedValueShape must name a shape".into()))?;
        let disjoint = self
            .objects(node, "qualifiedValueShapesDisjoint")
            .iter()
            .any(|t| matches!(t, Term::Literal(l) if l.value() == "true"));
        // Siblings: the qualified value shapes of the other property shapes of
        // every shape that has this one as a property.
        let mut disjoint_from = Vec::new();
        if disjoint {
            let property = sh("property");
            let parents: Vec<NamedOrBlankNode> = self
                .graph
                .subjects_for_predicate_object(&property, &Term::from(node.clone()))
                .map(|s| s.into_owned())
                .collect();
            for parent in parents {
                for sibling in self.objects(&parent, "property") {
                    let Some(sibling) = as_node(&sibling).filter(|s| s != node) else {
                        continue;
                    };
                    disjoint_from.extend(
                        self.objects(&sibling, "qualifiedValueShape")
                            .into_iter()
                            .filter_map(|t| as_node(&t)),
                    );
                }
            }
        }
        let mut out = Vec::new();
        for (local, min) in [("qualifiedMinCount", true), ("qualifiedMaxCount", false)] {
            for count in self.objects(node, local) {
                let count = match &count {
                    Term::Literal(l) => l.value().parse::<u64>().ok(),
                    _ => None,
                }
                .ok_or_else(|| invalid(format!("sh:{local} must be a non-negative integer")))?;
                out.push(Constraint::Qualified(Qualified {
                    shape: shape.clone(),
                    min,
                    count,
                    disjoint_from: disjoint_from.clone(),
                }));
            }
        }
        Ok(out)
    }

    /// A property path; `depth` guards against cyclic path structures.
    fn path(&self, term: &Term, depth: usize) -> Result<Path, ShaclError> {
        let invalid = |message: String| invalid_at(term, message);
        if depth > 32 {
            return Err(invalid(
                "the property path nests too deep (a cycle?)".into(),
            ));
        }
        let node = match term {
            Term::NamedNode(n) => return Ok(Path::Predicate(n.clone())),
            Term::BlankNode(b) => NamedOrBlankNode::from(b.clone()),
            Term::Literal(_) => return Err(invalid("a property path cannot be a literal".into())),
        };
        // A list is a sequence path, whatever else the node says (the W3C suite's
        // "strange" paths give a list node an sh:inversePath too).
        let is_list = self
            .graph
            .object_for_subject_predicate(&node, rdf::FIRST)
            .is_some();
        if is_list {
            let paths = self
                .list(term)?
                .iter()
                .map(|p| self.path(p, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            if paths.len() < 2 {
                return Err(invalid("a sequence path lists two or more paths".into()));
            }
            return Ok(Path::Sequence(paths));
        }
        let one = |local: &str| -> Option<Term> { self.objects(&node, local).into_iter().next() };
        let inner = |t: Term| self.path(&t, depth + 1).map(Box::new);
        if let Some(t) = one("inversePath") {
            return Ok(Path::Inverse(inner(t)?));
        }
        if let Some(t) = one("zeroOrMorePath") {
            return Ok(Path::ZeroOrMore(inner(t)?));
        }
        if let Some(t) = one("oneOrMorePath") {
            return Ok(Path::OneOrMore(inner(t)?));
        }
        if let Some(t) = one("zeroOrOnePath") {
            return Ok(Path::ZeroOrOne(inner(t)?));
        }
        if let Some(t) = one("alternativePath") {
            let paths = self
                .list(&t)?
                .iter()
                .map(|p| self.path(p, depth + 1))
                .collect::<Result<_, _>>()?;
            return Ok(Path::Alternative(paths));
        }
        Err(invalid(
            "a blank-node path is a list of two or more paths or one of sh:inversePath, sh:alternativePath, sh:zeroOrMorePath, sh:oneOrMorePath, sh:zeroOrOnePath".into(),
        ))
    }

    /// The members of an RDF list (`rdf:first`/`rdf:rest` to `rdf:nil`).
    fn list(&self, head: &Term) -> Result<Vec<Term>, ShaclError> {
        let invalid = |message: &str| invalid_at(head, message);
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut cell = head.clone();
        loop {
            let node = match &cell {
                Term::NamedNode(n) if n.as_ref() == rdf::NIL => return Ok(out),
                other => as_node(other).ok_or_else(|| invalid("expected an RDF list"))?,
            };
            if !seen.insert(node.clone()) {
                return Err(invalid("the RDF list is cyclic"));
            }
            let first = self.graph.object_for_subject_predicate(&node, rdf::FIRST);
            let rest = self.graph.object_for_subject_predicate(&node, rdf::REST);
            let (Some(first), Some(rest)) = (first, rest) else {
                return Err(invalid("expected an RDF list (rdf:first and rdf:rest)"));
            };
            out.push(first.into_owned());
            cell = rest.into_owned();
        }
    }
}

fn node_kind(iri: &NamedNode) -> Option<NodeKind> {
    let local = iri.as_str().strip_prefix(SH)?;
    Some(match local {
        "IRI" => NodeKind::Iri,
        "BlankNode" => NodeKind::BlankNode,
        "Literal" => NodeKind::Literal,
        "BlankNodeOrIRI" => NodeKind::BlankNodeOrIri,
        "BlankNodeOrLiteral" => NodeKind::BlankNodeOrLiteral,
        "IRIOrLiteral" => NodeKind::IriOrLiteral,
        _ => return None,
    })
}
