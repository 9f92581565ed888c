//! The incremental detection engine behind every PII route: one-shot extraction and
//! de-identification, their NDJSON streams, jobs and evaluation.
//!
//! Text arrives in pieces; the segmenter cuts it where only the text decides; each segment runs
//! through the model stages once (a few at a time, so the batching queue stays busy); the
//! finisher commits spans in order as soon as nothing later can change them. Because no decision
//! depends on how the text arrived, a stream and a one-shot call find exactly the same spans.
//! Working memory is a few segments and the finisher's region, whatever the text's length.

mod finisher;
mod segmenter;

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use finisher::Committed;
use finisher::Finisher;
pub use segmenter::{Segment, SegmentParams, Segmenter};

use crate::deid::canonical_label;
use crate::deid::operators::Target;
use crate::inference::LoadedModel;
use crate::pipeline::Pipeline;
use crate::stages::{RunOptions, RunStats, Source, Span, Spans, StageError};

/// How the engine cuts and holds text (the stream request's fields; one-shot routes use the
/// defaults).
#[derive(Clone, Copy, Debug)]
pub struct StreamParams {
    /// Characters fed to the engine at a time.
    pub chunk_chars: usize,
    /// Largest segment the model scores at once.
    pub window_chars: usize,
    /// Context the model sees on each side of a cut that is not at a sentence start.
    pub context_chars: usize,
    /// Longest identifier kept whole: spans are held back this far from the scored end.
    pub max_entity_chars: usize,
}

impl Default for StreamParams {
    fn default() -> Self {
        Self {
            chunk_chars: usize::MAX,
            window_chars: 4096,
            context_chars: 128,
            max_entity_chars: 512,
        }
    }
}

/// Segments scored at once: enough to keep the batching queue fed, few enough to bound memory.
const IN_FLIGHT: usize = 4;

type ModelTask = JoinHandle<Result<Spans, StageError>>;

/// A segment being scored: where its own text starts globally, and where it lies in the
/// scored text (which comes back as the spans' `original`).
struct Scoring {
    start: usize,
    own: Range<usize>,
    task: ModelTask,
}

/// Runs the engine over `text`, fed `chunk_chars` characters at a time, and sends committed
/// pieces in order. Stops early, without error, when the receiver goes away.
pub fn spawn(
    pipeline: Arc<Pipeline>,
    model: Arc<LoadedModel>,
    opts: Arc<RunOptions>,
    text: Arc<str>,
    params: StreamParams,
) -> (
    mpsc::Receiver<Committed>,
    JoinHandle<Result<RunStats, StageError>>,
) {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let task = tokio::spawn(run(pipeline, model, opts, text, params, tx));
    (rx, task)
}

async fn run(
    pipeline: Arc<Pipeline>,
    model: Arc<LoadedModel>,
    opts: Arc<RunOptions>,
    text: Arc<str>,
    params: StreamParams,
    tx: mpsc::Sender<Committed>,
) -> Result<RunStats, StageError> {
    let mut segmenter = Segmenter::new(SegmentParams {
        window_chars: params.window_chars,
        context_chars: params.context_chars,
        lang: opts.sentence_language.clone(),
    });
    let mut engine = Engine {
        pipeline,
        model,
        opts,
        finisher: Some(Finisher::new(
            params.max_entity_chars,
            params.max_entity_chars,
            params.window_chars,
        )),
        in_flight: VecDeque::new(),
        stats: RunStats::default(),
        tx,
    };
    let result = async {
        for piece in pieces(&text, params.chunk_chars) {
            segmenter.push(piece);
            while let Some(seg) = segmenter.next_segment() {
                if !engine.submit(seg, IN_FLIGHT).await? {
                    return Ok(());
                }
            }
        }
        segmenter.finish();
        while let Some(seg) = segmenter.next_segment() {
            if !engine.submit(seg, IN_FLIGHT).await? {
                return Ok(());
            }
        }
        while !engine.in_flight.is_empty() {
            if !engine.complete_one(engine.in_flight.len() == 1).await? {
                return Ok(());
            }
        }
        Ok(())
    }
    .await;
    for s in &engine.in_flight {
        s.task.abort();
    }
    result.map(|()| engine.stats)
}

/// `text` in pieces of `n` characters.
fn pieces(text: &str, n: usize) -> impl Iterator<Item = &str> {
    let n = n.max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(cut);
        rest = tail;
        Some(head)
    })
}

struct Engine {
    pipeline: Arc<Pipeline>,
    model: Arc<LoadedModel>,
    opts: Arc<RunOptions>,
    /// Taken while it runs on the blocking pool.
    finisher: Option<Finisher>,
    in_flight: VecDeque<Scoring>,
    stats: RunStats,
    tx: mpsc::Sender<Committed>,
}

impl Engine {
    /// Starts scoring a segment; first completes the oldest when `limit` are in flight.
    /// False when the receiver is gone.
    async fn submit(&mut self, seg: Segment, limit: usize) -> Result<bool, StageError> {
        while self.in_flight.len() >= limit {
            if !self.complete_one(false).await? {
                return Ok(false);
            }
        }
        let own = seg.own.clone();
        let text: Arc<str> = Arc::from(seg.text);
        let (p, m, o) = (self.pipeline.clone(), self.model.clone(), self.opts.clone());
        let task = tokio::spawn(async move { p.run_model(m, text, o).await });
        self.in_flight.push_back(Scoring {
            start: seg.start,
            own,
            task,
        });
        Ok(true)
    }

    /// Waits for the oldest segment, finishes the region and sends what it commits.
    async fn complete_one(&mut self, last: bool) -> Result<bool, StageError> {
        let Some(Scoring { start, own, task }) = self.in_flight.pop_front() else {
            return Ok(true);
        };
        let scored = task
            .await
            .map_err(|e| StageError::Internal(format!("segment task failed: {e}")))??;
        self.stats.tokens += scored.stats.tokens;
        self.stats.windows += scored.stats.windows;
        self.stats.sentences += scored.stats.sentences;
        let scored_text = scored.original.clone();
        let (model_spans, sentences) = own_spans(start, own.clone(), scored);
        let mut finisher = self
            .finisher
            .take()
            .ok_or_else(|| StageError::Internal("finisher lost".into()))?;
        let (p, m, o) = (self.pipeline.clone(), self.model.clone(), self.opts.clone());
        let (finisher, committed) = crate::parallel::on_cpu(move || {
            let c = finisher.push(
                &scored_text[own],
                model_spans,
                sentences,
                last,
                |spans, known| p.run_post(spans, &m, &o, known),
            );
            (finisher, c)
        })
        .await
        .map_err(|e| StageError::Internal(format!("finisher task failed: {e}")))?;
        self.finisher = Some(finisher);
        let committed = committed?;
        for s in &committed.spans {
            match (s.source, s.pattern.as_deref()) {
                (Source::Pattern, Some("propagation")) => self.stats.propagated += 1,
                (Source::Pattern, _) => self.stats.sweep_added += 1,
                (Source::Both, _) => self.stats.pattern_merged += 1,
                _ => {}
            }
        }
        Ok(self.tx.send(committed).await.is_ok())
    }
}

/// The model spans and sentence starts inside a segment's own text, in global byte offsets.
/// A span reaching into the context is cut at the segment's edge: the neighbour scores the
/// rest, and merging joins the pieces.
fn own_spans(start: usize, own: Range<usize>, scored: Spans) -> (Vec<Span>, Vec<usize>) {
    let global = |b: usize| b - own.start + start;
    let spans = scored
        .spans
        .into_iter()
        .filter(|s| s.end > own.start && s.start < own.end)
        .map(|s| Span {
            start: global(s.start.max(own.start)),
            end: global(s.end.min(own.end)),
            ..s
        })
        .collect();
    let sentences = scored
        .sentence_starts
        .into_iter()
        .filter(|b| own.contains(b))
        .map(global)
        .collect();
    (spans, sentences)
}

/// The spans of a whole text, through the engine with default parameters.
pub async fn detect(
    pipeline: Arc<Pipeline>,
    model: Arc<LoadedModel>,
    opts: Arc<RunOptions>,
    text: Arc<str>,
) -> Result<Spans, StageError> {
    let (mut rx, task) = spawn(pipeline, model, opts, text.clone(), StreamParams::default());
    let mut spans = Vec::new();
    while let Some(c) = rx.recv().await {
        spans.extend(c.spans);
    }
    let stats = task
        .await
        .map_err(|e| StageError::Internal(format!("engine task failed: {e}")))??;
    Ok(Spans {
        original: text,
        spans,
        sentence_starts: Vec::new(),
        stats,
    })
}

/// The operators' targets for spans, relative to byte `base`.
pub fn targets(spans: &[Span], base: usize) -> Vec<Target> {
    spans
        .iter()
        .map(|s| Target {
            start: s.start - base,
            end: s.end - base,
            label: canonical_label(&s.label),
        })
        .collect()
}
