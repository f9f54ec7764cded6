//! `domain` (DomAgent): packages first, then functions, then the cases that show
//! them in use, with a refinement gate in between.
//!
//! 1. **Packages.** Offline, each package scores the highest of the question's
//!    cosine to its description, to its centroid (mean function vector, written by
//!    the case base) and to its best functions (the mean of its two best among the
//!    store's nearest functions: a package of many topics has a blurred centroid,
//!    and a short description may miss the question's words). Every package within
//!    `package_margin` of the best is chosen, at most `max_packages`. A real language model instead picks from the package
//!    descriptions ([`LanguageModel::classify`]).
//! 2. **Functions.** Ranked by cosine inside the chosen packages; the best few of
//!    the whole store join as candidates too, so look-alikes from other packages
//!    are visible in the trace when the gate drops them.
//! 3. **Gate.** Offline, a candidate is dropped when it is in a package that was not
//!    chosen, when its similarity is more than `gate_margin` below the best one, or
//!    when it has no structural tie (a call either way, the same module or class, a
//!    case exercising both) to a kept function. A real model judges the
//!    candidates of the chosen packages, all in one request
//!    ([`LanguageModel::judge_candidates`]). Every drop has its reason in the trace.
//!
//! With a real model the strategy makes two requests: the package pick and the gate.
//! 4. **Cases.** The case-base cases (selected for coverage at index time) that
//!    exercise the kept functions, the most exercised kept functions first.

pub mod case_base;
mod kmeans;
mod packages;

use crate::RetrieveError;
use crate::functions::{
    functions_in_packages, functions_info, functions_of_packages, iri_terms, packages_of_functions,
};
use kgfuse_core::context::{CaseInfo, Dropped, FusedContext, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_core::math::dot;
use kgfuse_core::vocab::kg;
use kgfuse_graph::EdgeIndex;
use kgfuse_graph::model::{Literal, NamedNode, Term};
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_lexicon::sparql::{OneRead, Solutions, values};
use kgfuse_llm::LanguageModel;
use kgfuse_store::{KindFilter, Question, Store, VectorHit, exact_score};
use packages::PackageInfo;
pub use packages::{check as check_packages, repair as repair_packages};
use std::collections::{BTreeMap, BTreeSet};

/// Knobs of the `domain` strategy.
#[derive(Debug, Clone, Copy)]
pub struct DomainOptions {
    /// Most packages chosen.
    pub max_packages: usize,
    /// Packages scoring within this cosine of the best are chosen too.
    pub package_margin: f32,
    /// The gate drops candidates scoring more than this cosine below the best.
    pub gate_margin: f32,
    /// Most cases returned.
    pub max_cases: usize,
}

impl Default for DomainOptions {
    fn default() -> Self {
        Self {
            max_packages: 3,
            package_margin: 0.05,
            gate_margin: 0.15,
            max_cases: 3,
        }
    }
}

/// A package with its question score.
#[derive(Debug, Clone)]
struct PackageScore {
    iri: String,
    name: String,
    description: Option<String>,
    score: f32,
    basis: &'static str,
}

/// Scores every package and chooses some; the second value is the trace stage.
async fn classify(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    query: &[f32],
    nearest: &[(String, Option<String>, f32)],
    options: DomainOptions,
) -> Result<(Vec<PackageScore>, TraceStage), RetrieveError> {
    let all = store
        .derived_async(|| async { packages::kept(store).await.map(|(packages, _)| packages) })
        .await?;
    let scored = score_packages(&all, query, nearest);
    let mut stage = TraceStage {
        stage: "packages".into(),
        ..TraceStage::default()
    };
    let chosen = if model.is_offline() {
        choose_by_margin(&scored, options, &mut stage)
    } else {
        choose_by_model(model, question, &scored, &mut stage)
    };
    if !all.values().any(|p| p.centroid.is_some()) {
        stage
            .kept
            .push("no package centroids: run `kgfuse index cases` to build the case base".into());
    }
    Ok((chosen, stage))
}

/// Every package scored by the best of three signals: its description's
/// similarity, its centroid's, and the mean of its two best functions among the
/// nearest ones; best first.
fn score_packages(
    all: &BTreeMap<String, PackageInfo>,
    query: &[f32],
    nearest: &[(String, Option<String>, f32)],
) -> Vec<PackageScore> {
    let mut best_functions: BTreeMap<&str, Vec<f32>> = BTreeMap::new();
    for (_, package, score) in nearest {
        if let Some(package) = package {
            let scores = best_functions.entry(package.as_str()).or_default();
            if scores.len() < 2 {
                scores.push(*score);
            }
        }
    }
    let mut scored: Vec<PackageScore> = all
        .iter()
        .map(|(iri, package)| {
            let by_description = package
                .vector
                .as_ref()
                .map_or(f32::MIN, |v| exact_score(query, v));
            let by_centroid = package
                .centroid
                .as_ref()
                .map_or(f32::MIN, |c| dot(query, c));
            #[allow(clippy::cast_precision_loss)]
            let by_functions = best_functions
                .get(iri.as_str())
                .map_or(f32::MIN, |s| s.iter().sum::<f32>() / s.len() as f32);
            let (score, basis) = [
                (by_description, "description"),
                (by_centroid, "centroid"),
                (by_functions, "best functions"),
            ]
            .into_iter()
            .fold((f32::MIN, "description"), |best, next| {
                if next.0 > best.0 { next } else { best }
            });
            PackageScore {
                iri: iri.clone(),
                name: package.name.clone(),
                description: package.description.clone(),
                score,
                basis,
            }
        })
        .filter(|p| p.score > f32::MIN)
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.iri.cmp(&b.iri)));
    scored
}

/// Offline: the packages within `package_margin` of the best, at most `max_packages`.
fn choose_by_margin(
    scored: &[PackageScore],
    options: DomainOptions,
    stage: &mut TraceStage,
) -> Vec<PackageScore> {
    let mut chosen = Vec::new();
    let best = scored.first().map_or(0.0, |p| p.score);
    for package in scored.iter().take(options.max_packages + 5) {
        let label = format!(
            "{} ({:.3} by {})",
            package.name, package.score, package.basis
        );
        if chosen.len() < options.max_packages && package.score >= best - options.package_margin {
            stage.kept.push(label);
            chosen.push(package.clone());
        } else {
            stage.dropped.push(Dropped {
                iri: package.iri.clone(),
                why: format!(
                    "{label}: outside the margin {:.2} of the best {best:.3}{}",
                    options.package_margin,
                    if chosen.len() >= options.max_packages {
                        " or beyond the package limit"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    chosen
}

/// With a real model: the package the model picks from the names and
/// descriptions; the best-scored one when it picks none or fails.
fn choose_by_model(
    model: &dyn LanguageModel,
    question: &str,
    scored: &[PackageScore],
    stage: &mut TraceStage,
) -> Vec<PackageScore> {
    let labels: Vec<String> = scored
        .iter()
        .map(|p| match &p.description {
            Some(d) => format!("{}: {d}", p.name),
            None => p.name.clone(),
        })
        .collect();
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    match model.classify(question, &refs) {
        Ok(Some(i)) if i < scored.len() => {
            stage
                .kept
                .push(format!("{} (picked by {})", scored[i].name, model.name()));
            vec![scored[i].clone()]
        }
        other => {
            // No usable pick: the similarity ranking's best package.
            let why = match other {
                Err(e) => format!("{} failed: {e}", model.name()),
                _ => format!("{} picked no package", model.name()),
            };
            let Some(best) = scored.first() else {
                return Vec::new();
            };
            stage
                .kept
                .push(format!("{} ({:.3}; {why})", best.name, best.score));
            vec![best.clone()]
        }
    }
}

/// How many of the store's nearest functions inform package choice.
const NEAREST_FUNCTIONS: usize = 50;

/// A candidate function with what the gate needs.
#[derive(Debug, Clone)]
struct Candidate {
    iri: String,
    package: Option<String>,
    text: String,
    score: f32,
}

/// Structural ties between candidates: (a, b) -> how they are tied. One query
/// reads each candidate's callees, callers, owners (module or class) and cases; the
/// pairs are matched here, which is linear in the links instead of a query over
/// every pair of candidates.
fn ties_query(candidates: &[Candidate]) -> Result<String, RetrieveError> {
    let iris: Vec<String> = candidates.iter().map(|c| c.iri.clone()).collect();
    Ok(format!(
        "SELECT ?a ?x ?link WHERE {{ {a} \
           {{ ?a <{calls}>|<{by_name}> ?x BIND(\"calls\" AS ?link) }} \
           UNION {{ ?x <{calls}>|<{by_name}> ?a BIND(\"is called by\" AS ?link) }} \
           UNION {{ ?x <{has_function}> ?a BIND(\"owner\" AS ?link) }} \
           UNION {{ ?x <{exercises}> ?a BIND(\"case\" AS ?link) }} }}",
        a = values("a", &iri_terms(&iris)?),
        calls = kg::CALLS,
        by_name = kg::CALLS_BY_NAME,
        has_function = kg::HAS_FUNCTION,
        exercises = kg::EXERCISES,
    ))
}

/// The answer [`ties_query`] gives, read from the graph's edge index instead of
/// the store: the same rows (`?a ?x ?link`), for the same query text.
fn ties_in(index: &EdgeIndex, candidates: &[Candidate], text: String) -> Solutions {
    let calls = [kg::CALLS, kg::CALLS_BY_NAME];
    let mut rows = Vec::new();
    let mut row = |a: &str, x: &str, link: &str| {
        rows.push(vec![
            Some(Term::NamedNode(NamedNode::new_unchecked(a))),
            Some(Term::NamedNode(NamedNode::new_unchecked(x))),
            Some(Term::Literal(Literal::new_simple_literal(link))),
        ]);
    };
    for a in candidates.iter().map(|c| c.iri.as_str()) {
        for (p, x) in index.outgoing(a) {
            if calls.contains(&p) {
                row(a, x, "calls");
            }
        }
        for (x, p) in index.incoming(a) {
            match p {
                p if calls.contains(&p) => row(a, x, "is called by"),
                kg::HAS_FUNCTION => row(a, x, "owner"),
                kg::EXERCISES => row(a, x, "case"),
                _ => {}
            }
        }
    }
    Solutions {
        text,
        variables: vec!["a".into(), "x".into(), "link".into()],
        rows,
    }
}

/// The pairs of candidates tied in the answer to [`ties_query`].
fn ties_from(
    solutions: &Solutions,
    candidates: &[Candidate],
    exclude: &BTreeSet<String>,
) -> BTreeMap<(String, String), String> {
    let iris: Vec<&str> = candidates.iter().map(|c| c.iri.as_str()).collect();
    let mut out = BTreeMap::new();
    // owner or case -> candidates linked to it
    let mut shared: BTreeMap<(String, &'static str), BTreeSet<String>> = BTreeMap::new();
    let at = |name: &str, row: &[Option<Term>]| {
        solutions.column(name).and_then(|i| cell_text(row.get(i)))
    };
    for row in &solutions.rows {
        let (Some(a), Some(x), Some(link)) = (at("a", row), at("x", row), at("link", row)) else {
            continue;
        };
        match link.as_str() {
            "calls" | "is called by" if x != a && iris.contains(&x.as_str()) => {
                out.entry((a, x)).or_insert(link);
            }
            "owner" => {
                shared
                    .entry((x, "same module or class"))
                    .or_default()
                    .insert(a);
            }
            "case" if !exclude.contains(&x) => {
                shared
                    .entry((x, "shares a case with"))
                    .or_default()
                    .insert(a);
            }
            _ => {}
        }
    }
    for ((_, tie), members) in shared {
        for a in &members {
            for b in members.iter().filter(|b| *b != a) {
                out.entry((a.clone(), b.clone()))
                    .or_insert_with(|| tie.to_owned());
            }
        }
    }
    out
}

/// Runs the strategy: the package choice and the chosen packages' functions
/// ([`shortlist`]), the gate, then the kept functions' descriptions and cases.
pub(crate) async fn retrieve(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    top_k: usize,
    options: DomainOptions,
    exclude: &BTreeSet<String>,
) -> Result<FusedContext, RetrieveError> {
    let shortlist = shortlist(store, model, question, top_k, options).await?;
    let ties = shortlist
        .read_ties(store, model, store.edge_index()?.as_deref())?
        .finish_alone(store)?;
    let (mut context, kept) = shortlist.gate(
        model,
        question.text(),
        top_k,
        options,
        exclude,
        ties.as_ref(),
    )?;
    if context.status.is_some() {
        return Ok(context);
    }
    let iris: Vec<&str> = kept.iter().map(|c| c.iri.as_str()).collect();
    for (candidate, mut info) in kept.iter().zip(functions_info(store, &iris)?) {
        info.score = candidate.score;
        context.functions.push(info);
    }

    let (cases, case_stage) = cases(store, &kept, options.max_cases, exclude)?;
    context.cases = cases;
    context.trace.push(case_stage);
    Ok(context)
}

/// The strategy's ranking before the gate: the chosen packages and their
/// functions. The gate's one graph read ([`Shortlist::ties_query`]) can then go
/// with other stages' reads (`unified` reads it with its own).
pub(crate) struct Shortlist {
    context: FusedContext,
    candidates: Vec<Candidate>,
}

impl Shortlist {
    /// The query the offline gate reads the candidates' structural ties with;
    /// none when no package was chosen or a model judges relevance instead.
    pub(crate) fn ties_query(
        &self,
        model: &dyn LanguageModel,
    ) -> Result<Option<String>, RetrieveError> {
        if self.context.status.is_some() || !model.is_offline() || self.candidates.is_empty() {
            return Ok(None);
        }
        ties_query(&self.candidates).map(Some)
    }

    /// How the gate's structural ties are read: from the edge index when there
    /// is one, otherwise by [`Shortlist::ties_query`] with the other reads.
    pub(crate) fn read_ties(
        &self,
        store: &Store,
        model: &dyn LanguageModel,
        index: Option<&EdgeIndex>,
    ) -> Result<OneRead, RetrieveError> {
        Ok(match (self.ties_query(model)?, index) {
            (Some(text), Some(index)) => OneRead::answered(ties_in(index, &self.candidates, text)),
            (text, _) => OneRead::new(store, text),
        })
    }

    /// The refinement gate, given the answer to [`Shortlist::ties_query`]: the
    /// kept functions, best first, and the context traced so far.
    fn gate(
        mut self,
        model: &dyn LanguageModel,
        question: &str,
        top_k: usize,
        options: DomainOptions,
        exclude: &BTreeSet<String>,
        ties: Option<&Solutions>,
    ) -> Result<(FusedContext, Vec<Candidate>), RetrieveError> {
        if self.context.status.is_some() {
            return Ok((self.context, Vec::new()));
        }
        let tie_map = ties.map_or_else(BTreeMap::new, |solutions| {
            ties_from(solutions, &self.candidates, exclude)
        });
        let (kept, gate_stage) = gate(model, question, &self.candidates, &tie_map, top_k, options)?;
        self.context.trace.push(gate_stage);
        Ok((self.context, kept))
    }

    /// The gate's kept functions, best first.
    pub(crate) fn ranked_functions(
        self,
        model: &dyn LanguageModel,
        question: &str,
        top_k: usize,
        options: DomainOptions,
        exclude: &BTreeSet<String>,
        ties: Option<&Solutions>,
    ) -> Result<Vec<String>, RetrieveError> {
        let (_, kept) = self.gate(model, question, top_k, options, exclude, ties)?;
        Ok(kept.into_iter().map(|c| c.iri).collect())
    }
}

/// The package choice and the chosen packages' functions ranked by cosine,
/// plus the store-wide best (status `no_packages` when none was chosen).
pub(crate) async fn shortlist(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    top_k: usize,
    options: DomainOptions,
) -> Result<Shortlist, RetrieveError> {
    let mut context = FusedContext::default();
    let query = store.vector_of(question)?;
    // The store's nearest functions: evidence for package choice, and candidates
    // the gate can show as look-alikes from other packages.
    let nearest = store
        .search(
            question,
            NEAREST_FUNCTIONS,
            KindFilter::OneOf(&["Function", "Method"]),
        )
        .await?;
    let nearest_iris: Vec<String> = nearest.iter().map(|h| h.iri.clone()).collect();
    let package_of_nearest = packages_of_functions(store, &nearest_iris)?;
    let evidence: Vec<(String, Option<String>, f32)> = nearest
        .iter()
        .map(|h| {
            (
                h.iri.clone(),
                package_of_nearest.get(&h.iri).cloned(),
                h.score,
            )
        })
        .collect();
    let (chosen, package_stage) =
        classify(store, model, question.text(), query, &evidence, options).await?;
    context.trace.push(package_stage);
    if chosen.is_empty() {
        context.status = Some("no_packages".into());
        return Ok(Shortlist {
            context,
            candidates: Vec::new(),
        });
    }

    // Functions of the chosen packages, ranked by cosine, plus the store-wide best.
    let chosen_iris: Vec<String> = chosen.iter().map(|p| p.iri.clone()).collect();
    let wanted = top_k * 3;
    let found = best_in_neighbourhood(store, question, &chosen_iris, &evidence, wanted).await?;
    let (mut hits, package_of) = match found {
        Some(found) => found,
        None => {
            let package_of = functions_of_packages(store, &chosen_iris)?;
            let inside: Vec<String> = package_of.keys().cloned().collect();
            let hits = store.nearest_among(question, &inside, wanted).await?;
            (hits, package_of)
        }
    };
    for hit in nearest.into_iter().take(top_k) {
        if !hits.iter().any(|h| h.iri == hit.iri) {
            hits.push(hit);
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.iri.cmp(&b.iri)));
    let candidates: Vec<Candidate> = hits
        .into_iter()
        .map(|hit| Candidate {
            package: package_of.get(&hit.iri).cloned(),
            iri: hit.iri,
            text: hit.text,
            score: hit.score,
        })
        .collect();
    context.trace.push(TraceStage {
        stage: "functions".into(),
        kept: candidates
            .iter()
            .map(|c| format!("{} ({:.3})", c.iri, c.score))
            .collect(),
        dropped: Vec::new(),
    });
    Ok(Shortlist {
        context,
        candidates,
    })
}

/// When at least one in this many of the store's nearest functions (a
/// quarter) is in the chosen packages, the packages' best are looked for among
/// the store's nearest (one wider search) rather than among all their
/// functions.
const NEIGHBOURHOOD_SHARE: usize = 4;

/// The chosen packages' `wanted` functions most similar to the question, with
/// the package of each (and of the `evidence` functions in them), found among
/// the store's nearest functions: when the packages hold at least a quarter of
/// the nearest already found (`evidence`: function, package, score), a
/// store-wide search for about twice the functions that share needs, kept when
/// in the packages, replaces listing every function of the packages and
/// searching among them (6.2 s for a package of 100,000 functions, release).
/// `None` when the share is lower or the wider search holds too few of them.
async fn best_in_neighbourhood(
    store: &Store,
    question: &Question,
    chosen: &[String],
    evidence: &[(String, Option<String>, f32)],
    wanted: usize,
) -> Result<Option<(Vec<VectorHit>, BTreeMap<String, String>)>, RetrieveError> {
    let inside = evidence
        .iter()
        .filter(|(_, package, _)| package.as_ref().is_some_and(|p| chosen.contains(p)))
        .count();
    if inside == 0 || inside * NEIGHBOURHOOD_SHARE < evidence.len() {
        return Ok(None);
    }
    let k = (wanted * evidence.len()).div_ceil(inside) * 2;
    let wider = store
        .search(question, k, KindFilter::OneOf(&["Function", "Method"]))
        .await?;
    let iris: Vec<String> = wider
        .iter()
        .map(|hit| hit.iri.clone())
        .chain(evidence.iter().map(|(iri, _, _)| iri.clone()))
        .collect();
    let package_of = functions_in_packages(store, &iris, chosen)?;
    let searched_all = wider.len() < k;
    let hits: Vec<VectorHit> = wider
        .into_iter()
        .filter(|hit| package_of.contains_key(&hit.iri))
        .take(wanted)
        .collect();
    if hits.len() < wanted && !searched_all {
        return Ok(None);
    }
    Ok(Some((hits, package_of)))
}

/// The refinement gate; returns the kept candidates (best first) and its trace.
/// A real model judges the candidates in the chosen packages, all in one
/// request; offline, a candidate is kept when it is the best one, or within
/// `gate_margin` of it and structurally tied (call, module or class, shared
/// case) to one already kept.
fn gate(
    model: &dyn LanguageModel,
    question: &str,
    candidates: &[Candidate],
    tie_map: &BTreeMap<(String, String), String>,
    top_k: usize,
    options: DomainOptions,
) -> Result<(Vec<Candidate>, TraceStage), RetrieveError> {
    let mut gate = Gate {
        stage: TraceStage {
            stage: "gate".into(),
            ..TraceStage::default()
        },
        kept: Vec::new(),
        reasons: BTreeMap::new(),
        untied: Vec::new(),
        tie_map,
    };
    let best = candidates
        .iter()
        .find(|c| c.package.is_some())
        .map_or(0.0, |c| c.score);
    let mut judged = if model.is_offline() {
        None
    } else {
        Some(judge(model, question, candidates).into_iter())
    };
    for candidate in candidates {
        if candidate.package.is_none() {
            gate.drop(
                candidate,
                format!(
                    "wrong package: not in a chosen package ({:.3})",
                    candidate.score
                ),
            );
        } else if let Some(judgements) = judged.as_mut() {
            match judgements.next() {
                Some(judgement) => gate.judged(model.name(), candidate, judgement),
                None => gate.keep(candidate, "kept: not judged".into()),
            }
        } else {
            gate.offline(candidate, best, options);
        }
    }
    gate.tie_the_rest();
    Ok(gate.finish(top_k))
}

/// A real model's judgement of every candidate in a chosen package, in
/// order, from one request; when the request fails, each says so.
fn judge(
    model: &dyn LanguageModel,
    question: &str,
    candidates: &[Candidate],
) -> Vec<Result<kgfuse_llm::Relevance, String>> {
    let items: Vec<&str> = candidates
        .iter()
        .filter(|c| c.package.is_some())
        .map(|c| c.text.as_str())
        .collect();
    match model.judge_candidates(question, &items) {
        Ok(judgements) => judgements.into_iter().map(Ok).collect(),
        Err(error) => items.iter().map(|_| Err(error.to_string())).collect(),
    }
}

/// The gate's state while it walks the candidates.
struct Gate<'c> {
    stage: TraceStage,
    kept: Vec<&'c Candidate>,
    /// Why each kept candidate was kept.
    reasons: BTreeMap<&'c str, String>,
    /// Within the margin, not (yet) tied to a kept one.
    untied: Vec<&'c Candidate>,
    /// (candidate, kept function) -> the tie between them.
    tie_map: &'c BTreeMap<(String, String), String>,
}

impl<'c> Gate<'c> {
    fn keep(&mut self, candidate: &'c Candidate, why: String) {
        self.reasons.insert(&candidate.iri, why);
        self.kept.push(candidate);
    }

    fn drop(&mut self, candidate: &Candidate, why: String) {
        self.stage.dropped.push(Dropped {
            iri: candidate.iri.clone(),
            why,
        });
    }

    /// The first structural tie of `candidate` to a kept function.
    fn tie(&self, candidate: &Candidate) -> Option<String> {
        self.kept.iter().find_map(|k| {
            self.tie_map
                .get(&(candidate.iri.clone(), k.iri.clone()))
                .map(|tie| format!("{tie} {}", local_name(&k.iri)))
        })
    }

    /// A real model's relevance judgement decides; a failed judgement keeps.
    fn judged(
        &mut self,
        model: &str,
        candidate: &'c Candidate,
        judgement: Result<kgfuse_llm::Relevance, String>,
    ) {
        match judgement {
            Ok(relevance) if relevance.relevant => self.keep(candidate, relevance.why),
            Ok(relevance) => self.drop(candidate, format!("{model}: {}", relevance.why)),
            Err(e) => self.keep(candidate, format!("kept: {model} failed: {e}")),
        }
    }

    /// Offline: the best candidate, then those within the margin that are tied
    /// to a kept one (the others wait in `untied`).
    fn offline(&mut self, candidate: &'c Candidate, best: f32, options: DomainOptions) {
        if self.kept.is_empty() {
            self.keep(candidate, "the best match in the chosen packages".into());
        } else if candidate.score < best - options.gate_margin {
            self.drop(
                candidate,
                format!(
                    "below the similarity margin: {:.3} < {best:.3} - {:.2}",
                    candidate.score, options.gate_margin
                ),
            );
        } else if let Some(tie) = self.tie(candidate) {
            self.keep(candidate, tie);
        } else {
            self.untied.push(candidate);
        }
    }

    /// A candidate may be tied only to one kept after it: repeat until nothing
    /// changes; the rest are dropped.
    fn tie_the_rest(&mut self) {
        loop {
            let before = self.untied.len();
            let mut still = Vec::new();
            for candidate in std::mem::take(&mut self.untied) {
                match self.tie(candidate) {
                    Some(tie) => self.keep(candidate, tie),
                    None => still.push(candidate),
                }
            }
            self.untied = still;
            if self.untied.len() == before {
                break;
            }
        }
        for candidate in std::mem::take(&mut self.untied) {
            self.drop(
                candidate,
                format!(
                    "no structural tie (call, module or class, shared case) to the kept functions ({:.3})",
                    candidate.score
                ),
            );
        }
    }

    /// The kept candidates, best first, cut at `top_k`, and the trace.
    fn finish(mut self, top_k: usize) -> (Vec<Candidate>, TraceStage) {
        self.kept
            .sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.iri.cmp(&b.iri)));
        for extra in self.kept.iter().skip(top_k) {
            self.stage.dropped.push(Dropped {
                iri: extra.iri.clone(),
                why: format!("beyond top-k {top_k} ({:.3})", extra.score),
            });
        }
        self.kept.truncate(top_k);
        self.stage.kept = self
            .kept
            .iter()
            .map(|c| {
                format!(
                    "{} ({:.3}; {})",
                    c.iri,
                    c.score,
                    self.reasons.get(c.iri.as_str()).map_or("", String::as_str)
                )
            })
            .collect();
        (self.kept.into_iter().cloned().collect(), self.stage)
    }
}

/// The case-base cases exercising the kept functions, most exercised first.
fn cases(
    store: &Store,
    kept: &[Candidate],
    max_cases: usize,
    exclude: &BTreeSet<String>,
) -> Result<(Vec<CaseInfo>, TraceStage), RetrieveError> {
    let mut stage = TraceStage {
        stage: "cases".into(),
        ..TraceStage::default()
    };
    if kept.is_empty() {
        return Ok((Vec::new(), stage));
    }
    let scored: Vec<(&str, f32)> = kept.iter().map(|c| (c.iri.as_str(), c.score)).collect();
    let found = case_base::exercising(store, &scored)?;
    let case_base_built = store.graph().has_instances(&[kg::CASE_BASE])?;
    let mut ranked: Vec<(f32, String)> = Vec::new();
    for case in found {
        if exclude.contains(&case.iri) {
            continue;
        }
        if case_base_built && !case.selected {
            stage.dropped.push(Dropped {
                iri: case.iri,
                why: "not selected for the case base (covers nothing a selected case does not)"
                    .into(),
            });
            continue;
        }
        ranked.push((case.weight, case.iri));
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (rank, (weight, case)) in ranked.into_iter().enumerate() {
        if rank >= max_cases {
            stage.dropped.push(Dropped {
                iri: case,
                why: format!("beyond the case limit {max_cases} (weight {weight:.3})"),
            });
            continue;
        }
        stage.kept.push(format!("{case} (weight {weight:.3})"));
        out.push(case);
    }
    let out = case_base::case_infos(store, &out)?;
    if !case_base_built {
        stage
            .kept
            .push("no case base: every case exercising a kept function was considered".into());
    }
    Ok((out, stage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::functions_by_package;
    use kgfuse_lexicon::sparql;
    use std::path::PathBuf;

    /// A package of 48 functions beside one of 4: where the chosen package
    /// holds most of the store's nearest functions, its best found among the
    /// store's nearest are its best found among all its functions, each with
    /// its package; the small package is searched among its own.
    #[tokio::test]
    async fn a_package_near_the_question_is_searched_among_the_nearest() {
        let words = ["parse", "frame", "signal", "decode", "filter", "merge"];
        let mut turtle = String::from(
            "@prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
             @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
             @prefix ex: <http://example.org/> .\n\
             ex:big a kg:Package . ex:small a kg:Package .\n",
        );
        for i in 0..52 {
            let package = if i < 48 { "big" } else { "small" };
            let (a, b) = (words[i % 6], words[(i / 6) % 6]);
            turtle.push_str(&format!(
                "ex:f{i} a kg:Function ; kg:inPackage ex:{package} ; \
                 rdfs:label \"{a}_{b}_{i}\" ; rdfs:comment \"Does {a} on a {b}.\" .\n"
            ));
        }
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(&turtle).await;
        let question = Question::new("How do I decode a frame?");
        let nearest = store
            .search(&question, 20, KindFilter::OneOf(&["Function", "Method"]))
            .await
            .expect("nearest");
        let iris: Vec<String> = nearest.iter().map(|h| h.iri.clone()).collect();
        let package_of = packages_of_functions(&store, &iris).expect("packages");
        let evidence: Vec<(String, Option<String>, f32)> = nearest
            .iter()
            .map(|h| (h.iri.clone(), package_of.get(&h.iri).cloned(), h.score))
            .collect();
        let iri = |name: &str| format!("http://example.org/{name}");
        let chosen = [iri("big")];
        let (hits, packages) = best_in_neighbourhood(&store, &question, &chosen, &evidence, 6)
            .await
            .expect("search")
            .expect("found among the nearest");
        let everything = functions_of_packages(&store, &chosen).expect("functions");
        let inside: Vec<String> = everything.keys().cloned().collect();
        let expected = store
            .nearest_among(&question, &inside, 6)
            .await
            .expect("among");
        let names =
            |hits: &[VectorHit]| -> Vec<String> { hits.iter().map(|h| h.iri.clone()).collect() };
        assert_eq!(names(&hits), names(&expected));
        assert!(
            hits.iter()
                .all(|h| packages.get(&h.iri) == Some(&iri("big")))
        );
        let small = [iri("small")];
        let found = best_in_neighbourhood(&store, &question, &small, &evidence, 6).await;
        assert!(found.expect("search").is_none());
    }

    /// The per-question membership queries read what the whole-store map holds,
    /// for a few functions and for a few packages.
    #[tokio::test]
    async fn memberships_read_per_question_agree_with_the_whole_store_map() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let (_dir, store) =
            kgfuse_lexicon::testing::with_files(&[root.join("fixtures/can-sdk/can-sdk.ttl")]).await;
        let by_package = functions_by_package(&store).expect("functions");
        assert!(by_package.len() >= 2, "{} packages", by_package.len());
        let packages: Vec<String> = by_package.keys().take(2).cloned().collect();
        let expected: BTreeMap<String, String> = packages
            .iter()
            .flat_map(|p| by_package[p].iter().map(move |f| (f.clone(), p.clone())))
            .collect();
        assert_eq!(
            functions_of_packages(&store, &packages).expect("of packages"),
            expected
        );
        let mut some: Vec<String> = expected.keys().step_by(3).cloned().collect();
        some.push(packages[0].clone());
        some.push("urn:kgfuse:test:not-a-node".into());
        let found = packages_of_functions(&store, &some).expect("of functions");
        assert_eq!(found.len(), some.len() - 2, "a package and an unknown IRI");
        assert!(found.iter().all(|(f, p)| expected[f] == *p));
    }

    #[tokio::test]
    async fn ties_read_from_the_edge_index_are_the_ties_the_query_reads() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let (_dir, store) =
            kgfuse_lexicon::testing::with_files(&[root.join("fixtures/can-sdk/can-sdk.ttl")]).await;
        let candidates: Vec<Candidate> = functions_by_package(&store)
            .expect("functions")
            .into_iter()
            .flat_map(|(package, functions)| {
                functions.into_iter().map(move |iri| Candidate {
                    iri,
                    package: Some(package.clone()),
                    text: String::new(),
                    score: 0.0,
                })
            })
            .collect();
        assert!(candidates.len() > 50, "{} functions", candidates.len());
        let text = ties_query(&candidates).expect("query");
        let queried = sparql::run(&store, text.clone()).expect("ties");
        let index = store
            .graph()
            .edge_index(usize::MAX)
            .expect("index")
            .expect("embedded");
        let indexed = ties_in(&index, &candidates, text);
        let none = BTreeSet::new();
        let from_query = ties_from(&queried, &candidates, &none);
        assert!(from_query.len() > 20, "{} ties", from_query.len());
        assert_eq!(from_query, ties_from(&indexed, &candidates, &none));
        let links = |s: &Solutions| s.rows.iter().filter(|r| r[2].is_some()).count();
        assert_eq!(links(&queried), links(&indexed), "every row of the query");
    }
}
