//! kgfuse's one HTTP client for OpenAI-compatible services: the chat model
//! (kgfuse-llm) and the embedder (kgfuse-vector) both post through it.
//!
//! A [`JsonClient`] posts a JSON body to one URL with a bearer key and a
//! timeout. A failure worth another try (a connection error, a timeout, HTTP 429
//! or 5xx) is retried up to `max_retries` times, waiting the server's
//! `Retry-After` when it sends one (at most [`MAX_RETRY_AFTER`]) and
//! `backoff * 2^(retry - 1)` otherwise (at most [`MAX_BACKOFF`]). Any other
//! status is returned at once. Errors carry the server's own message, shortened
//! and without the key.

use std::time::Duration;

/// Longest wait between attempts without a `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Longest `Retry-After` wait honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);
/// Longest server error message kept in an error.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// Where and how to post.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The endpoint, e.g. `http://localhost:8080/v1/chat/completions`.
    pub url: String,
    /// Bearer token; local servers usually need none. Never printed.
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry; doubles each time.
    pub backoff: Duration,
}

/// Why a POST gave no usable reply (after its retries, when it was worth one).
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// Every attempt timed out.
    #[error("no reply within {timeout:?} ({attempts} attempts)")]
    Timeout {
        /// The per-request timeout.
        timeout: Duration,
        /// Attempts made.
        attempts: u32,
    },
    /// The server answered with an error status.
    #[error("HTTP {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The server's message (OpenAI's `{"error": {"message": …}}` or the raw
        /// body), shortened, the key redacted.
        message: String,
        /// The whole body, lowercased, for a caller that recognises a refusal
        /// (a server without JSON mode names `response_format`).
        body: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The request could not be sent or its reply read.
    #[error("request to {url} failed: {message}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What failed.
        message: String,
        /// Whether another try might succeed (a refused connection, say; not a bad URL).
        transient: bool,
        /// Attempts made.
        attempts: u32,
    },
}

impl PostError {
    /// Whether the failure was worth retrying (so the retries ran out).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::Status { status, .. } => is_transient_status(*status),
            Self::Transport { transient, .. } => *transient,
        }
    }

    /// Attempts made.
    pub fn attempts(&self) -> u32 {
        match self {
            Self::Timeout { attempts, .. }
            | Self::Status { attempts, .. }
            | Self::Transport { attempts, .. } => *attempts,
        }
    }

    fn set_attempts(&mut self, made: u32) {
        match self {
            Self::Timeout { attempts, .. }
            | Self::Status { attempts, .. }
            | Self::Transport { attempts, .. } => *attempts = made,
        }
    }
}

fn is_transient_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// A client that posts JSON to one OpenAI-compatible endpoint.
pub struct JsonClient {
    config: ClientConfig,
    agent: ureq::Agent,
}

impl std::fmt::Debug for JsonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonClient")
            .field("url", &self.config.url)
            .field(
                "api_key",
                &self.config.api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("timeout", &self.config.timeout)
            .finish_non_exhaustive()
    }
}

impl JsonClient {
    /// A client for `config`; makes no request.
    pub fn new(config: ClientConfig) -> Self {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_global(Some(config.timeout))
                .http_status_as_error(false)
                .build(),
        );
        Self { config, agent }
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// Posts `body`, retrying transient failures; the body of a 2xx reply.
    pub fn post(&self, body: &str) -> Result<String, PostError> {
        let mut attempt = 1;
        loop {
            match self.post_once(body) {
                Err((mut error, retry_after)) if error.is_transient() => {
                    if attempt > self.config.max_retries {
                        error.set_attempts(attempt);
                        return Err(error);
                    }
                    let wait = self.retry_wait(attempt, retry_after);
                    tracing::warn!(
                        "{} failed ({error}); retry {attempt} of {} in {wait:?}",
                        self.config.url,
                        self.config.max_retries
                    );
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                Err((mut error, _)) => {
                    error.set_attempts(attempt);
                    return Err(error);
                }
                Ok(reply) => return Ok(reply),
            }
        }
    }

    /// The wait before retry number `retry` (from 1): the server's `Retry-After`
    /// when it sent one (capped at [`MAX_RETRY_AFTER`]), else the backoff,
    /// doubled for each retry before (capped at [`MAX_BACKOFF`]).
    fn retry_wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        retry_after.map_or_else(
            || {
                let factor = 2u32.saturating_pow(retry.saturating_sub(1));
                self.config.backoff.saturating_mul(factor).min(MAX_BACKOFF)
            },
            |wait| wait.min(MAX_RETRY_AFTER),
        )
    }

    /// One POST: the body of a 2xx reply, or the error and the server's `Retry-After`.
    fn post_once(&self, body: &str) -> Result<String, (PostError, Option<Duration>)> {
        let mut request = self
            .agent
            .post(&self.config.url)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send(body)
            .map_err(|error| (self.transport_error(&error), None))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|error| (self.transport_error(&error), None))?;
        if (200..300).contains(&status) {
            return Ok(text);
        }
        let error = PostError::Status {
            status,
            message: self.server_message(&text),
            body: text.to_ascii_lowercase(),
            attempts: 1,
        };
        Err((error, retry_after))
    }

    /// Sorts a failed exchange into a timeout, a transient or a permanent failure.
    fn transport_error(&self, error: &ureq::Error) -> PostError {
        let timed_out = match error {
            ureq::Error::Timeout(_) => true,
            ureq::Error::Io(io) => matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ),
            _ => false,
        };
        if timed_out {
            return PostError::Timeout {
                timeout: self.config.timeout,
                attempts: 1,
            };
        }
        let transient = matches!(
            error,
            ureq::Error::Io(_)
                | ureq::Error::ConnectionFailed
                | ureq::Error::HostNotFound
                | ureq::Error::Protocol(_)
                | ureq::Error::BodyStalled
        );
        PostError::Transport {
            url: self.config.url.clone(),
            message: error.to_string(),
            transient,
            attempts: 1,
        }
    }

    /// The error message in a server's reply (OpenAI's `{"error": {"message": …}}`
    /// or the raw body), without the API key, shortened.
    fn server_message(&self, body: &str) -> String {
        let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
        let message = parsed
            .as_ref()
            .and_then(|json| {
                ["/error/message", "/error", "/message"]
                    .iter()
                    .find_map(|pointer| json.pointer(pointer)?.as_str())
            })
            .unwrap_or(body)
            .trim();
        let message = match self.config.api_key.as_deref() {
            Some(key) if !key.is_empty() => message.replace(key, "<redacted>"),
            _ => message.to_owned(),
        };
        if message.is_empty() {
            "(no message)".to_owned()
        } else {
            excerpt(&message, MAX_MESSAGE_CHARS)
        }
    }
}

/// The `Retry-After` header as a duration, when it is a number of seconds.
fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// `text` cut after `max` characters, with an ellipsis when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(backoff: Duration) -> JsonClient {
        JsonClient::new(ClientConfig {
            url: "http://127.0.0.1:9/v1/embeddings".into(),
            api_key: Some("SECRET".into()),
            timeout: Duration::from_secs(1),
            max_retries: 2,
            backoff,
        })
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let client = client(Duration::from_millis(250));
        assert_eq!(client.retry_wait(1, None), Duration::from_millis(250));
        assert_eq!(client.retry_wait(2, None), Duration::from_millis(500));
        assert_eq!(client.retry_wait(3, None), Duration::from_secs(1));
        assert_eq!(client.retry_wait(40, None), MAX_BACKOFF);
    }

    #[test]
    fn retry_wait_prefers_retry_after() {
        let client = client(Duration::from_secs(30));
        assert_eq!(client.retry_wait(1, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(
            client.retry_wait(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            client.retry_wait(1, Some(Duration::from_secs(3600))),
            MAX_RETRY_AFTER
        );
        assert_eq!(
            client.retry_wait(2, None),
            MAX_BACKOFF,
            "no Retry-After: backoff"
        );
    }

    #[test]
    fn server_messages_are_shortened_and_never_hold_the_key() {
        let client = client(Duration::ZERO);
        let body = format!(
            r#"{{"error": {{"message": "bad key SECRET {}"}}}}"#,
            "x".repeat(400)
        );
        let message = client.server_message(&body);
        assert!(message.starts_with("bad key <redacted> x"), "{message}");
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(format!("{client:?}").contains("<redacted>"));
        assert!(!format!("{client:?}").contains("SECRET"));
    }
}
