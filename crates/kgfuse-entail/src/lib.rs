//! RDFS entailment for kgfuse, materialised.
//!
//! The RDFS rules that draw new facts from instance data each take **one** instance
//! triple plus schema triples ([RDF 1.1 Semantics, 9.2.1](https://www.w3.org/TR/rdf11-mt/#patterns-of-rdfs-entailment-informative)):
//!
//! | rule | from | infers |
//! |---|---|---|
//! | rdfs2 | `x p y` and `p rdfs:domain C` | `x a C` |
//! | rdfs3 | `x p y` and `p rdfs:range C` (`y` not a literal) | `y a C` |
//! | rdfs7 | `x p y` and `p rdfs:subPropertyOf q` | `x q y` |
//! | rdfs9 | `x a C` and `C rdfs:subClassOf D` | `x a D` |
//!
//! and the schema closes over itself (rdfs5 and rdfs11: both hierarchies are
//! transitive). So a [`Schema`] is read once from the schema triples, its two
//! hierarchies closed (cycles included: a class in a cycle is a subclass of every
//! class of the cycle, never of itself), and [`Schema::expand`] gives what one
//! instance triple entails. What a set of triples entails is the union of what each
//! one does: a write only needs the triples it touched expanded again, and a whole
//! store can be expanded in batches of any size, in memory bounded by the schema
//! plus one batch.
//!
//! Left out on purpose: the axiomatic triples (`x a rdfs:Resource` for everything,
//! `p a rdf:Property` for every predicate, container membership), types that are
//! `rdfs:Resource` or `owl:Thing`, and classes or properties that are blank nodes
//! (OWL restrictions): true of everything or of nothing nameable, they would only
//! add triples.
//!
//! ```
//! use kgfuse_entail::{Rule, Schema};
//! use oxrdf::{NamedNode, Triple, vocab::{rdf, rdfs}};
//!
//! let iri = |s: &str| NamedNode::new_unchecked(format!("http://example.org/{s}"));
//! let schema = Schema::from_triples(&[
//!     Triple::new(iri("Manager"), rdfs::SUB_CLASS_OF, iri("Employee")),
//!     Triple::new(iri("manages"), rdfs::DOMAIN, iri("Manager")),
//! ]);
//! let inferred = schema.expand(&Triple::new(iri("ann"), iri("manages"), iri("sales")));
//! let found: Vec<(Triple, Rule)> = inferred.into_iter().map(|i| (i.triple, i.rule)).collect();
//! assert_eq!(found, [
//!     (Triple::new(iri("ann"), rdf::TYPE, iri("Manager")), Rule::Domain),
//!     (Triple::new(iri("ann"), rdf::TYPE, iri("Employee")), Rule::SubClassOf),
//! ]);
//! ```

use oxrdf::vocab::{rdf, rdfs};
use oxrdf::{NamedNode, NamedNodeRef, NamedOrBlankNode, Term, Triple};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Which rule inferred a triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// rdfs2: a type from the domain of a property the subject uses.
    Domain,
    /// rdfs3: a type from the range of a property the object is used with.
    Range,
    /// rdfs7: the triple under a super-property.
    SubPropertyOf,
    /// rdfs9: a type from a superclass of a type.
    SubClassOf,
    /// rdfs5 / rdfs11: a schema triple of the closed hierarchies.
    SchemaClosure,
}

impl Rule {
    /// The rule's name in RDF 1.1 Semantics (`rdfs2`, ...; `rdfs5+11` for the closure).
    pub fn name(self) -> &'static str {
        match self {
            Self::Domain => "rdfs2",
            Self::Range => "rdfs3",
            Self::SubPropertyOf => "rdfs7",
            Self::SubClassOf => "rdfs9",
            Self::SchemaClosure => "rdfs5+11",
        }
    }
}

/// An inferred triple and the rule that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inferred {
    /// The new triple.
    pub triple: Triple,
    /// The rule.
    pub rule: Rule,
}

/// Whether a predicate makes a triple part of the schema (a change to one of
/// these changes what every instance triple entails).
pub fn is_schema_predicate(predicate: NamedNodeRef<'_>) -> bool {
    predicate == rdfs::SUB_CLASS_OF
        || predicate == rdfs::SUB_PROPERTY_OF
        || predicate == rdfs::DOMAIN
        || predicate == rdfs::RANGE
}

/// Types true of everything: never inferred.
fn is_universal(class: &NamedNode) -> bool {
    class.as_ref() == rdfs::RESOURCE || class.as_str() == "http://www.w3.org/2002/07/owl#Thing"
}

/// The schema, closed: strict superclasses and super-properties (transitive,
/// cycles included), and the direct domains and ranges of each property.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    super_classes: HashMap<NamedNode, Vec<NamedNode>>,
    super_properties: HashMap<NamedNode, Vec<NamedNode>>,
    domains: HashMap<NamedNode, Vec<NamedNode>>,
    ranges: HashMap<NamedNode, Vec<NamedNode>>,
    /// The direct hierarchy edges, to tell closure triples from asserted ones.
    asserted: HashSet<Triple>,
}

impl Schema {
    /// Reads the schema from triples (others are ignored): `rdfs:subClassOf`,
    /// `rdfs:subPropertyOf`, `rdfs:domain`, `rdfs:range` between IRIs.
    pub fn from_triples<'a>(triples: impl IntoIterator<Item = &'a Triple>) -> Self {
        let mut class_edges: BTreeMap<NamedNode, BTreeSet<NamedNode>> = BTreeMap::new();
        let mut property_edges: BTreeMap<NamedNode, BTreeSet<NamedNode>> = BTreeMap::new();
        let mut domains: HashMap<NamedNode, Vec<NamedNode>> = HashMap::new();
        let mut ranges: HashMap<NamedNode, Vec<NamedNode>> = HashMap::new();
        let mut asserted = HashSet::new();
        for triple in triples {
            let (NamedOrBlankNode::NamedNode(subject), Term::NamedNode(object)) =
                (&triple.subject, &triple.object)
            else {
                continue;
            };
            let predicate = triple.predicate.as_ref();
            let target = if predicate == rdfs::SUB_CLASS_OF {
                class_edges.entry(subject.clone()).or_default()
            } else if predicate == rdfs::SUB_PROPERTY_OF {
                property_edges.entry(subject.clone()).or_default()
            } else if predicate == rdfs::DOMAIN {
                push_once(domains.entry(subject.clone()).or_default(), object);
                continue;
            } else if predicate == rdfs::RANGE {
                push_once(ranges.entry(subject.clone()).or_default(), object);
                continue;
            } else {
                continue;
            };
            if subject != object {
                target.insert(object.clone());
                asserted.insert(triple.clone());
            }
        }
        Self {
            super_classes: close(&class_edges),
            super_properties: close(&property_edges),
            domains,
            ranges,
            asserted,
        }
    }

    /// True when the schema infers nothing.
    pub fn is_empty(&self) -> bool {
        self.super_classes.is_empty()
            && self.super_properties.is_empty()
            && self.domains.is_empty()
            && self.ranges.is_empty()
    }

    /// The strict superclasses of `class` (none for an unknown class).
    pub fn super_classes(&self, class: &NamedNode) -> &[NamedNode] {
        self.super_classes.get(class).map_or(&[], Vec::as_slice)
    }

    /// The strict super-properties of `property`.
    pub fn super_properties(&self, property: &NamedNode) -> &[NamedNode] {
        self.super_properties
            .get(property)
            .map_or(&[], Vec::as_slice)
    }

    /// The predicates whose triples type their object: those with a range of their
    /// own or through a super-property (rdfs3). Only a change to such a triple can
    /// change what is inferred about its object; any triple can change what is
    /// inferred about its subject.
    pub fn object_typing_predicates(&self) -> Vec<NamedNode> {
        let mut out: Vec<NamedNode> = self.ranges.keys().cloned().collect();
        for (property, supers) in &self.super_properties {
            if !self.ranges.contains_key(property)
                && supers.iter().any(|s| self.ranges.contains_key(s))
            {
                out.push(property.clone());
            }
        }
        out.sort();
        out
    }

    /// The predicates whose triples give a derived triple about their subject:
    /// those with a super-property or a domain (their own or a super-property's),
    /// and `rdf:type` when a class has a super-class. What is inferred about a node
    /// comes from its triples with these predicates and from the triples typing it
    /// as an object ([`Schema::object_typing_predicates`]), nothing else.
    pub fn subject_deriving_predicates(&self) -> Vec<NamedNode> {
        let mut out: BTreeSet<NamedNode> = self
            .super_properties
            .iter()
            .filter(|(_, supers)| !supers.is_empty())
            .map(|(property, _)| property.clone())
            .collect();
        out.extend(self.domains.keys().cloned());
        if self.super_classes.values().any(|supers| !supers.is_empty()) {
            out.insert(rdf::TYPE.into_owned());
        }
        out.into_iter().collect()
    }

    /// Whether every triple with this predicate derives something about its
    /// subject, whatever its object: the predicate has a super-property or a
    /// domain.
    pub fn derives_by_property(&self, predicate: &NamedNode) -> bool {
        !self.super_properties(predicate).is_empty() || self.domains.contains_key(predicate)
    }

    /// Whether a triple `predicate object` derives something about its subject:
    /// its predicate is among [`Schema::subject_deriving_predicates`], and for
    /// `rdf:type` (with no domain or super-property of its own) the class has a
    /// super-class.
    pub fn derives_about_subject(&self, predicate: &NamedNode, object: &Term) -> bool {
        self.derives_by_property(predicate)
            || (predicate.as_ref() == rdf::TYPE
                && matches!(object, Term::NamedNode(class)
                    if self.super_classes(class).iter().any(|c| !is_universal(c))))
    }

    /// The classes an `rdf:type` to which entails more types: those with a
    /// super-class other than `rdfs:Resource` and `owl:Thing`.
    pub fn subclassed_classes(&self) -> Vec<NamedNode> {
        let mut out: Vec<NamedNode> = self
            .super_classes
            .iter()
            .filter(|(_, supers)| supers.iter().any(|c| !is_universal(c)))
            .map(|(class, _)| class.clone())
            .collect();
        out.sort();
        out
    }

    /// What an inferred instance triple can look like: `x P o` with `P` among the
    /// first list (every super-property), or `x rdf:type C` with `C` among the
    /// second (every class a domain, a range or a super-class names). A triple of
    /// neither shape is never derived.
    pub fn derivable(&self) -> (Vec<NamedNode>, Vec<NamedNode>) {
        let properties: BTreeSet<NamedNode> =
            self.super_properties.values().flatten().cloned().collect();
        let classes: BTreeSet<NamedNode> = self
            .domains
            .values()
            .chain(self.ranges.values())
            .chain(self.super_classes.values())
            .flatten()
            .cloned()
            .collect();
        (
            properties.into_iter().collect(),
            classes.into_iter().collect(),
        )
    }

    /// The schema triples the closure adds (rdfs5, rdfs11): `A rdfs:subClassOf C`
    /// from `A rdfs:subClassOf B` and `B rdfs:subClassOf C`, likewise for
    /// properties; never a reflexive one.
    pub fn closure(&self) -> Vec<Inferred> {
        let mut out = Vec::new();
        for (hierarchy, predicate) in [
            (&self.super_classes, rdfs::SUB_CLASS_OF),
            (&self.super_properties, rdfs::SUB_PROPERTY_OF),
        ] {
            let mut subjects: Vec<&NamedNode> = hierarchy.keys().collect();
            subjects.sort();
            for subject in subjects {
                for object in &hierarchy[subject] {
                    let triple = Triple::new(subject.clone(), predicate, object.clone());
                    if !self.asserted.contains(&triple) {
                        out.push(Inferred {
                            triple,
                            rule: Rule::SchemaClosure,
                        });
                    }
                }
            }
        }
        out
    }

    /// What one instance triple entails, beyond itself, each triple once (with
    /// the first rule that gives it).
    pub fn expand(&self, triple: &Triple) -> Vec<Inferred> {
        let mut out = Expansion {
            seen: HashSet::from([triple.clone()]),
            inferred: Vec::new(),
        };
        let predicate = &triple.predicate;
        for property in std::iter::once(predicate).chain(self.super_properties(predicate)) {
            if property != predicate {
                out.push(
                    Triple::new(
                        triple.subject.clone(),
                        property.clone(),
                        triple.object.clone(),
                    ),
                    Rule::SubPropertyOf,
                );
            }
            for class in self.domains.get(property).into_iter().flatten() {
                self.add_type(&mut out, &triple.subject, class, Rule::Domain);
            }
            let object = match &triple.object {
                Term::NamedNode(n) => Some(NamedOrBlankNode::from(n.clone())),
                Term::BlankNode(b) => Some(NamedOrBlankNode::from(b.clone())),
                _ => None,
            };
            if let Some(object) = object {
                for class in self.ranges.get(property).into_iter().flatten() {
                    self.add_type(&mut out, &object, class, Rule::Range);
                }
            }
        }
        if predicate.as_ref() == rdf::TYPE
            && let Term::NamedNode(class) = &triple.object
        {
            for super_class in self.super_classes(class) {
                if !is_universal(super_class) {
                    out.push(
                        Triple::new(triple.subject.clone(), rdf::TYPE, super_class.clone()),
                        Rule::SubClassOf,
                    );
                }
            }
        }
        out.inferred
    }

    /// `node a class`, and `node a` each superclass of it.
    fn add_type(
        &self,
        out: &mut Expansion,
        node: &NamedOrBlankNode,
        class: &NamedNode,
        rule: Rule,
    ) {
        if !is_universal(class) {
            out.push(Triple::new(node.clone(), rdf::TYPE, class.clone()), rule);
        }
        for super_class in self.super_classes(class) {
            if !is_universal(super_class) {
                out.push(
                    Triple::new(node.clone(), rdf::TYPE, super_class.clone()),
                    Rule::SubClassOf,
                );
            }
        }
    }
}

struct Expansion {
    seen: HashSet<Triple>,
    inferred: Vec<Inferred>,
}

impl Expansion {
    fn push(&mut self, triple: Triple, rule: Rule) {
        if self.seen.insert(triple.clone()) {
            self.inferred.push(Inferred { triple, rule });
        }
    }
}

fn push_once(list: &mut Vec<NamedNode>, item: &NamedNode) {
    if !list.contains(item) {
        list.push(item.clone());
    }
}

/// Each node's strict ancestors along `edges`, by a walk that visits each node
/// once (so cycles end); a node reaches itself only through a cycle, and is then
/// left out of its own list.
fn close(edges: &BTreeMap<NamedNode, BTreeSet<NamedNode>>) -> HashMap<NamedNode, Vec<NamedNode>> {
    let mut closed = HashMap::new();
    for start in edges.keys() {
        let mut seen: BTreeSet<&NamedNode> = BTreeSet::new();
        let mut order = Vec::new();
        let mut stack: Vec<&NamedNode> = edges[start].iter().rev().collect();
        while let Some(node) = stack.pop() {
            if node == start || !seen.insert(node) {
                continue;
            }
            order.push(node.clone());
            if let Some(next) = edges.get(node) {
                stack.extend(next.iter().rev());
            }
        }
        closed.insert(start.clone(), order);
    }
    closed
}

#[cfg(test)]
mod tests;
