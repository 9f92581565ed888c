//! POST /omop/load and POST /cohort/resolve against a real server on 127.0.0.1, with a data
//! directory of its own so the stored Parquet dataset can be inspected.

mod common;

use std::sync::OnceLock;

use phiflow::digest::sha256_hex;
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
    assert_eq!(r["row_counts"]["phiflow_person"], 3);
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
    for secret in ["fever", "Pneumonia", "\"p-1\""] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }

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

/// Two notes and two plain rows, computed by hand below.
fn cohort_records() -> String {
    [
        json!({"note_id": "n-1", "person_id": "p-1", "note_date": "2024-03-01", "note_text": "Pneumonia. No fever.",
            "entities": [
                {"start": 0, "end": 9, "domain": "condition", "concept_id": 4306037, "vocabulary_id": "SNOMED"},
                {"start": 14, "end": 19, "domain": "symptom", "concept_id": 437663, "vocabulary_id": "SNOMED", "negation": "negated"}
            ]}).to_string(),
        json!({"note_id": "n-2", "person_id": "p-2", "note_date": "2024-03-05", "note_text": "Fever.",
            "entities": [{"start": 0, "end": 5, "domain": "symptom", "concept_id": 437663, "vocabulary_id": "SNOMED"}]}).to_string(),
        r#"{"table":"condition_occurrence","condition_occurrence_id":500,"person_id":3,"condition_concept_id":255848,"condition_start_date":"2024-02-01","condition_type_concept_id":32817}"#.into(),
        r#"{"table":"person","person_id":4,"gender_concept_id":0,"year_of_birth":1970,"race_concept_id":0,"ethnicity_concept_id":0}"#.into(),
    ]
    .join("\n")
}

fn phenotype(expression: Value) -> Value {
    json!({
        "id": "pna_or_fever", "name": "Pneumonia or fever",
        "concept_sets": [
            {"id": "pna", "vocabulary": "SNOMED", "concept_ids": [255848], "include_descendants": true},
            {"id": "fever", "vocabulary": "snomed", "concept_ids": [437663]}
        ],
        "expression": expression,
    })
}

fn crit(id: &str, set: &str) -> Value {
    json!({"operator": "criterion", "criterion": {"id": id, "concept_set": set}})
}

const EDGES: &str = r#"[{"ancestor_concept_id":255848,"descendant_concept_id":4306037}]"#;

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v.as_array().unwrap().iter().map(Value::to_string).collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_phenotype_resolves_to_the_callers_ids_with_evidence() {
    let s = server();
    let edges: Value = serde_json::from_str(EDGES).unwrap();
    let body = json!({
        "phenotype": phenotype(json!({"operator": "or", "children": [crit("pna_dx", "pna"), crit("fever_dx", "fever")]})),
        "records_jsonl": cohort_records(),
        "concept_ancestors": edges,
    });
    let (status, r) = s.post("/cohort/resolve", &body).await;
    assert_eq!(status, 200, "{r}");
    // p-1 by the pneumonia mention (a descendant), p-2 by the affirmed fever, 3 by its
    // structured pneumonia row; 4 has no events.
    assert_eq!(r["count"], 3);
    assert_eq!(sorted(&r["patient_ids"]), vec!["\"p-1\"", "\"p-2\"", "3"]);
    let ev = r["evidence"].as_array().unwrap();
    let p1 = ev.iter().find(|e| e["patient_id"] == "p-1").unwrap();
    assert_eq!(p1["matches"].as_array().unwrap().len(), 1);
    let m = &p1["matches"][0];
    assert_eq!(
        (
            m["criterion_id"].as_str(),
            m["concept_id"].as_i64(),
            m["domain_table"].as_str()
        ),
        (Some("pna_dx"), Some(4306037), Some("condition_occurrence"))
    );
    assert_eq!(
        (
            m["note_id"].as_str(),
            m["start"].as_i64(),
            m["end"].as_i64()
        ),
        (Some("n-1"), Some(0), Some(9))
    );
    assert_eq!(m["vocabulary"], "SNOMED");
    assert_eq!(m["source_note_hash"], sha256_hex("Pneumonia. No fever."));
    let p3 = ev.iter().find(|e| e["patient_id"] == 3).unwrap();
    assert_eq!(p3["matches"][0]["event_id"], 500);
    assert_eq!(p3["matches"][0]["vocabulary"], Value::Null);
    assert_eq!(p3["matches"][0]["note_id"], Value::Null);

    let prov = &r["provenance"];
    assert_eq!(prov["evidence_pointer_count"], 3);
    assert_eq!(
        prov["concept_sets"][0]["expanded_concept_ids"],
        json!([255848, 4306037])
    );
    // Fever: two mentions of two patients before the assertion filter drops the negated one.
    assert_eq!(
        prov["concept_sets"][1]["matched_members"],
        json!([{"concept_id": 437663, "patient_count": 2, "occurrence_count": 2}])
    );
    assert_eq!(prov["hierarchy_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(prov["records"]["records"], 4);
    let text = r.to_string();
    assert!(!text.contains("Pneumonia.") && !text.contains("Fever."));

    // `not` is relative to every person of the load: p-1 (only a negated fever), 3 and 4.
    let body = json!({
        "phenotype": phenotype(json!({"operator": "not", "children": [crit("fever_dx", "fever")]})),
        "records_jsonl": cohort_records(),
        "concept_ancestors": serde_json::from_str::<Value>(EDGES).unwrap(),
    });
    let (status, r) = s.post("/cohort/resolve", &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(sorted(&r["patient_ids"]), vec!["\"p-1\"", "3", "4"]);
}

#[tokio::test]
async fn a_stored_load_resolves_like_inline_records() {
    let s = server();
    let (status, load) = s
        .post(
            "/omop/load",
            &json!({"records_jsonl": cohort_records(), "vocabulary_version": "v5"}),
        )
        .await;
    assert_eq!(status, 200, "{load}");
    let edges: Value = serde_json::from_str(EDGES).unwrap();
    let p = phenotype(
        json!({"operator": "and", "children": [crit("pna_dx", "pna"), {"operator": "not", "children": [crit("fever_dx", "fever")]}]}),
    );
    let (s1, inline) = s
        .post(
            "/cohort/resolve",
            &json!({"phenotype": p, "records_jsonl": cohort_records(), "concept_ancestors": edges}),
        )
        .await;
    let (s2, stored) = s
        .post(
            "/cohort/resolve",
            &json!({"phenotype": p, "load_id": load["load_id"], "concept_ancestors": edges}),
        )
        .await;
    assert_eq!((s1, s2), (200, 200), "{inline} {stored}");
    // Pneumonia and no affirmed fever: p-1 and 3.
    assert_eq!(sorted(&stored["patient_ids"]), vec!["\"p-1\"", "3"]);
    assert_eq!(inline["patient_ids"], stored["patient_ids"]);
    assert_eq!(inline["evidence"], stored["evidence"]);
    assert_eq!(stored["provenance"]["load_id"], load["load_id"]);
    assert_eq!(stored["provenance"]["vocabulary_version"], "v5");
    assert_eq!(
        inline["provenance"]["definition_sha256"],
        stored["provenance"]["definition_sha256"]
    );
}

#[tokio::test]
async fn bad_cohort_requests_name_the_problem() {
    let s = server();
    let p = phenotype(crit("pna_dx", "pna"));
    let cases = [
        (
            json!({"phenotype": p, "circe": {}, "records_jsonl": "x"}),
            422,
            json!(["body", "circe"]),
        ),
        (
            json!({"phenotype": p}),
            422,
            json!(["body", "records_jsonl"]),
        ),
        (
            json!({"records_jsonl": "x"}),
            422,
            json!(["body", "phenotype"]),
        ),
        (
            json!({"phenotype": p, "load_id": "../../etc"}),
            422,
            json!(["body", "load_id"]),
        ),
        (
            json!({"phenotype": p, "records_jsonl": "{\"note_id\":1}",
                "concept_ancestors": serde_json::from_str::<Value>(EDGES).unwrap()}),
            422,
            json!(["body", "records_jsonl", 1]),
        ),
        // include_descendants without a hierarchy
        (
            json!({"phenotype": p, "records_jsonl": cohort_records()}),
            422,
            json!(["body", "concept_ancestors"]),
        ),
        (
            json!({"phenotype": phenotype(json!({"operator": "or", "children": [crit("a", "pna"), crit("b", "nope")]})), "records_jsonl": cohort_records()}),
            422,
            json!([
                "body",
                "phenotype",
                "expression",
                "children",
                1,
                "criterion",
                "concept_set"
            ]),
        ),
        (
            json!({"phenotype": p, "records_jsonl": "", "concept_ancestors": [{"ancestor_concept_id": 0, "descendant_concept_id": 1}]}),
            422,
            json!(["body", "concept_ancestors", 0, "ancestor_concept_id"]),
        ),
        // An edge that is not a 64-bit integer is refused, never dropped (an integral float
        // within 2^53, such as 255848.0, is the integer, as on every route).
        (
            json!({"phenotype": p, "records_jsonl": cohort_records(), "concept_ancestors": [
                {"ancestor_concept_id": 255848, "descendant_concept_id": 4306037},
                {"ancestor_concept_id": 1.0e19, "descendant_concept_id": 1}]}),
            422,
            json!(["body", "concept_ancestors", 1, "ancestor_concept_id"]),
        ),
    ];
    for (body, status, loc) in cases {
        let (got, r) = s.post("/cohort/resolve", &body).await;
        assert_eq!(got, status, "{body} → {r}");
        assert_eq!(r["detail"][0]["loc"], loc, "{body} → {r}");
    }
    let (got, r) = s
        .post(
            "/cohort/resolve",
            &json!({"phenotype": p, "load_id": "omop-000000000000000000000000",
                "concept_ancestors": serde_json::from_str::<Value>(EDGES).unwrap()}),
        )
        .await;
    assert_eq!(
        (got, r["error"]["code"].as_str()),
        (404, Some("load_not_found"))
    );
}

/// An ATLAS-style Circe expression with every default key ATLAS writes.
fn circe(primary_extra: Value) -> Value {
    let mut primary = json!({"CodesetId": 0});
    if let (Some(p), Some(extra)) = (primary.as_object_mut(), primary_extra.as_object()) {
        p.extend(extra.clone());
    }
    json!({
        "ConceptSets": [
            {"id": 0, "name": "T2D", "expression": {"items": [{"concept": {"CONCEPT_ID": 201826, "CONCEPT_NAME": "Type 2 diabetes mellitus", "VOCABULARY_ID": "SNOMED"}, "isExcluded": false, "includeDescendants": true, "includeMapped": false}]}},
            {"id": 1, "name": "Metformin", "expression": {"items": [{"concept": {"CONCEPT_ID": 1503297}, "isExcluded": false, "includeDescendants": false, "includeMapped": false}]}}
        ],
        "PrimaryCriteria": {"CriteriaList": [{"ConditionOccurrence": primary}], "ObservationWindow": {"PriorDays": 30, "PostDays": 0}, "PrimaryCriteriaLimit": {"Type": "First"}},
        "AdditionalCriteria": null,
        "QualifiedLimit": {"Type": "First"},
        "ExpressionLimit": {"Type": "First"},
        "InclusionRules": [{"name": "metformin within 30 days", "expression": {"Type": "ALL", "CriteriaList": [
            {"Criteria": {"DrugExposure": {"CodesetId": 1}}, "StartWindow": {"Start": {"Days": 0, "Coeff": 1}, "End": {"Days": 30, "Coeff": 1}, "UseIndexEnd": false, "UseEventEnd": false},
             "RestrictVisit": false, "IgnoreObservationPeriod": false, "Occurrence": {"Type": 2, "Count": 1}}
        ], "DemographicCriteriaList": [], "Groups": []}}],
        "EndStrategy": {"DateOffset": {"DateField": "StartDate", "Offset": 30}},
        "CensoringCriteria": [],
        "CollapseSettings": {"CollapseType": "ERA", "EraPad": 0},
        "CensorWindow": {},
        "cdmVersionRange": ">=5.0.0"
    })
}

fn circe_records() -> String {
    let op = |p: i64, start: &str| {
        format!(
            r#"{{"table":"observation_period","observation_period_id":{p},"person_id":{p},"observation_period_start_date":"{start}","observation_period_end_date":"2024-12-31","period_type_concept_id":32817}}"#
        )
    };
    let cond = |id: i64, p: i64, c: i64, d: &str| {
        format!(
            r#"{{"table":"condition_occurrence","condition_occurrence_id":{id},"person_id":{p},"condition_concept_id":{c},"condition_start_date":"{d}","condition_type_concept_id":32817}}"#
        )
    };
    let drug = |id: i64, p: i64, d: &str| {
        format!(
            r#"{{"table":"drug_exposure","drug_exposure_id":{id},"person_id":{p},"drug_concept_id":1503297,"drug_exposure_start_date":"{d}","drug_exposure_end_date":"{d}","drug_type_concept_id":32817}}"#
        )
    };
    [
        op(1, "2020-01-01"), cond(11, 1, 201826, "2023-01-10"), drug(12, 1, "2023-01-20"),
        op(2, "2020-01-01"), cond(21, 2, 443238, "2023-05-01"),
        op(3, "2023-05-01"), cond(31, 3, 201826, "2023-05-10"), drug(32, 3, "2023-05-12"),
        op(4, "2020-01-01"), drug(42, 4, "2023-03-05"),
        json!({"note_id": "n-4", "person_id": 4, "note_date": "2023-03-01", "note_text": "Type 2 diabetes.",
            "entities": [{"start": 0, "end": 15, "domain": "condition", "concept_id": 201826, "vocabulary_id": "SNOMED"}]}).to_string(),
    ]
    .join("\n")
}

#[tokio::test]
async fn an_atlas_cohort_expression_resolves_exactly() {
    let s = server();
    let body = json!({
        "circe": circe(json!({})),
        "records_jsonl": circe_records(),
        "concept_ancestors": [{"ancestor_concept_id": 201826, "descendant_concept_id": 443238}],
    });
    let (status, r) = s.post("/cohort/resolve", &body).await;
    assert_eq!(status, 200, "{r}");
    // 1: diagnosis with 30 days of prior observation, metformin 10 days later.
    // 2: diagnosis (a descendant), no metformin: fails the rule.
    // 3: only 9 days of prior observation: no index event.
    // 4: the note mention is the index event, metformin 4 days later.
    assert_eq!(r["patient_ids"], json!([1, 4]));
    assert_eq!(
        r["periods"],
        json!([
            {"patient_id": 1, "start_date": "2023-01-10", "end_date": "2023-02-09"},
            {"patient_id": 4, "start_date": "2023-03-01", "end_date": "2023-03-31"}
        ])
    );
    let note_index = &r["index_events"][1];
    assert_eq!(
        (
            note_index["note_id"].as_str(),
            note_index["start"].as_i64(),
            note_index["end"].as_i64()
        ),
        (Some("n-4"), Some(0), Some(15))
    );
    assert_eq!(
        note_index["source_note_hash"],
        sha256_hex("Type 2 diabetes.")
    );
    assert_eq!(r["inclusion_rules"][0]["event_count"], 2);
    assert_eq!(r["inclusion_rules"][0]["person_count"], 2);

    // An element outside the exactly-evaluable subset is named by its path.
    let body = json!({"circe": circe(json!({"Age": {"Value": 18, "Op": "gt"}})), "records_jsonl": circe_records()});
    let (status, r) = s.post("/cohort/resolve", &body).await;
    assert_eq!(status, 422, "{r}");
    assert_eq!(
        r["detail"][0]["loc"],
        json!([
            "body",
            "circe",
            "PrimaryCriteria",
            "CriteriaList",
            0,
            "ConditionOccurrence",
            "Age"
        ])
    );
    assert!(!r.to_string().contains("T2D"));
}
