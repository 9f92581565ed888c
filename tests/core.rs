//! The de-identification core called as a library (no HTTP): the same output as the route,
//! identifiers known from structured data removed wherever they appear, date shifts keyed by
//! the subject, and Arrow record batches with per-row status.

mod common;

use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int64Array, LargeStringArray, RecordBatch, StringViewArray};
use arrow_schema::{DataType, Field, Schema};
use phiflow::config::Settings;
use phiflow::deid::policy::Method;
use phiflow::deidentifier::{BatchColumns, DeidOptions, Deidentifier, KnownIdentifier, Subject};
use serde_json::json;

const SECRET: &str = "core-test-secret";
const NOTE: &str = "Mr. John Smith (MRN 4829173) was seen on 2021-04-02 at 12 Main Street, Boston. Call (617) 555-0143.";

fn settings() -> Settings {
    let mut s = Settings::from_env();
    s.deid_secret_key = Some(SECRET.into());
    s.data_dir = common::temp_dir("core");
    s
}

/// One engine per test binary, on its own runtime thread (the registry's reaper lives there).
fn engine() -> Arc<Deidentifier> {
    static ENGINE: OnceLock<Arc<Deidentifier>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Runtime::new().expect("runtime");
                rt.block_on(async move {
                    let d = Arc::new(Deidentifier::build(settings()).expect("engine builds"));
                    tx.send(d).expect("send");
                    std::future::pending::<()>().await;
                });
            });
            rx.recv().expect("engine")
        })
        .clone()
}

fn replace() -> DeidOptions {
    DeidOptions {
        method: Some(Method::Replace),
        ..DeidOptions::default()
    }
}

#[tokio::test]
async fn the_library_gives_the_route_output_byte_for_byte() {
    let server = common::start(|s| s.deid_secret_key = Some(SECRET.into()));
    let (status, body) = server
        .post(
            "/pii/deidentify",
            &json!({ "text": NOTE, "method": "replace" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let d = engine()
        .deidentify(NOTE, &replace(), Subject::default())
        .await
        .expect("deidentified");
    assert_eq!(body["deidentified_text"].as_str(), Some(d.text.as_str()));
    assert_eq!(body["entities"], json!(d.entities));
    assert!(!d.text.contains("Smith") && !d.text.contains("4829173"));
}

#[tokio::test]
async fn known_identifiers_go_wherever_they_appear() {
    let text = "Follow-up: SUMIKO254 larue605 reports less pain. Larue605 lives with Merit Dravec. Reach at 555 201 7788.";
    let known = [
        KnownIdentifier::new("Sumiko254", "FIRST_NAME"),
        KnownIdentifier::new("Larue605", "LAST_NAME"),
        KnownIdentifier::new("Merit", "FIRST_NAME"),
        KnownIdentifier::new("Dravec", "LAST_NAME"),
        KnownIdentifier::new("+1 (555) 201-7788", "PHONE"),
    ];
    let d = engine()
        .deidentify(
            text,
            &DeidOptions::default(),
            Subject {
                id: Some("patient-1"),
                known: &known,
            },
        )
        .await
        .expect("deidentified");
    let lower = d.text.to_lowercase();
    for k in ["sumiko254", "larue605", "merit", "dravec", "7788"] {
        assert!(!lower.contains(k), "{k} survived: {}", d.text);
    }
    assert!(d.text.contains("reports less pain"), "{}", d.text);
}

#[tokio::test]
async fn a_subject_keys_its_date_shift() {
    let e = engine();
    let shift = DeidOptions {
        method: Some(Method::ShiftDates),
        ..DeidOptions::default()
    };
    let text = "Admitted 2021-04-02, discharged 2021-04-09.";
    let run = |id: &'static str| {
        let (e, shift) = (e.clone(), shift.clone());
        async move {
            e.deidentify(
                text,
                &shift,
                Subject {
                    id: Some(id),
                    known: &[],
                },
            )
            .await
            .expect("deidentified")
        }
    };
    let (a1, a2) = (run("patient-a").await, run("patient-a").await);
    assert_eq!(a1.text, a2.text);
    assert_eq!(a1.shift_days, e.subject_shift_days("patient-a"));
    let other = ["patient-b", "patient-c", "patient-d"]
        .into_iter()
        .find(|id| e.subject_shift_days(id) != e.subject_shift_days("patient-a"))
        .expect("some subject shifts differently");
    let b = run(other).await;
    assert_ne!(a1.text, b.text);
    assert!(!a1.text.contains("2021-04-02"), "{}", a1.text);
}

fn batch(text: ArrayRef) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", text.data_type().clone(), true),
        Field::new("site", DataType::Utf8, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![7, 8, 9])),
            text,
            Arc::new(arrow_array::StringArray::from(vec!["a", "b", "c"])),
        ],
    )
    .expect("batch")
}

#[tokio::test]
async fn record_batches_keep_their_columns_and_report_each_row() {
    let e = engine();
    let p = Arc::new(e.prepare(&replace()).expect("prepared"));
    let model = Arc::new(e.model(&p, None).await.expect("model"));
    let cols = BatchColumns {
        text: "text".into(),
        id: Some("id".into()),
    };
    let rows = [Some(NOTE), None, Some("Nothing to hide here.")];
    let large: ArrayRef = Arc::new(LargeStringArray::from(rows.to_vec()));
    let view: ArrayRef = Arc::new(StringViewArray::from(rows.to_vec()));
    let mut outputs = Vec::new();
    for text in [large, view] {
        let out = e
            .deidentify_batch(&p, &model, &batch(text), &cols)
            .await
            .expect("batch");
        assert_eq!(out.num_rows(), 3);
        let status: Vec<_> = out
            .column_by_name("status")
            .expect("status")
            .as_string::<i32>()
            .iter()
            .collect();
        assert_eq!(status, [Some("ok"), Some("error"), Some("ok")]);
        assert_eq!(
            out.column_by_name("error")
                .expect("error")
                .as_string::<i32>()
                .value(1),
            "null_text"
        );
        let site = out.column_by_name("site").expect("site").as_string::<i32>();
        assert_eq!(site.value(2), "c");
        let texts = out
            .column_by_name("deidentified_text")
            .expect("text")
            .as_string::<i32>();
        assert!(!texts.value(0).contains("Smith"));
        assert!(texts.is_null(1));
        let spans = out.column_by_name("spans").expect("spans").as_list::<i32>();
        assert!(spans.value(0).len() >= 3, "spans of the note");
        assert!(spans.is_null(1));
        outputs.push(texts.value(0).to_string());
    }
    // Row 7 keyed by its id: the same as a single call with that subject.
    let single = e
        .deidentify(
            NOTE,
            &replace(),
            Subject {
                id: Some("7"),
                known: &[],
            },
        )
        .await
        .expect("single");
    assert_eq!(outputs, [single.text.clone(), single.text]);
}

#[tokio::test]
async fn a_batch_without_its_text_column_is_a_typed_error() {
    let e = engine();
    let p = Arc::new(e.prepare(&DeidOptions::default()).expect("prepared"));
    let model = Arc::new(e.model(&p, None).await.expect("model"));
    let b = batch(Arc::new(LargeStringArray::from(vec!["x", "y", "z"])));
    let missing = BatchColumns {
        text: "note".into(),
        id: None,
    };
    let err = e
        .deidentify_batch(&p, &model, &b, &missing)
        .await
        .expect_err("no such column");
    assert_eq!(err.to_string(), "column `note` is not in the input");
    let wrong = BatchColumns {
        text: "id".into(),
        id: None,
    };
    let err = e
        .deidentify_batch(&p, &model, &b, &wrong)
        .await
        .expect_err("not text");
    assert!(err.to_string().contains("expected text"), "{err}");
}
