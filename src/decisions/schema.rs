//! JSON Schema 2020-12 documents for the request, batch request and result, built from the same
//! constants the parser and result type use so the published contract cannot drift. Rules JSON
//! Schema cannot state (trimming, NFKC/case-fold duplicates, byte limits, NUL) are in
//! `description`s; the parser enforces them.

use serde_json::{Value, json};

use super::backend::BackendKind;
use super::batch::{MAX_BATCH_CHARS, MAX_BATCH_REQUESTS};
use super::outcome::{State, codes_by_state};
use super::request::{
    DEFAULT_NAMESPACE, DEFAULT_PURPOSE, DEFAULT_SCHEMA_VERSION, DEFAULT_TIMEOUT_MS,
    IDENTIFIER_PATTERN, MAX_INPUT_BYTES, MAX_INPUT_CHARS, MAX_OPTION_BYTES, MAX_OPTION_CHARS,
    MAX_OPTIONS_TOTAL_BYTES, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, Mode,
};
use super::result::{ADVISORY, RESULT_SCHEMA_VERSION};

pub const REQUEST_SCHEMA_ID: &str = "https://phiflow.dev/schemas/decision-request/1.0.0";
pub const BATCH_REQUEST_SCHEMA_ID: &str =
    "https://phiflow.dev/schemas/decision-batch-request/1.0.0";
pub const RESULT_SCHEMA_ID: &str = "https://phiflow.dev/schemas/decision-result/1.0.0";
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Semantic version with major 1 (semver.org's regex, major pinned).
pub const MAJOR_1_SEMVER_PATTERN: &str = r"^1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$";

fn identifier(default: &str, what: &str) -> Value {
    json!({
        "type": ["string", "null"],
        "pattern": IDENTIFIER_PATTERN,
        "default": default,
        "description": format!("{what}; null means the default."),
    })
}

fn modes(filter: impl Fn(Mode) -> bool) -> Vec<&'static str> {
    Mode::ALL
        .into_iter()
        .filter(|m| filter(*m))
        .map(Mode::as_str)
        .collect()
}

/// Option-count rule for the modes sharing `mode.option_count()`.
fn option_count_rule(group: Vec<&'static str>, min: usize, max: usize) -> Value {
    json!({
        "if": {"properties": {"mode": {"enum": group}}, "required": ["mode"]},
        "then": {"properties": {"options": {"minItems": min, "maxItems": max}}},
    })
}

/// The decision request.
pub fn request_schema() -> Value {
    let mut count_rules = Vec::new();
    for (min, max) in [(2, 64), (2, 2), (0, 0)] {
        let group = modes(|m| m.option_count() == (min, max));
        let mut rule = option_count_rule(group, min, max);
        if min > 0 {
            rule["then"]["required"] = json!(["options"]);
        }
        count_rules.push(rule);
    }
    json!({
        "$schema": DIALECT,
        "$id": REQUEST_SCHEMA_ID,
        "title": "DecisionRequest",
        "description": "A closed-world fixed-option decision request. Results are advisory and always need human review.",
        "type": "object",
        "additionalProperties": false,
        "required": ["mode", "input_text"],
        "properties": {
            "mode": {"type": "string", "enum": modes(|_| true)},
            "input_text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_INPUT_CHARS,
                "pattern": "\\S",
                "description": format!("Non-blank; at most {MAX_INPUT_CHARS} characters and {MAX_INPUT_BYTES} UTF-8 bytes; no NUL. Never echoed in results."),
            },
            "options": {
                "type": "array",
                "default": [],
                "maxItems": 64,
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_OPTION_CHARS,
                    "pattern": "\\S",
                    "description": format!("Trimmed, then: non-blank, at most {MAX_OPTION_CHARS} characters and {MAX_OPTION_BYTES} UTF-8 bytes, no control characters (U+0000-U+001F, U+007F-U+009F)."),
                },
                "description": format!("At most {MAX_OPTIONS_TOTAL_BYTES} UTF-8 bytes in total; unique after NFKC, full case folding and whitespace collapse. fixed_choice, ordered_preference, multi_label: 2-64; boolean_choice: 2; scalar_score: 0."),
            },
            "namespace": identifier(DEFAULT_NAMESPACE, "Tenant namespace"),
            "purpose": identifier(DEFAULT_PURPOSE, "Purpose of use"),
            "calibration_id": {
                "type": ["string", "null"],
                "pattern": IDENTIFIER_PATTERN,
                "description": "Calibration profile id; absent or null means the profile of the configured backend.",
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": MIN_TIMEOUT_MS,
                "maximum": MAX_TIMEOUT_MS,
                "default": DEFAULT_TIMEOUT_MS,
            },
            "schema_version": {
                "type": "string",
                "pattern": MAJOR_1_SEMVER_PATTERN,
                "default": DEFAULT_SCHEMA_VERSION,
            },
            "compatibility_policy": {"type": "string", "enum": ["same_major"], "default": "same_major"},
        },
        "allOf": count_rules,
    })
}

/// A batch of decision requests.
pub fn batch_request_schema() -> Value {
    json!({
        "$schema": DIALECT,
        "$id": BATCH_REQUEST_SCHEMA_ID,
        "title": "DecisionBatchRequest",
        "type": "object",
        "additionalProperties": false,
        "required": ["requests"],
        "properties": {
            "requests": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_BATCH_REQUESTS,
                "items": {"$ref": "#/$defs/request"},
                "description": format!("At most {MAX_BATCH_CHARS} characters in total over all input_text and options."),
            },
        },
        "$defs": {"request": request_schema()},
    })
}

fn closed(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn unit() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}

/// The decision result.
pub fn result_schema() -> Value {
    let states: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
    let mut codes: Vec<Value> = vec![Value::Null];
    let mut state_rules = vec![json!({
        "if": {"properties": {"state": {"const": "success"}}},
        "then": {"properties": {"code": {"type": "null"}}},
    })];
    for (state, state_codes) in codes_by_state() {
        codes.extend(state_codes.iter().map(|c| json!(c)));
        state_rules.push(json!({
            "if": {"properties": {"state": {"const": state.as_str()}}},
            "then": {"properties": {
                "code": {"enum": state_codes},
                "choice": {"type": "null"},
                "choices": {"maxItems": 0},
                "scalar_score": {"type": "null"},
            }},
        }));
    }
    let kinds: Vec<&str> = BackendKind::ALL.iter().map(|k| k.as_str()).collect();
    let deny_codes = codes_by_state()
        .into_iter()
        .find(|(s, _)| *s == State::Denied)
        .map(|(_, c)| c)
        .unwrap_or_default();
    let mut deny_enum: Vec<Value> = vec![Value::Null];
    deny_enum.extend(deny_codes.iter().map(|c| json!(c)));
    let mut schema = closed(json!({
        "mode": {"type": "string", "enum": modes(|_| true)},
        "state": {"type": "string", "enum": states},
        "code": {"type": ["string", "null"], "enum": codes},
        "option_scores": {
            "type": "array",
            "description": "Input order. Empty unless the backend produced valid option scores (success or abstained).",
            "items": closed(json!({
                "index": {"type": "integer", "minimum": 0},
                "option": string(),
                "score": unit(),
            })),
        },
        "choice": {"type": ["string", "null"]},
        "choices": {"type": "array", "items": string()},
        "ranking": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "scalar_score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "confidence": unit(),
        "margin": unit(),
        "calibration": closed(json!({
            "calibration_id": {"type": "string", "pattern": IDENTIFIER_PATTERN},
            "version": string(),
            "method": string(),
            "minimum_confidence": unit(),
            "minimum_margin": unit(),
            "multi_label_threshold": unit(),
            "in_domain_digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "out_of_domain_digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        })),
        "backend": closed(json!({
            "backend_id": string(),
            "kind": {"type": "string", "enum": kinds},
            "runtime": string(),
            "model_id": string(),
            "revision": string(),
            "license_id": string(),
            "local": {"type": "boolean"},
            "deterministic": {"type": "boolean"},
        })),
        "access": closed(json!({
            "allowed": {"type": "boolean"},
            "code": {"type": ["string", "null"], "enum": deny_enum},
            "namespace": string(),
            "purpose": string(),
            "policy_version": string(),
        })),
        "warnings": {"type": "array", "items": string()},
        "review": closed(json!({
            "required": {"const": true},
            "reasons": {"type": "array", "items": string()},
        })),
        "advisory": {"const": ADVISORY},
        "autonomous_action": {"const": false},
        "schema_version": {"type": "string", "pattern": MAJOR_1_SEMVER_PATTERN, "default": RESULT_SCHEMA_VERSION},
        "compatibility_policy": {"const": "same_major"},
        "extensions": {"type": "object"},
    }));
    schema["$schema"] = json!(DIALECT);
    schema["$id"] = json!(RESULT_SCHEMA_ID);
    schema["title"] = json!("DecisionResult");
    schema["description"] = json!(ADVISORY);
    schema["allOf"] = Value::Array(state_rules);
    schema
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;
    use crate::decisions::request::is_identifier;
    use crate::decisions::result::TOP_LEVEL_FIELDS;
    use crate::decisions::version::parse_semver;

    #[test]
    fn ids_and_dialect() {
        assert_eq!(
            request_schema()["$id"],
            json!("https://phiflow.dev/schemas/decision-request/1.0.0")
        );
        assert_eq!(
            result_schema()["$id"],
            json!("https://phiflow.dev/schemas/decision-result/1.0.0")
        );
        for s in [request_schema(), result_schema(), batch_request_schema()] {
            assert_eq!(
                s["$schema"],
                json!("https://json-schema.org/draft/2020-12/schema")
            );
        }
    }

    #[test]
    fn request_schema_bounds() {
        let s = request_schema();
        let p = &s["properties"];
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(p.as_object().map(|o| o.len()), Some(9));
        assert_eq!(
            p["mode"]["enum"],
            json!([
                "fixed_choice",
                "boolean_choice",
                "ordered_preference",
                "multi_label",
                "scalar_score"
            ])
        );
        assert_eq!(p["options"]["maxItems"], json!(64));
        assert_eq!(p["options"]["items"]["maxLength"], json!(256));
        assert_eq!(p["input_text"]["maxLength"], json!(8192));
        assert_eq!(
            (
                p["timeout_ms"]["minimum"].clone(),
                p["timeout_ms"]["maximum"].clone()
            ),
            (json!(1), json!(30000))
        );
        assert_eq!(
            p["namespace"]["pattern"],
            json!("^[a-z][a-z0-9_.:/-]{0,127}$")
        );
        let rules = s["allOf"].as_array().cloned().unwrap_or_default();
        let summary: Vec<(Value, Value, Value)> = rules
            .iter()
            .map(|r| {
                (
                    r["if"]["properties"]["mode"]["enum"].clone(),
                    r["then"]["properties"]["options"]["minItems"].clone(),
                    r["then"]["properties"]["options"]["maxItems"].clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    json!(["fixed_choice", "ordered_preference", "multi_label"]),
                    json!(2),
                    json!(64)
                ),
                (json!(["boolean_choice"]), json!(2), json!(2)),
                (json!(["scalar_score"]), json!(0), json!(0)),
            ]
        );
        let batch = batch_request_schema();
        assert_eq!(batch["properties"]["requests"]["maxItems"], json!(32));
        assert_eq!(batch["$defs"]["request"], s);
    }

    #[test]
    fn result_schema_lists_every_field() {
        let s = result_schema();
        let mut required: Vec<&str> = s["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut expected = TOP_LEVEL_FIELDS.to_vec();
        required.sort();
        expected.sort();
        assert_eq!(required, expected);
        assert_eq!(
            s["properties"]["autonomous_action"],
            json!({"const": false})
        );
        assert_eq!(
            s["properties"]["code"]["enum"].as_array().map(Vec::len),
            Some(14)
        );
        assert_eq!(s["allOf"].as_array().map(Vec::len), Some(6));
    }

    #[test]
    fn patterns_agree_with_the_parsers() {
        let semver = Regex::new(MAJOR_1_SEMVER_PATTERN).ok();
        let ident = Regex::new(IDENTIFIER_PATTERN).ok();
        for v in [
            "1.0.0",
            "1.2.3-rc.1",
            "1.0.0+b.7",
            "1.0.0-0a",
            "2.0.0",
            "1.0",
            "01.0.0",
            "1.0.0-01",
            "1.0.0-",
            "1.0.0-a..b",
        ] {
            let parsed = parse_semver(v).is_some_and(|x| x.major == 1);
            assert_eq!(semver.as_ref().map(|r| r.is_match(v)), Some(parsed), "{v}");
        }
        let long = "a".repeat(129);
        for v in [
            "a",
            "ns/a-b_c.d:e",
            "A",
            "1a",
            "",
            "a b",
            long.as_str(),
            &long[..128],
        ] {
            assert_eq!(
                ident.as_ref().map(|r| r.is_match(v)),
                Some(is_identifier(v)),
                "{v}"
            );
        }
    }
}
