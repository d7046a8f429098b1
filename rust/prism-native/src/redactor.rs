//! `Redactor`: the secret automaton plus a value walk that copies only the
//! containers on paths where something matched.
use crate::walk::{surrogate_bytes, type_name, WalkError, WalkResult, MAX_DEPTH};
use prism_core::redact::SecretMatcher;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytesMethods, PyDict, PyList, PyString, PyTuple};

/// Texts at least this long are redacted with the GIL released.
const DETACH_TEXT: usize = 64 * 1024;

#[pyclass(frozen, module = "prism._native")]
pub struct Redactor {
    matcher: SecretMatcher,
    mask: Py<PyString>,
    mask_bytes: Vec<u8>,
}

impl Redactor {
    /// True when the redactor has no secrets (it would change nothing).
    pub fn is_empty(&self) -> bool {
        self.matcher.is_empty()
    }

    /// `value` with every secret masked: `value` itself when nothing matched,
    /// otherwise new containers only along the paths that changed (what the
    /// Python method `redact_value` returns).
    pub fn redact<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self
            .redact_obj(value, 0)
            .map_err(WalkError::into_pyerr)?
            .unwrap_or_else(|| value.clone()))
    }

    /// `None` when `s` holds no secret (callers keep the original object).
    fn redact_str<'py>(&self, s: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
        let py = s.py();
        if self.matcher.is_empty() {
            return Ok(None);
        }
        match s.to_str() {
            Ok(text) => {
                let out = self.run(py, text.as_bytes());
                // SAFETY: the input is UTF-8 and only whole secrets (UTF-8
                // strings, so whole code points) are replaced by the UTF-8
                // mask, so the output is UTF-8 too.
                Ok(out.map(|v| PyString::new(py, unsafe { std::str::from_utf8_unchecked(&v) })))
            }
            Err(_) => {
                let b = surrogate_bytes(s)?;
                let Some(out) = self.run(py, b.as_bytes()) else {
                    return Ok(None);
                };
                // SAFETY: `out` is a live buffer of `out.len()` bytes and the
                // error handler name is a NUL-terminated literal.
                let ptr = unsafe {
                    ffi::PyUnicode_DecodeUTF8(
                        out.as_ptr().cast(),
                        out.len() as ffi::Py_ssize_t,
                        c"surrogatepass".as_ptr(),
                    )
                };
                // SAFETY: a new reference (or NULL with an exception set,
                // turned into the error); `PyUnicode_DecodeUTF8` returns a str.
                Ok(Some(unsafe {
                    Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked()
                }))
            }
        }
    }

    fn run(&self, py: Python<'_>, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.len() >= DETACH_TEXT {
            py.detach(|| self.matcher.redact(bytes, &self.mask_bytes))
        } else {
            self.matcher.redact(bytes, &self.mask_bytes)
        }
    }

    fn redact_obj<'py>(
        &self,
        obj: &Bound<'py, PyAny>,
        depth: usize,
    ) -> WalkResult<Option<Bound<'py, PyAny>>> {
        let py = obj.py();
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(self
                .redact_str(s)
                .map_err(|e| WalkError::from_py(py, e))?
                .map(Bound::into_any));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            return self.redact_dict(d, depth + 1);
        }
        if let Ok(l) = obj.cast::<PyList>() {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            let items: Vec<_> = l.iter().collect();
            return Ok(self
                .redact_items(&items, depth + 1)?
                .map(|v| PyList::new(py, v).expect("list from objects").into_any()));
        }
        if let Ok(t) = obj.cast::<PyTuple>() {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            let items: Vec<_> = t.iter().collect();
            return Ok(self
                .redact_items(&items, depth + 1)?
                .map(|v| PyTuple::new(py, v).expect("tuple from objects").into_any()));
        }
        Ok(None)
    }

    fn redact_items<'py>(
        &self,
        items: &[Bound<'py, PyAny>],
        depth: usize,
    ) -> WalkResult<Option<Vec<Bound<'py, PyAny>>>> {
        let mut out: Option<Vec<Bound<'py, PyAny>>> = None;
        for (i, item) in items.iter().enumerate() {
            let new = self.redact_obj(item, depth).map_err(|e| e.in_index(i))?;
            match (&mut out, new) {
                (Some(v), Some(n)) => v.push(n),
                (Some(v), None) => v.push(item.clone()),
                (None, Some(n)) => {
                    let mut v = Vec::with_capacity(items.len());
                    v.extend(items[..i].iter().cloned());
                    v.push(n);
                    out = Some(v);
                }
                (None, None) => {}
            }
        }
        Ok(out)
    }

    fn redact_dict<'py>(
        &self,
        d: &Bound<'py, PyDict>,
        depth: usize,
    ) -> WalkResult<Option<Bound<'py, PyAny>>> {
        let py = d.py();
        let mut out: Option<Bound<'py, PyDict>> = None;
        for (i, (k, v)) in d.iter().enumerate() {
            let nk = self.redact_obj(&k, depth).map_err(|e| e.in_key(&k))?;
            let nv = self.redact_obj(&v, depth).map_err(|e| e.in_key(&k))?;
            let set = |o: &Bound<'py, PyDict>, key: &Bound<'py, PyAny>, val: &Bound<'py, PyAny>| {
                o.set_item(key, val)
                    .map_err(|e| WalkError::from_py(py, e).in_key(&k))
            };
            if out.is_none() && (nk.is_some() || nv.is_some()) {
                // First change: copy the untouched prefix, keeping key order.
                let fresh = PyDict::new(py);
                for (pk, pv) in d.iter().take(i) {
                    set(&fresh, &pk, &pv)?;
                }
                out = Some(fresh);
            }
            if let Some(o) = &out {
                set(o, nk.as_ref().unwrap_or(&k), nv.as_ref().unwrap_or(&v))?;
            }
        }
        Ok(out.map(Bound::into_any))
    }
}

fn too_deep() -> WalkError {
    WalkError::value_err(format!(
        "value nested deeper than MAX_DEPTH ({MAX_DEPTH}); is it cyclic?"
    ))
}

#[pymethods]
impl Redactor {
    #[new]
    #[pyo3(signature = (secrets, mask = "[REDACTED]"))]
    fn new(secrets: &Bound<'_, PyAny>, mask: &str) -> PyResult<Self> {
        if secrets.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "secrets must be an iterable of str, not a single str",
            ));
        }
        let mut owned: Vec<String> = Vec::new();
        for (i, item) in secrets.try_iter()?.enumerate() {
            let item = item?;
            let s = item.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "secret #{i} must be a str, not {}",
                    type_name(&item)
                ))
            })?;
            let text = s
                .to_str()
                .map_err(|_| PyValueError::new_err(format!("secret #{i} is not valid UTF-8")))?;
            owned.push(text.to_owned());
        }
        let matcher =
            SecretMatcher::new(&owned).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mask_bytes = mask.as_bytes().to_vec();
        let mask = PyString::new(secrets.py(), mask).unbind();
        Ok(Self {
            matcher,
            mask,
            mask_bytes,
        })
    }

    #[getter]
    fn mask(&self, py: Python<'_>) -> Py<PyString> {
        self.mask.clone_ref(py)
    }

    fn __len__(&self) -> usize {
        self.matcher.len()
    }

    fn __repr__(&self) -> String {
        // Counts only: a repr must never show the secrets.
        format!("Redactor(<{} secrets>)", self.matcher.len())
    }

    fn contains(&self, text: &Bound<'_, PyString>) -> PyResult<bool> {
        let py = text.py();
        Ok(match text.to_str() {
            Ok(t) if t.len() >= DETACH_TEXT => py.detach(|| self.matcher.contains(t.as_bytes())),
            Ok(t) => self.matcher.contains(t.as_bytes()),
            Err(_) => self.matcher.contains(surrogate_bytes(text)?.as_bytes()),
        })
    }

    /// How many leading characters of `text` (a stream's unsent tail) can be
    /// redacted and sent now: later text can no longer change them.
    fn settled_length(&self, text: &Bound<'_, PyString>) -> PyResult<usize> {
        let owned;
        let bytes = match text.to_str() {
            Ok(t) => t.as_bytes(),
            Err(_) => {
                owned = surrogate_bytes(text)?;
                owned.as_bytes()
            }
        };
        let cut = self.matcher.settled_len(bytes);
        // Bytes to code points: a surrogate written with surrogatepass is
        // three bytes too, so counting lead bytes works for both spellings.
        Ok(bytes[..cut].iter().filter(|&&b| b & 0xC0 != 0x80).count())
    }

    /// Returns `text` itself when it holds no secret.
    fn redact_text<'py>(&self, text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
        Ok(self.redact_str(text)?.unwrap_or_else(|| text.clone()))
    }

    /// Returns `value` itself when nothing matched; otherwise new dicts,
    /// lists and tuples only along the paths that changed.
    fn redact_value<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.redact(value)
    }
}
