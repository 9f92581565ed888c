//! Route → scope policy: the built-in map, operator overrides and the
//! wildcard-aware "is this scope granted" rule.

use std::collections::HashMap;

use http::Method;
use serde_json::Value;

use super::AuthConfigError;

/// Built-in policy as `(method, route template, scope)`.
///
/// Templates are spelled exactly as the router declares them so the lookup
/// can use the matched route instead of the raw path (which would let
/// `/jobs/abc` and `/jobs/{job_id}` drift apart).
const BUILTIN_ROUTE_SCOPES: &[(&str, &str, &str)] = &[
    ("GET", "/models/loaded", "models:read"),
    ("POST", "/models/unload", "models:write"),
    ("POST", "/analyze", "analyze:write"),
    ("POST", "/pii/extract", "pii:read"),
    ("POST", "/pii/extract/stream", "pii:read"),
    ("POST", "/pii/deidentify", "pii:write"),
    ("POST", "/pii/deidentify/stream", "pii:write"),
    ("POST", "/jobs", "jobs:write"),
    ("GET", "/jobs/{job_id}", "jobs:read"),
    ("GET", "/jobs/{job_id}/results", "jobs:read"),
    ("DELETE", "/jobs/{job_id}", "jobs:write"),
    ("POST", "/privacy-gateway/complete", "gateway:write"),
    ("POST", "/omop/load", "omop:write"),
    ("POST", "/cohort/resolve", "cohort:read"),
    ("POST", "/fhir/smart-backend/ingestions", "fhir:write"),
    (
        "GET",
        "/fhir/smart-backend/ingestions/{job_id}",
        "fhir:read",
    ),
    (
        "GET",
        "/fhir/smart-backend/ingestions/{job_id}/summary",
        "fhir:read",
    ),
    (
        "DELETE",
        "/fhir/smart-backend/ingestions/{job_id}",
        "fhir:write",
    ),
    ("POST", "/v1/decisions", "decisions:write"),
    ("POST", "/v1/decisions/batch", "decisions:write"),
];

/// Paths that never need a credential: probes, metrics and API docs must stay
/// reachable for orchestrators and humans without keys.
const EXEMPT_PATHS: &[&str] = &[
    "/health",
    "/livez",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/redoc",
];

/// The built-in `(method, route template, scope)` table, exposed so the
/// service can assert that every router route is covered.
pub fn builtin_route_scopes() -> &'static [(&'static str, &'static str, &'static str)] {
    BUILTIN_ROUTE_SCOPES
}

/// Whether `path` (route template or raw path) is reachable without any
/// credential, for any method. Everything under `/docs/` is exempt because the
/// docs page loads its static assets from there.
pub fn is_exempt(path: &str) -> bool {
    EXEMPT_PATHS.contains(&path) || path.starts_with("/docs/")
}

/// Whether every scope in `required` is covered by `granted`.
///
/// `*` grants everything and `ns:*` grants every `ns:<anything>`, so operators
/// can hand out coarse keys without enumerating each route's scope.
pub fn scopes_satisfied(granted: &[String], required: &[String]) -> bool {
    required
        .iter()
        .all(|need| granted.iter().any(|have| scope_grants(have, need)))
}

fn scope_grants(granted: &str, required: &str) -> bool {
    if granted == "*" || granted == required {
        return true;
    }
    match granted.strip_suffix('*') {
        // Only a `ns:*` suffix wildcard is meaningful; `ns*` or `:*` are not.
        Some(prefix) if prefix.ends_with(':') && prefix.len() > 1 => required.starts_with(prefix),
        _ => false,
    }
}

/// Whether `scope` is a valid RFC 6749 scope-token.
///
/// Enforced on configured scopes because they are echoed inside the quoted
/// `scope="..."` of `WWW-Authenticate`, where `"` or `\` would break the header.
pub fn is_valid_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// Split a configured scope string on spaces and commas (both are common in
/// env-var configs), dropping empty pieces.
pub fn split_scope_string(value: &str) -> Vec<String> {
    value
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Parse a configured scope value: a list of strings or one space/comma
/// separated string. Returns a description of the problem on error.
pub fn parse_config_scopes(value: &Value) -> Result<Vec<String>, String> {
    let mut scopes = Vec::new();
    match value {
        Value::String(s) => scopes.extend(split_scope_string(s)),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => scopes.extend(split_scope_string(s)),
                    _ => return Err("scope list entries must be strings".to_owned()),
                }
            }
        }
        _ => return Err("scopes must be a string or a list of strings".to_owned()),
    }
    if let Some(bad) = scopes.iter().find(|s| !is_valid_scope_token(s)) {
        return Err(format!(
            "scope {bad:?} contains characters not allowed in a scope token"
        ));
    }
    dedup_in_order(&mut scopes);
    Ok(scopes)
}

fn dedup_in_order(scopes: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    scopes.retain(|s| seen.insert(s.clone()));
}

/// Effective route policy: built-ins plus operator overrides.
#[derive(Debug, Clone)]
pub struct RouteScopes {
    /// Keyed by template first so lookups borrow the `&str` route.
    map: HashMap<String, HashMap<Method, Vec<String>>>,
    overrides: usize,
}

impl RouteScopes {
    /// Build the policy from the built-in table and an optional JSON override
    /// object mapping `"<METHOD> <template>"` to scopes.
    pub fn new(overrides: Option<&str>) -> Result<Self, AuthConfigError> {
        let mut map: HashMap<String, HashMap<Method, Vec<String>>> = HashMap::new();
        for (method, path, scope) in BUILTIN_ROUTE_SCOPES {
            let method = Method::from_bytes(method.as_bytes())
                .map_err(|_| AuthConfigError::RouteScopes("bad built-in method".to_owned()))?;
            map.entry((*path).to_owned())
                .or_default()
                .insert(method, vec![(*scope).to_owned()]);
        }
        let mut count = 0;
        if let Some(raw) = overrides.map(str::trim).filter(|s| !s.is_empty()) {
            let value: Value = serde_json::from_str(raw).map_err(|e| {
                AuthConfigError::RouteScopes(format!(
                    "invalid JSON at line {} column {}",
                    e.line(),
                    e.column()
                ))
            })?;
            let Value::Object(entries) = value else {
                return Err(AuthConfigError::RouteScopes(
                    "expected a JSON object mapping \"<METHOD> <path>\" to scopes".to_owned(),
                ));
            };
            // `get /x` and `GET /x` normalise to the same route; which one
            // wins would depend on JSON key order, so reject the pair.
            let mut seen = std::collections::HashSet::new();
            for (key, scopes) in entries {
                let (method, path) = parse_route_key(&key).map_err(AuthConfigError::RouteScopes)?;
                if !seen.insert((method.clone(), path.clone())) {
                    return Err(AuthConfigError::RouteScopes(format!(
                        "route key {key:?} duplicates another key for {method} {path}"
                    )));
                }
                let scopes = parse_config_scopes(&scopes)
                    .map_err(|e| AuthConfigError::RouteScopes(format!("route {key:?}: {e}")))?;
                map.entry(path).or_default().insert(method, scopes);
                count += 1;
            }
        }
        Ok(Self {
            map,
            overrides: count,
        })
    }

    /// Scopes required for `method route`, or `None` when the route is not in
    /// the policy.
    ///
    /// HEAD falls back to GET because the router answers HEAD with the GET
    /// handler; without this a HEAD request would dodge the GET route's scope.
    pub fn required(&self, method: &Method, route: &str) -> Option<&[String]> {
        let by_method = self.map.get(route)?;
        let found = match by_method.get(method) {
            Some(found) => Some(found),
            None if *method == Method::HEAD => by_method.get(&Method::GET),
            None => None,
        };
        found.map(Vec::as_slice)
    }

    /// Number of override entries applied (for start-up summaries).
    pub fn override_count(&self) -> usize {
        self.overrides
    }
}

/// Parse `"<METHOD> <path>"`; the method is upper-cased so `get /x` works.
fn parse_route_key(key: &str) -> Result<(Method, String), String> {
    let mut parts = key.split_whitespace();
    let (Some(method), Some(path), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!(
            "route key {key:?} must be \"<METHOD> <path>\", e.g. \"GET /jobs/{{job_id}}\""
        ));
    };
    let upper = method.to_ascii_uppercase();
    let method = Method::from_bytes(upper.as_bytes())
        .map_err(|_| format!("route key {key:?} has an invalid HTTP method"))?;
    if !path.starts_with('/') {
        return Err(format!("route key {key:?}: path must start with '/'"));
    }
    Ok((method, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn wildcards() {
        assert!(scopes_satisfied(
            &s(&["*"]),
            &s(&["pii:read", "jobs:write"])
        ));
        assert!(scopes_satisfied(&s(&["pii:*"]), &s(&["pii:read"])));
        assert!(scopes_satisfied(&s(&["pii:*"]), &s(&["pii:write"])));
        assert!(!scopes_satisfied(&s(&["pii:*"]), &s(&["jobs:read"])));
        assert!(!scopes_satisfied(&s(&["pii*"]), &s(&["pii:read"])));
        assert!(!scopes_satisfied(&s(&[":*"]), &s(&[":x"])));
        assert!(!scopes_satisfied(&s(&["pii:read"]), &s(&["pii:write"])));
        assert!(!scopes_satisfied(
            &s(&["pii:read"]),
            &s(&["pii:read", "jobs:read"])
        ));
        assert!(scopes_satisfied(&s(&[]), &s(&[])));
    }

    #[test]
    fn exempt_paths() {
        for p in [
            "/health",
            "/livez",
            "/readyz",
            "/metrics",
            "/openapi.json",
            "/docs",
            "/redoc",
            "/docs/",
            "/docs/swagger-ui.css",
            "/docs/{*path}",
        ] {
            assert!(is_exempt(p), "{p}");
        }
        for p in [
            "/",
            "/healthz",
            "/docsx",
            "/analyze",
            "/metrics/x",
            "/redoc/x",
        ] {
            assert!(!is_exempt(p), "{p}");
        }
    }

    #[test]
    fn config_scope_forms() {
        assert_eq!(
            parse_config_scopes(&json!("a:read b:write,c:x")).ok(),
            Some(s(&["a:read", "b:write", "c:x"]))
        );
        assert_eq!(
            parse_config_scopes(&json!(["a:read", "b:write a:read"])).ok(),
            Some(s(&["a:read", "b:write"]))
        );
        assert_eq!(parse_config_scopes(&json!([])).ok(), Some(vec![]));
        assert!(parse_config_scopes(&json!([1])).is_err());
        assert!(parse_config_scopes(&json!({"a": 1})).is_err());
        assert!(parse_config_scopes(&json!("bad\"scope")).is_err());
    }

    #[test]
    fn builtins_present() {
        let r = RouteScopes::new(None).expect("builtins");
        assert_eq!(
            r.required(&Method::GET, "/jobs/{job_id}"),
            Some(&s(&["jobs:read"])[..])
        );
        assert_eq!(
            r.required(&Method::DELETE, "/jobs/{job_id}"),
            Some(&s(&["jobs:write"])[..])
        );
        assert_eq!(
            r.required(&Method::HEAD, "/models/loaded"),
            Some(&s(&["models:read"])[..])
        );
        assert_eq!(r.required(&Method::GET, "/jobs/123"), None);
        assert_eq!(r.required(&Method::PUT, "/jobs"), None);
        assert_eq!(builtin_route_scopes().len(), 20);
        assert_eq!(r.override_count(), 0);
    }

    #[test]
    fn overrides_replace_and_add() {
        let raw = r#"{"post /analyze": ["analyze:run", "pii:read"], "GET /custom/{id}": "custom:read", "PUT /jobs/{job_id}": []}"#;
        let r = RouteScopes::new(Some(raw)).expect("valid overrides");
        assert_eq!(
            r.required(&Method::POST, "/analyze"),
            Some(&s(&["analyze:run", "pii:read"])[..])
        );
        assert_eq!(
            r.required(&Method::GET, "/custom/{id}"),
            Some(&s(&["custom:read"])[..])
        );
        assert_eq!(r.required(&Method::PUT, "/jobs/{job_id}"), Some(&[][..]));
        assert_eq!(
            r.required(&Method::GET, "/models/loaded"),
            Some(&s(&["models:read"])[..])
        );
        assert_eq!(r.override_count(), 3);
    }

    #[test]
    fn invalid_overrides() {
        for raw in [
            "[]",
            "{",
            r#"{"/analyze": "x"}"#,
            r#"{"POST analyze": "x"}"#,
            r#"{"POST /a /b": "x"}"#,
            r#"{"P(ST /a": "x"}"#,
            r#"{"POST /a": 5}"#,
            r#"{"POST /a": ["ok", 5]}"#,
            r#"{"POST /a": "x", "post /a": "y"}"#,
        ] {
            assert!(RouteScopes::new(Some(raw)).is_err(), "{raw}");
        }
        assert!(RouteScopes::new(Some("   ")).is_ok());
    }
}
