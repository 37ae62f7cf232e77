//! `report.html`: one self-contained page (inline CSS, inline SVG charts, a small inline script;
//! nothing fetched from the network, which its Content-Security-Policy also forbids).
//!
//! The inline script only checks the page: it counts the charts that hold drawn marks and sets
//! `data-charts-drawn` on `<body>` (and `data-drawn` on each chart), and records any script error
//! in `data-js-errors`. `scripts/check-html.sh` reads those attributes from a headless browser.

use std::fmt::Write as _;

use super::charts;
use super::document::{self, Block, Span};
use super::format;
use super::model::Report;

/// Escapes text for HTML element content and double-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --soft: #f6f8fa; --good: #1a7f37; --bad: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1400px; padding: 24px 32px 48px; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", Helvetica, Arial, sans-serif; }
h1 { font-size: 26px; margin: 0 0 12px; }
h2 { font-size: 20px; margin: 32px 0 12px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 20px 0 8px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 12px; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
pre.cmd { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
code, pre { font: 12.5px/1.4 ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 4px 0 12px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
th { background: var(--soft); text-align: left; font-weight: 600; }
#summary table { font-size: 13px; }
#summary th { vertical-align: bottom; }
#summary td { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 700; }
ul.problems { padding-left: 20px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0 0 12px; }
.legend span.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 20px; }
figure { margin: 0; padding: 12px; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); }
figcaption { font-weight: 600; margin-bottom: 6px; }
svg { display: block; width: 100%; height: auto; max-width: 760px; }
svg text { font-family: inherit; fill: var(--fg); }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .axis { font-size: 12px; fill: var(--muted); }
svg .label { font-size: 12px; dominant-baseline: middle; }
svg .value { font-size: 10px; fill: var(--muted); }
svg .nodata { font-size: 16px; fill: var(--muted); }
svg .grid { stroke: #e6eaef; stroke-width: 1; }
svg .axisline { stroke: #8c959f; stroke-width: 1; }
svg .guide { stroke: #8c959f; stroke-width: 1; stroke-dasharray: 4 4; }
svg .frame { fill: var(--soft); stroke: var(--line); }
svg .line { fill: none; stroke-width: 2; stroke-linejoin: round; }
svg .mark:hover { opacity: 0.75; }
details.run { margin: 12px 0; border: 1px solid var(--line); border-radius: 8px; padding: 0 16px; }
details.run > summary { cursor: pointer; font-size: 17px; font-weight: 600; padding: 10px 0; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"#;

/// Counts the charts that hold drawn marks and records script errors, for the headless check.
const SCRIPT: &str = r#"
(function () {
  "use strict";
  window.addEventListener("error", function (e) {
    var b = document.body;
    b.dataset.jsErrors = String(Number(b.dataset.jsErrors || 0) + 1);
    b.dataset.jsErrorMessage = String(e.message);
  });
  var drawn = 0;
  var charts = document.querySelectorAll("svg[data-chart]");
  charts.forEach(function (svg) {
    var marks = svg.querySelectorAll(".mark").length;
    var ok = marks > 0 && svg.getBBox().width > 0;
    svg.dataset.drawn = ok ? "1" : "0";
    svg.dataset.marks = String(marks);
    if (ok) { drawn += 1; }
  });
  document.body.dataset.charts = String(charts.length);
  document.body.dataset.chartsDrawn = String(drawn);
})();
"#;

/// Renders inline spans as HTML.
fn line(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Code(t) => {
                let _ = write!(out, "<code>{}</code>", escape(t));
            }
            Span::Good(t) => {
                let _ = write!(out, "<span class=\"good\">{}</span>", escape(t));
            }
            Span::Bad(t) => {
                let _ = write!(out, "<span class=\"bad\">{}</span>", escape(t));
            }
        }
    }
    out
}

/// The start of a self-contained page, up to `<body>`: the title, the inline style, and a
/// Content-Security-Policy that lets nothing be fetched and inline scripts run only when `script`.
/// Every HTML page the tool writes starts here.
pub fn page_start(title: &str, script: bool) -> String {
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let script_src = if script { " script-src 'unsafe-inline';" } else { "" };
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline';{script_src} img-src data:\">"
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    out
}

/// Renders document blocks as HTML; each run becomes a `<details>` element (the first one open).
pub fn blocks(out: &mut String, blocks: &[Block]) {
    for block in blocks {
        match block {
            Block::Heading(level, title) => {
                let _ = writeln!(out, "<h{level}>{}</h{level}>", escape(title));
            }
            Block::RunStart(index, title) => {
                let open = if *index == 0 { " open" } else { "" };
                let _ = writeln!(out, "<details class=\"run\"{open}><summary>{}</summary>", escape(title));
            }
            Block::RunEnd => out.push_str("</details>\n"),
            Block::Paragraph(spans) => {
                let _ = writeln!(out, "<p>{}</p>", line(spans));
            }
            Block::Bullets(items) => {
                out.push_str("<ul>");
                for item in items {
                    let _ = write!(out, "<li>{}</li>", line(item));
                }
                out.push_str("</ul>\n");
            }
            Block::Table { headers, right, rows } => {
                out.push_str("<div class=\"scroll\"><table>");
                let class = |i: usize| if right[i] { " class=\"num\"" } else { "" };
                if headers.iter().any(|h| !h.is_empty()) {
                    out.push_str("<thead><tr>");
                    for (i, h) in headers.iter().enumerate() {
                        let _ = write!(out, "<th{}>{}</th>", class(i), escape(h));
                    }
                    out.push_str("</tr></thead>");
                }
                out.push_str("<tbody>");
                for row in rows {
                    out.push_str("<tr>");
                    for (i, c) in row.iter().enumerate() {
                        let _ = write!(out, "<td{}>{}</td>", class(i), line(c));
                    }
                    out.push_str("</tr>");
                }
                out.push_str("</tbody></table></div>\n");
            }
        }
    }
}

/// `report.html` for a whole report: header, summary and problems, the four charts (throughput
/// over time, attempt latency CDF, time per plugin, node CPU utilization), and one folding section
/// per run with the same tables as `report.md`.
pub fn html(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = match report.runs.as_slice() {
        [] => "schedperf report".to_string(),
        [one] => format!("schedperf report: {}", format::run_name(one)),
        runs => format!("schedperf report: {} runs", runs.len()),
    };
    out.push_str(&page_start(&title, true));

    out.push_str("<header><h1>schedperf report</h1><dl class=\"meta\">");
    let tool = &report.tool;
    let mut meta = |k: &str, v: String| {
        let _ = write!(out, "<dt>{k}</dt><dd>{v}</dd>");
    };
    meta("Tool", format!("{} {}", escape(&tool.name), escape(&tool.version)));
    meta("Commit", format!("<code>{}</code>", escape(&tool.git_commit)));
    let m = &report.machine;
    meta(
        "Machine",
        format!(
            "{}, {} cores, {} GiB memory, {}",
            escape(&m.cpu_model),
            m.cores,
            format::gib(m.memory_bytes),
            escape(&m.kernel)
        ),
    );
    meta("Created", escape(&format::utc(report.created_unix_seconds)));
    meta("Schema", format!("<code>{}</code>", escape(&report.schema_version)));
    let _ = writeln!(
        out,
        "</dl><div>Command:</div><pre class=\"cmd\">{}</pre></header>",
        escape(&format::command_line(&report.command_line))
    );

    out.push_str("<section id=\"summary\"><h2>Summary</h2>\n");
    if report.runs.is_empty() {
        out.push_str("<p>No runs.</p>\n");
    } else {
        blocks(&mut out, &[document::summary(report)]);
    }
    let problems = format::problems(report);
    if !problems.is_empty() {
        out.push_str("<ul class=\"problems\">");
        for p in &problems {
            let _ = write!(out, "<li class=\"bad\">{}</li>", escape(p));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"charts\"><h2>Charts</h2>\n<div class=\"legend\">");
    for (i, run) in report.runs.iter().enumerate() {
        let _ = write!(
            out,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
            charts::color(i),
            escape(&charts::run_label(i, run))
        );
    }
    out.push_str("</div>\n<div class=\"charts\">\n");
    let mut plugins_caption = "Time per plugin (top plugin and extension point pairs by total)".to_string();
    if report.runs.len() > charts::PLUGIN_RUNS {
        let _ = write!(plugins_caption, ", first {} runs", charts::PLUGIN_RUNS);
    }
    for (caption, svg) in [
        ("Throughput over time (pods/s per interval)".to_string(), charts::throughput(report)),
        ("Attempt latency distribution".to_string(), charts::latency(report)),
        (plugins_caption, charts::plugins(report)),
        ("Node CPU utilization (share of nodes per 5% bin)".to_string(), charts::utilization(report)),
    ] {
        let _ = writeln!(out, "<figure><figcaption>{}</figcaption>{svg}</figure>", escape(&caption));
    }
    out.push_str("</div>\n</section>\n");

    out.push_str("<section id=\"runs\"><h2>Runs</h2>\n");
    for (i, run) in report.runs.iter().enumerate() {
        blocks(&mut out, &document::run_section(i, run));
    }
    out.push_str("</section>\n");
    let _ = writeln!(
        out,
        "<footer>Written by {} {}. The full data, with every latency distribution as an HdrHistogram \
         (V2, base64) from which any percentile can be recomputed, is in report.json beside this file.</footer>",
        escape(&tool.name),
        escape(&tool.version)
    );
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    #[test]
    fn escaping() {
        let check = |input: &str, expected: &str| assert_eq!(escape(input), expected, "escape({input:?})");
        check("plain", "plain");
        check("<script>&\"x\"", "&lt;script&gt;&amp;&quot;x&quot;");
        check("it's", "it&#39;s");
    }

    #[test]
    fn page_is_self_contained() {
        let page = html(&sample_report());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.ends_with("</html>\n"));
        for forbidden in ["http://", "https://", "<link", " src=", "@import", "url(", "//cdn"] {
            assert!(!page.contains(forbidden), "page contains {forbidden:?}");
        }
        assert_eq!(page.matches("<script>").count(), 1, "one inline script");
        assert_eq!(page.matches("<style>").count(), 1, "one inline style sheet");
    }

    #[test]
    fn names_are_escaped_everywhere() {
        let page = html(&sample_report());
        // The workload `<script>&"x"` appears only escaped: in the summary, a legend, tooltips and the run title.
        assert!(!page.contains("<script>&"), "unescaped workload name");
        assert!(page.contains("SchedulingPodAffinity/&lt;script&gt;&amp;&quot;x&quot;"));
        assert!(
            page.contains("--label &#39;x &lt;y&gt; &amp; &#39;\\&#39;&#39;z&#39;\\&#39;&#39;&#39;"),
            "command line"
        );
    }

    #[test]
    fn page_has_every_chart_and_section() {
        let page = html(&sample_report());
        let check = |needle: &str, count: usize| assert_eq!(page.matches(needle).count(), count, "{needle:?}");
        for kind in ["throughput", "latency", "plugins", "utilization"] {
            check(&format!("<svg data-chart=\"{kind}\""), 1);
        }
        check("no data", 0);
        check("<details class=\"run\"", 2);
        check("<details class=\"run\" open>", 1);
        check("<h3>Latency</h3>", 2);
        check("<h3>Placement quality</h3>", 2);
        check("<h3>Counters and accounting</h3>", 2);
        check("<h3>CRI</h3>", 1);
        check("<span class=\"swatch\"", 2);
        check("<td><span class=\"bad\">FAIL</span></td>", 1);
        check("<td><span class=\"good\">PASS</span></td>", 1);
        check("<li class=\"bad\">LOST SchedulingPodAffinity", 1);
        check("<dt>Commit</dt><dd><code>892d690abcdef</code></dd>", 1);
        check("document.body.dataset.chartsDrawn", 1);
        // The facts table of each run has no (empty) header row.
        check("<table><tbody><tr><td>labels</td>", 2);
    }

    #[test]
    fn empty_report_renders_with_no_data_charts() {
        let mut report = sample_report();
        report.runs.clear();
        let page = html(&report);
        assert_eq!(page.matches(">no data</text>").count(), 4);
        assert!(page.contains("<p>No runs.</p>"));
        assert!(page.contains("<title>schedperf report</title>"));
    }
}
