//! The attention compiler's single pass, as pure planning over measured rows.
//!
//! The binding (`prism-native`'s `attention` module) measures every row of
//! the request once and hands this module token counts; planning then only
//! subtracts each mutation's delta. The stub text and its size rules live in
//! `stub`, next to the planner that prices them.
//!
//! Order: sticky rows first (they stay applied even under the ratio, so the
//! cached prefix never changes back), then, only when the estimate is over
//! `trigger_ratio * cap`, stage 1 (thinking of all but the newest
//! `thinking_keep_turns` thinking-bearing assistant turns, oldest first) and
//! stage 2 (tool results beyond the newest `keep_last`, oldest first). Each
//! stage stops as soon as the estimate is at or under the target.

mod stub;
pub use stub::{stub_text, thinking_key_from_call_id, thinking_key_from_digest, STUB_FIXED_CHARS};

use crate::tokens::ceil4;
use stub::digits;

/// An assistant turn that carries thinking blocks.
#[derive(Debug, Clone)]
pub struct ThinkingTurn {
    /// Tokens the turn's thinking blocks cost (removed together).
    pub tokens: u64,
    pub sticky: bool,
}

/// One `tool_result` block of a mutable group.
#[derive(Debug, Clone)]
pub struct ToolRow {
    /// Tokens of the block as sent: ceil((name chars + result JSON chars) / 4).
    pub payload_tokens: u64,
    /// Code points of the tool name (counted in the block either way).
    pub name_chars: u64,
    /// JSON-escaped code points of name + id inside the stub string.
    pub stub_var_chars: u64,
    /// UTF-8 bytes of name + id inside the stub text.
    pub stub_var_bytes: u64,
    /// Never stubbed: excluded tool, error result or approval payload.
    pub protected: bool,
    pub sticky: bool,
}

impl ToolRow {
    /// Tokens of the block once its result is the stub string for a payload
    /// of `bytes` bytes: the result becomes a JSON string literal (+2 quotes).
    pub fn stub_tokens(&self, bytes: u64) -> u64 {
        ceil4(self.name_chars + 2 + STUB_FIXED_CHARS + self.stub_var_chars + digits(bytes))
    }

    pub fn stub_bytes(&self, bytes: u64) -> u64 {
        STUB_FIXED_CHARS + self.stub_var_bytes + digits(bytes)
    }
}

/// Supplies a tool row's payload size lazily (UTF-8 bytes of the compact
/// JSON of the redacted result), so only candidates pay for redaction.
pub trait PayloadBytes {
    type Error;
    fn payload_bytes(&mut self, index: usize) -> Result<u64, Self::Error>;
}

impl<F: FnMut(usize) -> u64> PayloadBytes for F {
    type Error = std::convert::Infallible;
    fn payload_bytes(&mut self, index: usize) -> Result<u64, Self::Error> {
        Ok(self(index))
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub cap: u64,
    pub trigger_ratio: f64,
    pub target_ratio: Option<f64>,
    pub thinking_keep_turns: usize,
    pub keep_last: usize,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    pub used: u64,
    pub used_after: u64,
    /// Indices into the thinking turns to strip (sticky first, then stage 1).
    pub strip: Vec<usize>,
    /// (tool row index, payload bytes) to stub.
    pub stub: Vec<(usize, u64)>,
    pub stubbed_bytes: u64,
    pub truncated: bool,
    pub gate_tripped: bool,
    pub over_budget: bool,
}

impl Plan {
    pub fn mutated(&self) -> bool {
        !self.strip.is_empty() || !self.stub.is_empty()
    }
}

struct State<'a, P: PayloadBytes> {
    tools: &'a [ToolRow],
    sizes: &'a mut P,
    stubbed: Vec<bool>,
    est: u64,
    plan: Plan,
}

impl<P: PayloadBytes> State<'_, P> {
    /// The stub's token saving, or None when the stub would not be cheaper.
    fn saving(&mut self, j: usize) -> Result<Option<(u64, u64)>, P::Error> {
        let row = &self.tools[j];
        let bytes = self.sizes.payload_bytes(j)?;
        let stub = row.stub_tokens(bytes);
        Ok((stub < row.payload_tokens).then(|| (row.payload_tokens - stub, bytes)))
    }

    fn try_stub(&mut self, j: usize) -> Result<(), P::Error> {
        if let Some((saving, bytes)) = self.saving(j)? {
            self.est -= saving;
            self.stubbed[j] = true;
            self.plan.stubbed_bytes += bytes.saturating_sub(self.tools[j].stub_bytes(bytes));
            self.plan.stub.push((j, bytes));
        }
        Ok(())
    }
}

/// Plan one turn. `used` is the whole request's measured estimate.
pub fn plan<P: PayloadBytes>(
    used: u64,
    turns: &[ThinkingTurn],
    tools: &[ToolRow],
    params: &Params,
    sizes: &mut P,
) -> Result<Plan, P::Error> {
    let mut s = State {
        tools,
        sizes,
        stubbed: vec![false; tools.len()],
        est: used,
        plan: Plan {
            used,
            ..Plan::default()
        },
    };
    let mut stripped = vec![false; turns.len()];
    for (i, turn) in turns.iter().enumerate() {
        if turn.sticky {
            stripped[i] = true;
            s.est = s.est.saturating_sub(turn.tokens);
            s.plan.strip.push(i);
        }
    }
    for (j, row) in tools.iter().enumerate() {
        if row.sticky && !row.protected {
            s.try_stub(j)?;
        }
    }
    let cap = params.cap as f64;
    let limit = params.trigger_ratio * cap;
    if (s.est as f64) > limit {
        s.plan.gate_tripped = true;
        let target = params.target_ratio.map_or(limit, |t| t * cap);
        let under = |est: u64| (est as f64) <= target;
        let mut done = false;
        let thinking_end = turns.len().saturating_sub(params.thinking_keep_turns);
        for i in 0..thinking_end {
            if stripped[i] {
                continue;
            }
            if under(s.est) {
                s.plan.truncated = true;
                done = true;
                break;
            }
            stripped[i] = true;
            s.est = s.est.saturating_sub(turns[i].tokens);
            s.plan.strip.push(i);
        }
        if !done {
            let tools_end = tools.len().saturating_sub(params.keep_last);
            for j in 0..tools_end {
                if s.stubbed[j] || tools[j].protected {
                    continue;
                }
                if under(s.est) {
                    // Truncated only if a row we skip could still be stubbed.
                    let mut k = j;
                    while k < tools_end && !s.plan.truncated {
                        s.plan.truncated =
                            !s.stubbed[k] && !tools[k].protected && s.saving(k)?.is_some();
                        k += 1;
                    }
                    break;
                }
                s.try_stub(j)?;
            }
        }
        s.plan.over_budget = (s.est as f64) > limit;
    }
    s.plan.used_after = s.est;
    Ok(s.plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(payload_tokens: u64) -> ToolRow {
        ToolRow {
            payload_tokens,
            name_chars: 4,
            stub_var_chars: 8,
            stub_var_bytes: 8,
            protected: false,
            sticky: false,
        }
    }

    fn params(cap: u64) -> Params {
        Params {
            cap,
            trigger_ratio: 0.5,
            target_ratio: None,
            thinking_keep_turns: 1,
            keep_last: 1,
        }
    }

    fn run(used: u64, turns: &[ThinkingTurn], tools: &[ToolRow], p: &Params) -> Plan {
        plan(used, turns, tools, p, &mut |_i: usize| 4000u64).unwrap()
    }

    #[test]
    fn under_ratio_does_nothing() {
        let turns = [ThinkingTurn {
            tokens: 10,
            sticky: false,
        }];
        let p = run(40, &turns, &[tool(1000)], &params(100));
        assert!(!p.mutated() && !p.gate_tripped && p.used_after == 40);
    }

    #[test]
    fn thinking_first_oldest_first_then_tools() {
        let turns = [
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
        ];
        let tools = [tool(1000), tool(1000), tool(1000)];
        // cap 2000, limit 1000; used 2500 -> strip 2 turns (2300) then stub 2.
        let p = run(2500, &turns, &tools, &params(2000));
        assert_eq!(p.strip, vec![0, 1]);
        assert_eq!(p.stub.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 1]);
        let stub = tools[0].stub_tokens(4000);
        assert_eq!(p.used_after, 2500 - 200 - 2 * (1000 - stub));
        assert!(!p.over_budget && !p.truncated);
    }

    #[test]
    fn stops_as_soon_as_under_and_reports_truncated() {
        let turns = [
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
            ThinkingTurn {
                tokens: 100,
                sticky: false,
            },
        ];
        let p = run(1050, &turns, &[], &params(2000));
        assert_eq!(p.strip, vec![0]);
        assert!(p.truncated && !p.over_budget);
    }

    #[test]
    fn over_budget_when_everything_is_spent() {
        let mut protected = tool(5000);
        protected.protected = true;
        let p = run(9000, &[], &[protected, tool(10)], &params(2000));
        assert!(p.over_budget && p.stub.is_empty());
    }

    #[test]
    fn sticky_reapplied_under_ratio() {
        let turns = [
            ThinkingTurn {
                tokens: 10,
                sticky: true,
            },
            ThinkingTurn {
                tokens: 5,
                sticky: false,
            },
        ];
        let mut t = tool(500);
        t.sticky = true;
        let p = run(2000, &turns, &[t, tool(500)], &params(100_000));
        assert_eq!(p.strip, vec![0]);
        assert_eq!(p.stub.len(), 1);
        assert!(!p.gate_tripped);
    }

    #[test]
    fn hysteresis_goes_to_target() {
        let tools = [tool(1000), tool(1000), tool(1000), tool(1000)];
        let mut pr = params(4000);
        pr.target_ratio = Some(0.25);
        let p = run(4100, &[], &tools, &pr);
        assert_eq!(p.stub.len(), 3);
        let p2 = run(4100, &[], &tools, &params(4000));
        assert_eq!(p2.stub.len(), 3);
        pr.target_ratio = None;
        let p3 = run(2500, &[], &tools, &pr);
        assert_eq!(p3.stub.len(), 1);
    }

    #[test]
    fn stub_costlier_than_payload_is_skipped() {
        let p = run(200, &[], &[tool(3), tool(3)], &params(100));
        assert!(p.stub.is_empty() && p.over_budget && !p.truncated);
    }
}
