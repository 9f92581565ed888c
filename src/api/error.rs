//! The one mapping from errors to HTTP. 422 uses the interface's HTTPValidationError; everything
//! else the envelope `{"error":{"code","message","details","request_id"}}`. No body or log line
//! carries caller text.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::validate::Violation;
use crate::inference::InferenceError;
use crate::stages::StageError;

tokio::task_local! {
    /// The request's correlation id, set by the request-id middleware.
    pub static REQUEST_ID: String;
}

/// Every error a route can return.
#[derive(Debug)]
pub enum ApiError {
    Validation(Vec<Violation>),
    UnsupportedMediaType,
    PayloadTooLarge {
        limit: usize,
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
    NotImplemented {
        route: &'static str,
        issue: u32,
    },
    Busy {
        code: &'static str,
        message: &'static str,
        retry_after_secs: u64,
    },
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

impl From<StageError> for ApiError {
    fn from(e: StageError) -> Self {
        match e {
            StageError::Inference(e) => e.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

fn request_id() -> Option<String> {
    REQUEST_ID.try_with(|id| id.clone()).ok()
}

/// The current request's id, for work that outlives the handler (stream records).
pub fn current_request_id() -> Option<String> {
    request_id()
}

fn envelope(status: StatusCode, code: &str, message: &str, details: Value) -> Response {
    let body = json!({
        "error": { "code": code, "message": message, "details": details, "request_id": request_id() }
    });
    (status, axum::Json(body)).into_response()
}

impl ApiError {
    /// The code and message of the error envelope, for records inside a started stream.
    pub fn code_and_message(&self) -> (&'static str, &'static str) {
        match self {
            Self::Validation(_) => ("validation_error", "The request is invalid"),
            Self::UnsupportedMediaType => (
                "unsupported_media_type",
                "Request body must be application/json",
            ),
            Self::PayloadTooLarge { .. } => {
                ("payload_too_large", "Request body exceeds the maximum size")
            }
            Self::ModelNotFound { .. } => {
                ("model_not_found", "The requested model is not installed")
            }
            Self::NotFound { code, message } => (code, message),
            Self::MethodNotAllowed => ("method_not_allowed", "Method not allowed on this route"),
            Self::NotImplemented { .. } => {
                ("not_implemented", "This capability is not implemented yet")
            }
            Self::Busy { code, message, .. } => (code, message),
            Self::Internal(detail) => {
                tracing::error!(error = %detail, "internal error");
                ("internal_error", "Internal server error")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            Self::Validation(detail) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                axum::Json(json!({ "detail": detail })),
            )
                .into_response(),
            Self::UnsupportedMediaType => envelope(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Request body must be application/json",
                json!({ "expected": "application/json" }),
            ),
            Self::PayloadTooLarge { limit } => envelope(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "Request body exceeds the maximum size",
                json!({ "max_body_bytes": limit }),
            ),
            Self::ModelNotFound {
                requested,
                installed,
            } => envelope(
                StatusCode::NOT_FOUND,
                "model_not_found",
                "The requested model is not installed",
                json!({ "model_name": requested, "installed": installed }),
            ),
            Self::NotFound { code, message } => {
                envelope(StatusCode::NOT_FOUND, code, message, Value::Null)
            }
            Self::MethodNotAllowed => envelope(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "Method not allowed on this route",
                Value::Null,
            ),
            Self::NotImplemented { route, issue } => envelope(
                StatusCode::NOT_IMPLEMENTED,
                "not_implemented",
                "This capability is not implemented yet; the request was valid",
                json!({ "route": route, "tracking_issue": issue }),
            ),
            Self::Busy {
                code,
                message,
                retry_after_secs,
            } => {
                let mut r = envelope(
                    StatusCode::SERVICE_UNAVAILABLE,
                    code,
                    message,
                    json!({ "retry_after_seconds": retry_after_secs }),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
                r
            }
            Self::Internal(detail) => {
                // The detail stays in the log (it never holds caller text); the body says nothing.
                tracing::error!(error = %detail, "internal error");
                envelope(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "Internal server error",
                    Value::Null,
                )
            }
        }
    }
}
