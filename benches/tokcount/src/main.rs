//! Reads one JSON string per stdin line and prints its o200k_base token
//! count per line. With `--bench`, prints the encode throughput instead.
use std::io::{self, BufRead, Write};
use std::time::Instant;

fn main() {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base is embedded in tiktoken-rs");
    let bench = std::env::args().any(|a| a == "--bench");
    let stdin = io::stdin();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut texts = Vec::new();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin is UTF-8");
        let text: String = serde_json::from_str(&line).expect("each line is a JSON string");
        texts.push(text);
    }
    if bench {
        let chars: usize = texts.iter().map(|t| t.len()).sum();
        let started = Instant::now();
        let mut tokens = 0usize;
        for text in &texts {
            tokens += bpe.encode_ordinary(text).len();
        }
        let seconds = started.elapsed().as_secs_f64();
        writeln!(
            out,
            "{{\"bytes\":{chars},\"tokens\":{tokens},\"seconds\":{seconds}}}"
        )
        .unwrap();
        return;
    }
    for text in &texts {
        writeln!(out, "{}", bpe.encode_ordinary(text).len()).unwrap();
    }
}
