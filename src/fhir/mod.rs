//! FHIR: bulk exports de-identified, from a server (SMART Backend Services + Bulk Data) or
//! from files already on disk, to NDJSON and Parquet per resource type.
//!
//! Network side (this module's `smart`, `bulk`, `manifest`, `origin`, `retry`):
//!
//! ```text
//! SmartClient::new(SmartConfig { token_url, client_id, private_key_pem, key_id, scope, .. })
//! BulkClient::new(BulkConfig::new(fhir_base_url), smart)
//!   .kick_off()                      -> StatusUrl      (GET $export, Prefer: respond-async, 202)
//!   .poll(&status_url, on_progress)  -> Manifest       (202 + Retry-After ... 200 manifest)
//!   .download(&manifest, &file, tmp) -> DownloadStats  (or .open() for an NdjsonReader)
//!   .cancel(&status_url)                               (DELETE on the status URL)
//!   .peak_inflight()
//! ```
//!
//! - **Auth**: the client assertion is signed RS384 (RSA key) or ES384 (EC P-384 key); the
//!   access token is cached, re-minted before it runs out and once after a 401.
//! - **Origin rule**: every URL called is on the origin of `fhir_base_url` or `token_url`;
//!   redirects are never followed. Anything else is [`BulkError::OffOrigin`] or
//!   [`BulkError::Redirect`].
//! - **Retries**: connect errors, timeouts, 5xx on files, 429/502/503/504 everywhere, with
//!   exponential backoff or the server's `Retry-After` ([`RetryPolicy`]).
//! - **Resume**: [`StatusUrl`] and [`Manifest`] are serde types; store them in a checkpoint and
//!   call `poll` or `download` again after a restart.
//! - **Secrets**: keys and tokens appear in no `Debug`, log line or error.

pub mod ages;
mod bulk;
pub mod cli;
pub mod dates;
pub mod export;
pub mod files;
mod manifest;
mod origin;
pub mod patients;
pub mod population;
pub mod pseudonym;
pub mod resource;
mod retry;
mod smart;
pub mod table;
pub mod types;
pub mod xhtml;

pub use bulk::{
    BulkClient, BulkConfig, BulkError, DownloadStats, MAX_LINE_BYTES, NdjsonReader, Phase,
    PollUpdate, ProgressHook,
};
pub use manifest::{Manifest, ManifestError, OutputFile, StatusUrl};
pub use origin::Origin;
pub use retry::{RetryPolicy, parse_retry_after};
pub use smart::{
    AccessToken, AssertionAlgorithm, CLIENT_ASSERTION_TYPE, SmartClient, SmartConfig, SmartError,
};
pub mod ingest;
pub mod ingest_store;
