//! SMART Backend Services authorisation (client-credentials grant with a signed client
//! assertion), as FHIR Bulk Data clients use it.
//!
//! The client assertion is a JWT signed with the registered private key: RS384 for an RSA key,
//! ES384 for an EC P-384 key (picked from the key itself, never from configuration), with
//! `iss = sub = client_id`, `aud = token_url`, `exp` at most five minutes ahead and a random
//! `jti`. [`SmartClient`] caches the access token, mints a new one before `expires_in` runs
//! out, and mints once more when a server answers 401 to a token it issued.
//!
//! The private key and every token stay out of `Debug`, logs and error messages.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::origin::{self, Origin};
use super::retry;

/// The `client_assertion_type` of RFC 7523 JWT client authentication.
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Lifetime of a client assertion (the spec allows at most five minutes).
const ASSERTION_LIFETIME_SECS: u64 = 240;

/// The token is re-minted when less than this much of its life is left (capped by a fifth of
/// its lifetime, so very short-lived tokens are still used).
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Lifetime assumed when a token response has no `expires_in`.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(300);

/// What a [`SmartClient`] needs. `Debug` redacts the private key.
#[derive(Clone)]
pub struct SmartConfig {
    /// The authorisation server's token endpoint (absolute http or https URL).
    pub token_url: String,
    /// The client id registered with the authorisation server.
    pub client_id: String,
    /// The registered private key, PEM: PKCS#8 (`PRIVATE KEY`) RSA or EC P-384, or PKCS#1 RSA.
    pub private_key_pem: String,
    /// The `kid` of the registered public key (JWKS), sent in the assertion header.
    pub key_id: Option<String>,
    /// Requested scopes, passed through as given: SMART v1 (`system/*.read`) or v2
    /// (`system/*.rs`).
    pub scope: String,
    /// Timeout for each token request.
    pub request_timeout: Duration,
}

impl fmt::Debug for SmartConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmartConfig")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("private_key_pem", &"[redacted]")
            .field("key_id", &self.key_id)
            .field("scope", &self.scope)
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

/// Why authorisation failed. Never carries a key, an assertion or a token.
#[derive(Debug, thiserror::Error)]
pub enum SmartError {
    #[error("invalid {field}: {reason}")]
    Config {
        field: &'static str,
        reason: &'static str,
    },
    #[error(
        "private_key_pem is not a usable private key: expected an RSA key (PKCS#1 or PKCS#8, RS384) or an EC P-384 key (PKCS#8, ES384)"
    )]
    UnsupportedKey,
    #[error("signing the client assertion failed")]
    Signing,
    #[error("token request failed: {kind}")]
    Transport { kind: &'static str },
    #[error("token endpoint refused the client assertion: HTTP {status}{}", error_suffix(.error))]
    Refused { status: u16, error: Option<String> },
    #[error("token endpoint answered an unusable token response: {reason}")]
    BadResponse { reason: &'static str },
}

fn error_suffix(error: &Option<String>) -> String {
    error
        .as_ref()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default()
}

/// Signature algorithm of the client assertion, decided by the key type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AssertionAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-384, for RSA keys.
    Rs384,
    /// ECDSA P-384 with SHA-384, for EC P-384 keys.
    Es384,
}

impl AssertionAlgorithm {
    fn jwt(self) -> Algorithm {
        match self {
            Self::Rs384 => Algorithm::RS384,
            Self::Es384 => Algorithm::ES384,
        }
    }

    /// The JOSE name (`RS384` or `ES384`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rs384 => "RS384",
            Self::Es384 => "ES384",
        }
    }
}

/// A bearer access token. `Debug` redacts the value; [`AccessToken::secret`] is the only way
/// to read it.
#[derive(Clone)]
pub struct AccessToken {
    value: Arc<str>,
    /// Which mint this is (1 for the first), so a 401 re-mints only once however many
    /// requests saw the same stale token.
    generation: u64,
    expires_at: Instant,
    scope: Option<String>,
}

impl AccessToken {
    /// The bearer value, for an `Authorization` header only.
    pub fn secret(&self) -> &str {
        &self.value
    }

    /// When the token stops being valid, by `expires_in`.
    pub fn expires_at(&self) -> Instant {
        self.expires_at
    }

    /// The scope the server granted, when it said.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Which mint of its client this token is (1, 2, ...).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("value", &"[redacted]")
            .field("generation", &self.generation)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

struct Cached {
    token: AccessToken,
    refresh_at: Instant,
}

struct Inner {
    token_url: reqwest::Url,
    client_id: String,
    key: EncodingKey,
    algorithm: AssertionAlgorithm,
    key_id: Option<String>,
    scope: String,
    timeout: Duration,
    http: reqwest::Client,
    cached: tokio::sync::Mutex<Option<Cached>>,
    minted: AtomicU64,
}

/// A SMART Backend Services token source: cheap to clone, shared by concurrent downloads.
#[derive(Clone)]
pub struct SmartClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for SmartClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmartClient")
            .field("token_url", &self.inner.token_url.as_str())
            .field("client_id", &self.inner.client_id)
            .field("algorithm", &self.inner.algorithm)
            .field("key", &"[redacted]")
            .finish()
    }
}

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    exp: u64,
    iat: u64,
    jti: String,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<serde_json::Value>,
    scope: Option<String>,
}

#[derive(Deserialize)]
struct OAuthError {
    error: Option<String>,
}

impl SmartClient {
    /// Checks the configuration and the key; makes no request.
    pub fn new(config: SmartConfig) -> Result<Self, SmartError> {
        let token_url = origin::parse_http_url(&config.token_url).ok_or(SmartError::Config {
            field: "token_url",
            reason: "must be an absolute http or https URL",
        })?;
        if config.client_id.is_empty() || config.client_id.chars().any(char::is_control) {
            return Err(SmartError::Config {
                field: "client_id",
                reason: "must be non-empty printable text",
            });
        }
        check_scope(&config.scope)?;
        if let Some(kid) = &config.key_id
            && (kid.is_empty() || kid.chars().any(char::is_control))
        {
            return Err(SmartError::Config {
                field: "key_id",
                reason: "must be non-empty printable text",
            });
        }
        if config.request_timeout.is_zero() {
            return Err(SmartError::Config {
                field: "request_timeout",
                reason: "must be greater than 0",
            });
        }
        let (key, algorithm) = load_key(config.private_key_pem.as_bytes())?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| SmartError::Transport {
                kind: "HTTP client could not be built",
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                token_url,
                client_id: config.client_id,
                key,
                algorithm,
                key_id: config.key_id,
                scope: config.scope,
                timeout: config.request_timeout,
                http,
                cached: tokio::sync::Mutex::new(None),
                minted: AtomicU64::new(0),
            }),
        })
    }

    /// The assertion's algorithm, from the key type.
    pub fn algorithm(&self) -> AssertionAlgorithm {
        self.inner.algorithm
    }

    /// The token endpoint's origin (downloads may also go there).
    pub fn token_origin(&self) -> Origin {
        Origin::of(&self.inner.token_url)
    }

    /// The token endpoint.
    pub fn token_url(&self) -> &str {
        self.inner.token_url.as_str()
    }

    /// How many access tokens this client has obtained.
    pub fn tokens_minted(&self) -> u64 {
        self.inner.minted.load(Ordering::Relaxed)
    }

    /// A fresh signed client assertion (a secret: send it only to the token endpoint).
    pub fn client_assertion(&self) -> Result<String, SmartError> {
        let inner = &self.inner;
        let now = unix_now();
        let mut header = Header::new(inner.algorithm.jwt());
        header.typ = Some("JWT".into());
        header.kid = inner.key_id.clone();
        let claims = AssertionClaims {
            iss: &inner.client_id,
            sub: &inner.client_id,
            aud: inner.token_url.as_str(),
            exp: now + ASSERTION_LIFETIME_SECS,
            iat: now,
            jti: random_jti()?,
        };
        jsonwebtoken::encode(&header, &claims, &inner.key).map_err(|_| SmartError::Signing)
    }

    /// The cached access token, or a new one when there is none or it is close to expiry.
    pub async fn access_token(&self) -> Result<AccessToken, SmartError> {
        let mut cached = self.inner.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && Instant::now() < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        let token = self.mint().await?;
        *cached = Some(token_entry(token.clone()));
        Ok(token)
    }

    /// A server refused `rejected` with 401: the next [`SmartClient::access_token`] mints a
    /// new token, unless another caller already replaced that one.
    pub async fn token_rejected(&self, rejected: &AccessToken) {
        let mut cached = self.inner.cached.lock().await;
        if cached
            .as_ref()
            .is_some_and(|c| c.token.generation == rejected.generation)
        {
            *cached = None;
        }
    }

    async fn mint(&self) -> Result<AccessToken, SmartError> {
        let inner = &self.inner;
        let assertion = self.client_assertion()?;
        let form = [
            ("grant_type", "client_credentials"),
            ("scope", inner.scope.as_str()),
            ("client_assertion_type", CLIENT_ASSERTION_TYPE),
            ("client_assertion", assertion.as_str()),
        ];
        let response = inner
            .http
            .post(inner.token_url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .timeout(inner.timeout)
            .send()
            .await
            .map_err(|e| SmartError::Transport {
                kind: retry::transport_kind(&e),
            })?;
        let status = response.status();
        let body = read_small_body(response, inner.timeout).await?;
        if !status.is_success() {
            let error = serde_json::from_slice::<OAuthError>(&body)
                .ok()
                .and_then(|e| e.error)
                .filter(|e| is_oauth_error_code(e));
            return Err(SmartError::Refused {
                status: status.as_u16(),
                error,
            });
        }
        let parsed: TokenResponse =
            serde_json::from_slice(&body).map_err(|_| SmartError::BadResponse {
                reason: "not a JSON token response",
            })?;
        let value = parsed
            .access_token
            .filter(|t| !t.is_empty() && !t.chars().any(|c| c.is_control() || c == ' '))
            .ok_or(SmartError::BadResponse {
                reason: "no usable access_token",
            })?;
        if !parsed
            .token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("bearer"))
        {
            return Err(SmartError::BadResponse {
                reason: "token_type is not bearer",
            });
        }
        let lifetime = match parsed.expires_in {
            None | Some(serde_json::Value::Null) => DEFAULT_TOKEN_LIFETIME,
            Some(v) => parse_expires_in(&v).ok_or(SmartError::BadResponse {
                reason: "expires_in is not a non-negative number of seconds",
            })?,
        };
        let generation = inner.minted.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(
            generation,
            lifetime_s = lifetime.as_secs(),
            "SMART access token obtained"
        );
        Ok(AccessToken {
            value: value.into(),
            generation,
            expires_at: Instant::now() + lifetime,
            scope: parsed.scope,
        })
    }
}

fn token_entry(token: AccessToken) -> Cached {
    let now = Instant::now();
    let lifetime = token.expires_at.saturating_duration_since(now);
    let margin = REFRESH_MARGIN.min(lifetime / 5);
    Cached {
        refresh_at: token.expires_at.checked_sub(margin).unwrap_or(now),
        token,
    }
}

/// Picks the algorithm from the key: RS384 for RSA, ES384 for EC P-384. A trial signature
/// proves the key is usable (an EC key on another curve fails here, not at the first export).
fn load_key(pem: &[u8]) -> Result<(EncodingKey, AssertionAlgorithm), SmartError> {
    let candidates = [
        (EncodingKey::from_rsa_pem(pem), AssertionAlgorithm::Rs384),
        (EncodingKey::from_ec_pem(pem), AssertionAlgorithm::Es384),
    ];
    for (key, algorithm) in candidates {
        if let Ok(key) = key
            && jsonwebtoken::crypto::sign(b"phiflow key check", &key, algorithm.jwt()).is_ok()
        {
            return Ok((key, algorithm));
        }
    }
    Err(SmartError::UnsupportedKey)
}

/// Scopes are passed through; this only refuses what cannot be a scope string (RFC 6749
/// `scope-token`s are printable ASCII other than `"` and `\`, separated by spaces).
fn check_scope(scope: &str) -> Result<(), SmartError> {
    let ok = !scope.trim().is_empty()
        && scope
            .chars()
            .all(|c| c == ' ' || (c.is_ascii_graphic() && c != '"' && c != '\\'));
    if ok {
        Ok(())
    } else {
        Err(SmartError::Config {
            field: "scope",
            reason: "must be non-empty, space-separated printable ASCII scope tokens",
        })
    }
}

fn is_oauth_error_code(e: &str) -> bool {
    !e.is_empty() && e.len() <= 64 && e.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

fn parse_expires_in(v: &serde_json::Value) -> Option<Duration> {
    let secs = match v {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0 * 365.0)))
}

/// Token responses are small; a larger body is refused rather than buffered.
async fn read_small_body(
    mut response: reqwest::Response,
    timeout: Duration,
) -> Result<Vec<u8>, SmartError> {
    const LIMIT: usize = 64 * 1024;
    let mut body = Vec::new();
    loop {
        let chunk = tokio::time::timeout(timeout, response.chunk())
            .await
            .map_err(|_| SmartError::Transport { kind: "timeout" })?
            .map_err(|e| SmartError::Transport {
                kind: retry::transport_kind(&e),
            })?;
        match chunk {
            Some(c) if body.len() + c.len() > LIMIT => {
                return Err(SmartError::BadResponse {
                    reason: "token response larger than 64 KiB",
                });
            }
            Some(c) => body.extend_from_slice(&c),
            None => return Ok(body),
        }
    }
}

fn random_jti() -> Result<String, SmartError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| SmartError::Signing)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pem: String) -> SmartConfig {
        SmartConfig {
            token_url: "https://auth.example.org/token".into(),
            client_id: "client-1".into(),
            private_key_pem: pem,
            key_id: Some("kid-1".into()),
            scope: "system/*.rs".into(),
            request_timeout: Duration::from_secs(5),
        }
    }

    fn pem(alg: &'static rcgen::SignatureAlgorithm) -> String {
        rcgen::KeyPair::generate_for(alg)
            .expect("key generation")
            .serialize_pem()
    }

    #[test]
    fn algorithm_follows_the_key_type() {
        let rsa = SmartClient::new(config(pem(&rcgen::PKCS_RSA_SHA256))).expect("rsa key");
        assert_eq!(rsa.algorithm(), AssertionAlgorithm::Rs384);
        let ec = SmartClient::new(config(pem(&rcgen::PKCS_ECDSA_P384_SHA384))).expect("ec key");
        assert_eq!(ec.algorithm(), AssertionAlgorithm::Es384);
    }

    #[test]
    fn p256_and_garbage_keys_are_refused() {
        for bad in [
            pem(&rcgen::PKCS_ECDSA_P256_SHA256),
            pem(&rcgen::PKCS_ED25519),
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".into(),
            String::new(),
        ] {
            let err = SmartClient::new(config(bad)).expect_err("refused");
            assert!(matches!(err, SmartError::UnsupportedKey), "{err}");
        }
    }

    #[test]
    fn assertion_has_the_backend_services_claims() {
        let key = pem(&rcgen::PKCS_ECDSA_P384_SHA384);
        let client = SmartClient::new(config(key)).expect("client");
        let jwt = client.client_assertion().expect("assertion");
        let header = jsonwebtoken::decode_header(&jwt).expect("header");
        assert_eq!(header.alg, Algorithm::ES384);
        assert_eq!(header.kid.as_deref(), Some("kid-1"));
        let claims: serde_json::Value = jsonwebtoken::dangerous::insecure_decode(&jwt)
            .expect("claims")
            .claims;
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://auth.example.org/token");
        let exp = claims["exp"].as_u64().expect("exp");
        assert!(exp > unix_now() && exp <= unix_now() + 300);
        let other = client.client_assertion().expect("assertion");
        let other: serde_json::Value = jsonwebtoken::dangerous::insecure_decode(&other)
            .expect("claims")
            .claims;
        assert_ne!(claims["jti"], other["jti"], "jti is random");
    }

    #[test]
    fn scopes_v1_and_v2_pass_and_junk_is_refused() {
        for ok in [
            "system/*.read",
            "system/*.rs",
            "system/Patient.rs system/Observation.rs",
        ] {
            assert!(check_scope(ok).is_ok(), "{ok}");
        }
        for bad in ["", "  ", "system/*.read\n", "system/\"x\"", "système/*.rs"] {
            assert!(check_scope(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key = pem(&rcgen::PKCS_ECDSA_P384_SHA384);
        let cfg = config(key.clone());
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("PRIVATE KEY") && shown.contains("[redacted]"));
        let client = SmartClient::new(cfg).expect("client");
        assert!(!format!("{client:?}").contains("PRIVATE"));
        let token = AccessToken {
            value: "s3cr3t-token".into(),
            generation: 1,
            expires_at: Instant::now(),
            scope: None,
        };
        assert!(!format!("{token:?}").contains("s3cr3t"));
    }

    #[test]
    fn refresh_margin_keeps_short_tokens_usable() {
        let token = AccessToken {
            value: "t".into(),
            generation: 1,
            expires_at: Instant::now() + Duration::from_secs(10),
            scope: None,
        };
        let entry = token_entry(token.clone());
        let left = entry.refresh_at.saturating_duration_since(Instant::now());
        assert!(
            left > Duration::from_secs(7) && left <= Duration::from_secs(8),
            "{left:?}"
        );
        let long = AccessToken {
            expires_at: Instant::now() + Duration::from_secs(3600),
            ..token
        };
        let left = token_entry(long)
            .refresh_at
            .saturating_duration_since(Instant::now());
        assert!(left > Duration::from_secs(3530) && left <= Duration::from_secs(3540));
    }

    #[test]
    fn expires_in_accepts_numbers_and_numeric_strings() {
        use serde_json::json;
        assert_eq!(
            parse_expires_in(&json!(300)),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            parse_expires_in(&json!("60")),
            Some(Duration::from_secs(60))
        );
        assert_eq!(parse_expires_in(&json!(-1)), None);
        assert_eq!(parse_expires_in(&json!("soon")), None);
    }
}
