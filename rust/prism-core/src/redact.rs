//! Exact-secret redaction: one Aho-Corasick automaton per secret set,
//! leftmost-longest so a secret that is a prefix of another never leaves the
//! longer secret's tail behind.
use aho_corasick::{packed, AhoCorasick, MatchKind};

/// Secrets shorter than this (in code points) are refused: they would mask
/// ordinary words and make redacted output useless.
pub const MIN_SECRET_LENGTH: usize = 4;

#[derive(Debug, PartialEq, Eq)]
pub enum SecretError {
    Empty(usize),
    TooShort(usize),
}

impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never echo the secret itself: errors end up in logs.
        match self {
            SecretError::Empty(i) => write!(f, "secret #{i} is empty"),
            SecretError::TooShort(i) => write!(
                f,
                "secret #{i} is shorter than MIN_SECRET_LENGTH ({MIN_SECRET_LENGTH} characters)"
            ),
        }
    }
}

pub struct SecretMatcher {
    ac: AhoCorasick,
    /// Teddy (SIMD) searcher for small sets. Secrets often share a prefix
    /// (`sk-`, `ghp_`); the automaton's own prefilter then stops at every
    /// occurrence of that prefix's first byte, while Teddy fingerprints the
    /// first three bytes together. Same leftmost-longest semantics.
    packed: Option<packed::Searcher>,
    count: usize,
    /// The distinct secrets, for [`SecretMatcher::settled_len`].
    secrets: Vec<Box<[u8]>>,
    /// `first_bytes[b]`: some secret starts with byte `b`.
    first_bytes: [bool; 256],
    longest: usize,
}

impl SecretMatcher {
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Result<Self, SecretError> {
        let mut unique: Vec<&str> = Vec::with_capacity(secrets.len());
        for (i, s) in secrets.iter().enumerate() {
            let s = s.as_ref();
            if s.is_empty() {
                return Err(SecretError::Empty(i));
            }
            if s.chars().count() < MIN_SECRET_LENGTH {
                return Err(SecretError::TooShort(i));
            }
            unique.push(s);
        }
        unique.sort_unstable();
        unique.dedup();
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&unique)
            .expect("a few exact strings always build");
        let packed = if unique.is_empty() {
            None
        } else {
            packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostLongest)
                .builder()
                .extend(&unique)
                .build()
        };
        let mut first_bytes = [false; 256];
        for s in &unique {
            first_bytes[usize::from(s.as_bytes()[0])] = true;
        }
        Ok(Self {
            ac,
            packed,
            count: unique.len(),
            secrets: unique.iter().map(|s| s.as_bytes().into()).collect(),
            first_bytes,
            longest: unique.iter().map(|s| s.len()).max().unwrap_or(0),
        })
    }

    /// Number of distinct secrets.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn contains(&self, haystack: &[u8]) -> bool {
        match &self.packed {
            Some(p) => p.find(haystack).is_some(),
            None => self.count > 0 && self.ac.is_match(haystack),
        }
    }

    fn matches<'h>(&'h self, haystack: &'h [u8]) -> Box<dyn Iterator<Item = (usize, usize)> + 'h> {
        match &self.packed {
            Some(p) => Box::new(p.find_iter(haystack).map(|m| (m.start(), m.end()))),
            None => Box::new(self.ac.find_iter(haystack).map(|m| (m.start(), m.end()))),
        }
    }

    /// The length in bytes of the longest prefix of `text` whose redaction no
    /// later text can change, for a stream that arrives in pieces.
    ///
    /// Holds back the longest suffix that is a proper prefix of a secret (the
    /// next piece may complete it) and never cuts inside a secret already
    /// complete in `text`. No secret occurrence of the whole stream then
    /// straddles a cut, so with leftmost-longest matching the redacted pieces
    /// join to the redaction of the whole stream.
    pub fn settled_len(&self, text: &[u8]) -> usize {
        let end = text.len();
        if self.count == 0 {
            return end;
        }
        let mut cut = end;
        for start in end.saturating_sub(self.longest - 1)..end {
            if !self.first_bytes[usize::from(text[start])] {
                continue;
            }
            let tail = &text[start..];
            if self
                .secrets
                .iter()
                .any(|s| s.len() > tail.len() && s.starts_with(tail))
            {
                cut = start;
                break;
            }
        }
        // A secret complete in `text` that the cut would split moves it back
        // to the secret's start; that may split another, so repeat.
        let mut moved = cut < end;
        while moved {
            moved = false;
            for secret in self.secrets.iter() {
                let from = cut.saturating_sub(secret.len() - 1);
                if let Some(at) = (from..cut).find(|&at| text[at..].starts_with(secret)) {
                    cut = at;
                    moved = true;
                }
            }
        }
        cut
    }

    /// `None` when nothing matched, so callers can keep the original object.
    /// Works on bytes: secrets are valid UTF-8, so matches never split a
    /// character and the output stays valid in the encoding it came in.
    pub fn redact(&self, haystack: &[u8], mask: &[u8]) -> Option<Vec<u8>> {
        if self.count == 0 {
            return None;
        }
        let mut iter = self.matches(haystack);
        let (start, end) = iter.next()?;
        let mut out = Vec::with_capacity(haystack.len());
        out.extend_from_slice(&haystack[..start]);
        out.extend_from_slice(mask);
        let mut last = end;
        for (start, end) in iter {
            out.extend_from_slice(&haystack[last..start]);
            out.extend_from_slice(mask);
            last = end;
        }
        out.extend_from_slice(&haystack[last..]);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(m: &SecretMatcher, s: &str) -> String {
        match m.redact(s.as_bytes(), b"[R]") {
            Some(v) => String::from_utf8(v).unwrap(),
            None => s.to_string(),
        }
    }

    #[test]
    fn leftmost_longest_leaves_no_tail() {
        let m = SecretMatcher::new(&["sk-abc", "sk-abcdef"]).unwrap();
        assert_eq!(redact(&m, "x sk-abcdef y sk-abc"), "x [R] y [R]");
    }

    fn streamed(m: &SecretMatcher, pieces: &[&str]) -> String {
        let mut out = String::new();
        let mut held = String::new();
        for piece in pieces {
            held.push_str(piece);
            let cut = m.settled_len(held.as_bytes());
            out.push_str(&redact(m, &held[..cut]));
            held.drain(..cut);
        }
        out + &redact(m, &held)
    }

    #[test]
    fn settled_len_holds_a_secret_prefix_and_joins_to_the_whole_redaction() {
        let m = SecretMatcher::new(&["sk-live-1234", "xyab", "abcd", "abcdef"]).unwrap();
        assert_eq!(m.settled_len(b"key sk-li"), 4);
        assert_eq!(m.settled_len(b"plain text."), 11);
        assert_eq!(m.settled_len(b"..xyab"), 2); // "ab" may become "abcd"
        for text in ["a sk-live-1234 b", "..xyabcd..", "..abcdef..", "..abcdeX.."] {
            for cut in 1..text.len() {
                let whole = redact(&m, text);
                assert_eq!(
                    streamed(&m, &[&text[..cut], &text[cut..]]),
                    whole,
                    "{text} {cut}"
                );
            }
        }
        let empty = SecretMatcher::new::<&str>(&[]).unwrap();
        assert_eq!(empty.settled_len(b"sk-li"), 5);
    }

    #[test]
    fn dedup_and_len() {
        let m = SecretMatcher::new(&["token1", "token1", "token2"]).unwrap();
        assert_eq!(m.len(), 2);
        assert!(m.contains(b"a token2 b"));
        assert!(!m.contains(b"nothing"));
        assert!(m.redact(b"nothing here", b"[R]").is_none());
    }

    #[test]
    fn refuses_empty_and_short() {
        assert_eq!(
            SecretMatcher::new(&["okay", ""]).err(),
            Some(SecretError::Empty(1))
        );
        assert_eq!(
            SecretMatcher::new(&["abc"]).err(),
            Some(SecretError::TooShort(0))
        );
        // Four code points is enough even when it is more bytes.
        assert!(SecretMatcher::new(&["ééé"]).is_err());
        assert!(SecretMatcher::new(&["éééé"]).is_ok());
    }

    #[test]
    fn empty_set_matches_nothing() {
        let m = SecretMatcher::new::<&str>(&[]).unwrap();
        assert!(m.is_empty());
        assert!(!m.contains(b"anything"));
        assert!(m.redact(b"anything", b"[R]").is_none());
    }

    #[test]
    fn packed_and_automaton_agree() {
        let secrets: Vec<String> = (0..80).map(|i| format!("sk-{i:04}-secret")).collect();
        let hay = format!(
            "x {} y {}{} z sk-0079-secretsk-0001-secret",
            secrets[3], secrets[70], secrets[70]
        );
        let small = SecretMatcher::new(&secrets[..50]).unwrap();
        let big = SecretMatcher::new(&secrets).unwrap();
        assert!(small.packed.is_some());
        let mut fallback = SecretMatcher::new(&secrets[..50]).unwrap();
        fallback.packed = None;
        let a = small.redact(hay.as_bytes(), b"#");
        let b = fallback.redact(hay.as_bytes(), b"#");
        assert_eq!(a, b);
        assert_eq!(
            big.redact(hay.as_bytes(), b"#").unwrap(),
            b"x # y ## z ##".to_vec()
        );
        assert!(small.contains(hay.as_bytes()) && fallback.contains(hay.as_bytes()));
    }

    #[test]
    fn non_ascii_around_matches() {
        let m = SecretMatcher::new(&["pässwörd"]).unwrap();
        assert_eq!(redact(&m, "→pässwörd←pässwörd"), "→[R]←[R]");
    }
}
