//! Semantic versions as github.com/blang/semver/v4 parses and orders them (the type behind
//! Kubernetes' CEL `semver()` and DRA version attributes), without allocating: a parsed
//! version borrows its pre-release text.

use std::cmp::Ordering;

/// A parsed version: the numbers and the pre-release identifiers' text (`""` when none).
/// Build metadata is checked but, as in semver 2.0, plays no part in comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version<'s> {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: &'s str,
}

fn only(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

fn number(s: &str, what: &str) -> Result<u64, String> {
    if !only(s, |c| c.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        let cap = format!("{}{}", what[..1].to_ascii_uppercase(), &what[1..]);
        return Err(format!("{cap} number must not contain leading zeroes {s:?}"));
    }
    s.parse::<u64>().map_err(|_| format!("strconv.ParseUint: parsing {s:?}: invalid syntax"))
}

/// Parses `s` strictly, as blang's `semver.Parse` (errors carry its wording).
pub(crate) fn parse(s: &str) -> Result<Version<'_>, String> {
    if s.is_empty() {
        return Err("Version string empty".to_string());
    }
    let mut parts = s.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("No Major.Minor.Patch elements found".to_string());
    };
    let major = number(major, "major")?;
    let minor = number(minor, "minor")?;
    let mut patch = rest;
    if let Some(i) = patch.find('+') {
        for b in patch[i + 1..].split('.') {
            if b.is_empty() {
                return Err("Build meta data is empty".to_string());
            }
            if !only(b, alnum) {
                return Err(format!("Invalid character(s) found in build meta data {b:?}"));
            }
        }
        patch = &patch[..i];
    }
    let mut pre = "";
    if let Some(i) = patch.find('-') {
        pre = &patch[i + 1..];
        patch = &patch[..i];
        for id in pre.split('.') {
            if id.is_empty() {
                return Err("Prerelease is empty".to_string());
            }
            if only(id, |c| c.is_ascii_digit()) {
                if id.len() > 1 && id.starts_with('0') {
                    return Err(format!("Numeric PreRelease version must not contain leading zeroes {id:?}"));
                }
                if id.parse::<u64>().is_err() {
                    return Err(format!("strconv.ParseUint: parsing {id:?}: value out of range"));
                }
            } else if !only(id, alnum) {
                return Err(format!("Invalid character(s) found in prerelease {id:?}"));
            }
        }
    }
    let patch = number(patch, "patch")?;
    Ok(Version { major, minor, patch, pre })
}

/// Kubernetes' `normalizeAndParse` (`semver(s, true)`): drops a leading `v`, strips leading
/// zeroes from each of the first three parts and pads a short version with `.0`; returns the
/// normalized text, which [`parse`] accepts.
pub(crate) fn normalize(s: &str) -> Result<String, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in parts.iter_mut() {
        if p.len() > 1 {
            let t = p.trim_start_matches('0');
            *p = if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() { format!("0{t}") } else { t.to_string() };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        while parts.len() < 3 {
            parts.push("0".to_string());
        }
    }
    let n = parts.join(".");
    parse(&n)?;
    Ok(n)
}

fn numeric(id: &str) -> Option<u64> {
    if only(id, |c| c.is_ascii_digit()) {
        id.parse().ok()
    } else {
        None
    }
}

/// blang's `Version.Compare`: numbers, then a version without pre-release above one with,
/// then pre-release identifiers pairwise (numeric below alphanumeric), the longer list above.
pub(crate) fn compare(a: &Version<'_>, b: &Version<'_>) -> Ordering {
    let c = (a.major, a.minor, a.patch).cmp(&(b.major, b.minor, b.patch));
    if c != Ordering::Equal {
        return c;
    }
    match (a.pre.is_empty(), b.pre.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    let mut x = a.pre.split('.');
    let mut y = b.pre.split('.');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (Some(_), None) => return Ordering::Greater,
            (None, Some(_)) => return Ordering::Less,
            (Some(p), Some(q)) => {
                let c = match (numeric(p), numeric(q)) {
                    (Some(m), Some(n)) => m.cmp(&n),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => p.cmp(q),
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
        }
    }
}
