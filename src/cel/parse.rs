//! The CEL lexer and recursive-descent parser, with cel-go's parse-time macros (`has`, `all`,
//! `exists`, `exists_one`, `map`, `filter`, `cel.bind`).
//!
//! The grammar is cel-spec's (`doc/langdef.md`); precedence from loosest: `?:`, `||`, `&&`, the
//! relations (`< <= >= > == != in`), `+ -`, `* / %`, the unary `! -`, member access, index and
//! calls. As cel-go's parser, an even run of `!` or `-` cancels (`!!x` is `x`), and a `-` before a
//! numeric literal makes a negative literal (so `-9223372036854775808` is an int).

use super::ast::{BinOp, Const, Expr, MacroKind};

/// The deepest nesting the parser accepts ([`Parser::depth`] counts every nested expression and
/// every chained operator; a nested call or list costs 2); deeper input is a syntax error, so
/// the checker and evaluator recurse at most this deep. cel-go's default `maxRecursionDepth` is
/// 250; we stop at 100 so that a debug build's parser, checker and evaluator fit a 2 MiB thread
/// stack (123 nested `size(` overflowed it; 48 fit, `deepest_accepted_expressions_fit_a_small_stack`).
/// No real selector nests this deep.
pub(crate) const MAX_DEPTH: usize = 100;

/// The longest expression accepted, in bytes. Kubernetes validates selectors against
/// `resourceapi.SelectorsMaxSize` = 10 KiB of expression text; we accept 100 KiB so no input
/// the API accepts is refused.
pub(crate) const MAX_EXPRESSION_BYTES: usize = 100 * 1024;

/// CEL's reserved words: identifiers that may not be used.
const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Int(u64),
    Uint(u64),
    Double(f64),
    Str(String),
    Bytes,
    Ident(String),
    True,
    False,
    Null,
    In,
    Question,
    Colon,
    OrOr,
    AndAnd,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Dot,
    Comma,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Eof,
}

/// A syntax error: the detail and the byte offset where it was found.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub offset: usize,
    pub detail: String,
}

fn err<T>(offset: usize, detail: impl Into<String>) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, detail: detail.into() })
}

/// Splits `src` into tokens with their byte offsets (the last is `Eof`).
pub(crate) fn lex(src: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        // String and bytes literals, with r/R (raw) and b/B (bytes) prefixes.
        let mut raw = false;
        let mut bytes = false;
        let mut j = i;
        while j < b.len() && j - i < 2 && matches!(b[j], b'r' | b'R' | b'b' | b'B') {
            match b[j] {
                b'r' | b'R' if !raw => raw = true,
                b'b' | b'B' if !bytes => bytes = true,
                _ => break,
            }
            j += 1;
        }
        if j < b.len() && (b[j] == b'"' || b[j] == b'\'') && (j == i || raw || bytes) {
            let (s, end) = lex_string(src, j, raw)?;
            out.push((if bytes { Tok::Bytes } else { Tok::Str(s) }, start));
            i = end;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            let tok = match word {
                "true" => Tok::True,
                "false" => Tok::False,
                "null" => Tok::Null,
                "in" => Tok::In,
                w if RESERVED.contains(&w) => return err(start, format!("reserved identifier: {w}")),
                w => Tok::Ident(w.to_string()),
            };
            out.push((tok, start));
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, end) = lex_number(src, i)?;
            out.push((tok, start));
            i = end;
            continue;
        }
        let two = if i + 1 < b.len() { &b[i..i + 2] } else { &b[i..i + 1] };
        let (tok, len) = match two {
            b"||" => (Tok::OrOr, 2),
            b"&&" => (Tok::AndAnd, 2),
            b"==" => (Tok::Eq, 2),
            b"!=" => (Tok::Ne, 2),
            b"<=" => (Tok::Le, 2),
            b">=" => (Tok::Ge, 2),
            _ => match c {
                b'?' => (Tok::Question, 1),
                b':' => (Tok::Colon, 1),
                b'<' => (Tok::Lt, 1),
                b'>' => (Tok::Gt, 1),
                b'+' => (Tok::Plus, 1),
                b'-' => (Tok::Minus, 1),
                b'*' => (Tok::Star, 1),
                b'/' => (Tok::Slash, 1),
                b'%' => (Tok::Percent, 1),
                b'!' => (Tok::Bang, 1),
                b'.' => (Tok::Dot, 1),
                b',' => (Tok::Comma, 1),
                b'(' => (Tok::LParen, 1),
                b')' => (Tok::RParen, 1),
                b'[' => (Tok::LBracket, 1),
                b']' => (Tok::RBracket, 1),
                b'{' => (Tok::LBrace, 1),
                b'}' => (Tok::RBrace, 1),
                _ => {
                    let ch = src[i..].chars().next().unwrap_or('?');
                    return err(start, format!("token recognition error at: '{ch}'"));
                }
            },
        };
        out.push((tok, start));
        i += len;
    }
    out.push((Tok::Eof, b.len()));
    Ok(out)
}

fn lex_number(src: &str, start: usize) -> Result<(Tok, usize), SyntaxError> {
    let b = src.as_bytes();
    let mut i = start;
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
        let ds = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if ds == i {
            return err(start, "invalid hex literal");
        }
        let Ok(v) = u64::from_str_radix(&src[ds..i], 16) else {
            return err(start, "invalid int literal");
        };
        if matches!(b.get(i), Some(b'u' | b'U')) {
            return Ok((Tok::Uint(v), i + 1));
        }
        return Ok((Tok::Int(v), i));
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut is_double = false;
    if i < b.len() && b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        is_double = true;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut k = i + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            is_double = true;
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            i = k;
        }
    }
    let text = &src[start..i];
    if is_double {
        let Ok(v) = text.parse::<f64>() else { return err(start, "invalid double literal") };
        return Ok((Tok::Double(v), i));
    }
    let Ok(v) = text.parse::<u64>() else { return err(start, "invalid int literal") };
    if matches!(b.get(i), Some(b'u' | b'U')) {
        return Ok((Tok::Uint(v), i + 1));
    }
    Ok((Tok::Int(v), i))
}

/// Reads a quoted literal starting at the quote at `q`; returns its text and the end offset.
fn lex_string(src: &str, q: usize, raw: bool) -> Result<(String, usize), SyntaxError> {
    let b = src.as_bytes();
    let quote = b[q];
    let triple = b.len() >= q + 3 && b[q + 1] == quote && b[q + 2] == quote;
    let mut i = if triple { q + 3 } else { q + 1 };
    let mut out = String::new();
    loop {
        if i >= b.len() {
            return err(q, "unterminated string literal");
        }
        if triple {
            if b.len() >= i + 3 && b[i] == quote && b[i + 1] == quote && b[i + 2] == quote {
                return Ok((out, i + 3));
            }
        } else if b[i] == quote {
            return Ok((out, i + 1));
        } else if b[i] == b'\n' || b[i] == b'\r' {
            return err(q, "newline in string literal");
        }
        if b[i] == b'\\' && !raw {
            i += 1;
            let Some(&e) = b.get(i) else { return err(q, "unterminated string literal") };
            i += 1;
            let ch = match e {
                b'a' => '\u{7}',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'v' => '\u{b}',
                b'\\' => '\\',
                b'\'' => '\'',
                b'"' => '"',
                b'`' => '`',
                b'?' => '?',
                b'x' | b'X' | b'u' | b'U' => {
                    let n = match e {
                        b'x' | b'X' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let Some(hex) = src.get(i..i + n) else { return err(i, "invalid escape sequence") };
                    let Ok(v) = u32::from_str_radix(hex, 16) else { return err(i, "invalid escape sequence") };
                    i += n;
                    match char::from_u32(v) {
                        Some(c) => c,
                        None => return err(i, "invalid unicode code point"),
                    }
                }
                b'0'..=b'3' => {
                    let Some(oct) = src.get(i - 1..i + 2) else { return err(i, "invalid escape sequence") };
                    let Ok(v) = u32::from_str_radix(oct, 8) else { return err(i, "invalid escape sequence") };
                    i += 2;
                    char::from_u32(v).unwrap_or('\u{fffd}')
                }
                _ => return err(i, "invalid escape sequence"),
            };
            out.push(ch);
            continue;
        }
        // Copy one UTF-8 character (src is a str, so boundaries are valid).
        let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
}

/// Parses a whole expression.
pub(crate) fn parse(src: &str) -> Result<Expr, SyntaxError> {
    if src.len() > MAX_EXPRESSION_BYTES {
        return err(
            0,
            format!("expression code point size exceeds limit: size: {}, limit {MAX_EXPRESSION_BYTES}", src.len()),
        );
    }
    let toks = lex(src)?;
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let e = p.expr()?;
    if p.peek() != &Tok::Eof {
        return err(p.offset(), format!("mismatched input {} expecting <EOF>", p.describe()));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    /// Nested expressions plus chained operators on the current path: a bound on the tree depth.
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].0
    }
    fn offset(&self) -> usize {
        self.toks[self.pos.min(self.toks.len() - 1)].1
    }
    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn describe(&self) -> String {
        match self.peek() {
            Tok::Eof => "<EOF>".to_string(),
            Tok::Ident(s) => format!("'{s}'"),
            t => format!("'{t:?}'"),
        }
    }
    fn expect(&mut self, t: Tok, what: &str) -> Result<(), SyntaxError> {
        if *self.peek() == t {
            self.bump();
            Ok(())
        } else {
            err(self.offset(), format!("mismatched input {} expecting {what}", self.describe()))
        }
    }
    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(self.offset(), format!("expression recursion limit exceeded: {MAX_DEPTH}"));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, SyntaxError> {
        self.enter()?;
        let saved = self.depth;
        let cond = self.or()?;
        let out = if *self.peek() == Tok::Question {
            self.bump();
            let t = self.or()?;
            self.expect(Tok::Colon, "':'")?;
            let f = self.expr()?;
            Expr::Cond(Box::new(cond), Box::new(t), Box::new(f))
        } else {
            cond
        };
        self.depth = saved - 1;
        Ok(out)
    }

    fn or(&mut self) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        let mut lhs = self.and()?;
        while *self.peek() == Tok::OrOr {
            self.bump();
            self.enter()?;
            let rhs = self.and()?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
        }
        self.depth = saved;
        Ok(lhs)
    }

    fn and(&mut self) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        let mut lhs = self.relation()?;
        while *self.peek() == Tok::AndAnd {
            self.bump();
            self.enter()?;
            let rhs = self.relation()?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
        }
        self.depth = saved;
        Ok(lhs)
    }

    fn relation(&mut self) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        let mut lhs = self.addition()?;
        loop {
            let op = match self.peek() {
                Tok::Lt => BinOp::Lt,
                Tok::Le => BinOp::Le,
                Tok::Gt => BinOp::Gt,
                Tok::Ge => BinOp::Ge,
                Tok::Eq => BinOp::Eq,
                Tok::Ne => BinOp::Ne,
                Tok::In => BinOp::In,
                _ => break,
            };
            self.bump();
            self.enter()?;
            let rhs = self.addition()?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        self.depth = saved;
        Ok(lhs)
    }

    fn addition(&mut self) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        let mut lhs = self.multiplication()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => break,
            };
            self.bump();
            self.enter()?;
            let rhs = self.multiplication()?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        self.depth = saved;
        Ok(lhs)
    }

    fn multiplication(&mut self) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => break,
            };
            self.bump();
            self.enter()?;
            let rhs = self.unary()?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        self.depth = saved;
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        match self.peek() {
            Tok::Bang => {
                let mut n = 0;
                while *self.peek() == Tok::Bang {
                    self.bump();
                    n += 1;
                }
                let e = self.member()?;
                Ok(if n % 2 == 0 { e } else { Expr::Not(Box::new(e)) })
            }
            Tok::Minus => {
                let mut n = 0;
                while *self.peek() == Tok::Minus {
                    self.bump();
                    n += 1;
                }
                // `-` directly before a numeric literal is part of the literal.
                let negative_literal = match self.peek() {
                    Tok::Int(v) => Some(Const::Int(if *v == 1u64 << 63 {
                        i64::MIN
                    } else if let Ok(v) = i64::try_from(*v) {
                        -v
                    } else {
                        return err(self.offset(), "invalid int literal");
                    })),
                    Tok::Double(v) => Some(Const::Double(-*v)),
                    _ => None,
                };
                if let Some(c) = negative_literal {
                    self.bump();
                    let lit = self.member_suffix(Expr::Const(c))?;
                    let rest = n - 1;
                    return Ok(if rest % 2 == 0 { lit } else { Expr::Neg(Box::new(lit)) });
                }
                let e = self.member()?;
                Ok(if n % 2 == 0 { e } else { Expr::Neg(Box::new(e)) })
            }
            _ => self.member(),
        }
    }

    fn member(&mut self) -> Result<Expr, SyntaxError> {
        let p = self.primary()?;
        self.member_suffix(p)
    }

    fn member_suffix(&mut self, mut e: Expr) -> Result<Expr, SyntaxError> {
        let saved = self.depth;
        loop {
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    self.enter()?;
                    let off = self.offset();
                    let name = match self.bump() {
                        Tok::Ident(s) => s,
                        Tok::Question => return err(off, "unsupported syntax '.?' (optional field selection)"),
                        _ => return err(off, "mismatched input expecting IDENTIFIER"),
                    };
                    if *self.peek() == Tok::LParen {
                        self.bump();
                        let args = self.args(Tok::RParen)?;
                        e = self.member_call(e, name, args, off)?;
                    } else {
                        e = Expr::Select { operand: Box::new(e), field: name.into(), test_only: false };
                    }
                }
                Tok::LBracket => {
                    self.bump();
                    self.enter()?;
                    if *self.peek() == Tok::Question {
                        return err(self.offset(), "unsupported syntax '[?' (optional index)");
                    }
                    let idx = self.expr()?;
                    self.expect(Tok::RBracket, "']'")?;
                    e = Expr::Index(Box::new(e), Box::new(idx));
                }
                _ => break,
            }
        }
        self.depth = saved;
        Ok(e)
    }

    /// Comma-separated expressions up to `close` (a trailing comma is allowed).
    fn args(&mut self, close: Tok) -> Result<Vec<Expr>, SyntaxError> {
        let mut out = Vec::new();
        if *self.peek() == close {
            self.bump();
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            match self.peek() {
                Tok::Comma => {
                    self.bump();
                    if *self.peek() == close && close != Tok::RParen {
                        self.bump();
                        return Ok(out);
                    }
                }
                t if *t == close => {
                    self.bump();
                    return Ok(out);
                }
                _ => return err(self.offset(), format!("mismatched input {} expecting ','", self.describe())),
            }
        }
    }

    fn member_call(
        &mut self,
        target: Expr,
        name: String,
        mut args: Vec<Expr>,
        off: usize,
    ) -> Result<Expr, SyntaxError> {
        let kind = match (name.as_str(), args.len()) {
            ("all", 2) => Some(MacroKind::All),
            ("exists", 2) => Some(MacroKind::Exists),
            ("exists_one", 2) => Some(MacroKind::ExistsOne),
            ("map", 2) => Some(MacroKind::Map),
            ("map", 3) => Some(MacroKind::FilterMap),
            ("filter", 2) => Some(MacroKind::Filter),
            ("bind", 3) if matches!(&target, Expr::Ident(n) if &**n == "cel") => {
                let body = args.pop().unwrap_or(Expr::Const(Const::Null));
                let init = args.pop().unwrap_or(Expr::Const(Const::Null));
                let Some(Expr::Ident(var)) = args.pop() else {
                    return err(off, "cel.bind() variable names must be simple identifiers");
                };
                return Ok(Expr::Bind { var, slot: 0, init: Box::new(init), body: Box::new(body) });
            }
            _ => None,
        };
        let Some(kind) = kind else {
            return Ok(Expr::Call { name: name.into(), target: Some(Box::new(target)), args, func: None });
        };
        let mut it = args.into_iter();
        let Some(Expr::Ident(var)) = it.next() else {
            return err(off, "argument must be a simple name");
        };
        let first = it.next().unwrap_or(Expr::Const(Const::Null));
        let (pred, transform) = match kind {
            MacroKind::FilterMap => (first, it.next().map(Box::new)),
            MacroKind::Map => (Expr::Const(Const::Bool(true)), Some(Box::new(first))),
            _ => (first, None),
        };
        Ok(Expr::Comprehension { kind, range: Box::new(target), var, slot: 0, pred: Box::new(pred), transform })
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        self.enter()?;
        let off = self.offset();
        let found = self.describe();
        let e = match self.bump() {
            Tok::Int(v) => match i64::try_from(v) {
                Ok(v) => Expr::Const(Const::Int(v)),
                Err(_) => return err(off, "invalid int literal"),
            },
            Tok::Uint(v) => Expr::Const(Const::Uint(v)),
            Tok::Double(v) => Expr::Const(Const::Double(v)),
            Tok::Str(s) => Expr::Const(Const::Str(s.into())),
            Tok::Bytes => return err(off, "bytes literals are not supported by schedperf's CEL"),
            Tok::True => Expr::Const(Const::Bool(true)),
            Tok::False => Expr::Const(Const::Bool(false)),
            Tok::Null => Expr::Const(Const::Null),
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(Tok::RParen, "')'")?;
                e
            }
            Tok::LBracket => Expr::List(self.args(Tok::RBracket)?),
            Tok::LBrace => {
                let mut entries = Vec::new();
                if *self.peek() == Tok::RBrace {
                    self.bump();
                } else {
                    loop {
                        if *self.peek() == Tok::Question {
                            return err(self.offset(), "unsupported syntax '?' (optional entry)");
                        }
                        let k = self.expr()?;
                        self.expect(Tok::Colon, "':'")?;
                        let v = self.expr()?;
                        entries.push((k, v));
                        match self.bump() {
                            Tok::Comma => {
                                if *self.peek() == Tok::RBrace {
                                    self.bump();
                                    break;
                                }
                            }
                            Tok::RBrace => break,
                            _ => return err(self.offset(), "mismatched input expecting '}'"),
                        }
                    }
                }
                Expr::Map(entries)
            }
            Tok::Dot => return err(off, "leading '.' in identifiers is not supported by schedperf's CEL"),
            Tok::Ident(name) => {
                if *self.peek() == Tok::LParen {
                    self.bump();
                    let args = self.args(Tok::RParen)?;
                    if name == "has" {
                        match <[Expr; 1]>::try_from(args) {
                            Ok([Expr::Select { operand, field, .. }]) => {
                                Expr::Select { operand, field, test_only: true }
                            }
                            _ => return err(off, "invalid argument to has() macro"),
                        }
                    } else {
                        Expr::Call { name: name.into(), target: None, args, func: None }
                    }
                } else if *self.peek() == Tok::LBrace {
                    return err(off, "message construction is not supported by schedperf's CEL");
                } else {
                    Expr::Ident(name.into())
                }
            }
            _ => return err(off, format!("mismatched input {found} expecting an expression")),
        };
        self.depth -= 1;
        Ok(e)
    }
}
