//! Who may ask for what: an allow-list of namespaces, purposes and backend kinds. The decision
//! is recorded in every result so a reviewer can see which policy version applied.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::backend::BackendKind;
use super::outcome::DenyCode;

pub const DEFAULT_POLICY_VERSION: &str = "1.0.0";

/// Allow-lists; anything not listed is denied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessPolicy {
    pub namespaces: BTreeSet<String>,
    pub purposes: BTreeSet<String>,
    pub backend_kinds: BTreeSet<BackendKind>,
    pub policy_version: String,
}

impl Default for AccessPolicy {
    /// Namespace `default`; purposes `analytics`, `care_review`, `quality`; every backend kind.
    fn default() -> Self {
        Self {
            namespaces: ["default".to_string()].into(),
            purposes: ["analytics", "care_review", "quality"]
                .map(String::from)
                .into(),
            backend_kinds: BackendKind::ALL.into(),
            policy_version: DEFAULT_POLICY_VERSION.to_string(),
        }
    }
}

/// The `access` block of a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessInfo {
    pub allowed: bool,
    pub code: Option<DenyCode>,
    pub namespace: String,
    pub purpose: String,
    pub policy_version: String,
}

impl AccessPolicy {
    /// Checks namespace, then purpose, then backend kind; the first refusal is the code.
    pub fn evaluate(&self, namespace: &str, purpose: &str, kind: BackendKind) -> AccessInfo {
        let code = if !self.namespaces.contains(namespace) {
            Some(DenyCode::NamespaceDenied)
        } else if !self.purposes.contains(purpose) {
            Some(DenyCode::PurposeDenied)
        } else if !self.backend_kinds.contains(&kind) {
            Some(DenyCode::BackendDenied)
        } else {
            None
        };
        AccessInfo {
            allowed: code.is_none(),
            code,
            namespace: namespace.to_string(),
            purpose: purpose.to_string(),
            policy_version: self.policy_version.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let p = AccessPolicy::default();
        let ok = p.evaluate("default", "quality", BackendKind::Specialist);
        assert_eq!(
            ok,
            AccessInfo {
                allowed: true,
                code: None,
                namespace: "default".into(),
                purpose: "quality".into(),
                policy_version: "1.0.0".into(),
            }
        );
        for purpose in ["analytics", "care_review", "quality"] {
            assert!(
                p.evaluate("default", purpose, BackendKind::Deterministic)
                    .allowed
            );
        }
    }

    #[test]
    fn denial_order_namespace_purpose_backend() {
        let mut p = AccessPolicy::default();
        p.backend_kinds.remove(&BackendKind::Encoder);
        let code = |ns: &str, purpose: &str, kind| p.evaluate(ns, purpose, kind).code;
        assert_eq!(
            code("tenant_b", "billing", BackendKind::Encoder),
            Some(DenyCode::NamespaceDenied)
        );
        assert_eq!(
            code("default", "billing", BackendKind::Encoder),
            Some(DenyCode::PurposeDenied)
        );
        assert_eq!(
            code("default", "analytics", BackendKind::Encoder),
            Some(DenyCode::BackendDenied)
        );
        assert_eq!(
            code("default", "analytics", BackendKind::CrossEncoder),
            None
        );
        assert!(
            !p.evaluate("x", "analytics", BackendKind::Deterministic)
                .allowed
        );
    }
}
