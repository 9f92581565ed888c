//! A full disk during a job, made real with a file-size limit: the real binary runs with
//! `RLIMIT_FSIZE` lowered (via `prlimit(2)`) just above its job store's files, so SQLite's
//! writes fail as they would on a full file system (a short write, then `EFBIG`). The process
//! must survive (SIGXFSZ ignored), the job must wait without a hot loop and say so, creating
//! a job must answer 507, and all must resume once the limit is lifted ("space returns").

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn set_fsize_limit(pid: u32, soft: Option<u64>) {
    let limit = libc::rlimit {
        rlim_cur: soft.unwrap_or(libc::RLIM_INFINITY),
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: prlimit reads `limit` and writes nothing (old limit pointer is null).
    let rc = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// CPU seconds (user + system) the process has used, from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which is in parentheses): utime is the 12th, stime 13th.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

fn largest_file(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("data dir")
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn post_job(
    client: &reqwest::Client,
    base: &str,
    docs: &[String],
) -> (u16, Value, Option<String>) {
    let body = json!({ "documents": docs.iter().map(|t| json!({"text": t})).collect::<Vec<_>>() });
    let r = client
        .post(format!("{base}/jobs"))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    (status, r.json().await.unwrap_or(Value::Null), retry)
}

async fn job(client: &reqwest::Client, base: &str, id: &str) -> Value {
    client
        .get(format!("{base}/jobs/{id}"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_pauses_jobs_answers_507_and_resumes_when_space_returns() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let data = common::temp_dir("disk-full");
    let child = Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", &data)
        .env("SERVICE_LOG_JSON", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("phiflow serve");
    let mut child = Killed(child);
    let pid = child.0.id();
    let base = format!("http://127.0.0.1:{port}");
    common::wait_ready(&base);
    let client = common::client();

    // Room for the job's creation, not for all of its results.
    set_fsize_limit(pid, Some(largest_file(&data) + 96 * 1024));
    let note = |i: usize| {
        format!(
            "Note {i}: Jane Roe (MRN {}) was seen on 2021-03-{:02} by Dr. Alan Smith at \
             Springfield General; call 555-01{:02} to follow up. ",
            4_810_000 + i,
            1 + i % 28,
            i % 100
        )
        .repeat(3)
    };
    let docs: Vec<String> = (0..24).map(note).collect();
    let (status, body, _) = post_job(&client, &base, &docs).await;
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().expect("id").to_string();

    // The job fills the limit and then waits for storage, saying so.
    let deadline = Instant::now() + Duration::from_secs(120);
    let waiting = loop {
        let r = job(&client, &base, &id).await;
        if r["waiting_for"] == "storage" {
            break r;
        }
        assert_ne!(r["status"], "succeeded", "the limit was never reached: {r}");
        assert!(Instant::now() < deadline, "never waited for storage: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(waiting["status"], "running");
    assert!(
        child.0.try_wait().expect("wait").is_none(),
        "the process died"
    );

    // No hot loop: over three seconds of waiting, well under a core's worth of CPU.
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let share = (cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64();
    assert!(share < 0.5, "CPU share while waiting: {share:.2}");

    // A new job on a full disk: 507 with a clear code and Retry-After, not a 500.
    let (status, body, retry) = post_job(&client, &base, &docs).await;
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_storage");
    assert!(retry.is_some());
    let (_, ready) = (
        0,
        client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .expect("readyz"),
    );
    let ready: Value = ready.json().await.expect("json");
    assert!(ready["degraded"].to_string().contains("storage"), "{ready}");

    // Space returns: the job resumes and finishes, and new jobs are accepted.
    set_fsize_limit(pid, None);
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let r = job(&client, &base, &id).await;
        if r["status"] != "running" && r["status"] != "queued" {
            break r;
        }
        assert!(Instant::now() < deadline, "never resumed: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["processed_count"], 24);
    assert!(done.get("waiting_for").is_none());
    let (status, body, _) = post_job(&client, &base, &docs[..1]).await;
    assert_eq!(status, 202, "{body}");

    let _ = child.0.kill();
    let _ = child.0.wait();
    let mut log = String::new();
    child
        .0
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut log)
        .expect("log");
    // The wait was logged once, not once per retry.
    let errors = log
        .lines()
        .filter(|l| l.contains("\"level\":\"ERROR\""))
        .count();
    assert!(errors <= 3, "{errors} ERROR lines:\n{log}");
    assert!(log.contains("waiting for storage"));
    assert!(log.contains("storage is back"));
}
