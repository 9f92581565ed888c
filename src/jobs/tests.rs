use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::Semaphore;

use super::*;

/// Uppercases text and labels NAME per document plus DATE when it has a
/// digit; texts with "street" become `[ADDRESS]`. `fail:` texts fail,
/// `gate:` texts wait for a permit, `block:` texts never finish (unless
/// `block` is false).
struct TestProc {
    calls: Mutex<Vec<String>>,
    gate: Arc<Semaphore>,
    block: bool,
}

impl TestProc {
    fn new(block: bool) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(Vec::new()),
            gate: Arc::new(Semaphore::new(0)),
            block,
        })
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Processor for TestProc {
    fn process(&self, _options: &Value, text: String) -> BoxFut<Result<ProcessedDoc, DocError>> {
        self.calls.lock().unwrap().push(text.clone());
        let gate = Arc::clone(&self.gate);
        let block = self.block;
        Box::pin(async move {
            if text.starts_with("fail:") {
                return Err(DocError {
                    code: "bad_doc".into(),
                    message: "rejected".into(),
                });
            }
            if text.starts_with("gate:") {
                gate.acquire().await.unwrap().forget();
            }
            if block && text.starts_with("block:") {
                std::future::pending::<()>().await;
            }
            if text.contains("street") {
                return Ok(ProcessedDoc {
                    text: "[ADDRESS]".into(),
                    entities: json!([{ "label": "ADDRESS", "start": 0, "end": 9 }]),
                    labels: vec!["ADDRESS".into()],
                });
            }
            let mut labels = vec!["NAME".to_owned()];
            if text.chars().any(|c| c.is_ascii_digit()) {
                labels.push("DATE".to_owned());
            }
            Ok(ProcessedDoc {
                text: text.to_uppercase(),
                entities: json!([{ "label": "NAME", "start": 0, "end": 1 }]),
                labels,
            })
        })
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("jobs-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("sub").join("jobs.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A long note (beyond one 4 KiB page, so stored in overflow pages): once it
/// is purged, only `secure_delete` stops its bytes lingering in freed pages.
fn long_note() -> String {
    "lives at 12 main street, springfield. ".repeat(200)
}

fn settings(db: &Path) -> JobSettings {
    JobSettings::new(db)
}

fn docs(texts: &[&str]) -> Vec<NewDocument> {
    texts
        .iter()
        .map(|t| NewDocument {
            id: None,
            text: (*t).to_owned(),
        })
        .collect()
}

fn job(texts: &[&str]) -> NewJob {
    NewJob {
        options: json!({ "mode": "mask" }),
        documents: docs(texts),
        webhook: None,
    }
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().unwrap().to_owned()
}

/// Polls the record until `done` holds (10 s limit).
async fn wait_for(jobs: &Jobs, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..1000 {
        if let Some(r) = jobs.get(id).unwrap()
            && done(&r)
        {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached: {:?}", jobs.get(id).unwrap());
}

fn terminal(r: &Value) -> bool {
    matches!(
        r["status"].as_str(),
        Some("succeeded" | "failed" | "cancelled")
    )
}

fn raw(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).unwrap()
}

fn count(db: &Path, sql: &str) -> i64 {
    raw(db).query_row(sql, [], |r| r.get(0)).unwrap()
}

fn all_lines(jobs: &Jobs, id: &str) -> Vec<Value> {
    let mut pages = jobs.results(id).unwrap().unwrap();
    let mut lines = Vec::new();
    while let Some(page) = pages.next_page().unwrap() {
        lines.extend(page);
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_succeeds_with_counts_histogram_and_purged_text() {
    let dir = TempDir::new();
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let note = long_note();
    let mut new = job(&["alice smith", "bob on 2020-01-02", "carol", &note]);
    new.documents[0].id = Some("  a  ".into());
    new.documents[1].id = Some("   ".into());
    let rec = jobs.submit(new).unwrap();
    assert_eq!(rec["status"], "queued");
    assert_eq!(rec["id"].as_str().unwrap().len(), 32);
    assert_eq!(rec["status_url"], format!("/jobs/{}", id_of(&rec)));
    let id = id_of(&rec);

    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["document_count"], 4);
    assert_eq!(r["processed_count"], 4);
    assert_eq!(r["failed_count"], 0);
    assert_eq!(r["progress_percent"], 100.0);
    assert_eq!(
        r["label_histogram"],
        json!({ "ADDRESS": 1, "DATE": 1, "NAME": 3 })
    );
    assert_eq!(r["error"], Value::Null);
    assert_eq!(r["webhook"], Value::Null);
    let ids: Vec<&str> = r["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "1", "2", "3"]);
    assert_eq!(r["documents"][0]["length"], 11);
    assert_eq!(r["documents"][0]["status"], "done");
    assert_eq!(r["documents"][0]["text_hash"], sha256_tag(b"alice smith"));
    for key in ["created_at", "started_at", "completed_at", "expires_at"] {
        let t = r[key].as_str().unwrap();
        assert!(t.ends_with('Z') && t.len() == 20, "{key}: {t}");
    }
    let text = r.to_string();
    assert!(!text.contains("alice") && !text.contains("ALICE"));

    // Source text is purged in the database itself.
    let db = dir.db();
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM documents WHERE text IS NOT NULL"),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM documents WHERE result_text IS NOT NULL"
        ),
        4
    );
    jobs.shutdown(Duration::from_secs(1)).await;
    drop(jobs);
    // Shutdown checkpoints the WAL; thanks to secure_delete the (shrunk) row
    // left no trace of the source text in the file.
    let wal = std::fs::metadata(db.with_extension("db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0);
    let bytes = std::fs::read(&db).unwrap();
    assert!(!bytes.windows(11).any(|w| w == b"main street"));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&seal::key_path(&db)), 0o600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_in_index_order_and_paged() {
    let dir = TempDir::new();
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let texts: Vec<String> = (0..150).map(|i| format!("doc {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let id = id_of(&jobs.submit(job(&refs)).unwrap());
    wait_for(&jobs, &id, terminal).await;

    let mut pages = jobs.results(&id).unwrap().unwrap();
    let mut sizes = Vec::new();
    let mut lines = Vec::new();
    while let Some(page) = pages.next_page().unwrap() {
        sizes.push(page.len());
        lines.extend(page);
    }
    assert_eq!(sizes, [64, 64, 22]);
    assert!(pages.next_page().unwrap().is_none());
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["index"], i);
        assert_eq!(line["id"], i.to_string());
        assert_eq!(line["status"], "done");
        assert_eq!(line["deidentified_text"], format!("DOC {i}"));
        assert_eq!(line["entities"][0]["label"], "NAME");
    }
    assert!(jobs.results("nope").unwrap().is_none());
    assert!(jobs.get("nope").unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_documents_fail_the_job() {
    let dir = TempDir::new();
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let id = id_of(
        &jobs
            .submit(job(&["ok one", "fail: secret text", "ok two"]))
            .unwrap(),
    );
    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "failed");
    assert_eq!(r["processed_count"], 2);
    assert_eq!(r["failed_count"], 1);
    assert_eq!(
        r["error"],
        json!({ "code": "documents_failed", "message": "1 of 3 documents failed" })
    );
    assert_eq!(r["documents"][1]["status"], "failed");
    let lines = all_lines(&jobs, &id);
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[1],
        json!({ "index": 1, "id": "1", "status": "failed",
                "error": { "code": "bad_doc", "message": "rejected" } })
    );
    assert_eq!(
        count(
            &dir.db(),
            "SELECT COUNT(*) FROM documents WHERE text IS NOT NULL"
        ),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_job_succeeds() {
    let dir = TempDir::new();
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let id = id_of(&jobs.submit(job(&[])).unwrap());
    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["progress_percent"], 100.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_resumes_pending_without_redoing_done_documents() {
    let dir = TempDir::new();
    let db = dir.db();
    let first = TestProc::new(true);
    let jobs = Jobs::open(settings(&db), first.clone()).unwrap();
    let id = id_of(
        &jobs
            .submit(job(&["one", "block: two", "three", "block: four"]))
            .unwrap(),
    );
    let r = wait_for(&jobs, &id, |r| r["processed_count"] == 2).await;
    assert_eq!(r["status"], "running");
    jobs.shutdown(Duration::from_millis(50)).await;
    drop(jobs);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM documents WHERE status = 'pending' AND text IS NOT NULL"
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM documents WHERE status = 'done' AND text IS NULL"
        ),
        2
    );

    let second = TestProc::new(false);
    let jobs = Jobs::open(settings(&db), second.clone()).unwrap();
    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["processed_count"], 4);
    assert_eq!(r["label_histogram"], json!({ "NAME": 4 }));
    let mut redone = second.calls();
    redone.sort();
    assert_eq!(redone, ["block: four", "block: two"]);
    let texts: Vec<Value> = all_lines(&jobs, &id)
        .into_iter()
        .map(|l| l["deidentified_text"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            json!("ONE"),
            json!("BLOCK: TWO"),
            json!("THREE"),
            json!("BLOCK: FOUR")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_expire() {
    let dir = TempDir::new();
    let mut s = settings(&dir.db());
    s.ttl = Duration::from_millis(300);
    let jobs = Jobs::open(s, TestProc::new(false)).unwrap();
    let id = id_of(&jobs.submit(job(&["x"])).unwrap());
    wait_for(&jobs, &id, terminal).await;
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(jobs.get(&id).unwrap().is_none());
    assert!(jobs.results(&id).unwrap().is_none());
    assert!(jobs.cancel(&id).unwrap().is_none());
    // The sweeper (period 1 s at this ttl) or an explicit sweep deletes it.
    jobs.sweep_expired().unwrap();
    assert_eq!(count(&dir.db(), "SELECT COUNT(*) FROM jobs"), 0);
    assert_eq!(count(&dir.db(), "SELECT COUNT(*) FROM documents"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_purges_pending_and_lets_in_flight_finish() {
    let dir = TempDir::new();
    let mut s = settings(&dir.db());
    s.doc_concurrency = 2;
    let proc = TestProc::new(false);
    let jobs = Jobs::open(s, proc.clone()).unwrap();
    let id = id_of(
        &jobs
            .submit(job(&["gate: a", "gate: b", "c", "d", "e"]))
            .unwrap(),
    );
    wait_for(&jobs, &id, |r| r["status"] == "running").await;
    while proc.calls().len() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let r = jobs.cancel(&id).unwrap().unwrap();
    assert_eq!(r["status"], "cancelled");
    let statuses: Vec<&str> = r["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["pending", "pending", "cancelled", "cancelled", "cancelled"]
    );
    assert_eq!(
        count(
            &dir.db(),
            "SELECT COUNT(*) FROM documents WHERE status = 'cancelled' AND text IS NULL"
        ),
        3
    );
    assert!(r["completed_at"].is_string());

    proc.gate.add_permits(2);
    let r = wait_for(&jobs, &id, |r| r["processed_count"] == 2).await;
    assert_eq!(r["status"], "cancelled");
    assert_eq!(r["progress_percent"], 40.0);
    assert_eq!(all_lines(&jobs, &id).len(), 2);
    assert_eq!(proc.calls().len(), 2);
    // Cancelling again is a no-op; unknown ids are None.
    assert_eq!(jobs.cancel(&id).unwrap().unwrap()["status"], "cancelled");
    assert!(jobs.cancel("unknown").unwrap().is_none());
}

#[test]
fn sign_matches_standard_webhooks_vector() {
    let sig = sign(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        br#"{"test": 2432232314}"#,
    );
    assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    // Non-whsec secrets are used as raw bytes.
    assert_ne!(
        sign("plain", "m", 1, b"{}"),
        sign("whsec_plain", "m", 1, b"{}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_checks() {
    let dir = TempDir::new();
    let mut s = settings(&dir.db());
    s.webhook_allowed_hosts = Some(vec!["Example.org".into(), "*.hooks.test".into()]);
    let jobs = Jobs::open(s, TestProc::new(false)).unwrap();
    let bad = [
        "ftp://example.org/x",
        "https://user:pw@example.org/x",
        "https://user@example.org/x",
        "https://evil.com/x",
        "https://hooks.test/x",
        "not a url",
        "http:///nohost",
    ];
    for url in bad {
        let err = jobs.check_webhook_url(url).unwrap_err();
        assert!(!err.contains("example") && !err.contains("evil"), "{err}");
    }
    assert!(
        jobs.check_webhook_url("https://EXAMPLE.org/hook?x=1")
            .is_ok()
    );
    assert!(
        jobs.check_webhook_url("http://a.b.hooks.test:8080/")
            .is_ok()
    );

    let mut new = job(&["x"]);
    new.webhook = Some(WebhookConfig {
        url: "ftp://example.org/".into(),
        secret: "s".into(),
        max_attempts: 1,
        backoff_seconds: 0.0,
    });
    assert!(matches!(jobs.submit(new), Err(JobError::Invalid(_))));

    let open = Jobs::open(settings(&dir.0.join("other.db")), TestProc::new(false)).unwrap();
    assert!(open.check_webhook_url("http://anything.example:1/").is_ok());
    assert!(
        open.check_webhook_url("https://u:p@anything.example/")
            .is_err()
    );
}

/// Webhook receiver that answers with scripted status codes and records
/// whether each request's signature verified.
struct Receiver {
    secret: String,
    script: Vec<u16>,
    hits: AtomicU32,
    seen: Mutex<Vec<(bool, String, Value)>>,
}

async fn hook(State(rx): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let n = rx.hits.fetch_add(1, Ordering::SeqCst) as usize;
    let header = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (id, ts, sig) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    // Verified independently of `sign`.
    let key = STANDARD
        .decode(rx.secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.").as_bytes());
    mac.update(&body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    let fresh = ts
        .parse::<i64>()
        .is_ok_and(|t| (chrono::Utc::now().timestamp() - t).abs() < 60);
    let ok = sig == expected && fresh && header("content-type") == "application/json";
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    rx.seen.lock().unwrap().push((ok, id, body));
    let code = rx
        .script
        .get(n)
        .or(rx.script.last())
        .copied()
        .unwrap_or(204);
    StatusCode::from_u16(code).unwrap()
}

async fn serve(listener: tokio::net::TcpListener, secret: &str, script: Vec<u16>) -> Arc<Receiver> {
    let rx = Arc::new(Receiver {
        secret: secret.to_owned(),
        script,
        hits: AtomicU32::new(0),
        seen: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(Arc::clone(&rx));
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    rx
}

async fn local_listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    (listener, url)
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn job_with_webhook(url: &str, max_attempts: u32, backoff_seconds: f64) -> NewJob {
    let mut new = job(&["patient jane doe", "seen 2021-03-04"]);
    new.webhook = Some(WebhookConfig {
        url: url.to_owned(),
        secret: SECRET.to_owned(),
        max_attempts,
        backoff_seconds,
    });
    new
}

fn delivery_state(r: &Value) -> &str {
    r["webhook_delivery"]["state"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_retries_then_delivers_signed_events() {
    let dir = TempDir::new();
    let (listener, url) = local_listener().await;
    let rx = serve(listener, SECRET, vec![500, 500, 204]).await;
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let rec = jobs.submit(job_with_webhook(&url, 5, 0.05)).unwrap();
    let id = id_of(&rec);
    assert_eq!(rec["webhook"]["configured"], true);
    assert_eq!(rec["webhook"]["url_hash"], sha256_tag(url.as_bytes()));
    assert_eq!(rec["webhook"]["max_attempts"], 5);

    let r = wait_for(&jobs, &id, |r| delivery_state(r) == "delivered").await;
    let d = &r["webhook_delivery"];
    assert_eq!(d["attempts"], 3);
    assert_eq!(d["status_code"], 204);
    assert_eq!(d["error"], Value::Null);
    assert!(d["delivered_at"].is_string());

    let seen = rx.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|(ok, _, _)| *ok), "signatures must verify");
    let msg_id = format!("msg_{id}_job_succeeded");
    assert!(seen.iter().all(|(_, m, _)| *m == msg_id));
    let body = &seen[2].2;
    assert_eq!(body["type"], "job.succeeded");
    assert_eq!(body["data"]["job_id"], id);
    assert_eq!(body["data"]["processed_count"], 2);
    assert_eq!(
        body["data"]["label_histogram"],
        json!({ "DATE": 1, "NAME": 2 })
    );
    assert_eq!(body["timestamp"], r["completed_at"]);
    assert!(!body.to_string().contains("jane"));

    // Neither the record nor the DB hold the URL or secret in plain text.
    let text = r.to_string();
    assert!(!text.contains(&url) && !text.contains(SECRET));
    jobs.shutdown(Duration::from_secs(1)).await;
    drop(jobs);
    assert_eq!(
        count(
            &dir.db(),
            "SELECT COUNT(*) FROM jobs WHERE webhook_sealed IS NOT NULL"
        ),
        0
    );
    for path in [dir.db(), dir.db().with_extension("db-wal")] {
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(!bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_gives_up_after_max_attempts() {
    let dir = TempDir::new();
    let (listener, url) = local_listener().await;
    let rx = serve(listener, SECRET, vec![500]).await;
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let mut new = job_with_webhook(&url, 2, 0.01);
    new.documents.push(NewDocument {
        id: Some("f".into()),
        text: "fail: x".into(),
    });
    let id = id_of(&jobs.submit(new).unwrap());
    let r = wait_for(&jobs, &id, |r| delivery_state(r) == "failed").await;
    let d = &r["webhook_delivery"];
    assert_eq!(d["attempts"], 2);
    assert_eq!(d["status_code"], 500);
    assert_eq!(d["error"], "http status 500");
    assert_eq!(d["delivered_at"], Value::Null);
    assert_eq!(rx.hits.load(Ordering::SeqCst), 2);
    assert_eq!(rx.seen.lock().unwrap()[0].2["type"], "job.failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_delivery_survives_restart() {
    let dir = TempDir::new();
    // Reserve a port, then close it so the first attempt is refused.
    let (listener, url) = local_listener().await;
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let id = id_of(&jobs.submit(job_with_webhook(&url, 3, 0.2)).unwrap());
    let r = wait_for(&jobs, &id, |r| r["webhook_delivery"]["attempts"] == 1).await;
    assert_eq!(delivery_state(&r), "pending");
    assert_eq!(r["webhook_delivery"]["error"], "connection failed");
    jobs.shutdown(Duration::from_millis(10)).await;
    drop(jobs);

    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let rx = serve(listener, SECRET, vec![204]).await;
    // Same key file, so the sealed config still opens.
    let jobs = Jobs::open(settings(&dir.db()), TestProc::new(false)).unwrap();
    let r = wait_for(&jobs, &id, |r| delivery_state(r) == "delivered").await;
    assert_eq!(r["webhook_delivery"]["attempts"], 2);
    assert_eq!(rx.hits.load(Ordering::SeqCst), 1);
    assert!(rx.seen.lock().unwrap()[0].0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_seal_key_must_be_32_bytes() {
    let dir = TempDir::new();
    let mut s = settings(&dir.db());
    s.seal_key = Some(vec![7; 16]);
    assert!(matches!(
        Jobs::open(s, TestProc::new(false)),
        Err(JobError::Seal(_))
    ));
    let mut s = settings(&dir.db());
    s.seal_key = Some(vec![7; 32]);
    let jobs = Jobs::open(s, TestProc::new(false)).unwrap();
    assert!(!seal::key_path(&dir.db()).exists());
    drop(jobs);
}

/// Every raw file of the store: the database, its WAL and shared-memory index.
fn raw_files_contain(db: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(bytes) = std::fs::read(PathBuf::from(&p))
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            found.push(PathBuf::from(p).display().to_string());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purged_text_is_gone_from_the_raw_files_while_the_store_is_open() {
    let dir = TempDir::new();
    let proc = TestProc::new(false);
    let mut s = settings(&dir.db());
    // One document at a time, so the cancelled ones below are still pending.
    s.doc_concurrency = 1;
    let jobs = Jobs::open(s, proc.clone()).unwrap();
    // Lowercase: the test processor's output is uppercase, so only the source holds these.
    let planted = "zqxplanted7731 jane roe";
    let long = format!("{planted} {}", long_note());
    let id = id_of(&jobs.submit(job(&[planted, &long, planted])).unwrap());
    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "succeeded");
    // No shutdown, no restart: the store is live and the files are read as they are.
    let found = raw_files_contain(&dir.db(), b"zqxplanted7731");
    assert!(found.is_empty(), "purged text readable in {found:?}");
    assert!(raw_files_contain(&dir.db(), b"main street").is_empty());

    // Cancelled documents are purged too.
    let id = id_of(
        &jobs
            .submit(job(&[
                "gate: zqxcancelled5512",
                "zqxcancelled5512 b",
                "zqxcancelled5512 c",
            ]))
            .unwrap(),
    );
    wait_for(&jobs, &id, |r| r["status"] == "running").await;
    jobs.cancel(&id).unwrap().unwrap();
    proc.gate.add_permits(1);
    wait_for(&jobs, &id, |r| r["processed_count"] == 1).await;
    let found = raw_files_contain(&dir.db(), b"zqxcancelled5512");
    assert!(found.is_empty(), "cancelled text readable in {found:?}");
    drop(jobs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_text_resumes_after_restart_and_plain_legacy_rows_still_run() {
    let dir = TempDir::new();
    let proc = TestProc::new(true);
    let jobs = Jobs::open(settings(&dir.db()), proc.clone()).unwrap();
    let id = id_of(&jobs.submit(job(&["block: first", "second"])).unwrap());
    wait_for(&jobs, &id, |r| r["processed_count"] == 1).await;
    jobs.shutdown(Duration::from_millis(50)).await;
    drop(jobs);
    // A row written by an older build holds plain text: it still runs.
    raw(&dir.db())
        .execute(
            "UPDATE documents SET text = 'legacy plain' WHERE job_id = ?1 AND idx = 0",
            [&id],
        )
        .unwrap();
    let proc = TestProc::new(false);
    let jobs = Jobs::open(settings(&dir.db()), proc.clone()).unwrap();
    let r = wait_for(&jobs, &id, terminal).await;
    assert_eq!(r["status"], "succeeded");
    assert_eq!(proc.calls(), vec!["legacy plain".to_string()]);
    let lines = all_lines(&jobs, &id);
    assert_eq!(lines[0]["deidentified_text"], "LEGACY PLAIN");
    assert_eq!(lines[1]["deidentified_text"], "SECOND");
}
