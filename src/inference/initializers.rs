//! One copy of a model's weights for all of its sessions.
//!
//! Each session built from an ONNX file otherwise keeps its own initializers and its own
//! prepacked form of them (about 20 MB per session for the default model, three sessions per
//! model on 2 cores). ONNX Runtime shares both when the initializers are handed to every session
//! as the same values (`AddInitializer`) and the sessions share one prepacked weights container:
//! a prepacked container alone shares nothing, as the packing is keyed on shared initializers.
//! This module reads the graph's initializers out of the ONNX protobuf once per model load; only
//! the fields needed are decoded (no protobuf dependency for four fields).

use std::sync::Arc;

use ort::value::{DynValue, PrimitiveTensorElementType, Tensor};

/// Initializers smaller than this stay in each session: sharing saves nothing worth a value.
const MIN_SHARED_BYTES: usize = 4096;

/// A graph initializer as a tensor the sessions share.
pub struct SharedInitializer {
    pub name: String,
    pub value: Arc<DynValue>,
}

/// The top-level graph initializers of an ONNX model that can be shared: those stored as
/// `raw_data` in the file with a plain numeric type. Any other (typed fields, external data,
/// strings) is left to each session, which is correct, only not shared.
pub fn read(onnx: &[u8]) -> Result<Vec<SharedInitializer>, String> {
    let mut out = Vec::new();
    let Some(graph) = fields(onnx)?
        .into_iter()
        .find_map(|(n, v)| (n == GRAPH).then_some(v))
    else {
        return Ok(out);
    };
    let Value::Bytes(graph) = graph else {
        return Err("graph is not a message".into());
    };
    for (n, v) in fields(graph)? {
        let (INITIALIZER, Value::Bytes(tensor)) = (n, v) else {
            continue;
        };
        if let Some(init) = tensor_value(tensor)? {
            out.push(init);
        }
    }
    Ok(out)
}

const GRAPH: u64 = 7; // ModelProto.graph
const INITIALIZER: u64 = 5; // GraphProto.initializer
const DIMS: u64 = 1; // TensorProto.dims
const DATA_TYPE: u64 = 2;
const NAME: u64 = 8;
const RAW_DATA: u64 = 9;
const DATA_LOCATION: u64 = 14; // 1: external

/// One TensorProto as a shared tensor, or `None` where it is not a shareable raw tensor.
fn tensor_value(tensor: &[u8]) -> Result<Option<SharedInitializer>, String> {
    let (mut dims, mut data_type, mut name, mut raw, mut external) =
        (Vec::new(), 0u64, None, None, false);
    for (n, v) in fields(tensor)? {
        match (n, v) {
            (DIMS, Value::Varint(d)) => dims.push(d as i64),
            (DIMS, Value::Bytes(packed)) => {
                let mut rest = packed;
                while !rest.is_empty() {
                    let (d, used) = varint(rest)?;
                    dims.push(d as i64);
                    rest = &rest[used..];
                }
            }
            (DATA_TYPE, Value::Varint(t)) => data_type = t,
            (NAME, Value::Bytes(s)) => name = std::str::from_utf8(s).ok().map(str::to_owned),
            (RAW_DATA, Value::Bytes(b)) => raw = Some(b),
            (DATA_LOCATION, Value::Varint(l)) => external = l == 1,
            _ => {}
        }
    }
    let (Some(name), Some(raw), Some((element, width))) = (name, raw, element_type(data_type))
    else {
        return Ok(None);
    };
    let count = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
    if external
        || raw.len() < MIN_SHARED_BYTES
        || count.and_then(|c| c.checked_mul(width)) != Some(raw.len())
    {
        return Ok(None);
    }
    let value = match element {
        Element::F32 => owned(dims, raw, f32::from_le_bytes),
        Element::U8 => owned(dims, raw, u8::from_le_bytes),
        Element::I8 => owned(dims, raw, i8::from_le_bytes),
        Element::I32 => owned(dims, raw, i32::from_le_bytes),
        Element::I64 => owned(dims, raw, i64::from_le_bytes),
    }
    .map_err(|e| format!("cannot make initializer: {e}"))?;
    Ok(Some(SharedInitializer {
        name,
        value: Arc::new(value),
    }))
}

/// A tensor over a buffer we own: ONNX Runtime shares only initializers whose memory is the
/// caller's (`CreateTensorWithDataAsOrtValue`), never one it allocated itself.
fn owned<T: PrimitiveTensorElementType + Clone + std::fmt::Debug + 'static, const N: usize>(
    dims: Vec<i64>,
    raw: &[u8],
    decode: fn([u8; N]) -> T,
) -> ort::Result<DynValue> {
    let data: Vec<T> = raw
        .chunks_exact(N)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            decode(b)
        })
        .collect();
    Ok(Tensor::from_array((dims, data))?.into_dyn())
}

/// The element types shared (those a BERT-like graph stores its weights in); others stay per
/// session.
#[derive(Clone, Copy)]
enum Element {
    F32,
    U8,
    I8,
    I32,
    I64,
}

/// ONNX `TensorProto.DataType` as a shared element type and its width in bytes.
fn element_type(code: u64) -> Option<(Element, usize)> {
    Some(match code {
        1 => (Element::F32, 4),
        2 => (Element::U8, 1),
        3 => (Element::I8, 1),
        6 => (Element::I32, 4),
        7 => (Element::I64, 8),
        _ => return None,
    })
}

/// A protobuf field's value: what the four wire types needed here carry.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of one protobuf message, in order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u64, Value<'_>)>, String> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (key, used) = varint(buf)?;
        buf = &buf[used..];
        let value = match key & 7 {
            0 => {
                let (v, used) = varint(buf)?;
                buf = &buf[used..];
                Value::Varint(v)
            }
            1 | 5 => {
                let width = if key & 7 == 1 { 8 } else { 4 };
                buf = buf.get(width..).ok_or("truncated fixed field")?;
                Value::Fixed
            }
            2 => {
                let (len, used) = varint(buf)?;
                let len = usize::try_from(len).map_err(|_| "field too long")?;
                let end = used.checked_add(len).ok_or("field too long")?;
                let bytes = buf.get(used..end).ok_or("truncated field")?;
                buf = &buf[end..];
                Value::Bytes(bytes)
            }
            w => return Err(format!("unsupported protobuf wire type {w}")),
        };
        out.push((key >> 3, value));
    }
    Ok(out)
}

/// A base-128 varint and the bytes it took.
fn varint(buf: &[u8]) -> Result<(u64, usize), String> {
    let mut v = 0u64;
    for (i, b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err("bad varint".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_decode() {
        assert_eq!(varint(&[0x96, 0x01]).unwrap(), (150, 2));
        assert!(varint(&[0x80]).is_err());
        // field 1 varint 3, field 8 bytes "ab", field 4 fixed32
        let msg = [0x08, 0x03, 0x42, 0x02, b'a', b'b', 0x25, 0, 0, 0, 0];
        let f = fields(&msg).unwrap();
        assert!(matches!(f[0], (1, Value::Varint(3))));
        assert!(matches!(f[1], (8, Value::Bytes(b"ab"))));
        assert!(matches!(f[2], (4, Value::Fixed)));
        assert!(fields(&[0x42, 0x05, b'a']).is_err());
    }
}
