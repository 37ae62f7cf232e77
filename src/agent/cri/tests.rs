//! Tests of the CRI agent. The unit tests need no runtime. The tests marked `#[ignore]` need a real
//! CRI endpoint and fail (not pass) when `CRI_ENDPOINT` / `CRI_TEST_IMAGE` are missing:
//!
//! ```text
//! eval "$(scripts/cri-env.sh /tmp/cri up)"
//! cargo test --lib agent::cri -- --include-ignored
//! scripts/cri-env.sh /tmp/cri down
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::client::{describe_status, CriTimeouts, Rpc};
use super::lifecycle::{hostname_for, sandbox_config};
use super::proto as cri;
use super::stats::{Stage, StatsRecorder};
use super::*;
use crate::agent::{AgentEvent, AgentEventKind, AgentPod, ContainerSpec, NodeAgent, PodUid};
use crate::clock::WallClock;
use crate::error::InputError;

// ---------------------------------------------------------------------------------------------
// Unit tests: no runtime needed.
// ---------------------------------------------------------------------------------------------

#[test]
fn endpoint_parse_accepts_kubelet_spellings_and_rejects_the_rest() {
    fn check(input: &str, expected: Result<CriEndpoint, &str>) {
        let got = CriEndpoint::parse(input);
        match (got, expected) {
            (Ok(g), Ok(e)) => assert_eq!(g, e, "{input}"),
            (Err(g), Err(fragment)) => {
                assert!(g.0.contains(fragment), "{input}: error {:?} lacks {fragment:?}", g.0);
                assert!(g.0.contains(&format!("{input:?}")), "{input}: error {:?} does not name the endpoint", g.0);
            }
            (g, e) => panic!("{input}: got {g:?}, expected {e:?}"),
        }
    }
    let unix = |p: &str| Ok(CriEndpoint::Unix(p.into()));
    check("unix:///run/containerd/containerd.sock", unix("/run/containerd/containerd.sock"));
    check("unix:/tmp/cri/containerd.sock", unix("/tmp/cri/containerd.sock"));
    check("/var/run/crio/crio.sock", unix("/var/run/crio/crio.sock"));
    check(" unix:///x.sock ", unix("/x.sock"));
    check("tcp://127.0.0.1:10010", Ok(CriEndpoint::Tcp("127.0.0.1:10010".into())));
    check("tcp://localhost:1/", Ok(CriEndpoint::Tcp("localhost:1".into())));
    check("tcp://[::1]:10010", Ok(CriEndpoint::Tcp("[::1]:10010".into())));
    check("unix://relative.sock", Err("absolute"));
    check("tcp://127.0.0.1", Err("port"));
    check("tcp://127.0.0.1:0", Err("port"));
    check("tcp://127.0.0.1:99999", Err("port"));
    check("tcp://:80", Err("host"));
    check("http://127.0.0.1:80", Err("unknown scheme"));
    check("containerd.sock", Err("unknown scheme"));
    check("", Err("empty"));
}

#[test]
fn endpoint_uri_and_display() {
    let cases = [
        ("unix:///a/b.sock", "unix:///a/b.sock", "unix:///a/b.sock"),
        ("/a/b.sock", "unix:///a/b.sock", "unix:///a/b.sock"),
        ("tcp://10.0.0.1:5000", "http://10.0.0.1:5000", "tcp://10.0.0.1:5000"),
    ];
    for (input, uri, shown) in cases {
        let e = CriEndpoint::parse(input).unwrap();
        assert_eq!((e.uri().as_str(), e.to_string().as_str()), (uri, shown), "{input}");
    }
}

#[test]
fn endpoint_for_node_is_stable_in_range_and_spreads() {
    // FNV-1a 64 of "" is the offset basis; of "a" it is 0xaf63dc4c8601ec8c (published test vectors).
    assert_eq!(endpoint_for_node("", 1), 0);
    assert_eq!(endpoint_for_node("a", 1 << 20), (0xaf63_dc4c_8601_ec8c_u64 % (1 << 20)) as usize);
    assert_eq!(endpoint_for_node("", 7), (0xcbf2_9ce4_8422_2325_u64 % 7) as usize);
    let mut counts = [0usize; 3];
    for i in 0..3000 {
        let node = format!("node-{i}");
        let e = endpoint_for_node(&node, 3);
        assert_eq!(e, endpoint_for_node(&node, 3), "stable");
        counts[e] += 1;
    }
    for c in counts {
        assert!((800..1200).contains(&c), "uneven spread: {counts:?}");
    }
}

/// Expected map entries, `(FROM, TO)`.
type Entries<'a> = &'a [(&'a str, &'a str)];

#[test]
fn image_map_from_flag_values() {
    fn check(values: &[&str], expected: Result<Entries, (&str, &str, &str)>) {
        let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        let got = ImageMap::from_flag_values(&values);
        match (got, expected) {
            (Ok(map), Ok(entries)) => {
                let got: Vec<(&str, &str)> = map.entries().collect();
                assert_eq!(got, entries, "{values:?}");
            }
            (Err(e), Err((file, path, fragment))) => {
                assert_eq!((e.file.as_str(), e.path.as_str()), (file, path), "{values:?}: {e}");
                assert!(e.message.contains(fragment), "{values:?}: {e} lacks {fragment:?}");
            }
            (g, e) => panic!("{values:?}: got {g:?}, expected {e:?}"),
        }
    }
    check(
        &["registry.k8s.io/pause:3.9=localhost/cri-probe/pause:1.0"],
        Ok(&[("registry.k8s.io/pause:3.9", "localhost/cri-probe/pause:1.0")]),
    );
    check(&["a:1=b:1, c:2 = d:2", "e=f"], Ok(&[("a:1", "b:1"), ("c:2", "d:2"), ("e", "f")]));
    check(&["*=localhost/x:1", "a=b"], Ok(&[("*", "localhost/x:1"), ("a", "b")]));
    check(&["a=b", "a=b"], Ok(&[("a", "b")]));
    check(&["a=b,"], Ok(&[("a", "b")]));
    check(&["a=b,c"], Err(("--cri-image-map", "[1]", "not FROM=TO")));
    check(&["=b"], Err(("--cri-image-map", "[0]", "FROM image is empty")));
    check(&["a="], Err(("--cri-image-map", "[0]", "TO image is empty")));
    check(&["a=b", "a=c"], Err(("--cri-image-map", "[0]", "mapped twice")));
    check(&["a=*"], Err(("--cri-image-map", "[0]", "TO cannot be `*`")));
    check(&["a b=c"], Err(("--cri-image-map", "[0]", "whitespace")));
    check(&["/nonexistent/image-map.txt"], Err(("/nonexistent/image-map.txt", "", "cannot read")));
}

#[test]
fn image_map_file_text() {
    fn check(text: &str, expected: Result<&[(&str, &str)], (&str, &str)>) {
        match (ImageMap::parse_file_text("map.txt", text), expected) {
            (Ok(map), Ok(entries)) => {
                assert_eq!(map.entries().collect::<Vec<_>>(), entries, "{text:?}")
            }
            (Err(InputError { file, path, message }), Err((p, fragment))) => {
                assert_eq!((file.as_str(), path.as_str()), ("map.txt", p), "{text:?}");
                assert!(message.contains(fragment), "{text:?}: {message}");
            }
            (g, e) => panic!("{text:?}: got {g:?}, expected {e:?}"),
        }
    }
    check("", Ok(&[]));
    check("# only a comment\n\n", Ok(&[]));
    check("a:1 -> b:1\n  c -> d  # trailing comment\n", Ok(&[("a:1", "b:1"), ("c", "d")]));
    check("a -> b\nnot a mapping\n", Err(("line 2", "is not `FROM -> TO`")));
    check("a ->\n", Err(("line 1", "TO image is empty")));
    check("a -> b\n\na -> c\n", Err(("line 3", "mapped twice")));
}

#[test]
fn image_map_file_on_disk_through_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("images.map");
    std::fs::write(&path, "registry.k8s.io/pause:3.9 -> localhost/schedperf/pause:1.0\n").unwrap();
    let map = ImageMap::from_flag_values(&[path.display().to_string(), "x=y".to_string()]).unwrap();
    assert_eq!(map.resolve("registry.k8s.io/pause:3.9"), "localhost/schedperf/pause:1.0");
    assert_eq!(map.resolve("x"), "y");
    let broken = dir.path().join("broken.map");
    std::fs::write(&broken, "a => b\n").unwrap();
    let e = ImageMap::from_flag_values(&[broken.display().to_string()]).unwrap_err();
    assert_eq!((e.file, e.path), (broken.display().to_string(), "line 1".to_string()));
}

#[test]
fn image_map_resolve_and_is_mapped() {
    let plain = ImageMap::new().with("a", "A").unwrap();
    let catch_all = plain.clone().with("*", "Z").unwrap();
    let cases = [
        (&plain, "a", "A", true),
        (&plain, "b", "b", false),
        (&catch_all, "a", "A", true),
        (&catch_all, "b", "Z", true),
        (&catch_all, "*", "Z", true),
    ];
    for (map, image, resolved, mapped) in cases {
        assert_eq!((map.resolve(image), map.is_mapped(image)), (resolved, mapped), "{image} in {map:?}");
    }
}

#[test]
fn describe_status_keeps_code_message_and_source_chain() {
    #[derive(Debug)]
    struct Os;
    impl std::fmt::Display for Os {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("No such file or directory (os error 2)")
        }
    }
    impl std::error::Error for Os {}
    #[derive(Debug)]
    struct Connect(Os);
    impl std::fmt::Display for Connect {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("ConnectError")
        }
    }
    impl std::error::Error for Connect {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    let mut transport = tonic::Status::unavailable("transport error");
    transport.set_source(Arc::new(Connect(Os)));
    let cases = [
        (
            tonic::Status::not_found("failed to resolve image \"localhost/x:1\": not found"),
            "failed to resolve image \"localhost/x:1\": not found",
        ),
        (tonic::Status::new(tonic::Code::DeadlineExceeded, ""), "Deadline expired before operation could complete"),
        (transport, "transport error: ConnectError: No such file or directory (os error 2)"),
    ];
    for (status, expected) in cases {
        assert_eq!(describe_status(&status), expected);
    }
}

#[test]
fn call_errors_name_rpc_endpoint_and_code() {
    let e = CriCallError {
        rpc: Rpc::CreateContainer,
        endpoint: "unix:///tmp/cri/containerd.sock".to_string(),
        code: tonic::Code::NotFound,
        message: "failed to resolve image \"localhost/x:1\": not found".to_string(),
    };
    let text = e.to_string();
    assert_eq!(
        text,
        "CreateContainer on unix:///tmp/cri/containerd.sock: NotFound: failed to resolve image \"localhost/x:1\": not found"
    );
    assert_eq!(AgentError::from(e).0, text);
}

#[test]
fn stats_count_calls_by_rpc_and_errors_by_code() {
    let rec = StatsRecorder::default();
    rec.record_call(Rpc::RunPodSandbox, Duration::from_millis(40), None);
    rec.record_call(Rpc::RunPodSandbox, Duration::from_millis(60), Some(tonic::Code::Unknown));
    rec.record_call(Rpc::StopPodSandbox, Duration::from_micros(0), Some(tonic::Code::NotFound));
    rec.record_call(Rpc::ContainerStatus, Duration::from_millis(1), Some(tonic::Code::Unavailable));
    rec.record_call(Rpc::CreateContainer, Duration::from_secs(3600), Some(tonic::Code::Unavailable));
    let s = rec.snapshot();
    let counts: Vec<(&str, u64)> = s.call_micros.iter().map(|(k, h)| (k.as_str(), h.len())).collect();
    assert_eq!(counts, [("ContainerStatus", 1), ("CreateContainer", 1), ("RunPodSandbox", 2), ("StopPodSandbox", 1)]);
    let run = &s.call_micros["RunPodSandbox"];
    assert!((39_900..=40_100).contains(&run.min()) && (59_900..=60_100).contains(&run.max()), "{run:?}");
    assert!(s.call_micros["CreateContainer"].max() >= HISTOGRAM_MAX_US - HISTOGRAM_MAX_US / 100, "clamped");
    let by_code: Vec<(&str, u64)> = s.errors_by_code.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(by_code, [("NotFound", 1), ("Unavailable", 2), ("Unknown", 1)]);
    assert_eq!(s.errors_by_rpc["RunPodSandbox/Unknown"], 1);
    assert_eq!(s.errors_by_rpc["CreateContainer/Unavailable"], 1);
}

#[test]
fn stats_pod_stages_are_relative_to_bind() {
    let rec = StatsRecorder::default();
    let uid = PodUid(7);
    rec.pod_stage(uid, Stage::Running, 5); // unknown pod: ignored
    rec.pod_bound(uid, 1, 1_000_000);
    rec.pod_stage(uid, Stage::SandboxReady, 41_000_000);
    rec.pod_stage(uid, Stage::ContainersStarted, 81_000_000);
    rec.pod_stage(uid, Stage::Running, 82_500_000);
    let s = rec.snapshot();
    let t = &s.pods[&uid];
    assert_eq!(
        (t.endpoint, t.sandbox_ready_us, t.containers_started_us, t.running_us, t.failed_us),
        (1, Some(40_000), Some(80_000), Some(81_500), None)
    );
    assert_eq!(s.pod_running_micros.len(), 1);
    assert_eq!(s.pods.len(), 1);
}

#[test]
fn timeouts_by_rpc() {
    let t = CriTimeouts::default();
    let cases = [
        (Rpc::RunPodSandbox, 30),
        (Rpc::CreateContainer, 30),
        (Rpc::StartContainer, 30),
        (Rpc::StopContainer, 10),
        (Rpc::ContainerStatus, 10),
        (Rpc::ListPodSandbox, 10),
        (Rpc::ImageStatus, 10),
    ];
    for (rpc, secs) in cases {
        assert_eq!(t.for_rpc(rpc), Duration::from_secs(secs), "{rpc}");
    }
}

#[test]
fn bare_shell_images_are_recognised_from_verbose_image_status() {
    fn info(config: &str) -> HashMap<String, String> {
        HashMap::from([(
            "info".to_string(),
            format!(r#"{{"chainID":"sha256:x","imageSpec":{{"architecture":"amd64","config":{config}}}}}"#),
        )])
    }
    let cases = [
        (info(r#"{"Entrypoint":null,"Cmd":["/bin/sh"]}"#), true),
        (info(r#"{"Cmd":["sh"]}"#), true),
        (info(r#"{"Entrypoint":[],"Cmd":["/bin/bash"]}"#), true),
        (info(r#"{"Entrypoint":["/pause"],"Cmd":null}"#), false),
        (info(r#"{"Entrypoint":["/bin/sh"],"Cmd":["-c","sleep 1"]}"#), false),
        (info(r#"{"Cmd":["/bin/sh","-c","sleep 9"]}"#), false),
        (info(r#"{"Cmd":["nginx"]}"#), false),
        (HashMap::from([("info".to_string(), "not json".to_string())]), false),
        (HashMap::new(), false),
    ];
    for (i, (info, expected)) in cases.into_iter().enumerate() {
        assert_eq!(image_runs_bare_shell(&info), expected, "case {i}: {info:?}");
    }
}

#[test]
fn hostnames_are_dns_labels() {
    let long = "x".repeat(70);
    let cases = [("web-1", "web-1"), (long.as_str(), &long[..63]), ("a-", "a"), ("pod.", "pod")];
    for (name, expected) in cases {
        assert_eq!(hostname_for(name), expected);
    }
}

fn test_pod(uid: u64, image: &str, host_network: bool) -> AgentPod {
    AgentPod {
        uid: PodUid(uid),
        namespace: "schedperf-test".into(),
        name: format!("p{uid}").into(),
        node: format!("node-{}", uid % 4).into(),
        labels: Arc::new(BTreeMap::from([("app".to_string(), "bench".to_string())])),
        host_network,
        init_containers: Arc::from([]),
        containers: Arc::from([container("main", image, &[])]),
    }
}

fn container(name: &str, image: &str, command: &[&str]) -> ContainerSpec {
    ContainerSpec {
        name: name.to_string(),
        image: image.to_string(),
        command: command.iter().map(|s| s.to_string()).collect(),
        args: Vec::new(),
        sidecar: false,
    }
}

#[test]
fn sandbox_config_follows_the_pod() {
    let mut cfg = CriConfig::new(vec!["unix:///x.sock".to_string()]);
    cfg.run_id = "sp-1-2".to_string();
    cfg.log_root = "/logs".into();
    for host_network in [false, true] {
        let pod = test_pod(42, "img", host_network);
        let c = sandbox_config(&cfg, &pod);
        let m = c.metadata.as_ref().unwrap();
        assert_eq!(
            (m.name.as_str(), m.namespace.as_str(), m.uid.as_str(), m.attempt),
            ("p42", "schedperf-test", "sp-1-2-pod-0000002a", 0)
        );
        assert_eq!(c.log_directory, "/logs/sp-1-2/schedperf-test_p42_pod-0000002a");
        assert_eq!(c.labels[LABEL_RUN_ID], "sp-1-2");
        assert_eq!(c.labels[LABEL_POD_UID], "pod-0000002a");
        assert_eq!(c.labels["app"], "bench");
        let ns = c.linux.unwrap().security_context.unwrap().namespace_options.unwrap();
        let (mode, hostname) =
            if host_network { (cri::NamespaceMode::Node, "") } else { (cri::NamespaceMode::Pod, "p42") };
        assert_eq!((ns.network, c.hostname.as_str()), (mode as i32, hostname), "host_network={host_network}");
    }
}

#[test]
fn default_run_ids_name_the_process() {
    let id = default_run_id();
    assert!(id.starts_with("sp-") && id.ends_with(&format!("-{}", std::process::id())), "{id}");
}

#[test]
fn check_report_verdict_and_text() {
    let cond = |kind: &str, ready: bool| RuntimeConditionReport {
        kind: kind.to_string(),
        ready,
        reason: if ready { String::new() } else { "NetworkPluginNotReady".to_string() },
        message: String::new(),
    };
    let smoke = SmokeTest {
        image: "localhost/schedperf/busybox:1.0".to_string(),
        host_network: false,
        run_pod_sandbox_us: 37_700,
        create_container_us: 4_800,
        start_container_us: 32_400,
        running_us: 75_500,
        teardown_us: 54_000,
    };
    let good = CheckReport {
        endpoint: "unix:///tmp/cri/containerd.sock".to_string(),
        runtime: "containerd 1.6.20~ds1 (CRI v1)".to_string(),
        conditions: vec![cond("RuntimeReady", true), cond("NetworkReady", true)],
        images: vec!["localhost/schedperf/busybox:1.0".to_string()],
        mapped: BTreeMap::from([("*".to_string(), ("localhost/schedperf/busybox:1.0".to_string(), true))]),
        smoke: Ok(smoke),
        leftovers: Vec::new(),
    };
    let no_network =
        CheckReport { conditions: vec![cond("RuntimeReady", true), cond("NetworkReady", false)], ..good.clone() };
    let not_ready = CheckReport { conditions: vec![cond("RuntimeReady", false)], ..good.clone() };
    let missing = CheckReport {
        mapped: BTreeMap::from([("a".to_string(), ("localhost/x:1".to_string(), false))]),
        ..good.clone()
    };
    let failed = CheckReport { smoke: Err("RunPodSandbox on x: Unknown: boom".to_string()), ..good.clone() };
    let leaky = CheckReport { leftovers: vec!["sandbox 1".to_string()], ..good.clone() };
    let cases = [
        (&good, true, "smoke pod (localhost/schedperf/busybox:1.0, pod network): RunPodSandbox 37.7 ms"),
        (&no_network, true, "condition NetworkReady: NOT READY (NetworkPluginNotReady )"),
        (&not_ready, false, "condition RuntimeReady: NOT READY"),
        (&missing, false, "image map: a -> localhost/x:1: MISSING"),
        (&failed, false, "smoke pod FAILED: RunPodSandbox on x: Unknown: boom"),
        (&leaky, false, "LEFT BEHIND: sandbox 1"),
    ];
    for (report, ok, fragment) in cases {
        let text = report.to_string();
        assert_eq!(report.ok(), ok, "{text}");
        assert!(text.contains(fragment), "{text} lacks {fragment:?}");
        assert!(text.ends_with(if ok { "verdict: ok" } else { "verdict: NOT OK" }), "{text}");
    }
}

#[test]
fn connect_to_a_missing_socket_fails_fast_naming_the_endpoint() {
    let (tx, _rx) = crossbeam_channel::unbounded();
    let cases = [
        ("unix:///nonexistent/schedperf/containerd.sock", "No such file or directory"),
        ("tcp://127.0.0.1:1", "onnection refused"),
        ("ftp://x", "unknown scheme"),
    ];
    for (endpoint, fragment) in cases {
        let started = Instant::now();
        let err = CriAgent::connect(CriConfig::new(vec![endpoint.to_string()]), tx.clone(), Arc::new(WallClock::new()))
            .err()
            .unwrap_or_else(|| panic!("{endpoint}: connected"));
        assert!(err.0.contains(endpoint), "{endpoint}: {err}");
        assert!(err.0.contains(fragment), "{endpoint}: {err} lacks {fragment:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{endpoint}: took {:?}", started.elapsed());
    }
    let err = CriAgent::connect(CriConfig::new(Vec::new()), tx, Arc::new(WallClock::new())).err().unwrap();
    assert!(err.0.contains("at least one endpoint"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Runtime tests: need a CRI endpoint (see the module docs). They fail when it is missing.
// ---------------------------------------------------------------------------------------------

const NEEDS_CRI: &str =
    "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored";

fn env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set; {NEEDS_CRI}"),
    }
}

/// How long a runtime test waits for one event.
const EVENT_WAIT: Duration = Duration::from_secs(60);

struct Harness {
    agent: CriAgent,
    events: Receiver<AgentEvent>,
    image: String,
}

impl Harness {
    fn new(tweak: impl FnOnce(&mut CriConfig)) -> Harness {
        Harness::on(vec![env("CRI_ENDPOINT")], tweak)
    }

    fn on(endpoints: Vec<String>, tweak: impl FnOnce(&mut CriConfig)) -> Harness {
        let image = env("CRI_TEST_IMAGE");
        let (tx, events) = crossbeam_channel::unbounded();
        let mut cfg = CriConfig::new(endpoints);
        cfg.run_id =
            format!("test-{}-{}", std::process::id(), NEXT_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        tweak(&mut cfg);
        let agent = CriAgent::connect(cfg, tx, Arc::new(WallClock::new())).expect("connect");
        Harness { agent, events, image }
    }

    /// Collects the events of `uid` until one satisfies `last`; panics after `EVENT_WAIT`.
    fn until(&self, uid: PodUid, last: impl Fn(&AgentEventKind) -> bool) -> Vec<AgentEventKind> {
        let give_up = Instant::now() + EVENT_WAIT;
        let mut seen = Vec::new();
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            let e = self.events.recv_timeout(left).unwrap_or_else(|_| panic!("{uid}: stuck after {seen:?}"));
            assert_eq!(e.uid, uid, "an event of another pod: {e:?}");
            let done = last(&e.kind);
            seen.push(e.kind);
            if done {
                return seen;
            }
        }
    }

    /// Waits until each of `uids` reported `Failed`; returns the messages. Any other event fails.
    fn failures(&self, uids: &[PodUid]) -> BTreeMap<PodUid, String> {
        let give_up = Instant::now() + EVENT_WAIT;
        let mut failed = BTreeMap::new();
        while failed.len() < uids.len() {
            let left = give_up.saturating_duration_since(Instant::now());
            let e = self.events.recv_timeout(left).unwrap_or_else(|_| panic!("stuck after {failed:?}"));
            match e.kind {
                AgentEventKind::Failed(m) if uids.contains(&e.uid) => {
                    assert!(failed.insert(e.uid, m).is_none(), "{} failed twice", e.uid)
                }
                other => panic!("unexpected {other:?} for {}", e.uid),
            }
        }
        failed
    }

    /// The sandboxes of this run on the first endpoint.
    fn sandboxes(&self) -> Vec<cri::PodSandbox> {
        let client = self.agent.inner.clients[0].clone();
        let labels = HashMap::from([(LABEL_RUN_ID.to_string(), self.agent.run_id().to_string())]);
        self.agent.rt().block_on(client.list_pod_sandbox(labels)).expect("ListPodSandbox")
    }

    /// The runtime's view of the pod's containers, in creation order.
    fn container_statuses(&self, uid: PodUid) -> Vec<cri::ContainerStatus> {
        let slot = self.agent.inner.pods().get(&uid).cloned().expect("held");
        // The start task releases the pod's lock just after its last event.
        let ids = self.agent.rt().block_on(slot.state.lock()).containers.clone();
        let client = self.agent.inner.clients[slot.endpoint].clone();
        ids.iter().map(|id| self.agent.rt().block_on(client.container_status(id)).expect("ContainerStatus")).collect()
    }

    fn delete_and_check_gone(&self, uid: PodUid) {
        self.agent.delete(uid);
        assert_eq!(self.until(uid, |k| *k == AgentEventKind::Deleted), [AgentEventKind::Deleted]);
        assert!(!self.agent.pods().iter().any(|(u, _)| *u == uid));
        let left: Vec<String> = self
            .sandboxes()
            .into_iter()
            .filter(|s| s.labels.get(LABEL_POD_UID) == Some(&uid.to_string()))
            .map(|s| s.id)
            .collect();
        assert!(left.is_empty(), "{uid}: sandboxes left {left:?}");
    }

    fn finish(self) {
        let report = self.agent.shutdown().expect("shutdown");
        assert!(report.leftovers.is_empty(), "{report:?}");
        assert!(self.sandboxes().is_empty());
        let logs = self.agent.inner.cfg.log_root.join(self.agent.run_id());
        assert!(!logs.exists(), "{} is left", logs.display());
    }
}

static NEXT_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn started_events() -> Vec<AgentEventKind> {
    vec![
        AgentEventKind::Bound,
        AgentEventKind::SandboxReady,
        AgentEventKind::ContainersStarted,
        AgentEventKind::Running,
    ]
}

fn is_running_or_failed(k: &AgentEventKind) -> bool {
    matches!(k, AgentEventKind::Running | AgentEventKind::Failed(_))
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_full_lifecycle_bind_running_delete() {
    let h = Harness::new(|_| {});
    for (uid, host_network) in [(1, true), (2, false)] {
        let pod = test_pod(uid, &h.image, host_network);
        let uid = pod.uid;
        h.agent.bind(pod);
        assert_eq!(h.until(uid, is_running_or_failed), started_events(), "host_network={host_network}");
        assert_eq!(h.agent.pods(), [(uid, format!("node-{}", uid.0 % 4))]);
        let sandboxes = h.sandboxes();
        assert_eq!(sandboxes.len(), 1);
        assert_eq!(sandboxes[0].state, cri::PodSandboxState::SandboxReady as i32);
        let statuses = h.container_statuses(uid);
        assert_eq!(statuses.len(), 1);
        assert_eq!(statuses[0].state, cri::ContainerState::ContainerRunning as i32);
        h.delete_and_check_gone(uid);
        let t = h.agent.stats().pods[&uid].clone();
        let (ready, started, running) =
            (t.sandbox_ready_us.unwrap(), t.containers_started_us.unwrap(), t.running_us.unwrap());
        assert!(ready <= started && started <= running, "{t:?}");
        assert!(t.run_pod_sandbox_us.unwrap() > 0 && t.create_containers_us > 0 && t.start_containers_us > 0);
        assert!(t.teardown_us.unwrap() > 0);
    }
    let stats = h.agent.stats();
    for rpc in [
        "RunPodSandbox",
        "CreateContainer",
        "StartContainer",
        "ContainerStatus",
        "StopContainer",
        "RemoveContainer",
        "StopPodSandbox",
        "RemovePodSandbox",
    ] {
        assert!(stats.call_micros.get(rpc).is_some_and(|h| !h.is_empty()), "{rpc} not measured");
    }
    assert!(stats.errors_by_code.is_empty(), "{:?}", stats.errors_by_code);
    assert_eq!(stats.pod_running_micros.len(), 2);
    // Unknown pods are deleted at once.
    h.agent.delete(PodUid(999));
    assert_eq!(h.until(PodUid(999), |k| *k == AgentEventKind::Deleted), [AgentEventKind::Deleted]);
    h.finish();
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_init_containers_run_in_order_to_completion() {
    let h = Harness::new(|_| {});
    let image = h.image.clone();
    // Two init containers and a sidecar between them; the second init container checks that the
    // first ran (it wrote a file in the shared /tmp? no: containers do not share files), so order
    // is checked through the runtime's timestamps.
    let mut pod = test_pod(10, &image, true);
    pod.init_containers = vec![
        container("init-true", &image, &["true"]),
        ContainerSpec { sidecar: true, ..container("sidecar", &image, &["sleep", "3600"]) },
        container("init-sleep", &image, &["sh", "-c", "sleep 0.2"]),
    ]
    .into();
    let uid = pod.uid;
    h.agent.bind(pod);
    assert_eq!(h.until(uid, is_running_or_failed), started_events());
    let s = h.container_statuses(uid);
    let names: Vec<&str> = s.iter().map(|c| c.metadata.as_ref().unwrap().name.as_str()).collect();
    assert_eq!(names, ["init-true", "sidecar", "init-sleep", "main"]);
    let exited = cri::ContainerState::ContainerExited as i32;
    let running = cri::ContainerState::ContainerRunning as i32;
    let states: Vec<(i32, i32)> = s.iter().map(|c| (c.state, c.exit_code)).collect();
    assert_eq!(states, [(exited, 0), (running, 0), (exited, 0), (running, 0)]);
    assert!(s[0].finished_at <= s[1].started_at, "sidecar started before init-true ended");
    assert!(s[1].started_at <= s[2].started_at);
    assert!(s[2].finished_at <= s[3].started_at, "main started before init-sleep ended");
    assert!(s[2].finished_at - s[2].started_at >= 150_000_000, "init-sleep did not run to completion");
    assert!(h.agent.stats().pods[&uid].init_containers_us.unwrap() >= 150_000);
    h.delete_and_check_gone(uid);

    // A failing init container fails the pod; later containers are never created.
    let mut pod = test_pod(11, &image, false);
    pod.init_containers =
        vec![container("init-false", &image, &["false"]), container("never", &image, &["true"])].into();
    let uid = pod.uid;
    h.agent.bind(pod);
    let events = h.until(uid, is_running_or_failed);
    assert_eq!(events[..2], [AgentEventKind::Bound, AgentEventKind::SandboxReady]);
    match events.last() {
        Some(AgentEventKind::Failed(m)) => {
            assert!(m.starts_with("init container init-false exited with code 1"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.container_statuses(uid).len(), 1);
    h.delete_and_check_gone(uid);
    h.finish();
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_delete_during_start_and_shutdown_sweep() {
    let h = Harness::new(|_| {});
    // Deleted right after the bind: the start stops at its next step and reports nothing more.
    let uids: Vec<PodUid> = (20..24).map(PodUid).collect();
    for &uid in &uids {
        let mut pod = test_pod(uid.0, &h.image, uid.0 % 2 == 0);
        pod.init_containers = vec![container("slow", &h.image, &["sleep", "30"])].into();
        h.agent.bind(pod);
    }
    for &uid in &uids {
        h.agent.delete(uid);
    }
    let give_up = Instant::now() + EVENT_WAIT;
    let mut per_pod: BTreeMap<PodUid, Vec<AgentEventKind>> = BTreeMap::new();
    while per_pod.values().filter(|e| e.last() == Some(&AgentEventKind::Deleted)).count() < uids.len() {
        let e = h.events.recv_timeout(give_up.saturating_duration_since(Instant::now())).expect("Deleted");
        per_pod.entry(e.uid).or_default().push(e.kind);
    }
    for (uid, events) in &per_pod {
        assert_eq!(events.first(), Some(&AgentEventKind::Bound), "{uid}");
        assert_eq!(events.last(), Some(&AgentEventKind::Deleted), "{uid}");
        assert!(
            !events.iter().any(|k| matches!(k, AgentEventKind::Running | AgentEventKind::Failed(_))),
            "{uid}: {events:?}"
        );
    }
    assert!(h.agent.pods().is_empty());
    assert!(h.sandboxes().is_empty(), "{:?}", h.sandboxes());

    // Shutdown removes held pods, and its sweep removes a sandbox the agent no longer tracks.
    let pod = test_pod(30, &h.image, true);
    h.agent.bind(pod);
    assert_eq!(h.until(PodUid(30), is_running_or_failed), started_events());
    let pod = test_pod(31, &h.image, true);
    h.agent.bind(pod);
    assert_eq!(h.until(PodUid(31), is_running_or_failed), started_events());
    h.agent.inner.forget(PodUid(31));
    let report = h.agent.shutdown().expect("shutdown");
    assert_eq!((report.pods_removed, report.leftovers.len()), (2, 0), "{report:?}");
    assert!(h.sandboxes().is_empty());
    h.agent.bind(test_pod(32, &h.image, true));
    match h.until(PodUid(32), |_| true).as_slice() {
        [AgentEventKind::BindFailed(m)] => assert!(m.contains("shut down"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_unknown_image_is_a_preflight_error_and_a_failed_pod() {
    let missing = "localhost/schedperf/does-not-exist:1".to_string();
    let h = Harness::new(|cfg| {
        cfg.image_map = ImageMap::new().with("registry.k8s.io/pause:3.9", "localhost/schedperf/pause:1.0").unwrap();
    });
    let ok = [h.image.clone(), "registry.k8s.io/pause:3.9".to_string()];
    h.agent.preflight(&ok).expect("present and mapped images pass");
    let err = h.agent.preflight(&[h.image.clone(), missing.clone()]).unwrap_err();
    assert!(err.0.contains(&format!("{missing} (not mapped)")), "{err}");
    assert!(err.0.contains(&h.image), "the error lists the images present: {err}");
    assert!(err.0.contains(&env("CRI_ENDPOINT")), "{err}");

    // Mapped to a missing image: also an error, naming both.
    let h2 = Harness::new(|cfg| cfg.image_map = ImageMap::new().with("*", &missing).unwrap());
    let err = h2.agent.preflight(&["busybox:latest".to_string()]).unwrap_err();
    assert!(err.0.contains(&format!("busybox:latest (mapped to {missing})")), "{err}");

    // Without preflight, the pod fails at CreateContainer with the runtime's NotFound.
    h.agent.bind(test_pod(40, &missing, true));
    let events = h.until(PodUid(40), is_running_or_failed);
    match events.last() {
        Some(AgentEventKind::Failed(m)) => {
            assert!(m.starts_with("CreateContainer on unix://") && m.contains(": NotFound: "), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.agent.stats().errors_by_code.get("NotFound"), Some(&1));
    h.delete_and_check_gone(PodUid(40));
    h.finish();
    h2.finish();
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_bad_endpoint_next_to_a_good_one_fails_connect() {
    let good = env("CRI_ENDPOINT");
    let bad = "unix:///nonexistent/schedperf-cri.sock".to_string();
    let (tx, _rx) = crossbeam_channel::unbounded();
    let err = CriAgent::connect(CriConfig::new(vec![good, bad.clone()]), tx, Arc::new(WallClock::new()))
        .err()
        .expect("a bad endpoint fails connect");
    assert!(err.0.starts_with(&format!("CRI endpoint {bad}: cannot connect")), "{err}");
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_two_endpoints_spread_pods_by_node() {
    let ep = env("CRI_ENDPOINT");
    let h = Harness::on(vec![ep.clone(), ep], |cfg| cfg.max_concurrent_pods_per_endpoint = 2);
    let uids: Vec<PodUid> = (50..56).map(PodUid).collect();
    for &uid in &uids {
        h.agent.bind(test_pod(uid.0, &h.image, true));
    }
    let mut running = 0;
    let give_up = Instant::now() + EVENT_WAIT;
    while running < uids.len() {
        let e = h.events.recv_timeout(give_up.saturating_duration_since(Instant::now())).expect("Running");
        assert!(!matches!(e.kind, AgentEventKind::Failed(_)), "{e:?}");
        running += usize::from(e.kind == AgentEventKind::Running);
    }
    let stats = h.agent.stats();
    for &uid in &uids {
        let node = format!("node-{}", uid.0 % 4);
        assert_eq!(stats.pods[&uid].endpoint, endpoint_for_node(&node, 2), "{uid}");
    }
    let used: std::collections::BTreeSet<usize> = stats.pods.values().map(|t| t.endpoint).collect();
    assert_eq!(used.len(), 2, "nodes 0..3 hash to both endpoints");
    let report = h.agent.shutdown().unwrap();
    assert_eq!((report.pods_removed, report.leftovers.len()), (uids.len(), 0), "{report:?}");
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_check_reports_runtime_images_and_smoke_pod() {
    let image = env("CRI_TEST_IMAGE");
    let endpoint = env("CRI_ENDPOINT");
    let map = ImageMap::new().with("*", &image).unwrap();
    let report = cri_check(&endpoint, &map).expect("check");
    assert!(report.ok(), "{report}");
    assert!(report.runtime.starts_with("containerd"), "{report}");
    assert!(report.images.contains(&image));
    let smoke = report.smoke.as_ref().unwrap();
    assert!(smoke.running_us >= smoke.run_pod_sandbox_us && smoke.run_pod_sandbox_us > 0, "{smoke:?}");
    let text = report.to_string();
    for fragment in ["condition RuntimeReady: ready", "smoke pod (", "verdict: ok"] {
        assert!(text.contains(fragment), "{text}");
    }
    let missing = ImageMap::new().with("*", "localhost/schedperf/does-not-exist:1").unwrap();
    let report = cri_check(&endpoint, &missing).expect("check");
    assert!(!report.ok() && report.smoke.is_err(), "{report}");
    assert!(report.to_string().contains("MISSING"), "{report}");
}

/// Starts a second containerd (no CNI: host network pods only) in its own directory, runs pods on
/// it, kills it with SIGKILL, and expects their starts to fail within the call deadlines. Then it
/// brings the same containerd back, so the agent's shutdown removes the pods, and takes it down.
#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_runtime_killed_mid_run_fails_pods_without_hanging() {
    let image = env("CRI_TEST_IMAGE");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cri-env.sh");
    let dir = tempfile::Builder::new().prefix("schedperf-cri-kill").tempdir_in("/tmp").unwrap();
    let env_up = |dir: &Path| -> HashMap<String, String> {
        let out = std::process::Command::new(&script)
            .arg(dir)
            .arg("up")
            .env("CRI_ENV_CNI", "0")
            .env("CRI_ENV_NO_APT", "1")
            .output()
            .expect("run cri-env.sh");
        assert!(out.status.success(), "cri-env.sh up: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect()
    };
    struct Down<'a>(&'a Path, &'a Path);
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new(self.0).arg(self.1).arg("down").status();
        }
    }
    let vars = env_up(dir.path());
    let _down = Down(&script, dir.path());
    let h = Harness::on(vec![vars["CRI_ENDPOINT"].clone()], |cfg| {
        cfg.timeouts.light = Duration::from_secs(2);
        cfg.timeouts.heavy = Duration::from_secs(4);
        cfg.health_interval = Some(Duration::from_millis(500));
    });
    assert_eq!(h.image, image);
    // One pod Running, one still in a long init container when the runtime dies.
    h.agent.bind(test_pod(60, &image, true));
    assert_eq!(h.until(PodUid(60), is_running_or_failed), started_events());
    let mut slow = test_pod(61, &image, true);
    slow.init_containers = vec![container("slow", &image, &["sleep", "600"])].into();
    h.agent.bind(slow);
    assert_eq!(
        h.until(PodUid(61), |k| *k == AgentEventKind::SandboxReady),
        [AgentEventKind::Bound, AgentEventKind::SandboxReady]
    );
    // Let the init container start: the runtime dies while the agent polls it.
    std::thread::sleep(Duration::from_millis(500));
    let pid: i32 = vars["CRI_PID"].parse().unwrap();
    let killed = Instant::now();
    assert!(std::process::Command::new("kill").arg("-KILL").arg(pid.to_string()).status().unwrap().success());
    // The starting pod fails through its own polls, the Running one through the health probes.
    let failed = h.failures(&[PodUid(60), PodUid(61)]);
    let waited = killed.elapsed();
    let m = &failed[&PodUid(60)];
    assert!(m.starts_with("the CRI runtime went away: Status on unix://"), "{m}");
    match failed.get(&PodUid(61)) {
        Some(m) => {
            assert!(m.starts_with("ContainerStatus on unix://"), "{m}");
            // Depending on where the call was when the socket went, tonic reports Unknown
            // (connection reset), Cancelled (connection closed) or Unavailable (refused reconnect).
            let codes = [
                ": Unavailable: ",
                ": DeadlineExceeded: ",
                ": Unknown: transport error",
                ": Cancelled: operation was canceled: transport error",
            ];
            assert!(codes.iter().any(|c| m.contains(c)), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert!(waited < Duration::from_secs(5), "the failure took {waited:?}");
    // A pod bound while the runtime is gone fails at RunPodSandbox.
    h.agent.bind(test_pod(62, &image, true));
    match h.until(PodUid(62), is_running_or_failed).last() {
        Some(AgentEventKind::Failed(m)) => {
            assert!(m.starts_with("RunPodSandbox on unix://"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // A delete cannot reach the runtime: the pod is kept and reported.
    h.agent.delete(PodUid(60));
    match h.until(PodUid(60), |k| matches!(k, AgentEventKind::Deleted | AgentEventKind::Failed(_))).last() {
        Some(AgentEventKind::Failed(m)) => assert!(m.starts_with("delete failed: StopContainer on unix://"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(h.agent.pods().iter().any(|(u, _)| *u == PodUid(60)));
    // The runtime comes back (containerd reattaches to its shims); shutdown removes everything.
    env_up(dir.path());
    let report = h.agent.shutdown().expect("shutdown");
    assert!(report.leftovers.is_empty(), "{report:?}");
    assert_eq!(report.pods_removed, 2, "{report:?}");
}

#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_signal_removes_the_run() {
    let h = Harness::new(|_| {});
    h.agent.bind(test_pod(70, &h.image, false));
    assert_eq!(h.until(PodUid(70), is_running_or_failed), started_events());
    let (tx, rx) = crossbeam_channel::bounded(1);
    h.agent
        .on_signal(Box::new(move |outcome| {
            let _ = tx.send(match outcome {
                SignalOutcome::Cleaned(r) => Some(r),
                SignalOutcome::Skipped => None,
            });
        }))
        .expect("install the signal handler");
    // SIGTERM to this very process: the agent's handler replaced the default one.
    let me = std::process::id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &me]).status().unwrap().success());
    let report = rx.recv_timeout(EVENT_WAIT).expect("the handler ran").expect("cleaned up");
    let report = report.expect("shutdown");
    assert_eq!((report.pods_removed, report.leftovers.len()), (1, 0), "{report:?}");
    assert!(h.sandboxes().is_empty());
}

/// Measures pod start latency: bind accepted to Running, 30 pods one after another (after 2
/// warm-up pods), then 4 rounds of 8 at once; host network and pod network. Prints a table.
#[test]
#[ignore = "needs a CRI endpoint: eval \"$(scripts/cri-env.sh /tmp/cri up)\" then cargo test cri -- --ignored"]
fn cri_measure_pod_start_latency() {
    fn median_p99(mut v: Vec<u64>) -> (f64, f64) {
        v.sort_unstable();
        let p = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1] as f64 / 1000.0;
        (p(0.5), p(0.99))
    }
    for host_network in [true, false] {
        let h = Harness::new(|_| {});
        let mut next = 100;
        let mut run_batch = |size: usize| -> Vec<PodUid> {
            let uids: Vec<PodUid> = (0..size).map(|i| PodUid(next + i as u64)).collect();
            next += size as u64;
            for &uid in &uids {
                h.agent.bind(test_pod(uid.0, &h.image, host_network));
            }
            let mut running = 0;
            while running < size {
                let e = h.events.recv_timeout(EVENT_WAIT).expect("event");
                assert!(!matches!(e.kind, AgentEventKind::Failed(_)), "{e:?}");
                running += usize::from(e.kind == AgentEventKind::Running);
            }
            for &uid in &uids {
                h.agent.delete(uid);
            }
            let mut deleted = 0;
            while deleted < size {
                let e = h.events.recv_timeout(EVENT_WAIT).expect("event");
                deleted += usize::from(e.kind == AgentEventKind::Deleted);
            }
            uids
        };
        run_batch(1);
        run_batch(1);
        let sequential: Vec<PodUid> = (0..30).flat_map(|_| run_batch(1)).collect();
        let concurrent: Vec<PodUid> = (0..4).flat_map(|_| run_batch(8)).collect();
        let stats = h.agent.stats();
        let column =
            |uids: &[PodUid], f: fn(&PodTimings) -> u64| median_p99(uids.iter().map(|u| f(&stats.pods[u])).collect());
        for (name, uids) in [("sequential x30", &sequential), ("8 concurrent x4", &concurrent)] {
            let running = column(uids, |t| t.running_us.unwrap());
            let sandbox = column(uids, |t| t.run_pod_sandbox_us.unwrap());
            let create = column(uids, |t| t.create_containers_us);
            let start = column(uids, |t| t.start_containers_us);
            let teardown = column(uids, |t| t.teardown_us.unwrap());
            let calls =
                column(uids, |t| t.run_pod_sandbox_us.unwrap() + t.create_containers_us + t.start_containers_us);
            println!(
                "{} {name}: bind->Running median {:.1} ms p99 {:.1} ms | Run+Create+Start {:.1}/{:.1} | RunPodSandbox {:.1}/{:.1} | CreateContainer {:.1}/{:.1} | StartContainer {:.1}/{:.1} | teardown {:.1}/{:.1}",
                if host_network { "hostNetwork" } else { "pod network" },
                running.0, running.1, calls.0, calls.1, sandbox.0, sandbox.1, create.0, create.1, start.0, start.1, teardown.0, teardown.1
            );
        }
        assert!(stats.errors_by_code.is_empty(), "{:?}", stats.errors_by_code);
        h.finish();
    }
}
