//! Request validation for every request type of the interface, over HTTP: 422 with every
//! violation and its `loc`, never echoing caller text; malformed JSON and wrong content types;
//! routes a later issue builds answer 501 after validation.

mod common;

use serde_json::{Value, json};

const SECRET: &str = "Jane Q. Patient 555-12-3456";

fn locs(body: &Value) -> Vec<String> {
    body["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("not a validation error: {body}"))
        .iter()
        .map(|d| {
            d["loc"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().map(String::from).unwrap_or(l.to_string()))
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect()
}

fn types(body: &Value) -> Vec<String> {
    body["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["type"].as_str().unwrap().to_string())
        .collect()
}

/// (route, minimal valid body, a body that breaks every kind of rule with its expected locs).
fn cases() -> Vec<(&'static str, Value, Value, Vec<&'static str>)> {
    vec![
        (
            "/analyze",
            json!({ "text": "x" }),
            json!({ "aggregation_strategy": "none", "confidence_threshold": 1.5, "group_entities": "yes",
                    "sentence_language": "xx", "keep_alive": -5, "bogus": SECRET }),
            vec![
                "body.text",
                "body.aggregation_strategy",
                "body.confidence_threshold",
                "body.group_entities",
                "body.sentence_language",
                "body.keep_alive",
                "body.bogus",
            ],
        ),
        (
            "/pii/extract",
            json!({ "text": "x" }),
            json!({ "text": 5, "confidence_threshold": -0.1, "lang": "klingon", "normalize_accents": "no", "use_smart_merging": null }),
            vec![
                "body.text",
                "body.confidence_threshold",
                "body.lang",
                "body.normalize_accents",
                "body.use_smart_merging",
            ],
        ),
        (
            "/pii/extract/stream",
            json!({ "text": "x" }),
            json!({ "text": "x", "chunk_size": 0, "max_entity_chars": 0, "tokenizer_context_chars": -1, "window_chars": 63, "include_text": 1 }),
            vec![
                "body.chunk_size",
                "body.max_entity_chars",
                "body.tokenizer_context_chars",
                "body.window_chars",
                "body.include_text",
            ],
        ),
        (
            "/pii/deidentify",
            json!({ "text": "x" }),
            json!({ "text": "x", "method": "shred", "date_shift_days": 1.5, "keep_mapping": "true", "policy": 3, "shift_dates": "y" }),
            vec![
                "body.method",
                "body.date_shift_days",
                "body.keep_mapping",
                "body.policy",
                "body.shift_dates",
            ],
        ),
        (
            "/pii/deidentify/stream",
            json!({ "text": "x" }),
            json!({ "text": "x", "chunk_size": 40000, "keep_year": 0 }),
            vec!["body.chunk_size", "body.keep_year"],
        ),
        (
            "/jobs",
            json!({ "documents": [{ "text": "x" }] }),
            json!({ "documents": [{ "id": 3 }, "x"], "webhook": { "url": "http://h", "max_attempts": 11, "backoff_seconds": 61, "extra": 1 } }),
            vec![
                "body.documents.0.text",
                "body.documents.0.id",
                "body.documents.1",
                "body.webhook.secret",
                "body.webhook.max_attempts",
                "body.webhook.backoff_seconds",
                "body.webhook.extra",
            ],
        ),
        (
            "/privacy-gateway/complete",
            json!({ "text": "x" }),
            json!({ "text": "x", "detector_confidence_floor": 2, "disallowed_entity_categories": ["a", 1], "policy": null }),
            vec![
                "body.detector_confidence_floor",
                "body.disallowed_entity_categories.1",
                "body.policy",
            ],
        ),
        (
            "/models/unload",
            json!({ "all": true }),
            json!({ "all": "yes", "model_name": 1 }),
            vec!["body.all", "body.model_name"],
        ),
        (
            "/omop/load",
            json!({ "records_jsonl": "{\"note_id\":1,\"person_id\":1,\"note_date\":\"2024-01-01\"}" }),
            json!({ "validate_constraints": 1, "vocabulary_version": 5 }),
            vec![
                "body.records_jsonl",
                "body.validate_constraints",
                "body.vocabulary_version",
            ],
        ),
        (
            "/cohort/resolve",
            json!({ "phenotype": { "id": "p", "name": "P",
                        "concept_sets": [{ "id": "s", "vocabulary": "SNOMED", "concept_ids": [1] }],
                        "expression": { "operator": "criterion", "criterion": { "id": "c", "concept_set": "s" } } },
                    "records_jsonl": "{\"note_id\":1,\"person_id\":1,\"note_date\":\"2024-01-01\"}" }),
            json!({ "phenotype": [], "records_jsonl": "{}", "concept_ancestors": [{ "ancestor_concept_id": 0, "descendant_concept_id": "1" }] }),
            vec![
                "body.phenotype",
                "body.concept_ancestors.0.ancestor_concept_id",
                "body.concept_ancestors.0.descendant_concept_id",
            ],
        ),
        (
            "/fhir/smart-backend/ingestions",
            json!({ "fhir_base_url": "http://127.0.0.1:1/fhir", "token_url": "http://127.0.0.1:1/token", "client_id": "c",
                    "private_key_pem": "k", "output_dir": "/tmp/o" }),
            json!({ "fhir_base_url": "u", "token_url": "u", "client_id": "c", "private_key_pem": SECRET,
                    "max_inflight_downloads": 0, "poll_interval_seconds": -1, "request_timeout_seconds": 0, "method": "x" }),
            vec![
                "body.output_dir",
                "body.max_inflight_downloads",
                "body.method",
                "body.poll_interval_seconds",
                "body.request_timeout_seconds",
            ],
        ),
        (
            "/v1/decisions",
            json!({ "mode": "fixed_choice", "input_text": "x", "options": ["a", "b"] }),
            json!({ "mode": "guess", "options": "a", "timeout_ms": 0, "schema_version": "1.0", "compatibility_policy": "any" }),
            vec![
                "body.mode",
                "body.input_text",
                "body.options",
                "body.timeout_ms",
                "body.schema_version",
                "body.compatibility_policy",
            ],
        ),
        (
            "/v1/decisions/batch",
            json!({ "requests": [{ "mode": "scalar_score", "input_text": "x" }] }),
            json!({ "requests": [] }),
            vec!["body.requests"],
        ),
    ]
}

#[tokio::test]
async fn every_route_lists_every_violation_with_its_loc() {
    let s = common::server();
    for (route, _, bad, want) in cases() {
        let (status, body) = s.post(route, &bad).await;
        assert_eq!(status, 422, "{route}: {body}");
        let mut got = locs(&body);
        let mut want: Vec<String> = want.into_iter().map(String::from).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{route}");
        assert!(
            !body.to_string().contains("Jane"),
            "{route} echoed caller text: {body}"
        );
    }
}

#[tokio::test]
async fn valid_requests_pass_validation() {
    let s = common::server();
    for (route, good, _, _) in cases() {
        let (status, body) = s.post(route, &good).await;
        match route {
            "/analyze"
            | "/pii/extract"
            | "/pii/deidentify"
            | "/models/unload"
            | "/pii/extract/stream"
            | "/pii/deidentify/stream" => {
                assert_eq!(status, 200, "{route}: {body}")
            }
            "/jobs" => assert_eq!(status, 202, "{route}: {body}"),
            "/omop/load" | "/cohort/resolve" => assert_eq!(status, 200, "{route}: {body}"),
            "/v1/decisions" => assert_eq!(body["autonomous_action"], false, "{route}: {body}"),
            "/v1/decisions/batch" => {
                assert_eq!(
                    body["results"][0]["state"], "unsupported",
                    "{route}: {body}"
                )
            }
            // The schema passes; what only a real export can check (a usable key, an output
            // folder inside the configured root, the secret key) answers 422 by field. The
            // whole flow runs in tests/fhir_ingest.rs against a local Bulk Data server.
            "/fhir/smart-backend/ingestions" => {
                assert_eq!(status, 422, "{route}: {body}");
                for v in body["detail"].as_array().expect("detail") {
                    let field = v["loc"][1].as_str().unwrap_or_default();
                    assert!(
                        ["private_key_pem", "output_dir", "method"].contains(&field),
                        "{route}: {body}"
                    );
                }
            }
            // The shared test server has no upstream configured.
            "/privacy-gateway/complete" => {
                assert_eq!(status, 503, "{route}: {body}");
                assert_eq!(body["error"]["code"], "gateway_not_configured");
            }
            _ => {
                assert_eq!(status, 501, "{route}: {body}");
                assert_eq!(body["error"]["code"], "not_implemented");
                assert!(body["error"]["request_id"].is_string());
            }
        }
    }
    let (status, body) = s.get("/jobs/abc").await;
    assert_eq!(status, 404, "{body}");
    for path in [
        "/fhir/smart-backend/ingestions/abc",
        "/fhir/smart-backend/ingestions/abc/summary",
    ] {
        let (status, body) = s.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"]["code"], "ingestion_not_found");
    }
}

#[tokio::test]
async fn violation_types_follow_the_interface() {
    let s = common::server();
    let (_, body) = s
        .post(
            "/analyze",
            &json!({ "aggregation_strategy": "none", "confidence_threshold": 2, "x": 1 }),
        )
        .await;
    assert_eq!(
        types(&body),
        vec![
            "missing",
            "literal_error",
            "less_than_equal",
            "extra_forbidden"
        ]
    );
    assert_eq!(body["detail"][2]["ctx"]["le"], 1.0);
    let (_, body) = s.post("/pii/extract", &json!({ "text": "" })).await;
    assert_eq!(types(&body), vec!["string_too_short"]);
    let (status, body) = s.post("/pii/extract", &json!([SECRET])).await;
    assert_eq!(status, 422);
    assert_eq!(locs(&body), vec!["body"]);
    assert!(!body.to_string().contains("Jane"));
}

#[tokio::test]
async fn keep_alive_accepts_every_documented_form() {
    let s = common::server();
    for ka in [
        json!(30),
        json!(1.5),
        json!("30"),
        json!("500ms"),
        json!("5m"),
        json!("1h30m"),
        json!(-1),
        json!("forever"),
        json!(null),
    ] {
        let (status, body) = s
            .post("/pii/extract", &json!({ "text": "x", "keep_alive": ka }))
            .await;
        assert_eq!(status, 200, "{ka}: {body}");
    }
    for ka in [json!(-2), json!("soon"), json!(true), json!([1]), json!({})] {
        let (status, body) = s
            .post("/pii/extract", &json!({ "text": "x", "keep_alive": ka }))
            .await;
        assert_eq!(status, 422, "{ka}: {body}");
        assert_eq!(locs(&body), vec!["body.keep_alive"]);
    }
}

#[tokio::test]
async fn malformed_json_wrong_content_type_and_empty_body() {
    let s = common::server();
    let c = common::client();
    let r = c
        .post(s.url("/pii/extract"))
        .header("content-type", "application/json")
        .body(format!("{{\"text\": \"{SECRET}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(types(&body), vec!["json_invalid"]);
    assert!(!body.to_string().contains("Jane"));

    let r = c
        .post(s.url("/pii/extract"))
        .header("content-type", "text/plain")
        .body("{\"text\":\"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unsupported_media_type");

    let r = c.post(s.url("/pii/extract")).send().await.unwrap();
    assert_eq!(r.status(), 415);

    let r = c
        .post(s.url("/models/unload"))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422, "the unload body is required");
    let (status, body) = s.post("/models/unload", &json!({})).await;
    assert_eq!(
        (status, locs(&body)),
        (422, vec!["body".to_string()]),
        "one of all, model_name"
    );

    let r = c
        .post(s.url("/pii/extract"))
        .header("content-type", "application/json; charset=utf-8")
        .body("{\"text\":\"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn unknown_routes_and_methods_use_the_envelope_and_echo_request_ids() {
    let s = common::server();
    let c = common::client();
    let r = c
        .get(s.url("/nope"))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], "abc-123");
    let r = c.get(s.url("/pii/extract")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert!(r.headers().contains_key("x-request-id"));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
}

#[test]
fn oversized_bodies_get_413() {
    use std::io::{Read, Write};
    let s = common::server();
    let host = s.base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    // Declares 17 MiB (over the 16 MiB default) and sends none of it: refused before reading.
    write!(conn, "POST /pii/extract HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", 17 * 1024 * 1024).unwrap();
    let mut reply = String::new();
    let _ = conn.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("payload_too_large"));
}

/// A request that runs past `SERVICE_REQUEST_TIMEOUT_SECONDS` is answered 504 `timeout`, and
/// the service goes on serving.
#[tokio::test]
async fn slow_requests_get_504() {
    let s = common::start(|s| s.request_timeout_seconds = 0.05);
    let text = "Patient Jane Doe was seen at Mercy Hospital on 01/02/2020. ".repeat(400);
    let (status, body) = s.post("/pii/extract", &json!({ "text": text })).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "timeout");
    assert_eq!(body["error"]["details"]["timeout_seconds"], 0.05);
    assert!(!body.to_string().contains("Jane"));
    let (status, _) = s.get("/livez").await;
    assert_eq!(status, 200);
}

/// `/metrics` is Prometheus text whose labels are route templates, methods and statuses,
/// never paths or caller data.
#[tokio::test]
async fn metrics_count_by_route_template() {
    let s = common::server();
    s.post("/pii/extract", &json!({ "text": "Call 617-555-0199" }))
        .await;
    s.get("/jobs/4c0ffee-caller-supplied-id").await;
    let r = reqwest::get(s.url("/metrics")).await.expect("metrics");
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = r.text().await.expect("text");
    for family in [
        "phiflow_http_requests_total",
        "phiflow_http_request_duration_seconds_bucket",
        "phiflow_inference_batches_total",
        "phiflow_inference_batch_size_bucket",
        "phiflow_inference_batch_padding_ratio_bucket",
        "phiflow_model_loads_total",
        "phiflow_models_resident",
        "phiflow_jobs_total",
        "phiflow_build_info",
    ] {
        assert!(text.contains(family), "{family} missing");
    }
    assert!(text.contains(r#"route="/pii/extract",method="POST",status="200""#));
    assert!(text.contains(r#"route="/jobs/{job_id}",method="GET",status="404""#));
    assert!(!text.contains("caller-supplied") && !text.contains("617-555"));
}
