//! A graph kept on a SPARQL 1.1 server: queries and updates over the SPARQL
//! 1.1 Protocol, bulk writes over the Graph Store HTTP Protocol when the server
//! offers it (else `INSERT DATA` in batches).
//!
//! What the servers differ on, and how this client copes (each trap reproduced
//! against a real server, see docs/scaling-out.md "Scaling out"):
//!
//! - Queries and updates go as form POSTs (`application/x-www-form-urlencoded`):
//!   Virtuoso never answers a POST with `Content-Type: application/sparql-query`.
//! - kgfuse writes named graphs only, and keeps their list in a registry graph on
//!   the server ([`REGISTRY_GRAPH`]). Every query is sent with that list as its
//!   dataset, written into the text as FROM and FROM NAMED clauses (USING in an
//!   update): Virtuoso's default graph is the union of every graph, its system
//!   graphs included; Oxigraph server's is a graph of its own. Not as protocol
//!   parameters (`default-graph-uri`, …): Virtuoso echoes each back as a response
//!   header, and past about 60 graphs the answer has more headers than the HTTP
//!   client accepts. A query with FROM clauses keeps them.
//! - Blank nodes are written as skolem IRIs ([`GENID`]): `INSERT DATA` takes no
//!   blank nodes on Virtuoso, and a blank node read back could never be named
//!   again in a later update.
//! - Virtuoso's blank node labels (`nodeID://…`) are rewritten before parsing,
//!   `INSERT DATA` is sent in batches of [`INSERT_BATCH`] triples, and results
//!   that the server cut at its row cap (`X-SPARQL-MaxRows`) are an error, never
//!   silently short; kgfuse's own scans page below the cap.
//! - ASK is sent as `SELECT … LIMIT 1`: with a protocol dataset, Virtuoso 7.2
//!   answers `ASK { GRAPH <g> { … } }` true for a graph that does not exist.
//! - Queries (idempotent) are retried with backoff on connection failures, 5xx
//!   and 429; updates and POSTs never are.

use base64::Engine as _;
pub use kgfuse_core::config::{RemoteAuth, RemoteGraphConfig};
use oxrdf::{
    BlankNode, GraphName, GraphNameRef, NamedNode, NamedNodeRef, NamedOrBlankNode,
    NamedOrBlankNodeRef, Quad, Term, TermRef, Triple,
};
use oxrdfio::{RdfFormat, RdfParser, RdfSerializer};
use sparesults::{QueryResultsFormat, QueryResultsParser, SliceQueryResultsParserOutput};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

/// What went wrong talking to the server. The graph crate turns each kind into
/// its own error of the same name, so a caller sees one error type.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server failed the request or answered with something unreadable.
    #[error("SPARQL evaluation failed: {0}")]
    Evaluation(String),
    /// The request timed out.
    #[error("query cancelled after the {0:?} timeout")]
    Timeout(Duration),
    /// The caller asked for something the server cannot do, or the setup is incomplete.
    #[error("{0}")]
    Usage(String),
    /// The server cut a result at its row cap.
    #[error(
        "the server cut the results at its cap of {0} rows (X-SPARQL-MaxRows): add a LIMIT \
         below it or raise the server's ResultSetMaxRows"
    )]
    Truncated(usize),
    /// Writing the request failed.
    #[error("serialization failed: {0}")]
    Serialize(String),
}

/// A query's answer as the server sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// SELECT results: the variables, and one row per solution (None = unbound).
    Solutions {
        /// Projected variables, without `?`.
        variables: Vec<String>,
        /// One row per solution, one cell per variable.
        rows: Vec<Vec<Option<Term>>>,
    },
    /// ASK result.
    Boolean(bool),
    /// CONSTRUCT or DESCRIBE result.
    Graph(Vec<Triple>),
}

/// The end of a quad that a read fixes: its subject or its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The subject.
    Subject,
    /// The object.
    Object,
}

/// The graph that lists kgfuse's graphs on a server (`<registry> rdfs:member <g>`).
pub const REGISTRY_GRAPH: &str = "https://w3id.org/kgfuse/graph/registry";
/// The registry's change stamp (`<registry> <stamp> "…"`): every kgfuse write
/// ends by replacing it, so a reader in another process that sees a new stamp
/// knows that what it derived from the graph is stale.
const CHANGE_STAMP: &str = "https://w3id.org/kgfuse/graph/registry#changed";
/// A graph nobody writes: the dataset of a query while the registry is empty, so
/// that it sees nothing rather than the server's whole default graph.
const EMPTY_GRAPH: &str = "https://w3id.org/kgfuse/graph/empty";
/// Skolem IRIs for blank nodes (RDF 1.1 Concepts §3.5).
pub const GENID: &str = "https://w3id.org/kgfuse/.well-known/genid/";
/// Most triples in one `INSERT DATA` (Virtuoso fails above about 5,000).
pub const INSERT_BATCH: usize = 4_000;
/// Triples per Graph Store POST.
const STORE_BATCH: usize = 100_000;
/// Rows asked for at once by kgfuse's own scans on a server that has shown no
/// row cap: most scans then take one request, and no page needs sorting.
const FIRST_PAGE: usize = 100_000;
/// Rows per page on a server that cut a result at its cap (half of it:
/// Virtuoso's default cap of 10,000 gives 5,000).
fn page_under(cap: usize) -> usize {
    (cap / 2).max(1)
}
/// Longest wait for one write (an update or a Graph Store POST) before it counts
/// as failed: a server that hangs must not hang kgfuse.
const WRITE_TIMEOUT: Duration = Duration::from_secs(600);
/// How old the list of kgfuse's graphs may get before it is read again.
const REGISTRY_REFRESH: Duration = Duration::from_secs(5);
/// Attempts of an idempotent request.
const ATTEMPTS: u32 = 3;
const RDFS_MEMBER: &str = "http://www.w3.org/2000/01/rdf-schema#member";

/// SELECT results: the variables, then one row of cells per solution.
pub type Table = (Vec<String>, Vec<Vec<Option<Term>>>);

/// What a query asks for, which decides the results format requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// SELECT or ASK: SPARQL results JSON.
    Results,
    /// CONSTRUCT or DESCRIBE: N-Triples.
    Triples,
}

/// A connection to a SPARQL server (see the module documentation).
pub struct Endpoint {
    config: RemoteGraphConfig,
    /// The `Authorization` header value; never printed.
    authorization: Option<String>,
    agent: ureq::Agent,
    round_trips: AtomicU64,
    /// kgfuse's graphs on the server, sorted, and when they were read.
    graphs: RwLock<(Vec<String>, Instant)>,
    /// Answers about the vocabulary the data uses (see [`Endpoint::recall`]).
    memo: Mutex<Memo>,
    /// The row cap the server cut a result at, once it has (0: none seen).
    row_cap: AtomicU64,
    /// The change stamp last read from the registry or written by this process.
    stamp: Mutex<Option<String>>,
    /// How many times the registry showed a stamp this process did not write.
    changes_elsewhere: AtomicU64,
}

/// Remembered answers and when the oldest was given.
struct Memo {
    answers: HashMap<String, bool>,
    since: Instant,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("query", &self.config.query)
            .field("auth", &self.config.auth)
            .finish_non_exhaustive()
    }
}

fn env_secret(name: &str) -> Result<String, RemoteError> {
    std::env::var(name).map_err(|_| {
        RemoteError::Usage(format!(
            "the graph's auth needs {name} in the environment (kgfuse never stores it)"
        ))
    })
}

/// A blank node as the skolem IRI it is written as.
pub fn skolem(node: &BlankNode) -> NamedNode {
    NamedNode::new_unchecked(format!("{GENID}{}", node.as_str()))
}

/// The quad with its blank nodes written as skolem IRIs.
pub fn skolemize(quad: Quad) -> Quad {
    let subject = match quad.subject {
        NamedOrBlankNode::BlankNode(b) => NamedOrBlankNode::NamedNode(skolem(&b)),
        other => other,
    };
    let object = match quad.object {
        Term::BlankNode(b) => Term::NamedNode(skolem(&b)),
        other => other,
    };
    let graph_name = match quad.graph_name {
        GraphName::BlankNode(b) => GraphName::NamedNode(skolem(&b)),
        other => other,
    };
    Quad::new(subject, quad.predicate, object, graph_name)
}

/// `<iri>` or a literal in N-Triples syntax, which SPARQL reads as written.
fn written(term: TermRef<'_>) -> String {
    match term {
        TermRef::BlankNode(b) => format!("<{}>", skolem(&b.into_owned())),
        other => other.to_string(),
    }
}

/// One quad pattern of a scan: fixed terms written out, the rest variables.
pub struct Pattern {
    where_clause: String,
    subject: Option<NamedOrBlankNode>,
    predicate: Option<NamedNode>,
    object: Option<Term>,
    graph: Option<NamedNode>,
    /// Whether the scan is likely to need pages: then it is ordered from the
    /// first page on, rather than restarted in order when the first comes back full.
    many: bool,
}

impl Pattern {
    /// `GRAPH ?g { ?s ?p ?o }` with the given terms in place of the variables.
    /// A quad pattern on the default graph matches nothing: kgfuse writes named
    /// graphs only.
    pub fn new(
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: Option<NamedNodeRef<'_>>,
        object: Option<TermRef<'_>>,
        graph: Option<GraphNameRef<'_>>,
    ) -> Option<Self> {
        let graph = match graph {
            None => None,
            Some(GraphNameRef::NamedNode(g)) => Some(g.into_owned()),
            Some(GraphNameRef::BlankNode(b)) => Some(skolem(&b.into_owned())),
            Some(GraphNameRef::DefaultGraph) => return None,
        };
        let s = subject.map_or("?s".to_owned(), |s| written(s.into()));
        let p = predicate.map_or("?p".to_owned(), |p| p.to_string());
        let o = object.map_or("?o".to_owned(), written);
        let g = graph.as_ref().map_or("?g".to_owned(), ToString::to_string);
        Some(Self {
            where_clause: format!("GRAPH {g} {{ {s} {p} {o} }}"),
            subject: subject.map(NamedOrBlankNodeRef::into_owned),
            predicate: predicate.map(NamedNodeRef::into_owned),
            object: object.map(TermRef::into_owned),
            graph,
            many: false,
        })
    }

    /// The quads with one of `nodes` at `end` and one of `predicates` (any when
    /// empty) in `graph` (any when `None`), as `VALUES` blocks.
    pub fn at(
        end: End,
        nodes: &[Term],
        predicates: &[NamedNode],
        graph: Option<&NamedNode>,
    ) -> Self {
        let variable = match end {
            End::Subject => "s",
            End::Object => "o",
        };
        let values: String = nodes
            .iter()
            .filter(|n| end == End::Object || !n.is_literal())
            .map(|n| format!("{} ", written(n.as_ref())))
            .collect();
        // One predicate is written in the pattern; several as a FILTER: a second
        // VALUES block makes Oxigraph join the whole graph (500 subjects, one
        // predicate: 2.2 s as VALUES, 0.02 s written in).
        let (p, filter) = match predicates {
            [] => ("?p".to_owned(), String::new()),
            [one] => (one.to_string(), String::new()),
            several => {
                let list: Vec<String> = several.iter().map(ToString::to_string).collect();
                (
                    "?p".to_owned(),
                    format!(" FILTER(?p IN ({}))", list.join(", ")),
                )
            }
        };
        let g = graph.map_or("?g".to_owned(), ToString::to_string);
        let where_clause =
            format!("VALUES ?{variable} {{ {values}}} GRAPH {g} {{ ?s {p} ?o }}{filter}");
        Self {
            where_clause,
            subject: None,
            predicate: match predicates {
                [one] => Some(one.clone()),
                _ => None,
            },
            object: None,
            graph: graph.cloned(),
            many: true,
        }
    }

    /// The quads at `nodes`, either way, in every graph, outgoing ones to IRIs
    /// only (so long texts stay on the server). The caller drops `rdf:type`,
    /// blank nodes and skolem IRIs: any further FILTER here, on the incoming
    /// side above all, turns Virtuoso's index lookups into a scan (50 nodes: 14 s
    /// instead of 0.04 s).
    pub fn around(nodes: &[NamedNode]) -> Self {
        let values: String = nodes.iter().map(|n| format!("{n} ")).collect();
        Self {
            where_clause: format!(
                "{{ VALUES ?s {{ {values}}} GRAPH ?g {{ ?s ?p ?o }} FILTER(isIRI(?o)) }} \
                 UNION {{ VALUES ?o {{ {values}}} GRAPH ?g {{ ?s ?p ?o }} }}"
            ),
            subject: None,
            predicate: None,
            object: None,
            graph: None,
            many: true,
        }
    }

    fn select(&self, limit: usize, offset: Option<usize>, ordered: bool) -> String {
        let order = if offset.is_some() && ordered {
            " ORDER BY ?s ?p ?o ?g"
        } else {
            ""
        };
        format!(
            "SELECT * WHERE {{ {} }}{order} LIMIT {limit} OFFSET {}",
            self.where_clause,
            offset.unwrap_or(0)
        )
    }

    /// Whether the pattern names no graph and reads its graph as `?g`.
    fn reads_every_graph(&self) -> bool {
        self.graph.is_none() && self.where_clause.contains("GRAPH ?g ")
    }

    /// Whether the pattern is every quad of every graph.
    fn is_everything(&self) -> bool {
        self.where_clause == "GRAPH ?g { ?s ?p ?o }"
    }

    /// The same pattern inside one graph, when it names none and reads its graph
    /// as `?g` (what a scan over every graph is split into).
    fn in_graph(&self, graph: &NamedNode) -> Option<Self> {
        if !self.reads_every_graph() {
            return None;
        }
        Some(Self {
            where_clause: format!("VALUES ?g {{ {graph} }} {}", self.where_clause),
            graph: Some(graph.clone()),
            subject: self.subject.clone(),
            predicate: self.predicate.clone(),
            object: self.object.clone(),
            many: self.many,
        })
    }

    /// The query for the pattern's first page, unordered, to send with other
    /// queries (kgfuse-graph's `Rounds`).
    pub fn first_page(&self) -> String {
        self.select(FIRST_PAGE, None, false)
    }

    /// Whether a first page of `rows` rows may have been cut short (then the
    /// pattern is read again page by page).
    pub fn may_be_cut(&self, rows: usize) -> bool {
        rows >= FIRST_PAGE
    }

    /// The quad of one result row, the fixed terms filled in.
    pub fn quad(&self, variables: &[String], row: Vec<Option<Term>>) -> Option<Quad> {
        let mut cells: HashMap<&str, Term> = variables
            .iter()
            .map(String::as_str)
            .zip(row)
            .filter_map(|(v, t)| Some((v, t?)))
            .collect();
        let subject = match self.subject.clone() {
            Some(s) => s,
            None => match cells.remove("s")? {
                Term::NamedNode(n) => n.into(),
                Term::BlankNode(b) => b.into(),
                Term::Literal(_) => return None,
            },
        };
        let predicate = match self.predicate.clone() {
            Some(p) => p,
            None => match cells.remove("p")? {
                Term::NamedNode(n) => n,
                _ => return None,
            },
        };
        let object = match self.object.clone() {
            Some(o) => o,
            None => cells.remove("o")?,
        };
        let graph = match self.graph.clone() {
            Some(g) => g,
            None => match cells.remove("g")? {
                Term::NamedNode(n) => n,
                _ => return None,
            },
        };
        Some(Quad::new(subject, predicate, object, graph))
    }
}

/// Quads of a pattern, read page by page. The first page is asked for without
/// an order, as [`FIRST_PAGE`] rows (or half the server's row cap, once it has
/// cut a result); when it comes back full or cut, the scan restarts ordered, so
/// that pages never overlap or skip. A server that refuses to sort that far
/// (Virtuoso sorts at most `MaxSortedTopRows` rows, 10,000 by default: error
/// SR353) is scanned on, graph by graph, skipping the quads already given (which
/// holds while nobody writes during the scan): one graph is a file, small enough
/// to sort. A scan of every quad goes graph by graph from the start, each graph
/// fetched whole when it can be. A pattern fixed to one graph is scanned again from the start
/// without an order instead. (Unordered pages over the whole dataset cost the
/// server a scan up to each page's offset: LUBM-10's 1.3 million quads, beside
/// another copy, did not finish in 14 minutes.)
pub struct RemoteQuads<'a> {
    endpoint: &'a Endpoint,
    pattern: Pattern,
    page: std::vec::IntoIter<Quad>,
    /// The offset of the next page; `None` before the first page.
    next_offset: Option<usize>,
    /// Rows per page.
    page_size: usize,
    /// Whether pages after the first are asked for in order.
    ordered: bool,
    /// The quads given while ordered (up to [`SORT_FALLBACK_LIMIT`]); after the
    /// fall back to an unordered scan, the ones still to skip.
    given: HashSet<Quad>,
    /// Once a scan over every graph goes graph by graph: the graphs still to
    /// scan (with their sizes, when known) and the scan of the current one.
    per_graph: Option<(GraphsLeft, GraphScan<'a>)>,
    done: bool,
}

/// The graphs a graph-by-graph scan has still to read, with their sizes when known.
type GraphsLeft = std::vec::IntoIter<(NamedNode, Option<usize>)>;

/// The scan of one graph in a graph-by-graph scan.
enum GraphScan<'a> {
    /// The graph's quads, fetched whole.
    Whole(std::vec::IntoIter<Quad>),
    /// The pattern in the graph, page by page.
    Pages(Box<RemoteQuads<'a>>),
}

impl RemoteQuads<'_> {
    /// Goes on graph by graph, if the pattern reads every graph; says whether.
    fn split_by_graph(&mut self) -> bool {
        if !self.pattern.reads_every_graph() {
            return false;
        }
        let sizes = if self.pattern.is_everything() {
            self.endpoint.graph_sizes().unwrap_or_else(|e| {
                tracing::debug!("graph sizes unknown ({e}): every graph read page by page");
                HashMap::new()
            })
        } else {
            HashMap::new()
        };
        let graphs: Vec<(NamedNode, Option<usize>)> = self
            .endpoint
            .graphs()
            .iter()
            .filter_map(|g| NamedNode::new(g.as_str()).ok())
            .map(|g| {
                let size = sizes.get(&g).copied();
                (g, size)
            })
            .collect();
        self.per_graph = Some((graphs.into_iter(), GraphScan::Whole(Vec::new().into_iter())));
        true
    }

    /// The next quad of the graph-by-graph scan, `None` when it is over.
    fn next_per_graph(&mut self) -> Option<Result<Quad, RemoteError>> {
        loop {
            let (graphs, scan) = self.per_graph.as_mut()?;
            let next = match scan {
                GraphScan::Whole(quads) => quads.next().map(Ok),
                GraphScan::Pages(pages) => pages.next(),
            };
            match next {
                Some(Ok(quad)) if self.given.remove(&quad) => {}
                Some(Ok(quad)) => return Some(Ok(quad)),
                Some(Err(e)) => {
                    self.per_graph = None;
                    return Some(Err(e));
                }
                None => {
                    let Some((graph, size)) = graphs.next() else {
                        self.per_graph = None;
                        return None;
                    };
                    *scan = match size.map(|n| self.endpoint.whole_graph(&graph, n)) {
                        Some(Ok(Some(quads))) => GraphScan::Whole(quads.into_iter()),
                        Some(Err(e)) => {
                            self.per_graph = None;
                            return Some(Err(e));
                        }
                        None | Some(Ok(None)) => match self.pattern.in_graph(&graph) {
                            Some(pattern) => {
                                GraphScan::Pages(Box::new(self.endpoint.quads(pattern)))
                            }
                            None => GraphScan::Whole(Vec::new().into_iter()),
                        },
                    };
                }
            }
        }
    }
}

/// Most quads an ordered scan may have given before a server refuses to sort
/// further and the scan can still go on unordered.
const SORT_FALLBACK_LIMIT: usize = 100_000;

impl Iterator for RemoteQuads<'_> {
    type Item = Result<Quad, RemoteError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.per_graph.is_some() {
                let next = self.next_per_graph();
                self.done = next.is_none() || matches!(next, Some(Err(_)));
                return next;
            }
            if let Some(quad) = self.page.next() {
                if !self.ordered {
                    if self.given.remove(&quad) {
                        continue;
                    }
                } else if self.next_offset.is_some() && self.given.len() < SORT_FALLBACK_LIMIT {
                    self.given.insert(quad.clone());
                }
                return Some(Ok(quad));
            }
            if self.done {
                return None;
            }
            let text = self
                .pattern
                .select(self.page_size, self.next_offset, self.ordered);
            let (variables, rows) = match self.endpoint.select(&text) {
                Ok(result) => result,
                Err(RemoteError::Truncated(cap)) if page_under(cap) < self.page_size => {
                    // The server caps results: page below its cap, in order.
                    self.endpoint.row_cap.store(cap as u64, Ordering::Relaxed);
                    self.page_size = page_under(cap);
                    self.next_offset = Some(0);
                    continue;
                }
                Err(e)
                    if self.ordered
                        && self
                            .next_offset
                            .is_some_and(|o| o > 0 && o <= SORT_FALLBACK_LIMIT) =>
                {
                    if self.split_by_graph() {
                        tracing::debug!(
                            "the server would not sort the scan this far ({e}); scanning on graph by graph"
                        );
                        continue;
                    }
                    tracing::warn!(
                        "the server would not sort the scan this far ({e}); scanning again without an order"
                    );
                    self.ordered = false;
                    self.next_offset = Some(0);
                    continue;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let full = rows.len() >= self.page_size;
            let quads: Vec<Quad> = rows
                .into_iter()
                .filter_map(|row| self.pattern.quad(&variables, row))
                .collect();
            match self.next_offset {
                None if full => {
                    // More than a page: start again in a stable order.
                    self.next_offset = Some(0);
                    continue;
                }
                None => self.done = true,
                Some(offset) => {
                    self.next_offset = Some(offset + self.page_size);
                    self.done = !full;
                }
            }
            self.page = quads.into_iter();
        }
    }
}

impl Endpoint {
    /// Connects and reads the registry; fails with a clear message when the
    /// server does not answer or the credentials are missing.
    pub fn connect(config: RemoteGraphConfig) -> Result<Self, RemoteError> {
        let authorization = match config.auth {
            RemoteAuth::None => None,
            RemoteAuth::Basic => {
                let user = env_secret("KGFUSE_GRAPH_USER")?;
                let password = env_secret("KGFUSE_GRAPH_PASSWORD")?;
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                Some(format!("Basic {token}"))
            }
            RemoteAuth::Bearer => Some(format!("Bearer {}", env_secret("KGFUSE_GRAPH_TOKEN")?)),
        };
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_secs(10)))
                .build(),
        );
        let endpoint = Self {
            config,
            authorization,
            agent,
            round_trips: AtomicU64::new(0),
            graphs: RwLock::new((Vec::new(), Instant::now())),
            memo: Mutex::new(Memo {
                answers: HashMap::new(),
                since: Instant::now(),
            }),
            row_cap: AtomicU64::new(0),
            stamp: Mutex::new(None),
            changes_elsewhere: AtomicU64::new(0),
        };
        endpoint.reload_registry()?;
        Ok(endpoint)
    }

    /// A remembered answer to a question about the data (such as "is this
    /// predicate used?"). Answers are kept until this endpoint writes, and for at
    /// most [`REGISTRY_REFRESH`], so a long-running reader sees another process's
    /// writes as soon as it sees its graphs.
    pub fn recall(&self, question: &str) -> Option<bool> {
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.since.elapsed() >= REGISTRY_REFRESH {
            memo.answers.clear();
            memo.since = Instant::now();
        }
        memo.answers.get(question).copied()
    }

    /// Keeps answers for [`Endpoint::recall`].
    pub fn remember(&self, answers: impl IntoIterator<Item = (String, bool)>) {
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.answers.is_empty() {
            memo.since = Instant::now();
        }
        memo.answers.extend(answers);
    }

    /// Drops every remembered answer: called before each write.
    fn forget(&self) {
        self.memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .answers
            .clear();
    }

    /// Requests sent so far.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// kgfuse's graphs on the server, sorted; read again when the list is older
    /// than [`REGISTRY_REFRESH`], so a long-running reader sees the graphs
    /// another process adds.
    pub fn graphs(&self) -> Vec<String> {
        let read = |lock: &RwLock<(Vec<String>, Instant)>| {
            let guard = lock.read().unwrap_or_else(|p| p.into_inner());
            (guard.0.clone(), guard.1.elapsed())
        };
        let (graphs, age) = read(&self.graphs);
        if age < REGISTRY_REFRESH {
            return graphs;
        }
        match self.reload_registry() {
            Ok(()) => read(&self.graphs).0,
            Err(error) => {
                tracing::warn!("the graph registry could not be read again: {error}");
                graphs
            }
        }
    }

    /// Reads the registry: kgfuse's graphs and the change stamp. A stamp this
    /// process has not seen counts as a change made elsewhere, and the
    /// remembered answers go.
    fn reload_registry(&self) -> Result<(), RemoteError> {
        let text = format!(
            "SELECT ?g ?stamp WHERE {{ GRAPH <{REGISTRY_GRAPH}> {{ \
               {{ <{REGISTRY_GRAPH}> <{RDFS_MEMBER}> ?g }} UNION {{ <{REGISTRY_GRAPH}> <{CHANGE_STAMP}> ?stamp }} }} }}"
        );
        let (variables, rows) =
            self.query_with(&text, Form::Results, None, &[REGISTRY_GRAPH.to_owned()])?;
        let column = |name: &str| variables.iter().position(|v| v == name);
        let (g, stamp_at) = (column("g"), column("stamp"));
        let mut graphs = Vec::new();
        let mut stamp = None;
        for row in rows {
            match (
                g.and_then(|i| row.get(i).cloned().flatten()),
                stamp_at.and_then(|i| row.get(i).cloned().flatten()),
            ) {
                (Some(Term::NamedNode(graph)), _) => graphs.push(graph.into_string()),
                (_, Some(Term::Literal(value))) => stamp = Some(value.value().to_owned()),
                _ => {}
            }
        }
        graphs.sort();
        graphs.dedup();
        let mut seen = self.stamp.lock().unwrap_or_else(|p| p.into_inner());
        if stamp.is_some() && *seen != stamp {
            if seen.is_some() {
                self.changes_elsewhere.fetch_add(1, Ordering::SeqCst);
                self.forget();
            }
            *seen = stamp;
        }
        drop(seen);
        *self.graphs.write().unwrap_or_else(|p| p.into_inner()) = (graphs, Instant::now());
        Ok(())
    }

    /// Replaces the registry's change stamp: the end of a write, for readers in
    /// other processes ([`Endpoint::changes_elsewhere`]).
    pub fn mark_changed(&self) -> Result<(), RemoteError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let stamp = format!("{}-{nanos}", std::process::id());
        let literal = oxrdf::Literal::new_simple_literal(stamp.as_str());
        self.update(&format!(
            "DELETE {{ GRAPH <{REGISTRY_GRAPH}> {{ <{REGISTRY_GRAPH}> <{CHANGE_STAMP}> ?stamp }} }} \
             WHERE {{ GRAPH <{REGISTRY_GRAPH}> {{ <{REGISTRY_GRAPH}> <{CHANGE_STAMP}> ?stamp }} }} ; \
             INSERT DATA {{ GRAPH <{REGISTRY_GRAPH}> {{ <{REGISTRY_GRAPH}> <{CHANGE_STAMP}> {literal} }} }}"
        ))?;
        *self.stamp.lock().unwrap_or_else(|p| p.into_inner()) = Some(stamp);
        Ok(())
    }

    /// How many writes of other processes this one has noticed (the registry is
    /// read again at most every [`REGISTRY_REFRESH`]).
    pub fn changes_elsewhere(&self) -> u64 {
        let _ = self.graphs();
        self.changes_elsewhere.load(Ordering::SeqCst)
    }

    /// Adds graphs to the registry (before anything is written into them, so a
    /// write cut short leaves a graph kgfuse can see and repair).
    pub fn register(&self, graphs: &[NamedNode]) -> Result<(), RemoteError> {
        let known = self.graphs();
        let mut fresh: Vec<&NamedNode> = graphs
            .iter()
            .filter(|g| known.binary_search(&g.as_str().to_owned()).is_err())
            .collect();
        fresh.sort();
        fresh.dedup();
        if fresh.is_empty() {
            return Ok(());
        }
        self.update(&format!(
            "INSERT DATA {}",
            registry_members(fresh.iter().copied())
        ))?;
        let mut list = self.graphs.write().unwrap_or_else(|p| p.into_inner());
        list.0.extend(fresh.iter().map(|g| g.as_str().to_owned()));
        list.0.sort();
        list.0.dedup();
        Ok(())
    }

    /// Drops graphs and takes them off the registry.
    pub fn drop_graphs(&self, graphs: &[NamedNode]) -> Result<(), RemoteError> {
        if graphs.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for graph in graphs {
            text.push_str(&format!("DROP SILENT GRAPH {graph} ; "));
        }
        text.push_str(&format!("DELETE DATA {}", registry_members(graphs)));
        self.update(&text)?;
        let mut list = self.graphs.write().unwrap_or_else(|p| p.into_inner());
        list.0.retain(|g| !graphs.iter().any(|d| d.as_str() == g));
        Ok(())
    }

    /// The dataset a query without FROM clauses runs on: kgfuse's graphs.
    fn dataset(&self) -> Vec<String> {
        let graphs = self.graphs();
        if graphs.is_empty() {
            vec![EMPTY_GRAPH.to_owned()]
        } else {
            graphs
        }
    }

    /// Runs a SELECT or ASK over kgfuse's graphs.
    pub fn select(&self, text: &str) -> Result<Table, RemoteError> {
        self.query_with(text, Form::Results, None, &self.dataset())
    }

    /// The number of quads in each of kgfuse's graphs, in one query.
    fn graph_sizes(&self) -> Result<HashMap<NamedNode, usize>, RemoteError> {
        let (_, rows) =
            self.select("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g")?;
        Ok(rows
            .into_iter()
            .filter_map(|row| match row.as_slice() {
                [Some(Term::NamedNode(g)), Some(Term::Literal(n))] => {
                    Some((g.clone(), n.value().parse().ok()?))
                }
                _ => None,
            })
            .collect())
    }

    /// Every quad of one graph as N-Triples from a CONSTRUCT, when the answer
    /// holds all `expected` of them; `None` when it was cut short (Virtuoso cuts
    /// a CONSTRUCT at its row cap without saying so). Virtuoso writes N-Triples
    /// about 7 times faster than SPARQL results JSON (9,000 quads: 0.065 s
    /// against 0.45 s), and a graph is one file, mostly under the cap.
    fn whole_graph(
        &self,
        graph: &NamedNode,
        expected: usize,
    ) -> Result<Option<Vec<Quad>>, RemoteError> {
        let text = format!("CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {graph} {{ ?s ?p ?o }} }}");
        let body = self.send_query(&text, Form::Triples, None, &self.dataset())?;
        let Answer::Graph(triples) = parse_triples(&body.bytes, body.content_type.as_deref())?
        else {
            return Ok(None);
        };
        if triples.len() != expected {
            tracing::debug!(
                graph = graph.as_str(),
                expected,
                got = triples.len(),
                "a CONSTRUCT of a whole graph came back short: read page by page"
            );
            return Ok(None);
        }
        let name = GraphName::NamedNode(graph.clone());
        Ok(Some(
            triples
                .into_iter()
                .map(|t| Quad::new(t.subject, t.predicate, t.object, name.clone()))
                .collect(),
        ))
    }

    /// Whether a scan pattern matches anything.
    pub fn holds(&self, pattern: &Pattern) -> Result<bool, RemoteError> {
        let (_, rows) = self.select(&pattern.select(1, None, false))?;
        Ok(!rows.is_empty())
    }

    /// The quads of a pattern, page by page.
    pub fn quads(&self, pattern: Pattern) -> RemoteQuads<'_> {
        let cap = usize::try_from(self.row_cap.load(Ordering::Relaxed)).unwrap_or(0);
        let page_size = if cap == 0 {
            FIRST_PAGE
        } else {
            page_under(cap)
        };
        let everything = pattern.is_everything();
        let mut scan = RemoteQuads {
            endpoint: self,
            // A scan that will likely need pages starts ordered on a capped server.
            next_offset: (pattern.many && cap > 0).then_some(0),
            page_size,
            pattern,
            page: Vec::new().into_iter(),
            ordered: true,
            given: HashSet::new(),
            per_graph: None,
            done: false,
        };
        // Every quad is read graph by graph from the start: sorting the whole
        // dataset for each page cost Virtuoso 6.5 s a page at LUBM-10 size.
        if everything {
            scan.split_by_graph();
        }
        scan
    }

    /// Runs a query; with `on_kgfuse_graphs`, on kgfuse's graphs as its dataset.
    pub fn query(
        &self,
        text: &str,
        form: Form,
        timeout: Option<Duration>,
        on_kgfuse_graphs: bool,
    ) -> Result<Answer, RemoteError> {
        let dataset = if on_kgfuse_graphs {
            self.dataset()
        } else {
            Vec::new()
        };
        let body = self.send_query(text, form, timeout, &dataset)?;
        match form {
            Form::Results => parse_results(&body.bytes, body.max_rows),
            Form::Triples => parse_triples(&body.bytes, body.content_type.as_deref()),
        }
    }

    fn query_with(
        &self,
        text: &str,
        form: Form,
        timeout: Option<Duration>,
        dataset: &[String],
    ) -> Result<Table, RemoteError> {
        let body = self.send_query(text, form, timeout, dataset)?;
        match parse_results(&body.bytes, body.max_rows)? {
            Answer::Solutions { variables, rows } => Ok((variables, rows)),
            _ => Err(RemoteError::Evaluation(
                "the server answered a SELECT with something else".into(),
            )),
        }
    }

    /// Sends a query as a form POST, retrying on transient failures.
    fn send_query(
        &self,
        text: &str,
        form: Form,
        timeout: Option<Duration>,
        dataset: &[String],
    ) -> Result<Reply, RemoteError> {
        let accept = match form {
            Form::Results => "application/sparql-results+json",
            Form::Triples => "application/n-triples, text/plain;q=0.5, text/turtle;q=0.2",
        };
        let in_text = in_query_text(text, dataset);
        let mut fields: Vec<(&str, &str)> = vec![("query", in_text.as_deref().unwrap_or(text))];
        if in_text.is_none() {
            for graph in dataset {
                fields.push(("default-graph-uri", graph));
                fields.push(("named-graph-uri", graph));
            }
        }
        let mut wait = Duration::from_millis(200);
        let mut attempt = 1;
        loop {
            match self.post_form(&self.config.query, accept, &fields, timeout) {
                Err(Failure::Transient(message)) if attempt < ATTEMPTS => {
                    tracing::warn!("{message}; retrying in {wait:?}");
                    std::thread::sleep(wait);
                    wait *= 4;
                    attempt += 1;
                }
                Err(failure) => return Err(failure.into_error(timeout)),
                Ok(reply) => return Ok(reply),
            }
        }
    }

    /// Runs one of kgfuse's own updates (data blocks, graph management).
    pub fn update(&self, text: &str) -> Result<(), RemoteError> {
        self.update_text(text, false)
    }

    /// Runs a SPARQL Update, never retried (it may have been applied); with
    /// `on_kgfuse_graphs`, its WHERE clauses read kgfuse's graphs
    /// (`using-graph-uri`, `using-named-graph-uri`).
    pub fn update_text(&self, text: &str, on_kgfuse_graphs: bool) -> Result<(), RemoteError> {
        self.forget();
        let url = self.config.update.as_deref().unwrap_or(&self.config.query);
        let dataset = if on_kgfuse_graphs {
            self.dataset()
        } else {
            Vec::new()
        };
        let in_text = in_update_text(text, &dataset);
        let mut fields: Vec<(&str, &str)> = vec![("update", in_text.as_deref().unwrap_or(text))];
        if in_text.is_none() {
            for graph in &dataset {
                fields.push(("using-graph-uri", graph));
                fields.push(("using-named-graph-uri", graph));
            }
        }
        self.post_form(url, "*/*", &fields, Some(WRITE_TIMEOUT))
            .map(drop)
            .map_err(|f| f.into_error(Some(WRITE_TIMEOUT)))
    }

    /// Writes quads into their named graphs: Graph Store POSTs when the server
    /// has a store endpoint, else `INSERT DATA` batches. Blank nodes become skolem
    /// IRIs. Registers the graphs first.
    pub fn insert(&self, quads: &[Quad]) -> Result<(), RemoteError> {
        let graphs: Vec<NamedNode> = quads
            .iter()
            .filter_map(|q| match &q.graph_name {
                GraphName::NamedNode(g) => Some(g.clone()),
                GraphName::BlankNode(b) => Some(skolem(b)),
                GraphName::DefaultGraph => None,
            })
            .collect();
        if graphs.len() < quads.len() {
            return Err(RemoteError::Usage(
                "a remote graph is written in named graphs only: put the triples in GRAPH <…>"
                    .into(),
            ));
        }
        self.register(&graphs)?;
        match self.config.store.clone() {
            Some(store) => {
                let mut by_graph: std::collections::BTreeMap<NamedNode, Vec<Triple>> =
                    std::collections::BTreeMap::new();
                for quad in quads {
                    let quad = skolemize(quad.clone());
                    if let GraphName::NamedNode(g) = quad.graph_name.clone() {
                        by_graph.entry(g).or_default().push(Triple::from(quad));
                    }
                }
                for (graph, triples) in by_graph {
                    for chunk in triples.chunks(STORE_BATCH) {
                        self.post_triples(&store, &graph, chunk)?;
                    }
                }
                Ok(())
            }
            None => {
                for chunk in quads.chunks(INSERT_BATCH) {
                    self.update(&data_block("INSERT", chunk))?;
                }
                Ok(())
            }
        }
    }

    /// Removes quads (`DELETE DATA` in batches).
    pub fn remove(&self, quads: &[Quad]) -> Result<(), RemoteError> {
        for chunk in quads.chunks(INSERT_BATCH) {
            self.update(&data_block("DELETE", chunk))?;
        }
        Ok(())
    }

    /// `POST store?graph=g` with the triples as N-Triples, written by Oxigraph's
    /// serialiser.
    fn post_triples(
        &self,
        store: &str,
        graph: &NamedNode,
        triples: &[Triple],
    ) -> Result<(), RemoteError> {
        let mut serializer = RdfSerializer::from_format(RdfFormat::NTriples).for_writer(Vec::new());
        for triple in triples {
            serializer
                .serialize_triple(triple)
                .map_err(|e| RemoteError::Serialize(e.to_string()))?;
        }
        let body = serializer
            .finish()
            .map_err(|e| RemoteError::Serialize(e.to_string()))?;
        self.forget();
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut request = self
            .agent
            .post(store)
            .query("graph", graph.as_str())
            .header("Content-Type", "application/n-triples")
            .config()
            .timeout_global(Some(WRITE_TIMEOUT))
            .build();
        if let Some(value) = &self.authorization {
            request = request.header("Authorization", value);
        }
        let failed = |f: Failure| f.into_error(Some(WRITE_TIMEOUT));
        let response = request
            .send(&body[..])
            .map_err(|e| failed(Failure::from_transport(store, &e)))?;
        check_status(store, response).map(drop).map_err(failed)
    }

    fn post_form(
        &self,
        url: &str,
        accept: &str,
        fields: &[(&str, &str)],
        timeout: Option<Duration>,
    ) -> Result<Reply, Failure> {
        let count = self.round_trips.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(count, url, "SPARQL request");
        if let Some((_, text)) = fields.first() {
            tracing::trace!(count, "{text}");
        }
        let mut request = self
            .agent
            .post(url)
            .header("Accept", accept)
            .config()
            .timeout_global(timeout)
            .build();
        if let Some(value) = &self.authorization {
            request = request.header("Authorization", value);
        }
        let started = Instant::now();
        let response = request
            .send_form(fields.iter().copied())
            .map_err(|e| Failure::from_transport(url, &e))?;
        let reply = check_status(url, response);
        tracing::debug!(count, ms = started.elapsed().as_millis(), "SPARQL answer");
        reply
    }
}

/// `graphs` as a query dataset, or `None` when one is not an IRI.
fn query_dataset(graphs: &[String]) -> Option<spargebra::algebra::QueryDataset> {
    let graphs: Vec<NamedNode> = graphs
        .iter()
        .map(|g| NamedNode::new(g.as_str()).ok())
        .collect::<Option<_>>()?;
    Some(spargebra::algebra::QueryDataset {
        default: graphs.clone(),
        named: Some(graphs),
    })
}

/// The query `text` with `dataset` as its FROM and FROM NAMED clauses, when it
/// has none of its own and parses; `None` leaves the dataset to the protocol
/// parameters. In the text because Virtuoso echoes every protocol dataset graph
/// back as a response header (`X-SPARQL-default-graph`, `X-SPARQL-named-graph`),
/// and the HTTP client refuses an answer with more than 128 headers: a store of
/// more than about 60 graphs could not be queried (found loading LUBM-10's 189
/// files).
fn in_query_text(text: &str, dataset: &[String]) -> Option<String> {
    use spargebra::Query;
    if dataset.is_empty() {
        return None;
    }
    let mut query = spargebra::SparqlParser::new().parse_query(text).ok()?;
    let slot = match &mut query {
        Query::Select { dataset, .. }
        | Query::Construct { dataset, .. }
        | Query::Describe { dataset, .. }
        | Query::Ask { dataset, .. } => dataset,
    };
    if slot.is_some() {
        return None;
    }
    *slot = Some(query_dataset(dataset)?);
    Some(query.to_string())
}

/// The update `text` with `dataset` as the USING and USING NAMED clauses of each
/// of its DELETE/INSERT operations that has none (see [`in_query_text`]).
fn in_update_text(text: &str, dataset: &[String]) -> Option<String> {
    use spargebra::GraphUpdateOperation;
    if dataset.is_empty() {
        return None;
    }
    let mut update = spargebra::SparqlParser::new().parse_update(text).ok()?;
    let graphs = query_dataset(dataset)?;
    for operation in &mut update.operations {
        if let GraphUpdateOperation::DeleteInsert { using, .. } = operation {
            if using.is_some() {
                return None;
            }
            *using = Some(graphs.clone());
        }
    }
    Some(update.to_string())
}

/// `{ GRAPH <registry> { <registry> rdfs:member <g> . … } }` for `graphs`.
fn registry_members<'a>(graphs: impl IntoIterator<Item = &'a NamedNode>) -> String {
    let members: String = graphs
        .into_iter()
        .map(|g| format!("<{REGISTRY_GRAPH}> <{RDFS_MEMBER}> {g} . "))
        .collect();
    format!("{{ GRAPH <{REGISTRY_GRAPH}> {{ {members}}} }}")
}

/// `INSERT DATA { GRAPH <g> { … } … }` (or `DELETE DATA`), every term written
/// in N-Triples syntax.
fn data_block(verb: &str, quads: &[Quad]) -> String {
    let mut text = format!("{verb} DATA {{ ");
    for quad in quads {
        let quad = skolemize(quad.clone());
        let graph = match &quad.graph_name {
            GraphName::NamedNode(g) => g.to_string(),
            _ => continue,
        };
        text.push_str(&format!(
            "GRAPH {graph} {{ {} {} {} }} ",
            quad.subject, quad.predicate, quad.object
        ));
    }
    text.push('}');
    text
}

/// A response body with what the headers said about it.
struct Reply {
    bytes: Vec<u8>,
    content_type: Option<String>,
    /// Virtuoso's `X-SPARQL-MaxRows`: the cap the results were cut at.
    max_rows: Option<usize>,
}

/// Why a request failed, and whether trying again may help.
enum Failure {
    Transient(String),
    Timeout,
    Final(String),
}

impl Failure {
    fn from_transport(url: &str, error: &ureq::Error) -> Self {
        match error {
            ureq::Error::Timeout(_) => Self::Timeout,
            ureq::Error::ConnectionFailed | ureq::Error::Io(_) | ureq::Error::HostNotFound => {
                Self::Transient(format!(
                    "the SPARQL server at {url} did not answer: {error}"
                ))
            }
            other => Self::Final(format!("request to {url} failed: {other}")),
        }
    }

    fn into_error(self, timeout: Option<Duration>) -> RemoteError {
        match self {
            Self::Timeout => RemoteError::Timeout(timeout.unwrap_or_default()),
            Self::Transient(message) | Self::Final(message) => RemoteError::Evaluation(message),
        }
    }
}

fn check_status(
    url: &str,
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<Reply, Failure> {
    let status = response.status();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header("content-type");
    let max_rows = header("x-sparql-maxrows").and_then(|v| v.trim().parse().ok());
    let bytes = response
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => Failure::Timeout,
            other => Failure::Transient(format!("reading the answer of {url}: {other}")),
        })?;
    if status.is_success() {
        return Ok(Reply {
            bytes,
            content_type,
            max_rows,
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    let excerpt: String = text.chars().take(500).collect();
    let message = format!("the SPARQL server at {url} answered {status}: {excerpt}");
    // A query that ran into the server's own limits (Virtuoso: 500 with "SR171:
    // Transaction timed out", or "SR353" for a sort past its cap) would only run
    // into them again.
    let over_a_limit = text.to_lowercase().contains("timed out") || text.contains("SR353");
    if (status.is_server_error() && !over_a_limit) || status.as_u16() == 429 {
        Err(Failure::Transient(message))
    } else {
        Err(Failure::Final(message))
    }
}

/// SPARQL results JSON to rows; a result cut at the server's cap is an error.
fn parse_results(bytes: &[u8], max_rows: Option<usize>) -> Result<Answer, RemoteError> {
    let rewritten;
    let bytes = if memchr_nodeid(bytes) {
        rewritten = rewrite_virtuoso_blank_nodes(bytes)?;
        &rewritten[..]
    } else {
        bytes
    };
    let parser = QueryResultsParser::from_format(QueryResultsFormat::Json);
    let bad =
        |e: &dyn std::fmt::Display| RemoteError::Evaluation(format!("unreadable results: {e}"));
    match parser.for_slice(bytes).map_err(|e| bad(&e))? {
        SliceQueryResultsParserOutput::Boolean(value) => Ok(Answer::Boolean(value)),
        SliceQueryResultsParserOutput::Solutions(solutions) => {
            let variables: Vec<String> = solutions
                .variables()
                .iter()
                .map(|v| v.as_str().to_owned())
                .collect();
            let vars = solutions.variables().to_vec();
            let mut rows = Vec::new();
            for solution in solutions {
                let solution = solution.map_err(|e| bad(&e))?;
                rows.push(vars.iter().map(|v| solution.get(v).cloned()).collect());
            }
            if let Some(cap) = max_rows
                && rows.len() >= cap
            {
                return Err(RemoteError::Truncated(cap));
            }
            Ok(Answer::Solutions { variables, rows })
        }
    }
}

fn memchr_nodeid(bytes: &[u8]) -> bool {
    bytes.windows(9).any(|w| w == b"nodeID://")
}

/// Virtuoso writes blank nodes as `{"type": "bnode", "value": "nodeID://b1"}`,
/// which is not a blank node label: the values of bnode cells are rewritten
/// (literals that happen to hold the text are left alone).
fn rewrite_virtuoso_blank_nodes(bytes: &[u8]) -> Result<Vec<u8>, RemoteError> {
    let mut json: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| RemoteError::Evaluation(format!("unreadable results: {e}")))?;
    if let Some(bindings) = json
        .pointer_mut("/results/bindings")
        .and_then(|b| b.as_array_mut())
    {
        for row in bindings {
            let Some(cells) = row.as_object_mut() else {
                continue;
            };
            for cell in cells.values_mut() {
                if cell.get("type").and_then(|t| t.as_str()) == Some("bnode")
                    && let Some(value) = cell.get_mut("value")
                    && let Some(text) = value.as_str()
                {
                    let label: String = text
                        .trim_start_matches("nodeID://")
                        .chars()
                        .filter(char::is_ascii_alphanumeric)
                        .collect();
                    *value = serde_json::Value::String(format!("v{label}"));
                }
            }
        }
    }
    serde_json::to_vec(&json).map_err(|e| RemoteError::Serialize(e.to_string()))
}

/// CONSTRUCT or DESCRIBE results, in the format the server chose.
fn parse_triples(bytes: &[u8], content_type: Option<&str>) -> Result<Answer, RemoteError> {
    let format = content_type
        .and_then(|t| t.split(';').next())
        .map(str::trim)
        .and_then(|t| match t {
            "text/plain" => Some(RdfFormat::NTriples),
            other => RdfFormat::from_media_type(other),
        })
        .unwrap_or(RdfFormat::NTriples);
    let mut triples = Vec::new();
    for quad in RdfParser::from_format(format).for_slice(bytes) {
        let quad = quad.map_err(|e| RemoteError::Evaluation(format!("unreadable triples: {e}")))?;
        triples.push(Triple::from(quad));
    }
    Ok(Answer::Graph(triples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtuoso_blank_nodes_are_relabelled_and_literals_left_alone() {
        let body = br#"{"head":{"vars":["s","l"]},"results":{"bindings":[
            {"s":{"type":"bnode","value":"nodeID://b10007"},
             "l":{"type":"literal","value":"see nodeID://b1"}}]}}"#;
        let Answer::Solutions { rows, .. } = parse_results(body, None).expect("parses") else {
            panic!("solutions")
        };
        assert_eq!(
            rows[0][0],
            Some(Term::BlankNode(BlankNode::new_unchecked("vb10007")))
        );
        assert_eq!(
            rows[0][1],
            Some(Term::Literal(oxrdf::Literal::new_simple_literal(
                "see nodeID://b1"
            )))
        );
    }

    #[test]
    fn results_cut_at_the_server_cap_are_an_error() {
        let body = br#"{"head":{"vars":["s"]},"results":{"bindings":[{"s":{"type":"uri","value":"urn:a"}}]}}"#;
        let error = parse_results(body, Some(1)).expect_err("cut");
        assert!(error.to_string().contains("X-SPARQL-MaxRows"), "{error}");
        assert!(parse_results(body, Some(2)).is_ok());
    }

    #[test]
    fn data_blocks_escape_every_term_and_skolemize_blank_nodes() {
        let quad = Quad::new(
            BlankNode::new_unchecked("x1"),
            NamedNode::new_unchecked("urn:p"),
            oxrdf::Literal::new_simple_literal("a \"quoted\" } ; DROP ALL"),
            NamedNode::new_unchecked("urn:g"),
        );
        let text = data_block("INSERT", &[quad]);
        assert_eq!(
            text,
            format!(
                "INSERT DATA {{ GRAPH <urn:g> {{ <{GENID}x1> <urn:p> \"a \\\"quoted\\\" }} ; DROP ALL\" }} }}"
            )
        );
        spargebra::SparqlParser::new()
            .parse_update(&text)
            .expect("the block parses as one INSERT DATA");
    }

    #[test]
    fn the_dataset_goes_into_the_text_unless_the_text_has_one() {
        let graphs = ["urn:g1".to_owned(), "urn:g2".to_owned()];
        let text = in_query_text("SELECT ?s WHERE { ?s ?p ?o }", &graphs).expect("rewritten");
        let query = parsed(&text);
        let spargebra::Query::Select {
            dataset: Some(dataset),
            ..
        } = query
        else {
            panic!("no dataset in {text}");
        };
        assert_eq!(dataset.default.len(), 2);
        assert_eq!(dataset.named.as_ref().map(Vec::len), Some(2));
        assert!(in_query_text("SELECT ?s FROM <urn:mine> WHERE { ?s ?p ?o }", &graphs).is_none());
        assert!(in_query_text("SELECT ?s WHERE { ?s ?p ?o }", &[]).is_none());
        let update = in_update_text(
            "DELETE { GRAPH <urn:g1> { ?s ?p ?o } } WHERE { ?s ?p ?o }",
            &graphs,
        )
        .expect("rewritten");
        assert!(update.contains("USING <urn:g1>"), "{update}");
        assert!(update.contains("USING NAMED <urn:g2>"), "{update}");
    }

    fn parsed(text: &str) -> spargebra::Query {
        spargebra::SparqlParser::new()
            .parse_query(text)
            .expect("query parses")
    }
}
