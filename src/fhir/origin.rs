//! The origin rule: every URL the Bulk Data client calls (status, files, token) must be on the
//! origin (scheme, host, port) of `fhir_base_url` or `token_url`. A manifest that points
//! elsewhere could otherwise send the access token, or pull data, from any host.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Scheme, host and port (the default port filled in), as compared by the origin rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

impl Origin {
    /// The origin of an absolute http(s) URL.
    pub fn of(url: &reqwest::Url) -> Self {
        Self {
            scheme: url.scheme().to_ascii_lowercase(),
            host: url.host_str().unwrap_or_default().to_ascii_lowercase(),
            port: url.port_or_known_default().unwrap_or(0),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// Parses an absolute `http`/`https` URL with a host and no user info; `None` otherwise.
pub fn parse_http_url(text: &str) -> Option<reqwest::Url> {
    let url = reqwest::Url::parse(text.trim()).ok()?;
    let ok = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none();
    ok.then_some(url)
}

/// The set of origins a client may call.
#[derive(Debug, Clone)]
pub struct AllowedOrigins(Vec<Origin>);

impl AllowedOrigins {
    pub fn new(origins: impl IntoIterator<Item = Origin>) -> Self {
        let mut list: Vec<Origin> = Vec::new();
        for o in origins {
            if !list.contains(&o) {
                list.push(o);
            }
        }
        Self(list)
    }

    /// Resolves `text` (absolute, or relative to `base`) and checks it is http(s) on an allowed
    /// origin. The error carries the offending origin, never the full URL (which may hold a
    /// signed query string).
    pub fn check(&self, base: &reqwest::Url, text: &str) -> Result<reqwest::Url, OriginViolation> {
        let url = base
            .join(text.trim())
            .map_err(|_| OriginViolation::NotAUrl)?;
        if !matches!(url.scheme(), "http" | "https")
            || url.host_str().is_none()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(OriginViolation::NotAUrl);
        }
        let origin = Origin::of(&url);
        if self.0.contains(&origin) {
            Ok(url)
        } else {
            Err(OriginViolation::OffOrigin(origin))
        }
    }
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginViolation {
    /// Not a usable http(s) URL.
    NotAUrl,
    /// An http(s) URL on another origin.
    OffOrigin(Origin),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> (reqwest::Url, AllowedOrigins) {
        let base = parse_http_url("https://fhir.example.org/r4/").expect("base");
        let token = parse_http_url("https://auth.example.org:8443/token").expect("token");
        (
            base.clone(),
            AllowedOrigins::new([Origin::of(&base), Origin::of(&token)]),
        )
    }

    #[test]
    fn same_origin_and_relative_urls_pass() {
        let (base, allowed) = allowed();
        assert!(
            allowed
                .check(&base, "https://fhir.example.org/files/1.ndjson")
                .is_ok()
        );
        assert!(
            allowed
                .check(&base, "https://FHIR.example.org:443/x")
                .is_ok()
        );
        assert!(
            allowed
                .check(&base, "https://auth.example.org:8443/files/2")
                .is_ok()
        );
        let rel = allowed.check(&base, "status/42").expect("relative");
        assert_eq!(rel.as_str(), "https://fhir.example.org/r4/status/42");
    }

    #[test]
    fn other_origins_schemes_and_ports_are_refused() {
        let (base, allowed) = allowed();
        for (url, origin) in [
            ("https://evil.example.org/f", "https://evil.example.org:443"),
            ("http://fhir.example.org/f", "http://fhir.example.org:80"),
            (
                "https://fhir.example.org:8443/f",
                "https://fhir.example.org:8443",
            ),
            ("https://auth.example.org/f", "https://auth.example.org:443"),
        ] {
            match allowed.check(&base, url) {
                Err(OriginViolation::OffOrigin(o)) => assert_eq!(o.to_string(), origin),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(
            allowed.check(&base, "file:///etc/passwd"),
            Err(OriginViolation::NotAUrl)
        );
        assert_eq!(
            allowed.check(&base, "https://user:pw@fhir.example.org/f"),
            Err(OriginViolation::NotAUrl)
        );
    }
}
