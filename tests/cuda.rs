//! `SERVICE_DEVICE=cuda` through the real binary: a missing piece (CUDA provider, CUDA library,
//! driver, device) stops `phiflow serve` at start-up with a message naming it, never a silent CPU
//! fallback; on a machine with a GPU and `scripts/fetch-assets --gpu` run, the service starts on
//! CUDA, the GPU really works (its memory grows), and its entities match the CPU's.
//!
//! The GPU build lives where `scripts/fetch-assets --gpu` puts it (`PHIFLOW_ASSETS_DIR`, default
//! `.assets`); the tests that need it say so and return when it is not fetched.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../benches/corpus.rs"]
mod corpus;

fn assets() -> PathBuf {
    PathBuf::from(std::env::var("PHIFLOW_ASSETS_DIR").unwrap_or_else(|_| ".assets".into()))
}

/// The onnxruntime-gpu library and the CUDA folder, when `fetch-assets --gpu` has run.
fn gpu_assets() -> Option<(PathBuf, PathBuf)> {
    let lib = assets().join("onnxruntime-gpu-1.31.1/libonnxruntime.so");
    let cuda = assets().join("cuda/lib");
    match (std::fs::canonicalize(&lib), std::fs::canonicalize(&cuda)) {
        (Ok(lib), Ok(cuda)) => Some((lib, cuda)),
        _ => {
            eprintln!("skipped: onnxruntime-gpu not fetched (run scripts/fetch-assets --gpu)");
            None
        }
    }
}

/// Whether this machine has an NVIDIA driver with a device node.
fn has_gpu() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

fn serve(envs: &[(&str, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phiflow"));
    c.arg("serve")
        .env("SERVICE_DATA_DIR", common::temp_dir("cuda"))
        .env_remove("SERVICE_ORT_LIBRARY")
        .env_remove("SERVICE_CUDA_LIB_DIR")
        .env_remove("SERVICE_CUDA_DEVICE_ID")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

/// Runs `phiflow serve`, which must stop by itself (within a minute) with a failure.
fn refused(envs: &[(&str, String)]) -> String {
    let mut child = serve(envs)
        .env("SERVICE_PORT", "0")
        .spawn()
        .expect("phiflow serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("phiflow serve started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Output { status, stderr, .. } = child.wait_with_output().expect("output");
    assert!(!status.success(), "it must exit with a failure");
    String::from_utf8_lossy(&stderr).into_owned()
}

#[test]
fn cuda_with_the_cpu_runtime_refuses_to_start() {
    let err = refused(&[("SERVICE_DEVICE", "cuda".into())]);
    assert!(err.contains("no CUDA execution provider"), "{err}");
    assert!(err.contains("SERVICE_ORT_LIBRARY"), "{err}");
}

#[test]
fn a_malformed_device_is_refused() {
    let err = refused(&[("SERVICE_DEVICE", "gpu:1".into())]);
    assert!(err.contains("cpu, cuda or cuda:N"), "{err}");
    let err = refused(&[
        ("SERVICE_DEVICE", "cuda:1".into()),
        ("SERVICE_CUDA_DEVICE_ID", "0".into()),
    ]);
    assert!(err.contains("disagree"), "{err}");
}

#[test]
fn cuda_with_a_missing_cuda_folder_names_the_library_and_the_setting() {
    let Some((lib, _)) = gpu_assets() else { return };
    let err = refused(&[
        ("SERVICE_DEVICE", "cuda".into()),
        ("SERVICE_ORT_LIBRARY", lib.display().to_string()),
        ("SERVICE_CUDA_LIB_DIR", "/nonexistent/cuda/lib".into()),
    ]);
    assert!(
        err.contains("libcudart.so.13 cannot be loaded from /nonexistent/cuda/lib"),
        "{err}"
    );
    assert!(err.contains("SERVICE_CUDA_LIB_DIR"), "{err}");
}

/// Without a GPU the fetched libraries load and the driver is what is missing; with one, the
/// service starts on CUDA and a device id the driver does not have is refused.
#[test]
fn cuda_with_the_fetched_libraries_needs_the_driver_and_the_device() {
    let Some((lib, cuda)) = gpu_assets() else {
        return;
    };
    let envs = |device: &str| {
        vec![
            ("SERVICE_DEVICE", device.to_string()),
            ("SERVICE_ORT_LIBRARY", lib.display().to_string()),
            ("SERVICE_CUDA_LIB_DIR", cuda.display().to_string()),
        ]
    };
    if !has_gpu() {
        let err = refused(&envs("cuda"));
        assert!(err.contains("libcuda.so.1 cannot be loaded"), "{err}");
        return;
    }
    let err = refused(&envs("cuda:4096"));
    assert!(err.contains("SERVICE_DEVICE=cuda:4096"), "{err}");
    let server = Running::start(envs("cuda"));
    let (_, health) = server.get("/health");
    assert_eq!(health["device"], "cuda");
}

/// On a GPU: the CUDA service's entities equal the CPU service's on the bench corpus, scores
/// within 1e-3, and the GPU's memory shows the work. `PHIFLOW_PARITY_DEVICE=cpu` runs the same
/// comparison CPU against CPU (to check the harness on a machine without a GPU).
#[test]
fn cuda_entities_match_cpu() {
    let candidate = std::env::var("PHIFLOW_PARITY_DEVICE").unwrap_or_else(|_| "cuda".into());
    let mut envs = vec![("SERVICE_DEVICE", candidate.clone())];
    if candidate != "cpu" {
        let Some((lib, cuda)) = gpu_assets() else {
            return;
        };
        if !has_gpu() {
            eprintln!("skipped: no GPU here");
            return;
        }
        envs.push(("SERVICE_ORT_LIBRARY", lib.display().to_string()));
        envs.push(("SERVICE_CUDA_LIB_DIR", cuda.display().to_string()));
    }
    let notes = corpus::notes(48);
    let memory_before = gpu_memory_used_mib();
    let gpu = Running::start(envs);
    let got: Vec<Value> = notes.iter().map(|n| gpu.extract(n)).collect();
    if candidate != "cpu" {
        let apps = nvidia_smi(&[
            "--query-compute-apps=pid,used_memory",
            "--format=csv,noheader",
        ]);
        let grew = gpu_memory_used_mib()
            .zip(memory_before)
            .is_some_and(|(after, before)| after >= before + 64);
        let listed = apps
            .as_deref()
            .is_some_and(|a| a.lines().any(|l| l.starts_with(&gpu.pid())));
        assert!(listed || grew, "the GPU shows no work: {apps:?}");
    }
    drop(gpu);
    let cpu = Running::start(vec![("SERVICE_DEVICE", "cpu".into())]);
    let mut compared = 0;
    for (note, got) in notes.iter().zip(&got) {
        let want = cpu.extract(note);
        let (want, got) = (&want["entities"], &got["entities"]);
        let key = |e: &Value| (e["label"].clone(), e["start"].clone(), e["end"].clone());
        let want_keys: Vec<_> = want.as_array().expect("entities").iter().map(key).collect();
        let got_keys: Vec<_> = got.as_array().expect("entities").iter().map(key).collect();
        assert_eq!(got_keys, want_keys, "entities differ from the CPU's");
        for (g, w) in got
            .as_array()
            .into_iter()
            .flatten()
            .zip(want.as_array().into_iter().flatten())
        {
            let (g, w) = (g["confidence"].as_f64(), w["confidence"].as_f64());
            let (g, w) = (g.expect("confidence"), w.expect("confidence"));
            assert!((g - w).abs() <= 1e-3, "confidence {g} vs CPU {w}");
            compared += 1;
        }
    }
    assert!(compared > notes.len(), "the corpus has entities to compare");
    eprintln!("{compared} entities equal on {candidate} and cpu");
}

fn nvidia_smi(args: &[&str]) -> Option<String> {
    let out = Command::new("nvidia-smi").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn gpu_memory_used_mib() -> Option<u64> {
    nvidia_smi(&["--query-gpu=memory.used", "--format=csv,noheader,nounits"])?
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .reduce(|a, b| a + b)
}

/// A `phiflow serve` process, ready, killed when dropped.
struct Running {
    child: Child,
    base: String,
}

impl Running {
    fn start(envs: Vec<(&str, String)>) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let child = serve(&envs)
            .env("SERVICE_PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("phiflow serve");
        let server = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        common::wait_ready(&server.base);
        server
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        Self::runtime().block_on(async {
            let r = common::client().get(url).send().await.expect("request");
            (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
        })
    }

    fn extract(&self, text: &str) -> Value {
        let url = format!("{}/pii/extract", self.base);
        Self::runtime().block_on(async {
            let r = common::client()
                .post(url)
                .json(&json!({ "text": text }))
                .send()
                .await
                .expect("request");
            assert_eq!(r.status(), 200);
            r.json().await.expect("json")
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
