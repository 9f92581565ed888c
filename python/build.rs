//! Embeds the repository's pipeline and policy definitions (`../pipelines`), so the wheel
//! de-identifies exactly as the server built from the same commit, wherever it is installed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read {}", dir.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    println!("cargo:rerun-if-changed={}", dir.display());
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let pipelines = root.join("../pipelines");
    let pipelines = pipelines.canonicalize().expect("../pipelines exists");
    let mut files = Vec::new();
    collect(&pipelines, &mut files);
    files.sort();
    let mut code = String::from(
        "/// Pipeline files: (path relative to the pipelines directory, contents).\npub const FILES: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        let rel = f
            .strip_prefix(&pipelines)
            .expect("inside")
            .to_string_lossy()
            .replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_str!({:?})),",
            f.display().to_string()
        )
        .expect("write");
        println!("cargo:rerun-if-changed={}", f.display());
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("out dir")).join("pipelines.rs");
    std::fs::write(out, code).expect("write pipelines.rs");
}
