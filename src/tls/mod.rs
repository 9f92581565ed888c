//! HTTPS serving with optional mutual TLS (client-certificate) authentication.
//!
//! The service terminates TLS itself (rustls with the aws-lc-rs provider) so that a
//! deployment without a sidecar proxy still gets encryption in transit and, when a CA
//! bundle is configured, cryptographic service-to-service identities. Verified client
//! certificates are reduced to a [`ClientIdentity`] and mapped to a [`CertPrincipal`]
//! which request handlers read from the request extensions.
//!
//! Nothing here logs key material or certificate contents; certificates only ever
//! appear in logs as their SHA-256 fingerprint.

mod config;
mod identity;
mod principals;
mod serve;

pub use config::{
    ClientAuthMode, ENV_MTLS_CA_BUNDLE, ENV_MTLS_PRINCIPALS, ENV_MTLS_REQUIRED, ENV_TLS_CERT,
    ENV_TLS_KEY, TlsConfigError, TlsServer, TlsSettings,
};
pub use identity::ClientIdentity;
pub use principals::CertPrincipal;
pub use serve::{HANDSHAKE_TIMEOUT, serve};
