//! CORS, off unless `SERVICE_CORS_ALLOWED_ORIGINS` names origins. It runs outside
//! authentication: a browser's preflight (`OPTIONS` with `Access-Control-Request-Method`)
//! carries no credentials, so it is answered here; the actual request then goes through
//! authentication like any other, and only gets the CORS headers added to its response.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::state::AppState;

const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
const ALLOW_HEADERS: &str = "authorization, content-type, x-api-key, x-request-id";
const EXPOSE_HEADERS: &str = "x-request-id, retry-after, www-authenticate, location";
const MAX_AGE_SECS: &str = "600";

/// The value for `Access-Control-Allow-Origin`, when `origin` is allowed: `*` when any origin
/// is, else the origin itself (compared exactly, case-insensitively).
fn allowed(allowed: &[String], origin: &str) -> Option<HeaderValue> {
    let any = allowed.iter().any(|a| a.trim() == "*");
    if any {
        return Some(HeaderValue::from_static("*"));
    }
    allowed
        .iter()
        .map(|a| a.trim().trim_end_matches('/'))
        .any(|a| !a.is_empty() && a.eq_ignore_ascii_case(origin))
        .then(|| HeaderValue::from_str(origin).ok())
        .flatten()
}

fn add_vary(headers: &mut HeaderMap) {
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

pub async fn cors(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(origins) = state
        .settings
        .cors_allowed_origins
        .as_deref()
        .filter(|o| o.iter().any(|a| !a.trim().is_empty()))
    else {
        return next.run(req).await;
    };
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(origin) = origin else {
        return next.run(req).await;
    };
    let allow = allowed(origins, &origin);
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        // A refused origin gets no CORS headers: the browser then blocks the request.
        let mut r = StatusCode::NO_CONTENT.into_response();
        let h = r.headers_mut();
        add_vary(h);
        if let Some(allow) = allow {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(ALLOW_METHODS),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(ALLOW_HEADERS),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(MAX_AGE_SECS),
            );
        }
        return r;
    }
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    add_vary(h);
    if let Some(allow) = allow {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_exactly() {
        let list = vec!["https://app.example.org".to_string()];
        assert!(allowed(&list, "https://app.example.org").is_some());
        assert!(allowed(&list, "HTTPS://APP.EXAMPLE.ORG").is_some());
        assert!(allowed(&list, "https://app.example.org.evil.test").is_none());
        assert!(allowed(&list, "http://app.example.org").is_none());
        let any = vec!["*".to_string()];
        assert_eq!(
            allowed(&any, "https://x.test")
                .as_ref()
                .map(|v| v.as_bytes()),
            Some(&b"*"[..])
        );
    }
}
