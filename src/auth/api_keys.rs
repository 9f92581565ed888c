//! Static API keys configured as SHA-256 digests.
//!
//! Only digests are configured so the environment never holds usable keys;
//! presented keys are hashed and compared in constant time against all
//! digests so timing reveals neither which key matched nor how far it got.

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

use super::scopes::parse_config_scopes;
use super::{AuthConfigError, Principal, PrincipalKind};

/// One configured key. `Debug` is manual so the digest never reaches logs.
#[derive(Clone)]
struct ApiKeyEntry {
    id: String,
    principal: String,
    scopes: Vec<String>,
    digest: [u8; 32],
}

impl fmt::Debug for ApiKeyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKeyEntry")
            .field("id", &self.id)
            .field("principal", &self.principal)
            .field("scopes", &self.scopes)
            .field("digest", &"<redacted>")
            .finish()
    }
}

/// The set of configured API keys.
#[derive(Debug, Clone, Default)]
pub struct ApiKeyStore {
    entries: Vec<ApiKeyEntry>,
}

fn err(message: impl Into<String>) -> AuthConfigError {
    AuthConfigError::ApiKeys(message.into())
}

impl ApiKeyStore {
    /// Parse the `SERVICE_AUTH_API_KEYS` JSON: an array of entries or
    /// `{"keys": [...]}`.
    ///
    /// Parsing goes through `serde_json::Value` with hand-written messages
    /// because serde's type errors quote the offending value, which could be a
    /// digest.
    pub fn parse(raw: &str) -> Result<Self, AuthConfigError> {
        let value: Value = serde_json::from_str(raw).map_err(|e| {
            err(format!(
                "invalid JSON at line {} column {}",
                e.line(),
                e.column()
            ))
        })?;
        let items = match value {
            Value::Array(items) => items,
            Value::Object(mut obj) => match (obj.remove("keys"), obj.is_empty()) {
                (Some(Value::Array(items)), true) => items,
                _ => {
                    return Err(err(
                        "expected a JSON array of keys or an object with only a \"keys\" array",
                    ));
                }
            },
            _ => return Err(err("expected a JSON array of keys or {\"keys\": [...]}")),
        };
        if items.is_empty() {
            return Err(err("no keys configured; unset the variable instead"));
        }
        let mut entries = Vec::with_capacity(items.len());
        let mut digests = HashSet::new();
        let mut ids = HashSet::new();
        for (index, item) in items.into_iter().enumerate() {
            let number = index + 1;
            let Value::Object(obj) = item else {
                return Err(err(format!("entry {number} must be a JSON object")));
            };
            let entry = parse_entry(number, obj)?;
            if !digests.insert(entry.digest) {
                return Err(err(format!(
                    "entry {number} (id {:?}) repeats the key hash of an earlier entry",
                    entry.id
                )));
            }
            if !ids.insert(entry.id.clone()) {
                return Err(err(format!("entry {number} repeats the id {:?}", entry.id)));
            }
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// Number of configured keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The principal for `presented`, or `None` when it matches no key.
    pub fn verify(&self, presented: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = Choice::from(0);
        let mut index = 0u64;
        // No early exit: every digest is compared so timing is independent
        // of which entry (if any) matches.
        for (i, entry) in self.entries.iter().enumerate() {
            let eq = entry.digest.ct_eq(&digest);
            index = u64::conditional_select(&index, &(i as u64), eq);
            found |= eq;
        }
        if !bool::from(found) {
            return None;
        }
        let entry = self.entries.get(usize::try_from(index).ok()?)?;
        Some(Principal {
            id: format!("key:{}", entry.principal),
            kind: PrincipalKind::ApiKey,
            scopes: entry.scopes.clone(),
        })
    }
}

/// Fetch a field that may be spelled several ways; two spellings at once is
/// ambiguous and rejected.
fn take_aliased(
    obj: &mut Map<String, Value>,
    names: &[&str],
    number: usize,
) -> Result<Option<Value>, AuthConfigError> {
    let mut found = None;
    for name in names {
        if let Some(v) = obj.remove(*name) {
            if found.is_some() {
                return Err(err(format!(
                    "entry {number} sets more than one of {}",
                    names.join("/")
                )));
            }
            found = Some(v);
        }
    }
    Ok(found)
}

fn optional_string(
    value: Option<Value>,
    field: &str,
    number: usize,
) -> Result<Option<String>, AuthConfigError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(err(format!(
            "entry {number}: {field} must be a non-empty string"
        ))),
    }
}

fn parse_entry(number: usize, mut obj: Map<String, Value>) -> Result<ApiKeyEntry, AuthConfigError> {
    let hash = take_aliased(&mut obj, &["key_hash", "sha256", "hash"], number)?;
    let id = take_aliased(&mut obj, &["id", "key_id"], number)?;
    let principal = take_aliased(&mut obj, &["principal", "subject"], number)?;
    let scopes = take_aliased(&mut obj, &["scopes", "scope"], number)?;
    if let Some(extra) = obj.keys().next() {
        return Err(err(format!("entry {number}: unknown field {extra:?}")));
    }

    let id = optional_string(id, "id", number)?.unwrap_or_else(|| format!("key-{number}"));
    let principal = optional_string(principal, "principal", number)?.unwrap_or_else(|| id.clone());
    let digest = match hash {
        Some(Value::String(s)) => parse_digest(&s).ok_or_else(|| {
            err(format!(
                "entry {number} (id {id:?}): key_hash must be \"sha256:\" followed by 64 lowercase hex digits"
            ))
        })?,
        Some(_) => {
            return Err(err(format!(
                "entry {number} (id {id:?}): key_hash must be a string"
            )));
        }
        None => {
            return Err(err(format!(
                "entry {number} (id {id:?}): key_hash is required"
            )));
        }
    };
    let scopes = match scopes {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            parse_config_scopes(&v).map_err(|e| err(format!("entry {number} (id {id:?}): {e}")))?
        }
    };
    Ok(ApiKeyEntry {
        id,
        principal,
        scopes,
        digest,
    })
}

/// `sha256:<64 lowercase hex>` (prefix optional) → digest bytes.
fn parse_digest(s: &str) -> Option<[u8; 32]> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let hi = hex_value(*pair.first()?)?;
        let lo = hex_value(*pair.get(1)?)?;
        *slot = (hi << 4) | lo;
    }
    Some(out)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256_hex;

    fn cfg(entries: &str) -> Result<ApiKeyStore, AuthConfigError> {
        ApiKeyStore::parse(entries)
    }

    #[test]
    fn parses_forms_and_verifies() {
        let h1 = sha256_hex("secret-one");
        let h2 = sha256_hex("secret-two");
        let h3 = sha256_hex("secret-three");
        let raw = format!(
            r#"[{{"key_hash":"sha256:{h1}","id":"ci","principal":"ci-bot","scopes":["pii:read","jobs:*"]}},
                {{"sha256":"{h2}","scope":"a:read, b:write c:x"}},
                {{"hash":"sha256:{h3}","key_id":"k3","subject":"svc"}}]"#
        );
        let store = cfg(&raw).expect("valid");
        assert_eq!(store.len(), 3);

        let p = store.verify("secret-one").expect("match");
        assert_eq!(p.id, "key:ci-bot");
        assert_eq!(p.kind, PrincipalKind::ApiKey);
        assert_eq!(p.scopes, vec!["pii:read", "jobs:*"]);

        let p = store.verify("secret-two").expect("match");
        assert_eq!(p.id, "key:key-2");
        assert_eq!(p.scopes, vec!["a:read", "b:write", "c:x"]);

        let p = store.verify("secret-three").expect("match");
        assert_eq!(p.id, "key:svc");
        assert!(p.scopes.is_empty());

        assert!(store.verify("secret-four").is_none());
        assert!(store.verify("").is_none());
    }

    #[test]
    fn object_form() {
        let h = sha256_hex("k");
        let store = cfg(&format!(r#"{{"keys":[{{"key_hash":"{h}"}}]}}"#)).expect("valid");
        assert_eq!(
            store.verify("k").map(|p| p.id),
            Some("key:key-1".to_owned())
        );
    }

    #[test]
    fn rejects_bad_configs_without_leaking() {
        let h = sha256_hex("k");
        let upper = h.to_ascii_uppercase();
        let cases = [
            "".to_owned(),
            "[]".to_owned(),
            "{}".to_owned(),
            r#"{"keys":[],"extra":1}"#.to_owned(),
            "5".to_owned(),
            "[5]".to_owned(),
            r#"[{"id":"x"}]"#.to_owned(),
            format!(r#"[{{"key_hash":"{upper}"}}]"#),
            format!(r#"[{{"key_hash":"sha512:{h}"}}]"#),
            format!(r#"[{{"key_hash":"SHA256:{h}"}}]"#),
            format!(r#"[{{"key_hash":"sha256:{}"}}]"#, &h[..63]),
            format!(r#"[{{"key_hash":"sha256:{h}0"}}]"#),
            format!(r#"[{{"key_hash":"sha256:{}zz"}}]"#, &h[..62]),
            r#"[{"key_hash":5}]"#.to_owned(),
            format!(r#"[{{"key_hash":"{h}","sha256":"{h}"}}]"#),
            format!(r#"[{{"key_hash":"{h}","scopes":5}}]"#),
            format!(r#"[{{"key_hash":"{h}","scopes":"bad\"scope"}}]"#),
            format!(r#"[{{"key_hash":"{h}","id":""}}]"#),
            format!(r#"[{{"key_hash":"{h}","colour":"blue"}}]"#),
        ];
        for raw in cases {
            let e = cfg(&raw).expect_err(&raw).to_string();
            assert!(!e.contains(&h[..16]), "leaked hash: {e}");
            assert!(!e.contains(&upper[..16]), "leaked hash: {e}");
        }
    }

    #[test]
    fn duplicate_hash_and_id() {
        let h = sha256_hex("k");
        let e = cfg(&format!(
            r#"[{{"key_hash":"{h}","id":"a"}},{{"key_hash":"sha256:{h}","id":"b"}}]"#
        ))
        .expect_err("duplicate hash")
        .to_string();
        assert!(e.contains("repeats the key hash"), "{e}");
        assert!(!e.contains(&h[..16]));

        let h2 = sha256_hex("k2");
        let e = cfg(&format!(
            r#"[{{"key_hash":"{h}","id":"a"}},{{"key_hash":"{h2}","id":"a"}}]"#
        ))
        .expect_err("duplicate id")
        .to_string();
        assert!(e.contains("repeats the id"), "{e}");
    }

    #[test]
    fn debug_redacts_digest() {
        let h = sha256_hex("k");
        let store = cfg(&format!(r#"[{{"key_hash":"{h}"}}]"#)).expect("valid");
        let dbg = format!("{store:?}");
        assert!(dbg.contains("<redacted>"));
        assert!(!dbg.contains(&h[..8]));
        // The Debug of raw digest bytes would be a list of numbers.
        assert!(!dbg.contains("digest: ["));
    }
}
