//! POST /privacy-gateway/complete against a local OpenAI-compatible chat completions server
//! written here (axum on 127.0.0.1): it records every body it receives and answers by a
//! keyword in the prompt — echo, mangle a placeholder, invent one, stall, fail, or answer junk.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

type Received = Arc<Mutex<Vec<String>>>;

/// Records each request's headers (all but `authorization`, checked on its own) and body.
async fn chat(State(received): State<Received>, headers: HeaderMap, body: String) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert_eq!(
        auth, "Bearer sk-test-secret",
        "the upstream's own credential is sent"
    );
    let shown: Vec<String> = headers
        .iter()
        .filter(|(k, _)| k.as_str() != "authorization")
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("")))
        .collect();
    received
        .lock()
        .unwrap()
        .push(format!("{}\n\n{body}", shown.join("\n")));
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    let prompt = v["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let reply = |content: String| {
        Json(json!({
            "id": "chatcmpl-test", "object": "chat.completion", "model": v["model"],
            "choices": [{ "index": 0, "finish_reason": "stop",
                "message": { "role": "assistant", "content": content } }],
        }))
        .into_response()
    };
    let first_placeholder = || {
        let start = prompt.find("<<PHI_").unwrap_or(0);
        let end = prompt[start..]
            .find(">>")
            .map_or(prompt.len(), |e| start + e + 2);
        prompt[start..end].to_string()
    };
    if prompt.contains("MODE_MANGLE") {
        let p = first_placeholder();
        reply(prompt.replace(&p, &p[..p.len() - 1]))
    } else if prompt.contains("MODE_INVENT") {
        let p = first_placeholder();
        let invented = format!("{}999999>>", &p[..p.len() - 8]);
        reply(format!("{prompt} Also {invented}."))
    } else if prompt.contains("MODE_SLOW") {
        tokio::time::sleep(Duration::from_secs(5)).await;
        reply(prompt)
    } else if prompt.contains("MODE_FAIL") {
        (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response()
    } else if prompt.contains("MODE_JUNK") {
        (StatusCode::OK, "not json").into_response()
    } else {
        reply(format!("Summary: {prompt}"))
    }
}

struct Fixture {
    server: common::Server,
    received: Received,
    audit: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let received: Received = Arc::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let state = received.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let app = axum::Router::new()
                    .route("/v1/chat/completions", axum::routing::post(chat))
                    .with_state(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        let audit = common::temp_dir("gateway-audit").join("audit.jsonl");
        let path = audit.clone();
        let server = common::start(move |s| {
            s.gateway_url = Some(format!("http://{addr}/v1/chat/completions"));
            s.gateway_model = "test-model".into();
            s.gateway_api_key = Some("sk-test-secret".into());
            s.gateway_timeout_seconds = 1.0;
            s.gateway_audit_log = Some(path);
        });
        Fixture {
            server,
            received,
            audit,
        }
    })
}

const NOTE: &str = "Patient John Smith, phone (617) 555-0143, email john.smith@example.com.";
const IDENTIFIERS: [&str; 5] = [
    "John",
    "Smith",
    "555-0143",
    "john.smith@example.com",
    "John-Smith",
];

fn request(mode: &str) -> Value {
    json!({ "text": format!("{mode}: {NOTE}"), "confidence_threshold": 0.5 })
}

fn reason(body: &Value) -> &str {
    body["error"]["details"]["reason"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn the_endpoint_sees_placeholders_and_the_caller_gets_the_originals_back() {
    let f = fixture();
    let (status, r) = f
        .server
        .post("/privacy-gateway/complete", &request("MODE_ECHO"))
        .await;
    assert_eq!(status, 200, "{r}");
    let prompt = r["redacted_prompt"].as_str().unwrap();
    for id in IDENTIFIERS {
        assert!(!prompt.contains(id), "{id} left in the prompt");
    }
    assert!(prompt.contains("<<PHI_"));
    assert_eq!(
        r["reidentified_text"].as_str().unwrap(),
        format!("Summary: MODE_ECHO: {NOTE}")
    );
    assert_eq!(
        r["external_response"].as_str().unwrap(),
        format!("Summary: {prompt}")
    );
    assert!(
        r["entity_counts"]
            .as_object()
            .is_some_and(|c| !c.is_empty())
    );
    assert_eq!(r["upstream"]["model"], "test-model");
    assert_eq!(r["audit"]["record_hash"].as_str().map(str::len), Some(64));
    // Tests share the endpoint: find this request's body by its placeholder tag.
    let tag = &prompt[prompt.find("<<PHI_").unwrap()..prompt.find(">>").unwrap()];
    let mine = f
        .received
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.contains(tag))
        .cloned()
        .unwrap();
    assert!(mine.contains("x-request-id: "));
    let sent: Value = serde_json::from_str(mine.split("\n\n").nth(1).unwrap()).unwrap();
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["messages"][0]["content"].as_str(), Some(prompt));
}

#[tokio::test]
async fn every_failure_is_closed_with_its_reason() {
    let f = fixture();
    let cases = [
        (request("MODE_MANGLE"), 400, "mangled_placeholder"),
        (request("MODE_INVENT"), 400, "unknown_placeholder"),
        (request("MODE_SLOW"), 502, "transport_timeout"),
        (request("MODE_FAIL"), 502, "transport_failed"),
        (request("MODE_JUNK"), 502, "invalid_transport_response"),
    ];
    for (body, status, want) in cases {
        let (got, r) = f.server.post("/privacy-gateway/complete", &body).await;
        assert_eq!((got, reason(&r)), (status, want), "{r}");
        for id in IDENTIFIERS {
            assert!(!r.to_string().contains(id), "{want}: {id} in the error");
        }
    }
    // Blocked before anything is sent.
    let before = f.received.lock().unwrap().len();
    let blocked = [
        (
            json!({ "text": NOTE, "confidence_threshold": 1.0 }),
            "redaction_confidence_below_threshold",
        ),
        (
            json!({ "text": NOTE, "confidence_threshold": 0.5, "disallowed_entity_categories": ["b-email"] }),
            "disallowed_entity_category",
        ),
    ];
    for (body, want) in blocked {
        let (got, r) = f.server.post("/privacy-gateway/complete", &body).await;
        assert_eq!((got, reason(&r)), (400, want), "{r}");
        assert_eq!(r["error"]["code"], "gateway_blocked");
    }
    assert_eq!(
        f.received.lock().unwrap().len(),
        before,
        "a blocked prompt was sent"
    );
    let (got, r) = f
        .server
        .post(
            "/privacy-gateway/complete",
            &json!({ "text": NOTE, "policy": "strict; drop table" }),
        )
        .await;
    assert_eq!(
        (got, r["detail"][0]["loc"].clone()),
        (422, json!(["body", "policy"]))
    );
}

#[tokio::test]
async fn no_identifier_reaches_the_endpoint_or_the_audit_log() {
    let f = fixture();
    let (status, _) = f
        .server
        .post("/privacy-gateway/complete", &request("MODE_ECHO"))
        .await;
    assert_eq!(status, 200);
    for body in f.received.lock().unwrap().iter() {
        for id in IDENTIFIERS {
            assert!(!body.contains(id), "{id} reached the endpoint");
        }
        assert!(!body.contains("sk-test-secret"));
    }
    let (records, _) = phiflow::gateway::audit::verify(&f.audit).expect("an unbroken chain");
    assert!(records >= 1);
    let log = std::fs::read_to_string(&f.audit).unwrap();
    for id in IDENTIFIERS {
        assert!(!log.contains(id), "{id} in the audit log");
    }
    assert!(log.contains("\"status\":\"forwarded\""));
    let metrics = common::client()
        .get(f.server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.lines().any(|l| l
            .starts_with("phiflow_gateway_requests_total{outcome=\"forwarded\"}")
            && !l.ends_with(" 0")),
        "forwarded requests are counted"
    );
}

#[tokio::test]
async fn without_an_endpoint_the_gateway_is_503() {
    let s = common::server();
    let (status, r) = s
        .post("/privacy-gateway/complete", &json!({ "text": NOTE }))
        .await;
    assert_eq!(
        (status, r["error"]["code"].as_str()),
        (503, Some("gateway_not_configured"))
    );
    assert_eq!(reason(&r), "missing_external_endpoint");
}
