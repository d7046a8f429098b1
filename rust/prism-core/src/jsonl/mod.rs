//! JSONL session files: split lines, parse each into a borrowed, ordered
//! value tree, and validate the SessionEntry shape per kind. No Python here;
//! the binding converts accepted values and reports the rest per line.
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

mod big_ints;
mod shape;

use big_ints::{has_big_int_candidate, parse_with_huge_ints, restore_big_ints};
pub use shape::validate_entry;

/// A parsed JSON value. Strings borrow from the input when they have no
/// escapes; objects keep file order (and duplicate keys, last one wins when
/// converted, like `json.loads`).
#[derive(Debug, Clone, PartialEq)]
pub enum JVal<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    /// An integer literal beyond 64 bits: its exact decimal text (optional
    /// `-`, then digits), converted to an exact Python int by the binding.
    BigInt(&'a str),
    F64(f64),
    Str(Cow<'a, str>),
    Arr(Vec<JVal<'a>>),
    Obj(Vec<(Cow<'a, str>, JVal<'a>)>),
}

impl<'a> JVal<'a> {
    pub fn get(&self, key: &str) -> Option<&JVal<'a>> {
        match self {
            // Last duplicate wins, matching the converted dict.
            JVal::Obj(pairs) => pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            JVal::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct ValVisitor;

impl<'de> Visitor<'de> for ValVisitor {
    type Value = JVal<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(JVal::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(JVal::I64(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(JVal::U64(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(JVal::F64(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(JVal::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(JVal::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(JVal::Str(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(JVal::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(JVal::Arr(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(8);
        while let Some(Key(k)) = map.next_key()? {
            out.push((k, map.next_value()?));
        }
        Ok(JVal::Obj(out))
    }
}

impl<'de> Deserialize<'de> for JVal<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValVisitor)
    }
}

struct Key<'a>(Cow<'a, str>);
struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

/// One physical line: 1-based number, bytes without `\n`/`\r\n`, and
/// whether it was the final line with no newline after it (a torn write).
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub number: usize,
    pub bytes: &'a [u8],
    pub unterminated: bool,
}

pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits `data` into lines. One rule for BOMs, whether a file is read whole
/// or its appended tail is: a UTF-8 BOM is dropped only at the start of the
/// file, which is `first_line == 1` (a reader of a tail passes the file's
/// next line number). Anywhere else a line starting with a BOM is
/// quarantined (see `parse_line`).
pub fn split_lines(data: &[u8], first_line: usize) -> Vec<Line<'_>> {
    let data = if first_line == 1 {
        data.strip_prefix(BOM).unwrap_or(data)
    } else {
        data
    };
    let mut out = Vec::with_capacity(data.len() / 512 + 1);
    let mut start = 0;
    let mut number = first_line;
    for nl in memchr::memchr_iter(b'\n', data) {
        out.push(Line {
            number,
            bytes: strip_cr(&data[start..nl]),
            unterminated: false,
        });
        start = nl + 1;
        number += 1;
    }
    if start < data.len() {
        out.push(Line {
            number,
            bytes: strip_cr(&data[start..]),
            unterminated: true,
        });
    }
    out
}

fn strip_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}

#[derive(Debug)]
pub enum Outcome<'a> {
    Entry(JVal<'a>),
    Blank,
    Error(String),
}

pub fn parse_line<'a>(line: &Line<'a>) -> Outcome<'a> {
    let bytes = line.bytes;
    if bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return Outcome::Blank;
    }
    if bytes.starts_with(BOM) {
        return Outcome::Error(
            "byte order mark at the start of a line (a BOM is allowed only at the start of the file)"
                .into(),
        );
    }
    // The slice reader checks UTF-8 inside strings, and any non-ASCII byte
    // outside a string is a syntax error, so a successful parse implies valid
    // UTF-8; only a failed one needs the separate check for a better reason.
    let value: JVal<'a> = match serde_json::from_slice(bytes) {
        Ok(mut v) => {
            if has_big_int_candidate(&v) {
                restore_big_ints(bytes, &mut v);
            }
            v
        }
        Err(e) => match parse_with_huge_ints(bytes, &e) {
            Some(v) => v,
            None => {
                if let Err(u) = std::str::from_utf8(bytes) {
                    return Outcome::Error(format!("invalid UTF-8 at byte {}", u.valid_up_to()));
                }
                let mut reason = json_error(&e);
                if line.unterminated && e.is_eof() {
                    reason.push_str(" (torn last line: no trailing newline)");
                }
                return Outcome::Error(reason);
            }
        },
    };
    match validate_entry(&value) {
        Ok(()) => Outcome::Entry(value),
        Err(reason) => Outcome::Error(reason),
    }
}

// --- error records -------------------------------------------------------------------

/// Code points of a bad line kept in its error record: enough to recognise
/// the line, bounded so a huge garbage line is not kept in memory.
pub const RAW_EXCERPT_CHARS: usize = 256;

/// The start of a bad line for its error record: at most
/// `RAW_EXCERPT_CHARS` code points (invalid UTF-8 replaced by U+FFFD), with
/// `...` appended when the line is longer.
pub fn raw_excerpt(bytes: &[u8]) -> String {
    // At most 4 bytes per code point; decoding more is wasted work.
    let head = &bytes[..bytes.len().min(RAW_EXCERPT_CHARS * 4)];
    let text = String::from_utf8_lossy(head);
    match text.char_indices().nth(RAW_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None if head.len() < bytes.len() => format!("{text}..."),
        None => text.into_owned(),
    }
}

fn json_error(e: &serde_json::Error) -> String {
    // Every line is its own document, so "line 1" would only mislead.
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => &msg,
    };
    format!("invalid JSON: {msg} at column {}", e.column())
}

/// Parses lines on up to `threads` threads; outcomes keep line order.
pub fn parse_lines<'a>(lines: &[Line<'a>], threads: usize) -> Vec<Outcome<'a>> {
    let bytes: usize = lines.iter().map(|l| l.bytes.len()).sum();
    if threads <= 1 || lines.len() < 2 || bytes < (1 << 20) {
        return lines.iter().map(parse_line).collect();
    }
    // Split by bytes, not by count: one huge line must not serialize a half.
    let per = bytes / threads + 1;
    let mut parts: Vec<&[Line<'a>]> = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, l) in lines.iter().enumerate() {
        acc += l.bytes.len();
        if acc >= per && parts.len() + 1 < threads {
            parts.push(&lines[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    parts.push(&lines[start..]);
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|p| s.spawn(move || p.iter().map(parse_line).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("parser thread"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(data: &[u8]) -> Vec<(usize, Result<(), String>)> {
        let lines = split_lines(data, 1);
        parse_lines(&lines, 1)
            .into_iter()
            .zip(&lines)
            .filter_map(|(o, l)| match o {
                Outcome::Entry(_) => Some((l.number, Ok(()))),
                Outcome::Blank => None,
                Outcome::Error(r) => Some((l.number, Err(r))),
            })
            .collect()
    }

    const OK: &str = r#"{"id":"a","sessionId":"s","parentId":null,"kind":"summary","summary":"x"}"#;

    #[test]
    fn crlf_blank_bom_and_no_final_newline() {
        let data = format!("\u{feff}{OK}\r\n\r\n   \n{OK}");
        let got = parse_all(data.as_bytes());
        assert_eq!(got, vec![(1, Ok(())), (4, Ok(()))]);
    }

    #[test]
    fn torn_last_line_is_flagged() {
        let data = format!("{OK}\n{{\"id\":\"b\",\"sess");
        let got = parse_all(data.as_bytes());
        assert_eq!(got[0], (1, Ok(())));
        let reason = got[1].1.clone().unwrap_err();
        assert!(
            reason.starts_with("invalid JSON: EOF while parsing"),
            "{reason}"
        );
        assert!(
            reason.ends_with("(torn last line: no trailing newline)"),
            "{reason}"
        );
    }

    #[test]
    fn invalid_utf8_and_nul() {
        let mut data = OK.as_bytes().to_vec();
        data.extend_from_slice(b"\n{\"id\":\"\xff\"}\n");
        data.extend_from_slice(b"{\"id\":\"a\x00\"}\n");
        let got = parse_all(&data);
        assert_eq!(got[1].1, Err("invalid UTF-8 at byte 7".into()));
        let nul = got[2].1.clone().unwrap_err();
        assert!(nul.starts_with("invalid JSON: control character"), "{nul}");
    }

    #[test]
    fn field_reasons() {
        let cases = [
            (r#"[1]"#, "entry is not a JSON object"),
            (
                r#"{"sessionId":"s","parentId":null,"kind":"label","label":"l"}"#,
                "missing field 'id'",
            ),
            (
                r#"{"id":"","sessionId":"s","parentId":null,"kind":"label","label":"l"}"#,
                "field 'id' must be a non-empty string",
            ),
            (
                r#"{"id":"a","parentId":null,"kind":"label","label":"l"}"#,
                "missing field 'sessionId'",
            ),
            (
                r#"{"id":"a","sessionId":"s","kind":"label","label":"l"}"#,
                "missing field 'parentId'",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":3,"kind":"label","label":"l"}"#,
                "field 'parentId' must be a string or null",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"nope"}"#,
                "unknown kind 'nope'",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"message","message":{"role":"user","content":"x"}}"#,
                "field 'message.content' must be a list",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"message","message":{"content":[]}}"#,
                "missing field 'message.role'",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"model_change","model":{"provider":"p"}}"#,
                "missing field 'model.model'",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"custom"}"#,
                "missing field 'customType'",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"compaction","summary":"s","data":{"keepEntryIds":[1]}}"#,
                "field 'data.keepEntryIds' must be a list of strings",
            ),
            (
                r#"{"id":"a","sessionId":"s","parentId":null,"kind":"label","label":"l","createdAt":5}"#,
                "field 'createdAt' must be a string",
            ),
        ];
        for (line, want) in cases {
            let got = parse_all(line.as_bytes());
            assert_eq!(got, vec![(1, Err(want.to_string()))], "{line}");
        }
    }

    #[test]
    fn order_and_borrowing() {
        let line = r#"{"id":"a","sessionId":"s","parentId":"p","kind":"custom","customType":"t","data":{"z":1,"a":"x\ny","m":[1.5,-2,18446744073709551615]}}"#;
        let lines = split_lines(line.as_bytes(), 7);
        assert_eq!(lines[0].number, 7);
        let Outcome::Entry(v) = parse_line(&lines[0]) else {
            panic!()
        };
        let JVal::Obj(data) = v.get("data").unwrap() else {
            panic!()
        };
        let keys: Vec<&str> = data.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert!(matches!(v.get("id"), Some(JVal::Str(Cow::Borrowed("a")))));
        assert!(matches!(data[1].1, JVal::Str(Cow::Owned(_))));
        assert_eq!(
            data[2].1,
            JVal::Arr(vec![JVal::F64(1.5), JVal::I64(-2), JVal::U64(u64::MAX)])
        );
    }

    fn custom_data(data: &str) -> String {
        format!(
            r#"{{"id":"a","sessionId":"s","parentId":null,"kind":"custom","customType":"t","data":{data}}}"#
        )
    }

    fn data_of(line: &str) -> JVal<'_> {
        let lines = split_lines(line.as_bytes(), 1);
        match parse_line(&lines[0]) {
            Outcome::Entry(v) => v.get("data").unwrap().clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn integers_beyond_64_bits_keep_their_text() {
        let huge = format!("-{}", "7".repeat(400)); // beyond the f64 range too
        let line = custom_data(&format!(
            r#"[18446744073709551616,-9223372036854775809,18446744073709551615,-9223372036854775808,1e20,20000000000000000000.0,"99999999999999999999",{{"k":{huge}}},1.5]"#
        ));
        let JVal::Arr(items) = data_of(&line) else {
            panic!()
        };
        assert_eq!(items[0], JVal::BigInt("18446744073709551616"));
        assert_eq!(items[1], JVal::BigInt("-9223372036854775809"));
        assert_eq!(items[2], JVal::U64(u64::MAX));
        assert_eq!(items[3], JVal::I64(i64::MIN));
        assert_eq!(items[4], JVal::F64(1e20));
        assert_eq!(items[5], JVal::F64(2e19));
        assert_eq!(items[6], JVal::Str(Cow::Borrowed("99999999999999999999")));
        assert_eq!(items[7].get("k"), Some(&JVal::BigInt(huge.as_str())));
        assert_eq!(items[8], JVal::F64(1.5));
    }

    #[test]
    fn strings_with_escaped_quotes_do_not_shift_tokens() {
        let line = custom_data(r#"["a\"1\\",2,"\"",99999999999999999999999]"#);
        let JVal::Arr(items) = data_of(&line) else {
            panic!()
        };
        assert_eq!(items[1], JVal::U64(2));
        assert_eq!(items[3], JVal::BigInt("99999999999999999999999"));
    }

    #[test]
    fn float_beyond_range_is_still_an_error() {
        let got = parse_all(custom_data("[1e400]").as_bytes());
        let reason = got[0].1.clone().unwrap_err();
        assert!(
            reason.starts_with("invalid JSON: number out of range"),
            "{reason}"
        );
    }

    #[test]
    fn bom_only_at_the_start_of_the_file() {
        let bom_line = format!("\u{feff}{OK}\n");
        // A whole file: the first line's BOM is dropped, a later one is not.
        let whole = format!("{bom_line}{bom_line}");
        let got = parse_all(whole.as_bytes());
        assert_eq!(got[0], (1, Ok(())));
        let reason = got[1].1.clone().unwrap_err();
        assert!(
            reason.starts_with("byte order mark at the start of a line"),
            "{reason}"
        );
        // A tail read from line 2 on starts mid-file: same verdict.
        let lines = split_lines(bom_line.as_bytes(), 2);
        assert!(matches!(parse_line(&lines[0]), Outcome::Error(r) if r == reason));
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(raw_excerpt(b"short"), "short");
        let exact = "\u{e9}".repeat(RAW_EXCERPT_CHARS);
        assert_eq!(raw_excerpt(exact.as_bytes()), exact);
        let long = "x".repeat(10_000_000);
        let got = raw_excerpt(long.as_bytes());
        assert_eq!(got, format!("{}...", "x".repeat(RAW_EXCERPT_CHARS)));
        let mut bad = vec![0xffu8; 5000];
        bad.extend_from_slice(b"tail");
        let got = raw_excerpt(&bad);
        assert_eq!(got.chars().count(), RAW_EXCERPT_CHARS + 3);
        assert!(got.starts_with('\u{fffd}') && got.ends_with("..."));
    }

    #[test]
    fn parallel_keeps_order() {
        let mut data = String::new();
        for i in 0..3000 {
            data.push_str(&OK.replace("\"x\"", &format!("\"{}\"", "y".repeat(i % 700))));
            data.push('\n');
        }
        let lines = split_lines(data.as_bytes(), 1);
        let a = parse_lines(&lines, 1);
        let b = parse_lines(&lines, 4);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            match (x, y) {
                (Outcome::Entry(p), Outcome::Entry(q)) => assert_eq!(p, q),
                _ => panic!("mismatch"),
            }
        }
    }
}
