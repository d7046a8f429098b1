//! Prism's native rules with no Python in them: compact-JSON text rules,
//! SHA-256 of streamed JSON, secret matching, session-file (JSONL) parsing
//! and validation, the token-estimate rules, the token calibration's fit,
//! the attention planner and linear-time matching of JSON-schema `pattern`s.
//!
//! The `prism-native` crate is the only pyo3 code: it walks Python objects,
//! feeds them to these modules and converts the results. Everything here is
//! covered by `cargo test -p prism-core`, which needs no libpython.
#![deny(unsafe_code)] // one exception: the AVX2 dispatch in `json_len`

pub mod attention;
pub mod calibration;
pub mod digest;
pub mod json_len;
pub mod jsonl;
pub mod pattern;
pub mod redact;
pub mod search;
pub mod tokens;
