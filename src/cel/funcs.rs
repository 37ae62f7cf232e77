//! The named functions: cel-go's standard ones, the strings extension, Kubernetes' regex,
//! lists (`indexOf`, `includes`), semver and quantity libraries, with their run-time errors.

use std::cmp::Ordering;
use std::rc::Rc;

use smallvec::SmallVec;

use super::ast::Func;
use super::eval::{compile_regex, display, equals, fail, items, no_overload, Cx, Str, Value};
use super::semver;
use super::CelError;
use crate::api::quantity::Quantity;

type R<'a> = Result<Value<'a>, CelError>;

fn owned<'a>(s: String) -> Value<'a> {
    Value::Str(Str::O(s.into()))
}

fn runes(s: &str) -> Vec<char> {
    s.chars().collect()
}

fn conversion_error(from: &Value<'_>, to: &str) -> CelError {
    fail(format!("type conversion error from '{}' to '{to}'", super::eval::type_name(from)))
}

/// `strconv.FormatFloat`'s exponent threshold for the shortest `%g`: exponents from 6 (or below
/// -4) print as `1e+06`.
const GO_G_SHORTEST_EXPONENT_LIMIT: i32 = 6;

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which cel-go's `string(double)` uses (`%g`).
pub(crate) fn go_format_g(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf".to_string() } else { "-Inf".to_string() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".to_string() } else { "0".to_string() };
    }
    // Shortest digits and exponent from Rust's `{:e}` ("1.5e-7").
    let e = format!("{x:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..GO_G_SHORTEST_EXPONENT_LIMIT).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{es}{:02}", exp.abs());
    }
    // Plain notation.
    if exp >= 0 {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
        }
    } else {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    }
}

fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strings.SplitN` (n < 0: all; n == 0: none; an empty separator splits into characters).
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut out = Vec::new();
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if out.len() + 1 == limit {
                out.push(chars[i..].iter().collect());
                return out;
            }
            out.push(c.to_string());
        }
        return out;
    }
    let mut rest = s;
    while out.len() + 1 < limit {
        match rest.find(sep) {
            Some(i) => {
                out.push(rest[..i].to_string());
                rest = &rest[i + sep.len()..];
            }
            None => break,
        }
    }
    out.push(rest.to_string());
    out
}

/// Go's `strings.Replace` (n < 0: all; an empty `old` inserts before each character and at the end).
fn go_replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if n == 0 || old == new {
        return s.to_string();
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut out = String::with_capacity(s.len());
    let mut done = 0usize;
    if old.is_empty() {
        for c in s.chars() {
            if done < limit {
                out.push_str(new);
                done += 1;
            }
            out.push(c);
        }
        if done < limit {
            out.push_str(new);
        }
        return out;
    }
    let mut rest = s;
    while done < limit {
        match rest.find(old) {
            Some(i) => {
                out.push_str(&rest[..i]);
                out.push_str(new);
                rest = &rest[i + old.len()..];
                done += 1;
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

fn index_of(s: &str, sub: &str, offset: Option<i64>) -> Result<i64, CelError> {
    let off = offset.unwrap_or(0);
    if sub.is_empty() {
        return Ok(off);
    }
    let r = runes(s);
    let sr = runes(sub);
    if off < 0 || off as u64 >= r.len() as u64 {
        return Err(fail(format!("index out of range: {off}")));
    }
    if sr.len() > r.len() {
        return Ok(-1);
    }
    let off = off as usize;
    for i in off..=(r.len() - sr.len()) {
        if r[i..i + sr.len()] == sr[..] {
            return Ok(i as i64);
        }
    }
    Ok(-1)
}

fn last_index_of(s: &str, sub: &str, offset: Option<i64>) -> Result<i64, CelError> {
    let r = runes(s);
    let off = match offset {
        Some(o) => o,
        None => {
            if sub.is_empty() {
                return Ok(r.len() as i64);
            }
            r.len() as i64 - 1
        }
    };
    if sub.is_empty() {
        return Ok(off);
    }
    let sr = runes(sub);
    if off < 0 || off as u64 >= r.len() as u64 {
        return Err(fail(format!("index out of range: {off}")));
    }
    if sr.len() > r.len() {
        return Ok(-1);
    }
    let mut off = off as usize;
    if off + sr.len() >= r.len() {
        off = r.len() - sr.len();
    }
    for i in (0..=off).rev() {
        if r[i..i + sr.len()] == sr[..] {
            return Ok(i as i64);
        }
    }
    Ok(-1)
}

fn str_arg<'v>(v: &'v Value<'_>) -> Result<&'v str, CelError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(no_overload()),
    }
}

fn int_arg(v: &Value<'_>) -> Result<i64, CelError> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => Err(no_overload()),
    }
}

fn bool_arg(v: &Value<'_>) -> Result<bool, CelError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(no_overload()),
    }
}

fn quantity_arg(v: &Value<'_>) -> Result<Quantity, CelError> {
    match v {
        Value::Quantity(q) => Ok(*q),
        _ => Err(no_overload()),
    }
}

/// Compiles a pattern computed at run time (literal ones are compiled once, at check time),
/// charging its length.
fn regex_arg(v: &Value<'_>, cx: &mut Cx<'_>) -> Result<regex::Regex, CelError> {
    let pattern = str_arg(v)?;
    cx.charge(pattern.len() as u64)?;
    compile_regex(pattern).map_err(fail)
}

/// A quantity as an integer, when it is one and fits (`AsInt64`).
fn quantity_int(q: Quantity) -> Option<i64> {
    let n = q.nanos();
    if n % 1_000_000_000 != 0 {
        return None;
    }
    i64::try_from(n / 1_000_000_000).ok()
}

/// A quantity of `nanos` nano-units (saturating as [`Quantity`] does).
fn quantity_from_nanos(nanos: i128) -> Quantity {
    Quantity::parse(&format!("{nanos}n")).unwrap_or(Quantity::ZERO)
}

fn size<'a>(v: &Value<'a>, cx: &Cx<'a>) -> Result<i64, CelError> {
    Ok(match v {
        Value::Str(s) => s.chars().count() as i64,
        Value::List(l) => l.len() as i64,
        Value::Map(m) => m.len() as i64,
        Value::Device | Value::Attributes | Value::Capacity | Value::AttrDomain(_) | Value::CapDomain(_) => {
            items(v, cx.env)?.len() as i64
        }
        _ => return Err(no_overload()),
    })
}

fn semver_arg<'v>(v: &'v Value<'_>) -> Result<semver::Version<'v>, CelError> {
    match v {
        Value::Semver(s) => semver::parse(s).map_err(fail),
        _ => Err(no_overload()),
    }
}

fn ord_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// Compares two semvers or two quantities (the receiver first).
fn compare(a: &Value<'_>, b: &Value<'_>) -> Result<Ordering, CelError> {
    match (a, b) {
        (Value::Semver(_), Value::Semver(_)) => Ok(semver::compare(&semver_arg(a)?, &semver_arg(b)?)),
        (Value::Quantity(x), Value::Quantity(y)) => Ok(x.cmp(y)),
        _ => Err(no_overload()),
    }
}

/// `matches`, `find`, `findAll` on `s` with a compiled pattern; `rest` holds `findAll`'s limit.
pub(crate) fn call_regex<'a>(f: Func, s: &Value<'a>, re: &regex::Regex, rest: &[Value<'a>], cx: &mut Cx<'a>) -> R<'a> {
    let s = str_arg(s)?;
    cx.charge(s.len() as u64 / 10)?;
    match f {
        Func::Matches => Ok(Value::Bool(re.is_match(s))),
        Func::Find => Ok(owned(re.find(s).map(|m| m.as_str().to_string()).unwrap_or_default())),
        _ => {
            let n = match rest.first() {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            let limit = if n < 0 { usize::MAX } else { n as usize };
            let out: Vec<Value<'a>> = re.find_iter(s).take(limit).map(|m| owned(m.as_str().to_string())).collect();
            cx.charge(out.len() as u64)?;
            Ok(Value::List(Rc::new(out)))
        }
    }
}

pub(crate) fn call<'a>(f: Func, a: &[Value<'a>], cx: &mut Cx<'a>) -> R<'a> {
    let arg = |i: usize| a.get(i).ok_or_else(no_overload);
    match f {
        Func::Size => Ok(Value::Int(size(arg(0)?, cx)?)),
        Func::Dyn => Ok(arg(0)?.clone()),
        Func::Int => {
            let v = arg(0)?;
            match *v {
                Value::Int(i) => Ok(Value::Int(i)),
                Value::Uint(u) => i64::try_from(u).map(Value::Int).map_err(|_| fail("integer overflow")),
                Value::Double(d) => {
                    if d.is_nan() || d <= -9.223_372_036_854_776e18 || d >= 9.223_372_036_854_776e18 {
                        Err(fail("integer overflow"))
                    } else {
                        Ok(Value::Int(d as i64))
                    }
                }
                Value::Str(ref s) => s.parse::<i64>().map(Value::Int).map_err(|_| conversion_error(v, "int")),
                _ => Err(no_overload()),
            }
        }
        Func::Uint => {
            let v = arg(0)?;
            match *v {
                Value::Int(i) => u64::try_from(i).map(Value::Uint).map_err(|_| fail("unsigned integer overflow")),
                Value::Uint(u) => Ok(Value::Uint(u)),
                Value::Double(d) => {
                    if !(0.0..1.844_674_407_370_955_2e19).contains(&d) {
                        Err(fail("unsigned integer overflow"))
                    } else {
                        Ok(Value::Uint(d as u64))
                    }
                }
                Value::Str(ref s) if !s.starts_with('+') => {
                    s.parse::<u64>().map(Value::Uint).map_err(|_| conversion_error(v, "uint"))
                }
                Value::Str(_) => Err(conversion_error(v, "uint")),
                _ => Err(no_overload()),
            }
        }
        Func::Double => {
            let v = arg(0)?;
            match *v {
                Value::Int(i) => Ok(Value::Double(i as f64)),
                Value::Uint(u) => Ok(Value::Double(u as f64)),
                Value::Double(d) => Ok(Value::Double(d)),
                Value::Str(ref s) => s.parse::<f64>().map(Value::Double).map_err(|_| conversion_error(v, "double")),
                _ => Err(no_overload()),
            }
        }
        Func::String => {
            let v = arg(0)?;
            match v {
                Value::Str(s) => Ok(Value::Str(s.clone())),
                Value::Int(i) => Ok(owned(i.to_string())),
                Value::Uint(u) => Ok(owned(u.to_string())),
                Value::Double(d) => Ok(owned(go_format_g(*d))),
                Value::Bool(b) => Ok(Value::Str(Str::B(if *b { "true" } else { "false" }))),
                _ => Err(no_overload()),
            }
        }
        Func::Bool => {
            let v = arg(0)?;
            match v {
                Value::Bool(b) => Ok(Value::Bool(*b)),
                Value::Str(s) => go_parse_bool(s).map(Value::Bool).ok_or_else(|| conversion_error(v, "bool")),
                _ => Err(no_overload()),
            }
        }
        Func::Contains => Ok(Value::Bool(str_arg(arg(0)?)?.contains(str_arg(arg(1)?)?))),
        Func::StartsWith => Ok(Value::Bool(str_arg(arg(0)?)?.starts_with(str_arg(arg(1)?)?))),
        Func::EndsWith => Ok(Value::Bool(str_arg(arg(0)?)?.ends_with(str_arg(arg(1)?)?))),
        Func::Matches | Func::Find | Func::FindAll => {
            let re = regex_arg(arg(1)?, cx)?;
            let rest: SmallVec<[Value<'a>; 1]> = a.iter().skip(2).cloned().collect();
            call_regex(f, arg(0)?, &re, &rest, cx)
        }
        Func::LowerAscii => Ok(owned(str_arg(arg(0)?)?.to_ascii_lowercase())),
        Func::UpperAscii => Ok(owned(str_arg(arg(0)?)?.to_ascii_uppercase())),
        Func::Trim => Ok(owned(str_arg(arg(0)?)?.trim().to_string())),
        Func::Split => {
            let s = str_arg(arg(0)?)?;
            let sep = str_arg(arg(1)?)?;
            let n = match a.get(2) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            cx.charge(s.len() as u64 / 10)?;
            let parts = go_split(s, sep, n);
            cx.charge(parts.len() as u64)?;
            Ok(Value::List(Rc::new(parts.into_iter().map(owned).collect())))
        }
        Func::Substring => {
            let r = runes(str_arg(arg(0)?)?);
            let start = int_arg(arg(1)?)?;
            let end = match a.get(2) {
                Some(v) => int_arg(v)?,
                None => r.len() as i64,
            };
            let len = r.len() as i64;
            if start < 0 || start > len {
                return Err(fail(format!("index out of range: {start}")));
            }
            if end < 0 || end > len {
                return Err(fail(format!("index out of range: {end}")));
            }
            if start > end {
                return Err(fail(format!("invalid substring range. start: {start}, end: {end}")));
            }
            Ok(owned(r[start as usize..end as usize].iter().collect()))
        }
        Func::IndexOf | Func::LastIndexOf => {
            let first = arg(0)?;
            if let Value::List(l) = first {
                let x = arg(1)?;
                let found = if f == Func::IndexOf {
                    l.iter().position(|e| equals(e, x).unwrap_or(false))
                } else {
                    l.iter().rposition(|e| equals(e, x).unwrap_or(false))
                };
                return Ok(Value::Int(found.map_or(-1, |i| i as i64)));
            }
            let s = str_arg(first)?;
            let sub = str_arg(arg(1)?)?;
            let off = match a.get(2) {
                Some(v) => Some(int_arg(v)?),
                None => None,
            };
            let i = if f == Func::IndexOf { index_of(s, sub, off)? } else { last_index_of(s, sub, off)? };
            Ok(Value::Int(i))
        }
        Func::CharAt => {
            let r = runes(str_arg(arg(0)?)?);
            let i = int_arg(arg(1)?)?;
            if i < 0 || i > r.len() as i64 {
                return Err(fail(format!("index out of range: {i}")));
            }
            Ok(owned(r.get(i as usize).map(|c| c.to_string()).unwrap_or_default()))
        }
        Func::Replace => {
            let s = str_arg(arg(0)?)?;
            let old = str_arg(arg(1)?)?;
            let new = str_arg(arg(2)?)?;
            let n = match a.get(3) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            // Charge the largest result before building it: an empty `old` inserts `new` at
            // every character, so two literals of a few KiB could otherwise ask for gigabytes.
            let matches_bound = if old.is_empty() { s.chars().count() + 1 } else { s.len() / old.len() };
            let bound = (s.len() as u64).saturating_add((matches_bound as u64).saturating_mul(new.len() as u64));
            cx.charge(bound / 10)?;
            Ok(owned(go_replace(s, old, new, n)))
        }
        Func::Join => {
            let Value::List(l) = arg(0)? else { return Err(no_overload()) };
            let sep = match a.get(1) {
                Some(v) => str_arg(v)?,
                None => "",
            };
            let mut out = String::new();
            for (i, e) in l.iter().enumerate() {
                let Value::Str(s) = e else {
                    return Err(fail(format!("join: invalid input: {}", display(e))));
                };
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(s);
            }
            cx.charge(out.len() as u64 / 10)?;
            Ok(owned(out))
        }
        Func::Includes => {
            let t = arg(0)?;
            let x = arg(1)?;
            if let Value::List(l) = t {
                return Ok(Value::Bool(l.iter().any(|e| equals(e, x).unwrap_or(false))));
            }
            Ok(Value::Bool(equals(t, x).unwrap_or(false)))
        }
        Func::Semver | Func::IsSemver => {
            let s = str_arg(arg(0)?)?;
            let normalize = match a.get(1) {
                Some(v) => bool_arg(v)?,
                None => false,
            };
            let parsed: Result<Value<'a>, String> = if normalize {
                semver::normalize(s).map(owned).map(|v| match v {
                    Value::Str(s) => Value::Semver(s),
                    other => other,
                })
            } else {
                semver::parse(s).map(|_| match arg(0) {
                    Ok(Value::Str(st)) => Value::Semver(st.clone()),
                    _ => Value::Null,
                })
            };
            if f == Func::IsSemver {
                return Ok(Value::Bool(parsed.is_ok()));
            }
            parsed.map_err(fail)
        }
        Func::Major => Ok(Value::Int(semver_arg(arg(0)?)?.major as i64)),
        Func::Minor => Ok(Value::Int(semver_arg(arg(0)?)?.minor as i64)),
        Func::Patch => Ok(Value::Int(semver_arg(arg(0)?)?.patch as i64)),
        Func::Quantity | Func::IsQuantity => {
            let s = str_arg(arg(0)?)?;
            let q = Quantity::parse(s);
            if f == Func::IsQuantity {
                return Ok(Value::Bool(q.is_ok()));
            }
            q.map(Value::Quantity).map_err(|_| {
                fail("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
            })
        }
        Func::Sign => {
            let q = quantity_arg(arg(0)?)?;
            Ok(Value::Int(ord_int(q.nanos().cmp(&0))))
        }
        Func::IsInteger => Ok(Value::Bool(quantity_int(quantity_arg(arg(0)?)?).is_some())),
        Func::AsInteger => {
            quantity_int(quantity_arg(arg(0)?)?).map(Value::Int).ok_or_else(|| fail("cannot convert value to integer"))
        }
        Func::AsApproximateFloat => Ok(Value::Double(quantity_arg(arg(0)?)?.nanos() as f64 / 1e9)),
        Func::Add | Func::Sub => {
            let q = quantity_arg(arg(0)?)?;
            let other = match arg(1)? {
                Value::Quantity(o) => *o,
                Value::Int(i) => Quantity::from_value(*i),
                _ => return Err(no_overload()),
            };
            let delta = if f == Func::Add { other } else { quantity_from_nanos(-other.nanos()) };
            Ok(Value::Quantity(q.saturating_add(delta)))
        }
        Func::CompareTo => Ok(Value::Int(ord_int(compare(arg(0)?, arg(1)?)?))),
        Func::IsGreaterThan => Ok(Value::Bool(compare(arg(0)?, arg(1)?)? == Ordering::Greater)),
        Func::IsLessThan => Ok(Value::Bool(compare(arg(0)?, arg(1)?)? == Ordering::Less)),
    }
}
