//! JSON bodies: content type, size limit, syntax, then the schema (every violation at once),
//! and only then the typed request.

use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::AppState;
use super::validate::{Schema, validate_body};

/// A request type with its declared schema.
pub trait Validated: DeserializeOwned + Send {
    const SCHEMA: &'static Schema;
}

/// A body that passed validation; the raw value is kept for fields whose JSON type matters.
pub struct Valid<T> {
    pub body: T,
    pub raw: Value,
}

fn is_json(content_type: &str) -> bool {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Reads, parses and validates the body against `schema`, with the one-shot limits.
pub async fn read_json(
    req: Request,
    state: &AppState,
    schema: &'static Schema,
) -> Result<Value, ApiError> {
    let s = &state.settings;
    read_json_limited(req, schema, s.max_body_bytes, Some(s.max_text_chars)).await
}

/// Reads, parses and validates the body; `text` fields are bounded by `max_text_chars` when
/// given, else only by the body limit (the streaming routes).
pub async fn read_json_limited(
    req: Request,
    schema: &'static Schema,
    limit: usize,
    max_text_chars: Option<usize>,
) -> Result<Value, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !is_json(content_type) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let bytes = read_body(req.into_body(), declared, limit).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation_one(
            &[json!("body")],
            "missing",
            "Field required",
            None,
        ));
    }
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Eof => "unexpected end of input",
            serde_json::error::Category::Data => "invalid data",
            _ => "syntax error",
        };
        ApiError::validation_one(
            &[json!("body"), json!(e.column())],
            "json_invalid",
            format!(
                "JSON decode error: {what} at line {} column {}",
                e.line(),
                e.column()
            ),
            Some(json!({ "line": e.line(), "column": e.column() })),
        )
    })?;
    validate_body(schema, &value).map_err(ApiError::Validation)?;
    check_text_lengths(schema, &value, max_text_chars.unwrap_or(usize::MAX))?;
    Ok(value)
}

/// The whole body, in one buffer sized from `Content-Length` when it is given, so a large body
/// is held once rather than in a doubling buffer and its copy.
async fn read_body(
    body: axum::body::Body,
    declared: Option<usize>,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    use futures_util::StreamExt;
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(limit));
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let chunk = frame.map_err(|_| {
            ApiError::validation_one(
                &[json!("body")],
                "body_incomplete",
                "The request body could not be read completely",
                None,
            )
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// Text fields are non-empty and bounded in characters (the limit is a setting).
fn check_text_lengths(schema: &Schema, value: &Value, max_chars: usize) -> Result<(), ApiError> {
    let mut out = Vec::new();
    for name in ["text", "input_text", "records_jsonl"] {
        if !schema.fields.iter().any(|f| f.name == name) {
            continue;
        }
        if let Some(s) = value.get(name).and_then(Value::as_str) {
            let loc = [json!("body"), json!(name)];
            if s.is_empty() {
                out.push(super::validate::Violation::new(
                    &loc,
                    "string_too_short",
                    "String should have at least 1 character",
                    Some(json!({ "min_length": 1 })),
                ));
            } else if s.len() > max_chars && s.chars().count() > max_chars {
                out.push(super::validate::Violation::new(
                    &loc,
                    "string_too_long",
                    format!("String should have at most {max_chars} characters"),
                    Some(json!({ "max_length": max_chars })),
                ));
            }
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(out))
    }
}

impl<T: Validated> FromRequest<AppState> for Valid<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let raw = read_json(req, state, T::SCHEMA).await?;
        let body = T::deserialize(&raw).map_err(|_| {
            ApiError::validation_one(
                &[json!("body")],
                "value_error",
                "Value error, the request does not match its schema",
                None,
            )
        })?;
        Ok(Self { body, raw })
    }
}
