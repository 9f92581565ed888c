//! JSON bodies: content type, size limit, syntax, then the schema (every violation at once),
//! and only then the typed request.

use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::AppState;
use super::validate::{Schema, normalize_ints, validate_body};

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
    // Only JSON itself: `application/json-patch+json` and other `+json` types carry other
    // semantics, and the README promises 415 for them.
    mime == "application/json"
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
    let mut value = parse_body(&bytes)?;
    drop(bytes);
    validate_body(schema, &value).map_err(ApiError::Validation)?;
    normalize_ints(schema, &mut value);
    check_text_lengths(schema, &value, max_text_chars.unwrap_or(usize::MAX))?;
    Ok(value)
}

/// Strings longer than this are unescaped straight into their own buffer.
const LARGE_STRING: usize = 64 * 1024;

/// Parses a JSON body. An object's members are parsed one by one from borrowed raw values, and
/// a large string member is unescaped straight into a `String` of its final size: a note of N
/// bytes then costs the body plus N, not the parser's doubling scratch buffer and a copy of it.
fn parse_body(bytes: &[u8]) -> Result<Value, ApiError> {
    use serde_json::value::RawValue;
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return serde_json::from_slice(bytes).map_err(|e| json_error(&e));
    }
    let members: std::collections::BTreeMap<String, &RawValue> =
        serde_json::from_slice(bytes).map_err(|e| json_error(&e))?;
    let mut object = serde_json::Map::new();
    for (name, raw) in members {
        let raw = raw.get();
        let value = if raw.len() > LARGE_STRING && raw.starts_with('"') {
            Value::String(unescape(raw).ok_or_else(|| {
                ApiError::validation_one(
                    &[json!("body"), json!(name)],
                    "json_invalid",
                    "JSON decode error: invalid escape in string",
                    None,
                )
            })?)
        } else {
            serde_json::from_str(raw).map_err(|e| json_error(&e))?
        };
        object.insert(name, value);
    }
    Ok(Value::Object(object))
}

/// Unescapes a JSON string literal (quotes included) that the parser has already checked for
/// syntax; `None` for what serde_json would also refuse (a lone surrogate).
fn unescape(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let esc = rest.as_bytes().get(at + 1)?;
        rest = &rest[at + 2..];
        let c = match esc {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(rest)?;
                rest = &rest[4..];
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = rest.strip_prefix("\\u").and_then(hex4)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    rest = &rest[6..];
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    char::from_u32(hi)?
                }
            }
            _ => return None,
        };
        out.push(c);
    }
    out.push_str(rest);
    Some(out)
}

fn hex4(s: &str) -> Option<u32> {
    let digits = s.get(..4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

fn json_error(e: &serde_json::Error) -> ApiError {
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
        let chunk = frame.map_err(|e| {
            if is_body_timeout(e) {
                return ApiError::BodyTimeout;
            }
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

/// The error a body gives when its next piece took longer than the body read timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled past the body read timeout")]
pub struct BodyTimeout;

/// Whether the error, or one it wraps (the body layers wrap each other's errors), is ours.
fn is_body_timeout(e: axum::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = cur {
        if err.is::<BodyTimeout>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// `body` with a bound on the wait for each next piece: a client that stalls mid-body fails
/// its request ([`BodyTimeout`]) instead of holding a task and a buffer for ever.
pub fn with_read_timeout(body: axum::body::Body, limit: std::time::Duration) -> axum::body::Body {
    use futures_util::StreamExt;
    let frames = body.into_data_stream();
    let timed = futures_util::stream::unfold(Some(frames), move |frames| async move {
        let mut frames = frames?;
        match tokio::time::timeout(limit, frames.next()).await {
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(frames))),
            Ok(Some(Err(e))) => Some((Err(axum::Error::new(e)), None)),
            Ok(None) => None,
            Err(_) => {
                crate::listen::note_body_timeout();
                Some((Err(axum::Error::new(BodyTimeout)), None))
            }
        }
    });
    axum::body::Body::from_stream(timed)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_application_json_is_json() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(!is_json("application/json-patch+json"));
        assert!(!is_json("application/merge-patch+json"));
        assert!(!is_json("text/json"));
        assert!(!is_json(""));
    }

    #[test]
    fn unescape_agrees_with_serde_json() {
        for text in [
            "plain",
            "",
            "tab\there \"quoted\" back\\slash / \u{8}\u{c}\r\n",
            "é ü 中文 😀 \u{1}\u{1f}",
            "\u{7f}\u{2028}",
        ] {
            let literal = serde_json::to_string(text).unwrap();
            assert_eq!(unescape(&literal).as_deref(), Some(text));
        }
        let escaped = r#""\u00e9\ud83d\ude00\/\u0041""#;
        let expected: String = serde_json::from_str(escaped).unwrap();
        assert_eq!(unescape(escaped), Some(expected));
        for bad in [
            r#""\ud83d""#,
            r#""\ud83dx""#,
            r#""\ude00""#,
            r#""\u12""#,
            r#""\q""#,
        ] {
            assert_eq!(unescape(bad), None, "{bad}");
            assert!(serde_json::from_str::<String>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn large_members_parse_like_serde_json() {
        let note = "Patient \"Jane\" Doe\nMRN 123 é 😀 ".repeat(LARGE_STRING / 10);
        let body =
            serde_json::to_vec(&json!({"text": note, "chunk_size": 7, "x": [1, {"a": null}]}))
                .unwrap();
        let parsed = parse_body(&body).unwrap_or_else(|_| panic!("parse"));
        assert_eq!(parsed, serde_json::from_slice::<Value>(&body).unwrap());
        assert!(parse_body(b"[1,2]").is_ok());
        assert!(parse_body(b"{\"text\": }").is_err());
    }
}
