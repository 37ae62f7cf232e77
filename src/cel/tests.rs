//! Upstream's `compile_test.go` cases that apply to scalar attributes, the scheduler_perf DRA
//! selectors, and a no-panic property over random input.

use proptest::prelude::*;

use super::*;

/// A device in upstream's test form: qualified or unqualified names, resolved as
/// `parseQualifiedName` does (no `/`: the driver's domain).
struct Dev {
    driver: &'static str,
    attrs: Vec<(&'static str, AttributeValue<'static>)>,
    caps: Vec<(&'static str, &'static str)>,
    multi: bool,
}

fn split<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((driver, name))
}

fn eval_on(sel: &Selector, d: &Dev) -> Result<bool, CelError> {
    let attrs: Vec<(&str, &str, AttributeValue<'_>)> = d
        .attrs
        .iter()
        .map(|(n, v)| {
            let (dom, id) = split(n, d.driver);
            (dom, id, *v)
        })
        .collect();
    let caps: Vec<(&str, &str, Quantity)> = d
        .caps
        .iter()
        .map(|(n, q)| {
            let (dom, id) = split(n, d.driver);
            (dom, id, Quantity::parse(q).expect("test quantity"))
        })
        .collect();
    sel.matches(&DeviceEnv {
        driver: d.driver,
        attributes: &attrs,
        capacity: &caps,
        allow_multiple_allocations: d.multi,
    })
}

/// What a case expects: a match result, or an error (compile or run time) containing the text.
enum Want {
    Match(bool),
    CompileError(&'static str),
    MatchError(&'static str),
}
use Want::*;

fn dev(driver: &'static str) -> Dev {
    Dev { driver, attrs: Vec::new(), caps: Vec::new(), multi: false }
}

fn with_attr(mut d: Dev, name: &'static str, v: AttributeValue<'static>) -> Dev {
    d.attrs.push((name, v));
    d
}

fn with_cap(mut d: Dev, name: &'static str, q: &'static str) -> Dev {
    d.caps.push((name, q));
    d
}

fn check(name: &str, expression: &str, d: &Dev, want: Want) {
    let compiled = Selector::compile(expression);
    match (compiled, want) {
        (Err(e), CompileError(text)) => assert!(e.message.contains(text), "{name}: compile error {e:?} lacks {text:?}"),
        (Err(e), _) => panic!("{name}: unexpected compile error {e:?}"),
        (Ok(_), CompileError(text)) => panic!("{name}: expected compile error {text:?}"),
        (Ok(sel), Match(m)) => assert_eq!(eval_on(&sel, d), Ok(m), "{name}"),
        (Ok(sel), MatchError(text)) => match eval_on(&sel, d) {
            Err(e) => assert!(e.message.contains(text), "{name}: error {e:?} lacks {text:?}"),
            Ok(m) => panic!("{name}: expected error {text:?}, got {m}"),
        },
    }
}

use AttributeValue::{Bool as B, Int as I, String as S, Version as V};

#[test]
fn upstream_compile_test_cases() {
    let ex = "dra.example.com";
    let cases: Vec<(&str, &str, Dev, Want)> = vec![
        ("true", "true", dev(""), Match(true)),
        ("false", "false", dev(""), Match(false)),
        ("syntax-error", "?!", dev(""), CompileError("Syntax error")),
        ("type-error", "1", dev(""), CompileError("must evaluate to bool or the unknown type, not int")),
        (
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            dev(""),
            MatchError("no such key: noSuchAttr"),
        ),
        (
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            dev(""),
            MatchError("no such key: noSuchAttr"),
        ),
        ("domain-check-negative", r#""no-such-domain" in device.attributes"#, dev(""), Match(false)),
        (
            "domain-check-positive",
            r#""dra.example.com" in device.attributes"#,
            with_attr(dev(""), "dra.example.com/something", B(true)),
            Match(true),
        ),
        ("empty-driver-name", r#"device.driver == """#, dev(""), Match(true)),
        ("real-driver-name", r#"device.driver == "dra.example.com""#, dev(ex), Match(true)),
        ("driver-name-qualifier", r#"device.attributes["dra.example.com"].name"#, with_attr(dev(ex), "name", B(true)), Match(true)),
        (
            "driver-name-qualifier-map-lookup",
            r#"device.attributes["dra.example.com"]["name"]"#,
            with_attr(dev(ex), "name", B(true)),
            Match(true),
        ),
        ("bind", r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#, with_attr(dev(ex), "name", B(true)), Match(true)),
        (
            "qualified-attribute-name",
            r#"device.attributes["other.example.com"].name"#,
            with_attr(dev(ex), "other.example.com/name", B(true)),
            Match(true),
        ),
        ("bool", r#"device.attributes["dra.example.com"].name"#, with_attr(dev(ex), "name", B(true)), Match(true)),
        ("int", r#"device.attributes["dra.example.com"].name > 0"#, with_attr(dev(ex), "name", I(1)), Match(true)),
        ("string", r#"device.attributes["dra.example.com"].name == "fish""#, with_attr(dev(ex), "name", S("fish")), Match(true)),
        (
            "macro-exists-on-int",
            r#"device.attributes["dra.example.com"].name.exists(x, x > 0)"#,
            with_attr(dev(ex), "name", I(1)),
            MatchError("got 'types.Int', expected iterable type"),
        ),
        (
            "macro-exists-on-bool",
            r#"device.attributes["dra.example.com"].name.exists(x, x == true)"#,
            with_attr(dev(ex), "name", B(true)),
            MatchError("got 'types.Bool', expected iterable type"),
        ),
        (
            "macro-exists-on-string",
            r#"device.attributes["dra.example.com"].name.exists(x, x == "fish")"#,
            with_attr(dev(ex), "name", S("fish")),
            MatchError("got 'types.String', expected iterable type"),
        ),
        (
            "macro-exists-on-version",
            r#"device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))"#,
            with_attr(dev(ex), "name", V("1.0.0")),
            MatchError("got 'cel.Semver', expected iterable type"),
        ),
        (
            "includes-function-compilation-and-eval-success",
            r#"device.attributes["dra.example.com"].attr.includes("fish")"#,
            with_attr(dev(ex), "attr", S("fish")),
            Match(true),
        ),
        ("includes-bool-positive", r#"device.attributes["dra.example.com"].name.includes(true)"#, with_attr(dev(ex), "name", B(true)), Match(true)),
        ("includes-bool-negative", r#"device.attributes["dra.example.com"].name.includes(true)"#, with_attr(dev(ex), "name", B(false)), Match(false)),
        ("includes-int-positive", r#"device.attributes["dra.example.com"].name.includes(1)"#, with_attr(dev(ex), "name", I(1)), Match(true)),
        ("includes-int-negative", r#"device.attributes["dra.example.com"].name.includes(1)"#, with_attr(dev(ex), "name", I(2)), Match(false)),
        ("includes-string-positive", r#"device.attributes["dra.example.com"].name.includes("fish")"#, with_attr(dev(ex), "name", S("fish")), Match(true)),
        ("includes-string-negative", r#"device.attributes["dra.example.com"].name.includes("bird")"#, with_attr(dev(ex), "name", S("fish")), Match(false)),
        (
            "includes-semver-positive",
            r#"device.attributes["dra.example.com"].name.includes(semver("1.0.0"))"#,
            with_attr(dev(ex), "name", V("1.0.0")),
            Match(true),
        ),
        (
            "includes-semver-negative",
            r#"device.attributes["dra.example.com"].name.includes(semver("2.0.0"))"#,
            with_attr(dev(ex), "name", V("1.0.0")),
            Match(false),
        ),
        (
            "version",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#,
            with_attr(dev(ex), "name", V("1.0.0")),
            Match(true),
        ),
        (
            "version_v",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
            with_attr(dev(ex), "name", V("1.0.0")),
            Match(true),
        ),
        (
            "quantity",
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            with_cap(dev(ex), "name", "1Mi"),
            Match(true),
        ),
        (
            "check-positive",
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            with_cap(dev(ex), "name", "1Mi"),
            Match(true),
        ),
        (
            "check-negative",
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            dev(""),
            Match(true),
        ),
        (
            "all",
            r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#,
            with_cap(
                with_attr(with_attr(with_attr(with_attr(dev(ex), "bool", B(true)), "int", I(1)), "string", S("fish")), "version", V("1.0.0")),
                "quantity",
                "1Mi",
            ),
            Match(true),
        ),
        (
            "many",
            r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
            with_attr(with_attr(with_attr(dev(ex), "a", B(true)), "b", B(true)), "c", B(true)),
            Match(true),
        ),
        (
            "check_attribute_domains",
            r#"device.attributes.exists_one(x, x == "dra.example.com")"#,
            with_attr(dev(ex), "services", S("some_example_value")),
            Match(true),
        ),
        (
            "check_attribute_ids",
            r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#,
            with_attr(dev(ex), "services", S("some_example_value")),
            Match(true),
        ),
        (
            "split_attribute",
            r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#,
            with_attr(dev(ex), "services", S("some_example_value")),
            Match(true),
        ),
        (
            "regexp_attribute",
            r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#,
            with_attr(dev(ex), "services", S("asymetric")),
            Match(true),
        ),
        ("check_capacity_domains", r#"device.capacity.exists_one(x, x == "dra.example.com")"#, with_cap(dev(ex), "memory", "1Mi"), Match(true)),
        (
            "check_capacity_ids",
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
            with_cap(dev(ex), "memory", "1Mi"),
            Match(true),
        ),
        (
            "expensive",
            "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
            dev(ex),
            MatchError("actual cost limit exceeded"),
        ),
        (
            "expensive-absorbed-by-false",
            "false || [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, z5 > 0))))))) && false",
            dev(ex),
            MatchError("actual cost limit exceeded"),
        ),
        ("allow_multiple_allocations", "device.allowMultipleAllocations == true", Dev { multi: true, ..dev(ex) }, Match(true)),
        ("allow_multiple_allocations_default", "device.allowMultipleAllocations == false", dev(ex), Match(true)),
        // Not upstream's (it needs list attributes): a scalar result that is not a bool.
        (
            "string-result-type-causes-match-error",
            r#"device.attributes["dra.example.com"].name"#,
            with_attr(dev(ex), "name", S("fish")),
            MatchError("CEL result of type string could not be converted to bool"),
        ),
    ];
    for (name, expression, d, want) in cases {
        check(name, expression, &d, want);
    }
}

/// The device of scheduler_perf's `resourceslice-basic-devices.yaml` (attribute names as the
/// caller resolves them: unqualified ones in the driver's domain).
fn basic_device(memory: &'static str) -> Dev {
    let mut d = dev("test-driver.cdi.k8s.io");
    for (n, v) in [
        ("driver", S("xe")),
        ("driverVersion", V("1.2.3")),
        ("resource.k8s.io/pciRoot", S("1")),
        ("family", S("Arc Pro B-Series")),
        ("health", S("Healthy")),
        ("model", S("B60")),
        ("pciAddress", S("0000:01:00.0")),
        ("pciId", S("0xe211")),
        ("pciRoot", S("01")),
        ("resource.kubernetes.io/pciBusID", S("0000:01:00.0")),
        ("resource.kubernetes.io/pciRoot", S("pci0000:01")),
        ("sriov", B(true)),
        ("type", S("gpu")),
    ] {
        d = with_attr(d, n, v);
    }
    with_cap(with_cap(d, "memory", memory), "millicores", "1k")
}

/// Every `expression:` in scheduler_perf's DRA configs and templates (v1.37.2).
pub(super) const PERF_SELECTOR: &str = r#"device.attributes["test-driver.cdi.k8s.io"].driverVersion.major() >= 1 && device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("1Mi"))"#;

#[test]
fn scheduler_perf_dra_selectors() {
    let cases: Vec<(&str, &str, Dev, Want)> = vec![
        ("selector", PERF_SELECTOR, basic_device("24480Mi"), Match(true)),
        ("selector-small-memory", PERF_SELECTOR, basic_device("1Mi"), Match(false)),
        ("selector-other-driver", PERF_SELECTOR, dev("other"), MatchError("no such key: driverVersion")),
        ("deviceclass", r#"device.driver == "test-driver.cdi.k8s.io""#, basic_device("1Gi"), Match(true)),
        (
            "deviceclass-no-devices",
            r#"device.driver == "no-such-driver.cdi.k8s.io""#,
            basic_device("1Gi"),
            Match(false),
        ),
        (
            "deviceclass-consumablecapacity",
            "device.driver == \"test-driver.cdi.k8s.io\" &&\ndevice.allowMultipleAllocations == true",
            Dev { multi: true, ..basic_device("1Gi") },
            Match(true),
        ),
        (
            "deviceclass-consumablecapacity-single",
            "device.driver == \"test-driver.cdi.k8s.io\" &&\ndevice.allowMultipleAllocations == true",
            basic_device("1Gi"),
            Match(false),
        ),
    ];
    for (name, expression, d, want) in cases {
        check(name, expression, &d, want);
    }
}

/// CEL semantics beyond upstream's table: errors, short-circuits, the libraries.
#[test]
fn language_semantics() {
    let d = basic_device("24480Mi");
    let cases: Vec<(&str, Want)> = vec![
        // Commutative && and ||: a deciding operand wins over an error on either side.
        (r#"device.attributes["x"].missing || true"#, Match(true)),
        (r#"false && device.attributes["x"].missing"#, Match(false)),
        (r#"device.attributes["x"].missing && false"#, Match(false)),
        (r#"device.attributes["x"].missing && true"#, MatchError("no such key: missing")),
        (r#"has(device.attributes["test-driver.cdi.k8s.io"].sriov)"#, Match(true)),
        (r#"has(device.attributes["test-driver.cdi.k8s.io"].nope)"#, Match(false)),
        (r#"has(device.attributes.anything)"#, Match(true)),
        (r#"device.attributes["resource.kubernetes.io"].pciRoot == "pci0000:01""#, Match(true)),
        (r#"device.attributes["test-driver.cdi.k8s.io"].size() == 10"#, Match(true)),
        (r#"device.attributes.size() == 3"#, Match(true)),
        (r#"device.attributes.all(d, d.contains("."))"#, Match(true)),
        (r#"device.attributes["test-driver.cdi.k8s.io"].filter(k, k.startsWith("pci")).size() == 3"#, Match(true)),
        (r#"device.attributes["test-driver.cdi.k8s.io"].map(k, k.size()).exists(n, n == 13)"#, Match(true)),
        (r#"[1, 2, 3].map(x, x > 1, x * 2) == [4, 6]"#, Match(true)),
        (r#"{"a": 1}["a"] == 1 && !("b" in {"a": 1})"#, Match(true)),
        (r#"{"a": 1}["b"] == 1"#, MatchError("no such key: b")),
        (r#"[1, 2][5] == 1"#, MatchError("index out of bounds: 5")),
        (r#"1 / 0 == 1"#, MatchError("division by zero")),
        (r#"1 % 0 == 1"#, MatchError("modulus by zero")),
        (r#"9223372036854775807 + 1 > 0"#, MatchError("integer overflow")),
        (r#"-9223372036854775808 < 0"#, Match(true)),
        (r#"1 < 1.5 && 2u > 1 && 1.0 == dyn(1)"#, Match(true)),
        (r#"dyn(1) == "1""#, Match(false)),
        (r#"1 == "1""#, CompileError("found no matching overload for '_==_' applied to '(int, string)'")),
        (r#"device.driver > 1"#, CompileError("no matching overload")),
        (r#"device.capacity["test-driver.cdi.k8s.io"].memory > 1"#, CompileError("no matching overload")),
        (r#"device.nope"#, CompileError("undefined field 'nope'")),
        (r#"nope == 1"#, CompileError("undeclared reference to 'nope'")),
        (r#"device.driver.nope()"#, CompileError("undeclared reference to 'nope'")),
        (r#"[1, "a"].size() == 2"#, CompileError("expected type 'int' but found 'string'")),
        (r#"device.driver"#, CompileError("must evaluate to bool or the unknown type, not string")),
        (r#"true ? 1 : 2"#, CompileError("not int")),
        (r#""abc".substring(1) == "bc" && "abc".charAt(3) == "" && "a,b,,c".split(",").size() == 4"#, Match(true)),
        (r#""abc".substring(4) == """#, MatchError("index out of range: 4")),
        (r#""hello".indexOf("l") == 2 && "hello".lastIndexOf("l") == 3 && "héllo".indexOf("l") == 2"#, Match(true)),
        (r#"" x ".trim() == "x" && "AbC".lowerAscii() == "abc" && "a-b".replace("-", "+") == "a+b""#, Match(true)),
        (r#"["a", "b"].join("/") == "a/b" && "x".matches("^x$") && "ab12".find("[0-9]+") == "12""#, Match(true)),
        (
            r#"string(1.5) == "1.5" && string(1000000.0) == "1e+06" && int("12") == 12 && double("2.5") == 2.5"#,
            Match(true),
        ),
        (r#"int("x") == 1"#, MatchError("type conversion error")),
        (
            r#"semver("1.2.3-rc.1").isLessThan(semver("1.2.3")) && semver("1.2.3-rc.2").isGreaterThan(semver("1.2.3-rc.10")) == false"#,
            Match(true),
        ),
        (
            r#"semver("1.2.3+build") == semver("1.2.3") && semver("1.2.3").compareTo(semver("1.3.0")) == -1"#,
            Match(true),
        ),
        (
            r#"isSemver("01.2.3") == false && isSemver("1.2") == false && isSemver("1.2", true) && semver("v01.2", true).major() == 1"#,
            Match(true),
        ),
        (r#"semver("1.2") == semver("1.2.0")"#, MatchError("No Major.Minor.Patch elements found")),
        (r#"semver("1.2.3") == "1.2.3""#, CompileError("no matching overload")),
        (r#"dyn(semver("1.2.3")) == "1.2.3""#, MatchError("no such overload")),
        (
            r#"quantity("1Gi").isGreaterThan(quantity("1G")) && quantity("1.5").isInteger() == false && quantity("2k").asInteger() == 2000"#,
            Match(true),
        ),
        (
            r#"quantity("1Mi").add(quantity("1Mi")) == quantity("2Mi") && quantity("1").sub(1) == quantity("0") && sign(quantity("-1m")) == -1"#,
            Match(true),
        ),
        (
            r#"quantity("500m").asApproximateFloat() == 0.5 && quantity("1k").compareTo(quantity("1000")) == 0 && isQuantity("1x") == false"#,
            Match(true),
        ),
        (r#"quantity("1.5").asInteger() == 1"#, MatchError("cannot convert value to integer")),
        (r#"quantity("bad") == quantity("1")"#, MatchError("quantities must match")),
        (r#"device.capacity["test-driver.cdi.k8s.io"].memory == quantity("24480Mi")"#, Match(true)),
        (r#"cel.bind(a, device.attributes["test-driver.cdi.k8s.io"], a.model == "B60" && a.sriov)"#, Match(true)),
        (r#"[1, 2, 3].exists_one(x, x > 1)"#, Match(false)),
        (r#"[1, 0].all(x, 1 / x > 0)"#, MatchError("division by zero")),
        (r#"[0, 1].exists(x, 1 / x > 0)"#, Match(true)),
        (r#"!!true && --1 == 1 && -(-1) == 1"#, Match(true)),
        (r#"'''a"b''' == "a\"b" && r"\n" == "\\n" && "\x41\u0042\103" == "ABC""#, Match(true)),
        (r#"0x10 == 16 && 10u == uint(10) && 1e3 == 1000.0"#, Match(true)),
        (r#""ab".replace("", "-") == "-a-b-" && "aaa".replace("a", "b", 2) == "bba""#, Match(true)),
        (
            r#"x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x.size() > 0"#,
            CompileError("undeclared reference"),
        ),
    ];
    for (i, (expression, want)) in cases.into_iter().enumerate() {
        check(&format!("case {i}: {expression}"), expression, &d, want);
    }
}

#[test]
fn invalid_version_attribute_fails_every_evaluation() {
    let d = with_attr(dev("d"), "v", V("1.2"));
    check(
        "bad-version",
        "true",
        &d,
        MatchError("attribute d/v: parse semantic version: No Major.Minor.Patch elements found"),
    );
}

#[test]
fn deep_nesting_is_a_syntax_error_not_a_stack_overflow() {
    let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
    check("deep-parens", &deep, &dev(""), CompileError("recursion limit"));
    let chain = format!("true{}", " && true".repeat(5000));
    check("long-chain", &chain, &dev(""), CompileError("recursion limit"));
    let unary = format!("{}true", "!".repeat(5001));
    check("many-nots", &unary, &dev(""), Match(false));
    let ok = format!("{}true{}", "(".repeat(40), ")".repeat(40));
    check("nested-ok", &ok, &dev(""), Match(true));
}

/// The deepest expressions the parser accepts compile and evaluate on a 2 MiB thread (a test
/// thread's stack, smaller than the scheduling thread's), in a debug build.
#[test]
fn deepest_accepted_expressions_fit_a_small_stack() {
    let n = super::parse::MAX_DEPTH / 2 - 2;
    let shapes = [
        format!("{}true{}", "(".repeat(n), ")".repeat(n)),
        format!("{}1{} == 1", "[".repeat(n), "]".repeat(n)),
        format!("{}'a'{} > 0", "size(string(".repeat(n / 2), "))".repeat(n / 2)),
        format!("{}true{}", "[true].all(x, ".repeat(n / 2), ")".repeat(n / 2)),
        format!("{}{}", "-".repeat(n), "1 < 0 || true"),
        (0..n).map(|i| format!("{i} < 1 && ")).collect::<String>() + "true",
    ];
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for src in &shapes {
                if let Ok(sel) = Selector::compile(src) {
                    let _ = eval_on(&sel, &dev(""));
                }
            }
        })
        .expect("spawn")
        .join()
        .expect("no stack overflow");
}

#[test]
fn selector_is_send_sync_clone() {
    fn assert<T: Send + Sync + Clone>() {}
    assert::<Selector>();
    let s = Selector::compile("device.driver == 'a'").expect("compiles");
    let t = s.clone();
    std::thread::spawn(move || assert_eq!(eval_on(&t, &dev("a")), Ok(true))).join().expect("thread");
    assert_eq!(s.source(), "device.driver == 'a'");
}

/// Pieces random expressions are made of: every token kind, the libraries' names, the device.
const PIECES: &[&str] = &[
    "device",
    ".",
    "attributes",
    "capacity",
    "driver",
    "allowMultipleAllocations",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    ":",
    "\"d\"",
    "\"id\"",
    "'x'",
    "1",
    "0",
    "-1",
    "2u",
    "1.5",
    "true",
    "false",
    "null",
    "&&",
    "||",
    "!",
    "-",
    "+",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "in",
    "?",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "x",
    "cel",
    "bind",
    "size",
    "int",
    "string",
    "dyn",
    "semver",
    "\"1.2.3\"",
    "quantity",
    "\"1Mi\"",
    "major",
    "isGreaterThan",
    "compareTo",
    "add",
    "sub",
    "asInteger",
    "matches",
    "\"[a-\"",
    "split",
    "substring",
    "charAt",
    "indexOf",
    "includes",
    " ",
    "9223372036854775807",
    "\"\\",
    "r'",
    "'''",
    "0x",
    "1e",
    ".5",
    "\u{e9}",
    "//",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random token soups compile or fail cleanly, and evaluate or fail cleanly.
    #[test]
    fn random_expressions_never_panic(idx in proptest::collection::vec(0..PIECES.len(), 0..40)) {
        let src: String = idx.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join("");
        if let Ok(sel) = Selector::compile(&src) {
            let _ = eval_on(&sel, &basic_device("1Gi"));
            let _ = eval_on(&sel, &dev(""));
        }
    }

    /// Arbitrary strings never panic the lexer, parser or checker.
    #[test]
    fn random_strings_never_panic(src in ".{0,80}") {
        if let Ok(sel) = Selector::compile(&src) {
            let _ = eval_on(&sel, &basic_device("1Gi"));
        }
    }

    /// Arbitrary version and quantity strings in library calls never panic.
    #[test]
    fn random_library_arguments_never_panic(s in "[0-9a-zA-Z.+\\-]{0,20}", n in any::<i64>()) {
        let exprs = [
            format!("isSemver({s:?}) || isSemver({s:?}, true) || semver({s:?}, true).major() > 0"),
            format!("isQuantity({s:?}) && quantity({s:?}).add({n}).isInteger()"),
            format!("{s:?}.substring(1, 3) == '' || {s:?}.indexOf('.', {n}) > 0 || {s:?}.split('.', {n}).size() > 0"),
            format!("string(double({n})) != '' && {n} * 2 > 0 && {n} - 1 < {n}"),
        ];
        for e in &exprs {
            if let Ok(sel) = Selector::compile(e) {
                let _ = eval_on(&sel, &basic_device("1Gi"));
            }
        }
    }
}

/// Functions that build strings charge the result's size before building it, so short
/// literals cannot ask for gigabytes.
#[test]
fn string_blow_up_hits_the_cost_limit() {
    let a = "a".repeat(5000);
    let b = "b".repeat(5000);
    let expression = format!("'{a}'.replace('', '{b}') == ''");
    check("replace-blow-up", &expression, &dev(""), MatchError("actual cost limit exceeded"));
    let doubling = (0..20).fold(format!("'{a}'"), |acc, i| format!("cel.bind(v{i}, {acc}, v{i} + v{i})"));
    check("bind-doubling", &format!("{doubling}.size() > 0"), &dev(""), MatchError("actual cost limit exceeded"));
}

/// Upstream's DRAListTypeAttributes cases (`compile_test.go`: `list-*`, `macro-on-list-*`,
/// `includes-function-*`, `in-operator-on-list`, the `macro-exists-on-*` scalar errors) and ours
/// (indexing, `in` with strings and semvers, equality with a list literal, an unparsable version
/// in a list), on attributes of the driver's domain.
#[test]
fn list_attribute_cases() {
    use AttributeValue as V;
    let fish_bird: &'static [String] = Box::leak(Box::new(["fish".to_string(), "bird".to_string()]));
    let versions: &'static [String] = Box::leak(Box::new(["1.0.0".to_string(), "2.0.0".to_string()]));
    let bad_versions: &'static [String] = Box::leak(Box::new(["1.0.0".to_string(), "01.0".to_string()]));
    let long: &'static [String] =
        Box::leak((0..48).map(|i| format!("value-{i}")).collect::<Vec<_>>().into_boxed_slice());
    let d = |v: AttributeValue<'static>| with_attr(dev("dra.example.com"), "name", v);
    let a = r#"device.attributes["dra.example.com"].name"#;
    let cases: Vec<(&str, String, AttributeValue<'static>, Want)> = vec![
        (
            "list-result-type-causes-match-error",
            a.to_string(),
            V::Strings(fish_bird),
            MatchError("CEL result of type list could not be converted to bool"),
        ),
        ("includes-function-can-evaluate", format!(r#"{a}.includes("fish")"#), V::Strings(fish_bird), Match(true)),
        ("list-of-bool", format!("{a}.size() == 2"), V::Bools(&[true, false]), Match(true)),
        ("list-of-int", format!("{a}.size() == 2"), V::Ints(&[1, 2]), Match(true)),
        ("list-of-string", format!("{a}.size() == 2"), V::Strings(fish_bird), Match(true)),
        ("list-of-semver", format!("{a}.size() == 2"), V::Versions(versions), Match(true)),
        ("macro-on-list-of-int", format!("{a}.exists(x, x > 0)"), V::Ints(&[1, 2]), Match(true)),
        ("macro-on-list-of-string", format!(r#"{a}.all(x, x != "")"#), V::Strings(fish_bird), Match(true)),
        (
            "macro-on-list-of-semver",
            format!(r#"{a}.all(x, x.isGreaterThan(semver("0.0.1")))"#),
            V::Versions(versions),
            Match(true),
        ),
        (
            "macro-exists-on-int",
            format!("{a}.exists(x, x > 0)"),
            V::Int(1),
            MatchError("got 'types.Int', expected iterable type"),
        ),
        (
            "macro-exists-on-string",
            format!(r#"{a}.exists(x, x == "fish")"#),
            V::String("fish"),
            MatchError("got 'types.String', expected iterable type"),
        ),
        (
            "macro-exists-on-version",
            format!(r#"{a}.exists(x, x.isGreaterThan(semver("0.0.1")))"#),
            V::Version("1.0.0"),
            MatchError("got 'cel.Semver', expected iterable type"),
        ),
        ("includes-function-on-bool-scalar-positive", format!("{a}.includes(true)"), V::Bool(true), Match(true)),
        (
            "includes-function-on-bool-list-positive",
            format!("{a}.includes(true)"),
            V::Bools(&[true, false]),
            Match(true),
        ),
        (
            "includes-function-on-bool-list-negative",
            format!("{a}.includes(false)"),
            V::Bools(&[true, true]),
            Match(false),
        ),
        ("includes-function-on-int-scalar-negative", format!("{a}.includes(1)"), V::Int(2), Match(false)),
        ("includes-function-on-int-list-positive", format!("{a}.includes(1)"), V::Ints(&[1, 2]), Match(true)),
        ("includes-function-on-int-list-negative", format!("{a}.includes(3)"), V::Ints(&[1, 2]), Match(false)),
        (
            "includes-function-on-string-list-negative",
            format!(r#"{a}.includes("cat")"#),
            V::Strings(fish_bird),
            Match(false),
        ),
        (
            "includes-function-on-semver-list-positive",
            format!(r#"{a}.includes(semver("1.0.0"))"#),
            V::Versions(versions),
            Match(true),
        ),
        (
            "includes-function-on-semver-list-negative",
            format!(r#"{a}.includes(semver("3.0.0"))"#),
            V::Versions(versions),
            Match(false),
        ),
        (
            "includes-function-on-very-long-list-positive",
            format!(r#"{a}.includes("value-48")"#),
            V::Strings(long),
            Match(false),
        ),
        ("includes-on-the-last-of-48", format!(r#"{a}.includes("value-47")"#), V::Strings(long), Match(true)),
        ("in-operator-on-list", format!("1 in {a}"), V::Ints(&[1, 2, 3]), Match(true)),
        (
            "in-operator-on-string-list",
            format!(r#""bird" in {a} && !("cat" in {a})"#),
            V::Strings(fish_bird),
            Match(true),
        ),
        ("in-operator-on-semver-list", format!(r#"semver("2.0.0") in {a}"#), V::Versions(versions), Match(true)),
        ("index", format!(r#"{a}[1] == "bird" && {a}[0].startsWith("f")"#), V::Strings(fish_bird), Match(true)),
        (
            "index-out-of-range",
            format!(r#"{a}[2] == "bird""#),
            V::Strings(fish_bird),
            MatchError("index out of bounds: 2"),
        ),
        ("equals-list-literal", format!("{a} == [1, 2]"), V::Ints(&[1, 2]), Match(true)),
        ("order-matters-for-equality", format!("{a} == [2, 1]"), V::Ints(&[1, 2]), Match(false)),
        ("index-of", format!(r#"{a}.indexOf("bird") == 1"#), V::Strings(fish_bird), Match(true)),
        ("filter-size", format!("{a}.filter(x, x > 1).size() == 2"), V::Ints(&[1, 2, 3]), Match(true)),
        (
            "unparsable-version-in-list",
            "true".to_string(),
            V::Versions(bad_versions),
            MatchError("parse semantic version"),
        ),
    ];
    for (name, expression, value, want) in cases {
        check(name, &expression, &d(value), want);
    }
}
