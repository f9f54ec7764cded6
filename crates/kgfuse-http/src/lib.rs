#![doc = include_str!("../README.md")]

mod access;
mod api;
mod audit;
mod error;
mod graph_store;
mod negotiate;
mod sparql;
mod text2sparql;
mod tls;

pub use audit::AuditTarget;
pub use kgfuse_access::route::{StoreRoute, is_store_name, store_route};
pub use kgfuse_access::tokens;
pub use sparql::TRUNCATED_HEADER;
pub use tls::TlsFiles;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use error::ApiError;
use kgfuse::Engine;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The environment variable holding the bearer token that authorises updates.
pub const TOKEN_ENV: &str = "KGFUSE_HTTP_TOKEN";

/// How the server runs. [`ServerConfig::default`] is the safe choice: localhost
/// only, read-only, bounded bodies, queries, results and concurrency, no CORS.
/// The limits hold per store: each store has its own `max_concurrent` permits.
#[derive(Clone)]
pub struct ServerConfig {
    /// Address to listen on (port 0 picks a free port; see [`Server::local_addr`]).
    pub bind: SocketAddr,
    /// Largest request body accepted, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// SPARQL queries are cancelled after this long (503).
    pub query_timeout: Duration,
    /// `/retrieve` and `/ask` are cancelled after this long (503).
    pub request_timeout: Duration,
    /// Most solutions or triples a query returns; the response then carries
    /// `X-Kgfuse-Truncated: true`.
    pub max_rows: usize,
    /// Requests that touch the store at once; more wait their turn.
    pub max_concurrent: usize,
    /// SPARQL Update and Graph Store writes are allowed (to callers whose token
    /// grants `write`); off, they are refused (403) whatever the token.
    pub allow_updates: bool,
    /// Without a token file: the one token (16+ characters) that authorises
    /// writes. Not used with `tokens`.
    pub update_token: Option<String>,
    /// A file of hashed, scoped tokens (`kgfuse token`): every request but
    /// `/health` and the console page then needs one. Re-read when it changes.
    pub tokens: Option<PathBuf>,
    /// Serve without a token file on an address other machines reach: the data
    /// is public. Without it, [`Server::bind`] refuses such an address.
    pub public: bool,
    /// The audit log's target.
    pub audit: AuditTarget,
    /// Serve HTTPS with this certificate and key.
    pub tls: Option<TlsFiles>,
    /// Origins allowed to call the server from a browser page (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// The dataset IRIs `GET /text2sparql` answers for (the store being
    /// served); none: any.
    pub datasets: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
            max_body_bytes: 10 * 1024 * 1024,
            query_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(120),
            max_rows: 10_000,
            max_concurrent: 16,
            allow_updates: false,
            update_token: None,
            tokens: None,
            public: false,
            audit: AuditTarget::Off,
            tls: None,
            cors_origins: Vec::new(),
            datasets: Vec::new(),
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("query_timeout", &self.query_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_rows", &self.max_rows)
            .field("max_concurrent", &self.max_concurrent)
            .field("allow_updates", &self.allow_updates)
            .field("update_token", &self.update_token.is_some())
            .field("tokens", &self.tokens)
            .field("public", &self.public)
            .field("audit", &self.audit)
            .field("tls", &self.tls)
            .field("cors_origins", &self.cors_origins)
            .field("datasets", &self.datasets)
            .finish()
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("server error: {0}")]
    Serve(#[from] std::io::Error),
}

/// One store a server serves, under `/s/NAME/`.
#[derive(Clone)]
pub struct ServedStore {
    /// The name in its paths (see [`is_store_name`]).
    pub name: String,
    /// The store, with its own model and settings.
    pub engine: Engine,
    /// Limits of this store that differ from the server's.
    pub limits: StoreLimits,
}

impl ServedStore {
    /// A store served under `name` with the server's limits.
    pub fn new(name: impl Into<String>, engine: Engine) -> Self {
        Self {
            name: name.into(),
            engine,
            limits: StoreLimits::default(),
        }
    }
}

/// A store's own limits; each one unset takes the server's ([`ServerConfig`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreLimits {
    /// SPARQL queries are cancelled after this long.
    pub query_timeout: Option<Duration>,
    /// `/retrieve` and `/ask` are cancelled after this long.
    pub request_timeout: Option<Duration>,
    /// Most solutions or triples a query returns.
    pub max_rows: Option<usize>,
    /// Requests that touch this store at once.
    pub max_concurrent: Option<usize>,
    /// The dataset IRIs `GET /text2sparql` answers for with this store.
    pub datasets: Option<Vec<String>>,
}

impl StoreLimits {
    /// The server's configuration with this store's limits on top.
    fn over(&self, server: &ServerConfig) -> ServerConfig {
        let mut config = server.clone();
        config.query_timeout = self.query_timeout.unwrap_or(server.query_timeout);
        config.request_timeout = self.request_timeout.unwrap_or(server.request_timeout);
        config.max_rows = self.max_rows.unwrap_or(server.max_rows);
        config.max_concurrent = self.max_concurrent.unwrap_or(server.max_concurrent);
        if let Some(datasets) = &self.datasets {
            config.datasets.clone_from(datasets);
        }
        config
    }
}

/// What every handler of one store shares: the engine, the limits, the
/// concurrency permits.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    pub(crate) config: Arc<ServerConfig>,
    permits: Arc<Semaphore>,
    /// Slots for SPARQL queries that ran past [`kgfuse::DEMOTE_AFTER`]: such a
    /// query gives its permit back to short requests (its thread runs at the
    /// lowest priority by then).
    long_lane: Arc<Semaphore>,
}

impl AppState {
    /// Waits for one of the `max_concurrent` permits to touch the store.
    pub(crate) async fn permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is shutting down",
                )
            })
    }

    /// A long query's permit: a slot of the long lane when one is free (the
    /// permit goes back to short requests), else the permit it holds.
    pub(crate) fn move_to_long_lane(&self, permit: OwnedSemaphorePermit) -> OwnedSemaphorePermit {
        match Arc::clone(&self.long_lane).try_acquire_owned() {
            Ok(slot) => {
                drop(permit);
                slot
            }
            Err(_) => permit,
        }
    }
}

/// A header's value as text, when present and visible ASCII.
pub(crate) fn header_str(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The routes, limits and middleware over the stores, ready to serve. (Useful on
/// its own to embed kgfuse in a larger axum application.) Every request passes
/// one check before any store is touched (`access::dispatch`).
pub fn router(stores: Vec<ServedStore>, config: ServerConfig) -> Result<Router, HttpError> {
    check_config(&stores, &config)?;
    let cors = cors_layer(&config.cors_origins)?;
    let policy = match &config.tokens {
        Some(path) => access::Policy::Tokens(
            tokens::TokenSource::open(path).map_err(|e| HttpError::Config(e.to_string()))?,
        ),
        None => access::Policy::Open {
            update_digest: config
                .update_token
                .as_deref()
                .map(|token| tokens::digest(token.trim())),
        },
    };
    let audit = audit::Audit::open(&config.audit).map_err(|e| {
        HttpError::Config(format!("cannot open the audit log {:?}: {e}", config.audit))
    })?;
    let stores = stores
        .into_iter()
        .map(|served| {
            let config = Arc::new(served.limits.over(&config));
            let state = AppState {
                engine: served.engine,
                permits: Arc::new(Semaphore::new(config.max_concurrent)),
                long_lane: Arc::new(Semaphore::new(config.max_concurrent)),
                config: Arc::clone(&config),
            };
            let store = access::Store {
                router: store_routes(state.clone(), config.max_body_bytes),
                state,
            };
            (served.name, store)
        })
        .collect::<BTreeMap<_, _>>();
    let gate = Arc::new(access::Gate {
        stores,
        policy,
        allow_updates: config.allow_updates,
        max_body_bytes: config.max_body_bytes,
        audit,
    });
    let mut router = Router::new()
        .fallback(access::dispatch)
        .with_state(gate)
        .layer(middleware::from_fn(log_request))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("a request handler panicked");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
                .into_response()
        }));
    if let Some(cors) = cors {
        router = router.layer(cors);
    }
    Ok(router)
}

/// Refuses configurations that cannot be served safely or at all.
fn check_config(stores: &[ServedStore], config: &ServerConfig) -> Result<(), HttpError> {
    if stores.is_empty() {
        return Err(HttpError::Config("no store to serve".into()));
    }
    let mut names = std::collections::BTreeSet::new();
    for store in stores {
        if !is_store_name(&store.name) {
            return Err(HttpError::Config(format!(
                "store name {:?}: use 1 to 64 letters, digits, '_' or '-'",
                store.name
            )));
        }
        if !names.insert(store.name.as_str()) {
            return Err(HttpError::Config(format!(
                "store name {:?} is given twice",
                store.name
            )));
        }
    }
    if config
        .update_token
        .as_deref()
        .is_some_and(|token| token.trim().len() < 16)
    {
        return Err(HttpError::Config(
            "the update token must have at least 16 characters".into(),
        ));
    }
    if config.tokens.is_some() && config.update_token.is_some() {
        return Err(HttpError::Config(format!(
            "with a token file, writes are granted by its write tokens: unset {TOKEN_ENV}"
        )));
    }
    if config.allow_updates && config.tokens.is_none() && config.update_token.is_none() {
        return Err(HttpError::Config(format!(
            "updates need tokens: a token file with write tokens, or a token in {TOKEN_ENV}"
        )));
    }
    let limits = std::iter::once((config.max_concurrent, config.max_rows)).chain(
        stores
            .iter()
            .map(|store| store.limits.over(config))
            .map(|limits| (limits.max_concurrent, limits.max_rows)),
    );
    for (max_concurrent, max_rows) in limits {
        if max_concurrent == 0 || max_rows == 0 {
            return Err(HttpError::Config(
                "max_concurrent and max_rows must be at least 1".into(),
            ));
        }
    }
    if !config.bind.ip().is_loopback() && config.tokens.is_none() && !config.public {
        return Err(HttpError::Config(format!(
            "{} is reachable from other machines and this server has no token file: give              --tokens FILE (`kgfuse token add`), or --public if the data is public",
            config.bind
        )));
    }
    Ok(())
}

/// One store's endpoints, relative to its root.
fn store_routes(state: AppState, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/sparql", get(sparql::get).post(sparql::post))
        .route(
            "/store",
            get(graph_store::get)
                .put(graph_store::put)
                .post(graph_store::post)
                .delete(graph_store::delete),
        )
        .route("/retrieve", axum::routing::post(api::retrieve))
        .route("/ask", axum::routing::post(api::ask))
        .route("/stats", get(api::stats))
        .route("/prefixes", get(api::prefixes))
        .route("/text2sparql", get(text2sparql::get))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such endpoint") })
        .with_state(state)
        .layer(DefaultBodyLimit::max(max_body_bytes))
}

/// CORS for the configured origins, or none.
fn cors_layer(origins: &[String]) -> Result<Option<CorsLayer>, HttpError> {
    if origins.is_empty() {
        return Ok(None);
    }
    let origins = origins
        .iter()
        .map(|origin| {
            HeaderValue::from_str(origin).map_err(|_| {
                HttpError::Config(format!("CORS origin {origin:?} is not a header value"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([header::CONTENT_TYPE, header::ACCEPT, header::AUTHORIZATION])
            .expose_headers([HeaderName::from_static(TRUNCATED_HEADER)]),
    ))
}

/// One log line per request on stderr: method, path, status, time.
async fn log_request(request: axum::extract::Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::info!(
        "{method} {path} {} {:.1} ms",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    response
}

/// A bound, not yet running server.
#[derive(Debug)]
pub struct Server {
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Server {
    /// Binds `config.bind` and prepares the routes over the stores.
    pub async fn bind(stores: Vec<ServedStore>, config: ServerConfig) -> Result<Self, HttpError> {
        let addr = config.bind;
        let tls = config.tls.as_ref().map(tls::server_config).transpose()?;
        if !addr.ip().is_loopback() && tls.is_none() {
            tracing::warn!(
                "listening on {addr} without TLS: tokens and data cross the network in \
                 clear; give --tls-cert and --tls-key, or put a TLS proxy in front"
            );
        }
        let router = router(stores, config)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        Ok(Self {
            listener,
            router,
            tls,
        })
    }

    /// The address actually bound (the port chosen when the config said 0).
    pub fn local_addr(&self) -> Result<SocketAddr, HttpError> {
        Ok(self.listener.local_addr()?)
    }

    /// Whether the server speaks HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        match self.tls {
            Some(config) => {
                let listener = tls::TlsListener::new(self.listener, config)?;
                axum::serve(listener, self.router)
                    .with_graceful_shutdown(shutdown)
                    .await?;
            }
            None => {
                axum::serve(self.listener, self.router)
                    .with_graceful_shutdown(shutdown)
                    .await?;
            }
        }
        Ok(())
    }
}
