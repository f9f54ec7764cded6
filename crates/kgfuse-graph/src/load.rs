//! Atomic loading of RDF files.
//!
//! A load is planned first ([`Graph::plan_load`]): every file gets a target graph and
//! an action. Files loaded without an explicit `--graph` go to their own named graph
//! (`file:///absolute/path`), which also records the file's path, its SHA-256 and the
//! [fingerprint](crate::fingerprint) of its triples; loading an unchanged file again
//! is skipped, loading a changed one replaces its graph. A file whose bytes changed
//! but whose triples did not (re-serialised: another order, syntax or blank-node
//! labelling) is parsed to compare fingerprints and skipped too. Files loaded into
//! a graph named with `--graph` record neither.
//!
//! Execution ([`Graph::execute_load`]) keeps a call atomic against bad input:
//! files that replace a graph are parsed into memory first, new files stream through
//! Oxigraph's bulk loader (which only publishes its SST files at commit), and the
//! replacements are applied in one transaction after the bulk commit. A syntax error
//! anywhere therefore aborts before anything is written.
//!
//! The new files go to the loader as one stream (each file's quads, its metadata,
//! then what the [`LoadObserver`] adds, such as derived triples), so the loader
//! batches by size rather than by file.

use crate::backend::Changes;
use crate::fingerprint::{FingerprintBuilder, FingerprintLimits};
use crate::{Graph, GraphError};
use kgfuse_core::progress::Progress;
use kgfuse_core::vocab::{kg, w3c};
use oxigraph::io::{RdfFormat, RdfParseError, RdfParser};
use oxigraph::model::{GraphName, Literal, NamedNode, NamedNodeRef, Quad, QuadRef};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// One file to load.
#[derive(Debug, Clone)]
pub struct RdfSource {
    /// Path of the file.
    pub path: PathBuf,
    /// Format; guessed from the extension when `None`.
    pub format: Option<RdfFormat>,
}

impl From<&Path> for RdfSource {
    fn from(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            format: None,
        }
    }
}

/// What to load and where.
#[derive(Debug, Clone, Default)]
pub struct LoadRequest {
    /// Files, loaded together in one atomic call.
    pub sources: Vec<RdfSource>,
    /// Put every triple in this graph (added to what it holds) instead of one graph
    /// per file. Such a load records no file metadata, so neither content hash nor
    /// [fingerprint](crate::fingerprint): loading the same file again adds to the
    /// graph again.
    pub graph: Option<NamedNode>,
    /// With `graph`: replace what the graph holds instead of adding to it, in one
    /// transaction (the Graph Store Protocol's PUT).
    pub replace: bool,
    /// The base for relative IRIs in every source; by default each file's own
    /// `file://` IRI. (A Graph Store upload resolves against the graph it goes to.)
    pub base_iri: Option<NamedNode>,
}

/// What will happen to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadAction {
    /// Add its quads.
    Insert,
    /// Its own graph exists with other content: replace that graph.
    Replace,
    /// Its own graph already holds exactly this file: nothing to do.
    SkipUnchanged,
}

/// A file with its resolved format, target graph and action.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Path as given.
    pub path: PathBuf,
    /// Parsing format.
    pub format: RdfFormat,
    /// Graph receiving the file's default-graph triples.
    pub graph: NamedNode,
    /// The base for its relative IRIs: the request's `base_iri`, else the file's
    /// own `file://` IRI.
    pub base: NamedNode,
    /// SHA-256 of the file bytes.
    pub content_hash: String,
    /// Planned action.
    pub action: LoadAction,
    /// The file's [fingerprint](crate::fingerprint), when planning computed it: its
    /// bytes changed and its graph records a canonical fingerprint. With
    /// [`LoadAction::SkipUnchanged`] (the same triples) the load brings the graph's
    /// recorded content hash up to date, so the next plan need not parse it.
    pub fingerprint: Option<String>,
}

/// A planned load; see [`Graph::plan_load`].
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Files in load order.
    pub files: Vec<PlannedFile>,
    /// True when files go to their own graphs (no `--graph`).
    pub own_graphs: bool,
}

impl LoadPlan {
    /// Graphs whose current content will be replaced.
    pub fn replaced_graphs(&self) -> impl Iterator<Item = &NamedNode> {
        self.files
            .iter()
            .filter(|f| f.action == LoadAction::Replace)
            .map(|f| &f.graph)
    }
}

/// Outcome of a load.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// (file, graph, action, quads parsed) per file.
    pub files: Vec<(PathBuf, NamedNode, LoadAction, u64)>,
    /// Quads written, file metadata included.
    pub quads: u64,
    /// Prefixes declared in the files (Turtle, TriG, RDF/XML, JSON-LD).
    pub prefixes: Vec<(String, String)>,
}

/// The named graph a file is loaded into by default: its canonical `file://` IRI.
pub fn file_graph_iri(path: &Path) -> Result<NamedNode, GraphError> {
    let absolute = std::fs::canonicalize(path).map_err(|source| GraphError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let iri = kgfuse_core::file_iri(&absolute);
    NamedNode::new(iri).map_err(|e| GraphError::Usage(format!("{}: {e}", path.display())))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> GraphError + '_ {
    move |source| GraphError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn hash_file(path: &Path) -> Result<String, GraphError> {
    File::open(path)
        .and_then(|f| kgfuse_core::content_hash_reader(BufReader::new(f)))
        .map_err(io_error(path))
}

fn parse_error(path: &Path, error: RdfParseError) -> GraphError {
    match error {
        RdfParseError::Io(source) => GraphError::Io {
            path: path.display().to_string(),
            source,
        },
        RdfParseError::Syntax(e) => {
            let (line, column) = e
                .location()
                .map_or((0, 0), |l| (l.start.line + 1, l.start.column + 1));
            GraphError::Parse {
                file: path.display().to_string(),
                line,
                column,
                message: e.to_string(),
            }
        }
    }
}

/// What a load tells its caller as it writes, and what the caller may add to it.
pub trait LoadObserver {
    /// Sees every quad the load writes: parsed ones and file metadata.
    fn quad(&mut self, quad: QuadRef<'_>);

    /// Called after each parsed quad: quads to write before the load goes on
    /// (the store's derived triples of a chunk of the load, once it is full).
    /// `graph` shows the store before the load, and perhaps part of it.
    fn due_quads(&mut self, graph: &Graph) -> Result<Vec<Quad>, GraphError> {
        let _ = graph;
        Ok(Vec::new())
    }

    /// Called once every new file was read, before their bulk commit: quads to
    /// write in that same commit (the store adds what the new triples entail).
    /// `graph` shows the store before the load, and perhaps part of it.
    fn closing_quads(&mut self, graph: &Graph) -> Result<Vec<Quad>, GraphError> {
        let _ = graph;
        Ok(Vec::new())
    }
}

impl<F: FnMut(QuadRef<'_>)> LoadObserver for F {
    fn quad(&mut self, quad: QuadRef<'_>) {
        self(quad);
    }
}

/// One file being parsed: its quads, with progress and the prefixes in scope.
struct FileParser<'a> {
    path: &'a Path,
    parser: oxigraph::io::ReaderQuadParser<BufReader<File>>,
    count: u64,
    done: bool,
}

impl<'a> FileParser<'a> {
    fn open(file: &'a PlannedFile) -> Result<Self, GraphError> {
        let reader = BufReader::new(File::open(&file.path).map_err(io_error(&file.path))?);
        let parser = RdfParser::from_format(file.format)
            .rename_blank_nodes()
            .with_base_iri(file.base.as_str())
            .map_err(|e| GraphError::Usage(e.to_string()))?
            .with_default_graph(GraphName::NamedNode(file.graph.clone()))
            .for_reader(reader);
        Ok(Self {
            path: &file.path,
            parser,
            count: 0,
            done: false,
        })
    }

    /// The next quad; `None` at the end of the file or after an error.
    fn next_quad(
        &mut self,
        progress: &dyn Progress,
        prefixes: &mut Vec<(String, String)>,
    ) -> Option<Result<Quad, GraphError>> {
        if self.done {
            return None;
        }
        match self.parser.next() {
            Some(Ok(quad)) => {
                self.count += 1;
                if self.count == 1 {
                    // RDF/XML's namespaces are in scope only inside the document
                    // element: read them while it is open (Turtle's stay to the end).
                    self.remember_prefixes(prefixes);
                }
                if self.count.is_multiple_of(10_000) {
                    progress.advance(10_000);
                }
                Some(Ok(quad))
            }
            Some(Err(e)) => {
                self.done = true;
                Some(Err(parse_error(self.path, e)))
            }
            None => {
                self.done = true;
                progress.advance(self.count % 10_000);
                self.remember_prefixes(prefixes);
                None
            }
        }
    }

    /// Adds the prefixes the parser has in scope to the ones found so far.
    fn remember_prefixes(&self, prefixes: &mut Vec<(String, String)>) {
        for (prefix, iri) in self.parser.prefixes() {
            if !prefixes.iter().any(|(p, _)| p == prefix) {
                prefixes.push((prefix.to_owned(), iri.to_owned()));
            }
        }
    }
}

/// Every quad of one file, in memory: a replacement, or what `--validate` checks.
fn parse_whole_file(
    file: &PlannedFile,
    observer: &mut dyn LoadObserver,
    progress: &dyn Progress,
    prefixes: &mut Vec<(String, String)>,
) -> Result<Vec<Quad>, GraphError> {
    let mut parser = FileParser::open(file)?;
    let mut quads = Vec::new();
    while let Some(quad) = parser.next_quad(progress, prefixes) {
        let quad = quad?;
        observer.quad(quad.as_ref());
        quads.push(quad);
    }
    Ok(quads)
}

/// The quads a planned file would write (its triples in its target graph), parsed
/// and returned without touching the store: what `kgfuse load --validate` checks.
pub fn parse_planned_file(file: &PlannedFile) -> Result<Vec<Quad>, GraphError> {
    parse_whole_file(
        file,
        &mut |_: QuadRef<'_>| {},
        &kgfuse_core::progress::NoProgress,
        &mut Vec::new(),
    )
}

/// The quads of every new file, one file after the other (each followed by its
/// metadata), then the observer's closing quads: one stream, so the bulk loader
/// cuts it into batches of its own size instead of at least one per file (each
/// batch is a set of SST files RocksDB must later compact).
struct NewFilesStream<'a> {
    graph: &'a Graph,
    files: std::slice::Iter<'a, &'a PlannedFile>,
    own_graphs: bool,
    observer: &'a mut dyn LoadObserver,
    progress: &'a dyn Progress,
    report: &'a mut LoadReport,
    /// The file being read and the quads still to write after its parsed ones.
    current: Option<(&'a PlannedFile, FileParser<'a>)>,
    /// The current file's quads for its fingerprint (own graphs only).
    fingerprint: Option<FingerprintBuilder>,
    pending: std::vec::IntoIter<Quad>,
    /// The closing quads were asked for: nothing follows what is pending.
    closed: bool,
    /// A file failed: the stream ends (the loader drops everything).
    failed: bool,
}

impl NewFilesStream<'_> {
    /// Ends the current file: its metadata (with its fingerprint, computed from
    /// the quads collected as it streamed) is queued and its count reported.
    fn finish_file(&mut self, file: &PlannedFile, parsed: u64) {
        let mut count = parsed;
        if self.own_graphs {
            let fingerprint = self
                .fingerprint
                .take()
                .map(|b| b.finish(&file.path.display().to_string(), &file.content_hash));
            let metadata = file_metadata(file, fingerprint.as_deref());
            metadata.iter().for_each(|q| self.observer.quad(q.as_ref()));
            count += metadata.len() as u64;
            self.pending = metadata.into_iter();
        }
        self.progress.finish();
        self.report.quads += count;
        self.report
            .files
            .push((file.path.clone(), file.graph.clone(), file.action, count));
    }
}

impl Iterator for NewFilesStream<'_> {
    type Item = Result<Quad, GraphError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(quad) = self.pending.next() {
                return Some(Ok(quad));
            }
            if let Some((file, parser)) = &mut self.current {
                match parser.next_quad(self.progress, &mut self.report.prefixes) {
                    Some(Ok(quad)) => {
                        self.observer.quad(quad.as_ref());
                        if let Some(fingerprint) = &mut self.fingerprint {
                            fingerprint.add(quad.as_ref());
                        }
                        match self.observer.due_quads(self.graph) {
                            Ok(due) if !due.is_empty() => {
                                self.report.quads += due.len() as u64;
                                self.pending = due.into_iter();
                            }
                            Ok(_) => {}
                            Err(e) => {
                                self.failed = true;
                                return Some(Err(e));
                            }
                        }
                        return Some(Ok(quad));
                    }
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    None => {
                        let (file, parsed) = (*file, parser.count);
                        self.current = None;
                        self.finish_file(file, parsed);
                        continue;
                    }
                }
            }
            if let Some(file) = self.files.next() {
                self.progress
                    .start(&format!("loading {}", file.path.display()), None);
                match FileParser::open(file) {
                    Ok(parser) => {
                        self.current = Some((file, parser));
                        self.fingerprint = self.own_graphs.then(|| {
                            FingerprintBuilder::new(Some(&file.graph), FingerprintLimits::default())
                        });
                    }
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            if self.closed {
                return None;
            }
            self.closed = true;
            match self.observer.closing_quads(self.graph) {
                Ok(quads) => {
                    self.report.quads += quads.len() as u64;
                    self.pending = quads.into_iter();
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Quads describing a loaded file inside its own graph: its type, path, content
/// hash and, when known, fingerprint.
fn file_metadata(file: &PlannedFile, fingerprint: Option<&str>) -> Vec<Quad> {
    let graph = GraphName::NamedNode(file.graph.clone());
    let quad = |p: &str, o: oxigraph::model::Term| {
        Quad::new(
            file.graph.clone(),
            NamedNodeRef::new_unchecked(p).into_owned(),
            o,
            graph.clone(),
        )
    };
    let mut metadata = vec![
        quad(
            w3c::RDF_TYPE,
            NamedNodeRef::new_unchecked(kg::SOURCE_FILE)
                .into_owned()
                .into(),
        ),
        quad(
            kg::SOURCE_FILE_PATH,
            Literal::new_simple_literal(file.path.display().to_string()).into(),
        ),
        quad(
            kg::CONTENT_HASH,
            Literal::new_simple_literal(&file.content_hash).into(),
        ),
    ];
    if let Some(fingerprint) = fingerprint {
        metadata.push(quad(
            kg::CANONICAL_HASH,
            Literal::new_simple_literal(fingerprint).into(),
        ));
    }
    metadata
}

impl Graph {
    /// Resolves formats and target graphs and decides, per file, whether it is new,
    /// unchanged or replaces its graph. Reads each file once to hash it; a file
    /// whose bytes changed is parsed too when its graph records a canonical
    /// fingerprint (the same triples re-serialised are unchanged).
    pub fn plan_load(&self, request: &LoadRequest) -> Result<LoadPlan, GraphError> {
        let own_graphs = request.graph.is_none();
        if request.replace && (own_graphs || request.sources.len() != 1) {
            return Err(GraphError::Usage(
                "replacing a graph takes exactly one file and a target graph".into(),
            ));
        }
        let mut files = Vec::with_capacity(request.sources.len());
        for source in &request.sources {
            let format = match source.format {
                Some(f) => f,
                None => crate::format_from_path(&source.path)?,
            };
            let content_hash = hash_file(&source.path)?;
            let own_iri = file_graph_iri(&source.path)?;
            let base = request.base_iri.clone().unwrap_or_else(|| own_iri.clone());
            let (graph, action) = match &request.graph {
                Some(graph) if request.replace && self.contains_graph(graph)? => {
                    (graph.clone(), LoadAction::Replace)
                }
                Some(graph) => (graph.clone(), LoadAction::Insert),
                None => (own_iri, LoadAction::Insert),
            };
            if files
                .iter()
                .any(|f: &PlannedFile| f.graph == graph && own_graphs)
            {
                continue; // the same file named twice
            }
            let mut file = PlannedFile {
                path: source.path.clone(),
                format,
                graph,
                base,
                content_hash,
                action,
                fingerprint: None,
            };
            if own_graphs {
                self.plan_own_graph(&mut file)?;
            }
            files.push(file);
        }
        Ok(LoadPlan { files, own_graphs })
    }

    /// Decides what loading a file into its own graph does: insert into a new
    /// graph; skip when the graph records the file's content hash, or a canonical
    /// fingerprint the file's triples still have (parsed to compute it); replace
    /// otherwise.
    fn plan_own_graph(&self, file: &mut PlannedFile) -> Result<(), GraphError> {
        let graph = file.graph.as_ref();
        file.action = if !self.contains_graph(&file.graph)? {
            LoadAction::Insert
        } else if self.holds(
            Some(graph.into()),
            Some(NamedNodeRef::new_unchecked(kg::CONTENT_HASH)),
            Some(
                Literal::new_simple_literal(&file.content_hash)
                    .as_ref()
                    .into(),
            ),
            Some(graph.into()),
        )? {
            LoadAction::SkipUnchanged
        } else {
            match self.fingerprint_of(graph)? {
                Some(recorded) if crate::fingerprint::is_canonical(&recorded) => {
                    let fingerprint = fingerprint_of_file(file)?;
                    let action = if fingerprint == recorded {
                        tracing::info!(
                            file = %file.path.display(),
                            "bytes changed, triples did not (same fingerprint): unchanged"
                        );
                        LoadAction::SkipUnchanged
                    } else {
                        LoadAction::Replace
                    };
                    file.fingerprint = Some(fingerprint);
                    action
                }
                _ => LoadAction::Replace,
            }
        };
        Ok(())
    }

    /// Runs a plan. `observer` sees every quad written (to find subjects whose
    /// text changed) and may add quads to the new files' commit; nothing is
    /// written when any file fails to parse.
    pub fn execute_load(
        &self,
        plan: &LoadPlan,
        observer: &mut dyn LoadObserver,
        progress: &dyn Progress,
    ) -> Result<LoadReport, GraphError> {
        let mut report = LoadReport::default();

        // 1. Parse replacements into memory: validates them before any write.
        let mut replacements: Vec<(&PlannedFile, Vec<Quad>)> = Vec::new();
        for file in plan
            .files
            .iter()
            .filter(|f| f.action == LoadAction::Replace)
        {
            progress.start(&format!("parsing {}", file.path.display()), None);
            let quads = parse_whole_file(file, observer, progress, &mut report.prefixes)?;
            progress.finish();
            replacements.push((file, quads));
        }

        // 2. Stream new files through the bulk loader; it publishes only at commit.
        let inserts: Vec<&PlannedFile> = plan
            .files
            .iter()
            .filter(|f| f.action == LoadAction::Insert)
            .collect();
        if !inserts.is_empty() {
            let mut loader = self.bulk_writer();
            loader.load(NewFilesStream {
                graph: self,
                files: inserts.iter(),
                own_graphs: plan.own_graphs,
                observer: &mut *observer,
                progress,
                report: &mut report,
                current: None,
                fingerprint: None,
                pending: Vec::new().into_iter(),
                closed: false,
                failed: false,
            })?;
            loader.commit()?;
        }

        // 3. Apply replacements atomically.
        if !replacements.is_empty() {
            let mut changes = Changes::default();
            for (file, quads) in replacements {
                changes.clear.push(file.graph.clone());
                let mut count = quads.len() as u64;
                if plan.own_graphs {
                    let fingerprint = file.fingerprint.clone().unwrap_or_else(|| {
                        crate::fingerprint::file_fingerprint(
                            &quads,
                            file.graph.as_ref(),
                            FingerprintLimits::default(),
                            &file.path.display().to_string(),
                            &file.content_hash,
                        )
                    });
                    let metadata = file_metadata(file, Some(&fingerprint));
                    metadata.iter().for_each(|q| observer.quad(q.as_ref()));
                    count += metadata.len() as u64;
                    changes.insert.extend(metadata);
                }
                changes.insert.extend(quads);
                report.quads += count;
                report
                    .files
                    .push((file.path.clone(), file.graph.clone(), file.action, count));
            }
            self.apply(&changes)?;
        }
        self.refresh_content_hashes(plan)?;
        for file in plan
            .files
            .iter()
            .filter(|f| f.action == LoadAction::SkipUnchanged)
        {
            report
                .files
                .push((file.path.clone(), file.graph.clone(), file.action, 0));
        }
        Ok(report)
    }

    /// Records the new content hash of each skipped file whose bytes changed but
    /// whose triples did not (one quad swapped per file, in one transaction), so
    /// loading it again is skipped on its hash without a parse. The observer is not
    /// told: only the literal of a bookkeeping triple changes, no text nor schema.
    fn refresh_content_hashes(&self, plan: &LoadPlan) -> Result<(), GraphError> {
        let predicate = NamedNodeRef::new_unchecked(kg::CONTENT_HASH);
        let mut changes = Changes::default();
        for file in plan
            .files
            .iter()
            .filter(|f| f.action == LoadAction::SkipUnchanged && f.fingerprint.is_some())
        {
            let graph = file.graph.as_ref();
            for quad in self.quads(
                Some(graph.into()),
                Some(predicate),
                None,
                Some(graph.into()),
            ) {
                changes.remove.push(quad?);
            }
            changes.insert.push(Quad::new(
                file.graph.clone(),
                predicate.into_owned(),
                Literal::new_simple_literal(&file.content_hash),
                GraphName::NamedNode(file.graph.clone()),
            ));
        }
        if changes.insert.is_empty() {
            return Ok(());
        }
        self.apply(&changes)
    }
}

/// The fingerprint of a planned file, parsed as it would be loaded (its base IRI,
/// its own graph), without touching the store. Past the quad limit the parse
/// stops: the fingerprint is then the byte hash whatever follows.
fn fingerprint_of_file(file: &PlannedFile) -> Result<String, GraphError> {
    let mut parser = FileParser::open(file)?;
    let mut fingerprint = FingerprintBuilder::new(Some(&file.graph), FingerprintLimits::default());
    let mut prefixes = Vec::new();
    while let Some(quad) = parser.next_quad(&kgfuse_core::progress::NoProgress, &mut prefixes) {
        if !fingerprint.add(quad?.as_ref()) {
            break;
        }
    }
    Ok(fingerprint.finish(&file.path.display().to_string(), &file.content_hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::progress::NoProgress;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write fixture");
        path
    }

    fn request(paths: &[&Path]) -> LoadRequest {
        LoadRequest {
            sources: paths
                .iter()
                .map(|p| RdfSource {
                    path: p.to_path_buf(),
                    format: None,
                })
                .collect(),
            graph: None,
            replace: false,
            base_iri: None,
        }
    }

    fn load(graph: &Graph, paths: &[&Path]) -> Result<LoadReport, GraphError> {
        let plan = graph.plan_load(&request(paths))?;
        graph.execute_load(&plan, &mut |_: QuadRef<'_>| {}, &NoProgress)
    }

    #[test]
    fn malformed_file_writes_nothing_and_names_its_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = write(dir.path(), "good.ttl", "<urn:a> <urn:p> <urn:b> .\n");
        let bad = write(
            dir.path(),
            "bad.ttl",
            "<urn:c> <urn:p> <urn:d> .\n<urn:e> <urn:p> \"unterminated .\n",
        );
        let graph = Graph::in_memory().expect("store");
        let err = load(&graph, &[&good, &bad]).expect_err("must fail");
        let GraphError::Parse { file, line, .. } = &err else {
            panic!("unexpected error {err}")
        };
        assert!(file.ends_with("bad.ttl"));
        assert_eq!(*line, 2, "{err}");
        assert_eq!(graph.len().expect("len"), 0, "nothing may be written");
    }

    #[test]
    fn reloading_skips_unchanged_and_replaces_changed_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "d.ttl", "<urn:a> <urn:p> [ <urn:q> 1 ] .\n");
        let graph = Graph::in_memory().expect("store");
        let first = load(&graph, &[&path]).expect("load");
        assert_eq!(first.files[0].2, LoadAction::Insert);
        let size = graph.len().expect("len");
        assert_eq!(size, 2 + 4, "two triples plus file metadata");

        let again = load(&graph, &[&path]).expect("reload");
        assert_eq!(again.files[0].2, LoadAction::SkipUnchanged);
        assert_eq!(
            graph.len().expect("len"),
            size,
            "blank nodes must not pile up"
        );

        std::fs::write(&path, "<urn:a> <urn:p> <urn:z> .\n").expect("edit");
        let changed = load(&graph, &[&path]).expect("reload changed");
        assert_eq!(changed.files[0].2, LoadAction::Replace);
        assert_eq!(graph.len().expect("len"), 1 + 4);
    }

    fn recorded(graph: &Graph, path: &Path, predicate: &str) -> Option<String> {
        let iri = file_graph_iri(path).expect("iri");
        graph.metadata_value(iri.as_ref(), predicate).expect("read")
    }

    #[test]
    fn a_reserialised_file_is_unchanged_and_its_hash_brought_up_to_date() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(
            dir.path(),
            "d.ttl",
            "<urn:a> <urn:p> [ <urn:q> 1 ; <urn:r> ( \"x\" \"y\" ) ] .\n",
        );
        let graph = Graph::in_memory().expect("store");
        load(&graph, &[&path]).expect("load");
        let size = graph.len().expect("len");
        let fingerprint = recorded(&graph, &path, kg::CANONICAL_HASH).expect("recorded");
        assert!(
            crate::fingerprint::is_canonical(&fingerprint),
            "{fingerprint}"
        );

        // The same triples, reordered, blank nodes relabelled, as N-Triples text
        // (Turtle reads it too, so the path keeps its extension).
        std::fs::write(
            &path,
            "_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l2 .\n\
             _:n <urn:r> _:l1 .\n\
             _:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> \"y\" .\n\
             <urn:a> <urn:p> _:n .\n\
             _:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> \"x\" .\n\
             _:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .\n\
             _:n <urn:q> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
        )
        .expect("rewrite");
        let plan = graph.plan_load(&request(&[&path])).expect("plan");
        assert_eq!(plan.files[0].action, LoadAction::SkipUnchanged);
        assert_eq!(
            plan.files[0].fingerprint.as_deref(),
            Some(fingerprint.as_str())
        );
        let report = graph
            .execute_load(&plan, &mut |_: QuadRef<'_>| {}, &NoProgress)
            .expect("reload");
        assert_eq!(report.files[0].2, LoadAction::SkipUnchanged);
        assert_eq!(graph.len().expect("len"), size, "nothing added");
        let hash = hash_file(&path).expect("hash");
        assert_eq!(
            recorded(&graph, &path, kg::CONTENT_HASH),
            Some(hash),
            "the new bytes' hash is recorded"
        );
        // Now skipped on the byte hash, without a parse.
        let plan = graph.plan_load(&request(&[&path])).expect("plan");
        assert_eq!(plan.files[0].action, LoadAction::SkipUnchanged);
        assert_eq!(plan.files[0].fingerprint, None);

        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("\"y\"", "\"z\"")).expect("edit");
        let report = load(&graph, &[&path]).expect("reload changed");
        assert_eq!(report.files[0].2, LoadAction::Replace);
        let changed = recorded(&graph, &path, kg::CANONICAL_HASH).expect("recorded");
        assert!(crate::fingerprint::is_canonical(&changed));
        assert_ne!(changed, fingerprint);
        assert_eq!(graph.len().expect("len"), size);
    }

    #[test]
    fn explicit_graphs_record_no_fingerprint_and_old_graphs_are_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "e.nt", "<urn:a> <urn:p> \"x\" .\n");
        let graph = Graph::in_memory().expect("store");
        let mut req = request(&[&path]);
        req.graph = Some(NamedNode::new("urn:target").expect("iri"));
        load_request(&graph, &req);
        assert_eq!(graph.file_fingerprints().expect("read"), vec![]);

        // A file graph written before fingerprints: re-serialised, it is replaced
        // (and records a fingerprint from then on).
        load(&graph, &[&path]).expect("load");
        let iri = file_graph_iri(&path).expect("iri");
        graph
            .update(
                &format!(
                    "DELETE WHERE {{ GRAPH {iri} {{ {iri} <{}> ?f }} }}",
                    kg::CANONICAL_HASH
                ),
                &crate::QueryOptions::default(),
            )
            .expect("forget the fingerprint");
        std::fs::write(&path, "<urn:a>   <urn:p> \"x\" .\n").expect("rewrite");
        let report = load(&graph, &[&path]).expect("reload");
        assert_eq!(report.files[0].2, LoadAction::Replace);
        let fingerprints = graph.file_fingerprints().expect("read");
        assert_eq!(fingerprints.len(), 1);
        assert_eq!(fingerprints[0].graph, iri.as_str());
        assert_eq!(fingerprints[0].path, path.display().to_string());
        assert!(crate::fingerprint::is_canonical(
            &fingerprints[0].fingerprint
        ));
    }

    #[test]
    fn explicit_graph_collects_files_and_parses_all_formats() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nt = write(dir.path(), "a.nt", "<urn:a> <urn:p> \"x\" .\n");
        let jsonld = write(
            dir.path(),
            "b.jsonld",
            r#"{"@id": "urn:b", "urn:p": [{"@value": "y"}]}"#,
        );
        let rdfxml = write(
            dir.path(),
            "c.owl",
            r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="urn:ex#">
  <rdf:Description rdf:about="urn:c"><ex:p>z</ex:p></rdf:Description>
</rdf:RDF>"#,
        );
        let trig = write(
            dir.path(),
            "d.trig",
            "GRAPH <urn:g2> { <urn:d> <urn:p> 4 }\n",
        );
        let graph = Graph::in_memory().expect("store");
        let mut req = request(&[&nt, &jsonld, &rdfxml, &trig]);
        req.graph = Some(NamedNode::new("urn:target").expect("iri"));
        let plan = graph.plan_load(&req).expect("plan");
        let report = graph
            .execute_load(&plan, &mut |_: QuadRef<'_>| {}, &NoProgress)
            .expect("load");
        assert_eq!(report.quads, 4, "no metadata quads with an explicit graph");
        assert_eq!(graph.len().expect("len"), 4);
        // RDF/XML's xmlns prefixes are in scope only inside the document: still found.
        assert!(
            report
                .prefixes
                .contains(&("ex".to_owned(), "urn:ex#".to_owned())),
            "{:?}",
            report.prefixes
        );
    }

    #[test]
    fn replace_swaps_a_target_graph_and_leaves_the_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = write(dir.path(), "first.ttl", "<urn:a> <urn:p> 1 , 2 .\n");
        let second = write(dir.path(), "second.ttl", "<urn:b> <urn:p> 3 .\n");
        let other = write(dir.path(), "other.ttl", "<urn:c> <urn:p> 4 .\n");
        let graph = Graph::in_memory().expect("store");
        let target = NamedNode::new("urn:target").expect("iri");
        let mut req = request(&[&other]);
        req.graph = Some(NamedNode::new("urn:other").expect("iri"));
        load_request(&graph, &req);
        let mut req = request(&[&first]);
        req.graph = Some(target.clone());
        req.replace = true;
        load_request(&graph, &req);
        assert_eq!(
            graph.len().expect("len"),
            3,
            "into an absent graph: inserted"
        );
        let mut req = request(&[&second]);
        req.graph = Some(target.clone());
        req.replace = true;
        let plan = graph.plan_load(&req).expect("plan");
        assert_eq!(plan.replaced_graphs().collect::<Vec<_>>(), vec![&target]);
        load_request(&graph, &req);
        assert_eq!(graph.len().expect("len"), 2, "urn:a's two triples are gone");

        let relative = write(dir.path(), "relative.ttl", "<#thing> <urn:p> <other> .\n");
        let mut with_base = request(&[&relative]);
        with_base.graph = Some(NamedNode::new("urn:based").expect("iri"));
        with_base.base_iri = Some(NamedNode::new("http://example.org/graphs/g1").expect("iri"));
        load_request(&graph, &with_base);
        let based = graph
            .query(
                "ASK { <http://example.org/graphs/g1#thing> <urn:p> <http://example.org/graphs/other> }",
                &crate::QueryOptions::default(),
            )
            .expect("ask");
        assert_eq!(
            based,
            crate::QueryOutcome::Boolean(true),
            "relative IRIs use the base"
        );

        let mut two_files = request(&[&first, &second]);
        two_files.graph = Some(target.clone());
        two_files.replace = true;
        assert!(matches!(
            graph.plan_load(&two_files),
            Err(GraphError::Usage(_))
        ));
        let mut no_target = request(&[&first]);
        no_target.replace = true;
        assert!(matches!(
            graph.plan_load(&no_target),
            Err(GraphError::Usage(_))
        ));
    }

    fn load_request(graph: &Graph, request: &LoadRequest) {
        let plan = graph.plan_load(request).expect("plan");
        graph
            .execute_load(&plan, &mut |_: QuadRef<'_>| {}, &NoProgress)
            .expect("load");
    }
}
