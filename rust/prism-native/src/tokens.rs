//! The strict token estimators: walk a message or entry, refuse malformed
//! shapes with a path, and apply `prism_core::tokens` (the rules themselves,
//! shared with the attention pass's measurement).
use crate::walk::{code_points, json_len, type_name, WalkError, WalkResult};
use prism_core::tokens::{
    block_tokens as block_cost, ceil4, summary_entry_tokens, BlockKind, EntryCost, EntryKind,
    IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

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

fn str_field<'py>(d: &Bound<'py, PyDict>, k: &Bound<'py, PyString>, key: &str) -> WalkResult<u64> {
    let v = field(d, k, key)?;
    match v.cast::<PyString>() {
        Ok(s) => Ok(code_points(s) as u64),
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

/// Tokens of one content block (see `prism_core::tokens`).
pub fn block_tokens(block: &Bound<'_, PyAny>) -> WalkResult<u64> {
    let d = as_dict(block, "content block")?;
    let ty = field!(d, "type")?;
    let ty = ty
        .cast::<PyString>()
        .map_err(|_| WalkError::type_err("field 'type' must be a str").in_field("type"))?;
    let kind = BlockKind::of(ty.to_str().unwrap_or(""));
    let json = |v: Bound<'_, PyAny>, key: &str| -> WalkResult<u64> {
        Ok(json_len(&v).map_err(|e| e.in_field(key))? as u64)
    };
    let chars = match kind {
        BlockKind::Text | BlockKind::Thinking => {
            str_field(d, pyo3::intern!(d.py(), "text"), "text")?
        }
        BlockKind::Image => 0,
        BlockKind::ToolCall => {
            str_field(d, pyo3::intern!(d.py(), "name"), "name")?
                + json(field!(d, "arguments")?, "arguments")?
        }
        BlockKind::ToolResult => {
            str_field(d, pyo3::intern!(d.py(), "name"), "name")?
                + json(field!(d, "result")?, "result")?
        }
        BlockKind::Other => json_len(block)? as u64,
    };
    Ok(block_cost(kind, chars))
}

pub fn message_tokens(message: &Bound<'_, PyAny>) -> WalkResult<u64> {
    let d = as_dict(message, "message")?;
    let content = field!(d, "content")?;
    let mut total = MESSAGE_OVERHEAD_TOKENS;
    let add = |total: &mut u64, i: usize, b: Bound<'_, PyAny>| -> WalkResult<()> {
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

pub fn entry_tokens(entry: &Bound<'_, PyAny>) -> WalkResult<u64> {
    let d = as_dict(entry, "entry")?;
    let kind = field!(d, "kind")?;
    let kind = kind
        .cast::<PyString>()
        .map_err(|_| WalkError::type_err("field 'kind' must be a str").in_field("kind"))?;
    let name = kind.to_str().unwrap_or("");
    let Some(kind) = EntryKind::of(name) else {
        let shown: String = name.chars().take(40).collect();
        return Err(WalkError::value_err(format!("unknown entry kind '{shown}'")).in_field("kind"));
    };
    match kind.cost() {
        EntryCost::Message => {
            message_tokens(&field!(d, "message")?).map_err(|e| e.in_field("message"))
        }
        EntryCost::Summary => Ok(summary_entry_tokens(str_field(
            d,
            pyo3::intern!(d.py(), "summary"),
            "summary",
        )?)),
        EntryCost::Overhead => Ok(MESSAGE_OVERHEAD_TOKENS),
    }
}

/// `len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))`.
#[pyfunction]
pub fn json_length(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    json_len(value).map_err(WalkError::into_pyerr)
}

#[pyfunction]
pub fn estimate_text_tokens(text: &Bound<'_, PyString>) -> u64 {
    ceil4(code_points(text) as u64)
}

#[pyfunction]
pub fn estimate_value_tokens(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(ceil4(json_length(value)? as u64))
}

#[pyfunction]
pub fn estimate_message_tokens(message: &Bound<'_, PyAny>) -> PyResult<u64> {
    message_tokens(message).map_err(WalkError::into_pyerr)
}

#[pyfunction]
pub fn estimate_entry_tokens(entry: &Bound<'_, PyAny>) -> PyResult<u64> {
    entry_tokens(entry).map_err(WalkError::into_pyerr)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IMAGE_TOKENS", IMAGE_TOKENS)?;
    m.add("MESSAGE_OVERHEAD_TOKENS", MESSAGE_OVERHEAD_TOKENS)?;
    m.add_function(wrap_pyfunction!(json_length, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_text_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_value_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_message_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_entry_tokens, m)?)?;
    Ok(())
}
