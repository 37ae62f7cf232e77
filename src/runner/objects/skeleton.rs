//! A flat template's YAML parsed once: the template is rendered with a marker in place of each
//! action and parsed to untyped documents (the *skeleton*); an object is then the skeleton with
//! each marker replaced by its action's value, decoded as `api::parse_objects` decodes, with no
//! YAML parse per object.
//!
//! This is exact only when the values lex and resolve as the markers did, which [`Skeleton::fill`]
//! checks per object (else the caller renders and parses the text, the reference path):
//! - a value is [`is_safe_value`]: ASCII letters, digits and `-_./`, starting with a letter or a
//!   digit, no longer than a marker. Such a run changes no token boundary wherever a marker
//!   lexed as part of a scalar (plain, quoted or block; a key or a value), starts a plain scalar
//!   where the marker did, and shortens no line below what it was, so no key-length limit moves;
//! - every scalar holding a marker still [`resolves_to_string`] once filled: a plain scalar
//!   resolves by its content (null, bool, int, float, else string), so `{{.Index}}` alone, whose
//!   value is a number, is left to the reference path;
//! - keys stay distinct in each mapping (a duplicate is the reference path's error to report).
//!
//! A skeleton is refused ([`Skeleton::new`] is `None`) unless each marker is found exactly once,
//! intact, in a string of the documents: a marker in a comment, an anchor, an alias, a tag or a
//! block-scalar header is lost or mangled, and one under an alias or a merge key is copied.
//! Templates with merge keys (`<<`), tags, or that read as JSON (`{` first) are refused too.

use serde_norway::{Mapping, Value};

/// Starts every marker; has no border (no proper prefix is also a suffix), so an occurrence
/// cannot start inside the text before a marker.
const MARKER_PREFIX: &str = "Zq9SchedperfTemplateHole";

/// Digits of the action's index in a marker, after [`MARKER_PREFIX`] and padding.
const MARKER_INDEX_DIGITS: usize = 6;

/// Length of every marker: [`MARKER_PREFIX`], `x` padding, the index's
/// [`MARKER_INDEX_DIGITS`] digits and a closing `Q`. A value may be as long as this.
pub(super) const MARKER_LEN: usize = 64;

/// The longest index a marker holds: a template with more actions has no skeleton.
const MAX_ACTIONS: usize = 10usize.pow(MARKER_INDEX_DIGITS as u32);

/// The marker printed for action `i`.
fn marker(i: usize) -> String {
    let pad = MARKER_LEN - MARKER_PREFIX.len() - MARKER_INDEX_DIGITS - 1;
    format!("{MARKER_PREFIX}{}{i:0width$}Q", "x".repeat(pad), width = MARKER_INDEX_DIGITS)
}

/// The index of the marker at the start of `s`, when `s` starts with a whole marker.
fn marker_at(s: &str) -> Option<usize> {
    let m = s.as_bytes().get(..MARKER_LEN)?;
    let (digits, close) = m[MARKER_LEN - 1 - MARKER_INDEX_DIGITS..].split_at(MARKER_INDEX_DIGITS);
    let whole = m.starts_with(MARKER_PREFIX.as_bytes())
        && m[MARKER_PREFIX.len()..MARKER_LEN - 1 - MARKER_INDEX_DIGITS].iter().all(|&b| b == b'x')
        && digits.iter().all(u8::is_ascii_digit)
        && close == b"Q";
    whole.then(|| digits.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0')))
}

/// Where the first occurrence of [`MARKER_PREFIX`] in `s` starts: a scan for its first byte, as
/// the strings are short (a `str::find` builds a searcher per call).
fn find_prefix(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let first = MARKER_PREFIX.as_bytes()[0];
    (0..b.len()).find(|&i| b[i] == first && b[i..].starts_with(MARKER_PREFIX.as_bytes()))
}

/// Whether an action's printed value may replace its marker (see the module doc): ASCII letters,
/// digits and `-_./`, the first a letter or digit, at most [`MARKER_LEN`] bytes.
pub(super) fn is_safe_value(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= MARKER_LEN
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/'))
}

/// Bytes that can appear in a YAML int or float as serde_norway resolves plain scalars (Rust's
/// `from_str_radix` with `0x`/`0o`/`0b`, Rust's float syntax with `inf`, `infinity`, `nan` in any
/// case, `.inf`, `.nan`).
const NUMBER_BYTES: &[u8] = b"0123456789+-._abcdefABCDEFxXoOiInNtTyY";

/// Whether the plain scalar `s` surely resolves to a string (serde_norway's
/// `visit_untagged_scalar`: empty or `~`/`null` is null, `true`/`false` in three cases are bools,
/// then ints and floats): it is none of the null and bool words and has a byte that no number
/// has. Conservative: `"0"` is refused even when quoted.
pub(super) fn resolves_to_string(s: &str) -> bool {
    !matches!(s, "" | "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
        && s.bytes().any(|b| !NUMBER_BYTES.contains(&b))
}

/// A flat template's documents with markers where its actions print.
#[derive(Debug, Clone)]
pub(super) struct Skeleton {
    documents: Vec<Value>,
}

impl Skeleton {
    /// The skeleton of a flat template with text `pieces` around its actions (see
    /// `Template::flat_pieces`), or `None` when it would not be exact (module doc). `source` is
    /// the template's text.
    pub(super) fn new(pieces: &[String], source: &str, file: &str) -> Option<Skeleton> {
        let actions = pieces.len() - 1;
        if actions == 0 || actions > MAX_ACTIONS || source.contains(MARKER_PREFIX) || source.contains("<<") {
            return None;
        }
        let mut text = pieces[0].clone();
        for (i, p) in pieces[1..].iter().enumerate() {
            text.push_str(&marker(i));
            text.push_str(p);
        }
        // JSON is read by another parser: only YAML documents have skeletons.
        if text.strip_prefix('\u{feff}').unwrap_or(&text).trim_start().starts_with('{') {
            return None;
        }
        let documents = crate::api::parse_documents(&text, file).ok()?;
        let mut seen = vec![0u32; actions];
        for d in &documents {
            count_markers(d, &mut seen)?;
        }
        seen.iter().all(|&n| n == 1).then_some(Skeleton { documents })
    }

    /// The documents with each marker replaced by `values[i]`, or `None` when that would not be
    /// what parsing the rendered text gives (module doc): the caller then renders and parses.
    pub(super) fn fill(&self, values: &[String]) -> Option<Vec<Value>> {
        if !values.iter().all(|v| is_safe_value(v)) {
            return None;
        }
        let mut documents = self.documents.clone();
        for d in &mut documents {
            fill_value(d, values)?;
        }
        Some(documents)
    }
}

/// Counts the markers in the strings (keys and values) of `v` into `seen`; `None` on a tagged
/// value or a marker whose index is out of range.
fn count_markers(v: &Value, seen: &mut [u32]) -> Option<()> {
    let count_in = |s: &str, seen: &mut [u32]| -> Option<()> {
        let mut rest = s;
        while let Some(at) = find_prefix(rest) {
            let i = marker_at(&rest[at..])?;
            *seen.get_mut(i)? += 1;
            rest = &rest[at + MARKER_LEN..];
        }
        Some(())
    };
    match v {
        Value::String(s) => count_in(s, seen),
        Value::Sequence(items) => items.iter().try_for_each(|i| count_markers(i, seen)),
        Value::Mapping(m) => m.iter().try_for_each(|(k, v)| {
            count_markers(k, seen)?;
            count_markers(v, seen)
        }),
        Value::Tagged(_) => None,
        Value::Null | Value::Bool(_) | Value::Number(_) => Some(()),
    }
}

/// `s` with its markers replaced by their values, when it has any; `None` when it has none.
fn replaced(s: &str, values: &[String]) -> Option<String> {
    let first = find_prefix(s)?;
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut at = first;
    loop {
        out.push_str(&rest[..at]);
        let i = marker_at(&rest[at..]).expect("markers were checked when the skeleton was made");
        out.push_str(&values[i]);
        rest = &rest[at + MARKER_LEN..];
        match find_prefix(rest) {
            Some(next) => at = next,
            None => break,
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Fills the markers under `v` (module doc); `None` when a filled scalar would not resolve to a
/// string or two keys of a mapping would be equal.
fn fill_value(v: &mut Value, values: &[String]) -> Option<()> {
    match v {
        Value::String(s) => {
            if let Some(new) = replaced(s, values) {
                if !resolves_to_string(&new) {
                    return None;
                }
                *s = new;
            }
            Some(())
        }
        Value::Sequence(items) => items.iter_mut().try_for_each(|i| fill_value(i, values)),
        Value::Mapping(m) => {
            let keyed = m.keys().any(|k| matches!(k, Value::String(s) if find_prefix(s).is_some()));
            if !keyed {
                return m.values_mut().try_for_each(|v| fill_value(v, values));
            }
            let mut out = Mapping::with_capacity(m.len());
            for (mut k, mut v) in std::mem::take(m) {
                fill_value(&mut k, values)?;
                fill_value(&mut v, values)?;
                if out.insert(k, v).is_some() {
                    return None;
                }
            }
            *m = out;
            Some(())
        }
        Value::Tagged(_) => None,
        Value::Null | Value::Bool(_) | Value::Number(_) => Some(()),
    }
}
