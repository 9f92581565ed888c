//! Inference: ONNX Runtime sessions, the model registry (loading, keep-alive, LRU under a memory
//! budget) and one batching queue per loaded model. Knows nothing of HTTP or policy.

mod cuda;
mod heap;
mod initializers;
mod keep_alive;
mod model;
mod queue;
mod registry;
mod runtime;

pub use cuda::{CUDA_LIBRARIES, CudaError, CudaLibDir, DRIVER_LIBRARY};
pub use heap::{QuietHook, limit_malloc_arenas, on_quiet};
pub use keep_alive::KeepAlive;
pub use model::{LabelSet, ModelFiles, ModelInfo, TokenizerHandle, find_onnx_file};
pub use queue::{BatchQueue, GraphInputs, QueueStats, ScoredWindow, WindowInput};
pub use registry::{
    LoadedModel, LoadedModelReport, ModelHandle, ModelRegistry, RegistryLimits, RegistryReport,
    UnloadOutcome, spawn_reaper,
};
pub use runtime::{OrtRuntime, SessionOptions};

/// What can go wrong below the HTTP layer when a model is asked for or run.
#[derive(Debug, thiserror::Error)]
pub enum InferenceError {
    #[error("model not installed")]
    ModelNotFound {
        requested: String,
        installed: Vec<String>,
    },
    #[error("invalid model name")]
    InvalidModelName,
    #[error("model files are invalid: {0}")]
    InvalidModel(String),
    #[error("ONNX Runtime error: {0}")]
    Runtime(String),
    #[error(transparent)]
    Cuda(#[from] CudaError),
    #[error("inference queue is full")]
    QueueFull { retry_after_secs: u64 },
    #[error("model was unloaded while the request was waiting")]
    Unloaded,
    #[error("model memory budget cannot fit this model")]
    OverBudget { needed: u64, budget: u64 },
}
