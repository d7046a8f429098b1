//! Session files: parse and validate batches of lines with the GIL released,
//! then build dicts for the accepted lines and error records for the rest.
use prism_core::jsonl::{parse_lines, raw_excerpt, split_lines, JVal, Line, Outcome};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyList, PyString};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;

/// Bytes of input per GIL-free parse step: bounds the Rust-side copy of the
/// parsed values so peak memory is the input plus the Python objects, and
/// keeps a batch's values in cache between parsing and building objects
/// (2 MB measured faster than 1 or 8 MB on the 100k-entry bench).
const BATCH_BYTES: usize = 2 << 20;

/// Object keys are few and repeated; one Python str per distinct short key
/// saves an allocation per key and shares the cached hash, like `json.loads`.
struct Keys<'a, 'py> {
    py: Python<'py>,
    cache: HashMap<&'a str, Bound<'py, PyString>, BuildHasherDefault<FxHasher>>,
}

impl<'a, 'py> Keys<'a, 'py> {
    /// Sets `d[k] = v`, with `k` from the cache when it can be cached.
    // Takes the Cow itself: only keys borrowed from the input (lifetime 'a)
    // can be cached across batches.
    #[allow(clippy::ptr_arg)]
    fn set(
        &mut self,
        d: &Bound<'py, PyDict>,
        k: &Cow<'a, str>,
        v: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let key = match k {
            Cow::Borrowed(s) if s.len() <= 40 => {
                let py = self.py;
                self.cache.entry(s).or_insert_with(|| PyString::new(py, s))
            }
            _ => return d.set_item(PyString::new(self.py, k), v),
        };
        // SAFETY: all three are live objects; PyDict_SetItem does not steal.
        if unsafe { ffi::PyDict_SetItem(d.as_ptr(), key.as_ptr(), v.as_ptr()) } < 0 {
            return Err(PyErr::fetch(self.py));
        }
        Ok(())
    }
}

/// Multiply-rotate hashing for short keys: the cache is private to one call
/// and its keys come from a file, so SipHash's flooding resistance buys
/// nothing and costs more than the lookup itself.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn to_py<'a, 'py>(v: &JVal<'a>, b: &mut Build<'a, 'py>) -> PyResult<Bound<'py, PyAny>> {
    let py = b.keys.py;
    Ok(match v {
        JVal::Null => py.None().into_bound(py),
        JVal::Bool(x) => pyo3::types::PyBool::new(py, *x).to_owned().into_any(),
        JVal::I64(i) => i.into_pyobject(py)?.into_any(),
        JVal::U64(u) => u.into_pyobject(py)?.into_any(),
        JVal::BigInt(text) => big_int(py, text).inspect_err(|_| b.int_refused = true)?,
        JVal::F64(f) => PyFloat::new(py, *f).into_any(),
        JVal::Str(s) => PyString::new(py, s).into_any(),
        JVal::Arr(items) => {
            // Sized once and filled in place: no append reallocations.
            // SAFETY: the GIL is held; `PyList_New` returns a new reference
            // or NULL with an exception set (turned into the error).
            let list = unsafe {
                Bound::from_owned_ptr_or_err(py, ffi::PyList_New(items.len() as ffi::Py_ssize_t))?
            };
            for (i, item) in items.iter().enumerate() {
                let obj = to_py(item, b)?;
                // SAFETY: `list` is a fresh list of `items.len()` slots and
                // i < len; PyList_SetItem steals the reference to `obj`.
                unsafe { ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, obj.into_ptr()) };
            }
            b.hidden.hide(&list);
            list
        }
        JVal::Obj(pairs) => {
            let d = PyDict::new(py);
            for (k, val) in pairs {
                let val = to_py(val, b)?;
                b.keys.set(&d, k, &val)?;
            }
            b.hidden.hide(&d);
            d.into_any()
        }
    })
}

/// Containers this call built, hidden from the cyclic garbage collector
/// until the result is complete.
///
/// The values are acyclic and all reachable from the result, so a
/// collection can never free any of them; but each one it walks costs time,
/// and a 100k-entry file would otherwise be walked by several full
/// collections while it grows. Untracking only this call's own containers
/// (instead of `gc.disable()`) leaves collection of every other object in
/// the process as it was, in this thread and in others.
#[derive(Default)]
struct Hidden {
    /// Borrowed: every one is owned by the result (or by a container that
    /// is) until `restore`. An entry that fails to convert is freed, and its
    /// containers are cut off this list first; when the whole call fails the
    /// result is dropped without `restore` (list and dict deallocation
    /// accept untracked objects).
    objs: Vec<*mut ffi::PyObject>,
}

impl Hidden {
    /// Hides `obj`, a container this call created and has finished filling.
    /// A dict holding only atomic values is never tracked by CPython in the
    /// first place, and stays as it is.
    #[inline]
    fn hide(&mut self, obj: &Bound<'_, PyAny>) {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live GC-capable object (list or dict) and the
        // GIL is held; untracking only hides it from the collector. It is
        // owned by the result until `restore` re-tracks it.
        unsafe {
            if ffi::PyObject_GC_IsTracked(p) == 1 {
                ffi::PyObject_GC_UnTrack(p.cast());
                self.objs.push(p);
            }
        }
    }

    /// Re-tracks every hidden container; call once the result owns them all.
    fn restore(self) {
        for p in self.objs {
            // SAFETY: `p` is alive (owned by the result, see `objs`) and the
            // GIL is held. The check keeps `PyObject_GC_Track` (which aborts
            // on an object that is already tracked) safe even if CPython
            // re-tracked a hidden container meanwhile.
            unsafe {
                if ffi::PyObject_GC_IsTracked(p) == 0 {
                    ffi::PyObject_GC_Track(p.cast());
                }
            }
        }
    }
}

/// An exact int from the decimal text of an integer literal. CPython may
/// refuse it (its limit on digits for str-to-int conversion, 4300 by default).
fn big_int<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let digits = std::ffi::CString::new(text).expect("a JSON number has no NUL");
    // SAFETY: `digits` is a NUL-terminated string that outlives the call; the
    // end pointer may be NULL; the result is a new reference or NULL with an
    // exception set (turned into the error).
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyLong_FromString(digits.as_ptr(), std::ptr::null_mut(), 10),
        )
    }
}

/// What converting values needs: the shared key strings, the containers
/// hidden from the collector, and whether the last failure was an integer
/// Python refused (which quarantines that one line).
struct Build<'a, 'py> {
    keys: Keys<'a, 'py>,
    hidden: Hidden,
    int_refused: bool,
}

type Parsed<'py> = (Bound<'py, PyList>, Bound<'py, PyList>);

/// Threads for one large batch, looked up once per process: on Linux
/// `available_parallelism` reads the cgroup quota files on every call
/// (~40 us), which used to dominate a store's one-line append.
fn parser_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    })
}

fn parse<'py>(py: Python<'py>, data: &[u8], first_line: usize) -> PyResult<Parsed<'py>> {
    if first_line < 1 {
        return Err(PyValueError::new_err("first_line must be >= 1"));
    }
    let lines: Vec<Line<'_>> = py.detach(|| split_lines(data, first_line));
    let mut batches: Vec<&[Line<'_>]> = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < lines.len() && (end == start || bytes + lines[end].bytes.len() <= BATCH_BYTES) {
            bytes += lines[end].bytes.len();
            end += 1;
        }
        batches.push(&lines[start..end]);
        start = end;
    }
    // The objects built here stay hidden from the collector until the
    // result is complete (see `Hidden`), the result lists included.
    let mut out = Builder {
        entries: PyList::empty(py),
        errors: PyList::empty(py),
        build: Build {
            keys: Keys {
                py,
                cache: HashMap::default(),
            },
            hidden: Hidden::default(),
            int_refused: false,
        },
    };
    out.build.hidden.hide(out.entries.as_any());
    out.build.hidden.hide(out.errors.as_any());
    if batches.len() <= 2 {
        let threads = parser_threads();
        for batch in batches {
            let outcomes = py.detach(|| parse_lines(batch, threads));
            out.add(batch, &outcomes)?;
            py.detach(move || drop(outcomes));
        }
        return Ok(out.finish());
    }
    // A pipeline: one thread parses ahead and another frees finished batches
    // while this thread (holding the GIL) builds objects.
    std::thread::scope(|s| -> PyResult<()> {
        let (parsed_tx, mut parsed_rx) = std::sync::mpsc::sync_channel(4);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<Vec<Outcome<'_>>>();
        let all = &batches;
        s.spawn(move || {
            for batch in all.iter() {
                if parsed_tx.send(parse_lines(batch, 1)).is_err() {
                    break; // the builder stopped on an error
                }
            }
        });
        s.spawn(move || done_rx.into_iter().for_each(drop));
        for batch in all.iter() {
            let (outcomes, rx) = py.detach(move || (parsed_rx.recv(), parsed_rx));
            parsed_rx = rx;
            let outcomes = outcomes.expect("the parser thread sends one result per batch");
            out.add(batch, &outcomes)?;
            let _ = done_tx.send(outcomes);
        }
        Ok(())
    })?;
    Ok(out.finish())
}

struct Builder<'a, 'py> {
    entries: Bound<'py, PyList>,
    errors: Bound<'py, PyList>,
    build: Build<'a, 'py>,
}

impl<'a, 'py> Builder<'a, 'py> {
    fn finish(self) -> Parsed<'py> {
        self.build.hidden.restore();
        (self.entries, self.errors)
    }

    fn add(&mut self, batch: &[Line<'a>], outcomes: &[Outcome<'a>]) -> PyResult<()> {
        let py = self.build.keys.py;
        for (outcome, line) in outcomes.iter().zip(batch) {
            match outcome {
                Outcome::Entry(v) => {
                    let mark = self.build.hidden.objs.len();
                    match to_py(v, &mut self.build) {
                        Ok(entry) => self.entries.append(entry)?,
                        Err(e) => {
                            // The failed entry's containers are freed by now:
                            // forget them before anything re-tracks them.
                            self.build.hidden.objs.truncate(mark);
                            if !std::mem::take(&mut self.build.int_refused) {
                                return Err(e);
                            }
                            let reason = format!("integer not convertible: {}", e.value(py));
                            self.error(line, &reason)?;
                        }
                    }
                }
                Outcome::Blank => {}
                Outcome::Error(reason) => self.error(line, reason)?,
            }
        }
        Ok(())
    }

    /// One error record; `raw` is a bounded excerpt of the line, so a huge
    /// garbage line is not kept alive by the record.
    fn error(&mut self, line: &Line<'_>, reason: &str) -> PyResult<()> {
        let py = self.build.keys.py;
        let rec = PyDict::new(py);
        rec.set_item("line", line.number)?;
        rec.set_item("reason", reason)?;
        rec.set_item("raw", raw_excerpt(line.bytes))?;
        self.errors.append(rec)
    }
}

/// Parses a session file's bytes: `(entries, errors)`, errors as
/// `{"line", "reason", "raw"}` with 1-based line numbers from `first_line`.
#[pyfunction]
#[pyo3(signature = (data, *, first_line = 1))]
pub fn parse_session_entries<'py>(
    data: &Bound<'py, PyBytes>,
    first_line: usize,
) -> PyResult<Parsed<'py>> {
    parse(data.py(), data.as_bytes(), first_line)
}

/// Reads and parses a session file; a missing file raises FileNotFoundError.
#[pyfunction]
pub fn read_session_entries(py: Python<'_>, path: PathBuf) -> PyResult<Parsed<'_>> {
    let data = py.detach(|| std::fs::read(&path)).map_err(|e| {
        let name = path.display().to_string();
        let code = e.raw_os_error().unwrap_or(0);
        let msg = e.to_string();
        if e.kind() == std::io::ErrorKind::NotFound {
            PyFileNotFoundError::new_err((code, msg, name))
        } else {
            PyOSError::new_err((code, msg, name))
        }
    })?;
    parse(py, &data, 1)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_session_entries, m)?)?;
    m.add_function(wrap_pyfunction!(read_session_entries, m)?)?;
    Ok(())
}
