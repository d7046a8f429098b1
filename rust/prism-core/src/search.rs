//! Workspace search and file listing for the coding tools, built from the
//! crates ripgrep is made of: `ignore` walks the tree in parallel honouring
//! `.gitignore`/`.ignore` and hidden-file rules, `grep-regex` compiles the
//! pattern (a finite-automaton engine: no backtracking, so no catastrophic
//! pattern; its compiled size is bounded), `grep-searcher` reads each file
//! with binary detection and context lines.
//!
//! Output is sorted by path (and by line inside a file) whatever order the
//! threads finished in, so the same tree and query give the same answer.
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

/// Compiled regexes bigger than this are refused (a pattern such as
/// `(a{1000}){1000}` would otherwise take memory and time to build).
pub const REGEX_SIZE_LIMIT: usize = 8 << 20;

#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub root: PathBuf,
    pub pattern: String,
    pub literal: bool,
    pub ignore_case: bool,
    pub globs: Vec<String>,
    pub context: usize,
    pub max_per_file: usize,
    pub max_total: usize,
    pub max_filesize: u64,
    pub hidden: bool,
    pub threads: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchLine {
    pub number: u64,
    pub text: String,
    pub is_match: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHits {
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// Matching lines in this file (at most `max_per_file` are kept).
    pub matches: u64,
    pub lines: Vec<SearchLine>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchOutput {
    pub files: Vec<FileHits>,
    pub files_searched: u64,
    pub total_matches: u64,
    /// A per-file or the total cap cut the output.
    pub truncated: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SearchError {
    Pattern(String),
    Glob(String),
    Root(String),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Pattern(m) => write!(f, "invalid search pattern: {m}"),
            SearchError::Glob(m) => write!(f, "invalid glob: {m}"),
            SearchError::Root(m) => write!(f, "invalid search root: {m}"),
        }
    }
}

fn overrides(root: &Path, globs: &[String]) -> Result<Override, SearchError> {
    let mut builder = OverrideBuilder::new(root);
    for glob in globs {
        builder
            .add(glob)
            .map_err(|e| SearchError::Glob(format!("{glob:?}: {e}")))?;
    }
    builder
        .build()
        .map_err(|e| SearchError::Glob(e.to_string()))
}

fn walker(
    root: &Path,
    globs: &[String],
    hidden: bool,
    threads: usize,
) -> Result<WalkBuilder, SearchError> {
    if !root.is_dir() {
        return Err(SearchError::Root(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!hidden)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .threads(threads)
        .overrides(overrides(root, globs)?);
    // `.git` itself is never listed or searched, even with hidden files on.
    builder.filter_entry(|entry| entry.file_name() != ".git");
    Ok(builder)
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}

pub fn build_matcher(
    pattern: &str,
    literal: bool,
    ignore_case: bool,
) -> Result<RegexMatcher, SearchError> {
    if pattern.is_empty() {
        return Err(SearchError::Pattern("the pattern is empty".into()));
    }
    RegexMatcherBuilder::new()
        .fixed_strings(literal)
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| SearchError::Pattern(e.to_string()))
}

struct Collect {
    max_per_file: usize,
    matches: u64,
    lines: Vec<SearchLine>,
    cut: bool,
}

fn line_text(bytes: &[u8]) -> String {
    let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
    String::from_utf8_lossy(trimmed).into_owned()
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.matches as usize >= self.max_per_file {
            self.cut = true;
            return Ok(false);
        }
        self.matches += 1;
        self.lines.push(SearchLine {
            number: mat.line_number().unwrap_or(0),
            text: line_text(mat.bytes()),
            is_match: true,
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.matches as usize >= self.max_per_file
            && !matches!(ctx.kind(), grep_searcher::SinkContextKind::After)
        {
            return Ok(true);
        }
        self.lines.push(SearchLine {
            number: ctx.line_number().unwrap_or(0),
            text: line_text(ctx.bytes()),
            is_match: false,
        });
        Ok(true)
    }
}

fn search_one(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    root: &Path,
    path: &Path,
    max_per_file: usize,
) -> Option<FileHits> {
    let mut sink = Collect {
        max_per_file,
        matches: 0,
        lines: Vec::new(),
        cut: false,
    };
    // An unreadable file (permissions, vanished mid-walk) is skipped, as rg does.
    searcher.search_path(matcher, path, &mut sink).ok()?;
    if sink.matches == 0 {
        return None;
    }
    let mut matches = sink.matches;
    if sink.cut {
        // Count one past the cap so the caller can say the file was cut.
        matches += 1;
    }
    Some(FileHits {
        path: relative(root, path),
        matches,
        lines: sink.lines,
    })
}

/// Search the tree; see the module docs.
pub fn search(options: &SearchOptions) -> Result<SearchOutput, SearchError> {
    let matcher = build_matcher(&options.pattern, options.literal, options.ignore_case)?;
    // Fail on a bad root or glob before spawning threads.
    let builder = walker(
        &options.root,
        &options.globs,
        options.hidden,
        options.threads,
    )?;
    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let searched = AtomicU64::new(0);
    let max_filesize = options.max_filesize;
    let max_per_file = options.max_per_file.max(1);
    let root = options.root.as_path();
    builder.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .before_context(options.context)
            .after_context(options.context)
            .build();
        let matcher = &matcher;
        let found = &found;
        let searched = &searched;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if entry.metadata().is_ok_and(|m| m.len() > max_filesize) {
                return WalkState::Continue;
            }
            searched.fetch_add(1, Ordering::Relaxed);
            if let Some(hits) = search_one(&mut searcher, matcher, root, entry.path(), max_per_file)
            {
                if let Ok(mut all) = found.lock() {
                    all.push(hits);
                }
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().unwrap_or_default();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(cap_total(
        files,
        searched.into_inner(),
        options.max_total,
        max_per_file,
    ))
}

fn cap_total(
    files: Vec<FileHits>,
    searched: u64,
    max_total: usize,
    max_per_file: usize,
) -> SearchOutput {
    let mut output = SearchOutput {
        files_searched: searched,
        ..SearchOutput::default()
    };
    let mut budget = max_total as u64;
    for mut hits in files {
        output.total_matches += hits.matches;
        if hits.matches > max_per_file as u64 {
            output.truncated = true;
        }
        if budget == 0 {
            output.truncated = true;
            continue;
        }
        let shown = hits.lines.iter().filter(|l| l.is_match).count() as u64;
        if shown > budget {
            output.truncated = true;
            let mut kept = 0u64;
            let cut_at = hits
                .lines
                .iter()
                .position(|line| {
                    kept += u64::from(line.is_match);
                    kept > budget
                })
                .unwrap_or(hits.lines.len());
            hits.lines.truncate(cut_at);
            budget = 0;
        } else {
            budget -= shown;
        }
        output.files.push(hits);
    }
    output
}

#[derive(Clone, Debug, PartialEq)]
pub struct ListedFile {
    pub path: String,
    pub modified: f64,
    pub size: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListOutput {
    pub files: Vec<ListedFile>,
    pub total: u64,
    pub truncated: bool,
}

fn seconds(time: io::Result<SystemTime>) -> f64 {
    time.ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Files under `root` matching `globs` (all files when empty), newest
/// first (ties by path), at most `max` of them.
pub fn list_files(
    root: &Path,
    globs: &[String],
    hidden: bool,
    max: usize,
    threads: usize,
) -> Result<ListOutput, SearchError> {
    let builder = walker(root, globs, hidden, threads)?;
    let found: Mutex<Vec<ListedFile>> = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let (modified, size) = match entry.metadata() {
                Ok(m) => (seconds(m.modified()), m.len()),
                Err(_) => (0.0, 0),
            };
            let file = ListedFile {
                path: relative(root, entry.path()),
                modified,
                size,
            };
            if let Ok(mut all) = found.lock() {
                all.push(file);
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().unwrap_or_default();
    files.sort_by(|a, b| {
        b.modified
            .total_cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    let total = files.len() as u64;
    let truncated = files.len() > max;
    files.truncate(max);
    Ok(ListOutput {
        files,
        total,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "prism-search-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src")).unwrap();
        fs::create_dir_all(dir.join("build")).unwrap();
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join(".gitignore"), "build/\n").unwrap();
        fs::write(
            dir.join("src/a.py"),
            "one\nneedle here\nthree\nneedle again\n",
        )
        .unwrap();
        fs::write(dir.join("src/b.txt"), "needle\n").unwrap();
        fs::write(dir.join("build/out.py"), "needle\n").unwrap();
        fs::write(dir.join(".git/config"), "needle\n").unwrap();
        fs::write(dir.join("bin.dat"), b"needle\x00\x01").unwrap();
        dir
    }

    fn options(root: &Path, pattern: &str) -> SearchOptions {
        SearchOptions {
            root: root.to_path_buf(),
            pattern: pattern.into(),
            literal: false,
            ignore_case: false,
            globs: vec![],
            context: 0,
            max_per_file: 100,
            max_total: 1000,
            max_filesize: 1 << 30,
            hidden: true,
            threads: 2,
        }
    }

    #[test]
    fn search_is_sorted_gitignore_aware_and_skips_binary_and_git() {
        let root = tree();
        let out = search(&options(&root, "needle")).unwrap();
        let paths: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["src/a.py", "src/b.txt"]);
        assert_eq!(out.total_matches, 3);
        assert_eq!(out.files[0].lines[1].number, 4);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn globs_context_and_caps() {
        let root = tree();
        let mut opts = options(&root, "needle");
        opts.globs = vec!["*.py".into()];
        opts.context = 1;
        let out = search(&opts).unwrap();
        assert_eq!(out.files.len(), 1);
        let numbers: Vec<u64> = out.files[0].lines.iter().map(|l| l.number).collect();
        assert_eq!(numbers, vec![1, 2, 3, 4]);
        opts.context = 0;
        opts.max_per_file = 1;
        let out = search(&opts).unwrap();
        assert!(out.truncated);
        assert_eq!(out.files[0].lines.len(), 1);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn bad_patterns_are_errors() {
        let root = tree();
        assert!(matches!(
            search(&options(&root, "(unclosed")),
            Err(SearchError::Pattern(_))
        ));
        assert!(matches!(
            search(&options(&root, "")),
            Err(SearchError::Pattern(_))
        ));
        assert!(matches!(
            search(&options(&root, "(a{1000}){1000}")),
            Err(SearchError::Pattern(_))
        ));
        let mut opts = options(&root, "x");
        opts.globs = vec!["[".into()];
        assert!(matches!(search(&opts), Err(SearchError::Glob(_))));
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn list_files_newest_first() {
        let root = tree();
        let out = list_files(&root, &["*.py".into()], true, 10, 2).unwrap();
        let paths: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0], "src/a.py");
        fs::remove_dir_all(root).unwrap();
    }
}
