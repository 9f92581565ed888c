//! A local FHIR Bulk Data server with a SMART Backend Services token endpoint, on 127.0.0.1
//! (ephemeral port), speaking the real protocol, for tests of the Bulk Data client and of the
//! ingestion built on it.
//!
//! - `POST /auth/token`: client-credentials grant with a JWT client assertion. The assertion's
//!   signature is verified with the client's registered JWKS (RSA and/or EC keys, matched by
//!   `kid`, RS384/ES384), and `iss = sub = client_id`, `aud = token_url`, `exp` at most five
//!   minutes ahead and an unused `jti` are checked. Answers
//!   `{access_token, token_type: "bearer", expires_in, scope}` or 400/401 `{error}`.
//! - `GET /fhir/…$export` (any path ending in `$export`): needs the bearer token,
//!   `Prefer: respond-async` and `Accept: application/fhir+json`; answers 202 with
//!   `Content-Location: {base}/status/{n}`.
//! - `GET /fhir/status/{n}`: 202 with `X-Progress` and `Retry-After` `pending_polls` times,
//!   then 200 and the manifest. `DELETE` cancels (202) and is recorded; polls after it get 404.
//! - `GET /files/{name}`: the NDJSON (bearer needed when `requires_access_token`), streamed in
//!   `chunk_size` pieces `chunk_delay` apart, gzip-encoded when `gzip` and the client accepts it.
//!
//! Scripted faults: one 429 or 503 while polling, one 500 or one broken transfer per file,
//! tokens that stop working before their `expires_in`, a failing kick-off, off-origin file URLs
//! in the manifest, file redirects.
//!
//! Knobs are the fields of [`BulkServerConfig`] (scripted faults included); everything tests
//! assert on is in [`BulkServer::log`]. Keys are made by the tests ([`TestKey`]), never files.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation};
use serde_json::{Value, json};

/// A private key made for a test, with its public JWK (`kid` set).
pub struct TestKey {
    pub private_pem: String,
    pub jwk: Jwk,
    pub kid: String,
}

impl TestKey {
    /// A fresh RSA 2048 key (the client signs RS384 with it).
    pub fn rsa(kid: &str) -> Self {
        Self::make(kid, &rcgen::PKCS_RSA_SHA256, Algorithm::RS384)
    }

    /// A fresh EC P-384 key (the client signs ES384 with it).
    pub fn ec_p384(kid: &str) -> Self {
        Self::make(kid, &rcgen::PKCS_ECDSA_P384_SHA384, Algorithm::ES384)
    }

    fn make(kid: &str, alg: &'static rcgen::SignatureAlgorithm, jwt_alg: Algorithm) -> Self {
        let pair = rcgen::KeyPair::generate_for(alg).expect("test key generation");
        let private_pem = pair.serialize_pem();
        let key = match jwt_alg {
            Algorithm::RS384 => EncodingKey::from_rsa_pem(private_pem.as_bytes()),
            _ => EncodingKey::from_ec_pem(private_pem.as_bytes()),
        }
        .expect("test key loads");
        let mut jwk = Jwk::from_encoding_key(&key, jwt_alg).expect("public JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            private_pem,
            jwk,
            kid: kid.to_owned(),
        }
    }
}

/// A client registered with the token endpoint: its id and its public keys.
#[derive(Clone)]
pub struct RegisteredClient {
    pub client_id: String,
    pub jwks: JwkSet,
}

impl RegisteredClient {
    pub fn new(client_id: &str, keys: &[&TestKey]) -> Self {
        Self {
            client_id: client_id.to_owned(),
            jwks: JwkSet {
                keys: keys.iter().map(|k| k.jwk.clone()).collect(),
            },
        }
    }
}

/// One NDJSON file of the export.
#[derive(Clone)]
pub struct ServedFile {
    /// Resource type named in the manifest.
    pub resource_type: String,
    /// Last path segment of its URL (`/files/{name}`); unique per server.
    pub name: String,
    /// The NDJSON, exactly as served (before gzip).
    pub body: Vec<u8>,
    /// The manifest's `count`, when set.
    pub count: Option<u64>,
}

impl ServedFile {
    /// One resource per line.
    pub fn resources(resource_type: &str, name: &str, resources: &[Value]) -> Self {
        let mut body = Vec::new();
        for r in resources {
            serde_json::to_writer(&mut body, r).expect("resource serialises");
            body.push(b'\n');
        }
        Self {
            resource_type: resource_type.to_owned(),
            name: name.to_owned(),
            body,
            count: Some(resources.len() as u64),
        }
    }

    /// Resources grouped by `resourceType`, at most `per_file` to a file, named
    /// `{type}-{n}` (for feeding the server a mixed set such as the FHIR R4 examples).
    pub fn group_by_type(resources: &[Value], per_file: usize) -> Vec<Self> {
        let mut by_type: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
        for r in resources {
            let t = r
                .get("resourceType")
                .and_then(Value::as_str)
                .unwrap_or("Unknown");
            by_type.entry(t).or_default().push(r.clone());
        }
        let mut files = Vec::new();
        for (t, list) in by_type {
            for (n, part) in list.chunks(per_file.max(1)).enumerate() {
                files.push(Self::resources(t, &format!("{t}-{}", n + 1), part));
            }
        }
        files
    }

    /// Raw NDJSON bytes as given.
    pub fn raw(resource_type: &str, name: &str, body: Vec<u8>) -> Self {
        Self {
            resource_type: resource_type.to_owned(),
            name: name.to_owned(),
            body,
            count: None,
        }
    }
}

/// How `Retry-After` is written on 202 status answers.
#[derive(Clone, Copy, Debug)]
pub enum RetryAfterStyle {
    /// No `Retry-After`.
    Omit,
    /// Delta seconds.
    Seconds(u64),
    /// An HTTP-date this many seconds ahead.
    HttpDate(u64),
    /// Delta seconds on odd polls, HTTP-date on even ones.
    Alternate(u64),
}

/// The server's knobs. `Default` is a well-behaved server with no files and no clients.
#[derive(Clone)]
pub struct BulkServerConfig {
    pub clients: Vec<RegisteredClient>,
    /// The manifest's `output`.
    pub files: Vec<ServedFile>,
    /// The manifest's OperationOutcome files.
    pub error_files: Vec<ServedFile>,
    /// The manifest's `deleted` files.
    pub deleted_files: Vec<ServedFile>,
    /// Key of the OperationOutcome list: `"error"` (current spec) or `"outcome"` (older drafts).
    pub outcome_key: &'static str,
    pub requires_access_token: bool,
    /// 202 answers before the manifest.
    pub pending_polls: u32,
    pub retry_after: RetryAfterStyle,
    /// Answer this poll (1-based, counting every status GET) with one 429 + `Retry-After: 1`.
    pub poll_429_at: Option<u32>,
    /// Answer this poll with one 503 + `Retry-After: 1`.
    pub poll_503_at: Option<u32>,
    /// The first request for these files (by name) gets a 500.
    pub file_500_once: HashSet<String>,
    /// The first transfer of these files breaks off after half the body (connection reset).
    pub file_break_once: HashSet<String>,
    /// gzip file bodies when the request's `Accept-Encoding` allows it.
    pub gzip: bool,
    /// `expires_in` of issued tokens (seconds).
    pub token_expires_in: u64,
    /// How long tokens are really accepted; shorter than `expires_in` forces 401s (a token
    /// that "expires mid-download", as with clock skew or revocation).
    pub token_valid_for: Option<Duration>,
    /// File bodies are sent in pieces of this size…
    pub chunk_size: usize,
    /// …with this pause before each piece (makes downloads overlap measurably).
    pub chunk_delay: Duration,
    /// Put file URLs on this origin in the manifest instead of the server's own
    /// (e.g. `http://localhost:{port}` to test the client's origin rule).
    pub file_origin: Option<String>,
    /// Answer kick-offs with this status (and an OperationOutcome) instead of 202.
    pub kick_off_status: Option<u16>,
    /// Answer file requests with `307 Temporary Redirect` to this URL.
    pub file_redirect_to: Option<String>,
}

impl Default for BulkServerConfig {
    fn default() -> Self {
        Self {
            clients: Vec::new(),
            files: Vec::new(),
            error_files: Vec::new(),
            deleted_files: Vec::new(),
            outcome_key: "error",
            requires_access_token: true,
            pending_polls: 1,
            retry_after: RetryAfterStyle::Seconds(1),
            poll_429_at: None,
            poll_503_at: None,
            file_500_once: HashSet::new(),
            file_break_once: HashSet::new(),
            gzip: false,
            token_expires_in: 300,
            token_valid_for: None,
            chunk_size: 64 * 1024,
            chunk_delay: Duration::ZERO,
            file_origin: None,
            kick_off_status: None,
            file_redirect_to: None,
        }
    }
}

/// One request the server saw.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The bearer token sent, if any.
    pub bearer: Option<String>,
    pub accept: Option<String>,
    pub prefer: Option<String>,
    pub accept_encoding: Option<String>,
    /// The status answered.
    pub status: u16,
}

/// One access token issued.
#[derive(Clone, Debug)]
pub struct MintedToken {
    pub token: String,
    pub client_id: String,
    pub scope: String,
    /// The assertion's algorithm and `kid`.
    pub alg: Algorithm,
    pub kid: Option<String>,
}

/// Everything the server recorded.
#[derive(Clone, Debug, Default)]
pub struct ServerLog {
    pub requests: Vec<SeenRequest>,
    pub tokens: Vec<MintedToken>,
    /// Why each refused client assertion was refused.
    pub refused_assertions: Vec<String>,
    /// Paths that got a DELETE.
    pub deletes: Vec<String>,
    /// Most file transfers in progress at once (request in to last byte out).
    pub max_concurrent_downloads: usize,
    /// File responses sent gzip-encoded.
    pub gzip_responses: usize,
    /// Requests refused with 401 for an expired or unknown token.
    pub unauthorized: usize,
}

struct ExportState {
    polls: u32,
    deleted: bool,
}

struct State {
    config: BulkServerConfig,
    origin: String,
    log: Mutex<ServerLog>,
    tokens: Mutex<HashMap<String, Instant>>,
    jtis: Mutex<HashSet<String>>,
    exports: Mutex<Vec<ExportState>>,
    polls_total: Mutex<u32>,
    faults_used: Mutex<HashSet<String>>,
    downloads_now: AtomicUsize,
}

/// A running server; stops when the test's runtime ends.
pub struct BulkServer {
    /// `http://127.0.0.1:{port}`.
    pub origin: String,
    /// The FHIR base URL (`{origin}/fhir`).
    pub fhir_base_url: String,
    /// The token endpoint (`{origin}/auth/token`).
    pub token_url: String,
    state: Arc<State>,
}

impl BulkServer {
    /// Binds 127.0.0.1:0 and serves on the current tokio runtime.
    pub async fn start(config: BulkServerConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let origin = format!("http://{addr}");
        let state = Arc::new(State {
            config,
            origin: origin.clone(),
            log: Mutex::new(ServerLog::default()),
            tokens: Mutex::new(HashMap::new()),
            jtis: Mutex::new(HashSet::new()),
            exports: Mutex::new(Vec::new()),
            polls_total: Mutex::new(0),
            faults_used: Mutex::new(HashSet::new()),
            downloads_now: AtomicUsize::new(0),
        });
        let app = axum::Router::new().fallback({
            let state = Arc::clone(&state);
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = Arc::clone(&state);
                async move { handle(state, method, uri, headers, body).await }
            }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            fhir_base_url: format!("{origin}/fhir"),
            token_url: format!("{origin}/auth/token"),
            origin,
            state,
        }
    }

    /// A copy of everything recorded so far.
    pub fn log(&self) -> ServerLog {
        self.state.log.lock().expect("log").clone()
    }

    /// Requests whose path starts with `prefix`.
    pub fn requests_to(&self, prefix: &str) -> Vec<SeenRequest> {
        self.log()
            .requests
            .into_iter()
            .filter(|r| r.path.starts_with(prefix))
            .collect()
    }
}

fn header_str(headers: &HeaderMap, name: impl header::AsHeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn handle(
    state: Arc<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let bearer = header_str(&headers, header::AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer ").map(str::to_owned));
    let response = route(
        &state,
        &method,
        uri.path(),
        &headers,
        bearer.as_deref(),
        body,
    )
    .await;
    state.log.lock().expect("log").requests.push(SeenRequest {
        method: method.to_string(),
        path,
        bearer,
        accept: header_str(&headers, header::ACCEPT),
        prefer: header_str(&headers, "prefer"),
        accept_encoding: header_str(&headers, header::ACCEPT_ENCODING),
        status: response.status().as_u16(),
    });
    response
}

async fn route(
    state: &Arc<State>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    bearer: Option<&str>,
    body: Bytes,
) -> Response {
    if path == "/auth/token" && method == Method::POST {
        return token_endpoint(state, headers, &body);
    }
    if let Some(name) = path.strip_prefix("/files/") {
        if method != Method::GET {
            return outcome(StatusCode::METHOD_NOT_ALLOWED, "not-supported");
        }
        if state.config.requires_access_token
            && let Some(refused) = check_bearer(state, bearer)
        {
            return refused;
        }
        return file(state, name, headers).await;
    }
    if let Some(refused) = check_bearer(state, bearer) {
        return refused;
    }
    if let Some(id) = path.strip_prefix("/fhir/status/") {
        let Ok(id) = id.parse::<usize>() else {
            return outcome(StatusCode::NOT_FOUND, "not-found");
        };
        return match *method {
            Method::GET => status(state, id),
            Method::DELETE => delete(state, id, path),
            _ => outcome(StatusCode::METHOD_NOT_ALLOWED, "not-supported"),
        };
    }
    if path.starts_with("/fhir/") && path.ends_with("$export") && method == Method::GET {
        return kick_off(state, headers);
    }
    outcome(StatusCode::NOT_FOUND, "not-found")
}

fn outcome(status: StatusCode, code: &str) -> Response {
    let body = json!({"resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": code, "diagnostics": "bulk test server"}]});
    (
        status,
        [(header::CONTENT_TYPE, "application/fhir+json")],
        body.to_string(),
    )
        .into_response()
}

fn oauth_error(state: &State, status: StatusCode, error: &str, reason: &str) -> Response {
    state
        .log
        .lock()
        .expect("log")
        .refused_assertions
        .push(reason.to_owned());
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"error": error, "error_description": reason}).to_string(),
    )
        .into_response()
}

/// 401 unless `bearer` is a token this server issued that is still valid.
fn check_bearer(state: &State, bearer: Option<&str>) -> Option<Response> {
    let valid = bearer.is_some_and(|t| {
        state
            .tokens
            .lock()
            .expect("tokens")
            .get(t)
            .is_some_and(|until| Instant::now() < *until)
    });
    if valid {
        return None;
    }
    state.log.lock().expect("log").unauthorized += 1;
    let mut response = outcome(StatusCode::UNAUTHORIZED, "login");
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer error=\"invalid_token\""),
    );
    Some(response)
}

/// `application/x-www-form-urlencoded` body → map (last value wins).
fn parse_form(body: &[u8]) -> HashMap<String, String> {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                },
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

fn token_endpoint(state: &State, headers: &HeaderMap, body: &[u8]) -> Response {
    let bad = StatusCode::BAD_REQUEST;
    let unauthorized = StatusCode::UNAUTHORIZED;
    let content_type = header_str(headers, header::CONTENT_TYPE).unwrap_or_default();
    if !content_type.starts_with("application/x-www-form-urlencoded") {
        return oauth_error(state, bad, "invalid_request", "not a form post");
    }
    let form = parse_form(body);
    if form.get("grant_type").map(String::as_str) != Some("client_credentials") {
        return oauth_error(state, bad, "unsupported_grant_type", "grant_type");
    }
    if form.get("client_assertion_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    {
        return oauth_error(state, bad, "invalid_request", "client_assertion_type");
    }
    let Some(scope) = form.get("scope").filter(|s| !s.is_empty()) else {
        return oauth_error(state, bad, "invalid_scope", "scope missing");
    };
    let Some(assertion) = form.get("client_assertion") else {
        return oauth_error(state, bad, "invalid_request", "client_assertion missing");
    };
    let Ok(header) = jsonwebtoken::decode_header(assertion) else {
        return oauth_error(state, unauthorized, "invalid_client", "assertion header");
    };
    if !matches!(header.alg, Algorithm::RS384 | Algorithm::ES384) {
        return oauth_error(
            state,
            unauthorized,
            "invalid_client",
            "algorithm not allowed",
        );
    }
    let Ok(claims) = jsonwebtoken::dangerous::insecure_decode_claims::<Value>(assertion) else {
        return oauth_error(state, unauthorized, "invalid_client", "assertion claims");
    };
    let Some(client_id) = claims.get("iss").and_then(Value::as_str) else {
        return oauth_error(state, unauthorized, "invalid_client", "iss missing");
    };
    let Some(client) = state
        .config
        .clients
        .iter()
        .find(|c| c.client_id == client_id)
    else {
        return oauth_error(state, unauthorized, "invalid_client", "unknown client");
    };
    // The key named by kid, or (no kid) every registered key of the right type.
    let candidates: Vec<&Jwk> = match &header.kid {
        Some(kid) => client.jwks.find(kid).into_iter().collect(),
        None => client.jwks.keys.iter().collect(),
    };
    let token_url = format!("{}/auth/token", state.origin);
    let mut validation = Validation::new(header.alg);
    validation.set_audience(&[&token_url]);
    validation.set_issuer(&[client_id]);
    validation.sub = Some(client_id.to_owned());
    validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
    validation.leeway = 0;
    let verified = candidates.iter().any(|jwk| {
        DecodingKey::from_jwk(jwk)
            .ok()
            .is_some_and(|key| jsonwebtoken::decode::<Value>(assertion, &key, &validation).is_ok())
    });
    if !verified {
        return oauth_error(
            state,
            unauthorized,
            "invalid_client",
            "signature or claims do not verify with the registered keys",
        );
    }
    let now = jsonwebtoken::get_current_timestamp();
    let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    if exp > now + 300 + 5 {
        return oauth_error(
            state,
            unauthorized,
            "invalid_client",
            "exp more than 5 minutes ahead",
        );
    }
    let Some(jti) = claims.get("jti").and_then(Value::as_str) else {
        return oauth_error(state, unauthorized, "invalid_client", "jti missing");
    };
    if !state.jtis.lock().expect("jtis").insert(jti.to_owned()) {
        return oauth_error(state, unauthorized, "invalid_client", "jti replayed");
    }
    let mut raw = [0u8; 24];
    getrandom::fill(&mut raw).expect("random token");
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let valid_for = state
        .config
        .token_valid_for
        .unwrap_or(Duration::from_secs(state.config.token_expires_in));
    state
        .tokens
        .lock()
        .expect("tokens")
        .insert(token.clone(), Instant::now() + valid_for);
    state.log.lock().expect("log").tokens.push(MintedToken {
        token: token.clone(),
        client_id: client_id.to_owned(),
        scope: scope.clone(),
        alg: header.alg,
        kid: header.kid.clone(),
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"access_token": token, "token_type": "bearer",
               "expires_in": state.config.token_expires_in, "scope": scope})
        .to_string(),
    )
        .into_response()
}

fn kick_off(state: &State, headers: &HeaderMap) -> Response {
    if header_str(headers, "prefer").as_deref() != Some("respond-async") {
        return outcome(StatusCode::BAD_REQUEST, "required");
    }
    if header_str(headers, header::ACCEPT).as_deref() != Some("application/fhir+json") {
        return outcome(StatusCode::BAD_REQUEST, "not-supported");
    }
    if let Some(code) = state.config.kick_off_status {
        return outcome(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "exception",
        );
    }
    let mut exports = state.exports.lock().expect("exports");
    exports.push(ExportState {
        polls: 0,
        deleted: false,
    });
    let location = format!("{}/fhir/status/{}", state.origin, exports.len() - 1);
    (
        StatusCode::ACCEPTED,
        [(header::CONTENT_LOCATION, location)],
        Body::empty(),
    )
        .into_response()
}

fn http_date(secs_ahead: u64) -> String {
    let at = chrono::Utc::now() + chrono::TimeDelta::seconds(secs_ahead as i64);
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn status(state: &State, id: usize) -> Response {
    let poll_number = {
        let mut total = state.polls_total.lock().expect("polls");
        *total += 1;
        *total
    };
    let config = &state.config;
    for (at, code, name) in [
        (
            config.poll_429_at,
            StatusCode::TOO_MANY_REQUESTS,
            "poll-429",
        ),
        (
            config.poll_503_at,
            StatusCode::SERVICE_UNAVAILABLE,
            "poll-503",
        ),
    ] {
        if at == Some(poll_number)
            && state
                .faults_used
                .lock()
                .expect("faults")
                .insert(name.into())
        {
            let mut response = outcome(code, "throttled");
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            return response;
        }
    }
    let polls = {
        let mut exports = state.exports.lock().expect("exports");
        match exports.get_mut(id) {
            Some(e) if !e.deleted => {
                e.polls += 1;
                e.polls
            }
            _ => return outcome(StatusCode::NOT_FOUND, "not-found"),
        }
    };
    if polls <= config.pending_polls {
        let mut response = (
            StatusCode::ACCEPTED,
            [(
                "x-progress",
                format!("poll {polls} of {}", config.pending_polls),
            )],
        )
            .into_response();
        let value = match config.retry_after {
            RetryAfterStyle::Omit => None,
            RetryAfterStyle::Seconds(s) => Some(s.to_string()),
            RetryAfterStyle::HttpDate(s) => Some(http_date(s)),
            RetryAfterStyle::Alternate(s) if polls % 2 == 1 => Some(s.to_string()),
            RetryAfterStyle::Alternate(s) => Some(http_date(s)),
        };
        if let Some(v) = value.and_then(|v| header::HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return response;
    }
    let file_origin = config.file_origin.as_deref().unwrap_or(&state.origin);
    let entries = |files: &[ServedFile]| -> Vec<Value> {
        files
            .iter()
            .map(|f| {
                let mut e = json!({"type": f.resource_type,
                                   "url": format!("{file_origin}/files/{}", f.name)});
                if let Some(c) = f.count {
                    e["count"] = json!(c);
                }
                e
            })
            .collect()
    };
    let mut manifest = json!({
        "transactionTime": chrono::Utc::now().to_rfc3339(),
        "request": format!("{}/fhir/$export", state.origin),
        "requiresAccessToken": config.requires_access_token,
        "output": entries(&config.files),
        "deleted": entries(&config.deleted_files),
    });
    manifest[config.outcome_key] = json!(entries(&config.error_files));
    (
        [(header::CONTENT_TYPE, "application/json")],
        manifest.to_string(),
    )
        .into_response()
}

fn delete(state: &State, id: usize, path: &str) -> Response {
    let mut exports = state.exports.lock().expect("exports");
    match exports.get_mut(id) {
        Some(e) if !e.deleted => {
            e.deleted = true;
            state.log.lock().expect("log").deletes.push(path.to_owned());
            StatusCode::ACCEPTED.into_response()
        }
        _ => outcome(StatusCode::NOT_FOUND, "not-found"),
    }
}

/// Keeps the concurrent-download count while a transfer is in progress.
struct Transfer {
    state: Arc<State>,
}

impl Transfer {
    fn start(state: &Arc<State>) -> Self {
        let now = state.downloads_now.fetch_add(1, Ordering::SeqCst) + 1;
        let mut log = state.log.lock().expect("log");
        log.max_concurrent_downloads = log.max_concurrent_downloads.max(now);
        Self {
            state: Arc::clone(state),
        }
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        self.state.downloads_now.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn file(state: &Arc<State>, name: &str, headers: &HeaderMap) -> Response {
    let transfer = Transfer::start(state);
    let config = &state.config;
    if let Some(to) = &config.file_redirect_to {
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, to.clone())],
            Body::empty(),
        )
            .into_response();
    }
    let Some(served) = config
        .files
        .iter()
        .chain(&config.error_files)
        .chain(&config.deleted_files)
        .find(|f| f.name == name)
    else {
        return outcome(StatusCode::NOT_FOUND, "not-found");
    };
    let first_time = |fault: &str| {
        state
            .faults_used
            .lock()
            .expect("faults")
            .insert(format!("{fault}:{name}"))
    };
    if config.file_500_once.contains(name) && first_time("500") {
        tokio::time::sleep(config.chunk_delay).await;
        return outcome(StatusCode::INTERNAL_SERVER_ERROR, "transient");
    }
    let accepts_gzip = header_str(headers, header::ACCEPT_ENCODING)
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let gzip = config.gzip && accepts_gzip;
    let body = if gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&served.body).expect("gzip");
        encoder.finish().expect("gzip")
    } else {
        served.body.clone()
    };
    let break_at =
        (config.file_break_once.contains(name) && first_time("break")).then_some(body.len() / 2);
    if gzip {
        state.log.lock().expect("log").gzip_responses += 1;
    }
    let chunk_size = config.chunk_size.max(1);
    let delay = config.chunk_delay;
    let stream = futures_util::stream::unfold(
        (transfer, Bytes::from(body), 0usize),
        move |(transfer, body, offset)| async move {
            if offset >= body.len() {
                return None;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if break_at.is_some_and(|at| offset >= at) {
                return Some((
                    Err(std::io::Error::other("scripted connection break")),
                    (transfer, body.slice(0..0), 0),
                ));
            }
            let end = (offset + chunk_size).min(body.len());
            let end = break_at.map_or(end, |at| end.min(at.max(offset + 1)));
            Some((
                Ok::<_, std::io::Error>(body.slice(offset..end)),
                (transfer, body, end),
            ))
        },
    );
    let mut response = (
        [(header::CONTENT_TYPE, "application/fhir+ndjson")],
        Body::from_stream(stream),
    )
        .into_response();
    if gzip {
        response.headers_mut().insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static("gzip"),
        );
    }
    response
}
