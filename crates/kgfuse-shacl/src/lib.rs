//! SHACL validation of triples: kgfuse's core shapes (`ontology/kgfuse-shapes.ttl`)
//! and any shapes a user writes.
//!
//! A SHACL Core validator over `oxrdf` (the data model Oxigraph uses), in memory:
//! the caller decides what the data graph is (the whole store, or a file with its
//! neighbourhood in the store) and hands its triples over; this crate never
//! touches the store. Supported: targets (`sh:targetNode`, `sh:targetClass` with
//! subclasses, `sh:targetSubjectsOf`, `sh:targetObjectsOf`, implicit class
//! targets), every property path form and every SHACL Core constraint component;
//! SHACL-SPARQL and SHACL-AF targets are refused by name (docs/entailment.md says why
//! this is not rudof's `shacl_validation`). `make test-shacl` runs the W3C SHACL
//! Core tests against it.
//!
//! ```
//! use kgfuse_shacl::Shapes;
//! use oxrdf::{Literal, NamedNode, Triple};
//!
//! let kgfuse = "https://w3id.org/kgfuse/ontology#";
//! let iri = |s: &str| NamedNode::new(s).unwrap();
//! let f = iri("http://example.org/f");
//! // A function without a name, whose call edge points at a literal.
//! let data = [
//!     Triple::new(f.clone(), oxrdf::vocab::rdf::TYPE, iri(&format!("{kgfuse}Function"))),
//!     Triple::new(f.clone(), iri(&format!("{kgfuse}calls")), Literal::new_simple_literal("g")),
//! ];
//! let report = Shapes::kgfuse().unwrap().validate(&data).unwrap();
//! assert!(!report.conforms);
//! let paths: Vec<_> = report.results.iter().filter_map(|r| r.path.as_deref()).collect();
//! assert_eq!(paths, [format!("{kgfuse}calls"), format!("{kgfuse}name")]);
//! ```

mod shapes;
#[cfg(test)]
mod tests;
mod validate;

use oxrdf::{Graph, NamedOrBlankNode, Term, Triple};
use shapes::Shape;
use std::collections::HashMap;

/// kgfuse's own shapes for the code, document and policy model.
pub const KGFUSE_SHAPES: &str = include_str!("../ontology/kgfuse-shapes.ttl");

/// The name under which [`KGFUSE_SHAPES`] appears in errors and reports.
pub const KGFUSE_SHAPES_NAME: &str = "kgfuse-shapes.ttl";

/// Errors of reading shapes or validating.
#[derive(Debug, thiserror::Error)]
pub enum ShaclError {
    /// A shapes file is not valid Turtle.
    #[error("cannot read shapes from {source_name}: {message}")]
    Syntax {
        /// Where the shapes came from.
        source_name: String,
        /// The parser's message.
        message: String,
    },
    /// A shape is not valid SHACL (a count that is not an integer, a property
    /// path that is not a path, ...).
    #[error("invalid shape {shape}: {message}")]
    InvalidShape {
        /// The shape (or path or list) node.
        shape: String,
        /// What is wrong.
        message: String,
    },
    /// A shape uses a SHACL feature kgfuse does not evaluate.
    #[error(
        "shape {shape} uses {parameter}, which kgfuse validate does not support (SHACL Core only: no SHACL-SPARQL, no SHACL-AF targets)"
    )]
    Unsupported {
        /// The shape.
        shape: String,
        /// The unsupported parameter.
        parameter: String,
    },
    /// A shape refers to itself through `sh:node`, `sh:not`, `sh:and`, ... on
    /// the same value (recursive shapes are undefined in SHACL).
    #[error("shape {0} is recursive: validation nested more than 64 shapes deep")]
    Recursive(String),
}

/// A read shapes graph, ready to validate data.
#[derive(Debug)]
pub struct Shapes {
    shapes: HashMap<NamedOrBlankNode, Shape>,
    sources: Vec<String>,
}

impl Shapes {
    /// kgfuse's own shapes ([`KGFUSE_SHAPES`]).
    pub fn kgfuse() -> Result<Self, ShaclError> {
        Self::from_turtle(&[(KGFUSE_SHAPES_NAME, KGFUSE_SHAPES)])
    }

    /// Shapes read from Turtle texts, each `(name, text)`, merged into one
    /// shapes graph (a shape in one may refer to a shape in another). A name that
    /// is an absolute IRI (a file's `file://` IRI) is the base of the relative
    /// IRIs in its text.
    pub fn from_turtle(sources: &[(&str, &str)]) -> Result<Self, ShaclError> {
        let mut graph = Graph::new();
        for (name, text) in sources {
            let parser = oxttl::TurtleParser::new();
            let parser = parser.clone().with_base_iri(*name).unwrap_or(parser);
            for triple in parser.for_slice(text.as_bytes()) {
                let triple = triple.map_err(|e| ShaclError::Syntax {
                    source_name: (*name).to_owned(),
                    message: e.to_string(),
                })?;
                graph.insert(&triple);
            }
        }
        Ok(Self {
            shapes: shapes::read_shapes(&graph)?,
            sources: sources.iter().map(|(n, _)| (*n).to_owned()).collect(),
        })
    }

    /// Where the shapes came from.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// How many shapes (node and property shapes) were read.
    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// True when the shapes graph holds no shape.
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// Validates a data graph given as its triples. `sh:targetClass` and
    /// `sh:class` follow `rdfs:subClassOf` in the data graph, as SHACL says; a
    /// store with RDFS entailment hands over its inferred types as well.
    pub fn validate<'a>(
        &self,
        data: impl IntoIterator<Item = &'a Triple>,
    ) -> Result<Report, ShaclError> {
        let mut graph = Graph::new();
        for triple in data {
            graph.insert(triple);
        }
        self.validate_graph(&graph, &|_| true)
    }

    /// Validates a data graph, checking only the focus nodes `keep` accepts (the
    /// nodes of a file about to be loaded, when the graph is their neighbourhood).
    pub fn validate_graph(
        &self,
        graph: &Graph,
        keep: &dyn Fn(&Term) -> bool,
    ) -> Result<Report, ShaclError> {
        let validator = validate::Validator {
            data: graph,
            shapes: &self.shapes,
            keep,
        };
        let mut results = validator
            .run()
            .map_err(|too_deep| ShaclError::Recursive(too_deep.0.to_string()))?;
        // Sorted for stable output; identical results stay (SHACL reports a
        // shared property shape once per focus node that reaches it).
        results.sort();
        Ok(Report {
            conforms: results.is_empty(),
            results,
        })
    }
}

/// The outcome of a validation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// True when there is no result at all, as SHACL defines it (a warning makes
    /// data non-conforming too; kgfuse refuses a load or fails `validate` only on
    /// violations, see [`Report::has_violations`]).
    pub conforms: bool,
    /// Every result, sorted by focus node, path and constraint component.
    pub results: Vec<ValidationResult>,
}

impl Report {
    /// Results of severity `Violation`.
    pub fn violations(&self) -> impl Iterator<Item = &ValidationResult> {
        self.results.iter().filter(|r| r.severity == "Violation")
    }

    /// Whether any result is a violation (what refuses a load).
    pub fn has_violations(&self) -> bool {
        self.violations().next().is_some()
    }
}

/// One validation result (SHACL's `sh:ValidationResult`): IRIs bare, other terms
/// in N-Triples syntax.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct ValidationResult {
    /// The node that failed (`sh:focusNode`).
    pub focus_node: String,
    /// The property path (`sh:resultPath`), in SPARQL path syntax with full IRIs;
    /// none for a node shape's own constraint.
    pub path: Option<String>,
    /// The constraint component, e.g. `http://www.w3.org/ns/shacl#MinCountConstraintComponent`.
    pub component: String,
    /// `Violation`, `Warning`, `Info`, or the severity IRI a shape gives.
    pub severity: String,
    /// The shape's `sh:message`, else a sentence saying what failed.
    pub message: String,
    /// The offending value (`sh:value`), when there is one.
    pub value: Option<String>,
    /// The shape that failed (`sh:sourceShape`).
    pub shape: Option<String>,
}
