//! POST /pii/extract/stream and POST /pii/deidentify/stream: NDJSON records sent as the engine
//! commits spans. Everything that can be refused (body, options, model) is refused before the
//! stream starts, with an ordinary error response; a failure after the first record ends the
//! stream with one `error` record.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::body::read_json_limited;
use super::detect::{keep_alive_of, language_warning, now_rfc3339};
use super::error::{ApiError, request_id};
use super::schemas;
use super::state::AppState;
use crate::deid::canonical_label;
use crate::deid::operators::{Redaction, Rewriter};
use crate::deidentifier::{DeidOptions, EntityShaper};
use crate::stages::{CharIndex, RunOptions, RunStats, Source, StageError};
use crate::streaming::{self, Committed, StreamParams};

const NDJSON: &str = "application/x-ndjson";

/// The body, validated, with its `text` moved out (never copied: it may be most of the body).
async fn read_text_and_options<T: for<'de> Deserialize<'de>>(
    req: Request,
    state: &AppState,
    schema: &'static super::validate::Schema,
) -> Result<(String, T, Value), ApiError> {
    let mut raw =
        read_json_limited(req, schema, state.settings.max_stream_body_bytes, None).await?;
    let text = match raw.get_mut("text").map(Value::take) {
        Some(Value::String(s)) => s,
        _ => {
            return Err(ApiError::validation_one(
                &[json!("body"), json!("text")],
                "missing",
                "Field required",
                None,
            ));
        }
    };
    let options = T::deserialize(&raw).map_err(|_| {
        ApiError::validation_one(
            &[json!("body")],
            "value_error",
            "Value error, the request does not match its schema",
            None,
        )
    })?;
    Ok((text, options, raw))
}

/// An NDJSON response fed by a channel of lines.
pub fn ndjson(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    ([(header::CONTENT_TYPE, NDJSON)], Body::from_stream(stream)).into_response()
}

/// Sends one record as a line; false when the client has gone.
async fn send(tx: &mpsc::Sender<Bytes>, record: &impl Serialize) -> bool {
    let mut line = serde_json::to_vec(record).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    tx.send(Bytes::from(line)).await.is_ok()
}

const EXTRACT_ROUTE: &str = "/pii/extract/stream";
const DEIDENTIFY_ROUTE: &str = "/pii/deidentify/stream";

fn record_sent(route: &'static str, kind: &'static str) {
    crate::metrics::Metrics::global()
        .stream_records
        .inc(&[route, kind]);
}

/// The last record of a stream that failed after it started.
fn error_record(e: StageError, request_id: Option<&str>) -> Value {
    let (code, message) = ApiError::from(e).code_and_message();
    json!({
        "type": "error",
        "error": { "code": code, "message": message, "details": null, "request_id": request_id },
    })
}

/// Waits for the engine: its stats as the `stats` object of the final record, or `None` after
/// ending the stream with an error record.
async fn engine_stats(
    task: tokio::task::JoinHandle<Result<RunStats, StageError>>,
    tx: &mpsc::Sender<Bytes>,
    request_id: Option<&str>,
    route: &'static str,
) -> Option<Value> {
    let failure = match task.await {
        Ok(Ok(stats)) => return Some(json!(stats)),
        Ok(Err(e)) => e,
        Err(e) => StageError::Internal(format!("engine task failed: {e}")),
    };
    send(tx, &error_record(failure, request_id)).await;
    record_sent(route, "error");
    None
}

#[derive(Deserialize)]
struct ExtractStreamOptions {
    confidence_threshold: Option<f64>,
    lang: Option<String>,
    model_name: Option<String>,
    normalize_accents: Option<bool>,
    use_smart_merging: Option<bool>,
    chunk_size: Option<usize>,
    include_text: Option<bool>,
    max_entity_chars: Option<usize>,
    tokenizer_context_chars: Option<usize>,
    window_chars: Option<usize>,
}

/// One span of the extraction stream. `id` is stable for a label at a position.
#[derive(Serialize)]
struct SpanRecord<'a> {
    id: String,
    label: &'a str,
    canonical_label: &'static str,
    hipaa_class: &'static str,
    confidence: f64,
    start: usize,
    end: usize,
    byte_start: usize,
    byte_end: usize,
    source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pattern: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

/// What the final record needs of a sent span, packed: a long stream keeps one per span until
/// the end (a 50 MB note sends about a million), so labels and patterns are indexes into
/// shared tables and the text is sliced from the note itself when the final record is written.
struct Kept {
    start: u64,
    end: u64,
    byte_start: u64,
    byte_end: u64,
    score: f32,
    label: u16,
    /// `u16::MAX`: none.
    pattern: u16,
    source: Source,
}

/// The sent spans, in chunks of fixed capacity: growing never copies what is already kept, and
/// never holds twice the memory while it does.
#[derive(Default)]
struct KeptLog {
    chunks: Vec<Vec<Kept>>,
    labels: Vec<Arc<str>>,
    patterns: Vec<Arc<str>>,
    len: usize,
}

const KEPT_CHUNK: usize = 64 * 1024;

impl KeptLog {
    fn intern(table: &mut Vec<Arc<str>>, s: &str) -> u16 {
        match table.iter().position(|t| &**t == s) {
            Some(i) => i as u16,
            // More distinct values than fit (never seen: labels and patterns are few) share
            // the last slot rather than fail the stream.
            None if table.len() >= usize::from(u16::MAX) - 1 => (table.len() - 1) as u16,
            None => {
                table.push(Arc::from(s));
                (table.len() - 1) as u16
            }
        }
    }

    fn push(&mut self, k: Kept) {
        if self.chunks.last().is_none_or(|c| c.len() == KEPT_CHUNK) {
            self.chunks.push(Vec::with_capacity(KEPT_CHUNK));
        }
        if let Some(c) = self.chunks.last_mut() {
            c.push(k);
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Kept> {
        self.chunks.iter().flatten()
    }

    fn record<'a>(&'a self, k: &Kept, text: Option<&'a str>) -> SpanRecord<'a> {
        let label = &*self.labels[usize::from(k.label)];
        let canon = canonical_label(label);
        SpanRecord {
            id: span_id(label, k.start as usize),
            label,
            canonical_label: canon.name,
            hipaa_class: canon.hipaa_class,
            confidence: (f64::from(k.score) * 1e4).round() / 1e4,
            start: k.start as usize,
            end: k.end as usize,
            byte_start: k.byte_start as usize,
            byte_end: k.byte_end as usize,
            source: k.source,
            pattern: self.patterns.get(usize::from(k.pattern)).map(|p| &**p),
            text: text.and_then(|t| t.get(k.byte_start as usize..k.byte_end as usize)),
        }
    }
}

/// Sends the final record with its (possibly very long) `spans` array serialized in batches,
/// never as one JSON tree. False when the client has gone.
async fn send_final(
    tx: &mpsc::Sender<Bytes>,
    spans: &KeptLog,
    text: Option<&str>,
    rest: &Value,
) -> bool {
    if tx.send(Bytes::from_static(b"{\"spans\":[")).await.is_err() {
        return false;
    }
    let mut buf = Vec::with_capacity(1024 * 256);
    for (i, k) in spans.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        if serde_json::to_writer(&mut buf, &spans.record(k, text)).is_err() {
            return false;
        }
        if (i + 1) % 1024 == 0 {
            if tx
                .send(Bytes::from(std::mem::take(&mut buf)))
                .await
                .is_err()
            {
                return false;
            }
            buf.reserve(1024 * 256);
        }
    }
    if !buf.is_empty() && tx.send(Bytes::from(buf)).await.is_err() {
        return false;
    }
    // `rest` is an object: its members follow the array.
    let mut tail = b"],".to_vec();
    let body = serde_json::to_vec(rest).unwrap_or_else(|_| b"{}".to_vec());
    tail.extend_from_slice(body.get(1..).unwrap_or(b"}"));
    tail.push(b'\n');
    tx.send(Bytes::from(tail)).await.is_ok()
}

fn span_id(label: &str, start: usize) -> String {
    let digest = Sha256::new()
        .chain_update(label.as_bytes())
        .chain_update([0])
        .chain_update(start.to_string().as_bytes())
        .finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("ent_{hex}")
}

pub async fn extract_stream(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let (text, o, raw) =
        read_text_and_options::<ExtractStreamOptions>(req, &state, &schemas::PII_EXTRACT_STREAM)
            .await?;
    let lang = o.lang.unwrap_or_else(|| "en".into());
    let model_name = o
        .model_name
        .unwrap_or_else(|| state.settings.pii_model.clone());
    let opts = Arc::new(RunOptions::pii(
        &lang,
        o.normalize_accents,
        o.confidence_threshold.unwrap_or(0.5) as f32,
        o.use_smart_merging.unwrap_or(true),
        true,
    ));
    let params = StreamParams {
        chunk_chars: o.chunk_size.unwrap_or(1024),
        window_chars: o.window_chars.unwrap_or(4096),
        context_chars: o.tokenizer_context_chars.unwrap_or(128),
        max_entity_chars: o.max_entity_chars.unwrap_or(512),
    };
    let include_text = o.include_text.unwrap_or(true);
    let pipeline = state
        .pipelines
        .get("pii_extract")
        .ok_or_else(|| ApiError::Internal("pii_extract pipeline missing".into()))?;
    let model = state
        .registry
        .acquire(&model_name, keep_alive_of(&raw))
        .await?;
    let warnings: Vec<Value> = language_warning(model.info.languages.as_deref(), &lang)
        .into_iter()
        .collect();
    let (total_chars, total_bytes) = (text.chars().count(), text.len());
    let whole: Arc<str> = Arc::from(text);
    let (mut committed, engine) =
        streaming::spawn(pipeline, model.arc(), opts, whole.clone(), params);
    let (tx, rx) = mpsc::channel(16);
    let request_id = request_id();
    tokio::spawn(async move {
        let _model = model; // held (counted as active) until the stream ends
        let mut all = KeptLog::default();
        let mut chars_before = 0;
        let mut first_record_ms = None;
        while let Some(Committed { start, text, spans }) = committed.recv().await {
            let index = CharIndex::new(&text);
            for s in spans {
                let (a, b) = (s.start - start, s.end - start);
                let kept = Kept {
                    start: (chars_before + index.char_offset(a)) as u64,
                    end: (chars_before + index.char_offset(b)) as u64,
                    byte_start: s.start as u64,
                    byte_end: s.end as u64,
                    score: s.score,
                    label: KeptLog::intern(&mut all.labels, &s.label),
                    pattern: s
                        .pattern
                        .as_deref()
                        .map_or(u16::MAX, |p| KeptLog::intern(&mut all.patterns, p)),
                    source: s.source,
                };
                let span = all.record(&kept, include_text.then_some(&*whole));
                let emit = json!({ "type": "emit", "span": span });
                record_sent(EXTRACT_ROUTE, "emit");
                if !send(&tx, &emit).await {
                    return;
                }
                first_record_ms.get_or_insert(started.elapsed().as_secs_f64() * 1e3);
                all.push(kept);
            }
            chars_before += text.chars().count();
        }
        let Some(mut stats) = engine_stats(engine, &tx, request_id.as_deref(), EXTRACT_ROUTE).await
        else {
            return;
        };
        for (k, v) in [
            ("chars", json!(total_chars)),
            ("bytes", json!(total_bytes)),
            ("spans", json!(all.len)),
            ("chunk_size", json!(params.chunk_chars)),
            ("window_chars", json!(params.window_chars)),
            ("tokenizer_context_chars", json!(params.context_chars)),
            ("max_entity_chars", json!(params.max_entity_chars)),
            ("first_record_ms", json!(first_record_ms)),
            ("processing_time", json!(started.elapsed().as_secs_f64())),
        ] {
            stats[k] = v;
        }
        let rest = json!({
            "type": "final",
            "stats": stats,
            "model_name": model_name,
            "warnings": warnings,
            "timestamp": now_rfc3339(),
        });
        send_final(&tx, &all, include_text.then_some(&*whole), &rest).await;
        record_sent(EXTRACT_ROUTE, "final");
    });
    Ok(ndjson(rx))
}

#[derive(Deserialize)]
struct DeidStreamOptions {
    #[serde(flatten)]
    deid: DeidOptions,
    chunk_size: Option<usize>,
}

/// Cuts rewritten text into pieces of about `max_chars` characters, never inside a
/// replacement (or a kept span): `base` is the output byte offset of `out`.
fn safe_pieces<'a>(
    out: &'a str,
    base: usize,
    redactions: &[Redaction],
    max_chars: usize,
) -> Vec<&'a str> {
    let inside = |b: usize| {
        let g = base + b;
        let i = redactions.partition_point(|r| r.out_end <= g);
        redactions.get(i).is_some_and(|r| r.out_start < g)
    };
    let mut pieces = Vec::new();
    let (mut from, mut count) = (0, 0);
    for (i, _) in out.char_indices() {
        if count >= max_chars && !inside(i) {
            pieces.push(&out[from..i]);
            (from, count) = (i, 0);
        }
        count += 1;
    }
    if from < out.len() {
        pieces.push(&out[from..]);
    }
    pieces
}

pub async fn deidentify_stream(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let (text, o, raw) =
        read_text_and_options::<DeidStreamOptions>(req, &state, &schemas::PII_DEIDENTIFY_STREAM)
            .await?;
    let setup = state.deid.prepare(&o.deid)?;
    let model = state.deid.model(&setup, keep_alive_of(&raw)).await?;
    let warnings = setup.warnings(&model);
    let chunk_chars = o.chunk_size.unwrap_or(1024);
    let params = StreamParams {
        chunk_chars,
        ..StreamParams::default()
    };
    let (mut committed, engine) = streaming::spawn(
        setup.pipeline.clone(),
        model.arc(),
        setup.opts.clone(),
        Arc::from(text),
        params,
    );
    let metadata = setup.metadata();
    let (tx, rx) = mpsc::channel(16);
    let request_id = request_id();
    tokio::spawn(async move {
        let _model = model;
        let plan = &setup.resolved.plan;
        let mut rewriter = Rewriter::new(plan);
        let mut shaper = EntityShaper::default();
        let (mut index, mut out_bytes) = (0usize, 0usize);
        while let Some(c) = committed.recv().await {
            let targets = streaming::targets(&c.spans, c.start);
            let mut reds = Vec::with_capacity(targets.len());
            let out = rewriter.push(&c.text, &targets, &mut reds);
            shaper.push(&c.text, c.start, &c.spans, &out, &reds);
            for piece in safe_pieces(&out, out_bytes, &reds, chunk_chars) {
                let record = json!({ "type": "chunk", "index": index, "text": piece });
                record_sent(DEIDENTIFY_ROUTE, "chunk");
                if !send(&tx, &record).await {
                    return;
                }
                index += 1;
            }
            out_bytes += out.len();
        }
        let Some(mut stats) =
            engine_stats(engine, &tx, request_id.as_deref(), DEIDENTIFY_ROUTE).await
        else {
            return;
        };
        stats["chunk_size"] = json!(chunk_chars);
        stats["processing_time"] = json!(started.elapsed().as_secs_f64());
        let r = &setup.resolved;
        let mut final_record = json!({
            "type": "final",
            "chunks": index,
            "num_entities_redacted": shaper.redacted(),
            "entities": shaper.entities,
            "counts": shaper.counts,
            "method": r.plan.method.as_str(),
            "policy": r.policy.as_ref().map(|p| p.name.clone()),
            "model_name": setup.model_name,
            "warnings": warnings,
            "metadata": metadata,
            "stats": stats,
            "timestamp": now_rfc3339(),
        });
        if let Some(m) = rewriter.finish()
            && let Some(obj) = final_record.as_object_mut()
        {
            obj.insert("mapping".into(), json!(m));
        }
        send(&tx, &final_record).await;
        record_sent(DEIDENTIFY_ROUTE, "final");
    });
    Ok(ndjson(rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deid::operators::Applied;

    #[test]
    fn pieces_never_cut_a_replacement() {
        let out = "ab[NAME]cd[PHONE]e";
        let red = |s: usize, e: usize| Redaction {
            action: Applied::Mask,
            replacement: None,
            out_start: 100 + s,
            out_end: 100 + e,
        };
        let reds = [red(2, 8), red(10, 17)];
        let pieces = safe_pieces(out, 100, &reds, 1);
        assert_eq!(pieces.concat(), out);
        assert!(pieces.contains(&"[NAME]"));
        assert!(pieces.contains(&"[PHONE]"));
        assert_eq!(safe_pieces(out, 100, &reds, 1000), vec![out]);
    }
}
