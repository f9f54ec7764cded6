use crate::{ShaclError, Shapes};
use oxrdf::Triple;

const PREFIXES: &str = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n\
    @prefix ex: <http://example.org/> .\n\
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
    @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n";

fn triples(turtle: &str) -> Vec<Triple> {
    oxttl::TurtleParser::new()
        .for_slice(format!("{PREFIXES}{turtle}").as_bytes())
        .collect::<Result<_, _>>()
        .expect("test data parses")
}

fn shapes_of(turtle: &str) -> Shapes {
    Shapes::from_turtle(&[("test", &format!("{PREFIXES}{turtle}"))]).expect("shapes read")
}

/// `(focus node, component local name)` of each result, sorted.
fn failures(shapes_ttl: &str, data: &str) -> Vec<(String, String)> {
    let report = shapes_of(shapes_ttl)
        .validate(&triples(data))
        .expect("validates");
    let mut found: Vec<(String, String)> = report
        .results
        .iter()
        .map(|r| {
            (
                r.focus_node
                    .trim_start_matches("http://example.org/")
                    .to_owned(),
                r.component
                    .trim_start_matches("http://www.w3.org/ns/shacl#")
                    .trim_end_matches("ConstraintComponent")
                    .to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn cardinality_and_datatype_on_class_targets_with_subclasses() {
    let shapes = "ex:S a sh:NodeShape ; sh:targetClass ex:Person ;
        sh:property [ sh:path ex:name ; sh:minCount 1 ; sh:maxCount 1 ; sh:datatype xsd:string ] .";
    let data = "ex:Manager rdfs:subClassOf ex:Person .
        ex:ann a ex:Person ; ex:name \"Ann\" .
        ex:bob a ex:Manager .
        ex:cid a ex:Person ; ex:name \"C\", \"Cid\" .
        ex:dee a ex:Person ; ex:name 42 .
        ex:eve ex:name \"not a person\", \"twice\" .";
    assert_eq!(
        failures(shapes, data),
        pairs(&[
            ("bob", "MinCount"),
            ("cid", "MaxCount"),
            ("dee", "Datatype")
        ])
    );
}

#[test]
fn every_target_kind() {
    let shapes = "ex:S sh:targetNode ex:a ; sh:targetSubjectsOf ex:p ; sh:targetObjectsOf ex:q ;
        sh:nodeKind sh:IRI .
        ex:C a rdfs:Class, sh:NodeShape ; sh:nodeKind sh:BlankNode .";
    let data = "ex:x ex:q \"lit\" . _:b ex:p ex:y . ex:z a ex:C .";
    let got = failures(shapes, data);
    // ex:a is an IRI (passes); _:b subject of ex:p fails; "lit" fails; ex:z is an
    // IRI instance of the shape-class ex:C, which wants blank nodes.
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.contains(&("\"lit\"".to_owned(), "NodeKind".to_owned())));
    assert!(got.contains(&("z".to_owned(), "NodeKind".to_owned())));
}

#[test]
fn paths_inverse_sequence_alternative_and_closure() {
    let data = "ex:a ex:knows ex:b . ex:b ex:knows ex:c . ex:c ex:age 3 . ex:b ex:likes ex:d .";
    let count = |path: &str, n: u32| {
        failures(
            &format!(
                "ex:S sh:targetNode ex:a ; sh:property [ sh:path {path} ; sh:minCount {n} ] ."
            ),
            data,
        )
        .is_empty()
    };
    assert!(count("ex:knows", 1) && !count("ex:knows", 2));
    assert!(count("( ex:knows ex:knows ex:age )", 1));
    assert!(
        count("[ sh:oneOrMorePath ex:knows ]", 2) && !count("[ sh:oneOrMorePath ex:knows ]", 3)
    );
    assert!(count("[ sh:zeroOrMorePath ex:knows ]", 3));
    assert!(
        count("[ sh:zeroOrOnePath ex:knows ]", 2) && !count("[ sh:zeroOrOnePath ex:knows ]", 3)
    );
    assert!(count(
        "( ex:knows [ sh:alternativePath ( ex:knows ex:likes ) ] )",
        2
    ));
    let inverse = "ex:S sh:targetNode ex:c ; sh:property [ sh:path [ sh:inversePath ex:knows ] ; sh:hasValue ex:b ] .";
    assert!(failures(inverse, data).is_empty());
    let inverse_sequence = "ex:S sh:targetNode ex:c ; sh:property [ sh:path [ sh:inversePath ( ex:knows ex:knows ) ] ; sh:hasValue ex:a ] .";
    assert!(failures(inverse_sequence, data).is_empty());
}

#[test]
fn value_range_string_and_list_constraints() {
    let shapes = "ex:S sh:targetSubjectsOf ex:v ; sh:property [ sh:path ex:v ;
        sh:minInclusive 1 ; sh:maxExclusive 10 ] .
        ex:T sh:targetSubjectsOf ex:s ; sh:property [ sh:path ex:s ;
        sh:minLength 2 ; sh:maxLength 4 ; sh:pattern \"^a\" ; sh:flags \"i\" ] .
        ex:U sh:targetSubjectsOf ex:c ; sh:property [ sh:path ex:c ; sh:in ( ex:red ex:green ) ] .
        ex:D sh:targetSubjectsOf ex:d ; sh:property [ sh:path ex:d ; sh:minInclusive \"2024-01-01\"^^xsd:date ] .";
    let data = "ex:ok ex:v 1 , 9.5 ; ex:s \"Abc\" ; ex:c ex:red ; ex:d \"2024-06-01\"^^xsd:date .
        ex:low ex:v 0 . ex:high ex:v 10 . ex:text ex:v \"5\" .
        ex:short ex:s \"a\" . ex:long ex:s \"abcde\" . ex:nomatch ex:s \"bcd\" .
        ex:blue ex:c ex:blue . ex:old ex:d \"2023-12-31\"^^xsd:date .";
    let got = failures(shapes, data);
    assert_eq!(
        got,
        pairs(&[
            ("blue", "In"),
            ("high", "MaxExclusive"),
            ("long", "MaxLength"),
            ("low", "MinInclusive"),
            ("nomatch", "Pattern"),
            ("old", "MinInclusive"),
            ("short", "MinLength"),
            ("text", "MaxExclusive"),
            ("text", "MinInclusive"),
        ])
    );
}

#[test]
fn class_follows_subclasses_and_logical_constraints_nest() {
    let shapes =
        "ex:S sh:targetSubjectsOf ex:owner ; sh:property [ sh:path ex:owner ; sh:class ex:Agent ] .
        ex:Named sh:property [ sh:path ex:name ; sh:minCount 1 ] .
        ex:Aged sh:property [ sh:path ex:age ; sh:minCount 1 ] .
        ex:Either sh:targetClass ex:Thing ; sh:or ( ex:Named ex:Aged ) .
        ex:One sh:targetClass ex:Thing ; sh:xone ( ex:Named ex:Aged ) .
        ex:Not sh:targetClass ex:Thing ; sh:not ex:Aged .";
    let data = "ex:Person rdfs:subClassOf ex:Agent .
        ex:car ex:owner ex:ann . ex:ann a ex:Person .
        ex:boat ex:owner ex:rock .
        ex:t1 a ex:Thing ; ex:name \"x\" .
        ex:t2 a ex:Thing ; ex:name \"y\" ; ex:age 3 .
        ex:t3 a ex:Thing .";
    assert_eq!(
        failures(shapes, data),
        pairs(&[
            ("boat", "Class"),
            ("t2", "Not"),
            ("t2", "Xone"),
            ("t3", "Or"),
            ("t3", "Xone"),
        ])
    );
}

#[test]
fn messages_severity_and_deactivation_are_honoured() {
    let shapes = "ex:S sh:targetClass ex:P ; sh:severity sh:Warning ;
          sh:message \"P needs a name\"@en ; sh:property [ sh:path ex:name ; sh:minCount 1 ;
          sh:message \"P needs a name\"@en ; sh:severity sh:Warning ] .
        ex:Off sh:targetClass ex:P ; sh:deactivated true ; sh:property [ sh:path ex:x ; sh:minCount 1 ] .";
    let report = shapes_of(shapes)
        .validate(&triples("ex:p a ex:P ."))
        .expect("validates");
    // A warning makes the data non-conforming, as SHACL says, but is no violation.
    assert!(!report.conforms);
    assert!(!report.has_violations());
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.results[0].severity, "Warning");
    assert_eq!(report.results[0].message, "P needs a name");
    assert_eq!(
        report.results[0].path.as_deref(),
        Some("http://example.org/name")
    );
}

#[test]
fn closed_shapes_and_property_pairs() {
    let shapes = "ex:S sh:targetClass ex:P ; sh:closed true ; sh:ignoredProperties ( <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> ) ;
        sh:property [ sh:path ex:a ; sh:equals ex:b ] , [ sh:path ex:b ; sh:disjoint ex:c ] .";
    let data = "ex:ok a ex:P ; ex:a 1 ; ex:b 1 .
        ex:extra a ex:P ; ex:a 1 ; ex:b 1 ; ex:z 2 .
        ex:unequal a ex:P ; ex:a 1 ; ex:b 2 ; ex:c 2 .";
    assert_eq!(
        failures(shapes, data),
        pairs(&[
            ("extra", "Closed"),
            ("unequal", "Closed"),
            ("unequal", "Disjoint"),
            ("unequal", "Equals"),
            ("unequal", "Equals"),
        ])
    );
}

#[test]
fn unsupported_and_invalid_shapes_are_refused_by_name() {
    let sparql = Shapes::from_turtle(&[(
        "q",
        &format!(
            "{PREFIXES} ex:S sh:targetClass ex:P ; sh:sparql [ sh:select \"SELECT $this WHERE {{ }}\" ] ."
        ),
    )]);
    assert!(
        matches!(sparql, Err(ShaclError::Unsupported { parameter, .. }) if parameter == "sh:sparql")
    );
    let bad_count = Shapes::from_turtle(&[(
        "c",
        &format!(
            "{PREFIXES} ex:S sh:targetClass ex:P ; sh:property [ sh:path ex:p ; sh:minCount \"many\" ] ."
        ),
    )]);
    assert!(
        matches!(bad_count, Err(ShaclError::InvalidShape { .. })),
        "{bad_count:?}"
    );
    let cyclic_list = Shapes::from_turtle(&[(
        "l",
        &format!(
            "{PREFIXES} ex:S sh:targetNode ex:a ; sh:in _:l . _:l <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> 1 ; <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l ."
        ),
    )]);
    assert!(
        matches!(cyclic_list, Err(ShaclError::InvalidShape { .. })),
        "{cyclic_list:?}"
    );
    let syntax = Shapes::from_turtle(&[("broken.ttl", "ex:S sh:targetNode")]);
    assert!(
        matches!(syntax, Err(ShaclError::Syntax { source_name, .. }) if source_name == "broken.ttl")
    );
}

#[test]
fn a_recursive_shape_is_an_error_not_a_hang() {
    let shapes = shapes_of("ex:S sh:targetNode ex:a ; sh:node ex:S .");
    let outcome = shapes.validate(&triples("ex:a ex:p 1 ."));
    assert!(
        matches!(outcome, Err(ShaclError::Recursive(_))),
        "{outcome:?}"
    );
}

#[test]
fn the_core_shapes_accept_what_the_ingesters_write() {
    let kgfuse = Shapes::kgfuse().expect("core shapes read");
    assert!(kgfuse.len() > 10);
    let data = "@prefix k: <https://w3id.org/kgfuse/ontology#> .
        ex:m a k:Module ; k:name \"m\" ; k:qualifiedName \"pkg.m\" ; k:hasFunction ex:f .
        ex:f a k:Function ; k:name \"f\" ; k:qualifiedName \"pkg.m.f\" ; k:inModule ex:m ;
          k:startLine 3 ; k:endLine 9 ; k:hasParameter ex:f_x ; k:calls ex:m .
        ex:f_x a k:Parameter ; k:name \"x\" ; k:position 0 .
        ex:pol a k:Policy ; k:effectiveDate \"2024-03-01\"^^xsd:date ; k:authority 0.9 ; k:statedIn ex:doc .";
    let report = kgfuse.validate(&triples(data)).expect("validates");
    assert!(report.conforms, "{:#?}", report.results);
    let bad = "@prefix k: <https://w3id.org/kgfuse/ontology#> .
        ex:pol a k:Policy ; k:authority 1.5 .
        ex:p a k:Parameter ; k:name \"x\" ; k:position -1 .";
    let report = kgfuse.validate(&triples(bad)).expect("validates");
    let found: Vec<(&str, Option<&str>)> = report
        .results
        .iter()
        .map(|r| (r.focus_node.as_str(), r.path.as_deref()))
        .collect();
    let k = |local: &str| Some(format!("https://w3id.org/kgfuse/ontology#{local}"));
    assert_eq!(
        found,
        [
            ("http://example.org/p", k("position").as_deref()),
            ("http://example.org/pol", k("authority").as_deref()),
            ("http://example.org/pol", k("effectiveDate").as_deref()),
        ]
    );
}

#[test]
fn closed_results_name_the_predicate_and_typed_values_are_checked_in_their_value_space() {
    let shapes = "ex:S sh:targetNode ex:a ; sh:closed true ; sh:property [ sh:path ex:p ] .
        ex:T sh:targetSubjectsOf ex:b ; sh:property [ sh:path ex:b ; sh:datatype xsd:byte ] .
        ex:U sh:targetSubjectsOf ex:t ; sh:property [ sh:path ex:t ;
          sh:minInclusive \"2002-10-10T12:00:00Z\"^^xsd:dateTime ] .";
    let data = "ex:a ex:p 1 ; ex:q 2 .
        ex:ok ex:b \"127\"^^xsd:byte . ex:big ex:b \"300\"^^xsd:byte .
        ex:later ex:t \"2002-10-10T08:00:00-05:00\"^^xsd:dateTime .
        ex:earlier ex:t \"2002-10-10T06:00:00-05:00\"^^xsd:dateTime .
        ex:local ex:t \"2002-10-10T12:00:00\"^^xsd:dateTime .";
    let report = shapes_of(shapes)
        .validate(&triples(data))
        .expect("validates");
    let found: Vec<(&str, Option<&str>)> = report
        .results
        .iter()
        .map(|r| (r.focus_node.as_str(), r.path.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            // The closed shape's result names the unexpected predicate.
            ("http://example.org/a", Some("http://example.org/q")),
            ("http://example.org/big", Some("http://example.org/b")),
            // 11:00Z is before the bound; 13:00Z is not; a time without a zone is
            // within 14 hours of the bound, so it cannot be ordered against it.
            ("http://example.org/earlier", Some("http://example.org/t")),
            ("http://example.org/local", Some("http://example.org/t")),
        ]
    );
}

#[test]
fn less_than_and_qualified_value_shapes() {
    let shapes = "ex:Span sh:targetSubjectsOf ex:start ; sh:property [ sh:path ex:start ; sh:lessThan ex:end ] .
        ex:Hand sh:targetClass ex:Hand ;
          sh:property [ sh:path ex:digit ; sh:qualifiedValueShape [ sh:class ex:Thumb ] ;
                        sh:qualifiedMinCount 1 ; sh:qualifiedMaxCount 1 ; sh:qualifiedValueShapesDisjoint true ] ,
                      [ sh:path ex:digit ; sh:qualifiedValueShape [ sh:class ex:Finger ] ;
                        sh:qualifiedMinCount 4 ; sh:qualifiedValueShapesDisjoint true ] .";
    let data = "ex:ok ex:start 1 ; ex:end 2 . ex:bad ex:start 3 ; ex:end 3 .
        ex:left a ex:Hand ; ex:digit ex:t, ex:f1, ex:f2, ex:f3, ex:f4 .
        ex:t a ex:Thumb . ex:f1 a ex:Finger . ex:f2 a ex:Finger . ex:f3 a ex:Finger . ex:f4 a ex:Finger .
        ex:odd a ex:Hand ; ex:digit ex:both, ex:f1, ex:f2, ex:f3 .
        ex:both a ex:Thumb, ex:Finger .";
    // ex:both is a thumb and a finger: with disjoint siblings it counts as
    // neither, so ex:odd has no thumb and three fingers.
    assert_eq!(
        failures(shapes, data),
        pairs(&[
            ("bad", "LessThan"),
            ("odd", "QualifiedMinCount"),
            ("odd", "QualifiedMinCount"),
        ])
    );
}
