//! Expected outputs are what Go's `text/template` with upstream's function map prints for the
//! same template and environment (workload parameters are float64, `.Index`/`.Count` ints); they
//! were checked against go1.26 `text/template` with `getTemplateFuncs` of v1.37.2's `operations.go`.

use super::*;

fn env(index: i64, count: i64, params: &[(&str, Value)]) -> Env {
    let mut e: Env = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    e.insert("Index".into(), Value::Int(index));
    e.insert("Count".into(), Value::Int(count));
    e
}

fn check(text: &str, env: &Env, expected: Result<&str, &str>) {
    match (render_template(text, env), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
        (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{text:?}: {got} does not contain {want:?}"),
        (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
    }
}

fn f(v: f64) -> Value {
    Value::Float(v)
}

#[test]
fn upstream_function_map() {
    let e = env(
        29,
        7,
        &[("podsPerGroup", f(3.0)), ("podsCount", f(100.0)), ("nodesCount", f(8.0)), ("priority", f(100.0))],
    );
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("{{ Mod .Index 12 }}", Ok("5")),
        ("{{DivideInt .Index .podsPerGroup}}", Ok("9")),
        ("{{ DivideInt 30000 .Count }}", Ok("4285")),
        ("{{DivideInt .Index 100}}", Ok("0")),
        ("{{AddInt 8000 (Mod .Index (DivideInt .podsCount .nodesCount))}}", Ok("8005")),
        ("{{AddInt 0 .priority}}", Ok("100")),
        ("{{AddInt 1 2 3.5}}", Ok("6")),
        ("{{AddFloat 1 2.5}}", Ok("3.5")),
        ("{{SubtractInt .Index 30}}", Ok("-1")),
        ("{{SubtractFloat 1 0.25}}", Ok("0.75")),
        ("{{MultiplyInt .Index 2 0.5}}", Ok("29")),
        ("{{MultiplyFloat 3 0.5}}", Ok("1.5")),
        ("{{DivideFloat 1 4}}", Ok("0.25")),
        ("{{DivideInt -7 2}}", Ok("-3")),
        ("{{Mod -7 3}}", Ok("-1")),
        ("{{Int \"42\"}}", Ok("42")),
        ("{{Int 2.9}}", Ok("2")),
        ("{{.podsPerGroup | Int}}", Ok("3")),
        ("{{JSON .podsPerGroup}}", Ok("3")),
        ("{{JSON \"a<b\"}}", Ok("\"a<b\"")),
        ("{{DivideInt 1 0}}", Err("error calling DivideInt: division by zero")),
        ("{{Mod 1 0}}", Err("integer divide by zero")),
        ("{{Int \"x\"}}", Err("cannot cast x to int")),
        ("{{AddInt .missing 1}}", Err("error calling AddInt: cannot cast <nil> to float64")),
    ];
    for (text, want) in cases {
        check(text, &e, *want);
    }
}

#[test]
fn go_printing_of_parameters() {
    // Parameters come from JSON: 1000000 is a float64 and fmt prints it as 1e+06.
    let e = env(
        0,
        1,
        &[
            ("a", f(100.0)),
            ("b", f(1_000_000.0)),
            ("c", f(0.5)),
            ("d", f(123_456.0)),
            ("e", f(1_234_567.0)),
            ("g", f(0.00001)),
            ("s", Value::Str("1m".into())),
            ("t", Value::Bool(true)),
        ],
    );
    check(
        "{{.a}} {{.b}} {{.c}} {{.d}} {{.e}} {{.g}} {{.s}} {{.t}}",
        &e,
        Ok("100 1e+06 0.5 123456 1.234567e+06 1e-05 1m true"),
    );
    check("{{.missing}}", &e, Ok("<no value>"));
    check("{{.Index.x}}", &e, Err("can't evaluate field x in type"));
    assert_eq!(go_format_float(-2.5e-7), "-2.5e-07");
    assert_eq!(go_format_float(1e21), "1e+21");
    assert_eq!(go_format_float(999_999.0), "999999");
    assert_eq!(to_json(&f(1e21)), "1e+21");
    assert_eq!(to_json(&f(1_000_000.0)), "1000000");
    assert_eq!(template_env(2, 3, &BTreeMap::from([("n".to_string(), ParamValue::Int(10))]))["n"], f(10.0));
    // Lists and maps pass through as upstream's JSON decoding makes them (DRA's `selectors`).
    let list: serde_norway::Value = serde_norway::from_str("[{cel: {expression: x}}, 2]").unwrap();
    let env = template_env(0, 1, &BTreeMap::from([("s".to_string(), ParamValue::Structured(list))]));
    check("{{JSON .s}} {{len .s}} {{index .s 1}}", &env, Ok("[{\"cel\":{\"expression\":\"x\"}},2] 2 2"));
}

#[test]
fn control_flow_variables_and_builtins() {
    let e = env(7, 10, &[("class", Value::Str("example.com/gpu".into())), ("numDevices", f(3.0))]);
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("{{if .priority}}p{{else}}none{{end}}", Ok("none")),
        ("{{if .class}}{{.class}}{{end}}", Ok("example.com/gpu")),
        ("{{if eq .class \"example.com/gpu\"}}gpu{{else if eq .class \"x\"}}x{{else}}other{{end}}", Ok("gpu")),
        ("{{if eq .class \"y\"}}gpu{{else if eq .class \"example.com/gpu\"}}second{{else}}other{{end}}", Ok("second")),
        ("{{$n := or .numDevices 64}}{{range ($n | Int)}}{{.}},{{end}}", Ok("0,1,2,")),
        ("{{$n := or .absent 2}}{{range $i := ($n | Int)}}[{{$i}}]{{end}}", Ok("[0][1]")),
        ("{{range $i, $e := 2}}{{$i}}{{$e}}{{end}}", Err("can't use 2 to iterate over more than one variable")),
        ("{{range $i, $e := .list}}{{$i}}{{$e}}{{end}}", Ok("")),
        ("{{range 0}}x{{else}}empty{{end}}", Ok("empty")),
        ("{{$s := (or .selectors nil) | JSON}}{{$s}}", Ok("null")),
        ("{{$x := 1}}{{if true}}{{$x = 2}}{{end}}{{$x}}", Ok("2")),
        ("{{with .class}}[{{.}}]{{else}}none{{end}}", Ok("[example.com/gpu]")),
        ("{{ge .Index 7}} {{lt .Index 7}} {{ne .Index 7}} {{not .Index}}", Ok("true false false false")),
        ("{{and 1 0}} {{or 0 \"\" 5}}", Ok("0 5")),
        ("{{len .class}}", Ok("15")),
        ("{{print 1 2 \"a\" 3}}", Ok("1 2a3")),
        ("{{printf \"%d-%s-%v%%\" 3 \"x\" 1.5}}", Ok("3-x-1.5%")),
        ("{{html .class}}", Err("html is not supported")),
        ("{{$}}", Ok("map[Count:10 Index:7 class:example.com/gpu numDevices:3]")),
        ("a  {{- .Index -}}  b", Ok("a7b")),
        ("x{{/* a comment */}}y", Ok("xy")),
        ("{{if eq .missing \"example.com/gpu\"}}gpu{{end}}", Ok("")),
        ("{{eq .missing nil}}", Ok("true")),
        ("{{ne .missing 1}}", Ok("true")),
        ("{{eq .Index 1.5}}", Err("error calling eq: incompatible types for comparison: int and float64")),
        ("{{range \"s\"}}{{end}}", Err("range can't iterate over s")),
        ("{{$undefined}}", Err("undefined variable \"$undefined\"")),
        ("{{if .x}}", Err("has no {{end}}")),
        ("{{end}}", Err("unexpected {{end}}")),
        ("x: {{.Index", Err("unclosed action")),
    ];
    for (text, want) in cases {
        check(text, &e, *want);
    }
}

#[test]
fn unknown_function_is_a_parse_error_with_its_line() {
    let err = Template::parse("a: 1\nb: 2\nc: {{ Foo .Index }}\n").unwrap_err();
    assert_eq!(err, TemplateError { line: 3, message: "function \"Foo\" not defined".into() });
    let err = Template::parse("{{if true}}\n\n{{ Bar 1 }}{{end}}").unwrap_err();
    assert_eq!(err.line, 3);
}

#[test]
fn parsed_once_renders_many() {
    let t = Template::parse("name: pod-{{.Index}}-of-{{.Count}}\n").unwrap();
    let got: Vec<String> = (0..3).map(|i| t.render(&env(i, 3, &[])).unwrap()).collect();
    assert_eq!(got, ["name: pod-0-of-3\n", "name: pod-1-of-3\n", "name: pod-2-of-3\n"]);
    assert!(is_templated("a {{.Index}}") && !is_templated("plain"));
}

#[test]
fn repository_extended_resource_templates_render() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/misc/templates");
    for file in ["node-with-extended-resource.yaml", "pod-with-extended-resource.yaml"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let rendered = render_template(&text, &template_env(3, 5, &BTreeMap::new())).unwrap();
        assert!(rendered.contains("foo.com/bar-3: 1") && !rendered.contains("{{"), "{file}: {rendered}");
        let _: serde_norway::Value = serde_norway::from_str(&rendered).unwrap();
    }
}
