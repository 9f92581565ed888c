//! Reading a stored result written by another 1.x version (`same_major`): fields this version
//! knows are kept, unknown top-level fields move into `extensions` (which is kept), and the
//! result is re-labelled with the target version. Another major, or a non-semver version, is
//! refused. Errors never quote result values.

use serde_json::{Map, Value};
use thiserror::Error;

use super::result::{DecisionResult, TOP_LEVEL_FIELDS};
use super::version::{SUPPORTED_MAJOR, parse_semver};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MigrationError {
    #[error("a decision result must be a JSON object")]
    NotAnObject,
    #[error("target schema version is not a semantic version")]
    InvalidTarget,
    #[error("target schema major {target} is not supported (this build reads major {supported})")]
    UnsupportedTarget { target: u64, supported: u64 },
    #[error("the result's schema_version is missing or not a semantic version")]
    InvalidSource,
    #[error("result schema major {from} differs from target major {to}")]
    MajorMismatch { from: u64, to: u64 },
    #[error("extensions must be a JSON object")]
    ExtensionsNotObject,
    #[error("unknown top-level field {key} is also present in extensions")]
    ExtensionConflict { key: String },
    #[error("the result does not match the decision-result 1.x shape")]
    Malformed,
}

/// Migrates a stored result to `target` within the same major.
pub fn migrate(value: Value, target: &str) -> Result<DecisionResult, MigrationError> {
    let to = parse_semver(target).ok_or(MigrationError::InvalidTarget)?;
    if to.major != SUPPORTED_MAJOR {
        return Err(MigrationError::UnsupportedTarget {
            target: to.major,
            supported: SUPPORTED_MAJOR,
        });
    }
    let Value::Object(mut obj) = value else {
        return Err(MigrationError::NotAnObject);
    };
    let from = obj
        .get("schema_version")
        .and_then(Value::as_str)
        .and_then(parse_semver)
        .ok_or(MigrationError::InvalidSource)?;
    if from.major != to.major {
        return Err(MigrationError::MajorMismatch {
            from: from.major,
            to: to.major,
        });
    }
    let mut extensions = match obj.remove("extensions") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(MigrationError::ExtensionsNotObject),
    };
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !TOP_LEVEL_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        if extensions.contains_key(&key) {
            return Err(MigrationError::ExtensionConflict { key });
        }
        if let Some(value) = obj.remove(&key) {
            extensions.insert(key, value);
        }
    }
    obj.insert("extensions".into(), Value::Object(extensions));
    obj.insert("schema_version".into(), Value::String(target.to_string()));
    serde_json::from_value(Value::Object(obj)).map_err(|_| MigrationError::Malformed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decisions::testkit::{checked, sample_result};

    fn stored(version: &str) -> Value {
        let mut v = serde_json::to_value(sample_result()).unwrap_or_default();
        v["schema_version"] = json!(version);
        v
    }

    #[test]
    fn same_major_moves_unknown_fields_into_extensions() {
        let mut v = stored("1.3.0");
        v["extensions"] = json!({"site": "a"});
        v["explanation_v2"] = json!({"k": 1});
        let r = migrate(v, "1.0.0").map(|r| checked(r, ""));
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.schema_version, "1.0.0");
        assert_eq!(
            serde_json::Value::Object(r.extensions.clone()),
            json!({"site": "a", "explanation_v2": {"k": 1}})
        );
        let mut expected = sample_result();
        expected.extensions = r.extensions.clone();
        assert_eq!(r, expected);
        // Upgrading within the major relabels the version.
        let up = migrate(stored("1.0.0"), "1.2.0").map(|r| r.schema_version);
        assert_eq!(up, Ok("1.2.0".to_string()));
    }

    #[test]
    fn refuses_other_majors_and_bad_versions() {
        assert_eq!(
            migrate(stored("2.0.0"), "1.0.0"),
            Err(MigrationError::MajorMismatch { from: 2, to: 1 })
        );
        assert_eq!(
            migrate(stored("1.0.0"), "2.0.0"),
            Err(MigrationError::UnsupportedTarget {
                target: 2,
                supported: 1
            })
        );
        assert_eq!(
            migrate(stored("1.0"), "1.0.0"),
            Err(MigrationError::InvalidSource)
        );
        assert_eq!(
            migrate(stored("1.0.0"), "one"),
            Err(MigrationError::InvalidTarget)
        );
        assert_eq!(
            migrate(json!([1]), "1.0.0"),
            Err(MigrationError::NotAnObject)
        );
    }

    #[test]
    fn refuses_conflicts_and_bad_shapes() {
        let mut v = stored("1.1.0");
        v["extensions"] = json!({"extra": 1});
        v["extra"] = json!(2);
        assert_eq!(
            migrate(v, "1.0.0"),
            Err(MigrationError::ExtensionConflict {
                key: "extra".into()
            })
        );
        let mut v = stored("1.1.0");
        v["extensions"] = json!([]);
        assert_eq!(
            migrate(v, "1.0.0"),
            Err(MigrationError::ExtensionsNotObject)
        );
        let mut v = stored("1.1.0");
        v["autonomous_action"] = json!(true);
        assert_eq!(migrate(v, "1.0.0"), Err(MigrationError::Malformed));
        let mut v = stored("1.1.0");
        v["calibration"]["new_nested"] = json!(1);
        assert_eq!(migrate(v, "1.0.0"), Err(MigrationError::Malformed));
        let mut v = stored("1.1.0");
        if let Some(o) = v.as_object_mut() {
            o.remove("extensions");
        }
        assert!(migrate(v, "1.0.0").is_ok());
    }
}
