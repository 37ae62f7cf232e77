//! Input errors, runtime failures and the exit codes of every command.
//!
//! Library code returns [`InputError`] for anything a user wrote wrong (every message names the
//! file, the field path and what was expected); `main` turns it into exit code 2. A failure of the
//! machinery a command drives (a CRI runtime that died, a child process that crashed) is an
//! [`Error::Runtime`], exit 4. Broken internal invariants are `assert!`s, never errors.

use std::fmt;

/// The exit codes of every `schedperf` command (README, "Exit codes"; `schedperf --help`).
pub mod exit {
    /// Everything ran, and every threshold, gate and check passed.
    pub const OK: u8 = 0;
    /// An outcome failed: a threshold, a gate, a verification, a workload upstream's harness
    /// would fail (pods never scheduled).
    pub const FAILED: u8 = 1;
    /// Bad input: a file, a field or a flag; the message names it and what was expected.
    pub const BAD_INPUT: u8 = 2;
    /// A gate cell too noisy to judge, under `--fail-on-noisy`.
    pub const NOISY: u8 = 3;
    /// A runtime failure: a CRI runtime died or real pods failed on it, or a child process (a
    /// repetition, a run of `compare`/`ab`/`calibrate`, valgrind, the oracle) crashed or hung.
    pub const RUNTIME: u8 = 4;
    /// The list as `--help` prints it.
    pub const HELP: &str = "Exit codes: 0 ok, 1 a threshold, gate or outcome failed, 2 bad input, \
                            3 a noisy gate under --fail-on-noisy, 4 a runtime failure (a dead \
                            runtime, real pods that failed on it, a crashed child process; `verify` \
                            reports a crashed or hung oracle as 1).";
}

/// What ends a command early: bad input (exit 2) or a runtime failure (exit 4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Input(#[from] InputError),
    /// What failed and how (a runtime that went away, a child's exit status and stderr).
    #[error("runtime failure: {0}")]
    Runtime(String),
}

impl Error {
    /// The exit code this error ends the command with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => exit::BAD_INPUT,
            Error::Runtime(_) => exit::RUNTIME,
        }
    }
}

/// The error of a child process that exited with `status` (and said `stderr`): its own exit code
/// when it reported bad input (2), a runtime failure otherwise (a crash, a signal, exit 4).
/// `what` names the child (`repetition 3`).
pub fn child_failure(what: &str, status: std::process::ExitStatus, stderr: &str) -> Error {
    let stderr = stderr.trim();
    match status.code() {
        Some(c) if c == i32::from(exit::BAD_INPUT) => {
            Error::Input(InputError::new(what, "", format!("bad input ({status}): {stderr}")))
        }
        _ => Error::Runtime(format!("{what} failed ({status}): {stderr}")),
    }
}

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
        let e =
            InputError::new("cluster.yaml", "cpu", "\"4x\" is not a quantity").within("items[3].status.allocatable");
        assert_eq!(e.to_string(), "cluster.yaml: items[3].status.allocatable.cpu: \"4x\" is not a quantity");
        let e = InputError::new("c.yaml", "", "empty document");
        assert_eq!(e.to_string(), "c.yaml: empty document");
        let e = InputError::new("c.yaml", "[2].name", "x").within("items");
        assert_eq!(e.path, "items[2].name");
    }
}

#[cfg(test)]
mod child_tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_child_is_bad_input_only_when_it_says_so() {
        // Wait statuses: exit code c is c << 8; a signal is its number.
        for (raw, code) in
            [(2 << 8, exit::BAD_INPUT), (4 << 8, exit::RUNTIME), (1 << 8, exit::RUNTIME), (9, exit::RUNTIME)]
        {
            let e = child_failure("repetition 1", std::process::ExitStatus::from_raw(raw), "why\n");
            assert_eq!(e.exit_code(), code, "{raw}: {e}");
            assert!(e.to_string().contains("repetition 1") && e.to_string().contains("why"), "{e}");
        }
    }
}
