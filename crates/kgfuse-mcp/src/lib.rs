#![doc = include_str!("../README.md")]

mod sparql;
mod text;

use kgfuse::{
    Answer, AnswerStatus, CaseInfo, Engine, EntityDescription, EntityStatus, FusedContext,
    RetrieveOptions, Strategy, TraceStage,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::ServerInitializeError;
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

pub use sparql::{SPARQL_MAX_ROWS, SPARQL_TIMEOUT};

/// Longest question or query text a tool accepts, in characters (SPARQL excepted).
const MAX_TEXT_CHARS: usize = 10_000;

/// What the server tells a client about itself when the session starts.
const INSTRUCTIONS: &str = "kgfuse: a knowledge graph (RDF, SPARQL) of a domain's API \
(packages, modules, functions with parameters, return types and call edges), worked code \
examples (cases), domain knowledge and policy documents, paired with a vector index. \
To write code against the API: search_domain_kg for the functions, then search_case_base \
for worked examples. For documents and facts: retrieve_context (strategy auto fuses every channel), \
or ask for a cited answer. describe_entity shows one node and its neighbours; \
sparql_query runs read-only SPARQL over the union of all graphs. Everything is read-only.";

/// Why the MCP server stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The session could not start (a malformed `initialize`, a broken pipe...).
    #[error("MCP session did not start: {0}")]
    Initialize(#[source] Box<ServerInitializeError>),
    /// The task serving the session failed.
    #[error("MCP session ended abnormally: {0}")]
    Session(#[from] tokio::task::JoinError),
}

impl From<ServerInitializeError> for McpServeError {
    fn from(error: ServerInitializeError) -> Self {
        Self::Initialize(Box::new(error))
    }
}

/// The kgfuse MCP server: six read-only tools over an [`Engine`]
/// (`search_domain_kg`, `search_case_base`, `retrieve_context`, `sparql_query`,
/// `describe_entity`, `ask`). Cheap to clone; clones share the engine.
#[derive(Clone)]
pub struct KgfuseMcp {
    engine: Engine,
    tool_router: Arc<ToolRouter<Self>>,
}

impl std::fmt::Debug for KgfuseMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KgfuseMcp")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

/// Serves `engine` over MCP on stdin/stdout (newline-delimited JSON-RPC) until the
/// client closes stdin. Nothing else may write to stdout meanwhile; logs go through
/// `tracing`, which the caller should point at stderr.
pub async fn serve_stdio(engine: Engine) -> Result<(), McpServeError> {
    let server = KgfuseMcp::new(engine);
    let running = match server.serve(rmcp::transport::stdio_pipes()).await {
        Ok(running) => running,
        // A client that hangs up before saying anything is not an error.
        Err(ServerInitializeError::ConnectionClosed(when)) => {
            tracing::info!("MCP client closed the connection before the {when}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!("MCP session started");
    let reason = running.waiting().await?;
    tracing::info!("MCP session ended: {reason:?}");
    Ok(())
}

impl KgfuseMcp {
    /// A server over `engine` (its language model answers `ask` and the judgement
    /// steps of retrieval).
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            tool_router: Arc::new(Self::tool_router()),
        }
    }

    /// The engine the tools run on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// `search_domain_kg` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchDomainKgArgs {
    /// The coding task or question in plain words, e.g. "Write a function to activate
    /// high-beam headlights on bus 1".
    query: String,
    /// How many functions to return (1 to 50).
    #[serde(default = "default_top_t")]
    #[schemars(range(min = 1, max = 50))]
    top_t: usize,
}

fn default_top_t() -> usize {
    5
}

/// `search_case_base` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchCaseBaseArgs {
    /// What the example should do, e.g. "flash the hazard lights on bus 1".
    query: String,
    /// How many worked examples to return (1 to 20).
    #[serde(default = "default_k")]
    #[schemars(range(min = 1, max = 20))]
    k: usize,
}

fn default_k() -> usize {
    3
}

/// `retrieve_context` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct RetrieveContextArgs {
    /// The question.
    query: String,
    /// Retrieval strategy: auto (unified: one ranking fused from the lexical,
    /// graph-walk, query-answer, domain and path channels), bm25 (names and
    /// descriptions, the lexical baseline), flat (vector top-k),
    /// hybrid (BM25 + vectors), unified (entities + generated SPARQL + the fused ranking),
    /// domain (API functions and cases), paths (code dependency paths between input
    /// and output concepts), neighborhood (graph neighbourhood of the linked entities).
    #[serde(default)]
    strategy: Strategy,
    /// Most items to return (1 to 50).
    #[serde(default = "default_top_k")]
    #[schemars(range(min = 1, max = 50))]
    top_k: usize,
}

fn default_top_k() -> usize {
    8
}

/// `sparql_query` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct SparqlQueryArgs {
    /// A SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE query. The prefixes rdf, rdfs,
    /// owl, xsd, skos, dcterms, prov and kgfuse are predeclared; the default graph is
    /// the union of all graphs.
    query: String,
}

/// `describe_entity` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct DescribeEntityArgs {
    /// An IRI (`<https://...>`, a bare `https://...`, or a prefixed name such as
    /// `kgfuse:Case`) or a label (rdfs:label, skos:prefLabel, skos:altLabel,
    /// kgfuse:name or kgfuse:qualifiedName; exact, else ignoring case).
    iri_or_label: String,
}

/// `ask` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct AskArgs {
    /// The question, in plain words.
    question: String,
}

/// An API function as `search_domain_kg` returns it (no source code: lean on purpose).
#[derive(Debug, Serialize)]
struct FunctionHit<'a> {
    iri: &'a str,
    name: &'a str,
    package: Option<&'a str>,
    module: Option<&'a str>,
    signature: Option<&'a str>,
    params: &'a [String],
    returns: Option<&'a str>,
    depends_on: &'a [String],
    siblings: &'a [String],
    knowledge: &'a [String],
    score: f32,
}

/// `search_domain_kg` result.
#[derive(Debug, Serialize)]
struct DomainResult<'a> {
    query: &'a str,
    functions: Vec<FunctionHit<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    trace: &'a [TraceStage],
}

/// `search_case_base` result.
#[derive(Debug, Serialize)]
struct CasesResult<'a> {
    query: &'a str,
    cases: &'a [CaseInfo],
}

#[tool_router]
impl KgfuseMcp {
    /// DomAgent's top-down tool: the API functions to use for a coding task, ranked,
    /// each with its package, module, signature, parameters, return type, the
    /// functions it calls (depends_on), its siblings and attached domain knowledge.
    /// Packages are chosen first, then functions inside them, and a refinement gate
    /// drops look-alikes (the trace says what was dropped and why). Call
    /// search_case_base next for worked examples.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn search_domain_kg(
        &self,
        Parameters(args): Parameters<SearchDomainKgArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = required_text("query", &args.query)?;
        let top_t = in_range("top_t", args.top_t, 1, 50)?;
        let started = Instant::now();
        let context = match self.engine.search_domain_kg(query, top_t).await {
            Ok(context) => context,
            Err(e) => return Ok(failed("search_domain_kg", &e)),
        };
        let result = DomainResult {
            query,
            functions: context
                .functions
                .iter()
                .map(|f| FunctionHit {
                    iri: &f.iri,
                    name: &f.name,
                    package: f.package.as_deref(),
                    module: f.module.as_deref(),
                    signature: f.signature.as_deref(),
                    params: &f.params,
                    returns: f.returns.as_deref(),
                    depends_on: &f.depends_on,
                    siblings: &f.siblings,
                    knowledge: &f.knowledge,
                    score: f.score,
                })
                .collect(),
            status: context.status.as_deref(),
            trace: &context.trace,
        };
        done("search_domain_kg", started, context.functions.len());
        structured(&result, text::functions(&context))
    }

    /// DomAgent's bottom-up tool: the worked code examples (cases) nearest to a task,
    /// each with its title, code and the API functions it exercises. Searches the
    /// coverage-selected case base (all cases when none is built).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn search_case_base(
        &self,
        Parameters(args): Parameters<SearchCaseBaseArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = required_text("query", &args.query)?;
        let k = in_range("k", args.k, 1, 20)?;
        let started = Instant::now();
        let cases = match self.engine.search_case_base(query, k).await {
            Ok(cases) => cases,
            Err(e) => return Ok(failed("search_case_base", &e)),
        };
        done("search_case_base", started, cases.len());
        structured(
            &CasesResult {
                query,
                cases: &cases,
            },
            text::cases(&cases),
        )
    }

    /// Retrieves context for a question as a FusedContext: text passages with their
    /// sources (unstructured), triples (structured_facts), API functions, cases,
    /// evidence or dependency paths, the SPARQL that ran, and a trace of what each
    /// stage kept and dropped. Strategies: auto, bm25, flat, hybrid, unified, domain, paths,
    /// neighborhood.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn retrieve_context(
        &self,
        Parameters(args): Parameters<RetrieveContextArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = required_text("query", &args.query)?;
        let strategy = args.strategy;
        let top_k = in_range("top_k", args.top_k, 1, 50)?;
        // The engine's defaults (Engine::builder), with the tool's arguments on top.
        let options = RetrieveOptions {
            strategy,
            top_k,
            ..self.engine.retrieve_options().clone()
        };
        let started = Instant::now();
        let context: FusedContext = match self.engine.retrieve(query, &options).await {
            Ok(context) => context,
            Err(e) => return Ok(failed("retrieve_context", &e)),
        };
        done("retrieve_context", started, context.unstructured.len());
        structured(&context, text::context(&context))
    }

    /// Runs a read-only SPARQL 1.1 query (SELECT, ASK, CONSTRUCT or DESCRIBE; updates
    /// are refused) over the union of all graphs, with a 10 s timeout and at most
    /// 1,000 rows or triples (truncated: true when cut). Terms are written in
    /// N-Triples syntax: <iri>, "literal", "5"^^<datatype>, "text"@lang, _:blank.
    /// SELECT gives {variables, rows} (null for unbound), ASK {boolean}, CONSTRUCT
    /// and DESCRIBE {triples: [[s, p, o]]}.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn sparql_query(
        &self,
        Parameters(args): Parameters<SparqlQueryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.query.trim().is_empty() {
            return Err(ErrorData::invalid_params(
                "query is empty: give a SELECT, ASK, CONSTRUCT or DESCRIBE query",
                None,
            ));
        }
        if args.query.chars().count() > sparql::MAX_QUERY_CHARS {
            return Err(ErrorData::invalid_params(
                format!(
                    "query is longer than {} characters",
                    sparql::MAX_QUERY_CHARS
                ),
                None,
            ));
        }
        let started = Instant::now();
        let engine = self.engine.clone();
        let query = args.query;
        let ran = tokio::task::spawn_blocking(move || sparql::read_only(&engine, &query)).await;
        let result = match ran {
            Ok(Ok(result)) => result,
            Ok(Err(message)) => {
                tracing::warn!("sparql_query: {message}");
                return Ok(tool_error(message));
            }
            Err(e) => return Ok(tool_error(format!("the query task failed: {e}"))),
        };
        done("sparql_query", started, result.size());
        let summary = result.summary();
        structured(&result, summary)
    }

    /// Describes one entity of the graph, given its IRI or a label: its types,
    /// labels, comment, and up to 50 outgoing and 50 incoming triples (with the
    /// graph holding each). A label naming several entities gives status "ambiguous"
    /// and the candidates (IRI, labels, types) to pick from; call again with one IRI.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn describe_entity(
        &self,
        Parameters(args): Parameters<DescribeEntityArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        required_text("iri_or_label", &args.iri_or_label)?;
        let started = Instant::now();
        let engine = self.engine.clone();
        let input = args.iri_or_label;
        let ran = tokio::task::spawn_blocking(move || engine.describe_entity(&input)).await;
        let description: EntityDescription = match ran {
            Ok(Ok(description)) => description,
            Ok(Err(e)) => return Ok(failed("describe_entity", &e)),
            Err(e) => return Ok(tool_error(format!("the describe task failed: {e}"))),
        };
        done(
            "describe_entity",
            started,
            description.outgoing.len() + description.incoming.len(),
        );
        if description.status == EntityStatus::NotFound {
            return Ok(tool_error(format!(
                "no entity has the IRI or label '{}' (labels are matched against rdfs:label, \
                 skos:prefLabel, skos:altLabel, kgfuse:name and kgfuse:qualifiedName)",
                one_line(description.query.trim())
            )));
        }
        structured(&description, text::entity(&description))
    }

    /// Answers a question from the store with citations (the grounded answer loop):
    /// retrieves, ranks and filters passages, resolves contradictions between sources,
    /// rewrites the query when the context is weak, and answers only from what it
    /// cites. Returns status (answered, insufficient_context or failure), the answer
    /// with [n] markers into citations, confidence, grounding_status, contradictions,
    /// knowledge_gap, errors, the context used and a trace.
    #[tool(annotations(read_only_hint = true))]
    async fn ask(
        &self,
        Parameters(args): Parameters<AskArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let question = required_text("question", &args.question)?;
        let started = Instant::now();
        let answer: Answer = self.engine.ask_default(question).await;
        done("ask", started, answer.citations.len());
        let summary = text::answer(&answer);
        let mut result = structured(&answer, summary)?;
        if answer.status == AnswerStatus::Failure {
            tracing::warn!("ask: {}", answer.errors.join("; "));
            result.is_error = Some(true);
        }
        Ok(result)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KgfuseMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kgfuse", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// A non-blank text argument of bounded length.
fn required_text<'a>(name: &str, value: &'a str) -> Result<&'a str, ErrorData> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ErrorData::invalid_params(format!("{name} is empty"), None));
    }
    if value.chars().count() > MAX_TEXT_CHARS {
        return Err(ErrorData::invalid_params(
            format!("{name} is longer than {MAX_TEXT_CHARS} characters"),
            None,
        ));
    }
    Ok(value)
}

/// A count argument within bounds.
fn in_range(name: &str, value: usize, min: usize, max: usize) -> Result<usize, ErrorData> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ErrorData::invalid_params(
            format!("{name} must be between {min} and {max}, not {value}"),
            None,
        ))
    }
}

/// A successful result: `value` as structured content, `summary` as the text.
fn structured(value: &impl Serialize, summary: String) -> Result<CallToolResult, ErrorData> {
    let value = serde_json::to_value(value).map_err(|e| {
        ErrorData::internal_error(format!("cannot serialise the result: {e}"), None)
    })?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(summary)];
    Ok(result)
}

/// A tool error with a one-line message.
fn tool_error(message: impl AsRef<str>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(one_line(message.as_ref()))])
}

/// A tool error from an engine error, logged.
fn failed(tool: &str, error: &kgfuse::Error) -> CallToolResult {
    let message = one_line(&error.to_string());
    tracing::warn!("{tool}: {message}");
    tool_error(message)
}

/// Logs a finished call.
fn done(tool: &str, started: Instant, items: usize) {
    tracing::info!(
        "{tool}: {items} item(s) in {} ms",
        started.elapsed().as_millis()
    );
}

/// Collapses a message to one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod mcp_tests;
