//! `phiflow._native`: the de-identification core for Python (the `phiflow` package wraps it).
//! Arrow data crosses by the C data interface (no copy); all Rust work runs with the GIL
//! released, on the engine's own tokio runtime.

mod engine;
mod pipelines {
    include!(concat!(env!("OUT_DIR"), "/pipelines.rs"));
}
mod settings;
mod stream;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::RecordBatch;
use arrow_array::RecordBatchReader;
use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use phiflow::deidentifier::{BatchColumns, BatchError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use engine::{Core, EngineError};

fn engine_err(e: EngineError) -> PyErr {
    match e {
        EngineError::Settings(_) | EngineError::Options(_) => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

fn batch_err(e: BatchError) -> PyErr {
    match e {
        BatchError::Arrow(a) => PyRuntimeError::new_err(a.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// The engine: built once (model loaded), then called from any thread.
#[pyclass(frozen, module = "phiflow._native")]
struct Engine {
    core: Arc<Core>,
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (options_json, models_dir=None, model=None, pipelines_dir=None, ort_library=None, threads=None, device=None, cuda_device_id=None, secret_key=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        options_json: String,
        models_dir: Option<PathBuf>,
        model: Option<String>,
        pipelines_dir: Option<PathBuf>,
        ort_library: Option<PathBuf>,
        threads: Option<usize>,
        device: Option<String>,
        cuda_device_id: Option<i32>,
        secret_key: Option<String>,
    ) -> PyResult<Self> {
        let overrides = settings::Overrides {
            models_dir,
            model,
            pipelines_dir,
            ort_library,
            threads,
            device,
            cuda_device_id,
            secret_key,
        };
        let core = py
            .detach(|| Core::build(overrides, &options_json))
            .map_err(engine_err)?;
        Ok(Self {
            core: Arc::new(core),
        })
    }

    /// One text: the route's JSON (`deidentified_text`, `entities`, `counts`, `shift_days`).
    #[pyo3(signature = (text, id=None))]
    fn deidentify(&self, py: Python<'_>, text: String, id: Option<String>) -> PyResult<String> {
        py.detach(|| self.core.deidentify(&text, id.as_deref()))
            .map_err(engine_err)
    }

    /// One record batch in, the same rows out with the added columns.
    #[pyo3(signature = (batch, text_column, id_column=None))]
    fn deidentify_batch(
        &self,
        py: Python<'_>,
        batch: PyArrowType<RecordBatch>,
        text_column: String,
        id_column: Option<String>,
    ) -> PyResult<PyArrowType<RecordBatch>> {
        let cols = BatchColumns {
            text: text_column,
            id: id_column,
        };
        let out = py
            .detach(|| self.core.deidentify_batch(&batch.0, &cols))
            .map_err(batch_err)?;
        Ok(PyArrowType(out))
    }

    /// A reader of de-identified batches over any Arrow stream (read lazily).
    #[pyo3(signature = (reader, text_column, id_column=None))]
    fn deidentify_stream(
        &self,
        reader: PyArrowType<RecordBatchStreamReader>,
        text_column: String,
        id_column: Option<String>,
    ) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
        let cols = BatchColumns {
            text: text_column,
            id: id_column,
        };
        let s = stream::DeidStream::new(self.core.clone(), reader.0, cols).map_err(batch_err)?;
        Ok(PyArrowType(Box::new(s)))
    }

    #[getter]
    fn has_secret_key(&self) -> bool {
        self.core.has_secret_key()
    }

    #[getter]
    fn model_name(&self) -> String {
        self.core.model_name().to_string()
    }
}

/// The schema `deidentify_batch` gives for an input schema.
#[pyfunction]
fn output_schema(schema: PyArrowType<Schema>) -> PyResult<PyArrowType<Schema>> {
    let out = phiflow::deidentifier::output_schema(&schema.0).map_err(batch_err)?;
    Ok(PyArrowType(out.as_ref().clone()))
}

/// Models this process has loaded: one per engine built.
#[pyfunction]
fn models_loaded() -> usize {
    engine::MODELS_LOADED.load(Ordering::SeqCst)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(output_schema, m)?)?;
    m.add_function(wrap_pyfunction!(models_loaded, m)?)?;
    Ok(())
}
