//! Compact-JSON text rules shared by the length walk and the digest walk:
//! which bytes of a string need escaping, and Python's `repr(float)`.
//!
//! Everything here matches `json.dumps(v, separators=(",", ":"),
//! ensure_ascii=False)`: only `"`, `\` and C0 controls are escaped; the
//! seven short escapes cost one extra character, every other control char
//! becomes `\u00XX` (five extra).

/// Extra characters escaping adds to one byte of UTF-8 (0 for most bytes).
#[inline(always)]
pub fn escape_extra(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
        0x00..=0x1f => 5,
        _ => 0,
    }
}

/// Sum of `escape_extra` over `bytes`. Bytes >= 0x80 never need escaping, so
/// this works on UTF-8 (and on surrogate-pass encodings) without decoding.
#[allow(unsafe_code)] // the AVX2 dispatch below
pub fn escaped_extra(bytes: &[u8]) -> usize {
    if bytes.len() < 64 {
        // Keys, ids, paths: most strings are short, and a vector loop's setup
        // costs more than it saves there (measured 3x slower on 35 bytes).
        return escaped_extra_short(bytes);
    }
    #[cfg(target_arch = "x86_64")]
    {
        // Wheels target baseline x86-64 (SSE2); AVX2 doubles the lane count
        // where the CPU has it. The check is a cached atomic load.
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { escaped_extra_avx2(bytes) };
        }
    }
    escaped_extra_lanes(bytes)
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
unsafe fn escaped_extra_avx2(bytes: &[u8]) -> usize {
    escaped_extra_lanes(bytes)
}

#[inline(always)]
fn escaped_extra_lanes(bytes: &[u8]) -> usize {
    // Branch-free u8 lanes: 32 bytes add at most 160, so a u8 accumulator per
    // chunk cannot overflow and LLVM turns the inner loop into SIMD compares
    // plus one horizontal sum (5x faster than widening to u32 per byte).
    let mut total = 0usize;
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        let mut acc = 0u8;
        for &b in chunk {
            acc = acc.wrapping_add(extra_u8(b));
        }
        total += acc as usize;
    }
    let mut acc = 0u8;
    for &b in chunks.remainder() {
        acc = acc.wrapping_add(extra_u8(b));
    }
    total + acc as usize
}

/// Eight bytes at a time: a word with nothing to escape (the usual case)
/// is skipped with a few integer ops; other words are counted byte by byte.
fn escaped_extra_short(bytes: &[u8]) -> usize {
    let mut total = 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        if !word_is_plain(w) {
            total += word.iter().map(|&b| extra_u8(b) as usize).sum::<usize>();
        }
    }
    total
        + words
            .remainder()
            .iter()
            .map(|&b| extra_u8(b) as usize)
            .sum::<usize>()
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// Eight 'a's: needs no escaping, so padding with it adds nothing.
const PAD: u64 = ONES * b'a' as u64;

/// The eight bytes of `bytes` at `at`, little-endian.
#[inline(always)]
pub fn load8(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// True when none of the eight bytes of `w` needs escaping (exact as a
/// yes/no: no byte is < 0x20, '"' or '\\').
#[inline(always)]
pub fn word_is_plain(w: u64) -> bool {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    control | zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64)) == 0
}

/// Escape cost of the eight bytes of `w`.
#[inline(always)]
fn word_extra(w: u64) -> u64 {
    if word_is_plain(w) {
        return 0;
    }
    w.to_le_bytes()
        .iter()
        .map(|&b| escape_extra(b) as u64)
        .sum()
}

/// `escaped_extra` tuned for the many short strings of JSON payloads (paths,
/// names, log lines) measured inside one hot loop: eight bytes at a time, and
/// the tail never goes through memory (a copied tail stalls store
/// forwarding). Long strings take the shared SIMD scan.
#[inline(always)]
pub fn string_extra(utf8: &[u8]) -> u64 {
    let n = utf8.len();
    if n >= 64 {
        return escaped_extra(utf8) as u64;
    }
    let mut total = 0u64;
    let mut i = 0;
    while i + 8 <= n {
        total += word_extra(load8(utf8, i));
        i += 8;
    }
    let rest = n - i;
    if rest > 0 {
        // Either the last eight bytes with the already counted ones replaced
        // by padding, or the short string assembled in a register.
        let w = if n >= 8 {
            let fresh = !0u64 << ((8 - rest) * 8);
            (load8(utf8, n - 8) & fresh) | (PAD & !fresh)
        } else {
            let mut w = PAD;
            for (k, &b) in utf8.iter().enumerate() {
                w = (w & !(0xff << (k * 8))) | ((b as u64) << (k * 8));
            }
            w
        };
        total += word_extra(w);
    }
    total
}

#[inline(always)]
fn extra_u8(b: u8) -> u8 {
    let control = (b < 0x20) as u8;
    let quote = ((b == b'"') | (b == b'\\')) as u8;
    let short = ((b == 0x08) | (b == b'\t') | (b == b'\n') | (b == 0x0c) | (b == b'\r')) as u8;
    quote + control * 5 - short * 4
}

/// Length of a JSON string literal (quotes included) in code points, given
/// the string's UTF-8 bytes and its code-point count.
#[inline]
pub fn string_literal_len(utf8: &[u8], code_points: usize) -> usize {
    code_points + 2 + escaped_extra(utf8)
}

/// Decimal length of an i64 as Python's `int.__repr__` writes it.
pub fn int_len(v: i64) -> usize {
    let digits = v
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits + (v < 0) as usize
}

/// Python's `repr(float)` for finite values; `None` for NaN and infinities
/// (which strict JSON cannot carry).
///
/// Both Rust's `{:e}` and CPython use the shortest digit string that round
/// trips; only the layout differs. CPython switches to exponent notation when
/// the decimal exponent is < -4 or >= 16, writes at least two exponent digits
/// with a sign, and adds `.0` to integral fixed-notation values.
pub fn py_float_repr(v: f64) -> Option<String> {
    if !v.is_finite() {
        return None;
    }
    let sci = format!("{:e}", v);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= n - 1 {
            out.push_str(&digits);
            for _ in 0..(exp - (n - 1)) {
                out.push('0');
            }
            out.push_str(".0");
        } else if exp >= 0 {
            let split = (exp + 1) as usize;
            out.push_str(&digits[..split]);
            out.push('.');
            out.push_str(&digits[split..]);
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        out.push_str(&e.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_match_python() {
        assert_eq!(string_literal_len(b"abc", 3), 5);
        assert_eq!(escaped_extra(b"\"\\\n\r\t\x08\x0c"), 7);
        assert_eq!(escaped_extra(b"\x00\x1f\x7f"), 10);
        // "é" is two UTF-8 bytes but one code point; neither byte escapes.
        assert_eq!(string_literal_len("é".as_bytes(), 1), 3);
        let long = "a\"".repeat(5000);
        assert_eq!(escaped_extra(long.as_bytes()), 5000);
        let all: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let slow: usize = all.iter().map(|&b| escape_extra(b)).sum();
        assert_eq!(escaped_extra(&all), slow);
        // Short inputs take the word-at-a-time path: every length, offset
        // and byte value must agree with the per-byte rule.
        for start in 0..256 {
            for len in 0..64 {
                let s = &all[start..start + len];
                let want: usize = s.iter().map(|&b| escape_extra(b)).sum();
                assert_eq!(escaped_extra(s), want, "start {start} len {len}");
            }
        }
    }

    #[test]
    fn short_scan_matches_shared_scan() {
        let alphabet: &[u8] = b"a\"\\\n\t\x00\x1f\x08\x0c\r \x7f\xc3\xa9/";
        // Every length up to 70 and every position of every special byte.
        for n in 0..70usize {
            for (k, &special) in alphabet.iter().enumerate() {
                let mut s: Vec<u8> = (0..n)
                    .map(|i| alphabet[(i * 7 + k) % alphabet.len()])
                    .collect();
                if n > 0 {
                    s[(k * 13) % n] = special;
                }
                assert_eq!(string_extra(&s), escaped_extra(&s) as u64, "{s:?}");
                let plain = vec![b'x'; n];
                assert_eq!(string_extra(&plain), 0);
            }
        }
    }

    #[test]
    fn int_lengths() {
        assert_eq!(int_len(0), 1);
        assert_eq!(int_len(-1), 2);
        assert_eq!(int_len(i64::MIN), 20);
        assert_eq!(int_len(i64::MAX), 19);
        assert_eq!(int_len(1000), 4);
    }

    #[test]
    fn float_repr_matches_cpython() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (123.456, "123.456"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.2345e-7, "1.2345e-07"),
            (1e-100, "1e-100"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-2.5, "-2.5"),
            (12345678901234.5, "12345678901234.5"),
        ];
        for (v, want) in cases {
            assert_eq!(py_float_repr(*v).unwrap(), *want, "{v}");
        }
        assert!(py_float_repr(f64::NAN).is_none());
        assert!(py_float_repr(f64::INFINITY).is_none());
    }
}
