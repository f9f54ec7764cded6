use super::*;
use oxrdf::{BlankNode, Literal};

fn iri(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("http://example.org/{local}"))
}

fn sub_class(a: &str, b: &str) -> Triple {
    Triple::new(iri(a), rdfs::SUB_CLASS_OF, iri(b))
}

fn a(node: &str, class: &str) -> Triple {
    Triple::new(iri(node), rdf::TYPE, iri(class))
}

fn found(inferred: Vec<Inferred>) -> Vec<(Triple, Rule)> {
    inferred.into_iter().map(|i| (i.triple, i.rule)).collect()
}

#[test]
fn types_climb_the_class_hierarchy() {
    let schema = Schema::from_triples(&[
        sub_class("Manager", "Employee"),
        sub_class("Employee", "Person"),
    ]);
    assert_eq!(
        found(schema.expand(&a("ann", "Manager"))),
        [
            (a("ann", "Employee"), Rule::SubClassOf),
            (a("ann", "Person"), Rule::SubClassOf),
        ]
    );
    assert!(schema.expand(&a("ann", "Person")).is_empty());
    assert_eq!(
        found(schema.closure()),
        [(sub_class("Manager", "Person"), Rule::SchemaClosure)]
    );
}

#[test]
fn domains_and_ranges_type_both_ends_but_never_a_literal() {
    let schema = Schema::from_triples(&[
        Triple::new(iri("worksIn"), rdfs::DOMAIN, iri("Employee")),
        Triple::new(iri("worksIn"), rdfs::RANGE, iri("Department")),
        Triple::new(iri("name"), rdfs::RANGE, iri("Text")),
        sub_class("Employee", "Person"),
    ]);
    assert_eq!(
        found(schema.expand(&Triple::new(iri("ann"), iri("worksIn"), iri("sales")))),
        [
            (a("ann", "Employee"), Rule::Domain),
            (a("ann", "Person"), Rule::SubClassOf),
            (a("sales", "Department"), Rule::Range),
        ]
    );
    let named = Triple::new(iri("ann"), iri("name"), Literal::new_simple_literal("Ann"));
    assert!(schema.expand(&named).is_empty());
}

#[test]
fn super_properties_restate_the_triple_and_bring_their_domains() {
    let schema = Schema::from_triples(&[
        Triple::new(iri("reportsTo"), rdfs::SUB_PROPERTY_OF, iri("knows")),
        Triple::new(iri("knows"), rdfs::SUB_PROPERTY_OF, iri("relatedTo")),
        Triple::new(iri("knows"), rdfs::DOMAIN, iri("Person")),
    ]);
    let triple = Triple::new(iri("ann"), iri("reportsTo"), iri("bob"));
    assert_eq!(
        found(schema.expand(&triple)),
        [
            (
                Triple::new(iri("ann"), iri("knows"), iri("bob")),
                Rule::SubPropertyOf
            ),
            (a("ann", "Person"), Rule::Domain),
            (
                Triple::new(iri("ann"), iri("relatedTo"), iri("bob")),
                Rule::SubPropertyOf
            ),
        ]
    );
}

#[test]
fn cycles_end_and_a_class_is_never_its_own_superclass() {
    let schema = Schema::from_triples(&[
        sub_class("A", "B"),
        sub_class("B", "C"),
        sub_class("C", "A"),
        sub_class("D", "D"),
    ]);
    let mut supers: Vec<&str> = schema
        .super_classes(&iri("A"))
        .iter()
        .map(NamedNode::as_str)
        .collect();
    supers.sort_unstable();
    assert_eq!(supers, ["http://example.org/B", "http://example.org/C"]);
    assert!(schema.super_classes(&iri("D")).is_empty());
    assert_eq!(schema.expand(&a("x", "A")).len(), 2);
    assert!(schema.expand(&a("x", "D")).is_empty());
    // A ⊑ C, B ⊑ A and C ⊑ B are closure triples; no reflexive one.
    let closure = found(schema.closure());
    assert_eq!(closure.len(), 3, "{closure:?}");
    assert!(
        closure
            .iter()
            .all(|(t, _)| t.subject != t.object.clone().try_into().expect("iri"))
    );
}

#[test]
fn blank_node_classes_and_universal_types_are_left_out() {
    let restriction = BlankNode::new_unchecked("r");
    let schema = Schema::from_triples(&[
        Triple::new(iri("A"), rdfs::SUB_CLASS_OF, restriction),
        sub_class("A", "B"),
        Triple::new(iri("B"), rdfs::SUB_CLASS_OF, rdfs::RESOURCE),
        Triple::new(
            iri("B"),
            rdfs::SUB_CLASS_OF,
            NamedNode::new_unchecked("http://www.w3.org/2002/07/owl#Thing"),
        ),
    ]);
    assert_eq!(
        found(schema.expand(&a("x", "A"))),
        [(a("x", "B"), Rule::SubClassOf)]
    );
}

#[test]
fn methods_are_functions_in_the_kgfuse_vocabulary() {
    let triples: Vec<Triple> = oxttl::TurtleParser::new()
        .for_slice(kgfuse_core::ontology::KGFUSE_TTL)
        .map(|t| t.expect("kgfuse.ttl parses"))
        .collect();
    let schema = Schema::from_triples(&triples);
    let method = Triple::new(
        iri("m"),
        rdf::TYPE,
        NamedNode::new_unchecked(kgfuse_core::vocab::kg::METHOD),
    );
    let types: Vec<String> = schema
        .expand(&method)
        .into_iter()
        .map(|i| i.triple.object.to_string())
        .collect();
    assert!(
        types.contains(&format!("<{}>", kgfuse_core::vocab::kg::FUNCTION)),
        "{types:?}"
    );
}

/// The naive way: apply the four rules to the whole graph until nothing changes.
fn saturate_naively(triples: &[Triple]) -> BTreeSet<String> {
    let mut all: HashSet<Triple> = triples.iter().cloned().collect();
    loop {
        let mut fresh = Vec::new();
        for t in &all {
            for s in &all {
                let (Term::NamedNode(so), NamedOrBlankNode::NamedNode(ss)) =
                    (&s.object, &s.subject)
                else {
                    continue;
                };
                if s.predicate.as_ref() == rdfs::SUB_CLASS_OF {
                    if t.predicate.as_ref() == rdf::TYPE && t.object == Term::from(ss.clone()) {
                        fresh.push(Triple::new(t.subject.clone(), rdf::TYPE, so.clone()));
                    }
                    if t.predicate.as_ref() == rdfs::SUB_CLASS_OF
                        && t.object == Term::from(ss.clone())
                    {
                        fresh.push(Triple::new(
                            t.subject.clone(),
                            rdfs::SUB_CLASS_OF,
                            so.clone(),
                        ));
                    }
                }
                if s.predicate.as_ref() == rdfs::SUB_PROPERTY_OF {
                    if &t.predicate == ss {
                        fresh.push(Triple::new(t.subject.clone(), so.clone(), t.object.clone()));
                    }
                    if t.predicate.as_ref() == rdfs::SUB_PROPERTY_OF
                        && t.object == Term::from(ss.clone())
                    {
                        fresh.push(Triple::new(
                            t.subject.clone(),
                            rdfs::SUB_PROPERTY_OF,
                            so.clone(),
                        ));
                    }
                }
                if s.predicate.as_ref() == rdfs::DOMAIN && &t.predicate == ss {
                    fresh.push(Triple::new(t.subject.clone(), rdf::TYPE, so.clone()));
                }
                if s.predicate.as_ref() == rdfs::RANGE && &t.predicate == ss {
                    match &t.object {
                        Term::NamedNode(n) => {
                            fresh.push(Triple::new(n.clone(), rdf::TYPE, so.clone()))
                        }
                        Term::BlankNode(b) => {
                            fresh.push(Triple::new(b.clone(), rdf::TYPE, so.clone()))
                        }
                        Term::Literal(_) => {}
                    }
                }
            }
        }
        let before = all.len();
        all.extend(fresh.into_iter().filter(|t| match &t.subject {
            NamedOrBlankNode::NamedNode(s) => {
                Term::from(s.clone()) != t.object || !is_schema_predicate(t.predicate.as_ref())
            }
            NamedOrBlankNode::BlankNode(_) => true,
        }));
        if all.len() == before {
            break;
        }
    }
    let input: HashSet<&Triple> = triples.iter().collect();
    all.iter()
        .filter(|t| !input.contains(t))
        .map(Triple::to_string)
        .collect()
}

/// A small schema with a cycle, two hierarchies, domains and ranges, and
/// instance triples drawn from a fixed pseudo-random sequence.
fn schema_and_instances() -> (Vec<Triple>, Vec<Triple>) {
    let schema = vec![
        sub_class("C1", "C2"),
        sub_class("C2", "C3"),
        sub_class("C3", "C1"),
        sub_class("C4", "C2"),
        sub_class("C5", "C4"),
        Triple::new(iri("p1"), rdfs::SUB_PROPERTY_OF, iri("p2")),
        Triple::new(iri("p2"), rdfs::SUB_PROPERTY_OF, iri("p3")),
        Triple::new(iri("p4"), rdfs::SUB_PROPERTY_OF, iri("p2")),
        Triple::new(iri("p2"), rdfs::DOMAIN, iri("C5")),
        Triple::new(iri("p3"), rdfs::RANGE, iri("C4")),
        Triple::new(iri("p4"), rdfs::RANGE, iri("C6")),
    ];
    let mut state: u64 = 7;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) % n
    };
    let mut instances = Vec::new();
    for _ in 0..40 {
        let subject = iri(&format!("x{}", next(8)));
        let triple = match next(4) {
            0 => Triple::new(subject, rdf::TYPE, iri(&format!("C{}", 1 + next(6)))),
            1 => Triple::new(
                subject,
                iri(&format!("p{}", 1 + next(4))),
                iri(&format!("x{}", next(8))),
            ),
            // A predicate outside the schema: types neither end.
            2 => Triple::new(subject, iri("q"), iri(&format!("x{}", next(8)))),
            _ => Triple::new(
                subject,
                iri(&format!("p{}", 1 + next(4))),
                Literal::from(next(5) as i64),
            ),
        };
        instances.push(triple);
    }
    (schema, instances)
}

#[test]
fn expanding_each_triple_alone_gives_the_naive_fixpoint() {
    let (mut schema, instances) = schema_and_instances();
    let closed = Schema::from_triples(&schema);
    let mut ours: BTreeSet<String> = closed
        .closure()
        .into_iter()
        .map(|i| i.triple.to_string())
        .collect();
    for triple in &instances {
        ours.extend(
            closed
                .expand(triple)
                .into_iter()
                .map(|i| i.triple.to_string()),
        );
    }
    schema.extend(instances.iter().cloned());
    let mut naive = saturate_naively(&schema);
    // What the naive closure derives and kgfuse leaves out by design: reflexive
    // hierarchy triples from the cycle, and the instance triples themselves.
    naive.retain(|t| !instances.iter().any(|i| i.to_string() == *t));
    let ours: BTreeSet<String> = ours
        .into_iter()
        .filter(|t| !instances.iter().any(|i| i.to_string() == *t))
        .collect();
    assert_eq!(ours, naive);
}

#[test]
fn what_a_node_entails_comes_from_its_deriving_subject_triples_and_object_typing_ones() {
    // The locality the store's incremental update relies on: the derived triples
    // about x are the expansions of the triples with x as subject, plus those with
    // x as object whose predicate types objects (a range, own or inherited).
    let (schema_triples, instances) = schema_and_instances();
    let schema = Schema::from_triples(&schema_triples);
    let typing = schema.object_typing_predicates();
    assert_eq!(typing, [iri("p1"), iri("p2"), iri("p3"), iri("p4")]);
    // Of a node's subject triples, only these predicates derive anything about
    // it (`q` and `p3`, which has a range only, do not).
    let deriving = schema.subject_deriving_predicates();
    assert_eq!(
        deriving,
        [iri("p1"), iri("p2"), iri("p4"), rdf::TYPE.into_owned()]
    );
    // ...and `rdf:type` only for a class with a super-class (C6 has none).
    let c6 = Term::from(iri("C6"));
    assert!(!schema.derives_about_subject(&rdf::TYPE.into_owned(), &c6));
    assert!(schema.derives_about_subject(&rdf::TYPE.into_owned(), &Term::from(iri("C5"))));
    let mut all = schema_triples.clone();
    all.extend(instances.iter().cloned());
    let naive = saturate_naively(&all);
    for x in 0..8 {
        let node = iri(&format!("x{x}"));
        let about = |t: &Triple| t.subject == NamedOrBlankNode::from(node.clone());
        let local = instances.iter().filter(|t| {
            (about(t) && schema.derives_about_subject(&t.predicate, &t.object))
                || (t.object == Term::from(node.clone()) && typing.contains(&t.predicate))
        });
        let ours: BTreeSet<String> = local
            .flat_map(|t| schema.expand(t))
            .map(|i| i.triple)
            .filter(|t| about(t) && !instances.contains(t))
            .map(|t| t.to_string())
            .collect();
        let expected: BTreeSet<String> = naive
            .iter()
            .filter(|t| t.starts_with(&format!("{node} ")))
            .filter(|t| !instances.iter().any(|i| i.to_string() == **t))
            .cloned()
            .collect();
        assert_eq!(ours, expected, "about {node}");
    }
}

#[test]
fn every_entailed_triple_has_a_derivable_shape_and_a_premise() {
    // What an insert-only load relies on: a triple outside `derivable` is never
    // entailed, and only the premises' triples entail anything.
    let (schema_triples, instances) = schema_and_instances();
    let schema = Schema::from_triples(&schema_triples);
    let (properties, classes) = schema.derivable();
    let subclassed = schema.subclassed_classes();
    assert!(!subclassed.contains(&iri("C6")), "C6 has no super-class");
    let mut premises = schema.object_typing_predicates();
    premises.extend(schema.subject_deriving_predicates());
    let mut entailing = 0;
    for triple in &instances {
        let entailed = schema.expand(triple);
        let premise = premises
            .iter()
            .any(|p| *p == triple.predicate && p.as_ref() != rdf::TYPE)
            || (triple.predicate.as_ref() == rdf::TYPE
                && matches!(&triple.object, Term::NamedNode(c) if subclassed.contains(c)));
        assert!(
            premise || entailed.is_empty(),
            "{triple} entails without a premise"
        );
        entailing += usize::from(!entailed.is_empty());
        for inferred in entailed {
            let t = inferred.triple;
            let shaped = properties.contains(&t.predicate)
                || (t.predicate.as_ref() == rdf::TYPE
                    && matches!(&t.object, Term::NamedNode(c) if classes.contains(c)));
            assert!(shaped, "{t} is entailed but outside `derivable`");
        }
    }
    assert!(entailing > 10, "the sample must exercise the rules");
}
