#![doc = include_str!("../README.md")]

mod api;
mod error;
mod graph_store;
mod negotiate;
mod sparql;
mod text2sparql;

pub use sparql::TRUNCATED_HEADER;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use error::ApiError;
use kgfuse::Engine;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The environment variable holding the bearer token that authorises updates.
pub const TOKEN_ENV: &str = "KGFUSE_HTTP_TOKEN";

/// How the server runs. [`ServerConfig::default`] is the safe choice: localhost
/// only, read-only, bounded bodies, queries, results and concurrency, no CORS.
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
    /// With a token, SPARQL Update and Graph Store writes are allowed to requests
    /// carrying `Authorization: Bearer <token>`; without one they are refused (403).
    pub update_token: Option<String>,
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
            update_token: None,
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
            .field("updates", &self.update_token.is_some())
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

/// What every handler shares: the engine, the limits, the concurrency permits.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    pub(crate) config: Arc<ServerConfig>,
    permits: Arc<Semaphore>,
    /// Slots for SPARQL queries that ran past [`kgfuse::DEMOTE_AFTER`]: such a
    /// query gives its permit back to short requests (its thread runs at the
    /// lowest priority by then).
    long_lane: Arc<Semaphore>,
    /// SHA-256 of the update token (compared digest to digest).
    token_digest: Option<[u8; 32]>,
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

/// Lets a write through when updates are enabled and the request carries the
/// token: 403 when updates are off, 401 (with `WWW-Authenticate`) without the token.
pub(crate) fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = state.token_digest else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "updates are disabled on this server (start it with --allow-updates and a token)",
        ));
    };
    let given = header_str(headers, header::AUTHORIZATION)
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| digest(token.trim()));
    // Comparing fixed-size digests takes the same time whatever the token.
    if given.is_some_and(|given| given == expected) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "updates need Authorization: Bearer <token>",
        ))
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The routes, limits and middleware over `engine`, ready to serve. (Useful on its
/// own to embed kgfuse in a larger axum application.)
pub fn router(engine: Engine, config: ServerConfig) -> Result<Router, HttpError> {
    if config
        .update_token
        .as_deref()
        .is_some_and(|token| token.trim().len() < 16)
    {
        return Err(HttpError::Config(
            "the update token must have at least 16 characters".into(),
        ));
    }
    if config.max_concurrent == 0 || config.max_rows == 0 {
        return Err(HttpError::Config(
            "max_concurrent and max_rows must be at least 1".into(),
        ));
    }
    let cors = cors_layer(&config.cors_origins)?;
    let state = AppState {
        engine,
        permits: Arc::new(Semaphore::new(config.max_concurrent)),
        long_lane: Arc::new(Semaphore::new(config.max_concurrent)),
        token_digest: config.update_token.as_deref().map(|t| digest(t.trim())),
        config: Arc::new(config.clone()),
    };
    let mut router = Router::new()
        .route("/", get(api::console))
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
        .route("/health", get(api::health))
        .route("/prefixes", get(api::prefixes))
        .route("/text2sparql", get(text2sparql::get))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such endpoint") })
        .with_state(state)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
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
            .allow_headers([header::CONTENT_TYPE, header::ACCEPT])
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
}

impl Server {
    /// Binds `config.bind` and prepares the routes over `engine`.
    pub async fn bind(engine: Engine, config: ServerConfig) -> Result<Self, HttpError> {
        let addr = config.bind;
        if !addr.ip().is_loopback() {
            tracing::warn!(
                "listening on {addr}, reachable from other machines; kgfuse has no TLS, put a \
                 reverse proxy in front of it"
            );
        }
        let router = router(engine, config)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        Ok(Self { listener, router })
    }

    /// The address actually bound (the port chosen when the config said 0).
    pub fn local_addr(&self) -> Result<SocketAddr, HttpError> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        Ok(())
    }
}
