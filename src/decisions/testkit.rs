//! Test helpers: fake backends, temp dirs, and `checked`, which every engine result in the tests
//! passes through (shape = result schema, JSON round trip, no input text in the output).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::access::AccessPolicy;
use super::backend::{
    Backend, BackendError, BackendIdentity, BackendKind, BackendOutput, BackendScores, ScoreInput,
};
use super::calibration::CalibrationSet;
use super::engine::Engine;
use super::lexical::LexicalBackend;
use super::outcome::{Outcome, Selection};
use super::request::{DecisionRequest, Mode};
use super::result::{DecisionResult, Review};
use super::schema::result_schema;

pub fn calibration_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("calibration")
}

pub fn default_profiles() -> CalibrationSet {
    match CalibrationSet::load_dir(&calibration_dir()) {
        Ok(set) => set,
        Err(e) => panic!("shipped calibration: {e}"),
    }
}

pub fn lexical_engine() -> Engine {
    let backend = Arc::new(LexicalBackend::new());
    match Engine::new(
        default_profiles(),
        "phiflow.synthetic.fixed_option.v1",
        AccessPolicy::default(),
        backend,
    ) {
        Ok(engine) => engine,
        Err(e) => panic!("engine: {e}"),
    }
}

pub fn request(body: Value) -> DecisionRequest {
    match DecisionRequest::parse(&body) {
        Ok(r) => r,
        Err(v) => panic!("request violations: {v:?}"),
    }
}

/// Keys of a schema object's `properties`, sorted.
fn property_keys(schema: &Value) -> Vec<String> {
    let mut keys: Vec<String> = schema["properties"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

fn object_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// The result's JSON has exactly the keys the result schema lists (top level and nested).
pub fn assert_result_shape(json: &Value) {
    let schema = result_schema();
    let mut required: Vec<String> = schema["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    required.sort();
    assert_eq!(object_keys(json), property_keys(&schema));
    assert_eq!(required, property_keys(&schema));
    for nested in ["calibration", "backend", "access", "review"] {
        assert_eq!(
            object_keys(&json[nested]),
            property_keys(&schema["properties"][nested]),
            "{nested}"
        );
    }
    let item_schema = &schema["properties"]["option_scores"]["items"];
    for item in json["option_scores"].as_array().into_iter().flatten() {
        assert_eq!(object_keys(item), property_keys(item_schema));
    }
    let states = schema["properties"]["state"]["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(states.contains(&json["state"]));
    let codes = schema["properties"]["code"]["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(codes.contains(&json["code"]));
}

/// Every result the tests produce goes through here.
pub fn checked(result: DecisionResult, input_text: &str) -> DecisionResult {
    let json = match serde_json::to_value(&result) {
        Ok(v) => v,
        Err(e) => panic!("serialize: {e}"),
    };
    assert_result_shape(&json);
    assert_eq!(json["autonomous_action"], Value::Bool(false));
    if !input_text.is_empty() {
        let text = json.to_string();
        assert!(
            !text.contains(input_text),
            "input text leaked into the result"
        );
    }
    let back: Result<DecisionResult, _> = serde_json::from_value(json.clone());
    let again = back.ok().and_then(|b| serde_json::to_value(b).ok());
    assert!(again.is_some_and(|a| approx_eq(&a, &json)), "round trip");
    result
}

/// JSON equality with floats compared to 1e-15 (serde_json's default float parsing may differ
/// from the shortest representation by one ulp).
pub fn approx_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-15,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| approx_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && approx_eq(vx, vy))
        }
        _ => a == b,
    }
}

pub fn sample_result() -> DecisionResult {
    let profiles = default_profiles();
    let info = profiles
        .get("phiflow.synthetic.fixed_option.v1")
        .map(|p| p.info());
    let Some(calibration) = info else {
        panic!("default profile missing")
    };
    DecisionResult {
        mode: Mode::BooleanChoice,
        outcome: Outcome::Success(Selection {
            choice: Some("yes".into()),
            choices: vec!["yes".into()],
            scalar_score: None,
        }),
        option_scores: vec![
            super::result::OptionScore {
                index: 0,
                option: "yes".into(),
                score: 1.0,
            },
            super::result::OptionScore {
                index: 1,
                option: "no".into(),
                score: 0.05,
            },
        ],
        ranking: vec![0, 1],
        confidence: 1.0,
        margin: 0.95,
        calibration,
        backend: LexicalBackend::new().identity().clone(),
        access: AccessPolicy::default().evaluate(
            "default",
            "care_review",
            BackendKind::Deterministic,
        ),
        warnings: vec!["human_review_required".into()],
        review: Review {
            reasons: vec!["clinical_use_requires_review".into()],
        },
        schema_version: "1.0.0".into(),
        extensions: Map::new(),
    }
}

/// A scripted backend.
pub struct FakeBackend {
    identity: BackendIdentity,
    answer: Result<BackendScores, BackendError>,
    calibration_id: Option<String>,
    warnings: Vec<String>,
    delay: Duration,
    last_deadline: Mutex<Option<Instant>>,
}

impl FakeBackend {
    fn new(answer: Result<BackendScores, BackendError>) -> Self {
        Self {
            identity: BackendIdentity {
                backend_id: "test.fake".into(),
                kind: BackendKind::Deterministic,
                runtime: "rust".into(),
                model_id: "test/fake".into(),
                revision: "1".into(),
                license_id: "Apache-2.0".into(),
                local: true,
                deterministic: true,
            },
            answer,
            calibration_id: None,
            warnings: Vec::new(),
            delay: Duration::ZERO,
            last_deadline: Mutex::new(None),
        }
    }
    pub fn scores(scores: Vec<f64>) -> Self {
        Self::new(Ok(BackendScores::Options(scores)))
    }
    pub fn output(scores: BackendScores) -> Self {
        Self::new(Ok(scores))
    }
    pub fn failing(error: BackendError) -> Self {
        Self::new(Err(error))
    }
    pub fn delayed(self, delay: Duration) -> Self {
        Self { delay, ..self }
    }
    pub fn for_calibration(self, id: &str) -> Self {
        Self {
            calibration_id: Some(id.into()),
            ..self
        }
    }
    pub fn warning(mut self, warning: &str) -> Self {
        self.warnings.push(warning.into());
        self
    }
    pub fn with_identity(self, identity: BackendIdentity) -> Self {
        Self { identity, ..self }
    }
    pub fn last_deadline(&self) -> Option<Instant> {
        self.last_deadline.lock().ok().and_then(|d| *d)
    }
}

impl Backend for FakeBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn score(
        &self,
        input: &ScoreInput<'_>,
        deadline: Instant,
    ) -> Result<BackendOutput, BackendError> {
        if let Ok(mut d) = self.last_deadline.lock() {
            *d = Some(deadline);
        }
        std::thread::sleep(self.delay);
        let scores = self.answer.clone()?;
        Ok(BackendOutput {
            scores,
            calibration_id: self
                .calibration_id
                .clone()
                .unwrap_or_else(|| input.calibration_id.into()),
            warnings: self.warnings.clone(),
        })
    }
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("decisions-test-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        if let Err(e) = fs::create_dir_all(&path) {
            panic!("temp dir: {e}");
        }
        Self(path)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn write(&self, relative: &str, bytes: &[u8]) {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        if let Err(e) = fs::write(&path, bytes) {
            panic!("write {}: {e}", path.display());
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
