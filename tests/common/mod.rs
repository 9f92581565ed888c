//! A real phiflow server on 127.0.0.1 (ephemeral port) with the real model and ONNX Runtime,
//! started once per test binary on its own runtime thread.

#![allow(dead_code)]

pub mod bulk_server;
pub mod onnx_surgery;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use phiflow::config::Settings;
use serde_json::Value;

pub struct Server {
    pub base: String,
}

/// Starts a server with `configure` applied to the default settings; waits until `/readyz` is 200.
pub fn start(configure: impl FnOnce(&mut Settings)) -> Server {
    let s = start_unready(configure);
    wait_ready(&s.base);
    s
}

/// Blocks until `{base}/readyz` answers 200 (at most two minutes).
pub fn wait_ready(base: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while reqwest::blocking_free_get(&format!("{base}/readyz")) != Some(200) {
        assert!(Instant::now() < deadline, "server never became ready");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts a server without waiting for readiness.
pub fn start_unready(configure: impl FnOnce(&mut Settings)) -> Server {
    let mut settings = Settings::from_env();
    settings.host = "127.0.0.1".into();
    settings.port = 0;
    settings.data_dir = temp_dir("data");
    configure(&mut settings);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let state = phiflow::api::build_state(settings).expect("service starts");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            phiflow::api::serve(listener, state, std::future::pending())
                .await
                .expect("serve");
        });
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("server address");
    let base = format!("http://{addr}");
    Server { base }
}

/// A fresh, empty directory under the system temp dir (jobs databases, key files).
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "phiflow-test-{tag}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The shared default server of a test binary.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| start(|_| {}))
}

pub mod reqwest {
    /// Status of a GET, without an async runtime (used while waiting for readiness).
    pub fn blocking_free_get(url: &str) -> Option<u16> {
        use std::io::{Read, Write};
        let rest = url.strip_prefix("http://")?;
        let (host, path) = rest
            .split_once('/')
            .map(|(h, p)| (h, format!("/{p}")))
            .unwrap_or((rest, "/".into()));
        let mut s = std::net::TcpStream::connect(host).ok()?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).ok()?;
        buf.split_whitespace().nth(1)?.parse().ok()
    }
}

pub fn client() -> ::reqwest::Client {
    ::reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client")
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = client()
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = client().get(self.url(path)).send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

/// `(text, label, start, end)` of each entity; asserts `text == input[start:end]` in code points.
pub fn entities(input: &str, body: &Value) -> Vec<(String, String, usize, usize)> {
    let chars: Vec<char> = input.chars().collect();
    body["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| {
            let (s, t) = (
                e["start"].as_u64().unwrap() as usize,
                e["end"].as_u64().unwrap() as usize,
            );
            let text = e["text"].as_str().unwrap().to_string();
            assert_eq!(
                chars[s..t].iter().collect::<String>(),
                text,
                "entity text must equal input[start:end]"
            );
            (text, e["label"].as_str().unwrap().to_string(), s, t)
        })
        .collect()
}
