//! Calendar dates for API timestamps: RFC 3339 times as the API server writes them, and the
//! proleptic Gregorian calendar both ways (after Howard Hinnant's `days_from_civil` and
//! `civil_from_days`). The one place the tool does date arithmetic.

/// Days since 1970-01-01 of a (year, month 1-12, day 1-31).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month 1-12, day 1-31) of a count of days since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Milliseconds since the Unix epoch of an RFC 3339 UTC time (`2024-05-01T10:00:00Z`), as the API
/// server writes `creationTimestamp` and `startTime`. `None` if it does not parse.
pub fn rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b't') || b[13] != b':' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r).and_then(|t| t.parse::<i64>().ok());
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000 + se * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        // (days since the epoch, date)
        let cases = [
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (11_016, (2000, 2, 29)),
            (19_782, (2024, 2, 29)),
            (19_783, (2024, 3, 1)),
            (20_819, (2027, 1, 1)),
        ];
        for (days, (y, m, d)) in cases {
            assert_eq!(civil_from_days(days), (y, m, d), "civil_from_days({days})");
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days, "days_from_civil({y}-{m}-{d})");
        }
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("2024-03-01T12:30:15Z"), Some(1_709_296_215_000));
        assert_eq!(rfc3339_ms("2024-03-01t12:30:15Z"), Some(1_709_296_215_000));
        assert_eq!(rfc3339_ms("garbage"), None);
        assert_eq!(rfc3339_ms("2024-03-01 12:30:15Z"), None);
    }

    proptest::proptest! {
        /// Days to a date and back is the identity over ±10,000 years.
        #[test]
        fn civil_round_trip(days in -3_652_425i64..3_652_425) {
            let (y, m, d) = civil_from_days(days);
            proptest::prop_assert!((1..=12).contains(&m) && (1..=31).contains(&d));
            proptest::prop_assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }
}
