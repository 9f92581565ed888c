//! Derives a `token_type_ids`-free ONNX model from a BERT-style one, for tests.
//!
//! RoBERTa/DeBERTa-style token classifiers export graphs whose only inputs are `input_ids`
//! and `attention_mask`. Rather than shipping a second model (or needing Python at test
//! time), we take the real BERT export and rewrite its protobuf so that `token_type_ids` is
//! no longer a graph input but an internal tensor of zeros shaped like `input_ids`:
//!
//! ```text
//! Shape(input_ids) -> phiflow_tt_shape
//! ConstantOfShape(phiflow_tt_shape, value = int64[1]{0}) -> token_type_ids
//! ```
//!
//! Zeros are what callers feed for single-segment input, so the rewritten model gives the
//! same logits as the original run with `token_type_ids = 0`.
//!
//! Only `ModelProto.graph` (field 7) is re-encoded: two nodes are prepended to
//! `GraphProto.node` (field 1) and the `token_type_ids` entry of `GraphProto.input`
//! (field 11) is dropped; every other field is copied byte for byte. The protobuf reader is
//! deliberately minimal (wire types 0, 1, 2, 5; groups rejected) to keep this module free of
//! dependencies. Field numbers are those of `onnx/onnx.proto`.

/// Name of the intermediate tensor holding `Shape(input_ids)`; must not already exist.
const SHAPE_OUT: &str = "phiflow_tt_shape";

/// One top-level field of a protobuf message.
struct Field<'a> {
    number: u64,
    wire: u8,
    /// The whole encoded field (tag included), for byte-for-byte copies.
    raw: &'a [u8],
    /// What follows the tag (and, for wire type 2, the length): a sub-message or string.
    body: &'a [u8],
}

fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or("protobuf truncated inside a varint")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("protobuf varint longer than 10 bytes".into())
}

/// Splits a message into its fields, checking every length against the buffer.
fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = read_varint(buf, &mut pos)?;
        let (number, wire) = (tag >> 3, (tag & 7) as u8);
        if number == 0 {
            return Err("protobuf field number 0".into());
        }
        let mut body_start = pos;
        let len = match wire {
            0 => read_varint(buf, &mut pos).map(|_| 0)?,
            1 => 8,
            5 => 4,
            2 => {
                let len = read_varint(buf, &mut pos)?;
                body_start = pos;
                usize::try_from(len).map_err(|_| "protobuf length too large")?
            }
            3 | 4 => return Err(format!("protobuf group (field {number}) not supported")),
            _ => return Err(format!("invalid protobuf wire type {wire}")),
        };
        pos = pos
            .checked_add(len)
            .filter(|&end| end <= buf.len())
            .ok_or_else(|| format!("protobuf truncated inside field {number}"))?;
        let (raw, body) = (&buf[start..pos], &buf[body_start..pos]);
        out.push(Field {
            number,
            wire,
            raw,
            body,
        });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a varint field (wire type 0).
fn put_int(out: &mut Vec<u8>, number: u64, value: u64) {
    put_varint(out, number << 3);
    put_varint(out, value);
}

/// Appends a length-delimited field (wire type 2): string, bytes or sub-message.
fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes a NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5.
fn node(input: &str, output: &str, op_type: &str, attribute: Option<&[u8]>) -> Vec<u8> {
    let mut n = Vec::new();
    put_bytes(&mut n, 1, input.as_bytes());
    put_bytes(&mut n, 2, output.as_bytes());
    put_bytes(&mut n, 3, format!("phiflow_tt_{op_type}").as_bytes());
    put_bytes(&mut n, 4, op_type.as_bytes());
    if let Some(attribute) = attribute {
        put_bytes(&mut n, 5, attribute);
    }
    n
}

/// The AttributeProto `value = int64[1]{0}` for ConstantOfShape.
fn zero_int64_attribute() -> Vec<u8> {
    // TensorProto: dims = 1, data_type = 2 (INT64 = 7), int64_data = 7 (packed).
    let mut tensor = Vec::new();
    put_int(&mut tensor, 1, 1);
    put_int(&mut tensor, 2, 7);
    put_bytes(&mut tensor, 7, &[0]);
    // AttributeProto: name = 1, t = 5, type = 20 (TENSOR = 4).
    let mut attribute = Vec::new();
    put_bytes(&mut attribute, 1, b"value");
    put_bytes(&mut attribute, 5, &tensor);
    put_int(&mut attribute, 20, 4);
    attribute
}

/// The name (field 1) of a ValueInfoProto; the last occurrence wins, as in protobuf.
fn value_info_name(value_info: &[u8]) -> Result<&[u8], String> {
    let fields = fields(value_info)?;
    let name = fields.iter().rev().find(|f| f.number == 1 && f.wire == 2);
    Ok(name.map_or(&[][..], |f| f.body))
}

/// Drops the `token_type_ids` graph input and prepends the two nodes that recompute it.
fn rewrite_graph(graph: &[u8]) -> Result<Vec<u8>, String> {
    let mut kept = Vec::with_capacity(graph.len());
    let (mut has_ids, mut has_tt) = (false, false);
    for f in fields(graph)? {
        let input = (f.number == 11 && f.wire == 2)
            .then(|| value_info_name(f.body))
            .transpose()?;
        has_ids |= input == Some(b"input_ids".as_slice());
        if input == Some(b"token_type_ids".as_slice()) {
            has_tt = true;
        } else {
            kept.extend_from_slice(f.raw);
        }
    }
    for (found, name) in [(has_tt, "token_type_ids"), (has_ids, "input_ids")] {
        if !found {
            return Err(format!("graph has no `{name}` input"));
        }
    }
    let clash = |window: &[u8]| window == SHAPE_OUT.as_bytes();
    if graph.windows(SHAPE_OUT.len()).any(clash) {
        return Err(format!("graph already mentions `{SHAPE_OUT}`"));
    }
    // Nodes first, so that the node list stays topologically sorted.
    let mut out = Vec::with_capacity(kept.len() + 128);
    let zeros = zero_int64_attribute();
    let fill = node(SHAPE_OUT, "token_type_ids", "ConstantOfShape", Some(&zeros));
    put_bytes(&mut out, 1, &node("input_ids", SHAPE_OUT, "Shape", None));
    put_bytes(&mut out, 1, &fill);
    out.extend_from_slice(&kept);
    Ok(out)
}

/// Rewrites a serialized ONNX ModelProto so that `token_type_ids` is computed inside the
/// graph (zeros shaped like `input_ids`) instead of being a graph input.
///
/// Errors if the bytes are not well-formed protobuf, if there is no graph (or more than
/// one), or if the graph has no `token_type_ids` or `input_ids` input.
pub fn without_token_type_ids(model: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(model.len() + 128);
    let mut graphs = 0;
    for f in fields(model)? {
        if f.number == 7 && f.wire == 2 {
            graphs += 1;
            put_bytes(&mut out, 7, &rewrite_graph(f.body)?);
        } else {
            out.extend_from_slice(f.raw);
        }
    }
    match graphs {
        1 => Ok(out),
        0 => Err("model has no graph".into()),
        n => Err(format!("model has {n} graph fields")),
    }
}
