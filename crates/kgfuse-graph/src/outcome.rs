//! A query's materialised result ([`QueryOutcome`]) and the formats it is written
//! in ([`ResultsFormat`]). Both backends produce it, so it sits below them.

use crate::GraphError;
use oxigraph::io::{RdfFormat, RdfSerializer};
use oxigraph::model::{Term, Triple, Variable};
use oxigraph::sparql::results::{QueryResultsFormat, QueryResultsSerializer};

/// Materialised result of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryOutcome {
    /// SELECT results.
    Solutions {
        /// Projected variables, without `?`.
        variables: Vec<String>,
        /// One row per solution, one cell per variable (None = unbound).
        rows: Vec<Vec<Option<Term>>>,
    },
    /// ASK result.
    Boolean(bool),
    /// CONSTRUCT or DESCRIBE result.
    Graph(Vec<Triple>),
}

/// Output formats for query results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsFormat {
    /// SPARQL 1.1 Query Results JSON (SELECT, ASK).
    Json,
    /// SPARQL 1.1 Query Results XML (SELECT, ASK).
    Xml,
    /// SPARQL 1.1 Query Results CSV (SELECT, ASK).
    Csv,
    /// SPARQL 1.1 Query Results TSV (SELECT, ASK).
    Tsv,
    /// Turtle (CONSTRUCT, DESCRIBE).
    Turtle,
    /// N-Triples (CONSTRUCT, DESCRIBE).
    NTriples,
}

impl ResultsFormat {
    /// Parses `json`, `xml`, `csv`, `tsv`, `turtle`/`ttl`, `ntriples`/`nt`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "json" => Self::Json,
            "xml" => Self::Xml,
            "csv" => Self::Csv,
            "tsv" => Self::Tsv,
            "turtle" | "ttl" => Self::Turtle,
            "ntriples" | "nt" | "n-triples" => Self::NTriples,
            _ => return None,
        })
    }
}

impl QueryOutcome {
    /// Writes SELECT/ASK results in a SPARQL results format and CONSTRUCT/DESCRIBE
    /// results in Turtle or N-Triples; other combinations are a usage error.
    pub fn write(
        &self,
        format: ResultsFormat,
        mut writer: impl std::io::Write,
    ) -> Result<(), GraphError> {
        let err = |e: std::io::Error| GraphError::Serialize(e.to_string());
        if let Self::Graph(triples) = self {
            let rdf_format = match format {
                ResultsFormat::Turtle => RdfFormat::Turtle,
                ResultsFormat::NTriples => RdfFormat::NTriples,
                other => {
                    return Err(GraphError::Usage(format!(
                        "{other:?} cannot hold graph results; use turtle or ntriples"
                    )));
                }
            };
            let mut serializer = RdfSerializer::from_format(rdf_format);
            if rdf_format == RdfFormat::Turtle {
                for (prefix, iri) in kgfuse_core::vocab::WELL_KNOWN_PREFIXES {
                    serializer = serializer
                        .with_prefix(*prefix, *iri)
                        .map_err(|e| GraphError::Serialize(e.to_string()))?;
                }
            }
            let mut out = serializer.for_writer(&mut writer);
            for triple in triples {
                out.serialize_triple(triple).map_err(err)?;
            }
            out.finish().map_err(err)?;
            return Ok(());
        }
        let results_format = match format {
            ResultsFormat::Json => QueryResultsFormat::Json,
            ResultsFormat::Xml => QueryResultsFormat::Xml,
            ResultsFormat::Csv => QueryResultsFormat::Csv,
            ResultsFormat::Tsv => QueryResultsFormat::Tsv,
            other => {
                return Err(GraphError::Usage(format!(
                    "{other:?} holds graphs, not solutions; use json, xml, csv or tsv"
                )));
            }
        };
        let serializer = QueryResultsSerializer::from_format(results_format);
        match self {
            Self::Boolean(value) => {
                serializer
                    .serialize_boolean_to_writer(&mut writer, *value)
                    .map_err(err)?;
            }
            Self::Solutions { variables, rows } => {
                let vars = variables
                    .iter()
                    .map(|v| Variable::new(v).map_err(|e| GraphError::Serialize(e.to_string())))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut out = serializer
                    .serialize_solutions_to_writer(&mut writer, vars.clone())
                    .map_err(err)?;
                for row in rows {
                    out.serialize(
                        vars.iter()
                            .zip(row)
                            .filter_map(|(v, t)| t.as_ref().map(|t| (v.as_ref(), t.as_ref()))),
                    )
                    .map_err(err)?;
                }
                out.finish().map_err(err)?;
            }
            Self::Graph(_) => {}
        }
        Ok(())
    }
}

impl From<kgfuse_remote::Answer> for QueryOutcome {
    fn from(answer: kgfuse_remote::Answer) -> Self {
        use kgfuse_remote::Answer;
        match answer {
            Answer::Solutions { variables, rows } => Self::Solutions { variables, rows },
            Answer::Boolean(value) => Self::Boolean(value),
            Answer::Graph(triples) => Self::Graph(triples),
        }
    }
}
