//! Binding of `prism_core::search`: the coding tools' `search` and `list`.
//! The walk and the search run with the GIL released; only the result is
//! converted to Python dicts afterwards.
use prism_core::search::{
    list_files as core_list, search as core_search, SearchError, SearchOptions,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

fn value_error(error: SearchError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Regex or literal search under `root`; see `_native.pyi`.
#[pyfunction]
#[pyo3(signature = (root, pattern, *, literal=false, ignore_case=false, globs=Vec::new(), context=0, max_per_file=50, max_total=500, max_filesize=10_485_760, hidden=false, threads=0))]
#[allow(clippy::too_many_arguments)]
pub fn search_files<'py>(
    py: Python<'py>,
    root: PathBuf,
    pattern: String,
    literal: bool,
    ignore_case: bool,
    globs: Vec<String>,
    context: usize,
    max_per_file: usize,
    max_total: usize,
    max_filesize: u64,
    hidden: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let options = SearchOptions {
        root,
        pattern,
        literal,
        ignore_case,
        globs,
        context,
        max_per_file,
        max_total,
        max_filesize,
        hidden,
        threads,
    };
    let output = py.detach(|| core_search(&options)).map_err(value_error)?;
    let files = PyList::empty(py);
    for hits in output.files {
        let lines = PyList::empty(py);
        for line in hits.lines {
            lines.append((line.number, line.text, line.is_match))?;
        }
        let file = PyDict::new(py);
        file.set_item("path", hits.path)?;
        file.set_item("matches", hits.matches)?;
        file.set_item("lines", lines)?;
        files.append(file)?;
    }
    let result = PyDict::new(py);
    result.set_item("files", files)?;
    result.set_item("files_searched", output.files_searched)?;
    result.set_item("total_matches", output.total_matches)?;
    result.set_item("truncated", output.truncated)?;
    Ok(result)
}

/// Files under `root` matching `globs`, newest first; see `_native.pyi`.
#[pyfunction]
#[pyo3(signature = (root, globs=Vec::new(), *, hidden=false, max=1000, threads=0))]
pub fn list_files<'py>(
    py: Python<'py>,
    root: PathBuf,
    globs: Vec<String>,
    hidden: bool,
    max: usize,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let output = py
        .detach(|| core_list(&root, &globs, hidden, max, threads))
        .map_err(value_error)?;
    let files = PyList::empty(py);
    for file in output.files {
        files.append((file.path, file.modified, file.size))?;
    }
    let result = PyDict::new(py);
    result.set_item("files", files)?;
    result.set_item("total", output.total)?;
    result.set_item("truncated", output.truncated)?;
    Ok(result)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(search_files, m)?)?;
    m.add_function(wrap_pyfunction!(list_files, m)?)?;
    Ok(())
}
