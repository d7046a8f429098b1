//! Walks Python values in place as if they were compact JSON, feeding a
//! `Sink` (a length counter or a hasher). Errors carry the path to the
//! offending value, built only while unwinding so the happy path pays nothing.
use prism_core::digest::JsonHasher;
use prism_core::json_len::{escaped_extra, int_len, py_float_repr};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytesMethods, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Containers nested deeper than this are refused (this is also what stops
/// cyclic values). Session-file lines nest the message 3 levels down and the
/// JSONL parser allows 127, so every accepted value can be stored and read back.
pub const MAX_DEPTH: usize = 100;

/// Strings at least this long are hashed with the GIL released.
pub const DETACH_BYTES: usize = 1 << 20;

pub enum Seg {
    Key(String),
    Index(usize),
}

pub enum Kind {
    Type,
    Value,
}

pub struct WalkError {
    kind: Kind,
    msg: String,
    path: Vec<Seg>,
}

pub type WalkResult<T> = Result<T, WalkError>;

impl WalkError {
    pub fn type_err(msg: impl Into<String>) -> Self {
        Self {
            kind: Kind::Type,
            msg: msg.into(),
            path: Vec::new(),
        }
    }
    pub fn value_err(msg: impl Into<String>) -> Self {
        Self {
            kind: Kind::Value,
            msg: msg.into(),
            path: Vec::new(),
        }
    }
    /// Keeps the message of a Python error (e.g. int digit limits) but makes it
    /// a ValueError/TypeError that names the path.
    pub fn from_py(py: Python<'_>, err: PyErr) -> Self {
        let kind = if err.is_instance_of::<PyTypeError>(py) {
            Kind::Type
        } else {
            Kind::Value
        };
        Self {
            kind,
            msg: err.value(py).to_string(),
            path: Vec::new(),
        }
    }
    pub fn in_key(mut self, key: &Bound<'_, PyAny>) -> Self {
        self.path.push(Seg::Key(
            key.str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ));
        self
    }
    pub fn in_field(mut self, key: &str) -> Self {
        self.path.push(Seg::Key(key.to_owned()));
        self
    }
    pub fn in_index(mut self, i: usize) -> Self {
        self.path.push(Seg::Index(i));
        self
    }
    pub fn path(&self) -> String {
        let mut out = String::from("$");
        for seg in self.path.iter().rev() {
            match seg {
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
                Seg::Key(k) => {
                    let ident = !k.is_empty()
                        && !k.starts_with(|c: char| c.is_ascii_digit())
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if ident {
                        out.push('.');
                        out.push_str(k);
                    } else {
                        let shown: String = k.chars().take(64).collect();
                        out.push_str(&format!("[{shown:?}]"));
                    }
                }
            }
        }
        out
    }
    pub fn into_pyerr(self) -> PyErr {
        let msg = format!("{} at {}", self.msg, self.path());
        match self.kind {
            Kind::Type => PyTypeError::new_err(msg),
            Kind::Value => PyValueError::new_err(msg),
        }
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Code points of a str: O(1), no copy.
#[inline]
pub fn code_points(s: &Bound<'_, PyString>) -> usize {
    // SAFETY: `s` is a live str (the `Bound` proves the GIL is held), and
    // `PyUnicode_GetLength` cannot fail on a str.
    unsafe { ffi::PyUnicode_GetLength(s.as_ptr()) as usize }
}

/// UTF-8 bytes of a str that may hold lone surrogates (which `to_str`
/// refuses): encoded with `surrogatepass`. Such bytes are >= 0x80, so escape
/// scanning and secret matching still see every ASCII byte.
pub fn surrogate_bytes<'py>(
    s: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let py = s.py();
    // SAFETY: `s` is a live str and the codec names are NUL-terminated
    // literals; the result is a new reference (or NULL with an exception
    // set, which `from_owned_ptr_or_err` turns into the error), and
    // `PyUnicode_AsEncodedString` returns bytes, so the unchecked cast holds.
    unsafe {
        let ptr = ffi::PyUnicode_AsEncodedString(
            s.as_ptr(),
            c"utf-8".as_ptr(),
            c"surrogatepass".as_ptr(),
        );
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked())
    }
}

pub trait Sink {
    /// Whether `string`/`key` may release the GIL. Walks with sinks that
    /// never do can borrow every container and item (no refcounting): with
    /// the GIL held throughout and no Python code running, nothing can drop
    /// them. Sinks that may must say so (the default is the safe answer).
    const MAY_DETACH: bool = true;
    fn punct(&mut self, b: &'static [u8]);
    fn string(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()>;
    /// A dict key; sinks may cache per key object (keys repeat across rows).
    fn key(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        self.string(s)
    }
    fn int(&mut self, v: i64);
    fn digits(&mut self, d: &str);
    fn float(&mut self, repr: &str);
}

/// Releases the GIL around `f` (one place to change if that ever needs
/// bookkeeping, e.g. for walks that hold borrowed references).
pub fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    py.detach(f)
}

const KEY_SLOTS: usize = 64;

/// Counts code points of the compact JSON form.
pub struct LenSink {
    pub total: usize,
    /// Literal lengths of recently seen key objects, by address. Keys are
    /// shared objects (interned literals, parser key caches), so rows of
    /// `{"path":..,"size":..}` measure each key once. Sound because every key
    /// seen stays referenced by its dict for the whole walk, which holds the
    /// GIL from start to end.
    keys: [(usize, usize); KEY_SLOTS],
}

impl Default for LenSink {
    fn default() -> Self {
        Self {
            total: 0,
            keys: [(0, 0); KEY_SLOTS],
        }
    }
}

/// Literal length of a str in compact JSON (quotes and escapes included).
/// Keeps the GIL: the scan is far cheaper than a hand-off (see `LenSink`).
#[inline]
pub fn string_len(s: &Bound<'_, PyString>) -> WalkResult<usize> {
    let cp = code_points(s);
    let extra = match s.to_str() {
        Ok(text) => escaped_extra(text.as_bytes()),
        Err(_) => {
            let b = surrogate_bytes(s).map_err(|e| WalkError::from_py(s.py(), e))?;
            escaped_extra(b.as_bytes())
        }
    };
    Ok(cp + 2 + extra)
}

impl Sink for LenSink {
    // Counting escapes runs at ~20 GB/s: a 1 MiB string takes ~50 us, far
    // less than a GIL hand-off is worth, so the length walk keeps the GIL
    // and in exchange walks on borrowed references only.
    const MAY_DETACH: bool = false;
    #[inline]
    fn punct(&mut self, b: &'static [u8]) {
        self.total += b.len();
    }
    #[inline]
    fn string(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        self.total += string_len(s)?;
        Ok(())
    }
    #[inline]
    fn key(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        let addr = s.as_ptr() as usize;
        let slot = (addr >> 4) % KEY_SLOTS;
        let (cached, len) = self.keys[slot];
        if cached == addr {
            self.total += len;
            return Ok(());
        }
        let len = string_len(s)?;
        self.keys[slot] = (addr, len);
        self.total += len;
        Ok(())
    }
    #[inline]
    fn int(&mut self, v: i64) {
        self.total += int_len(v);
    }
    fn digits(&mut self, d: &str) {
        self.total += d.len();
    }
    fn float(&mut self, repr: &str) {
        self.total += repr.len();
    }
}

/// Streams the compact JSON UTF-8 bytes into SHA-256 (`digest_value` and
/// the attention pass's stub digests).
pub struct HashSink(pub JsonHasher);

impl Sink for HashSink {
    #[inline]
    fn punct(&mut self, b: &'static [u8]) {
        self.0.raw(b);
    }
    fn string(&mut self, s: &Bound<'_, PyString>) -> WalkResult<()> {
        let text = s
            .to_str()
            .map_err(|_| WalkError::value_err("str with a lone surrogate has no UTF-8 encoding"))?;
        let bytes = text.as_bytes();
        if bytes.len() >= DETACH_BYTES {
            // Hold the str while other threads run (see `scan`).
            let _keep = s.clone();
            let hasher = &mut self.0;
            detach(s.py(), || hasher.string(bytes));
        } else {
            self.0.string(bytes);
        }
        Ok(())
    }
    fn int(&mut self, v: i64) {
        self.0.raw(itoa_i64(v).as_bytes());
    }
    fn digits(&mut self, d: &str) {
        self.0.raw(d.as_bytes());
    }
    fn float(&mut self, repr: &str) {
        self.0.raw(repr.as_bytes());
    }
}

pub fn walk<S: Sink>(obj: &Bound<'_, PyAny>, depth: usize, sink: &mut S) -> WalkResult<()> {
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return sink.string(s);
    }
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        return walk_dict(d, depth + 1, sink);
    }
    if let Ok(l) = obj.cast_exact::<PyList>() {
        return walk_list(l, depth + 1, sink);
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return walk_int(obj, sink);
    }
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        sink.punct(if b.is_true() { b"true" } else { b"false" });
        return Ok(());
    }
    if obj.is_none() {
        sink.punct(b"null");
        return Ok(());
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        return walk_float(obj, sink);
    }
    if let Ok(t) = obj.cast_exact::<PyTuple>() {
        return walk_seq(t.iter(), depth + 1, sink);
    }
    // Subclasses behave as their base, as in `json.dumps`.
    if let Ok(s) = obj.cast::<PyString>() {
        return sink.string(s);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return walk_dict(d, depth + 1, sink);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return walk_seq(l.iter(), depth + 1, sink);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return walk_seq(t.iter(), depth + 1, sink);
    }
    if obj.is_instance_of::<PyInt>() {
        return walk_int(obj, sink);
    }
    if obj.is_instance_of::<PyFloat>() {
        return walk_float(obj, sink);
    }
    Err(WalkError::type_err(format!(
        "Object of type {} is not JSON serializable",
        type_name(obj)
    )))
}

fn too_deep() -> WalkError {
    WalkError::value_err(format!(
        "value nested deeper than MAX_DEPTH ({MAX_DEPTH}); is it cyclic?"
    ))
}

fn walk_dict<S: Sink>(d: &Bound<'_, PyDict>, depth: usize, sink: &mut S) -> WalkResult<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    // With a sink that may release the GIL, a strong reference keeps the
    // dict alive even if another thread drops it from its parent meanwhile;
    // values stay borrowed (such sinks take their own reference first).
    let strong;
    let d = if S::MAY_DETACH {
        strong = d.clone();
        &strong
    } else {
        d
    };
    let py = d.py();
    sink.punct(b"{");
    let mut pos: ffi::Py_ssize_t = 0;
    let mut kp: *mut ffi::PyObject = std::ptr::null_mut();
    let mut vp: *mut ffi::PyObject = std::ptr::null_mut();
    let mut first = true;
    // SAFETY: `d` is a live dict held for the loop (strongly when the sink
    // may release the GIL), and the out-pointers are valid locals.
    while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut kp, &mut vp) } != 0 {
        // Error paths name the key after the value's walk; if that walk may
        // have released the GIL, the key is owned. The value is borrowed.
        // SAFETY: `PyDict_Next` returned a non-NULL key borrowed from `d`,
        // which outlives this iteration; it is owned before any release.
        let kb = unsafe { Borrowed::from_ptr(py, kp) };
        let owned;
        let k: &Bound<'_, PyAny> = if S::MAY_DETACH {
            owned = kb.to_owned();
            &owned
        } else {
            &kb
        };
        // SAFETY: a non-NULL value borrowed from `d`; the walk of it takes
        // its own reference before it could release the GIL.
        let v = unsafe { Borrowed::from_ptr(py, vp) };

        if !first {
            sink.punct(b",");
        }
        first = false;
        let key = k
            .cast_exact::<PyString>()
            .or_else(|_| k.cast::<PyString>())
            .map_err(|_| {
                // json.dumps would coerce int/float/bool/None keys; Prism's wire
                // shapes only have str keys, so a non-str key is a caller bug.
                WalkError::type_err(format!("keys must be str, not {}", type_name(k)))
            })?;
        sink.key(key).map_err(|e| e.in_key(k))?;
        sink.punct(b":");
        walk(&v, depth, sink).map_err(|e| e.in_key(k))?;
    }
    sink.punct(b"}");
    Ok(())
}

/// Lists by index with borrowed items: the list itself is held strongly, an
/// item is never touched after its walk returns (containers and detached
/// strings take their own reference), and the length is re-read every step
/// in case another thread changed the list while the GIL was released.
fn walk_list<S: Sink>(l: &Bound<'_, PyList>, depth: usize, sink: &mut S) -> WalkResult<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    let strong;
    let l = if S::MAY_DETACH {
        strong = l.clone();
        &strong
    } else {
        l
    };
    let py = l.py();
    sink.punct(b"[");
    let mut i = 0;
    // SAFETY: `l` is a live list, held strongly when the sink may release
    // the GIL (the length is re-read each step for that case).
    while (i as ffi::Py_ssize_t) < unsafe { ffi::PyList_Size(l.as_ptr()) } {
        // SAFETY: as above; an index past a shrunk list returns NULL with
        // an IndexError, handled below.
        let ptr = unsafe { ffi::PyList_GetItem(l.as_ptr(), i as ffi::Py_ssize_t) };
        if ptr.is_null() {
            PyErr::take(py);
            break;
        }
        if i > 0 {
            sink.punct(b",");
        }
        // SAFETY: non-NULL item borrowed from `l`, not touched after its
        // walk returns (see the doc comment above).
        let v = unsafe { Borrowed::from_ptr(py, ptr) };
        walk(&v, depth, sink).map_err(|e| e.in_index(i))?;
        i += 1;
    }
    sink.punct(b"]");
    Ok(())
}

fn walk_seq<'py, S: Sink>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    depth: usize,
    sink: &mut S,
) -> WalkResult<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    sink.punct(b"[");
    for (i, v) in items.enumerate() {
        if i > 0 {
            sink.punct(b",");
        }
        walk(&v, depth, sink).map_err(|e| e.in_index(i))?;
    }
    sink.punct(b"]");
    Ok(())
}

fn walk_int<S: Sink>(obj: &Bound<'_, PyAny>, sink: &mut S) -> WalkResult<()> {
    let py = obj.py();
    let mut overflow = 0;
    // SAFETY: `obj` is a live int (or int subclass); errors are reported
    // through the return value and the error indicator, checked below.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(obj.as_ptr(), &mut overflow) };
    if overflow == 0 {
        if v == -1 {
            if let Some(err) = PyErr::take(py) {
                return Err(WalkError::from_py(py, err));
            }
        }
        sink.int(v);
        return Ok(());
    }
    // Past 64 bits: the decimal text itself (int subclasses print as int,
    // like json.dumps). CPython's digit limit surfaces as a ValueError.
    // SAFETY: `obj` is live; `PyNumber_Index` returns a new reference or
    // NULL with an exception set, which `from_owned_ptr_or_err` handles.
    let exact = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyNumber_Index(obj.as_ptr())) }
        .map_err(|e| WalkError::from_py(py, e))?;
    let text = exact.str().map_err(|e| WalkError::from_py(py, e))?;
    sink.digits(&text.to_string_lossy());
    Ok(())
}

fn walk_float<S: Sink>(obj: &Bound<'_, PyAny>, sink: &mut S) -> WalkResult<()> {
    // SAFETY: `obj` is a live float (or float subclass), for which
    // `PyFloat_AsDouble` cannot fail.
    let v = unsafe { ffi::PyFloat_AsDouble(obj.as_ptr()) };
    match py_float_repr(v) {
        Some(r) => {
            sink.float(&r);
            Ok(())
        }
        None => Err(WalkError::value_err(format!(
            "Out of range float values are not JSON compliant: {}",
            if v.is_nan() {
                "nan"
            } else if v > 0.0 {
                "inf"
            } else {
                "-inf"
            }
        ))),
    }
}

/// Code points of `value`'s compact JSON form (`json_length`).
pub fn json_len(obj: &Bound<'_, PyAny>) -> WalkResult<usize> {
    let mut sink = LenSink::default();
    walk(obj, 0, &mut sink)?;
    Ok(sink.total)
}

/// Decimal text of an i64 without a heap allocation.
fn itoa_i64(v: i64) -> ItoaBuf {
    let mut buf = ItoaBuf {
        bytes: [0; 20],
        start: 20,
    };
    let mut n = v.unsigned_abs();
    loop {
        buf.start -= 1;
        buf.bytes[buf.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        buf.start -= 1;
        buf.bytes[buf.start] = b'-';
    }
    buf
}

struct ItoaBuf {
    bytes: [u8; 20],
    start: usize,
}

impl ItoaBuf {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}
