//! Infer: sends every window through the model's batching queue and keeps, for each token, the
//! scores of the window in which it sits farthest from an edge.

use std::ops::Range;

use super::StageError;
use super::tokens::Tokens;
use super::window::best_window_per_token;
use crate::inference::{LoadedModel, WindowInput};

/// Per-token class probabilities for a whole text (`tokens × labels`, row-major).
#[derive(Debug)]
pub struct TokenScores {
    pub tokens: Tokens,
    pub probs: Vec<f32>,
    pub num_labels: usize,
    pub windows: usize,
}

impl TokenScores {
    pub fn token(&self, t: usize) -> &[f32] {
        &self.probs[t * self.num_labels..(t + 1) * self.num_labels]
    }
}

/// The model inputs of each window: special tokens around the window's token ids.
pub fn window_inputs(
    model: &LoadedModel,
    tokens: &Tokens,
    windows: &[Range<usize>],
) -> Vec<WindowInput> {
    let tk = &model.tokenizer;
    windows
        .iter()
        .map(|w| {
            let mut ids = Vec::with_capacity(w.len() + tk.special_count());
            ids.extend(tk.prefix_ids.iter().map(|&i| i64::from(i)));
            ids.extend(tokens.ids[w.clone()].iter().map(|&i| i64::from(i)));
            ids.extend(tk.suffix_ids.iter().map(|&i| i64::from(i)));
            WindowInput { ids }
        })
        .collect()
}

/// Runs the windows and assembles the per-token scores.
pub async fn infer(
    model: &LoadedModel,
    tokens: Tokens,
    windows: Vec<Range<usize>>,
) -> Result<TokenScores, StageError> {
    let num_labels = model.info.labels.len();
    let n = tokens.len();
    let receivers = model
        .queue
        .submit(window_inputs(model, &tokens, &windows))?;
    let mut scored = Vec::with_capacity(receivers.len());
    for rx in receivers {
        scored
            .push(rx.await.map_err(|_| {
                StageError::Inference(crate::inference::InferenceError::Unloaded)
            })??);
    }
    let best = best_window_per_token(n, &windows);
    let offset = model.tokenizer.prefix_ids.len();
    let mut probs = vec![0f32; n * num_labels];
    for t in 0..n {
        let w = best[t];
        let row = scored[w].token(t - windows[w].start + offset);
        probs[t * num_labels..(t + 1) * num_labels].copy_from_slice(row);
    }
    Ok(TokenScores {
        tokens,
        probs,
        num_labels,
        windows: windows.len(),
    })
}
