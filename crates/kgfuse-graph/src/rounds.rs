//! Stages that read the graph in dependent rounds (a walk's hops, a second round
//! of facts about what the first round found), read together: every round sends
//! the next queries of every stage still reading, on a SPARQL server as one
//! request. A retrieval whose stages need three rounds each then pays three round
//! trips for all of them, not three per stage.

use crate::sparql::select_together;
use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
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
        let mut answers: Vec<Vec<Result<QueryOutcome, GraphError>>> =
            pending.iter().map(|_| Vec::new()).collect();
        for (i, stage) in asking {
            answers[i] = self.select_many(pending[i].clone(), &own_options(stage));
        }
        answers
    }
}

/// The shorter of two time limits, `None` being no limit.
fn shortest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
