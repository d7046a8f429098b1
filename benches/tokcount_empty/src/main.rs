//! The size baseline: reads JSON strings and prints their byte lengths.
use std::io::{self, BufRead};

fn main() {
    for line in io::stdin().lock().lines() {
        let text: String = serde_json::from_str(&line.unwrap()).unwrap();
        println!("{}", text.len());
    }
}
