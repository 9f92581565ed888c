//! Authentication over HTTP: every route of the catalog × every kind of credential, with the
//! exact status codes and challenges; and the failed-attempt limiter (429 after the burst,
//! recovery after the refill). Tokens are minted here with jsonwebtoken: HS256 from an `oct`
//! key and RS256 from the RSA key whose public half is in the JWKS the service loads.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use phiflow::api::catalog;
use serde_json::{Value, json};

const HS_SECRET: &[u8] = b"phiflow-auth-matrix-hs256-secret-0123456789";
const RSA_PEM: &str = include_str!("../src/auth/testdata/rsa_private.pem");
const RSA_JWKS: &str = include_str!("../src/auth/testdata/rsa_jwks.json");
const ISSUER: &str = "https://idp.hospital.test";
const AUDIENCE: &str = "phiflow";
const KEY_ALL: &str = "key-with-every-scope-3f9a";
const KEY_NONE: &str = "key-without-scopes-77c1";

fn sha256_hex(s: &str) -> String {
    phiflow::digest::sha256_hex(s.as_bytes())
}

fn jwks() -> String {
    use base64::Engine;
    let mut set: Value = serde_json::from_str(RSA_JWKS).expect("jwks fixture");
    let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(HS_SECRET);
    set["keys"]
        .as_array_mut()
        .expect("keys")
        .push(json!({ "kty": "oct", "kid": "hs-1", "alg": "HS256", "k": k }));
    set.to_string()
}

fn configure(s: &mut phiflow::config::Settings, rps: &str, burst: &str) {
    s.auth.enabled = Some("true".into());
    s.auth.api_keys = Some(
        json!([
            { "id": "all", "key_hash": format!("sha256:{}", sha256_hex(KEY_ALL)), "scopes": ["*"] },
            { "id": "none", "key_hash": format!("sha256:{}", sha256_hex(KEY_NONE)), "scopes": [] },
        ])
        .to_string(),
    );
    s.auth.jwks = Some(jwks());
    s.auth.jwt_issuer = Some(ISSUER.into());
    s.auth.jwt_audience = Some(AUDIENCE.into());
    s.auth.failure_rps = Some(rps.into());
    s.auth.failure_burst = Some(burst.into());
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn claims(scopes: Value, iss: &str, aud: &str, exp_in: i64) -> Value {
    let mut c = json!({ "sub": "svc-1", "iss": iss, "aud": aud, "iat": now() - 10,
        "exp": now() + exp_in });
    if let Some(obj) = scopes.as_object() {
        for (k, v) in obj {
            c[k] = v.clone();
        }
    }
    c
}

fn hs256(c: &Value) -> String {
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("hs-1".into());
    encode(&h, c, &EncodingKey::from_secret(HS_SECRET)).expect("hs256")
}

fn rs256(c: &Value) -> String {
    let mut h = Header::new(Algorithm::RS256);
    h.kid = Some("rsa-test-1".into());
    encode(
        &h,
        c,
        &EncodingKey::from_rsa_pem(RSA_PEM.as_bytes()).expect("pem"),
    )
    .expect("rs256")
}

/// One way of presenting (or not) a credential, and what it must lead to.
struct Case {
    name: &'static str,
    header: Option<(&'static str, String)>,
    expect: Expect,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    Missing,
    Invalid,
    Forbidden,
    Allowed,
}

fn cases(scope_for: &str) -> Vec<Case> {
    let with = |name, header: (&'static str, String), expect| Case {
        name,
        header: Some(header),
        expect,
    };
    let bearer = |t: String| ("authorization", format!("Bearer {t}"));
    let scope_string = json!({ "scope": format!("openid {scope_for}") });
    let scp_list = json!({ "scp": ["openid", scope_for] });
    let other_scope = json!({ "scope": "unrelated:read" });
    // Flip one character in the middle of the signature (the last one may only hold padding bits).
    let token = hs256(&claims(scope_string.clone(), ISSUER, AUDIENCE, 600));
    let at = token.len() - 10;
    let flipped = if &token[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{flipped}{}", &token[..at], &token[at + 1..]);
    vec![
        Case {
            name: "no credential",
            header: None,
            expect: Expect::Missing,
        },
        with(
            "bad key",
            ("x-api-key", "not-a-key".into()),
            Expect::Invalid,
        ),
        with(
            "good key without scope",
            ("x-api-key", KEY_NONE.into()),
            Expect::Forbidden,
        ),
        with(
            "good key with scope (X-API-Key)",
            ("x-api-key", KEY_ALL.into()),
            Expect::Allowed,
        ),
        with(
            "good key with scope (Authorization: ApiKey)",
            ("authorization", format!("ApiKey {KEY_ALL}")),
            Expect::Allowed,
        ),
        with(
            "expired JWT",
            bearer(hs256(&claims(scope_string.clone(), ISSUER, AUDIENCE, -120))),
            Expect::Invalid,
        ),
        with(
            "wrong issuer",
            bearer(hs256(&claims(
                scope_string.clone(),
                "https://evil.test",
                AUDIENCE,
                600,
            ))),
            Expect::Invalid,
        ),
        with(
            "wrong audience",
            bearer(hs256(&claims(
                scope_string.clone(),
                ISSUER,
                "someone-else",
                600,
            ))),
            Expect::Invalid,
        ),
        with("bad signature", bearer(tampered), Expect::Invalid),
        with(
            "HS256 good, scope string",
            bearer(hs256(&claims(scope_string.clone(), ISSUER, AUDIENCE, 600))),
            Expect::Allowed,
        ),
        with(
            "RS256 good, scope string",
            bearer(rs256(&claims(scope_string, ISSUER, AUDIENCE, 600))),
            Expect::Allowed,
        ),
        with(
            "RS256 good, scp list",
            bearer(rs256(&claims(scp_list.clone(), ISSUER, AUDIENCE, 600))),
            Expect::Allowed,
        ),
        with(
            "HS256 good, scp list",
            bearer(hs256(&claims(scp_list, ISSUER, AUDIENCE, 600))),
            Expect::Allowed,
        ),
        with(
            "good token, other scope",
            bearer(hs256(&claims(other_scope, ISSUER, AUDIENCE, 600))),
            Expect::Forbidden,
        ),
    ]
}

fn concrete(path: &str) -> String {
    path.replace("{job_id}", "0123456789abcdef")
        .replace("{file}", "swagger-ui.css")
}

#[tokio::test]
async fn every_route_times_every_credential() {
    let server = common::start(|s| configure(s, "100000", "1000000"));
    let client = reqwest::Client::new();
    let mut checked = 0;
    for route in catalog::routes() {
        let url = server.url(&concrete(route.path));
        let method = reqwest::Method::from_bytes(route.method.as_str().as_bytes()).expect("method");
        let exempt = phiflow::auth::is_exempt(route.path);
        let scope = phiflow::auth::builtin_route_scopes()
            .iter()
            .find(|(m, p, _)| *m == route.method.as_str() && *p == route.path)
            .map(|(_, _, s)| *s);
        assert!(
            exempt || scope.is_some(),
            "{} {} has no built-in scope",
            route.method,
            route.path
        );
        for case in cases(scope.unwrap_or("none")) {
            let mut req = client.request(method.clone(), &url);
            if let Some((name, value)) = &case.header {
                req = req.header(*name, value);
            }
            if route.request.is_some() {
                req = req.json(&json!({}));
            }
            let r = req.send().await.expect("request");
            let status = r.status().as_u16();
            let challenge = r
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            let what = format!("{} {} / {}", route.method, route.path, case.name);
            let expect = if exempt { Expect::Allowed } else { case.expect };
            match expect {
                Expect::Missing => {
                    assert_eq!(status, 401, "{what}");
                    assert_eq!(challenge.as_deref(), Some("Bearer, ApiKey"), "{what}");
                    let body: Value = r.json().await.expect("json");
                    assert_eq!(body["error"]["code"], "authentication_required", "{what}");
                }
                Expect::Invalid => {
                    assert_eq!(status, 401, "{what}");
                    assert_eq!(
                        challenge.as_deref(),
                        Some(r#"Bearer error="invalid_token", ApiKey"#),
                        "{what}"
                    );
                    let body: Value = r.json().await.expect("json");
                    assert_eq!(body["error"]["code"], "invalid_credentials", "{what}");
                }
                Expect::Forbidden => {
                    let scope = scope.unwrap_or_default();
                    assert_eq!(status, 403, "{what}");
                    assert_eq!(
                        challenge,
                        Some(format!(
                            r#"Bearer error="insufficient_scope", scope="{scope}""#
                        )),
                        "{what}"
                    );
                    let body: Value = r.json().await.expect("json");
                    assert_eq!(body["error"]["code"], "forbidden", "{what}");
                    assert_eq!(
                        body["error"]["details"]["required_scopes"],
                        json!([scope]),
                        "{what}"
                    );
                }
                Expect::Allowed => {
                    assert!(!matches!(status, 401 | 403 | 429), "{what}: got {status}");
                    assert!(challenge.is_none(), "{what}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} combinations checked");
}

#[tokio::test]
async fn failed_attempts_are_limited_and_recover() {
    // 5 tokens per second, burst 10 (the defaults), keyed by peer.
    let server = common::start(|s| configure(s, "5", "10"));
    let client = reqwest::Client::new();
    let url = server.url("/models/loaded");
    let status = |key: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let r = client
                .get(&url)
                .header("x-api-key", key)
                .send()
                .await
                .expect("request");
            (
                r.status().as_u16(),
                r.headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok()),
            )
        }
    };
    // Successes are never counted: twice the burst of them leaves every token in place.
    for _ in 0..20 {
        assert_eq!(status(KEY_ALL).await.0, 200);
    }
    for i in 0..10 {
        assert_eq!(status("wrong").await.0, 401, "failure {i} within the burst");
    }
    let (code, retry_after) = status("wrong").await;
    assert_eq!(code, 429, "the 11th failure in a burst is limited");
    assert!(
        retry_after.is_some_and(|s| s >= 1),
        "Retry-After: {retry_after:?}"
    );
    // A limited client is refused before its credential is looked at, even a good one...
    assert_eq!(status(KEY_ALL).await.0, 429);
    // ...until tokens refill (5 per second).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(status(KEY_ALL).await.0, 200);
    assert_eq!(status("wrong").await.0, 401, "recovered after the refill");
}
