//! The data-flow graph `paths` searches and the loaders it chains back to, kept
//! on disk in `<store>/paths/flow` ([`crate::kept`]) and stamped with the
//! store's content version, as the lexicon's index is. A process that opens
//! an unchanged store reads the file instead of every produces, consumes and
//! calls edge and every producer's parameters (10.3 s of a fresh `unified`
//! question at 100,000 functions, release); after writes, only the edges
//! between nodes they changed ([`Store::changed_between`]: every triple a write
//! adds or removes joins two of them) and the loaders among those nodes'
//! functions are read again. Re-reading is idempotent, so a file built while
//! another process wrote is mended by the next reader.
//!
//! Only IRIs take part: the changes a write records name IRIs, so an edge to a
//! blank node could not be kept in step.

use crate::RetrieveError;
use crate::functions::iri_terms;
use crate::kept::{self, FileError, Found, KeptFile, Origin, Reader, put_count, put_text};
use kgfuse_core::vocab::kg;
use kgfuse_graph::model::Term;
use kgfuse_lexicon::sparql;
use kgfuse_store::Store;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Nodes bound per query when reading the edges around changed nodes.
const NODES_PER_QUERY: usize = 1_000;

/// The data-flow graph, numbered, with its loaders: what the file holds.
/// `edges` run tag -> consumer, callee -> caller, producer -> tag (calls
/// resolved only by name count too: `rule.matches(...)` on a loop variable is
/// such a call, and a wrong guess still has to lead to an output tag to
/// matter); `loads` pair a function with a tag it makes from nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FlowEdges {
    /// Node IRIs, sorted: a node's number is its position.
    names: Names,
    /// (from, to), sorted, no repeats.
    edges: Vec<(u32, u32)>,
    /// (function, tag), sorted, no repeats.
    loads: Vec<(u32, u32)>,
}

impl FlowEdges {
    /// Numbers edges and loads given by IRI.
    pub(super) fn new(edges: &[(&str, &str)], loads: &[(&str, &str)]) -> Self {
        let mut names: Vec<&str> = edges
            .iter()
            .chain(loads)
            .flat_map(|&(from, to)| [from, to])
            .collect();
        names.sort_unstable();
        names.dedup();
        let number = |iri: &str| -> u32 {
            let position = names.binary_search(&iri).unwrap_or_default();
            u32::try_from(position).unwrap_or(u32::MAX)
        };
        let numbered = |pairs: &[(&str, &str)]| -> Vec<(u32, u32)> {
            let mut out: Vec<(u32, u32)> =
                pairs.iter().map(|&(a, b)| (number(a), number(b))).collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        let (edges, loads) = (numbered(edges), numbered(loads));
        let mut packed = Names::default();
        for name in names {
            packed.push(name);
        }
        Self {
            edges,
            loads,
            names: packed,
        }
    }

    /// The number of a node.
    pub(super) fn number(&self, iri: &str) -> Option<u32> {
        u32::try_from(self.names.position(iri)?).ok()
    }

    /// The IRI of a node.
    pub(super) fn name(&self, node: u32) -> &str {
        self.names.get(node as usize)
    }

    /// How many nodes there are.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// Every edge (`false`) and loader pair (`true`) by IRI.
    fn by_name(&self) -> BTreeSet<(bool, &str, &str)> {
        let named = |load: bool, pairs: &[(u32, u32)]| {
            pairs
                .iter()
                .map(move |&(a, b)| (load, self.name(a), self.name(b)))
                .collect::<Vec<_>>()
        };
        named(false, &self.edges)
            .into_iter()
            .chain(named(true, &self.loads))
            .collect()
    }

    /// The edges, numbered.
    pub(super) fn edges(&self) -> &[(u32, u32)] {
        &self.edges
    }

    /// Tag -> the functions that make it from nothing, sorted.
    pub(super) fn loaders(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for &(function, tag) in &self.loads {
            out.entry(self.name(tag).to_owned())
                .or_default()
                .push(self.name(function).to_owned());
        }
        for functions in out.values_mut() {
            functions.sort();
        }
        out
    }

    /// `self` with every edge between two of `nodes` replaced by `edges`, and
    /// every load of one of `functions` by `loads`. The kept nodes stay in
    /// order, so they are renumbered in one pass, merged with the few new
    /// ones, rather than sorted again (a write to a large graph changes a few
    /// of its nodes).
    fn replaced(
        &self,
        nodes: &BTreeSet<String>,
        edges: &[(String, String)],
        functions: &BTreeSet<String>,
        loads: &[(String, String)],
    ) -> Self {
        let marked = |iris: &BTreeSet<String>| -> Vec<bool> {
            let mut marks = vec![false; self.names.len()];
            for node in iris.iter().filter_map(|iri| self.number(iri)) {
                marks[node as usize] = true;
            }
            marks
        };
        let (touched, reloaded) = (marked(nodes), marked(functions));
        let kept_edges: Vec<(u32, u32)> = self
            .edges
            .iter()
            .copied()
            .filter(|&(a, b)| !(touched[a as usize] && touched[b as usize]))
            .collect();
        let kept_loads: Vec<(u32, u32)> = self
            .loads
            .iter()
            .copied()
            .filter(|&(function, _)| !reloaded[function as usize])
            .collect();
        // The old nodes still in use, in order, and the new ones, sorted.
        let mut used = vec![false; self.names.len()];
        for &(a, b) in kept_edges.iter().chain(&kept_loads) {
            used[a as usize] = true;
            used[b as usize] = true;
        }
        let mut added: Vec<&str> = edges
            .iter()
            .chain(loads)
            .flat_map(|(a, b)| [a.as_str(), b.as_str()])
            .collect();
        added.sort_unstable();
        added.dedup();
        // Merge both; `renumbered[old]` is an old node's new number.
        let mut names = Names::default();
        let mut renumbered = vec![u32::MAX; self.names.len()];
        let mut new_ones = added.iter().peekable();
        let next_number = |names: &Names| u32::try_from(names.len()).unwrap_or(u32::MAX);
        for (old, name) in self.names.iter().enumerate() {
            while let Some(new) = new_ones.next_if(|new| **new < name) {
                names.push(new);
            }
            let also_added = new_ones.next_if(|new| **new == name).is_some();
            if used[old] || also_added {
                renumbered[old] = next_number(&names);
                names.push(name);
            }
        }
        for new in new_ones {
            names.push(new);
        }
        let number_of = |iri: &str| -> u32 {
            let position = names.position(iri).unwrap_or_default();
            u32::try_from(position).unwrap_or(u32::MAX)
        };
        let numbered = |kept: Vec<(u32, u32)>, given: &[(String, String)]| -> Vec<(u32, u32)> {
            let mut out: Vec<(u32, u32)> = kept
                .into_iter()
                .map(|(a, b)| (renumbered[a as usize], renumbered[b as usize]))
                .chain(given.iter().map(|(a, b)| (number_of(a), number_of(b))))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        Self {
            edges: numbered(kept_edges, edges),
            loads: numbered(kept_loads, loads),
            names,
        }
    }
}

/// Node IRIs in order, packed in one text: a million IRIs are two
/// allocations, not a million, and are read from the file in one piece.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Names {
    /// The IRIs one after another.
    text: String,
    /// Where each ends in `text`.
    ends: Vec<usize>,
}

impl Names {
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The IRI at `position`.
    fn get(&self, position: usize) -> &str {
        let start = position
            .checked_sub(1)
            .map_or(0, |before| self.ends[before]);
        &self.text[start..self.ends[position]]
    }

    fn push(&mut self, iri: &str) {
        self.text.push_str(iri);
        self.ends.push(self.text.len());
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|position| self.get(position))
    }

    /// The position of `iri` (the IRIs are sorted).
    fn position(&self, iri: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.get(middle).cmp(iri) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// Whether each IRI sorts after the one before.
    fn is_sorted(&self) -> bool {
        (1..self.len()).all(|i| self.get(i - 1) < self.get(i))
    }
}

/// The store's data-flow graph and how this process came by it: the file as it
/// is when in step with the store, else brought in step (and written back).
pub(super) fn kept(store: &Store) -> Result<(FlowEdges, Origin), RetrieveError> {
    let started = std::time::Instant::now();
    let path = file(store);
    let (found, version) = kept::look::<FlowEdges>(store, &path)?;
    let (flow, origin) = match found {
        Found::InStep(flow) => (flow, Origin::Read),
        Found::Behind(flow, nodes) => (update(store, &flow, &nodes)?, Origin::Updated),
        Found::Nothing => (build(store)?, Origin::Built),
    };
    if origin != Origin::Read {
        kept::keep(&path, version, &flow);
    }
    tracing::info!(
        ?origin,
        nodes = flow.len(),
        edges = flow.edges.len(),
        loads = flow.loads.len(),
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "paths: the data-flow graph"
    );
    Ok((flow, origin))
}

/// The file's path in the store's directory.
fn file(store: &Store) -> PathBuf {
    kept::path(store, "paths", "flow")
}

/// How the kept data-flow graph differs from the one the whole graph gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowDifferences {
    /// Edges and loader pairs the file lacks.
    pub missing: usize,
    /// Edges and loader pairs the file has that the graph does not give.
    pub extra: usize,
}

/// How the file differs from the graph read whole, when it says it is in step
/// with the store (`kgfuse check`); `None` when it is absent, unreadable or
/// behind the store: the next `paths` question brings it in step, as it is
/// meant to.
pub fn check(store: &Store) -> Result<Option<FlowDifferences>, RetrieveError> {
    let Some(kept) = kept::in_step::<FlowEdges>(store, &file(store))? else {
        return Ok(None);
    };
    let whole = build(store)?;
    let (kept, whole) = (kept.by_name(), whole.by_name());
    Ok(Some(FlowDifferences {
        missing: whole.difference(&kept).count(),
        extra: kept.difference(&whole).count(),
    }))
}

/// Writes the file anew from the whole graph (`kgfuse check --repair`);
/// returns how many edges it holds.
pub fn repair(store: &Store) -> Result<usize, RetrieveError> {
    let flow = build(store)?;
    kept::rewrite(store, &file(store), &flow)?;
    Ok(flow.edges.len())
}

/// The edges and loaders of the whole graph.
fn build(store: &Store) -> Result<FlowEdges, RetrieveError> {
    let edges = flow_edges(store, None)?;
    let loads = loads(store, None)?;
    Ok(FlowEdges::new(&pairs(&edges), &pairs(&loads)))
}

/// `flow` with the edges between two of `nodes` read again, and the loaders
/// among their functions (the nodes themselves, and the owners of parameters
/// among them: a default value added to a parameter changes its function).
fn update(
    store: &Store,
    flow: &FlowEdges,
    nodes: &BTreeSet<String>,
) -> Result<FlowEdges, RetrieveError> {
    if nodes.is_empty() {
        return Ok(flow.clone());
    }
    let list: Vec<&String> = nodes.iter().collect();
    let mut edges = Vec::new();
    let mut functions: BTreeSet<String> = nodes.clone();
    for chunk in list.chunks(NODES_PER_QUERY) {
        let between = flow_edges(store, Some(chunk))?
            .into_iter()
            .filter(|(from, to)| nodes.contains(from) && nodes.contains(to));
        edges.extend(between);
        functions.extend(owners_of_parameters(store, chunk)?);
    }
    let functions_list: Vec<&String> = functions.iter().collect();
    let mut loads_read = Vec::new();
    for chunk in functions_list.chunks(NODES_PER_QUERY) {
        loads_read.extend(loads(store, Some(chunk))?);
    }
    Ok(flow.replaced(nodes, &edges, &functions, &loads_read))
}

fn pairs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect()
}

/// The rows of a SELECT over the store, without the store's query timeout:
/// these reads are kgfuse's own, and their time grows with the store, not with
/// a question.
pub(super) fn rows(store: &Store, query: &str) -> Result<Vec<Vec<Option<Term>>>, RetrieveError> {
    Ok(sparql::run_whole_store(store, query.to_owned())?.rows)
}

/// The IRI in a cell, if it holds one.
fn iri(cell: Option<&Option<Term>>) -> Option<&str> {
    match cell {
        Some(Some(Term::NamedNode(node))) => Some(node.as_str()),
        _ => None,
    }
}

/// `VALUES ?variable { ... }` for these IRIs, or nothing (the whole graph).
fn bound(variable: &str, iris: Option<&[&String]>) -> Result<String, RetrieveError> {
    match iris {
        Some(iris) => Ok(sparql::values(variable, &iri_terms(iris)?)),
        None => Ok(String::new()),
    }
}

/// The data-flow edges (from, to) of the whole graph, or those whose triple's
/// subject is among `subjects` (read from the subject, so a tag that 50,000
/// functions consume costs nothing when one of them changes).
fn flow_edges(
    store: &Store,
    subjects: Option<&[&String]>,
) -> Result<Vec<(String, String)>, RetrieveError> {
    let predicates = format!(
        "VALUES ?p {{ <{consumes}> <{calls}> <{by_name}> <{produces}> }}",
        consumes = kg::CONSUMES,
        calls = kg::CALLS,
        by_name = kg::CALLS_BY_NAME,
        produces = kg::PRODUCES,
    );
    let query = format!(
        "SELECT ?s ?p ?o WHERE {{ {values} {predicates} ?s ?p ?o }}",
        values = bound("s", subjects)?,
    );
    let mut out = Vec::new();
    for row in rows(store, &query)? {
        let (Some(s), Some(p), Some(o)) = (iri(row.first()), iri(row.get(1)), iri(row.get(2)))
        else {
            continue;
        };
        // A function produces a tag; a tag flows into its consumers, a callee
        // into its callers.
        if p == kg::PRODUCES {
            out.push((s.to_owned(), o.to_owned()));
        } else {
            out.push((o.to_owned(), s.to_owned()));
        }
    }
    Ok(out)
}

/// The functions having one of `nodes` as a parameter.
fn owners_of_parameters(store: &Store, nodes: &[&String]) -> Result<Vec<String>, RetrieveError> {
    let query = format!(
        "SELECT DISTINCT ?function WHERE {{ {values} ?function <{has_parameter}> ?parameter }}",
        values = bound("parameter", Some(nodes))?,
        has_parameter = kg::HAS_PARAMETER,
    );
    Ok(rows(store, &query)?
        .iter()
        .filter_map(|row| iri(row.first()).map(str::to_owned))
        .collect())
}

/// (function, tag) for every function that makes a tag from nothing, in the
/// whole graph or among `functions`: callable without arguments (every
/// parameter has a default) and taking none they could be given instead (no
/// `self` or `cls`: a method needs its object; no `*args` or `**kwargs`: a
/// `**fields` constructor builds from what it is given). Two plain reads (the
/// producers, and their parameters without a default), joined here: a nested
/// `NOT EXISTS` over a large store runs for minutes.
fn loads(
    store: &Store,
    functions: Option<&[&String]>,
) -> Result<Vec<(String, String)>, RetrieveError> {
    let values = bound("function", functions)?;
    let produced = format!(
        "SELECT ?function ?tag WHERE {{ {values} ?function <{produces}> ?tag }}",
        produces = kg::PRODUCES,
    );
    let required = format!(
        "SELECT DISTINCT ?function WHERE {{ {values} ?function <{produces}> ?tag ; \
           <{has_parameter}> ?parameter . \
           FILTER NOT EXISTS {{ ?parameter <{default}> ?value }} }}",
        produces = kg::PRODUCES,
        has_parameter = kg::HAS_PARAMETER,
        default = kg::DEFAULT_VALUE,
    );
    let needs_arguments: BTreeSet<String> = rows(store, &required)?
        .iter()
        .filter_map(|row| iri(row.first()).map(str::to_owned))
        .collect();
    Ok(rows(store, &produced)?
        .iter()
        .filter_map(|row| Some((iri(row.first())?, iri(row.get(1))?)))
        .filter(|(function, _)| !needs_arguments.contains(*function))
        .map(|(function, tag)| (function.to_owned(), tag.to_owned()))
        .collect())
}

impl KeptFile for FlowEdges {
    const WHAT: &'static str = "the data-flow graph";
    const MAGIC: &'static [u8] = b"kgfuse paths flow\n";
    const FORMAT: u32 = 1;

    /// The names (each its length, then its bytes), then the edges and the
    /// loads (each their count, then number pairs).
    fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(
            self.names.text.len()
                + 4 * self.names.len()
                + 8 * (self.edges.len() + self.loads.len() + 2),
        );
        put_count(out, self.names.len());
        for name in self.names.iter() {
            put_text(out, name);
        }
        for pairs in [&self.edges, &self.loads] {
            put_count(out, pairs.len());
            for &(a, b) in pairs {
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
            }
        }
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, FileError> {
        let count = input.count()?;
        let mut names = Names {
            text: String::new(),
            ends: Vec::with_capacity(count),
        };
        for _ in 0..count {
            names.push(input.text()?);
        }
        if !names.is_sorted() {
            return Err(FileError::Format("unsorted names"));
        }
        let mut numbered = || -> Result<Vec<(u32, u32)>, FileError> {
            let count = input.count()?;
            let bytes = input.take(count.saturating_mul(8))?;
            let number = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let pairs: Vec<(u32, u32)> = bytes
                .chunks_exact(8)
                .map(|pair| (number(&pair[..4]), number(&pair[4..])))
                .collect();
            let in_range = |n: u32| (n as usize) < names.len();
            if pairs.iter().all(|&(a, b)| in_range(a) && in_range(b)) {
                Ok(pairs)
            } else {
                Err(FileError::Format("a node number out of range"))
            }
        };
        let edges = numbered()?;
        let loads = numbered()?;
        Ok(Self {
            names,
            edges,
            loads,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIXES: &str = "@prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
                            @prefix ex: <http://example.org/> .\n";

    /// Two tags, a consumer calling a producer, and a would-be loader whose
    /// parameter has no default yet (the producer needs an amount).
    const CODE: &str = "ex:rates a kg:InputTag . ex:fee a kg:OutputTag .\n\
        ex:average kg:consumes ex:rates ; kg:calls ex:compute .\n\
        ex:compute kg:produces ex:fee ; kg:hasParameter ex:compute-amount .\n\
        ex:load kg:produces ex:rates ; kg:hasParameter ex:load-path .\n\
        ex:load-path kg:name \"path\" .\n";

    async fn write_turtle(store: &Store, dir: &std::path::Path, name: &str, triples: &str) {
        let turtle = format!("{PREFIXES}{triples}");
        kgfuse_lexicon::testing::load_turtle(store, dir, name, &turtle).await;
    }

    /// After each write, the graph the file held brought in step by the
    /// nodes the write changed is the graph read from the whole store: an
    /// edge added, a parameter given a default (only the parameter changes,
    /// and its function becomes a loader), a file replaced so that an edge and
    /// a node go. A second read of an unchanged store reads the file.
    #[tokio::test]
    async fn brought_in_step_by_the_written_nodes_as_read_from_the_whole_graph() {
        let (dir, store) = kgfuse_lexicon::testing::with_turtle(&format!("{PREFIXES}{CODE}")).await;
        let (first, origin) = kept(&store).expect("kept");
        assert_eq!(origin, Origin::Built);
        assert_eq!(first.loaders(), BTreeMap::new(), "`load` needs its path");
        assert_eq!(kept(&store).expect("kept"), (first, Origin::Read));
        let writes = [
            (
                "more.ttl",
                "ex:report kg:calls ex:average ; kg:produces ex:fee .",
            ),
            (
                "default.ttl",
                "ex:load-path kg:defaultValue \"rates.csv\" .",
            ),
            ("more.ttl", "ex:report kg:produces ex:fee ."),
        ];
        for (i, (file, triples)) in writes.iter().enumerate() {
            write_turtle(&store, dir.path(), file, triples).await;
            let (flow, origin) = kept(&store).expect("kept");
            assert_eq!(origin, Origin::Updated, "write {i}");
            assert_eq!(flow, build(&store).expect("whole graph"), "write {i}");
        }
        let (flow, _) = kept(&store).expect("kept");
        let rates = "http://example.org/rates";
        assert_eq!(
            flow.loaders().get(rates).map(Vec::as_slice),
            Some(["http://example.org/load".to_owned()].as_slice())
        );
        let report = flow.number("http://example.org/report").expect("report");
        let callers = flow.edges().iter().filter(|&&(from, _)| from == report);
        assert_eq!(
            callers.count(),
            1,
            "the call to `average` is gone, `fee` stays"
        );
        assert_eq!(flow.number("http://example.org/nothing"), None);
    }

    /// Replacing the edges between written nodes gives what numbering the
    /// resulting edges afresh gives: nodes no edge uses any more leave, new
    /// ones enter in order, a node both kept and added stays once.
    #[test]
    fn replaced_edges_are_numbered_as_new_ones_would_be() {
        let old = FlowEdges::new(
            &[("a", "c"), ("c", "e"), ("e", "g"), ("a", "g")],
            &[("a", "c")],
        );
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        // Written: `a`, `b`, `c`, `d`, `e`, `f`, `h` (and `z`, which nothing
        // links): edges between two of them are read again, `e -> g` and
        // `a -> g` stay as they were.
        let nodes: BTreeSet<String> = ["a", "b", "c", "d", "e", "f", "h", "z"]
            .map(str::to_owned)
            .into();
        let functions = BTreeSet::from(["a".to_owned()]);
        let edges = owned(&[("b", "d"), ("a", "f"), ("e", "h")]);
        let loads = owned(&[("a", "f")]);
        let replaced = old.replaced(&nodes, &edges, &functions, &loads);
        let expected = FlowEdges::new(
            &[("e", "g"), ("a", "g"), ("b", "d"), ("a", "f"), ("e", "h")],
            &[("a", "f")],
        );
        assert_eq!(replaced, expected);
        assert_eq!(replaced.number("c"), None, "no edge uses it");
        let nothing = BTreeSet::new();
        assert_eq!(old.replaced(&nothing, &[], &nothing, &[]), old);
    }

    /// `check` finds nothing wrong with a file in step, names what a file
    /// that lost an edge lacks, and says nothing of a file behind the store;
    /// `repair` writes it anew.
    #[tokio::test]
    async fn check_names_a_file_that_disagrees_with_the_graph_and_repair_mends_it() {
        let (dir, store) = kgfuse_lexicon::testing::with_turtle(&format!("{PREFIXES}{CODE}")).await;
        assert_eq!(check(&store).expect("check"), None, "no file yet");
        let (whole, _) = kept(&store).expect("kept");
        assert_eq!(
            check(&store).expect("check"),
            Some(FlowDifferences::default())
        );
        let version = store.content_version().expect("version").expect("local");
        let mut damaged = whole.clone();
        damaged.edges.pop();
        kept::write(&file(&store), version, &damaged).expect("write");
        let wrong = FlowDifferences {
            missing: 1,
            extra: 0,
        };
        assert_eq!(check(&store).expect("check"), Some(wrong));
        assert_eq!(repair(&store).expect("repair"), whole.edges.len());
        assert_eq!(
            check(&store).expect("check"),
            Some(FlowDifferences::default())
        );
        kept::write(&file(&store), version, &damaged).expect("write");
        write_turtle(
            &store,
            dir.path(),
            "more.ttl",
            "ex:report kg:calls ex:average .",
        )
        .await;
        assert_eq!(check(&store).expect("check"), None, "behind the store");
    }

    /// A file cut short, or of another format, is read again from the graph
    /// (and written anew).
    #[tokio::test]
    async fn a_damaged_file_is_read_again_from_the_graph() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(&format!("{PREFIXES}{CODE}")).await;
        let (whole, _) = kept(&store).expect("kept");
        let path = file(&store);
        let bytes = std::fs::read(&path).expect("the file");
        for damaged in [&bytes[..bytes.len() - 3], &bytes[1..]] {
            std::fs::write(&path, damaged).expect("damage");
            assert!(kept::read::<FlowEdges>(&path).is_err());
            assert_eq!(kept(&store).expect("kept"), (whole.clone(), Origin::Built));
            assert_eq!(kept(&store).expect("kept"), (whole.clone(), Origin::Read));
        }
    }
}
