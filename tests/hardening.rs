//! What outside testing found (issue 19): slow clients, a bounded shutdown, a broken data
//! directory, CORS, and the fuzzing findings (integral floats, `model_name` on jobs, `loc`
//! echoes, `+json` content types, a false ERROR log line). Every connection is to 127.0.0.1.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A request must complete within this: a functional bound, not a speed target.
const PROMPT: Duration = Duration::from_secs(5);

fn slow_server() -> &'static common::Server {
    static S: std::sync::OnceLock<common::Server> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        common::start(|s| {
            s.header_read_timeout_seconds = 1.0;
            s.body_read_timeout_seconds = 1.0;
            s.max_connections = 64;
        })
    })
}

fn addr_of(server: &common::Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// True once the server has closed `s` (EOF or reset), false if it is still open at `deadline`.
fn closed_by(s: &mut TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 512];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).expect("timeout");
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_closed_and_cannot_starve_a_normal_request() {
    let server = slow_server();
    let addr = addr_of(server);
    // Hundreds of connections that send part of their headers and then nothing: more than
    // the server's 64 slots.
    let mut slow: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).expect("connect");
            s.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .expect("partial headers");
            s
        })
        .collect();
    // A normal client still gets its answer promptly, model and all.
    let started = Instant::now();
    let r = tokio::time::timeout(
        PROMPT,
        server.post(
            "/pii/extract",
            &json!({"text": "Call Jane Doe at 555-0100."}),
        ),
    )
    .await
    .expect("a normal request completes while slow clients are connected");
    assert_eq!(r.0, 200, "{}", r.1);
    assert!(started.elapsed() < PROMPT);
    // Every slow connection is closed by the server: evicted for newer ones, or at the
    // header read timeout.
    let deadline = Instant::now() + PROMPT;
    let still_open = slow
        .iter_mut()
        .map(|s| closed_by(s, deadline))
        .filter(|closed| !closed)
        .count();
    assert_eq!(still_open, 0, "slow connections left open");
}

#[test]
fn a_stalled_body_is_answered_408() {
    let server = slow_server();
    let mut head = String::new();
    // The slow-client test shares this server: a connection it evicts before our headers
    // arrive is closed unanswered, so that (and only that) is tried again.
    for _ in 0..3 {
        let mut s = TcpStream::connect(addr_of(server)).expect("connect");
        s.write_all(
            b"POST /pii/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"text\": \"Jane",
        )
        .expect("partial body");
        s.set_read_timeout(Some(PROMPT)).expect("timeout");
        let mut buf = vec![0u8; 4096];
        let n = s
            .read(&mut buf)
            .expect("an answer before the client timeout");
        head = String::from_utf8_lossy(&buf[..n]).into_owned();
        if n > 0 {
            break;
        }
    }
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    assert!(head.contains("body_timeout"), "{head}");
    assert!(!head.contains("Jane"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_is_bounded_by_the_drain_deadline() {
    let mut settings = phiflow::config::Settings::from_env();
    settings.data_dir = common::temp_dir("drain");
    settings.preload_models = Some(Vec::new());
    settings.shutdown_drain_seconds = 1.0;
    // Nothing else bounds the request held open below.
    settings.body_read_timeout_seconds = 0.0;
    settings.request_timeout_seconds = 0.0;
    let state = phiflow::api::build_state(settings).expect("service starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(phiflow::api::serve(listener, state, async move {
        let _ = stop_rx.await;
    }));
    // A request in flight that never finishes: its body stops half way.
    let mut held = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tokio::io::AsyncWriteExt::write_all(
        &mut held,
        b"POST /pii/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"text\": ",
    )
    .await
    .expect("partial body");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    stop_tx.send(()).expect("signal");
    tokio::time::timeout(PROMPT, served)
        .await
        .expect("shutdown ends by the drain deadline")
        .expect("serve task")
        .expect("serve");
    assert!(started.elapsed() >= Duration::from_millis(900));
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_data_directory_fails_only_the_job_routes() {
    // The data directory cannot exist: its parent is a regular file.
    let file = common::temp_dir("broken").join("not-a-directory");
    std::fs::write(&file, b"x").expect("file");
    let server = common::start(|s| s.data_dir = file.join("data"));
    let (status, body) = server.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    let degraded = body["degraded"].to_string();
    assert!(degraded.contains("job store unavailable"), "{body}");
    let r = common::client()
        .post(server.url("/jobs"))
        .json(&json!({"documents": [{"text": "Jane Doe"}]}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "storage_unavailable");
    let (status, _) = server.get("/jobs/0123456789abcdef0123456789abcdef").await;
    assert_eq!(status, 503);
    // Routes that need no storage keep serving.
    let (status, body) = server
        .post("/pii/extract", &json!({"text": "Call Jane Doe."}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.get("/livez").await.0, 200);
}

#[tokio::test]
async fn integral_floats_are_integers_on_every_route() {
    let s = common::server();
    let text = "Jane Doe was seen on 2021-03-04.";
    let (status, body) = s
        .post(
            "/pii/deidentify",
            &json!({"text": text, "method": "shift_dates", "date_shift_days": 5.0}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for route in ["/pii/extract/stream", "/pii/deidentify/stream"] {
        let r = common::client()
            .post(s.url(route))
            .json(&json!({"text": text, "chunk_size": 64.0}))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "{route}");
    }
    let (status, body) = s
        .post(
            "/jobs",
            &json!({
                "documents": [{"text": text}],
                "method": "shift_dates",
                "date_shift_days": 5.0,
                "webhook": {"url": "http://127.0.0.1:9/hook", "secret": "s3cret", "max_attempts": 2.0}
            }),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().expect("job id");
    let (_, job) = s.get(&format!("/jobs/{id}")).await;
    assert_eq!(job["webhook"]["max_attempts"], 2, "{job}");
    // A fraction is still no integer, and the 422 names the field.
    let (status, body) = s
        .post(
            "/pii/deidentify",
            &json!({"text": text, "date_shift_days": 5.5}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "date_shift_days"]));
}

#[tokio::test]
async fn jobs_check_model_name_like_every_route_and_never_echo_it() {
    let s = common::server();
    let bad = "<b>Jane Roe 555-12-3456</b>";
    let (status, body) = s
        .post(
            "/jobs",
            &json!({"documents": [{"text": "x"}], "model_name": bad}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "model_name"]));
    assert!(!body.to_string().contains("Jane"));
    let missing = "acme/zqx-not-installed";
    for (route, extra) in [
        ("/jobs", json!({"documents": [{"text": "x"}]})),
        ("/pii/extract", json!({"text": "x"})),
    ] {
        let mut req = extra;
        req["model_name"] = json!(missing);
        let (status, body) = s.post(route, &req).await;
        assert_eq!(status, 404, "{route}: {body}");
        assert_eq!(body["error"]["code"], "model_not_found");
        assert!(!body.to_string().contains("zqx"), "{route} echoes: {body}");
    }
}

#[tokio::test]
async fn unknown_keys_are_capped_and_escaped_in_loc() {
    let s = common::server();
    let key = format!("<script>Jane Roe {}", "x".repeat(500));
    let mut req = json!({"text": "x"});
    req[&key] = json!(1);
    let (status, body) = s.post("/pii/extract", &req).await;
    assert_eq!(status, 422);
    let seg = body["detail"][0]["loc"][1]
        .as_str()
        .expect("loc")
        .to_string();
    assert!(seg.chars().count() <= 65, "{seg}");
    assert!(!seg.contains('<') && !seg.contains('>'), "{seg}");
    assert!(!body.to_string().contains(&"x".repeat(100)));
}

#[tokio::test]
async fn only_application_json_is_json() {
    let s = common::server();
    for ct in [
        "application/json-patch+json",
        "application/merge-patch+json",
    ] {
        let r = common::client()
            .post(s.url("/pii/extract"))
            .header("content-type", ct)
            .body(r#"{"text": "x"}"#)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 415, "{ct}");
    }
}

fn cors_server() -> &'static common::Server {
    static S: std::sync::OnceLock<common::Server> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let digest = phiflow::digest::sha256_hex(b"cors-key-5a1f");
        common::start(move |s| {
            s.cors_allowed_origins = Some(vec!["https://app.example.org".into()]);
            s.auth.enabled = Some("true".into());
            s.auth.api_keys = Some(
                json!([{ "id": "app", "key_hash": format!("sha256:{digest}"), "scopes": ["*"] }])
                    .to_string(),
            );
        })
    })
}

#[tokio::test]
async fn cors_preflights_pass_before_auth_and_requests_still_need_credentials() {
    let s = cors_server();
    let c = common::client();
    let origin = "https://app.example.org";
    let r = c
        .request(reqwest::Method::OPTIONS, s.url("/pii/extract"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type, x-api-key")
        .send()
        .await
        .expect("preflight");
    assert_eq!(r.status(), 204);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], origin);
    assert!(
        h["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert!(
        h["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("x-api-key")
    );
    // The actual request without a credential is refused, with CORS headers so the page
    // can read the 401.
    let r = c
        .post(s.url("/pii/extract"))
        .header("origin", origin)
        .json(&json!({"text": "x"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["access-control-allow-origin"], origin);
    let r = c
        .post(s.url("/pii/extract"))
        .header("origin", origin)
        .header("x-api-key", "cors-key-5a1f")
        .json(&json!({"text": "x"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["access-control-allow-origin"], origin);
    // Another origin gets no CORS headers (the browser blocks it).
    let r = c
        .request(reqwest::Method::OPTIONS, s.url("/pii/extract"))
        .header("origin", "https://evil.example.net")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight");
    assert!(!r.headers().contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn cors_is_off_by_default() {
    let s = common::server();
    let r = common::client()
        .post(s.url("/pii/extract"))
        .header("origin", "https://app.example.org")
        .json(&json!({"text": "x"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    assert!(!r.headers().contains_key("access-control-allow-origin"));
}

/// The real binary logs no ERROR for serving its OpenAPI document, logs (and counts) a slow
/// client without its address, and ends by itself on SIGTERM.
#[test]
fn the_real_binary_logs_no_false_error_and_logs_slow_clients() {
    use std::process::{Command, Stdio};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", common::temp_dir("openapi-log"))
        .env("SERVICE_PRELOAD_MODELS", "")
        .env("SERVICE_LOG_JSON", "true")
        .env("SERVICE_HEADER_READ_TIMEOUT_SECONDS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("phiflow serve");
    let base = format!("http://127.0.0.1:{port}");
    common::wait_ready(&base);
    assert_eq!(
        common::reqwest::blocking_free_get(&format!("{base}/openapi.json")),
        Some(200)
    );
    assert_eq!(
        common::reqwest::blocking_free_get(&format!("{base}/openapi.json")),
        Some(200)
    );
    // A keep-alive client idling after its request is closed too, but it is no slow client.
    let mut idle = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    idle.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("request");
    let mut buf = [0u8; 1024];
    idle.set_read_timeout(Some(PROMPT)).expect("timeout");
    let n = idle.read(&mut buf).expect("response");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert!(
        closed_by(&mut idle, Instant::now() + PROMPT),
        "idle connection left open"
    );
    // A client that never finishes its headers is closed and logged, without its address.
    let mut slow = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    slow.write_all(b"GET /livez HTTP/1.1\r\nX-Jane-Roe: ")
        .expect("partial headers");
    assert!(
        closed_by(&mut slow, Instant::now() + PROMPT),
        "slow client left open"
    );
    let metrics = {
        let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("request");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    };
    assert!(
        metrics.contains("phiflow_slow_client_events_total{event=\"header_read_timeout\"} 1"),
        "{metrics}"
    );
    // SIGTERM: a graceful, bounded shutdown ends the process by itself.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("log");
    let errors: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"level\":\"ERROR\""))
        .collect();
    assert!(errors.is_empty(), "false ERROR lines: {errors:?}");
    let slow: Vec<&str> = out.lines().filter(|l| l.contains("slow clients")).collect();
    assert_eq!(slow.len(), 1, "{out}");
    assert!(slow[0].contains("header_read_timeout"), "{}", slow[0]);
    assert!(!slow[0].contains("127.0.0.1") && !slow[0].contains("Jane"));
    assert!(out.contains("openapi"), "the request was logged");
}
