//! The one mapping from errors to HTTP. 422 uses the interface's HTTPValidationError; everything
//! else the envelope `{"error":{"code","message","details","request_id"}}`. No body or log line
//! carries caller text.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::validate::Violation;
use crate::auth::AuthFailure;
use crate::inference::InferenceError;
use crate::stages::StageError;

tokio::task_local! {
    /// The request's correlation id, set by the request-id middleware.
    pub static REQUEST_ID: String;
}

/// `Retry-After` of the storage errors: space and permissions come back on an operator's time.
const STORAGE_RETRY_SECS: u64 = 30;

/// Every error a route can return.
#[derive(Debug)]
pub enum ApiError {
    Validation(Vec<Violation>),
    UnsupportedMediaType,
    PayloadTooLarge {
        limit: usize,
    },
    /// The request body stalled longer than the body read timeout.
    BodyTimeout,
    /// The job store's disk is full: nothing new is accepted until space returns.
    InsufficientStorage,
    /// The job store cannot be used (read-only or broken data directory); `reason` is fixed
    /// text, never caller data.
    StorageUnavailable {
        reason: String,
    },
    ModelNotFound {
        requested: String,
        installed: Vec<String>,
    },
    NotFound {
        code: &'static str,
        message: &'static str,
    },
    MethodNotAllowed,
    /// The resource is not in a state that allows this (409).
    Conflict {
        code: &'static str,
        message: &'static str,
    },
    NotImplemented {
        route: &'static str,
        issue: u32,
    },
    Busy {
        code: &'static str,
        message: &'static str,
        retry_after_secs: u64,
    },
    /// Authentication or authorization failed (401, 403) or the failure limiter tripped (429).
    Auth(crate::auth::AuthFailure),
    /// The request ran past the per-request timeout.
    Timeout {
        seconds: f64,
    },
    /// The privacy gateway refused or could not finish (400, 502, 503 with a reason code).
    Gateway(crate::gateway::Failure),
    Internal(String),
}

impl ApiError {
    pub fn validation_one(
        loc: &[Value],
        kind: &'static str,
        msg: impl Into<String>,
        ctx: Option<Value>,
    ) -> Self {
        Self::Validation(vec![Violation::new(loc, kind, msg, ctx)])
    }
}

impl From<InferenceError> for ApiError {
    fn from(e: InferenceError) -> Self {
        match e {
            InferenceError::ModelNotFound {
                requested,
                installed,
            } => Self::ModelNotFound {
                requested,
                installed,
            },
            InferenceError::InvalidModelName => Self::validation_one(
                &[json!("body"), json!("model_name")],
                "string_pattern_mismatch",
                "model_name must be `name` or `org/name` made of letters, digits, '.', '_' and '-'",
                None,
            ),
            InferenceError::QueueFull { retry_after_secs } => Self::Busy {
                code: "backpressure",
                message: "The inference queue is full; retry later",
                retry_after_secs,
            },
            InferenceError::OverBudget { .. } => Self::Busy {
                code: "model_memory_budget",
                message: "The model memory budget is in use by active models; retry later",
                retry_after_secs: 5,
            },
            InferenceError::Unloaded => Self::Busy {
                code: "model_unloaded",
                message: "The model was unloaded while the request waited; retry",
                retry_after_secs: 1,
            },
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<crate::deidentifier::DeidError> for ApiError {
    fn from(e: crate::deidentifier::DeidError) -> Self {
        use crate::deidentifier::DeidError;
        match e {
            DeidError::Invalid(conflicts) => Self::Validation(
                conflicts
                    .into_iter()
                    .map(|c| {
                        Violation::new(
                            &[json!("body"), json!(c.field)],
                            c.kind,
                            c.message,
                            c.allowed.map(|a| json!({ "allowed": a })),
                        )
                    })
                    .collect(),
            ),
            DeidError::Inference(e) => e.into(),
            DeidError::Internal(why) => Self::Internal(why),
        }
    }
}

impl From<StageError> for ApiError {
    fn from(e: StageError) -> Self {
        match e {
            StageError::Inference(e) => e.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// The current request's id (also for work that outlives the handler, such as stream records).
pub fn request_id() -> Option<String> {
    REQUEST_ID.try_with(|id| id.clone()).ok()
}

impl ApiError {
    /// The envelope's code and message: what error responses and records inside a started
    /// stream or a job both say.
    /// An internal error's detail is logged here (it never holds caller text; the body says
    /// nothing of it).
    pub fn code_and_message(&self) -> (&'static str, &'static str) {
        if let Self::Internal(detail) = self {
            tracing::error!(error = %detail, "internal error");
        }
        self.code_and_message_quiet()
    }

    /// The code and message without logging: the OpenAPI document's examples are built from
    /// errors that never happened, and must not log a false ERROR.
    fn code_and_message_quiet(&self) -> (&'static str, &'static str) {
        match self {
            Self::Validation(_) => ("validation_error", "The request is invalid"),
            Self::UnsupportedMediaType => (
                "unsupported_media_type",
                "Request body must be application/json",
            ),
            Self::PayloadTooLarge { .. } => {
                ("payload_too_large", "Request body exceeds the maximum size")
            }
            Self::BodyTimeout => ("body_timeout", "The request body was not received in time"),
            Self::InsufficientStorage => (
                "insufficient_storage",
                "The job store's disk is full; retry when space is freed",
            ),
            Self::StorageUnavailable { .. } => (
                "storage_unavailable",
                "The job store is unavailable; routes that need no storage still serve",
            ),
            Self::ModelNotFound { .. } => {
                ("model_not_found", "The requested model is not installed")
            }
            Self::NotFound { code, message } => (code, message),
            Self::MethodNotAllowed => ("method_not_allowed", "Method not allowed on this route"),
            Self::Conflict { code, message } => (code, message),
            Self::NotImplemented { .. } => (
                "not_implemented",
                "This capability is not implemented yet; the request was valid",
            ),
            Self::Busy { code, message, .. } => (code, message),
            Self::Auth(failure) => (failure.code(), failure.message()),
            Self::Timeout { .. } => ("timeout", "The request took longer than the service allows"),
            Self::Gateway(f) => (f.code(), f.message()),
            Self::Internal(_) => ("internal_error", "Internal server error"),
        }
    }
}

impl ApiError {
    /// The status and the envelope body (logs nothing; responses log in `into_response`).
    pub fn envelope(&self) -> (StatusCode, Value) {
        let (status, details) = match self {
            Self::Validation(detail) => {
                return (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    json!({ "detail": detail }),
                );
            }
            Self::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                json!({ "expected": "application/json" }),
            ),
            Self::PayloadTooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({ "max_body_bytes": limit }),
            ),
            Self::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, Value::Null),
            Self::InsufficientStorage => (
                StatusCode::INSUFFICIENT_STORAGE,
                json!({ "retry_after_seconds": STORAGE_RETRY_SECS }),
            ),
            Self::StorageUnavailable { reason } => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "reason": reason, "retry_after_seconds": STORAGE_RETRY_SECS }),
            ),
            // The requested name is caller input: only the installed ids are listed.
            Self::ModelNotFound { installed, .. } => {
                (StatusCode::NOT_FOUND, json!({ "installed": installed }))
            }
            Self::NotFound { .. } => (StatusCode::NOT_FOUND, Value::Null),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, Value::Null),
            Self::Conflict { .. } => (StatusCode::CONFLICT, Value::Null),
            Self::NotImplemented { route, issue } => (
                StatusCode::NOT_IMPLEMENTED,
                json!({ "route": route, "tracking_issue": issue }),
            ),
            Self::Busy {
                retry_after_secs, ..
            } => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "retry_after_seconds": retry_after_secs }),
            ),
            Self::Auth(failure) => (
                failure.status(),
                match failure {
                    AuthFailure::Missing | AuthFailure::Invalid => Value::Null,
                    AuthFailure::Forbidden { required } => json!({ "required_scopes": required }),
                    AuthFailure::RateLimited { retry_after_secs } => {
                        json!({ "retry_after_seconds": retry_after_secs })
                    }
                },
            ),
            Self::Timeout { seconds } => (
                StatusCode::GATEWAY_TIMEOUT,
                json!({ "timeout_seconds": seconds }),
            ),
            Self::Gateway(f) => (
                StatusCode::from_u16(f.status()).unwrap_or(StatusCode::BAD_GATEWAY),
                json!({ "reason": f.reason() }),
            ),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, Value::Null),
        };
        let (code, message) = self.code_and_message_quiet();
        let body = json!({
            "error": { "code": code, "message": message, "details": details, "request_id": request_id() }
        });
        (status, body)
    }

    /// `Retry-After` seconds, where the error has one.
    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::Busy {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            Self::Auth(failure) => failure.retry_after_secs(),
            Self::InsufficientStorage | Self::StorageUnavailable { .. } => Some(STORAGE_RETRY_SECS),
            _ => None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(detail) = &self {
            tracing::error!(error = %detail, "internal error");
        }
        let (status, body) = self.envelope();
        let mut r = (status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after() {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Self::Auth(failure) = &self
            && let Some(challenge) = failure.www_authenticate()
            && let Ok(v) = HeaderValue::from_str(&challenge)
        {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}
