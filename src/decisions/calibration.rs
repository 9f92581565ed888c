//! Calibration profiles are data: one `*.toml` per profile naming its thresholds and two JSONL
//! fixture files (in-domain, out-of-domain) with their sha256. Loading verifies every digest so a
//! result's `calibration` block always points at fixtures that exist exactly as recorded. Errors
//! name files and fields, never fixture content.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::digest::sha256_hex;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::request::is_identifier;
use super::scoring::Thresholds;
use super::version::parse_semver;

/// Why profiles could not be loaded.
#[derive(Debug, Error)]
pub enum CalibrationError {
    /// A profile directory or file that could not be read (see `datafiles`).
    #[error("{file}: {message}")]
    Read { file: String, message: String },
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("calibration profile {} is not a valid profile: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("calibration profile {}: {field} is invalid ({rule})", .path.display())]
    InvalidField {
        path: PathBuf,
        field: &'static str,
        rule: &'static str,
    },
    #[error("calibration profile {}: {field} must be a finite number in [0, 1]", .path.display())]
    ThresholdOutOfRange { path: PathBuf, field: &'static str },
    #[error("calibration profile {}: minimum_margin exceeds minimum_confidence", .path.display())]
    MarginExceedsConfidence { path: PathBuf },
    #[error(
        "calibration profile {}: fixtures.{field}.path must be relative and stay inside the profile directory",
        .path.display()
    )]
    FixturePath { path: PathBuf, field: &'static str },
    #[error(
        "calibration profile {}: fixtures.{field}.sha256 must be 64 lowercase hexadecimal digits",
        .path.display()
    )]
    InvalidDigest { path: PathBuf, field: &'static str },
    #[error("calibration fixture {} has sha256 {actual}, expected {expected}", .path.display())]
    DigestMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "calibration_id {calibration_id} is defined twice: {} and {}",
        .first.display(),
        .second.display()
    )]
    DuplicateId {
        calibration_id: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("no calibration profiles (*.toml) in {}", .dir.display())]
    NoProfiles { dir: PathBuf },
    #[error("calibration fixture {}, line {line}: {reason}", .path.display())]
    FixtureLine {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    calibration_id: String,
    version: String,
    method: String,
    minimum_confidence: f64,
    minimum_margin: f64,
    multi_label_threshold: f64,
    fixtures: FixturesFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixturesFile {
    in_domain: FixtureFile,
    out_of_domain: FixtureFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureFile {
    path: String,
    sha256: String,
}

/// A fixture file, resolved against its profile's directory, with its verified digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureRef {
    pub path: PathBuf,
    pub sha256: String,
}

/// One verified profile. Fields are private: a profile exists only after its checks passed.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationProfile {
    calibration_id: String,
    version: String,
    method: String,
    thresholds: Thresholds,
    in_domain: FixtureRef,
    out_of_domain: FixtureRef,
    source: PathBuf,
}

/// The `calibration` block of a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationInfo {
    pub calibration_id: String,
    pub version: String,
    pub method: String,
    pub minimum_confidence: f64,
    pub minimum_margin: f64,
    pub multi_label_threshold: f64,
    pub in_domain_digest: String,
    pub out_of_domain_digest: String,
}

fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> CalibrationError + '_ {
    move |source| CalibrationError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl CalibrationProfile {
    /// Loads and verifies one profile file (fixture paths are relative to its directory).
    pub fn load(path: &Path) -> Result<Self, CalibrationError> {
        let text = fs::read_to_string(path).map_err(io_error(path))?;
        Self::parse(path, &text)
    }

    /// A profile from the text of its file at `path` (fixture paths are relative to it).
    fn parse(path: &Path, text: &str) -> Result<Self, CalibrationError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| CalibrationError::Parse {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
        let invalid = |field, rule| CalibrationError::InvalidField {
            path: path.to_path_buf(),
            field,
            rule,
        };
        if !is_identifier(&file.calibration_id) {
            return Err(invalid("calibration_id", "^[a-z][a-z0-9_.:/-]{0,127}$"));
        }
        if !is_identifier(&file.method) {
            return Err(invalid("method", "^[a-z][a-z0-9_.:/-]{0,127}$"));
        }
        if parse_semver(&file.version).is_none() {
            return Err(invalid("version", "semantic version"));
        }
        for (field, value) in [
            ("minimum_confidence", file.minimum_confidence),
            ("minimum_margin", file.minimum_margin),
            ("multi_label_threshold", file.multi_label_threshold),
        ] {
            if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
                return Err(CalibrationError::ThresholdOutOfRange {
                    path: path.to_path_buf(),
                    field,
                });
            }
        }
        if file.minimum_margin > file.minimum_confidence {
            return Err(CalibrationError::MarginExceedsConfidence {
                path: path.to_path_buf(),
            });
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let in_domain = verify_fixture(path, dir, "in_domain", &file.fixtures.in_domain)?;
        let out_of_domain =
            verify_fixture(path, dir, "out_of_domain", &file.fixtures.out_of_domain)?;
        Ok(Self {
            calibration_id: file.calibration_id,
            version: file.version,
            method: file.method,
            thresholds: Thresholds {
                minimum_confidence: file.minimum_confidence,
                minimum_margin: file.minimum_margin,
                multi_label_threshold: file.multi_label_threshold,
            },
            in_domain,
            out_of_domain,
            source: path.to_path_buf(),
        })
    }

    pub fn calibration_id(&self) -> &str {
        &self.calibration_id
    }
    pub fn version(&self) -> &str {
        &self.version
    }
    pub fn method(&self) -> &str {
        &self.method
    }
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }
    pub fn in_domain(&self) -> &FixtureRef {
        &self.in_domain
    }
    pub fn out_of_domain(&self) -> &FixtureRef {
        &self.out_of_domain
    }
    /// The profile file it was loaded from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The `calibration` block of a result.
    pub fn info(&self) -> CalibrationInfo {
        CalibrationInfo {
            calibration_id: self.calibration_id.clone(),
            version: self.version.clone(),
            method: self.method.clone(),
            minimum_confidence: self.thresholds.minimum_confidence,
            minimum_margin: self.thresholds.minimum_margin,
            multi_label_threshold: self.thresholds.multi_label_threshold,
            in_domain_digest: self.in_domain.sha256.clone(),
            out_of_domain_digest: self.out_of_domain.sha256.clone(),
        }
    }
}

/// Resolves a fixture path safely and checks its sha256 against the declared one.
fn verify_fixture(
    profile: &Path,
    dir: &Path,
    field: &'static str,
    declared: &FixtureFile,
) -> Result<FixtureRef, CalibrationError> {
    let relative = Path::new(&declared.path);
    let contained = !declared.path.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !contained {
        return Err(CalibrationError::FixturePath {
            path: profile.to_path_buf(),
            field,
        });
    }
    if !is_digest(&declared.sha256) {
        return Err(CalibrationError::InvalidDigest {
            path: profile.to_path_buf(),
            field,
        });
    }
    let fixture = FixtureRef {
        path: dir.join(relative),
        sha256: declared.sha256.clone(),
    };
    read_verified(&fixture)?;
    Ok(fixture)
}

/// Reads a fixture's bytes and refuses them unless their sha256 is the declared one.
pub fn read_verified(fixture: &FixtureRef) -> Result<Vec<u8>, CalibrationError> {
    let bytes = fs::read(&fixture.path).map_err(io_error(&fixture.path))?;
    let actual = sha256_hex(&bytes);
    if actual != fixture.sha256 {
        return Err(CalibrationError::DigestMismatch {
            path: fixture.path.clone(),
            expected: fixture.sha256.clone(),
            actual,
        });
    }
    Ok(bytes)
}

/// All loaded profiles, by id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CalibrationSet {
    profiles: BTreeMap<String, CalibrationProfile>,
}

impl CalibrationSet {
    /// Loads every `*.toml` directly in `dir` (sorted by name); at least one must exist.
    pub fn load_dir(dir: &Path) -> Result<Self, CalibrationError> {
        let files = crate::datafiles::read_toml_dir(dir, "calibration").map_err(|e| {
            CalibrationError::Read {
                file: e.file,
                message: e.message,
            }
        })?;
        if files.is_empty() {
            return Err(CalibrationError::NoProfiles {
                dir: dir.to_path_buf(),
            });
        }
        let profiles = files
            .iter()
            .map(|(file, text)| CalibrationProfile::parse(Path::new(file), text))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_profiles(profiles)
    }

    /// Builds a set, refusing duplicate ids.
    pub fn from_profiles(profiles: Vec<CalibrationProfile>) -> Result<Self, CalibrationError> {
        let mut set = Self::default();
        for profile in profiles {
            if let Some(first) = set.profiles.get(&profile.calibration_id) {
                return Err(CalibrationError::DuplicateId {
                    calibration_id: profile.calibration_id.clone(),
                    first: first.source.clone(),
                    second: profile.source.clone(),
                });
            }
            set.profiles.insert(profile.calibration_id.clone(), profile);
        }
        Ok(set)
    }

    pub fn get(&self, calibration_id: &str) -> Option<&CalibrationProfile> {
        self.profiles.get(calibration_id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    pub fn profiles(&self) -> impl Iterator<Item = &CalibrationProfile> {
        self.profiles.values()
    }

    pub fn len(&self) -> usize {
        self.profiles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decisions::testkit::{TempDir, calibration_dir};

    const IN: &[u8] = b"{\"a\":1}\n";
    const OUT: &[u8] = b"{\"b\":2}\n";

    fn profile_text(id: &str, conf: &str, margin: &str, label: &str, in_sha: &str) -> String {
        format!(
            "calibration_id = \"{id}\"\nversion = \"1.0.0\"\nmethod = \"deterministic_margin\"\n\
             minimum_confidence = {conf}\nminimum_margin = {margin}\nmulti_label_threshold = {label}\n\
             [fixtures.in_domain]\npath = \"fx/in.jsonl\"\nsha256 = \"{in_sha}\"\n\
             [fixtures.out_of_domain]\npath = \"fx/out.jsonl\"\nsha256 = \"{}\"\n",
            sha256_hex(OUT)
        )
    }

    fn dir_with(profiles: &[(&str, String)]) -> TempDir {
        let dir = TempDir::new();
        dir.write("fx/in.jsonl", IN);
        dir.write("fx/out.jsonl", OUT);
        for (name, text) in profiles {
            dir.write(name, text.as_bytes());
        }
        dir
    }

    #[test]
    fn loads_a_valid_profile() {
        let dir = dir_with(&[(
            "p.toml",
            profile_text("x.v1", "0.7", "0.15", "0.7", &sha256_hex(IN)),
        )]);
        dir.write("notes.txt", b"ignored");
        let set = CalibrationSet::load_dir(dir.path()).map_err(|e| e.to_string());
        let set = set.unwrap_or_default();
        assert_eq!(set.ids().collect::<Vec<_>>(), ["x.v1"]);
        let info = set.get("x.v1").map(CalibrationProfile::info);
        assert_eq!(
            info.as_ref().map(|i| i.in_domain_digest.clone()),
            Some(sha256_hex(IN))
        );
        assert_eq!(
            info.map(|i| (i.minimum_confidence, i.minimum_margin)),
            Some((0.7, 0.15))
        );
    }

    #[test]
    fn digest_mismatch_names_file_not_content() {
        let wrong = sha256_hex(b"other");
        let dir = dir_with(&[("p.toml", profile_text("x.v1", "0.7", "0.15", "0.7", &wrong))]);
        let err = CalibrationSet::load_dir(dir.path()).err();
        let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            matches!(err, Some(CalibrationError::DigestMismatch { .. })),
            "{msg}"
        );
        assert!(msg.contains("in.jsonl") && msg.contains(&wrong) && !msg.contains("\"a\""));
    }

    #[test]
    fn refuses_bad_thresholds() {
        let sha = sha256_hex(IN);
        let load = |conf: &str, margin: &str, label: &str| {
            let dir = dir_with(&[("p.toml", profile_text("x.v1", conf, margin, label, &sha))]);
            CalibrationSet::load_dir(dir.path()).err()
        };
        assert!(matches!(
            load("0.5", "0.6", "0.7"),
            Some(CalibrationError::MarginExceedsConfidence { .. })
        ));
        assert!(matches!(
            load("1.2", "0.1", "0.7"),
            Some(CalibrationError::ThresholdOutOfRange {
                field: "minimum_confidence",
                ..
            })
        ));
        assert!(matches!(
            load("0.7", "-0.1", "0.7"),
            Some(CalibrationError::ThresholdOutOfRange {
                field: "minimum_margin",
                ..
            })
        ));
        assert!(matches!(
            load("0.7", "0.1", "nan"),
            Some(CalibrationError::ThresholdOutOfRange {
                field: "multi_label_threshold",
                ..
            })
        ));
        assert!(load("0.7", "0.7", "1.0").is_none());
    }

    #[test]
    fn refuses_duplicates_and_bad_files() {
        let sha = sha256_hex(IN);
        let dir = dir_with(&[
            ("a.toml", profile_text("x.v1", "0.7", "0.1", "0.7", &sha)),
            ("b.toml", profile_text("x.v1", "0.8", "0.1", "0.7", &sha)),
        ]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::DuplicateId { .. })
        ));
        let dir = dir_with(&[("a.toml", profile_text("X", "0.7", "0.1", "0.7", &sha))]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::InvalidField {
                field: "calibration_id",
                ..
            })
        ));
        let dir = dir_with(&[("a.toml", profile_text("x", "0.7", "0.1", "0.7", "ABC"))]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::InvalidDigest {
                field: "in_domain",
                ..
            })
        ));
        let escaping =
            profile_text("x", "0.7", "0.1", "0.7", &sha).replace("fx/in.jsonl", "../in.jsonl");
        let dir = dir_with(&[("a.toml", escaping)]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::FixturePath {
                field: "in_domain",
                ..
            })
        ));
        let extra = format!(
            "{}unknown = 1\n",
            profile_text("x", "0.7", "0.1", "0.7", &sha)
        );
        let dir = dir_with(&[("a.toml", extra)]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::Parse { .. })
        ));
        let dir = dir_with(&[]);
        assert!(matches!(
            CalibrationSet::load_dir(dir.path()),
            Err(CalibrationError::NoProfiles { .. })
        ));
    }

    #[test]
    fn shipped_default_profile() {
        let set = CalibrationSet::load_dir(&calibration_dir()).map_err(|e| e.to_string());
        let set = set.unwrap_or_default();
        let p = set.get("phiflow.synthetic.fixed_option.v1");
        assert_eq!(p.map(|p| p.method()), Some("deterministic_margin"));
        assert_eq!(
            p.map(|p| p.thresholds()),
            Some(Thresholds {
                minimum_confidence: 0.70,
                minimum_margin: 0.15,
                multi_label_threshold: 0.70
            })
        );
    }
}
