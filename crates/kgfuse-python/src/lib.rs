//! `kgfuse._native`: the Python package's native module, a thin layer over the
//! [`kgfuse`] facade.
//!
//! One class, [`Store`], opens (or creates) a data directory and offers what the
//! command line offers: load RDF files, ingest code and documents, SPARQL,
//! retrieve, ask, check and stats. Every call releases the GIL while kgfuse
//! works, so threads that share a store run their questions side by side.
//! Results arrive as plain Python values (dicts with the JSON field names of the
//! CLI's `--format json`), errors as the exceptions of `kgfuse.errors` with the
//! facade's messages. The pure-Python half of the package (the retrievers, the
//! exceptions, the type stubs) lives in `python/kgfuse/`.

mod convert;
mod errors;

use kgfuse::{
    CodeLanguage, DocsOptions, Engine, EngineInit, IngestCodeOptions, NoProgress, RdfSource,
    RetrieveOptions, Strategy,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The runtime every call's async work runs on; made at the first call.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("kgfuse")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start kgfuse's runtime: {e}")))
}

/// Runs kgfuse work without the GIL: `work` gets the runtime and returns a value
/// or the facade's error, which becomes a `kgfuse.errors` exception.
fn without_gil<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&tokio::runtime::Runtime) -> Result<T, kgfuse::Error> + Send,
) -> PyResult<T> {
    let runtime = runtime()?;
    py.detach(|| work(runtime))
        .map_err(|error| errors::to_python(py, &error))
}

/// A kgfuse data directory, opened for use (`kgfuse.Store` in Python).
#[pyclass(frozen, module = "kgfuse._native")]
struct Store {
    engine: Engine,
    path: PathBuf,
}

/// The embedder a new store is created with, from its Python name.
fn embedder_init(name: &str, dimension: usize) -> PyResult<EngineInit> {
    match name {
        "hash" => Ok(EngineInit::hash(dimension)),
        "minilm" => Ok(EngineInit::minilm(None)),
        "distilled" => Ok(EngineInit::distilled(None)),
        other => Err(errors::invalid(format!(
            "unknown embedder {other:?}: use \"hash\", \"minilm\" or \"distilled\""
        ))),
    }
}

/// `options` with the caller's strategy and item count on top.
fn with_choices(
    mut options: RetrieveOptions,
    strategy: Option<&str>,
    top_k: Option<usize>,
) -> PyResult<RetrieveOptions> {
    if let Some(name) = strategy {
        options.strategy = Strategy::from_name(name).map_err(|e| errors::invalid(e.to_string()))?;
    }
    if let Some(k) = top_k {
        if k == 0 {
            return Err(errors::invalid("top_k must be at least 1".to_owned()));
        }
        options.top_k = k;
    }
    Ok(options)
}

/// One path or a list of them, as Python gives it.
fn paths_argument(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(one) = paths.extract::<PathBuf>() {
        return Ok(vec![one]);
    }
    paths.extract::<Vec<PathBuf>>()
}

#[pymethods]
impl Store {
    /// Opens the store in `path`; creates it when `embedder` is given and the
    /// directory holds none (see the stub for the arguments).
    #[new]
    #[pyo3(signature = (path, *, embedder=None, dimension=384, create=None, offline=false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        embedder: Option<&str>,
        dimension: usize,
        create: Option<bool>,
        offline: bool,
    ) -> PyResult<Self> {
        let init = embedder
            .map(|name| embedder_init(name, dimension))
            .transpose()?;
        let model = language_model(py, offline)?;
        let dir = path.clone();
        let engine = without_gil(py, move |runtime| {
            let mut builder = Engine::builder(&dir).model(model);
            if let Some(init) = init {
                builder = builder.embedder(init);
            }
            if let Some(create) = create {
                builder = builder.create_if_missing(create);
            }
            runtime.block_on(builder.build())
        })?;
        Ok(Self { engine, path })
    }

    /// The data directory, as given.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    fn __repr__(&self) -> String {
        format!("kgfuse.Store({:?})", self.path.display().to_string())
    }

    /// Loads RDF files, each into its own named graph unless `graph` is given.
    #[pyo3(signature = (paths, *, graph=None, format=None))]
    fn load<'py>(
        &self,
        py: Python<'py>,
        paths: &Bound<'py, PyAny>,
        graph: Option<String>,
        format: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let format = format
            .map(kgfuse::format_from_name)
            .transpose()
            .map_err(|e| errors::invalid(e.to_string()))?;
        let sources: Vec<RdfSource> = paths_argument(paths)?
            .into_iter()
            .map(|path| RdfSource { path, format })
            .collect();
        let summary = without_gil(py, |runtime| {
            runtime.block_on(
                self.engine
                    .load_sources(&sources, graph.as_deref(), &NoProgress),
            )
        })?;
        convert::load_summary(py, &summary)
    }

    /// Ingests the Python and/or Rust sources under `path`.
    #[pyo3(signature = (path, *, package=None, languages=None, knowledge=None))]
    fn ingest_code<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        package: Option<String>,
        languages: Option<Vec<String>>,
        knowledge: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let languages = languages
            .unwrap_or_default()
            .iter()
            .map(|name| match name.as_str() {
                "python" => Ok(CodeLanguage::Python),
                "rust" => Ok(CodeLanguage::Rust),
                other => Err(errors::invalid(format!(
                    "unknown language {other:?}: use \"python\" or \"rust\""
                ))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let options = IngestCodeOptions {
            languages,
            package,
            knowledge_file: knowledge,
            ..IngestCodeOptions::default()
        };
        let report = without_gil(py, |runtime| {
            runtime.block_on(self.engine.ingest_code(&path, &options, &NoProgress))
        })?;
        convert::serialized(py, &report)
    }

    /// Ingests the Markdown and text files under `path`.
    fn ingest_docs<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let report = without_gil(py, |runtime| {
            runtime.block_on(
                self.engine
                    .ingest_docs(&path, &DocsOptions::default(), &NoProgress),
            )
        })?;
        convert::serialized(py, &report)
    }

    /// Runs a SPARQL query: rows as dicts, a bool, or triples.
    fn sparql<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let outcome = without_gil(py, |_| self.engine.sparql(query))?;
        convert::query_outcome(py, &outcome)
    }

    /// Runs a SPARQL Update; the vectors are kept in step.
    fn update<'py>(&self, py: Python<'py>, update: &str) -> PyResult<Bound<'py, PyAny>> {
        let report = without_gil(py, |runtime| {
            runtime.block_on(self.engine.update(update, &NoProgress))
        })?;
        convert::serialized(py, &report)
    }

    /// Retrieves the fused context for a question (the CLI's `retrieve --format json`).
    #[pyo3(signature = (question, *, strategy=None, top_k=None))]
    fn retrieve<'py>(
        &self,
        py: Python<'py>,
        question: &str,
        strategy: Option<&str>,
        top_k: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = with_choices(self.engine.retrieve_options().clone(), strategy, top_k)?;
        let context = without_gil(py, |runtime| {
            runtime.block_on(self.engine.retrieve(question, &options))
        })?;
        convert::serialized(py, &context)
    }

    /// Answers with citations, or says the context is insufficient.
    #[pyo3(signature = (question, *, strategy=None, top_k=None))]
    fn ask<'py>(
        &self,
        py: Python<'py>,
        question: &str,
        strategy: Option<&str>,
        top_k: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut options = self.engine.ask_options().clone();
        options.retrieve = with_choices(options.retrieve, strategy, top_k)?;
        let answer = without_gil(py, |runtime| {
            Ok(runtime.block_on(self.engine.ask(question, &options)))
        })?;
        convert::serialized(py, &answer)
    }

    /// Verifies that the graph and the vectors agree.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let report = without_gil(py, |runtime| runtime.block_on(self.engine.check()))?;
        convert::serialized(py, &report)
    }

    /// Sizes of both sides of the store.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = without_gil(py, |runtime| runtime.block_on(self.engine.stats()))?;
        convert::serialized(py, &stats)
    }
}

/// The model of the judgement steps: the one `KGFUSE_LLM_*` configures (as for
/// the CLI), else the offline rule-based one; `offline` forces the latter.
fn language_model(py: Python<'_>, offline: bool) -> PyResult<Arc<dyn kgfuse::LanguageModel>> {
    if !offline && let Some(config) = kgfuse::OpenAiChatConfig::from_env() {
        let model = kgfuse::OpenAiChat::new(config)
            .map_err(|e| errors::to_python(py, &kgfuse::Error::from(e)))?;
        return Ok(Arc::new(model));
    }
    Ok(Arc::new(kgfuse::RuleBased::default()))
}

/// The native module: `kgfuse._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<Store>()?;
    Ok(())
}
