//! Settings, validation and construction of the rustls server configuration.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::identity::ClientIdentity;
use super::principals::{CertPrincipal, PrincipalMap};
use crate::digest::sha256_hex;

/// PEM certificate chain (leaf first) served to clients.
pub const ENV_TLS_CERT: &str = "SERVICE_TLS_CERT";
/// PEM private key matching the leaf of [`ENV_TLS_CERT`].
pub const ENV_TLS_KEY: &str = "SERVICE_TLS_KEY";
/// PEM bundle of CAs whose client certificates are accepted; enables mTLS.
pub const ENV_MTLS_CA_BUNDLE: &str = "SERVICE_MTLS_CA_BUNDLE";
/// JSON list mapping certificate identities to principals and scopes.
pub const ENV_MTLS_PRINCIPALS: &str = "SERVICE_MTLS_PRINCIPALS";
/// `true` to refuse clients without a certificate at the handshake.
pub const ENV_MTLS_REQUIRED: &str = "SERVICE_MTLS_REQUIRED";

/// TLS settings as read from the environment; [`TlsSettings::build`] validates them.
#[derive(Clone, Debug, Default)]
pub struct TlsSettings {
    /// `SERVICE_TLS_CERT`: PEM certificate chain, leaf first.
    pub cert_path: PathBuf,
    /// `SERVICE_TLS_KEY`: PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_path: PathBuf,
    /// `SERVICE_MTLS_CA_BUNDLE`: enables client-certificate authentication.
    pub client_ca_path: Option<PathBuf>,
    /// `SERVICE_MTLS_PRINCIPALS`: the JSON text itself, not a path.
    pub principals_json: Option<String>,
    /// `SERVICE_MTLS_REQUIRED`: refuse certificate-less clients at the handshake.
    pub client_cert_required: bool,
}

/// Why the TLS settings could not be turned into a server configuration.
///
/// Messages name the setting or file at fault but never include key bytes.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// A setting is missing, has a bad value, or conflicts with another.
    #[error("{name}: {message}")]
    Setting {
        /// Environment variable name of the offending setting.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A referenced file could not be read.
    #[error("cannot read {what} from {}: {source}", path.display())]
    Read {
        /// Which file (e.g. "TLS private key").
        what: &'static str,
        /// Path as configured.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// A file was read but its PEM contents are unusable.
    #[error("invalid {what} in {}: {message}", path.display())]
    Pem {
        /// Which file.
        what: &'static str,
        /// Path as configured.
        path: PathBuf,
        /// Content-free description of the problem.
        message: String,
    },
    /// rustls rejected the assembled configuration (e.g. key does not match certificate).
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built from the CA bundle.
    #[error("{ENV_MTLS_CA_BUNDLE}: cannot build client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// How client certificates are treated at the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuthMode {
    /// No CA bundle: no certificate is requested.
    Disabled,
    /// Certificates are requested and verified if sent; clients without one get in
    /// with no identity.
    Optional,
    /// A verified certificate is mandatory.
    Required,
}

/// A validated, ready-to-serve TLS configuration plus the principal mapping.
pub struct TlsServer {
    config: Arc<ServerConfig>,
    principals: PrincipalMap,
    mode: ClientAuthMode,
    server_fingerprint: String,
    handshake_failures: AtomicU64,
}

impl fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsServer")
            .field("client_auth", &self.mode)
            .field("principal_entries", &self.principals.len())
            .field("server_cert_sha256", &self.server_fingerprint)
            .finish_non_exhaustive()
    }
}

impl TlsServer {
    /// The rustls configuration (ALPN `http/1.1`, client verifier per [`Self::client_auth`]).
    pub fn rustls_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.config)
    }

    /// Client-certificate policy in force.
    pub fn client_auth(&self) -> ClientAuthMode {
        self.mode
    }

    /// SHA-256 of the served leaf certificate, for a startup log line.
    pub fn server_cert_fingerprint_sha256(&self) -> &str {
        &self.server_fingerprint
    }

    /// Number of configured principal entries.
    pub fn principal_entries(&self) -> usize {
        self.principals.len()
    }

    /// Handshakes that failed or timed out since start, for metrics.
    pub fn handshake_failures(&self) -> u64 {
        self.handshake_failures.load(Ordering::Relaxed)
    }

    pub(super) fn record_handshake_failure(&self) -> u64 {
        self.handshake_failures.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Maps a verified certificate identity to its principal.
    ///
    /// An entry matches when one of its identities equals the full subject, a CN value
    /// or a SAN exactly (case-sensitive). No match, or matches in several entries,
    /// yields `mtls:<fingerprint>` with no scopes and `mapped = false`.
    pub fn principal_for(&self, identity: &ClientIdentity) -> CertPrincipal {
        self.principals.resolve(identity)
    }
}

impl TlsSettings {
    /// Reads the settings through `lookup` (environment-variable name → value).
    ///
    /// Returns `Ok(None)` when neither certificate nor key is set (plain HTTP). Any mTLS
    /// setting without a certificate and key is an error rather than silently ignored,
    /// so a deployment that believes it is authenticating clients cannot run without TLS.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, TlsConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let cert = get(ENV_TLS_CERT);
        let key = get(ENV_TLS_KEY);
        let ca = get(ENV_MTLS_CA_BUNDLE);
        let principals = get(ENV_MTLS_PRINCIPALS);
        let required = match get(ENV_MTLS_REQUIRED) {
            None => None,
            Some(v) => Some(parse_bool(&v).ok_or_else(|| TlsConfigError::Setting {
                name: ENV_MTLS_REQUIRED,
                message: format!("expected true or false, got {v:?}"),
            })?),
        };
        let (cert, key) = match (cert, key) {
            (Some(c), Some(k)) => (c, k),
            (None, None) => {
                let stray = [
                    (ENV_MTLS_CA_BUNDLE, ca.is_some()),
                    (ENV_MTLS_PRINCIPALS, principals.is_some()),
                    (ENV_MTLS_REQUIRED, required.is_some()),
                ]
                .into_iter()
                .find(|(_, set)| *set);
                return match stray {
                    Some((name, _)) => Err(TlsConfigError::Setting {
                        name,
                        message: format!("requires {ENV_TLS_CERT} and {ENV_TLS_KEY}"),
                    }),
                    None => Ok(None),
                };
            }
            (Some(_), None) => {
                return Err(TlsConfigError::Setting {
                    name: ENV_TLS_KEY,
                    message: format!("must be set when {ENV_TLS_CERT} is set"),
                });
            }
            (None, Some(_)) => {
                return Err(TlsConfigError::Setting {
                    name: ENV_TLS_CERT,
                    message: format!("must be set when {ENV_TLS_KEY} is set"),
                });
            }
        };
        Ok(Some(TlsSettings {
            cert_path: PathBuf::from(cert),
            key_path: PathBuf::from(key),
            client_ca_path: ca.map(PathBuf::from),
            principals_json: principals,
            client_cert_required: required.unwrap_or(false),
        }))
    }

    /// Loads and validates certificate, key, CA bundle and principals.
    pub fn build(&self) -> Result<TlsServer, TlsConfigError> {
        if self.client_ca_path.is_none() {
            if self.client_cert_required {
                return Err(TlsConfigError::Setting {
                    name: ENV_MTLS_REQUIRED,
                    message: format!("requires {ENV_MTLS_CA_BUNDLE}"),
                });
            }
            if self.principals_json.is_some() {
                return Err(TlsConfigError::Setting {
                    name: ENV_MTLS_PRINCIPALS,
                    message: format!("requires {ENV_MTLS_CA_BUNDLE}"),
                });
            }
        }
        let principals = match &self.principals_json {
            Some(json) => PrincipalMap::parse(json).map_err(|message| TlsConfigError::Setting {
                name: ENV_MTLS_PRINCIPALS,
                message,
            })?,
            None => PrincipalMap::default(),
        };

        let chain = load_certs(&self.cert_path, "TLS certificate chain")?;
        let server_fingerprint = chain
            .first()
            .map(|c| sha256_hex(c.as_ref()))
            .unwrap_or_default();
        let key = load_key(&self.key_path)?;

        // Pin the provider instead of relying on a process-wide default, so the
        // configuration does not depend on which rustls features other crates enable.
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?;

        let (builder, mode) = match &self.client_ca_path {
            None => (builder.with_no_client_auth(), ClientAuthMode::Disabled),
            Some(ca_path) => {
                let roots = load_roots(ca_path)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let (verifier, mode) = if self.client_cert_required {
                    (verifier, ClientAuthMode::Required)
                } else {
                    (verifier.allow_unauthenticated(), ClientAuthMode::Optional)
                };
                (builder.with_client_cert_verifier(verifier.build()?), mode)
            }
        };

        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| TlsConfigError::Pem {
                what: "TLS certificate/key pair",
                path: self.key_path.clone(),
                message: format!(
                    "key does not match the leaf certificate in {} or is unsupported: {e}",
                    self.cert_path.display()
                ),
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];

        Ok(TlsServer {
            config: Arc::new(config),
            principals,
            mode,
            server_fingerprint,
            handshake_failures: AtomicU64::new(0),
        })
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn read_file(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(path).map_err(|source| TlsConfigError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

/// Describes a PEM error without echoing file contents (the base64 decoder's message
/// and the offending lines may contain key material).
fn describe_pem_error(err: &pem::Error) -> String {
    match err {
        pem::Error::MissingSectionEnd { .. } => "a PEM section has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "malformed PEM BEGIN line".into(),
        pem::Error::Base64Decode(_) => "PEM section is not valid base64".into(),
        pem::Error::Io(e) => format!("I/O error: {}", e.kind()),
        pem::Error::NoItemsFound => "no usable PEM section found".into(),
        pem::Error::SectionTooLarge => "PEM section too large".into(),
        _ => "unreadable PEM".into(),
    }
}

fn load_certs(
    path: &Path,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let bytes = read_file(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::Pem {
            what,
            path: path.to_owned(),
            message: describe_pem_error(&e),
        })?;
    if certs.is_empty() {
        return Err(TlsConfigError::Pem {
            what,
            path: path.to_owned(),
            message: "no CERTIFICATE sections found".into(),
        });
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    const WHAT: &str = "TLS private key";
    let bytes = read_file(path, WHAT)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsConfigError::Pem {
        what: WHAT,
        path: path.to_owned(),
        message: match e {
            pem::Error::NoItemsFound => {
                "no PRIVATE KEY / RSA PRIVATE KEY / EC PRIVATE KEY section found".into()
            }
            other => describe_pem_error(&other),
        },
    })
}

fn load_roots(path: &Path) -> Result<RootCertStore, TlsConfigError> {
    const WHAT: &str = "client CA bundle";
    let certs = load_certs(path, WHAT)?;
    let mut roots = RootCertStore::empty();
    for (idx, cert) in certs.into_iter().enumerate() {
        roots.add(cert).map_err(|e| TlsConfigError::Pem {
            what: WHAT,
            path: path.to_owned(),
            message: format!("certificate {} is not a usable trust anchor: {e}", idx + 1),
        })?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn env_absent_means_plain_http() {
        assert!(TlsSettings::from_lookup(lookup(&[])).expect("ok").is_none());
        assert!(
            TlsSettings::from_lookup(lookup(&[(ENV_TLS_CERT, " ")]))
                .expect("ok")
                .is_none()
        );
    }

    #[test]
    fn env_full() {
        let s = TlsSettings::from_lookup(lookup(&[
            (ENV_TLS_CERT, "/c.pem"),
            (ENV_TLS_KEY, "/k.pem"),
            (ENV_MTLS_CA_BUNDLE, "/ca.pem"),
            (ENV_MTLS_PRINCIPALS, "[]"),
            (ENV_MTLS_REQUIRED, "TRUE"),
        ]))
        .expect("ok")
        .expect("some");
        assert_eq!(s.cert_path, PathBuf::from("/c.pem"));
        assert_eq!(s.client_ca_path, Some(PathBuf::from("/ca.pem")));
        assert_eq!(s.principals_json.as_deref(), Some("[]"));
        assert!(s.client_cert_required);
    }

    #[test]
    fn env_inconsistent() {
        let err = |pairs: &[(&str, &str)]| {
            TlsSettings::from_lookup(lookup(pairs))
                .expect_err("should fail")
                .to_string()
        };
        assert!(err(&[(ENV_TLS_CERT, "/c")]).starts_with(ENV_TLS_KEY));
        assert!(err(&[(ENV_TLS_KEY, "/k")]).starts_with(ENV_TLS_CERT));
        assert!(err(&[(ENV_MTLS_CA_BUNDLE, "/ca")]).starts_with(ENV_MTLS_CA_BUNDLE));
        assert!(
            err(&[
                (ENV_TLS_CERT, "/c"),
                (ENV_TLS_KEY, "/k"),
                (ENV_MTLS_REQUIRED, "maybe")
            ])
            .contains("maybe")
        );
    }

    #[test]
    fn build_reports_missing_file_by_path() {
        let settings = TlsSettings {
            cert_path: PathBuf::from("/nonexistent/dir/cert.pem"),
            key_path: PathBuf::from("/nonexistent/dir/key.pem"),
            ..TlsSettings::default()
        };
        let msg = settings.build().expect_err("missing").to_string();
        assert!(msg.contains("/nonexistent/dir/cert.pem"), "{msg}");
        assert!(msg.contains("TLS certificate chain"), "{msg}");
    }

    #[test]
    fn build_rejects_mtls_settings_without_ca() {
        let mut settings = TlsSettings {
            cert_path: PathBuf::from("/x"),
            key_path: PathBuf::from("/y"),
            client_cert_required: true,
            ..TlsSettings::default()
        };
        let msg = settings.build().expect_err("no ca").to_string();
        assert!(msg.starts_with(ENV_MTLS_REQUIRED), "{msg}");
        settings.client_cert_required = false;
        settings.principals_json = Some("[]".into());
        let msg = settings.build().expect_err("no ca").to_string();
        assert!(msg.starts_with(ENV_MTLS_PRINCIPALS), "{msg}");
    }

    #[test]
    fn build_reports_bad_principals_before_touching_files() {
        let settings = TlsSettings {
            cert_path: PathBuf::from("/x"),
            key_path: PathBuf::from("/y"),
            client_ca_path: Some(PathBuf::from("/z")),
            principals_json: Some("[{".into()),
            client_cert_required: false,
        };
        let msg = settings.build().expect_err("bad json").to_string();
        assert!(msg.starts_with(ENV_MTLS_PRINCIPALS), "{msg}");
    }

    #[test]
    fn pem_errors_do_not_echo_contents() {
        let secret = "SECRETSECRET";
        let msg = describe_pem_error(&pem::Error::Base64Decode(secret.into()));
        assert!(!msg.contains(secret));
        let msg = describe_pem_error(&pem::Error::IllegalSectionStart {
            line: secret.as_bytes().to_vec(),
        });
        assert!(!msg.contains(secret));
    }
}
