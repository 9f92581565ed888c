//! Secrets and source text at rest: webhook URL and secret, and each pending
//! document's text, sealed with ChaCha20-Poly1305 under a 32-byte key that
//! survives restarts, so pending work survives a crash. The database files
//! (and their WAL) never hold source text in the clear: once a document's
//! sealed text is purged, no page image that lingers holds readable text.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};

use super::JobError;

const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;

/// Seals and unseals webhook configs. Holds the key; never printed.
pub(crate) struct Sealer {
    cipher: ChaCha20Poly1305,
}

/// The sealed plaintext.
#[derive(Serialize, Deserialize)]
pub(super) struct SealedWebhook {
    pub url: String,
    pub secret: String,
}

impl Sealer {
    /// Uses `key` if given, else the key file `<db_path>.key` (created with
    /// 32 random bytes and mode 0600 on first use).
    pub(crate) fn load(key: Option<&[u8]>, db_path: &Path) -> Result<Self, JobError> {
        let key = match key {
            Some(k) => k.to_vec(),
            None => load_or_create_key_file(&key_path(db_path))?,
        };
        if key.len() != KEY_LEN {
            return Err(JobError::Seal(format!("seal key must be {KEY_LEN} bytes")));
        }
        Ok(Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(&key)),
        })
    }

    /// `nonce || ciphertext`; the job id is bound in as associated data so a
    /// blob cannot be moved to another job.
    pub(super) fn seal_webhook(
        &self,
        job_id: &str,
        url: &str,
        secret: &str,
    ) -> Result<Vec<u8>, JobError> {
        let plain = serde_json::to_vec(&SealedWebhook {
            url: url.to_owned(),
            secret: secret.to_owned(),
        })
        .map_err(|_| JobError::Seal("cannot encode webhook config".into()))?;
        self.seal(job_id.as_bytes(), &plain)
    }

    pub(super) fn unseal_webhook(
        &self,
        job_id: &str,
        blob: &[u8],
    ) -> Result<SealedWebhook, JobError> {
        let plain = self
            .open(job_id.as_bytes(), blob)
            .ok_or_else(|| JobError::Seal("cannot unseal webhook config (wrong key?)".into()))?;
        serde_json::from_slice(&plain)
            .map_err(|_| JobError::Seal("sealed webhook config is malformed".into()))
    }

    /// A document's source text, bound to its job and index.
    pub(super) fn seal_text(
        &self,
        job_id: &str,
        idx: i64,
        text: &str,
    ) -> Result<Vec<u8>, JobError> {
        self.seal(text_aad(job_id, idx).as_bytes(), text.as_bytes())
    }

    /// `None` when the blob does not open under this key for this document.
    pub(super) fn unseal_text(&self, job_id: &str, idx: i64, blob: &[u8]) -> Option<String> {
        let plain = self.open(text_aad(job_id, idx).as_bytes(), blob)?;
        String::from_utf8(plain).ok()
    }

    fn seal(&self, aad: &[u8], plain: &[u8]) -> Result<Vec<u8>, JobError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| JobError::Seal("no randomness".into()))?;
        let ct = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad })
            .map_err(|_| JobError::Seal("encryption failed".into()))?;
        let mut out = Vec::with_capacity(NONCE_LEN + ct.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    fn open(&self, aad: &[u8], blob: &[u8]) -> Option<Vec<u8>> {
        if blob.len() < NONCE_LEN {
            return None;
        }
        let (nonce, ct) = blob.split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad })
            .ok()
    }
}

/// Associated data of a document's text: its own domain, so a text blob can never open as a
/// webhook config (whose associated data is the bare job id) or as another document.
fn text_aad(job_id: &str, idx: i64) -> String {
    format!("{job_id}/documents/{idx}/text")
}

impl Sealer {
    /// Any secret sealed the same way (`nonce || ciphertext`), bound to `aad` (its owner's id).
    pub(crate) fn seal_bytes(&self, aad: &str, plain: &[u8]) -> Result<Vec<u8>, JobError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| JobError::Seal("no randomness".into()))?;
        let ct = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| JobError::Seal("encryption failed".into()))?;
        Ok([nonce.as_slice(), &ct].concat())
    }

    pub(crate) fn unseal_bytes(&self, aad: &str, blob: &[u8]) -> Result<Vec<u8>, JobError> {
        if blob.len() < NONCE_LEN {
            return Err(JobError::Seal("sealed secret is truncated".into()));
        }
        let (nonce, ct) = blob.split_at(NONCE_LEN);
        self.cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| JobError::Seal("cannot unseal a secret (wrong key?)".into()))
    }
}

pub(super) fn key_path(db_path: &Path) -> PathBuf {
    let mut p = db_path.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

fn load_or_create_key_file(path: &Path) -> Result<Vec<u8>, JobError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(mut file) => {
            let mut key = vec![0u8; KEY_LEN];
            getrandom::fill(&mut key).map_err(|_| JobError::Seal("no randomness".into()))?;
            file.write_all(&key)?;
            file.sync_all()?;
            tracing::info!("created webhook seal key file");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let mut key = Vec::with_capacity(KEY_LEN);
            std::fs::File::open(path)?.read_to_end(&mut key)?;
            Ok(key)
        }
        Err(e) => Err(e.into()),
    }
}
