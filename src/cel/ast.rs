//! The expression tree the parser builds and the checker resolves in place.

use crate::api::quantity::Quantity;

/// A literal, or a value the checker folded from literals (`quantity("1Mi")`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Box<str>),
    Quantity(Quantity),
    /// A version string known to parse (`semver("1.0.0")` folded).
    Semver(Box<str>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    /// cel-go's function name for the operator (`_==_`, `@in`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            BinOp::Eq => "_==_",
            BinOp::Ne => "_!=_",
            BinOp::Lt => "_<_",
            BinOp::Le => "_<=_",
            BinOp::Gt => "_>_",
            BinOp::Ge => "_>=_",
            BinOp::In => "@in",
            BinOp::Add => "_+_",
            BinOp::Sub => "_-_",
            BinOp::Mul => "_*_",
            BinOp::Div => "_/_",
            BinOp::Rem => "_%_",
        }
    }
}

/// The comprehension macros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MacroKind {
    All,
    Exists,
    ExistsOne,
    /// `map(x, t)`: `pred` is the constant `true`.
    Map,
    /// `map(x, p, t)`.
    FilterMap,
    Filter,
}

/// A function the checker resolved a call to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Size,
    Int,
    Uint,
    Double,
    String,
    Bool,
    Dyn,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
    Find,
    FindAll,
    LowerAscii,
    UpperAscii,
    Trim,
    Split,
    Substring,
    IndexOf,
    LastIndexOf,
    CharAt,
    Replace,
    Join,
    Includes,
    Semver,
    IsSemver,
    Major,
    Minor,
    Patch,
    Quantity,
    IsQuantity,
    Sign,
    IsInteger,
    AsInteger,
    AsApproximateFloat,
    Add,
    Sub,
    CompareTo,
    IsGreaterThan,
    IsLessThan,
}

#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Const(Const),
    /// A name, before the checker resolves it to [`Expr::Device`] or [`Expr::Local`].
    Ident(Box<str>),
    /// A comprehension or `cel.bind` variable: its slot in the evaluation's locals.
    Local(u16),
    /// The `device` variable.
    Device,
    /// `operand.field`, or `has(operand.field)` when `test_only`.
    Select {
        operand: Box<Expr>,
        field: Box<str>,
        test_only: bool,
    },
    Index(Box<Expr>, Box<Expr>),
    /// A call; `func` is set by the checker.
    Call {
        name: Box<str>,
        target: Option<Box<Expr>>,
        args: Vec<Expr>,
        func: Option<Func>,
    },
    /// `matches`, `find` or `findAll` with a literal pattern, compiled at check time; `args`
    /// are the arguments after the pattern.
    RegexCall {
        func: Func,
        target: Box<Expr>,
        regex: regex::Regex,
        args: Vec<Expr>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Comprehension {
        kind: MacroKind,
        range: Box<Expr>,
        var: Box<str>,
        slot: u16,
        pred: Box<Expr>,
        transform: Option<Box<Expr>>,
    },
    Bind {
        var: Box<str>,
        slot: u16,
        init: Box<Expr>,
        body: Box<Expr>,
    },
}
