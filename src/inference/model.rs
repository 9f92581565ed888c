//! A model directory in the Hugging Face layout: `config.json` (labels, max length),
//! `tokenizer.json`, and an ONNX graph (`model.onnx` or `onnx/model*.onnx`).

use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

use super::InferenceError;

/// The files of one installed model.
#[derive(Clone, Debug)]
pub struct ModelFiles {
    pub id: String,
    pub dir: PathBuf,
    pub onnx: PathBuf,
    pub tokenizer: PathBuf,
    pub config: PathBuf,
}

impl ModelFiles {
    /// Resolves `dir` as a model directory; `None` when it is not one.
    pub fn discover(id: &str, dir: &Path) -> Option<Self> {
        let config = dir.join("config.json");
        let tokenizer = dir.join("tokenizer.json");
        if !config.is_file() || !tokenizer.is_file() {
            return None;
        }
        let onnx = find_onnx_file(dir)?;
        Some(Self {
            id: id.to_string(),
            dir: dir.to_path_buf(),
            onnx,
            tokenizer,
            config,
        })
    }

    /// Bytes on disk of the graph (the basis of the memory estimate).
    pub fn onnx_bytes(&self) -> u64 {
        std::fs::metadata(&self.onnx).map(|m| m.len()).unwrap_or(0)
    }
}

/// `model.onnx` at the top, else the first `onnx/model*.onnx` in name order (`model.onnx` preferred).
pub fn find_onnx_file(dir: &Path) -> Option<PathBuf> {
    let top = dir.join("model.onnx");
    if top.is_file() {
        return Some(top);
    }
    let sub = dir.join("onnx");
    let preferred = sub.join("model.onnx");
    if preferred.is_file() {
        return Some(preferred);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(&sub)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "onnx")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("model"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Label names by class index, from `config.json` `id2label`.
#[derive(Clone, Debug)]
pub struct LabelSet {
    names: Vec<String>,
}

impl LabelSet {
    pub fn new(names: Vec<String>) -> Self {
        Self { names }
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn name(&self, index: usize) -> &str {
        self.names.get(index).map(String::as_str).unwrap_or("O")
    }
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// What the registry knows of a model before and after loading it.
#[derive(Clone, Debug)]
pub struct ModelInfo {
    pub labels: LabelSet,
    /// Longest sequence the position embeddings allow, special tokens included.
    pub max_positions: usize,
    pub model_type: String,
    /// Languages the model covers, when its directory says (`phiflow-model.json` or `config.json`).
    pub languages: Option<Vec<String>>,
    pub license: Option<String>,
}

impl ModelInfo {
    pub fn read(files: &ModelFiles) -> Result<Self, InferenceError> {
        let raw = std::fs::read_to_string(&files.config)
            .map_err(|e| InferenceError::InvalidModel(format!("config.json unreadable: {e}")))?;
        let config: serde_json::Value = serde_json::from_str(&raw)
            .map_err(|e| InferenceError::InvalidModel(format!("config.json is not JSON: {e}")))?;
        let id2label = config
            .get("id2label")
            .and_then(|v| v.as_object())
            .ok_or_else(|| InferenceError::InvalidModel("config.json has no id2label".into()))?;
        let mut pairs: Vec<(usize, String)> = Vec::with_capacity(id2label.len());
        for (k, v) in id2label {
            let idx: usize = k.parse().map_err(|_| {
                InferenceError::InvalidModel("id2label keys must be integers".into())
            })?;
            let name = v.as_str().ok_or_else(|| {
                InferenceError::InvalidModel("id2label values must be strings".into())
            })?;
            pairs.push((idx, name.to_string()));
        }
        pairs.sort();
        if pairs.iter().enumerate().any(|(i, (idx, _))| i != *idx) {
            return Err(InferenceError::InvalidModel(
                "id2label indices must be 0..n without gaps".into(),
            ));
        }
        let max_positions = config
            .get("max_position_embeddings")
            .and_then(|v| v.as_u64())
            .map(|n| n as usize)
            .unwrap_or(512);
        // RoBERTa-style position ids start after the padding index, so two positions are unusable.
        let model_type = config
            .get("model_type")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        let max_positions =
            if matches!(model_type.as_str(), "roberta" | "xlm-roberta" | "camembert") {
                max_positions.saturating_sub(2)
            } else {
                max_positions
            };
        let manifest: Option<serde_json::Value> =
            std::fs::read_to_string(files.dir.join("phiflow-model.json"))
                .ok()
                .and_then(|s| serde_json::from_str(&s).ok());
        let languages = manifest
            .as_ref()
            .and_then(|m| m.get("languages"))
            .or_else(|| config.get("languages"))
            .or_else(|| config.get("language"))
            .and_then(string_list);
        let license = manifest
            .as_ref()
            .and_then(|m| m.get("license"))
            .and_then(|v| v.as_str())
            .map(String::from);
        Ok(Self {
            labels: LabelSet::new(pairs.into_iter().map(|(_, n)| n).collect()),
            max_positions: max_positions.clamp(8, 8192),
            model_type,
            languages,
            license,
        })
    }
}

fn string_list(v: &serde_json::Value) -> Option<Vec<String>> {
    match v {
        serde_json::Value::String(s) => Some(vec![s.clone()]),
        serde_json::Value::Array(a) => Some(
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect(),
        ),
        _ => None,
    }
}

/// A tokenizer with truncation and padding off, and the special tokens the model expects
/// around one sequence (`[CLS] … [SEP]`, `<s> … </s>`), learnt from the tokenizer itself.
pub struct TokenizerHandle {
    pub tokenizer: Tokenizer,
    pub prefix_ids: Vec<u32>,
    pub suffix_ids: Vec<u32>,
    pub pad_id: u32,
}

impl TokenizerHandle {
    pub fn load(path: &Path) -> Result<Self, InferenceError> {
        let mut tokenizer = Tokenizer::from_file(path)
            .map_err(|e| InferenceError::InvalidModel(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(None)
            .map_err(|e| InferenceError::InvalidModel(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        let probe = "phiflow probe";
        let with = tokenizer
            .encode(probe, true)
            .map_err(|e| InferenceError::InvalidModel(format!("tokenizer: {e}")))?;
        let without = tokenizer
            .encode(probe, false)
            .map_err(|e| InferenceError::InvalidModel(format!("tokenizer: {e}")))?;
        let (w, wo) = (with.get_ids(), without.get_ids());
        let at = (0..=w.len().saturating_sub(wo.len()))
            .find(|&i| w[i..].starts_with(wo))
            .ok_or_else(|| {
                InferenceError::InvalidModel("cannot locate special tokens of the tokenizer".into())
            })?;
        let pad_id = tokenizer
            .get_padding()
            .map(|p| p.pad_id)
            .or_else(|| {
                ["[PAD]", "<pad>"]
                    .iter()
                    .find_map(|t| tokenizer.token_to_id(t))
            })
            .unwrap_or(0);
        Ok(Self {
            prefix_ids: w[..at].to_vec(),
            suffix_ids: w[at + wo.len()..].to_vec(),
            tokenizer,
            pad_id,
        })
    }

    /// Special tokens added around each window.
    pub fn special_count(&self) -> usize {
        self.prefix_ids.len() + self.suffix_ids.len()
    }
}
