//! BERT weights from `model.safetensors`, converted to f32 and shape-checked at load.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use super::config::BertConfig;
use super::error::EncoderError;

/// A dense layer. `weight` is PyTorch's `[out, in]` row-major layout, used as is: the GEMM reads
/// it transposed through strides.
pub(crate) struct Linear {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub inputs: usize,
    pub outputs: usize,
}

pub(crate) struct LayerNorm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

pub(crate) struct Layer {
    /// Query, key and value stacked into one `[3 * hidden, hidden]` matrix: one GEMM instead of
    /// three, and the attention reads Q, K and V from one row per token.
    pub qkv: Linear,
    pub attn_out: Linear,
    pub attn_norm: LayerNorm,
    pub intermediate: Linear,
    pub output: Linear,
    pub out_norm: LayerNorm,
}

pub(crate) struct Weights {
    pub word: Vec<f32>,
    pub position: Vec<f32>,
    pub token_type: Vec<f32>,
    pub embed_norm: LayerNorm,
    pub layers: Vec<Layer>,
}

struct Reader<'a> {
    st: SafeTensors<'a>,
    /// `""` or `"bert."`: checkpoints saved from `BertModel` have no prefix, those saved from a
    /// task head (`BertForMaskedLM`, ...) nest the encoder under `bert.`.
    prefix: &'static str,
}

impl Reader<'_> {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EncoderError> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .st
            .tensor(&full)
            .map_err(|_| EncoderError::MissingTensor { name: full.clone() })?;
        if view.shape() != shape {
            return Err(EncoderError::TensorShape {
                name: full,
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        to_f32(view.dtype(), view.data()).ok_or_else(|| EncoderError::TensorDtype {
            name: full,
            dtype: format!("{:?}", view.dtype()),
        })
    }

    fn linear(&self, name: &str, outputs: usize, inputs: usize) -> Result<Linear, EncoderError> {
        Ok(Linear {
            weight: self.tensor(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.tensor(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str, width: usize) -> Result<LayerNorm, EncoderError> {
        Ok(LayerNorm {
            gamma: self.tensor(&format!("{name}.weight"), &[width])?,
            beta: self.tensor(&format!("{name}.bias"), &[width])?,
        })
    }
}

impl Weights {
    pub fn load(path: &Path, cfg: &BertConfig) -> Result<Self, EncoderError> {
        let bytes = std::fs::read(path).map_err(|source| EncoderError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&bytes, path, cfg)
    }

    /// Parses a safetensors image; `path` only labels errors.
    fn parse(bytes: &[u8], path: &Path, cfg: &BertConfig) -> Result<Self, EncoderError> {
        let st = SafeTensors::deserialize(bytes).map_err(|source| EncoderError::SafeTensors {
            path: path.to_path_buf(),
            source,
        })?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = if st.tensor(probe).is_ok() {
            ""
        } else if st.tensor(&format!("bert.{probe}")).is_ok() {
            "bert."
        } else {
            return Err(EncoderError::MissingTensor {
                name: probe.to_owned(),
            });
        };
        let r = Reader { st, prefix };
        let h = cfg.hidden;
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let p = format!("encoder.layer.{i}");
            let q = r.linear(&format!("{p}.attention.self.query"), h, h)?;
            let k = r.linear(&format!("{p}.attention.self.key"), h, h)?;
            let v = r.linear(&format!("{p}.attention.self.value"), h, h)?;
            let qkv = Linear {
                weight: [q.weight, k.weight, v.weight].concat(),
                bias: [q.bias, k.bias, v.bias].concat(),
                inputs: h,
                outputs: 3 * h,
            };
            layers.push(Layer {
                qkv,
                attn_out: r.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: r.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                intermediate: r.linear(&format!("{p}.intermediate.dense"), cfg.intermediate, h)?,
                output: r.linear(&format!("{p}.output.dense"), h, cfg.intermediate)?,
                out_norm: r.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(Weights {
            word: r.tensor("embeddings.word_embeddings.weight", &[cfg.vocab, h])?,
            position: r.tensor(
                "embeddings.position_embeddings.weight",
                &[cfg.max_positions, h],
            )?,
            token_type: r.tensor(
                "embeddings.token_type_embeddings.weight",
                &[cfg.type_vocab, h],
            )?,
            embed_norm: r.norm("embeddings.LayerNorm", h)?,
            layers,
        })
    }
}

/// Little-endian tensor bytes to f32; `None` for dtypes that are not floating point. Copies
/// rather than casting in place because the buffer need not be 4-byte aligned.
fn to_f32(dtype: Dtype, data: &[u8]) -> Option<Vec<f32>> {
    Some(match dtype {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32)
            .collect(),
        _ => return None,
    })
}

/// IEEE 754 binary16 to binary32, exact (every half value is representable as a float).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        // Subnormal half: value is man * 2^-24, a normal float.
        (0, _) => {
            let v = man as f32 * f32::powi(2.0, -24);
            return if sign == 0 { v } else { -v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::TensorView;

    fn tiny_config() -> BertConfig {
        BertConfig {
            hidden: 4,
            heads: 2,
            layers: 1,
            intermediate: 8,
            vocab: 10,
            max_positions: 6,
            type_vocab: 2,
            layer_norm_eps: 1e-12,
            name_or_path: None,
        }
    }

    /// Every tensor of the tiny config as (name, shape), embeddings first.
    fn tiny_tensors() -> Vec<(String, Vec<usize>)> {
        let mut t = vec![
            ("embeddings.word_embeddings.weight".to_owned(), vec![10, 4]),
            (
                "embeddings.position_embeddings.weight".to_owned(),
                vec![6, 4],
            ),
            (
                "embeddings.token_type_embeddings.weight".to_owned(),
                vec![2, 4],
            ),
            ("embeddings.LayerNorm.weight".to_owned(), vec![4]),
            ("embeddings.LayerNorm.bias".to_owned(), vec![4]),
        ];
        let p = "encoder.layer.0";
        for (name, out, inp) in [
            ("attention.self.query", 4, 4),
            ("attention.self.key", 4, 4),
            ("attention.self.value", 4, 4),
            ("attention.output.dense", 4, 4),
            ("intermediate.dense", 8, 4),
            ("output.dense", 4, 8),
        ] {
            t.push((format!("{p}.{name}.weight"), vec![out, inp]));
            t.push((format!("{p}.{name}.bias"), vec![out]));
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            t.push((format!("{p}.{name}.weight"), vec![4]));
            t.push((format!("{p}.{name}.bias"), vec![4]));
        }
        t
    }

    /// Serializes `tensors` with every element 1.5 in `dtype`, then parses it.
    fn roundtrip(tensors: &[(String, Vec<usize>)], dtype: Dtype) -> Result<Weights, EncoderError> {
        let one_and_half: &[u8] = match dtype {
            Dtype::F32 => &[0x00, 0x00, 0xc0, 0x3f],
            Dtype::F16 => &[0x00, 0x3e],
            Dtype::BF16 => &[0xc0, 0x3f],
            _ => &[0; 8],
        };
        let bufs: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(_, shape)| one_and_half.repeat(shape.iter().product()))
            .collect();
        let views = tensors
            .iter()
            .zip(&bufs)
            .map(|((name, shape), buf)| {
                TensorView::new(dtype, shape.clone(), buf).map(|v| (name.clone(), v))
            })
            .collect::<Result<Vec<_>, _>>()
            .expect("valid test tensors");
        let bytes = safetensors::serialize(views, None).expect("serializable");
        Weights::parse(&bytes, Path::new("test.safetensors"), &tiny_config())
    }

    #[test]
    fn loads_and_converts_every_float_dtype() {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            let w = roundtrip(&tiny_tensors(), dtype).expect("loads");
            assert_eq!(w.layers.len(), 1);
            assert_eq!(w.layers[0].qkv.weight.len(), 3 * 4 * 4);
            assert!(w.word.iter().all(|&v| v == 1.5), "{dtype:?}");
        }
    }

    #[test]
    fn accepts_bert_prefix() {
        let prefixed: Vec<_> = tiny_tensors()
            .into_iter()
            .map(|(n, s)| (format!("bert.{n}"), s))
            .collect();
        assert!(roundtrip(&prefixed, Dtype::F32).is_ok());
    }

    #[test]
    fn typed_errors_for_bad_files() {
        let mut missing = tiny_tensors();
        missing.retain(|(n, _)| n != "encoder.layer.0.output.dense.bias");
        assert!(matches!(
            roundtrip(&missing, Dtype::F32),
            Err(EncoderError::MissingTensor { name }) if name == "encoder.layer.0.output.dense.bias"
        ));

        let mut wrong = tiny_tensors();
        wrong[0].1 = vec![11, 4];
        assert!(matches!(
            roundtrip(&wrong, Dtype::F32),
            Err(EncoderError::TensorShape { found, .. }) if found == vec![11, 4]
        ));

        assert!(matches!(
            roundtrip(&tiny_tensors(), Dtype::I64),
            Err(EncoderError::TensorDtype { .. })
        ));

        assert!(matches!(
            Weights::parse(b"not a safetensors file", Path::new("x"), &tiny_config()),
            Err(EncoderError::SafeTensors { .. })
        ));
    }

    #[test]
    fn half_conversions() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
        let bf = to_f32(Dtype::BF16, &[0x80, 0x3f]).unwrap_or_default();
        assert_eq!(bf, vec![1.0]);
        assert!(to_f32(Dtype::I64, &[0; 8]).is_none());
    }
}
