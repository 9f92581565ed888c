//! `/openapi.json` checked by a real OpenAPI validator (openapi-spec-validator, installed by
//! scripts/fetch-assets into `.assets/tools/venv`), every route of the interface present in it,
//! real responses validated against its response schemas (with the validator's jsonschema), and
//! the `/docs` and `/redoc` pages with their locally served scripts.

mod common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn python() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".assets/tools/venv/bin/python");
    assert!(
        venv.exists(),
        "the OpenAPI validator is missing: run scripts/fetch-assets"
    );
    venv
}

async fn fetch(path: &str) -> reqwest::Response {
    reqwest::get(common::server().url(path))
        .await
        .expect("request")
}

#[tokio::test]
async fn document_passes_the_openapi_validator_and_lists_every_route() {
    let r = fetch("/openapi.json").await;
    assert_eq!(r.status(), 200);
    let doc: Value = r.json().await.expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "2.1.0");

    let file = common::temp_dir("openapi").join("openapi.json");
    std::fs::write(&file, doc.to_string()).expect("write");
    let out = Command::new(python())
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .expect("run the validator");
    assert!(
        out.status.success(),
        "openapi-spec-validator: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The interface's section 4, plus the routes it mentions elsewhere.
    for (method, path) in [
        ("post", "/analyze"),
        ("post", "/pii/extract"),
        ("post", "/pii/extract/stream"),
        ("post", "/pii/deidentify"),
        ("post", "/pii/deidentify/stream"),
        ("post", "/jobs"),
        ("get", "/jobs/{job_id}"),
        ("post", "/privacy-gateway/complete"),
        ("post", "/omop/load"),
        ("post", "/cohort/resolve"),
        ("post", "/fhir/smart-backend/ingestions"),
        ("get", "/fhir/smart-backend/ingestions/{job_id}"),
        ("get", "/fhir/smart-backend/ingestions/{job_id}/summary"),
        ("get", "/models/loaded"),
        ("post", "/models/unload"),
        ("get", "/health"),
        ("get", "/livez"),
        ("get", "/readyz"),
        ("post", "/v1/decisions"),
        ("post", "/v1/decisions/batch"),
        ("get", "/metrics"),
        ("get", "/openapi.json"),
        ("get", "/docs"),
        ("get", "/redoc"),
    ] {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} missing");
        assert!(op["responses"].is_object(), "{method} {path} responses");
    }
    // Errors are documented with examples, 422 as HTTPValidationError.
    let e422 = &doc["components"]["responses"]["422"]["content"]["application/json"];
    assert_eq!(
        e422["schema"]["$ref"],
        "#/components/schemas/HTTPValidationError"
    );
    assert_eq!(e422["example"]["detail"][0]["loc"], json!(["body", "text"]));
    assert_eq!(
        doc["paths"]["/pii/extract"]["post"]["security"][0]["apiKeyHeader"],
        json!(["pii:read"])
    );
}

/// Real responses, each checked against the schema the document gives for it.
#[tokio::test]
async fn real_responses_match_their_schemas() {
    let server = common::server();
    let note = "Pt John Smith (MRN 483920) seen 03/14/2024; call 617-555-0199.";
    let mut samples: Vec<(String, Value)> = Vec::new();
    for (path, body, schema) in [
        ("/analyze", json!({ "text": note }), "AnalyzeResponse"),
        (
            "/pii/extract",
            json!({ "text": note }),
            "PIIExtractResponse",
        ),
        (
            "/pii/deidentify",
            json!({ "text": note, "keep_mapping": true }),
            "PIIDeidentifyResponse",
        ),
        ("/pii/extract", json!({ "txt": 1 }), "HTTPValidationError"),
        (
            "/pii/extract",
            json!({ "text": note, "model_name": "no/such-model" }),
            "ErrorEnvelope",
        ),
        ("/jobs", json!({ "documents": [{ "text": note }] }), "Job"),
    ] {
        let (_, v) = server.post(path, &body).await;
        samples.push((schema.into(), v));
    }
    for (path, schema) in [
        ("/models/loaded", "ModelsLoaded"),
        ("/health", "Health"),
        ("/livez", "Livez"),
        ("/readyz", "Readyz"),
        ("/jobs/unknown", "ErrorEnvelope"),
    ] {
        samples.push((schema.into(), fetch(path).await.json().await.expect("json")));
    }
    for (path, body, schema) in [
        (
            "/pii/extract/stream",
            json!({ "text": note }),
            "ExtractStreamRecord",
        ),
        (
            "/pii/deidentify/stream",
            json!({ "text": note, "chunk_size": 8 }),
            "DeidentifyStreamRecord",
        ),
    ] {
        let text = reqwest::Client::new()
            .post(server.url(path))
            .json(&body)
            .send()
            .await
            .expect("stream")
            .text()
            .await
            .expect("body");
        for line in text.lines() {
            samples.push((schema.into(), serde_json::from_str(line).expect("ndjson")));
        }
    }
    let doc: Value = fetch("/openapi.json").await.json().await.expect("json");
    // The documented request examples of the OMOP routes, answered for real.
    for (path, schema) in [
        ("/omop/load", "OmopLoadReport"),
        ("/cohort/resolve", "CohortResult"),
        ("/v1/decisions", "DecisionResult"),
        ("/v1/decisions/batch", "DecisionBatchResponse"),
    ] {
        let example =
            &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"];
        let (status, v) = server.post(path, example).await;
        assert_eq!(status, 200, "{path}: {v}");
        samples.push((schema.into(), v));
    }
    let dir = common::temp_dir("openapi-responses");
    std::fs::write(dir.join("doc.json"), doc.to_string()).expect("write");
    std::fs::write(dir.join("samples.json"), json!(samples).to_string()).expect("write");
    let script = r##"
import json, sys
from jsonschema import Draft202012Validator
doc = json.load(open(sys.argv[1]))
bad = []
for name, instance in json.load(open(sys.argv[2])):
    schema = dict(doc, **{"$ref": "#/components/schemas/" + name})
    for e in Draft202012Validator(schema).iter_errors(instance):
        bad.append(f"{name}: {list(e.absolute_path)}: {e.message[:200]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"##;
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(dir.join("doc.json"))
        .arg(dir.join("samples.json"))
        .output()
        .expect("run jsonschema");
    assert!(
        out.status.success(),
        "responses do not match the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn documentation_pages_load_their_scripts_locally() {
    for (page, assets) in [
        (
            "/docs",
            &[
                "docs/assets/swagger-ui-bundle.js",
                "docs/assets/swagger-ui.css",
            ][..],
        ),
        ("/redoc", &["docs/assets/redoc.standalone.js"][..]),
    ] {
        let r = fetch(page).await;
        assert_eq!(r.status(), 200);
        let html = r.text().await.expect("html");
        assert!(
            !html.contains("://"),
            "{page} must not load anything remote"
        );
        assert!(html.contains("openapi.json"));
        for asset in assets {
            assert!(html.contains(asset), "{page} references {asset}");
            let r = fetch(&format!("/{asset}")).await;
            assert_eq!(r.status(), 200, "{asset}");
            assert!(r.bytes().await.expect("asset").len() > 1000, "{asset}");
        }
    }
    assert_eq!(fetch("/docs/assets/../Cargo.toml").await.status(), 404);
    assert_eq!(fetch("/docs/assets/other.js").await.status(), 404);
}

#[tokio::test]
async fn documentation_pages_send_a_content_security_policy() {
    for page in ["/docs", "/redoc"] {
        let r = fetch(page).await;
        assert_eq!(r.status(), 200);
        let csp = r
            .headers()
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{page} has no Content-Security-Policy"))
            .to_string();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{page}: {csp} lacks {directive}");
        }
        assert!(
            !csp.contains("script-src 'self' 'unsafe-inline'"),
            "{page}: inline scripts must stay forbidden"
        );
        let html = r.text().await.expect("html");
        // No inline script: every <script> loads a file of this origin.
        assert_eq!(
            html.matches("<script").count(),
            html.matches("<script src=\"docs/assets/").count(),
            "{page} has an inline script"
        );
    }
    let init = fetch("/docs/assets/swagger-init.js").await;
    assert_eq!(init.status(), 200);
    assert!(init.text().await.expect("js").contains("SwaggerUIBundle"));
}

/// Where the server is stricter than a field's type (patterns, dependent fields, one-of
/// pairs), the document says so: a body the server refuses with a 422 on a field is invalid
/// by the document too, and bodies both accept stay valid.
#[tokio::test]
async fn the_document_refuses_what_the_server_refuses() {
    let server = common::server();
    let doc: Value = fetch("/openapi.json").await.json().await.expect("json");
    let cohort = doc["paths"]["/cohort/resolve"]["post"]["requestBody"]["content"]
        ["application/json"]["example"]
        .clone();
    let mut cohort_both = cohort.clone();
    cohort_both["circe"] = json!({});
    let mut cohort_neither = cohort.clone();
    if let Some(o) = cohort_neither.as_object_mut() {
        o.remove("records_jsonl");
        o.remove("load_id");
    }
    let hook = |url: &str, secret: &str| json!({ "documents": [{ "text": "x" }], "webhook": { "url": url, "secret": secret } });
    let decision = |extra: Value| {
        let mut d = json!({ "mode": "fixed_choice", "input_text": "x", "options": ["a", "b"] });
        for (k, v) in extra.as_object().expect("object") {
            d[k] = v.clone();
        }
        d
    };
    // (route, request schema, body, the server's 422 or not)
    let cases: Vec<(&str, &str, Value, bool)> = vec![
        (
            "/pii/extract",
            "PIIExtractRequest",
            json!({ "text": "x", "model_name": "../etc" }),
            true,
        ),
        (
            "/pii/extract",
            "PIIExtractRequest",
            json!({ "text": "x", "model_name": "a/b/c" }),
            true,
        ),
        (
            "/pii/extract",
            "PIIExtractRequest",
            json!({ "text": "x", "model_name": "no/such-model" }),
            false,
        ),
        (
            "/privacy-gateway/complete",
            "PrivacyGatewayRequest",
            json!({ "text": "x", "policy": "no spaces" }),
            true,
        ),
        (
            "/jobs",
            "DeidentifyJobRequest",
            hook("ftp://example.org/h", "s"),
            true,
        ),
        (
            "/jobs",
            "DeidentifyJobRequest",
            hook("http://user:pw@127.0.0.1/h", "s"),
            true,
        ),
        (
            "/jobs",
            "DeidentifyJobRequest",
            hook("http://127.0.0.1:9/h", "   "),
            true,
        ),
        (
            "/models/unload",
            "ModelUnloadRequest",
            json!({ "all": false }),
            true,
        ),
        (
            "/models/unload",
            "ModelUnloadRequest",
            json!({ "model_name": " " }),
            true,
        ),
        (
            "/pii/deidentify",
            "PIIDeidentifyRequest",
            json!({ "text": "x", "date_shift_days": 3 }),
            true,
        ),
        (
            "/pii/deidentify",
            "PIIDeidentifyRequest",
            json!({ "text": "x", "method": "shift_dates", "date_shift_days": 0 }),
            true,
        ),
        (
            "/pii/deidentify",
            "PIIDeidentifyRequest",
            json!({ "text": "x", "shift_dates": true, "method": "mask" }),
            true,
        ),
        (
            "/pii/deidentify",
            "PIIDeidentifyRequest",
            json!({ "text": "x", "method": "shift_dates", "date_shift_days": 3 }),
            false,
        ),
        (
            "/pii/deidentify",
            "PIIDeidentifyRequest",
            json!({ "text": "x", "shift_dates": true, "date_shift_days": -2 }),
            false,
        ),
        ("/cohort/resolve", "CohortResolveRequest", cohort_both, true),
        (
            "/cohort/resolve",
            "CohortResolveRequest",
            cohort_neither,
            true,
        ),
        (
            "/cohort/resolve",
            "CohortResolveRequest",
            json!({ "phenotype": {}, "load_id": "omop-XYZ" }),
            true,
        ),
        ("/cohort/resolve", "CohortResolveRequest", cohort, false),
        (
            "/v1/decisions",
            "DecisionRequest",
            decision(json!({ "schema_version": "01.0.0" })),
            true,
        ),
        (
            "/v1/decisions",
            "DecisionRequest",
            decision(json!({ "schema_version": "1.0.0-rc.1" })),
            false,
        ),
        (
            "/v1/decisions",
            "DecisionRequest",
            decision(json!({ "options": ["a", "b".repeat(300)] })),
            true,
        ),
    ];
    let mut samples = Vec::new();
    for (route, schema, body, refused) in &cases {
        let (status, answer) = server.post(route, body).await;
        if *refused {
            assert_eq!(status, 422, "{route} {body}: {answer}");
        } else {
            assert_ne!(status, 422, "{route} {body}: {answer}");
        }
        samples.push(json!([schema, body, !refused]));
    }
    let dir = common::temp_dir("openapi-requests");
    std::fs::write(dir.join("doc.json"), doc.to_string()).expect("write");
    std::fs::write(dir.join("cases.json"), json!(samples).to_string()).expect("write");
    let script = r##"
import json, sys
from jsonschema import Draft202012Validator
doc = json.load(open(sys.argv[1]))
bad = []
for name, instance, valid in json.load(open(sys.argv[2])):
    schema = dict(doc, **{"$ref": "#/components/schemas/" + name})
    ok = Draft202012Validator(schema).is_valid(instance)
    if ok != valid:
        bad.append(f"{name}: document says {'valid' if ok else 'invalid'}: {json.dumps(instance)[:200]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"##;
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(dir.join("doc.json"))
        .arg(dir.join("cases.json"))
        .output()
        .expect("run jsonschema");
    assert!(
        out.status.success(),
        "the document and the server disagree:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
