//! Tokenize: the whole view is encoded once (no special tokens), so windows are exact token
//! ranges and overlapping text is never tokenized twice.

use super::StageError;
use super::text::TextView;
use crate::inference::TokenizerHandle;

/// The tokens of a text, with byte offsets into the view and word membership.
#[derive(Debug)]
pub struct Tokens {
    pub text: TextView,
    pub ids: Vec<u32>,
    pub offsets: Vec<(usize, usize)>,
    pub words: Vec<Option<u32>>,
    /// Token indices that begin a sentence (ascending, excluding 0); empty without sentence detection.
    pub sentence_starts: Vec<usize>,
    /// Sentence start byte offsets in the view (ascending).
    pub sentence_bytes: Vec<usize>,
}

impl Tokens {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Encodes `text` and, when asked, marks sentence starts.
pub fn tokenize(
    tokenizer: &TokenizerHandle,
    text: TextView,
    sentence_language: Option<&str>,
) -> Result<Tokens, StageError> {
    let encoding = tokenizer
        .tokenizer
        .encode(text.view(), false)
        .map_err(|e| StageError::Tokenizer(e.to_string()))?;
    let ids = encoding.get_ids().to_vec();
    let offsets = encoding.get_offsets().to_vec();
    let words = encoding.get_word_ids().to_vec();
    let sentence_bytes = match sentence_language {
        Some(lang) => super::sentence::sentence_starts(text.view(), lang),
        None => Vec::new(),
    };
    let mut sentence_starts = Vec::with_capacity(sentence_bytes.len());
    let mut next = sentence_bytes.iter().peekable();
    for (t, &(start, _)) in offsets.iter().enumerate() {
        let mut crossed = false;
        while next.peek().is_some_and(|&&b| b <= start) {
            next.next();
            crossed = true;
        }
        if crossed && t > 0 {
            sentence_starts.push(t);
        }
    }
    Ok(Tokens {
        text,
        ids,
        offsets,
        words,
        sentence_starts,
        sentence_bytes,
    })
}
