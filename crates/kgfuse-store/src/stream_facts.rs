//! What a load's own quads say about its subjects' text and types, collected as
//! they stream into the graph.
//!
//! After a load the vector rows of every text-bearing subject are brought in step,
//! which needs each subject's text literals and types. Read back from the graph that
//! is one pass over each text predicate and over `rdf:type` (LUBM-10: 4.3 s and
//! 3.4 s, decoding every quad of those predicates). When the store held almost
//! nothing before the load, the load's stream already carried all of it: a subject
//! the store did not hold has exactly the text and types its new quads (and what
//! they entail) give it. So an insert-only load into such a store notes them as they
//! go by, and only the few subjects the store held before are read back.

use kgfuse_graph::model::{NamedOrBlankNodeRef, Quad, QuadRef, TermRef};
use kgfuse_graph::{TextLiteral, text_literal};
use std::collections::{HashMap, HashSet};

/// Subjects noted at most (text and types together, about 100 bytes each); a
/// larger load stops noting, frees what it noted and reads everything back.
const MAX_NOTED_SUBJECTS: usize = 4_000_000;

/// Numbers for strings that repeat (class IRIs).
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        id
    }

    fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// The text literals and types of a load's subjects, from its stream.
pub(crate) struct StreamFacts {
    /// IRI subjects the store held before the load: read back, never answered here.
    before: HashSet<String>,
    /// Asserted literals of text predicates.
    literals: HashMap<String, Vec<TextLiteral>>,
    /// `rdf:type` classes, asserted or derived by the load.
    types: HashMap<String, Vec<u32>>,
    classes: Interner,
    /// Derived types exist that the stream did not carry (the load's entailments
    /// were recomputed after it).
    types_incomplete: bool,
    /// More subjects than [`MAX_NOTED_SUBJECTS`]: nothing is answered.
    overflow: bool,
}

impl StreamFacts {
    /// Facts to collect for a load into a store whose IRI subjects are `before`.
    pub(crate) fn new(before: HashSet<String>) -> Self {
        Self {
            before,
            literals: HashMap::new(),
            types: HashMap::new(),
            classes: Interner::default(),
            types_incomplete: false,
            overflow: false,
        }
    }

    /// Notes a quad the load writes; `text_predicate` is the index of its
    /// predicate among the store's text predicates, if it is one.
    pub(crate) fn quad(&mut self, quad: QuadRef<'_>, text_predicate: Option<usize>) {
        if self.overflow {
            return;
        }
        let NamedOrBlankNodeRef::NamedNode(subject) = quad.subject else {
            return;
        };
        if let Some(literal) = text_predicate.and_then(|index| text_literal(quad, index)) {
            self.literals
                .entry(literal.subject.clone())
                .or_default()
                .push(literal);
        } else if quad.predicate == kgfuse_graph::model::vocab::rdf::TYPE
            && let TermRef::NamedNode(class) = quad.object
        {
            let class = self.classes.id(class.as_str());
            self.types
                .entry(subject.as_str().to_owned())
                .or_default()
                .push(class);
        }
        if self.literals.len() + self.types.len() > MAX_NOTED_SUBJECTS {
            self.overflow = true;
            self.literals = HashMap::new();
            self.types = HashMap::new();
        }
    }

    /// Notes the derived quads the load writes in its own commit.
    pub(crate) fn derived(&mut self, quads: &[Quad]) {
        for quad in quads {
            self.quad(quad.as_ref(), None);
        }
    }

    /// The load's entailments were recomputed after it: derived types may be
    /// missing here, so types are read back.
    pub(crate) fn types_incomplete(&mut self) {
        self.types_incomplete = true;
    }

    /// Whether the stream carried everything about `subject`.
    fn knows(&self, subject: &str) -> bool {
        !self.overflow && !self.before.contains(subject)
    }

    /// The text literals of `subject` (asserted ones, as
    /// [`kgfuse_graph::Graph::text_literals_of`] gives them), or `None` when they
    /// must be read from the graph.
    pub(crate) fn text_of(&self, subject: &str) -> Option<Vec<TextLiteral>> {
        self.knows(subject)
            .then(|| self.literals.get(subject).cloned().unwrap_or_default())
    }

    /// The classes of `subject`, sorted and deduplicated (as
    /// [`kgfuse_graph::Graph::types_of_all`] gives them), or `None` when they
    /// must be read from the graph.
    pub(crate) fn types_of(&self, subject: &str) -> Option<Vec<String>> {
        if self.types_incomplete || !self.knows(subject) {
            return None;
        }
        let mut classes: Vec<String> = self
            .types
            .get(subject)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|id| self.classes.name(*id).to_owned())
            .collect();
        classes.sort();
        classes.dedup();
        Some(classes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_graph::model::{GraphName, Literal, NamedNode, vocab::rdf};

    fn iri(s: &str) -> NamedNode {
        NamedNode::new_unchecked(s)
    }

    fn quad(s: &str, p: NamedNode, o: impl Into<kgfuse_graph::model::Term>, g: &str) -> Quad {
        Quad::new(iri(s), p, o, GraphName::NamedNode(iri(g)))
    }

    #[test]
    fn answers_for_new_subjects_only() {
        let mut facts = StreamFacts::new(["urn:old".to_owned()].into());
        let label = iri("http://www.w3.org/2000/01/rdf-schema#label");
        for q in [
            quad("urn:new", label.clone(), Literal::from("b"), "urn:g1"),
            quad("urn:new", label.clone(), Literal::from("a"), "urn:g2"),
            quad("urn:new", rdf::TYPE.into_owned(), iri("urn:Z"), "urn:g1"),
            quad("urn:old", label.clone(), Literal::from("c"), "urn:g1"),
        ] {
            facts.quad(q.as_ref(), (q.predicate == label).then_some(0));
        }
        facts.derived(&[quad(
            "urn:new",
            rdf::TYPE.into_owned(),
            iri("urn:A"),
            kgfuse_core::ontology::INFERRED_GRAPH,
        )]);
        let text = facts.text_of("urn:new").expect("known");
        let values: Vec<(&str, &str)> = text
            .iter()
            .map(|l| (l.value.as_str(), l.graph.as_str()))
            .collect();
        assert_eq!(values, [("b", "urn:g1"), ("a", "urn:g2")]);
        assert_eq!(
            facts.types_of("urn:new"),
            Some(vec!["urn:A".to_owned(), "urn:Z".to_owned()])
        );
        assert_eq!(facts.text_of("urn:old"), None, "held before: read back");
        assert_eq!(facts.types_of("urn:old"), None);
        assert_eq!(facts.text_of("urn:other"), Some(Vec::new()));
        facts.types_incomplete();
        assert_eq!(facts.types_of("urn:new"), None);
        assert!(facts.text_of("urn:new").is_some(), "text is asserted only");
    }

    /// Every row a large load writes into a store that held a little before it
    /// has the text, graph and kind that reading the graph back gives: new
    /// subjects from the stream (their superclass types derived in the load's
    /// commit), subjects held before from the graph.
    #[tokio::test]
    async fn a_load_into_a_nearly_empty_store_writes_the_rows_the_graph_gives() {
        use crate::sync::{compose, kind_of};
        use crate::test_support::{hash_store, load_text};
        let (dir, store) = hash_store().await;
        let prefixes = "@prefix ex: <http://example.org/> .\n\
             @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n";
        let before = format!(
            "{prefixes}ex:Student rdfs:subClassOf ex:Person .\n\
             ex:old a <{}> ; rdfs:label \"old label\" .\n\
             ex:typed a ex:Student .\n",
            kgfuse_core::vocab::kg::FUNCTION
        );
        load_text(&store, dir.path(), "before.ttl", &before).await;
        let mut large = prefixes.to_owned();
        for i in 0..3_000 {
            large.push_str(&format!(
                "ex:s{i} a ex:Student ; rdfs:label \"student {i}\" ; rdfs:comment \" \" .\n"
            ));
        }
        large.push_str(
            "ex:old rdfs:comment \"new comment\" .\n\
             ex:typed rdfs:label \"typed now\" .\n\
             ex:s1 rdfs:label \"student 1\" ; rdfs:comment \"first\" .\n",
        );
        let limit = large.len() / usize::try_from(crate::BYTES_PER_PRIOR_QUAD).expect("small");
        assert!(
            store
                .graph
                .all_subjects_if_at_most(limit)
                .expect("subjects")
                .is_some(),
            "the store is small enough for the load to note its facts"
        );
        load_text(&store, dir.path(), "large.ttl", &large).await;

        let iris: Vec<String> = ["old", "typed", "s0", "s1", "s2999"]
            .iter()
            .map(|s| format!("http://example.org/{s}"))
            .collect();
        let types = store.graph.types_of_all(&iris).expect("types");
        let literals = store
            .graph
            .text_literals_of(&iris, &store.text_predicates)
            .expect("text");
        let vector = store.embed("student").expect("embed");
        let rows = store
            .vectors
            .search_among(&vector, &iris)
            .await
            .expect("rows");
        assert_eq!(rows.len(), iris.len());
        let row = |iri: &str| rows.iter().find(|r| r.iri == iri).expect("row");
        assert_eq!(
            row("http://example.org/s0").kind,
            "Person",
            "derived in the load's commit"
        );
        assert_eq!(row("http://example.org/old").text, "old label\nnew comment");
        assert_eq!(row("http://example.org/typed").kind, "Person");
        for row in &rows {
            let node = compose(
                literals
                    .iter()
                    .filter(|l| l.subject == row.iri)
                    .cloned()
                    .collect(),
            )
            .expect("text");
            let kind = kind_of(types.get(&row.iri).map_or(&[][..], Vec::as_slice));
            assert_eq!(
                (row.text.as_str(), row.graph.as_str(), row.kind.as_str()),
                (node.text.as_str(), node.graph.as_str(), kind.as_str()),
                "{}",
                row.iri
            );
        }
        assert!(store.check().await.expect("check").is_ok());
    }
}
