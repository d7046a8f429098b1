//! SHA-256 over compact JSON written piece by piece: the walk feeds
//! punctuation, numbers and escaped strings here and no JSON string is ever
//! built. Small pieces are batched so the hasher sees large updates.
use sha2::{Digest, Sha256};

const BUF: usize = 8192;
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
            buf: Vec::with_capacity(BUF),
            total: 0,
        }
    }

    /// Bytes that go out verbatim (punctuation, numbers, literals, string runs).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.buf.len() + bytes.len() <= BUF {
            self.buf.extend_from_slice(bytes);
        } else {
            self.flush();
            if bytes.len() >= BUF {
                self.hasher.update(bytes);
            } else {
                self.buf.extend_from_slice(bytes);
            }
        }
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
    }

    /// A JSON string literal: quotes plus `s` escaped the way `json.dumps`
    /// does with `ensure_ascii=False`. Runs between escapes go out unchanged.
    pub fn string(&mut self, s: &[u8]) {
        self.raw(b"\"");
        let mut start = 0;
        for (i, &b) in s.iter().enumerate() {
            if b >= 0x20 && b != b'"' && b != b'\\' {
                continue;
            }
            if start < i {
                self.raw(&s[start..i]);
            }
            match b {
                b'"' => self.raw(b"\\\""),
                b'\\' => self.raw(b"\\\\"),
                b'\n' => self.raw(b"\\n"),
                b'\r' => self.raw(b"\\r"),
                b'\t' => self.raw(b"\\t"),
                0x08 => self.raw(b"\\b"),
                0x0c => self.raw(b"\\f"),
                _ => {
                    let esc = [
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[(b >> 4) as usize],
                        HEX[(b & 15) as usize],
                    ];
                    self.raw(&esc);
                }
            }
            start = i + 1;
        }
        if start < s.len() {
            self.raw(&s[start..]);
        }
        self.raw(b"\"");
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

    #[test]
    fn large_runs_bypass_the_buffer() {
        let big = "x".repeat(3 * BUF + 17);
        let mut h = JsonHasher::new();
        h.raw(b"[");
        h.string(big.as_bytes());
        h.raw(b"]");
        let whole = format!("[\"{big}\"]");
        assert_eq!(h.finish().0, sha256_hex(whole.as_bytes()));
    }
}
