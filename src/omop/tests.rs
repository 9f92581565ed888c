//! Loads computed by hand: what each record becomes, what is rejected and why, what the
//! constraint checks find, and the event table cohorts see.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use serde_json::Value;

use super::build::{BuildError, Built, build, hashed_id};
use super::cohort_data::{Source, caller_ids, cohort_data};
use super::constraints::validate;
use super::values::stable_id;
use super::{cdm, load};
use crate::digest::sha256_hex;

fn table<'a>(b: &'a Built, name: &str) -> &'a RecordBatch {
    &b.tables.iter().find(|(n, _)| *n == name).unwrap().1
}

fn ints(b: &RecordBatch, col: &str) -> Vec<Option<i64>> {
    b.column_by_name(col)
        .unwrap()
        .as_primitive::<Int64Type>()
        .iter()
        .collect()
}

/// A string column's values, plain or dictionary-encoded (the event table's).
fn strs(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let c = b.column_by_name(col).unwrap();
    if let Some(d) = c.as_dictionary_opt::<arrow_array::types::Int16Type>() {
        let values = d.values().as_string::<i32>();
        return d
            .keys()
            .iter()
            .map(|k| k.map(|k| values.value(k as usize).to_string()))
            .collect();
    }
    c.as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

const NOTE: &str = r#"{"note_id":"n-1","person_id":"p-1","note_text":"No fever. Pneumonia. Mother had asthma.","note_date":"2024-03-01","visit_id":"v-1","entities":[
 {"start":3,"end":8,"domain":"symptom","concept_id":437663,"vocabulary_id":"SNOMED","concept_code":"386661006","concept_name":"Fever","negation":"negated"},
 {"start":10,"end":19,"domain":"diagnosis","concept_id":"255848","vocabulary_id":"SNOMED","concept_code":"233604007","concept_name":"Pneumonia"},
 {"start":32,"end":38,"label":"problem","concept_id":317009,"vocabulary_id":"SNOMED","experiencer":"family"},
 {"start":0,"end":2,"domain":"gene","concept_id":1},
 {"start":5,"end":99,"domain":"condition","concept_id":2},
 {"end":4,"domain":"condition"},
 {"start":10,"end":19,"domain":"diagnosis","concept_id":255848}
]}"#;

/// The note as one JSONL line.
fn note_line() -> String {
    NOTE.replace('\n', "")
}

#[test]
fn a_grounded_note_becomes_cdm_rows() {
    let b = build(&note_line()).unwrap();
    let note_id = stable_id(&["note", "n-1"]);
    let person_id = stable_id(&["person", "p-1"]);
    let visit_id = stable_id(&["visit", &person_id.to_string(), "v-1"]);
    let nlp = |s: i64, e: i64, c: i64| {
        stable_id(&[
            "note_nlp",
            &note_id.to_string(),
            &s.to_string(),
            &e.to_string(),
            "Condition",
            &c.to_string(),
        ])
    };

    let note = table(&b, "note");
    assert_eq!(ints(note, "note_id"), vec![Some(note_id)]);
    assert_eq!(ints(note, "visit_occurrence_id"), vec![Some(visit_id)]);
    assert_eq!(strs(note, "note_source_value"), vec![Some("n-1".into())]);

    // Three entities load: fever (negated), pneumonia, asthma (family), stored in concept
    // order (pneumonia 255848, asthma 317009, fever 437663). The gene is an unsupported
    // domain, 5-99 runs past the 40-character text, the third lacks a start, and the last
    // repeats pneumonia.
    let nlp_rows = table(&b, "note_nlp");
    assert_eq!(
        ints(nlp_rows, "note_nlp_id"),
        vec![
            Some(nlp(10, 19, 255848)),
            Some(nlp(32, 38, 317009)),
            Some(nlp(3, 8, 437663)),
        ]
    );
    assert_eq!(
        strs(nlp_rows, "lexical_variant"),
        vec![
            Some("Pneumonia".into()),
            Some("asthma".into()),
            Some("fever".into()),
        ]
    );
    assert_eq!(strs(nlp_rows, "offset")[0], Some("10-19".into()));
    assert_eq!(
        strs(nlp_rows, "term_exists"),
        vec![Some("Y".into()), Some("N".into()), Some("N".into())]
    );
    assert_eq!(
        b.rejection_counts
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        vec![
            ("duplicate_span", 1),
            ("invalid_offset", 1),
            ("missing_offset", 1),
            ("unsupported_domain", 1)
        ]
    );
    let reasons: Vec<(&str, usize, Option<usize>)> = b
        .rejections
        .iter()
        .map(|r| (r.reason, r.line, r.entity))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("unsupported_domain", 1, Some(3)),
            ("invalid_offset", 1, Some(4)),
            ("missing_offset", 1, Some(5)),
            ("duplicate_span", 1, Some(6)),
        ]
    );

    // Only the asserted mention becomes a condition, with the mention's id and the NLP type.
    let cond = table(&b, "condition_occurrence");
    assert_eq!(
        ints(cond, "condition_occurrence_id"),
        vec![Some(nlp(10, 19, 255848))]
    );
    assert_eq!(
        ints(cond, "condition_type_concept_id"),
        vec![Some(cdm::NLP_TYPE_CONCEPT)]
    );
    assert_eq!(ints(cond, "visit_occurrence_id"), vec![Some(visit_id)]);

    // Person and visit synthesized; concepts 0 plus the three with a vocabulary.
    let person = table(&b, "person");
    assert_eq!(ints(person, "person_id"), vec![Some(person_id)]);
    assert_eq!(ints(person, "year_of_birth"), vec![None]);
    let visit = table(&b, "visit_occurrence");
    let d = visit
        .column_by_name("visit_start_date")
        .unwrap()
        .as_primitive::<Date32Type>();
    assert_eq!(d.value(0), 19783);
    assert_eq!(
        ints(table(&b, "concept"), "concept_id"),
        vec![Some(0), Some(255848), Some(317009), Some(437663)]
    );
    assert_eq!(table(&b, "source_to_concept_map").num_rows(), 2);
    assert_eq!(
        b.note_hashes,
        vec![sha256_hex("No fever. Pneumonia. Mother had asthma.")]
    );
}

#[test]
fn plain_rows_are_type_checked() {
    let records = [
        r#"{"table":"person","person_id":1,"gender_concept_id":8507,"year_of_birth":1960,"race_concept_id":0,"ethnicity_concept_id":0}"#,
        r#"{"table":"person","person_id":1,"gender_concept_id":8507,"year_of_birth":1961,"race_concept_id":0,"ethnicity_concept_id":0}"#,
        r#"{"table":"person","person_id":2,"gender_concept_id":8532,"race_concept_id":0,"ethnicity_concept_id":0}"#,
        r#"{"table":"condition_occurrence","condition_occurrence_id":10,"person_id":1,"condition_concept_id":201826,"condition_start_date":"2023-05-01","condition_type_concept_id":32817}"#,
        r#"{"table":"condition_occurrence","condition_occurrence_id":11,"person_id":1,"condition_concept_id":"x","condition_start_date":"2023-05-01","condition_type_concept_id":32817}"#,
        r#"{"table":"condition_occurrence","condition_occurrence_id":12,"person_id":1,"condition_concept_id":1,"condition_start_date":"2023-05-01","condition_type_concept_id":32817,"secret":"x"}"#,
        "",
        r#"{"table":"death","person_id":1,"death_date":"2024-01-01T08:00:00"}"#,
    ]
    .join("\n");
    let b = build(&records).unwrap();
    assert_eq!(b.records, 7);
    assert_eq!(ints(table(&b, "person"), "person_id"), vec![Some(1)]);
    assert_eq!(
        ints(table(&b, "condition_occurrence"), "condition_occurrence_id"),
        vec![Some(10)]
    );
    assert_eq!(table(&b, "death").num_rows(), 1);
    let got: Vec<(&str, usize, Option<&str>)> = b
        .rejections
        .iter()
        .map(|r| (r.reason, r.line, r.field))
        .collect();
    assert_eq!(
        got,
        vec![
            ("duplicate_id", 2, Some("person_id")),
            ("missing_required_field", 3, Some("year_of_birth")),
            ("invalid_value", 5, Some("condition_concept_id")),
            ("unknown_column", 6, None),
        ]
    );
    // Only concept 0: plain rows bring no concept rows of their own.
    assert_eq!(ints(table(&b, "concept"), "concept_id"), vec![Some(0)]);
}

#[test]
fn lines_that_are_not_records_refuse_the_load() {
    let Err(BuildError::Lines(errs)) =
        build("{\"note_id\":1,\"person_id\":1,\"note_date\":\"2024-01-01\"}\nnot json\n\n[]")
    else {
        panic!("expected line errors")
    };
    assert_eq!(errs.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 4]);
    assert!(matches!(build("\n  \n"), Err(BuildError::Empty)));
    // A note without a date is loaded as nothing but a rejection.
    let b = build(r#"{"note_id":1,"person_id":1}"#).unwrap();
    assert_eq!(b.rejections[0].reason, "missing_required_field");
    assert_eq!(b.rejections[0].field, Some("note_date"));
    assert_eq!(table(&b, "note").num_rows(), 0);
}

#[test]
fn constraint_checks_find_each_violation() {
    let records = [
        // note 5 of person 9 (no person row: a synthesized one exists, birth year unknown)
        r#"{"note_id":5,"person_id":9,"note_text":"abc","note_date":"2024-01-01","entities":[{"start":0,"end":3,"domain":"drug","concept_id":1125315,"vocabulary_id":"RxNorm"}]}"#,
        // mention of a note that does not exist, and one past the end of note 5
        r#"{"table":"note_nlp","note_nlp_id":70,"note_id":404,"lexical_variant":"x","nlp_date":"2024-01-01"}"#,
        r#"{"table":"note_nlp","note_nlp_id":71,"note_id":5,"lexical_variant":"x","nlp_date":"2024-01-01","offset":"1-9"}"#,
        // a condition about a person the load lacks, with a drug concept, ending before it starts
        r#"{"table":"condition_occurrence","condition_occurrence_id":80,"person_id":77,"condition_concept_id":1125315,"condition_start_date":"2024-02-01","condition_end_date":"2024-01-01","condition_type_concept_id":32817}"#,
        // an asserted plain mention of a drug concept with no drug_exposure row, and an unknown concept
        r#"{"table":"note_nlp","note_nlp_id":72,"note_id":5,"lexical_variant":"x","nlp_date":"2024-01-01","note_nlp_concept_id":1125315,"term_exists":"Y"}"#,
        r#"{"table":"note_nlp","note_nlp_id":73,"note_id":5,"lexical_variant":"x","nlp_date":"2024-01-01","note_nlp_concept_id":42}"#,
    ]
    .join("\n");
    let b = build(&records).unwrap();
    let v = validate(&b.tables);
    let by: Vec<(&str, usize)> = v.by_reason.iter().map(|(k, n)| (*k, *n)).collect();
    assert_eq!(
        by,
        vec![
            ("invalid_date_range", 1),
            ("invalid_note_offset", 1),
            ("mismatched_domain_event", 1),
            ("missing_concept", 1),
            ("missing_domain_event", 1),
            ("missing_note", 1),
            ("missing_person", 1),
            ("missing_required_field", 1),
        ]
    );
    assert_eq!(v.count, 8);
    let missing_person = v
        .violations
        .iter()
        .find(|x| x.reason == "missing_person")
        .unwrap();
    assert_eq!(
        (missing_person.table, missing_person.row_id),
        ("condition_occurrence", Some(80))
    );
}

#[test]
fn cohort_data_flattens_mentions_and_rows_once() {
    let records = format!(
        "{}\n{}\n{}\n{}",
        note_line(),
        r#"{"table":"condition_occurrence","condition_occurrence_id":10,"person_id":1,"condition_concept_id":201826,"condition_start_date":"2023-05-01","condition_end_date":"2023-05-03","condition_type_concept_id":32817}"#,
        r#"{"table":"person","person_id":2,"gender_concept_id":0,"year_of_birth":1950,"race_concept_id":0,"ethnicity_concept_id":0}"#,
        r#"{"table":"observation_period","observation_period_id":1,"person_id":1,"observation_period_start_date":"2020-01-01","observation_period_end_date":"2024-12-31","period_type_concept_id":32817}"#,
    );
    let b = build(&records).unwrap();
    let data = cohort_data(&Source::Memory(&b.tables), None).unwrap();
    let e = &data.events;
    // 3 mentions in concept order (the pneumonia one standing for its condition row, asthma,
    // the negated fever), the plain condition, and the synthesized visit.
    assert_eq!(e.num_rows(), 5);
    let domains = strs(e, "domain_table");
    assert_eq!(
        domains,
        vec![
            Some("condition_occurrence".into()),
            Some("note_nlp".into()),
            Some("note_nlp".into()),
            Some("condition_occurrence".into()),
            Some("visit_occurrence".into()),
        ]
    );
    assert_eq!(strs(e, "vocabulary_id")[0], Some("SNOMED".into()));
    assert_eq!(strs(e, "vocabulary_id")[3], None);
    assert_eq!(strs(e, "experiencer")[1], Some("family".into()));
    let neg = e.column_by_name("negated").unwrap().as_boolean();
    assert!(neg.value(2) && !neg.value(0));
    assert_eq!(ints(e, "span_start")[0], Some(10));
    assert_eq!(ints(e, "span_end")[0], Some(19));
    let end = e
        .column_by_name("end_date")
        .unwrap()
        .as_primitive::<Date32Type>();
    assert!(end.is_null(0));
    let p = stable_id(&["person", "p-1"]);
    let mut want = vec![1, 2, p];
    want.sort();
    assert_eq!(data.persons.values().to_vec(), want);
    assert_eq!(data.observation_periods.num_rows(), 1);

    let ids = caller_ids(
        &Source::Memory(&b.tables),
        &cdm::PERSON,
        "person",
        &HashSet::from([p, 2]),
    )
    .unwrap();
    assert_eq!(ids[&p], Value::from("p-1"));
    assert_eq!(ids[&2], Value::from(2));
    assert_eq!(hashed_id("person", "p-1"), p);
}

#[test]
fn a_stored_load_reads_back_the_same_events() {
    let root = std::env::temp_dir().join(format!("phiflow-omop-{}", uuid::Uuid::new_v4()));
    let report = load(&root, &note_line(), true, Some("v5.0 2024-08-01")).unwrap();
    assert_eq!(report.row_counts["note_nlp"], 3);
    assert_eq!(report.rejection_counts.values().sum::<usize>(), 4);
    assert!(report.constraint_violations.is_some());
    let m = super::dataset::manifest(&root, &report.load_id).unwrap();
    assert_eq!(m.vocabulary_version.as_deref(), Some("v5.0 2024-08-01"));
    let built = build(&note_line()).unwrap();
    let memory = Source::Memory(&built.tables);
    let stored = Source::Stored {
        root: &root,
        load_id: &report.load_id,
    };
    let (m, s) = (
        cohort_data(&memory, None).unwrap(),
        cohort_data(&stored, None).unwrap(),
    );
    assert_eq!(m.events, s.events);
    assert_eq!(m.persons, s.persons);
    // Filtered to one concept: only its mention is read, in memory and from Parquet alike,
    // and the person still counts.
    let only = HashSet::from([255848]);
    let (fm, fs) = (
        cohort_data(&memory, Some(&only)).unwrap(),
        cohort_data(&stored, Some(&only)).unwrap(),
    );
    assert_eq!(fm.events, fs.events);
    assert_eq!(ints(&fs.events, "concept_id"), vec![Some(255848)]);
    assert_eq!(fs.persons, m.persons);
    let none = HashSet::from([1]);
    let empty = cohort_data(&stored, Some(&none)).unwrap();
    assert_eq!((empty.events.num_rows(), empty.persons.len()), (0, 1));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_mention_and_its_clinical_row_are_one_event_whatever_the_concept_table_says() {
    // No vocabulary: no concept row for 201826, yet the mention still stands for its row.
    let records = r#"{"note_id":"n1","person_id":"p1","note_date":"2024-01-01","entities":[{"start":0,"end":1,"domain":"condition","concept_id":201826}]}"#;
    let b = build(records).unwrap();
    let data = cohort_data(&Source::Memory(&b.tables), None).unwrap();
    assert_eq!(
        strs(&data.events, "domain_table"),
        vec![Some("condition_occurrence".into())]
    );
}

#[test]
fn a_plain_row_sharing_a_mention_id_stays_its_own_event() {
    // Plain note_nlp 1 (asserted) and an unrelated plain condition 1 typed NLP: no link was
    // recorded, so both are events, of their own persons.
    let records = [
        r#"{"table":"note","note_id":1,"person_id":100,"note_date":"2024-01-01","note_type_concept_id":32817,"note_class_concept_id":0,"note_text":"x","encoding_concept_id":0,"language_concept_id":0}"#,
        r#"{"table":"note_nlp","note_nlp_id":1,"note_id":1,"lexical_variant":"x","nlp_date":"2024-01-01","note_nlp_concept_id":201826,"term_exists":"Y"}"#,
        r#"{"table":"condition_occurrence","condition_occurrence_id":1,"person_id":200,"condition_concept_id":4329847,"condition_start_date":"2024-01-01","condition_type_concept_id":32858}"#,
    ]
    .join("\n");
    let b = build(&records).unwrap();
    let data = cohort_data(&Source::Memory(&b.tables), None).unwrap();
    let mut got: Vec<(Option<i64>, Option<String>)> = ints(&data.events, "person_id")
        .into_iter()
        .zip(strs(&data.events, "domain_table"))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (Some(100), Some("note_nlp".into())),
            (Some(200), Some("condition_occurrence".into()))
        ]
    );
}

#[test]
fn unreadable_assertions_are_rejected_and_mentions_are_bounded() {
    let records = [
        r#"{"table":"note_nlp","note_nlp_id":1,"note_id":1,"lexical_variant":"x","nlp_date":"2024-01-01","term_modifiers":"Negation=NEGATED"}"#,
        r#"{"table":"note_nlp","note_nlp_id":2,"note_id":1,"lexical_variant":"x","nlp_date":"2024-01-01","term_modifiers":"negation=maybe"}"#,
    ]
    .join("\n");
    let b = build(&records).unwrap();
    assert_eq!(ints(table(&b, "note_nlp"), "note_nlp_id"), vec![Some(1)]);
    assert_eq!(
        (b.rejections[0].reason, b.rejections[0].field),
        ("invalid_value", Some("term_modifiers"))
    );
    // A mention's text is cut at the CDM's 250 characters.
    let long = "a".repeat(1000);
    let line = format!(
        r#"{{"note_id":1,"person_id":1,"note_date":"2024-01-01","note_text":"{long}","entities":[{{"start":10,"end":900,"domain":"condition"}}]}}"#
    );
    let b = build(&line).unwrap();
    assert_eq!(
        strs(table(&b, "note_nlp"), "lexical_variant")[0]
            .as_ref()
            .map(String::len),
        Some(250)
    );
}
