//! JSON-schema `pattern` matching in time linear in the text.
//!
//! A schema's `pattern` runs on model output. Python's `re` backtracks, so a
//! pattern such as `^(a+)+$` takes seconds on 28 characters of hostile
//! output and blocks the event loop. The `regex` crate guarantees linear
//! time by not supporting what needs backtracking: backreferences and
//! lookaround are refused when the pattern is compiled (a tool definition
//! turns that into a clear error), never discovered while matching.
//!
//! Matching is a search, as the JSON-schema `pattern` keyword says (an
//! unanchored match anywhere in the string), with the crate's Unicode
//! classes (`\d`, `\w`, `\s` match the same characters as Python's `re` on
//! `str`). Compiled patterns are cached; a tool's few patterns compile once.
use regex::{Regex, RegexBuilder};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Compiled-program budget per pattern: generous for real schemas, small
/// enough that `(a{1000}){1000}` is refused instead of taking memory.
const SIZE_LIMIT: usize = 1 << 22;
/// Lazy-DFA cache per pattern.
const DFA_SIZE_LIMIT: usize = 1 << 22;
/// Distinct patterns kept compiled; the cache starts over past this.
const CACHE_CAPACITY: usize = 512;

/// Why a pattern cannot be matched in linear time (or at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(pub String);

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Compile `pattern`, or say in one line why it cannot be.
pub fn compile(pattern: &str) -> Result<Regex, PatternError> {
    RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|error| PatternError(describe(&error)))
}

/// The crate's message without its multi-line caret diagram.
fn describe(error: &regex::Error) -> String {
    match error {
        regex::Error::Syntax(text) => text
            .lines()
            .find_map(|line| line.trim().strip_prefix("error: "))
            .unwrap_or_else(|| text.lines().last().unwrap_or("invalid pattern"))
            .to_string(),
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern exceeds {limit} bytes; simplify its repetitions")
        }
        other => other.to_string(),
    }
}

fn cache() -> &'static Mutex<HashMap<String, Regex>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The compiled form of `pattern`, from the cache when it was seen before.
pub fn cached(pattern: &str) -> Result<Regex, PatternError> {
    // A poisoned lock only means another thread panicked mid-insert; the
    // map itself is still a valid map of compiled patterns.
    let mut map = cache()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(regex) = map.get(pattern) {
        return Ok(regex.clone()); // cheap: the program is shared
    }
    let regex = compile(pattern)?;
    if map.len() >= CACHE_CAPACITY {
        map.clear();
    }
    map.insert(pattern.to_string(), regex.clone());
    Ok(regex)
}

/// True when `pattern` matches anywhere in `text` (JSON-schema semantics).
pub fn search(pattern: &str, text: &str) -> Result<bool, PatternError> {
    Ok(cached(pattern)?.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_unanchored_like_the_pattern_keyword() {
        assert_eq!(search("b+", "abbbc"), Ok(true));
        assert_eq!(search("^b", "abc"), Ok(false));
        assert_eq!(search("^[a-z]{2,4}$", "abcd"), Ok(true));
        assert_eq!(search("^[a-z]{2,4}$", "abcde"), Ok(false));
        assert_eq!(search(r"^\d+$", "١٢٣"), Ok(true)); // Unicode digits, as in Python
        assert_eq!(search("", ""), Ok(true));
    }

    #[test]
    fn catastrophic_patterns_run_in_linear_time() {
        // Backtracking would not finish on this input; the test finishing is
        // the assertion (no wall-clock bound, which a loaded machine breaks).
        let hostile = format!("{}!", "a".repeat(100_000));
        for pattern in ["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(x+x+)+y"] {
            assert_eq!(search(pattern, &hostile), Ok(false), "{pattern}");
        }
    }

    #[test]
    fn backreferences_and_lookaround_are_refused_with_a_reason() {
        let back = compile(r"(a)\1").unwrap_err().0;
        assert!(back.contains("backreferences are not supported"), "{back}");
        for look in ["a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b"] {
            let message = compile(look).unwrap_err().0;
            assert!(message.contains("look-around"), "{look}: {message}");
            assert!(!message.contains('\n'));
        }
        assert!(compile("(unclosed").is_err());
    }

    #[test]
    fn huge_repetitions_are_refused_not_compiled() {
        let message = compile("(a{1000}){1000}").unwrap_err().0;
        assert!(message.contains("exceeds"), "{message}");
    }

    #[test]
    fn the_cache_returns_the_same_answers() {
        for _ in 0..3 {
            assert_eq!(search("^x.z$", "xyz"), Ok(true));
        }
        for index in 0..(CACHE_CAPACITY + 10) {
            let pattern = format!("^p{index}$");
            assert_eq!(search(&pattern, &format!("p{index}")), Ok(true));
        }
        assert!(cache().lock().unwrap().len() <= CACHE_CAPACITY);
    }
}
