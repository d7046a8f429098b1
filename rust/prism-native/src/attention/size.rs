//! Compact-JSON size (code points and UTF-8 bytes) of a Python value, the
//! attention pass's hot loop.
//!
//! A fast path walks exact built-in types (str, dict with str keys, list,
//! tuple, int within 64 bits, float, bool, None) through raw FFI: no
//! refcounting, no error bookkeeping, dict keys measured once per call by
//! address. Anything else (subclasses, huge ints, lone surrogates, nesting
//! past `MAX_DEPTH`) makes it give up, and the whole value is measured again
//! by the shared generic walk (`crate::walk`), which owns every error
//! message. The two agree on every value the fast path accepts; the
//! hypothesis parity tests hold both to the pure-Python oracle.
use std::ptr::addr_of_mut;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytesMethods, PyString};

use crate::walk::{code_points, surrogate_bytes, walk, Sink, WalkError, WalkResult, MAX_DEPTH};
use prism_core::json_len::{escaped_extra, int_len, py_float_repr, string_extra};

/// Code points and UTF-8 bytes of a value's compact JSON form.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub chars: u64,
    pub bytes: u64,
}

impl Size {
    #[inline(always)]
    fn ascii(&mut self, n: u64) {
        self.chars += n;
        self.bytes += n;
    }
}

/// Size of `v`'s compact JSON (`json.dumps(v, separators=(",", ":"),
/// ensure_ascii=False)`: `chars` is its `len`, `bytes` its UTF-8 length).
pub fn json_size(v: &Bound<'_, PyAny>) -> PyResult<Size> {
    let mut keys = [(0, Size::default()); KEY_SLOTS];
    // SAFETY: `fast_value`'s contract: the GIL is held (we have a `Bound`), and walking exact built-in
    // types runs no Python code, so every borrowed pointer stays valid.
    let size = unsafe { fast_value(v.as_ptr(), 0, &mut keys) };
    if size.chars != BAIL {
        return Ok(size);
    }
    let mut sink = SlowSink::default();
    walk(v, 0, &mut sink).map_err(WalkError::into_pyerr)?;
    Ok(sink.size)
}

// --- fast path ------------------------------------------------------------------

const KEY_SLOTS: usize = 32;
/// `chars` of a fast-path result that means "not handled here". Sizes come
/// back by value (two registers), so the accumulators never touch memory.
const BAIL: u64 = u64::MAX;
const GIVE_UP: Size = Size {
    chars: BAIL,
    bytes: 0,
};

/// Literal sizes of key objects seen in this call, by address. Sound: every
/// key stays referenced by its dict, and no Python code runs during the
/// walk, so an address cannot be reused before it returns.
type Keys = [(usize, Size); KEY_SLOTS];

#[inline(always)]
fn ascii(n: u64) -> Size {
    Size { chars: n, bytes: n }
}

/// `obj`'s size, or `GIVE_UP` when `obj` (or something inside it) is not an
/// exact built-in the fast path handles. `depth` counts enclosing containers.
///
/// # Safety
/// The GIL is held and `obj` is a valid object the caller keeps alive for
/// the call. Nothing here runs Python code (exact built-in types only), so
/// every pointer borrowed from `obj` stays valid until it returns.
unsafe fn fast_value(obj: *mut ffi::PyObject, depth: usize, keys: &mut Keys) -> Size {
    // SAFETY: this fn's contract. Each branch hands `obj` only to calls for
    // the exact type just checked (or to type-agnostic ones), and the
    // helpers get the same contract for the pointers they are given.
    unsafe {
        let ty = ffi::Py_TYPE(obj);
        if ty == addr_of_mut!(ffi::PyUnicode_Type) {
            return fast_string(obj);
        }
        if ty == addr_of_mut!(ffi::PyDict_Type) {
            if depth >= MAX_DEPTH {
                return GIVE_UP;
            }
            return fast_dict(obj, depth + 1, keys);
        }
        if ty == addr_of_mut!(ffi::PyList_Type) {
            return fast_seq(obj, depth, keys, ffi::PyList_Size, ffi::PyList_GetItem);
        }
        if ty == addr_of_mut!(ffi::PyLong_Type) {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
            if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                return GIVE_UP;
            }
            return ascii(int_len(v) as u64);
        }
        if obj == ffi::Py_True() || obj == ffi::Py_None() {
            return ascii(4);
        }
        if obj == ffi::Py_False() {
            return ascii(5);
        }
        if ty == addr_of_mut!(ffi::PyFloat_Type) {
            return match py_float_repr(ffi::PyFloat_AsDouble(obj)) {
                Some(r) => ascii(r.len() as u64),
                None => GIVE_UP,
            };
        }
        if ty == addr_of_mut!(ffi::PyTuple_Type) {
            return fast_seq(obj, depth, keys, ffi::PyTuple_Size, ffi::PyTuple_GetItem);
        }
        GIVE_UP
    }
}

/// # Safety
/// As `fast_value`, and `len`/`item` are the accessors of `obj`'s exact type.
#[inline(always)]
unsafe fn fast_seq(
    obj: *mut ffi::PyObject,
    depth: usize,
    keys: &mut Keys,
    len: unsafe extern "C" fn(*mut ffi::PyObject) -> ffi::Py_ssize_t,
    item: unsafe extern "C" fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject,
) -> Size {
    if depth >= MAX_DEPTH {
        return GIVE_UP;
    }
    // SAFETY: this fn's contract: `obj` is a live list or tuple of the type
    // `len` and `item` belong to; items are borrowed from it, in range, and
    // no Python code runs that could drop them.
    unsafe {
        let n = len(obj);
        // Brackets and the commas between items.
        let mut total = ascii(2 + (n.max(1) - 1) as u64);
        for i in 0..n {
            let it = item(obj, i);
            if it.is_null() {
                ffi::PyErr_Clear();
                return GIVE_UP;
            }
            let s = fast_value(it, depth + 1, keys);
            if s.chars == BAIL {
                return GIVE_UP;
            }
            total.chars += s.chars;
            total.bytes += s.bytes;
        }
        total
    }
}

/// # Safety
/// As `fast_value`, and `obj` is an exact dict.
unsafe fn fast_dict(obj: *mut ffi::PyObject, depth: usize, keys: &mut Keys) -> Size {
    // SAFETY: this fn's contract: `obj` is a live exact dict; keys and
    // values are borrowed from it, and no Python code runs (exact str keys
    // only, so no `__eq__`/`__hash__`) that could mutate it or drop them.
    unsafe {
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        let mut n = 0u64;
        let mut total = Size::default();
        while ffi::PyDict_Next(obj, &mut pos, &mut k, &mut v) != 0 {
            n += 1;
            if ffi::Py_TYPE(k) != addr_of_mut!(ffi::PyUnicode_Type) {
                return GIVE_UP;
            }
            let addr = k as usize;
            let slot = (addr >> 4) % KEY_SLOTS;
            let (cached, mut key) = keys[slot];
            if cached != addr {
                key = fast_string(k);
                if key.chars == BAIL {
                    return GIVE_UP;
                }
                keys[slot] = (addr, key);
            }
            // Short string values are the common case: no call for them.
            let value = if ffi::Py_TYPE(v) == addr_of_mut!(ffi::PyUnicode_Type) {
                fast_string(v)
            } else {
                fast_value(v, depth, keys)
            };
            if value.chars == BAIL {
                return GIVE_UP;
            }
            total.chars += key.chars + value.chars;
            total.bytes += key.bytes + value.bytes;
        }
        // Braces, a colon per item and the commas between items.
        total.chars += 2 + n + n.max(1) - 1;
        total.bytes += 2 + n + n.max(1) - 1;
        total
    }
}

/// A str's JSON literal, or `GIVE_UP` (error cleared) for lone surrogates,
/// which have no UTF-8 form and take the slow path.
///
/// # Safety
/// The GIL is held and `obj` is a live exact str.
#[inline(always)]
unsafe fn fast_string(obj: *mut ffi::PyObject) -> Size {
    // SAFETY: this fn's contract. The UTF-8 view is cached inside the str
    // (CPython owns it for the str's lifetime), `n` bytes long.
    unsafe {
        let mut n: ffi::Py_ssize_t = 0;
        let p = ffi::PyUnicode_AsUTF8AndSize(obj, &mut n);
        if p.is_null() {
            ffi::PyErr_Clear();
            return GIVE_UP;
        }
        let utf8 = std::slice::from_raw_parts(p.cast::<u8>(), n as usize);
        let extra = string_extra(utf8);
        Size {
            chars: ffi::PyUnicode_GetLength(obj) as u64 + 2 + extra,
            bytes: n as u64 + 2 + extra,
        }
    }
}

// --- generic path -----------------------------------------------------------------

/// The shared walk's sink for values the fast path declines.
#[derive(Default)]
struct SlowSink {
    size: Size,
}

impl Sink for SlowSink {
    fn punct(&mut self, b: &'static [u8]) {
        self.size.ascii(b.len() as u64);
    }
    fn string(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        let cps = code_points(s) as u64;
        let (extra, len) = match s.to_str() {
            Ok(t) => (escaped_extra(t.as_bytes()) as u64, t.len() as u64),
            Err(_) => {
                let b = surrogate_bytes(s).map_err(|e| WalkError::from_py(s.py(), e))?;
                (
                    escaped_extra(b.as_bytes()) as u64,
                    b.as_bytes().len() as u64,
                )
            }
        };
        self.size.chars += cps + 2 + extra;
        self.size.bytes += len + 2 + extra;
        Ok(())
    }
    fn int(&mut self, v: i64) {
        self.size.ascii(int_len(v) as u64);
    }
    fn digits(&mut self, d: &str) {
        self.size.ascii(d.len() as u64);
    }
    fn float(&mut self, repr: &str) {
        self.size.ascii(repr.len() as u64);
    }
}
