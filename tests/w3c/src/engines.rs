//! The three ways a test's query runs:
//!
//! - [`Engine::Oxigraph`]: plain Oxigraph, nothing of kgfuse in between. The
//!   test's `qt:data` goes to the default graph, each `qt:graphData` file to a named
//!   graph named by its IRI (the standard test dataset).
//! - [`Engine::KgfuseQueryLayer`]: the same dataset, written through kgfuse's
//!   update path, queried through kgfuse's read-only query path (the one the SPARQL
//!   endpoint and the MCP tool use: parser with predeclared prefixes, the
//!   cross-product guard, the row cut inside the algebra, the timeout), with the
//!   union default graph switched off (`kgfuse sparql --no-union`). A difference
//!   from Oxigraph here is a fault of kgfuse's query layer.
//! - [`Engine::KgfuseLoaded`]: what a user gets from `kgfuse load` of the test's
//!   files and a query with kgfuse's defaults: every file in a named graph of its
//!   own (with three triples describing the file), the default graph the union of
//!   all graphs.

use anyhow::{Context, Result, anyhow};
use kgfuse_core::progress::NoProgress;
use kgfuse_core::vocab::kg;
use kgfuse_graph::{
    Graph, LoadRequest, QueryOptions, QueryOutcome, RdfSource, ReadOnlyOptions, ResultsFormat,
};
use oxigraph::io::RdfParser;
use oxigraph::model::{GraphName, NamedNode, QuadRef, Triple, Variable};
use oxigraph::sparql::results::{QueryResultsFormat, QueryResultsSerializer};
use oxigraph::sparql::{QueryResults, SparqlEvaluator};
use oxigraph::store::Store;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Where a query runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Plain Oxigraph.
    Oxigraph,
    /// kgfuse's query path over the standard dataset.
    KgfuseQueryLayer,
    /// kgfuse's query path over the files as `kgfuse load` stores them.
    KgfuseLoaded,
}

impl Engine {
    /// Every engine, in report order.
    pub const ALL: [Self; 3] = [Self::Oxigraph, Self::KgfuseQueryLayer, Self::KgfuseLoaded];

    /// Column title in the report.
    pub fn title(self) -> &'static str {
        match self {
            Self::Oxigraph => "plain Oxigraph",
            Self::KgfuseQueryLayer => "kgfuse query layer",
            Self::KgfuseLoaded => "kgfuse as loaded",
        }
    }
}

/// A query test's inputs.
#[derive(Debug, Clone, Copy)]
pub struct Dataset<'a> {
    /// The query file (its IRI is the query's base).
    pub query: &'a Path,
    /// Default-graph files.
    pub data: &'a [PathBuf],
    /// Named-graph files.
    pub graph_data: &'a [PathBuf],
}

/// Whether `engine` accepts `text` as a query (`update = false`) or an update.
/// kgfuse parses with its predeclared prefixes unless `bare` is set.
pub fn parses(engine: Engine, text: &str, base: &Path, update: bool, bare: bool) -> Result<bool> {
    let base = file_iri(base)?;
    Ok(match engine {
        Engine::Oxigraph => {
            let parser = spargebra::SparqlParser::new().with_base_iri(base.as_str())?;
            if update {
                parser.parse_update(text).is_ok()
            } else {
                parser.parse_query(text).is_ok()
            }
        }
        Engine::KgfuseQueryLayer | Engine::KgfuseLoaded => {
            let mut options = QueryOptions {
                base_iri: Some(base.into_string()),
                ..QueryOptions::default()
            };
            if bare {
                options.prefixes.clear();
            }
            if update {
                kgfuse_graph::parse_update(text, &options).is_ok()
            } else {
                kgfuse_graph::parse_query(text, &options).is_ok()
            }
        }
    })
}

/// Runs the test's query on `engine`. With `keep_file_metadata = false` (a
/// diagnostic for [`Engine::KgfuseLoaded`]) the triples kgfuse writes about each
/// loaded file are deleted before the query runs.
pub fn evaluate(
    engine: Engine,
    dataset: &Dataset<'_>,
    keep_file_metadata: bool,
) -> Result<QueryOutcome> {
    let text = std::fs::read_to_string(dataset.query)
        .with_context(|| dataset.query.display().to_string())?;
    let base = file_iri(dataset.query)?.into_string();
    match engine {
        Engine::Oxigraph => oxigraph_evaluate(dataset, &text, &base),
        Engine::KgfuseQueryLayer => {
            let graph = Graph::in_memory()?;
            for path in dataset.data {
                insert(&graph, path, None)?;
            }
            for path in dataset.graph_data {
                insert(&graph, path, Some(file_iri(path)?))?;
            }
            let options = QueryOptions {
                union_default_graph: false,
                base_iri: Some(base),
                ..QueryOptions::default()
            };
            kgfuse_query(&graph, &text, &options)
        }
        Engine::KgfuseLoaded => {
            let graph = Graph::in_memory()?;
            let request = LoadRequest {
                sources: dataset
                    .data
                    .iter()
                    .chain(dataset.graph_data)
                    .map(|p| RdfSource::from(p.as_path()))
                    .collect(),
                ..LoadRequest::default()
            };
            let plan = graph.plan_load(&request)?;
            graph.execute_load(&plan, &mut |_: QuadRef<'_>| {}, &NoProgress)?;
            if !keep_file_metadata {
                delete_file_metadata(&graph)?;
            }
            let options = QueryOptions {
                base_iri: Some(base),
                ..QueryOptions::default()
            };
            kgfuse_query(&graph, &text, &options)
        }
    }
}

/// The outcome as the CSV results format, written by the engine's own serialiser.
pub fn to_csv(engine: Engine, outcome: &QueryOutcome) -> Result<String> {
    let mut out = Vec::new();
    match engine {
        Engine::Oxigraph => {
            let QueryOutcome::Solutions { variables, rows } = outcome else {
                return Err(anyhow!("only solutions have a CSV form"));
            };
            let variables = variables
                .iter()
                .map(Variable::new)
                .collect::<Result<Vec<_>, _>>()?;
            let mut writer = QueryResultsSerializer::from_format(QueryResultsFormat::Csv)
                .serialize_solutions_to_writer(&mut out, variables.clone())?;
            for row in rows {
                writer.serialize(
                    variables
                        .iter()
                        .zip(row)
                        .filter_map(|(v, t)| t.as_ref().map(|t| (v, t))),
                )?;
            }
            writer.finish()?;
        }
        Engine::KgfuseQueryLayer | Engine::KgfuseLoaded => {
            outcome.write(ResultsFormat::Csv, &mut out)?;
        }
    }
    Ok(String::from_utf8(out)?)
}

fn oxigraph_evaluate(dataset: &Dataset<'_>, text: &str, base: &str) -> Result<QueryOutcome> {
    let store = Store::new()?;
    for path in dataset.data {
        oxigraph_load(&store, path, GraphName::DefaultGraph)?;
    }
    for path in dataset.graph_data {
        oxigraph_load(&store, path, file_iri(path)?.into())?;
    }
    let results = SparqlEvaluator::new()
        .with_base_iri(base)?
        .parse_query(text)?
        .on_store(&store)
        .execute()?;
    Ok(match results {
        QueryResults::Boolean(value) => QueryOutcome::Boolean(value),
        QueryResults::Solutions(solutions) => {
            let variables = solutions.variables().to_vec();
            let mut rows = Vec::new();
            for solution in solutions {
                let solution = solution?;
                rows.push(variables.iter().map(|v| solution.get(v).cloned()).collect());
            }
            QueryOutcome::Solutions {
                variables: variables.iter().map(|v| v.as_str().to_owned()).collect(),
                rows,
            }
        }
        QueryResults::Graph(triples) => {
            QueryOutcome::Graph(triples.collect::<Result<Vec<_>, _>>()?)
        }
    })
}

fn oxigraph_load(store: &Store, path: &Path, graph: GraphName) -> Result<()> {
    let parser = RdfParser::from_format(kgfuse_graph::format_from_path(path)?)
        .rename_blank_nodes()
        .with_base_iri(file_iri(path)?.as_str())?
        .with_default_graph(graph);
    let file = File::open(path).with_context(|| path.display().to_string())?;
    store
        .load_from_reader(parser, BufReader::new(file))
        .with_context(|| path.display().to_string())
}

/// Writes a file's triples through kgfuse's SPARQL Update path, every term in
/// its escaped N-Triples form.
fn insert(graph: &Graph, path: &Path, into: Option<NamedNode>) -> Result<()> {
    let parser = RdfParser::from_format(kgfuse_graph::format_from_path(path)?)
        .rename_blank_nodes()
        .with_base_iri(file_iri(path)?.as_str())?;
    let file = File::open(path).with_context(|| path.display().to_string())?;
    let mut triples = String::new();
    for quad in parser.for_reader(BufReader::new(file)) {
        let quad = quad.with_context(|| path.display().to_string())?;
        triples.push_str(&Triple::from(quad).to_string());
        triples.push_str(" .\n");
    }
    let update = match into {
        Some(name) => format!("INSERT DATA {{ GRAPH {name} {{\n{triples}}} }}"),
        None => format!("INSERT DATA {{\n{triples}}}"),
    };
    Ok(graph.update(&update, &QueryOptions::default())?)
}

fn delete_file_metadata(graph: &Graph) -> Result<()> {
    let update = format!(
        "DELETE WHERE {{ GRAPH ?g {{ ?g a <{}> ; <{}> ?path ; <{}> ?hash }} }}",
        kg::SOURCE_FILE,
        kg::SOURCE_FILE_PATH,
        kg::CONTENT_HASH
    );
    Ok(graph.update(&update, &QueryOptions::default())?)
}

/// The read-only path of the SPARQL endpoint and the MCP tool, with its defaults.
fn kgfuse_query(graph: &Graph, text: &str, options: &QueryOptions) -> Result<QueryOutcome> {
    let limited = graph.query_read_only(text, options, &ReadOnlyOptions::default())?;
    if limited.truncated {
        return Err(anyhow!("cut at the row limit"));
    }
    Ok(limited.outcome)
}

/// A local file's `file://` IRI, as kgfuse names the graph it loads it into.
pub fn file_iri(path: &Path) -> Result<NamedNode> {
    Ok(kgfuse_graph::file_graph_iri(path)?)
}
