//! Mapping of certificate identities to service principals and scopes.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;

use super::identity::ClientIdentity;

/// Prefix of the id given to verified but unmapped certificates; reserved so that a
/// configured principal can never be confused with a fingerprint-derived one.
const UNMAPPED_PREFIX: &str = "mtls:";

/// The principal a request was authenticated as by its client certificate.
///
/// Inserted into request extensions only when the client presented a certificate that
/// chained to the configured CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertPrincipal {
    /// Configured principal id, or `mtls:<fingerprint>` when no entry matched.
    pub id: String,
    /// Scopes granted by the matching entry; empty when unmapped.
    pub scopes: Vec<String>,
    /// Whether a configured entry matched; unmapped principals should get no privileges.
    pub mapped: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default)]
    identities: Option<Vec<String>>,
    #[serde(default)]
    identity: Option<String>,
    principal: String,
    #[serde(default)]
    scopes: Option<RawScopes>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawScopes {
    List(Vec<String>),
    SpaceSeparated(String),
}

#[derive(Debug, Clone)]
struct Entry {
    principal: String,
    scopes: Vec<String>,
}

/// Parsed `SERVICE_MTLS_PRINCIPALS`: identity string → entry.
#[derive(Debug, Clone, Default)]
pub(super) struct PrincipalMap {
    entries: Vec<Entry>,
    by_identity: HashMap<String, usize>,
}

impl PrincipalMap {
    /// Parses and validates the JSON list. Errors are plain messages (entry numbers are
    /// 1-based); the caller adds the setting name.
    pub(super) fn parse(json: &str) -> Result<Self, String> {
        let raw: Vec<RawEntry> = serde_json::from_str(json)
            .map_err(|e| format!("expected a JSON list of principal entries: {e}"))?;
        let mut map = PrincipalMap::default();
        for (idx, entry) in raw.into_iter().enumerate() {
            let n = idx + 1;
            let principal = entry.principal;
            if principal.trim().is_empty() || principal.trim() != principal {
                return Err(format!(
                    "entry {n}: \"principal\" must be non-empty without surrounding whitespace"
                ));
            }
            if principal.starts_with(UNMAPPED_PREFIX) {
                return Err(format!(
                    "entry {n}: principal {principal:?} uses the reserved prefix \"{UNMAPPED_PREFIX}\""
                ));
            }
            let mut identities: Vec<String> = entry.identities.unwrap_or_default();
            identities.extend(entry.identity);
            if identities.is_empty() {
                return Err(format!(
                    "entry {n} ({principal}): needs \"identity\" or a non-empty \"identities\" list"
                ));
            }
            let scopes = match entry.scopes {
                None => Vec::new(),
                Some(RawScopes::SpaceSeparated(s)) => {
                    s.split_whitespace().map(str::to_owned).collect()
                }
                Some(RawScopes::List(list)) => list,
            };
            if let Some(bad) = scopes
                .iter()
                .find(|s| s.is_empty() || s.chars().any(char::is_whitespace))
            {
                return Err(format!(
                    "entry {n} ({principal}): invalid scope {bad:?} (empty or contains whitespace)"
                ));
            }
            let mut seen = BTreeSet::new();
            let scopes: Vec<String> = scopes
                .into_iter()
                .filter(|s| seen.insert(s.clone()))
                .collect();

            let entry_idx = map.entries.len();
            for identity in identities {
                if identity.trim().is_empty() || identity.trim() != identity {
                    return Err(format!(
                        "entry {n} ({principal}): identity {identity:?} must be non-empty without surrounding whitespace"
                    ));
                }
                match map.by_identity.get(&identity) {
                    // Repeating an identity inside one entry is harmless.
                    Some(&other) if other == entry_idx => {}
                    Some(&other) => {
                        return Err(format!(
                            "identity {identity:?} appears in entry {} and entry {n}; each identity must map to one principal",
                            other + 1
                        ));
                    }
                    None => {
                        map.by_identity.insert(identity, entry_idx);
                    }
                }
            }
            map.entries.push(Entry { principal, scopes });
        }
        Ok(map)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Resolves the principal for a verified certificate.
    ///
    /// Candidates are the full subject, each CN value and each SAN. If they point at
    /// more than one entry the certificate is treated as unmapped: failing closed is
    /// safer than guessing which of two configured principals was meant.
    pub(super) fn resolve(&self, identity: &ClientIdentity) -> CertPrincipal {
        let mut hits = BTreeSet::new();
        let cns = identity.common_names();
        let candidates = std::iter::once(&identity.subject)
            .chain(cns.iter())
            .chain(identity.sans.iter());
        for candidate in candidates {
            if let Some(&idx) = self.by_identity.get(candidate) {
                hits.insert(idx);
            }
        }
        let single = match hits.len() {
            1 => hits.first().and_then(|&i| self.entries.get(i)),
            0 => None,
            _ => {
                tracing::warn!(
                    fingerprint = %identity.fingerprint_sha256,
                    entries = hits.len(),
                    "client certificate matches several principal entries; treating it as unmapped"
                );
                None
            }
        };
        match single {
            Some(entry) => CertPrincipal {
                id: entry.principal.clone(),
                scopes: entry.scopes.clone(),
                mapped: true,
            },
            None => CertPrincipal {
                id: format!("{UNMAPPED_PREFIX}{}", identity.fingerprint_sha256),
                scopes: Vec::new(),
                mapped: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(subject: &str, sans: &[&str]) -> ClientIdentity {
        ClientIdentity {
            fingerprint_sha256: "f00d".into(),
            subject: subject.into(),
            sans: sans.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn parses_both_shapes() {
        let map = PrincipalMap::parse(
            r#"[
                {"identity": "svc-a", "principal": "a", "scopes": "read write read"},
                {"identities": ["svc-b.internal", "CN=svc-b,O=H"], "principal": "b",
                 "scopes": ["x"]},
                {"identity": "svc-c", "principal": "c"}
            ]"#,
        )
        .expect("valid");
        assert_eq!(map.len(), 3);
        let a = map.resolve(&ident("CN=svc-a,O=H", &[]));
        assert_eq!(
            a,
            CertPrincipal {
                id: "a".into(),
                scopes: vec!["read".into(), "write".into()],
                mapped: true
            }
        );
        assert_eq!(map.resolve(&ident("CN=other", &["svc-b.internal"])).id, "b");
        assert_eq!(map.resolve(&ident("CN=svc-b,O=H", &[])).id, "b");
        let c = map.resolve(&ident("CN=svc-c", &[]));
        assert!(c.mapped && c.scopes.is_empty());
    }

    #[test]
    fn unmapped_uses_fingerprint() {
        let map = PrincipalMap::parse(r#"[{"identity":"svc-a","principal":"a"}]"#).expect("valid");
        let p = map.resolve(&ident("CN=svc-z", &["svc-a.internal"]));
        assert_eq!(p.id, "mtls:f00d");
        assert!(!p.mapped && p.scopes.is_empty());
        // Partial or case-different matches do not count.
        assert!(!map.resolve(&ident("CN=SVC-A", &[])).mapped);
        assert!(!map.resolve(&ident("O=svc-a", &[])).mapped);
    }

    #[test]
    fn ambiguous_match_fails_closed() {
        let map = PrincipalMap::parse(
            r#"[{"identity":"svc-a","principal":"a"},{"identity":"svc-a.internal","principal":"b"}]"#,
        )
        .expect("valid");
        let p = map.resolve(&ident("CN=svc-a", &["svc-a.internal"]));
        assert!(!p.mapped);
    }

    #[test]
    fn same_entry_matched_twice_is_fine() {
        let map = PrincipalMap::parse(
            r#"[{"identities":["svc-a","svc-a.internal","svc-a"],"principal":"a"}]"#,
        )
        .expect("valid");
        assert!(map.resolve(&ident("CN=svc-a", &["svc-a.internal"])).mapped);
    }

    #[test]
    fn rejects_bad_input() {
        let cases = [
            ("not json", "JSON"),
            (r#"{"identity":"a","principal":"p"}"#, "JSON list"),
            (r#"[{"identity":"a"}]"#, "principal"),
            (
                r#"[{"identity":"a","principal":"p","scope":"x"}]"#,
                "unknown field",
            ),
            (r#"[{"principal":"p"}]"#, "needs \"identity\""),
            (
                r#"[{"identities":[],"principal":"p"}]"#,
                "needs \"identity\"",
            ),
            (r#"[{"identity":"","principal":"p"}]"#, "non-empty"),
            (r#"[{"identity":" a","principal":"p"}]"#, "non-empty"),
            (r#"[{"identity":"a","principal":""}]"#, "principal"),
            (r#"[{"identity":"a","principal":"mtls:x"}]"#, "reserved"),
            (
                r#"[{"identity":"a","principal":"p","scopes":["a b"]}]"#,
                "invalid scope",
            ),
            (
                r#"[{"identity":"a","principal":"p","scopes":[""]}]"#,
                "invalid scope",
            ),
            (r#"[{"identity":"a","principal":"p","scopes":7}]"#, "JSON"),
            (
                r#"[{"identity":"a","principal":"p"},{"identities":["b","a"],"principal":"q"}]"#,
                "entry 1 and entry 2",
            ),
        ];
        for (json, needle) in cases {
            let err = PrincipalMap::parse(json).expect_err(json);
            assert!(err.contains(needle), "{json}: {err}");
        }
    }

    #[test]
    fn empty_list_is_valid() {
        assert_eq!(PrincipalMap::parse("[]").expect("valid").len(), 0);
    }
}
