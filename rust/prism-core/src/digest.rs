//! SHA-256 over compact JSON written piece by piece: the walk feeds
//! punctuation, numbers and strings here and no JSON string is ever built.
//! Pieces are escaped into one large buffer so the hasher sees large
//! updates. `digest_value` and the attention pass's stub digests both hash
//! through this one type.
use sha2::{Digest, Sha256};

use crate::json_len::{load8, word_is_plain};

/// Hash in pieces of about this size.
const FLUSH: usize = 64 * 1024;
const HEX: &[u8; 16] = b"0123456789abcdef";

pub fn sha256_hex(data: &[u8]) -> String {
    to_hex(&Sha256::digest(data))
}

fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

pub struct JsonHasher {
    hasher: Sha256,
    buf: Vec<u8>,
    /// Bytes handed to the hasher so far.
    total: u64,
}

impl Default for JsonHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonHasher {
    pub fn new() -> Self {
        Self {
            hasher: Sha256::new(),
            buf: Vec::with_capacity(FLUSH + 64),
            total: 0,
        }
    }

    /// Bytes that go out verbatim (punctuation, numbers, literals).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        if bytes.len() >= FLUSH {
            self.flush();
            self.update(bytes);
        } else {
            self.buf.extend_from_slice(bytes);
            self.maybe_flush();
        }
    }

    #[inline]
    fn update(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.hasher.update(bytes);
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            self.update(&buf);
            self.buf = buf;
            self.buf.clear();
        }
    }

    #[inline]
    fn maybe_flush(&mut self) {
        if self.buf.len() >= FLUSH {
            self.flush();
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

    /// A JSON string literal: quotes plus UTF-8 `s` escaped the way
    /// `json.dumps` does with `ensure_ascii=False`. Escaped into the buffer
    /// eight bytes at a time: code and log payloads have an escape every few
    /// dozen bytes (newlines, quotes), and a hasher update per run between
    /// escapes would cost more than the hashing.
    pub fn string(&mut self, s: &[u8]) {
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

    /// Hex digest and the number of bytes hashed.
    pub fn finish(mut self) -> (String, u64) {
        self.flush();
        (to_hex(&self.hasher.finalize()), self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn streamed_equals_whole() {
        let mut h = JsonHasher::new();
        h.raw(b"{");
        h.string("k\u{e9}y".as_bytes());
        h.raw(b":");
        h.string(b"a\"b\\c\nd\x01e");
        h.raw(b"}");
        let whole = "{\"k\u{e9}y\":\"a\\\"b\\\\c\\nd\\u0001e\"}";
        let (hex, n) = h.finish();
        assert_eq!(hex, sha256_hex(whole.as_bytes()));
        assert_eq!(n as usize, whole.len());
    }

    /// The escape rules spelled out one byte at a time.
    fn reference_literal(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn every_length_and_escape_matches_the_reference() {
        let alphabet: Vec<char> = "ab \"\\\n\t\r\u{0}\u{1f}\u{8}\u{c}\u{7f}é→/"
            .chars()
            .collect();
        for n in [
            0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 9000, 70_000, 200_000,
        ] {
            let text: String = (0..n)
                .map(|i| alphabet[(i * 7 + n) % alphabet.len()])
                .collect();
            let mut h = JsonHasher::new();
            h.raw(b"[");
            h.string(text.as_bytes());
            h.raw(b",-42]");
            let whole = format!("[{},-42]", reference_literal(&text));
            let (hex, total) = h.finish();
            assert_eq!(hex, sha256_hex(whole.as_bytes()), "length {n}");
            assert_eq!(total as usize, whole.len(), "length {n}");
        }
    }

    #[test]
    fn large_runs_bypass_the_buffer() {
        let big = "x".repeat(3 * FLUSH + 17);
        let mut h = JsonHasher::new();
        h.raw(b"[");
        h.string(big.as_bytes());
        h.raw(b"]");
        let whole = format!("[\"{big}\"]");
        assert_eq!(h.finish().0, sha256_hex(whole.as_bytes()));
    }
}
