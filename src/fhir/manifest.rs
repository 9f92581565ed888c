//! What a Bulk Data export hands back: the status URL from the kick-off and the completion
//! manifest. Both are serde types so a job can checkpoint them and resume without a new
//! kick-off or a new poll.

use serde::{Deserialize, Serialize};

/// The status URL (`Content-Location` of the kick-off answer), already checked against the
/// origin rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StatusUrl(pub(crate) String);

impl StatusUrl {
    /// A status URL restored from elsewhere (a checkpoint); the client checks it against the
    /// origin rule again before every use.
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One file of a manifest: NDJSON of resources of `type` (for `error`, OperationOutcome; for
/// `deleted`, Bundles of deleted-resource entries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    #[serde(rename = "type")]
    pub resource_type: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// The completion manifest (Bulk Data `200` status answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// FHIR `instant` the export reflects (RFC 3339); a later `_since` export starts here.
    pub transaction_time: String,
    /// The kick-off request URL, as the server records it.
    pub request: String,
    /// Whether file downloads need the bearer token. The spec makes the field mandatory; when
    /// a server leaves it out the token is sent (files are on an allowed origin anyway).
    #[serde(default = "default_true")]
    pub requires_access_token: bool,
    #[serde(default)]
    pub output: Vec<OutputFile>,
    /// OperationOutcome files. Older servers (Bulk Data drafts) call the key `outcome`.
    #[serde(default, alias = "outcome")]
    pub error: Vec<OutputFile>,
    /// Deleted-resource Bundles (Bulk Data 2.0, `_since` exports).
    #[serde(default)]
    pub deleted: Vec<OutputFile>,
}

fn default_true() -> bool {
    true
}

/// Why a manifest was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// serde's message names the line, column and expectation, never the content.
    #[error("manifest is not valid JSON of the Bulk Data shape: {0}")]
    Shape(String),
    #[error("manifest transactionTime is not an RFC 3339 instant")]
    TransactionTime,
    #[error("manifest {list}[{index}] has an empty type or url")]
    EmptyEntry { list: &'static str, index: usize },
}

impl Manifest {
    /// Parses and checks a manifest body.
    pub fn parse(body: &[u8]) -> Result<Self, ManifestError> {
        let manifest: Manifest =
            serde_json::from_slice(body).map_err(|e| ManifestError::Shape(shape_message(&e)))?;
        if chrono::DateTime::parse_from_rfc3339(&manifest.transaction_time).is_err() {
            return Err(ManifestError::TransactionTime);
        }
        for (list, files) in manifest.lists() {
            if let Some(index) = files
                .iter()
                .position(|f| f.resource_type.trim().is_empty() || f.url.trim().is_empty())
            {
                return Err(ManifestError::EmptyEntry { list, index });
            }
        }
        Ok(manifest)
    }

    /// `output`, `error` and `deleted`, named.
    pub fn lists(&self) -> [(&'static str, &[OutputFile]); 3] {
        [
            ("output", &self.output),
            ("error", &self.error),
            ("deleted", &self.deleted),
        ]
    }

    /// Every file of the manifest.
    pub fn all_files(&self) -> impl Iterator<Item = &OutputFile> {
        self.output
            .iter()
            .chain(self.error.iter())
            .chain(self.deleted.iter())
    }
}

/// serde_json's message without anything quoted from the input (an "invalid value" message
/// may quote a string it saw).
fn shape_message(e: &serde_json::Error) -> String {
    let kind = match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "wrong field types or missing fields",
        serde_json::error::Category::Eof => "truncated",
    };
    format!("{kind} at line {} column {}", e.line(), e.column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spec_example_and_round_trips() {
        let body = br#"{
          "transactionTime": "2021-01-01T00:00:00Z",
          "request": "https://example.com/fhir/Patient/$export?_type=Patient,Observation",
          "requiresAccessToken": true,
          "output": [
            {"type": "Patient", "url": "https://example.com/output/patient_file_1.ndjson"},
            {"type": "Observation", "url": "https://example.com/output/observation_file_1.ndjson", "count": 12}
          ],
          "deleted": [{"type": "Bundle", "url": "https://example.com/output/del_file_1.ndjson"}],
          "error": [{"type": "OperationOutcome", "url": "https://example.com/output/err_file_1.ndjson"}],
          "extension": {"https://example.com/extra-property": true}
        }"#;
        let m = Manifest::parse(body).expect("manifest");
        assert!(m.requires_access_token);
        assert_eq!(m.output.len(), 2);
        assert_eq!(m.output[1].count, Some(12));
        assert_eq!(m.error[0].resource_type, "OperationOutcome");
        assert_eq!(m.deleted.len(), 1);
        let stored = serde_json::to_vec(&m).expect("serialise");
        assert_eq!(Manifest::parse(&stored).expect("reparse"), m);
    }

    #[test]
    fn older_outcome_key_and_missing_lists() {
        let body = br#"{"transactionTime":"2019-05-01T10:00:00.000+02:00","request":"x",
          "requiresAccessToken":false,"output":[],
          "outcome":[{"type":"OperationOutcome","url":"https://e/o.ndjson"}]}"#;
        let m = Manifest::parse(body).expect("manifest");
        assert!(!m.requires_access_token);
        assert_eq!(m.error.len(), 1);
        assert!(m.deleted.is_empty());
    }

    #[test]
    fn bad_manifests_are_typed_errors_without_content() {
        let err = Manifest::parse(br#"{"transactionTime":"yesterday","request":"r"}"#)
            .expect_err("bad time");
        assert_eq!(err, ManifestError::TransactionTime);
        let err = Manifest::parse(br#"{"transactionTime":"2021-01-01T00:00:00Z","request":"r","output":[{"type":"","url":"u"}]}"#)
            .expect_err("empty type");
        assert_eq!(
            err,
            ManifestError::EmptyEntry {
                list: "output",
                index: 0
            }
        );
        let err = Manifest::parse(br#"{"request": "Sumiko Larue"}"#).expect_err("shape");
        assert!(!err.to_string().contains("Sumiko"), "{err}");
        assert!(Manifest::parse(b"<html>").is_err());
    }
}
