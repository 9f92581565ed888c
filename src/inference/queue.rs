//! One batching queue per loaded model: a dedicated thread owns the ONNX Runtime session, packs
//! windows from all concurrent requests into batches under a padded-token budget (sorted by
//! length to cut padding), runs them and routes each window's scores back to its caller.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use ort::session::Session;
use ort::value::Tensor;
use tokio::sync::oneshot;

use super::InferenceError;

/// One window as the model sees it: token ids with the special tokens already in place.
#[derive(Clone, Debug)]
pub struct WindowInput {
    pub ids: Vec<i64>,
}

/// Per-token class probabilities of one window, row-major `tokens × labels`.
#[derive(Debug)]
pub struct ScoredWindow {
    pub probs: Vec<f32>,
    pub num_labels: usize,
}

impl ScoredWindow {
    pub fn token(&self, i: usize) -> &[f32] {
        &self.probs[i * self.num_labels..(i + 1) * self.num_labels]
    }
}

type Reply = oneshot::Sender<Result<ScoredWindow, InferenceError>>;

struct WorkItem {
    input: WindowInput,
    reply: Reply,
}

/// Counters since the model was loaded; `busy_seconds` is time spent inside `Session::run`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct QueueStats {
    pub depth: usize,
    pub capacity: usize,
    pub batches: u64,
    pub windows: u64,
    pub tokens: u64,
    pub padded_tokens: u64,
    pub busy_seconds: f64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    windows: AtomicU64,
    tokens: AtomicU64,
    padded_tokens: AtomicU64,
    busy_nanos: AtomicU64,
}

/// The graph's inputs, decided once from the session.
#[derive(Clone, Debug)]
pub struct GraphInputs {
    pub input_ids: String,
    pub attention_mask: Option<String>,
    pub token_type_ids: Option<String>,
    pub output: String,
}

impl GraphInputs {
    /// Reads input and output names; any other required input makes the model unusable here.
    pub fn from_session(session: &Session) -> Result<Self, InferenceError> {
        let mut input_ids = None;
        let mut attention_mask = None;
        let mut token_type_ids = None;
        for input in session.inputs() {
            match input.name() {
                "input_ids" => input_ids = Some(input.name().to_string()),
                "attention_mask" => attention_mask = Some(input.name().to_string()),
                "token_type_ids" => token_type_ids = Some(input.name().to_string()),
                other => {
                    return Err(InferenceError::InvalidModel(format!(
                        "graph input `{other}` is not one of input_ids, attention_mask, token_type_ids"
                    )));
                }
            }
            if let ort::value::ValueType::Tensor { ty, .. } = input.dtype()
                && *ty != ort::value::TensorElementType::Int64
            {
                return Err(InferenceError::InvalidModel(format!(
                    "graph input `{}` must be int64",
                    input.name()
                )));
            }
        }
        let outputs = session.outputs();
        let output = outputs
            .iter()
            .find(|o| o.name() == "logits")
            .or_else(|| outputs.first())
            .map(|o| o.name().to_string())
            .ok_or_else(|| InferenceError::InvalidModel("graph has no outputs".into()))?;
        Ok(Self {
            input_ids: input_ids.ok_or_else(|| {
                InferenceError::InvalidModel("graph has no input_ids input".into())
            })?,
            attention_mask,
            token_type_ids,
            output,
        })
    }
}

/// How a queue batches and how much it holds.
#[derive(Clone, Copy, Debug)]
pub struct QueueConfig {
    /// Padded tokens per batch.
    pub token_budget: usize,
    /// Largest padded/real − 1 a batch may reach.
    pub max_padding: f64,
    /// Windows waiting before submissions are refused.
    pub capacity: usize,
}

/// The queue in front of one session.
pub struct BatchQueue {
    model_id: String,
    tx: Mutex<Option<mpsc::Sender<WorkItem>>>,
    depth: Arc<AtomicUsize>,
    capacity: usize,
    counters: Arc<Counters>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl BatchQueue {
    /// Starts the worker thread that owns `session`.
    pub fn start(
        model_id: &str,
        session: Session,
        inputs: GraphInputs,
        pad_id: i64,
        num_labels: usize,
        config: QueueConfig,
    ) -> Result<Self, InferenceError> {
        let QueueConfig {
            token_budget,
            max_padding,
            capacity,
        } = config;
        let (tx, rx) = mpsc::channel::<WorkItem>();
        let depth = Arc::new(AtomicUsize::new(0));
        let counters = Arc::new(Counters::default());
        let worker = Worker {
            session,
            inputs,
            pad_id,
            num_labels,
            token_budget: token_budget.max(1),
            max_padding: max_padding.max(0.0),
            depth: depth.clone(),
            counters: counters.clone(),
            model_id: model_id.to_string(),
        };
        let handle = std::thread::Builder::new()
            .name(format!(
                "infer-{}",
                model_id.rsplit('/').next().unwrap_or("model")
            ))
            .spawn(move || worker.run(rx))
            .map_err(|e| InferenceError::Runtime(format!("cannot start inference thread: {e}")))?;
        Ok(Self {
            model_id: model_id.to_string(),
            tx: Mutex::new(Some(tx)),
            depth,
            capacity: capacity.max(1),
            counters,
            worker: Mutex::new(Some(handle)),
        })
    }

    /// Enqueues windows; all or none. A request larger than the whole queue is admitted only
    /// into an empty queue, so long texts are never refused for their length alone.
    pub fn submit(
        &self,
        windows: Vec<WindowInput>,
    ) -> Result<Vec<oneshot::Receiver<Result<ScoredWindow, InferenceError>>>, InferenceError> {
        let n = windows.len();
        let admitted = self
            .depth
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| {
                (d == 0 || d + n <= self.capacity).then_some(d + n)
            });
        if admitted.is_err() {
            crate::metrics::Metrics::global()
                .inference_queue_rejections
                .inc(&[self.model_id.as_str()]);
            return Err(InferenceError::QueueFull {
                retry_after_secs: 1,
            });
        }
        let guard = self.tx.lock().map_err(|_| InferenceError::Unloaded)?;
        let Some(tx) = guard.as_ref() else {
            self.depth.fetch_sub(n, Ordering::AcqRel);
            return Err(InferenceError::Unloaded);
        };
        let mut receivers = Vec::with_capacity(n);
        for input in windows {
            let (reply, rx) = oneshot::channel();
            if tx.send(WorkItem { input, reply }).is_err() {
                self.depth.fetch_sub(1, Ordering::AcqRel);
            }
            receivers.push(rx);
        }
        Ok(receivers)
    }

    pub fn stats(&self) -> QueueStats {
        let c = &self.counters;
        QueueStats {
            depth: self.depth.load(Ordering::Acquire),
            capacity: self.capacity,
            batches: c.batches.load(Ordering::Relaxed),
            windows: c.windows.load(Ordering::Relaxed),
            tokens: c.tokens.load(Ordering::Relaxed),
            padded_tokens: c.padded_tokens.load(Ordering::Relaxed),
            busy_seconds: c.busy_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

impl Drop for BatchQueue {
    /// Closes the queue; the worker finishes what it holds, then exits with the session.
    fn drop(&mut self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        if let Some(handle) = self.worker.lock().ok().and_then(|mut w| w.take()) {
            let _ = handle.join();
        }
    }
}

struct Worker {
    session: Session,
    inputs: GraphInputs,
    pad_id: i64,
    num_labels: usize,
    token_budget: usize,
    /// Largest padded/real − 1 a batch may reach (on CPU, padding costs more than batching gains).
    max_padding: f64,
    depth: Arc<AtomicUsize>,
    counters: Arc<Counters>,
    /// The metrics label (an installed model id, never caller text).
    model_id: String,
}

impl Worker {
    fn run(mut self, rx: mpsc::Receiver<WorkItem>) {
        let mut pending: Vec<WorkItem> = Vec::new();
        // Block for the first item, take whatever else is already waiting, then run all of it,
        // shortest first, before looking again: fair across requests, minimal padding.
        while let Ok(first) = rx.recv() {
            pending.push(first);
            pending.extend(rx.try_iter());
            pending.sort_by_key(|w| w.input.ids.len());
            let mut items = std::mem::take(&mut pending).into_iter().peekable();
            while items.peek().is_some() {
                let mut batch = Vec::new();
                let mut real = 0usize;
                while let Some(next) = items.peek() {
                    let len = next.input.ids.len();
                    let padded = len * (batch.len() + 1);
                    let padding = padded as f64 / (real + len) as f64 - 1.0;
                    if !batch.is_empty()
                        && (padded > self.token_budget || padding > self.max_padding)
                    {
                        break;
                    }
                    real += len;
                    batch.extend(items.next());
                }
                let n = batch.len();
                self.run_batch(batch);
                self.depth.fetch_sub(n, Ordering::AcqRel);
            }
        }
    }

    fn run_batch(&mut self, batch: Vec<WorkItem>) {
        let started = Instant::now();
        let result = self.infer(&batch);
        let c = &self.counters;
        c.busy_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        c.batches.fetch_add(1, Ordering::Relaxed);
        c.windows.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let max_len = batch.iter().map(|w| w.input.ids.len()).max().unwrap_or(0);
        let real: usize = batch.iter().map(|w| w.input.ids.len()).sum();
        c.tokens.fetch_add(real as u64, Ordering::Relaxed);
        c.padded_tokens
            .fetch_add((max_len * batch.len()) as u64, Ordering::Relaxed);
        let m = crate::metrics::Metrics::global();
        let label = [self.model_id.as_str()];
        m.inference_batches.inc(&label);
        m.inference_batch_size.observe(&label, batch.len() as f64);
        m.inference_batch_padding_ratio.observe(
            &label,
            (max_len * batch.len()) as f64 / real.max(1) as f64 - 1.0,
        );
        m.inference_batch_seconds
            .observe_duration(&label, started.elapsed());
        match result {
            Ok(windows) => {
                for (item, scored) in batch.into_iter().zip(windows) {
                    let _ = item.reply.send(Ok(scored));
                }
            }
            Err(msg) => {
                for item in batch {
                    let _ = item.reply.send(Err(InferenceError::Runtime(msg.clone())));
                }
            }
        }
    }

    /// Pads to the longest window, runs the graph, and turns logits into probabilities.
    fn infer(&mut self, batch: &[WorkItem]) -> Result<Vec<ScoredWindow>, String> {
        let b = batch.len();
        let len = batch.iter().map(|w| w.input.ids.len()).max().unwrap_or(0);
        let mut ids = vec![self.pad_id; b * len];
        let mut mask = vec![0i64; b * len];
        for (row, item) in batch.iter().enumerate() {
            let n = item.input.ids.len();
            ids[row * len..row * len + n].copy_from_slice(&item.input.ids);
            mask[row * len..row * len + n].fill(1);
        }
        let tensor =
            |data: Vec<i64>| Tensor::from_array(([b, len], data)).map_err(|e| e.to_string());
        let mut feed: Vec<(String, ort::session::SessionInputValue<'_>)> =
            vec![(self.inputs.input_ids.clone(), tensor(ids)?.into())];
        if let Some(name) = &self.inputs.attention_mask {
            feed.push((name.clone(), tensor(mask)?.into()));
        }
        if let Some(name) = &self.inputs.token_type_ids {
            feed.push((name.clone(), tensor(vec![0i64; b * len])?.into()));
        }
        let outputs = self.session.run(feed).map_err(|e| e.to_string())?;
        let logits = outputs
            .get(&self.inputs.output)
            .ok_or_else(|| "graph produced no logits".to_string())?;
        let (shape, data) = logits
            .try_extract_tensor::<f32>()
            .map_err(|e| e.to_string())?;
        let c = self.num_labels;
        if shape.len() != 3
            || shape[0] as usize != b
            || shape[1] as usize != len
            || shape[2] as usize != c
        {
            return Err(format!(
                "logits shape {shape:?} does not match batch {b}×{len}×{c}"
            ));
        }
        Ok(batch
            .iter()
            .enumerate()
            .map(|(row, item)| {
                let n = item.input.ids.len();
                let mut probs = data[row * len * c..(row * len + n) * c].to_vec();
                for token in probs.chunks_mut(c) {
                    softmax(token);
                }
                ScoredWindow {
                    probs,
                    num_labels: c,
                }
            })
            .collect())
    }
}

fn softmax(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in v.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    if sum > 0.0 {
        for x in v.iter_mut() {
            *x /= sum;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn softmax_sums_to_one() {
        let mut v = [1.0f32, 2.0, 3.0];
        super::softmax(&mut v);
        assert!((v.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(v[2] > v[1] && v[1] > v[0]);
    }
}
