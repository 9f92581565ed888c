//! Small helpers the harness-less benches share: numbers from the environment, a
//! process's resident memory, and `phiflow serve` as a child process.

#![allow(dead_code)]

/// `name` from the environment as a number, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident memory of a process in bytes (VmRSS; 0 when unreadable).
pub fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// `phiflow serve` (the built binary) as its own process on a free 127.0.0.1 port, so a bench
/// can read its memory apart from the client's; killed on drop.
pub struct ServeProcess {
    pub child: std::process::Child,
    pub base: String,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `phiflow serve` with its data in a temp folder named `tag` and `env` on top, and
/// waits (blocking, up to `ready_within`) until `/readyz` answers 200.
pub fn serve(tag: &str, env: &[(&str, String)], ready_within: std::time::Duration) -> ServeProcess {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .arg("serve")
        .env("SERVICE_PORT", port.to_string())
        .env("SERVICE_DATA_DIR", std::env::temp_dir().join(tag))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start phiflow serve (run scripts/fetch-assets first)");
    let server = ServeProcess {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let deadline = std::time::Instant::now() + ready_within;
    while get_status(&format!("{}/readyz", server.base)) != Some(200) {
        assert!(
            std::time::Instant::now() < deadline,
            "server never became ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    server
}

/// Status of a GET with a plain socket (no runtime needed).
fn get_status(url: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/')?;
    let mut s = std::net::TcpStream::connect(host).ok()?;
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.split_whitespace().nth(1)?.parse().ok()
}
