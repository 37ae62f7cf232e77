//! A reader of callgrind's output format (`callgrind.out.<pid>`), enough for totals, self and
//! inclusive cost per function, and call counts.
//!
//! The format (valgrind's "Callgrind Format Specification"): header lines (`events: Ir`,
//! `summary: N`, `totals: N`), position/name lines (`ob=`, `fl=`, `fi=`, `fe=`, `fn=`, `cob=`,
//! `cfi=`, `cfn=`), each optionally name-compressed as `(id) name` on first use and `(id)` after,
//! cost lines (`<position> <cost>...`, positions possibly relative: `+3`, `-2`, `*`), and call lines
//! (`calls=<count> <target position>`) whose next cost line is the inclusive cost of those calls.
//! A function's inclusive cost is its self cost plus the cost of its calls to *other* functions
//! (direct recursion is not counted twice), as `callgrind_annotate --inclusive=yes` reports it.

use std::collections::{BTreeMap, HashMap};

use crate::error::InputError;

/// One function's costs, in the first event (instructions, `Ir`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FnCost {
    /// Cost of the function's own instructions.
    pub self_cost: u64,
    /// Self cost plus the cost of every call it made to another function.
    pub inclusive: u64,
    /// How many times it was called (from any caller) while collection was on.
    pub calls: u64,
}

/// A parsed profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallgrindProfile {
    /// The events recorded, in order (`Ir` first for our runs).
    pub events: Vec<String>,
    /// The total of the first event: `totals:` or, without it, `summary:`, else the sum of self costs.
    pub total: u64,
    /// By demangled function name (functions of the same name in several objects are merged).
    pub functions: BTreeMap<String, FnCost>,
}

impl CallgrindProfile {
    /// The inclusive cost of the function named exactly `name` (0 when absent).
    pub fn inclusive(&self, name: &str) -> u64 {
        self.functions.get(name).map_or(0, |f| f.inclusive)
    }

    /// The call count of the function named exactly `name` (0 when absent).
    pub fn calls(&self, name: &str) -> u64 {
        self.functions.get(name).map_or(0, |f| f.calls)
    }
}

/// Resolves `(id) name`, `(id)` or `name` against a compression table.
fn name_of(table: &mut HashMap<u64, String>, value: &str, file: &str, line_no: usize) -> Result<String, InputError> {
    let value = value.trim();
    if let Some(rest) = value.strip_prefix('(') {
        let Some((id, name)) = rest.split_once(')') else {
            return Err(InputError::new(file, format!("line {line_no}"), format!("unterminated name id in {value:?}")));
        };
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| InputError::new(file, format!("line {line_no}"), format!("name id {id:?} is not a number")))?;
        let name = name.trim();
        if name.is_empty() {
            table.get(&id).cloned().ok_or_else(|| {
                InputError::new(file, format!("line {line_no}"), format!("name id ({id}) used before it was defined"))
            })
        } else {
            table.insert(id, name.to_string());
            Ok(name.to_string())
        }
    } else {
        Ok(value.to_string())
    }
}

/// The first event's value on a cost line (`<position> <ev1> <ev2> ...`); a missing event counts 0.
fn first_event(line: &str, file: &str, line_no: usize) -> Result<u64, InputError> {
    let mut parts = line.split_ascii_whitespace();
    parts.next(); // the position (line number or sub-position)
    match parts.next() {
        None => Ok(0),
        Some(v) => v.parse().map_err(|_| {
            InputError::new(file, format!("line {line_no}"), format!("cost {v:?} is not a non-negative integer"))
        }),
    }
}

/// Parses the text of a callgrind output file; `file` names it in errors.
pub fn parse_callgrind(file: &str, text: &str) -> Result<CallgrindProfile, InputError> {
    let mut profile = CallgrindProfile::default();
    let mut fn_names: HashMap<u64, String> = HashMap::new();
    let mut current: Option<String> = None;
    // (callee, calls) of the last `cfn=` / `calls=` lines, waiting for their cost line.
    let mut callee: Option<String> = None;
    let mut pending_calls: Option<u64> = None;
    let (mut totals, mut summary) = (None, None);
    let mut saw_format = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            if line.starts_with("# callgrind format") {
                saw_format = true;
            }
            continue;
        }
        let first = line.as_bytes()[0];
        if first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'*' {
            let cost = first_event(line, file, line_no)?;
            let Some(fun) = current.clone() else {
                return Err(InputError::new(file, format!("line {line_no}"), "a cost line before any `fn=` line"));
            };
            if let Some(n) = pending_calls.take() {
                let target = callee.clone().ok_or_else(|| {
                    InputError::new(file, format!("line {line_no}"), "a `calls=` line without a `cfn=` line")
                })?;
                let t = profile.functions.entry(target.clone()).or_default();
                t.calls += n;
                if target != fun {
                    profile.functions.entry(fun).or_default().inclusive += cost;
                }
            } else {
                let f = profile.functions.entry(fun).or_default();
                f.self_cost += cost;
                f.inclusive += cost;
            }
            continue;
        }
        let Some((key, value)) = line.split_once([':', '=']) else {
            continue;
        };
        match key {
            "version" | "creator" | "pid" | "cmd" | "part" | "desc" | "positions" | "thread" => {}
            "events" => profile.events = value.split_ascii_whitespace().map(str::to_string).collect(),
            "summary" | "totals" => {
                let v = value.split_ascii_whitespace().next().unwrap_or("0");
                let v: u64 = v.parse().map_err(|_| {
                    InputError::new(file, format!("line {line_no}"), format!("{key} {v:?} is not a number"))
                })?;
                if key == "totals" {
                    totals = Some(v);
                } else {
                    summary = Some(v);
                }
            }
            "fn" => {
                current = Some(name_of(&mut fn_names, value, file, line_no)?);
                callee = None;
                pending_calls = None;
            }
            "cfn" | "cfnc" => callee = Some(name_of(&mut fn_names, value, file, line_no)?),
            "calls" => {
                let n = value.split_ascii_whitespace().next().unwrap_or("");
                pending_calls = Some(n.parse().map_err(|_| {
                    InputError::new(file, format!("line {line_no}"), format!("calls count {n:?} is not a number"))
                })?);
            }
            // Object and file names (their own compression tables), jumps: not needed.
            _ => {}
        }
    }
    if !saw_format && profile.events.is_empty() {
        return Err(InputError::new(file, "", "not a callgrind output file (no `events:` line)"));
    }
    if profile.events.first().is_some_and(|e| e != "Ir") {
        return Err(InputError::new(
            file,
            "events",
            format!("the first event is {:?}; expected Ir (instructions)", profile.events[0]),
        ));
    }
    profile.total = totals.or(summary).unwrap_or_else(|| profile.functions.values().map(|f| f.self_cost).sum());
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("testdata/callgrind.sample.out");

    #[test]
    fn sample_file_totals_and_inclusive_costs() {
        let p = parse_callgrind("callgrind.sample.out", SAMPLE).unwrap();
        assert_eq!(p.events, vec!["Ir".to_string()]);
        assert_eq!(p.total, 1000);
        // Rows: (function, self, inclusive, calls).
        let rows: &[(&str, u64, u64, u64)] = &[
            ("schedperf::instructions::measured_attempt", 10, 900, 4),
            ("schedperf::engine::cycle::Engine::schedule_one", 90, 890, 4),
            ("<schedperf::plugins::noderesources::Fit as schedperf::framework::plugin::Plugin>::filter", 300, 300, 4),
            ("<schedperf::plugins::noderesources::Fit as schedperf::framework::plugin::Plugin>::score", 250, 400, 4),
            ("schedperf::plugins::noderesources::helper", 150, 150, 8),
            ("schedperf::instructions::measured_post_filter", 20, 100, 1),
            ("<schedperf::plugins::defaultpreemption::DefaultPreemption as schedperf::framework::plugin::Plugin>::pre_filter", 80, 80, 1),
            ("schedperf::engine::recurse", 100, 100, 5),
        ];
        for &(name, self_cost, inclusive, calls) in rows {
            assert_eq!(p.functions.get(name), Some(&FnCost { self_cost, inclusive, calls }), "{name}");
        }
    }

    #[test]
    fn malformed_input_names_the_line() {
        let cases: &[(&str, &str)] = &[
            ("events: Ir\nfn=(1) f\n10 abc\n", "line 3"),
            ("events: Ir\n10 5\n", "before any `fn=`"),
            ("events: Ir\nfn=(7)\n", "used before it was defined"),
            ("events: Ir\nfn=(1) f\ncalls=x 3\n", "calls count"),
            ("events: Dr Ir\nfn=(1) f\n1 2 3\n", "expected Ir"),
            ("hello\n", "not a callgrind output file"),
        ];
        for (text, want) in cases {
            let e = parse_callgrind("x.out", text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.contains("x.out"), "{e}");
        }
    }

    #[test]
    fn uncompressed_names_and_relative_positions() {
        let text = "events: Ir\nfn=a\n5 10\n+1 5\n*  1\ncfn=b\ncalls=2 9\n-3 40\nfn=b\n9 40\n";
        let p = parse_callgrind("u.out", text).unwrap();
        assert_eq!(p.functions["a"], FnCost { self_cost: 16, inclusive: 56, calls: 0 });
        assert_eq!(p.functions["b"], FnCost { self_cost: 40, inclusive: 40, calls: 2 });
        assert_eq!(p.total, 56, "no totals line: the sum of self costs");
    }
}
