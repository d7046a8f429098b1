//! The text that replaces a stubbed tool result, and the sticky keys of
//! thinking turns. The planner prices a stub from these rules before the
//! text exists, so the format and its size live together (a test ties them).

/// Characters of the stub text that do not depend on the row:
/// `Tool result ` + ` [` + `]: omitted ` + ` bytes (sha256 ` + 32 hex + `)`.
pub const STUB_FIXED_CHARS: u64 = 12 + 2 + 11 + 15 + 32 + 1;

/// Hex digits of the payload digest kept in the stub.
const STUB_HEX_CHARS: usize = 32;

/// The stub for a result of tool `name`, call `id`, whose payload (compact
/// JSON of the redacted result) is `bytes` bytes with SHA-256 `hex`.
pub fn stub_text(name: &str, id: &str, bytes: u64, hex: &str) -> String {
    format!(
        "Tool result {name} [{id}]: omitted {bytes} bytes (sha256 {})",
        &hex[..STUB_HEX_CHARS]
    )
}

/// Decimal digits of `n`.
#[inline]
pub fn digits(mut n: u64) -> u64 {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Sticky key of a thinking turn without a message id: its first tool call.
pub fn thinking_key_from_call_id(call_id: &str) -> String {
    format!("call:{call_id}")
}

/// Sticky key of a thinking turn with neither id nor tool call: the hex
/// SHA-256 of its first thinking block's signature (or text).
pub fn thinking_key_from_digest(hex: &str) -> String {
    format!("sha256:{}", &hex[..STUB_HEX_CHARS])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_chars_match_the_format() {
        let hex = "0123456789abcdef".repeat(4);
        for (name, id, bytes) in [("read", "c1", 0u64), ("", "", 41_982), ("näme", "id→", 7)] {
            let text = stub_text(name, id, bytes, &hex);
            let var = (name.chars().count() + id.chars().count()) as u64 + digits(bytes);
            assert_eq!(
                text.chars().count() as u64,
                STUB_FIXED_CHARS + var,
                "{text}"
            );
        }
    }

    #[test]
    fn digits_counts() {
        assert_eq!(
            (
                digits(0),
                digits(9),
                digits(10),
                digits(41_982),
                digits(u64::MAX)
            ),
            (1, 1, 2, 5, 20)
        );
    }
}
