//! `/sparql`: the SPARQL 1.1 Protocol (queries by GET, POST with
//! `application/sparql-query` and form-encoded POST; updates only when enabled).

use crate::audit::RowCount;
use crate::error::{ApiError, one_line};
use crate::negotiate::{self, ResultKind};
use crate::{AppState, header_str};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kgfuse::model::NamedNode;
use kgfuse::{LimitedOutcome, NoProgress, QueryOutcome, ReadOnlyOptions};

/// The response header saying results were cut at the row limit.
pub const TRUNCATED_HEADER: &str = "x-kgfuse-truncated";

/// The protocol's parameters, from a URL query string or a form body.
#[derive(Debug, Default)]
pub(crate) struct Params {
    query: Option<String>,
    update: Option<String>,
    default_graphs: Vec<String>,
    named_graphs: Vec<String>,
    /// `format=` or `output=`: a results format by name, overriding `Accept` when
    /// kgfuse knows the name.
    format: Option<String>,
}

impl Params {
    /// Parses `application/x-www-form-urlencoded` text. `query` and `update` may
    /// appear once; the graph parameters any number of times.
    pub(crate) fn parse(encoded: &[u8]) -> Result<Self, ApiError> {
        let mut params = Self::default();
        for (name, value) in form_urlencoded::parse(encoded) {
            let value = value.into_owned();
            let once = |slot: &mut Option<String>| {
                if slot.replace(value.clone()).is_some() {
                    Err(ApiError::bad_request(format!(
                        "the {name} parameter may be given only once"
                    )))
                } else {
                    Ok(())
                }
            };
            match name.as_ref() {
                "query" => once(&mut params.query)?,
                "update" => once(&mut params.update)?,
                // Clients send both names (SPARQLWrapper does): the first one counts.
                "format" | "output" => {
                    params.format.get_or_insert(value);
                }
                "default-graph-uri" => params.default_graphs.push(value),
                "named-graph-uri" => params.named_graphs.push(value),
                "using-graph-uri" | "using-named-graph-uri" => {
                    return Err(ApiError::bad_request(format!(
                        "{name} is not supported; name the graphs with USING / WITH in the update"
                    )));
                }
                _ => {} // unknown parameters are ignored, as most endpoints do
            }
        }
        Ok(params)
    }

    /// The `update` parameter, when the form carries one.
    pub(crate) fn update_text(&self) -> Option<&str> {
        self.update.as_deref()
    }

    /// The protocol dataset as IRIs.
    fn dataset(&self) -> Result<(Vec<NamedNode>, Vec<NamedNode>), ApiError> {
        let parse = |iris: &[String], name: &str| {
            iris.iter()
                .map(|iri| {
                    NamedNode::new(iri).map_err(|e| {
                        ApiError::bad_request(format!("{name} <{}>: {e}", one_line(iri)))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok((
            parse(&self.default_graphs, "default-graph-uri")?,
            parse(&self.named_graphs, "named-graph-uri")?,
        ))
    }
}

/// `GET /sparql?query=...`.
pub(crate) async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(raw.unwrap_or_default().as_bytes())?;
    if params.update.is_some() {
        return Err(ApiError::bad_request(
            "updates must be sent with POST (application/sparql-update or a form)",
        ));
    }
    let Some(query) = params.query.clone() else {
        return Err(ApiError::bad_request(
            "missing the query parameter: GET /sparql?query=SELECT...",
        ));
    };
    run_query(&state, &headers, query, &params).await
}

/// `POST /sparql` with a query or an update in the body.
pub(crate) async fn post(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    let url_params = Params::parse(raw.unwrap_or_default().as_bytes())?;
    let content_type = media_type(&headers);
    let text = || {
        String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))
    };
    match content_type.as_str() {
        "application/sparql-query" => run_query(&state, &headers, text()?, &url_params).await,
        "application/sparql-update" => run_update(&state, text()?, &url_params).await,
        "application/x-www-form-urlencoded" => {
            let params = Params::parse(&body)?;
            match (params.query.clone(), params.update.clone()) {
                (Some(query), None) => run_query(&state, &headers, query, &params).await,
                (None, Some(update)) => run_update(&state, update, &params).await,
                (Some(_), Some(_)) => Err(ApiError::bad_request(
                    "a request carries a query or an update, not both",
                )),
                (None, None) => Err(ApiError::bad_request(
                    "the form has neither a query nor an update parameter",
                )),
            }
        }
        "" => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "missing Content-Type: use application/sparql-query, application/sparql-update \
             or application/x-www-form-urlencoded",
        )),
        other => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "unsupported Content-Type {}: use application/sparql-query, \
                 application/sparql-update or application/x-www-form-urlencoded",
                one_line(other)
            ),
        )),
    }
}

/// The `Content-Type` without parameters, lower case.
pub(crate) fn media_type(headers: &HeaderMap) -> String {
    header_str(headers, header::CONTENT_TYPE)
        .and_then(|value| value.split(';').next())
        .map(|media| media.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// How long after its timeout a cancelled query's client is answered at the
/// latest, whether or not the query's thread has noticed the cancellation yet.
const CANCEL_MARGIN: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs a read-only query with the server's limits and sends it in the negotiated
/// format.
async fn run_query(
    state: &AppState,
    headers: &HeaderMap,
    query: String,
    params: &Params,
) -> Result<Response, ApiError> {
    let (default_graphs, named_graphs) = params.dataset()?;
    let limits = ReadOnlyOptions {
        timeout: state.config.query_timeout,
        max_rows: state.config.max_rows,
        default_graphs,
        named_graphs,
    };
    let timeout = limits.timeout;
    let permit = state.permit().await?;
    let started = tokio::time::Instant::now();
    let engine = state.engine.clone();
    let mut task = tokio::task::spawn_blocking(move || engine.sparql_read_only(&query, &limits));
    let joined = match tokio::time::timeout(kgfuse::DEMOTE_AFTER, &mut task).await {
        Ok(joined) => joined,
        Err(_) => {
            // A long query: short requests get its permit back.
            let slot = state.move_to_long_lane(permit);
            let answer_by = started + timeout + CANCEL_MARGIN;
            match tokio::time::timeout_at(answer_by, &mut task).await {
                Ok(joined) => joined,
                Err(_) => {
                    // Cancelled at its deadline, but its thread (at the lowest
                    // priority) has not run since to notice; it stops at its next
                    // read of the store, using no CPU until then. The client is
                    // answered now and the slot goes back.
                    drop(slot);
                    return Err(ApiError::from(kgfuse::Error::from(
                        kgfuse::GraphError::Timeout(timeout),
                    )));
                }
            }
        }
    };
    let limited = joined.map_err(|e| {
        tracing::error!("query task failed: {e}");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the query task failed")
    })??;
    respond(headers, params.format.as_deref(), limited)
}

/// Serialises a query outcome in the format the client accepts.
pub(crate) fn respond(
    headers: &HeaderMap,
    explicit_format: Option<&str>,
    limited: LimitedOutcome,
) -> Result<Response, ApiError> {
    let kind = match limited.outcome {
        QueryOutcome::Graph(_) => ResultKind::Graph,
        QueryOutcome::Solutions { .. } | QueryOutcome::Boolean(_) => ResultKind::Solutions,
    };
    let accept = header_str(headers, header::ACCEPT);
    let Some(format) = negotiate::choose(kind, accept, explicit_format) else {
        return Err(ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            format!(
                "cannot send these results as {}; available: {}",
                explicit_format
                    .or(accept)
                    .map_or_else(String::new, one_line),
                kind.media_types()
            ),
        ));
    };
    let rows = match &limited.outcome {
        QueryOutcome::Solutions { rows, .. } => rows.len(),
        QueryOutcome::Graph(triples) => triples.len(),
        QueryOutcome::Boolean(_) => 1,
    };
    let mut body = Vec::new();
    limited
        .outcome
        .write(format, &mut body)
        .map_err(|e| ApiError::from(kgfuse::Error::from(e)))?;
    let mut response = (
        [(header::CONTENT_TYPE, negotiate::content_type(format))],
        body,
    )
        .into_response();
    response.extensions_mut().insert(RowCount(rows));
    if limited.truncated {
        response
            .headers_mut()
            .insert(TRUNCATED_HEADER, HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// Runs an update (the gate let it through: updates are on and the caller's
/// token grants them); the vectors follow the graph before the response is sent.
async fn run_update(
    state: &AppState,
    update: String,
    params: &Params,
) -> Result<Response, ApiError> {
    if !params.default_graphs.is_empty() || !params.named_graphs.is_empty() {
        return Err(ApiError::bad_request(
            "default-graph-uri and named-graph-uri belong to queries, not updates",
        ));
    }
    let _permit = state.permit().await?;
    let report = state.engine.update(&update, &NoProgress).await?;
    tracing::info!("update applied: {report}");
    Ok(axum::Json(serde_json::json!({ "status": "updated", "vectors": report })).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_parameters_decode_and_repeat() {
        let params = Params::parse(
            b"query=SELECT%20*%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D&default-graph-uri=urn%3Aa\
              &default-graph-uri=urn%3Ab&named-graph-uri=urn%3Ac&format=csv",
        )
        .expect("parses");
        assert_eq!(params.query.as_deref(), Some("SELECT * WHERE {?s ?p ?o}"));
        assert_eq!(params.default_graphs, ["urn:a", "urn:b"]);
        assert_eq!(params.named_graphs, ["urn:c"]);
        assert_eq!(params.format.as_deref(), Some("csv"));
        let (default, named) = params.dataset().expect("IRIs");
        assert_eq!((default.len(), named.len()), (2, 1));
    }

    #[test]
    fn repeated_query_and_bad_graph_iris_are_refused() {
        let twice = Params::parse(b"query=ASK%7B%7D&query=ASK%7B%7D").expect_err("twice");
        assert_eq!(twice.status(), StatusCode::BAD_REQUEST);
        let params =
            Params::parse(b"query=ASK%7B%7D&default-graph-uri=not%20an%20iri").expect("parses");
        assert_eq!(
            params.dataset().expect_err("bad IRI").status(),
            StatusCode::BAD_REQUEST
        );
        let using =
            Params::parse(b"update=CLEAR%20ALL&using-graph-uri=urn%3Aa").expect_err("using");
        assert_eq!(using.status(), StatusCode::BAD_REQUEST);
    }
}
