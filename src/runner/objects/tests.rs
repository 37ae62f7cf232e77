//! The shortcuts of `Templates` (skeleton, reuse) against the reference path: render with Go
//! `text/template` semantics, then parse the text.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::skeleton::{is_safe_value, resolves_to_string, MARKER_LEN};
use super::*;
use crate::workload::template::Value;

const FILE: &str = "t.yaml";

/// The reference: render, then parse; errors as `Templates` words them.
fn reference(text: &str, env: &Env, index: u64, count: u64) -> Result<Vec<Object>, String> {
    let t = GoTemplate::parse(text).expect("test templates parse");
    let rendered = t
        .render(env)
        .map_err(|e| {
            InputError::new(FILE, format!("line {}", e.line), format!("object {index} of {count}: {}", e.message))
        })
        .map_err(|e| e.to_string())?;
    api::parse_objects(&rendered, FILE).map_err(|e| e.to_string())
}

fn env(index: u64, count: u64, params: &[(&str, &str)]) -> Env {
    let mut e: Env = params.iter().map(|(k, v)| (k.to_string(), Value::Str(v.to_string()))).collect();
    e.insert("Index".into(), Value::Int(index as i64));
    e.insert("Count".into(), Value::Int(count as i64));
    e
}

/// Instantiates `text` for objects `0..count` through one `Dynamic` (so reuse is exercised) and
/// compares each with the reference; returns whether the template has a skeleton and how many
/// objects the skeleton made.
fn check(text: &str, count: u64, params: &[(&str, &str)]) -> (bool, u64) {
    let mut d = Dynamic::new(GoTemplate::parse(text).expect("test templates parse"), text, FILE);
    let has_skeleton = d.skeleton.is_some();
    let mut by_skeleton = 0;
    for i in 0..count {
        let e = env(i, count, params);
        let want = reference(text, &e, i, count);
        let got = d.instantiate(e, i, count, FILE).map(|m| (*m.objects()).clone()).map_err(|e| e.to_string());
        assert_eq!(got, want, "{text:?}, object {i}");
        if let Some(Made { from: MadeFrom::Values(_), .. }) = &d.last {
            if got.is_ok() {
                by_skeleton += 1;
            }
        }
    }
    (has_skeleton, by_skeleton)
}

const EXTENDED_RESOURCE_POD: &str = "# pod i needs foo.com/bar-i\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test-extended-resource-{{.Index}}\nspec:\n  containers:\n  - image: registry.k8s.io/pause:3.10\n    name: pause\n    resources:\n      requests:\n        foo.com/bar-{{.Index}}: 1\n      limits:\n        foo.com/bar-{{.Index}}: 1\n";

const EXTENDED_RESOURCE_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: scheduler-perf-extended-resource-\n  labels:\n    node-with-extended-resource: \"true\"\nspec: {}\nstatus:\n  capacity:\n    pods: \"110\"\n    cpu: \"4\"\n    memory: 32Gi\n    foo.com/bar-{{.Index}}: 1\n  phase: Running\n";

#[test]
fn skeleton_equals_reference() {
    // (template, params, has a skeleton, objects made by it)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool, bool);
    let cases: &[Case] = &[
        (EXTENDED_RESOURCE_POD, &[], true, true),
        (EXTENDED_RESOURCE_NODE, &[], true, true),
        // Upstream's function map; labels as keys and values; reused while the values repeat.
        (
            "kind: Pod\nmetadata:\n  name: p-{{Mod .Index 12}}-{{.Index}}\n  labels:\n    zone: zone-{{Mod .Index 3}}\n    group-{{DivideInt .Index 4}}: \"yes\"\n",
            &[],
            true,
            true,
        ),
        ("kind: Pod\nmetadata:\n  generateName: {{.prefix}}-pod-\n  labels: {group: '{{.prefix}}-{{DivideInt .Index 3}}'}\n", &[("prefix", "pg")], true, true),
        // Quoted and block scalars.
        ("kind: Pod\nmetadata:\n  name: \"q-{{.Index}}\"\n  annotations:\n    a: 'x {{.Index}} y'\n    b: |\n      line {{.Index}}\n      next\n", &[], true, true),
        // A value that is a number alone: parsed per object (the scalar would be an int).
        ("kind: Pod\nmetadata:\n  name: n\n  labels:\n    n: {{.Index}}\n", &[], true, false),
        ("kind: Pod\nspec:\n  priority: {{Mod .Index 5}}\n", &[], true, false),
        // Values that are not safe, or resolve to a bool or null: parsed per object.
        ("kind: Pod\nmetadata:\n  name: p\n  labels:\n    a: {{.v}}\n", &[("v", "a b: c")], true, false),
        ("kind: Pod\nmetadata:\n  name: p\n  labels:\n    a: \"{{.v}}\"\n", &[("v", "true")], true, false),
        ("kind: Pod\nmetadata:\n  name: p\n  labels:\n    a: x{{.missing}}\n", &[], true, false),
        // Two keys equal once filled: the reference's error, for odd objects.
        ("kind: Pod\nmetadata:\n  name: p\n  labels:\n    a{{Mod .Index 2}}: x\n    a1: y\n", &[], true, false),
        // A marker in a comment or under an alias: no skeleton.
        ("kind: Pod # {{.Index}}\nmetadata:\n  name: p-{{.Index}}\n", &[], false, false),
        ("kind: Pod\nmetadata:\n  name: &n p-{{.Index}}\n  labels:\n    a: *n\n", &[], false, false),
        ("kind: Pod\nmetadata:\n  name: p\n  labels: &{{.Index}} {a: b}\n", &[], false, false),
        // JSON, and templates that are not flat: no skeleton.
        ("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p-{{.Index}}\"}}", &[], false, false),
        ("kind: Pod\nmetadata:\n  name: p-{{.Index}}\n{{if .Index}}  labels: {a: b}\n{{end}}", &[], false, false),
        ("{{$n := .Index}}kind: Pod\nmetadata:\n  name: p-{{$n}}\n", &[], false, false),
        // Two documents. (Names such as `a-1` are left to the reference path: every byte of
        // them can be in a number, so `resolves_to_string` does not vouch for them.)
        ("kind: Pod\nmetadata:\n  name: pod-{{.Index}}\n---\nkind: Pod\nmetadata:\n  name: web-{{.Index}}\n", &[], true, true),
        // An action that fails: the reference's error.
        ("kind: Pod\nmetadata:\n  name: p-{{DivideInt .Index 0}}\n", &[], true, false),
    ];
    for (text, params, skeleton, all) in cases {
        let (has, by_skeleton) = check(text, 7, params);
        assert_eq!(has, *skeleton, "{text:?}: has a skeleton");
        if *all {
            assert!(by_skeleton >= 1, "{text:?}: made by the skeleton");
        }
        if !*skeleton || text.contains("missing") || text.contains("{{.v}}") || text.contains("priority") {
            assert_eq!(by_skeleton, 0, "{text:?}: never made by the skeleton");
        }
    }
}

#[test]
fn templates_without_actions_and_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.yaml");
    std::fs::write(&plain, "kind: Pod\nmetadata:\n  name: p\n").unwrap();
    let grouped = dir.path().join("grouped.yaml");
    std::fs::write(&grouped, "kind: Pod\nmetadata:\n  generateName: g-\n  labels: {group: g-{{DivideInt .Index 3}}}\n")
        .unwrap();
    let branchy = dir.path().join("branchy.yaml");
    std::fs::write(&branchy, "kind: Pod\nmetadata:\n  generateName: g-\n{{if .x}}  labels: {a: b}\n{{end}}").unwrap();
    let mut t = Templates::default();
    let none = BTreeMap::new();
    // A template without actions: one object for every index, equal to parsing the file.
    let a = t.pod(&plain, 0, 5, &none).unwrap();
    let b = t.pod(&plain, 4, 5, &none).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(Object::Pod((*a).clone()), api::parse_objects("kind: Pod\nmetadata:\n  name: p\n", FILE).unwrap()[0]);
    // The same values (or the same rendered text) give the same shared pod; new ones a new pod.
    for path in [&grouped, &branchy] {
        let p: Vec<_> = (0..6).map(|i| t.pod(path, i, 6, &none).unwrap()).collect();
        assert!(Arc::ptr_eq(&p[0], &p[1]) && Arc::ptr_eq(&p[1], &p[2]), "{path:?}");
        if path == &grouped {
            assert!(!Arc::ptr_eq(&p[2], &p[3]));
            assert_eq!(p[3].metadata.labels["group"], "g-1");
        }
    }
}

#[test]
fn value_and_scalar_boundaries() {
    let long = "a".repeat(MARKER_LEN);
    let too_long = "a".repeat(MARKER_LEN + 1);
    let safe: &[(&str, bool)] = &[
        ("7", true),
        ("foo.com/bar-7", true),
        (&long, true),
        (&too_long, false),
        ("", false),
        ("-1", false),
        (".inf", false),
        ("a b", false),
        ("a:b", false),
        ("a#b", false),
        ("<no value>", false),
        ("1e+06", false),
    ];
    for (v, want) in safe {
        assert_eq!(is_safe_value(v), *want, "{v:?}");
    }
    let string: &[(&str, bool)] = &[
        ("foo.com/bar-7", true),
        ("pod-0", true),
        ("zone", true),
        ("7", false),
        ("0x1F", false),
        ("0o17", false),
        ("1e5", false),
        ("inf", false),
        ("Infinity", false),
        ("NaN", false),
        ("true", false),
        ("FALSE", false),
        ("null", false),
        ("~", false),
        ("", false),
        ("Yes", true),
    ];
    for (s, want) in string {
        assert_eq!(resolves_to_string(s), *want, "{s:?}");
        if *want {
            // The real resolver agrees: a plain scalar with this text is this string.
            let v: serde_norway::Value = serde_norway::from_str(s).unwrap();
            assert_eq!(v, serde_norway::Value::String(s.to_string()), "{s:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any parameter text and index: the shortcut makes what rendering then parsing makes.
    #[test]
    fn skeleton_equals_reference_for_any_values(v in "[a-zA-Z0-9 :#'\"./_~-]{0,10}", index in 0u64..100_000) {
        let texts = [
            EXTENDED_RESOURCE_POD,
            "kind: Pod\nmetadata:\n  name: p-{{.Index}}\n  labels:\n    l-{{.v}}: {{.v}}\n    q: \"{{.v}}\"\n    m: '{{Mod .Index 12}}'\n",
            "kind: Node\nmetadata:\n  name: {{.v}}\nstatus:\n  capacity: {cpu: '4', {{.v}}: 1}\n",
        ];
        for text in texts {
            let mut d = Dynamic::new(GoTemplate::parse(text).unwrap(), text, FILE);
            let e = env(index, 100_000, &[("v", v.as_str())]);
            let want = reference(text, &e, index, 100_000);
            let got = d.instantiate(e, index, 100_000, FILE).map(|m| (*m.objects()).clone()).map_err(|e| e.to_string());
            prop_assert_eq!(got, want);
        }
    }
}
