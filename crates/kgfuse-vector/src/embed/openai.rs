//! OpenAI-compatible `/v1/embeddings` client (OpenAI, Ollama, vLLM, llama.cpp server).
//!
//! Texts go out in batches through kgfuse's one OpenAI-compatible client
//! (kgfuse-openai: a timeout, retries with exponential backoff on transport
//! errors, HTTP 429 and 5xx, honouring `Retry-After`). The response is
//! validated: one vector per input, ordered by `index`, all of one length.

use super::{EmbedError, Embedder};
use kgfuse_core::config::EmbedderConfig;
use kgfuse_openai::{ClientConfig, JsonClient, PostError};
use serde::Deserialize;
use std::time::Duration;

/// Connection settings for an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name, e.g. `text-embedding-3-small` or `nomic-embed-text`.
    pub model: String,
    /// Bearer token; local servers usually need none.
    pub api_key: Option<String>,
    /// Expected dimension; `None` = learn it from the first response.
    pub dimension: Option<usize>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub backoff: Duration,
}

impl OpenAiConfig {
    /// Settings from environment variables: `KGFUSE_OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), `KGFUSE_OPENAI_EMBED_MODEL` (default
    /// `text-embedding-3-small`), `KGFUSE_OPENAI_API_KEY` or `OPENAI_API_KEY`.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            base_url: var("KGFUSE_OPENAI_BASE_URL")
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: var("KGFUSE_OPENAI_EMBED_MODEL")
                .unwrap_or_else(|| "text-embedding-3-small".into()),
            api_key: var("KGFUSE_OPENAI_API_KEY").or_else(|| var("OPENAI_API_KEY")),
            dimension: None,
            timeout: Duration::from_secs(30),
            max_retries: 3,
            backoff: Duration::from_millis(250),
        }
    }

    /// Settings recorded in `kgfuse.toml`, with the key (never stored) from the environment.
    pub fn from_store(config: &EmbedderConfig) -> Self {
        let mut out = Self::from_env();
        if let Some(url) = &config.base_url {
            out.base_url.clone_from(url);
        }
        if let Some(model) = &config.model {
            out.model.clone_from(model);
        }
        out.dimension = Some(config.dimension);
        out
    }
}

/// Embedder backed by an OpenAI-compatible HTTP service.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    config: OpenAiConfig,
    client: JsonClient,
    dimension: usize,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// Connects; when no dimension is configured, probes the service once to learn it.
    pub fn new(config: OpenAiConfig) -> Result<Self, EmbedError> {
        let client = JsonClient::new(ClientConfig {
            url: format!("{}/embeddings", config.base_url.trim_end_matches('/')),
            api_key: config.api_key.clone(),
            timeout: config.timeout,
            max_retries: config.max_retries,
            backoff: config.backoff,
        });
        let mut embedder = Self {
            dimension: config.dimension.unwrap_or(0),
            config,
            client,
        };
        if embedder.dimension == 0 {
            let probe = embedder.request(&["dimension probe".to_owned()])?;
            embedder.dimension = probe.first().map_or(0, Vec::len);
            if embedder.dimension == 0 {
                return Err(EmbedError::Service(
                    "the service returned an empty vector".into(),
                ));
            }
        }
        Ok(embedder)
    }

    /// One embeddings request through the shared client (retries on transport
    /// errors, 429 and 5xx, honouring `Retry-After`).
    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::json!({ "model": self.config.model, "input": texts });
        let reply = self.client.post(&body.to_string()).map_err(|failure| {
            let url = self.client.url();
            EmbedError::Service(match failure {
                failure if failure.is_transient() => format!(
                    "{url}: giving up after {} attempts: {failure}",
                    failure.attempts()
                ),
                PostError::Status {
                    status, message, ..
                } => format!("HTTP {status} from {url}: {message}"),
                other => format!("{url}: {other}"),
            })
        })?;
        parse_response(&reply, texts.len())
    }
}

fn parse_response(text: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let parsed: EmbeddingResponse = serde_json::from_str(text)
        .map_err(|e| EmbedError::Service(format!("malformed embeddings response: {e}")))?;
    if parsed.data.len() != expected {
        return Err(EmbedError::Service(format!(
            "asked for {expected} embeddings, got {}",
            parsed.data.len()
        )));
    }
    let mut items = parsed.data;
    items.sort_by_key(|item| item.index.unwrap_or(usize::MAX));
    let mut vectors: Vec<Vec<f32>> = items.into_iter().map(|i| i.embedding).collect();
    let width = vectors.first().map_or(0, Vec::len);
    if vectors.iter().any(|v| v.len() != width || v.is_empty()) {
        return Err(EmbedError::Service(
            "vectors of different lengths in one response".into(),
        ));
    }
    for v in &mut vectors {
        super::normalize(v);
    }
    Ok(vectors)
}

impl Embedder for OpenAiEmbedder {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.request(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    /// A real HTTP server on loopback that answers each request with the next
    /// canned (status, body) pair and records the request bodies it saw.
    fn serve(replies: Vec<(u16, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for (status, body) in replies {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut request = vec![0; length];
                let _ = reader.read_exact(&mut request);
                log.lock()
                    .expect("lock")
                    .push(String::from_utf8_lossy(&request).into_owned());
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (url, seen)
    }

    fn config(url: String) -> OpenAiConfig {
        OpenAiConfig {
            base_url: url,
            model: "test-embed".into(),
            api_key: Some("secret".into()),
            dimension: None,
            timeout: Duration::from_secs(5),
            max_retries: 2,
            backoff: Duration::from_millis(10),
        }
    }

    #[test]
    fn probes_dimension_retries_and_orders_by_index() {
        let ok = |v: &str| (200, v.to_owned());
        let (url, seen) = serve(vec![
            ok(r#"{"data":[{"embedding":[3,4],"index":0}]}"#),
            (429, "{}".into()),
            (503, "{}".into()),
            ok(r#"{"data":[{"embedding":[0,2],"index":1},{"embedding":[5,0],"index":0}]}"#),
        ]);
        let embedder = OpenAiEmbedder::new(config(url)).expect("probe");
        assert_eq!(embedder.dimension(), 2);
        let vectors = embedder
            .embed(&["a".into(), "b".into()])
            .expect("embed after two retries");
        assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let requests = seen.lock().expect("lock");
        assert_eq!(requests.len(), 4);
        assert!(requests[3].contains("\"test-embed\""));
    }

    #[test]
    fn malformed_and_client_errors_fail_clearly() {
        let (url, _) = serve(vec![(200, r#"{"data":[{"embedding":[1]}]"#.into())]);
        let mut cfg = config(url);
        cfg.dimension = Some(1);
        let err = OpenAiEmbedder::new(cfg.clone())
            .expect("no probe with a known dimension")
            .embed(&["x".into()])
            .expect_err("truncated JSON");
        assert!(err.to_string().contains("malformed"), "{err}");

        let (url, _) = serve(vec![(401, r#"{"error":"bad key"}"#.into())]);
        cfg.base_url = url;
        let err = OpenAiEmbedder::new(cfg.clone())
            .expect("embedder")
            .embed(&["x".into()])
            .expect_err("401 is not retried");
        assert!(err.to_string().contains("401"), "{err}");

        let (url, _) = serve(vec![
            (500, "{}".into()),
            (500, "{}".into()),
            (500, "{}".into()),
        ]);
        cfg.base_url = url;
        let err = OpenAiEmbedder::new(cfg)
            .expect("embedder")
            .embed(&["x".into()])
            .expect_err("gives up");
        assert!(
            err.to_string().contains("giving up after 3 attempts"),
            "{err}"
        );
    }
}
