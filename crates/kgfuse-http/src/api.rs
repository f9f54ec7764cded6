//! The JSON API (`POST /retrieve`, `POST /ask`, `GET /stats`, `GET /health`,
//! `GET /prefixes`) and the web console at `/`.

use crate::AppState;
use crate::audit::RowCount;
use crate::error::{ApiError, one_line};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use kgfuse::{Answer, RetrieveOptions, StoreStats, Strategy};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The web console: one self-contained page (no external scripts or styles).
const CONSOLE: &str = include_str!("../assets/console.html");

/// Longest question accepted, in characters.
const MAX_QUESTION_CHARS: usize = 10_000;
/// Largest `top_k` accepted.
const MAX_TOP_K: usize = 100;

/// `POST /retrieve` and `POST /ask` bodies.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QuestionRequest {
    /// The question or task in plain words.
    question: String,
    /// A strategy name (`auto`, `bm25`, `flat`, `hybrid`, `unified`, `domain`, `paths`,
    /// `neighborhood`); the default is `auto` for retrieve and `hybrid` for ask.
    #[serde(default)]
    strategy: Option<Strategy>,
    /// Most items per list (1–100).
    #[serde(default)]
    top_k: Option<usize>,
}

impl QuestionRequest {
    /// Checks the request and applies it to `options`.
    fn apply(&self, options: &mut RetrieveOptions) -> Result<String, ApiError> {
        let question = self.question.trim();
        if question.is_empty() {
            return Err(ApiError::bad_request("question is empty"));
        }
        if question.chars().count() > MAX_QUESTION_CHARS {
            return Err(ApiError::bad_request(format!(
                "question is longer than {MAX_QUESTION_CHARS} characters"
            )));
        }
        if let Some(strategy) = self.strategy {
            options.strategy = strategy;
        }
        if let Some(top_k) = self.top_k {
            if !(1..=MAX_TOP_K).contains(&top_k) {
                return Err(ApiError::bad_request(format!(
                    "top_k must be between 1 and {MAX_TOP_K}"
                )));
            }
            options.top_k = top_k;
        }
        Ok(question.to_owned())
    }
}

/// A JSON body, or a 400 that says what is wrong with it (axum would answer 415 or
/// 422 for some of these; a malformed body is a bad request). A body over the size
/// limit stays a 413.
fn body<T>(payload: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    payload
        .map(|Json(value)| value)
        .map_err(|rejection| match rejection {
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::bad_request("send the body as JSON with Content-Type: application/json")
            }
            other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, one_line(&other.body_text()))
            }
            other => ApiError::bad_request(one_line(&other.body_text())),
        })
}

/// `POST /retrieve {question, strategy?, top_k?}` → a FusedContext (its items
/// counted as the audit log's rows).
pub(crate) async fn retrieve(
    State(state): State<AppState>,
    payload: Result<Json<QuestionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let request = body(payload).map_err(ApiError::into_json)?;
    // The engine's defaults (Engine::builder), with what the request says on top.
    let mut options = state.engine.retrieve_options().clone();
    let question = request.apply(&mut options).map_err(ApiError::into_json)?;
    let _permit = state.permit().await.map_err(ApiError::into_json)?;
    let retrieval = state.engine.retrieve(&question, &options);
    let context = tokio::time::timeout(state.config.request_timeout, retrieval)
        .await
        .map_err(|_| timed_out(&state))?
        .map_err(|e| ApiError::from(e).into_json())?;
    let items = context.unstructured.len()
        + context.structured_facts.len()
        + context.functions.len()
        + context.cases.len()
        + context.paths.len()
        + context
            .answers
            .as_ref()
            .map_or(0, |answers| answers.rows.len());
    let mut response = Json(context).into_response();
    response.extensions_mut().insert(RowCount(items));
    Ok(response)
}

/// `POST /ask {question, strategy?, top_k?}` → an Answer (its `status` says
/// answered, insufficient_context or failure).
pub(crate) async fn ask(
    State(state): State<AppState>,
    payload: Result<Json<QuestionRequest>, JsonRejection>,
) -> Result<Json<Answer>, ApiError> {
    let request = body(payload).map_err(ApiError::into_json)?;
    let mut options = state.engine.ask_options().clone();
    let question = request
        .apply(&mut options.retrieve)
        .map_err(ApiError::into_json)?;
    let _permit = state.permit().await.map_err(ApiError::into_json)?;
    let answering = state.engine.ask(&question, &options);
    let answer = tokio::time::timeout(state.config.request_timeout, answering)
        .await
        .map_err(|_| timed_out(&state))?;
    Ok(Json(answer))
}

fn timed_out(state: &AppState) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "cancelled after the {:?} request timeout",
            state.config.request_timeout
        ),
    )
    .into_json()
}

/// `GET /stats`: sizes of the graph and the vector table.
pub(crate) async fn stats(State(state): State<AppState>) -> Result<Json<StoreStats>, ApiError> {
    let stats = state
        .engine
        .stats()
        .await
        .map_err(|e| ApiError::from(e).into_json())?;
    Ok(Json(stats))
}

/// `GET /health`: the server is up and answering (no store access).
pub(crate) async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

/// `GET /prefixes`: the prefixes queries may use without declaring them.
pub(crate) async fn prefixes(State(state): State<AppState>) -> Json<serde_json::Value> {
    let prefixes: BTreeMap<String, String> =
        state.engine.query_options().prefixes.into_iter().collect();
    Json(serde_json::json!({ "prefixes": prefixes }))
}

/// `GET /`: the web console.
pub(crate) async fn console() -> Response {
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                 frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        Html(CONSOLE),
    )
        .into_response()
}
