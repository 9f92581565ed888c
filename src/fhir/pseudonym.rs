//! Keyed pseudonyms for resource ids, so references still resolve after de-identification:
//! `Patient/123` becomes `Patient/<HMAC(key, "Patient", "123")>` wherever it appears, on every
//! run and machine with the same key, and cannot be reversed without it.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key behind resource pseudonyms (derived from `SERVICE_DEID_SECRET_KEY`).
#[derive(Clone)]
pub struct Pseudonyms {
    key: Vec<u8>,
}

impl std::fmt::Debug for Pseudonyms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pseudonyms(..)")
    }
}

impl Pseudonyms {
    pub fn new(secret: &[u8]) -> Self {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
        m.update(b"phiflow fhir resource pseudonyms v1");
        Self {
            key: m.finalize().into_bytes().to_vec(),
        }
    }

    /// The pseudonymous id of resource `type_/id`: 32 hex digits, a valid FHIR id.
    pub fn id(&self, type_: &str, id: &str) -> String {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key");
        m.update(type_.as_bytes());
        m.update(&[0]);
        m.update(id.as_bytes());
        crate::digest::hex(&m.finalize().into_bytes()[..16])
    }

    /// A reference rewritten: `Type/id` (relative, or absolute with `/Type/id` at its end,
    /// optionally `/_history/v`) becomes `Type/<pseudonym>`; `urn:uuid:` and `urn:oid:` get a
    /// keyed value of the same scheme; local `#contained` references stay. None for a
    /// reference that names no resource this can rewrite (it is then removed).
    pub fn reference(&self, r: &str) -> Option<String> {
        if r.starts_with('#') {
            return Some(r.to_string());
        }
        if let Some(u) = r.strip_prefix("urn:uuid:") {
            let h = self.id("urn:uuid", u);
            return Some(format!(
                "urn:uuid:{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ));
        }
        let (type_, id) = type_and_id(r)?;
        Some(format!("{type_}/{}", self.id(type_, id)))
    }
}

/// The resource type and id a reference names (`Patient/1`, `https://x/fhir/Patient/1`,
/// `Patient/1/_history/2`).
pub fn type_and_id(r: &str) -> Option<(&str, &str)> {
    let r = r.split(['?', '#']).next()?;
    let parts: Vec<&str> = r.split('/').filter(|p| !p.is_empty()).collect();
    let n = parts.len();
    let (t, id) = if n >= 4 && parts[n - 2] == "_history" {
        (parts[n - 4], parts[n - 3])
    } else if n >= 2 {
        (parts[n - 2], parts[n - 1])
    } else {
        return None;
    };
    let valid_id = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    (super::types::is_known(t) && valid_id).then_some((t, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_to_the_resource_pseudonym() {
        let p = Pseudonyms::new(b"k");
        let id = p.id("Patient", "123");
        assert_eq!(id.len(), 32);
        assert_eq!(p.reference("Patient/123"), Some(format!("Patient/{id}")));
        assert_eq!(
            p.reference("https://ehr.example/fhir/Patient/123/_history/4"),
            Some(format!("Patient/{id}"))
        );
        assert_ne!(p.id("Observation", "123"), id);
        assert_ne!(Pseudonyms::new(b"other").id("Patient", "123"), id);
        assert_eq!(p.reference("#med1").as_deref(), Some("#med1"));
        let u = p.reference("urn:uuid:6f1c8b1e-0000-4000-8000-000000000001");
        assert!(u.is_some_and(|u| u.starts_with("urn:uuid:") && u.len() == 45));
        assert_eq!(p.reference("Nonsense/1"), None);
        assert_eq!(p.reference("just-text"), None);
    }
}
