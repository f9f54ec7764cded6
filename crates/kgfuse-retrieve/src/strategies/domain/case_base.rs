//! The DomAgent case base, built at index time (`kgfuse index cases`).
//!
//! 1. The functions of each package are clustered by their vectors (spherical
//!    K-means, deterministic seeding, about sqrt(n/2) clusters, at most
//!    [`CaseBaseOptions::max_clusters`]). Each package also gets its centroid, which
//!    package classification compares questions with.
//! 2. Cases are selected greedily by coverage: the next case is the one that
//!    exercises functions of the most packages and clusters not covered yet (ties:
//!    the lower IRI); a case that covers nothing new is never added. Selection stops
//!    once both the package and the cluster coverage reach their thresholds (90% by
//!    default) or no case adds coverage.
//!
//! Everything is written into one named graph, [`CASE_BASE_GRAPH`], replaced as a
//! whole on every build, so the rest of the store is untouched.

use crate::RetrieveError;
use crate::functions::{functions_by_package, iri_terms};
use crate::strategies::domain::kmeans::{cluster_count, kmeans, unit_mean};
use kgfuse_core::progress::Progress;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::SourceGraph;
use kgfuse_graph::model::{Literal, NamedNode, Term, Triple};
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_lexicon::sparql::{self, Solutions};
use kgfuse_store::{KindFilter, Question, Store};
use std::collections::{BTreeMap, BTreeSet};

/// The named graph (and node) of the case base.
pub const CASE_BASE_GRAPH: &str = "https://w3id.org/kgfuse/case-base";

/// How the case base is built.
#[derive(Debug, Clone, Copy)]
pub struct CaseBaseOptions {
    /// Stop selecting once this share of packages is covered (and clusters too).
    pub package_coverage: f64,
    /// Stop selecting once this share of clusters is covered (and packages too).
    pub cluster_coverage: f64,
    /// Most clusters per package.
    pub max_clusters: usize,
}

impl Default for CaseBaseOptions {
    fn default() -> Self {
        Self {
            package_coverage: 0.9,
            cluster_coverage: 0.9,
            max_clusters: 8,
        }
    }
}

/// What a build found and selected.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CaseBaseReport {
    /// Packages with at least one function that has a vector.
    pub packages: usize,
    /// Functions clustered.
    pub functions: usize,
    /// Clusters over all packages.
    pub clusters: usize,
    /// Cases in the store.
    pub cases: usize,
    /// Cases selected.
    pub selected: usize,
    /// Share of packages the selected cases cover.
    pub package_coverage: f64,
    /// Share of clusters the selected cases cover.
    pub cluster_coverage: f64,
    /// Triples written.
    pub triples: usize,
}

fn named(iri: &str) -> Result<NamedNode, RetrieveError> {
    NamedNode::new(iri).map_err(|e| RetrieveError::Invalid(format!("<{iri}>: {e}")))
}

/// A package's cluster IRI: `<package IRI>#cluster-<n>`.
fn cluster_iri(package: &str, index: usize) -> String {
    let base = package.split('#').next().unwrap_or(package);
    format!("{base}#cluster-{index}")
}

/// Hex of the little-endian bytes of `vector`.
pub(crate) fn encode_vector(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    hex::encode(bytes)
}

/// The inverse of [`encode_vector`]; `None` when the text is not such a vector.
pub(crate) fn decode_vector(text: &str) -> Option<Vec<f32>> {
    let bytes = hex::decode(text).ok()?;
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// Greedy coverage-driven selection. `covers` maps each case to the packages and
/// clusters it exercises. Returns the selected cases in selection order.
pub(crate) fn select_cases(
    covers: &BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
    packages: usize,
    clusters: usize,
    options: CaseBaseOptions,
) -> (Vec<String>, BTreeSet<String>, BTreeSet<String>) {
    let mut selected = Vec::new();
    let mut seen_packages: BTreeSet<String> = BTreeSet::new();
    let mut seen_clusters: BTreeSet<String> = BTreeSet::new();
    #[allow(clippy::cast_precision_loss)]
    let share = |n: usize, of: usize| if of == 0 { 1.0 } else { n as f64 / of as f64 };
    loop {
        if share(seen_packages.len(), packages) >= options.package_coverage
            && share(seen_clusters.len(), clusters) >= options.cluster_coverage
        {
            break;
        }
        let best = covers
            .iter()
            .filter(|(case, _)| !selected.contains(*case))
            .map(|(case, (p, c))| {
                let gain =
                    p.difference(&seen_packages).count() + c.difference(&seen_clusters).count();
                (gain, case)
            })
            .filter(|(gain, _)| *gain > 0)
            // Most new coverage first; on ties the lower IRI (max_by keeps the last).
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)));
        let Some((_, case)) = best else {
            break;
        };
        let (p, c) = &covers[case];
        seen_packages.extend(p.iter().cloned());
        seen_clusters.extend(c.iter().cloned());
        selected.push(case.clone());
    }
    (selected, seen_packages, seen_clusters)
}

/// Function IRI -> its package; function IRI -> its stored vector.
type FunctionVectors = (BTreeMap<String, String>, BTreeMap<String, Vec<f32>>);
/// Case IRI -> the packages and the clusters of the functions it exercises.
type Coverage = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

/// Builds the case base and writes it into [`CASE_BASE_GRAPH`], replacing the
/// last one: DomAgent's stages, each below: the functions' vectors by package,
/// K-means clusters per package, each case's coverage, the greedy selection,
/// then one write, once the functions' vectors are let go (the write does not
/// need them, and its transaction is the build's peak).
pub async fn build(
    store: &Store,
    options: CaseBaseOptions,
    progress: &dyn Progress,
) -> Result<CaseBaseReport, RetrieveError> {
    let (triples, report) = case_base_triples(store, options, progress).await?;
    write_case_base(store, triples, progress).await?;
    Ok(report)
}

/// The case base as triples, with its report.
async fn case_base_triples(
    store: &Store,
    options: CaseBaseOptions,
    progress: &dyn Progress,
) -> Result<(Vec<Triple>, CaseBaseReport), RetrieveError> {
    let (package_of, vectors) = function_vectors(store, progress).await?;
    let mut by_package: BTreeMap<&str, Vec<(&str, &[f32])>> = BTreeMap::new();
    for (function, vector) in &vectors {
        if let Some(package) = package_of.get(function) {
            by_package
                .entry(package.as_str())
                .or_default()
                .push((function.as_str(), vector.as_slice()));
        }
    }
    let mut triples: Vec<Triple> = Vec::new();
    let cluster_of = cluster_packages(&by_package, options, progress, &mut triples)?;
    let clusters = cluster_of.values().collect::<BTreeSet<_>>().len();
    let covers = coverage(store, &package_of, &cluster_of)?;
    let (selected, covered_packages, covered_clusters) =
        select_cases(&covers, by_package.len(), clusters, options);
    selection_triples(&selected, &covers, &mut triples)?;
    #[allow(clippy::cast_precision_loss)]
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let report = CaseBaseReport {
        packages: by_package.len(),
        functions: vectors.len(),
        clusters,
        cases: covers.len(),
        selected: selected.len(),
        package_coverage: share(covered_packages.len(), by_package.len()),
        cluster_coverage: share(covered_clusters.len(), clusters),
        triples: 0,
    };
    summary_triples(&report, &mut triples)?;
    let report = CaseBaseReport {
        triples: triples.len(),
        ..report
    };
    Ok((triples, report))
}

/// Every function's package and stored vector.
async fn function_vectors(
    store: &Store,
    progress: &dyn Progress,
) -> Result<FunctionVectors, RetrieveError> {
    let mut package_of: BTreeMap<String, String> = BTreeMap::new();
    for (package, functions) in functions_by_package(store)? {
        for function in functions {
            package_of
                .entry(function)
                .or_insert_with(|| package.clone());
        }
    }
    let iris: Vec<String> = package_of.keys().cloned().collect();
    progress.start("reading function vectors", Some(iris.len() as u64));
    let vectors: BTreeMap<String, Vec<f32>> = store.vectors_of(&iris).await?.into_iter().collect();
    progress.finish();
    Ok((package_of, vectors))
}

/// K-means clusters of each package's functions: each package's centroid, its
/// clusters and every function's cluster as triples. Returns function -> cluster.
fn cluster_packages<'a>(
    by_package: &BTreeMap<&'a str, Vec<(&'a str, &[f32])>>,
    options: CaseBaseOptions,
    progress: &dyn Progress,
    triples: &mut Vec<Triple>,
) -> Result<BTreeMap<&'a str, String>, RetrieveError> {
    let mut cluster_of: BTreeMap<&str, String> = BTreeMap::new();
    progress.start("clustering packages", Some(by_package.len() as u64));
    for (package, members) in by_package {
        let points: Vec<&[f32]> = members.iter().map(|(_, v)| *v).collect();
        let assignment = kmeans(&points, cluster_count(points.len(), options.max_clusters));
        let package_node = named(package)?;
        if let Some(centroid) = unit_mean(points.iter().copied()) {
            triples.push(Triple::new(
                package_node.clone(),
                named(kg::CENTROID)?,
                Literal::new_simple_literal(encode_vector(&centroid)),
            ));
        }
        let used: BTreeSet<usize> = assignment.iter().copied().collect();
        for index in &used {
            let cluster = named(&cluster_iri(package, *index))?;
            triples.push(Triple::new(
                cluster.clone(),
                named(w3c::RDF_TYPE)?,
                named(kg::FUNCTION_CLUSTER)?,
            ));
            triples.push(Triple::new(
                cluster,
                named(kg::IN_PACKAGE)?,
                package_node.clone(),
            ));
        }
        for ((function, _), index) in members.iter().zip(&assignment) {
            let cluster = cluster_iri(package, *index);
            triples.push(Triple::new(
                named(function)?,
                named(kg::IN_CLUSTER)?,
                named(&cluster)?,
            ));
            cluster_of.insert(function, cluster);
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(cluster_of)
}

/// The packages and clusters each case exercises.
fn coverage(
    store: &Store,
    package_of: &BTreeMap<String, String>,
    cluster_of: &BTreeMap<&str, String>,
) -> Result<Coverage, RetrieveError> {
    let exercised = sparql::run(
        store,
        format!(
            "SELECT ?case ?function WHERE {{ ?case a <{case}> ; <{exercises}> ?function }}",
            case = kg::CASE,
            exercises = kg::EXERCISES,
        ),
    )?;
    let mut covers = Coverage::new();
    for row in &exercised.rows {
        let (Some(case), Some(function)) = (cell_text(row.first()), cell_text(row.get(1))) else {
            continue;
        };
        let entry = covers.entry(case).or_default();
        if let (Some(package), Some(cluster)) =
            (package_of.get(&function), cluster_of.get(function.as_str()))
        {
            entry.0.insert(package.clone());
            entry.1.insert(cluster.clone());
        }
    }
    Ok(covers)
}

/// The selected cases and the clusters each covers, as triples.
fn selection_triples(
    selected: &[String],
    covers: &Coverage,
    triples: &mut Vec<Triple>,
) -> Result<(), RetrieveError> {
    let case_base = named(CASE_BASE_GRAPH)?;
    for case in selected {
        let case_node = named(case)?;
        triples.push(Triple::new(
            case_base.clone(),
            named(kg::SELECTED_CASE)?,
            case_node.clone(),
        ));
        for cluster in &covers[case].1 {
            triples.push(Triple::new(
                case_node.clone(),
                named(kg::COVERS_CLUSTER)?,
                named(cluster)?,
            ));
        }
    }
    Ok(())
}

/// The case base node: its type and its two coverages.
fn summary_triples(
    report: &CaseBaseReport,
    triples: &mut Vec<Triple>,
) -> Result<(), RetrieveError> {
    let case_base = named(CASE_BASE_GRAPH)?;
    triples.push(Triple::new(
        case_base.clone(),
        named(w3c::RDF_TYPE)?,
        named(kg::CASE_BASE)?,
    ));
    for (predicate, value) in [
        (kg::PACKAGE_COVERAGE, report.package_coverage),
        (kg::CLUSTER_COVERAGE, report.cluster_coverage),
    ] {
        triples.push(Triple::new(
            case_base.clone(),
            named(predicate)?,
            Literal::from(value),
        ));
    }
    Ok(())
}

/// Writes the case base as one source graph, replacing the last one.
async fn write_case_base(
    store: &Store,
    triples: Vec<Triple>,
    progress: &dyn Progress,
) -> Result<(), RetrieveError> {
    let text: String = triples.iter().map(|t| format!("{t}\n")).collect();
    let hash = kgfuse_core::content_hash(&text);
    store
        .write_sources(
            &[SourceGraph {
                graph: named(CASE_BASE_GRAPH)?,
                path: "kgfuse index cases".into(),
                content_hash: hash.clone(),
                extraction_hash: hash,
                extractor: "case-base".into(),
                triples,
            }],
            &[],
            progress,
        )
        .await?;
    Ok(())
}

/// The worked examples nearest to `query`, for an agent that asks for examples on
/// demand (DomAgent's `search_case_base` tool): among the cases the case base
/// selected when one is built, else among all cases. Each comes with its code and
/// the functions it exercises.
pub async fn search(
    store: &Store,
    query: &str,
    k: usize,
) -> Result<
    (
        Vec<kgfuse_core::context::CaseInfo>,
        kgfuse_core::context::TraceStage,
    ),
    RetrieveError,
> {
    if query.trim().is_empty() {
        return Err(RetrieveError::Invalid("the query is empty".into()));
    }
    let selected: Vec<String> = sparql::run(
        store,
        format!(
            "SELECT ?case WHERE {{ <{CASE_BASE_GRAPH}> <{}> ?case }}",
            kg::SELECTED_CASE
        ),
    )?
    .rows
    .iter()
    .filter_map(|row| cell_text(row.first()))
    .collect();
    let query = Question::new(query);
    let (hits, among) = if selected.is_empty() {
        let hits = store
            .search(&query, k, KindFilter::OneOf(&["Case"]))
            .await?;
        (hits, "no case base: all cases")
    } else {
        (
            store.search_among(&query, &selected).await?,
            "the case base's selected cases",
        )
    };
    let mut stage = kgfuse_core::context::TraceStage {
        stage: "case search".into(),
        kept: vec![format!("nearest among {among}")],
        dropped: Vec::new(),
    };
    let mut iris = Vec::new();
    for hit in hits.into_iter().take(k) {
        stage.kept.push(format!("{} ({:.3})", hit.iri, hit.score));
        iris.push(hit.iri);
    }
    Ok((case_infos(store, &iris)?, stage))
}

/// A case that exercises some of the functions asked about ([`exercising`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Exercising {
    /// The case.
    pub iri: String,
    /// The sum of the scores of the asked functions it exercises, each once.
    pub weight: f32,
    /// The length of its code in characters (`usize::MAX` when it has none).
    pub length: usize,
    /// Whether the case base selected it.
    pub selected: bool,
}

/// Every case that exercises any of `functions` (IRI and score), in IRI order:
/// how much of them it exercises, how long its code is, whether the case base
/// holds it. Read with one query; the `domain` strategy and `unified`'s cases
/// stage rank from here.
pub(crate) fn exercising(
    store: &Store,
    functions: &[(&str, f32)],
) -> Result<Vec<Exercising>, RetrieveError> {
    if functions.is_empty() {
        return Ok(Vec::new());
    }
    let iris: Vec<&str> = functions.iter().map(|(iri, _)| *iri).collect();
    let text = format!(
        "SELECT ?case ?function (STRLEN(?code) AS ?length) ?selected WHERE {{ {functions} \
           ?case <{exercises}> ?function . OPTIONAL {{ ?case <{code}> ?code }} \
           OPTIONAL {{ <{base}> <{selected_case}> ?case BIND(true AS ?selected) }} }}",
        functions = sparql::values("function", &iri_terms(&iris)?),
        exercises = kg::EXERCISES,
        code = kg::CODE,
        base = CASE_BASE_GRAPH,
        selected_case = kg::SELECTED_CASE,
    );
    let solutions = sparql::run(store, text)?;
    let score_of: BTreeMap<&str, f32> = functions.iter().copied().collect();
    // case -> (exercised functions, shortest code, selected)
    let mut found: BTreeMap<String, (BTreeSet<String>, usize, bool)> = BTreeMap::new();
    for row in &solutions.rows {
        let Some(case) = cell_text(row.first()) else {
            continue;
        };
        let entry = found
            .entry(case)
            .or_insert_with(|| (BTreeSet::new(), usize::MAX, false));
        if let Some(function) = cell_text(row.get(1)) {
            entry.0.insert(function);
        }
        if let Some(length) = cell_text(row.get(2)).and_then(|l| l.parse().ok()) {
            entry.1 = entry.1.min(length);
        }
        entry.2 |= row.get(3).is_some_and(Option::is_some);
    }
    Ok(found
        .into_iter()
        .map(|(iri, (exercised, length, selected))| Exercising {
            iri,
            weight: exercised
                .iter()
                .filter_map(|f| score_of.get(f.as_str()))
                .sum(),
            length,
            selected,
        })
        .collect())
}

/// Case nodes with their titles, code and the functions each exercises (sorted),
/// in the order given; read together (one round trip to a remote graph).
pub(crate) fn case_infos(
    store: &Store,
    iris: &[String],
) -> Result<Vec<kgfuse_core::context::CaseInfo>, RetrieveError> {
    if iris.is_empty() {
        return Ok(Vec::new());
    }
    let cases = iris
        .iter()
        .map(|iri| named(iri).map(Term::NamedNode))
        .collect::<Result<Vec<_>, _>>()?;
    let details = sparql::with_values(
        &format!(
            "OPTIONAL {{ ?case <{}> ?title }} OPTIONAL {{ ?case <{}> ?code }}",
            w3c::RDFS_LABEL,
            kg::CODE
        ),
        "case",
        &cases,
        DETAIL_ROWS_PER_CASE * cases.len(),
    );
    let exercises = sparql::with_values(
        &format!("?case <{}> ?function .", kg::EXERCISES),
        "case",
        &cases,
        FUNCTIONS_PER_CASE * cases.len(),
    );
    let [details, exercises]: [Solutions; 2] = sparql::run_all(store, vec![details, exercises])?
        .try_into()
        .map_err(|_| RetrieveError::Invalid("two outcomes expected".into()))?;
    let cell = |solutions: &Solutions, row: &[Option<Term>], name: &str| {
        solutions.column(name).and_then(|i| cell_text(row.get(i)))
    };
    // The first title and code read, and the exercised functions.
    type Read = (Option<String>, Option<String>, Vec<String>);
    let mut found: BTreeMap<String, Read> = BTreeMap::new();
    for row in &details.rows {
        if let Some(case) = cell(&details, row, "case") {
            let (title, code, _) = found.entry(case).or_default();
            title.get_or_insert_with(|| cell(&details, row, "title").unwrap_or_default());
            if code.is_none() {
                *code = cell(&details, row, "code");
            }
        }
    }
    for row in &exercises.rows {
        if let (Some(case), Some(function)) = (
            cell(&exercises, row, "case"),
            cell(&exercises, row, "function"),
        ) {
            found.entry(case).or_default().2.push(function);
        }
    }
    Ok(iris
        .iter()
        .map(|iri| {
            let (title, code, mut exercises) = found.remove(iri).unwrap_or_default();
            exercises.sort();
            kgfuse_core::context::CaseInfo {
                iri: iri.clone(),
                title: title
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| kgfuse_core::iri::local_name(iri).to_owned()),
                code,
                exercises,
            }
        })
        .collect())
}

/// Most title/code rows read per case (a case has one of each; a few spare).
const DETAIL_ROWS_PER_CASE: usize = 4;
/// Most exercised functions read per case.
const FUNCTIONS_PER_CASE: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(
        entries: &[(&str, &[&str], &[&str])],
    ) -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
        entries
            .iter()
            .map(|(case, p, c)| {
                (
                    (*case).to_owned(),
                    (
                        p.iter().map(|s| (*s).to_owned()).collect(),
                        c.iter().map(|s| (*s).to_owned()).collect(),
                    ),
                )
            })
            .collect()
    }

    /// A case's weight counts each asked function it exercises once; its length
    /// is its code's; a case with no code sorts as the longest.
    #[tokio::test]
    async fn exercising_weighs_each_asked_function_once() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(
            "@prefix ex: <urn:ex:> .\n\
             @prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
             ex:both kg:code \"f(g(x))\" ; kg:exercises ex:f, ex:g, ex:other .\n\
             ex:bare kg:exercises ex:g .\n\
             ex:unrelated kg:code \"h()\" ; kg:exercises ex:h .\n",
        )
        .await;
        let found =
            exercising(&store, &[("urn:ex:f", 0.5), ("urn:ex:g", 0.25)]).expect("exercising");
        let summary: Vec<(&str, f32, usize, bool)> = found
            .iter()
            .map(|c| (c.iri.as_str(), c.weight, c.length, c.selected))
            .collect();
        assert_eq!(
            summary,
            [
                ("urn:ex:bare", 0.25, usize::MAX, false),
                ("urn:ex:both", 0.75, 7, false)
            ]
        );
    }

    #[test]
    fn selection_adds_only_cases_with_new_coverage_and_stops_at_the_thresholds() {
        let covers = covers(&[
            ("case:a", &["p1"], &["p1#0"]),
            ("case:b", &["p1", "p2"], &["p1#0", "p2#0"]),
            ("case:c", &["p1"], &["p1#0"]),
            ("case:d", &["p3"], &["p3#0", "p3#1"]),
        ]);
        let all = CaseBaseOptions::default();
        let (selected, packages, clusters) = select_cases(&covers, 3, 4, all);
        assert_eq!(selected, ["case:b", "case:d"]);
        assert_eq!(packages.len(), 3);
        assert_eq!(clusters.len(), 4);
        let half = CaseBaseOptions {
            package_coverage: 0.5,
            cluster_coverage: 0.5,
            ..all
        };
        let (selected, _, _) = select_cases(&covers, 3, 4, half);
        assert_eq!(selected, ["case:b"]);
    }

    #[test]
    fn vectors_round_trip_through_hex() {
        let v = vec![0.25_f32, -1.0, 3.5e-3];
        assert_eq!(decode_vector(&encode_vector(&v)), Some(v));
        assert_eq!(decode_vector("abc"), None);
    }
}
