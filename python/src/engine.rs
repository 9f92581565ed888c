//! One de-identification engine per Python object: the core `Deidentifier`, its prepared
//! options, the loaded model and the tokio runtime that drives them. Every call into Rust runs
//! with the GIL released.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::RecordBatch;
use phiflow::deidentifier::{BatchColumns, DeidOptions, Deidentifier, Prepared, Subject};
use phiflow::inference::ModelHandle;

use crate::settings::{self, Overrides};

/// Models this process has loaded (one per engine built): Spark and Ray tests count them to
/// show that a worker process loads its model once.
pub static MODELS_LOADED: AtomicUsize = AtomicUsize::new(0);

/// Why an engine could not be built or a call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error("the options are invalid: {0}")]
    Options(String),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot write the embedded pipelines: {0}")]
    Pipelines(std::io::Error),
    #[error("cannot build the engine: {0}")]
    Build(#[from] phiflow::deidentifier::BuildError),
    #[error("{0}")]
    Deid(String),
}

/// What a stream and the Python object share; the runtime goes last, after what runs on it.
pub struct Core {
    model: Arc<ModelHandle>,
    prepared: Arc<Prepared>,
    engine: Arc<Deidentifier>,
    rt: tokio::runtime::Runtime,
}

/// The embedded pipeline definitions, written out for the core to load, removed after.
struct TempPipelines(PathBuf);

impl TempPipelines {
    /// Writes the definitions to `<tmp>/pipelines`, with `<tmp>/.assets` pointing at `assets`:
    /// the recognizers find their gazetteers (`.assets/gazetteers/…`) beside the pipelines, as
    /// they do in a checkout.
    fn write(assets: Option<&Path>) -> std::io::Result<Self> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "phiflow-pipelines-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let this = Self(dir);
        for (rel, text) in crate::pipelines::FILES {
            let path = this.path().join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        #[cfg(unix)]
        if let Some(assets) = assets.filter(|a| a.is_dir()) {
            std::os::unix::fs::symlink(assets, this.0.join(".assets"))?;
        }
        Ok(this)
    }

    fn path(&self) -> PathBuf {
        self.0.join("pipelines")
    }
}

impl Drop for TempPipelines {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Core {
    /// Builds the engine, prepares the options and loads the model (counted).
    pub fn build(o: Overrides, options_json: &str) -> Result<Self, EngineError> {
        let options: DeidOptions =
            serde_json::from_str(options_json).map_err(|e| EngineError::Options(e.to_string()))?;
        let chosen = settings::pipelines_chosen(&o);
        let workers = o
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, 4);
        let mut settings = settings::resolve(o)?;
        let embedded = if chosen {
            None
        } else {
            // The models folder's parent is the assets folder (`.assets/models`).
            let assets = std::path::absolute(&settings.models_dir)
                .ok()
                .and_then(|m| m.parent().map(Path::to_path_buf));
            let t = TempPipelines::write(assets.as_deref()).map_err(EngineError::Pipelines)?;
            settings.pipelines_dir = t.path();
            Some(t)
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("phiflow")
            .enable_all()
            .build()
            .map_err(EngineError::Runtime)?;
        let (engine, prepared, model) = rt.block_on(async move {
            let engine = Arc::new(Deidentifier::build(settings)?);
            drop(embedded);
            let prepared = engine.prepare(&options).map_err(deid_error)?;
            let model = engine.model(&prepared, None).await.map_err(deid_error)?;
            Ok::<_, EngineError>((engine, Arc::new(prepared), Arc::new(model)))
        })?;
        MODELS_LOADED.fetch_add(1, Ordering::SeqCst);
        Ok(Self {
            model,
            prepared,
            engine,
            rt,
        })
    }

    /// One text, keyed by its subject id: the core's output as JSON (the route's fields).
    pub fn deidentify(&self, text: &str, id: Option<&str>) -> Result<String, EngineError> {
        let d = self
            .rt
            .block_on(self.engine.run(
                &self.prepared,
                &self.model,
                Arc::from(text),
                Subject { id, known: &[] },
            ))
            .map_err(deid_error)?;
        let out = serde_json::json!({
            "deidentified_text": d.text,
            "entities": d.entities,
            "counts": d.counts,
            "shift_days": d.shift_days,
        });
        Ok(out.to_string())
    }

    /// One record batch: its columns plus the de-identified text, spans, status and error.
    pub fn deidentify_batch(
        &self,
        batch: &RecordBatch,
        cols: &BatchColumns,
    ) -> Result<RecordBatch, phiflow::deidentifier::BatchError> {
        self.rt.block_on(
            self.engine
                .deidentify_batch(&self.prepared, &self.model, batch, cols),
        )
    }

    /// Whether `SERVICE_DEID_SECRET_KEY` (or `secret_key`) is set.
    pub fn has_secret_key(&self) -> bool {
        self.engine.has_secret_key()
    }

    pub fn model_name(&self) -> &str {
        &self.prepared.model_name
    }
}

/// The core's error, without the text (messages carry fields and codes only).
fn deid_error(e: phiflow::deidentifier::DeidError) -> EngineError {
    match e {
        phiflow::deidentifier::DeidError::Invalid(conflicts) => EngineError::Options(
            conflicts
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        other => EngineError::Deid(other.to_string()),
    }
}
