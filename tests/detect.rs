//! /pii/extract and /analyze over HTTP with the real model.

mod common;

use serde_json::json;

const EXAMPLE: &str = "Patient John Smith, phone (617) 555-0143, email john.smith@example.com";

#[tokio::test]
async fn extract_finds_name_phone_and_email_with_exact_offsets() {
    let s = common::server();
    let (status, body) = s.post("/pii/extract", &json!({ "text": EXAMPLE })).await;
    assert_eq!(status, 200, "{body}");
    let got = common::entities(EXAMPLE, &body);
    let want = [
        // The model tags "John" and "Smith"; smart merging joins them inside the name that
        // the recognizers see after "Patient".
        ("John Smith", "NAME", 8, 18),
        ("(617) 555-0143", "PHONE", 26, 40),
        ("john.smith@example.com", "EMAIL", 48, 70),
    ];
    let want: Vec<(String, String, usize, usize)> = want
        .iter()
        .map(|(t, l, s, e)| (t.to_string(), l.to_string(), *s, *e))
        .collect();
    assert_eq!(got, want);
    assert_eq!(body["entities"][0]["canonical_label"], "NAME");
    assert_eq!(body["entities"][0]["source"], "model+pattern");
    assert_eq!(body["entities"][1]["hipaa_class"], "D_TELEPHONE");
    assert_eq!(body["model_name"], "nationaldesignstudio/rampart");
    assert!(body["warnings"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn offsets_are_code_points_of_the_exact_input() {
    let s = common::server();
    let text = "  😀 Ünïcode note 🏥\n\nPatient John Smith, phone (617) 555-0143.  ";
    let (status, body) = s.post("/pii/extract", &json!({ "text": text })).await;
    assert_eq!(status, 200);
    let got = common::entities(text, &body);
    assert!(
        got.iter().any(|(t, _, _, _)| t == "(617) 555-0143"),
        "{got:?}"
    );
    assert!(got.iter().any(|(t, _, _, _)| t == "John Smith"), "{got:?}");
}

#[tokio::test]
async fn threshold_filters_and_smart_merging_is_honoured() {
    let s = common::server();
    let (_, all) = s
        .post(
            "/pii/extract",
            &json!({ "text": EXAMPLE, "confidence_threshold": 0.0 }),
        )
        .await;
    let (_, none) = s
        .post(
            "/pii/extract",
            &json!({ "text": EXAMPLE, "confidence_threshold": 1.0 }),
        )
        .await;
    assert!(!all["entities"].as_array().unwrap().is_empty());
    assert!(none["entities"].as_array().unwrap().is_empty());
    let (status, body) = s
        .post(
            "/pii/extract",
            &json!({ "text": EXAMPLE, "use_smart_merging": false }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["metadata"]["use_smart_merging"], false);
}

#[tokio::test]
async fn uncovered_language_is_a_warning_not_silence() {
    let s = common::server();
    let text = "Le patient Jean Dupont, téléphone 01 23 45 67 89.";
    let (status, body) = s
        .post("/pii/extract", &json!({ "text": text, "lang": "fr" }))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["warnings"][0]["code"], "language_not_covered");
    assert_eq!(body["metadata"]["lang"], "fr");
    let (status, _) = s
        .post("/pii/extract", &json!({ "text": text, "lang": "xx" }))
        .await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn accent_normalization_keeps_original_offsets() {
    let s = common::server();
    let text = "Paciente José Müller, teléfono (617) 555-0143.";
    for normalize in [true, false] {
        let (status, body) = s
            .post(
                "/pii/extract",
                &json!({ "text": text, "normalize_accents": normalize }),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(body["metadata"]["normalize_accents"], normalize);
        let got = common::entities(text, &body);
        assert!(
            got.iter().any(|(t, _, _, _)| t == "(617) 555-0143"),
            "{got:?}"
        );
    }
    // null with lang=es: on by default.
    let (_, body) = s
        .post("/pii/extract", &json!({ "text": text, "lang": "es" }))
        .await;
    assert_eq!(body["metadata"]["normalize_accents"], true);
}

/// A 20,000-character note with an identifier planted on every window boundary: each is found
/// whole with the right offsets.
#[tokio::test]
async fn long_note_identifiers_on_window_boundaries_are_found_whole() {
    let s = common::server();
    // Fill without sentence ends, so windows are cut by token count and land anywhere.
    let filler = "the patient reported mild discomfort and was advised rest and fluids and ";
    let phones = [
        "(617) 555-0143",
        "(212) 555-0199",
        "(415) 555-0123",
        "(303) 555-0188",
        "(646) 555-0177",
        "(718) 555-0166",
        "(305) 555-0155",
        "(202) 555-0144",
        "(512) 555-0133",
        "(617) 555-0122",
    ];
    let mut text = String::new();
    let mut planted = Vec::new();
    let mut k = 0;
    // Plant every ~500 characters (≈ 100 tokens: close to each 96-token window stride), then
    // sweep the phase so identifiers straddle boundaries at every offset.
    while text.chars().count() < 20_000 {
        let target = (k + 1) * 480 + (k * 37) % 120;
        while text.chars().count() < target {
            text.push_str(filler);
        }
        // Phones: the identifier this model finds most reliably, so a miss can only be the windowing.
        let ident = phones[k % phones.len()].to_string();
        text.push_str("call ");
        let start = text.chars().count();
        text.push_str(&ident);
        planted.push((ident.clone(), start, start + ident.chars().count()));
        text.push_str(" today and ");
        k += 1;
    }
    assert!(text.chars().count() >= 20_000);
    let (status, body) = s.post("/pii/extract", &json!({ "text": text })).await;
    assert_eq!(status, 200);
    assert!(
        body["metadata"]["windows"].as_u64().unwrap() > 40,
        "{}",
        body["metadata"]
    );
    let got = common::entities(&text, &body);
    for (ident, start, end) in &planted {
        assert!(
            got.iter()
                .any(|(t, _, s, e)| t == ident && s == start && e == end),
            "{ident} at {start}..{end} not found whole; near: {:?}",
            got.iter()
                .filter(|(_, _, s, e)| s < end && e > start)
                .collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn analyze_strategies_and_grouping() {
    let s = common::server();
    let text = "Aisha Okafor lives at 12 Baker Street, Boston MA 02115.";
    for strategy in ["simple", "first", "average", "max"] {
        let (status, body) = s
            .post(
                "/analyze",
                &json!({ "text": text, "aggregation_strategy": strategy }),
            )
            .await;
        assert_eq!(status, 200, "{strategy}: {body}");
        assert_eq!(body["metadata"]["aggregation_strategy"], strategy);
        let got = common::entities(text, &body);
        assert!(
            got.iter()
                .any(|(t, l, _, _)| t == "Aisha" && l == "GIVEN_NAME"),
            "{strategy}: {got:?}"
        );
        assert!(
            got.iter()
                .any(|(t, l, _, _)| t == "02115" && l == "ZIP_CODE"),
            "{strategy}: {got:?}"
        );
    }
    let (_, body) = s
        .post(
            "/analyze",
            &json!({ "text": text, "confidence_threshold": 1.0 }),
        )
        .await;
    assert!(body["entities"].as_array().unwrap().is_empty());
    let (_, body) = s
        .post(
            "/analyze",
            &json!({ "text": text, "use_fast_tokenizer": false, "sentence_clean": true }),
        )
        .await;
    assert_eq!(body["warnings"][0]["code"], "slow_tokenizer_unavailable");
    assert_eq!(body["metadata"]["sentence_clean"], true);
    // Default model is a setting: the response names it.
    assert_eq!(body["model_name"], "nationaldesignstudio/rampart");
}

#[tokio::test]
async fn sentence_detection_changes_windowing_not_results() {
    let s = common::server();
    let sentence = "Dr. Lee saw the patient today. Call John Smith at (617) 555-0143. ";
    let text = sentence.repeat(30);
    let (_, on) = s
        .post(
            "/analyze",
            &json!({ "text": text, "sentence_detection": true }),
        )
        .await;
    let (_, off) = s
        .post(
            "/analyze",
            &json!({ "text": text, "sentence_detection": false }),
        )
        .await;
    assert!(on["metadata"]["sentences"].as_u64().unwrap() >= 60);
    assert_eq!(off["metadata"]["sentences"], 1);
    let phones = |b: &serde_json::Value| {
        common::entities(&text, b)
            .into_iter()
            .filter(|(t, _, _, _)| t.contains("555-0143"))
            .count()
    };
    assert_eq!(phones(&on), 30);
}

#[tokio::test]
async fn unknown_model_is_404_listing_installed() {
    let s = common::server();
    let (status, body) = s
        .post(
            "/analyze",
            &json!({ "text": "x", "model_name": "disease_detection_superclinical" }),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "model_not_found");
    assert!(
        body["error"]["details"]["installed"]
            .as_array()
            .unwrap()
            .contains(&json!("nationaldesignstudio/rampart"))
    );
    let (status, _) = s
        .post(
            "/analyze",
            &json!({ "text": "x", "model_name": "../../etc" }),
        )
        .await;
    assert_eq!(status, 422);
}
