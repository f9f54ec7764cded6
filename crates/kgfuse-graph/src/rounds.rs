//! Stages that read the graph in dependent rounds (a walk's hops, a second round
//! of facts about what the first round found), read together: every round sends
//! the next queries of every stage still reading, on a SPARQL server as one
//! request. A retrieval whose stages need three rounds each then pays three round
//! trips for all of them, not three per stage.

use crate::sparql::select_together;
use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A stage that reads the graph in rounds, each round's queries chosen from the
/// answers to the last.
pub trait Rounds {
    /// The queries of the next round, given the answers to this stage's last
    /// round in the order its queries were given (none at the first call). No
    /// queries: the stage is done and is not asked again. A stage may also read
    /// the graph itself here (an embedded graph costs nothing to read in turn).
    fn next_round(
        &mut self,
        graph: &Graph,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<spargebra::Query>, GraphError>;

    /// The longest this stage's queries may run; a request shared with other
    /// stages has the shortest limit among them.
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

impl Graph {
    /// Runs `stages` round by round until every one is done: each round's queries
    /// of all stages go together ([`Graph::select_many`]). Should a shared request
    /// fail or time out, each stage's queries are sent on their own, with that
    /// stage's own time limit.
    pub fn read_in_rounds(
        &self,
        stages: &mut [&mut dyn Rounds],
        options: &QueryOptions,
    ) -> Result<(), GraphError> {
        let mut pending = Vec::with_capacity(stages.len());
        for stage in stages.iter_mut() {
            pending.push(stage.next_round(self, Vec::new())?);
        }
        while pending.iter().any(|queries| !queries.is_empty()) {
            let answers = self.answer_round(stages, &pending, options);
            for ((stage, queries), answers) in stages.iter_mut().zip(&mut pending).zip(answers) {
                if !queries.is_empty() {
                    *queries = stage.next_round(self, answers)?;
                }
            }
        }
        Ok(())
    }

    /// The answers to one round, per stage.
    fn answer_round(
        &self,
        stages: &[&mut dyn Rounds],
        pending: &[Vec<spargebra::Query>],
        options: &QueryOptions,
    ) -> Vec<Vec<Result<QueryOutcome, GraphError>>> {
        let own_options = |stage: &dyn Rounds| {
            let mut own = options.clone();
            own.timeout = shortest(options.timeout, stage.timeout());
            own
        };
        let asking: Vec<(usize, &dyn Rounds)> = stages
            .iter()
            .enumerate()
            .filter(|(i, _)| !pending[*i].is_empty())
            .map(|(i, stage)| (i, &**stage))
            .collect();
        let all: Vec<spargebra::Query> = pending.iter().flatten().cloned().collect();
        if let Some(endpoint) = self.endpoint().filter(|_| all.len() > 1) {
            let mut shared = options.clone();
            for (_, stage) in &asking {
                shared.timeout = shortest(shared.timeout, stage.timeout());
            }
            let spent = self.spent.clone();
            match spent.measure(|| select_together(endpoint, &all, &shared)) {
                Ok(outcomes) => {
                    let mut outcomes = outcomes.into_iter().map(Ok);
                    return pending
                        .iter()
                        .map(|queries| outcomes.by_ref().take(queries.len()).collect())
                        .collect();
                }
                Err(error) => tracing::debug!(
                    "a round's shared request failed ({error}); each stage's queries go on their own"
                ),
            }
        }
        if self.endpoint().is_some() {
            let mut answers: Vec<Vec<Result<QueryOutcome, GraphError>>> =
                pending.iter().map(|_| Vec::new()).collect();
            for (i, stage) in asking {
                answers[i] = self.select_many(pending[i].clone(), &own_options(stage));
            }
            return answers;
        }
        // Embedded: every query of the round with its stage's time limit, side by
        // side on the machine's cores.
        let jobs: Vec<(spargebra::Query, QueryOptions)> = asking
            .iter()
            .flat_map(|&(i, stage)| {
                let own = own_options(stage);
                pending[i].iter().map(move |q| (q.clone(), own.clone()))
            })
            .collect();
        let mut outcomes = self.select_side_by_side(jobs).into_iter();
        pending
            .iter()
            .map(|queries| outcomes.by_ref().take(queries.len()).collect())
            .collect()
    }

    /// Runs each query with its options on an embedded store, on up to as many
    /// threads as the machine has cores (this one among them): the queries of a
    /// round do not depend on each other, and one retrieval's reads then use
    /// every core. Answers in the queries' order.
    fn select_side_by_side(
        &self,
        jobs: Vec<(spargebra::Query, QueryOptions)>,
    ) -> Vec<Result<QueryOutcome, GraphError>> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let threads = cores.min(jobs.len());
        if threads <= 1 {
            return jobs
                .into_iter()
                .map(|(query, options)| self.query_algebra(query, &[], &options))
                .collect();
        }
        let jobs: Vec<Mutex<Option<(spargebra::Query, QueryOptions)>>> =
            jobs.into_iter().map(|job| Mutex::new(Some(job))).collect();
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else {
                    return done;
                };
                let taken = job.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some((query, options)) = taken {
                    done.push((i, self.query_algebra(query, &[], &options)));
                }
            }
        };
        let mut answered: Vec<(usize, Result<QueryOutcome, GraphError>)> =
            std::thread::scope(|scope| {
                let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
                let mut all = work();
                for helper in helpers {
                    match helper.join() {
                        Ok(done) => all.extend(done),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                all
            });
        answered.sort_by_key(|(i, _)| *i);
        answered.into_iter().map(|(_, outcome)| outcome).collect()
    }
}

/// The shorter of two time limits, `None` being no limit.
fn shortest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::{GraphName, Literal, NamedNode, Quad};

    /// A stage that asks its queries in one round and keeps the answers.
    struct AskOnce {
        queries: Vec<spargebra::Query>,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    }

    impl Rounds for AskOnce {
        fn next_round(
            &mut self,
            _graph: &Graph,
            answers: Vec<Result<QueryOutcome, GraphError>>,
        ) -> Result<Vec<spargebra::Query>, GraphError> {
            if answers.is_empty() {
                Ok(std::mem::take(&mut self.queries))
            } else {
                self.answers = answers;
                Ok(Vec::new())
            }
        }
    }

    #[test]
    fn a_round_run_side_by_side_answers_each_stage_in_its_queries_order() {
        let graph = Graph::in_memory().expect("graph");
        let p = NamedNode::new_unchecked("urn:p");
        let quads: Vec<Quad> = (0..200)
            .map(|i| {
                Quad::new(
                    NamedNode::new_unchecked(format!("urn:s{}", i % 20)),
                    p.clone(),
                    Literal::from(i),
                    GraphName::DefaultGraph,
                )
            })
            .collect();
        graph
            .apply(&crate::backend::Changes {
                insert: quads,
                ..Default::default()
            })
            .expect("insert");
        let query = |text: &str| {
            spargebra::SparqlParser::new()
                .parse_query(text)
                .expect("query")
        };
        // Queries of very different cost, so threads finish out of order.
        let texts = |stage: usize| -> Vec<String> {
            (0..7)
                .map(|i| match (i + stage) % 3 {
                    0 => format!("SELECT ?o WHERE {{ <urn:s{i}> <urn:p> ?o }} ORDER BY ?o"),
                    1 => "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?x . ?b ?p ?y }".to_owned(),
                    _ => format!("SELECT ?s WHERE {{ ?s <urn:p> {} }}", i * 10 + stage),
                })
                .collect()
        };
        let mut stages: Vec<AskOnce> = (0..3)
            .map(|stage| AskOnce {
                queries: texts(stage).iter().map(|t| query(t)).collect(),
                answers: Vec::new(),
            })
            .collect();
        let mut asking: Vec<&mut dyn Rounds> =
            stages.iter_mut().map(|s| s as &mut dyn Rounds).collect();
        graph
            .read_in_rounds(&mut asking, &QueryOptions::default())
            .expect("rounds");
        for (stage, asked) in stages.iter().enumerate() {
            let alone: Vec<QueryOutcome> = texts(stage)
                .iter()
                .map(|t| {
                    graph
                        .query_algebra(query(t), &[], &QueryOptions::default())
                        .expect("alone")
                })
                .collect();
            let together: Vec<QueryOutcome> = asked
                .answers
                .iter()
                .map(|a| a.as_ref().expect("answer").clone())
                .collect();
            assert_eq!(together, alone, "stage {stage}");
        }
    }
}
