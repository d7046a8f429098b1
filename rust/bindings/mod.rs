//! The only pyo3 code: converts Python values for the pure modules, walks
//! them in place, and releases the GIL around large pure work.
use pyo3::prelude::*;

mod hash;
mod jsonl;
mod redactor;
pub mod tokens;
pub mod walk;

/// Registers every export of this module on `prism._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_DEPTH", walk::MAX_DEPTH)?;
    m.add("IMAGE_TOKENS", tokens::IMAGE_TOKENS)?;
    m.add("MESSAGE_OVERHEAD_TOKENS", tokens::MESSAGE_OVERHEAD_TOKENS)?;
    m.add("MIN_SECRET_LENGTH", crate::redact::MIN_SECRET_LENGTH)?;
    m.add_function(wrap_pyfunction!(tokens::json_length, m)?)?;
    m.add_function(wrap_pyfunction!(tokens::estimate_text_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(tokens::estimate_value_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(tokens::estimate_message_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(tokens::estimate_entry_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(hash::sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(hash::digest_value, m)?)?;
    m.add_class::<redactor::Redactor>()?;
    m.add_function(wrap_pyfunction!(jsonl::parse_session_entries, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl::read_session_entries, m)?)?;
    Ok(())
}
