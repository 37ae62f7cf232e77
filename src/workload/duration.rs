//! Go-style durations (`time.ParseDuration`): `5s`, `100ms`, `1m30s`, `1.5h`.

use std::time::Duration;

/// Nanoseconds per unit, for the units Go's `time.ParseDuration` accepts.
const UNITS_NS: &[(&str, f64)] =
    &[("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("μs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9)];

/// Parses a non-negative Go duration such as `5s`, `100ms` or `1h2m3.5s`; `0` alone is allowed.
///
/// The error says what was expected, for the caller to wrap in an `InputError`.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("{text:?} is not a duration: expected a number with a unit (ns, us, ms, s, m, h) like 5s or 100ms");
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.starts_with('-') {
        return Err(format!("{text:?} is negative: a duration must be >= 0"));
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total_ns = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let Some(&(_, scale_ns)) = UNITS_NS.iter().find(|(name, _)| *name == unit) else {
            return Err(bad());
        };
        total_ns += value * scale_ns;
        rest = &rest[unit_len..];
    }
    if !total_ns.is_finite() || total_ns > u64::MAX as f64 {
        return Err(format!("{text:?} is too long a duration"));
    }
    Ok(Duration::from_nanos(total_ns.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected_ns: Option<u64>) {
        let got = parse_go_duration(input).ok().map(|d| d.as_nanos() as u64);
        assert_eq!(got, expected_ns, "parse_go_duration({input:?})");
    }

    #[test]
    fn parses_go_durations() {
        check("0", Some(0));
        check("5s", Some(5_000_000_000));
        check("100ms", Some(100_000_000));
        check("1m30s", Some(90_000_000_000));
        check("1.5h", Some(5_400_000_000_000));
        check("250us", Some(250_000));
        check("7ns", Some(7));
        check("+2s", Some(2_000_000_000));
        check("", None);
        check("5", None);
        check("s", None);
        check("5x", None);
        check("-5s", None);
        check("1..5s", None);
        check("5s3", None);
    }
}
