//! The native core of Prism. Pure modules (no pyo3) hold the computation and
//! are covered by `cargo test`; `bindings` only converts and releases the GIL.
use pyo3::prelude::*;

#[pymodule]
fn _native(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
