//! SHA-256 of a stubbed payload's compact JSON, for the stub text.
//!
//! The same bytes as `digest::JsonHasher` (the shared walk drives both), but
//! strings are escaped eight bytes at a time into one large buffer: code and
//! log payloads have an escape every few dozen bytes (newlines, quotes), and
//! a hasher update per run between escapes costs more than the hashing.
use pyo3::prelude::*;
use pyo3::types::PyString;
use sha2::{Digest, Sha256};

use super::size::{load8, word_is_plain};
use crate::bindings::walk::{Sink, WalkError, WalkResult};

/// Hash in pieces of about this size.
const FLUSH: usize = 64 * 1024;
const HEX: &[u8; 16] = b"0123456789abcdef";

pub(super) struct DigestSink {
    hasher: Sha256,
    buf: Vec<u8>,
}

impl DigestSink {
    pub(super) fn new() -> Self {
        Self {
            hasher: Sha256::new(),
            buf: Vec::with_capacity(FLUSH + 64),
        }
    }

    /// Hex SHA-256 of everything written.
    pub(super) fn finish(mut self) -> String {
        self.hasher.update(&self.buf);
        let mut hex = String::with_capacity(64);
        for b in self.hasher.finalize() {
            hex.push(HEX[(b >> 4) as usize] as char);
            hex.push(HEX[(b & 15) as usize] as char);
        }
        hex
    }

    #[inline]
    fn maybe_flush(&mut self) {
        if self.buf.len() >= FLUSH {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
    }

    #[inline(always)]
    fn escape(&mut self, b: u8) {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            self.buf.push(b);
            return;
        }
        self.escape_special(b);
    }

    #[inline(never)]
    fn escape_special(&mut self, b: u8) {
        match b {
            b'"' => self.buf.extend_from_slice(b"\\\""),
            b'\\' => self.buf.extend_from_slice(b"\\\\"),
            b'\n' => self.buf.extend_from_slice(b"\\n"),
            b'\r' => self.buf.extend_from_slice(b"\\r"),
            b'\t' => self.buf.extend_from_slice(b"\\t"),
            0x08 => self.buf.extend_from_slice(b"\\b"),
            0x0c => self.buf.extend_from_slice(b"\\f"),
            0x00..=0x1f => self.buf.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
            _ => self.buf.push(b),
        }
    }

    /// A JSON string literal of UTF-8 `s`, escaped as `json.dumps` does
    /// with `ensure_ascii=False`.
    pub(super) fn string_bytes(&mut self, s: &[u8]) {
        self.buf.push(b'"');
        // Segments bound the buffer: at most 6 output bytes per input byte.
        for seg in s.chunks(FLUSH / 8) {
            self.buf.reserve(seg.len() * 6 + 1);
            let mut i = 0;
            while i + 8 <= seg.len() {
                if word_is_plain(load8(seg, i)) {
                    self.buf.extend_from_slice(&seg[i..i + 8]);
                } else {
                    for &b in &seg[i..i + 8] {
                        self.escape(b);
                    }
                }
                i += 8;
            }
            for &b in &seg[i..] {
                self.escape(b);
            }
            self.maybe_flush();
        }
        self.buf.push(b'"');
    }
}

impl Sink for DigestSink {
    #[inline]
    fn punct(&mut self, b: &'static [u8]) {
        self.buf.extend_from_slice(b);
        self.maybe_flush();
    }
    fn string(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        let text = s
            .to_str()
            .map_err(|_| WalkError::value_err("str with a lone surrogate has no UTF-8 encoding"))?;
        self.string_bytes(text.as_bytes());
        Ok(())
    }
    fn int(&mut self, v: i64) {
        self.buf.extend_from_slice(v.to_string().as_bytes());
        self.maybe_flush();
    }
    fn digits(&mut self, d: &str) {
        self.buf.extend_from_slice(d.as_bytes());
        self.maybe_flush();
    }
    fn float(&mut self, repr: &str) {
        self.buf.extend_from_slice(repr.as_bytes());
        self.maybe_flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::JsonHasher;

    #[test]
    fn same_digest_as_the_shared_hasher() {
        let alphabet: &[u8] = "ab \"\\\n\t\r\x00\x1f\x08\x0c\x7fé→/".as_bytes();
        for n in [
            0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 9000, 70_000,
        ] {
            let s: Vec<u8> = (0..n)
                .map(|i| alphabet[(i * 7 + n) % alphabet.len()])
                .collect();
            // Keep it valid UTF-8: é and → are multi-byte, so rebuild from chars.
            let text = String::from_utf8_lossy(&s).into_owned();
            let mut mine = DigestSink::new();
            mine.punct(b"[");
            mine.string_bytes(text.as_bytes());
            mine.punct(b",");
            mine.int(-42);
            mine.punct(b"]");
            let mut shared = JsonHasher::new();
            shared.raw(b"[");
            shared.string(text.as_bytes());
            shared.raw(b",-42]");
            assert_eq!(mine.finish(), shared.finish().0, "length {n}");
        }
    }
}
