//! Input errors: every message names the file, the field path and what was expected.
//!
//! Library code returns [`InputError`] for anything a user wrote wrong; `main` turns it into exit
//! code 2. Broken internal invariants are `assert!`s, never `InputError`s.

use std::fmt;

/// A problem with user input (a manifest, a scheduler config, a workload file, a flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file the input came from (or a pseudo-name such as `--seed`).
    pub file: String,
    /// The field path inside the file, as `items[3].status.allocatable.cpu`; empty for the whole file.
    pub path: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl InputError {
    pub fn new(file: impl Into<String>, path: impl Into<String>, message: impl Into<String>) -> Self {
        InputError { file: file.into(), path: path.into(), message: message.into() }
    }

    /// Prefixes the field path with `prefix` (as `items[3]`), for errors raised by a nested parser.
    pub fn within(mut self, prefix: &str) -> Self {
        self.path = match (prefix.is_empty(), self.path.is_empty()) {
            (true, _) => self.path,
            (false, true) => prefix.to_string(),
            (false, false) if self.path.starts_with('[') => format!("{prefix}{}", self.path),
            (false, false) => format!("{prefix}.{}", self.path),
        };
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_path_and_message() {
        let e = InputError::new("cluster.yaml", "cpu", "\"4x\" is not a quantity").within("items[3].status.allocatable");
        assert_eq!(e.to_string(), "cluster.yaml: items[3].status.allocatable.cpu: \"4x\" is not a quantity");
        let e = InputError::new("c.yaml", "", "empty document");
        assert_eq!(e.to_string(), "c.yaml: empty document");
        let e = InputError::new("c.yaml", "[2].name", "x").within("items");
        assert_eq!(e.path, "items[2].name");
    }
}
