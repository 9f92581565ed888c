//! Output files written atomically: a temporary sibling (mode 0600), synced, renamed into
//! place and the folder synced, so a reader (or a restart after kill -9) sees the whole file
//! or none of it. The sha256 of what was written comes back for the summary.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A file being written; [`AtomicFile::commit`] puts it in place.
pub struct AtomicFile {
    tmp: PathBuf,
    target: PathBuf,
    out: BufWriter<File>,
    hash: Sha256,
    bytes: u64,
}

/// What a committed file holds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Written {
    pub sha256: String,
    pub bytes: u64,
}

/// A fresh temporary sibling name for `target`.
fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Creates `path` only readable by its owner.
pub fn create_private(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// Creates `dir` (and parents) only accessible by its owner.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

impl AtomicFile {
    pub fn create(target: &Path) -> io::Result<Self> {
        let tmp = temp_path(target);
        let file = create_private(&tmp)?;
        Ok(Self {
            tmp,
            target: target.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, file),
            hash: Sha256::new(),
            bytes: 0,
        })
    }

    /// Syncs, renames into place and syncs the folder.
    pub fn commit(mut self) -> io::Result<Written> {
        self.out.flush()?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&self.tmp, &self.target)?;
        if let Some(dir) = self.target.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(Written {
            sha256: crate::digest::hex(&self.hash.finalize()),
            bytes: self.bytes,
        })
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The sha256 of a file's contents.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h)?;
    Ok(crate::digest::hex(&h.finalize()))
}

/// Leftover temporary files (from a process that died mid-write) in `dir`, removed.
pub fn remove_temporaries(dir: &Path) -> io::Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.contains(".tmp-") {
            fs::remove_file(e.path())?;
        }
    }
    Ok(())
}
