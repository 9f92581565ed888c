//! Typed errors for loading the model and embedding text.

use std::path::PathBuf;

/// Everything that can go wrong loading the model or embedding text.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A configuration file is well-formed JSON but describes something this encoder does not
    /// implement (another pooling mode, activation, position embedding type, ...).
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("loading tokenizer {path}: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("tokenizing: {message}")]
    Tokenize { message: String },
    #[error("reading safetensors {path}: {source}")]
    SafeTensors {
        path: PathBuf,
        #[source]
        source: safetensors::SafeTensorError,
    },
    #[error("tensor {name} is missing from the weights file")]
    MissingTensor { name: String },
    #[error("tensor {name} has shape {found:?}, expected {expected:?}")]
    TensorShape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("tensor {name} has dtype {dtype}, expected F32, F16, BF16 or F64")]
    TensorDtype { name: String, dtype: String },
    /// The tokenizer produced an id outside the embedding tables: tokenizer.json and the
    /// weights do not belong together.
    #[error("token id {id} (type {type_id}) is outside the embedding tables")]
    TokenOutOfRange { id: u32, type_id: u32 },
    /// The caller's deadline passed; checked between transformer layers.
    #[error("embedding deadline exceeded")]
    DeadlineExceeded,
}
