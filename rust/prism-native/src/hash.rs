//! SHA-256 of bytes/str and of a value's compact JSON, hashed as it is walked.
use crate::walk::{type_name, walk, HashSink, WalkError, DETACH_BYTES};
use prism_core::digest::{sha256_hex as hex_of, JsonHasher};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

fn hash_bytes(py: Python<'_>, bytes: &[u8]) -> String {
    if bytes.len() >= DETACH_BYTES / 16 {
        py.detach(|| hex_of(bytes))
    } else {
        hex_of(bytes)
    }
}

/// Hex SHA-256 of bytes, or of a str's UTF-8 encoding.
#[pyfunction]
pub fn sha256_hex(data: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = data.py();
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(hash_bytes(py, b.as_bytes()));
    }
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(hash_bytes(py, s.to_str()?.as_bytes()));
    }
    Err(PyTypeError::new_err(format!(
        "sha256_hex() needs bytes or str, not {}",
        type_name(data)
    )))
}

/// `(hex, byte_len)` of the compact JSON UTF-8 bytes of `value`.
#[pyfunction]
pub fn digest_value(value: &Bound<'_, PyAny>) -> PyResult<(String, u64)> {
    let mut sink = HashSink(JsonHasher::new());
    walk(value, 0, &mut sink).map_err(WalkError::into_pyerr)?;
    Ok(sink.0.finish())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(digest_value, m)?)?;
    Ok(())
}
