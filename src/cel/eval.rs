//! The evaluator: a tree walk over the checked expression with values that borrow the device
//! and the program, so a selector such as `device.driver == "x"` evaluates without allocating.

use std::cmp::Ordering;
use std::ops::Deref;
use std::rc::Rc;

use smallvec::SmallVec;

use super::ast::{BinOp, Const, Expr, MacroKind};
use super::semver;
use super::{AttributeValue, CelError, DeviceEnv};
use crate::api::quantity::Quantity;

/// The runtime cost limit: `resourceapi.CELSelectorExpressionMaxCost` (1,000,000). Cost is
/// counted as one unit per evaluated operator, call, selection, index or comprehension step,
/// plus one per element a list or string operation builds or scans, an approximation of
/// cel-go's cost tracker (see the module doc).
pub(crate) const COST_LIMIT: u64 = 1_000_000;

/// Text that is either borrowed (from the device or the program) or built during evaluation.
#[derive(Debug, Clone)]
pub(crate) enum Str<'a> {
    B(&'a str),
    O(Rc<str>),
}

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Str::B(s) => s,
            Str::O(s) => s,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Str<'a>),
    List(Rc<Vec<Value<'a>>>),
    Map(Rc<Vec<(Value<'a>, Value<'a>)>>),
    /// A version, as text known to parse.
    Semver(Str<'a>),
    Quantity(Quantity),
    /// The `device` variable (a map at run time: `driver`, `attributes`, ...).
    Device,
    /// `device.attributes`: domain -> id -> value; a missing domain reads as an empty map.
    Attributes,
    /// `device.attributes[domain]`.
    AttrDomain(Str<'a>),
    /// `device.capacity`: domain -> id -> quantity; a missing domain reads as an empty map.
    Capacity,
    /// `device.capacity[domain]`.
    CapDomain(Str<'a>),
}

type R<'a> = Result<Value<'a>, CelError>;

pub(crate) fn fail(msg: impl Into<String>) -> CelError {
    CelError { message: msg.into() }
}

pub(crate) fn no_overload() -> CelError {
    fail("no such overload")
}

/// cel-go's type name of a value (`result.Type().TypeName()`).
pub(crate) fn type_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint",
        Value::Double(_) => "double",
        Value::Str(_) => "string",
        Value::List(_) => "list",
        Value::Map(_)
        | Value::Device
        | Value::Attributes
        | Value::AttrDomain(_)
        | Value::Capacity
        | Value::CapDomain(_) => "map",
        Value::Semver(_) => "kubernetes.Semver",
        Value::Quantity(_) => "kubernetes.Quantity",
    }
}

/// The Go type cel-go names in "got '%T', expected iterable type".
pub(crate) fn go_type(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "types.Null",
        Value::Bool(_) => "types.Bool",
        Value::Int(_) => "types.Int",
        Value::Uint(_) => "types.Uint",
        Value::Double(_) => "types.Double",
        Value::Str(_) => "types.String",
        Value::Semver(_) => "cel.Semver",
        Value::Quantity(_) => "cel.Quantity",
        _ => "map",
    }
}

/// Compiles a regular expression (RE2 syntax; Rust's `regex` is RE2-compatible), bounded in size.
pub(crate) fn compile_regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
        .map_err(|e| format!("error parsing regexp: {e}"))
}

pub(crate) struct Cx<'a> {
    pub(crate) env: &'a DeviceEnv<'a>,
    locals: SmallVec<[Value<'a>; 4]>,
    cost: u64,
}

/// The message of the cost-limit error, which no `&&`, `||` or macro absorbs (cel-go aborts
/// the whole evaluation).
const CANCELLED: &str = "operation cancelled: actual cost limit exceeded";

/// Passes a result through, except that a cancelled evaluation becomes the outer `Err`.
fn cancelled(r: R<'_>) -> Result<R<'_>, CelError> {
    match r {
        Err(e) if e.message == CANCELLED => Err(e),
        other => Ok(other),
    }
}

impl Cx<'_> {
    pub(crate) fn charge(&mut self, n: u64) -> Result<(), CelError> {
        self.cost = self.cost.saturating_add(n);
        if self.cost > COST_LIMIT {
            return Err(fail(CANCELLED));
        }
        Ok(())
    }
}

/// Evaluates `expr` (with `slots` locals) against `env`; the raw result value.
pub(crate) fn run<'a>(expr: &'a Expr, slots: usize, env: &'a DeviceEnv<'a>) -> R<'a> {
    // As upstream's DeviceMatches, a version attribute that does not parse fails every
    // evaluation, used or not (the API server rejects such slices, so this is for fidelity).
    for (domain, id, v) in env.attributes {
        let versions: &[String] = match v {
            AttributeValue::Version(s) => {
                if let Err(m) = semver::parse(s) {
                    return Err(fail(format!("attribute {domain}/{id}: parse semantic version: {m}")));
                }
                continue;
            }
            AttributeValue::Versions(list) => list,
            _ => continue,
        };
        for s in versions {
            if let Err(m) = semver::parse(s) {
                return Err(fail(format!("attribute {domain}/{id}: parse semantic version: {m}")));
            }
        }
    }
    let mut cx = Cx { env, locals: SmallVec::new(), cost: 0 };
    cx.locals.resize(slots, Value::Null);
    eval(expr, &mut cx)
}

fn as_bool(v: &Value<'_>) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

fn eval<'a>(e: &'a Expr, cx: &mut Cx<'a>) -> R<'a> {
    match e {
        Expr::Const(c) => Ok(match c {
            Const::Null => Value::Null,
            Const::Bool(b) => Value::Bool(*b),
            Const::Int(i) => Value::Int(*i),
            Const::Uint(u) => Value::Uint(*u),
            Const::Double(d) => Value::Double(*d),
            Const::Str(s) => Value::Str(Str::B(s)),
            Const::Quantity(q) => Value::Quantity(*q),
            Const::Semver(s) => Value::Semver(Str::B(s)),
        }),
        Expr::Ident(name) => Err(fail(format!("no such attribute(s): {name}"))),
        Expr::Local(slot) => Ok(cx.locals.get(*slot as usize).cloned().unwrap_or(Value::Null)),
        Expr::Device => Ok(Value::Device),
        Expr::Select { operand, field, test_only } => {
            cx.charge(1)?;
            let v = eval(operand, cx)?;
            let key = Value::Str(Str::B(field));
            if *test_only {
                return has_field(&v, &key, cx).map(Value::Bool);
            }
            index(v, &key, cx)
        }
        Expr::Index(a, i) => {
            cx.charge(1)?;
            let v = eval(a, cx)?;
            let k = eval(i, cx)?;
            index(v, &k, cx)
        }
        Expr::Not(x) => {
            cx.charge(1)?;
            match eval(x, cx)? {
                Value::Bool(b) => Ok(Value::Bool(!b)),
                _ => Err(no_overload()),
            }
        }
        Expr::Neg(x) => {
            cx.charge(1)?;
            match eval(x, cx)? {
                Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(|| fail("integer overflow")),
                Value::Double(d) => Ok(Value::Double(-d)),
                _ => Err(no_overload()),
            }
        }
        Expr::And(l, r) => {
            cx.charge(1)?;
            let lv = cancelled(eval(l, cx))?;
            if let Ok(Value::Bool(false)) = lv {
                return Ok(Value::Bool(false));
            }
            let rv = cancelled(eval(r, cx))?;
            logic(lv, rv, false)
        }
        Expr::Or(l, r) => {
            cx.charge(1)?;
            let lv = cancelled(eval(l, cx))?;
            if let Ok(Value::Bool(true)) = lv {
                return Ok(Value::Bool(true));
            }
            let rv = cancelled(eval(r, cx))?;
            logic(lv, rv, true)
        }
        Expr::Cond(c, t, f) => {
            cx.charge(1)?;
            match eval(c, cx)? {
                Value::Bool(true) => eval(t, cx),
                Value::Bool(false) => eval(f, cx),
                _ => Err(no_overload()),
            }
        }
        Expr::Binary(op, l, r) => {
            cx.charge(1)?;
            let lv = eval(l, cx)?;
            let rv = eval(r, cx)?;
            binary(*op, lv, rv, cx)
        }
        Expr::List(items) => {
            cx.charge(1 + items.len() as u64)?;
            let mut out = Vec::with_capacity(items.len());
            for it in items {
                out.push(eval(it, cx)?);
            }
            Ok(Value::List(Rc::new(out)))
        }
        Expr::Map(entries) => {
            cx.charge(1 + entries.len() as u64)?;
            let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let k = eval(k, cx)?;
                if !matches!(k, Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::Str(_)) {
                    return Err(fail(format!("unsupported key type: {}", type_name(&k))));
                }
                for (ek, _) in &out {
                    if equals(ek, &k)? {
                        return Err(fail(format!("insert failed: key {} already exists", display(&k))));
                    }
                }
                let v = eval(v, cx)?;
                out.push((k, v));
            }
            Ok(Value::Map(Rc::new(out)))
        }
        Expr::Bind { slot, init, body, .. } => {
            let v = eval(init, cx)?;
            set_local(cx, *slot, v);
            eval(body, cx)
        }
        Expr::Comprehension { kind, range, slot, pred, transform, .. } => {
            cx.charge(1)?;
            let r = eval(range, cx)?;
            comprehension(*kind, r, *slot, pred, transform.as_deref(), cx)
        }
        Expr::RegexCall { func, target, regex, args } => {
            cx.charge(1)?;
            let s = eval(target, cx)?;
            let mut rest: SmallVec<[Value<'a>; 2]> = SmallVec::new();
            for a in args {
                rest.push(eval(a, cx)?);
            }
            super::funcs::call_regex(*func, &s, regex, &rest, cx)
        }
        Expr::Call { target, args, func, name } => {
            cx.charge(1)?;
            let Some(func) = func else {
                return Err(fail(format!("no such overload: {name}")));
            };
            let mut vals: SmallVec<[Value<'a>; 4]> = SmallVec::new();
            if let Some(t) = target {
                vals.push(eval(t, cx)?);
            }
            for a in args {
                vals.push(eval(a, cx)?);
            }
            super::funcs::call(*func, &vals, cx)
        }
    }
}

fn set_local<'a>(cx: &mut Cx<'a>, slot: u16, v: Value<'a>) {
    if let Some(l) = cx.locals.get_mut(slot as usize) {
        *l = v;
    }
}

/// CEL's commutative `&&` / `||` (`is_or`): a deciding value wins over an error, then the
/// first error, then "no such overload" for a non-bool operand.
fn logic<'a>(l: R<'a>, r: R<'a>, is_or: bool) -> R<'a> {
    let decide = is_or;
    if matches!(&l, Ok(v) if as_bool(v) == Some(decide)) || matches!(&r, Ok(v) if as_bool(v) == Some(decide)) {
        return Ok(Value::Bool(decide));
    }
    let l = l?;
    let r = r?;
    match (as_bool(&l), as_bool(&r)) {
        (Some(_), Some(_)) => Ok(Value::Bool(!decide)),
        _ => Err(no_overload()),
    }
}

pub(crate) fn display(v: &Value<'_>) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Str(s) | Value::Semver(s) => s.to_string(),
        Value::Quantity(q) => q.to_string(),
        other => type_name(other).to_string(),
    }
}

fn attr_value<'a>(v: &AttributeValue<'a>) -> Value<'a> {
    match *v {
        AttributeValue::Int(i) => Value::Int(i),
        AttributeValue::Bool(b) => Value::Bool(b),
        AttributeValue::String(s) => Value::Str(Str::B(s)),
        AttributeValue::Version(s) => Value::Semver(Str::B(s)),
        AttributeValue::Ints(l) => Value::List(Rc::new(l.iter().map(|&i| Value::Int(i)).collect())),
        AttributeValue::Bools(l) => Value::List(Rc::new(l.iter().map(|&b| Value::Bool(b)).collect())),
        AttributeValue::Strings(l) => Value::List(Rc::new(l.iter().map(|s| Value::Str(Str::B(s))).collect())),
        AttributeValue::Versions(l) => Value::List(Rc::new(l.iter().map(|s| Value::Semver(Str::B(s))).collect())),
    }
}

/// Reads `v[key]` (and `v.key`): maps by key, lists by index.
fn index<'a>(v: Value<'a>, key: &Value<'a>, cx: &mut Cx<'a>) -> R<'a> {
    let env = cx.env;
    match (&v, key) {
        (Value::Device, Value::Str(k)) => match &**k {
            "driver" => Ok(Value::Str(Str::B(env.driver))),
            "attributes" => Ok(Value::Attributes),
            "capacity" => Ok(Value::Capacity),
            "allowMultipleAllocations" => Ok(Value::Bool(env.allow_multiple_allocations)),
            _ => Err(fail(format!("no such key: {}", &**k))),
        },
        // A missing domain reads as an empty map (upstream's `mapper` with a default).
        (Value::Attributes, Value::Str(k)) => Ok(Value::AttrDomain(k.clone())),
        (Value::Capacity, Value::Str(k)) => Ok(Value::CapDomain(k.clone())),
        (Value::AttrDomain(d), Value::Str(k)) => env
            .attributes
            .iter()
            .find(|(dom, id, _)| *dom == &**d && *id == &**k)
            .map(|(_, _, v)| attr_value(v))
            .ok_or_else(|| fail(format!("no such key: {}", &**k))),
        (Value::CapDomain(d), Value::Str(k)) => env
            .capacity
            .iter()
            .find(|(dom, id, _)| *dom == &**d && *id == &**k)
            .map(|(_, _, q)| Value::Quantity(*q))
            .ok_or_else(|| fail(format!("no such key: {}", &**k))),
        (Value::Device | Value::Attributes | Value::Capacity | Value::AttrDomain(_) | Value::CapDomain(_), k) => {
            Err(fail(format!("no such key: {}", display(k))))
        }
        (Value::Map(m), k) => {
            for (ek, ev) in m.iter() {
                if key_equals(ek, k) {
                    return Ok(ev.clone());
                }
            }
            Err(fail(format!("no such key: {}", display(k))))
        }
        (Value::List(l), k) => {
            let i = match *k {
                Value::Int(i) => i,
                Value::Uint(u) => i64::try_from(u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() && d.abs() < 9.2e18 => d as i64,
                _ => return Err(fail(format!("unsupported index value: {}", display(k)))),
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| l.get(i))
                .cloned()
                .ok_or_else(|| fail(format!("index out of bounds: {i}")))
        }
        (_, k) => Err(fail(format!("no such key: {}", display(k)))),
    }
}

/// Map keys compare with CEL's heterogeneous numeric equality (`{1: x}[1u]` finds the entry).
fn key_equals(a: &Value<'_>, b: &Value<'_>) -> bool {
    equals(a, b).unwrap_or(false)
}

/// `has(v.field)`.
fn has_field<'a>(v: &Value<'a>, key: &Value<'a>, cx: &mut Cx<'a>) -> Result<bool, CelError> {
    match v {
        Value::Device => Ok(
            matches!(key, Value::Str(k) if matches!(&**k, "driver" | "attributes" | "capacity" | "allowMultipleAllocations")),
        ),
        // Upstream's default-valued maps report every domain as present.
        Value::Attributes | Value::Capacity => Ok(true),
        Value::AttrDomain(_) | Value::CapDomain(_) | Value::Map(_) => contains_key(v, key, cx),
        _ => Err(fail(format!("no such key: {}", display(key)))),
    }
}

/// `key in map`.
fn contains_key<'a>(m: &Value<'a>, key: &Value<'a>, cx: &Cx<'a>) -> Result<bool, CelError> {
    let env = cx.env;
    Ok(match (m, key) {
        (Value::Attributes, Value::Str(k)) => env.attributes.iter().any(|(d, _, _)| *d == &**k),
        (Value::Capacity, Value::Str(k)) => env.capacity.iter().any(|(d, _, _)| *d == &**k),
        (Value::AttrDomain(d), Value::Str(k)) => env.attributes.iter().any(|(dom, id, _)| *dom == &**d && *id == &**k),
        (Value::CapDomain(d), Value::Str(k)) => env.capacity.iter().any(|(dom, id, _)| *dom == &**d && *id == &**k),
        (Value::Device, Value::Str(k)) => {
            matches!(&**k, "driver" | "attributes" | "capacity" | "allowMultipleAllocations")
        }
        (Value::Map(m), k) => m.iter().any(|(ek, _)| key_equals(ek, k)),
        (Value::Device | Value::Attributes | Value::Capacity | Value::AttrDomain(_) | Value::CapDomain(_), _) => false,
        _ => return Err(no_overload()),
    })
}

/// The keys of a map value, or the elements of a list, in iteration order (device maps in the
/// order of the caller's slices, each domain once; Go's map order is random, so upstream has
/// no order to match).
pub(crate) fn items<'a>(v: &Value<'a>, env: &'a DeviceEnv<'a>) -> Result<SmallVec<[Value<'a>; 8]>, CelError> {
    let mut out = SmallVec::new();
    match v {
        Value::List(l) => out.extend(l.iter().cloned()),
        Value::Map(m) => out.extend(m.iter().map(|(k, _)| k.clone())),
        Value::Device => {
            for k in ["driver", "allowMultipleAllocations", "attributes", "capacity"] {
                out.push(Value::Str(Str::B(k)));
            }
        }
        Value::Attributes => {
            for (i, (d, _, _)) in env.attributes.iter().enumerate() {
                if !env.attributes[..i].iter().any(|(e, _, _)| e == d) {
                    out.push(Value::Str(Str::B(d)));
                }
            }
        }
        Value::Capacity => {
            for (i, (d, _, _)) in env.capacity.iter().enumerate() {
                if !env.capacity[..i].iter().any(|(e, _, _)| e == d) {
                    out.push(Value::Str(Str::B(d)));
                }
            }
        }
        Value::AttrDomain(dom) => {
            for (d, id, _) in env.attributes {
                if *d == &**dom && !out.iter().any(|v: &Value<'a>| matches!(v, Value::Str(s) if &**s == *id)) {
                    out.push(Value::Str(Str::B(id)));
                }
            }
        }
        Value::CapDomain(dom) => {
            for (d, id, _) in env.capacity {
                if *d == &**dom && !out.iter().any(|v: &Value<'a>| matches!(v, Value::Str(s) if &**s == *id)) {
                    out.push(Value::Str(Str::B(id)));
                }
            }
        }
        other => return Err(fail(format!("got '{}', expected iterable type", go_type(other)))),
    }
    Ok(out)
}

fn comprehension<'a>(
    kind: MacroKind,
    range: Value<'a>,
    slot: u16,
    pred: &'a Expr,
    transform: Option<&'a Expr>,
    cx: &mut Cx<'a>,
) -> R<'a> {
    let env = cx.env;
    let elems = items(&range, env)?;
    match kind {
        MacroKind::All | MacroKind::Exists => {
            let decide = kind == MacroKind::Exists;
            let mut err: Option<CelError> = None;
            for x in elems {
                cx.charge(1)?;
                set_local(cx, slot, x);
                match eval(pred, cx) {
                    Ok(Value::Bool(b)) if b == decide => return Ok(Value::Bool(decide)),
                    Ok(Value::Bool(_)) => {}
                    Ok(_) => {
                        err.get_or_insert_with(no_overload);
                    }
                    Err(e) => {
                        if e.message == CANCELLED {
                            return Err(e);
                        }
                        err.get_or_insert(e);
                    }
                }
            }
            match err {
                Some(e) => Err(e),
                None => Ok(Value::Bool(!decide)),
            }
        }
        MacroKind::ExistsOne => {
            let mut n = 0u64;
            for x in elems {
                cx.charge(1)?;
                set_local(cx, slot, x);
                match eval(pred, cx)? {
                    Value::Bool(true) => n += 1,
                    Value::Bool(false) => {}
                    _ => return Err(no_overload()),
                }
            }
            Ok(Value::Bool(n == 1))
        }
        MacroKind::Map | MacroKind::FilterMap | MacroKind::Filter => {
            let mut out = Vec::new();
            for x in elems {
                cx.charge(2)?;
                set_local(cx, slot, x.clone());
                let keep = match kind {
                    MacroKind::Map => true,
                    _ => match eval(pred, cx)? {
                        Value::Bool(b) => b,
                        _ => return Err(no_overload()),
                    },
                };
                if keep {
                    out.push(match transform {
                        Some(t) => eval(t, cx)?,
                        None => x,
                    });
                }
            }
            Ok(Value::List(Rc::new(out)))
        }
    }
}

/// CEL equality with cel-go's run-time rules: numbers compare across int, uint and double;
/// other kinds differ (false), except that a semver or quantity on the left of a different kind
/// is "no such overload", as their `Equal` methods answer.
pub(crate) fn equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, CelError> {
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => **x == **y,
        (Value::Int(_) | Value::Uint(_) | Value::Double(_), Value::Int(_) | Value::Uint(_) | Value::Double(_)) => {
            num_cmp(a, b) == Some(Ordering::Equal)
        }
        (Value::Semver(x), Value::Semver(y)) => match (semver::parse(x), semver::parse(y)) {
            (Ok(x), Ok(y)) => semver::compare(&x, &y) == Ordering::Equal,
            _ => false,
        },
        (Value::Semver(_) | Value::Quantity(_), _) if std::mem::discriminant(a) != std::mem::discriminant(b) => {
            return Err(no_overload())
        }
        (Value::Quantity(x), Value::Quantity(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !equals(p, q).unwrap_or(false) {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                match y.iter().find(|(k2, _)| key_equals(k, k2)) {
                    Some((_, v2)) if equals(v, v2).unwrap_or(false) => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        (Value::Device, Value::Device)
        | (Value::Attributes, Value::Attributes)
        | (Value::Capacity, Value::Capacity) => true,
        (Value::AttrDomain(x), Value::AttrDomain(y)) | (Value::CapDomain(x), Value::CapDomain(y)) => **x == **y,
        _ => false,
    })
}

/// Numeric ordering across int, uint and double (`CrossTypeNumericComparisons`); `None` for
/// NaN or non-numbers.
fn num_cmp(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    fn f(v: &Value<'_>) -> f64 {
        match *v {
            Value::Int(i) => i as f64,
            Value::Uint(u) => u as f64,
            Value::Double(d) => d,
            _ => f64::NAN,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Uint(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Int(_) | Value::Uint(_) | Value::Double(_), Value::Int(_) | Value::Uint(_) | Value::Double(_)) => {
            f(a).partial_cmp(&f(b))
        }
        _ => None,
    }
}

fn ordering(a: &Value<'_>, b: &Value<'_>) -> Result<Option<Ordering>, CelError> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Ok(Some((**x).cmp(&**y))),
        (Value::Bool(x), Value::Bool(y)) => Ok(Some(x.cmp(y))),
        (Value::Int(_) | Value::Uint(_) | Value::Double(_), Value::Int(_) | Value::Uint(_) | Value::Double(_)) => {
            Ok(num_cmp(a, b))
        }
        _ => Err(no_overload()),
    }
}

fn binary<'a>(op: BinOp, l: Value<'a>, r: Value<'a>, cx: &mut Cx<'a>) -> R<'a> {
    match op {
        BinOp::Eq => equals(&l, &r).map(Value::Bool),
        BinOp::Ne => equals(&l, &r).map(|b| Value::Bool(!b)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let o = ordering(&l, &r)?;
            Ok(Value::Bool(match (op, o) {
                (_, None) => false,
                (BinOp::Lt, Some(o)) => o == Ordering::Less,
                (BinOp::Le, Some(o)) => o != Ordering::Greater,
                (BinOp::Gt, Some(o)) => o == Ordering::Greater,
                (_, Some(o)) => o != Ordering::Less,
            }))
        }
        BinOp::In => match &r {
            Value::List(items) => {
                cx.charge(items.len() as u64)?;
                for it in items.iter() {
                    if equals(&l, it).unwrap_or(false) {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            _ => contains_key(&r, &l, cx).map(Value::Bool),
        },
        BinOp::Add => match (l, r) {
            (Value::Int(x), Value::Int(y)) => x.checked_add(y).map(Value::Int).ok_or_else(|| fail("integer overflow")),
            (Value::Uint(x), Value::Uint(y)) => {
                x.checked_add(y).map(Value::Uint).ok_or_else(|| fail("unsigned integer overflow"))
            }
            (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x + y)),
            (Value::Str(x), Value::Str(y)) => {
                cx.charge((x.len() + y.len()) as u64 / 10)?;
                let mut s = String::with_capacity(x.len() + y.len());
                s.push_str(&x);
                s.push_str(&y);
                Ok(Value::Str(Str::O(s.into())))
            }
            (Value::List(x), Value::List(y)) => {
                cx.charge((x.len() + y.len()) as u64)?;
                let mut v = Vec::with_capacity(x.len() + y.len());
                v.extend(x.iter().cloned());
                v.extend(y.iter().cloned());
                Ok(Value::List(Rc::new(v)))
            }
            _ => Err(no_overload()),
        },
        BinOp::Sub => match (l, r) {
            (Value::Int(x), Value::Int(y)) => x.checked_sub(y).map(Value::Int).ok_or_else(|| fail("integer overflow")),
            (Value::Uint(x), Value::Uint(y)) => {
                x.checked_sub(y).map(Value::Uint).ok_or_else(|| fail("unsigned integer overflow"))
            }
            (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x - y)),
            _ => Err(no_overload()),
        },
        BinOp::Mul => match (l, r) {
            (Value::Int(x), Value::Int(y)) => x.checked_mul(y).map(Value::Int).ok_or_else(|| fail("integer overflow")),
            (Value::Uint(x), Value::Uint(y)) => {
                x.checked_mul(y).map(Value::Uint).ok_or_else(|| fail("unsigned integer overflow"))
            }
            (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x * y)),
            _ => Err(no_overload()),
        },
        BinOp::Div => match (l, r) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => Err(fail("division by zero")),
            (Value::Int(x), Value::Int(y)) => x.checked_div(y).map(Value::Int).ok_or_else(|| fail("integer overflow")),
            (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x / y)),
            (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x / y)),
            _ => Err(no_overload()),
        },
        BinOp::Rem => match (l, r) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => Err(fail("modulus by zero")),
            (Value::Int(x), Value::Int(y)) => x.checked_rem(y).map(Value::Int).ok_or_else(|| fail("integer overflow")),
            (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x % y)),
            _ => Err(no_overload()),
        },
    }
}
