//! `prism._native`: the pyo3 binding of `prism-core`. It walks Python values
//! in place (`walk`), converts them for the core's rules, releases the GIL
//! around large pure work, and registers every export. Nothing computed here
//! is a rule of its own: escapes, digests, token rules, secret matching,
//! session-file shapes and the attention planner all live in `prism-core`.
//!
//! Another native feature adds a module and one `register` line below; it
//! can reuse `walk` (in-place JSON walks with a custom `Sink`).
use pyo3::prelude::*;

pub mod attention;
mod calibration;
mod hash;
mod jsonl;
mod pattern;
pub mod redactor;
mod search;
pub mod tokens;
pub mod walk;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_DEPTH", walk::MAX_DEPTH)?;
    m.add("MIN_SECRET_LENGTH", prism_core::redact::MIN_SECRET_LENGTH)?;
    tokens::register(m)?;
    hash::register(m)?;
    m.add_class::<redactor::Redactor>()?;
    jsonl::register(m)?;
    attention::register(m)?;
    calibration::register(m)?;
    search::register(m)?;
    pattern::register(m)?;
    Ok(())
}
