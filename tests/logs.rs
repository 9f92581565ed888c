//! The logs of a run full of PHI and credentials contain none of them: the real binary with
//! JSON logs at debug level, authentication on, and requests that succeed, fail validation,
//! fail authentication, stream and queue jobs. Logs may hold lengths, counts and ids only.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

const SECRETS: &[&str] = &[
    "Zebulon Quackenbush",
    "Quackenbush",
    "483920117",
    "617-555-0199",
    "078-05-1120",
    "zebulon.q@example.org",
    "Bellweather Memorial",
    "key-never-logged-91c2",
    "tok.never.logged",
    "whsec_neverlogged",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_never_contain_caller_text_or_credentials() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let key = "key-never-logged-91c2";
    let digest = phiflow::digest::sha256_hex(key.as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", common::temp_dir("logs"))
        .env("SERVICE_LOG", "debug")
        .env("SERVICE_LOG_JSON", "true")
        .env("SERVICE_AUTH_ENABLED", "true")
        .env(
            "SERVICE_AUTH_API_KEYS",
            json!([{ "id": "ops", "key_hash": format!("sha256:{digest}"), "scopes": ["*"] }])
                .to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("phiflow serve");
    let base = format!("http://127.0.0.1:{port}");
    common::wait_ready(&base);
    let note = "Zebulon Quackenbush (MRN 483920117, SSN 078-05-1120) was admitted to Bellweather \
                Memorial; call 617-555-0199 or write zebulon.q@example.org.";
    let client = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value, auth: Option<(&str, String)>| {
        let mut r = client.post(format!("{base}{path}")).json(&body);
        if let Some((h, v)) = auth {
            r = r.header(h, v);
        }
        r.send()
    };
    let good = || Some(("x-api-key", key.to_string()));
    let mut statuses = Vec::new();
    for (path, body) in [
        ("/pii/extract", json!({ "text": note })),
        (
            "/pii/deidentify",
            json!({ "text": note, "keep_mapping": true }),
        ),
        ("/analyze", json!({ "text": note })),
        (
            "/pii/extract/stream",
            json!({ "text": note, "chunk_size": 7 }),
        ),
        (
            "/pii/deidentify/stream",
            json!({ "text": note, "chunk_size": 9 }),
        ),
        ("/pii/extract", json!({ "text": note, "lang": note })),
        ("/pii/extract", json!({ "text": note, "model_name": note })),
        ("/pii/extract", json!({ note: note })),
        (
            "/jobs",
            json!({ "documents": [{ "id": note, "text": note }],
                    "webhook": { "url": "http://127.0.0.1:9/hook", "secret": "whsec_neverlogged" } }),
        ),
        (
            "/v1/decisions",
            json!({ "mode": "fixed_choice", "input_text": note, "options": [note, "b"] }),
        ),
    ] {
        let r = post(path, body, good()).await.expect("request");
        statuses.push(r.status().as_u16());
        let _ = r.bytes().await;
    }
    for bad in [
        ("x-api-key", "483920117".to_string()),
        ("authorization", "Bearer tok.never.logged".to_string()),
        ("authorization", format!("ApiKey {note}")),
    ] {
        let r = post("/pii/extract", json!({ "text": note }), Some(bad))
            .await
            .expect("request");
        assert_eq!(r.status(), 401);
    }
    assert!(
        statuses.contains(&200) && statuses.contains(&422),
        "{statuses:?}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _ = child.kill();
    let _ = child.wait();
    let mut logs = String::new();
    for pipe in [
        child.stderr.take().map(|mut p| {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        }),
        child.stdout.take().map(|mut p| {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        }),
    ]
    .into_iter()
    .flatten()
    {
        logs.push_str(&pipe);
    }
    assert!(
        logs.contains("\"request\""),
        "the access log is there: {logs:.2000}"
    );
    for secret in SECRETS {
        assert!(!logs.contains(secret), "the logs contain {secret:?}");
    }
    assert!(!logs.contains(&digest), "the logs contain the key's digest");
}
