//! Runs the real de-identification (model, recognizers, policy, operators) over a gold corpus
//! in-process and scores it: what `phiflow eval` prints and what the recall test asserts.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::{Note, Predicted, Report, evaluate};
use crate::api::AppState;
use crate::deid::operators::Applied;
use crate::deid::options::{self, DeidRequest, ResolveError};
use crate::deid::policy::Method;
use crate::stages::{CharIndex, RunOptions};

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
    let resolved = options::resolve(
        &DeidRequest {
            method: Some(o.method),
            policy: o.policy.clone(),
            use_safety_sweep: true,
            confidence_threshold: o.confidence_threshold,
            lang: "en".into(),
            ..Default::default()
        },
        &state.policies,
        state.settings.deid_secret_key.as_deref().map(str::as_bytes),
    )
    .map_err(|e| match e {
        ResolveError::Conflicts(c) => c
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect::<Vec<_>>()
            .join("; "),
        ResolveError::Entropy(e) => e,
    })?;
    let plan = Arc::new(resolved.plan);
    let opts = Arc::new(RunOptions::pii(
        "en",
        None,
        resolved.confidence_threshold,
        true,
        resolved.safety_sweep,
    ));
    let pipeline = state
        .pipelines
        .get("pii_deidentify")
        .ok_or("pii_deidentify pipeline missing")?;
    let model = state
        .registry
        .acquire(&state.settings.pii_model, None)
        .await
        .map_err(|e| e.to_string())?;
    let mut outputs: Vec<Option<(Vec<Predicted>, String)>> = vec![None; notes.len()];
    let mut tasks = JoinSet::new();
    let mut next = 0;
    while next < notes.len() || !tasks.is_empty() {
        while next < notes.len() && tasks.len() < o.concurrency.max(1) {
            let (p, m, op, pl) = (pipeline.clone(), model.arc(), opts.clone(), plan.clone());
            let text: Arc<str> = Arc::from(notes[next].text.as_str());
            let i = next;
            tasks
                .spawn(async move { (i, crate::streaming::deidentify(p, m, op, text, &pl).await) });
            next += 1;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (i, done) = joined.map_err(|e| e.to_string())?;
        let done = done.map_err(|e| e.to_string())?;
        let index = CharIndex::new(&done.spans.original);
        let predicted = done
            .spans
            .spans
            .iter()
            .zip(&done.outcome.redactions)
            .map(|(s, r)| {
                let canon = crate::deid::canonical_label(&s.label);
                Predicted {
                    start: index.char_offset(s.start),
                    end: index.char_offset(s.end),
                    label: canon.name.to_string(),
                    class: canon.hipaa_class.to_string(),
                    redacted: r.action != Applied::Keep,
                }
            })
            .collect();
        outputs[i] = Some((predicted, done.outcome.text));
    }
    drop(model);
    Ok(outputs.into_iter().map(Option::unwrap_or_default).collect())
}
