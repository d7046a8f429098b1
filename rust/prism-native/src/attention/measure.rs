//! Measurement for the attention pass: walk each row of the request once
//! (the native helper's in-place JSON walk), keep what the planner needs, and
//! cache it per session for incremental turns.
//!
//! Token rules: `prism_core::tokens`, the same as `estimate_message_tokens`
//! (per-block rounding, so every mutation's delta is exact), but lenient:
//! a missing field counts as absent instead of raising. Context blocks,
//! skills and tool declarations cost ceil(compact JSON chars / 4).
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::size::{json_size, Size};
use crate::walk::code_points;
use prism_core::attention::{thinking_key_from_call_id, thinking_key_from_digest};
use prism_core::digest::sha256_hex;
use prism_core::json_len::escaped_extra;
use prism_core::tokens::{block_tokens, ceil4, BlockKind, MESSAGE_OVERHEAD_TOKENS};

const APPROVAL_KEYS: [&str; 7] = [
    "approval",
    "approvalId",
    "prismApproval",
    "decision",
    "decisions",
    "pendingDecisions",
    "elicitation",
];

/// Borrowed dict lookup (no reference counting on the hot path); only for
/// values inspected before any Python code could run.
#[inline]
fn peek<'a, 'py>(
    d: &'a Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Borrowed<'a, 'py, PyAny>>> {
    // SAFETY: `d` is a live dict and `key` a str; the result is borrowed
    // from `d`, which the caller holds for the borrow's lifetime.
    unsafe {
        let p = ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr());
        if p.is_null() {
            return match PyErr::take(d.py()) {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        Ok(Some(Borrowed::from_ptr(d.py(), p)))
    }
}

/// Exact dicts first: the subclass check goes through `PyType_GetFlags`
/// under the stable ABI.
#[inline]
fn as_dict<'a, 'py>(v: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, PyDict>> {
    v.cast_exact::<PyDict>()
        .or_else(|_| v.cast::<PyDict>())
        .ok()
}

/// Code points of a text field: O(1) for a str, else its JSON.
fn text_field(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>) -> PyResult<u64> {
    if let Some(v) = peek(d, key)? {
        if let Ok(s) = v.cast_exact::<PyString>() {
            return Ok(code_points(&s) as u64);
        }
    }
    text_chars(d.get_item(key)?)
}

fn text_chars(v: Option<Bound<'_, PyAny>>) -> PyResult<u64> {
    match v {
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => Ok(code_points(s) as u64),
            Err(_) if v.is_none() => Ok(0),
            Err(_) => Ok(json_size(&v)?.chars),
        },
        None => Ok(0),
    }
}

// --- row measurement ----------------------------------------------------------

pub struct ToolMeasure {
    pub block: u32,
    pub name: String,
    pub id: String,
    pub payload_tokens: u64,
    pub payload_bytes: u64,
    pub name_chars: u64,
    pub stub_var_chars: u64,
    pub stub_var_bytes: u64,
    pub fixed_protected: bool,
    /// `id` as a Python str, made once per row: sticky-set lookups reuse
    /// its cached hash and the output lists share it (None: empty id).
    pub id_obj: OnceLock<Option<Py<PyString>>>,
    /// Redacted size and stub text, valid for one cache generation (one
    /// redactor): a sticky stub is re-applied every turn without re-hashing.
    pub memo: Mutex<StubMemo>,
}

#[derive(Default)]
pub struct StubMemo {
    pub generation: u64,
    pub bytes: Option<u64>,
    pub text: Option<Py<PyString>>,
}

impl ToolMeasure {
    pub fn id_obj<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        self.id_obj
            .get_or_init(|| (!self.id.is_empty()).then(|| PyString::new(py, &self.id).unbind()))
            .as_ref()
            .map(|k| k.bind(py).clone())
    }
}

impl RowMeasure {
    /// The turn's sticky key (see `thinking_key`) as a Python str, computed
    /// once per row; None when the turn has no key.
    pub fn thinking_key_obj<'py>(
        &self,
        msg: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let py = msg.py();
        if let Some(k) = self.thinking_key.get() {
            return Ok(k.as_ref().map(|k| k.bind(py).clone()));
        }
        let key = thinking_key(msg)?;
        let obj = (!key.is_empty()).then(|| PyString::new(py, &key).unbind());
        Ok(self
            .thinking_key
            .get_or_init(|| obj)
            .as_ref()
            .map(|k| k.bind(py).clone()))
    }
}

pub struct RowMeasure {
    pub tokens: u64,
    pub thinking_tokens: u64,
    pub has_thinking: bool,
    pub tools: Vec<ToolMeasure>,
    pub thinking_key: OnceLock<Option<Py<PyString>>>,
}

fn has_approval(meta: Option<Bound<'_, PyAny>>) -> PyResult<bool> {
    if let Some(meta) = meta {
        if let Ok(d) = meta.cast::<PyDict>() {
            if d.is_empty() {
                return Ok(false);
            }
            for key in APPROVAL_KEYS {
                if d.contains(key)? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

fn string_field(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>) -> PyResult<String> {
    Ok(match d.get_item(key)? {
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => v.str()?.to_string_lossy().into_owned(),
        },
        None => String::new(),
    })
}

fn stub_part(s: &str) -> (u64, u64) {
    let extra = escaped_extra(s.as_bytes()) as u64;
    (s.chars().count() as u64 + extra, s.len() as u64)
}

pub fn measure_message(msg: &Bound<'_, PyAny>, group: usize, row: usize) -> PyResult<RowMeasure> {
    let d = as_dict(msg).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "attention: group {group} row {row} is not a message dict"
        ))
    })?;
    let assistant = match peek(d, intern!(d.py(), "role"))? {
        Some(r) => r
            .cast::<PyString>()
            .map(|s| s.to_str().ok() == Some("assistant"))
            .unwrap_or(false),
        None => false,
    };
    let mut m = RowMeasure {
        tokens: MESSAGE_OVERHEAD_TOKENS,
        thinking_tokens: 0,
        has_thinking: false,
        tools: Vec::new(),
        thinking_key: OnceLock::new(),
    };
    let content = match d.get_item(intern!(d.py(), "content"))? {
        Some(c) => c,
        None => return Ok(m),
    };
    if let Ok(s) = content.cast::<PyString>() {
        m.tokens += ceil4(code_points(s) as u64);
        return Ok(m);
    }
    let list = content.cast::<PyList>().map_err(|_| {
        PyTypeError::new_err(format!(
            "attention: group {group} row {row} content is not a list"
        ))
    })?;
    // Looked up at the first tool result only.
    let mut message_approval: Option<bool> = None;
    for (b, block) in list.iter().enumerate() {
        let Some(bd) = as_dict(&block) else {
            m.tokens += block_tokens(BlockKind::Other, json_size(&block)?.chars);
            continue;
        };
        let kind_obj = peek(bd, intern!(bd.py(), "type"))?;
        let kind = kind_obj
            .as_deref()
            .and_then(|k| k.cast::<PyString>().ok())
            .and_then(|k| k.to_str().ok());
        let kind = kind.map_or(BlockKind::Other, BlockKind::of);
        match kind {
            BlockKind::Text => {
                m.tokens += block_tokens(kind, text_field(bd, intern!(bd.py(), "text"))?)
            }
            BlockKind::Thinking => {
                let t = block_tokens(kind, text_field(bd, intern!(bd.py(), "text"))?);
                m.tokens += t;
                if assistant {
                    m.thinking_tokens += t;
                    m.has_thinking = true;
                }
            }
            BlockKind::Image => m.tokens += block_tokens(kind, 0),
            BlockKind::ToolCall => {
                let args = match bd.get_item(intern!(bd.py(), "arguments"))? {
                    Some(a) => json_size(&a)?.chars,
                    None => 0,
                };
                let name = text_chars(bd.get_item(intern!(bd.py(), "name"))?)?;
                m.tokens += block_tokens(kind, name + args);
            }
            BlockKind::ToolResult => {
                let name = string_field(bd, intern!(bd.py(), "name"))?;
                let id = string_field(bd, intern!(bd.py(), "toolCallId"))?;
                let name_chars = name.chars().count() as u64;
                let payload = match bd.get_item(intern!(bd.py(), "result"))? {
                    Some(r) => json_size(&r)?,
                    None => Size { chars: 4, bytes: 4 },
                };
                let payload_tokens = block_tokens(kind, name_chars + payload.chars);
                m.tokens += payload_tokens;
                let is_error = match bd.get_item(intern!(bd.py(), "isError"))? {
                    Some(e) => e.is_truthy()?,
                    None => false,
                };
                let (nc, nb) = stub_part(&name);
                let (ic, ib) = stub_part(&id);
                m.tools.push(ToolMeasure {
                    block: b as u32,
                    payload_tokens,
                    payload_bytes: payload.bytes,
                    name_chars,
                    stub_var_chars: nc + ic,
                    stub_var_bytes: nb + ib,
                    fixed_protected: is_error
                        || match message_approval {
                            Some(a) => a,
                            None => *message_approval
                                .insert(has_approval(d.get_item(intern!(d.py(), "metadata"))?)?),
                        }
                        || has_approval(bd.get_item(intern!(bd.py(), "metadata"))?)?,
                    name,
                    id,
                    id_obj: OnceLock::new(),
                    memo: Mutex::new(StubMemo::default()),
                });
            }
            BlockKind::Other => m.tokens += block_tokens(kind, json_size(&block)?.chars),
        }
    }
    Ok(m)
}

/// Stable sticky key of a thinking turn: the message id, else its first
/// tool-call id, else a digest of its first thinking block's signature (or text).
pub fn thinking_key(msg: &Bound<'_, PyAny>) -> PyResult<String> {
    let d = msg.cast::<PyDict>()?;
    if let Some(id) = d.get_item(intern!(d.py(), "id"))? {
        if let Ok(s) = id.cast::<PyString>() {
            return Ok(s.to_string_lossy().into_owned());
        }
    }
    if let Some(content) = d.get_item(intern!(d.py(), "content"))? {
        if let Ok(list) = content.cast::<PyList>() {
            // A turn's tool-call ids are unique where thinking text may repeat.
            for block in list.iter() {
                let Ok(bd) = block.cast::<PyDict>() else {
                    continue;
                };
                let is_call = bd
                    .get_item(intern!(bd.py(), "type"))?
                    .map(|t| {
                        t.cast::<PyString>()
                            .map(|s| s.to_str().ok() == Some("tool_call"))
                            .unwrap_or(false)
                    })
                    .unwrap_or(false);
                if is_call {
                    if let Some(id) = bd.get_item(intern!(bd.py(), "id"))? {
                        if let Ok(s) = id.cast::<PyString>() {
                            if s.len()? > 0 {
                                return Ok(thinking_key_from_call_id(&s.to_string_lossy()));
                            }
                        }
                    }
                }
            }
            for block in list.iter() {
                let Ok(bd) = block.cast::<PyDict>() else {
                    continue;
                };
                let is_thinking = bd
                    .get_item(intern!(bd.py(), "type"))?
                    .map(|t| {
                        t.cast::<PyString>()
                            .map(|s| s.to_str().ok() == Some("thinking"))
                            .unwrap_or(false)
                    })
                    .unwrap_or(false);
                if !is_thinking {
                    continue;
                }
                let source = match bd.get_item(intern!(bd.py(), "signature"))? {
                    Some(s) if s.is_truthy()? => s,
                    _ => bd
                        .get_item(intern!(bd.py(), "text"))?
                        .unwrap_or_else(|| PyString::new(msg.py(), "").into_any()),
                };
                let text = source.str()?;
                let hex = sha256_hex(text.to_string_lossy().as_bytes());
                return Ok(thinking_key_from_digest(&hex));
            }
        }
    }
    Ok(String::new())
}

// --- measurement cache ----------------------------------------------------------

struct CachedRow {
    obj: Py<PyAny>,
    /// Copies of `measure.tokens` and "the planner may touch it", so a hit
    /// on a row the planner ignores never dereferences (or clones) the Arc.
    tokens: u64,
    planned: bool,
    measure: Arc<RowMeasure>,
}

struct CachedExtra {
    obj: Py<PyAny>,
    tokens: u64,
}

#[derive(Default)]
struct CacheInner {
    groups: Vec<Vec<CachedRow>>,
    extras: Vec<Vec<CachedExtra>>,
    hits: u64,
    misses: u64,
    /// The redactor stub memos were made with, and their generation
    /// (starts at 1; 0 marks an empty memo).
    redactor: Option<Py<PyAny>>,
    generation: u64,
}

/// Session-owned per-row estimates, keyed by position and object identity
/// (the cache holds a reference, so an address cannot be reused). Session
/// history is append-only and never edited in place, so a turn whose history
/// only grew measures only its new rows; a replaced message is re-measured.
#[pyclass(module = "prism._native", frozen)]
pub struct AttentionMeasureCache {
    inner: Mutex<CacheInner>,
}

impl AttentionMeasureCache {
    /// The memo generation for `redactor`: unchanged while the same redactor
    /// object (or none) comes back, bumped when it changes.
    pub fn generation(&self, redactor: Option<&Bound<'_, PyAny>>) -> u64 {
        let mut inner = self.inner.lock().expect("cache lock");
        let same = match (&inner.redactor, redactor) {
            (None, None) => inner.generation > 0,
            (Some(a), Some(b)) => b.is(a),
            _ => false,
        };
        if !same {
            inner.generation += 1;
            inner.redactor = redactor.map(|r| r.clone().unbind());
        }
        inner.generation
    }
}

#[pymethods]
impl AttentionMeasureCache {
    #[new]
    fn new() -> Self {
        Self {
            inner: Mutex::new(CacheInner::default()),
        }
    }

    /// (hits, misses) since creation: rows reused vs measured.
    fn stats(&self) -> (u64, u64) {
        let inner = self.inner.lock().expect("cache lock");
        (inner.hits, inner.misses)
    }

    fn clear(&self) {
        *self.inner.lock().expect("cache lock") = CacheInner::default();
    }

    fn __len__(&self) -> usize {
        let inner = self.inner.lock().expect("cache lock");
        inner.groups.iter().map(Vec::len).sum::<usize>()
            + inner.extras.iter().map(Vec::len).sum::<usize>()
    }
}

/// A row's measure: shared with the session cache, or owned for this call
/// (no reference-counted allocation when nothing is cached).
pub enum Measure {
    Owned(RowMeasure),
    Shared(Arc<RowMeasure>),
}

impl std::ops::Deref for Measure {
    type Target = RowMeasure;
    fn deref(&self) -> &RowMeasure {
        match self {
            Measure::Owned(m) => m,
            Measure::Shared(m) => m,
        }
    }
}

pub struct MeasuredRow<'py> {
    pub group: usize,
    pub row: usize,
    pub obj: Bound<'py, PyAny>,
    pub measure: Measure,
}

pub fn measure_groups<'py>(
    groups: &[Bound<'py, PyAny>],
    mutable: &[bool],
    extras: &[Bound<'py, PyAny>],
    cache: Option<&AttentionMeasureCache>,
    needs_rows: impl Fn(u64) -> bool,
) -> PyResult<(u64, Vec<MeasuredRow<'py>>)> {
    let mut guard = cache.map(|c| c.inner.lock().expect("cache lock"));
    let mut used = 0u64;
    // Only rows the planner can touch are handed on; cache hits only as
    // (group, row) until `needs_rows(used)` says the planner wants them.
    let mut rows: Vec<Pending<'py>> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        // The previous call's rows for this group: reused by position while
        // the objects match, dropped from the first mismatch on.
        let mut old: Vec<CachedRow> = match guard.as_mut() {
            Some(inner) => {
                if inner.groups.len() <= g {
                    inner.groups.resize_with(g + 1, Vec::new);
                }
                std::mem::take(&mut inner.groups[g])
            }
            None => Vec::new(),
        };
        let caching = guard.is_some();
        let (mut hits, mut misses) = (0u64, 0u64);
        let mut r = 0usize;
        for msg in group.try_iter()? {
            let msg = msg?;
            // Identity alone: the cache holds a reference, so the id cannot be
            // reused, and assembled messages are never edited in place.
            if r < old.len() && !msg.is(&old[r].obj) {
                old.truncate(r);
            }
            if r < old.len() {
                hits += 1;
                let prev = &old[r];
                used += prev.tokens;
                if mutable[g] && prev.planned {
                    rows.push(Pending::Hit(g, r));
                }
            } else {
                let m = measure_message(&msg, g, r)?;
                used += m.tokens;
                let planned = m.has_thinking || !m.tools.is_empty();
                let measure = if caching {
                    misses += 1;
                    let shared = Arc::new(m);
                    old.push(CachedRow {
                        obj: msg.clone().unbind(),
                        tokens: shared.tokens,
                        planned,
                        measure: shared.clone(),
                    });
                    Measure::Shared(shared)
                } else {
                    Measure::Owned(m)
                };
                if mutable[g] && planned {
                    rows.push(Pending::Ready(MeasuredRow {
                        group: g,
                        row: r,
                        obj: msg,
                        measure,
                    }));
                }
            }
            r += 1;
        }
        if let Some(inner) = guard.as_mut() {
            old.truncate(r);
            inner.groups[g] = old;
            inner.hits += hits;
            inner.misses += misses;
        }
    }
    for (e, extra) in extras.iter().enumerate() {
        let mut fresh: Vec<CachedExtra> = Vec::new();
        for (r, value) in extra.try_iter()?.enumerate() {
            let value = value?;
            let mut tokens = None;
            if let Some(inner) = guard.as_mut() {
                if let Some(prev) = inner.extras.get(e).and_then(|v| v.get(r)) {
                    if value.is(&prev.obj) {
                        tokens = Some(prev.tokens);
                    }
                }
            }
            let tokens = match tokens {
                Some(t) => t,
                None => ceil4(json_size(&value)?.chars),
            };
            used += tokens;
            if guard.is_some() {
                fresh.push(CachedExtra {
                    obj: value.unbind(),
                    tokens,
                });
            }
        }
        if let Some(inner) = guard.as_mut() {
            if inner.extras.len() <= e {
                inner.extras.resize_with(e + 1, Vec::new);
            }
            inner.extras[e] = fresh;
        }
    }
    if !needs_rows(used) {
        return Ok((used, Vec::new()));
    }
    let py = groups.first().map(|g| g.py());
    let rows = rows
        .into_iter()
        .map(|p| match p {
            Pending::Ready(row) => row,
            Pending::Hit(g, r) => {
                let cached = &guard.as_ref().expect("hits come from the cache").groups[g][r];
                MeasuredRow {
                    group: g,
                    row: r,
                    obj: cached.obj.bind(py.expect("a hit has a group")).clone(),
                    measure: Measure::Shared(cached.measure.clone()),
                }
            }
        })
        .collect();
    Ok((used, rows))
}

enum Pending<'py> {
    Ready(MeasuredRow<'py>),
    /// A cache hit at (group, row), materialized only when planning needs it.
    Hit(usize, usize),
}
