//! Checking the vocabulary of a query against what the store knows, before it runs.
//!
//! A generated query (by a template over extracted entities, or by a language model)
//! that names a predicate or class the store has never heard of can only return
//! nothing, silently. [`Graph::unknown_terms`] finds such terms so the caller can
//! reject the query and say why. A term is known when the store declares it (typed
//! as a class or property in any graph, e.g. by a loaded ontology), when the data
//! uses it (as a predicate, or as the class of some node), or when it belongs to
//! RDF, RDFS, OWL or XSD.
//!
//! [`Graph::domain_range_violations`] goes one step further for known terms: a
//! query that types `?x` as a class and then uses `?x` with a property whose
//! declared `rdfs:domain` (or `rdfs:range`) is an unrelated class asks for
//! something the ontology rules out. It is conservative: without a declaration
//! there is no violation.

use crate::{Graph, GraphError};
use kgfuse_core::iri::compact;
use kgfuse_core::vocab::w3c::{
    OWL_EQUIVALENT_CLASS, RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASS_OF,
};
use oxigraph::model::{
    GraphNameRef, NamedNode, NamedNodeRef, NamedOrBlankNode, NamedOrBlankNodeRef, Term, TermRef,
};
use spargebra::algebra::{GraphPattern, PropertyPathExpression};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Namespaces whose terms are always known.
const BUILT_IN: [&str; 4] = [
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
];

const PROPERTY_TYPES: [&str; 4] = [
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#Property",
    "http://www.w3.org/2002/07/owl#ObjectProperty",
    "http://www.w3.org/2002/07/owl#DatatypeProperty",
    "http://www.w3.org/2002/07/owl#AnnotationProperty",
];

const CLASS_TYPES: [&str; 2] = [
    "http://www.w3.org/2002/07/owl#Class",
    "http://www.w3.org/2000/01/rdf-schema#Class",
];

/// The predicates and classes a query names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryVocabulary {
    /// IRIs in predicate position (including inside property paths).
    pub predicates: BTreeSet<String>,
    /// Alternatives of a property path (`rdfs:label|skos:altLabel`): such a set is
    /// fine when one member is known, so its members are not in `predicates`.
    pub alternatives: Vec<BTreeSet<String>>,
    /// IRIs in object position of `rdf:type`.
    pub classes: BTreeSet<String>,
}

/// The vocabulary of a parsed query (patterns inside FILTER EXISTS are not visited).
pub fn query_vocabulary(query: &spargebra::Query) -> QueryVocabulary {
    let mut out = QueryVocabulary::default();
    match query {
        spargebra::Query::Select { pattern, .. }
        | spargebra::Query::Describe { pattern, .. }
        | spargebra::Query::Ask { pattern, .. } => visit(pattern, &mut out),
        spargebra::Query::Construct {
            template, pattern, ..
        } => {
            for triple in template {
                triple_terms(triple, &mut out);
            }
            visit(pattern, &mut out);
        }
    }
    out
}

fn triple_terms(triple: &TriplePattern, out: &mut QueryVocabulary) {
    if let NamedNodePattern::NamedNode(predicate) = &triple.predicate {
        if predicate.as_str() == RDF_TYPE
            && let TermPattern::NamedNode(class) = &triple.object
        {
            out.classes.insert(class.as_str().to_owned());
        }
        out.predicates.insert(predicate.as_str().to_owned());
    }
}

fn path_terms(path: &PropertyPathExpression, out: &mut QueryVocabulary) {
    match path {
        PropertyPathExpression::NamedNode(n) => {
            out.predicates.insert(n.as_str().to_owned());
        }
        PropertyPathExpression::Reverse(p)
        | PropertyPathExpression::ZeroOrMore(p)
        | PropertyPathExpression::OneOrMore(p)
        | PropertyPathExpression::ZeroOrOne(p) => path_terms(p, out),
        PropertyPathExpression::Sequence(a, b) => {
            path_terms(a, out);
            path_terms(b, out);
        }
        PropertyPathExpression::Alternative(..) => {
            let mut members = QueryVocabulary::default();
            alternative_members(path, &mut members);
            out.alternatives.push(members.predicates);
            out.alternatives.extend(members.alternatives);
        }
        PropertyPathExpression::NegatedPropertySet(set) => {
            out.predicates
                .extend(set.iter().map(|n| n.as_str().to_owned()));
        }
    }
}

/// The plain members of a chain of alternatives; anything nested goes through
/// [`path_terms`].
fn alternative_members(path: &PropertyPathExpression, out: &mut QueryVocabulary) {
    match path {
        PropertyPathExpression::Alternative(a, b) => {
            alternative_members(a, out);
            alternative_members(b, out);
        }
        PropertyPathExpression::NamedNode(n) => {
            out.predicates.insert(n.as_str().to_owned());
        }
        other => {
            let mut nested = QueryVocabulary::default();
            path_terms(other, &mut nested);
            out.predicates.extend(nested.predicates);
            out.alternatives.extend(nested.alternatives);
        }
    }
}

fn visit(pattern: &GraphPattern, out: &mut QueryVocabulary) {
    match pattern {
        GraphPattern::Bgp { patterns } => {
            for triple in patterns {
                triple_terms(triple, out);
            }
        }
        GraphPattern::Path { path, .. } => path_terms(path, out),
        GraphPattern::Join { left, right }
        | GraphPattern::LeftJoin { left, right, .. }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => {
            visit(left, out);
            visit(right, out);
        }
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Graph { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Group { inner, .. }
        | GraphPattern::Service { inner, .. } => visit(inner, out),
        GraphPattern::Values { .. } => {}
    }
}

impl Graph {
    /// The terms of `vocabulary` that the store neither declares nor uses (see the
    /// module documentation), each as `predicate <iri>` or `class <iri>`.
    pub fn unknown_terms(&self, vocabulary: &QueryVocabulary) -> Result<Vec<String>, GraphError> {
        let spent = self.spent.clone();
        spent.measure(|| self.check_vocabulary(vocabulary))
    }

    fn check_vocabulary(&self, vocabulary: &QueryVocabulary) -> Result<Vec<String>, GraphError> {
        let built_in = |iri: &str| BUILT_IN.iter().any(|ns| iri.starts_with(ns));
        let predicates: BTreeSet<&str> = vocabulary
            .predicates
            .iter()
            .chain(vocabulary.alternatives.iter().flatten())
            .map(String::as_str)
            .filter(|p| !built_in(p))
            .collect();
        let classes: BTreeSet<&str> = vocabulary
            .classes
            .iter()
            .map(String::as_str)
            .filter(|c| !built_in(c))
            .collect();
        let known = self.terms_known(&predicates, &classes)?;
        let known_predicate =
            |p: &str| built_in(p) || known.contains(&(Kind::Predicate, p.to_owned()));
        let mut unknown = Vec::new();
        for predicate in &vocabulary.predicates {
            if !known_predicate(predicate) {
                unknown.push(format!("predicate <{predicate}>"));
            }
        }
        for group in &vocabulary.alternatives {
            if !group.is_empty() && !group.iter().any(|p| known_predicate(p)) {
                let list: Vec<String> = group.iter().map(|p| format!("<{p}>")).collect();
                unknown.push(format!("predicate {}", list.join(" | ")));
            }
        }
        for class in &classes {
            if !known.contains(&(Kind::Class, (*class).to_owned())) {
                unknown.push(format!("class <{class}>"));
            }
        }
        Ok(unknown)
    }

    /// Which of `predicates` and `classes` the store declares or uses (see the
    /// module documentation). Embedded, a few index lookups per term; remote,
    /// the answers the endpoint remembers and one query for the rest.
    fn terms_known(
        &self,
        predicates: &BTreeSet<&str>,
        classes: &BTreeSet<&str>,
    ) -> Result<BTreeSet<(Kind, String)>, GraphError> {
        let asked = predicates
            .iter()
            .map(|p| (Kind::Predicate, *p))
            .chain(classes.iter().map(|c| (Kind::Class, *c)));
        let mut known = BTreeSet::new();
        let Some(endpoint) = self.endpoint() else {
            for (kind, term) in asked {
                if self.term_is_known(kind, NamedNodeRef::new_unchecked(term))? {
                    known.insert((kind, term.to_owned()));
                }
            }
            return Ok(known);
        };
        let mut missing: Vec<(Kind, NamedNode)> = Vec::new();
        for (kind, term) in asked {
            match endpoint.recall(&kind.question(term)) {
                Some(true) => {
                    known.insert((kind, term.to_owned()));
                }
                Some(false) => {}
                // A term that is no IRI is unknown, and never sent.
                None => missing.extend(NamedNode::new(term).ok().map(|n| (kind, n))),
            }
        }
        if missing.is_empty() {
            return Ok(known);
        }
        let (variables, rows) = endpoint.select(&known_terms_query(&missing))?;
        let at = |name: &str| variables.iter().position(|v| v == name);
        let (Some(kind_at), Some(term_at)) = (at("kind"), at("term")) else {
            return Err(GraphError::Evaluation(format!(
                "the vocabulary check came back without ?kind and ?term: {variables:?}"
            )));
        };
        let answered: BTreeSet<(Kind, String)> = rows
            .into_iter()
            .filter_map(
                |row| match (row.get(kind_at)?.as_ref()?, row.get(term_at)?.as_ref()?) {
                    (Term::Literal(kind), Term::NamedNode(term)) => {
                        Some((Kind::from_tag(kind.value())?, term.as_str().to_owned()))
                    }
                    _ => None,
                },
            )
            .collect();
        endpoint.remember(missing.iter().map(|(kind, term)| {
            let is_known = answered.contains(&(*kind, term.as_str().to_owned()));
            (kind.question(term.as_str()), is_known)
        }));
        known.extend(answered);
        Ok(known)
    }

    /// Whether the store declares or uses one term (embedded: index lookups).
    fn term_is_known(&self, kind: Kind, node: NamedNodeRef<'_>) -> Result<bool, GraphError> {
        let rdf_type = NamedNodeRef::new_unchecked(RDF_TYPE);
        let any = |s: Option<NamedNodeRef<'_>>,
                   p: Option<NamedNodeRef<'_>>,
                   o: Option<NamedNodeRef<'_>>| {
            self.holds(
                s.map(Into::into),
                p,
                o.map(TermRef::from),
                None::<GraphNameRef<'_>>,
            )
        };
        let used = match kind {
            Kind::Predicate => any(None, Some(node), None)?,
            Kind::Class => any(None, Some(rdf_type), Some(node))?,
        };
        if used {
            return Ok(true);
        }
        for declared in kind.declarations() {
            if any(
                Some(node),
                Some(rdf_type),
                Some(NamedNodeRef::new_unchecked(declared)),
            )? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// What a query term is used as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Predicate,
    Class,
}

impl Kind {
    /// The types that declare a term of this kind.
    fn declarations(self) -> &'static [&'static str] {
        match self {
            Self::Predicate => &PROPERTY_TYPES,
            Self::Class => &CLASS_TYPES,
        }
    }

    /// The tag of this kind in [`known_terms_query`]'s results.
    fn tag(self) -> &'static str {
        match self {
            Self::Predicate => "predicate",
            Self::Class => "class",
        }
    }

    fn from_tag(tag: &str) -> Option<Self> {
        [Self::Predicate, Self::Class]
            .into_iter()
            .find(|kind| kind.tag() == tag)
    }

    /// The key of "is this term known?" among an endpoint's remembered answers.
    fn question(self, term: &str) -> String {
        format!("known {} {term}", self.tag())
    }
}

/// One query that answers "is it known?" for every term: rows `(?kind ?term)`
/// for those the data uses or the ontology declares. IRIs are written by
/// `NamedNode`'s own serialisation; nothing else enters the text.
fn known_terms_query(terms: &[(Kind, NamedNode)]) -> String {
    let mut branches = Vec::new();
    for kind in [Kind::Predicate, Kind::Class] {
        let values: String = terms
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, term)| format!("{term} "))
            .collect();
        if values.is_empty() {
            continue;
        }
        let used = match kind {
            Kind::Predicate => "?s ?term ?o",
            Kind::Class => "?s a ?term",
        };
        let declared: String = kind
            .declarations()
            .iter()
            .map(|d| format!("<{d}> "))
            .collect();
        let tag = kind.tag();
        branches.push(format!(
            "{{ VALUES ?term {{ {values}}} FILTER EXISTS {{ GRAPH ?g {{ {used} }} }} BIND(\"{tag}\" AS ?kind) }}"
        ));
        branches.push(format!(
            "{{ VALUES ?term {{ {values}}} VALUES ?declared {{ {declared}}} \
             FILTER EXISTS {{ GRAPH ?g {{ ?term a ?declared }} }} BIND(\"{tag}\" AS ?kind) }}"
        ));
    }
    format!(
        "SELECT DISTINCT ?kind ?term WHERE {{ {} }}",
        branches.join(" UNION ")
    )
}

/// Classes every resource belongs to: a domain or range naming one constrains nothing.
const UNIVERSAL_CLASSES: [&str; 2] = [
    "http://www.w3.org/2000/01/rdf-schema#Resource",
    "http://www.w3.org/2002/07/owl#Thing",
];
/// Most typed nodes scanned when looking for data that already uses a property on
/// a class; past this the data is assumed to use it (no violation is reported).
const USAGE_SCAN_LIMIT: usize = 20_000;
/// Most classes visited when walking `rdfs:subClassOf` upwards from one class.
const SUPERCLASS_LIMIT: usize = 10_000;

/// Classes required of variables (by name; blank nodes as `_:id`) by `?x rdf:type C`
/// patterns with a constant class.
type Types = BTreeMap<String, BTreeSet<String>>;

/// Which position of a triple pattern a declaration constrains.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Position {
    Subject,
    Object,
}

impl Position {
    fn declaration(self) -> &'static str {
        match self {
            Self::Subject => RDFS_DOMAIN,
            Self::Object => RDFS_RANGE,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Subject => "as its subject (rdfs:domain)",
            Self::Object => "as its object (rdfs:range)",
        }
    }
}

/// The key under which a variable or blank node pattern is typed.
fn pattern_key(term: &TermPattern) -> Option<String> {
    match term {
        TermPattern::Variable(v) => Some(v.as_str().to_owned()),
        TermPattern::BlankNode(b) => Some(format!("_:{}", b.as_str())),
        _ => None,
    }
}

/// How a variable or blank node is shown in a message.
fn pattern_name(term: &TermPattern) -> String {
    match term {
        TermPattern::Variable(v) => format!("?{}", v.as_str()),
        TermPattern::BlankNode(_) => "[]".to_owned(),
        other => other.to_string(),
    }
}

fn merge(into: &mut Types, from: Types) {
    for (variable, classes) in from {
        into.entry(variable).or_default().extend(classes);
    }
}

fn restrict(types: Types, variables: &[spargebra::term::Variable]) -> Types {
    types
        .into_iter()
        .filter(|(name, _)| variables.iter().any(|v| v.as_str() == name))
        .collect()
}

/// Types that hold in every solution of `pattern`: those of its basic graph
/// patterns, except where they are optional (the right of OPTIONAL or MINUS), only
/// in one branch of a UNION, or hidden by a sub-select's projection.
fn required_types(pattern: &GraphPattern) -> Types {
    match pattern {
        GraphPattern::Bgp { patterns } => {
            let mut types = Types::new();
            for triple in patterns {
                if let (NamedNodePattern::NamedNode(p), TermPattern::NamedNode(class), Some(key)) = (
                    &triple.predicate,
                    &triple.object,
                    pattern_key(&triple.subject),
                ) && p.as_str() == RDF_TYPE
                {
                    types
                        .entry(key)
                        .or_default()
                        .insert(class.as_str().to_owned());
                }
            }
            types
        }
        GraphPattern::Join { left, right } | GraphPattern::Lateral { left, right } => {
            let mut types = required_types(left);
            merge(&mut types, required_types(right));
            types
        }
        GraphPattern::LeftJoin { left, .. } | GraphPattern::Minus { left, .. } => {
            required_types(left)
        }
        GraphPattern::Union { left, right } => {
            let right = required_types(right);
            required_types(left)
                .into_iter()
                .filter_map(|(variable, classes)| {
                    let shared: BTreeSet<String> = right
                        .get(&variable)
                        .map(|other| classes.intersection(other).cloned().collect())
                        .unwrap_or_default();
                    (!shared.is_empty()).then_some((variable, shared))
                })
                .collect()
        }
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Graph { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. } => required_types(inner),
        GraphPattern::Project { inner, variables }
        | GraphPattern::Group {
            inner, variables, ..
        } => restrict(required_types(inner), variables),
        GraphPattern::Path { .. } | GraphPattern::Values { .. } | GraphPattern::Service { .. } => {
            Types::new()
        }
    }
}

/// Every triple pattern of `pattern` with the types its variables certainly have
/// where it is evaluated (`context`: types required around it).
fn typed_triples(pattern: &GraphPattern, context: &Types, out: &mut Vec<(TriplePattern, Types)>) {
    let mut here = context.clone();
    merge(&mut here, required_types(pattern));
    match pattern {
        GraphPattern::Bgp { patterns } => {
            for triple in patterns {
                out.push((triple.clone(), here.clone()));
            }
        }
        GraphPattern::Join { left, right }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::LeftJoin { left, right, .. }
        | GraphPattern::Union { left, right } => {
            typed_triples(left, &here, out);
            typed_triples(right, &here, out);
        }
        GraphPattern::Minus { left, right } => {
            typed_triples(left, &here, out);
            // MINUS evaluates its right side on its own.
            typed_triples(right, &Types::new(), out);
        }
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Graph { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. } => typed_triples(inner, &here, out),
        GraphPattern::Project { inner, variables }
        | GraphPattern::Group {
            inner, variables, ..
        } => {
            // A sub-select's other variables are not the outer query's.
            typed_triples(inner, &restrict(here, variables), out);
        }
        GraphPattern::Path { .. } | GraphPattern::Values { .. } | GraphPattern::Service { .. } => {}
    }
}

/// One domain/range check: caches of the store lookups it needs.
struct DomainRangeCheck<'a> {
    graph: &'a Graph,
    superclasses: HashMap<String, BTreeSet<String>>,
    declarations: HashMap<(String, Position), Option<BTreeSet<String>>>,
}

impl DomainRangeCheck<'_> {
    fn objects(&self, subject: NamedNodeRef<'_>, predicate: &str) -> Result<Vec<Term>, GraphError> {
        self.graph
            .quads(
                Some(subject.into()),
                Some(NamedNodeRef::new_unchecked(predicate)),
                None,
                None::<GraphNameRef<'_>>,
            )
            .map(|quad| Ok(quad?.object))
            .collect()
    }

    fn exists(
        &self,
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: NamedNodeRef<'_>,
        object: Option<TermRef<'_>>,
    ) -> Result<bool, GraphError> {
        self.graph
            .holds(subject, Some(predicate), object, None::<GraphNameRef<'_>>)
    }

    /// The classes declared as the property's domain or range; `None` when there is
    /// no usable declaration (none, a class expression such as `owl:unionOf`, or a
    /// universal class), which means no constraint.
    fn declared(
        &mut self,
        property: &str,
        position: Position,
    ) -> Result<Option<BTreeSet<String>>, GraphError> {
        let key = (property.to_owned(), position);
        if let Some(known) = self.declarations.get(&key) {
            return Ok(known.clone());
        }
        let mut classes = BTreeSet::new();
        let mut usable = true;
        for object in self.objects(
            NamedNodeRef::new_unchecked(property),
            position.declaration(),
        )? {
            match object {
                Term::NamedNode(class) if !UNIVERSAL_CLASSES.contains(&class.as_str()) => {
                    classes.insert(class.into_string());
                }
                _ => usable = false,
            }
        }
        let declared = (usable && !classes.is_empty()).then_some(classes);
        self.declarations.insert(key, declared.clone());
        Ok(declared)
    }

    /// `class` and everything above it by `rdfs:subClassOf` (and `owl:equivalentClass`).
    fn superclasses(&mut self, class: &str) -> Result<BTreeSet<String>, GraphError> {
        if let Some(known) = self.superclasses.get(class) {
            return Ok(known.clone());
        }
        let mut seen = BTreeSet::from([class.to_owned()]);
        let mut queue = vec![class.to_owned()];
        while let Some(current) = queue.pop() {
            if seen.len() > SUPERCLASS_LIMIT {
                break;
            }
            let node = NamedNodeRef::new_unchecked(&current);
            let mut next = Vec::new();
            for predicate in [RDFS_SUBCLASS_OF, OWL_EQUIVALENT_CLASS] {
                next.extend(self.objects(node, predicate)?);
            }
            for quad in self.graph.quads(
                None,
                Some(NamedNodeRef::new_unchecked(OWL_EQUIVALENT_CLASS)),
                Some(node.into()),
                None::<GraphNameRef<'_>>,
            ) {
                if let NamedOrBlankNode::NamedNode(n) = quad?.subject {
                    next.push(n.into());
                }
            }
            for term in next {
                if let Term::NamedNode(n) = term
                    && seen.insert(n.as_str().to_owned())
                {
                    queue.push(n.into_string());
                }
            }
        }
        self.superclasses.insert(class.to_owned(), seen.clone());
        Ok(seen)
    }

    /// Whether one of `classes` is one of `expected` or below it.
    fn fits(
        &mut self,
        classes: &BTreeSet<String>,
        expected: &BTreeSet<String>,
    ) -> Result<bool, GraphError> {
        for class in classes {
            if !self.superclasses(class)?.is_disjoint(expected) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The `rdf:type`s of a node in the store.
    fn types_of(&self, node: NamedNodeRef<'_>) -> Result<BTreeSet<String>, GraphError> {
        Ok(self
            .objects(node, RDF_TYPE)?
            .into_iter()
            .filter_map(|t| match t {
                Term::NamedNode(n) => Some(n.into_string()),
                _ => None,
            })
            .collect())
    }

    /// Whether the data already has a node of one of `classes` in `position` of
    /// `property` (then a query asking for it is answerable, whatever the
    /// declarations say). Past [`USAGE_SCAN_LIMIT`] nodes the answer is yes.
    fn data_uses(
        &self,
        property: NamedNodeRef<'_>,
        classes: &BTreeSet<String>,
        position: Position,
    ) -> Result<bool, GraphError> {
        let rdf_type = NamedNodeRef::new_unchecked(RDF_TYPE);
        let mut scanned = 0;
        for class in classes {
            for quad in self.graph.quads(
                None,
                Some(rdf_type),
                Some(NamedNodeRef::new_unchecked(class).into()),
                None::<GraphNameRef<'_>>,
            ) {
                let quad = quad?;
                scanned += 1;
                if scanned > USAGE_SCAN_LIMIT {
                    return Ok(true);
                }
                let used = match position {
                    Position::Subject => {
                        self.exists(Some(quad.subject.as_ref()), property, None)?
                    }
                    Position::Object => {
                        let term: Term = quad.subject.clone().into();
                        self.exists(None, property, Some(term.as_ref()))?
                    }
                };
                if used {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The violation, if any, of one position of one triple pattern.
    fn check(
        &mut self,
        triple: &TriplePattern,
        property: NamedNodeRef<'_>,
        position: Position,
        types: &Types,
        prefixes: &[(String, String)],
    ) -> Result<Option<String>, GraphError> {
        let term = match position {
            Position::Subject => &triple.subject,
            Position::Object => &triple.object,
        };
        let Some(expected) = self.declared(property.as_str(), position)? else {
            return Ok(None);
        };
        // Cheapest first: the types, whether one fits, then what the data already says.
        let (name, classes) = match term {
            TermPattern::NamedNode(node) => {
                let classes = self.types_of(node.as_ref())?;
                if classes.is_empty() || self.fits(&classes, &expected)? {
                    return Ok(None);
                }
                let already = match position {
                    Position::Subject => self.exists(Some(node.as_ref().into()), property, None)?,
                    Position::Object => self.exists(None, property, Some(node.as_ref().into()))?,
                };
                if already {
                    return Ok(None);
                }
                (compact(node.as_str(), prefixes), classes)
            }
            TermPattern::Variable(_) | TermPattern::BlankNode(_) => {
                let Some(classes) = pattern_key(term).and_then(|key| types.get(&key)) else {
                    return Ok(None);
                };
                if classes.is_empty()
                    || self.fits(classes, &expected)?
                    || self.data_uses(property, classes, position)?
                {
                    return Ok(None);
                }
                (pattern_name(term), classes.clone())
            }
            _ => return Ok(None),
        };
        let list = |set: &BTreeSet<String>, joint: &str| {
            set.iter()
                .map(|c| compact(c, prefixes))
                .collect::<Vec<_>>()
                .join(joint)
        };
        Ok(Some(format!(
            "{name} is a {} but {} expects {} {}",
            list(&classes, " and "),
            compact(property.as_str(), prefixes),
            list(&expected, " or "),
            position.describe()
        )))
    }
}

impl Graph {
    /// Where a query contradicts the `rdfs:domain` and `rdfs:range` declarations in
    /// the store, one readable message per problem, IRIs shortened with the
    /// well-known prefixes (see [`Graph::domain_range_violations_with_prefixes`]).
    pub fn domain_range_violations(
        &self,
        query: &spargebra::Query,
    ) -> Result<Vec<String>, GraphError> {
        let prefixes: Vec<(String, String)> = kgfuse_core::vocab::WELL_KNOWN_PREFIXES
            .iter()
            .map(|(p, i)| ((*p).to_owned(), (*i).to_owned()))
            .collect();
        self.domain_range_violations_with_prefixes(query, &prefixes)
    }

    /// Where a query contradicts the `rdfs:domain` and `rdfs:range` declarations in
    /// the store, IRIs shortened with `prefixes` in the messages
    /// (`?x is a ex:Person but ex:worksFor expects ex:Employee as its subject (rdfs:domain)`).
    ///
    /// For every triple pattern with a constant predicate that has a declared domain
    /// (range), the subject (IRI or variable object) is checked:
    /// - a variable typed in the query by `?x rdf:type C` with constant `C`, where
    ///   that type holds for every solution (not only inside OPTIONAL, one UNION
    ///   branch or MINUS), violates when none of its classes is a declared class or
    ///   below one (`rdfs:subClassOf*`, `owl:equivalentClass`, read from the store);
    /// - a constant IRI violates when it has types in the store and none fits.
    ///
    /// The check is conservative: no declaration, a declaration by a class
    /// expression (a blank node) or by `rdfs:Resource`/`owl:Thing`, an untyped
    /// variable, or data that already uses the property on a node of that class
    /// (or on that very IRI) is never a violation.
    pub fn domain_range_violations_with_prefixes(
        &self,
        query: &spargebra::Query,
        prefixes: &[(String, String)],
    ) -> Result<Vec<String>, GraphError> {
        let spent = self.spent.clone();
        spent.measure(|| self.check_domains_and_ranges(query, prefixes))
    }

    fn check_domains_and_ranges(
        &self,
        query: &spargebra::Query,
        prefixes: &[(String, String)],
    ) -> Result<Vec<String>, GraphError> {
        let pattern = match query {
            spargebra::Query::Select { pattern, .. }
            | spargebra::Query::Construct { pattern, .. }
            | spargebra::Query::Describe { pattern, .. }
            | spargebra::Query::Ask { pattern, .. } => pattern,
        };
        let mut triples = Vec::new();
        typed_triples(pattern, &Types::new(), &mut triples);
        let mut check = DomainRangeCheck {
            graph: self,
            superclasses: HashMap::new(),
            declarations: HashMap::new(),
        };
        let mut out: Vec<String> = Vec::new();
        for (triple, types) in &triples {
            let NamedNodePattern::NamedNode(property) = &triple.predicate else {
                continue;
            };
            if property.as_str() == RDF_TYPE {
                continue;
            }
            for position in [Position::Subject, Position::Object] {
                if let Some(message) =
                    check.check(triple, property.as_ref(), position, types, prefixes)?
                    && !out.contains(&message)
                {
                    out.push(message);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QueryOptions, parse_query};

    #[test]
    fn finds_predicates_and_classes_the_store_does_not_know() {
        let graph = Graph::in_memory().expect("graph");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g> { \
                   <urn:declared> a <http://www.w3.org/2002/07/owl#ObjectProperty> . \
                   <urn:Thing> a <http://www.w3.org/2002/07/owl#Class> . \
                   <urn:a> <urn:used> <urn:b> ; a <urn:UsedClass> } }",
                &QueryOptions::default(),
            )
            .expect("load");
        let query = parse_query(
            "SELECT * WHERE { ?s <urn:declared> ?o ; <urn:used>/<urn:invented>* ?x ; \
               a <urn:Thing> , <urn:UsedClass> , <urn:Imagined> ; \
               <http://www.w3.org/2000/01/rdf-schema#label> ?l ; \
               <urn:used>|<urn:dreamt> ?y ; <urn:dreamt>|<urn:fancied> ?w \
               OPTIONAL { ?o <urn:also-invented> ?z } }",
            &QueryOptions::default(),
        )
        .expect("parse");
        let vocabulary = query_vocabulary(&query);
        assert!(vocabulary.classes.contains("urn:Imagined"));
        let unknown = graph.unknown_terms(&vocabulary).expect("check");
        assert_eq!(
            unknown,
            [
                "predicate <urn:also-invented>",
                "predicate <urn:invented>",
                "predicate <urn:dreamt> | <urn:fancied>",
                "class <urn:Imagined>"
            ]
        );
    }

    /// A tiny ontology: `worksFor` from employees to organisations, a `Manager` two
    /// steps below `Employee`, persons and robots unrelated to both, and a little data.
    fn ontology() -> Graph {
        let graph = Graph::in_memory().expect("graph");
        graph
            .update(
                "PREFIX ex: <http://example.org/> INSERT DATA { GRAPH <urn:onto> { \
                   ex:Person a owl:Class . ex:Robot a owl:Class . \
                   ex:Employee a owl:Class . ex:Lead rdfs:subClassOf ex:Employee . \
                   ex:Manager a owl:Class ; rdfs:subClassOf ex:Lead . \
                   ex:Staffer owl:equivalentClass ex:Employee . \
                   ex:Organisation a owl:Class . \
                   ex:worksFor a owl:ObjectProperty ; rdfs:domain ex:Employee ; rdfs:range ex:Organisation . \
                   ex:likes a owl:ObjectProperty . \
                   ex:memberOf a owl:ObjectProperty ; rdfs:domain ex:Employee . \
                   ex:about a owl:ObjectProperty ; rdfs:domain [ owl:unionOf (ex:Person ex:Robot) ] . \
                   ex:anything a owl:ObjectProperty ; rdfs:domain owl:Thing . \
                 } GRAPH <urn:data> { \
                   ex:alice a ex:Person . ex:bob a ex:Employee . ex:acme a ex:Organisation . \
                   ex:rex a ex:Robot ; ex:memberOf ex:acme . \
                 } }",
                &QueryOptions::default(),
            )
            .expect("load");
        graph
    }

    fn violations(graph: &Graph, body: &str) -> Vec<String> {
        let query = parse_query(
            &format!("PREFIX ex: <http://example.org/> SELECT * WHERE {{ {body} }}"),
            &QueryOptions::default(),
        )
        .expect("parse");
        let prefixes = [("ex".to_owned(), "http://example.org/".to_owned())];
        graph
            .domain_range_violations_with_prefixes(&query, &prefixes)
            .expect("check")
    }

    #[test]
    fn a_variable_typed_outside_the_domain_or_range_is_reported() {
        let graph = ontology();
        assert_eq!(
            violations(&graph, "?x a ex:Person ; ex:worksFor ?o"),
            ["?x is a ex:Person but ex:worksFor expects ex:Employee as its subject (rdfs:domain)"]
        );
        assert_eq!(
            violations(&graph, "?x ex:worksFor ?o . ?o a ex:Person"),
            [
                "?o is a ex:Person but ex:worksFor expects ex:Organisation as its object (rdfs:range)"
            ]
        );
        // Both at once, and the type given after the use.
        assert_eq!(
            violations(
                &graph,
                "?x ex:worksFor ?o . ?o a ex:Robot . ?x a ex:Organisation"
            )
            .len(),
            2
        );
        // A type that holds for every solution reaches into OPTIONAL.
        assert_eq!(
            violations(&graph, "?x a ex:Person OPTIONAL { ?x ex:worksFor ?o }").len(),
            1
        );
        // Without prefixes the message names full IRIs.
        let query = parse_query(
            "SELECT * WHERE { ?x a <http://example.org/Person> ; <http://example.org/worksFor> ?o }",
            &QueryOptions::default(),
        )
        .expect("parse");
        let plain = graph.domain_range_violations(&query).expect("check");
        assert_eq!(plain.len(), 1);
        assert!(
            plain[0].starts_with("?x is a <http://example.org/Person> but <http://example.org/worksFor> expects <http://example.org/Employee>"),
            "{plain:?}"
        );
    }

    #[test]
    fn subclasses_and_missing_declarations_are_fine() {
        let graph = ontology();
        for body in [
            // The declared class, a subclass two steps down, an equivalent class.
            "?x a ex:Employee ; ex:worksFor ?o . ?o a ex:Organisation",
            "?x a ex:Manager ; ex:worksFor ?o",
            "?x a ex:Staffer ; ex:worksFor ?o",
            // One of several types fits.
            "?x a ex:Person , ex:Employee ; ex:worksFor ?o",
            // No declaration, a class expression, a universal class.
            "?x a ex:Person ; ex:likes ?o",
            "?x a ex:Organisation ; ex:about ?o",
            "?x a ex:Organisation ; ex:anything ?o",
            // Untyped, typed only in the other UNION branch or only inside OPTIONAL.
            "?x ex:worksFor ?o",
            "{ ?x a ex:Person } UNION { ?x ex:worksFor ?o }",
            "?x ex:worksFor ?o OPTIONAL { ?x a ex:Person }",
            // A sub-select's hidden variable is another variable.
            "{ SELECT ?y WHERE { ?x a ex:Person . ?x ex:likes ?y } } ?x ex:worksFor ?y",
            // The data already has a robot that is a member of something.
            "?x a ex:Robot ; ex:memberOf ?o",
            // A literal object is not checked against the range.
            "?x ex:worksFor \"acme\"",
        ] {
            assert_eq!(violations(&graph, body), Vec::<String>::new(), "{body}");
        }
    }

    #[test]
    fn constant_nodes_are_checked_by_their_types_in_the_store() {
        let graph = ontology();
        assert_eq!(
            violations(&graph, "ex:alice ex:worksFor ?o"),
            [
                "ex:alice is a ex:Person but ex:worksFor expects ex:Employee as its subject (rdfs:domain)"
            ]
        );
        assert_eq!(
            violations(&graph, "?x ex:worksFor ex:alice"),
            [
                "ex:alice is a ex:Person but ex:worksFor expects ex:Organisation as its object (rdfs:range)"
            ]
        );
        // A fitting type, no type at all, or data already stating it.
        for body in [
            "ex:bob ex:worksFor ex:acme",
            "ex:nobody ex:worksFor ?o",
            "ex:rex ex:memberOf ?o",
        ] {
            assert_eq!(violations(&graph, body), Vec::<String>::new(), "{body}");
        }
    }
}

/// The properties and classes a store's data uses, most used first: what a
/// generated query may usefully name (see [`Graph::known_terms`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownTerms {
    /// Predicates of some triple, as IRIs.
    pub properties: Vec<String>,
    /// Classes of some node, as IRIs.
    pub classes: Vec<String>,
}

impl Graph {
    /// The predicates and classes the store's triples use, most used first, at
    /// most `max_each` of each, without the RDF/RDFS/OWL/XSD namespaces except
    /// `rdf:type` and `rdfs:label`. A term only declared (an ontology's class with
    /// no instance) is left out: a query naming it can only match nothing. Scans
    /// the store: callers keep the result until the next write.
    pub fn known_terms(&self, max_each: usize) -> Result<KnownTerms, GraphError> {
        let used = |query: &str| -> Result<Vec<String>, GraphError> {
            let outcome = self.query(query, &crate::QueryOptions::default())?;
            let crate::QueryOutcome::Solutions { rows, .. } = outcome else {
                return Ok(Vec::new());
            };
            Ok(rows
                .into_iter()
                .filter_map(|row| match row.into_iter().next().flatten() {
                    Some(Term::NamedNode(n)) => Some(n.into_string()),
                    _ => None,
                })
                .collect())
        };
        let keep = |iri: &String| {
            iri == RDF_TYPE
                || iri == "http://www.w3.org/2000/01/rdf-schema#label"
                || !BUILT_IN.iter().any(|ns| iri.starts_with(ns))
        };
        let properties =
            used("SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?p ORDER BY DESC(?n) ?p")?;
        let classes = used(&format!(
            "SELECT ?c (COUNT(*) AS ?n) WHERE {{ ?s <{RDF_TYPE}> ?c FILTER(isIRI(?c)) }} \
             GROUP BY ?c ORDER BY DESC(?n) ?c"
        ))?;
        let first_of = |terms: Vec<String>| -> Vec<String> {
            let mut seen = BTreeSet::new();
            terms
                .into_iter()
                .filter(|t| keep(t) && seen.insert(t.clone()))
                .take(max_each)
                .collect()
        };
        Ok(KnownTerms {
            properties: first_of(properties),
            classes: first_of(classes),
        })
    }
}
