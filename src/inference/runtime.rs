//! ONNX Runtime: loaded once from an explicit library path, sessions built on the configured
//! execution provider. CUDA that cannot be registered is an error, never a silent CPU fallback.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ort::ep::{self, ExecutionProvider};
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights};

use super::InferenceError;
use super::cuda::{self, CudaLibDir};
use super::initializers::{self, SharedInitializer};
use crate::config::{CudaArenaExtend, Device};

/// The process-wide environment; sessions refer to it, so it lives as long as the process.
static INIT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// The environment `init` created; sessions need it.
fn environment() -> Result<&'static ort::environment::Environment, InferenceError> {
    match INIT.get() {
        Some(Ok(env)) => Ok(env),
        _ => Err(InferenceError::Runtime(
            "ONNX Runtime is not initialised".into(),
        )),
    }
}

/// How sessions are created.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub device: Device,
    pub cuda_device_id: i32,
    /// Where the CUDA libraries are (`SERVICE_CUDA_LIB_DIR`; `system`: the loader's path).
    pub cuda_lib_dir: PathBuf,
    /// Most bytes the CUDA provider's memory arena may take per session.
    pub cuda_memory_limit: u64,
    pub cuda_arena_extend: CudaArenaExtend,
    /// Intra-op threads of the wide session (0: one per core on CPU, one on CUDA).
    pub threads: usize,
    /// Single-threaded worker sessions per loaded model beside the wide one (0: one per core on
    /// CPU, none on CUDA; 1: none, the wide session does all the work).
    pub workers: usize,
}

/// The sessions of one loaded model. Several single-threaded sessions, one worker each, beat one
/// session whose intra-op threads span all cores under concurrent load (measured on 2 cores:
/// 10.3k vs 8.9k tokens/s at batch 1): no barrier per operator, and a worker preempted by HTTP
/// work stalls only itself. The wide session keeps a lone request as fast as before: it runs a
/// batch when that batch is all the work there is and every other worker is idle.
pub struct Sessions {
    /// Empty when the wide session does all the work (`SERVICE_INFER_WORKERS=1`, CUDA).
    pub narrow: Vec<Session>,
    pub wide: Session,
}

/// What the sessions of one model share.
struct Shared {
    initializers: Vec<SharedInitializer>,
    prepacked: PrepackedWeights,
}

/// Proof that ONNX Runtime is loaded; the only way to make sessions.
#[derive(Clone, Debug)]
pub struct OrtRuntime {
    options: SessionOptions,
}

impl OrtRuntime {
    /// Loads the library (once per process) and checks the execution provider is usable.
    pub fn init(library: &Path, options: SessionOptions) -> Result<Self, InferenceError> {
        let loaded = INIT.get_or_init(|| {
            if !library.is_file() {
                return Err(format!(
                    "ONNX Runtime library not found at {} (run scripts/fetch-assets or set SERVICE_ORT_LIBRARY)",
                    library.display()
                ));
            }
            let builder = ort::init_from(library).map_err(|e| format!("cannot load ONNX Runtime: {e}"))?;
            let env = builder.with_name("phiflow").build().map_err(|e| format!("cannot start ONNX Runtime: {e}"))?;
            Ok(env)
        });
        if let Err(e) = loaded {
            return Err(InferenceError::Runtime(e.clone()));
        }
        if options.device == Device::Cuda {
            let available = <ep::CUDA as ExecutionProvider>::is_available().map_err(|e| {
                InferenceError::Runtime(format!("cannot query execution providers: {e}"))
            })?;
            if !available {
                return Err(InferenceError::Runtime(format!(
                    "SERVICE_DEVICE=cuda but this ONNX Runtime build has no CUDA execution \
                         provider (run scripts/fetch-assets --gpu and set SERVICE_ORT_LIBRARY={})",
                    crate::config::DEFAULT_GPU_ORT_LIBRARY
                )));
            }
            cuda::load(
                &CudaLibDir::from_setting(&options.cuda_lib_dir),
                options.cuda_device_id,
            )?;
        }
        Ok(Self { options })
    }

    pub fn device(&self) -> Device {
        self.options.device
    }

    /// A session with ONNX Runtime's own defaults (spinning threads included) on the configured
    /// device: the plain-loop baseline the load and GPU benches compare the service against.
    pub fn default_session(&self, onnx: &Path) -> Result<Session, InferenceError> {
        let mut builder =
            Session::builder(environment()?).map_err(|e| InferenceError::Runtime(e.to_string()))?;
        if self.options.device == Device::Cuda {
            builder = builder
                .with_execution_providers([ep::CUDA::default()
                    .with_device_id(self.options.cuda_device_id)
                    .build()
                    .error_on_failure()])
                .map_err(|e| {
                    InferenceError::Runtime(format!(
                        "CUDA execution provider could not be registered: {e}"
                    ))
                })?;
        }
        builder
            .commit_from_file(onnx)
            .map_err(|e| InferenceError::Runtime(format!("cannot create session: {e}")))
    }

    /// Single-threaded worker sessions per loaded model (0 when one wide session does it all).
    fn narrow_workers(&self) -> usize {
        let workers = match (self.options.workers, self.options.device) {
            (0, Device::Cpu) => crate::parallel::cores(),
            (0, Device::Cuda) => 1,
            (n, _) => n,
        };
        if workers > 1 { workers } else { 0 }
    }

    /// How many sessions (each with its own copy of the weights) a loaded model holds.
    pub fn sessions_per_model(&self) -> usize {
        self.narrow_workers() + 1
    }

    /// The sessions of one loaded model: the single-threaded workers and the wide one, sharing
    /// one copy of the weights and of their prepacked form (`initializers.rs`).
    pub fn sessions(&self, onnx: &Path) -> Result<Sessions, InferenceError> {
        // On CUDA the graph runs on the device and the host only launches kernels: one thread
        // leaves the cores to the request path (on an H200 host, 1 and 16 threads gave the same
        // throughput).
        let wide_threads = match (self.options.threads, self.options.device) {
            (0, Device::Cpu) => crate::parallel::cores(),
            (0, Device::Cuda) => 1,
            (n, _) => n,
        };
        let shared = Shared {
            initializers: self.shared_initializers(onnx)?,
            prepacked: PrepackedWeights::new(),
        };
        Ok(Sessions {
            narrow: (0..self.narrow_workers())
                .map(|_| self.session(onnx, 1, &shared))
                .collect::<Result<_, _>>()?,
            wide: self.session(onnx, wide_threads, &shared)?,
        })
    }

    /// The initializers a model's CPU sessions share; none for one session or on CUDA, where
    /// the weights live on the device and a host copy would only add to the footprint.
    fn shared_initializers(&self, onnx: &Path) -> Result<Vec<SharedInitializer>, InferenceError> {
        if self.options.device == Device::Cuda || self.narrow_workers() == 0 {
            return Ok(Vec::new());
        }
        let bytes = std::fs::read(onnx)
            .map_err(|e| InferenceError::Runtime(format!("cannot read {}: {e}", onnx.display())))?;
        initializers::read(&bytes).map_err(|e| {
            InferenceError::Runtime(format!(
                "cannot read the weights of {}: {e}",
                onnx.display()
            ))
        })
    }

    /// Builds a session for one ONNX file with `threads` intra-op threads.
    fn session(
        &self,
        onnx: &Path,
        threads: usize,
        shared: &Shared,
    ) -> Result<Session, InferenceError> {
        let err = |e: String| InferenceError::Runtime(e);
        let mut builder = Session::builder(environment()?)
            .map_err(|e| err(e.to_string()))?
            .with_prepacked_weights(&shared.prepacked)
            .map_err(|e| err(e.to_string()))?;
        for init in &shared.initializers {
            builder = builder
                .with_initializer(&init.name, init.value.clone())
                .map_err(|e| err(e.to_string()))?;
        }
        let mut builder = builder
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(|e| err(e.to_string()))?
            .with_intra_threads(threads)
            .map_err(|e| err(e.to_string()))?
            // Measured on 2 cores: a spinning wide session gives more end-to-end throughput
            // (of the plain loop, at concurrency 1 and 8: 0.89 and 1.10 spinning, 0.76 and
            // 1.08 not). A single-threaded session has no pool to spin.
            .with_intra_op_spinning(threads > 1)
            .map_err(|e| err(e.to_string()))?
            // Window lengths vary from batch to batch: a memory plan cached per input shape only
            // grows the arena over a long stream (seen as RSS creeping up with every new shape).
            .with_memory_pattern(false)
            .map_err(|e| err(e.to_string()))?;
        if self.options.device == Device::Cuda {
            // Device memory is bounded: the arena stops at the limit (a batch that needs more
            // fails with an error).
            let limit = usize::try_from(self.options.cuda_memory_limit).unwrap_or(usize::MAX);
            let extend = match self.options.cuda_arena_extend {
                CudaArenaExtend::PowerOfTwo => ep::ArenaExtendStrategy::NextPowerOfTwo,
                CudaArenaExtend::SameAsRequested => ep::ArenaExtendStrategy::SameAsRequested,
            };
            builder = builder
                .with_execution_providers([ep::CUDA::default()
                    .with_device_id(self.options.cuda_device_id)
                    .with_memory_limit(limit)
                    .with_arena_extend_strategy(extend)
                    .build()
                    .error_on_failure()])
                .map_err(|e| {
                    err(format!(
                        "CUDA execution provider could not be registered: {e}"
                    ))
                })?;
        }
        builder
            .commit_from_file(onnx)
            .map_err(|e| err(format!("cannot create session: {e}")))
    }
}
