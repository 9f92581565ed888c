//! The operator's OpenAI-compatible chat completions endpoint. Only the redacted prompt is
//! sent; redirects are not followed (the prompt goes to the configured URL or nowhere).

use std::time::Duration;

use serde_json::{Value, json};

use super::{Failure, TransportReason};

pub struct Upstream {
    url: reqwest::Url,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    client: reqwest::Client,
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamConfigError {
    #[error("SERVICE_GATEWAY_URL is not an http(s) URL")]
    BadUrl,
    #[error("SERVICE_GATEWAY_TIMEOUT_SECONDS must be positive")]
    BadTimeout,
    #[error("http client: {0}")]
    Client(#[from] reqwest::Error),
}

impl Upstream {
    pub fn new(
        url: &str,
        model: &str,
        api_key: Option<&str>,
        timeout_seconds: f64,
    ) -> Result<Self, UpstreamConfigError> {
        let url = reqwest::Url::parse(url).map_err(|_| UpstreamConfigError::BadUrl)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UpstreamConfigError::BadUrl);
        }
        if !(timeout_seconds.is_finite() && timeout_seconds > 0.0) {
            return Err(UpstreamConfigError::BadTimeout);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            url,
            model: model.to_string(),
            api_key: api_key.map(str::to_string),
            timeout: Duration::from_secs_f64(timeout_seconds),
            client,
        })
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Sends one user message and returns the first choice's content.
    pub async fn complete(&self, prompt: &str, request_id: &str) -> Result<String, Failure> {
        let body = json!({
            "model": self.model,
            "messages": [{ "role": "user", "content": prompt }],
        });
        let mut req = self
            .client
            .post(self.url.clone())
            .timeout(self.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-request-id", request_id)
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let transport = |r| Failure::Transport(r);
        let resp = req.send().await.map_err(|e| {
            transport(if e.is_timeout() {
                TransportReason::Timeout
            } else {
                TransportReason::Failed
            })
        })?;
        if !resp.status().is_success() {
            return Err(transport(TransportReason::Failed));
        }
        let bytes = resp.bytes().await.map_err(|e| {
            transport(if e.is_timeout() {
                TransportReason::Timeout
            } else {
                TransportReason::Failed
            })
        })?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|_| transport(TransportReason::InvalidResponse))?;
        v.pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(transport(TransportReason::InvalidResponse))
    }
}
