//! SPARQL queries and updates with prefixes, union default graph and timeouts.

use crate::backend::Backend;
use crate::outcome::QueryOutcome;
use crate::{Graph, GraphError};
use kgfuse_remote::{Endpoint, Form};
use oxigraph::model::{Term, Variable};
use oxigraph::sparql::{CancellationToken, QueryEvaluationError, QueryResults, SparqlEvaluator};
use spargebra::SparqlParser;
use spargebra::algebra::{Expression, GraphPattern};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How to run a query.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// Cancel the query after this long.
    pub timeout: Option<Duration>,
    /// Match the default graph against the union of all graphs when the query
    /// names no dataset (kgfuse keeps one named graph per source).
    pub union_default_graph: bool,
    /// Prefixes usable without a `PREFIX` declaration (declarations in the query win).
    pub prefixes: Vec<(String, String)>,
    /// The base IRI relative IRIs resolve against when the query declares no `BASE`
    /// (the CLI gives a query read from a file that file's `file://` IRI, so
    /// `FROM <data.ttl>` names the file beside it). Without one, a relative IRI is
    /// a syntax error.
    pub base_iri: Option<String>,
    /// For queries from outside (the SPARQL endpoint, MCP): run on a thread of the
    /// query's own, lowered to the lowest CPU priority once it has run this long
    /// (Linux), so a long query cannot take the CPU from short ones. See
    /// [`DEMOTE_AFTER`].
    pub demote_after: Option<Duration>,
}

/// How long an outside query runs at normal priority before its thread is
/// lowered to nice 19: short queries (milliseconds) never are.
pub const DEMOTE_AFTER: Duration = Duration::from_millis(250);

impl Default for QueryOptions {
    fn default() -> Self {
        Self {
            demote_after: None,
            base_iri: None,
            timeout: Some(Duration::from_secs(60)),
            union_default_graph: true,
            prefixes: kgfuse_core::vocab::WELL_KNOWN_PREFIXES
                .iter()
                .map(|(p, i)| ((*p).to_owned(), (*i).to_owned()))
                .collect(),
        }
    }
}

/// What the watchdog does when a query's time comes.
enum Action {
    /// The deadline passed: cancel the query.
    Cancel(CancellationToken),
    /// The query has run [`QueryOptions::demote_after`]: lower its thread's priority.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Demote(ThreadId),
}

/// A thread as the kernel knows it (the target of `setpriority`).
#[cfg(target_os = "linux")]
type ThreadId = rustix::process::Pid;
#[cfg(not(target_os = "linux"))]
type ThreadId = ();

/// The calling thread's id, where threads can be demoted.
#[cfg(target_os = "linux")]
fn current_thread() -> Option<ThreadId> {
    Some(rustix::thread::gettid())
}
#[cfg(not(target_os = "linux"))]
fn current_thread() -> Option<ThreadId> {
    None
}

/// Lowers a thread to the lowest priority (nice 19); a thread never gets it back,
/// which is why demoted queries run on threads of their own.
#[cfg(target_os = "linux")]
fn demote(thread: ThreadId) {
    if let Err(e) = rustix::process::setpriority_process(Some(thread), 19) {
        tracing::debug!("cannot lower the priority of a long query: {e}");
    }
}
#[cfg(not(target_os = "linux"))]
fn demote(_: ThreadId) {}

/// One background thread that cancels queries whose deadline has passed and
/// lowers the priority of outside queries that run long.
///
/// Spawning a timer thread per query cost a measurable fraction of a millisecond
/// on short queries (see BENCHMARKS.md); the watchdog is started once and sleeps
/// until the earliest deadline. A query wakes it only when its deadline comes
/// before the time the watchdog already sleeps until: once the queries it
/// watched are done, it keeps sleeping until the last deadline it knew rather
/// than for good, so the next queries of a busy process (whose deadlines come
/// later) need not wake it. Waking it for every query cost 13-29 µs a query,
/// about as much as a small query itself (BENCHMARKS.md, "the query watchdog").
struct Watchdog {
    state: Mutex<WatchdogState>,
    next_id: AtomicU64,
    wake: Condvar,
}

/// What the watchdog has to do, and until when it sleeps.
#[derive(Default)]
struct WatchdogState {
    pending: BTreeMap<(Instant, u64), Action>,
    /// When the watchdog wakes by itself; `None`: only when woken.
    sleeps_until: Option<Instant>,
}

static WATCHDOG: LazyLock<Option<&'static Watchdog>> = LazyLock::new(|| {
    let watchdog: &'static Watchdog = Box::leak(Box::new(Watchdog {
        state: Mutex::new(WatchdogState::default()),
        next_id: AtomicU64::new(0),
        wake: Condvar::new(),
    }));
    match std::thread::Builder::new()
        .name("kgfuse-query-watchdog".into())
        .spawn(move || watchdog.run())
    {
        Ok(_) => Some(watchdog),
        Err(e) => {
            tracing::warn!("cannot start the query watchdog, timeouts are off: {e}");
            None
        }
    }
});

impl Watchdog {
    fn run(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            while let Some(entry) = state.pending.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                match entry.remove() {
                    Action::Cancel(token) => token.cancel(),
                    Action::Demote(thread) => demote(thread),
                }
            }
            // The earliest deadline; with none left, the time already slept
            // towards, so that queries started meanwhile need not wake this.
            let next = match state.pending.keys().next() {
                Some((deadline, _)) => Some(*deadline),
                None => state.sleeps_until.filter(|at| *at > now),
            };
            state.sleeps_until = next;
            state = match next {
                Some(at) => {
                    self.wake
                        .wait_timeout(state, at.saturating_duration_since(now))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    /// Registers an action at `at`; returns its key.
    fn schedule(&self, at: Instant, action: Action) -> (Instant, u64) {
        let key = (at, self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.pending.insert(key, action);
        if state.sleeps_until.is_none_or(|until| at < until) {
            state.sleeps_until = Some(at);
            self.wake.notify_one();
        }
        key
    }

    /// Unregisters the actions of `keys` (their query is done).
    fn cancel(&self, keys: &[(Instant, u64)]) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            state.pending.remove(key);
        }
    }
}

/// A query's registered deadline and demotion; dropping it (query done)
/// unregisters both.
struct Deadline {
    keys: Vec<(Instant, u64)>,
}

impl Deadline {
    fn arm(options: &QueryOptions, token: &CancellationToken) -> Self {
        let mut keys = Vec::new();
        let Some(watchdog) = *WATCHDOG else {
            return Self { keys };
        };
        let now = Instant::now();
        if let Some(timeout) = options.timeout {
            keys.push(watchdog.schedule(now + timeout, Action::Cancel(token.clone())));
        }
        if let (Some(after), Some(thread)) = (options.demote_after, current_thread()) {
            keys.push(watchdog.schedule(now + after, Action::Demote(thread)));
        }
        Self { keys }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(watchdog) = *WATCHDOG
            && !self.keys.is_empty()
        {
            watchdog.cancel(&self.keys);
        }
    }
}

/// The evaluator of every query and update kgfuse runs on its own store: Oxigraph's,
/// with XSD's derived integer casts (`xsd:int(?x)`, …) as custom functions
/// (see [`crate::casts`]). The parser needs no word of them: a call to any IRI
/// parses, and only evaluation looks the function up.
pub(crate) fn evaluator() -> SparqlEvaluator {
    crate::casts::with_derived_casts(SparqlEvaluator::new())
}

pub(crate) fn parser(options: &QueryOptions) -> Result<SparqlParser, GraphError> {
    let mut parser = SparqlParser::new();
    if let Some(base) = &options.base_iri {
        parser = parser
            .with_base_iri(base)
            .map_err(|e| GraphError::Usage(format!("base IRI <{base}>: {e}")))?;
    }
    for (prefix, iri) in &options.prefixes {
        parser = parser
            .with_prefix(prefix, iri)
            .map_err(|e| GraphError::Usage(format!("prefix {prefix}: {e}")))?;
    }
    Ok(parser)
}

/// What a federated query is told: kgfuse evaluates SPARQL over its own store only.
const NO_SERVICE: &str = "SERVICE (federated query): kgfuse answers from its own store only";

fn evaluation_error(e: QueryEvaluationError, timeout: Option<Duration>) -> GraphError {
    match e {
        QueryEvaluationError::Cancelled => GraphError::Timeout(timeout.unwrap_or_default()),
        QueryEvaluationError::UnsupportedService(name) => {
            GraphError::Unsupported(format!("{NO_SERVICE} ({name} was not contacted)"))
        }
        QueryEvaluationError::UnboundService | QueryEvaluationError::InvalidServiceName(_) => {
            GraphError::Unsupported(NO_SERVICE.to_owned())
        }
        QueryEvaluationError::UnsupportedCustomFunction(name) => {
            GraphError::Unsupported(format!("the function {name}"))
        }
        other => GraphError::Evaluation(other.to_string()),
    }
}

fn update_error(
    e: oxigraph::sparql::UpdateEvaluationError,
    timeout: Option<Duration>,
) -> GraphError {
    use oxigraph::sparql::UpdateEvaluationError as U;
    match e {
        U::Unexpected(inner)
            if inner
                .downcast_ref::<QueryEvaluationError>()
                .is_some_and(|e| matches!(e, QueryEvaluationError::Cancelled)) =>
        {
            GraphError::Timeout(timeout.unwrap_or_default())
        }
        U::UnsupportedService(name) => {
            GraphError::Unsupported(format!("{NO_SERVICE} ({name} was not contacted)"))
        }
        U::UnboundService | U::InvalidServiceName(_) => {
            GraphError::Unsupported(NO_SERVICE.to_owned())
        }
        U::GraphAlreadyExists(name) => GraphError::Usage(format!(
            "the graph {name} already exists (use CREATE SILENT)"
        )),
        U::GraphDoesNotExist(name) => {
            GraphError::Usage(format!("the graph {name} does not exist (use SILENT)"))
        }
        other => GraphError::Evaluation(other.to_string()),
    }
}

/// Parses a query with the given prefixes, reporting the position of syntax errors.
pub fn parse_query(text: &str, options: &QueryOptions) -> Result<spargebra::Query, GraphError> {
    parser(options)?
        .parse_query(text)
        .map_err(|e| syntax_error(&e, text, options))
}

/// A syntax error, with a hint when an IRI failed to parse and no base was given
/// (a relative IRI such as `<data.ttl>` needs one).
fn syntax_error(
    error: &spargebra::SparqlSyntaxError,
    text: &str,
    options: &QueryOptions,
) -> GraphError {
    let message = error.to_string();
    if message.contains("Prefix not found") {
        // The parser's own message lists every character it expected: say which
        // prefix is missing instead.
        let location = message
            .strip_prefix("error at ")
            .and_then(|rest| rest.split_once(": "))
            .map_or(String::new(), |(at, _)| format!(" at {at}"));
        let known: Vec<&str> = options.prefixes.iter().map(|(p, _)| p.as_str()).collect();
        let missing = undeclared_prefixes(text, &known);
        return GraphError::Syntax(format!(
            "unknown prefix {}{location} (known: {}; declare another with PREFIX name: <namespace>)",
            missing
                .iter()
                .map(|p| format!("'{p}:'"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        ));
    }
    if options.base_iri.is_none() && message.contains("IRI parsing failed") {
        return GraphError::Syntax(format!(
            "{message} (a relative IRI needs a BASE declaration; a query read from a file \
             resolves against the file's own IRI)"
        ));
    }
    GraphError::Syntax(message)
}

/// Prefixes a query's prefixed names use that neither `known` nor its own PREFIX
/// declarations define (IRIs, strings and comments skipped), in order of use.
fn undeclared_prefixes(text: &str, known: &[&str]) -> Vec<String> {
    let mut declared: Vec<String> = known.iter().map(|p| (*p).to_owned()).collect();
    let mut used: Vec<String> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut previous_word = String::new();
    while i < chars.len() {
        match chars[i] {
            '<' => {
                while i < chars.len() && chars[i] != '>' && !chars[i].is_whitespace() {
                    i += 1;
                }
            }
            '"' | '\'' => {
                let quote = chars[i];
                i += 1;
                while i < chars.len() && chars[i] != quote {
                    i += usize::from(chars[i] == '\\') + 1;
                }
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            c if c.is_alphabetic() => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || "_-.".contains(chars[i])) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if chars.get(i) == Some(&':') {
                    if previous_word.eq_ignore_ascii_case("prefix") {
                        declared.push(word.clone());
                    } else if !declared.contains(&word) && !used.contains(&word) {
                        used.push(word.clone());
                    }
                }
                previous_word = word;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    used.retain(|p| !declared.contains(p));
    used
}

/// Parses a SPARQL 1.1 Update with the given prefixes and base, as
/// [`Graph::update`] does before it runs one.
pub fn parse_update(text: &str, options: &QueryOptions) -> Result<spargebra::Update, GraphError> {
    parser(options)?
        .parse_update(text)
        .map_err(|e| syntax_error(&e, text, options))
}

/// Whether a SPARQL Update empties more than named graphs: `CLEAR` or `DROP` of
/// `DEFAULT`, `NAMED` or `ALL` (a server asks a stronger grant for these).
pub fn update_clears_whole_store(text: &str, options: &QueryOptions) -> Result<bool, GraphError> {
    use spargebra::GraphUpdateOperation as Op;
    use spargebra::algebra::GraphTarget;
    Ok(parse_update(text, options)?
        .operations
        .iter()
        .any(|operation| {
            matches!(
                operation,
                Op::Clear { graph, .. } | Op::Drop { graph, .. }
                    if !matches!(graph, GraphTarget::NamedNode(_))
            )
        }))
}

impl Graph {
    /// Parses and runs a SPARQL query.
    pub fn query(&self, text: &str, options: &QueryOptions) -> Result<QueryOutcome, GraphError> {
        self.query_algebra(parse_query(text, options)?, &[], options)
    }

    /// Runs an already parsed query, binding variables to terms first
    /// ([SEP-0007](https://github.com/w3c/sparql-dev/blob/main/SEP/SEP-0007/sep-0007.md)
    /// substitution: values never pass through query text).
    pub fn query_algebra(
        &self,
        query: spargebra::Query,
        bindings: &[(String, Term)],
        options: &QueryOptions,
    ) -> Result<QueryOutcome, GraphError> {
        // `KGFUSE_LOG=kgfuse_graph=debug`: every query and its time.
        let shown = tracing::enabled!(tracing::Level::DEBUG).then(|| query.to_string());
        let started = Instant::now();
        let spent = self.spent.clone();
        let outcome = spent.measure(|| self.evaluate(query, bindings, options));
        if let Some(text) = shown {
            tracing::debug!(
                "query {:.2} ms: {}",
                started.elapsed().as_secs_f64() * 1e3,
                text.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
        outcome
    }

    /// Runs several SELECT queries and returns their outcomes in order. On a
    /// remote graph they go as one request (a UNION of the queries as sub-selects,
    /// each tagged), so a stage that asks many small questions pays one round
    /// trip; should that request fail, each query is sent on its own, so one
    /// failing query does not take the others with it. Embedded, each runs in
    /// turn. Either way each outcome has its own query's columns, as if it had
    /// run alone.
    pub fn select_many(
        &self,
        queries: Vec<spargebra::Query>,
        options: &QueryOptions,
    ) -> Vec<Result<QueryOutcome, GraphError>> {
        let Some(endpoint) = self.endpoint().filter(|_| queries.len() > 1) else {
            return queries
                .into_iter()
                .map(|q| self.query_algebra(q, &[], options))
                .collect();
        };
        let spent = self.spent.clone();
        let together = spent.measure(|| select_together(endpoint, &queries, options));
        match together {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            Err(error) => {
                tracing::debug!("the batched queries failed ({error}); sending them one by one");
                queries
                    .into_iter()
                    .map(|q| self.query_algebra(q, &[], options))
                    .collect()
            }
        }
    }

    /// Evaluates on the calling thread, or, for an outside query that may be
    /// demoted, on a thread of its own (a demoted thread keeps its low priority).
    fn evaluate(
        &self,
        query: spargebra::Query,
        bindings: &[(String, Term)],
        options: &QueryOptions,
    ) -> Result<QueryOutcome, GraphError> {
        if options.demote_after.is_none() {
            return self.evaluate_here(query, bindings, options);
        }
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("kgfuse-query".into())
                .spawn_scoped(scope, || self.evaluate_here(query, bindings, options))
                .map_err(|e| GraphError::Evaluation(format!("cannot start a query thread: {e}")))?
                .join()
                .map_err(|_| GraphError::Evaluation("the query thread panicked".into()))?
        })
    }

    fn evaluate_here(
        &self,
        query: spargebra::Query,
        bindings: &[(String, Term)],
        options: &QueryOptions,
    ) -> Result<QueryOutcome, GraphError> {
        let store = match &self.backend {
            Backend::Embedded(store) => store,
            Backend::Remote(endpoint) => {
                return evaluate_remote(endpoint, query, bindings, options);
            }
        };
        let token = CancellationToken::new();
        let _deadline = Deadline::arm(options, &token);
        // Cross products as lateral joins, so the token is checked while they run.
        let query = crate::cross_products::guard_cross_products(query);
        let mut prepared = evaluator().with_cancellation_token(token).for_query(query);
        if options.union_default_graph && prepared.dataset().is_default_dataset() {
            prepared.dataset_mut().set_default_graph_as_union();
        }
        let mut bound = prepared.on_store(store);
        for (name, term) in bindings {
            let variable =
                Variable::new(name).map_err(|e| GraphError::Usage(format!("?{name}: {e}")))?;
            bound = bound.substitute_variable(variable, term.clone());
        }
        let fail = |e| evaluation_error(e, options.timeout);
        let results = bound.execute().map_err(|e| {
            let message = e.to_string();
            if message.contains("SELECT projection") {
                GraphError::Usage(format!(
                    "{message}: a bound variable must be listed in the SELECT clause (SPARQL substitution, SEP-0007)"
                ))
            } else {
                fail(e)
            }
        })?;
        match results {
            QueryResults::Boolean(value) => Ok(QueryOutcome::Boolean(value)),
            QueryResults::Solutions(solutions) => {
                let vars = solutions.variables().to_vec();
                let mut rows = Vec::new();
                for solution in solutions {
                    let solution = solution.map_err(fail)?;
                    rows.push(vars.iter().map(|v| solution.get(v).cloned()).collect());
                }
                Ok(QueryOutcome::Solutions {
                    variables: vars.iter().map(|v| v.as_str().to_owned()).collect(),
                    rows,
                })
            }
            QueryResults::Graph(triples) => Ok(QueryOutcome::Graph(
                triples.collect::<Result<Vec<_>, _>>().map_err(fail)?,
            )),
        }
    }

    /// Parses and runs a SPARQL 1.1 Update; atomic (one transaction).
    pub fn update(&self, text: &str, options: &QueryOptions) -> Result<(), GraphError> {
        let update = parse_update(text, options)?;
        // LOAD would fetch a URL or read a local file on the server's behalf.
        if update
            .operations
            .iter()
            .any(|op| matches!(op, spargebra::GraphUpdateOperation::Load { .. }))
        {
            return Err(GraphError::Unsupported(
                "LOAD: kgfuse does not fetch URLs or read server files from SPARQL; \
                 use `kgfuse load` or the Graph Store Protocol (PUT/POST /store)"
                    .to_owned(),
            ));
        }
        let store = match &self.backend {
            Backend::Embedded(store) => store,
            Backend::Remote(endpoint) => return update_remote(endpoint, &update),
        };
        // The WHERE clauses run under the same timeout and guard as a query; the
        // update is one transaction, so a cancelled one changes nothing.
        let update = crate::cross_products::guard_update_cross_products(update);
        let token = CancellationToken::new();
        let _deadline = Deadline::arm(options, &token);
        evaluator()
            .with_cancellation_token(token)
            .for_update(update)
            .on_store(store)
            .execute()
            .map_err(|e| update_error(e, options.timeout))
    }
}

/// The variable that tags each row of [`Graph::select_many`]'s request with the
/// query it answers.
const QUERY_TAG: &str = "kgfuse_query";

/// [`Graph::select_many`] on a server: one request, rows split by their tag.
pub(crate) fn select_together(
    endpoint: &Endpoint,
    queries: &[spargebra::Query],
    options: &QueryOptions,
) -> Result<Vec<QueryOutcome>, GraphError> {
    let combined = tagged_union(queries)?;
    // The queries' own timeout holds for all of them together: a batch that runs
    // out of time is sent again one query at a time, each with that timeout.
    let outcome = endpoint.query(
        &combined.to_string(),
        Form::Results,
        options.timeout,
        options.union_default_graph,
    )?;
    let kgfuse_remote::Answer::Solutions { variables, rows } = outcome else {
        return Err(GraphError::Evaluation(
            "the batched queries gave no solutions".into(),
        ));
    };
    let Some(at) = variables.iter().position(|v| v == QUERY_TAG) else {
        return Err(GraphError::Evaluation(format!(
            "no ?{QUERY_TAG} in the batched results"
        )));
    };
    let mut outcomes: Vec<Vec<Vec<Option<Term>>>> = vec![Vec::new(); queries.len()];
    for mut row in rows {
        let tag = match row.get(at) {
            Some(Some(Term::Literal(l))) => l.value().parse::<usize>().ok(),
            _ => None,
        };
        if at < row.len() {
            row.remove(at);
        }
        if let Some(rows) = tag.and_then(|i| outcomes.get_mut(i)) {
            rows.push(row);
        }
    }
    let mut variables = variables;
    variables.remove(at);
    Ok(queries
        .iter()
        .zip(outcomes)
        .map(|(query, rows)| own_columns(query, &variables, rows))
        .collect())
}

/// One SELECT of the queries' patterns as a UNION, each branch binding
/// `?{QUERY_TAG}` to its query's number. Only SELECTs without FROM and without
/// SERVICE are accepted.
fn tagged_union(queries: &[spargebra::Query]) -> Result<spargebra::Query, GraphError> {
    let tag = Variable::new_unchecked(QUERY_TAG);
    let mut union: Option<GraphPattern> = None;
    for (i, query) in queries.iter().enumerate() {
        let spargebra::Query::Select {
            pattern,
            dataset: None,
            ..
        } = query
        else {
            return Err(GraphError::Usage(
                "select_many takes SELECT queries without FROM".into(),
            ));
        };
        if let Some(service) = crate::service_call(pattern) {
            return Err(GraphError::Unsupported(format!(
                "{NO_SERVICE} ({service} was not contacted; nothing was sent to the server)"
            )));
        }
        let tagged = GraphPattern::Extend {
            inner: Box::new(pattern.clone()),
            variable: tag.clone(),
            expression: Expression::Literal(oxigraph::model::Literal::from(i as i64)),
        };
        union = Some(match union {
            None => tagged,
            Some(left) => GraphPattern::Union {
                left: Box::new(left),
                right: Box::new(tagged),
            },
        });
    }
    Ok(spargebra::Query::Select {
        dataset: None,
        pattern: union.unwrap_or(GraphPattern::Bgp {
            patterns: Vec::new(),
        }),
        base_iri: None,
    })
}

/// One query's rows of a batched answer, in that query's own columns (as if it
/// had run alone), so that callers may read cells by position.
fn own_columns(
    query: &spargebra::Query,
    batched: &[String],
    rows: Vec<Vec<Option<Term>>>,
) -> QueryOutcome {
    let Some(own) = projection(query) else {
        return QueryOutcome::Solutions {
            variables: batched.to_vec(),
            rows,
        };
    };
    let at: Vec<Option<usize>> = own
        .iter()
        .map(|v| batched.iter().position(|b| b == v))
        .collect();
    let rows = rows
        .into_iter()
        .map(|row| {
            at.iter()
                .map(|i| i.and_then(|i| row.get(i).cloned().flatten()))
                .collect()
        })
        .collect();
    QueryOutcome::Solutions {
        variables: own,
        rows,
    }
}

/// The variables a SELECT projects, in order (`SELECT *` is parsed into the
/// variables it stands for).
fn projection(query: &spargebra::Query) -> Option<Vec<String>> {
    let spargebra::Query::Select { pattern, .. } = query else {
        return None;
    };
    let mut pattern = pattern;
    loop {
        pattern = match pattern {
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::OrderBy { inner, .. } => inner,
            GraphPattern::Project { variables, .. } => {
                return Some(variables.iter().map(|v| v.as_str().to_owned()).collect());
            }
            _ => return None,
        };
    }
}

/// A query sent to a SPARQL server: bindings joined in as VALUES, kgfuse's graphs
/// as the dataset unless the query names its own, SERVICE refused before
/// anything is sent.
fn evaluate_remote(
    endpoint: &Endpoint,
    query: spargebra::Query,
    bindings: &[(String, Term)],
    options: &QueryOptions,
) -> Result<QueryOutcome, GraphError> {
    let (pattern, has_dataset, form) = match &query {
        spargebra::Query::Select {
            pattern, dataset, ..
        }
        | spargebra::Query::Ask {
            pattern, dataset, ..
        } => (pattern, dataset.is_some(), Form::Results),
        spargebra::Query::Construct {
            pattern, dataset, ..
        }
        | spargebra::Query::Describe {
            pattern, dataset, ..
        } => (pattern, dataset.is_some(), Form::Triples),
    };
    if let Some(service) = crate::service_call(pattern) {
        return Err(GraphError::Unsupported(format!(
            "{NO_SERVICE} ({service} was not contacted; nothing was sent to the server)"
        )));
    }
    let on_kgfuse_graphs = options.union_default_graph && !has_dataset;
    let query = crate::algebra::with_bindings(query, bindings)?;
    let (query, was_ask) = crate::algebra::ask_as_select(query);
    let run = |query: &spargebra::Query| {
        endpoint
            .query(&query.to_string(), form, options.timeout, on_kgfuse_graphs)
            .map(QueryOutcome::from)
            .map_err(GraphError::from)
    };
    let outcome = match run(&query) {
        Err(GraphError::Truncated(cap)) => in_pages(&query, cap, run)?,
        other => other?,
    };
    Ok(match outcome {
        QueryOutcome::Solutions { rows, .. } if was_ask => QueryOutcome::Boolean(!rows.is_empty()),
        other => other,
    })
}

/// A SELECT that a server cut at its row cap, asked again in pages of half the
/// cap (its own LIMIT and OFFSET kept). The pages have no order of their own
/// (Virtuoso sorts at most 10,000 rows), which holds while the data does not
/// change between them.
fn in_pages(
    query: &spargebra::Query,
    cap: usize,
    run: impl Fn(&spargebra::Query) -> Result<QueryOutcome, GraphError>,
) -> Result<QueryOutcome, GraphError> {
    let spargebra::Query::Select {
        dataset,
        pattern,
        base_iri,
    } = query
    else {
        return Err(GraphError::Truncated(cap));
    };
    let (inner, first, limit) = match pattern {
        GraphPattern::Slice {
            inner,
            start,
            length,
        } => (inner.as_ref(), *start, *length),
        other => (other, 0, None),
    };
    let page = (cap / 2).max(1);
    let mut variables = Vec::new();
    let mut rows = Vec::new();
    loop {
        let wanted = limit.map_or(page, |l| l.saturating_sub(rows.len()).min(page));
        if wanted == 0 {
            break;
        }
        let paged = spargebra::Query::Select {
            dataset: dataset.clone(),
            pattern: GraphPattern::Slice {
                inner: Box::new(inner.clone()),
                start: first + rows.len(),
                length: Some(wanted),
            },
            base_iri: base_iri.clone(),
        };
        let QueryOutcome::Solutions {
            variables: names,
            rows: more,
        } = run(&paged)?
        else {
            return Err(GraphError::Truncated(cap));
        };
        let done = more.len() < wanted;
        variables = names;
        rows.extend(more);
        if done {
            break;
        }
    }
    Ok(QueryOutcome::Solutions { variables, rows })
}

/// An update sent to a SPARQL server. It writes named graphs only (kgfuse's
/// queries read those), and the graphs it creates or drops are kept in the
/// registry; blank nodes in INSERT DATA are refused (load a file instead, which
/// names them).
fn update_remote(endpoint: &Endpoint, update: &spargebra::Update) -> Result<(), GraphError> {
    use spargebra::GraphUpdateOperation as Op;
    use spargebra::algebra::GraphTarget;
    use spargebra::term::{GraphName, GraphNamePattern};
    let refuse = |what: &str| {
        Err(GraphError::Unsupported(format!(
            "{what} on a remote graph: kgfuse writes named graphs only"
        )))
    };
    let mut created = Vec::new();
    let mut dropped = Vec::new();
    let mut reads_union = false;
    for operation in &update.operations {
        match operation {
            Op::InsertData { data } => {
                for quad in data {
                    match &quad.graph_name {
                        GraphName::NamedNode(g) => created.push(g.clone()),
                        GraphName::DefaultGraph => {
                            return refuse("INSERT DATA into the default graph");
                        }
                    }
                    if matches!(
                        quad.subject,
                        oxigraph::model::NamedOrBlankNode::BlankNode(_)
                    ) || matches!(quad.object, Term::BlankNode(_))
                    {
                        return Err(GraphError::Unsupported(
                            "blank nodes in INSERT DATA on a remote graph: use IRIs, or `kgfuse load` a file (its blank nodes become skolem IRIs)".into(),
                        ));
                    }
                }
            }
            Op::DeleteData { .. } => {}
            Op::DeleteInsert { insert, using, .. } => {
                reads_union |= using.is_none();
                for quad in insert {
                    match &quad.graph_name {
                        GraphNamePattern::NamedNode(g) => created.push(g.clone()),
                        GraphNamePattern::DefaultGraph => {
                            return refuse("INSERT into the default graph");
                        }
                        GraphNamePattern::Variable(_) => {
                            return refuse("INSERT into a graph named by a variable");
                        }
                    }
                }
            }
            Op::Create { graph, .. } => created.push(graph.clone()),
            Op::Clear { graph, .. } | Op::Drop { graph, .. } => match graph {
                GraphTarget::NamedNode(g) => {
                    if matches!(operation, Op::Drop { .. }) {
                        dropped.push(g.clone());
                    }
                }
                _ => return refuse("CLEAR or DROP of the default graph or of all graphs"),
            },
            Op::Load { .. } => {}
        }
    }
    endpoint.register(&created)?;
    endpoint.update_text(&update.to_string(), reads_union)?;
    // The registry entries go after the graphs are gone.
    Ok(endpoint.drop_graphs(&dropped)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResultsFormat;

    #[test]
    fn whole_store_clears_are_told_from_named_graph_updates() {
        let options = QueryOptions::default();
        let whole = |text: &str| update_clears_whole_store(text, &options).expect("parses");
        assert!(whole("CLEAR ALL"));
        assert!(whole("DROP SILENT NAMED"));
        assert!(whole("INSERT DATA { <urn:a> <urn:b> 1 } ; CLEAR DEFAULT"));
        assert!(!whole("CLEAR GRAPH <urn:g>"));
        assert!(!whole("DROP GRAPH <urn:g>"));
        assert!(!whole("DELETE WHERE { ?s ?p ?o }"));
        assert!(update_clears_whole_store("CLEAR EVERYTHING", &options).is_err());
    }

    fn sample() -> Graph {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g1> { <urn:a> rdfs:label \"alpha\" ; <urn:p> <urn:b> } \
                 GRAPH <urn:g2> { <urn:b> rdfs:label \"beta\" } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        graph
    }

    #[test]
    fn a_batched_answer_is_split_into_each_query_s_own_columns() {
        use oxigraph::model::{Literal, NamedNode};
        let options = QueryOptions::default();
        let star = parse_query("SELECT * WHERE { ?s ?p ?o } LIMIT 3", &options).expect("parse");
        let named = parse_query(
            "SELECT DISTINCT ?x ?link WHERE { ?x <urn:p> ?y BIND(\"calls\" AS ?link) } ORDER BY ?x",
            &options,
        )
        .expect("parse");
        assert_eq!(projection(&star).expect("star").len(), 3);
        assert_eq!(
            projection(&named),
            Some(vec!["x".to_owned(), "link".to_owned()])
        );
        // The union's columns, as a server lists them; a row of the second query.
        let batched: Vec<String> = ["s", "p", "o", "link", "x"].map(str::to_owned).to_vec();
        let row = vec![
            None,
            None,
            None,
            Some(Term::from(Literal::from("calls"))),
            Some(Term::from(NamedNode::new_unchecked("urn:a"))),
        ];
        let QueryOutcome::Solutions { variables, rows } = own_columns(&named, &batched, vec![row])
        else {
            panic!("solutions");
        };
        assert_eq!(variables, ["x", "link"]);
        assert_eq!(
            rows,
            [[
                Some(Term::from(NamedNode::new_unchecked("urn:a"))),
                Some(Term::from(Literal::from("calls")))
            ]]
        );
    }

    #[test]
    fn union_default_graph_is_on_by_default_and_can_be_switched_off() {
        let graph = sample();
        let q = "SELECT ?l WHERE { ?s rdfs:label ?l } ORDER BY ?l";
        let QueryOutcome::Solutions { rows, .. } =
            graph.query(q, &QueryOptions::default()).expect("query")
        else {
            panic!("expected solutions")
        };
        assert_eq!(rows.len(), 2);
        let strict = QueryOptions {
            union_default_graph: false,
            ..QueryOptions::default()
        };
        let QueryOutcome::Solutions { rows, .. } = graph.query(q, &strict).expect("query") else {
            panic!("expected solutions")
        };
        assert!(rows.is_empty());
    }

    #[test]
    fn an_unknown_prefix_is_named_not_dumped() {
        let options = QueryOptions::default();
        let error = parse_query(
            "PREFIX ok: <urn:ok#> SELECT * WHERE { ?s zz:name ok:x . ?s <urn:a:b> \"yy:no\" }",
            &options,
        )
        .expect_err("zz is not declared");
        let message = error.to_string();
        assert!(message.contains("unknown prefix 'zz:' at 1:"), "{message}");
        assert!(message.contains("known: rdf, rdfs"), "{message}");
        assert!(!message.contains("u{"), "{message}");
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let err = sample()
            .query("SELECT ?s WHERE { ?s ?p }", &QueryOptions::default())
            .expect_err("bad query");
        let message = err.to_string();
        assert!(message.contains("1:"), "{message}");
    }

    #[test]
    fn bindings_are_substituted_not_pasted() {
        let graph = sample();
        let query = parse_query(
            "SELECT ?l ?s WHERE { ?s rdfs:label ?l }",
            &QueryOptions::default(),
        )
        .expect("parse");
        let nasty = Term::from(oxigraph::model::Literal::new_simple_literal(
            "x\" } ; DROP ALL ; #",
        ));
        let outcome = graph
            .query_algebra(query, &[("s".into(), nasty)], &QueryOptions::default())
            .expect("query");
        assert_eq!(
            outcome,
            QueryOutcome::Solutions {
                variables: vec!["l".into(), "s".into()],
                rows: vec![]
            }
        );
        assert_eq!(graph.len().expect("len"), 3);
        let unprojected = parse_query(
            "SELECT ?l WHERE { ?s rdfs:label ?l }",
            &QueryOptions::default(),
        )
        .expect("parse");
        let err = graph
            .query_algebra(
                unprojected,
                &[(
                    "s".into(),
                    Term::from(oxigraph::model::NamedNode::new("urn:a").expect("iri")),
                )],
                &QueryOptions::default(),
            )
            .expect_err("unprojected binding");
        assert!(err.to_string().contains("SELECT"), "{err}");
    }

    #[test]
    fn relative_iris_resolve_against_the_base_and_are_an_error_without_one() {
        let graph = sample();
        let query = "SELECT ?l WHERE { GRAPH <g1> { ?s rdfs:label ?l } }";
        let err = graph
            .query(query, &QueryOptions::default())
            .expect_err("no base");
        assert!(matches!(err, GraphError::Syntax(_)), "{err}");
        let based = QueryOptions {
            base_iri: Some("urn:".into()),
            ..QueryOptions::default()
        };
        let QueryOutcome::Solutions { rows, .. } = graph.query(query, &based).expect("query")
        else {
            panic!("expected solutions")
        };
        assert_eq!(rows.len(), 1);
        let bad = QueryOptions {
            base_iri: Some("not an iri".into()),
            ..QueryOptions::default()
        };
        assert!(matches!(
            graph.query(query, &bad),
            Err(GraphError::Usage(_))
        ));
    }

    #[test]
    fn slow_queries_time_out() {
        let graph = Graph::in_memory().expect("store");
        let mut insert = String::from("INSERT DATA {");
        for i in 0..300 {
            insert.push_str(&format!("<urn:n{i}> <urn:p> <urn:n{}> . ", i + 1));
        }
        insert.push('}');
        graph
            .update(&insert, &QueryOptions::default())
            .expect("insert");
        let options = QueryOptions {
            timeout: Some(Duration::from_millis(50)),
            ..QueryOptions::default()
        };
        // A cross product of 300^4 rows cannot finish in 50 ms.
        let err = graph
            .query(
                "SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?s ?h }",
                &options,
            )
            .expect_err("must time out");
        assert!(matches!(err, GraphError::Timeout(_)), "{err}");
    }

    /// 10,000 triples (a three-way product of 1e12 rows) and a 200 ms timeout.
    fn ten_thousand_triples_and_a_short_timeout() -> (Graph, QueryOptions) {
        let graph = Graph::in_memory().expect("store");
        let mut insert = String::from("INSERT DATA {");
        for i in 0..10_000 {
            insert.push_str(&format!("<urn:n{i}> <urn:p> {i} . "));
        }
        insert.push('}');
        graph
            .update(&insert, &QueryOptions::default())
            .expect("insert");
        let options = QueryOptions {
            timeout: Some(Duration::from_millis(200)),
            ..QueryOptions::default()
        };
        (graph, options)
    }

    #[test]
    fn a_timeout_ends_an_in_memory_cross_product() {
        // 10,000 triples: the three-way product is 1e12 rows, counted in memory
        // for minutes by a hash join unless cross products read the store.
        let (graph, options) = ten_thousand_triples_and_a_short_timeout();
        let started = Instant::now();
        let err = graph
            .query(
                "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }",
                &options,
            )
            .expect_err("must time out");
        assert!(matches!(err, GraphError::Timeout(_)), "{err}");
        // The guarantee, not a speed target: without the guard this took minutes.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        // The same product, small enough to finish, still counts every row.
        let QueryOutcome::Solutions { rows, .. } = graph
            .query(
                "SELECT (COUNT(*) AS ?n) WHERE { ?a <urn:p> 1 . ?d <urn:p> ?f FILTER(?f < 3) }",
                &QueryOptions::default(),
            )
            .expect("count")
        else {
            panic!("solutions")
        };
        assert_eq!(
            rows[0][0].as_ref().map(ToString::to_string).as_deref(),
            Some("\"3\"^^<http://www.w3.org/2001/XMLSchema#integer>")
        );
    }

    #[test]
    fn an_update_whose_where_clause_times_out_changes_nothing() {
        let (graph, options) = ten_thousand_triples_and_a_short_timeout();
        let err = graph
            .update(
                "INSERT { <urn:x> <urn:count> ?a } WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }",
                &options,
            )
            .expect_err("must time out");
        assert!(matches!(err, GraphError::Timeout(_)), "{err}");
        assert_eq!(graph.len().expect("len"), 10_000);
    }

    #[test]
    fn service_and_load_are_refused_as_not_offered() {
        let graph = sample();
        let err = graph
            .query(
                "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
                &QueryOptions::default(),
            )
            .expect_err("service");
        assert!(matches!(err, GraphError::Unsupported(_)), "{err}");
        assert!(err.to_string().contains("127.0.0.1:9"), "{err}");
        let err = graph
            .update(
                "LOAD <file:///etc/passwd> INTO GRAPH <urn:x>",
                &QueryOptions::default(),
            )
            .expect_err("load");
        assert!(matches!(err, GraphError::Unsupported(_)), "{err}");
        assert_eq!(graph.len().expect("len"), 3);
        let err = graph
            .update("CREATE GRAPH <urn:g1>", &QueryOptions::default())
            .expect_err("exists");
        assert!(matches!(err, GraphError::Usage(_)), "{err}");
    }

    #[test]
    fn a_deadline_before_the_one_the_watchdog_sleeps_towards_wakes_it() {
        let watchdog = WATCHDOG.expect("watchdog running");
        let now = Instant::now();
        // Done queries leave the watchdog sleeping until their deadline: an
        // hour from now here.
        let far = watchdog.schedule(
            now + Duration::from_secs(3600),
            Action::Cancel(CancellationToken::new()),
        );
        // Let the watchdog wake for it and fall asleep again.
        std::thread::sleep(Duration::from_millis(50));
        watchdog.cancel(&[far]);
        let token = CancellationToken::new();
        let near = watchdog.schedule(
            now + Duration::from_millis(20),
            Action::Cancel(token.clone()),
        );
        let waited = Instant::now();
        while !token.is_cancelled() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        watchdog.cancel(&[near]);
        assert!(token.is_cancelled(), "not cancelled after 10 s");
    }

    #[test]
    fn finished_queries_unregister_their_deadlines() {
        let graph = sample();
        for _ in 0..50 {
            graph
                .query("ASK { ?s ?p ?o }", &QueryOptions::default())
                .expect("ask");
        }
        let pending = WATCHDOG
            .map(|w| {
                w.state
                    .lock()
                    .map(|s| s.pending.len())
                    .unwrap_or(usize::MAX)
            })
            .expect("watchdog running");
        // Other tests may run queries concurrently; 50 leaked entries would show.
        assert!(pending < 10, "{pending} deadlines left registered");
    }

    #[test]
    fn results_serialize_in_every_format() {
        let graph = sample();
        let outcome = graph
            .query(
                "SELECT ?s ?l WHERE { ?s rdfs:label ?l }",
                &QueryOptions::default(),
            )
            .expect("query");
        for format in [
            ResultsFormat::Json,
            ResultsFormat::Xml,
            ResultsFormat::Csv,
            ResultsFormat::Tsv,
        ] {
            let mut out = Vec::new();
            outcome.write(format, &mut out).expect("write");
            assert!(
                String::from_utf8_lossy(&out).contains("alpha"),
                "{format:?}"
            );
        }
        let constructed = graph
            .query(
                "CONSTRUCT { ?s rdfs:label ?l } WHERE { ?s rdfs:label ?l }",
                &QueryOptions::default(),
            )
            .expect("construct");
        let mut out = Vec::new();
        constructed
            .write(ResultsFormat::Turtle, &mut out)
            .expect("write");
        assert!(String::from_utf8_lossy(&out).contains("rdfs:label"));
        assert!(constructed.write(ResultsFormat::Json, Vec::new()).is_err());
        assert!(outcome.write(ResultsFormat::Turtle, Vec::new()).is_err());
    }

    /// The rows of a SELECT, each cell as its lexical form (None = unbound).
    fn lexical_rows(outcome: QueryOutcome) -> Vec<Vec<Option<String>>> {
        let QueryOutcome::Solutions { rows, .. } = outcome else {
            panic!("solutions: {outcome:?}")
        };
        rows.into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|cell| match cell {
                        Some(Term::Literal(l)) => Some(l.value().to_owned()),
                        Some(other) => Some(other.to_string()),
                        None => None,
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn derived_integer_casts_bind_in_a_select() {
        let graph = Graph::in_memory().expect("store");
        let outcome = graph
            .query(
                "SELECT ?x WHERE { VALUES ?v { \"12\" \"3.9\"^^xsd:decimal \"x\" } \
                 BIND(xsd:int(?v) AS ?x) }",
                &QueryOptions::default(),
            )
            .expect("xsd:int is offered");
        let QueryOutcome::Solutions { rows, .. } = &outcome else {
            panic!("solutions")
        };
        // Oxigraph reads every derived integer type as an xsd:integer value, so
        // the cast's "12"^^xsd:int comes back as a number typed xsd:integer.
        for cell in rows.iter().flatten().flatten() {
            let Term::Literal(literal) = cell else {
                panic!("a literal: {cell}")
            };
            assert_eq!(
                literal.datatype(),
                oxigraph::model::vocab::xsd::INTEGER,
                "{literal}"
            );
        }
        assert_eq!(
            lexical_rows(outcome),
            [
                vec![Some("12".to_owned())],
                vec![Some("3".to_owned())],
                vec![None]
            ]
        );
    }

    #[test]
    fn every_derived_integer_cast_is_offered_with_its_range() {
        let graph = Graph::in_memory().expect("store");
        // (local name, a value inside, the first value outside)
        let table = [
            ("int", "2147483647", "2147483648"),
            ("long", "-9223372036854775808", "9223372036854775808"),
            ("short", "-32768", "-32769"),
            ("byte", "127", "128"),
            ("nonNegativeInteger", "0", "-1"),
            ("positiveInteger", "1", "0"),
            ("nonPositiveInteger", "0", "1"),
            ("negativeInteger", "-1", "0"),
            ("unsignedLong", "9223372036854775807", "-1"),
            ("unsignedInt", "4294967295", "4294967296"),
            ("unsignedShort", "65535", "65536"),
            ("unsignedByte", "255", "256"),
        ];
        for (name, inside, outside) in table {
            // The full IRI as other engines' queries write it, and the prefixed name.
            let query = format!(
                "SELECT ?in ?out ?ws WHERE {{ \
                 BIND(<http://www.w3.org/2001/XMLSchema#{name}>(\"{inside}\") AS ?in) \
                 BIND(xsd:{name}(\"{outside}\") AS ?out) \
                 BIND(xsd:{name}(\" {inside}\\n\") AS ?ws) }}"
            );
            let rows = lexical_rows(
                graph
                    .query(&query, &QueryOptions::default())
                    .unwrap_or_else(|e| panic!("xsd:{name}: {e}")),
            );
            assert_eq!(
                rows,
                [vec![Some(inside.to_owned()), None, Some(inside.to_owned())]],
                "xsd:{name}"
            );
        }
    }

    #[test]
    fn derived_integer_casts_compare_order_and_add_as_numbers() {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g> { \
                 <urn:a> <urn:n> \"007\" . <urn:b> <urn:n> \"12\" . <urn:c> <urn:n> \" 3 \" . \
                 <urn:d> <urn:n> \"x\" . <urn:e> <urn:n> 5.9 . <urn:f> <urn:n> true } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        let options = QueryOptions::default();
        let filtered = graph
            .query(
                "SELECT ?s WHERE { ?s <urn:n> ?v FILTER(xsd:int(?v) > 5) } ORDER BY ?s",
                &options,
            )
            .expect("filter");
        assert_eq!(
            lexical_rows(filtered),
            [
                vec![Some("<urn:a>".to_owned())],
                vec![Some("<urn:b>".to_owned())]
            ],
            "7 and 12 are above 5; 5.9 truncates to 5; \"x\" does not cast"
        );
        // Numeric order: "12" after "007" and " 3 ", as strings it would come first.
        let ordered = graph
            .query(
                "SELECT ?s WHERE { ?s <urn:n> ?v FILTER(BOUND(?v) && xsd:int(?v) >= 0) } \
                 ORDER BY DESC(xsd:int(?v))",
                &options,
            )
            .expect("order");
        assert_eq!(
            lexical_rows(ordered)
                .into_iter()
                .map(|row| row[0].clone().unwrap_or_default())
                .collect::<Vec<_>>(),
            ["<urn:b>", "<urn:a>", "<urn:e>", "<urn:c>", "<urn:f>"]
        );
        let sum = graph
            .query(
                "SELECT (SUM(xsd:int(?v)) AS ?sum) WHERE { ?s <urn:n> ?v FILTER(?s != <urn:d>) }",
                &options,
            )
            .expect("sum");
        let QueryOutcome::Solutions { rows, .. } = sum else {
            panic!("solutions")
        };
        assert_eq!(
            rows[0][0].as_ref().map(ToString::to_string).as_deref(),
            Some("\"28\"^^<http://www.w3.org/2001/XMLSchema#integer>"),
            "7 + 12 + 3 + 5 + 1, a number"
        );
        // Update WHERE clauses run with the same functions.
        graph
            .update(
                "INSERT { GRAPH <urn:g> { ?s <urn:m> ?m } } WHERE { \
                 GRAPH <urn:g> { ?s <urn:n> ?v } BIND(xsd:unsignedByte(?v) AS ?m) FILTER(BOUND(?m)) }",
                &options,
            )
            .expect("update with a derived cast");
        let copied = graph
            .query("SELECT (COUNT(*) AS ?n) WHERE { ?s <urn:m> ?m }", &options)
            .expect("count");
        assert_eq!(lexical_rows(copied), [vec![Some("5".to_owned())]]);
    }
}
