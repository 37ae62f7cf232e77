//! A client for `schedperf-oracle serve`: the real kube-scheduler behind a JSON-lines pipe.
//!
//! One request per line on the child's stdin, exactly one response line on its stdout. A child
//! that exits, closes its stdout or stays silent past the timeout is an [`OracleError`], never an
//! answer: the caller reports the case that did it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::Value;

/// Why the oracle gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("cannot start the oracle {bin}: {source}")]
    Spawn { bin: String, source: std::io::Error },
    #[error("the oracle exited or closed its output (it crashed?){stderr}")]
    Died { stderr: String },
    #[error("the oracle gave no answer within {0:?} (it hangs?)")]
    Timeout(Duration),
    #[error("the oracle answered with something that is not JSON: {0}")]
    Garbled(String),
    #[error("the oracle refused the request: {0}")]
    Refused(String),
}

/// A running `schedperf-oracle serve`.
pub struct Oracle {
    bin: PathBuf,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_path: PathBuf,
    timeout: Duration,
}

impl Oracle {
    /// Starts `BIN serve`. The child's stderr goes to a file beside the system temp dir so a crash
    /// can be reported with its last lines.
    pub fn start(bin: &Path, timeout: Duration) -> Result<Self, OracleError> {
        Self::start_cmd(bin, "serve", timeout)
    }

    /// Starts `BIN <command>`, a JSON-lines command (`serve`, `queue`).
    pub fn start_cmd(bin: &Path, command: &str, timeout: Duration) -> Result<Self, OracleError> {
        let stderr_path = std::env::temp_dir().join(format!("schedperf-oracle-{}.stderr", std::process::id()));
        let stderr_file = std::fs::File::create(&stderr_path)
            .map_err(|e| OracleError::Spawn { bin: bin.display().to_string(), source: e })?;
        let mut child = Command::new(bin)
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr_file))
            .spawn()
            .map_err(|e| OracleError::Spawn { bin: bin.display().to_string(), source: e })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Oracle { bin: bin.to_path_buf(), child, stdin, lines, stderr_path, timeout })
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// Sends one request and waits for its answer. `{"error": ...}` answers are [`OracleError::Refused`].
    pub fn call(&mut self, request: &Value) -> Result<Value, OracleError> {
        let mut line = serde_json::to_string(request).expect("a JSON value serializes");
        line.push('\n');
        if self.stdin.write_all(line.as_bytes()).and_then(|_| self.stdin.flush()).is_err() {
            return Err(self.died());
        }
        match self.lines.recv_timeout(self.timeout) {
            Ok(answer) => {
                let v: Value = serde_json::from_str(&answer).map_err(|_| OracleError::Garbled(truncate(&answer)))?;
                match v.get("error").and_then(Value::as_str) {
                    Some(e) => Err(OracleError::Refused(e.to_string())),
                    None => Ok(v),
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                Err(OracleError::Timeout(self.timeout))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.died()),
        }
    }

    fn died(&mut self) -> OracleError {
        let _ = self.child.wait();
        let tail = std::fs::read_to_string(&self.stderr_path)
            .map(|s| s.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        OracleError::Died {
            stderr: if tail.is_empty() { String::new() } else { format!("; its stderr ends:\n{tail}") },
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr_path);
    }
}

fn truncate(s: &str) -> String {
    if s.len() <= 200 {
        s.to_string()
    } else {
        format!("{}...", &s[..s.char_indices().take_while(|(i, _)| *i < 200).last().map_or(0, |(i, _)| i)])
    }
}
