//! Runs the real de-identification (model, recognizers, policy, operators) over a gold corpus
//! in-process and scores it: what `phiflow eval` prints and what the recall test asserts.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::{Note, Predicted, Report, evaluate};
use crate::api::AppState;
use crate::deid::operators::Applied;
use crate::deid::policy::Method;
use crate::deidentifier::{DeidError, DeidOptions, Subject};

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    pub policy: Option<String>,
    pub method: Method,
    pub confidence_threshold: f32,
    /// Notes in flight at once (they share the model's batching queue).
    pub concurrency: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            policy: Some("hipaa_safe_harbor".into()),
            method: Method::Mask,
            confidence_threshold: 0.7,
            concurrency: 8,
        }
    }
}

/// De-identifies every note as `/pii/deidentify` would and scores the result.
pub async fn run(state: &AppState, notes: &[Note], o: &EvalOptions) -> Result<Report, String> {
    Ok(evaluate(notes, &predict(state, notes, o).await?))
}

/// De-identifies every note as `/pii/deidentify` would: its spans and its output text.
pub async fn predict(
    state: &AppState,
    notes: &[Note],
    o: &EvalOptions,
) -> Result<Vec<(Vec<Predicted>, String)>, String> {
    let deid = state.deid.clone();
    let prepared = deid
        .prepare(&DeidOptions {
            method: Some(o.method),
            policy: o.policy.clone(),
            confidence_threshold: Some(f64::from(o.confidence_threshold)),
            lang: Some("en".into()),
            ..DeidOptions::default()
        })
        .map_err(|e| match e {
            DeidError::Invalid(c) => c
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        })?;
    let prepared = Arc::new(prepared);
    let model = Arc::new(
        deid.model(&prepared, None)
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut outputs: Vec<Option<(Vec<Predicted>, String)>> = vec![None; notes.len()];
    let mut tasks = JoinSet::new();
    let mut next = 0;
    while next < notes.len() || !tasks.is_empty() {
        while next < notes.len() && tasks.len() < o.concurrency.max(1) {
            let (d, p, m) = (deid.clone(), prepared.clone(), model.clone());
            let text: Arc<str> = Arc::from(notes[next].text.as_str());
            let i = next;
            tasks.spawn(async move { (i, d.run(&p, &m, text, Subject::default()).await) });
            next += 1;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (i, done) = joined.map_err(|e| e.to_string())?;
        let done = done.map_err(|e| e.to_string())?;
        let predicted = done
            .entities
            .iter()
            .map(|e| {
                let redacted = e.action != Applied::Keep;
                Predicted {
                    start: e.start,
                    end: e.end,
                    label: e.canonical_label.to_string(),
                    class: e.hipaa_class.to_string(),
                    redacted,
                    output: redacted.then_some((e.output_start, e.output_end)),
                }
            })
            .collect();
        outputs[i] = Some((predicted, done.text));
    }
    drop(model);
    Ok(outputs.into_iter().map(Option::unwrap_or_default).collect())
}
