//! The typed, validated decision request. Parsing happens once, lists every violation with its
//! `loc`, and never echoes caller text (only lengths, limits and indices), so later stages can
//! rely on the bounds without re-checking them.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::normalize::normalize;
use super::version::{SUPPORTED_MAJOR, parse_semver};
use crate::validation::Violation;

pub const MAX_INPUT_CHARS: usize = 8192;
pub const MAX_INPUT_BYTES: usize = 32768;
pub const MAX_OPTION_CHARS: usize = 256;
pub const MAX_OPTION_BYTES: usize = 1024;
pub const MAX_OPTIONS_TOTAL_BYTES: usize = 16384;
pub const MIN_TIMEOUT_MS: u64 = 1;
pub const MAX_TIMEOUT_MS: u64 = 30_000;
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_NAMESPACE: &str = "default";
pub const DEFAULT_PURPOSE: &str = "care_review";
pub const DEFAULT_SCHEMA_VERSION: &str = "1.0.0";
/// The pattern of `namespace`, `purpose`, `calibration_id` (and calibration methods).
pub const IDENTIFIER_PATTERN: &str = "^[a-z][a-z0-9_.:/-]{0,127}$";
/// Every accepted request field; anything else is `extra_forbidden`.
pub const FIELDS: [&str; 9] = [
    "mode",
    "input_text",
    "options",
    "namespace",
    "purpose",
    "calibration_id",
    "timeout_ms",
    "schema_version",
    "compatibility_policy",
];

/// What kind of decision is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    FixedChoice,
    BooleanChoice,
    OrderedPreference,
    MultiLabel,
    ScalarScore,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::FixedChoice,
        Mode::BooleanChoice,
        Mode::OrderedPreference,
        Mode::MultiLabel,
        Mode::ScalarScore,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::FixedChoice => "fixed_choice",
            Mode::BooleanChoice => "boolean_choice",
            Mode::OrderedPreference => "ordered_preference",
            Mode::MultiLabel => "multi_label",
            Mode::ScalarScore => "scalar_score",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Inclusive bounds on the number of options.
    pub fn option_count(self) -> (usize, usize) {
        match self {
            Mode::FixedChoice | Mode::OrderedPreference | Mode::MultiLabel => (2, 64),
            Mode::BooleanChoice => (2, 2),
            Mode::ScalarScore => (0, 0),
        }
    }
}

/// How results may be read by later schema versions; only `same_major` exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompatibilityPolicy {
    SameMajor,
}

/// A request that passed every rule; fields are private so an unchecked one cannot be built.
/// `Debug` redacts the caller's text.
#[derive(Clone, PartialEq)]
pub struct DecisionRequest {
    mode: Mode,
    input_text: String,
    options: Vec<String>,
    namespace: String,
    purpose: String,
    /// `None`: the engine's default profile (that of its backend).
    calibration_id: Option<String>,
    timeout_ms: u64,
    schema_version: String,
    compatibility_policy: CompatibilityPolicy,
}

impl fmt::Debug for DecisionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecisionRequest")
            .field("mode", &self.mode)
            .field("input_text_chars", &self.input_text.chars().count())
            .field("option_count", &self.options.len())
            .field("namespace", &self.namespace)
            .field("purpose", &self.purpose)
            .field("calibration_id", &self.calibration_id)
            .field("timeout_ms", &self.timeout_ms)
            .field("schema_version", &self.schema_version)
            .finish_non_exhaustive()
    }
}

impl DecisionRequest {
    /// Parses a request body; `loc`s start with `"body"`.
    pub fn parse(body: &Value) -> Result<Self, Vec<Violation>> {
        Self::parse_at(body, &[json!("body")])
    }

    /// Parses a request found at `loc` (e.g. `["body","requests",2]`).
    pub fn parse_at(value: &Value, loc: &[Value]) -> Result<Self, Vec<Violation>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![Violation::new(
                loc,
                "model_attributes_type",
                "Input should be a valid dictionary or object",
                None,
            )]);
        };
        let mut out = Vec::new();
        for key in obj.keys() {
            if !FIELDS.contains(&key.as_str()) {
                out.push(Violation::new(
                    &at(loc, key.as_str()),
                    "extra_forbidden",
                    "Extra inputs are not permitted",
                    None,
                ));
            }
        }
        let mode = parse_mode(obj, loc, &mut out);
        let input_text = parse_input_text(obj, loc, &mut out);
        let options = parse_options(obj, mode, loc, &mut out);
        let namespace = parse_identifier(obj, "namespace", DEFAULT_NAMESPACE, loc, &mut out);
        let purpose = parse_identifier(obj, "purpose", DEFAULT_PURPOSE, loc, &mut out);
        let calibration_id = parse_optional_identifier(obj, "calibration_id", loc, &mut out);
        let timeout_ms = parse_timeout(obj, loc, &mut out);
        let schema_version = parse_schema_version(obj, loc, &mut out);
        let compatibility_policy = parse_policy(obj, loc, &mut out);
        match (
            mode,
            input_text,
            options,
            namespace,
            purpose,
            calibration_id,
            timeout_ms,
            schema_version,
            compatibility_policy,
        ) {
            (
                Some(mode),
                Some(input_text),
                Some(options),
                Some(namespace),
                Some(purpose),
                Some(calibration_id),
                Some(timeout_ms),
                Some(schema_version),
                Some(compatibility_policy),
            ) if out.is_empty() => Ok(Self {
                mode,
                input_text,
                options,
                namespace,
                purpose,
                calibration_id,
                timeout_ms,
                schema_version,
                compatibility_policy,
            }),
            _ => Err(out),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn input_text(&self) -> &str {
        &self.input_text
    }
    /// Options, trimmed, in input order.
    pub fn options(&self) -> &[String] {
        &self.options
    }
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
    pub fn purpose(&self) -> &str {
        &self.purpose
    }
    pub fn calibration_id(&self) -> Option<&str> {
        self.calibration_id.as_deref()
    }
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }
    pub fn schema_version(&self) -> &str {
        &self.schema_version
    }
    pub fn compatibility_policy(&self) -> CompatibilityPolicy {
        self.compatibility_policy
    }
}

/// `^[a-z][a-z0-9_.:/-]{0,127}$` without a regex.
pub fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some('a'..='z'))
        && text.len() <= 128
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | ':' | '/' | '-'))
}

/// C0 controls, DEL and C1 controls.
pub fn is_control(c: char) -> bool {
    c < '\u{20}' || ('\u{7F}'..='\u{9F}').contains(&c)
}

pub(crate) fn at(loc: &[Value], key: impl Into<Value>) -> Vec<Value> {
    let mut loc = loc.to_vec();
    loc.push(key.into());
    loc
}

fn missing(loc: &[Value], out: &mut Vec<Violation>) {
    out.push(Violation::new(loc, "missing", "Field required", None));
}

fn string_type(loc: &[Value], out: &mut Vec<Violation>) {
    out.push(Violation::new(
        loc,
        "string_type",
        "Input should be a valid string",
        None,
    ));
}

fn parse_mode(obj: &Map<String, Value>, loc: &[Value], out: &mut Vec<Violation>) -> Option<Mode> {
    let loc = at(loc, "mode");
    let Some(value) = obj.get("mode") else {
        missing(&loc, out);
        return None;
    };
    let mode = value.as_str().and_then(Mode::parse);
    if mode.is_none() {
        let expected = "'fixed_choice', 'boolean_choice', 'ordered_preference', 'multi_label' or 'scalar_score'";
        out.push(Violation::new(
            &loc,
            "literal_error",
            format!("Input should be {expected}"),
            Some(json!({ "expected": expected })),
        ));
    }
    mode
}

fn parse_input_text(
    obj: &Map<String, Value>,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<String> {
    let loc = at(loc, "input_text");
    let text = match obj.get("input_text") {
        None => {
            missing(&loc, out);
            return None;
        }
        Some(Value::String(text)) => text,
        Some(_) => {
            string_type(&loc, out);
            return None;
        }
    };
    let before = out.len();
    if text.is_empty() {
        out.push(Violation::new(
            &loc,
            "string_too_short",
            "String should have at least 1 character",
            Some(json!({ "min_length": 1 })),
        ));
    } else if text.trim().is_empty() {
        out.push(Violation::new(
            &loc,
            "value_error",
            "Value error, input_text must contain a non-whitespace character",
            None,
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_INPUT_CHARS {
        out.push(Violation::new(
            &loc,
            "string_too_long",
            format!("String should have at most {MAX_INPUT_CHARS} characters"),
            Some(json!({ "max_length": MAX_INPUT_CHARS, "actual_length": chars })),
        ));
    }
    if text.len() > MAX_INPUT_BYTES {
        out.push(Violation::new(
            &loc,
            "string_too_long",
            format!("String should have at most {MAX_INPUT_BYTES} UTF-8 bytes"),
            Some(json!({ "max_bytes": MAX_INPUT_BYTES, "actual_bytes": text.len() })),
        ));
    }
    if text.contains('\0') {
        out.push(Violation::new(
            &loc,
            "control_character",
            "String should not contain NUL characters",
            None,
        ));
    }
    (out.len() == before).then(|| text.clone())
}

fn parse_options(
    obj: &Map<String, Value>,
    mode: Option<Mode>,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<Vec<String>> {
    let loc = at(loc, "options");
    let items = match obj.get("options") {
        None => &Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            out.push(Violation::new(
                &loc,
                "list_type",
                "Input should be a valid list",
                None,
            ));
            return None;
        }
    };
    let before = out.len();
    if let Some(mode) = mode {
        let (min, max) = mode.option_count();
        if items.len() < min {
            out.push(Violation::new(
                &loc,
                "too_short",
                format!("List should have at least {min} items"),
                Some(json!({ "min_length": min, "actual_length": items.len() })),
            ));
        }
        if items.len() > max {
            out.push(Violation::new(
                &loc,
                "too_long",
                format!("List should have at most {max} items"),
                Some(json!({ "max_length": max, "actual_length": items.len() })),
            ));
        }
    }
    let mut options = Vec::with_capacity(items.len());
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut total_bytes = 0usize;
    for (index, item) in items.iter().enumerate() {
        let iloc = at(&loc, index);
        let Some(raw) = item.as_str() else {
            string_type(&iloc, out);
            continue;
        };
        let option = raw.trim();
        total_bytes += option.len();
        check_option(option, &iloc, out);
        if !option.is_empty() {
            match first_seen.get(&normalize(option)) {
                Some(&first) => out.push(Violation::new(
                    &iloc,
                    "duplicate_option",
                    "Option duplicates an earlier option after normalization",
                    Some(json!({ "first_index": first })),
                )),
                None => {
                    first_seen.insert(normalize(option), index);
                }
            }
        }
        options.push(option.to_string());
    }
    if total_bytes > MAX_OPTIONS_TOTAL_BYTES {
        out.push(Violation::new(
            &loc,
            "too_long",
            format!("Options should have at most {MAX_OPTIONS_TOTAL_BYTES} UTF-8 bytes in total"),
            Some(json!({ "max_bytes": MAX_OPTIONS_TOTAL_BYTES, "actual_bytes": total_bytes })),
        ));
    }
    (out.len() == before).then_some(options)
}

/// Rules on one trimmed option.
fn check_option(option: &str, loc: &[Value], out: &mut Vec<Violation>) {
    if option.is_empty() {
        out.push(Violation::new(
            loc,
            "string_too_short",
            "Option should have at least 1 non-whitespace character",
            Some(json!({ "min_length": 1 })),
        ));
    }
    let chars = option.chars().count();
    if chars > MAX_OPTION_CHARS {
        out.push(Violation::new(
            loc,
            "string_too_long",
            format!("Option should have at most {MAX_OPTION_CHARS} characters"),
            Some(json!({ "max_length": MAX_OPTION_CHARS, "actual_length": chars })),
        ));
    }
    if option.len() > MAX_OPTION_BYTES {
        out.push(Violation::new(
            loc,
            "string_too_long",
            format!("Option should have at most {MAX_OPTION_BYTES} UTF-8 bytes"),
            Some(json!({ "max_bytes": MAX_OPTION_BYTES, "actual_bytes": option.len() })),
        ));
    }
    if option.chars().any(is_control) {
        out.push(Violation::new(
            loc,
            "control_character",
            "Option should not contain control characters",
            None,
        ));
    }
}

fn parse_identifier(
    obj: &Map<String, Value>,
    field: &'static str,
    default: &str,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<String> {
    parse_optional_identifier(obj, field, loc, out).map(|v| v.unwrap_or_else(|| default.into()))
}

/// `Some(None)` when absent or null, `None` when invalid.
fn parse_optional_identifier(
    obj: &Map<String, Value>,
    field: &'static str,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<Option<String>> {
    let loc = at(loc, field);
    match obj.get(field) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(text)) if is_identifier(text) => Some(Some(text.clone())),
        Some(Value::String(_)) => {
            out.push(Violation::new(
                &loc,
                "string_pattern_mismatch",
                format!("String should match pattern '{IDENTIFIER_PATTERN}'"),
                Some(json!({ "pattern": IDENTIFIER_PATTERN })),
            ));
            None
        }
        Some(_) => {
            string_type(&loc, out);
            None
        }
    }
}

/// An integer (integral floats such as `5000.0` count, as in the main validator; bools do not).
fn as_integer(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.as_f64(),
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite() && f.fract() == 0.0),
        _ => None,
    }
}

fn parse_timeout(obj: &Map<String, Value>, loc: &[Value], out: &mut Vec<Violation>) -> Option<u64> {
    let loc = at(loc, "timeout_ms");
    let Some(value) = obj.get("timeout_ms") else {
        return Some(DEFAULT_TIMEOUT_MS);
    };
    let Some(n) = as_integer(value) else {
        out.push(Violation::new(
            &loc,
            "int_type",
            "Input should be a valid integer",
            None,
        ));
        return None;
    };
    if n < MIN_TIMEOUT_MS as f64 {
        out.push(Violation::new(
            &loc,
            "greater_than_equal",
            format!("Input should be greater than or equal to {MIN_TIMEOUT_MS}"),
            Some(json!({ "ge": MIN_TIMEOUT_MS })),
        ));
        return None;
    }
    if n > MAX_TIMEOUT_MS as f64 {
        out.push(Violation::new(
            &loc,
            "less_than_equal",
            format!("Input should be less than or equal to {MAX_TIMEOUT_MS}"),
            Some(json!({ "le": MAX_TIMEOUT_MS })),
        ));
        return None;
    }
    Some(n as u64)
}

fn parse_schema_version(
    obj: &Map<String, Value>,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<String> {
    let loc = at(loc, "schema_version");
    let text = match obj.get("schema_version") {
        None => return Some(DEFAULT_SCHEMA_VERSION.to_string()),
        Some(Value::String(text)) => text,
        Some(_) => {
            string_type(&loc, out);
            return None;
        }
    };
    match parse_semver(text) {
        None => {
            out.push(Violation::new(
                &loc,
                "string_pattern_mismatch",
                "Input should be a semantic version MAJOR.MINOR.PATCH",
                None,
            ));
            None
        }
        Some(v) if v.major != SUPPORTED_MAJOR => {
            out.push(Violation::new(
                &loc,
                "version_unsupported",
                format!("Only schema major version {SUPPORTED_MAJOR} is supported"),
                Some(json!({ "supported_major": SUPPORTED_MAJOR })),
            ));
            None
        }
        Some(_) => Some(text.clone()),
    }
}

fn parse_policy(
    obj: &Map<String, Value>,
    loc: &[Value],
    out: &mut Vec<Violation>,
) -> Option<CompatibilityPolicy> {
    match obj.get("compatibility_policy") {
        None => Some(CompatibilityPolicy::SameMajor),
        Some(Value::String(text)) if text == "same_major" => Some(CompatibilityPolicy::SameMajor),
        Some(_) => {
            out.push(Violation::new(
                &at(loc, "compatibility_policy"),
                "literal_error",
                "Input should be 'same_major'",
                Some(json!({ "expected": "'same_major'" })),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(body: Value) -> Vec<(String, &'static str)> {
        DecisionRequest::parse(&body)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|v| {
                let loc: Vec<String> = v
                    .loc
                    .iter()
                    .map(|p| match p {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                (loc.join("."), v.kind)
            })
            .collect()
    }

    fn ok(body: Value) -> DecisionRequest {
        match DecisionRequest::parse(&body) {
            Ok(r) => r,
            Err(v) => panic!("unexpected violations: {v:?}"),
        }
    }

    #[test]
    fn defaults_and_trimming() {
        let r = ok(json!({"mode": "fixed_choice", "input_text": "x", "options": ["  a ", "b\t"]}));
        assert_eq!(r.mode(), Mode::FixedChoice);
        assert_eq!(r.options(), ["a", "b"]);
        assert_eq!(r.namespace(), "default");
        assert_eq!(r.purpose(), "care_review");
        assert_eq!(r.calibration_id(), None);
        assert_eq!(r.timeout_ms(), 5000);
        assert_eq!(r.schema_version(), "1.0.0");
        assert_eq!(r.compatibility_policy(), CompatibilityPolicy::SameMajor);
        let r = ok(
            json!({"mode": "scalar_score", "input_text": "x", "namespace": null,
            "purpose": null, "calibration_id": null, "timeout_ms": 30000.0,
            "schema_version": "1.4.2-rc.1", "compatibility_policy": "same_major"}),
        );
        assert_eq!((r.namespace(), r.timeout_ms()), ("default", 30000));
        assert!(r.options().is_empty());
    }

    #[test]
    fn required_and_unknown_fields() {
        assert_eq!(
            kinds(json!({"extra": 1})),
            [
                ("body.extra".into(), "extra_forbidden"),
                ("body.mode".into(), "missing"),
                ("body.input_text".into(), "missing"),
            ]
        );
        assert_eq!(kinds(json!([])), [("body".into(), "model_attributes_type")]);
        assert_eq!(
            kinds(json!({"mode": "choose", "input_text": 3, "options": "a"})),
            [
                ("body.mode".into(), "literal_error"),
                ("body.input_text".into(), "string_type"),
                ("body.options".into(), "list_type"),
            ]
        );
    }

    #[test]
    fn input_text_limits() {
        let base = |t: String| json!({"mode": "scalar_score", "input_text": t});
        assert_eq!(
            kinds(base(String::new())),
            [("body.input_text".into(), "string_too_short")]
        );
        assert_eq!(
            kinds(base(" \n\t".into())),
            [("body.input_text".into(), "value_error")]
        );
        assert!(kinds(base("a".repeat(8192))).is_empty());
        assert_eq!(
            kinds(base("a".repeat(8193))),
            [("body.input_text".into(), "string_too_long")]
        );
        // 8192 four-byte chars = 32768 bytes: within both limits.
        assert!(kinds(base("😀".repeat(8192))).is_empty());
        // 8193 four-byte chars break both limits (8193 > 8192 chars, 32772 > 32768 bytes).
        // Within 8192 chars the byte limit (8192 × 4) cannot be exceeded; it guards raw bodies.
        assert_eq!(
            kinds(base("😀".repeat(8193))),
            [
                ("body.input_text".into(), "string_too_long"),
                ("body.input_text".into(), "string_too_long"),
            ]
        );
        assert_eq!(
            kinds(base("a\0b".into())),
            [("body.input_text".into(), "control_character")]
        );
        assert!(kinds(base("a\tb\u{1}c\u{85}".into())).is_empty());
    }

    #[test]
    fn option_rules() {
        let body = json!({"mode": "fixed_choice", "input_text": "x",
            "options": ["ok", "  ", "a\u{7}", "x".repeat(257), 5, "b\u{85}c", "é".repeat(256)]});
        assert_eq!(
            kinds(body),
            [
                ("body.options.1".into(), "string_too_short"),
                ("body.options.2".into(), "control_character"),
                ("body.options.3".into(), "string_too_long"),
                ("body.options.4".into(), "string_type"),
                ("body.options.5".into(), "control_character"),
            ]
        );
        // 256 "é" = 256 chars, 512 bytes: fine. 256 × "😀" = 1024 bytes: fine; 257 chars fails.
        let v = DecisionRequest::parse(&json!({"mode": "boolean_choice", "input_text": "x",
            "options": ["😀".repeat(256), "😀".repeat(257)]}))
        .err()
        .unwrap_or_default();
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0].ctx,
            Some(json!({"max_length": 256, "actual_length": 257}))
        );
        assert_eq!(
            v[1].ctx,
            Some(json!({"max_bytes": 1024, "actual_bytes": 1028}))
        );
    }

    #[test]
    fn option_total_bytes() {
        // Each option: 2 digits + 254 × "😀" = 256 chars, 2 + 1016 = 1018 bytes (within limits).
        // 17 × 1018 = 17306 > 16384; 16 × 1018 = 16288 fits.
        let opts: Vec<String> = (0..17)
            .map(|i| format!("{i:02}{}", "😀".repeat(254)))
            .collect();
        let v = DecisionRequest::parse(&json!({"mode": "multi_label", "input_text": "x",
            "options": opts}))
        .err()
        .unwrap_or_default();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, "too_long");
        assert_eq!(v[0].loc, [json!("body"), json!("options")]);
        assert_eq!(
            v[0].ctx,
            Some(json!({"max_bytes": 16384, "actual_bytes": 17306}))
        );
        assert!(
            kinds(json!({"mode": "multi_label", "input_text": "x", "options": &opts[..16]}))
                .is_empty()
        );
    }

    #[test]
    fn duplicates_after_normalization_report_later_index() {
        let v = DecisionRequest::parse(&json!({"mode": "fixed_choice", "input_text": "x",
            "options": ["Straße", "other", "STRASSE ", "ﬁle", "FILE", "a  b", "A\u{3000}B"]}))
        .err()
        .unwrap_or_default();
        let got: Vec<(Value, Option<Value>)> = v
            .iter()
            .map(|x| (x.loc[2].clone(), x.ctx.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (json!(2), Some(json!({"first_index": 0}))),
                (json!(4), Some(json!({"first_index": 3}))),
                (json!(6), Some(json!({"first_index": 5}))),
            ]
        );
        assert!(v.iter().all(|x| x.kind == "duplicate_option"));
    }

    #[test]
    fn option_counts_per_mode() {
        let n = |mode: &str, count: usize| {
            let opts: Vec<String> = (0..count).map(|i| format!("o{i}")).collect();
            kinds(json!({"mode": mode, "input_text": "x", "options": opts}))
        };
        let short = || vec![("body.options".to_string(), "too_short")];
        let long = || vec![("body.options".to_string(), "too_long")];
        for mode in ["fixed_choice", "ordered_preference", "multi_label"] {
            assert_eq!(n(mode, 1), short());
            assert!(n(mode, 2).is_empty() && n(mode, 64).is_empty());
            assert_eq!(n(mode, 65), long());
        }
        assert_eq!(n("boolean_choice", 1), short());
        assert!(n("boolean_choice", 2).is_empty());
        assert_eq!(n("boolean_choice", 3), long());
        assert!(n("scalar_score", 0).is_empty());
        assert_eq!(n("scalar_score", 1), long());
    }

    #[test]
    fn identifiers_timeout_version_policy() {
        let body = json!({"mode": "scalar_score", "input_text": "x", "namespace": "Bad",
            "purpose": 3, "calibration_id": "a".repeat(129), "timeout_ms": true,
            "schema_version": "2.0.0", "compatibility_policy": "any"});
        assert_eq!(
            kinds(body),
            [
                ("body.namespace".into(), "string_pattern_mismatch"),
                ("body.purpose".into(), "string_type"),
                ("body.calibration_id".into(), "string_pattern_mismatch"),
                ("body.timeout_ms".into(), "int_type"),
                ("body.schema_version".into(), "version_unsupported"),
                ("body.compatibility_policy".into(), "literal_error"),
            ]
        );
        let t =
            |v: Value| kinds(json!({"mode": "scalar_score", "input_text": "x", "timeout_ms": v}));
        assert_eq!(
            t(json!(0)),
            [("body.timeout_ms".into(), "greater_than_equal")]
        );
        assert_eq!(
            t(json!(-5)),
            [("body.timeout_ms".into(), "greater_than_equal")]
        );
        assert_eq!(
            t(json!(30001)),
            [("body.timeout_ms".into(), "less_than_equal")]
        );
        assert_eq!(t(json!(1.5)), [("body.timeout_ms".into(), "int_type")]);
        assert_eq!(t(json!("5")), [("body.timeout_ms".into(), "int_type")]);
        assert_eq!(t(json!(null)), [("body.timeout_ms".into(), "int_type")]);
        assert!(t(json!(1)).is_empty());
        let s = |v: &str| {
            kinds(json!({"mode": "scalar_score", "input_text": "x", "schema_version": v}))
        };
        assert_eq!(
            s("1.0"),
            [("body.schema_version".into(), "string_pattern_mismatch")]
        );
        assert_eq!(
            s("0.9.0"),
            [("body.schema_version".into(), "version_unsupported")]
        );
        assert!(s("1.99.0").is_empty());
        assert!(is_identifier("a") && is_identifier("ns/a-b_c.d:e"));
        assert!(is_identifier(&"a".repeat(128)) && !is_identifier(&"a".repeat(129)));
        assert!(
            !is_identifier("")
                && !is_identifier("1a")
                && !is_identifier("aé")
                && !is_identifier("a b")
        );
    }

    #[test]
    fn messages_never_echo_caller_text() {
        let secret = "SECRETTEXT";
        let body = json!({"mode": secret, "input_text": format!("{secret}\0"),
            "options": [format!("{secret}\u{1}"), secret, secret.to_lowercase()],
            "namespace": secret, "schema_version": secret});
        let v = DecisionRequest::parse(&body).err().unwrap_or_default();
        assert_eq!(v.len(), 6);
        let text = serde_json::to_string(&v).unwrap_or_default().to_lowercase();
        assert!(!text.contains("secrettext"));
    }

    #[test]
    fn debug_redacts_text() {
        let r = ok(
            json!({"mode": "boolean_choice", "input_text": "PRIVATE", "options": ["yes", "no"]}),
        );
        let d = format!("{r:?}");
        assert!(!d.contains("PRIVATE") && !d.contains("yes") && d.contains("input_text_chars: 7"));
    }
}
