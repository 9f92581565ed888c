//! The model registry: which models are installed, which are resident, and for how long.
//! Models load on first use (or at start-up), are kept alive per `keep_alive`, and are bounded
//! by a resident count and a memory budget with least-recently-used eviction of idle models.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::model::{ModelFiles, ModelInfo, TokenizerHandle};
use super::queue::{BatchQueue, GraphInputs, QueueConfig, QueueStats};
use super::{InferenceError, KeepAlive, OrtRuntime};

/// A loaded model: its tokenizer, labels and batching queue.
pub struct LoadedModel {
    pub id: String,
    pub info: ModelInfo,
    pub tokenizer: TokenizerHandle,
    pub queue: BatchQueue,
    /// Whether the graph takes `token_type_ids` (reported; the queue feeds it only then).
    pub takes_token_type_ids: bool,
}

struct Resident {
    model: Arc<LoadedModel>,
    active: usize,
    last_used: Instant,
    expires_at: Option<Instant>,
    keep_alive: KeepAlive,
    footprint: u64,
    loaded_at: SystemTime,
}

#[derive(Default)]
struct Inner {
    resident: HashMap<String, Resident>,
    evictions: u64,
    loads: u64,
}

impl Inner {
    /// Drops a resident model, counting why.
    fn remove(&mut self, id: &str, reason: &'static str) {
        if self.resident.remove(id).is_some() {
            let m = crate::metrics::Metrics::global();
            m.model_evictions.inc(&[id, reason]);
            m.inference_queue_depth.set(&[id], 0.0);
            self.publish();
        }
    }

    /// Publishes the resident count and bytes.
    fn publish(&self) {
        let m = crate::metrics::Metrics::global();
        m.models_resident.set(self.resident.len() as f64);
        m.models_resident_bytes
            .set(self.resident.values().map(|r| r.footprint).sum::<u64>() as f64);
    }
}

/// Limits and defaults the registry enforces.
#[derive(Clone, Debug)]
pub struct RegistryLimits {
    pub default_keep_alive: KeepAlive,
    pub max_resident: usize,
    pub memory_budget: u64,
    pub batch_token_budget: usize,
    pub batch_max_padding: f64,
    pub queue_capacity: usize,
}

/// Shared model registry.
pub struct ModelRegistry {
    runtime: OrtRuntime,
    models_dir: PathBuf,
    limits: RegistryLimits,
    inner: Mutex<Inner>,
    /// One load at a time: measured footprints stay honest and a model is never loaded twice.
    load_lock: tokio::sync::Mutex<()>,
}

/// A model in use by one request. Dropping it marks the model idle and applies the keep-alive.
pub struct ModelHandle {
    registry: Arc<ModelRegistry>,
    model: Arc<LoadedModel>,
    keep_alive: Option<KeepAlive>,
}

impl std::ops::Deref for ModelHandle {
    type Target = LoadedModel;
    fn deref(&self) -> &LoadedModel {
        &self.model
    }
}

impl ModelHandle {
    /// The loaded model, for work that outlives a borrow (blocking tasks).
    pub fn arc(&self) -> Arc<LoadedModel> {
        self.model.clone()
    }
}

impl Drop for ModelHandle {
    fn drop(&mut self) {
        self.registry.release(&self.model.id, self.keep_alive);
    }
}

/// One resident model in `GET /models/loaded`.
#[derive(Debug, serde::Serialize)]
pub struct LoadedModelReport {
    pub model_name: String,
    pub model_type: String,
    pub active_requests: usize,
    pub keep_alive_seconds: Option<f64>,
    pub keep_alive_seconds_remaining: Option<f64>,
    pub footprint_bytes: u64,
    pub loaded_at: String,
    pub idle_seconds: f64,
    pub labels: Vec<String>,
    pub max_positions: usize,
    pub takes_token_type_ids: bool,
    pub queue: QueueStats,
}

/// The whole registry for `GET /models/loaded`.
#[derive(Debug, serde::Serialize)]
pub struct RegistryReport {
    pub device: String,
    pub default_keep_alive_seconds: Option<f64>,
    pub max_resident_models: usize,
    pub memory_budget_bytes: u64,
    pub resident_memory_bytes: u64,
    pub loads_total: u64,
    pub evictions_total: u64,
    pub installed: Vec<String>,
    pub models: Vec<LoadedModelReport>,
}

/// What `POST /models/unload` did for one model.
#[derive(Debug, serde::Serialize)]
pub struct UnloadOutcome {
    pub model_name: String,
    pub unloaded: bool,
    pub active_requests: usize,
    pub reason: Option<&'static str>,
}

impl ModelRegistry {
    pub fn new(runtime: OrtRuntime, models_dir: PathBuf, limits: RegistryLimits) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            models_dir,
            limits,
            inner: Mutex::new(Inner::default()),
            load_lock: tokio::sync::Mutex::new(()),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means another thread panicked mid-update of plain counters.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn runtime(&self) -> &OrtRuntime {
        &self.runtime
    }

    /// Ids of every model directory under the models directory (`name` or `org/name`).
    pub fn installed(&self) -> Vec<String> {
        let mut ids = Vec::new();
        let Ok(top) = std::fs::read_dir(&self.models_dir) else {
            return ids;
        };
        for entry in top.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(String::from) else {
                continue;
            };
            if !path.is_dir() || name.starts_with('.') {
                continue;
            }
            if ModelFiles::discover(&name, &path).is_some() {
                ids.push(name.clone());
                continue;
            }
            for sub in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                let sub_path = sub.path();
                if let Some(sub_name) = sub_path.file_name().and_then(|n| n.to_str()) {
                    let id = format!("{name}/{sub_name}");
                    if sub_path.is_dir() && ModelFiles::discover(&id, &sub_path).is_some() {
                        ids.push(id);
                    }
                }
            }
        }
        ids.sort();
        ids
    }

    /// Files of an installed model, or a not-found error listing what is installed.
    pub fn files(&self, id: &str) -> Result<ModelFiles, InferenceError> {
        let dir = model_dir(&self.models_dir, id)?;
        ModelFiles::discover(id, &dir).ok_or_else(|| InferenceError::ModelNotFound {
            requested: id.to_string(),
            installed: self.installed(),
        })
    }

    /// The model for one request: resident, or loaded now.
    pub async fn acquire(
        self: &Arc<Self>,
        id: &str,
        keep_alive: Option<KeepAlive>,
    ) -> Result<ModelHandle, InferenceError> {
        if let Some(model) = self.checkout(id) {
            return Ok(ModelHandle {
                registry: self.clone(),
                model,
                keep_alive,
            });
        }
        let files = self.files(id)?;
        let _loading = self.load_lock.lock().await;
        if let Some(model) = self.checkout(id) {
            return Ok(ModelHandle {
                registry: self.clone(),
                model,
                keep_alive,
            });
        }
        // Each session holds its own copy of the weights.
        let sessions = self.runtime.sessions_per_model() as u64;
        let estimate = files
            .onnx_bytes()
            .saturating_mul(2)
            .saturating_mul(sessions);
        if estimate > self.limits.memory_budget {
            return Err(InferenceError::OverBudget {
                needed: estimate,
                budget: self.limits.memory_budget,
            });
        }
        self.make_room(estimate)?;
        let runtime = self.runtime.clone();
        let limits = self.limits.clone();
        let before = resident_bytes();
        let metrics = crate::metrics::Metrics::global();
        let started = Instant::now();
        let loaded = tokio::task::spawn_blocking(move || load(&runtime, &files, &limits))
            .await
            .map_err(|e| InferenceError::Runtime(format!("model load task failed: {e}")))
            .and_then(|r| r);
        metrics
            .model_loads
            .inc(&[id, if loaded.is_ok() { "ok" } else { "error" }]);
        let model = loaded?;
        metrics
            .model_load_seconds
            .observe_duration(&[id], started.elapsed());
        // What loading parsed and dropped (the ONNX file, the graph protobuf) goes back first,
        // so the footprint counts what the model holds.
        super::heap::release();
        let measured = resident_bytes().saturating_sub(before);
        let model = Arc::new(model);
        let mut inner = self.inner();
        inner.loads += 1;
        inner.resident.insert(
            id.to_string(),
            Resident {
                model: model.clone(),
                active: 1,
                last_used: Instant::now(),
                expires_at: None,
                keep_alive: keep_alive.unwrap_or(self.limits.default_keep_alive),
                footprint: measured.max(estimate / 2),
                loaded_at: SystemTime::now(),
            },
        );
        inner.publish();
        drop(inner);
        tracing::info!(model = id, footprint_bytes = measured, "model loaded");
        Ok(ModelHandle {
            registry: self.clone(),
            model,
            keep_alive,
        })
    }

    fn checkout(&self, id: &str) -> Option<Arc<LoadedModel>> {
        let mut inner = self.inner();
        let r = inner.resident.get_mut(id)?;
        r.active += 1;
        r.last_used = Instant::now();
        r.expires_at = None;
        Some(r.model.clone())
    }

    /// Evicts idle models, least recently used first, until one more of `needed` bytes fits.
    fn make_room(&self, needed: u64) -> Result<(), InferenceError> {
        let mut inner = self.inner();
        loop {
            let used: u64 = inner.resident.values().map(|r| r.footprint).sum();
            let fits = inner.resident.len() < self.limits.max_resident.max(1)
                && used.saturating_add(needed) <= self.limits.memory_budget;
            if fits {
                return Ok(());
            }
            let victim = inner
                .resident
                .iter()
                .filter(|(_, r)| r.active == 0)
                .min_by_key(|(_, r)| r.last_used)
                .map(|(id, _)| id.clone());
            match victim {
                Some(id) => {
                    let reason = if inner.resident.len() >= self.limits.max_resident.max(1) {
                        "lru"
                    } else {
                        "budget"
                    };
                    inner.remove(&id, reason);
                    inner.evictions += 1;
                    tracing::info!(model = %id, reason, "model evicted");
                }
                None => {
                    return Err(InferenceError::OverBudget {
                        needed,
                        budget: self.limits.memory_budget,
                    });
                }
            }
        }
    }

    fn release(&self, id: &str, keep_alive: Option<KeepAlive>) {
        let mut inner = self.inner();
        let Some(r) = inner.resident.get_mut(id) else {
            return;
        };
        r.active = r.active.saturating_sub(1);
        r.last_used = Instant::now();
        if let Some(k) = keep_alive {
            r.keep_alive = k;
        }
        if r.active > 0 {
            return;
        }
        match r.keep_alive {
            KeepAlive::UnloadNow => {
                inner.remove(id, "keep_alive");
                tracing::info!(model = id, "model unloaded (keep_alive 0)");
            }
            KeepAlive::For(d) => r.expires_at = Some(Instant::now() + d),
            KeepAlive::Forever => r.expires_at = None,
        }
    }

    /// Unloads idle models whose keep-alive has run out; called periodically.
    pub fn reap_expired(&self) {
        let now = Instant::now();
        let mut inner = self.inner();
        let expired: Vec<String> = inner
            .resident
            .iter()
            .filter(|(_, r)| r.active == 0 && r.expires_at.is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            inner.remove(&id, "keep_alive");
            tracing::info!(model = %id, "model unloaded (keep_alive expired)");
        }
    }

    /// Unloads one model unless a request is using it.
    pub fn unload(&self, id: &str) -> UnloadOutcome {
        let mut inner = self.inner();
        match inner.resident.get(id) {
            None => UnloadOutcome {
                model_name: id.into(),
                unloaded: false,
                active_requests: 0,
                reason: Some("not_loaded"),
            },
            Some(r) if r.active > 0 => UnloadOutcome {
                model_name: id.into(),
                unloaded: false,
                active_requests: r.active,
                reason: Some("active_requests"),
            },
            Some(_) => {
                inner.remove(id, "unload");
                UnloadOutcome {
                    model_name: id.into(),
                    unloaded: true,
                    active_requests: 0,
                    reason: None,
                }
            }
        }
    }

    /// Unloads every idle model.
    pub fn unload_all(&self) -> Vec<UnloadOutcome> {
        let ids: Vec<String> = self.inner().resident.keys().cloned().collect();
        let mut out: Vec<UnloadOutcome> = ids.iter().map(|id| self.unload(id)).collect();
        out.sort_by(|a, b| a.model_name.cmp(&b.model_name));
        out
    }

    pub fn is_resident(&self, id: &str) -> bool {
        self.inner().resident.contains_key(id)
    }

    pub fn resident_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.inner().resident.keys().cloned().collect();
        ids.sort();
        ids
    }

    pub fn report(&self) -> RegistryReport {
        let installed = self.installed();
        let inner = self.inner();
        let now = Instant::now();
        let mut models: Vec<LoadedModelReport> = inner
            .resident
            .iter()
            .map(|(id, r)| LoadedModelReport {
                model_name: id.clone(),
                model_type: r.model.info.model_type.clone(),
                active_requests: r.active,
                keep_alive_seconds: r.keep_alive.as_secs_f64(),
                keep_alive_seconds_remaining: r
                    .expires_at
                    .map(|t| t.saturating_duration_since(now).as_secs_f64()),
                footprint_bytes: r.footprint,
                loaded_at: chrono::DateTime::<chrono::Utc>::from(r.loaded_at)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                idle_seconds: if r.active > 0 {
                    0.0
                } else {
                    now.duration_since(r.last_used).as_secs_f64()
                },
                labels: r.model.info.labels.names().to_vec(),
                max_positions: r.model.info.max_positions,
                takes_token_type_ids: r.model.takes_token_type_ids,
                queue: r.model.queue.stats(),
            })
            .collect();
        models.sort_by(|a, b| a.model_name.cmp(&b.model_name));
        RegistryReport {
            device: format!("{:?}", self.runtime.device()).to_lowercase(),
            default_keep_alive_seconds: self.limits.default_keep_alive.as_secs_f64(),
            max_resident_models: self.limits.max_resident,
            memory_budget_bytes: self.limits.memory_budget,
            resident_memory_bytes: inner.resident.values().map(|r| r.footprint).sum(),
            loads_total: inner.loads,
            evictions_total: inner.evictions,
            installed,
            models,
        }
    }
}

/// Maps a model id to its directory, refusing anything that could leave the models directory.
fn model_dir(root: &Path, id: &str) -> Result<PathBuf, InferenceError> {
    let parts: Vec<&str> = id.split('/').collect();
    let valid_part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.len() <= 128
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if parts.len() > 2 || !parts.iter().all(|p| valid_part(p)) {
        return Err(InferenceError::InvalidModelName);
    }
    Ok(parts
        .iter()
        .fold(root.to_path_buf(), |p, part| p.join(part)))
}

fn load(
    runtime: &OrtRuntime,
    files: &ModelFiles,
    limits: &RegistryLimits,
) -> Result<LoadedModel, InferenceError> {
    let info = ModelInfo::read(files)?;
    let tokenizer = TokenizerHandle::load(&files.tokenizer)?;
    let sessions = runtime.sessions(&files.onnx)?;
    let inputs = GraphInputs::from_session(&sessions.wide)?;
    let takes_token_type_ids = inputs.token_type_ids.is_some();
    let queue = BatchQueue::start(
        &files.id,
        sessions,
        inputs,
        i64::from(tokenizer.pad_id),
        info.labels.len(),
        QueueConfig {
            token_budget: limits.batch_token_budget,
            max_padding: limits.batch_max_padding,
            capacity: limits.queue_capacity,
            shrink_host_arena: runtime.device() == crate::config::Device::Cpu,
        },
    )?;
    Ok(LoadedModel {
        id: files.id.clone(),
        info,
        tokenizer,
        queue,
        takes_token_type_ids,
    })
}

/// Resident set size of this process, from /proc (0 where unavailable).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// Spawns the task that unloads models whose keep-alive ran out.
pub fn spawn_reaper(registry: Arc<ModelRegistry>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            registry.reap_expired();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_stay_inside_the_models_dir() {
        let root = Path::new("/m");
        assert_eq!(
            model_dir(root, "org/name").ok(),
            Some(PathBuf::from("/m/org/name"))
        );
        assert_eq!(model_dir(root, "name").ok(), Some(PathBuf::from("/m/name")));
        for bad in [
            "../x",
            "a/../b",
            "/abs",
            "a/b/c",
            "",
            "a//b",
            "a b",
            "org/na$me",
        ] {
            assert!(model_dir(root, bad).is_err(), "{bad}");
        }
    }
}
