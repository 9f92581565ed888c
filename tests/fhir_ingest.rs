//! POST /fhir/smart-backend/ingestions end to end, against a local Bulk Data server that speaks
//! the real protocol (tests/common/bulk_server.rs: SMART assertions verified with the registered
//! JWKS, 202 polling with Retry-After, a 429, a 500, gzip, tokens that expire mid-download,
//! DELETE): status and progress, the summary (409 before the end), cancellation, 422s, and a
//! server killed with SIGKILL mid-ingestion that resumes to byte-identical output.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::bulk_server::{
    BulkServer, BulkServerConfig, RegisteredClient, RetryAfterStyle, ServedFile, TestKey,
};
use serde_json::{Value, json};

const CLIENT_ID: &str = "phiflow-ingest-test";
const SECRET: &str = "fhir-ingest-test-secret";

/// A small population whose notes name their patients in several ways.
struct Population {
    resources: Vec<Value>,
    /// Identifiers that must not appear in any output.
    planted: Vec<String>,
}

fn population(n: usize) -> Population {
    let given = [
        "Sumiko254",
        "Marcus871",
        "Odalys302",
        "Tevin44",
        "Ingrid913",
        "Caspian12",
    ];
    let family = [
        "Larue605",
        "Okafor219",
        "Brandt88",
        "Villeneuve3",
        "Haskell70",
        "Moreau511",
    ];
    let mut resources = Vec::new();
    let mut planted = vec!["Port Leyden".to_string()];
    for i in 0..n {
        let (g, f) = (given[i % given.len()], family[(i * 5 + 1) % family.len()]);
        let g = format!("{g}{i}");
        let mrn = format!("MRN{:07}", 4_100_000 + i * 37);
        let phone = format!("555-{:03}-{:04}", 200 + i % 700, 1000 + i * 13 % 9000);
        let street = format!("{} Juniper Hollow Rd", 100 + i);
        let birth = format!("19{:02}-0{}-1{}", 40 + i % 50, 1 + i % 9, i % 10);
        let pid = format!("pat-{i}");
        resources.push(json!({
            "resourceType": "Patient", "id": pid,
            "identifier": [{"type": {"coding": [{"code": "MR"}]}, "system": "urn:mrn", "value": mrn}],
            "name": [{"family": f, "given": [g]}],
            "telecom": [{"system": "phone", "value": phone}],
            "address": [{"line": [street], "city": "Port Leyden", "state": "NY", "postalCode": "13433"}],
            "birthDate": birth,
            "text": {"status": "generated", "div": format!(
                "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>{g} <b>{f}</b>, MRN {mrn}</p></div>")}
        }));
        let (y, m, d) = (&birth[..4], &birth[5..7], &birth[8..10]);
        let note = format!(
            "Clinic note. {g} {f} (MRN {mrn}, DOB {m}/{d}/{y}) seen for follow-up of hypertension. \
             Mr. {f} lives at {street}, Port Leyden. Call back at ({}) {}. BP 142/88, metoprolol 25 mg daily.",
            &phone[..3],
            &phone[4..],
        );
        resources.push(json!({
            "resourceType": "DocumentReference", "id": format!("doc-{i}"), "status": "current",
            "subject": {"reference": format!("Patient/{pid}")},
            "date": "2021-04-02T10:30:00Z",
            "content": [{"attachment": {"contentType": "text/plain",
                "data": base64::engine::general_purpose::STANDARD.encode(note.as_bytes())}}]
        }));
        resources.push(json!({
            "resourceType": "Observation", "id": format!("obs-{i}"), "status": "final",
            "subject": {"reference": format!("Patient/{pid}")},
            "effectiveDateTime": "2021-04-02",
            "code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic blood pressure"}]},
            "valueQuantity": {"value": 142, "unit": "mm[Hg]"},
            "note": [{"text": format!("Taken by nurse; {g} was anxious.")}]
        }));
        let written = format!("{m}/{d}/{y}");
        planted.extend([g, f.to_string(), mrn, phone, street, birth, written]);
    }
    resources.push(json!({"resourceType": "Binary", "id": "bin-1", "contentType": "application/pdf", "data": "JVBERi0="}));
    Population { resources, planted }
}

fn served(pop: &Population, per_file: usize) -> Vec<ServedFile> {
    ServedFile::group_by_type(&pop.resources, per_file)
}

fn request(server: &BulkServer, key: &TestKey, output_dir: &str) -> Value {
    json!({
        "fhir_base_url": server.fhir_base_url,
        "token_url": server.token_url,
        "client_id": CLIENT_ID,
        "private_key_pem": key.private_pem,
        "key_id": key.kid,
        "output_dir": output_dir,
        "poll_interval_seconds": 0.1,
        "request_timeout_seconds": 10,
        "max_inflight_downloads": 2,
    })
}

async fn wait_done(server: &common::Server, id: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (status, body) = server
            .get(&format!("/fhir/smart-backend/ingestions/{id}"))
            .await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "running" {
            return body;
        }
        assert!(Instant::now() < deadline, "ingestion never ended: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every file under `dir`, by relative path, with its bytes.
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("output dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().is_ok_and(|t| t.is_file()) {
            out.insert(name, std::fs::read(e.path()).expect("read"));
        }
    }
    out
}

fn assert_no_leak(files: &BTreeMap<String, Vec<u8>>, planted: &[String]) {
    for (name, bytes) in files {
        let text = String::from_utf8_lossy(bytes).to_lowercase();
        for p in planted {
            assert!(
                !text.contains(&p.to_lowercase()),
                "a planted identifier leaked into {name}"
            );
        }
    }
}

fn start_server(root: &Path) -> common::Server {
    let root = root.to_path_buf();
    common::start(move |s| {
        s.deid_secret_key = Some(SECRET.into());
        s.fhir_output_root = Some(root);
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingestion_survives_every_fault_and_leaks_nothing() {
    let key = TestKey::rsa("rsa-ingest");
    let pop = population(6);
    let bulk = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: served(&pop, 4),
        pending_polls: 2,
        retry_after: RetryAfterStyle::Seconds(1),
        poll_429_at: Some(1),
        file_500_once: ["Observation-1".to_owned()].into(),
        gzip: true,
        // The token works for a moment only: downloads meet a 401 and must mint a new one.
        token_valid_for: Some(Duration::from_millis(1500)),
        chunk_size: 512,
        chunk_delay: Duration::from_millis(40),
        ..Default::default()
    })
    .await;
    let root = common::temp_dir("fhir-root");
    let server = start_server(&root);
    let (status, job) = server
        .post(
            "/fhir/smart-backend/ingestions",
            &request(&bulk, &key, "run-1"),
        )
        .await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["status"], "running");
    assert!(!job.to_string().contains("PRIVATE KEY"));
    let id = job["job_id"].as_str().expect("job id").to_string();
    let done = wait_done(&server, &id, Duration::from_secs(240)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let progress = &done["progress"];
    assert_eq!(progress["files_total"], progress["files_downloaded"]);
    assert!(
        progress["peak_inflight_downloads"]
            .as_u64()
            .is_some_and(|n| (1..=2).contains(&n))
    );

    let (status, summary) = server
        .get(&format!("/fhir/smart-backend/ingestions/{id}/summary"))
        .await;
    assert_eq!(status, 200, "{summary}");
    let s = &summary["summary"];
    assert_eq!(s["resources"]["Patient"], 6);
    assert_eq!(s["resources"]["DocumentReference"], 6);
    assert_eq!(s["resources"]["Observation"], 6);
    assert_eq!(s["rejections_by_reason"]["opaque_resource_type"], 1);
    assert!(s["spans_from_structured_data"].as_u64().is_some());
    assert!(
        s["peak_inflight_downloads"]
            .as_u64()
            .is_some_and(|n| n <= 2)
    );

    let out = root.join("run-1");
    let files = files_under(&out);
    for o in s["outputs"].as_array().expect("outputs") {
        let path = o["path"].as_str().expect("path");
        let bytes = files.get(path).expect("listed output exists");
        assert_eq!(
            o["sha256"].as_str(),
            Some(phiflow::digest::sha256_hex(bytes).as_str())
        );
    }
    assert!(
        files.contains_key("Patient.ndjson") && files.contains_key("DocumentReference.parquet")
    );
    assert!(
        !out.join(".phiflow-downloads").exists(),
        "raw downloads are removed"
    );
    assert_no_leak(&files, &pop.planted);

    // References still resolve to the pseudonymous patients.
    let patients: Vec<Value> = String::from_utf8_lossy(&files["Patient.ndjson"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let ids: Vec<String> = patients
        .iter()
        .map(|p| format!("Patient/{}", p["id"].as_str().unwrap_or_default()))
        .collect();
    for l in String::from_utf8_lossy(&files["Observation.ndjson"]).lines() {
        let o: Value = serde_json::from_str(l).expect("json");
        let r = o["subject"]["reference"].as_str().expect("reference");
        assert!(ids.iter().any(|i| i == r), "dangling {r}");
    }

    let log = bulk.log();
    assert!(log.tokens.len() >= 2, "the expired token was re-minted");
    assert!(log.max_concurrent_downloads <= 2);
    assert!(log.gzip_responses > 0);
    assert!(
        !log.deletes.is_empty(),
        "the finished export is released with DELETE"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_waits_and_a_cancel_deletes_the_export() {
    let key = TestKey::ec_p384("ec-ingest");
    let pop = population(2);
    let bulk = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: served(&pop, 10),
        pending_polls: 10_000,
        retry_after: RetryAfterStyle::Seconds(1),
        ..Default::default()
    })
    .await;
    let root = common::temp_dir("fhir-root");
    let server = start_server(&root);
    let mut body = request(&bulk, &key, "run-cancel");
    body["scope"] = json!("system/Patient.rs system/Observation.rs");
    let (status, job) = server.post("/fhir/smart-backend/ingestions", &body).await;
    assert_eq!(status, 200, "{job}");
    let id = job["job_id"].as_str().expect("id").to_string();
    // Wait until it polls.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, j) = server
            .get(&format!("/fhir/smart-backend/ingestions/{id}"))
            .await;
        if j["progress"]["phase"] == "polling" {
            break;
        }
        assert!(Instant::now() < deadline, "never polled: {j}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, early) = server
        .get(&format!("/fhir/smart-backend/ingestions/{id}/summary"))
        .await;
    assert_eq!(status, 409, "{early}");
    assert_eq!(early["error"]["code"], "ingestion_not_finished");
    let client = common::client();
    let r = client
        .delete(server.url(&format!("/fhir/smart-backend/ingestions/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status().as_u16(), 200);
    let cancelled: Value = r.json().await.expect("json");
    assert_eq!(cancelled["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(30);
    while bulk.log().deletes.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the export was never deleted on the server"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, s) = server
        .get(&format!("/fhir/smart-backend/ingestions/{id}/summary"))
        .await;
    assert_eq!((status, s["status"].as_str()), (200, Some("cancelled")));
    let token = &bulk.log().tokens[0];
    assert_eq!(token.scope, "system/Patient.rs system/Observation.rs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_422_by_field_and_unknown_ids_404() {
    let key = TestKey::rsa("rsa-bad");
    let bulk = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        ..Default::default()
    })
    .await;
    let root = common::temp_dir("fhir-root");
    let server = start_server(&root);
    let loc = |body: &Value| -> Vec<String> {
        body["detail"]
            .as_array()
            .map(|d| {
                d.iter()
                    .map(|v| v["loc"][1].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut b = request(&bulk, &key, "../escape");
    let (status, body) = server.post("/fhir/smart-backend/ingestions", &b).await;
    assert_eq!(
        (status, loc(&body)),
        (422, vec!["output_dir".to_string()]),
        "{body}"
    );
    b = request(&bulk, &key, "/etc/phiflow");
    let (status, body) = server.post("/fhir/smart-backend/ingestions", &b).await;
    assert_eq!(
        (status, loc(&body)),
        (422, vec!["output_dir".to_string()]),
        "{body}"
    );
    b = request(&bulk, &key, "ok");
    b["private_key_pem"] =
        json!("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
    let (status, body) = server.post("/fhir/smart-backend/ingestions", &b).await;
    assert_eq!(
        (status, loc(&body)),
        (422, vec!["private_key_pem".to_string()]),
        "{body}"
    );
    assert!(!body.to_string().contains("not a key"));
    b = request(&bulk, &key, "ok");
    b["fhir_base_url"] = json!("ftp://example");
    b["max_inflight_downloads"] = json!(0);
    let (status, body) = server.post("/fhir/smart-backend/ingestions", &b).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        loc(&body).contains(&"max_inflight_downloads".to_string()),
        "{body}"
    );
    let (status, body) = server
        .get("/fhir/smart-backend/ingestions/no-such-job")
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("ingestion_not_found"))
    );
    let (status, _) = server
        .get("/fhir/smart-backend/ingestions/no-such-job/summary")
        .await;
    assert_eq!(status, 404);
}

/// A `phiflow serve` child process on a free port, with its own data dir.
struct Child {
    child: std::process::Child,
    base: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn spawn_serve(data: &Path, root: &Path, port: u16) -> Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_HOST", "127.0.0.1")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", data)
        .env("SERVICE_FHIR_OUTPUT_ROOT", root)
        .env("SERVICE_DEID_SECRET_KEY", SECRET)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("phiflow serve");
    let base = format!("http://127.0.0.1:{port}");
    common::wait_ready(&base);
    Child { child, base }
}

fn served_by(base: &str) -> common::Server {
    common::Server {
        base: base.to_string(),
    }
}

async fn run_to_end(
    data: &Path,
    root: &Path,
    bulk: &BulkServer,
    key: &TestKey,
    out: &str,
    kill_mid: bool,
) -> PathBuf {
    let port = free_port();
    let mut child = spawn_serve(data, root, port);
    let server = served_by(&child.base);
    let (status, job) = server
        .post("/fhir/smart-backend/ingestions", &request(bulk, key, out))
        .await;
    assert_eq!(status, 200, "{job}");
    let id = job["job_id"].as_str().expect("id").to_string();
    if kill_mid {
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let (_, j) = server
                .get(&format!("/fhir/smart-backend/ingestions/{id}"))
                .await;
            let p = &j["progress"];
            if p["phase"] == "deidentifying" && p["resources_done"].as_u64().unwrap_or(0) > 0 {
                break;
            }
            assert_eq!(j["status"], "running", "ended before the kill: {j}");
            assert!(
                Instant::now() < deadline,
                "never started de-identifying: {j}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        child.child.kill().expect("SIGKILL");
        let _ = child.child.wait();
        child = spawn_serve(data, root, free_port());
    }
    let server = served_by(&child.base);
    let done = wait_done(&server, &id, Duration::from_secs(300)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let _ = child.child.kill();
    let _ = child.child.wait();
    root.join(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_ingestion_it_resumes_to_byte_identical_output() {
    let key = TestKey::rsa("rsa-kill");
    let pop = population(24);
    let bulk = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: served(&pop, 6),
        ..Default::default()
    })
    .await;
    let root = common::temp_dir("fhir-root");
    let whole = run_to_end(
        &common::temp_dir("data-a"),
        &root,
        &bulk,
        &key,
        "whole",
        false,
    )
    .await;
    let resumed = run_to_end(
        &common::temp_dir("data-b"),
        &root,
        &bulk,
        &key,
        "resumed",
        true,
    )
    .await;
    let (a, b) = (files_under(&whole), files_under(&resumed));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(b[name] == *bytes, "{name} differs after the resume");
    }
    assert_no_leak(&b, &pop.planted);
}
