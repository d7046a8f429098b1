//! JSONL session files: split lines, parse each into a borrowed, ordered
//! value tree, and validate the SessionEntry shape per kind. No Python here;
//! the binding converts accepted values and reports the rest per line.
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

use crate::tokens::EntryKind;

/// A parsed JSON value. Strings borrow from the input when they have no
/// escapes; objects keep file order (and duplicate keys, last one wins when
/// converted, like `json.loads`).
#[derive(Debug, Clone, PartialEq)]
pub enum JVal<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
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
    fn as_str(&self) -> Option<&str> {
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

/// Splits `data` into lines; a UTF-8 BOM at the very start is dropped.
pub fn split_lines(data: &[u8], first_line: usize) -> Vec<Line<'_>> {
    let data = data.strip_prefix(BOM).unwrap_or(data);
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
    // The slice reader checks UTF-8 inside strings, and any non-ASCII byte
    // outside a string is a syntax error, so a successful parse implies valid
    // UTF-8; only a failed one needs the separate check for a better reason.
    let value: JVal<'a> = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            if let Err(u) = std::str::from_utf8(bytes) {
                return Outcome::Error(format!("invalid UTF-8 at byte {}", u.valid_up_to()));
            }
            let mut reason = json_error(&e);
            if line.unterminated && e.is_eof() {
                reason.push_str(" (torn last line: no trailing newline)");
            }
            return Outcome::Error(reason);
        }
    };
    match validate_entry(&value) {
        Ok(()) => Outcome::Entry(value),
        Err(reason) => Outcome::Error(reason),
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

fn need<'v, 'a>(obj: &'v JVal<'a>, field: &str, label: &str) -> Result<&'v JVal<'a>, String> {
    obj.get(field)
        .ok_or_else(|| format!("missing field '{label}'"))
}

fn need_str<'v>(obj: &'v JVal<'_>, field: &str, label: &str) -> Result<&'v str, String> {
    need(obj, field, label)?
        .as_str()
        .ok_or_else(|| format!("field '{label}' must be a string"))
}

fn need_id(obj: &JVal<'_>, field: &str) -> Result<(), String> {
    match need(obj, field, field)?.as_str() {
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err(format!("field '{field}' must be a non-empty string")),
    }
}

fn need_obj<'v, 'a>(obj: &'v JVal<'a>, field: &str, label: &str) -> Result<&'v JVal<'a>, String> {
    match need(obj, field, label)? {
        v @ JVal::Obj(_) => Ok(v),
        _ => Err(format!("field '{label}' must be an object")),
    }
}

fn optional(
    obj: &JVal<'_>,
    field: &str,
    ok: fn(&JVal<'_>) -> bool,
    what: &str,
) -> Result<(), String> {
    match obj.get(field) {
        Some(v) if !ok(v) => Err(format!("field '{field}' must be {what}")),
        _ => Ok(()),
    }
}

/// Checks one line's value against the SessionEntry shape of its kind.
pub fn validate_entry(v: &JVal<'_>) -> Result<(), String> {
    if !matches!(v, JVal::Obj(_)) {
        return Err("entry is not a JSON object".into());
    }
    need_id(v, "id")?;
    need_id(v, "sessionId")?;
    match need(v, "parentId", "parentId")? {
        JVal::Null | JVal::Str(_) => {}
        _ => return Err("field 'parentId' must be a string or null".into()),
    }
    let kind = need_str(v, "kind", "kind")?;
    optional(v, "createdAt", |x| matches!(x, JVal::Str(_)), "a string")?;
    optional(v, "metadata", |x| matches!(x, JVal::Obj(_)), "an object")?;
    match EntryKind::of(kind) {
        Some(EntryKind::Message) => {
            let m = need_obj(v, "message", "message")?;
            need_str(m, "role", "message.role")?;
            match need(m, "content", "message.content")? {
                JVal::Arr(blocks) => {
                    for (i, b) in blocks.iter().enumerate() {
                        if b.get("type").and_then(JVal::as_str).is_none() {
                            return Err(format!(
                                "field 'message.content[{i}]' must be an object with a string 'type'"
                            ));
                        }
                    }
                }
                _ => return Err("field 'message.content' must be a list".into()),
            }
        }
        Some(EntryKind::Summary) => {
            need_str(v, "summary", "summary")?;
        }
        Some(EntryKind::ModelChange) => {
            let m = need_obj(v, "model", "model")?;
            need_str(m, "provider", "model.provider")?;
            need_str(m, "model", "model.model")?;
        }
        Some(EntryKind::Custom) => {
            need_str(v, "customType", "customType")?;
        }
        Some(EntryKind::Compaction) => {
            need_str(v, "summary", "summary")?;
            let d = need_obj(v, "data", "data")?;
            match need(d, "keepEntryIds", "data.keepEntryIds")? {
                JVal::Arr(ids) if ids.iter().all(|x| matches!(x, JVal::Str(_))) => {}
                _ => return Err("field 'data.keepEntryIds' must be a list of strings".into()),
            }
            match d.get("throughEntryId") {
                None | Some(JVal::Null) | Some(JVal::Str(_)) => {}
                _ => return Err("field 'data.throughEntryId' must be a string or null".into()),
            }
        }
        Some(EntryKind::Label) => {
            need_str(v, "label", "label")?;
            optional(v, "targetId", |x| matches!(x, JVal::Str(_)), "a string")?;
        }
        None => {
            let shown: String = kind.chars().take(40).collect();
            return Err(format!("unknown kind '{shown}'"));
        }
    }
    Ok(())
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
