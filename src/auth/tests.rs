//! End-to-end tests of `Authenticator::check` across credential types,
//! route policy and the failure limiter.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, Method};
use serde_json::json;

use super::jwt::tests::{HS_SECRET, NOW, RSA_JWKS, hs_jwks, hs_token, rs_token};
use super::*;
use crate::digest::sha256_hex;

const KEY_READER: &str = "reader-key-1234567890";
const KEY_ADMIN: &str = "admin-key-1234567890";

fn config() -> AuthConfig {
    let api_keys = json!([
        {"key_hash": format!("sha256:{}", sha256_hex(KEY_READER)), "id": "reader",
         "scopes": ["pii:read", "jobs:read"]},
        {"sha256": sha256_hex(KEY_ADMIN), "id": "admin", "principal": "ops", "scopes": "*"},
    ])
    .to_string();
    AuthConfig {
        enabled: true,
        api_keys: Some(api_keys),
        jwks_inline: Some(hs_jwks("hs-1")),
        jwt_issuer: Some("https://idp.example".to_owned()),
        jwt_audience: Some("clinical-api".to_owned()),
        ..AuthConfig::default()
    }
}

fn auth(config: AuthConfig) -> Authenticator {
    Authenticator::new(config).expect("valid config")
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.append(name, value);
        }
    }
    map
}

fn peer(ip: &str) -> Option<IpAddr> {
    ip.parse().ok()
}

fn run(
    a: &Authenticator,
    method: Method,
    route: &str,
    h: &HeaderMap,
) -> Result<Option<Principal>, AuthFailure> {
    a.check_at(
        &method,
        route,
        h,
        peer("192.0.2.1"),
        None,
        Instant::now(),
        NOW,
    )
}

fn jwt_claims(scope: &str) -> serde_json::Value {
    json!({"sub": "svc-1", "iss": "https://idp.example", "aud": "clinical-api",
           "exp": NOW + 300, "iat": NOW, "scope": scope})
}

#[test]
fn disabled_allows_everything() {
    let a = auth(AuthConfig {
        enabled: false,
        ..config()
    });
    assert!(!a.enabled());
    assert_eq!(
        run(&a, Method::POST, "/analyze", &HeaderMap::new()),
        Ok(None)
    );
    assert_eq!(
        a.check(
            &Method::POST,
            "/analyze",
            &headers(&[("x-api-key", "bad")]),
            None,
            None
        ),
        Ok(None)
    );
}

#[test]
fn api_key_via_both_headers() {
    let a = auth(config());
    let p = run(
        &a,
        Method::POST,
        "/pii/extract",
        &headers(&[("x-api-key", KEY_READER)]),
    )
    .expect("allowed")
    .expect("principal");
    assert_eq!(p.id, "key:reader");
    assert_eq!(p.kind, PrincipalKind::ApiKey);

    for scheme in ["ApiKey", "apikey", "Api-Key", "API-KEY"] {
        let h = headers(&[("authorization", &format!("{scheme} {KEY_READER}"))]);
        let p = run(&a, Method::POST, "/pii/extract", &h).expect(scheme);
        assert_eq!(p.map(|p| p.id), Some("key:reader".to_owned()));
    }
    // X-API-Key wins over Authorization.
    let h = headers(&[
        ("x-api-key", KEY_ADMIN),
        ("authorization", &format!("ApiKey {KEY_READER}")),
    ]);
    assert_eq!(
        run(&a, Method::POST, "/omop/load", &h).map(|p| p.map(|p| p.id)),
        Ok(Some("key:ops".to_owned()))
    );
    // ... including when the X-API-Key one is wrong.
    let h = headers(&[
        ("x-api-key", "wrong"),
        ("authorization", &format!("ApiKey {KEY_READER}")),
    ]);
    assert_eq!(
        run(&a, Method::POST, "/pii/extract", &h),
        Err(AuthFailure::Invalid)
    );
}

#[test]
fn missing_vs_invalid() {
    // Limiter off: this test makes more failed attempts than the burst.
    let a = auth(AuthConfig {
        failure_rps: 0.0,
        ..config()
    });
    let route = "/pii/extract";
    assert_eq!(
        run(&a, Method::POST, route, &HeaderMap::new()),
        Err(AuthFailure::Missing)
    );
    for value in [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer    ",
        "ApiKey ",
        "Token abc",
        "",
        "Bearer not-a-jwt",
    ] {
        let h = headers(&[("authorization", value)]);
        assert_eq!(
            run(&a, Method::POST, route, &h),
            Err(AuthFailure::Invalid),
            "{value:?}"
        );
    }
    assert_eq!(
        run(&a, Method::POST, route, &headers(&[("x-api-key", "")])),
        Err(AuthFailure::Invalid)
    );
    assert_eq!(
        run(
            &a,
            Method::POST,
            route,
            &headers(&[("x-api-key", "wrong-key")])
        ),
        Err(AuthFailure::Invalid)
    );
    let mut h = HeaderMap::new();
    h.insert(
        "x-api-key",
        HeaderValue::from_bytes(b"\xff\xfe").expect("opaque bytes"),
    );
    assert_eq!(run(&a, Method::POST, route, &h), Err(AuthFailure::Invalid));
    // Repeated credential headers are ambiguous.
    let h = headers(&[("x-api-key", KEY_READER), ("x-api-key", KEY_READER)]);
    assert_eq!(run(&a, Method::POST, route, &h), Err(AuthFailure::Invalid));
}

#[test]
fn scopes_enforced() {
    let a = auth(config());
    let h = headers(&[("x-api-key", KEY_READER)]);
    assert!(run(&a, Method::GET, "/jobs/{job_id}", &h).is_ok());
    assert_eq!(
        run(&a, Method::DELETE, "/jobs/{job_id}", &h),
        Err(AuthFailure::Forbidden {
            required: vec!["jobs:write".to_owned()]
        })
    );
    // `*` grants everything.
    let h = headers(&[("x-api-key", KEY_ADMIN)]);
    for (method, route, _) in builtin_route_scopes() {
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        assert!(run(&a, method, route, &h).is_ok(), "{route}");
    }
}

#[test]
fn jwt_hs256_and_rs256() {
    let mut cfg = config();
    let mut jwks: serde_json::Value = serde_json::from_str(&hs_jwks("hs-1")).expect("json");
    let rsa: serde_json::Value = serde_json::from_str(RSA_JWKS).expect("json");
    if let (Some(serde_json::Value::Array(a)), Some(serde_json::Value::Array(b))) =
        (jwks.get_mut("keys"), rsa.get("keys"))
    {
        a.extend(b.iter().cloned());
    }
    cfg.jwks_inline = Some(jwks.to_string());
    let a = auth(cfg);

    let token = hs_token(Some("hs-1"), &jwt_claims("pii:*"));
    let h = headers(&[("authorization", &format!("Bearer {token}"))]);
    let p = run(&a, Method::POST, "/pii/deidentify", &h)
        .expect("allowed")
        .expect("principal");
    assert_eq!(p.id, "jwt:svc-1");
    assert_eq!(p.kind, PrincipalKind::Jwt);
    assert_eq!(
        run(&a, Method::POST, "/analyze", &h),
        Err(AuthFailure::Forbidden {
            required: vec!["analyze:write".to_owned()]
        })
    );

    let token = rs_token(Some("rsa-test-1"), &jwt_claims("analyze:write"));
    let h = headers(&[("authorization", &format!("bearer {token}"))]);
    assert!(run(&a, Method::POST, "/analyze", &h).is_ok());

    // Wrong audience / issuer → invalid (401), not forbidden.
    let mut claims = jwt_claims("*");
    claims["aud"] = json!("other");
    let h = headers(&[(
        "authorization",
        &format!("Bearer {}", hs_token(None, &claims)),
    )]);
    assert_eq!(
        run(&a, Method::POST, "/analyze", &h),
        Err(AuthFailure::Invalid)
    );

    // Expired.
    let mut claims = jwt_claims("*");
    claims["exp"] = json!(NOW - 1);
    let h = headers(&[(
        "authorization",
        &format!("Bearer {}", hs_token(None, &claims)),
    )]);
    assert_eq!(
        run(&a, Method::POST, "/analyze", &h),
        Err(AuthFailure::Invalid)
    );

    // A JWT sent as an API key is just a wrong key.
    let token = hs_token(None, &jwt_claims("*"));
    let h = headers(&[("x-api-key", token.as_str())]);
    assert_eq!(
        run(&a, Method::POST, "/analyze", &h),
        Err(AuthFailure::Invalid)
    );
}

#[test]
fn bearer_without_jwks_is_invalid() {
    let a = auth(AuthConfig {
        jwks_inline: None,
        ..config()
    });
    let token = hs_token(None, &jwt_claims("*"));
    let h = headers(&[("authorization", &format!("Bearer {token}"))]);
    assert_eq!(
        run(&a, Method::POST, "/analyze", &h),
        Err(AuthFailure::Invalid)
    );
}

#[test]
fn route_overrides() {
    let a = auth(AuthConfig {
        route_scopes: Some(
            json!({"POST /pii/extract": ["pii:extract"], "get /reports/{id}": "reports:read"})
                .to_string(),
        ),
        ..config()
    });
    let reader = headers(&[("x-api-key", KEY_READER)]);
    assert_eq!(
        a.required_scopes(&Method::POST, "/pii/extract"),
        Some(&["pii:extract".to_owned()][..])
    );
    assert_eq!(
        run(&a, Method::POST, "/pii/extract", &reader),
        Err(AuthFailure::Forbidden {
            required: vec!["pii:extract".to_owned()]
        })
    );
    assert_eq!(
        run(&a, Method::GET, "/reports/{id}", &reader),
        Err(AuthFailure::Forbidden {
            required: vec!["reports:read".to_owned()]
        })
    );
    let admin = headers(&[("x-api-key", KEY_ADMIN)]);
    assert!(run(&a, Method::GET, "/reports/{id}", &admin).is_ok());
    // Untouched built-ins still apply.
    assert!(run(&a, Method::GET, "/jobs/{job_id}", &reader).is_ok());
    assert_eq!(a.summary().route_overrides, 2);

    let bad = Authenticator::new(AuthConfig {
        route_scopes: Some(r#"{"POST pii": "x"}"#.to_owned()),
        ..config()
    });
    assert!(matches!(bad, Err(AuthConfigError::RouteScopes(_))));
}

#[test]
fn unmapped_routes() {
    let a = auth(config());
    // deny_by_default: any valid credential, no scope.
    assert_eq!(
        run(&a, Method::GET, "/unknown", &HeaderMap::new()),
        Err(AuthFailure::Missing)
    );
    let no_scopes = auth(AuthConfig {
        api_keys: Some(json!([{"key_hash": sha256_hex("plain")}]).to_string()),
        ..config()
    });
    assert!(
        run(
            &no_scopes,
            Method::GET,
            "/unknown",
            &headers(&[("x-api-key", "plain")])
        )
        .expect("allowed")
        .is_some()
    );
    assert_eq!(
        run(
            &no_scopes,
            Method::GET,
            "/unknown",
            &headers(&[("x-api-key", "bad")])
        ),
        Err(AuthFailure::Invalid)
    );

    let open = auth(AuthConfig {
        deny_by_default: false,
        ..config()
    });
    assert_eq!(
        run(&open, Method::GET, "/unknown", &HeaderMap::new()),
        Ok(None)
    );
    // Credentials are ignored on open routes, even bad ones.
    assert_eq!(
        run(
            &open,
            Method::GET,
            "/unknown",
            &headers(&[("x-api-key", "bad")])
        ),
        Ok(None)
    );
    // Mapped routes still enforced.
    assert_eq!(
        run(&open, Method::POST, "/analyze", &HeaderMap::new()),
        Err(AuthFailure::Missing)
    );
}

#[test]
fn exempt_paths_need_nothing() {
    let a = auth(config());
    for path in [
        "/health",
        "/livez",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/docs",
        "/redoc",
        "/docs/index.css",
    ] {
        for method in [Method::GET, Method::POST, Method::HEAD] {
            assert_eq!(
                run(&a, method, path, &headers(&[("x-api-key", "bad")])),
                Ok(None)
            );
        }
    }
}

#[test]
fn head_uses_get_scopes() {
    let a = auth(config());
    let reader = headers(&[("x-api-key", KEY_READER)]);
    assert!(run(&a, Method::HEAD, "/jobs/{job_id}", &reader).is_ok());
    assert_eq!(
        run(&a, Method::HEAD, "/models/loaded", &reader),
        Err(AuthFailure::Forbidden {
            required: vec!["models:read".to_owned()]
        })
    );
}

#[test]
fn certificate_principal() {
    let a = auth(config());
    let cert = Principal {
        id: "cn=lab-client".to_owned(),
        kind: PrincipalKind::Certificate,
        scopes: vec!["cohort:read".to_owned()],
    };
    let check = |route: &str, h: &HeaderMap| {
        a.check_at(
            &Method::POST,
            route,
            h,
            None,
            Some(&cert),
            Instant::now(),
            NOW,
        )
    };
    assert_eq!(
        check("/cohort/resolve", &HeaderMap::new()),
        Ok(Some(cert.clone()))
    );
    assert_eq!(
        check("/analyze", &HeaderMap::new()),
        Err(AuthFailure::Forbidden {
            required: vec!["analyze:write".to_owned()]
        })
    );
    // An explicit header takes over from the certificate, even when bad.
    assert_eq!(
        check("/cohort/resolve", &headers(&[("x-api-key", "bad")])),
        Err(AuthFailure::Invalid)
    );
    let admin = check("/analyze", &headers(&[("x-api-key", KEY_ADMIN)]));
    assert_eq!(
        admin.map(|p| p.map(|p| p.kind)),
        Ok(Some(PrincipalKind::ApiKey))
    );
}

#[test]
fn limiter_counts_only_failures() {
    let a = auth(config());
    let t0 = Instant::now();
    let bad = headers(&[("x-api-key", "wrong")]);
    let good = headers(&[("x-api-key", KEY_READER)]);
    let at = |h: &HeaderMap, ip: &str, t: Instant, route: &str| {
        a.check_at(&Method::POST, route, h, peer(ip), None, t, NOW)
    };
    // Successes and forbidden responses never spend tokens.
    for _ in 0..50 {
        assert!(at(&good, "198.51.100.1", t0, "/pii/extract").is_ok());
        assert!(matches!(
            at(&good, "198.51.100.1", t0, "/analyze"),
            Err(AuthFailure::Forbidden { .. })
        ));
    }
    // Ten failures allowed (burst), the eleventh attempt is limited.
    for _ in 0..5 {
        assert_eq!(
            at(&bad, "198.51.100.1", t0, "/pii/extract"),
            Err(AuthFailure::Invalid)
        );
        assert_eq!(
            at(&HeaderMap::new(), "198.51.100.1", t0, "/pii/extract"),
            Err(AuthFailure::Missing)
        );
    }
    let limited = at(&good, "198.51.100.1", t0, "/pii/extract");
    let Err(AuthFailure::RateLimited { retry_after_secs }) = limited else {
        panic!("expected rate limiting, got {limited:?}");
    };
    assert!(retry_after_secs >= 1);
    let failure = AuthFailure::RateLimited { retry_after_secs };
    assert_eq!(failure.status(), http::StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(failure.www_authenticate(), None);
    // Other peers are unaffected.
    assert!(at(&good, "198.51.100.2", t0, "/pii/extract").is_ok());
    // Exempt routes are never limited.
    assert_eq!(at(&bad, "198.51.100.1", t0, "/health"), Ok(None));
    // After one token refills (1/5 s) the good key works again.
    let later = t0 + Duration::from_millis(200);
    assert!(at(&good, "198.51.100.1", later, "/pii/extract").is_ok());
}

#[test]
fn limiter_keys_and_disable() {
    let bad = headers(&[("x-api-key", "wrong"), ("x-forwarded-for", "203.0.113.9")]);
    let t0 = Instant::now();

    let global = auth(AuthConfig {
        failure_key: FailureKey::Global,
        failure_burst: 2,
        ..config()
    });
    let at = |a: &Authenticator, ip: &str| {
        a.check_at(&Method::POST, "/analyze", &bad, peer(ip), None, t0, NOW)
    };
    assert_eq!(at(&global, "10.0.0.1"), Err(AuthFailure::Invalid));
    assert_eq!(at(&global, "10.0.0.2"), Err(AuthFailure::Invalid));
    assert!(matches!(
        at(&global, "10.0.0.3"),
        Err(AuthFailure::RateLimited { .. })
    ));

    let xff = auth(AuthConfig {
        failure_key: FailureKey::ForwardedFor,
        failure_burst: 1,
        ..config()
    });
    assert_eq!(at(&xff, "10.0.0.1"), Err(AuthFailure::Invalid));
    // Same forwarded client via a different proxy peer: still limited.
    assert!(matches!(
        at(&xff, "10.0.0.2"),
        Err(AuthFailure::RateLimited { .. })
    ));

    for (rps, burst) in [(0.0, 10), (5.0, 0)] {
        let off = auth(AuthConfig {
            failure_rps: rps,
            failure_burst: burst,
            ..config()
        });
        assert_eq!(off.summary().limiter, None);
        for _ in 0..100 {
            assert_eq!(at(&off, "10.0.0.1"), Err(AuthFailure::Invalid));
        }
    }
}

#[test]
fn failure_helpers() {
    let forbidden = AuthFailure::Forbidden {
        required: vec!["pii:read".to_owned(), "jobs:write".to_owned()],
    };
    assert_eq!(
        AuthFailure::Missing.www_authenticate().as_deref(),
        Some("Bearer, ApiKey")
    );
    assert_eq!(
        AuthFailure::Invalid.www_authenticate().as_deref(),
        Some("Bearer error=\"invalid_token\", ApiKey")
    );
    assert_eq!(
        forbidden.www_authenticate().as_deref(),
        Some("Bearer error=\"insufficient_scope\", scope=\"pii:read jobs:write\"")
    );
    let rate = AuthFailure::RateLimited {
        retry_after_secs: 3,
    };
    assert_eq!(rate.retry_after_secs(), Some(3));
    let cases = [
        (AuthFailure::Missing, "authentication_required", 401),
        (AuthFailure::Invalid, "invalid_credentials", 401),
        (forbidden, "forbidden", 403),
        (rate, "auth_rate_limited", 429),
    ];
    for (failure, code, status) in cases {
        assert_eq!(failure.code(), code);
        assert_eq!(failure.status().as_u16(), status);
        assert_eq!(failure.to_string(), failure.message());
    }
    assert_eq!(
        AuthFailure::Missing.message(),
        "Authentication credentials were not provided"
    );
    assert_eq!(
        AuthFailure::Invalid.message(),
        "Authentication credentials are invalid"
    );
    assert_eq!(
        AuthFailure::Forbidden { required: vec![] }.message(),
        "Authenticated principal does not have the required scope"
    );
    assert_eq!(
        AuthFailure::RateLimited {
            retry_after_secs: 1
        }
        .message(),
        "Too many failed authentication attempts; retry later"
    );
}

#[test]
fn config_errors_and_debug_never_leak() {
    let secret_b64 =
        base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, HS_SECRET);
    let cfg = config();
    let dbg = format!("{cfg:?}");
    assert!(!dbg.contains(&sha256_hex(KEY_READER)[..16]), "{dbg}");
    assert!(!dbg.contains(&secret_b64[..12]), "{dbg}");
    let a = auth(cfg);
    let dbg = format!("{a:?}");
    assert!(!dbg.contains(&sha256_hex(KEY_READER)[..16]), "{dbg}");
    assert!(!dbg.contains(&secret_b64[..12]), "{dbg}");
    assert!(!dbg.contains(KEY_READER));

    let dup = json!([
        {"key_hash": sha256_hex(KEY_READER)},
        {"key_hash": sha256_hex(KEY_READER)}
    ])
    .to_string();
    let e = Authenticator::new(AuthConfig {
        api_keys: Some(dup),
        ..config()
    })
    .expect_err("duplicate");
    assert!(matches!(e, AuthConfigError::ApiKeys(_)));
    assert!(!e.to_string().contains(&sha256_hex(KEY_READER)[..16]));

    let e = Authenticator::new(AuthConfig {
        jwks_inline: Some(json!({"keys": [{"kty": "EC", "crv": "P-256"}]}).to_string()),
        ..config()
    })
    .expect_err("no usable keys");
    assert!(matches!(e, AuthConfigError::Jwt(_)));

    let e = Authenticator::new(AuthConfig {
        failure_rps: f64::NAN,
        ..config()
    })
    .expect_err("nan");
    assert!(e.to_string().contains(env::FAILURE_RPS));

    // Blank values count as unset.
    let a = auth(AuthConfig {
        api_keys: Some("  ".to_owned()),
        jwks_inline: Some(String::new()),
        route_scopes: Some(" ".to_owned()),
        ..AuthConfig::default()
    });
    let s = a.summary();
    assert_eq!((s.api_keys, s.jwt_keys, s.route_overrides), (0, 0, 0));
}

#[test]
fn summary_counts() {
    let mut jwks: serde_json::Value = serde_json::from_str(&hs_jwks("hs-1")).expect("json");
    if let Some(serde_json::Value::Array(keys)) = jwks.get_mut("keys") {
        keys.push(json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}));
    }
    let a = auth(AuthConfig {
        jwks_inline: Some(jwks.to_string()),
        ..config()
    });
    assert_eq!(
        a.summary(),
        AuthSummary {
            enabled: true,
            api_keys: 2,
            jwt_keys: 1,
            jwks_skipped: 1,
            route_overrides: 0,
            deny_by_default: true,
            limiter: Some((5.0, 10, FailureKey::Peer)),
        }
    );
}

#[test]
fn from_lookup_reads_settings() {
    let vars = [
        ("SERVICE_AUTH_ENABLED", "true"),
        ("SERVICE_AUTH_API_KEYS", "[]"),
        ("SERVICE_AUTH_JWT_AUDIENCE", "a,b"),
        ("SERVICE_AUTH_JWT_LEEWAY_SECONDS", "30"),
        ("SERVICE_AUTH_DENY_BY_DEFAULT", "off"),
        ("SERVICE_AUTH_FAILURE_RATE_LIMIT_RPS", "2.5"),
        ("SERVICE_AUTH_FAILURE_RATE_LIMIT_BURST", "4"),
        ("SERVICE_AUTH_FAILURE_RATE_LIMIT_KEY", "x-forwarded-for"),
        ("SERVICE_AUTH_JWKS", "   "),
    ];
    let lookup = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    };
    let cfg = AuthConfig::from_lookup(lookup).expect("valid");
    assert!(cfg.enabled);
    assert_eq!(cfg.api_keys.as_deref(), Some("[]"));
    assert_eq!(cfg.jwks_inline, None);
    assert_eq!(cfg.jwt_audience.as_deref(), Some("a,b"));
    assert_eq!(cfg.jwt_leeway_seconds, 30);
    assert!(!cfg.deny_by_default);
    assert_eq!(cfg.failure_rps, 2.5);
    assert_eq!(cfg.failure_burst, 4);
    assert_eq!(cfg.failure_key, FailureKey::ForwardedFor);

    let defaults = AuthConfig::from_lookup(|_| None).expect("defaults");
    assert!(!defaults.enabled);
    assert!(defaults.deny_by_default);
    assert_eq!((defaults.failure_rps, defaults.failure_burst), (5.0, 10));

    for (name, value) in [
        ("SERVICE_AUTH_ENABLED", "maybe"),
        ("SERVICE_AUTH_FAILURE_RATE_LIMIT_BURST", "-1"),
        ("SERVICE_AUTH_FAILURE_RATE_LIMIT_KEY", "cookie"),
        ("SERVICE_AUTH_JWT_LEEWAY_SECONDS", "1.5"),
    ] {
        let e = AuthConfig::from_lookup(|k| (k == name).then(|| value.to_owned())).expect_err(name);
        assert!(e.to_string().starts_with(name), "{e}");
    }
}
