//! `GET /text2sparql?question=...&dataset=...`: the TEXT2SPARQL challenge's API.
//! A question in, the SPARQL query that answers it out, as
//! `{"dataset", "question", "query"}`.
//!
//! The query is the one whose rows answer the question, as a `unified`
//! retrieval finds it (`FusedContext::answers`: the model's plan when a model
//! is configured and its plan answers, else the offline planner's, or for a
//! lookup the best query graph's answer column), without the rest of the
//! retrieval ([`kgfuse::Engine::understand`]: with a model, one reading
//! request and at most one repair); when no query returned
//! rows, a query that matches nothing. The
//! dataset IRI names the store being served: `kgfuse serve --dataset IRI`
//! lists the IRIs it answers for (any, when none is given).

use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

/// Longest question accepted, in characters.
const MAX_QUESTION_CHARS: usize = 2_000;

/// The query returned when kgfuse built none: it matches nothing.
const NO_QUERY: &str = "SELECT ?answer WHERE { FILTER(false) }";

/// The request's parameters.
#[derive(Debug, Deserialize)]
pub(crate) struct Request {
    question: Option<String>,
    dataset: Option<String>,
}

/// The challenge's response body.
#[derive(Debug, Serialize)]
pub(crate) struct Response {
    dataset: String,
    question: String,
    query: String,
}

/// `GET /text2sparql`.
pub(crate) async fn get(
    State(state): State<AppState>,
    request: Result<Query<Request>, QueryRejection>,
) -> Result<Json<Response>, ApiError> {
    let Query(request) = request.map_err(|e| ApiError::bad_request(e.body_text()).into_json())?;
    let question = request
        .question
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request("the parameter question is missing or empty").into_json()
        })?
        .to_owned();
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(ApiError::bad_request(format!(
            "question is longer than {MAX_QUESTION_CHARS} characters"
        ))
        .into_json());
    }
    let dataset = request
        .dataset
        .ok_or_else(|| ApiError::bad_request("the parameter dataset is missing").into_json())?;
    let known = &state.config.datasets;
    if !known.is_empty() && !known.contains(&dataset) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "unknown dataset {dataset}; this server answers for {}",
                known.join(", ")
            ),
        )
        .into_json());
    }
    let _permit = state.permit().await.map_err(ApiError::into_json)?;
    let engine = state.engine.clone();
    let asked = question.clone();
    let answering = tokio::task::spawn_blocking(move || engine.understand(&asked));
    let found = tokio::time::timeout(state.config.request_timeout, answering)
        .await
        .map_err(|_| {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the question timed out").into_json()
        })?
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("answering failed: {e}"),
            )
            .into_json()
        })?
        .map_err(|e| ApiError::from(e).into_json())?;
    let query = found
        .answers
        .map(|a| a.query)
        .unwrap_or_else(|| NO_QUERY.to_owned());
    Ok(Json(Response {
        dataset,
        question,
        query,
    }))
}
