//! JWT bearer tokens verified against a static JWKS (HS256 / RS256).
//!
//! Signature work is delegated to `jsonwebtoken`; claim checks are done here
//! so the exact rules (required `exp`, `iat` not in the future, audience
//! intersection, claims required only when configured) are explicit and
//! testable with an injected clock.

use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{AuthConfigError, Principal, PrincipalKind};

/// Tokens longer than this are rejected before any parsing; real tokens are
/// a few KiB at most and this bounds the work an attacker can force.
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// HS256 secrets shorter than the hash output are rejected (RFC 7518 §3.2).
const MIN_HMAC_KEY_BYTES: usize = 32;

/// base64url that tolerates optional padding, as JWKS producers vary.
const B64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One verification key. `Debug` is manual: `DecodingKey`'s own Debug would
/// print HMAC secrets.
struct JwtKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

impl fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// Why a token was rejected. Callers only ever see "invalid"; the reason
/// exists so tests can pin down which rule fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtError {
    /// Not a parseable compact JWS, or over the size limit.
    Malformed,
    /// Header `alg` is not HS256/RS256 (includes `none`, HS512, …).
    UnsupportedAlgorithm,
    /// Header carries `crit` extensions we do not understand.
    CriticalHeader,
    /// No key, or more than one key, matches `kid`/`alg`.
    NoUniqueKey,
    /// Signature check failed (or claims are not a JSON object).
    BadSignature,
    /// `exp` missing or not a number.
    MissingExp,
    /// `exp` is in the past.
    Expired,
    /// `nbf` is in the future.
    NotYetValid,
    /// `iat` is in the future.
    IssuedInFuture,
    /// A time claim is present but not a non-negative number.
    BadTimeClaim,
    /// `iss` missing or different from the configured issuer.
    WrongIssuer,
    /// `aud` missing or not intersecting the configured audiences.
    WrongAudience,
}

/// Verifies bearer tokens against configured keys and claim rules.
#[derive(Debug)]
pub struct JwtVerifier {
    keys: Vec<JwtKey>,
    skipped: usize,
    issuer: Option<String>,
    audiences: Vec<String>,
    leeway: u64,
}

/// Parsed JWKS contents before merging.
struct ParsedJwks {
    keys: Vec<JwtKey>,
    skipped: usize,
}

impl JwtVerifier {
    /// Build from the JWKS file and/or inline JWKS (file keys first).
    ///
    /// Returns `Ok(None)` when neither is configured: JWT auth is then off.
    pub fn new(
        jwks_file: Option<&Path>,
        jwks_inline: Option<&str>,
        issuer: Option<&str>,
        audience: Option<&str>,
        leeway: u64,
    ) -> Result<Option<Self>, AuthConfigError> {
        if jwks_file.is_none() && jwks_inline.is_none() {
            return Ok(None);
        }
        let mut keys = Vec::new();
        let mut skipped = 0;
        if let Some(path) = jwks_file {
            let raw = std::fs::read_to_string(path).map_err(|e| AuthConfigError::JwksFile {
                path: path.display().to_string(),
                message: format!("cannot read file: {}", e.kind()),
            })?;
            let parsed = parse_jwks(&raw).map_err(|message| AuthConfigError::JwksFile {
                path: path.display().to_string(),
                message,
            })?;
            keys.extend(parsed.keys);
            skipped += parsed.skipped;
        }
        if let Some(raw) = jwks_inline {
            let parsed = parse_jwks(raw).map_err(AuthConfigError::JwksInline)?;
            keys.extend(parsed.keys);
            skipped += parsed.skipped;
        }
        if keys.is_empty() {
            return Err(AuthConfigError::Jwt(format!(
                "the JWKS contains no usable HS256/RS256 keys ({skipped} unsupported keys skipped)"
            )));
        }
        let audiences: Vec<String> = audience
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(Some(Self {
            keys,
            skipped,
            issuer: issuer
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            audiences,
            leeway,
        }))
    }

    /// Number of usable keys.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Number of JWKs skipped as unsupported (e.g. EC, or `use` != `sig`).
    pub fn skipped_count(&self) -> usize {
        self.skipped
    }

    /// Verify `token` at Unix time `now` and build its principal.
    pub fn verify(&self, token: &str, now: u64) -> Result<Principal, JwtError> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(JwtError::Malformed);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| JwtError::Malformed)?;
        if !matches!(header.alg, Algorithm::HS256 | Algorithm::RS256) {
            return Err(JwtError::UnsupportedAlgorithm);
        }
        if header.crit.as_ref().is_some_and(|c| !c.is_empty()) {
            return Err(JwtError::CriticalHeader);
        }
        let mut candidates = self.keys.iter().filter(|k| {
            k.alg == header.alg
                && match &header.kid {
                    Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
                    None => true,
                }
        });
        let key = match (candidates.next(), candidates.next()) {
            (Some(key), None) => key,
            _ => return Err(JwtError::NoUniqueKey),
        };

        // jsonwebtoken checks the signature and that the header alg is the one
        // we pinned; all claim validation is switched off and done below.
        let mut validation = Validation::new(key.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.leeway = 0;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|_| JwtError::BadSignature)?;
        let claims = data.claims;

        self.check_claims(&claims, now)?;
        Ok(principal_from_claims(&claims))
    }

    fn check_claims(&self, claims: &Map<String, Value>, now: u64) -> Result<(), JwtError> {
        let exp = time_claim(claims, "exp")?.ok_or(JwtError::MissingExp)?;
        // RFC 7519 §4.1.4: the current time must be *before* `exp`.
        if now >= exp.saturating_add(self.leeway) {
            return Err(JwtError::Expired);
        }
        if let Some(nbf) = time_claim(claims, "nbf")?
            && nbf > now.saturating_add(self.leeway)
        {
            return Err(JwtError::NotYetValid);
        }
        if let Some(iat) = time_claim(claims, "iat")?
            && iat > now.saturating_add(self.leeway)
        {
            return Err(JwtError::IssuedInFuture);
        }
        if let Some(issuer) = &self.issuer {
            match claims.get("iss") {
                Some(Value::String(iss)) if iss == issuer => {}
                _ => return Err(JwtError::WrongIssuer),
            }
        }
        if !self.audiences.is_empty() {
            let matches = |a: &str| self.audiences.iter().any(|want| want == a);
            let ok = match claims.get("aud") {
                Some(Value::String(aud)) => matches(aud),
                Some(Value::Array(list)) => list.iter().any(|v| v.as_str().is_some_and(matches)),
                _ => false,
            };
            if !ok {
                return Err(JwtError::WrongAudience);
            }
        }
        Ok(())
    }
}

/// A NumericDate claim as whole seconds; fractional values are truncated and
/// anything negative or non-numeric is rejected rather than ignored.
fn time_claim(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, JwtError> {
    let Some(value) = claims.get(name) else {
        return Ok(None);
    };
    let bad = if name == "exp" {
        JwtError::MissingExp
    } else {
        JwtError::BadTimeClaim
    };
    match value {
        Value::Number(n) => {
            if let Some(v) = n.as_u64() {
                Ok(Some(v))
            } else {
                match n.as_f64() {
                    Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f as u64)),
                    _ => Err(bad),
                }
            }
        }
        _ => Err(bad),
    }
}

fn principal_from_claims(claims: &Map<String, Value>) -> Principal {
    let subject = ["sub", "client_id"]
        .iter()
        .find_map(|name| {
            claims
                .get(*name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .unwrap_or("jwt");
    let scopes = ["scope", "scp", "scopes"]
        .iter()
        .map(|name| claims.get(*name).map(token_scopes).unwrap_or_default())
        .find(|s| !s.is_empty())
        .unwrap_or_default();
    Principal {
        id: format!("jwt:{subject}"),
        kind: PrincipalKind::Jwt,
        scopes,
    }
}

/// Scopes from a token claim: a space-delimited string (RFC 8693) or a list.
/// Non-string list items grant nothing.
fn token_scopes(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = match value {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(str::split_whitespace)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// Parse a JWKS document. Errors are plain strings written here (never
/// serde's, which can quote values such as an `oct` secret).
fn parse_jwks(raw: &str) -> Result<ParsedJwks, String> {
    let value: Value = serde_json::from_str(raw)
        .map_err(|e| format!("invalid JSON at line {} column {}", e.line(), e.column()))?;
    let Some(Value::Array(items)) = value.get("keys") else {
        return Err("expected a JSON object with a top-level \"keys\" array".to_owned());
    };
    let mut keys = Vec::new();
    let mut skipped = 0;
    for (index, item) in items.iter().enumerate() {
        let number = index + 1;
        let Value::Object(jwk) = item else {
            return Err(format!("key {number} must be a JSON object"));
        };
        match parse_jwk(jwk).map_err(|e| format!("key {number}: {e}"))? {
            Some(key) => keys.push(key),
            None => skipped += 1,
        }
    }
    Ok(ParsedJwks { keys, skipped })
}

fn str_field<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, String> {
    match jwk.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("\"{name}\" must be a string")),
    }
}

/// One JWK → key; `Ok(None)` for well-formed keys we do not support.
fn parse_jwk(jwk: &Map<String, Value>) -> Result<Option<JwtKey>, String> {
    let kty = str_field(jwk, "kty")?.ok_or("missing \"kty\"")?;
    let kid = str_field(jwk, "kid")?.map(str::to_owned);
    let alg = str_field(jwk, "alg")?;
    // Encryption keys are not for verifying signatures.
    if str_field(jwk, "use")?.is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    let label = kid
        .as_deref()
        .map_or_else(String::new, |k| format!(" (kid {k:?})"));
    let (expected_alg, algorithm) = match kty {
        "oct" => ("HS256", Algorithm::HS256),
        "RSA" => ("RS256", Algorithm::RS256),
        _ => return Ok(None),
    };
    if let Some(alg) = alg
        && alg != expected_alg
    {
        return Err(format!(
            "{kty} key{label} has alg {alg:?}; only {expected_alg} is supported for kty {kty}"
        ));
    }
    let key = match algorithm {
        Algorithm::HS256 => {
            let k =
                str_field(jwk, "k")?.ok_or_else(|| format!("oct key{label} is missing \"k\""))?;
            let secret = B64URL
                .decode(k)
                .map_err(|_| format!("oct key{label}: \"k\" is not valid base64url"))?;
            if secret.len() < MIN_HMAC_KEY_BYTES {
                return Err(format!(
                    "oct key{label}: secret must be at least {MIN_HMAC_KEY_BYTES} bytes"
                ));
            }
            DecodingKey::from_secret(&secret)
        }
        _ => {
            let n =
                str_field(jwk, "n")?.ok_or_else(|| format!("RSA key{label} is missing \"n\""))?;
            let e =
                str_field(jwk, "e")?.ok_or_else(|| format!("RSA key{label} is missing \"e\""))?;
            let n_bytes = B64URL
                .decode(n)
                .map_err(|_| format!("RSA key{label}: \"n\" is not valid base64url"))?;
            let e_bytes = B64URL
                .decode(e)
                .map_err(|_| format!("RSA key{label}: \"e\" is not valid base64url"))?;
            let bits = significant_bits(&n_bytes);
            // The verifier only accepts 2048–8192-bit moduli; catching this here
            // turns "every token fails" into a start-up error.
            if !(2048..=8192).contains(&bits) {
                return Err(format!(
                    "RSA key{label}: modulus is {bits} bits; 2048 to 8192 are supported"
                ));
            }
            if e_bytes.is_empty() || significant_bits(&e_bytes) == 0 {
                return Err(format!("RSA key{label}: exponent is empty"));
            }
            DecodingKey::from_rsa_raw_components(&n_bytes, &e_bytes)
        }
    };
    Ok(Some(JwtKey {
        kid,
        alg: algorithm,
        key,
    }))
}

fn significant_bits(bytes: &[u8]) -> usize {
    match bytes.iter().position(|b| *b != 0) {
        Some(i) => {
            let lead = bytes.get(i).copied().unwrap_or(0);
            (bytes.len() - i - 1) * 8 + (8 - lead.leading_zeros() as usize)
        }
        None => 0,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::engine::general_purpose;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    pub(crate) const RSA_PEM: &str = include_str!("testdata/rsa_private.pem");
    pub(crate) const RSA_JWKS: &str = include_str!("testdata/rsa_jwks.json");
    pub(crate) const HS_SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-hs256";
    pub(crate) const NOW: u64 = 1_700_000_000;

    pub(crate) fn hs_jwks(kid: &str) -> String {
        json!({"keys": [{"kty": "oct", "kid": kid, "alg": "HS256",
            "k": general_purpose::URL_SAFE_NO_PAD.encode(HS_SECRET)}]})
        .to_string()
    }

    pub(crate) fn hs_token(kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = kid.map(str::to_owned);
        encode(&header, claims, &EncodingKey::from_secret(HS_SECRET)).expect("sign")
    }

    pub(crate) fn rs_token(kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = kid.map(str::to_owned);
        let key = EncodingKey::from_rsa_pem(RSA_PEM.as_bytes()).expect("fixture key");
        encode(&header, claims, &key).expect("sign")
    }

    fn verifier(iss: Option<&str>, aud: Option<&str>) -> JwtVerifier {
        JwtVerifier::new(None, Some(&merged_jwks()), iss, aud, 0)
            .expect("valid config")
            .expect("configured")
    }

    fn merged_jwks() -> String {
        let mut hs: Value = serde_json::from_str(&hs_jwks("hs-1")).expect("json");
        let rs: Value = serde_json::from_str(RSA_JWKS).expect("json");
        if let (Some(Value::Array(a)), Some(Value::Array(b))) = (hs.get_mut("keys"), rs.get("keys"))
        {
            a.extend(b.iter().cloned());
        }
        hs.to_string()
    }

    fn base() -> Value {
        json!({"sub": "alice", "exp": NOW + 60, "iat": NOW - 10, "scope": "pii:read jobs:read"})
    }

    #[test]
    fn hs256_and_rs256_good_tokens() {
        let v = verifier(None, None);
        let p = v.verify(&hs_token(Some("hs-1"), &base()), NOW).expect("hs");
        assert_eq!(p.id, "jwt:alice");
        assert_eq!(p.kind, PrincipalKind::Jwt);
        assert_eq!(p.scopes, vec!["pii:read", "jobs:read"]);
        // Without kid the key is chosen by alg.
        assert!(v.verify(&hs_token(None, &base()), NOW).is_ok());
        let p = v
            .verify(&rs_token(Some("rsa-test-1"), &base()), NOW)
            .expect("rs");
        assert_eq!(p.id, "jwt:alice");
        assert!(v.verify(&rs_token(None, &base()), NOW).is_ok());
        assert_eq!(v.key_count(), 2);
    }

    #[test]
    fn time_rules() {
        let v = verifier(None, None);
        let mut c = base();
        c["exp"] = json!(NOW - 1);
        assert_eq!(v.verify(&hs_token(None, &c), NOW), Err(JwtError::Expired));
        c["exp"] = json!(NOW);
        assert_eq!(v.verify(&hs_token(None, &c), NOW), Err(JwtError::Expired));

        let mut c = base();
        if let Some(obj) = c.as_object_mut() {
            obj.remove("exp");
        }
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::MissingExp)
        );
        c["exp"] = json!("tomorrow");
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::MissingExp)
        );

        let mut c = base();
        c["nbf"] = json!(NOW + 30);
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::NotYetValid)
        );
        c["nbf"] = json!(NOW);
        assert!(v.verify(&hs_token(None, &c), NOW).is_ok());

        let mut c = base();
        c["iat"] = json!(NOW + 30);
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::IssuedInFuture)
        );
        c["iat"] = json!(-5);
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::BadTimeClaim)
        );

        let mut c = base();
        c["exp"] = json!((NOW + 60) as f64 + 0.5);
        assert!(v.verify(&hs_token(None, &c), NOW).is_ok());
    }

    #[test]
    fn leeway_applies() {
        let v = JwtVerifier::new(None, Some(&hs_jwks("k")), None, None, 30)
            .expect("valid")
            .expect("configured");
        let mut c = base();
        c["exp"] = json!(NOW - 10);
        c["nbf"] = json!(NOW + 10);
        c["iat"] = json!(NOW + 10);
        assert!(v.verify(&hs_token(None, &c), NOW).is_ok());
        c["exp"] = json!(NOW - 30);
        assert_eq!(v.verify(&hs_token(None, &c), NOW), Err(JwtError::Expired));
    }

    #[test]
    fn issuer_and_audience() {
        let v = verifier(Some("https://idp.example"), Some("svc-a, svc-b"));
        let mut c = base();
        c["iss"] = json!("https://idp.example");
        c["aud"] = json!("svc-b");
        assert!(v.verify(&hs_token(None, &c), NOW).is_ok());
        c["aud"] = json!(["other", "svc-a"]);
        assert!(v.verify(&hs_token(None, &c), NOW).is_ok());
        c["aud"] = json!(["other", "third"]);
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::WrongAudience)
        );
        c["aud"] = json!("svc-c");
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::WrongAudience)
        );
        if let Some(obj) = c.as_object_mut() {
            obj.remove("aud");
        }
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::WrongAudience)
        );
        c["aud"] = json!("svc-a");
        c["iss"] = json!("https://evil.example");
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::WrongIssuer)
        );
        if let Some(obj) = c.as_object_mut() {
            obj.remove("iss");
        }
        assert_eq!(
            v.verify(&hs_token(None, &c), NOW),
            Err(JwtError::WrongIssuer)
        );

        // Not configured: iss/aud in the token are accepted as-is.
        let open = verifier(None, None);
        c["iss"] = json!("anyone");
        c["aud"] = json!(["x"]);
        assert!(open.verify(&hs_token(None, &c), NOW).is_ok());
    }

    #[test]
    fn signature_and_key_selection() {
        let v = verifier(None, None);
        let good = hs_token(Some("hs-1"), &base());
        let Some((head, sig)) = good.rsplit_once('.') else {
            panic!("token shape");
        };
        let flipped = if sig.starts_with('A') { "B" } else { "A" };
        let tampered = format!("{head}.{flipped}{}", &sig[1..]);
        assert_eq!(v.verify(&tampered, NOW), Err(JwtError::BadSignature));

        let other = encode(
            &Header::new(Algorithm::HS256),
            &base(),
            &EncodingKey::from_secret(b"another-secret-another-secret-!!"),
        )
        .expect("sign");
        assert_eq!(v.verify(&other, NOW), Err(JwtError::BadSignature));

        assert_eq!(
            v.verify(&hs_token(Some("nope"), &base()), NOW),
            Err(JwtError::NoUniqueKey)
        );
        // kid of the RSA key but HS256 header: alg mismatch, no candidate.
        assert_eq!(
            v.verify(&hs_token(Some("rsa-test-1"), &base()), NOW),
            Err(JwtError::NoUniqueKey)
        );
        assert_eq!(v.verify("not.a.jwt", NOW), Err(JwtError::Malformed));
        assert_eq!(v.verify("", NOW), Err(JwtError::Malformed));
        assert_eq!(
            v.verify(&"a".repeat(MAX_TOKEN_LEN + 1), NOW),
            Err(JwtError::Malformed)
        );
    }

    #[test]
    fn ambiguous_keys_rejected() {
        let jwks = json!({"keys": [
            {"kty": "oct", "k": general_purpose::URL_SAFE_NO_PAD.encode(HS_SECRET)},
            {"kty": "oct", "k": general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32])}
        ]})
        .to_string();
        let v = JwtVerifier::new(None, Some(&jwks), None, None, 0)
            .expect("valid")
            .expect("configured");
        assert_eq!(
            v.verify(&hs_token(None, &base()), NOW),
            Err(JwtError::NoUniqueKey)
        );
    }

    #[test]
    fn unsupported_algorithms() {
        let v = verifier(None, None);
        let b64 = |v: &Value| general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let none = format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            b64(&base())
        );
        assert_eq!(v.verify(&none, NOW), Err(JwtError::Malformed));
        let hs512 = encode(
            &Header::new(Algorithm::HS512),
            &base(),
            &EncodingKey::from_secret(HS_SECRET),
        )
        .expect("sign");
        assert_eq!(v.verify(&hs512, NOW), Err(JwtError::UnsupportedAlgorithm));
        let mut header = Header::new(Algorithm::HS256);
        header.crit = Some(vec!["exp-ext".to_owned()]);
        let crit = encode(&header, &base(), &EncodingKey::from_secret(HS_SECRET)).expect("sign");
        assert_eq!(v.verify(&crit, NOW), Err(JwtError::CriticalHeader));
    }

    #[test]
    fn scope_claim_forms() {
        let v = verifier(None, None);
        let scopes = |claims: Value| {
            let mut c = base();
            if let (Some(obj), Value::Object(extra)) = (c.as_object_mut(), claims) {
                obj.remove("scope");
                obj.extend(extra);
            }
            v.verify(&hs_token(None, &c), NOW).map(|p| p.scopes)
        };
        assert_eq!(
            scopes(json!({"scope": "a b"})),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            scopes(json!({"scope": ["a", "b"]})),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            scopes(json!({"scp": ["a", "b"]})),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            scopes(json!({"scp": "a b"})),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(scopes(json!({"scopes": ["a"]})), Ok(vec!["a".into()]));
        assert_eq!(
            scopes(json!({"scopes": "a  b"})),
            Ok(vec!["a".into(), "b".into()])
        );
        // First non-empty wins.
        assert_eq!(
            scopes(json!({"scope": "", "scp": ["x"], "scopes": ["y"]})),
            Ok(vec!["x".into()])
        );
        assert_eq!(
            scopes(json!({"scope": 5, "scopes": ["y", 3]})),
            Ok(vec!["y".into()])
        );
        assert_eq!(scopes(json!({})), Ok(vec![]));
    }

    #[test]
    fn subject_fallbacks() {
        let v = verifier(None, None);
        let id = |claims: Value| v.verify(&hs_token(None, &claims), NOW).map(|p| p.id);
        assert_eq!(
            id(json!({"exp": NOW + 5, "client_id": "svc"})),
            Ok("jwt:svc".to_owned())
        );
        assert_eq!(id(json!({"exp": NOW + 5})), Ok("jwt:jwt".to_owned()));
        assert_eq!(
            id(json!({"exp": NOW + 5, "sub": "", "client_id": "svc"})),
            Ok("jwt:svc".to_owned())
        );
    }

    #[test]
    fn jwks_parsing() {
        let k = general_purpose::URL_SAFE_NO_PAD.encode(HS_SECRET);
        let padded = general_purpose::URL_SAFE.encode(HS_SECRET);
        let ok = json!({"keys": [
            {"kty": "oct", "k": k},
            {"kty": "oct", "k": padded, "use": "sig"},
            {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"},
            {"kty": "oct", "k": k, "use": "enc"},
        ]})
        .to_string();
        let v = JwtVerifier::new(None, Some(&ok), None, None, 0)
            .expect("valid")
            .expect("configured");
        assert_eq!((v.key_count(), v.skipped_count()), (2, 2));

        let only_ec = json!({"keys": [{"kty": "EC"}]}).to_string();
        let e = JwtVerifier::new(None, Some(&only_ec), None, None, 0).expect_err("no keys");
        assert!(e.to_string().contains("1 unsupported"), "{e}");

        let short = general_purpose::URL_SAFE_NO_PAD.encode(b"short-secret-value");
        let bad_cases = [
            "[]".to_owned(),
            "{".to_owned(),
            json!({"keys": {}}).to_string(),
            json!({"keys": [5]}).to_string(),
            json!({"keys": [{"k": k}]}).to_string(),
            json!({"keys": [{"kty": "oct"}]}).to_string(),
            json!({"keys": [{"kty": "oct", "k": "!!!"}]}).to_string(),
            json!({"keys": [{"kty": "oct", "k": short}]}).to_string(),
            json!({"keys": [{"kty": "oct", "k": k, "alg": "HS512"}]}).to_string(),
            json!({"keys": [{"kty": "oct", "k": k, "alg": "RS256"}]}).to_string(),
            json!({"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}).to_string(),
            json!({"keys": [{"kty": "RSA", "e": "AQAB"}]}).to_string(),
            json!({"keys": [{"kty": "oct", "k": 5}]}).to_string(),
        ];
        for raw in bad_cases {
            let e = JwtVerifier::new(None, Some(&raw), None, None, 0)
                .expect_err(&raw)
                .to_string();
            assert!(!e.contains(&k[..12]), "leaked secret: {e}");
            assert!(!e.contains(&short[..12]), "leaked secret: {e}");
        }
    }

    #[test]
    fn jwks_file_and_inline_merge() {
        let dir = std::env::temp_dir().join(format!("auth-jwks-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("jwks.json");
        std::fs::write(&path, RSA_JWKS).expect("write");
        let v = JwtVerifier::new(Some(&path), Some(&hs_jwks("hs-1")), None, None, 0)
            .expect("valid")
            .expect("configured");
        assert_eq!(v.key_count(), 2);
        assert!(
            v.verify(&rs_token(Some("rsa-test-1"), &base()), NOW)
                .is_ok()
        );
        assert!(v.verify(&hs_token(Some("hs-1"), &base()), NOW).is_ok());

        let missing = dir.join("missing.json");
        let e = JwtVerifier::new(Some(&missing), None, None, None, 0).expect_err("missing");
        assert!(e.to_string().contains("missing.json"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);

        assert!(
            JwtVerifier::new(None, None, Some("iss"), None, 0)
                .expect("ok")
                .is_none()
        );
    }

    #[test]
    fn debug_redacts_secret() {
        let v = verifier(None, None);
        let dbg = format!("{v:?}");
        assert!(dbg.contains("<redacted>"));
        let secret_bytes = format!("{:?}", &HS_SECRET[..8]);
        assert!(!dbg.contains(&secret_bytes[1..secret_bytes.len() - 1]));
    }
}
