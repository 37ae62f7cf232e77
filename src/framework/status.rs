//! Status codes and statuses, as kube-scheduler's framework defines them.

use std::fmt;

/// What a plugin's verdict means to the scheduler and the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Success,
    /// An internal error: the attempt fails and the pod is retried with backoff.
    Error,
    /// The pod does not fit now; preemption may help.
    Unschedulable,
    /// The pod does not fit and preemption cannot help on this node.
    UnschedulableAndUnresolvable,
    /// Permit: wait before binding.
    Wait,
    /// PreFilter/PreScore: this plugin has nothing to do for this pod.
    Skip,
    /// The pod waits for something outside the scheduler (a gate, a resource claim).
    Pending,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }

    pub fn is_rejection(self) -> bool {
        matches!(self, Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plugin's outcome with its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<String>,
    /// The plugin that produced it (empty for the framework itself).
    pub plugin: &'static str,
}

impl Status {
    pub fn success() -> Self {
        Status { code: Code::Success, reasons: Vec::new(), plugin: "" }
    }

    pub fn new(code: Code, reason: impl Into<String>) -> Self {
        Status { code, reasons: vec![reason.into()], plugin: "" }
    }

    pub fn skip() -> Self {
        Status { code: Code::Skip, reasons: Vec::new(), plugin: "" }
    }

    pub fn with_plugin(mut self, plugin: &'static str) -> Self {
        self.plugin = plugin;
        self
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }
}

/// A compact per-node rejection, written by filter kernels without allocating. The plugin turns
/// `detail` into reason strings only when someone asks (`Plugin::reasons`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub code: Code,
    /// Plugin-defined: which reasons apply (a bitmask or an index).
    pub detail: u64,
}

impl Reject {
    pub const fn unschedulable(detail: u64) -> Self {
        Reject { code: Code::Unschedulable, detail }
    }

    pub const fn unresolvable(detail: u64) -> Self {
        Reject { code: Code::UnschedulableAndUnresolvable, detail }
    }
}
