//! What every request goes through, outermost first: correlation id, metrics and the access
//! log, authentication, then the per-request timeout. Nothing here reads or logs a body.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderValue, header::HeaderName};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, REQUEST_ID};
use super::state::AppState;
use crate::auth::{AuthFailure, Principal, PrincipalKind};
use crate::metrics::{Metrics, UNMATCHED_ROUTE};
use crate::tls::CertPrincipal;

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Echoes a well-formed inbound `X-Request-ID` or generates one, and makes it visible to errors.
pub async fn request_id(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(String::from)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let mut response = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(X_REQUEST_ID.clone(), v);
    }
    response
}

/// The route template (never the concrete path, which may carry ids) for labels and logs.
fn route_of(req: &Request) -> String {
    req.extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED_ROUTE.to_string(), |p| p.as_str().to_string())
}

/// Counts and times every request by route template, method and status, and writes one
/// access-log line with the same fields plus the request id.
pub async fn observe(req: Request, next: Next) -> Response {
    let metrics = Metrics::global();
    let _in_flight = metrics.http_in_flight.inc_guard();
    let route = route_of(&req);
    let method = req.method().clone();
    let started = Instant::now();
    let response = next.run(req).await;
    let elapsed = started.elapsed();
    let status = response.status();
    metrics.observe_http(&route, method.as_str(), status.as_str(), elapsed);
    tracing::info!(
        request_id = super::error::request_id().as_deref().unwrap_or(""),
        method = %method,
        route = %route,
        status = status.as_u16(),
        duration_ms = elapsed.as_secs_f64() * 1e3,
        "request"
    );
    response
}

/// Authenticates and authorizes before any handler reads the body. The principal, when there
/// is one, goes into the request's extensions.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if !state.auth.enabled() {
        return next.run(req).await;
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let certificate = req.extensions().get::<CertPrincipal>().map(|c| Principal {
        id: c.id.clone(),
        kind: PrincipalKind::Certificate,
        scopes: c.scopes.clone(),
    });
    match state.auth.check(
        req.method(),
        &route,
        req.headers(),
        peer,
        certificate.as_ref(),
    ) {
        Ok(principal) => {
            if let Some(p) = principal {
                req.extensions_mut().insert(p);
            }
            next.run(req).await
        }
        Err(failure) => {
            let reason = match failure {
                AuthFailure::Missing => "missing",
                AuthFailure::Invalid => "invalid",
                AuthFailure::Forbidden { .. } => "forbidden",
                AuthFailure::RateLimited { .. } => "rate_limited",
            };
            Metrics::global().auth_failures.inc(&[reason]);
            // The template, never the raw path: an unmatched path is caller data.
            tracing::warn!(route = %route_of(&req), reason, "authentication refused");
            ApiError::Auth(failure).into_response()
        }
    }
}

/// Answers 504 `timeout` when the handler has not produced a response in time. Streams are
/// bounded to their first byte: the body is produced after the response is returned.
pub async fn timeout(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let secs = state.settings.request_timeout_seconds;
    if !(secs.is_finite() && secs > 0.0) {
        return next.run(req).await;
    }
    match tokio::time::timeout(Duration::from_secs_f64(secs), next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout { seconds: secs }.into_response(),
    }
}

/// Bounds the wait for each piece of the request body (`SERVICE_BODY_READ_TIMEOUT_SECONDS`);
/// the headers are bounded by the connection (`crate::listen`).
pub async fn body_timeout(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let secs = state.settings.body_read_timeout_seconds;
    if !(secs.is_finite() && secs > 0.0) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let body = super::body::with_read_timeout(body, Duration::from_secs_f64(secs));
    next.run(Request::from_parts(parts, body)).await
}
