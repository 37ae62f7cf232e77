//! The type checker: resolves names and functions in place, folds literal `quantity()`,
//! `semver()` and `matches()` patterns, and reports cel-go's compile-time errors (undeclared
//! references, undefined fields, no matching overload, mixed aggregate literals).
//!
//! Types follow the environment the scheduler compiles with (`StoredExpressions`, so the newest
//! `kubernetes.DRADevice`: `driver` string, `allowMultipleAllocations` bool, `attributes`
//! `map(string, map(string, dyn))`, `capacity` `map(string, map(string, kubernetes.Quantity))`).
//! `dyn` matches every overload, as in cel-go; the overload is then chosen at run time.

use std::fmt;

use super::ast::{BinOp, Const, Expr, Func, MacroKind};
use super::semver;
use crate::api::quantity::Quantity;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Semver,
    Quantity,
    Device,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null_type"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Semver => f.write_str("kubernetes.Semver"),
            Ty::Quantity => f.write_str("kubernetes.Quantity"),
            Ty::Device => f.write_str("kubernetes.DRADevice"),
        }
    }
}

fn list(t: Ty) -> Ty {
    Ty::List(Box::new(t))
}

fn attributes_ty() -> Ty {
    Ty::Map(Box::new(Ty::String), Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Dyn))))
}

fn capacity_ty() -> Ty {
    Ty::Map(Box::new(Ty::String), Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Quantity))))
}

/// Whether a value of type `arg` may be passed where `param` is expected (`dyn` both ways).
fn assignable(param: &Ty, arg: &Ty) -> bool {
    match (param, arg) {
        (Ty::Dyn, _) | (_, Ty::Dyn) => true,
        (Ty::List(p), Ty::List(a)) => assignable(p, a),
        (Ty::Map(pk, pv), Ty::Map(ak, av)) => assignable(pk, ak) && assignable(pv, av),
        (p, a) => p == a,
    }
}

/// The type both `a` and `b` are, when they unify (`dyn` absorbs).
fn join(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Dyn, _) | (_, Ty::Dyn) => Some(Ty::Dyn),
        (Ty::List(x), Ty::List(y)) => Some(list(join(x, y)?)),
        (Ty::Map(xk, xv), Ty::Map(yk, yv)) => Some(Ty::Map(Box::new(join(xk, yk)?), Box::new(join(xv, yv)?))),
        (x, y) if x == y => Some(x.clone()),
        _ => None,
    }
}

fn is_numeric(t: &Ty) -> bool {
    matches!(t, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn)
}

/// One overload of a named function: receiver-style or global, parameters (the receiver
/// first), result. `Ty::Dyn` as a parameter accepts anything; `LIST`/`MAP` any list or map.
struct Overload {
    func: Func,
    member: bool,
    params: &'static [P],
    result: P,
}

/// A parameter or result pattern.
#[derive(Clone, Copy)]
enum P {
    Any,
    Bool,
    Int,
    Uint,
    Double,
    String,
    AnyList,
    StringList,
    AnyMap,
    Semver,
    Quantity,
}

impl P {
    fn ty(self) -> Ty {
        match self {
            P::Any => Ty::Dyn,
            P::Bool => Ty::Bool,
            P::Int => Ty::Int,
            P::Uint => Ty::Uint,
            P::Double => Ty::Double,
            P::String => Ty::String,
            P::AnyList => list(Ty::Dyn),
            P::StringList => list(Ty::String),
            P::AnyMap => Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)),
            P::Semver => Ty::Semver,
            P::Quantity => Ty::Quantity,
        }
    }
}

macro_rules! ov {
    ($f:ident, $m:expr, [$($p:ident),*], $r:ident) => {
        Overload { func: Func::$f, member: $m, params: &[$(P::$p),*], result: P::$r }
    };
}

const M: bool = true;
const G: bool = false;

/// Every named function schedperf's CEL knows, by name.
fn overloads(name: &str) -> &'static [Overload] {
    match name {
        "size" => &[
            ov!(Size, G, [String], Int),
            ov!(Size, G, [AnyList], Int),
            ov!(Size, G, [AnyMap], Int),
            ov!(Size, M, [String], Int),
            ov!(Size, M, [AnyList], Int),
            ov!(Size, M, [AnyMap], Int),
        ],
        "int" => {
            &[ov!(Int, G, [Int], Int), ov!(Int, G, [Uint], Int), ov!(Int, G, [Double], Int), ov!(Int, G, [String], Int)]
        }
        "uint" => &[
            ov!(Uint, G, [Int], Uint),
            ov!(Uint, G, [Uint], Uint),
            ov!(Uint, G, [Double], Uint),
            ov!(Uint, G, [String], Uint),
        ],
        "double" => &[
            ov!(Double, G, [Int], Double),
            ov!(Double, G, [Uint], Double),
            ov!(Double, G, [Double], Double),
            ov!(Double, G, [String], Double),
        ],
        "string" => &[
            ov!(String, G, [Int], String),
            ov!(String, G, [Uint], String),
            ov!(String, G, [Double], String),
            ov!(String, G, [String], String),
            ov!(String, G, [Bool], String),
        ],
        "bool" => &[ov!(Bool, G, [Bool], Bool), ov!(Bool, G, [String], Bool)],
        "dyn" => &[ov!(Dyn, G, [Any], Any)],
        "contains" => &[ov!(Contains, M, [String, String], Bool)],
        "startsWith" => &[ov!(StartsWith, M, [String, String], Bool)],
        "endsWith" => &[ov!(EndsWith, M, [String, String], Bool)],
        "matches" => &[ov!(Matches, M, [String, String], Bool), ov!(Matches, G, [String, String], Bool)],
        "find" => &[ov!(Find, M, [String, String], String)],
        "findAll" => {
            &[ov!(FindAll, M, [String, String], StringList), ov!(FindAll, M, [String, String, Int], StringList)]
        }
        "lowerAscii" => &[ov!(LowerAscii, M, [String], String)],
        "upperAscii" => &[ov!(UpperAscii, M, [String], String)],
        "trim" => &[ov!(Trim, M, [String], String)],
        "split" => &[ov!(Split, M, [String, String], StringList), ov!(Split, M, [String, String, Int], StringList)],
        "substring" => &[ov!(Substring, M, [String, Int], String), ov!(Substring, M, [String, Int, Int], String)],
        "indexOf" => &[
            ov!(IndexOf, M, [String, String], Int),
            ov!(IndexOf, M, [String, String, Int], Int),
            ov!(IndexOf, M, [AnyList, Any], Int),
        ],
        "lastIndexOf" => &[
            ov!(LastIndexOf, M, [String, String], Int),
            ov!(LastIndexOf, M, [String, String, Int], Int),
            ov!(LastIndexOf, M, [AnyList, Any], Int),
        ],
        "charAt" => &[ov!(CharAt, M, [String, Int], String)],
        "replace" => {
            &[ov!(Replace, M, [String, String, String], String), ov!(Replace, M, [String, String, String, Int], String)]
        }
        "join" => &[ov!(Join, M, [StringList], String), ov!(Join, M, [StringList, String], String)],
        "includes" => &[ov!(Includes, M, [Any, Any], Bool)],
        "semver" => &[ov!(Semver, G, [String], Semver), ov!(Semver, G, [String, Bool], Semver)],
        "isSemver" => &[ov!(IsSemver, G, [String], Bool), ov!(IsSemver, G, [String, Bool], Bool)],
        "major" => &[ov!(Major, M, [Semver], Int)],
        "minor" => &[ov!(Minor, M, [Semver], Int)],
        "patch" => &[ov!(Patch, M, [Semver], Int)],
        "quantity" => &[ov!(Quantity, G, [String], Quantity)],
        "isQuantity" => &[ov!(IsQuantity, G, [String], Bool)],
        "sign" => &[ov!(Sign, G, [Quantity], Int)],
        "isInteger" => &[ov!(IsInteger, M, [Quantity], Bool)],
        "asInteger" => &[ov!(AsInteger, M, [Quantity], Int)],
        "asApproximateFloat" => &[ov!(AsApproximateFloat, M, [Quantity], Double)],
        "add" => &[ov!(Add, M, [Quantity, Quantity], Quantity), ov!(Add, M, [Quantity, Int], Quantity)],
        "sub" => &[ov!(Sub, M, [Quantity, Quantity], Quantity), ov!(Sub, M, [Quantity, Int], Quantity)],
        "compareTo" => &[ov!(CompareTo, M, [Semver, Semver], Int), ov!(CompareTo, M, [Quantity, Quantity], Int)],
        "isGreaterThan" => {
            &[ov!(IsGreaterThan, M, [Semver, Semver], Bool), ov!(IsGreaterThan, M, [Quantity, Quantity], Bool)]
        }
        "isLessThan" => &[ov!(IsLessThan, M, [Semver, Semver], Bool), ov!(IsLessThan, M, [Quantity, Quantity], Bool)],
        _ => &[],
    }
}

/// The most locals an expression may declare (comprehension and `cel.bind` variables).
pub(crate) const MAX_LOCALS: usize = 1024;

pub(crate) struct Checker {
    /// Visible locals, innermost last: name, slot, type.
    scopes: Vec<(Box<str>, u16, Ty)>,
    /// Slots handed out so far (the evaluation's locals array length).
    pub(crate) slots: usize,
}

fn no_overload(name: &str, tys: &[&Ty]) -> String {
    let list: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
    format!("found no matching overload for '{name}' applied to '({})'", list.join(", "))
}

impl Checker {
    pub(crate) fn new() -> Checker {
        Checker { scopes: Vec::new(), slots: 0 }
    }

    fn push(&mut self, name: &str, ty: Ty) -> Result<u16, String> {
        if self.slots >= MAX_LOCALS {
            return Err(format!("more than {MAX_LOCALS} comprehension variables"));
        }
        let slot = self.slots as u16;
        self.slots += 1;
        self.scopes.push((name.into(), slot, ty));
        Ok(slot)
    }

    pub(crate) fn check(&mut self, e: &mut Expr) -> Result<Ty, String> {
        match e {
            Expr::Const(c) => Ok(match c {
                Const::Null => Ty::Null,
                Const::Bool(_) => Ty::Bool,
                Const::Int(_) => Ty::Int,
                Const::Uint(_) => Ty::Uint,
                Const::Double(_) => Ty::Double,
                Const::Str(_) => Ty::String,
                Const::Quantity(_) => Ty::Quantity,
                Const::Semver(_) => Ty::Semver,
            }),
            Expr::Ident(name) => {
                if let Some((_, slot, ty)) = self.scopes.iter().rev().find(|(n, _, _)| n == name) {
                    let ty = ty.clone();
                    *e = Expr::Local(*slot);
                    Ok(ty)
                } else if &**name == "device" {
                    *e = Expr::Device;
                    Ok(Ty::Device)
                } else {
                    Err(format!("undeclared reference to '{name}' (in container '')"))
                }
            }
            Expr::Local(_) | Expr::Device => Ok(Ty::Dyn),
            Expr::RegexCall { .. } => Ok(Ty::Dyn),
            Expr::Select { operand, field, test_only } => {
                let t = match &**operand {
                    Expr::Ident(n) if &**n != "device" && !self.scopes.iter().any(|(s, _, _)| s == n) => {
                        return Err(format!("undeclared reference to '{n}.{field}' (in container '')"));
                    }
                    _ => self.check(operand)?,
                };
                let ft = match &t {
                    Ty::Device => match &**field {
                        "driver" => Ty::String,
                        "attributes" => attributes_ty(),
                        "capacity" => capacity_ty(),
                        "allowMultipleAllocations" => Ty::Bool,
                        _ => return Err(format!("undefined field '{field}'")),
                    },
                    Ty::Map(k, v) if assignable(k, &Ty::String) => (**v).clone(),
                    Ty::Dyn => Ty::Dyn,
                    other => return Err(format!("type '{other}' does not support field selection")),
                };
                Ok(if *test_only { Ty::Bool } else { ft })
            }
            Expr::Index(a, i) => {
                let ta = self.check(a)?;
                let ti = self.check(i)?;
                match &ta {
                    Ty::List(el) if matches!(ti, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn) => Ok((**el).clone()),
                    Ty::Map(k, v) if assignable(k, &ti) => Ok((**v).clone()),
                    Ty::Dyn => Ok(Ty::Dyn),
                    _ => Err(no_overload("_[_]", &[&ta, &ti])),
                }
            }
            Expr::Not(x) => {
                let t = self.check(x)?;
                if assignable(&Ty::Bool, &t) {
                    Ok(Ty::Bool)
                } else {
                    Err(no_overload("!_", &[&t]))
                }
            }
            Expr::Neg(x) => {
                let t = self.check(x)?;
                match t {
                    Ty::Int | Ty::Double | Ty::Dyn => Ok(t),
                    _ => Err(no_overload("-_", &[&t])),
                }
            }
            Expr::And(..) | Expr::Or(..) => {
                let name = if matches!(e, Expr::And(..)) { "_&&_" } else { "_||_" };
                let (Expr::And(l, r) | Expr::Or(l, r)) = e else { return Ok(Ty::Bool) };
                let tl = self.check(l)?;
                let tr = self.check(r)?;
                if assignable(&Ty::Bool, &tl) && assignable(&Ty::Bool, &tr) {
                    Ok(Ty::Bool)
                } else {
                    Err(no_overload(name, &[&tl, &tr]))
                }
            }
            Expr::Cond(c, t, f) => {
                let tc = self.check(c)?;
                let tt = self.check(t)?;
                let tf = self.check(f)?;
                if !assignable(&Ty::Bool, &tc) {
                    return Err(no_overload("_?_:_", &[&tc, &tt, &tf]));
                }
                join(&tt, &tf).ok_or_else(|| no_overload("_?_:_", &[&tc, &tt, &tf]))
            }
            Expr::Binary(op, l, r) => {
                let op = *op;
                let tl = self.check(l)?;
                let tr = self.check(r)?;
                binary_type(op, &tl, &tr).ok_or_else(|| no_overload(op.name(), &[&tl, &tr]))
            }
            Expr::List(items) => {
                let mut elem: Option<Ty> = None;
                for it in items.iter_mut() {
                    let t = self.check(it)?;
                    elem = Some(match elem {
                        None => t,
                        Some(prev) => match join(&prev, &t) {
                            Some(j) => j,
                            None => return Err(format!("expected type '{prev}' but found '{t}'")),
                        },
                    });
                }
                Ok(list(elem.unwrap_or(Ty::Dyn)))
            }
            Expr::Map(entries) => {
                let mut kt: Option<Ty> = None;
                let mut vt: Option<Ty> = None;
                for (k, v) in entries.iter_mut() {
                    let tk = self.check(k)?;
                    if !matches!(tk, Ty::Int | Ty::Uint | Ty::Bool | Ty::String | Ty::Dyn) {
                        return Err(format!("unsupported map key type: {tk}"));
                    }
                    let tv = self.check(v)?;
                    for (acc, t) in [(&mut kt, tk), (&mut vt, tv)] {
                        *acc = Some(match acc.take() {
                            None => t,
                            Some(prev) => match join(&prev, &t) {
                                Some(j) => j,
                                None => return Err(format!("expected type '{prev}' but found '{t}'")),
                            },
                        });
                    }
                }
                Ok(Ty::Map(Box::new(kt.unwrap_or(Ty::Dyn)), Box::new(vt.unwrap_or(Ty::Dyn))))
            }
            Expr::Comprehension { kind, range, var, slot, pred, transform } => {
                let tr = self.check(range)?;
                let tv = match &tr {
                    Ty::List(e) => (**e).clone(),
                    Ty::Map(k, _) => (**k).clone(),
                    Ty::Dyn => Ty::Dyn,
                    other => {
                        return Err(format!(
                            "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                        ))
                    }
                };
                *slot = self.push(var, tv.clone())?;
                let tp = self.check(pred)?;
                let tt = match transform {
                    Some(t) => Some(self.check(t)?),
                    None => None,
                };
                self.scopes.pop();
                if !assignable(&Ty::Bool, &tp) {
                    let name = match kind {
                        MacroKind::All => "_&&_",
                        MacroKind::Exists => "_||_",
                        _ => "_?_:_",
                    };
                    return Err(no_overload(name, &[&Ty::Bool, &tp]));
                }
                Ok(match kind {
                    MacroKind::All | MacroKind::Exists | MacroKind::ExistsOne => Ty::Bool,
                    MacroKind::Filter => list(tv),
                    MacroKind::Map | MacroKind::FilterMap => list(tt.unwrap_or(Ty::Dyn)),
                })
            }
            Expr::Bind { var, slot, init, body } => {
                let ti = self.check(init)?;
                *slot = self.push(var, ti)?;
                let tb = self.check(body)?;
                self.scopes.pop();
                Ok(tb)
            }
            Expr::Call { .. } => self.check_call(e),
        }
    }

    fn check_call(&mut self, e: &mut Expr) -> Result<Ty, String> {
        let Expr::Call { name, target, args, func } = e else { return Ok(Ty::Dyn) };
        let mut tys = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            if let Expr::Ident(n) = &**t {
                if &**n != "device" && !self.scopes.iter().any(|(s, _, _)| s == n) {
                    return Err(format!("undeclared reference to '{n}.{name}' (in container '')"));
                }
            }
            tys.push(self.check(t)?);
        }
        for a in args.iter_mut() {
            tys.push(self.check(a)?);
        }
        let cands = overloads(name);
        if cands.is_empty() {
            return Err(format!("undeclared reference to '{name}' (in container '')"));
        }
        let member = target.is_some();
        let mut result: Option<Ty> = None;
        let mut chosen = None;
        for o in cands {
            if o.member != member || o.params.len() != tys.len() {
                continue;
            }
            if o.params.iter().zip(&tys).all(|(p, t)| assignable(&p.ty(), t)) {
                let r = if matches!(o.result, P::Any) { tys[0].clone() } else { o.result.ty() };
                result = Some(match result {
                    None => r,
                    Some(prev) if prev == r => prev,
                    Some(_) => Ty::Dyn,
                });
                chosen = Some(o.func);
            }
        }
        let (Some(r), Some(f)) = (result, chosen) else {
            let list: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
            return Err(if member {
                format!("found no matching overload for '{name}' applied to '{}.({})'", list[0], list[1..].join(", "))
            } else {
                format!("found no matching overload for '{name}' applied to '({})'", list.join(", "))
            });
        };
        *func = Some(f);
        let r = if f == Func::Dyn { Ty::Dyn } else { r };
        // Fold literal arguments: quantity("1Mi"), semver("1.0.0"), x.matches("re").
        match (f, target.as_deref(), args.as_slice()) {
            (Func::Quantity, None, [Expr::Const(Const::Str(s))]) => {
                if let Ok(q) = Quantity::parse(s) {
                    *e = Expr::Const(Const::Quantity(q));
                }
            }
            (Func::Semver, None, [Expr::Const(Const::Str(s))]) if semver::parse(s).is_ok() => {
                *e = Expr::Const(Const::Semver(s.clone()));
            }
            (Func::Semver, None, [Expr::Const(Const::Str(s)), Expr::Const(Const::Bool(true))]) => {
                if let Ok(n) = semver::normalize(s) {
                    *e = Expr::Const(Const::Semver(n.into()));
                }
            }
            (Func::Matches | Func::Find | Func::FindAll, Some(_), [Expr::Const(Const::Str(pattern)), ..]) => {
                let regex = super::eval::compile_regex(pattern).map_err(|m| format!("invalid {name} argument: {m}"))?;
                let Expr::Call { target: Some(t), args, .. } = std::mem::replace(e, Expr::Const(Const::Null)) else {
                    return Ok(r);
                };
                let args = args.into_iter().skip(1).collect();
                *e = Expr::RegexCall { func: f, target: t, regex, args };
            }
            _ => {}
        }
        Ok(r)
    }
}

/// The result type of a binary operator, or `None` when no overload takes these operands.
fn binary_type(op: BinOp, l: &Ty, r: &Ty) -> Option<Ty> {
    match op {
        BinOp::Eq | BinOp::Ne => join(l, r).map(|_| Ty::Bool),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ok = (is_numeric(l) && is_numeric(r))
                || matches!(
                    (l, r),
                    (Ty::String | Ty::Dyn, Ty::String | Ty::Dyn) | (Ty::Bool | Ty::Dyn, Ty::Bool | Ty::Dyn)
                );
            ok.then_some(Ty::Bool)
        }
        BinOp::In => match r {
            Ty::Dyn => Some(Ty::Bool),
            Ty::List(e) => join(l, e).map(|_| Ty::Bool),
            Ty::Map(k, _) => join(l, k).map(|_| Ty::Bool),
            _ => None,
        },
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
            let kinds: &[Ty] = match op {
                BinOp::Add => &[Ty::Int, Ty::Uint, Ty::Double, Ty::String],
                BinOp::Rem => &[Ty::Int, Ty::Uint],
                _ => &[Ty::Int, Ty::Uint, Ty::Double],
            };
            let mut out: Option<Ty> = None;
            for k in kinds {
                if assignable(k, l) && assignable(k, r) {
                    out = Some(if out.is_some() { Ty::Dyn } else { k.clone() });
                }
            }
            if op == BinOp::Add {
                if let (Ty::List(_) | Ty::Dyn, Ty::List(_) | Ty::Dyn) = (l, r) {
                    let lt = if let Ty::List(_) = l { l.clone() } else { list(Ty::Dyn) };
                    let rt = if let Ty::List(_) = r { r.clone() } else { list(Ty::Dyn) };
                    if let Some(j) = join(&lt, &rt) {
                        out = Some(if out.is_some() { Ty::Dyn } else { j });
                    }
                }
            }
            out
        }
    }
}
