//! The SessionEntry shape of each kind, checked on parsed values.
use super::JVal;
use crate::tokens::EntryKind;

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
