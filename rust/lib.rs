//! The native core of Prism. Pure modules (no pyo3) hold the computation and
//! are covered by `cargo test`; `bindings` only converts and releases the GIL.
//! Other native features add a module and one `register` line below; they can
//! reuse `bindings::walk` (in-place JSON walks) and `bindings::tokens`.
use pyo3::prelude::*;

pub mod digest;
pub mod json_len;
pub mod jsonl;
pub mod redact;

pub mod attention;
pub mod bindings;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bindings::register(m)?;
    attention::register(m)?;
    Ok(())
}
