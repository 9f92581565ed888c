//! Durable jobs over HTTP with the real model: the job record and results, validation, a
//! webhook receiver that fails twice before accepting (this test's own small HTTP server on
//! 127.0.0.1 that checks the Standard Webhooks signature), and a crash test that kills the real
//! `phiflow serve` process with SIGKILL mid-job, restarts it on the same database and checks
//! every document was done exactly once.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

fn server() -> &'static common::Server {
    static S: OnceLock<common::Server> = OnceLock::new();
    S.get_or_init(|| common::start(|_| {}))
}

fn notes(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "Patient Ann Lee{} (MRN {}) was seen on 03/{:02}/2021 by Dr. Rossi. \
                 Call 617-555-{:04} or write ann{i}@example.org. Plan: continue metformin.",
                ["", " Jr."][i % 2],
                4_829_100 + i,
                1 + i % 28,
                1000 + i
            )
        })
        .collect()
}

async fn wait_for(base: &common::Server, id: &str, until: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let (status, job) = base.get(&format!("/jobs/{id}")).await;
        assert_eq!(status, 200, "{job}");
        if until.contains(&job["status"].as_str().unwrap_or("")) {
            return job;
        }
        assert!(Instant::now() < deadline, "job never finished: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn results(base: &str, id: &str) -> Vec<Value> {
    let r = common::client()
        .get(format!("{base}/jobs/{id}/results"))
        .send()
        .await
        .expect("results");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    r.text()
        .await
        .expect("body")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_deidentifies_every_document_like_the_route() {
    let texts = notes(6);
    let documents: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| json!({ "text": t, "id": if i == 0 { json!("  first ") } else { Value::Null } }))
        .collect();
    let (status, job) = server()
        .post(
            "/jobs",
            &json!({ "documents": documents, "method": "mask" }),
        )
        .await;
    assert_eq!(status, 202, "{job}");
    assert_eq!(job["status"], "queued");
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    assert_eq!(job["status_url"], format!("/jobs/{id}"));
    let done = wait_for(server(), &id, &["succeeded", "failed"]).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["processed_count"], 6);
    assert_eq!(done["failed_count"], 0);
    assert_eq!(done["progress_percent"], 100.0);
    assert_eq!(done["documents"][0]["id"], "first");
    assert_eq!(done["documents"][1]["id"], "1");
    assert!(done["label_histogram"]["PHONE"].as_u64().unwrap() >= 6);
    for key in ["created_at", "started_at", "completed_at", "expires_at"] {
        assert!(done[key].as_str().unwrap().ends_with('Z'), "{key}");
    }
    // The record never holds text.
    let record = done.to_string();
    for t in &texts {
        assert!(!record.contains(&t[..20]));
    }
    assert!(!record.contains("617-555"));
    let lines = results(&server().base, &id).await;
    assert_eq!(lines.len(), 6);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["index"], i);
        assert_eq!(line["status"], "done");
        let (status, one_shot) = server()
            .post(
                "/pii/deidentify",
                &json!({ "text": texts[i], "method": "mask" }),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(line["deidentified_text"], one_shot["deidentified_text"]);
        assert_eq!(line["entities"], one_shot["entities"]);
    }
    // Cancelling a finished job changes nothing; unknown ids are 404.
    let r = common::client()
        .delete(server().url(&format!("/jobs/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    for path in [
        "/jobs/nope",
        "/jobs/0123456789abcdef0123456789abcdef/results",
    ] {
        let (status, err) = server().get(path).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(err["error"]["code"], "job_not_found");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_jobs_are_refused_with_the_field_location() {
    let doc = json!([{ "text": "Ann Lee" }]);
    for (body, loc) in [
        (json!({ "documents": [] }), json!(["body", "documents"])),
        (
            json!({ "documents": [{ "text": "" }] }),
            json!(["body", "documents", 0, "text"]),
        ),
        (
            json!({ "documents": doc, "webhook": { "url": "ftp://127.0.0.1/x", "secret": "s" } }),
            json!(["body", "webhook", "url"]),
        ),
        (
            json!({ "documents": doc, "webhook": { "url": "http://u:p@127.0.0.1/x", "secret": "s" } }),
            json!(["body", "webhook", "url"]),
        ),
        (
            json!({ "documents": doc, "webhook": { "url": "http://127.0.0.1/x", "secret": " " } }),
            json!(["body", "webhook", "secret"]),
        ),
        (
            json!({ "documents": doc, "webhook": { "url": "http://127.0.0.1/x", "secret": "s", "max_attempts": 11 } }),
            json!(["body", "webhook", "max_attempts"]),
        ),
        (
            json!({ "documents": doc, "date_shift_days": 3 }),
            json!(["body", "date_shift_days"]),
        ),
        (
            json!({ "documents": doc, "policy": "nope" }),
            json!(["body", "policy"]),
        ),
    ] {
        let (status, err) = server().post("/jobs", &body).await;
        assert_eq!(status, 422, "{body} → {err}");
        let locs: Vec<&Value> = err["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &d["loc"])
            .collect();
        assert!(locs.contains(&&loc), "{body} → {err}");
        assert!(!err.to_string().contains("Ann Lee"));
    }
    let (status, err) = server()
        .post(
            "/jobs",
            &json!({ "documents": doc, "model_name": "nope/missing" }),
        )
        .await;
    assert_eq!(status, 404, "{err}");
}

/// What the receiver saw: (webhook-id, webhook-timestamp, signature, body) per attempt.
type Seen = Arc<Mutex<Vec<(String, String, String, String)>>>;

/// A Standard Webhooks receiver on 127.0.0.1 answering 500, 500, then 204.
async fn receiver() -> (String, Seen) {
    use axum::http::{HeaderMap, StatusCode};
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let s = s.clone();
            async move {
                let h = |k: &str| {
                    headers
                        .get(k)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string()
                };
                let mut seen = s.lock().unwrap();
                seen.push((
                    h("webhook-id"),
                    h("webhook-timestamp"),
                    h("webhook-signature"),
                    body,
                ));
                if seen.len() <= 2 {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_webhook_is_retried_and_signed() {
    let (url, seen) = receiver().await;
    let key = b"a shared secret of 32 bytes!!!!!";
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    );
    let (status, job) = server()
        .post(
            "/jobs",
            &json!({
                "documents": [{ "text": notes(1)[0] }],
                "webhook": { "url": url, "secret": secret, "max_attempts": 4, "backoff_seconds": 0.05 },
            }),
        )
        .await;
    assert_eq!(status, 202, "{job}");
    assert!(!job.to_string().contains(&secret) && !job.to_string().contains(&url));
    assert!(
        job["webhook"]["url_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let id = job["id"].as_str().unwrap().to_string();
    wait_for(server(), &id, &["succeeded"]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        let (_, job) = server().get(&format!("/jobs/{id}")).await;
        if job["webhook_delivery"]["state"] != "pending" && !job["webhook_delivery"].is_null() {
            break job;
        }
        assert!(Instant::now() < deadline, "delivery never finished: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let d = &job["webhook_delivery"];
    assert_eq!(d["state"], "delivered", "{job}");
    assert_eq!(d["attempts"], 3);
    assert_eq!(d["status_code"], 204);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for (msg_id, ts, sig, body) in &seen {
        assert_eq!(msg_id, &seen[0].0, "one webhook-id across retries");
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
        mac.update(format!("{msg_id}.{ts}.{body}").as_bytes());
        let expected =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(sig, &format!("v1,{expected}"));
        let payload: Value = serde_json::from_str(body).unwrap();
        assert_eq!(payload["type"], "job.succeeded");
        assert_eq!(payload["data"]["job_id"], id.as_str());
        assert!(!body.contains("Ann Lee") && !body.contains("617-555"));
    }
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_service(data_dir: &std::path::Path, port: u16) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", data_dir)
        .env("SERVICE_JOBS_DOC_CONCURRENCY", "2")
        .env("SERVICE_JOBS_WORKERS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("phiflow serve");
    let base = format!("http://127.0.0.1:{port}");
    common::wait_ready(&base);
    Proc(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_survives_kill_9_and_completes_exactly_once() {
    let data = common::temp_dir("crash");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = common::Server {
        base: format!("http://127.0.0.1:{port}"),
    };
    let n = 60;
    let texts: Vec<String> = notes(n).iter().map(|t| t.repeat(3)).collect();
    let docs: Vec<Value> = texts.iter().map(|t| json!({ "text": t })).collect();
    let mut service = spawn_service(&data, port);
    let (status, job) = base.post("/jobs", &json!({ "documents": docs })).await;
    assert_eq!(status, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    // Kill with SIGKILL once some, but not all, documents are done.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, j) = base.get(&format!("/jobs/{id}")).await;
        let done = j["processed_count"].as_u64().unwrap_or(0);
        if done >= 3 {
            assert!(
                done < n as u64,
                "the job finished before the kill; make it longer"
            );
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    service.0.kill().expect("SIGKILL");
    service.0.wait().expect("reaped");
    drop(service);
    let _service = spawn_service(&data, port);
    let done = wait_for(&base, &id, &["succeeded", "failed"]).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["processed_count"], n);
    let lines = results(&base.base, &id).await;
    let indices: Vec<u64> = lines.iter().map(|l| l["index"].as_u64().unwrap()).collect();
    assert_eq!(
        indices,
        (0..n as u64).collect::<Vec<_>>(),
        "every document exactly once"
    );
    assert!(lines.iter().all(|l| l["status"] == "done"));
    // Source text is purged once processed.
    let db = rusqlite::Connection::open(data.join("jobs.sqlite")).unwrap();
    let left: i64 = db
        .query_row(
            "SELECT count(*) FROM documents WHERE text IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}
