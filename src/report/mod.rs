//! Run reports: the `report.json` model and its renderings (terminal table, Markdown, HTML).

pub mod model;

pub use model::*;
