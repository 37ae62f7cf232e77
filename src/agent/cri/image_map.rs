//! Maps the images a workload names to images present in the runtime (a benchmark never pulls).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::InputError;

/// The name of the catch-all entry: `*=localhost/x:1` maps every image without its own entry.
pub const CATCH_ALL: &str = "*";

/// Image substitutions, `FROM -> TO`, applied before any CRI call.
///
/// Entries come from `--cri-image-map` values (`FROM=TO`, several separated by commas) or from a
/// file with one `FROM -> TO` per line (`#` starts a comment). The entry `*` maps every image that
/// has no entry of its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageMap {
    entries: BTreeMap<String, String>,
}

impl ImageMap {
    /// An empty map: every image stands for itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the values of repeated `--cri-image-map` flags. A value is a comma-separated list of
    /// `FROM=TO` entries, or (when it holds no `=`) the path of a map file.
    pub fn from_flag_values(values: &[String]) -> Result<ImageMap, InputError> {
        let mut map = ImageMap::new();
        for value in values {
            if value.contains('=') {
                for (i, entry) in value.split(',').enumerate() {
                    let entry = entry.trim();
                    if entry.is_empty() {
                        continue;
                    }
                    let Some((from, to)) = entry.split_once('=') else {
                        return Err(InputError::new(
                            "--cri-image-map",
                            format!("[{i}]"),
                            format!("{entry:?} is not FROM=TO"),
                        ));
                    };
                    map.insert("--cri-image-map", &format!("[{i}]"), from, to)?;
                }
            } else {
                let file = ImageMap::from_file(Path::new(value))?;
                for (from, to) in file.entries {
                    map.insert(value, "", &from, &to)?;
                }
            }
        }
        Ok(map)
    }

    /// Reads a map file: one `FROM -> TO` per line, blank lines and `#` comments ignored.
    pub fn from_file(path: &Path) -> Result<ImageMap, InputError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&name, "", format!("cannot read the image map: {e}")))?;
        ImageMap::parse_file_text(&name, &text)
    }

    /// Parses the text of a map file; `file` names it in errors.
    pub fn parse_file_text(file: &str, text: &str) -> Result<ImageMap, InputError> {
        let mut map = ImageMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let field = format!("line {}", i + 1);
            let Some((from, to)) = line.split_once("->") else {
                return Err(InputError::new(
                    file,
                    field,
                    format!("{line:?} is not `FROM -> TO`"),
                ));
            };
            map.insert(file, &field, from, to)?;
        }
        Ok(map)
    }

    fn insert(&mut self, file: &str, field: &str, from: &str, to: &str) -> Result<(), InputError> {
        let (from, to) = (from.trim(), to.trim());
        for (what, image) in [("FROM", from), ("TO", to)] {
            if image.is_empty() {
                return Err(InputError::new(
                    file,
                    field,
                    format!("{what} image is empty"),
                ));
            }
            if image.chars().any(char::is_whitespace) {
                return Err(InputError::new(
                    file,
                    field,
                    format!("{what} image {image:?} contains whitespace"),
                ));
            }
        }
        if to == CATCH_ALL {
            return Err(InputError::new(
                file,
                field,
                "TO cannot be `*`; name an image present in the runtime",
            ));
        }
        if let Some(old) = self.entries.get(from) {
            if old != to {
                return Err(InputError::new(
                    file,
                    field,
                    format!("{from} is mapped twice: to {old} and to {to}"),
                ));
            }
        }
        self.entries.insert(from.to_string(), to.to_string());
        Ok(())
    }

    /// Adds one entry (for programmatic use); the same checks as the parsers.
    pub fn with(mut self, from: &str, to: &str) -> Result<ImageMap, InputError> {
        self.insert("image map", "", from, to)?;
        Ok(self)
    }

    /// The image the runtime runs for `image`: its own entry, else the `*` entry, else itself.
    pub fn resolve<'a>(&'a self, image: &'a str) -> &'a str {
        self.entries
            .get(image)
            .or_else(|| self.entries.get(CATCH_ALL))
            .map_or(image, String::as_str)
    }

    /// Whether `image` has an entry (its own or the catch-all).
    pub fn is_mapped(&self, image: &str) -> bool {
        self.entries.contains_key(image) || self.entries.contains_key(CATCH_ALL)
    }

    /// The entries, `(FROM, TO)`, sorted by `FROM`.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(f, t)| (f.as_str(), t.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
