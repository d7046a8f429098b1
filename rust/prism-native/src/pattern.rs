//! JSON-schema `pattern` search in linear time (`prism_core::pattern`).
use crate::walk::DETACH_BYTES;
use prism_core::pattern::search;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// True when `pattern` matches anywhere in `text`. Raises `ValueError` with
/// the reason when the pattern cannot be matched in linear time
/// (backreferences, lookaround) or is invalid; `pattern_search(p, "")`
/// therefore checks a pattern.
#[pyfunction]
pub fn pattern_search(pattern: &str, text: &Bound<'_, PyString>) -> PyResult<bool> {
    // A lone surrogate (JSON allows "\ud800") has no UTF-8 form: it is
    // matched as replacement characters, which no real pattern singles out.
    let py = text.py();
    let text = text.to_string_lossy();
    let run = || search(pattern, &text);
    let found = if text.len() >= DETACH_BYTES {
        py.detach(run)
    } else {
        run()
    };
    found.map_err(|error| PyValueError::new_err(error.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pattern_search, m)?)?;
    Ok(())
}
