//! Binding of the attention pass: measure the request once (`measure`, with
//! `size` for compact-JSON sizes), hand token counts to the planner in
//! `prism_core::attention`, and return the plan (which rows to strip or
//! stub, and the stub texts). Applying the plan to a clone is Python's job
//! (`prism.attention.compile`).
use std::collections::{BTreeMap, HashSet};

mod measure;
mod size;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::redactor::Redactor;
use crate::walk::{walk, HashSink, WalkError};
use measure::{
    measure_groups, measure_message, AttentionMeasureCache, MeasuredRow, StubMemo, ToolMeasure,
};
use prism_core::attention::{plan, stub_text, Params, PayloadBytes, ThinkingTurn, ToolRow};
use prism_core::digest::JsonHasher;
use size::json_size;

// --- the pass ------------------------------------------------------------------------

struct ToolRef<'a, 'py> {
    row: &'a MeasuredRow<'py>,
    tool: &'a ToolMeasure,
}

struct Sizes<'a, 'py> {
    tools: &'a [ToolRef<'a, 'py>],
    /// The native redactor (None: no secrets), called directly: no Python
    /// method lookup per payload.
    redactor: Option<&'a Redactor>,
    /// Memo generation when a session cache is in use (None: no memo).
    generation: Option<u64>,
    redacted: Vec<Option<Bound<'py, PyAny>>>,
    known: Vec<Option<u64>>,
}

impl<'py> Sizes<'_, 'py> {
    fn memo<T>(&self, j: usize, get: impl FnOnce(&StubMemo) -> Option<T>) -> Option<T> {
        let generation = self.generation?;
        let memo = self.tools[j].tool.memo.lock().expect("memo lock");
        if memo.generation == generation {
            get(&memo)
        } else {
            None
        }
    }

    fn remember(&self, j: usize, set: impl FnOnce(&mut StubMemo)) {
        if let Some(generation) = self.generation {
            let mut memo = self.tools[j].tool.memo.lock().expect("memo lock");
            if memo.generation != generation {
                *memo = StubMemo {
                    generation,
                    ..StubMemo::default()
                };
            }
            set(&mut memo);
        }
    }

    /// The stub text of row `j` for a payload of `bytes` bytes.
    fn stub_text(&mut self, j: usize, bytes: u64) -> PyResult<Bound<'py, PyString>> {
        let py = self.tools[j].row.obj.py();
        if let Some(text) = self.memo(j, |m| m.text.as_ref().map(|t| t.bind(py).clone())) {
            return Ok(text);
        }
        let payload = self.payload(j)?;
        let mut hasher = HashSink(JsonHasher::new());
        walk(&payload, 0, &mut hasher).map_err(WalkError::into_pyerr)?;
        let (hex, _) = hasher.0.finish();
        let t = self.tools[j].tool;
        let text = PyString::new(py, &stub_text(&t.name, &t.id, bytes, &hex));
        self.remember(j, |m| m.text = Some(text.clone().unbind()));
        Ok(text)
    }

    fn result(&self, j: usize) -> PyResult<Bound<'py, PyAny>> {
        let t = &self.tools[j];
        let content = t
            .row
            .obj
            .cast::<PyDict>()?
            .get_item(intern!(t.row.obj.py(), "content"))?
            .expect("measured content");
        let block = content.get_item(t.tool.block as usize)?;
        Ok(block
            .cast::<PyDict>()?
            .get_item(intern!(t.row.obj.py(), "result"))?
            .unwrap_or_else(|| t.row.obj.py().None().into_bound(t.row.obj.py())))
    }

    fn payload(&mut self, j: usize) -> PyResult<Bound<'py, PyAny>> {
        if let Some(r) = &self.redacted[j] {
            return Ok(r.clone());
        }
        let mut value = self.result(j)?;
        if let Some(redactor) = self.redactor {
            value = redactor.redact(&value)?;
        }
        self.redacted[j] = Some(value.clone());
        Ok(value)
    }
}

impl PayloadBytes for Sizes<'_, '_> {
    type Error = PyErr;
    fn payload_bytes(&mut self, j: usize) -> PyResult<u64> {
        if let Some(b) = self.known[j] {
            return Ok(b);
        }
        if self.redactor.is_none() {
            let bytes = self.tools[j].tool.payload_bytes;
            self.known[j] = Some(bytes);
            return Ok(bytes);
        }
        if let Some(bytes) = self.memo(j, |m| m.bytes) {
            self.known[j] = Some(bytes);
            return Ok(bytes);
        }
        let payload = self.payload(j)?;
        let bytes = json_size(&payload)?.bytes;
        self.known[j] = Some(bytes);
        self.remember(j, |m| m.bytes = Some(bytes));
        Ok(bytes)
    }
}

fn contains(set: Option<&Bound<'_, PyAny>>, key: Option<Bound<'_, PyString>>) -> PyResult<bool> {
    match (set, key) {
        (Some(s), Some(k)) => s.contains(k),
        _ => Ok(false),
    }
}

fn non_empty<'py>(set: Option<Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match set {
        Some(s) if s.len()? > 0 => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// One mutated message: strip its thinking?, and (block, stub text) pairs.
type RowPlan<'py> = (bool, Vec<(u32, Bound<'py, PyString>)>);

/// Measure and plan one turn; see the module doc of `prism.attention.compile`.
#[pyfunction]
#[pyo3(signature = (groups, mutable, extras, cap, trigger_ratio, target_ratio, thinking_keep_turns,
    keep_last, exclude_tools, sticky_thinking=None, sticky_ids=None, redactor=None, cache=None))]
#[allow(clippy::too_many_arguments)]
fn attention_plan<'py>(
    py: Python<'py>,
    groups: Vec<Bound<'py, PyAny>>,
    mutable: Vec<bool>,
    extras: Vec<Bound<'py, PyAny>>,
    cap: u64,
    trigger_ratio: f64,
    target_ratio: Option<f64>,
    thinking_keep_turns: usize,
    keep_last: usize,
    exclude_tools: Vec<String>,
    sticky_thinking: Option<Bound<'py, PyAny>>,
    sticky_ids: Option<Bound<'py, PyAny>>,
    redactor: Option<Bound<'py, Redactor>>,
    cache: Option<Bound<'py, AttentionMeasureCache>>,
) -> PyResult<Bound<'py, PyDict>> {
    if mutable.len() != groups.len() {
        return Err(PyValueError::new_err(
            "attention: mutable flags must match groups",
        ));
    }
    let cache_ref = cache.as_ref().map(|c| c.get());
    let sticky_thinking = non_empty(sticky_thinking)?;
    let sticky_ids = non_empty(sticky_ids)?;
    // With nothing sticky, an estimate under the ratio plans nothing, so the
    // rows need not be handed on (cached rows are then never touched).
    let sticky = sticky_thinking.is_some() || sticky_ids.is_some();
    let limit = trigger_ratio * cap as f64;
    let needs_rows = |used: u64| sticky || used as f64 > limit;
    let (used, rows) = measure_groups(&groups, &mutable, &extras, cache_ref, needs_rows)?;
    let exclude: HashSet<&str> = exclude_tools.iter().map(String::as_str).collect();

    let mut turn_rows: Vec<&MeasuredRow<'py>> = Vec::new();
    let mut turns: Vec<ThinkingTurn> = Vec::new();
    let mut tool_refs: Vec<ToolRef<'_, 'py>> = Vec::new();
    let mut tools: Vec<ToolRow> = Vec::new();
    for row in rows.iter() {
        let m = &row.measure;
        if m.has_thinking {
            let sticky = match &sticky_thinking {
                Some(set) => contains(Some(set), m.thinking_key_obj(&row.obj)?)?,
                None => false,
            };
            turns.push(ThinkingTurn {
                tokens: m.thinking_tokens,
                sticky,
            });
            turn_rows.push(row);
        }
        for t in &m.tools {
            tools.push(ToolRow {
                payload_tokens: t.payload_tokens,
                name_chars: t.name_chars,
                stub_var_chars: t.stub_var_chars,
                stub_var_bytes: t.stub_var_bytes,
                protected: t.fixed_protected
                    || (!exclude.is_empty() && exclude.contains(t.name.as_str())),
                sticky: match &sticky_ids {
                    Some(set) => contains(Some(set), t.id_obj(py))?,
                    None => false,
                },
            });
            tool_refs.push(ToolRef { row, tool: t });
        }
    }
    let params = Params {
        cap,
        trigger_ratio,
        target_ratio,
        thinking_keep_turns,
        keep_last,
    };
    // A redactor without secrets changes nothing: sizes come from the
    // measurement, exactly as with no redactor.
    let redactor = redactor.filter(|r| !r.get().is_empty());
    let mut sizes = Sizes {
        tools: &tool_refs,
        generation: cache_ref.map(|c| c.generation(redactor.as_ref().map(|r| r.as_any()))),
        redactor: redactor.as_ref().map(|r| r.get()),
        redacted: vec![None; tool_refs.len()],
        known: vec![None; tool_refs.len()],
    };
    let planned = plan(used, &turns, &tools, &params, &mut sizes)?;

    let out = PyDict::new(py);
    out.set_item("used", planned.used)?;
    out.set_item("usedAfter", planned.used_after)?;
    out.set_item("truncated", planned.truncated)?;
    out.set_item("gateTripped", planned.gate_tripped)?;
    out.set_item("overBudget", planned.over_budget)?;
    out.set_item("stubbedBytes", planned.stubbed_bytes)?;
    // One entry per mutated message, in request order:
    // (group, row, strip thinking?, ((block, stub text), ...)).
    let mut rows_out: BTreeMap<(usize, usize), RowPlan<'py>> = BTreeMap::new();
    let keys = PyList::empty(py);
    for &i in &planned.strip {
        let row = turn_rows[i];
        rows_out.entry((row.group, row.row)).or_default().0 = true;
        if let Some(key) = row.measure.thinking_key_obj(&row.obj)? {
            keys.append(key)?;
        }
    }
    let ids = PyList::empty(py);
    for &(j, bytes) in &planned.stub {
        let text = sizes.stub_text(j, bytes)?;
        let t = &tool_refs[j];
        rows_out
            .entry((t.row.group, t.row.row))
            .or_default()
            .1
            .push((t.tool.block, text));
        if let Some(id) = t.tool.id_obj(py) {
            ids.append(id)?;
        }
    }
    let rows = PyList::empty(py);
    for ((g, r), (strip, mut stubs)) in rows_out {
        stubs.sort_unstable_by_key(|s| s.0);
        let stubs = PyTuple::new(py, stubs)?;
        rows.append((g, r, strip, stubs))?;
    }
    out.set_item("rows", rows)?;
    out.set_item("thinkingKeys", keys)?;
    out.set_item("toolCallIds", ids)?;
    out.set_item("droppedThinkingTurns", planned.strip.len())?;
    out.set_item("stubbedToolResults", planned.stub.len())?;
    Ok(out)
}

/// Compact-JSON length in code points and UTF-8 bytes, as the pass counts it
/// (exposed for the oracle parity tests).
#[pyfunction]
fn attention_json_size(value: &Bound<'_, PyAny>) -> PyResult<(u64, u64)> {
    let s = json_size(value)?;
    Ok((s.chars, s.bytes))
}

/// Token estimate of one message under the pass's per-block rules.
#[pyfunction]
fn attention_message_tokens(message: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(measure_message(message, 0, 0)?.tokens)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AttentionMeasureCache>()?;
    m.add_function(wrap_pyfunction!(attention_plan, m)?)?;
    m.add_function(wrap_pyfunction!(attention_json_size, m)?)?;
    m.add_function(wrap_pyfunction!(attention_message_tokens, m)?)?;
    Ok(())
}
