//! `report.md`: the report as people read it in a pull request (GitHub-flavoured Markdown).

use std::fmt::Write as _;

use super::document::{self, Block, Span};
use super::format;
use super::model::Report;

/// Escapes text for a Markdown table cell or a line of prose: Markdown metacharacters get a
/// backslash, `<`, `>` and `&` become entities (so no raw HTML reaches the page), and control
/// characters become spaces.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A fenced code block whose fence is longer than any backtick run inside `code`.
fn code_block(lang: &str, code: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in code.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{lang}\n{code}\n{fence}\n")
}

/// Renders inline spans as Markdown.
fn line(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) | Span::Good(t) => out.push_str(&escape(t)),
            Span::Bad(t) => {
                out.push_str("**");
                out.push_str(&escape(t));
                out.push_str("**");
            }
            Span::Code(t) => out.push_str(&code_span(t)),
        }
    }
    out
}

/// An inline code span; backticks inside become `'` (a digest or constraint never holds one) and
/// `|` is escaped so that the span can sit in a table cell.
fn code_span(s: &str) -> String {
    format!("`{}`", format::one_line(s).replace('`', "'").replace('|', "\\|"))
}

/// Renders document blocks as Markdown.
pub fn blocks(out: &mut String, blocks: &[Block]) {
    for block in blocks {
        match block {
            Block::Heading(level, title) => {
                let _ = writeln!(out, "{} {}\n", "#".repeat(usize::from(*level)), escape(title));
            }
            Block::RunStart(_, title) => {
                let _ = writeln!(out, "## {}\n", escape(title));
            }
            Block::RunEnd => {}
            Block::Paragraph(spans) => {
                let _ = writeln!(out, "{}\n", line(spans));
            }
            Block::Bullets(items) => {
                for item in items {
                    let _ = writeln!(out, "- {}", line(item));
                }
                out.push('\n');
            }
            Block::Table { headers, right, rows } => {
                let headers: Vec<String> = headers.iter().map(|h| escape(h)).collect();
                let _ = writeln!(out, "| {} |", headers.join(" | "));
                let rule: Vec<&str> = right.iter().map(|&r| if r { "---:" } else { "---" }).collect();
                let _ = writeln!(out, "|{}|", rule.join("|"));
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|c| line(c)).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
                out.push('\n');
            }
        }
    }
}

/// `report.md` for a whole report: header (tool, commit, command line, machine), a summary table
/// and the problems, then one section per run with its facts, latency, placement quality,
/// counters and accounting, top plugin timings and, when present, the CRI figures.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("# schedperf report\n\n");
    let tool = &report.tool;
    let _ = writeln!(
        out,
        "- **Tool:** {} {} (commit {})",
        escape(&tool.name),
        escape(&tool.version),
        code_span(&tool.git_commit)
    );
    let m = &report.machine;
    let _ = writeln!(
        out,
        "- **Machine:** {}, {} cores, {} GiB memory, {}",
        escape(&m.cpu_model),
        m.cores,
        format::gib(m.memory_bytes),
        escape(&m.kernel)
    );
    let _ = writeln!(out, "- **Created:** {}", format::utc(report.created_unix_seconds));
    let _ = writeln!(out, "- **Schema:** {}", code_span(&report.schema_version));
    out.push_str("- **Command:**\n\n");
    out.push_str(&code_block("sh", &format::command_line(&report.command_line)));
    out.push('\n');

    out.push_str("## Summary\n\n");
    if report.runs.is_empty() {
        out.push_str("No runs.\n\n");
    } else {
        blocks(&mut out, &[document::summary(report)]);
    }
    blocks(&mut out, &document::problems(report));
    for (i, run) in report.runs.iter().enumerate() {
        blocks(&mut out, &document::run_section(i, run));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    #[test]
    fn escaping() {
        let check = |input: &str, expected: &str| assert_eq!(escape(input), expected, "escape({input:?})");
        check("SchedulingBasic", "SchedulingBasic");
        check("<script>&\"x\"", "&lt;script&gt;&amp;\"x\"");
        check("a|b", "a\\|b");
        check("node_name*[x]", "node\\_name\\*\\[x\\]");
        check("line\nbreak", "line break");
        assert_eq!(code_block("sh", "echo ```"), "````sh\necho ```\n````\n");
        assert_eq!(code_block("sh", "ls"), "```sh\nls\n```\n");
    }

    #[test]
    fn header_has_tool_commit_command_and_machine() {
        let md = markdown(&sample_report());
        for needle in [
            "# schedperf report",
            "schedperf 0.1.0 (commit `892d690abcdef`)",
            "AMD EPYC 7B13, 2 cores, 24.0 GiB memory, Linux 6.1.0",
            "```sh\nschedperf run --workload workloads/perf.yaml --label 'x <y> & '\\''z'\\'''\n```",
            "- **Created:** 2026-12-02 10:40:00 UTC",
        ] {
            assert!(md.contains(needle), "missing {needle:?} in\n{md}");
        }
    }

    #[test]
    fn sections_per_run() {
        let md = markdown(&sample_report());
        let check = |needle: &str, count: usize| assert_eq!(md.matches(needle).count(), count, "{needle:?} in\n{md}");
        check("## Run 1: SchedulingBasic/5000Nodes (rep 0)", 1);
        check("## Run 2: SchedulingPodAffinity/&lt;script&gt;&amp;\"x\" (rep 1)", 1);
        check("### Latency", 2);
        check("### Placement quality", 2);
        check("### Counters and accounting", 2);
        check("### Plugin timings (top 10 by total, 10% of cycles sampled)", 2);
        check("### CRI", 1);
        check("| cpu | 55.2% | 20.1% | 90.0% |", 2);
        check(
            "- worst topology skew: 3 (maxSkew 1) for `topology.kubernetes.io/zone app=web` — **exceeds maxSkew**",
            1,
        );
        check("| **lost** | **3** |", 1);
        check("**differs from the cluster**", 1);
        check("| RunPodSandbox | 2 |", 1);
        check("<script>", 0);
        // Top plugins: a header, a rule and exactly 10 rows, the largest total first.
        let section = md.split("### Plugin timings").nth(1).unwrap();
        let table: Vec<&str> = section.lines().skip(2).take_while(|l| !l.is_empty()).collect();
        assert_eq!(table.len(), 12, "{table:?}");
        assert!(table[2].starts_with("| InterPodAffinity | PreFilter | 500 |"), "{}", table[2]);
    }

    #[test]
    fn problems_are_listed() {
        let md = markdown(&sample_report());
        assert!(md.contains("**Problems:**"), "{md}");
        assert!(
            md.contains("- FAIL SchedulingPodAffinity/&lt;script&gt;&amp;\"x\" rep 1: SchedulingThroughput"),
            "{md}"
        );
        assert!(md.contains("| **FAIL** |"), "{md}");
    }
}
