//! Run reports: the `report.json` model and its renderings (terminal table, Markdown, HTML).
//!
//! Every renderer is a pure function of [`Report`]; [`write_outputs`] writes the three files.

pub mod charts;
pub mod document;
pub mod format;
pub mod histogram;
pub mod html;
pub mod markdown;
pub mod model;
#[cfg(test)]
pub(crate) mod sample;
pub mod table;
#[cfg(test)]
mod tests;

use std::fs;
use std::io;
use std::path::Path;

pub use html::html;
pub use markdown::markdown;
pub use model::*;
pub use table::summary_table;

/// Writes `report.json` (pretty-printed), `report.md` and `report.html` into `dir`, creating it.
pub fn write_outputs(report: &Report, dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut json = serde_json::to_string_pretty(report).map_err(io::Error::other)?;
    json.push('\n');
    fs::write(dir.join("report.json"), json)?;
    fs::write(dir.join("report.md"), markdown(report))?;
    fs::write(dir.join("report.html"), html(report))?;
    Ok(())
}
