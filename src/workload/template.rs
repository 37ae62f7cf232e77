//! Object templates with Go `text/template` semantics, as scheduler_perf renders them
//! (`getSpecFromTextTemplateFile` in upstream's `operations.go`).
//!
//! The environment is a map: `.Index` and `.Count` (ints), plus the op's template parameters.
//! Upstream decodes workload parameters from JSON, so every number in them is a `float64`: a
//! parameter `10` prints `10`, a parameter `1000000` prints `1e+06`, exactly as Go's `fmt` does.
//!
//! Supported: text, `{{- -}}` trimming, comments, pipelines (`a | f b`), parenthesised pipelines,
//! variables (`$x := ...`, `$x = ...`, `$`), fields of maps (`.name`, `$x.name`), `if`/`else if`/
//! `else`/`end`, `range` over integers and lists (with `$i :=` and `$i, $e :=`), `with`, the
//! builtins `and or not eq ne lt le gt ge len index print`, and upstream's function map
//! (`AddFloat AddInt DivideFloat DivideInt Int JSON Mod MultiplyFloat MultiplyInt SubtractFloat
//! SubtractInt`). As in Go, an unknown function is a parse error, a missing map key is "no value"
//! (printed `<no value>`, false in `if`), and a function that panics in Go (division by zero, a
//! value that is not a number) is an execution error.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::spec::ParamValue;

/// A template value: the Go types that scheduler_perf templates handle.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A missing map key or `nil`.
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
}

/// The environment of one rendering (the `.` of the template).
pub type Env = BTreeMap<String, Value>;

/// An error with the 1-based line of the template where it happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TemplateError {
    pub line: usize,
    pub message: String,
}

/// A workload parameter as upstream sees it after JSON decoding: numbers are `float64`.
pub fn param_to_value(p: &ParamValue) -> Value {
    match p {
        ParamValue::Int(i) => Value::Float(*i as f64),
        ParamValue::Float(f) => Value::Float(*f),
        ParamValue::Str(s) => Value::Str(s.clone()),
        ParamValue::Bool(b) => Value::Bool(*b),
        ParamValue::Structured(v) => yaml_to_value(v),
    }
}

/// A YAML value as upstream's JSON decoding into `any` makes it: numbers are float64.
fn yaml_to_value(v: &serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match v {
        Y::Null => Value::Nil,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        Y::String(s) => Value::Str(s.clone()),
        Y::Sequence(items) => Value::List(items.iter().map(yaml_to_value).collect()),
        Y::Mapping(m) => Value::Map(
            m.iter()
                .map(|(k, v)| (k.as_str().map_or_else(|| format!("{k:?}"), str::to_string), yaml_to_value(v)))
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_value(&t.value),
    }
}

/// The environment for object `index` of `count`: the op's template params, then `Index`, `Count`.
pub fn template_env(index: u64, count: u64, params: &BTreeMap<String, ParamValue>) -> Env {
    let mut env: Env = params.iter().map(|(k, v)| (k.clone(), param_to_value(v))).collect();
    env.insert("Index".to_string(), Value::Int(index as i64));
    env.insert("Count".to_string(), Value::Int(count as i64));
    env
}

/// Whether `text` has any `{{ }}` action, so it must be rendered per object.
pub fn is_templated(text: &str) -> bool {
    text.contains("{{")
}

/// Parses and renders `text` once (see [`Template`] to parse once and render many times).
pub fn render_template(text: &str, env: &Env) -> Result<String, TemplateError> {
    Template::parse(text)?.render(env)
}

/// The names in upstream's `getTemplateFuncs` and Go's builtins that templates may call.
pub const FUNCTIONS: &[&str] = &[
    "AddFloat",
    "AddInt",
    "DivideFloat",
    "DivideInt",
    "Int",
    "JSON",
    "Mod",
    "MultiplyFloat",
    "MultiplyInt",
    "SubtractFloat",
    "SubtractInt",
    "and",
    "or",
    "not",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "len",
    "index",
    "print",
    "printf",
    "println",
    // Go builtins that no scheduler_perf template uses: parsed as Go does, refused when called.
    "call",
    "html",
    "js",
    "slice",
    "urlquery",
];

// ---------------------------------------------------------------------------------------------
// Parsing.

#[derive(Debug, Clone)]
enum Arg {
    /// `.` followed by fields (empty: the dot itself).
    Dot(Vec<String>),
    /// `$name` followed by fields (`$` alone is the root).
    Var(String, Vec<String>),
    Lit(Value),
    Pipe(Box<Pipeline>, Vec<String>),
    /// A function name in argument position (called with no arguments, as Go does).
    Func(String),
}

#[derive(Debug, Clone)]
struct Command {
    args: Vec<Arg>,
}

#[derive(Debug, Clone)]
struct Pipeline {
    /// `$a := ...` (declare) or `$a = ...` (assign), and range's `$i, $e :=`.
    vars: Vec<String>,
    declare: bool,
    cmds: Vec<Command>,
    line: usize,
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipeline),
    If(Pipeline, Vec<Node>, Vec<Node>),
    With(Pipeline, Vec<Node>, Vec<Node>),
    Range(Pipeline, Vec<Node>, Vec<Node>),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    nodes: Vec<Node>,
}

/// One lexed `{{ }}` or text piece.
enum Piece {
    Text(String),
    Action(String, usize),
}

fn lex(text: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = text;
    let mut line = 1;
    let mut trim_next = false;
    while let Some(start) = rest.find("{{") {
        let mut before = &rest[..start];
        if trim_next {
            before = before.trim_start();
        }
        let after = &rest[start + 2..];
        let trim_left = after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n");
        if trim_left {
            before = before.trim_end();
        }
        if !before.is_empty() {
            pieces.push(Piece::Text(before.to_string()));
        }
        line += rest[..start].matches('\n').count();
        let body_start = if trim_left { 1 } else { 0 };
        let end = find_action_end(after).ok_or_else(|| TemplateError { line, message: "unclosed action".into() })?;
        let mut body = &after[body_start..end];
        trim_next = false;
        if body.ends_with(" -") || body.ends_with("\t-") || body.ends_with("\n-") {
            body = &body[..body.len() - 1];
            trim_next = true;
        }
        let action_line = line;
        line += after[..end].matches('\n').count();
        let body = body.trim();
        if !(body.starts_with("/*") && body.ends_with("*/")) {
            pieces.push(Piece::Action(body.to_string(), action_line));
        }
        rest = &after[end + 2..];
    }
    let tail = if trim_next { rest.trim_start() } else { rest };
    if !tail.is_empty() {
        pieces.push(Piece::Text(tail.to_string()));
    }
    Ok(pieces)
}

/// The index of the `}}` closing an action, skipping string literals.
fn find_action_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Dot(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Lit(Value),
    Pipe,
    LParen,
    RParen(Vec<String>),
    Declare,
    Assign,
    Comma,
}

fn fields_after(s: &[char], i: &mut usize) -> Vec<String> {
    let mut fields = Vec::new();
    while *i < s.len() && s[*i] == '.' {
        let start = *i + 1;
        let mut j = start;
        while j < s.len() && (s[j].is_alphanumeric() || s[j] == '_') {
            j += 1;
        }
        if j == start {
            break;
        }
        fields.push(s[start..j].iter().collect());
        *i = j;
    }
    fields
}

fn tokenize(body: &str, line: usize) -> Result<Vec<Tok>, TemplateError> {
    let err = |m: String| TemplateError { line, message: m };
    let s: Vec<char> = body.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            '(' => {
                toks.push(Tok::LParen);
                i += 1;
            }
            ')' => {
                i += 1;
                toks.push(Tok::RParen(fields_after(&s, &mut i)));
            }
            ',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            ':' if s.get(i + 1) == Some(&'=') => {
                toks.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                toks.push(Tok::Assign);
                i += 1;
            }
            '.' => {
                if s.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                    let (v, n) = number(&s[i..]).map_err(err)?;
                    toks.push(Tok::Lit(v));
                    i += n;
                } else {
                    let mut j = i;
                    let fields = fields_after(&s, &mut j);
                    i = if fields.is_empty() { i + 1 } else { j };
                    toks.push(Tok::Dot(fields));
                }
            }
            '$' => {
                let start = i + 1;
                let mut j = start;
                while j < s.len() && (s[j].is_alphanumeric() || s[j] == '_') {
                    j += 1;
                }
                let name: String = s[start..j].iter().collect();
                i = j;
                toks.push(Tok::Var(name, fields_after(&s, &mut i)));
            }
            '"' => {
                let mut out = String::new();
                let mut j = i + 1;
                loop {
                    let Some(&c) = s.get(j) else { return Err(err("unterminated quoted string".into())) };
                    match c {
                        '"' => break,
                        '\\' => {
                            let e = s.get(j + 1).copied().unwrap_or('\\');
                            out.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                other => other,
                            });
                            j += 2;
                        }
                        c => {
                            out.push(c);
                            j += 1;
                        }
                    }
                }
                toks.push(Tok::Lit(Value::Str(out)));
                i = j + 1;
            }
            '`' => {
                let end =
                    s[i + 1..].iter().position(|&c| c == '`').ok_or_else(|| err("unterminated raw string".into()))?;
                toks.push(Tok::Lit(Value::Str(s[i + 1..i + 1 + end].iter().collect())));
                i += end + 2;
            }
            c if c.is_ascii_digit() || (c == '-' || c == '+') && s.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                let (v, n) = number(&s[i..]).map_err(err)?;
                toks.push(Tok::Lit(v));
                i += n;
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut j = i;
                while j < s.len() && (s[j].is_alphanumeric() || s[j] == '_') {
                    j += 1;
                }
                let word: String = s[i..j].iter().collect();
                i = j;
                toks.push(match word.as_str() {
                    "true" => Tok::Lit(Value::Bool(true)),
                    "false" => Tok::Lit(Value::Bool(false)),
                    "nil" => Tok::Lit(Value::Nil),
                    _ => Tok::Ident(word),
                });
            }
            other => return Err(err(format!("unexpected {other:?} in action {{{{{body}}}}}"))),
        }
    }
    Ok(toks)
}

/// A Go number constant: an integer stays an int, anything with `.` or an exponent is a float.
fn number(s: &[char]) -> Result<(Value, usize), String> {
    let mut j = 0;
    if s[0] == '-' || s[0] == '+' {
        j = 1;
    }
    while j < s.len() && (s[j].is_ascii_alphanumeric() || s[j] == '.' || s[j] == '_') {
        if (s[j] == 'e' || s[j] == 'E') && matches!(s.get(j + 1), Some('-' | '+')) {
            j += 1;
        }
        j += 1;
    }
    let text: String = s[..j].iter().filter(|c| **c != '_').collect();
    if let Ok(i) = text.parse::<i64>() {
        return Ok((Value::Int(i), j));
    }
    let hex = text.trim_start_matches(['-', '+']);
    if let Some(h) = hex.strip_prefix("0x").or_else(|| hex.strip_prefix("0X")) {
        if let Ok(i) = i64::from_str_radix(h, 16) {
            return Ok((Value::Int(if text.starts_with('-') { -i } else { i }), j));
        }
    }
    text.parse::<f64>().map(|f| (Value::Float(f), j)).map_err(|_| format!("bad number syntax: {text:?}"))
}

struct PipeParser<'a> {
    toks: &'a [Tok],
    pos: usize,
    line: usize,
}

impl PipeParser<'_> {
    fn err(&self, m: impl Into<String>) -> TemplateError {
        TemplateError { line: self.line, message: m.into() }
    }

    /// A whole pipeline, with an optional variable declaration in front.
    fn pipeline(&mut self, allow_decl: bool) -> Result<Pipeline, TemplateError> {
        let mut vars = Vec::new();
        let mut declare = false;
        if allow_decl {
            // `$x :=`, `$x =`, `$i, $e :=`
            let mut k = self.pos;
            let mut names = Vec::new();
            while let Some(Tok::Var(name, f)) = self.toks.get(k) {
                if !f.is_empty() {
                    break;
                }
                names.push(name.clone());
                k += 1;
                if self.toks.get(k) == Some(&Tok::Comma) {
                    k += 1;
                    continue;
                }
                break;
            }
            match self.toks.get(k) {
                Some(Tok::Declare) if !names.is_empty() => {
                    vars = names;
                    declare = true;
                    self.pos = k + 1;
                }
                Some(Tok::Assign) if names.len() == 1 => {
                    vars = names;
                    self.pos = k + 1;
                }
                _ => {}
            }
        }
        let mut cmds = vec![self.command()?];
        while self.toks.get(self.pos) == Some(&Tok::Pipe) {
            self.pos += 1;
            cmds.push(self.command()?);
        }
        Ok(Pipeline { vars, declare, cmds, line: self.line })
    }

    fn command(&mut self) -> Result<Command, TemplateError> {
        let mut args = Vec::new();
        while let Some(t) = self.toks.get(self.pos) {
            let arg = match t {
                Tok::Pipe | Tok::RParen(_) => break,
                Tok::Dot(f) => Arg::Dot(f.clone()),
                Tok::Var(n, f) => Arg::Var(n.clone(), f.clone()),
                Tok::Lit(v) => Arg::Lit(v.clone()),
                Tok::Ident(name) => {
                    if !FUNCTIONS.contains(&name.as_str()) {
                        return Err(self.err(format!("function {name:?} not defined")));
                    }
                    Arg::Func(name.clone())
                }
                Tok::LParen => {
                    self.pos += 1;
                    let inner = self.pipeline(false)?;
                    let Some(Tok::RParen(fields)) = self.toks.get(self.pos) else {
                        return Err(self.err("unclosed left paren"));
                    };
                    Arg::Pipe(Box::new(inner), fields.clone())
                }
                Tok::Declare | Tok::Assign | Tok::Comma => return Err(self.err("unexpected := , or = in operand")),
            };
            args.push(arg);
            self.pos += 1;
        }
        if args.is_empty() {
            return Err(self.err("missing value for command"));
        }
        Ok(Command { args })
    }
}

fn parse_pipeline(body: &str, line: usize, allow_decl: bool) -> Result<Pipeline, TemplateError> {
    let toks = tokenize(body, line)?;
    let mut p = PipeParser { toks: &toks, pos: 0, line };
    let pipe = p.pipeline(allow_decl)?;
    if p.pos != toks.len() {
        return Err(TemplateError { line, message: format!("unexpected {:?} in {{{{{body}}}}}", toks[p.pos]) });
    }
    Ok(pipe)
}

/// What ended a list of nodes.
enum Stop {
    Eof,
    End,
    Else(Option<(String, usize)>),
}

impl Template {
    /// Parses a template; an unknown function is an error, as in Go.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let pieces = lex(text)?;
        let mut it = pieces.into_iter().peekable();
        let (nodes, end) = parse_list(&mut it)?;
        match end {
            (Stop::Eof, _) => Ok(Template { nodes }),
            (Stop::End, line) => Err(TemplateError { line, message: "unexpected {{end}}".into() }),
            (Stop::Else(_), line) => Err(TemplateError { line, message: "unexpected {{else}}".into() }),
        }
    }

    /// Renders with `env` as `.`.
    pub fn render(&self, env: &Env) -> Result<String, TemplateError> {
        let root = Value::Map(env.clone());
        let mut st = State { vars: vec![(String::new(), root.clone())], out: String::new() };
        st.walk(&self.nodes, &root)?;
        Ok(st.out)
    }

    /// The text around the actions of a *flat* template: one made of text and top-level actions
    /// that print (no `if`, `with` or `range`, no variable declared or assigned at the top level).
    /// Rendering a flat template prints `pieces[0]`, the first action's value, `pieces[1]`, ...,
    /// the last piece: `pieces.len()` is one more than the number of actions. `None` when the
    /// template is not flat.
    pub fn flat_pieces(&self) -> Option<Vec<String>> {
        let mut pieces = vec![String::new()];
        for n in &self.nodes {
            match n {
                Node::Text(t) => pieces.last_mut().expect("never empty").push_str(t),
                Node::Action(p) if p.vars.is_empty() => pieces.push(String::new()),
                _ => return None,
            }
        }
        Some(pieces)
    }

    /// The printed value of every action of a flat template (see [`Template::flat_pieces`]), in
    /// order, into `out`: evaluated as [`Template::render`] evaluates them, so the rendered text is
    /// the pieces with these values between them, and an error is the one `render` reports.
    /// Panics on a template that is not flat.
    pub fn action_values(&self, env: Env, out: &mut Vec<String>) -> Result<(), TemplateError> {
        let root = Value::Map(env);
        let mut st = State { vars: vec![(String::new(), root.clone())], out: String::new() };
        for n in &self.nodes {
            match n {
                Node::Text(_) => {}
                Node::Action(p) if p.vars.is_empty() => {
                    let v = st.pipeline(p, &root)?;
                    out.push(go_print(&v));
                }
                _ => panic!("action_values on a template that is not flat"),
            }
        }
        Ok(())
    }
}

type PieceIter = std::iter::Peekable<std::vec::IntoIter<Piece>>;

fn parse_list(it: &mut PieceIter) -> Result<(Vec<Node>, (Stop, usize)), TemplateError> {
    let mut nodes = Vec::new();
    while let Some(piece) = it.next() {
        let (body, line) = match piece {
            Piece::Text(t) => {
                nodes.push(Node::Text(t));
                continue;
            }
            Piece::Action(b, l) => (b, l),
        };
        let (word, rest) = match body.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (body.as_str(), ""),
        };
        match word {
            "end" => return Ok((nodes, (Stop::End, line))),
            "else" => {
                let chained = (!rest.is_empty()).then(|| (rest.to_string(), line));
                return Ok((nodes, (Stop::Else(chained), line)));
            }
            "if" | "with" | "range" => nodes.push(parse_block(word, rest, line, it)?),
            "define" | "template" | "block" | "break" | "continue" => {
                return Err(TemplateError { line, message: format!("{{{{{word}}}}} is not supported") })
            }
            _ => nodes.push(Node::Action(parse_pipeline(&body, line, true)?)),
        }
    }
    Ok((nodes, (Stop::Eof, 0)))
}

fn parse_block(word: &str, rest: &str, line: usize, it: &mut PieceIter) -> Result<Node, TemplateError> {
    let pipe = parse_pipeline(rest, line, word == "range" || word == "with")?;
    let (body, (end, end_line)) = parse_list(it)?;
    let else_body = match end {
        Stop::End => Vec::new(),
        Stop::Eof => {
            return Err(TemplateError { line, message: format!("unexpected EOF: {{{{{word}}}}} has no {{{{end}}}}") })
        }
        Stop::Else(None) => match parse_list(it)? {
            (nodes, (Stop::End, _)) => nodes,
            (_, (_, l)) => {
                return Err(TemplateError { line: l.max(end_line), message: "expected {{end}} after {{else}}".into() })
            }
        },
        // `{{else if x}}` / `{{else with x}}`: a nested block that consumes the shared `{{end}}`.
        Stop::Else(Some((chain, l))) => {
            let (w, r) = chain.split_once(char::is_whitespace).unwrap_or((chain.as_str(), ""));
            if w != "if" && w != "with" {
                return Err(TemplateError { line: l, message: format!("unexpected {{{{else {chain}}}}}") });
            }
            vec![parse_block(w, r.trim(), l, it)?]
        }
    };
    Ok(match word {
        "if" => Node::If(pipe, body, else_body),
        "with" => Node::With(pipe, body, else_body),
        _ => Node::Range(pipe, body, else_body),
    })
}

// ---------------------------------------------------------------------------------------------
// Execution.

struct State {
    vars: Vec<(String, Value)>,
    out: String,
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Nil => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::List(l) => !l.is_empty(),
        Value::Map(m) => !m.is_empty(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
    }
}

impl State {
    fn walk(&mut self, nodes: &[Node], dot: &Value) -> Result<(), TemplateError> {
        for n in nodes {
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipeline(p, dot)?;
                    if p.vars.is_empty() {
                        self.out.push_str(&go_print(&v));
                    }
                }
                Node::If(p, body, other) => {
                    let mark = self.vars.len();
                    let v = self.pipeline(p, dot)?;
                    let r = if truthy(&v) { self.walk(body, dot) } else { self.walk(other, dot) };
                    self.vars.truncate(mark);
                    r?;
                }
                Node::With(p, body, other) => {
                    let mark = self.vars.len();
                    let v = self.pipeline(p, dot)?;
                    let r = if truthy(&v) { self.walk(body, &v) } else { self.walk(other, dot) };
                    self.vars.truncate(mark);
                    r?;
                }
                Node::Range(p, body, other) => self.range(p, body, other, dot)?,
            }
        }
        Ok(())
    }

    fn range(&mut self, p: &Pipeline, body: &[Node], other: &[Node], dot: &Value) -> Result<(), TemplateError> {
        let mark = self.vars.len();
        let plain = Pipeline { vars: Vec::new(), declare: false, cmds: p.cmds.clone(), line: p.line };
        let v = self.pipeline(&plain, dot)?;
        let items: Vec<(Value, Value)> = match &v {
            Value::Int(n) if p.vars.len() > 1 => {
                return Err(TemplateError {
                    line: p.line,
                    message: format!("can't use {n} to iterate over more than one variable"),
                })
            }
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::List(l) => l.iter().enumerate().map(|(i, e)| (Value::Int(i as i64), e.clone())).collect(),
            Value::Map(m) => m.iter().map(|(k, e)| (Value::Str(k.clone()), e.clone())).collect(),
            Value::Nil => Vec::new(),
            other => {
                return Err(TemplateError {
                    line: p.line,
                    message: format!("range can't iterate over {}", go_print(other)),
                })
            }
        };
        if items.is_empty() {
            return self.walk(other, dot);
        }
        for (key, elem) in items {
            self.vars.truncate(mark);
            match p.vars.as_slice() {
                [] => {}
                [e] => self.vars.push((e.clone(), elem.clone())),
                [k, e, ..] => {
                    self.vars.push((k.clone(), key));
                    self.vars.push((e.clone(), elem.clone()));
                }
            }
            self.walk(body, &elem)?;
        }
        self.vars.truncate(mark);
        Ok(())
    }

    fn pipeline(&mut self, p: &Pipeline, dot: &Value) -> Result<Value, TemplateError> {
        let mut last: Option<Value> = None;
        for cmd in &p.cmds {
            last = Some(self.command(cmd, dot, last, p.line)?);
        }
        let v = last.unwrap_or(Value::Nil);
        if let Some(name) = p.vars.first() {
            if p.declare {
                self.vars.push((name.clone(), v.clone()));
            } else {
                let slot = self.vars.iter_mut().rev().find(|(n, _)| n == name).ok_or_else(|| TemplateError {
                    line: p.line,
                    message: format!("undefined variable \"${name}\""),
                })?;
                slot.1 = v.clone();
            }
        }
        Ok(v)
    }

    fn command(
        &mut self,
        cmd: &Command,
        dot: &Value,
        piped: Option<Value>,
        line: usize,
    ) -> Result<Value, TemplateError> {
        if let Arg::Func(name) = &cmd.args[0] {
            let mut args = Vec::with_capacity(cmd.args.len());
            for a in &cmd.args[1..] {
                args.push(self.arg(a, dot, line)?);
            }
            args.extend(piped);
            return call(name, args).map_err(|m| TemplateError { line, message: format!("error calling {name}: {m}") });
        }
        if cmd.args.len() > 1 || piped.is_some() {
            return Err(TemplateError { line, message: "can't give argument to non-function".into() });
        }
        self.arg(&cmd.args[0], dot, line)
    }

    fn arg(&mut self, a: &Arg, dot: &Value, line: usize) -> Result<Value, TemplateError> {
        let (base, fields) =
            match a {
                Arg::Dot(f) => (dot.clone(), f),
                Arg::Var(name, f) => {
                    let v =
                        self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone()).ok_or_else(|| {
                            TemplateError { line, message: format!("undefined variable \"${name}\"") }
                        })?;
                    (v, f)
                }
                Arg::Lit(v) => return Ok(v.clone()),
                Arg::Func(name) => {
                    return call(name, Vec::new())
                        .map_err(|m| TemplateError { line, message: format!("error calling {name}: {m}") })
                }
                Arg::Pipe(p, f) => (self.pipeline(p, dot)?, f),
            };
        let mut v = base;
        for field in fields {
            v = match v {
                Value::Map(m) => m.get(field).cloned().unwrap_or(Value::Nil),
                Value::Nil => {
                    return Err(TemplateError {
                        line,
                        message: format!("nil pointer evaluating interface {{}}.{field}"),
                    })
                }
                other => {
                    return Err(TemplateError {
                        line,
                        message: format!("can't evaluate field {field} in type {}", type_name(&other)),
                    })
                }
            };
        }
        Ok(v)
    }
}

// ---------------------------------------------------------------------------------------------
// Functions.

/// Upstream's `toFloat64`: numbers, and strings that parse as a float; anything else panics.
fn to_f64(v: &Value) -> Result<f64, String> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        Value::Str(s) => s.parse::<f64>().map_err(|_| format!("cannot cast {s} to float64")),
        other => Err(format!("cannot cast {} to float64", go_sprint_v(other))),
    }
}

/// Upstream's `toInt`: floats truncate, strings must be integers (`strconv.Atoi`).
fn to_int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) => Ok(go_f64_to_int(*f)),
        Value::Str(s) => s.parse::<i64>().map_err(|_| format!("cannot cast {s} to int")),
        other => Err(format!("cannot cast {} to int", go_sprint_v(other))),
    }
}

/// Go's `int(f)` for values in range (truncation toward zero).
fn go_f64_to_int(f: f64) -> i64 {
    f.trunc() as i64
}

fn arity(args: &[Value], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!("wrong number of args: got {} want {n}", args.len()));
    }
    Ok(())
}

/// Go's basic comparison: same kinds only (int with int, float with float, string, bool).
fn compare(a: &Value, b: &Value) -> Result<std::cmp::Ordering, String> {
    use std::cmp::Ordering;
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Less),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Nil, Value::Nil) => Ordering::Equal,
        _ => return Err(format!("incompatible types for comparison: {} and {}", type_name(a), type_name(b))),
    })
}

fn call(name: &str, args: Vec<Value>) -> Result<Value, String> {
    use std::cmp::Ordering;
    let floats = |args: &[Value]| args.iter().map(to_f64).collect::<Result<Vec<f64>, String>>();
    Ok(match name {
        "AddFloat" => Value::Float(floats(&args)?.iter().sum()),
        "AddInt" => Value::Int(go_f64_to_int(floats(&args)?.iter().sum())),
        "MultiplyFloat" => Value::Float(floats(&args)?.iter().product()),
        "MultiplyInt" => Value::Int(go_f64_to_int(floats(&args)?.iter().product())),
        "SubtractFloat" | "SubtractInt" | "DivideFloat" | "DivideInt" => {
            arity(&args, 2)?;
            let (a, b) = (to_f64(&args[0])?, to_f64(&args[1])?);
            let r = if name.starts_with("Subtract") {
                a - b
            } else if b == 0.0 {
                return Err("division by zero".into());
            } else {
                a / b
            };
            if name.ends_with("Int") {
                Value::Int(go_f64_to_int(r))
            } else {
                Value::Float(r)
            }
        }
        "Mod" => {
            arity(&args, 2)?;
            let (a, b) = (go_f64_to_int(to_f64(&args[0])?), go_f64_to_int(to_f64(&args[1])?));
            if b == 0 {
                return Err("integer divide by zero".into());
            }
            Value::Int(a.wrapping_rem(b))
        }
        "Int" => {
            arity(&args, 1)?;
            Value::Int(to_int(&args[0])?)
        }
        "JSON" => {
            arity(&args, 1)?;
            Value::Str(to_json(&args[0]))
        }
        "and" => {
            let mut last = Value::Nil;
            for a in args {
                if !truthy(&a) {
                    return Ok(a);
                }
                last = a;
            }
            last
        }
        "or" => {
            let mut last = Value::Nil;
            for a in args {
                if truthy(&a) {
                    return Ok(a);
                }
                last = a;
            }
            last
        }
        "not" => {
            arity(&args, 1)?;
            Value::Bool(!truthy(&args[0]))
        }
        "eq" => {
            if args.len() < 2 {
                return Err("missing argument for comparison".into());
            }
            let mut any = false;
            for b in &args[1..] {
                // As Go: a nil (missing) value equals only nil, without an error.
                any |= match (&args[0], b) {
                    (Value::Nil, _) | (_, Value::Nil) => matches!((&args[0], b), (Value::Nil, Value::Nil)),
                    (a, b) => compare(a, b)? == Ordering::Equal,
                };
            }
            Value::Bool(any)
        }
        "ne" | "lt" | "le" | "gt" | "ge" => {
            arity(&args, 2)?;
            if name == "ne" && (args[0] == Value::Nil || args[1] == Value::Nil) {
                return Ok(Value::Bool(args[0] != args[1]));
            }
            if matches!(args[0], Value::Bool(_)) && name != "ne" {
                return Err("invalid type for comparison".into());
            }
            let o = compare(&args[0], &args[1])?;
            Value::Bool(match name {
                "ne" => o != Ordering::Equal,
                "lt" => o == Ordering::Less,
                "le" => o != Ordering::Greater,
                "gt" => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })
        }
        "len" => {
            arity(&args, 1)?;
            Value::Int(match &args[0] {
                Value::Str(s) => s.len() as i64,
                Value::List(l) => l.len() as i64,
                Value::Map(m) => m.len() as i64,
                other => return Err(format!("len of type {}", type_name(other))),
            })
        }
        "index" => {
            let mut it = args.into_iter();
            let mut v = it.next().ok_or("wrong number of args for index: want at least 1 got 0")?;
            for k in it {
                v = match (&v, &k) {
                    (Value::List(l), _) => {
                        let i = to_int(&k)?;
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| l.get(i))
                            .cloned()
                            .ok_or(format!("index out of range: {i}"))?
                    }
                    (Value::Map(m), Value::Str(s)) => m.get(s).cloned().unwrap_or(Value::Nil),
                    _ => return Err(format!("can't index item of type {}", type_name(&v))),
                };
            }
            v
        }
        "print" => {
            // fmt.Sprint: spaces between operands when neither is a string.
            let mut out = String::new();
            for (i, a) in args.iter().enumerate() {
                if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
                    out.push(' ');
                }
                out.push_str(&go_print(a));
            }
            Value::Str(out)
        }
        "println" => Value::Str(args.iter().map(go_print).collect::<Vec<_>>().join(" ") + "\n"),
        "printf" => {
            let mut it = args.into_iter();
            let Some(Value::Str(format)) = it.next() else { return Err("printf needs a format string".into()) };
            let mut out = String::new();
            let mut chars = format.chars();
            while let Some(c) = chars.next() {
                if c != '%' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('%') => out.push('%'),
                    Some('d' | 's' | 'v') => {
                        out.push_str(&it.next().map_or("%!v(MISSING)".to_string(), |a| go_print(&a)))
                    }
                    Some('q') => out.push_str(
                        &it.next().map_or("%!q(MISSING)".to_string(), |a| to_json(&Value::Str(go_print(&a)))),
                    ),
                    Some(other) => return Err(format!("printf verb %{other} is not supported by schedperf")),
                    None => out.push_str("%!(NOVERB)"),
                }
            }
            Value::Str(out)
        }
        other => return Err(format!("{other} is not supported by schedperf")),
    })
}

// ---------------------------------------------------------------------------------------------
// Printing as Go does.

/// `fmt.Sprintf("%v", v)` as a Go function sees it: a nil is `<nil>` (the template engine prints a
/// missing value as `<no value>` only when it writes it out).
fn go_sprint_v(v: &Value) -> String {
    match v {
        Value::Nil => "<nil>".to_string(),
        other => go_print(other),
    }
}

/// `fmt.Sprint(v)` for a template value.
pub fn go_print(v: &Value) -> String {
    match v {
        Value::Nil => "<no value>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => go_format_float(*f),
        Value::Str(s) => s.clone(),
        Value::List(l) => format!("[{}]", l.iter().map(go_print).collect::<Vec<_>>().join(" ")),
        Value::Map(m) => {
            let items: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", go_print(v))).collect();
            format!("map[{}]", items.join(" "))
        }
    }
}

/// Shortest decimal digits and decimal exponent of `f` (finite, non-zero): `f = 0.d1d2... * 10^dp`.
fn shortest_digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mant, exp) = e.split_once('e').expect("{:e} has an exponent");
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    (digits, exp.parse::<i32>().expect("exponent") + 1)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which `fmt` uses for `%v`: the shortest digits
/// that round-trip, in `%e` form when the decimal exponent is < -4 or >= 6 (`1e+06`,
/// `1.5e-05`), else in `%f` form (`100000`, `0.5`).
pub fn go_format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let (digits, dp) = shortest_digits(f);
    let nd = digits.len();
    // In shortest mode strconv uses eprec = 6.
    const EPREC: i32 = 6;
    let exp = dp - 1;
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..EPREC).contains(&exp) {
        let mut m = digits[..1].to_string();
        if nd > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let (es, ea) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
        return format!("{sign}{m}e{es}{ea:02}");
    }
    format!("{sign}{}", f.abs())
}

/// `encoding/json` of a value (as upstream's `JSON` function: no HTML escaping).
pub fn to_json(v: &Value) -> String {
    match v {
        Value::Nil => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => {
            let a = f.abs();
            if a != 0.0 && !(1e-6..1e21).contains(&a) {
                // Go: %e with a two-digit minimum exponent stripped of the leading zero.
                let (digits, dp) = shortest_digits(*f);
                let mut m = digits[..1].to_string();
                if digits.len() > 1 {
                    m.push('.');
                    m.push_str(&digits[1..]);
                }
                let exp = dp - 1;
                let sign = if *f < 0.0 { "-" } else { "" };
                format!("{sign}{m}e{}{}", if exp < 0 { '-' } else { '+' }, exp.abs())
            } else {
                format!("{f}")
            }
        }
        Value::Str(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        Value::List(l) => format!("[{}]", l.iter().map(to_json).collect::<Vec<_>>().join(",")),
        Value::Map(m) => {
            let items: Vec<String> =
                m.iter().map(|(k, v)| format!("{}:{}", to_json(&Value::Str(k.clone())), to_json(v))).collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

#[cfg(test)]
mod tests;
