//! A typed Rust client for the decision API over HTTP: the same request fields and the same
//! result type as the REST route, the library ([`super::decide_value`]) and the MCP tool.
//! Results from a server of a newer minor version are read by same-major migration (their
//! unknown fields land in `extensions`); another major is refused.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use super::migrate::{MigrationError, migrate};
use super::request::Mode;
use super::result::{DecisionResult, RESULT_SCHEMA_VERSION};

/// One decision request. `None` fields take the server's defaults.
#[derive(Clone, Debug, Serialize)]
pub struct DecisionInput {
    pub mode: Mode,
    pub input_text: String,
    pub options: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl DecisionInput {
    pub fn new(mode: Mode, input_text: impl Into<String>, options: &[&str]) -> Self {
        Self {
            mode,
            input_text: input_text.into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            namespace: None,
            purpose: None,
            calibration_id: None,
            timeout_ms: None,
        }
    }
}

/// What can go wrong; never carries request text.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("invalid base URL")]
    BaseUrl,
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// 422: every violation, each with its `loc`, `type` and message.
    #[error("request rejected: {} violation(s)", .0.len())]
    Validation(Vec<Value>),
    /// Any other non-200 answer: its status and the envelope's `error.code`.
    #[error("HTTP {status}: {code}")]
    Status { status: u16, code: String },
    #[error("the answer is not a decision result")]
    Decode,
    #[error(transparent)]
    Migration(#[from] MigrationError),
}

/// The client; cheap to clone.
#[derive(Clone, Debug)]
pub struct DecisionClient {
    base: String,
    http: reqwest::Client,
    api_key: Option<String>,
}

impl DecisionClient {
    /// `base_url` is the service root, e.g. `http://127.0.0.1:8080`.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, ClientError> {
        let base = base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::BaseUrl);
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            base: base.to_owned(),
            http,
            api_key: None,
        })
    }

    /// Sends `X-API-Key` with every request.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    pub async fn decide(&self, request: &DecisionInput) -> Result<DecisionResult, ClientError> {
        let v = self.post("/v1/decisions", request).await?;
        Ok(migrate(v, RESULT_SCHEMA_VERSION)?)
    }

    /// Results in request order.
    pub async fn decide_batch(
        &self,
        requests: &[DecisionInput],
    ) -> Result<Vec<DecisionResult>, ClientError> {
        #[derive(Serialize)]
        struct Batch<'a> {
            requests: &'a [DecisionInput],
        }
        let mut v = self
            .post("/v1/decisions/batch", &Batch { requests })
            .await?;
        let Some(Value::Array(results)) = v.get_mut("results").map(Value::take) else {
            return Err(ClientError::Decode);
        };
        results
            .into_iter()
            .map(|r| migrate(r, RESULT_SCHEMA_VERSION).map_err(ClientError::from))
            .collect()
    }

    async fn post(&self, path: &str, body: &impl Serialize) -> Result<Value, ClientError> {
        let body = serde_json::to_vec(body).map_err(|_| ClientError::Decode)?;
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            req = req.header("x-api-key", key);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| ClientError::Decode)?;
        match status {
            200 => Ok(v),
            422 => match v.get("detail") {
                Some(Value::Array(d)) => Err(ClientError::Validation(d.clone())),
                _ => Err(ClientError::Decode),
            },
            _ => Err(ClientError::Status {
                status,
                code: v["error"]["code"].as_str().unwrap_or("unknown").to_owned(),
            }),
        }
    }
}
