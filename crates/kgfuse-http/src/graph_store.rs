//! `/store`: the SPARQL 1.1 Graph Store HTTP Protocol over named graphs.
//!
//! GET reads a graph; PUT replaces it, POST adds to it, DELETE drops it — the three
//! writes only when updates are enabled and with the bearer token, and each keeps
//! the vectors in step before answering. kgfuse's default graph is the union of
//! its named graphs, so `?default` is refused: name the graph with `?graph=IRI`.

use crate::AppState;
use crate::error::{ApiError, one_line};
use crate::sparql::{media_type, respond};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kgfuse::model::NamedNode;
use kgfuse::{NoProgress, RdfFormat, RdfSource, ReadOnlyOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The graph a request names.
fn target_graph(raw: Option<&str>) -> Result<NamedNode, ApiError> {
    let mut graph = None;
    for (name, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "graph" if graph.is_some() => {
                return Err(ApiError::bad_request("give the graph parameter once"));
            }
            "graph" => graph = Some(value.into_owned()),
            "default" => {
                return Err(ApiError::bad_request(
                    "kgfuse's default graph is the union of its named graphs and cannot be \
                     read or written as one graph here; name a graph with ?graph=IRI",
                ));
            }
            _ => {}
        }
    }
    let graph =
        graph.ok_or_else(|| ApiError::bad_request("missing the graph parameter: ?graph=IRI"))?;
    NamedNode::new(&graph)
        .map_err(|e| ApiError::bad_request(format!("graph <{}>: {e}", one_line(&graph))))
}

/// `GET /store?graph=IRI`: the graph's triples as Turtle or N-Triples; 404 when
/// no such graph exists.
pub(crate) async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let graph = target_graph(raw.as_deref())?;
    let _permit = state.permit().await?;
    let engine = state.engine.clone();
    let timeout = state.config.query_timeout;
    let read = tokio::task::spawn_blocking(move || {
        // A fixed query; the graph arrives as the protocol dataset, never as text.
        let limits = ReadOnlyOptions {
            timeout,
            max_rows: usize::MAX - 1,
            default_graphs: vec![graph],
            named_graphs: Vec::new(),
        };
        let triples =
            engine.sparql_read_only("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", &limits)?;
        // A graph exists while it holds triples (Engine::has_graph), so no triples
        // means no graph.
        let empty = matches!(&triples.outcome, kgfuse::QueryOutcome::Graph(t) if t.is_empty());
        Ok::<_, kgfuse::Error>((!empty).then_some(triples))
    })
    .await
    .map_err(|e| {
        tracing::error!("graph read task failed: {e}");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the read task failed")
    })??;
    match read {
        Some(triples) => respond(&headers, None, triples),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, "no such graph")),
    }
}

/// `PUT /store?graph=IRI`: replaces the graph with the body (201 when it is new).
pub(crate) async fn put(
    state: State<AppState>,
    headers: HeaderMap,
    raw: RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    write(state, headers, raw, body, true).await
}

/// `POST /store?graph=IRI`: adds the body's triples to the graph.
pub(crate) async fn post(
    state: State<AppState>,
    headers: HeaderMap,
    raw: RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    write(state, headers, raw, body, false).await
}

async fn write(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Bytes,
    replace: bool,
) -> Result<Response, ApiError> {
    let graph = target_graph(raw.as_deref())?;
    let media = media_type(&headers);
    let format = rdf_format(&media)?;
    let _permit = state.permit().await?;
    let existed = state.engine.has_graph(graph.as_str())?;
    let upload = Upload::write(state.engine.store().dir(), format, &body)?;
    let source = RdfSource {
        path: upload.path.clone(),
        format: Some(format),
    };
    let summary = state
        .engine
        .load_into_graph(source, graph.as_str(), replace, &NoProgress)
        .await?;
    drop(upload);
    tracing::info!(
        "{} <{}>: {} quads, {}",
        if replace { "PUT" } else { "POST" },
        graph.as_str(),
        summary.quads,
        summary.vectors
    );
    // 201 only when a graph came into being (an empty body creates none).
    let status = if !existed && summary.quads > 0 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = serde_json::json!({
        "graph": graph.as_str(),
        "quads": summary.quads,
        "vectors": summary.vectors,
    });
    Ok((status, axum::Json(body)).into_response())
}

/// `DELETE /store?graph=IRI`: drops the graph and the vectors of nodes that lose
/// their text; 404 when there is no such graph.
pub(crate) async fn delete(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let graph = target_graph(raw.as_deref())?;
    let _permit = state.permit().await?;
    if !state.engine.has_graph(graph.as_str())? {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "no such graph"));
    }
    let report = state.engine.drop_graph(graph.as_str(), &NoProgress).await?;
    tracing::info!("DELETE <{}>: {report}", graph.as_str());
    let body = serde_json::json!({ "graph": graph.as_str(), "vectors": report });
    Ok(axum::Json(body).into_response())
}

/// The RDF syntax of a body from its media type.
fn rdf_format(media: &str) -> Result<RdfFormat, ApiError> {
    if media.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "missing Content-Type: send text/turtle, application/n-triples, \
             application/rdf+xml or application/ld+json",
        ));
    }
    match RdfFormat::from_media_type(media) {
        Some(
            format @ (RdfFormat::Turtle
            | RdfFormat::NTriples
            | RdfFormat::RdfXml
            | RdfFormat::JsonLd { .. }),
        ) => Ok(format),
        _ => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "{} cannot be stored in one graph: send text/turtle, application/n-triples, \
                 application/rdf+xml or application/ld+json",
                one_line(media)
            ),
        )),
    }
}

/// A request body written to the data directory so the loader can read it;
/// removed when dropped, whatever happened.
struct Upload {
    path: PathBuf,
}

impl Upload {
    fn write(data_dir: &std::path::Path, format: RdfFormat, body: &[u8]) -> Result<Self, ApiError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = data_dir.join("uploads");
        let io_error = |e: std::io::Error| {
            tracing::error!("cannot write an upload under {}: {e}", dir.display());
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "cannot store the upload")
        };
        std::fs::create_dir_all(&dir).map_err(io_error)?;
        let name = format!(
            "upload-{}-{}.{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            format.file_extension()
        );
        let path = dir.join(name);
        std::fs::write(&path, body).map_err(io_error)?;
        Ok(Self { path })
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!("cannot remove {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_parameter_is_required_once_and_absolute() {
        let graph = target_graph(Some("graph=urn%3Aa")).expect("graph");
        assert_eq!(graph.as_str(), "urn:a");
        for bad in [
            None,
            Some("default"),
            Some("graph=a&graph=b"),
            Some("graph=no%20iri"),
        ] {
            let error = target_graph(bad).expect_err("refused");
            assert_eq!(error.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        }
    }

    #[test]
    fn triple_syntaxes_are_accepted_and_quad_syntaxes_refused() {
        assert_eq!(rdf_format("text/turtle").ok(), Some(RdfFormat::Turtle));
        assert_eq!(
            rdf_format("application/n-triples").ok(),
            Some(RdfFormat::NTriples)
        );
        for refused in ["application/n-quads", "application/trig", "text/html", ""] {
            assert_eq!(
                rdf_format(refused).expect_err(refused).status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            );
        }
    }
}
