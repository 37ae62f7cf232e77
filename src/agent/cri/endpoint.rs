//! CRI endpoints: `unix:///path/to.sock`, `tcp://host:port`, or a bare absolute socket path.

use std::fmt;
use std::path::PathBuf;

use crate::agent::AgentError;

/// Where a CRI runtime listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CriEndpoint {
    /// A unix domain socket (`unix:///run/containerd/containerd.sock`).
    Unix(PathBuf),
    /// A plain-text HTTP/2 endpoint (`tcp://127.0.0.1:10010`), as `host:port`.
    Tcp(String),
}

impl CriEndpoint {
    /// Parses an endpoint as kubelet's `--container-runtime-endpoint` spells it.
    ///
    /// Accepted: `unix:///abs/path`, `unix:/abs/path`, `/abs/path` and `tcp://host:port`.
    pub fn parse(text: &str) -> Result<CriEndpoint, AgentError> {
        let bad = |why: &str| {
            AgentError(format!(
                "CRI endpoint {text:?}: {why} (expected unix:///path/to.sock, tcp://host:port or /path/to.sock)"
            ))
        };
        let text_trimmed = text.trim();
        if let Some(rest) = text_trimmed
            .strip_prefix("unix://")
            .or_else(|| text_trimmed.strip_prefix("unix:"))
        {
            if !rest.starts_with('/') {
                return Err(bad("the socket path must be absolute"));
            }
            return Ok(CriEndpoint::Unix(PathBuf::from(rest)));
        }
        if let Some(rest) = text_trimmed.strip_prefix("tcp://") {
            let rest = rest.trim_end_matches('/');
            let (host, port) = match rest.rsplit_once(':') {
                Some(hp) => hp,
                None => return Err(bad("a tcp endpoint needs a port")),
            };
            if host.is_empty() || host.contains('/') {
                return Err(bad("a tcp endpoint needs a host"));
            }
            if port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(bad("the port must be a number from 1 to 65535"));
            }
            return Ok(CriEndpoint::Tcp(rest.to_string()));
        }
        if text_trimmed.starts_with('/') {
            return Ok(CriEndpoint::Unix(PathBuf::from(text_trimmed)));
        }
        if text_trimmed.is_empty() {
            return Err(bad("empty"));
        }
        Err(bad("unknown scheme"))
    }

    /// The URI tonic connects to.
    pub fn uri(&self) -> String {
        match self {
            CriEndpoint::Unix(path) => format!("unix://{}", path.display()),
            CriEndpoint::Tcp(host_port) => format!("http://{host_port}"),
        }
    }
}

impl fmt::Display for CriEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CriEndpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            CriEndpoint::Tcp(host_port) => write!(f, "tcp://{host_port}"),
        }
    }
}

/// Picks the endpoint that runs the pods of `node`: a stable hash (64-bit FNV-1a) of the node name,
/// modulo `endpoints` (which must be at least 1). The same node always lands on the same runtime,
/// in every run.
pub fn endpoint_for_node(node: &str, endpoints: usize) -> usize {
    assert!(endpoints > 0, "a CRI agent has at least one endpoint");
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = node.bytes().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    });
    (hash % endpoints as u64) as usize
}
