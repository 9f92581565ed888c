//! POST /omop/load and POST /cohort/resolve against a real server on 127.0.0.1, with a data
//! directory of its own so the stored Parquet dataset can be inspected.

mod common;

use std::sync::OnceLock;

use serde_json::{Value, json};

fn data_dir() -> &'static std::path::PathBuf {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| common::temp_dir("omop-data"))
}

fn server() -> &'static common::Server {
    static S: OnceLock<common::Server> = OnceLock::new();
    S.get_or_init(|| {
        let dir = data_dir().clone();
        common::start(move |s| s.data_dir = dir)
    })
}

const TEXT: &str = "No fever. Pneumonia. Mother had asthma.";

fn note_line() -> String {
    json!({
        "note_id": "n-1", "person_id": "p-1", "note_text": TEXT, "note_date": "2024-03-01",
        "entities": [
            {"start": 3, "end": 8, "domain": "symptom", "concept_id": 437663, "vocabulary_id": "SNOMED", "negation": "negated"},
            {"start": 10, "end": 19, "domain": "diagnosis", "concept_id": 255848, "vocabulary_id": "SNOMED"},
            {"start": 32, "end": 38, "domain": "problem", "concept_id": 317009, "vocabulary_id": "SNOMED", "experiencer": "family"},
            {"start": 0, "end": 2, "domain": "gene", "concept_id": 1},
            {"start": 5, "end": 99, "domain": "condition", "concept_id": 2}
        ]
    })
    .to_string()
}

#[tokio::test]
async fn a_load_is_stored_as_parquet_and_accounted_for() {
    let s = server();
    let records = format!(
        "{}\n\n{}\n{}\n",
        note_line(),
        r#"{"table":"person","person_id":7,"gender_concept_id":8507,"year_of_birth":1950,"race_concept_id":0,"ethnicity_concept_id":0}"#,
        r#"{"table":"condition_occurrence","condition_occurrence_id":1,"person_id":8,"condition_concept_id":201826,"condition_start_date":"2023-01-01","condition_type_concept_id":32817}"#,
    );
    let body = json!({"records_jsonl": records, "validate_constraints": true, "vocabulary_version": "v5.0 31-AUG-24"});
    let (status, r) = s.post("/omop/load", &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["records"], 3);
    assert_eq!(r["row_counts"]["note"], 1);
    assert_eq!(r["row_counts"]["note_nlp"], 3);
    assert_eq!(r["row_counts"]["condition_occurrence"], 2);
    // p-1 (from the note) and 7; person 8 exists only as a reference.
    assert_eq!(r["row_counts"]["person"], 2);
    assert_eq!(
        r["rejection_counts"],
        json!({"invalid_offset": 1, "unsupported_domain": 1})
    );
    assert_eq!(r["rejections"][0]["line"], 1);
    assert_eq!(r["rejections"][0]["entity"], 3);
    assert_eq!(r["constraint_violations"]["by_reason"]["missing_person"], 1);
    assert_eq!(r["source_note_hashes"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["vocabulary_version"], "v5.0 31-AUG-24");
    let text = r.to_string();
    assert!(!text.contains("fever") && !text.contains("Pneumonia") && !text.contains("p-1"));

    let load_id = r["load_id"].as_str().unwrap().to_string();
    let dir = data_dir().join("omop").join(&load_id);
    for table in [
        "person",
        "note",
        "note_nlp",
        "condition_occurrence",
        "concept",
        "death",
    ] {
        assert!(dir.join(format!("{table}.parquet")).is_file(), "{table}");
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["vocabulary_version"], "v5.0 31-AUG-24");
    assert_eq!(manifest["row_counts"]["note_nlp"], 3);

    // The same records load to the same id.
    let (status, again) = s.post("/omop/load", &body).await;
    assert_eq!(
        (status, again["load_id"].as_str()),
        (200, Some(load_id.as_str()))
    );
}

#[tokio::test]
async fn lines_that_are_not_records_are_422_naming_the_line() {
    let s = server();
    let records = format!("{}\nnot json\n[1]\n{{\"person_id\":1}}", note_line());
    let (status, r) = s
        .post("/omop/load", &json!({"records_jsonl": records}))
        .await;
    assert_eq!(status, 422, "{r}");
    let locs: Vec<Value> = r["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["loc"].clone())
        .collect();
    assert_eq!(
        locs,
        vec![
            json!(["body", "records_jsonl", 2]),
            json!(["body", "records_jsonl", 3]),
            json!(["body", "records_jsonl", 4]),
        ]
    );
    assert!(!r.to_string().contains("not json"));
    let (status, r) = s
        .post("/omop/load", &json!({"records_jsonl": "\n \n"}))
        .await;
    assert_eq!(
        (status, r["detail"][0]["type"].as_str()),
        (422, Some("too_short"))
    );
    let (status, r) = s
        .post("/omop/load", &json!({"validate_constraints": true}))
        .await;
    assert_eq!(
        (status, r["detail"][0]["loc"].clone()),
        (422, json!(["body", "records_jsonl"]))
    );
}
