//! Where the graph lives: an embedded Oxigraph store (the default) or a SPARQL
//! server ([`kgfuse_remote`]). Everything else in this crate reads and writes
//! through the few operations here, so both backends give the same answers.

use crate::edge::{Edge, End};
use crate::{Graph, GraphError};
use kgfuse_remote::{Endpoint, Pattern};
use oxigraph::model::{
    GraphName, GraphNameRef, NamedNode, NamedNodeRef, NamedOrBlankNode, NamedOrBlankNodeRef, Quad,
    Term, TermRef,
};
use oxigraph::store::Store;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The store behind a [`Graph`].
#[derive(Clone)]
pub(crate) enum Backend {
    /// Oxigraph on RocksDB (or in memory), in this process.
    Embedded(Store),
    /// A SPARQL 1.1 server.
    Remote(Arc<Endpoint>),
}

/// Quads read from either backend.
pub(crate) type Quads<'a> = Box<dyn Iterator<Item = Result<Quad, GraphError>> + 'a>;

/// Writes applied together: embedded, in one transaction; remote, as a few
/// requests in this order (the journal covers a write cut short).
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Named graphs removed with their triples.
    pub drop: Vec<NamedNode>,
    /// Named graphs emptied (and kept).
    pub clear: Vec<NamedNode>,
    /// Quads removed.
    pub remove: Vec<Quad>,
    /// Quads added.
    pub insert: Vec<Quad>,
}

impl Graph {
    /// The quads matching a pattern (`None`: any); `graph: None` reads every
    /// graph.
    pub(crate) fn quads<'a>(
        &'a self,
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: Option<NamedNodeRef<'_>>,
        object: Option<TermRef<'_>>,
        graph: Option<GraphNameRef<'_>>,
    ) -> Quads<'a> {
        match &self.backend {
            Backend::Embedded(store) => Box::new(
                store
                    .quads_for_pattern(subject, predicate, object, graph)
                    .map(|q| q.map_err(GraphError::from)),
            ),
            Backend::Remote(endpoint) => match Pattern::new(subject, predicate, object, graph) {
                Some(pattern) => {
                    Box::new(endpoint.quads(pattern).map(|q| q.map_err(GraphError::from)))
                }
                None => Box::new(std::iter::empty()),
            },
        }
    }

    /// Whether some quad matches a pattern (remote: one `SELECT … LIMIT 1`).
    pub(crate) fn holds(
        &self,
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: Option<NamedNodeRef<'_>>,
        object: Option<TermRef<'_>>,
        graph: Option<GraphNameRef<'_>>,
    ) -> Result<bool, GraphError> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store
                .quads_for_pattern(subject, predicate, object, graph)
                .next()
                .transpose()?
                .is_some()),
            Backend::Remote(endpoint) => match Pattern::new(subject, predicate, object, graph) {
                Some(pattern) => Ok(endpoint.holds(&pattern)?),
                None => Ok(false),
            },
        }
    }

    /// The IRI-to-IRI edges at each of `nodes` in every graph, `rdf:type` left
    /// out: per node, the neighbour and edge of its outgoing edges, then of its
    /// incoming ones, each direction sorted and at most `per_direction` long
    /// (embedded, the first `per_direction` in index order, sorted; remote, the
    /// first in sorted order: the two differ only at hubs). Embedded, read from
    /// the indexes node by node; remote, one paged query per [`NODES_PER_READ`]
    /// nodes.
    pub(crate) fn edges_at(
        &self,
        nodes: &[NamedNode],
        per_direction: usize,
    ) -> Result<BTreeMap<String, Vec<(NamedNode, Edge)>>, GraphError> {
        let mut sides = Sides::new(nodes);
        match &self.backend {
            Backend::Embedded(store) => {
                for node in nodes {
                    let read = |subject, object| -> Result<BTreeSet<Edge>, GraphError> {
                        let mut edges = BTreeSet::new();
                        for quad in store.quads_for_pattern(subject, None, object, None) {
                            edges.extend(edge_of(quad?));
                            if edges.len() >= per_direction {
                                break;
                            }
                        }
                        Ok(edges)
                    };
                    let key = node.as_str().to_owned();
                    sides
                        .outgoing
                        .insert(key.clone(), read(Some(node.as_ref().into()), None)?);
                    sides
                        .incoming
                        .insert(key, read(None, Some(node.as_ref().into()))?);
                }
            }
            Backend::Remote(endpoint) => {
                for chunk in nodes.chunks(NODES_PER_READ) {
                    for quad in endpoint.quads(Pattern::around(chunk)) {
                        sides.add(quad?);
                    }
                }
            }
        }
        Ok(sides.around(nodes, per_direction))
    }

    /// The reads of [`Graph::edges_at`] on a remote graph as queries, to send with
    /// other queries ([`crate::Rounds`]): one per [`NODES_PER_READ`] nodes, each
    /// with the pattern its rows are quads of. `None` embedded.
    pub(crate) fn edge_queries(&self, nodes: &[NamedNode]) -> Option<Vec<(Pattern, String)>> {
        self.endpoint()?;
        Some(
            nodes
                .chunks(NODES_PER_READ)
                .map(|chunk| {
                    let pattern = Pattern::around(chunk);
                    let text = pattern.first_page();
                    (pattern, text)
                })
                .collect(),
        )
    }

    /// [`Graph::edges_at`] from the answers to its [`Graph::edge_queries`]; an
    /// answer that failed or may be cut short (a full first page) is read again
    /// page by page.
    pub(crate) fn edges_from(
        &self,
        nodes: &[NamedNode],
        answers: Vec<(Pattern, Result<crate::QueryOutcome, GraphError>)>,
        per_direction: usize,
    ) -> Result<BTreeMap<String, Vec<(NamedNode, Edge)>>, GraphError> {
        let mut sides = Sides::new(nodes);
        for (pattern, answer) in answers {
            match answer {
                Ok(crate::QueryOutcome::Solutions { variables, rows })
                    if !pattern.may_be_cut(rows.len()) =>
                {
                    for row in rows {
                        sides.extend(pattern.quad(&variables, row));
                    }
                }
                _ => {
                    let Some(endpoint) = self.endpoint() else {
                        continue;
                    };
                    for quad in endpoint.quads(pattern) {
                        sides.add(quad?);
                    }
                }
            }
        }
        Ok(sides.around(nodes, per_direction))
    }

    /// The quads with one of `nodes` at `end`, with one of `predicates` (any when
    /// empty), in `graph` (any when `None`). Embedded, one index read per node
    /// (and predicate); remote, one paged query per [`NODES_PER_READ`] nodes, so
    /// a stage that asks about many nodes pays a few round trips, not one per node.
    pub(crate) fn quads_at(
        &self,
        end: End,
        nodes: &[Term],
        predicates: &[NamedNode],
        graph: Option<&NamedNode>,
    ) -> Result<Vec<Quad>, GraphError> {
        let mut out = Vec::new();
        match &self.backend {
            Backend::Embedded(store) => {
                let any: [Option<NamedNodeRef<'_>>; 1] = [None];
                let wanted: Vec<Option<NamedNodeRef<'_>>> = if predicates.is_empty() {
                    any.to_vec()
                } else {
                    predicates.iter().map(|p| Some(p.as_ref())).collect()
                };
                let graph = graph.map(|g| GraphNameRef::NamedNode(g.as_ref()));
                for node in nodes {
                    let (subject, object) = match (end, node) {
                        (End::Subject, Term::NamedNode(n)) => (Some(n.as_ref().into()), None),
                        (End::Subject, Term::BlankNode(b)) => (Some(b.as_ref().into()), None),
                        (End::Subject, Term::Literal(_)) => continue,
                        (End::Object, term) => (None, Some(term.as_ref())),
                    };
                    for predicate in &wanted {
                        for quad in store.quads_for_pattern(subject, *predicate, object, graph) {
                            out.push(quad?);
                        }
                    }
                }
            }
            Backend::Remote(endpoint) => {
                for chunk in nodes.chunks(NODES_PER_READ) {
                    for quad in endpoint.quads(Pattern::at(end, chunk, predicates, graph)) {
                        out.push(quad?);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Every quad.
    pub(crate) fn all_quads(&self) -> Quads<'_> {
        self.quads(None, None, None, None)
    }

    /// Applies `changes` (see [`Changes`]).
    pub(crate) fn apply(&self, changes: &Changes) -> Result<(), GraphError> {
        match &self.backend {
            Backend::Embedded(store) => {
                let mut transaction = store.start_transaction()?;
                for graph in &changes.drop {
                    transaction.remove_named_graph(graph)?;
                }
                for graph in &changes.clear {
                    transaction.clear_graph(graph)?;
                    transaction.insert_named_graph(graph);
                }
                for quad in &changes.remove {
                    transaction.remove(quad);
                }
                transaction.extend(changes.insert.iter());
                transaction.commit()?;
                Ok(())
            }
            Backend::Remote(endpoint) => {
                endpoint.register(&changes.clear)?;
                endpoint.drop_graphs(&changes.drop)?;
                if !changes.clear.is_empty() {
                    let text: Vec<String> = changes
                        .clear
                        .iter()
                        .map(|g| format!("CLEAR SILENT GRAPH {g}"))
                        .collect();
                    endpoint.update(&text.join(" ; "))?;
                }
                endpoint.remove(&changes.remove)?;
                Ok(endpoint.insert(&changes.insert)?)
            }
        }
    }

    /// A writer for quads streamed into new or emptied graphs (see
    /// [`BulkWriter`]); the embedded loader cuts them into batches of
    /// [`EMBEDDED_BATCH_QUADS`].
    pub(crate) fn bulk_writer(&self) -> BulkWriter<'_> {
        match &self.backend {
            Backend::Embedded(store) => {
                let threads = std::thread::available_parallelism().map_or(1, usize::from);
                // Oxigraph makes batches of `megabytes * 1000 / threads` quads.
                let megabytes = (EMBEDDED_BATCH_QUADS * threads).div_ceil(1000);
                BulkWriter::Embedded(
                    store
                        .bulk_loader()
                        .with_num_threads(threads)
                        .with_max_memory_size_in_megabytes(megabytes),
                )
            }
            Backend::Remote(endpoint) => BulkWriter::Remote(RemoteBulk::new(Arc::clone(endpoint))),
        }
    }

    /// Empties a named graph.
    pub(crate) fn clear_graph(&self, graph: &NamedNode) -> Result<(), GraphError> {
        self.apply(&Changes {
            clear: vec![graph.clone()],
            ..Changes::default()
        })
    }

    /// The named graphs holding at least one quad (remote: kgfuse's registry).
    pub(crate) fn graph_names(&self) -> Result<Vec<NamedNode>, GraphError> {
        match &self.backend {
            Backend::Embedded(store) => store
                .named_graphs()
                .filter_map(|g| match g {
                    Ok(NamedOrBlankNode::NamedNode(n)) => Some(Ok(n)),
                    Ok(_) => None,
                    Err(e) => Some(Err(GraphError::from(e))),
                })
                .collect(),
            Backend::Remote(endpoint) => Ok(endpoint
                .graphs()
                .into_iter()
                .map(NamedNode::new_unchecked)
                .collect()),
        }
    }

    /// Tells readers in other processes that this process finished a write: on
    /// a SPARQL server, replaces the registry's change stamp; embedded, nothing
    /// (one process writes a store directory).
    pub fn mark_changed(&self) -> Result<(), GraphError> {
        match &self.backend {
            Backend::Embedded(_) => Ok(()),
            Backend::Remote(endpoint) => Ok(endpoint.mark_changed()?),
        }
    }

    /// How many writes of other processes to the same SPARQL server this process
    /// has noticed, at most 5 s late (0 embedded):
    /// when it grows, whatever was derived from the graph is stale.
    pub fn changes_elsewhere(&self) -> u64 {
        match &self.backend {
            Backend::Embedded(_) => 0,
            Backend::Remote(endpoint) => endpoint.changes_elsewhere(),
        }
    }

    /// Whether the graph is kept on a SPARQL server.
    pub fn is_remote(&self) -> bool {
        matches!(self.backend, Backend::Remote(_))
    }

    /// The SPARQL server, when the graph is remote.
    pub(crate) fn endpoint(&self) -> Option<&Endpoint> {
        match &self.backend {
            Backend::Embedded(_) => None,
            Backend::Remote(endpoint) => Some(endpoint),
        }
    }

    /// HTTP requests sent to the SPARQL server so far (0 when embedded): the
    /// round trips a retrieval costs are the difference before and after it.
    pub fn round_trips(&self) -> u64 {
        match &self.backend {
            Backend::Embedded(_) => 0,
            Backend::Remote(endpoint) => endpoint.round_trips(),
        }
    }
}

/// Most nodes named in one remote read of [`Graph::edges_at`].
const NODES_PER_READ: usize = 500;

/// The walkable edges read at some nodes, outgoing and incoming apart.
struct Sides<'a> {
    wanted: BTreeSet<&'a str>,
    outgoing: BTreeMap<String, BTreeSet<Edge>>,
    incoming: BTreeMap<String, BTreeSet<Edge>>,
}

impl<'a> Sides<'a> {
    fn new(nodes: &'a [NamedNode]) -> Self {
        Self {
            wanted: nodes.iter().map(NamedNode::as_str).collect(),
            outgoing: BTreeMap::new(),
            incoming: BTreeMap::new(),
        }
    }

    /// A quad read at either end: an edge of each end that is a wanted node.
    /// Skolem IRIs (blank nodes as a server stores them) are not walked.
    fn add(&mut self, quad: Quad) {
        let Some(edge) = edge_of(quad) else {
            return;
        };
        if [&edge.subject, &edge.object]
            .iter()
            .any(|end| end.starts_with(kgfuse_remote::GENID))
        {
            return;
        }
        for (node, side) in [
            (&edge.subject, &mut self.outgoing),
            (&edge.object, &mut self.incoming),
        ] {
            if self.wanted.contains(node.as_str()) {
                side.entry(node.clone()).or_default().insert(edge.clone());
            }
        }
    }

    fn extend(&mut self, quad: Option<Quad>) {
        if let Some(quad) = quad {
            self.add(quad);
        }
    }

    /// Each node's edges: its outgoing ones, then its incoming ones, each
    /// direction sorted and at most `per_direction` long.
    fn around(
        &self,
        nodes: &[NamedNode],
        per_direction: usize,
    ) -> BTreeMap<String, Vec<(NamedNode, Edge)>> {
        let side = |edges: Option<&BTreeSet<Edge>>, far: fn(&Edge) -> &String| {
            edges
                .into_iter()
                .flatten()
                .take(per_direction)
                .map(|e| (NamedNode::new_unchecked(far(e).clone()), e.clone()))
                .collect::<Vec<_>>()
        };
        nodes
            .iter()
            .map(|node| {
                let mut edges = side(self.outgoing.get(node.as_str()), |e| &e.object);
                edges.extend(side(self.incoming.get(node.as_str()), |e| &e.subject));
                (node.as_str().to_owned(), edges)
            })
            .collect()
    }
}

/// The walkable edge a quad states: IRI to IRI, not `rdf:type`.
fn edge_of(quad: Quad) -> Option<Edge> {
    let (NamedOrBlankNode::NamedNode(subject), Term::NamedNode(object)) =
        (quad.subject, quad.object)
    else {
        return None;
    };
    (quad.predicate.as_str() != kgfuse_core::vocab::w3c::RDF_TYPE).then(|| Edge {
        subject: subject.into_string(),
        predicate: quad.predicate.into_string(),
        object: object.into_string(),
    })
}

/// Fewest quads per remote write during a bulk load. Batches are posted while the
/// next is parsed ([`RemoteBulk`]): small enough that the server starts early and
/// the last post, which nothing overlaps, is short; large enough that a request's
/// own cost does not count (LUBM's files are 5-8k triples each, posted a file per
/// request by the baseline of BENCHMARKS.md).
const BULK_BATCH: usize = 10_000;
/// A batch is posted at the start of the next graph once it holds [`BULK_BATCH`]
/// quads, or in any case once it holds this many times as many.
const MAX_BATCHES_PER_REQUEST: usize = 4;

/// Quads per batch of the embedded bulk loader. Each batch becomes one set of
/// SST files per index, written by a thread of its own while the parser fills
/// the next: a batch per file (what Oxigraph's `load_from_reader` gives when
/// called per file) leaves RocksDB hundreds of small files to compact, and
/// Oxigraph's default of a million quads keeps a core idle while the parser
/// fills one. LUBM-10 (1.27M triples in 189 files, 2 cores, release): batches
/// per file 9.3 s, of a million 10.8 s, of 10k 6.0 s, of 30k to 60k 5.4 s.
pub(crate) const EMBEDDED_BATCH_QUADS: usize = 30_000;

/// Streams quads into new or emptied graphs. Embedded, Oxigraph's bulk loader,
/// which publishes only at [`BulkWriter::commit`]: nothing is written when a
/// load fails. Remote, batches of [`BULK_BATCH`] quads posted as they fill by a
/// thread of their own ([`RemoteBulk`]); when a load fails, the graphs this
/// writer wrote into are dropped again.
pub(crate) enum BulkWriter<'a> {
    Embedded(oxigraph::store::BulkLoader<'a>),
    Remote(RemoteBulk),
}

impl BulkWriter<'_> {
    /// Adds quads; an error from `quads` stops the load (see the type's
    /// documentation for what is left behind: nothing).
    pub(crate) fn load(
        &mut self,
        quads: impl Iterator<Item = Result<Quad, GraphError>>,
    ) -> Result<(), GraphError> {
        match self {
            Self::Embedded(loader) => loader.load_ok_quads::<GraphError, GraphError>(quads),
            Self::Remote(remote) => remote.load(quads),
        }
    }

    /// Publishes what was loaded.
    pub(crate) fn commit(self) -> Result<(), GraphError> {
        match self {
            Self::Embedded(loader) => Ok(loader.commit()?),
            Self::Remote(remote) => remote.commit(),
        }
    }
}

/// A bulk load into a SPARQL server. Parsing a batch and the server ingesting the
/// one before overlap: full batches go to a poster thread through a channel
/// holding one more, so the caller fills the next batch while the server takes
/// this one (the round trip of a batch is mostly the server's own work). Batches
/// are posted in order, one at a time, so the server sees what a sequential
/// writer would send.
pub(crate) struct RemoteBulk {
    endpoint: Arc<Endpoint>,
    /// Every graph a quad was given for (posted or not yet), for [`undo`].
    written: Vec<NamedNode>,
    batch: Vec<Quad>,
    /// Started with the first full batch.
    poster: Option<Poster>,
}

/// The thread posting a [`RemoteBulk`]'s batches, and the way to it.
struct Poster {
    batches: std::sync::mpsc::SyncSender<Vec<Quad>>,
    thread: std::thread::JoinHandle<Result<(), GraphError>>,
}

impl Poster {
    fn start(endpoint: Arc<Endpoint>) -> Self {
        let (batches, received) = std::sync::mpsc::sync_channel::<Vec<Quad>>(1);
        let thread = std::thread::spawn(move || {
            for batch in received {
                // An error ends the thread; the next send fails and the load
                // collects this error from `finish`.
                endpoint.insert(&batch)?;
            }
            Ok(())
        });
        Self { batches, thread }
    }

    /// Waits until every batch sent so far is posted (or one failed).
    fn finish(self) -> Result<(), GraphError> {
        drop(self.batches);
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl RemoteBulk {
    fn new(endpoint: Arc<Endpoint>) -> Self {
        Self {
            endpoint,
            written: Vec::new(),
            batch: Vec::new(),
            poster: None,
        }
    }

    fn load(
        &mut self,
        quads: impl Iterator<Item = Result<Quad, GraphError>>,
    ) -> Result<(), GraphError> {
        let outcome = self.fill(quads);
        if outcome.is_err() {
            // Stop posting (what the thread reports is secondary to this error).
            if let Some(poster) = self.poster.take() {
                let _ = poster.finish();
            }
            undo(&self.endpoint, &self.written);
        }
        outcome
    }

    fn fill(
        &mut self,
        quads: impl Iterator<Item = Result<Quad, GraphError>>,
    ) -> Result<(), GraphError> {
        for quad in quads {
            let quad = quad?;
            let new_graph = self
                .batch
                .last()
                .is_none_or(|last| last.graph_name != quad.graph_name);
            // A full batch goes at the start of the next graph, so a file's
            // triples mostly travel in one request; a graph far larger than a
            // batch is cut.
            if (self.batch.len() >= BULK_BATCH && new_graph)
                || self.batch.len() >= BULK_BATCH * MAX_BATCHES_PER_REQUEST
            {
                self.send()?;
            }
            if new_graph
                && let GraphName::NamedNode(g) = &quad.graph_name
                && !self.written.contains(g)
            {
                self.written.push(g.clone());
            }
            self.batch.push(quad);
        }
        Ok(())
    }

    /// Hands the full batch to the poster thread (waiting while it still holds
    /// one queued); a failed post comes back as the error.
    fn send(&mut self) -> Result<(), GraphError> {
        let batch = std::mem::take(&mut self.batch);
        let endpoint = &self.endpoint;
        let poster = self
            .poster
            .get_or_insert_with(|| Poster::start(Arc::clone(endpoint)));
        if poster.batches.send(batch).is_err() {
            // The thread only stops early at a failed post: its error is the load's.
            let failed = self.poster.take().map_or(Ok(()), Poster::finish);
            return Err(failed.err().unwrap_or_else(|| {
                GraphError::Storage(oxigraph::store::StorageError::Other(
                    "the remote writer stopped before the load ended".into(),
                ))
            }));
        }
        Ok(())
    }

    fn commit(mut self) -> Result<(), GraphError> {
        let posted = match self.poster.take() {
            Some(poster) => poster.finish(),
            None => Ok(()),
        }
        .and_then(|()| Ok(self.endpoint.insert(&self.batch)?));
        posted.inspect_err(|_| undo(&self.endpoint, &self.written))
    }
}

/// Drops the graphs a failed remote load wrote into.
fn undo(endpoint: &Endpoint, written: &[NamedNode]) {
    if let Err(error) = endpoint.drop_graphs(written) {
        tracing::warn!("could not drop the graphs of a failed load: {error}");
    }
}
