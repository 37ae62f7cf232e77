//! Run reports: the `report.json` model and its renderings (terminal table, Markdown, HTML).
//!
//! Every renderer is a pure function of [`Report`]; [`write_outputs`] writes the three files.

pub mod charts;
pub mod document;
pub mod format;
pub mod header;
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

use crate::error::InputError;

/// The histogram wire format lives with the measuring side; reports read it through this name.
pub use crate::metrics::encoding as histogram;
pub use format::runtime_failed;
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

/// Parses a `report.json` text (`file` names it in errors): the schema version must be
/// [`SCHEMA_VERSION`], and a field of the wrong shape is reported with its path (`runs[0].seed`).
pub fn parse(text: &str, file: &str) -> Result<Report, InputError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| InputError::new(file, "", format!("expected JSON: {e}")))?;
    match value.get("schemaVersion").and_then(|v| v.as_str()) {
        Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(InputError::new(
                file,
                "schemaVersion",
                format!("expected {SCHEMA_VERSION:?}, found {other:?} (written by another schedperf version?)"),
            ))
        }
        None => return Err(InputError::new(file, "schemaVersion", format!("expected the string {SCHEMA_VERSION:?}"))),
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        InputError::new(file, path, e.into_inner().to_string())
    })
}

/// Reads and parses a `report.json` file (see [`parse`]).
pub fn read(path: &Path) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let text = fs::read_to_string(path).map_err(|e| InputError::new(&file, "", format!("cannot read: {e}")))?;
    parse(&text, &file)
}
