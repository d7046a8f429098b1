//! Token estimates: chars/4, where chars of a value are the code points of
//! its compact JSON form. Per-block rules live here; docs/native.md lists them.
use super::walk::{code_points, json_len, type_name, WalkError, WalkResult};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// Fixed cost of an image block, whatever its size or encoding.
pub const IMAGE_TOKENS: usize = 1000;
/// Fixed cost of every message (role, separators, framing).
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;

#[inline]
pub fn ceil4(chars: usize) -> usize {
    chars.div_ceil(4)
}

/// Looks up a field by an interned key: no str is built per lookup.
macro_rules! field {
    ($d:expr, $key:literal) => {
        field($d, pyo3::intern!($d.py(), $key), $key)
    };
}

fn field<'py>(
    d: &Bound<'py, PyDict>,
    k: &Bound<'py, PyString>,
    key: &str,
) -> WalkResult<Bound<'py, PyAny>> {
    match d.get_item(k) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(WalkError::type_err(format!("missing field '{key}'"))),
        Err(e) => Err(WalkError::from_py(d.py(), e)),
    }
}

fn str_field<'py>(
    d: &Bound<'py, PyDict>,
    k: &Bound<'py, PyString>,
    key: &str,
) -> WalkResult<usize> {
    let v = field(d, k, key)?;
    match v.cast::<PyString>() {
        Ok(s) => Ok(code_points(s)),
        Err(_) => Err(WalkError::type_err(format!(
            "field '{key}' must be a str, not {}",
            type_name(&v)
        ))
        .in_field(key)),
    }
}

fn as_dict<'a, 'py>(obj: &'a Bound<'py, PyAny>, what: &str) -> WalkResult<&'a Bound<'py, PyDict>> {
    obj.cast::<PyDict>()
        .map_err(|_| WalkError::type_err(format!("{what} must be a dict, not {}", type_name(obj))))
}

/// Tokens of one content block (`ceil(chars / 4)`, rounded per block so a
/// message's estimate is the sum of its blocks plus the overhead, and
/// replacing one block changes the total by exactly that block's delta).
pub fn block_tokens(block: &Bound<'_, PyAny>) -> WalkResult<usize> {
    let d = as_dict(block, "content block")?;
    let ty = field!(d, "type")?;
    let ty = ty
        .cast::<PyString>()
        .map_err(|_| WalkError::type_err("field 'type' must be a str").in_field("type"))?;
    let chars = match ty.to_str().unwrap_or("") {
        "text" | "thinking" => str_field(d, pyo3::intern!(d.py(), "text"), "text")?,
        "image" => return Ok(IMAGE_TOKENS),
        "tool_call" => {
            str_field(d, pyo3::intern!(d.py(), "name"), "name")?
                + json_len(&field!(d, "arguments")?).map_err(|e| e.in_field("arguments"))?
        }
        "tool_result" => {
            str_field(d, pyo3::intern!(d.py(), "name"), "name")?
                + json_len(&field!(d, "result")?).map_err(|e| e.in_field("result"))?
        }
        // Unknown block types cost their whole JSON form.
        _ => json_len(block)?,
    };
    Ok(ceil4(chars))
}

pub fn message_tokens(message: &Bound<'_, PyAny>) -> WalkResult<usize> {
    let d = as_dict(message, "message")?;
    let content = field!(d, "content")?;
    let mut total = MESSAGE_OVERHEAD_TOKENS;
    let add = |total: &mut usize, i: usize, b: Bound<'_, PyAny>| -> WalkResult<()> {
        *total += block_tokens(&b).map_err(|e| e.in_index(i).in_field("content"))?;
        Ok(())
    };
    if let Ok(list) = content.cast::<PyList>() {
        for (i, b) in list.iter().enumerate() {
            add(&mut total, i, b)?;
        }
    } else if let Ok(t) = content.cast::<PyTuple>() {
        for (i, b) in t.iter().enumerate() {
            add(&mut total, i, b)?;
        }
    } else {
        return Err(WalkError::type_err(format!(
            "field 'content' must be a list, not {}",
            type_name(&content)
        ))
        .in_field("content"));
    }
    Ok(total)
}

pub fn entry_tokens(entry: &Bound<'_, PyAny>) -> WalkResult<usize> {
    let d = as_dict(entry, "entry")?;
    let kind = field!(d, "kind")?;
    let kind = kind
        .cast::<PyString>()
        .map_err(|_| WalkError::type_err("field 'kind' must be a str").in_field("kind"))?;
    match kind.to_str().unwrap_or("") {
        "message" => message_tokens(&field!(d, "message")?).map_err(|e| e.in_field("message")),
        "summary" | "compaction" => Ok(ceil4(str_field(
            d,
            pyo3::intern!(d.py(), "summary"),
            "summary",
        )?) + MESSAGE_OVERHEAD_TOKENS),
        "model_change" | "custom" | "label" => Ok(MESSAGE_OVERHEAD_TOKENS),
        other => {
            let shown: String = other.chars().take(40).collect();
            Err(WalkError::value_err(format!("unknown entry kind '{shown}'")).in_field("kind"))
        }
    }
}

/// `len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))`.
#[pyfunction]
pub fn json_length(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    json_len(value).map_err(WalkError::into_pyerr)
}

#[pyfunction]
pub fn estimate_text_tokens(text: &Bound<'_, PyString>) -> usize {
    ceil4(code_points(text))
}

#[pyfunction]
pub fn estimate_value_tokens(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(ceil4(json_length(value)?))
}

#[pyfunction]
pub fn estimate_message_tokens(message: &Bound<'_, PyAny>) -> PyResult<usize> {
    message_tokens(message).map_err(WalkError::into_pyerr)
}

#[pyfunction]
pub fn estimate_entry_tokens(entry: &Bound<'_, PyAny>) -> PyResult<usize> {
    entry_tokens(entry).map_err(WalkError::into_pyerr)
}
