//! Calibration fixtures: JSONL lines `{"request": {...}, "expected_state": "...",
//! "expected_code": "..."|null, "note": "..."}`. Replaying them through an engine proves a
//! profile's fixtures describe what the backend actually does. Errors give file and line only.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::calibration::{CalibrationError, CalibrationProfile, FixtureRef, read_verified};
use super::engine::Engine;
use super::outcome::{Outcome, Selection, State};
use super::request::DecisionRequest;

/// One parsed fixture line.
#[derive(Clone, Debug, PartialEq)]
pub struct Fixture {
    pub line: usize,
    pub request: DecisionRequest,
    pub expected_state: State,
    pub expected_code: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureLine {
    request: Value,
    expected_state: State,
    #[serde(default)]
    expected_code: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

/// A fixture whose replayed outcome differs from the expected one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayMismatch {
    pub set: &'static str,
    pub line: usize,
    pub expected_state: State,
    pub expected_code: Option<String>,
    pub actual_state: State,
    pub actual_code: Option<&'static str>,
}

fn line_error(path: &Path, line: usize, reason: &'static str) -> CalibrationError {
    CalibrationError::FixtureLine {
        path: path.to_path_buf(),
        line,
        reason,
    }
}

/// Reads (re-verifying the digest) and parses a fixture file; every request must name
/// `calibration_id` so the replay exercises that exact profile.
pub fn read_fixtures(
    fixture: &FixtureRef,
    calibration_id: &str,
) -> Result<Vec<Fixture>, CalibrationError> {
    let bytes = read_verified(fixture)?;
    let path = fixture.path.as_path();
    let text = std::str::from_utf8(&bytes).map_err(|_| line_error(path, 0, "not UTF-8"))?;
    let mut fixtures = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed: FixtureLine = serde_json::from_str(raw)
            .map_err(|_| line_error(path, line, "not a fixture object"))?;
        let request = DecisionRequest::parse(&parsed.request)
            .map_err(|_| line_error(path, line, "request fails validation"))?;
        if request.calibration_id() != Some(calibration_id) {
            return Err(line_error(
                path,
                line,
                "request names another calibration_id",
            ));
        }
        Outcome::from_parts(
            parsed.expected_state,
            parsed.expected_code.as_deref(),
            Selection::default(),
        )
        .map_err(|_| line_error(path, line, "expected_code does not fit expected_state"))?;
        fixtures.push(Fixture {
            line,
            request,
            expected_state: parsed.expected_state,
            expected_code: parsed.expected_code,
        });
    }
    Ok(fixtures)
}

/// Replays both fixture files of `profile`; an empty list means every expectation held.
pub fn replay(
    engine: &Engine,
    profile: &CalibrationProfile,
) -> Result<Vec<ReplayMismatch>, CalibrationError> {
    let mut mismatches = Vec::new();
    for (set, fixture) in [
        ("in_domain", profile.in_domain()),
        ("out_of_domain", profile.out_of_domain()),
    ] {
        for f in read_fixtures(fixture, profile.calibration_id())? {
            let result = engine.decide(&f.request);
            if result.state() != f.expected_state || result.code() != f.expected_code.as_deref() {
                mismatches.push(ReplayMismatch {
                    set,
                    line: f.line,
                    expected_state: f.expected_state,
                    expected_code: f.expected_code,
                    actual_state: result.state(),
                    actual_code: result.code(),
                });
            }
        }
    }
    Ok(mismatches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256_hex;
    use std::sync::Arc;

    use crate::decisions::access::AccessPolicy;
    use crate::decisions::calibration::CalibrationSet;
    use crate::decisions::lexical::LexicalBackend;
    use crate::decisions::testkit::{TempDir, checked, lexical_engine};

    #[test]
    fn shipped_fixtures_replay_with_the_lexical_backend() {
        let engine = lexical_engine();
        let mut total = 0;
        // The encoder's profile is replayed with the real model in tests/decisions.rs.
        let lexical = engine
            .profiles()
            .profiles()
            .filter(|p| p.calibration_id() == crate::decisions::setup::LEXICAL_PROFILE);
        for profile in lexical {
            assert_eq!(
                replay(&engine, profile).map_err(|e| e.to_string()),
                Ok(vec![])
            );
            let ins =
                read_fixtures(profile.in_domain(), profile.calibration_id()).unwrap_or_default();
            let outs = read_fixtures(profile.out_of_domain(), profile.calibration_id())
                .unwrap_or_default();
            assert!(ins.len() >= 12 && outs.len() >= 12);
            // In-domain fixtures succeed, out-of-domain ones abstain.
            assert!(ins.iter().all(|f| f.expected_state == State::Success));
            assert!(outs.iter().all(|f| f.expected_state == State::Abstained));
            for f in ins.iter().chain(&outs) {
                checked(engine.decide(&f.request), f.request.input_text());
            }
            total += ins.len() + outs.len();
        }
        assert!(total >= 24);
    }

    #[test]
    fn fixture_lines_are_parsed_and_checked() {
        let dir = TempDir::new();
        let body = concat!(
            "{\"request\": {\"mode\": \"boolean_choice\", \"input_text\": \"yes\", \"options\": [\"yes\", \"no\"], \"calibration_id\": \"t.v1\"}, \"expected_state\": \"success\"}\n",
            "\n",
            "{\"request\": {\"mode\": \"boolean_choice\", \"input_text\": \"yes\", \"options\": [\"yes\", \"no\"], \"calibration_id\": \"t.v1\"}, \"expected_state\": \"abstained\", \"expected_code\": \"low_confidence\"}\n",
        );
        dir.write("f.jsonl", body.as_bytes());
        let fixture = FixtureRef {
            path: dir.path().join("f.jsonl"),
            sha256: sha256_hex(body.as_bytes()),
        };
        let fixtures = read_fixtures(&fixture, "t.v1").unwrap_or_default();
        assert_eq!(fixtures.iter().map(|f| f.line).collect::<Vec<_>>(), [1, 3]);
        assert!(matches!(
            read_fixtures(&fixture, "other.v1"),
            Err(CalibrationError::FixtureLine { line: 1, .. })
        ));
        dir.write(
            "bad.jsonl",
            b"{\"request\": {}, \"expected_state\": \"success\"}\n",
        );
        let bad = FixtureRef {
            path: dir.path().join("bad.jsonl"),
            sha256: sha256_hex(b"{\"request\": {}, \"expected_state\": \"success\"}\n"),
        };
        let err = read_fixtures(&bad, "t.v1")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.ends_with("line 1: request fails validation"), "{err}");
    }

    #[test]
    fn replay_reports_mismatches_by_set_and_line() {
        let dir = TempDir::new();
        let line = |expected: &str| {
            format!(
                "{{\"request\": {{\"mode\": \"boolean_choice\", \"input_text\": \"yes\", \"options\": [\"yes\", \"no\"], \"calibration_id\": \"t.v1\"}}, {expected}}}\n"
            )
        };
        // "yes" scores 1.0 and "no" 0.05 with the lexical backend: success, margin 0.95.
        let ins = format!(
            "{}{}",
            line("\"expected_state\": \"success\""),
            line("\"expected_state\": \"abstained\", \"expected_code\": \"low_confidence\"")
        );
        let outs = line("\"expected_state\": \"success\"");
        dir.write("in.jsonl", ins.as_bytes());
        dir.write("out.jsonl", outs.as_bytes());
        let profile = format!(
            "calibration_id = \"t.v1\"\nversion = \"1.0.0\"\nmethod = \"deterministic_margin\"\n\
             minimum_confidence = 0.7\nminimum_margin = 0.15\nmulti_label_threshold = 0.7\n\
             [fixtures.in_domain]\npath = \"in.jsonl\"\nsha256 = \"{}\"\n\
             [fixtures.out_of_domain]\npath = \"out.jsonl\"\nsha256 = \"{}\"\n",
            sha256_hex(ins.as_bytes()),
            sha256_hex(outs.as_bytes())
        );
        dir.write("t.toml", profile.as_bytes());
        let set = CalibrationSet::load_dir(dir.path()).map_err(|e| e.to_string());
        let engine = set.and_then(|set| {
            Engine::new(
                set,
                "t.v1",
                AccessPolicy::default(),
                Arc::new(LexicalBackend::new()),
            )
            .map_err(|e| e.to_string())
        });
        let Ok(engine) = engine else { panic!("engine") };
        let mismatches = engine
            .profiles()
            .get("t.v1")
            .map(|p| replay(&engine, p).unwrap_or_default());
        assert_eq!(
            mismatches,
            Some(vec![ReplayMismatch {
                set: "in_domain",
                line: 2,
                expected_state: State::Abstained,
                expected_code: Some("low_confidence".into()),
                actual_state: State::Success,
                actual_code: None,
            }])
        );
    }
}
