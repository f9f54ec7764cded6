//! Who may do what on which store: the one check every request passes, in
//! [`dispatch`], before any store is touched.
//!
//! A request names its store by path (`/s/NAME/sparql`; the bare paths mean the one
//! store of a single-store server). With a token file, every request but `/health`
//! and the console page carries a token: none or an unknown one is 401; a token
//! that does not hold the named store is 403 with the same body whether the store
//! exists or not (the check runs before the store is looked up); a token that holds
//! the store but not the scope the request needs is 403 naming the scope.

use crate::audit::Audit;
use crate::error::ApiError;
use crate::{AppState, header_str};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Router, body};
use kgfuse_access::route::{StoreRoute, is_store_name, store_route};
use kgfuse_access::tokens::{self, Scope, TokenEntry, TokenSource};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tower::ServiceExt;

/// The message of a 403 for a store the token does not hold: the same whether
/// the store exists or not.
const NOT_YOURS: &str = "this token does not grant access to that store";

/// How requests are authorised.
pub(crate) enum Policy {
    /// No token file: reads are open (a loopback server, or one started with
    /// `--public`); writes need the update token, when updates are on.
    Open {
        /// SHA-256 of the update token (compared digest to digest).
        update_digest: Option<[u8; 32]>,
    },
    /// Every request but `/health` and the console page carries a token of the
    /// file; its scope and stores decide.
    Tokens(TokenSource),
}

/// Who made a request, as the audit log names them.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// No token asked for (an open server's reads).
    Anonymous,
    /// The update token of an open server.
    UpdateToken,
    /// A token of the file: its entry as read when the request came in.
    Token(TokenEntry),
}

impl Caller {
    /// The id the audit log records (never the token).
    pub(crate) fn audit_id(&self) -> Option<&str> {
        match self {
            Self::Anonymous => None,
            Self::UpdateToken => Some("update-token"),
            Self::Token(entry) => Some(&entry.id),
        }
    }
}

/// Everything [`dispatch`] needs: the stores' routers, the policy, the audit log.
pub(crate) struct Gate {
    pub(crate) stores: BTreeMap<String, Store>,
    pub(crate) policy: Policy,
    pub(crate) allow_updates: bool,
    pub(crate) max_body_bytes: usize,
    pub(crate) audit: Audit,
}

/// One store behind the gate: its routes and its state.
pub(crate) struct Store {
    pub(crate) router: Router,
    pub(crate) state: AppState,
}

/// The server's one entry: finds the store, checks the caller against it, then
/// hands the request (its path made relative to the store) to that store's routes.
pub(crate) async fn dispatch(State(gate): State<Arc<Gate>>, request: Request) -> Response {
    let started = Instant::now();
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let (response, store, caller) = match check(&gate, request).await {
        Ok(Passed::Forward {
            store,
            caller,
            router,
            request,
        }) => {
            let response = match router.oneshot(*request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            (response, Some(store), Some(caller))
        }
        Ok(Passed::Answered(response)) => (response, None, None),
        Err(refused) => (
            refused.response.into_response(),
            refused.store,
            refused.caller,
        ),
    };
    gate.audit.record(
        &method,
        &path,
        store.as_deref(),
        caller.as_ref().and_then(Caller::audit_id),
        &response,
        started.elapsed(),
    );
    response
}

/// What the check decided for a request it lets through.
enum Passed {
    /// To the store's routes.
    Forward {
        store: String,
        caller: Caller,
        router: Router,
        request: Box<Request>,
    },
    /// Answered without a store (`/health`, the console page, a redirect).
    Answered(Response),
}

/// A refused request, with what is known of it for the audit log.
struct Refused {
    response: ApiError,
    store: Option<String>,
    caller: Option<Caller>,
}

impl From<ApiError> for Refused {
    fn from(response: ApiError) -> Self {
        Self {
            response,
            store: None,
            caller: None,
        }
    }
}

/// The check itself: caller, store, scope, in that order.
async fn check(gate: &Gate, request: Request) -> Result<Passed, Refused> {
    let path = request.uri().path().to_owned();
    let route = store_route(&path);
    // Pages that show no data of any store: the same for every name.
    match route {
        StoreRoute::Root("/health") if request.method() == Method::GET => {
            return Ok(Passed::Answered(crate::api::health().await.into_response()));
        }
        StoreRoute::Root("/") | StoreRoute::Named { rest: "/", .. }
            if request.method() == Method::GET =>
        {
            return Ok(Passed::Answered(crate::api::console().await));
        }
        StoreRoute::Named { name, rest: "" } if is_store_name(name) => {
            return Ok(Passed::Answered(
                Redirect::permanent(&format!("/s/{name}/")).into_response(),
            ));
        }
        _ => {}
    }
    let caller = identify(gate, &request).map_err(Refused::from)?;
    let (name, rest) = match route {
        StoreRoute::Named { name, rest } => {
            // The audit log names the store asked for, existing or not.
            if !holds_store(&caller, gate, name) {
                return Err(refused(
                    ApiError::new(StatusCode::FORBIDDEN, NOT_YOURS),
                    Some(name.to_owned()),
                    caller,
                ));
            }
            (name.to_owned(), rest.to_owned())
        }
        StoreRoute::Root(rest) => {
            let mut names = gate.stores.keys();
            match (names.next(), names.next()) {
                (Some(only), None) => {
                    if !holds_store(&caller, gate, only) {
                        return Err(refused(
                            ApiError::new(StatusCode::FORBIDDEN, NOT_YOURS),
                            Some(only.clone()),
                            caller,
                        ));
                    }
                    (only.clone(), rest.to_owned())
                }
                _ => {
                    return Err(refused(
                        ApiError::new(
                            StatusCode::NOT_FOUND,
                            "this server holds several stores: name one, as /s/NAME/sparql",
                        ),
                        None,
                        caller,
                    ));
                }
            }
        }
    };
    let Some(store) = gate.stores.get(&name) else {
        // Only a caller who may see every store gets here for a missing one.
        return Err(refused(
            ApiError::new(StatusCode::NOT_FOUND, "no such store"),
            Some(name),
            caller,
        ));
    };
    let request = match scope_check(gate, store, &caller, request).await {
        Ok(request) => request,
        Err(error) => return Err(refused(error, Some(name), caller)),
    };
    let request = relative_to_store(request, &rest);
    Ok(Passed::Forward {
        store: name,
        caller,
        router: store.router.clone(),
        request: Box::new(request),
    })
}

fn refused(response: ApiError, store: Option<String>, caller: Caller) -> Refused {
    Refused {
        response: response.into_json(),
        store,
        caller: Some(caller),
    }
}

/// The caller: a token of the file (401 without a valid one), or, on an open
/// server, anonymous or the holder of the update token.
fn identify(gate: &Gate, request: &Request) -> Result<Caller, ApiError> {
    let presented = header_str(request.headers(), header::AUTHORIZATION).and_then(tokens::bearer);
    match &gate.policy {
        Policy::Tokens(source) => {
            let file = source.current();
            match presented.and_then(|token| file.verify(token)) {
                Some(entry) => Ok(Caller::Token(entry.clone())),
                None => Err(unauthorized(
                    "this server needs a token: Authorization: Bearer <token>",
                )
                .into_json()),
            }
        }
        Policy::Open { update_digest } => {
            let holds_update_token = match (presented, update_digest) {
                (Some(token), Some(expected)) => {
                    // Comparing fixed-size digests takes the same time whatever the token.
                    tokens::digest(token.trim()) == *expected
                }
                _ => false,
            };
            Ok(if holds_update_token {
                Caller::UpdateToken
            } else {
                Caller::Anonymous
            })
        }
    }
}

/// Whether the caller may use the store of that name at all (any scope).
fn holds_store(caller: &Caller, gate: &Gate, name: &str) -> bool {
    match (&gate.policy, caller) {
        (Policy::Open { .. }, _) => true,
        (Policy::Tokens(_), Caller::Token(entry)) => entry.allows(name, Scope::Read),
        (Policy::Tokens(_), _) => false,
    }
}

/// Checks the scope the request needs (reading the body of a SPARQL POST to
/// tell a query from an update) and gives the request back, body restored.
async fn scope_check(
    gate: &Gate,
    store: &Store,
    caller: &Caller,
    request: Request,
) -> Result<Request, ApiError> {
    let (request, needed) = needed_scope(gate, store, request).await?;
    if needed == Scope::Read {
        return Ok(request);
    }
    if !gate.allow_updates {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "updates are disabled on this server (start it with --allow-updates)",
        ));
    }
    let granted = match (&gate.policy, caller) {
        (Policy::Open { .. }, Caller::UpdateToken) => Some(Scope::Admin),
        (Policy::Open { .. }, _) => None,
        (Policy::Tokens(_), Caller::Token(entry)) => Some(entry.scope),
        (Policy::Tokens(_), _) => None,
    };
    match granted {
        Some(scope) if scope >= needed => Ok(request),
        Some(scope) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("this token's scope is {scope}; this request needs {needed}"),
        )),
        None => Err(unauthorized("updates need Authorization: Bearer <token>")),
    }
}

/// The scope a request needs: `write` for SPARQL Update and Graph Store writes,
/// `admin` for an update that clears more than named graphs, else `read`.
async fn needed_scope(
    gate: &Gate,
    store: &Store,
    request: Request,
) -> Result<(Request, Scope), ApiError> {
    let rest = match store_route(request.uri().path()) {
        StoreRoute::Named { rest, .. } => rest.to_owned(),
        StoreRoute::Root(rest) => rest.to_owned(),
    };
    let method = request.method().clone();
    match (rest.as_str(), method) {
        ("/store", Method::PUT | Method::POST | Method::DELETE) => Ok((request, Scope::Write)),
        ("/sparql", Method::POST) => {
            let media = crate::sparql::media_type(request.headers());
            if media != "application/sparql-update" && media != "application/x-www-form-urlencoded"
            {
                return Ok((request, Scope::Read));
            }
            let (parts, body) = request.into_parts();
            let bytes = body::to_bytes(body, gate.max_body_bytes)
                .await
                .map_err(|_| {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("the body is larger than {} bytes", gate.max_body_bytes),
                    )
                })?;
            let update = if media == "application/sparql-update" {
                Some(String::from_utf8_lossy(&bytes).into_owned())
            } else {
                crate::sparql::Params::parse(&bytes)
                    .ok()
                    .and_then(|params| params.update_text().map(str::to_owned))
            };
            let needed = match update {
                // An update the parser rejects is answered 400 by the handler.
                Some(text) => match store.state.engine.update_clears_whole_store(&text) {
                    Ok(true) => Scope::Admin,
                    Ok(false) | Err(_) => Scope::Write,
                },
                None => Scope::Read,
            };
            Ok((Request::from_parts(parts, Body::from(bytes)), needed))
        }
        _ => Ok((request, Scope::Read)),
    }
}

/// The request with its path made relative to the store (`/s/NAME/sparql?q` →
/// `/sparql?q`).
fn relative_to_store(mut request: Request, rest: &str) -> Request {
    let query = request
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    if let Ok(uri) = format!("{rest}{query}").parse::<Uri>() {
        *request.uri_mut() = uri;
    }
    request
}

/// 401 with the challenge a client expects.
fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
        .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
}
