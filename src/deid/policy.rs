//! Policies: named data files (`pipelines/policies/*.toml`) that say, per canonical label, what
//! happens to an entity, and which request options they force.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::labels;

/// The request's `method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Mask,
    Remove,
    Replace,
    Hash,
    ShiftDates,
}

impl Method {
    const ALL: [Self; 5] = [
        Self::Mask,
        Self::Remove,
        Self::Replace,
        Self::Hash,
        Self::ShiftDates,
    ];

    /// The interface's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mask => "mask",
            Self::Remove => "remove",
            Self::Replace => "replace",
            Self::Hash => "hash",
            Self::ShiftDates => "shift_dates",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// What a policy does with one canonical label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The request's method (or the policy's own `method`).
    Method,
    Mask,
    Remove,
    Replace,
    Hash,
    /// Left in the text (reported with action `keep`).
    Keep,
    /// Dates reduced to their year; a date without a year is masked.
    Year,
    /// ZIP codes reduced to their first three digits; restricted prefixes become 000.
    Zip3,
    /// Ages up to 89 kept; 90 and over become "90+".
    #[serde(rename = "age_over_89")]
    AgeOver89,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    name: String,
    description: String,
    #[serde(default)]
    aliases: Vec<String>,
    method: Option<Method>,
    #[serde(default)]
    force_safety_sweep: bool,
    #[serde(default)]
    keep_mapping: bool,
    max_confidence_threshold: Option<f32>,
    default_action: Action,
    #[serde(default)]
    restricted_zip3: Vec<String>,
    #[serde(default)]
    actions: BTreeMap<String, Action>,
}

/// One checked policy.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    pub description: String,
    /// The method this policy imposes, if any (a request asking for another is refused).
    pub method: Option<Method>,
    pub force_safety_sweep: bool,
    pub keep_mapping: bool,
    /// The request's confidence threshold is lowered to this, never raised.
    pub max_confidence_threshold: Option<f32>,
    default_action: Action,
    restricted_zip3: Vec<String>,
    actions: BTreeMap<String, Action>,
}

impl Policy {
    /// The action for a canonical label.
    pub fn action(&self, canonical: &str) -> Action {
        self.actions
            .get(canonical)
            .copied()
            .unwrap_or(self.default_action)
    }

    /// The labels whose action the policy fixes (not `method`).
    pub fn fixes(&self, canonical: &str) -> bool {
        self.actions
            .get(canonical)
            .is_some_and(|a| *a != Action::Method)
    }

    pub fn zip3_restricted(&self, prefix: &str) -> bool {
        self.restricted_zip3.iter().any(|p| p == prefix)
    }
}

/// Why policies could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct PolicyError {
    pub file: String,
    pub message: String,
}

/// Every loaded policy, by normalized name and alias.
#[derive(Debug, Default)]
pub struct Policies {
    by_key: BTreeMap<String, Arc<Policy>>,
    names: Vec<String>,
}

/// Policy names are case-insensitive and `-` means `_`.
fn key(name: &str) -> String {
    name.trim().to_lowercase().replace(['-', ' '], "_")
}

impl Policies {
    pub fn load(dir: &Path) -> Result<Self, PolicyError> {
        let sources =
            crate::datafiles::read_toml_dir(dir, "policies").map_err(|e| PolicyError {
                file: e.file,
                message: e.message,
            })?;
        Self::from_sources(&sources)
    }

    pub fn from_sources(sources: &[(String, String)]) -> Result<Self, PolicyError> {
        let mut out = Self::default();
        for (file, src) in sources {
            let err = |message: String| PolicyError {
                file: file.clone(),
                message,
            };
            let f: PolicyFile = toml::from_str(src).map_err(|e| err(e.to_string()))?;
            for label in f.actions.keys() {
                if !labels::is_canonical(label) {
                    return Err(err(format!("`{label}` is not a canonical label")));
                }
            }
            if f.max_confidence_threshold
                .is_some_and(|t| !(0.0..=1.0).contains(&t))
            {
                return Err(err("max_confidence_threshold must be within 0..1".into()));
            }
            if let Some(bad) = f
                .restricted_zip3
                .iter()
                .find(|z| z.len() != 3 || !z.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(err(format!(
                    "restricted_zip3 entry `{bad}` is not three digits"
                )));
            }
            let policy = Arc::new(Policy {
                name: f.name.clone(),
                description: f.description,
                method: f.method,
                force_safety_sweep: f.force_safety_sweep,
                keep_mapping: f.keep_mapping,
                max_confidence_threshold: f.max_confidence_threshold,
                default_action: f.default_action,
                restricted_zip3: f.restricted_zip3,
                actions: f.actions,
            });
            for k in std::iter::once(&f.name).chain(&f.aliases).map(|n| key(n)) {
                if out.by_key.insert(k.clone(), policy.clone()).is_some() {
                    return Err(err(format!("policy name or alias `{k}` is defined twice")));
                }
            }
            out.names.push(f.name);
        }
        out.names.sort();
        Ok(out)
    }

    /// The shipped policies.
    #[cfg(test)]
    pub fn builtin() -> Result<Self, PolicyError> {
        macro_rules! file {
            ($n:literal) => {
                (
                    $n.to_string(),
                    include_str!(concat!("../../pipelines/policies/", $n)).to_string(),
                )
            };
        }
        Self::from_sources(&[
            file!("clinical_minimal_redaction.toml"),
            file!("gdpr_pseudonymization.toml"),
            file!("hipaa_safe_harbor.toml"),
            file!("research_limited_dataset.toml"),
            file!("strict.toml"),
        ])
    }

    /// A policy by name or alias (case-insensitive, `-` for `_`).
    pub fn get(&self, name: &str) -> Option<Arc<Policy>> {
        self.by_key.get(&key(name)).cloned()
    }

    /// The canonical policy names, sorted (listed in the 422 for an unknown name).
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_policies_load_and_resolve_aliases() {
        let p = Policies::builtin().expect("policies");
        assert_eq!(
            p.names(),
            [
                "clinical_minimal_redaction",
                "gdpr_pseudonymization",
                "hipaa_safe_harbor",
                "research_limited_dataset",
                "strict"
            ]
        );
        assert_eq!(
            p.get("HIPAA-Safe-Harbor").map(|p| p.name.clone()),
            Some("hipaa_safe_harbor".into())
        );
        assert_eq!(
            p.get("gdpr").map(|p| p.name.clone()),
            Some("gdpr_pseudonymization".into())
        );
        assert!(p.get("nope").is_none());
    }

    #[test]
    fn safe_harbor_rules() {
        let p = Policies::builtin().expect("policies");
        let h = p.get("hipaa_safe_harbor").expect("hipaa");
        assert!(h.force_safety_sweep);
        assert_eq!(h.action("AGE"), Action::AgeOver89);
        assert_eq!(h.action("ZIP_CODE"), Action::Zip3);
        assert_eq!(h.action("DATE"), Action::Year);
        assert_eq!(h.action("FIRST_NAME"), Action::Method);
        assert!(h.zip3_restricted("036") && !h.zip3_restricted("021"));
        let s = p.get("strict").expect("strict");
        assert_eq!(s.method, Some(Method::Mask));
        assert_eq!(s.action("STATE"), Action::Mask);
        let r = p.get("research_limited_dataset").expect("lds");
        assert_eq!(r.action("DATE"), Action::Keep);
        assert_eq!(r.action("NAME"), Action::Method);
        let g = p.get("gdpr_pseudonymization").expect("gdpr");
        assert!(g.keep_mapping && g.method == Some(Method::Replace));
        let m = p.get("clinical_minimal_redaction").expect("minimal");
        assert!(!m.force_safety_sweep);
        assert_eq!(m.action("ORGANIZATION"), Action::Keep);
        assert_eq!(m.action("SSN"), Action::Method);
    }

    #[test]
    fn bad_policy_files_are_refused() {
        let bad = |src: &str| {
            Policies::from_sources(&[("p.toml".into(), src.into())])
                .unwrap_err()
                .to_string()
        };
        let head = "name = \"x\"\ndescription = \"d\"\ndefault_action = \"mask\"\n";
        assert!(bad(&format!("{head}[actions]\nNOPE = \"mask\"\n")).contains("canonical"));
        assert!(bad(&format!("{head}[actions]\nDATE = \"teleport\"\n")).contains("teleport"));
        assert!(bad(&format!("{head}restricted_zip3 = [\"12\"]\n")).contains("three digits"));
        assert!(bad(&format!("{head}wat = 1\n")).contains("wat"));
    }
}
