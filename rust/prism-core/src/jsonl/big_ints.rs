//! Integers beyond 64 bits, kept exact.
//!
//! serde_json (without `arbitrary_precision`, which would allocate a string
//! per number) reads an integer literal that does not fit i64/u64 as an f64,
//! and refuses one beyond the f64 range. Such lines are rare, so the common
//! path pays one check of the parsed numbers; a line that has a candidate is
//! scanned again for its number tokens, which appear in the text in the same
//! order as in the value tree, and each integer literal beyond 64 bits is
//! put back as its exact text.
use std::borrow::Cow;

use super::JVal;

/// Smallest magnitude an f64 can have when it came from an integer literal
/// that does not fit i64/u64: anything below parses as I64/U64.
const BIG_POSITIVE: f64 = 18_446_744_073_709_551_616.0; // 2^64
const BIG_NEGATIVE: f64 = -9_223_372_036_854_775_808.0; // -2^63

pub(super) fn has_big_int_candidate(v: &JVal<'_>) -> bool {
    match v {
        JVal::F64(f) => f.fract() == 0.0 && (*f >= BIG_POSITIVE || *f <= BIG_NEGATIVE),
        JVal::Arr(items) => items.iter().any(has_big_int_candidate),
        JVal::Obj(pairs) => pairs.iter().any(|(_, v)| has_big_int_candidate(v)),
        _ => false,
    }
}

/// The number tokens of a valid JSON text, in order, as (start, end).
fn number_tokens(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                out.push((start, i));
            }
            _ => i += 1,
        }
    }
    out
}

/// An integer literal (no fraction, no exponent) that fits neither i64 nor u64.
fn big_int_token(token: &str) -> bool {
    !token.contains(['.', 'e', 'E'])
        && token.parse::<i64>().is_err()
        && token.parse::<u64>().is_err()
}

/// Replaces, in document order, each number whose token is a big integer
/// literal by `JVal::BigInt` of that token.
pub(super) fn restore_big_ints<'a>(bytes: &'a [u8], v: &mut JVal<'a>) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return; // unreachable for a parsed line: it was valid UTF-8
    };
    let mut tokens = number_tokens(bytes).into_iter().map(|(a, b)| &text[a..b]);
    put_back(v, &mut tokens);
}

fn put_back<'a>(v: &mut JVal<'a>, tokens: &mut impl Iterator<Item = &'a str>) {
    match v {
        JVal::I64(_) | JVal::U64(_) | JVal::F64(_) | JVal::BigInt(_) => {
            if let Some(token) = tokens.next() {
                if big_int_token(token) {
                    *v = JVal::BigInt(token);
                }
            }
        }
        JVal::Arr(items) => items.iter_mut().for_each(|x| put_back(x, tokens)),
        JVal::Obj(pairs) => pairs.iter_mut().for_each(|(_, x)| put_back(x, tokens)),
        _ => {}
    }
}

/// A line refused only because an integer literal is beyond the f64 range:
/// parse a copy with those literals as `0`, then put the exact texts back.
pub(super) fn parse_with_huge_ints<'a>(
    bytes: &'a [u8],
    err: &serde_json::Error,
) -> Option<JVal<'a>> {
    if !err.to_string().starts_with("number out of range") {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let tokens = number_tokens(bytes);
    let mut copy = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for &(a, b) in &tokens {
        if big_int_token(&text[a..b]) {
            copy.extend_from_slice(&bytes[at..a]);
            copy.push(b'0');
            at = b;
        }
    }
    copy.extend_from_slice(&bytes[at..]);
    // The copy's strings must not borrow from it: rebuild them owned.
    let parsed: JVal<'_> = serde_json::from_slice(&copy).ok()?;
    let mut v = parsed.into_owned();
    put_back(&mut v, &mut tokens.iter().map(|&(a, b)| &text[a..b]));
    Some(v)
}

impl JVal<'_> {
    /// The same value with every borrowed string copied.
    fn into_owned<'b>(self) -> JVal<'b> {
        match self {
            JVal::Null => JVal::Null,
            JVal::Bool(b) => JVal::Bool(b),
            JVal::I64(i) => JVal::I64(i),
            JVal::U64(u) => JVal::U64(u),
            JVal::F64(f) => JVal::F64(f),
            // Never produced by serde: `BigInt`s are put back afterwards.
            JVal::BigInt(_) => JVal::I64(0),
            JVal::Str(s) => JVal::Str(Cow::Owned(s.into_owned())),
            JVal::Arr(items) => JVal::Arr(items.into_iter().map(JVal::into_owned).collect()),
            JVal::Obj(pairs) => JVal::Obj(
                pairs
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
            ),
        }
    }
}
