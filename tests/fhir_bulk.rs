//! The FHIR Bulk Data client against a local Bulk Data server that speaks the real protocol
//! (tests/common/bulk_server.rs): SMART assertion verified with the registered JWKS, 202
//! polling with Retry-After, scripted 429/500/broken transfers, gzip, token expiry, DELETE.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::bulk_server::{
    BulkServer, BulkServerConfig, RegisteredClient, RetryAfterStyle, ServedFile, TestKey,
};
use phiflow::fhir::{
    BulkClient, BulkConfig, BulkError, Manifest, OutputFile, Phase, PollUpdate, ProgressHook,
    RetryPolicy, SmartClient, SmartConfig, SmartError,
};
use serde_json::{Value, json};

const CLIENT_ID: &str = "bulk-test-client";

fn patients(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"resourceType": "Patient", "id": format!("p{i}"),
                   "name": [{"family": format!("Family{i}"), "given": [format!("Given{i}")]}],
                   "birthDate": "1970-01-01"})
        })
        .collect()
}

fn observations(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"resourceType": "Observation", "id": format!("o{i}"), "status": "final",
                   "subject": {"reference": format!("Patient/p{}", i % 7)},
                   "code": {"text": "Body weight"}, "valueQuantity": {"value": 70 + i % 30}})
        })
        .collect()
}

fn smart_config(server: &BulkServer, key: &TestKey, scope: &str) -> SmartConfig {
    SmartConfig {
        token_url: server.token_url.clone(),
        client_id: CLIENT_ID.into(),
        private_key_pem: key.private_pem.clone(),
        key_id: Some(key.kid.clone()),
        scope: scope.into(),
        request_timeout: Duration::from_secs(10),
    }
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(400),
        max_retry_after: Duration::from_secs(5),
    }
}

fn bulk_client(server: &BulkServer, key: &TestKey, max_inflight: usize) -> BulkClient {
    let smart = SmartClient::new(smart_config(server, key, "system/*.read")).expect("smart client");
    let mut config = BulkConfig::new(server.fhir_base_url.clone());
    config.poll_interval = Duration::from_millis(100);
    config.request_timeout = Duration::from_secs(10);
    config.max_inflight_downloads = max_inflight;
    config.retry = fast_retries();
    BulkClient::new(config, smart).expect("bulk client")
}

fn temp_file(tag: &str) -> std::path::PathBuf {
    common::temp_dir("fhir-bulk").join(format!("{tag}.ndjson"))
}

#[derive(Default)]
struct Counter {
    bytes: AtomicU64,
    lines: AtomicU64,
}

impl ProgressHook for Counter {
    fn downloaded(&self, _file: &OutputFile, bytes: u64, lines: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.lines.fetch_add(lines, Ordering::Relaxed);
    }
}

async fn export(client: &BulkClient) -> (Manifest, Vec<PollUpdate>) {
    let status_url = client.kick_off().await.expect("kick-off");
    let mut updates = Vec::new();
    let manifest = client
        .poll(&status_url, |u| updates.push(u.clone()))
        .await
        .expect("manifest");
    (manifest, updates)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_export_survives_every_scripted_fault() {
    let key = TestKey::rsa("rsa-1");
    let files = vec![
        ServedFile::resources("Patient", "patient-1", &patients(40)),
        ServedFile::resources("Observation", "observation-1", &observations(300)),
        ServedFile::resources("Observation", "observation-2", &observations(120)),
    ];
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: files.clone(),
        error_files: vec![ServedFile::resources(
            "OperationOutcome",
            "errors-1",
            &[json!({"resourceType": "OperationOutcome",
                     "issue": [{"severity": "warning", "code": "processing"}]})],
        )],
        pending_polls: 3,
        retry_after: RetryAfterStyle::Alternate(1),
        poll_429_at: Some(2),
        file_500_once: ["observation-1".to_owned()].into(),
        file_break_once: ["observation-2".to_owned()].into(),
        gzip: true,
        chunk_size: 4096,
        ..Default::default()
    })
    .await;
    let counter = Arc::new(Counter::default());
    let client = bulk_client(&server, &key, 2).with_progress(counter.clone());

    let started = Instant::now();
    let (manifest, updates) = export(&client).await;
    let polled_for = started.elapsed();

    // 202 ×3 with Retry-After 1 s (seconds, HTTP-date, seconds) and one 429 with Retry-After 1.
    assert_eq!(updates.len(), 3, "{updates:?}");
    assert_eq!(updates[0].progress.as_deref(), Some("poll 1 of 3"));
    assert_eq!(updates[0].next_poll_in, Duration::from_secs(1));
    assert!(
        updates[1].next_poll_in <= Duration::from_secs(1),
        "HTTP-date wait"
    );
    assert!(
        updates[1].next_poll_in >= Duration::from_millis(100),
        "poll_interval floor"
    );
    assert!(polled_for >= Duration::from_millis(2900), "{polled_for:?}");
    let statuses: Vec<u16> = server
        .requests_to("/fhir/status/")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [202, 429, 202, 202, 200]);

    assert!(manifest.requires_access_token);
    assert_eq!(manifest.output.len(), 3);
    assert_eq!(manifest.output[0].count, Some(40));
    assert_eq!(manifest.error.len(), 1);

    let mut total_lines = 0;
    for (file, served) in manifest.output.iter().zip(&files) {
        let dest = temp_file(&served.name);
        let stats = client
            .download(&manifest, file, &dest)
            .await
            .expect("download");
        assert_eq!(
            std::fs::read(&dest).expect("read back"),
            served.body,
            "{}",
            served.name
        );
        assert_eq!(stats.bytes, served.body.len() as u64);
        assert_eq!(Some(stats.lines), served.count);
        total_lines += stats.lines;
        let expected_attempts = if served.name == "patient-1" { 1 } else { 2 };
        assert_eq!(stats.attempts, expected_attempts, "{}", served.name);
    }
    let errors = temp_file("errors");
    let stats = client
        .download(&manifest, &manifest.error[0], &errors)
        .await
        .expect("outcome file");
    assert_eq!(stats.lines, 1);

    let log = server.log();
    let file_statuses: Vec<(String, u16)> = server
        .requests_to("/files/")
        .iter()
        .map(|r| (r.path.clone(), r.status))
        .collect();
    assert_eq!(
        file_statuses,
        [
            ("/files/patient-1".to_owned(), 200),
            ("/files/observation-1".to_owned(), 500),
            ("/files/observation-1".to_owned(), 200),
            ("/files/observation-2".to_owned(), 200),
            ("/files/observation-2".to_owned(), 200),
            ("/files/errors-1".to_owned(), 200),
        ]
    );
    assert_eq!(log.gzip_responses, 5, "every 200 file answer was gzip");
    assert_eq!(log.tokens.len(), 1, "one token for the whole export");
    assert_eq!(log.tokens[0].alg, jsonwebtoken::Algorithm::RS384);
    assert_eq!(log.tokens[0].kid.as_deref(), Some("rsa-1"));
    for r in &log.requests {
        if r.path != "/auth/token" {
            assert_eq!(
                r.bearer.as_deref(),
                Some(log.tokens[0].token.as_str()),
                "{}",
                r.path
            );
        }
        if r.path.starts_with("/files/") {
            let enc = r.accept_encoding.as_deref().unwrap_or_default();
            assert!(enc.contains("gzip"), "{enc}");
        }
    }
    let kick = &server.requests_to("/fhir/$export")[0];
    assert_eq!(kick.prefer.as_deref(), Some("respond-async"));
    assert_eq!(kick.accept.as_deref(), Some("application/fhir+json"));
    assert_eq!(counter.lines.load(Ordering::Relaxed), total_lines + 1);
    assert_eq!(
        counter.bytes.load(Ordering::Relaxed),
        client.bytes_downloaded()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ec_key_signs_es384_and_v2_scopes_pass_through() {
    let key = TestKey::ec_p384("ec-1");
    let rsa = TestKey::rsa("rsa-other");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&rsa, &key])],
        files: vec![ServedFile::resources("Patient", "p", &patients(3))],
        pending_polls: 2,
        retry_after: RetryAfterStyle::Omit,
        ..Default::default()
    })
    .await;
    let smart = SmartClient::new(smart_config(
        &server,
        &key,
        "system/Patient.rs system/Observation.rs",
    ))
    .expect("smart");
    let mut config = BulkConfig::new(server.fhir_base_url.clone());
    config.poll_interval = Duration::from_millis(300);
    let client = BulkClient::new(config, smart).expect("client");
    let started = Instant::now();
    let (manifest, updates) = export(&client).await;
    // No Retry-After: poll_interval is the wait.
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(
        updates
            .iter()
            .all(|u| u.next_poll_in == Duration::from_millis(300))
    );
    assert_eq!(manifest.output.len(), 1);
    let log = server.log();
    assert_eq!(log.tokens.len(), 1);
    assert_eq!(log.tokens[0].alg, jsonwebtoken::Algorithm::ES384);
    assert_eq!(log.tokens[0].kid.as_deref(), Some("ec-1"));
    assert_eq!(
        log.tokens[0].scope,
        "system/Patient.rs system/Observation.rs"
    );
    assert!(log.refused_assertions.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_refused_with_a_typed_error() {
    let registered = TestKey::rsa("k1");
    let impostor = TestKey::rsa("k1");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&registered])],
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &impostor, 1);
    let err = client.kick_off().await.expect_err("refused");
    match &err {
        BulkError::Auth {
            phase: Phase::KickOff,
            source:
                SmartError::Refused {
                    status: 401,
                    error: Some(code),
                },
        } => assert_eq!(code, "invalid_client"),
        other => panic!("unexpected: {other:?}"),
    }
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains("PRIVATE KEY") && !shown.contains("eyJ"),
        "{shown}"
    );
    let log = server.log();
    assert!(log.tokens.is_empty());
    assert_eq!(log.refused_assertions.len(), 1);
    assert!(log.refused_assertions[0].contains("signature"));
    assert!(
        server.requests_to("/fhir/").is_empty(),
        "no kick-off without a token"
    );

    // An unregistered kid, and a client id the server does not know, fail the same way.
    let other_kid = TestKey::ec_p384("unknown-kid");
    let err = bulk_client(&server, &other_kid, 1)
        .kick_off()
        .await
        .expect_err("unknown kid");
    assert!(matches!(
        err,
        BulkError::Auth {
            source: SmartError::Refused { status: 401, .. },
            ..
        }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_origin_file_urls_are_refused() {
    let key = TestKey::ec_p384("ec");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: vec![ServedFile::resources("Patient", "p", &patients(2))],
        file_origin: Some("http://localhost:9".into()),
        pending_polls: 0,
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let status_url = client.kick_off().await.expect("kick-off");
    let err = client.poll(&status_url, |_| {}).await.expect_err("refused");
    match err {
        BulkError::OffOrigin {
            phase: Phase::Poll,
            origin,
        } => assert_eq!(origin.to_string(), "http://localhost:9"),
        other => panic!("unexpected: {other:?}"),
    }

    // A manifest restored from a checkpoint is checked again before any download.
    let manifest: Manifest = serde_json::from_value(json!({
        "transactionTime": "2024-01-01T00:00:00Z", "request": "r", "requiresAccessToken": true,
        "output": [{"type": "Patient", "url": "https://evil.example/files/p"}]
    }))
    .expect("manifest");
    let err = client
        .download(&manifest, &manifest.output[0], &temp_file("evil"))
        .await
        .expect_err("refused");
    assert!(
        matches!(
            err,
            BulkError::OffOrigin {
                phase: Phase::Download,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(server.requests_to("/files/").is_empty());
    assert!(
        !err.to_string().contains("/files/p"),
        "the error names the origin, not the URL"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed() {
    let key = TestKey::rsa("rsa");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: vec![ServedFile::resources("Patient", "p", &patients(2))],
        file_redirect_to: Some("http://localhost:9/files/p".into()),
        pending_polls: 0,
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let (manifest, _) = export(&client).await;
    let err = client
        .download(&manifest, &manifest.output[0], &temp_file("redirect"))
        .await
        .expect_err("redirect refused");
    assert!(
        matches!(
            err,
            BulkError::Redirect {
                phase: Phase::Download,
                status: 307
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.requests_to("/files/").len(), 1, "no second request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_sends_delete_on_the_status_url() {
    let key = TestKey::rsa("rsa");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        pending_polls: 100,
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let status_url = client.kick_off().await.expect("kick-off");
    client.cancel(&status_url).await.expect("cancel");
    assert_eq!(server.log().deletes, ["/fhir/status/0"]);
    let err = client.poll(&status_url, |_| {}).await.expect_err("gone");
    assert!(
        matches!(err, BulkError::ExportFailed { phase: Phase::Poll, status: 404, ref issue_codes } if issue_codes == &["not-found"]),
        "{err:?}"
    );
    // The status URL round-trips through a checkpoint.
    let stored = serde_json::to_string(&status_url).expect("serialise");
    assert_eq!(stored, format!("\"{}/fhir/status/0\"", server.origin));
    let restored: phiflow::fhir::StatusUrl = serde_json::from_str(&stored).expect("restore");
    assert_eq!(restored, status_url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_in_flight_never_exceed_the_limit() {
    let key = TestKey::rsa("rsa");
    let files = ServedFile::group_by_type(&observations(360), 60);
    assert_eq!(files.len(), 6);
    assert_eq!(files[5].name, "Observation-6");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: files.clone(),
        pending_polls: 0,
        chunk_size: 2048,
        chunk_delay: Duration::from_millis(25),
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 2);
    let (manifest, _) = export(&client).await;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, file) in manifest.output.clone().into_iter().enumerate() {
        let (client, manifest) = (client.clone(), manifest.clone());
        tasks.spawn(async move {
            let dest = temp_file(&format!("inflight-{i}"));
            let stats = client
                .download(&manifest, &file, &dest)
                .await
                .expect("download");
            (i, stats, std::fs::read(&dest).expect("read back"))
        });
    }
    while let Some(done) = tasks.join_next().await {
        let (i, stats, body) = done.expect("task");
        assert_eq!(body, files[i].body);
        assert_eq!(stats.lines, 60);
    }
    assert_eq!(server.log().max_concurrent_downloads, 2, "server-observed");
    assert_eq!(client.peak_inflight(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_get_no_token_when_the_manifest_says_so() {
    let key = TestKey::rsa("rsa");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: vec![
            ServedFile::resources("Patient", "p", &patients(5)),
            ServedFile::raw(
                "Patient",
                "crlf",
                b"{\"id\":\"a\"}\r\n\r\n  \n{\"id\":\"b\"}\r\n{\"id\":\"c\"}".to_vec(),
            ),
        ],
        chunk_size: 3,
        error_files: vec![ServedFile::raw(
            "OperationOutcome",
            "oo",
            b"{\"resourceType\":\"OperationOutcome\"}".to_vec(),
        )],
        outcome_key: "outcome",
        requires_access_token: false,
        pending_polls: 0,
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let (manifest, _) = export(&client).await;
    assert!(!manifest.requires_access_token);
    assert_eq!(manifest.error.len(), 1, "older `outcome` key");
    let mut reader = client
        .open(&manifest, &manifest.output[0])
        .await
        .expect("open");
    let mut ids = Vec::new();
    while let Some(line) = reader.next_line().await.expect("line") {
        let v: Value = serde_json::from_slice(&line).expect("json line");
        ids.push(v["id"].as_str().expect("id").to_owned());
    }
    assert_eq!(ids, ["p0", "p1", "p2", "p3", "p4"]);
    drop(reader);
    // CRLF endings, blank lines and a last line without a newline, split across 3-byte reads.
    let mut reader = client
        .open(&manifest, &manifest.output[1])
        .await
        .expect("open");
    let mut lines = Vec::new();
    while let Some(line) = reader.next_line().await.expect("line") {
        lines.push(String::from_utf8(line).expect("utf-8"));
    }
    assert_eq!(lines, [r#"{"id":"a"}"#, r#"{"id":"b"}"#, r#"{"id":"c"}"#]);
    assert_eq!(
        reader.stats().lines,
        4,
        "stats count non-empty lines, blanks with spaces too"
    );
    drop(reader);
    let stats = client
        .download(&manifest, &manifest.error[0], &temp_file("oo"))
        .await
        .expect("outcome");
    assert_eq!(stats.lines, 1, "a last line without newline counts");
    let log = server.log();
    for r in &log.requests {
        match r.path.as_str() {
            p if p.starts_with("/files/") => assert!(r.bearer.is_none(), "{p}"),
            "/auth/token" => {}
            p => assert!(r.bearer.is_some(), "{p}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_expires_mid_download_is_reminted_after_401() {
    let key = TestKey::ec_p384("ec");
    let files: Vec<ServedFile> = (0..3)
        .map(|i| ServedFile::resources("Patient", &format!("pat-{i}"), &patients(60)))
        .collect();
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: files.clone(),
        pending_polls: 0,
        // Advertised for an hour, really valid for 700 ms (revoked, or the clocks disagree).
        token_expires_in: 3600,
        token_valid_for: Some(Duration::from_millis(700)),
        chunk_size: 512,
        chunk_delay: Duration::from_millis(40),
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let (manifest, _) = export(&client).await;
    for (file, served) in manifest.output.iter().zip(&files) {
        let mut reader = client.open(&manifest, file).await.expect("open");
        let mut body = Vec::new();
        while let Some(line) = reader.next_line().await.expect("line") {
            body.extend_from_slice(&line);
            body.push(b'\n');
        }
        assert_eq!(body, served.body);
    }
    let log = server.log();
    assert!(log.unauthorized >= 1, "the server refused a stale token");
    assert_eq!(
        log.tokens.len(),
        log.unauthorized + 1,
        "one new token per 401"
    );
    assert_eq!(client.smart().tokens_minted(), log.tokens.len() as u64);
    let file_401s = server
        .requests_to("/files/")
        .iter()
        .filter(|r| r.status == 401)
        .count();
    assert!(file_401s >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_lived_token_is_reminted_before_it_runs_out() {
    let key = TestKey::rsa("rsa");
    let files: Vec<ServedFile> = (0..5)
        .map(|i| ServedFile::resources("Patient", &format!("pat-{i}"), &patients(25)))
        .collect();
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: files.clone(),
        pending_polls: 0,
        token_expires_in: 3,
        chunk_size: 256,
        chunk_delay: Duration::from_millis(60),
        ..Default::default()
    })
    .await;
    let client = bulk_client(&server, &key, 1);
    let (manifest, _) = export(&client).await;
    let started = Instant::now();
    for (file, served) in manifest.output.iter().zip(&files) {
        let dest = temp_file(&served.name);
        client
            .download(&manifest, file, &dest)
            .await
            .expect("download");
        assert_eq!(std::fs::read(&dest).expect("read back"), served.body);
    }
    let log = server.log();
    assert!(
        started.elapsed() > Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(log.tokens.len() >= 2, "re-minted: {}", log.tokens.len());
    assert_eq!(log.unauthorized, 0, "never sent an expired token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_download_times_out_and_a_failed_kick_off_is_typed() {
    let key = TestKey::rsa("rsa");
    let server = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        files: vec![ServedFile::resources("Patient", "slow", &patients(3))],
        pending_polls: 0,
        chunk_delay: Duration::from_millis(1500),
        ..Default::default()
    })
    .await;
    let smart = SmartClient::new(smart_config(&server, &key, "system/*.read")).expect("smart");
    let mut config = BulkConfig::new(server.fhir_base_url.clone());
    config.request_timeout = Duration::from_millis(300);
    config.retry = RetryPolicy {
        max_attempts: 2,
        ..fast_retries()
    };
    let client = BulkClient::new(config, smart).expect("client");
    let (manifest, _) = export(&client).await;
    let err = client
        .download(&manifest, &manifest.output[0], &temp_file("slow"))
        .await
        .expect_err("stalled");
    match err {
        BulkError::Exhausted {
            phase: Phase::Download,
            attempts: 2,
            last,
        } => assert_eq!(last, "timeout"),
        other => panic!("unexpected: {other:?}"),
    }

    let failing = BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[&key])],
        kick_off_status: Some(500),
        ..Default::default()
    })
    .await;
    let err = bulk_client(&failing, &key, 1)
        .kick_off()
        .await
        .expect_err("500");
    assert!(
        matches!(err, BulkError::ExportFailed { phase: Phase::KickOff, status: 500, ref issue_codes } if issue_codes == &["exception"]),
        "{err:?}"
    );
}
