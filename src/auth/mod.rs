//! Request authentication and scope authorization.
//!
//! Credentials are static API keys (configured as SHA-256 digests), JWTs
//! verified against a static JWKS, or a principal already established by
//! mutual TLS. Each route template maps to the scopes it needs; repeated
//! failures from one client are slowed by a token-bucket limiter.
//!
//! The module is transport-agnostic (only `http` types) and never logs:
//! callers decide what to record, and nothing here can leak secrets into logs.

mod api_keys;
mod jwt;
mod limiter;
mod scopes;

#[cfg(test)]
mod tests;

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue, Method, StatusCode};

use api_keys::ApiKeyStore;
use jwt::JwtVerifier;
use limiter::FailureLimiter;
use scopes::RouteScopes;

pub use limiter::FailureKey;
pub use scopes::{builtin_route_scopes, is_exempt, scopes_satisfied};

/// Environment variable names read by [`AuthConfig::from_lookup`].
pub mod env {
    /// Master switch (`true`/`false`); default off.
    pub const ENABLED: &str = "SERVICE_AUTH_ENABLED";
    /// JSON list of API key entries.
    pub const API_KEYS: &str = "SERVICE_AUTH_API_KEYS";
    /// Path of a JWKS file.
    pub const JWKS_FILE: &str = "SERVICE_AUTH_JWKS_FILE";
    /// Inline JWKS JSON.
    pub const JWKS: &str = "SERVICE_AUTH_JWKS";
    /// Required `iss` of JWTs.
    pub const JWT_ISSUER: &str = "SERVICE_AUTH_JWT_ISSUER";
    /// Accepted `aud` values, comma-separated.
    pub const JWT_AUDIENCE: &str = "SERVICE_AUTH_JWT_AUDIENCE";
    /// Clock-skew allowance in seconds for `exp`/`nbf`/`iat`.
    pub const JWT_LEEWAY_SECONDS: &str = "SERVICE_AUTH_JWT_LEEWAY_SECONDS";
    /// JSON object overriding/extending the route → scope map.
    pub const ROUTE_SCOPES: &str = "SERVICE_AUTH_ROUTE_SCOPES";
    /// Whether unmapped routes need a credential; default true.
    pub const DENY_BY_DEFAULT: &str = "SERVICE_AUTH_DENY_BY_DEFAULT";
    /// Failed attempts refilled per second; 0 disables the limiter.
    pub const FAILURE_RPS: &str = "SERVICE_AUTH_FAILURE_RATE_LIMIT_RPS";
    /// Failed attempts allowed in a burst; 0 disables the limiter.
    pub const FAILURE_BURST: &str = "SERVICE_AUTH_FAILURE_RATE_LIMIT_BURST";
    /// Limiter bucket key: `peer`, `global` or `xff`.
    pub const FAILURE_KEY: &str = "SERVICE_AUTH_FAILURE_RATE_LIMIT_KEY";
}

/// Raw authentication settings, validated by [`Authenticator::new`].
///
/// Plain public fields so the caller can fill them from any source; `Debug`
/// is manual because `api_keys` and `jwks_inline` may hold secrets.
#[derive(Clone)]
pub struct AuthConfig {
    /// Master switch; when off every request is allowed.
    pub enabled: bool,
    /// JSON array (or `{"keys": [...]}`) of API key entries.
    pub api_keys: Option<String>,
    /// JWKS file, loaded once at start-up.
    pub jwks_file: Option<PathBuf>,
    /// Inline JWKS JSON, merged after the file's keys.
    pub jwks_inline: Option<String>,
    /// Required `iss` claim when set.
    pub jwt_issuer: Option<String>,
    /// Accepted audiences (comma-separated) when set.
    pub jwt_audience: Option<String>,
    /// Clock-skew allowance for time claims.
    pub jwt_leeway_seconds: u64,
    /// JSON object of `"<METHOD> <template>"` → scopes overrides.
    pub route_scopes: Option<String>,
    /// Unmapped, non-exempt routes need a valid credential when true.
    pub deny_by_default: bool,
    /// Failed attempts refilled per second (0 disables the limiter).
    pub failure_rps: f64,
    /// Failed attempts allowed in a burst (0 disables the limiter).
    pub failure_burst: u32,
    /// How clients are told apart for failure accounting.
    pub failure_key: FailureKey,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            api_keys: None,
            jwks_file: None,
            jwks_inline: None,
            jwt_issuer: None,
            jwt_audience: None,
            jwt_leeway_seconds: 0,
            route_scopes: None,
            deny_by_default: true,
            failure_rps: 5.0,
            failure_burst: 10,
            failure_key: FailureKey::Peer,
        }
    }
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthConfig")
            .field("enabled", &self.enabled)
            .field("api_keys", &redacted(&self.api_keys))
            .field("jwks_file", &self.jwks_file)
            .field("jwks_inline", &redacted(&self.jwks_inline))
            .field("jwt_issuer", &self.jwt_issuer)
            .field("jwt_audience", &self.jwt_audience)
            .field("jwt_leeway_seconds", &self.jwt_leeway_seconds)
            .field("route_scopes", &self.route_scopes)
            .field("deny_by_default", &self.deny_by_default)
            .field("failure_rps", &self.failure_rps)
            .field("failure_burst", &self.failure_burst)
            .field("failure_key", &self.failure_key)
            .finish()
    }
}

impl AuthConfig {
    /// Read settings through `lookup` (e.g. `|k| std::env::var(k).ok()`),
    /// using the names in [`env`](mod@env). Unset or blank values take defaults;
    /// malformed scalars are errors rather than silently defaulted.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, AuthConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let defaults = Self::default();
        Ok(Self {
            enabled: parse_setting(env::ENABLED, get(env::ENABLED), parse_bool)?
                .unwrap_or(defaults.enabled),
            api_keys: get(env::API_KEYS),
            jwks_file: get(env::JWKS_FILE).map(PathBuf::from),
            jwks_inline: get(env::JWKS),
            jwt_issuer: get(env::JWT_ISSUER),
            jwt_audience: get(env::JWT_AUDIENCE),
            jwt_leeway_seconds: parse_setting(
                env::JWT_LEEWAY_SECONDS,
                get(env::JWT_LEEWAY_SECONDS),
                |v| {
                    v.parse::<u64>()
                        .map_err(|_| "expected whole seconds".to_owned())
                },
            )?
            .unwrap_or(defaults.jwt_leeway_seconds),
            route_scopes: get(env::ROUTE_SCOPES),
            deny_by_default: parse_setting(
                env::DENY_BY_DEFAULT,
                get(env::DENY_BY_DEFAULT),
                parse_bool,
            )?
            .unwrap_or(defaults.deny_by_default),
            failure_rps: parse_setting(env::FAILURE_RPS, get(env::FAILURE_RPS), |v| {
                v.parse::<f64>().map_err(|_| "expected a number".to_owned())
            })?
            .unwrap_or(defaults.failure_rps),
            failure_burst: parse_setting(env::FAILURE_BURST, get(env::FAILURE_BURST), |v| {
                v.parse::<u32>()
                    .map_err(|_| "expected a whole number".to_owned())
            })?
            .unwrap_or(defaults.failure_burst),
            failure_key: parse_setting(env::FAILURE_KEY, get(env::FAILURE_KEY), |v| v.parse())?
                .unwrap_or(defaults.failure_key),
        })
    }
}

fn parse_setting<T>(
    name: &'static str,
    value: Option<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, AuthConfigError> {
    value
        .map(|v| parse(&v).map_err(|message| AuthConfigError::Setting { name, message }))
        .transpose()
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected true or false, got {value:?}")),
    }
}

/// A start-up configuration problem. Messages name the setting and the
/// problem but never include key material, digests or JWK secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthConfigError {
    /// `SERVICE_AUTH_API_KEYS` is malformed.
    #[error("SERVICE_AUTH_API_KEYS: {0}")]
    ApiKeys(String),
    /// The JWKS file cannot be read or parsed.
    #[error("SERVICE_AUTH_JWKS_FILE ({path}): {message}")]
    JwksFile {
        /// The configured path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// `SERVICE_AUTH_JWKS` is malformed.
    #[error("SERVICE_AUTH_JWKS: {0}")]
    JwksInline(String),
    /// The combined JWT settings are unusable.
    #[error("JWT configuration: {0}")]
    Jwt(String),
    /// `SERVICE_AUTH_ROUTE_SCOPES` is malformed.
    #[error("SERVICE_AUTH_ROUTE_SCOPES: {0}")]
    RouteScopes(String),
    /// A scalar setting is malformed.
    #[error("{name}: {message}")]
    Setting {
        /// The environment variable name.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// How a principal authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrincipalKind {
    /// Static API key.
    ApiKey,
    /// JWT bearer token.
    Jwt,
    /// Mutual-TLS client certificate (established by the caller).
    Certificate,
}

/// An authenticated caller. Holds no credential material, so it is safe to
/// log or attach to request extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `key:<principal>`, `jwt:<sub>`, or whatever the caller set for
    /// certificates.
    pub id: String,
    /// How the principal authenticated.
    pub kind: PrincipalKind,
    /// Granted scopes (`*` and `ns:*` wildcards allowed).
    pub scopes: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// No credential was presented.
    #[error("Authentication credentials were not provided")]
    Missing,
    /// A credential was presented but is malformed, unknown or expired.
    #[error("Authentication credentials are invalid")]
    Invalid,
    /// Valid credential lacking at least one of `required`.
    #[error("Authenticated principal does not have the required scope")]
    Forbidden {
        /// Every scope the route needs.
        required: Vec<String>,
    },
    /// Too many recent failures from this client.
    #[error("Too many failed authentication attempts; retry later")]
    RateLimited {
        /// Seconds until another attempt is allowed (at least 1).
        retry_after_secs: u64,
    },
}

impl AuthFailure {
    /// HTTP status: 401, 401, 403 or 429.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Missing | Self::Invalid => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// Stable machine-readable error code for response bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "authentication_required",
            Self::Invalid => "invalid_credentials",
            Self::Forbidden { .. } => "forbidden",
            Self::RateLimited { .. } => "auth_rate_limited",
        }
    }

    /// Human-readable message for response bodies (identical to `Display`).
    pub fn message(&self) -> &'static str {
        match self {
            Self::Missing => "Authentication credentials were not provided",
            Self::Invalid => "Authentication credentials are invalid",
            Self::Forbidden { .. } => "Authenticated principal does not have the required scope",
            Self::RateLimited { .. } => "Too many failed authentication attempts; retry later",
        }
    }

    /// `WWW-Authenticate` value (RFC 6750 style); `None` for rate limiting,
    /// which uses `Retry-After` instead.
    pub fn www_authenticate(&self) -> Option<String> {
        match self {
            Self::Missing => Some("Bearer, ApiKey".to_owned()),
            Self::Invalid => Some("Bearer error=\"invalid_token\", ApiKey".to_owned()),
            Self::Forbidden { required } => Some(format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                required.join(" ")
            )),
            Self::RateLimited { .. } => None,
        }
    }

    /// `Retry-After` seconds for rate limiting.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        }
    }
}

/// Secret-free description of the active configuration, for a start-up log
/// line written by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthSummary {
    /// Master switch.
    pub enabled: bool,
    /// Configured API keys.
    pub api_keys: usize,
    /// Usable JWT verification keys.
    pub jwt_keys: usize,
    /// JWKs skipped as unsupported.
    pub jwks_skipped: usize,
    /// Route-scope overrides applied.
    pub route_overrides: usize,
    /// Unmapped routes need a credential.
    pub deny_by_default: bool,
    /// `(rps, burst, key)` when the failure limiter is on.
    pub limiter: Option<(f64, u32, FailureKey)>,
}

/// Validated authentication policy; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Authenticator {
    enabled: bool,
    api_keys: ApiKeyStore,
    jwt: Option<JwtVerifier>,
    routes: RouteScopes,
    deny_by_default: bool,
    limiter: Option<FailureLimiter>,
    limiter_settings: Option<(f64, u32, FailureKey)>,
    failure_key: FailureKey,
}

/// A credential pulled from the headers, before verification.
enum Credential<'a> {
    ApiKey(&'a str),
    Bearer(&'a str),
}

/// Outcome of reading credential headers.
enum Presented<'a> {
    None,
    Malformed,
    Credential(Credential<'a>),
}

impl Authenticator {
    /// Parse and validate everything up front so misconfiguration stops the
    /// service at start-up instead of surfacing as request failures. Settings
    /// are validated even when auth is disabled, so a bad value is caught
    /// before someone switches auth on.
    pub fn new(config: AuthConfig) -> Result<Self, AuthConfigError> {
        let non_blank = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let api_keys = match non_blank(&config.api_keys) {
            Some(raw) => ApiKeyStore::parse(&raw)?,
            None => ApiKeyStore::default(),
        };
        let jwks_file = config
            .jwks_file
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty());
        let jwks_inline = non_blank(&config.jwks_inline);
        let jwt = JwtVerifier::new(
            jwks_file,
            jwks_inline.as_deref(),
            config.jwt_issuer.as_deref(),
            config.jwt_audience.as_deref(),
            config.jwt_leeway_seconds,
        )?;
        let routes = RouteScopes::new(config.route_scopes.as_deref())?;
        if !config.failure_rps.is_finite() || config.failure_rps < 0.0 {
            return Err(AuthConfigError::Setting {
                name: env::FAILURE_RPS,
                message: "must be a finite number >= 0".to_owned(),
            });
        }
        let limiter = FailureLimiter::new(config.failure_rps, config.failure_burst);
        let limiter_settings = limiter
            .as_ref()
            .map(|_| (config.failure_rps, config.failure_burst, config.failure_key));
        Ok(Self {
            enabled: config.enabled,
            api_keys,
            jwt,
            routes,
            deny_by_default: config.deny_by_default,
            limiter,
            limiter_settings,
            failure_key: config.failure_key,
        })
    }

    /// Whether authentication is enforced.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts and switches for a start-up log line.
    pub fn summary(&self) -> AuthSummary {
        AuthSummary {
            enabled: self.enabled,
            api_keys: self.api_keys.len(),
            jwt_keys: self.jwt.as_ref().map_or(0, JwtVerifier::key_count),
            jwks_skipped: self.jwt.as_ref().map_or(0, JwtVerifier::skipped_count),
            route_overrides: self.routes.override_count(),
            deny_by_default: self.deny_by_default,
            limiter: self.limiter_settings,
        }
    }

    /// Scopes required for `method route`, or `None` if the route is not in
    /// the map (HEAD falls back to GET).
    pub fn required_scopes(&self, method: &Method, route: &str) -> Option<&[String]> {
        self.routes.required(method, route)
    }

    /// Authenticate and authorize one request.
    ///
    /// `route` is the matched route template (or the raw path when no route
    /// matched); `peer` the TCP peer; `certificate` a principal already
    /// established by mutual TLS, used when the request carries no
    /// `X-API-Key`/`Authorization` header. `Ok(None)` means the request needs
    /// no principal (auth off, exempt or open route).
    pub fn check(
        &self,
        method: &Method,
        route: &str,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
        certificate: Option<&Principal>,
    ) -> Result<Option<Principal>, AuthFailure> {
        let unix_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.check_at(
            method,
            route,
            headers,
            peer,
            certificate,
            Instant::now(),
            unix_now,
        )
    }

    /// [`Self::check`] with injected clocks (monotonic for the limiter, Unix
    /// seconds for JWT time claims) so tests are deterministic.
    #[allow(clippy::too_many_arguments)]
    fn check_at(
        &self,
        method: &Method,
        route: &str,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
        certificate: Option<&Principal>,
        now: Instant,
        unix_now: u64,
    ) -> Result<Option<Principal>, AuthFailure> {
        if !self.enabled || is_exempt(route) {
            return Ok(None);
        }
        let required = match self.routes.required(method, route) {
            Some(required) => required,
            None if self.deny_by_default => &[],
            None => return Ok(None),
        };

        let bucket = self
            .limiter
            .as_ref()
            .map(|limiter| (limiter, self.failure_key.bucket(headers, peer)));
        if let Some((limiter, key)) = &bucket {
            limiter
                .check_at(key, now)
                .map_err(|retry_after_secs| AuthFailure::RateLimited { retry_after_secs })?;
        }

        let principal = match self.authenticate(headers, certificate, unix_now) {
            Ok(principal) => principal,
            Err(failure) => {
                if let Some((limiter, key)) = &bucket {
                    limiter.record_failure_at(key, now);
                }
                return Err(failure);
            }
        };

        if scopes_satisfied(&principal.scopes, required) {
            Ok(Some(principal))
        } else {
            Err(AuthFailure::Forbidden {
                required: required.to_vec(),
            })
        }
    }

    /// Establish the principal from headers, falling back to the certificate
    /// only when no credential header is present (an explicit but bad header
    /// must not be papered over by the TLS identity).
    fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&Principal>,
        unix_now: u64,
    ) -> Result<Principal, AuthFailure> {
        match presented_credential(headers) {
            Presented::None => certificate.cloned().ok_or(AuthFailure::Missing),
            Presented::Malformed => Err(AuthFailure::Invalid),
            Presented::Credential(Credential::ApiKey(key)) => {
                self.api_keys.verify(key).ok_or(AuthFailure::Invalid)
            }
            Presented::Credential(Credential::Bearer(token)) => self
                .jwt
                .as_ref()
                .and_then(|jwt| jwt.verify(token, unix_now).ok())
                .ok_or(AuthFailure::Invalid),
        }
    }
}

/// Read `X-API-Key` (preferred) or `Authorization`.
///
/// Repeated headers are treated as malformed: which copy a proxy or the
/// framework would pick is ambiguous, and ambiguity in auth is a bug.
fn presented_credential(headers: &HeaderMap) -> Presented<'_> {
    if headers.contains_key("x-api-key") {
        return match single_value(headers, "x-api-key") {
            Some(key) => Presented::Credential(Credential::ApiKey(key)),
            None => Presented::Malformed,
        };
    }
    if !headers.contains_key(http::header::AUTHORIZATION) {
        return Presented::None;
    }
    let Some(value) = single_value(headers, http::header::AUTHORIZATION.as_str()) else {
        return Presented::Malformed;
    };
    let Some((scheme, rest)) = value.split_once(|c: char| c.is_ascii_whitespace()) else {
        return Presented::Malformed;
    };
    let credential = rest.trim();
    if credential.is_empty() {
        return Presented::Malformed;
    }
    if scheme.eq_ignore_ascii_case("bearer") {
        Presented::Credential(Credential::Bearer(credential))
    } else if scheme.eq_ignore_ascii_case("apikey") || scheme.eq_ignore_ascii_case("api-key") {
        Presented::Credential(Credential::ApiKey(credential))
    } else {
        Presented::Malformed
    }
}

/// The only value of `name`, trimmed, if it is non-empty UTF-8.
fn single_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return None;
    };
    let text = header_text(value)?.trim();
    (!text.is_empty()).then_some(text)
}

fn header_text(value: &HeaderValue) -> Option<&str> {
    std::str::from_utf8(value.as_bytes()).ok()
}
