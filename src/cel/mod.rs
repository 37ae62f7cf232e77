//! CEL device selectors: the expressions of DeviceClass and ResourceClaim `selectors[].cel`,
//! with the semantics of k8s.io/dynamic-resource-allocation v0.37.2 `cel/compile.go` (Kubernetes
//! v1.37.2) as the scheduler compiles them (`Options{}`: the `StoredExpressions` environment,
//! so every library and the newest `device` declaration).
//!
//! **Why hand-written.** The `cel` crate (formerly `cel-interpreter`) has no type checker, so it
//! cannot give cel-go's compile-time answers (a selector of type `int`, an undeclared name, no
//! matching overload); its values own their text (`Arc<String>`), so every evaluation would
//! copy the device's strings into a fresh map; and it pulls in an ANTLR runtime. This module is
//! a small lexer/parser (`parse.rs`), checker (`check.rs`) and tree-walking evaluator
//! (`eval.rs`, `funcs.rs`) for the CEL subset below, whose values borrow the device.
//!
//! **The `device` variable** (`kubernetes.DRADevice`): `driver` (string),
//! `allowMultipleAllocations` (bool), `attributes` (`map(string, map(string, dyn))`: domain ->
//! id -> int, bool, string or semver) and `capacity` (`map(string, map(string,
//! kubernetes.Quantity))`). Unqualified attribute and capacity names belong to the driver's
//! domain (the caller resolves them, see [`DeviceEnv`]). As upstream's `mapper`, a missing
//! domain reads as an empty map: `device.attributes["x"]` never fails,
//! `device.attributes["x"].y` fails with `no such key: y`, `"x" in device.attributes` is false,
//! and `has(device.attributes.x)` is true.
//!
//! **Supported:** literals (int, uint, double, string incl. raw and triple-quoted; lists, maps),
//! `! - * / % + - < <= > >= == != in && || ?:` with CEL's commutative error handling for
//! `&&`/`||` and cross-type numeric comparison, index and field selection, `has()`, the macros
//! `all exists exists_one map filter` and `cel.bind`; `size int uint double string bool dyn`,
//! `contains startsWith endsWith matches`, the strings extension (`charAt indexOf lastIndexOf
//! lowerAscii upperAscii replace split substring trim join`), Kubernetes' regex library (`find
//! findAll`), lists' `indexOf lastIndexOf` and `includes`; semver (`semver(s[, normalize])
//! isSemver major minor patch compareTo isGreaterThan isLessThan`, blang/semver's strict
//! grammar and ordering) and quantity (`quantity isQuantity sign isInteger asInteger
//! asApproximateFloat add sub compareTo isGreaterThan isLessThan`, on
//! [`crate::api::quantity::Quantity`], exact nano-units). A selector whose type is not `bool` or
//! `dyn` is a compile error (`must evaluate to bool or the unknown type, not int`); a run-time
//! result that is not a bool is an evaluation error (`CEL result of type list could not be
//! converted to bool`).
//!
//! **Not modelled** (a compile error naming the construct, never a wrong answer): bytes,
//! timestamps and durations, optional types (`?.`, `[?`), two-variable comprehensions, message
//! construction, the `sets`, `ip`, `cidr`, `url`, `format`, `authz` libraries, `lists.range`.
//!
//! **List-typed attributes** (DRAListTypeAttributes): an `ints`, `bools`, `strings` or `versions`
//! attribute is a CEL list of int, bool, string or semver (upstream's `getAttributeValue`, which
//! returns lists whatever the gate: the API server drops them with the gate off); the attribute
//! type is `dyn`, so `size`, `in`, indexing, `all`/`exists`/..., `indexOf` and `includes` (a list
//! holding the value, or a scalar equal to it) apply. Such a value is built (one allocation) each
//! time a selector reads it.
//! **Cost limit:** upstream stops an evaluation past `CELSelectorExpressionMaxCost` = 1,000,000
//! cost units ("operation cancelled: actual cost limit exceeded"). Only nested comprehensions
//! reach it in practice (upstream's own `expensive` case: seven nested `all`s over ten
//! elements); we count one unit per operator, call, selection, comprehension step and list
//! element, plus a tenth of a unit per string byte scanned or built, so the limit trips on such
//! expressions but not at exactly cel-go's count. Nesting is bounded by [`parse::MAX_DEPTH`] (100, below cel-go's 250, so debug builds
//! fit a 2 MiB stack).
//!
//! **Cost per evaluation:** a walk of the tree; values borrow the device and the program, so
//! field, map and comparison steps allocate nothing (the `device.attributes[d].id` lookups are
//! linear scans of the caller's slices, which hold at most 32 entries per device). Allocations
//! happen only for values built at run time (string concatenation and functions returning new
//! strings, list and map literals, `map`/`filter` results), comprehensions over more than 8
//! elements, more than 4 local variables, and errors. Each version attribute is parsed once per
//! evaluation, as upstream does (an unparsable one fails every evaluation).

mod ast;
mod check;
mod eval;
mod funcs;
pub(crate) mod parse;
mod semver;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use crate::api::quantity::Quantity;

/// A compile or evaluation error; `message` carries cel-go's wording where it matters
/// (`no such key: x`, `compilation failed: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelError {
    pub message: String,
}

impl fmt::Display for CelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CelError {}

/// One attribute value of a device: a scalar or (DRAListTypeAttributes) a list, which a
/// selector reads as a CEL `list` (`size`, `in`, indexing, `includes`, the macros).
#[derive(Debug, Clone, Copy)]
pub enum AttributeValue<'a> {
    Int(i64),
    Bool(bool),
    String(&'a str),
    /// A semantic version's text (`1.2.3-rc.1`), parsed by blang/semver's rules when used.
    Version(&'a str),
    Ints(&'a [i64]),
    Bools(&'a [bool]),
    Strings(&'a [String]),
    /// Each parsed as [`AttributeValue::Version`] is (an unparsable one fails every evaluation).
    Versions(&'a [String]),
}

/// The device a selector is evaluated against, borrowed from the caller's tables.
pub struct DeviceEnv<'a> {
    pub driver: &'a str,
    /// (domain, id, value): unqualified attribute names already resolved to the driver's domain by the caller.
    pub attributes: &'a [(&'a str, &'a str, AttributeValue<'a>)],
    pub capacity: &'a [(&'a str, &'a str, Quantity)],
    pub allow_multiple_allocations: bool,
}

/// A compiled selector expression (cheap to clone; shared between threads).
#[derive(Debug, Clone)]
pub struct Selector {
    inner: Arc<Program>,
}

#[derive(Debug)]
struct Program {
    expr: ast::Expr,
    slots: usize,
    source: Box<str>,
}

// SAFETY-free: the tree holds no `Rc` (values built during evaluation do, and never escape it).
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Selector>();
};

/// 1-based line and column of a byte offset, as cel-go reports them.
fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = src.get(..offset.min(src.len())).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl Selector {
    /// Parses and type-checks `expression` as upstream's `CompileCELExpression`.
    pub fn compile(expression: &str) -> Result<Selector, CelError> {
        let mut expr = parse::parse(expression).map_err(|e| {
            let (l, c) = line_col(expression, e.offset);
            CelError { message: format!("compilation failed: ERROR: <input>:{l}:{c}: Syntax error: {}", e.detail) }
        })?;
        let mut checker = check::Checker::new();
        let ty = checker
            .check(&mut expr)
            .map_err(|m| CelError { message: format!("compilation failed: ERROR: <input>: {m}") })?;
        if !matches!(ty, check::Ty::Bool | check::Ty::Dyn) {
            return Err(CelError { message: format!("must evaluate to bool or the unknown type, not {ty}") });
        }
        Ok(Selector { inner: Arc::new(Program { expr, slots: checker.slots, source: expression.into() }) })
    }

    /// The expression text this selector was compiled from.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// Evaluates the selector against `device`: `Ok(true)` selects it; a run-time error or a
    /// result that is not a bool is an `Err` (upstream's `DeviceMatches`).
    pub fn matches(&self, device: &DeviceEnv<'_>) -> Result<bool, CelError> {
        let v = eval::run(&self.inner.expr, self.inner.slots, device)?;
        match v {
            eval::Value::Bool(b) => Ok(b),
            other => {
                let t = eval::type_name(&other);
                Err(CelError {
                    message: format!("CEL result of type {t} could not be converted to bool: type conversion error from '{t}' to 'bool'"),
                })
            }
        }
    }
}
