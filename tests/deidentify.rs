//! POST /pii/deidentify over HTTP with the real model: operators, policies, the safety sweep,
//! the mapping, offsets, and the cross-checks that answer 422.

mod common;

use serde_json::{Value, json};

const NOTE: &str = "Patient John Smith, a 92 y/o man, DOB 03/15/1931, MRN: 4829173, lives at 12 Main Street, Boston, MA 02139. Call (617) 555-0143 or email john.smith@example.com. Seen 2021-04-02.";

/// The identifiers planted in NOTE, none of which may survive in any output.
const PLANTED: &[&str] = &[
    "John",
    "Smith",
    "03/15/1931",
    "4829173",
    "12 Main Street",
    "(617) 555-0143",
    "555-0143",
    "john.smith@example.com",
    "2021-04-02",
];

async fn deid(body: Value) -> (u16, Value) {
    common::server().post("/pii/deidentify", &body).await
}

/// Whether `value` stands in `out` as a whole: a surrogate drawn at random may hold it inside a
/// longer word ("Johnson" for a planted "John") without leaking it.
fn holds_whole(out: &str, value: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    out.match_indices(value).any(|(i, _)| {
        !word(out[..i].chars().next_back()) && !word(out[i + value.len()..].chars().next())
    })
}

fn text(body: &Value) -> &str {
    body["deidentified_text"]
        .as_str()
        .expect("deidentified_text")
}

/// Rebuilds the input from the output, the entities' output offsets and the mapping.
fn restore(output: &str, body: &Value) -> String {
    let chars: Vec<char> = output.chars().collect();
    let mapping = &body["mapping"];
    let mut out = String::new();
    let mut at = 0;
    for e in body["entities"].as_array().expect("entities") {
        let (s, t) = (
            e["output_start"].as_u64().expect("output_start") as usize,
            e["output_end"].as_u64().expect("output_end") as usize,
        );
        out.extend(&chars[at..s]);
        let shown: String = chars[s..t].iter().collect();
        match e["action"].as_str() {
            Some("keep") => out.push_str(&shown),
            _ => out.push_str(mapping[&shown].as_str().expect("replacement in mapping")),
        }
        at = t;
    }
    out.extend(&chars[at..]);
    out
}

#[tokio::test]
async fn mask_by_default_nothing_planted_survives() {
    let (status, body) = deid(json!({ "text": NOTE })).await;
    assert_eq!(status, 200, "{body}");
    let out = text(&body);
    for p in PLANTED {
        assert!(!out.contains(p), "{p} leaked: {out}");
    }
    for tag in [
        "[DATE]",
        "[MEDICAL_RECORD_NUMBER]",
        "[PHONE]",
        "[EMAIL]",
        "[AGE]",
    ] {
        assert!(out.contains(tag), "{tag} missing: {out}");
    }
    assert_eq!(body["method"], "mask");
    assert!(body["policy"].is_null());
    assert!(body.get("mapping").is_none());
    let chars: Vec<char> = out.chars().collect();
    for e in body["entities"].as_array().expect("entities") {
        assert!(e.get("text").is_none(), "the original is never echoed: {e}");
        let (s, t) = (
            e["output_start"].as_u64().unwrap() as usize,
            e["output_end"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            chars[s..t].iter().collect::<String>(),
            e["replacement"].as_str().unwrap()
        );
        assert!(e["canonical_label"].is_string() && e["hipaa_class"].is_string());
    }
    let counted: u64 = body["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(counted, body["num_entities_redacted"].as_u64().unwrap());
    assert!(
        body["metadata"]["safety_sweep"]["spans_added"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn safe_harbor_generalizes_ages_zips_and_dates() {
    let (status, body) = deid(json!({ "text": NOTE, "policy": "HIPAA-Safe-Harbor" })).await;
    assert_eq!(status, 200, "{body}");
    let out = text(&body);
    assert!(out.contains("a 90+ y/o"), "{out}");
    assert!(out.contains("MA 021."), "{out}");
    // 1931 shows an age over 89: Safe Harbor puts it in one "or earlier" category.
    let oldest = chrono::Datelike::year(&chrono::Utc::now()) - 90;
    assert!(
        out.contains(&format!("DOB {oldest} or earlier,")) && out.contains("Seen 2021."),
        "{out}"
    );
    for p in PLANTED {
        assert!(!out.contains(p), "{p} leaked: {out}");
    }
    assert_eq!(body["policy"], "hipaa_safe_harbor");
    assert_eq!(body["metadata"]["safety_sweep"]["enabled"], true);
    let (_, body) = deid(json!({ "text": "A 45 y/o woman from ZIP 03601.", "policy": "hipaa_safe_harbor", "use_safety_sweep": false })).await;
    assert_eq!(text(&body), "A 45 y/o woman from ZIP 000.");
    assert!(
        body["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "safety_sweep_forced")
    );
}

#[tokio::test]
async fn safety_sweep_adds_what_the_model_cannot_see() {
    let t = "Follow-up on 03/15/2021, MRN: 4829173.";
    let (_, off) = deid(json!({ "text": t, "use_safety_sweep": false })).await;
    assert!(
        text(&off).contains("03/15/2021"),
        "the model has no date label: {off}"
    );
    let (_, on) = deid(json!({ "text": t })).await;
    assert_eq!(
        text(&on),
        "Follow-up on [DATE], MRN: [MEDICAL_RECORD_NUMBER]."
    );
    let e = &on["entities"][0];
    assert_eq!(
        (e["source"].as_str(), e["pattern"].as_str()),
        (Some("pattern"), Some("date_numeric"))
    );
}

#[tokio::test]
async fn replace_with_mapping_restores_the_input_exactly() {
    let (status, body) =
        deid(json!({ "text": NOTE, "method": "replace", "keep_mapping": true })).await;
    assert_eq!(status, 200, "{body}");
    let out = text(&body);
    for p in PLANTED {
        assert!(!holds_whole(out, p), "{p} leaked: {out}");
    }
    assert_eq!(restore(out, &body), NOTE);
    let reps: Vec<&str> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["replacement"].as_str())
        .collect();
    assert!(
        reps.iter().all(|r| !r.starts_with('[')),
        "every kind here has a surrogate: {reps:?}"
    );
}

#[tokio::test]
async fn same_original_same_surrogate_and_numbered_placeholders() {
    let t = "Ann Lee met Bob Stone. Later Ann Lee called.";
    let (_, body) = deid(json!({ "text": t, "method": "replace" })).await;
    let reps: Vec<(String, String)> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["canonical_label"].as_str().unwrap().to_string(),
                e["replacement"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Given name + surname are joined into one NAME span.
    let names: Vec<_> = reps
        .iter()
        .filter(|(l, _)| l == "NAME")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(names.len(), 3, "{reps:?}");
    assert_eq!(names[0], names[2], "Ann Lee twice, one surrogate: {reps:?}");
    assert_ne!(names[0], names[1]);
    let (_, body) = deid(json!({ "text": t, "keep_mapping": true })).await;
    let out = text(&body);
    assert_eq!(out, "[NAME] met [NAME_2]. Later [NAME] called.");
    assert_eq!(body["mapping"]["[NAME_2]"], "Bob Stone");
    assert_eq!(restore(out, &body), t);
}

#[tokio::test]
async fn hash_is_keyed_per_request_without_a_secret() {
    let t = "Call 617-555-0143.";
    let (_, a) = deid(json!({ "text": t, "method": "hash" })).await;
    let (_, b) = deid(json!({ "text": t, "method": "hash" })).await;
    let h = |b: &Value| {
        b["entities"][0]["replacement"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(h(&a).starts_with("PHONE_") && h(&a).len() == 6 + 16, "{a}");
    assert_ne!(h(&a), h(&b), "no secret key: a fresh key per request");
    assert!(
        a["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "per_request_key")
    );
}

#[tokio::test]
async fn a_secret_key_makes_pseudonyms_stable_across_requests() {
    let s = common::start(|s| s.deid_secret_key = Some("a long test secret, never logged".into()));
    let t = "Patient John Smith, phone 617-555-0143.";
    let req = json!({ "text": t, "policy": "gdpr_pseudonymization" });
    let (_, a) = s.post("/pii/deidentify", &req).await;
    let (_, b) = s.post("/pii/deidentify", &req).await;
    assert_eq!(text(&a), text(&b));
    assert_eq!(a["method"], "replace");
    assert!(
        a["mapping"].is_object(),
        "the policy keeps the mapping: {a}"
    );
    assert!(!a.to_string().contains("never logged"));
}

#[tokio::test]
async fn shift_dates_moves_dates_in_their_own_format() {
    let t = "Admitted 03/15/2021, discharged March 20, 2021; MRN: 4829173.";
    let (status, body) =
        deid(json!({ "text": t, "shift_dates": true, "date_shift_days": 30 })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        text(&body),
        "Admitted 04/14/2021, discharged April 19, 2021; MRN: [MEDICAL_RECORD_NUMBER]."
    );
    assert_eq!(body["method"], "shift_dates");
    let (_, body) = deid(
        json!({ "text": t, "method": "shift_dates", "date_shift_days": 300, "keep_year": true }),
    )
    .await;
    assert!(
        text(&body).starts_with("Admitted 01/09/2021, discharged January 14, 2021"),
        "{body}"
    );
}

#[tokio::test]
async fn contradictions_are_422_with_the_field() {
    let cases = [
        (
            json!({ "text": "x", "shift_dates": false, "method": "shift_dates" }),
            "shift_dates",
        ),
        (
            json!({ "text": "x", "shift_dates": true, "method": "hash" }),
            "method",
        ),
        (
            json!({ "text": "x", "date_shift_days": 5 }),
            "date_shift_days",
        ),
        (
            json!({ "text": "x", "method": "shift_dates", "date_shift_days": 0 }),
            "date_shift_days",
        ),
        (
            json!({ "text": "x", "method": "shift_dates", "date_shift_days": 99999 }),
            "date_shift_days",
        ),
        (
            json!({ "text": "x", "policy": "strict", "method": "replace" }),
            "method",
        ),
        (
            json!({ "text": "x", "policy": "hipaa_safe_harbor", "shift_dates": true }),
            "method",
        ),
        (json!({ "text": "x", "policy": "no_such_policy" }), "policy"),
    ];
    for (req, field) in cases {
        let (status, body) = deid(req.clone()).await;
        assert_eq!(status, 422, "{req}: {body}");
        assert_eq!(
            body["detail"][0]["loc"],
            json!(["body", field]),
            "{req}: {body}"
        );
    }
    let (_, body) = deid(json!({ "text": "x", "policy": "no_such_policy" })).await;
    let allowed = &body["detail"][0]["ctx"]["allowed"];
    assert_eq!(allowed.as_array().map(Vec::len), Some(5), "{body}");
    assert!(
        !body.to_string().contains("no_such_policy"),
        "the caller's value is not echoed"
    );
}

#[tokio::test]
async fn offsets_are_code_points_with_non_ascii_text() {
    let t = "Zoë Ångström — café owner — phone 617-555-0143, seen 3rd of May 2021.";
    let (_, body) = deid(json!({ "text": t })).await;
    let input: Vec<char> = t.chars().collect();
    let out: Vec<char> = text(&body).chars().collect();
    for e in body["entities"].as_array().unwrap() {
        let (s, t2) = (
            e["start"].as_u64().unwrap() as usize,
            e["end"].as_u64().unwrap() as usize,
        );
        assert!(t2 <= input.len() && s < t2);
        let (os, ot) = (
            e["output_start"].as_u64().unwrap() as usize,
            e["output_end"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            out[os..ot].iter().collect::<String>(),
            e["replacement"].as_str().unwrap()
        );
    }
    let o = text(&body);
    assert!(
        !o.contains("617-555-0143") && !o.contains("3rd of May 2021"),
        "{o}"
    );
    assert!(o.contains("café owner"));
}
