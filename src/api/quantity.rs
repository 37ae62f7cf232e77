//! Kubernetes resource quantities (`100m`, `2Gi`, `1e3`), parsed exactly, without floating point.
//!
//! The grammar is the one documented in k8s.io/apimachinery `pkg/api/resource/quantity.go`:
//!
//! ```text
//! <quantity>        ::= <signedNumber><suffix>
//! <signedNumber>    ::= <number> | <sign><number>
//! <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//! <sign>            ::= "+" | "-"
//! <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//! <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//! <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//! <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>
//! ```
//!
//! Like `ParseQuantity`, a value is rounded up (away from zero) to a whole number of nano-units, so a
//! quantity is stored exactly as an integer count of nano-units. Upstream's scanner is laxer than its
//! documented grammar in one respect: it reads a number without digits (`Ki`, `-`, `.`) as zero. We
//! follow the documented grammar and reject those, since they are always typing mistakes.

use std::cmp::Ordering;
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Nano-units in one unit: quantities are stored as an integer count of 10^-9.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// Nano-units in one milli-unit.
const NANOS_PER_MILLI: i128 = 1_000_000;

/// The largest magnitude we keep, in nano-units: `i64::MAX` units. Larger values saturate here, so
/// [`Quantity::value_ceil`] never exceeds `i64::MAX`. Upstream caps binary-suffixed values the same
/// way and keeps larger decimal ones (`12E`) exactly, but its `Value()` cannot return them either.
const MAX_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;

/// Decimal digits of [`MAX_NANOS`] (9.22e27 has 28 digits): any integer with more digits is larger.
const MAX_NANOS_DIGITS: usize = 28;

/// A Kubernetes resource quantity, as an exact integer count of nano-units.
///
/// Ordering and equality compare the amounts, so `1k == 1000` and `1Gi > 1G`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    /// The amount in nano-units (10^-9), rounded away from zero; |nanos| <= `i64::MAX` * 10^9.
    nanos: i128,
}

impl Quantity {
    /// The zero quantity.
    pub const ZERO: Quantity = Quantity { nanos: 0 };

    /// Parses `s` by Kubernetes' quantity grammar; the error reads `"4x" is not a quantity`.
    pub fn parse(s: &str) -> Result<Quantity, String> {
        parse_nanos(s).map(|nanos| Quantity { nanos }).ok_or_else(|| format!("{s:?} is not a quantity"))
    }

    /// A quantity of `value` whole units (as `resource.NewQuantity`).
    pub fn from_value(value: i64) -> Quantity {
        Quantity { nanos: i128::from(value) * NANOS_PER_UNIT }
    }

    /// A quantity of `milli_value` thousandths of a unit (as `resource.NewMilliQuantity`).
    pub fn from_milli_value(milli_value: i64) -> Quantity {
        Quantity { nanos: i128::from(milli_value) * NANOS_PER_MILLI }
    }

    /// The exact amount in nano-units (10^-9 of a unit).
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The amount in whole units, rounded away from zero, as k8s `Quantity.Value()` (`0.1` gives 1,
    /// `-1.5` gives -2). Saturates at the `i64` range.
    pub fn value_ceil(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, NANOS_PER_UNIT))
    }

    /// The amount in thousandths of a unit, rounded away from zero, as k8s `Quantity.MilliValue()`
    /// (`0.0001` gives 1). Saturates at the `i64` range.
    pub fn milli_value_ceil(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, NANOS_PER_MILLI))
    }
}

impl Quantity {
    /// The sum, saturating at the largest magnitude a quantity holds (`i64::MAX` units).
    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity { nanos: (self.nanos + other.nanos).clamp(-MAX_NANOS, MAX_NANOS) }
    }

    /// The difference, saturating as [`Quantity::saturating_add`].
    pub fn saturating_sub(self, other: Quantity) -> Quantity {
        Quantity { nanos: (self.nanos - other.nanos).clamp(-MAX_NANOS, MAX_NANOS) }
    }
}

/// Divides `n` by the positive `d`, rounding a remainder away from zero.
fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    match (n % d).cmp(&0) {
        Ordering::Greater => q + 1,
        Ordering::Less => q - 1,
        Ordering::Equal => q,
    }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The exponent of a suffix: a power of ten or a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exponent {
    Decimal(i32),
    Binary(u32),
}

/// Looks a suffix up in the SI tables, then as an `e`/`E` exponent (as upstream's `interpret`).
fn interpret_suffix(suffix: &str) -> Option<Exponent> {
    let exponent = match suffix {
        "n" => Exponent::Decimal(-9),
        "u" => Exponent::Decimal(-6),
        "m" => Exponent::Decimal(-3),
        "" => Exponent::Decimal(0),
        "k" => Exponent::Decimal(3),
        "M" => Exponent::Decimal(6),
        "G" => Exponent::Decimal(9),
        "T" => Exponent::Decimal(12),
        "P" => Exponent::Decimal(15),
        "E" => Exponent::Decimal(18),
        "Ki" => Exponent::Binary(10),
        "Mi" => Exponent::Binary(20),
        "Gi" => Exponent::Binary(30),
        "Ti" => Exponent::Binary(40),
        "Pi" => Exponent::Binary(50),
        "Ei" => Exponent::Binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            // As upstream: parsed at 64 bits, then only exponents in [-MaxInt32, MaxInt32] are accepted
            // (older releases truncated larger ones to an unrelated int32).
            let parsed: i64 = rest.parse().ok()?;
            if parsed.unsigned_abs() > i32::MAX as u64 {
                return None;
            }
            Exponent::Decimal(parsed as i32)
        }
    };
    Some(exponent)
}

/// Scans `s` as upstream's `parseQuantityString` does and returns the amount in nano-units, or
/// `None` when `s` is not a quantity.
fn parse_nanos(s: &str) -> Option<i128> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            pos += 1;
            true
        }
        Some(b'+') => {
            pos += 1;
            false
        }
        _ => false,
    };
    let int_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let int_digits = &bytes[int_start..pos];
    let mut frac_digits: &[u8] = &[];
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let frac_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        frac_digits = &bytes[frac_start..pos];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    // The suffix: letters, then an optional sign, then digits up to the end.
    let suffix_start = pos;
    while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && (bytes[pos] == b'-' || bytes[pos] == b'+') {
        pos += 1;
    }
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != bytes.len() {
        return None;
    }
    // Everything before `suffix_start` is ASCII, so this slices on a character boundary.
    let exponent = interpret_suffix(&s[suffix_start..])?;
    let (decimal_exp, binary_exp) = match exponent {
        Exponent::Decimal(e) => (i64::from(e), 0),
        Exponent::Binary(e) => (0, e),
    };
    let magnitude = magnitude_nanos(int_digits, frac_digits, decimal_exp, binary_exp);
    Some(if negative { -magnitude } else { magnitude })
}

/// Computes `ceil(int.frac * 10^decimal_exp * 2^binary_exp * 10^9)`, saturated at [`MAX_NANOS`].
///
/// Works on decimal digit strings, so inputs of any length and exponent are exact and cannot overflow.
fn magnitude_nanos(int_digits: &[u8], frac_digits: &[u8], decimal_exp: i64, binary_exp: u32) -> i128 {
    // Significant digits with leading zeros dropped; trailing zeros move into the exponent.
    let all: Vec<u8> = int_digits.iter().chain(frac_digits).map(|d| d - b'0').collect();
    let Some(first) = all.iter().position(|&d| d != 0) else {
        return 0;
    };
    let Some(last) = all.iter().rposition(|&d| d != 0) else {
        return 0;
    };
    let mut digits: Vec<u8> = all[first..=last].to_vec();
    let trailing_zeros = (all.len() - 1 - last) as i64;
    // The nano-unit scale: value = digits * 10^shift * 2^binary_exp, in nano-units.
    let shift = trailing_zeros - frac_digits.len() as i64 + decimal_exp + 9;
    // Doubling only adds digits, so a value already too long saturates without the work.
    if digits.len() as i64 + shift > MAX_NANOS_DIGITS as i64 {
        return MAX_NANOS;
    }
    for _ in 0..binary_exp {
        double_decimal(&mut digits);
    }
    let int_len = digits.len() as i64 + shift;
    if int_len > MAX_NANOS_DIGITS as i64 {
        return MAX_NANOS;
    }
    if int_len <= 0 {
        // Entirely below one nano-unit and non-zero: rounds up to one.
        return 1;
    }
    let int_len = int_len as usize;
    let mut value: i128 = 0;
    for i in 0..int_len {
        let d = digits.get(i).copied().unwrap_or(0);
        value = value * 10 + i128::from(d);
    }
    // Any non-zero digit past the integer part means a fraction: round up.
    if digits.len() > int_len && digits[int_len..].iter().any(|&d| d != 0) {
        value += 1;
    }
    value.min(MAX_NANOS)
}

/// Multiplies a most-significant-first decimal digit string by two, in place.
fn double_decimal(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

/// Formats in canonical decimal SI form, as upstream's `DecimalSI` canonicalization: the largest
/// suffix that keeps the number an integer (`1.5` is `1500m`, `1000` is `1k`, `2Gi` is `2147483648`).
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        const SUFFIXES: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
        let mut n = self.nanos;
        let mut i = 0;
        while i + 1 < SUFFIXES.len() && n % 1000 == 0 {
            n /= 1000;
            i += 1;
        }
        write!(f, "{n}{}", SUFFIXES[i])
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

/// Accepts a string or a number, as upstream's `Quantity.UnmarshalJSON` does. A YAML or JSON float
/// reaches us as an `f64`; its shortest round-trip decimal form is parsed, which is what Kubernetes
/// does too (its YAML-to-JSON step also goes through `float64`).
struct QuantityVisitor;

impl Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity (a string such as \"100m\" or \"2Gi\", or a number)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
        Quantity::parse(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
        Quantity::parse(&v.to_string()).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
        Quantity::parse(&v.to_string()).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
        Quantity::parse(&v.to_string()).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Parses `input` and checks (nanos, value_ceil, milli_value_ceil).
    fn check(input: &str, nanos: i128, value: i64, milli: i64) {
        let q = Quantity::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!((q.nanos(), q.value_ceil(), q.milli_value_ceil()), (nanos, value, milli), "{input:?}");
    }

    #[test]
    fn parses_the_grammar() {
        const G: i128 = 1_000_000_000;
        check("100m", 100_000_000, 1, 100);
        check("1.5", 1_500_000_000, 2, 1500);
        check("2Gi", 2 * (1 << 30) * G, 2 << 30, (2i64 << 30) * 1000);
        check("500M", 500_000_000 * G, 500_000_000, 500_000_000_000);
        check("1e3", 1000 * G, 1000, 1_000_000);
        check("1E3", 1000 * G, 1000, 1_000_000);
        check("1E-3", 1_000_000, 1, 1);
        check("1e+3", 1000 * G, 1000, 1_000_000);
        check("1.5e3", 1500 * G, 1500, 1_500_000);
        check("12Ki", 12 * 1024 * G, 12 * 1024, 12 * 1024 * 1000);
        check("0.1", 100_000_000, 1, 100);
        check("1m", 1_000_000, 1, 1);
        check("0.0001", 100_000, 1, 1);
        check("-1", -G, -1, -1000);
        check("+1", G, 1, 1000);
        check(".5", 500_000_000, 1, 500);
        check("5.", 5 * G, 5, 5000);
        check("1.5Gi", 3 * (1 << 29) * G, 3 << 29, (3i64 << 29) * 1000);
        check("0", 0, 0, 0);
        check("000", 0, 0, 0);
        check("-0", 0, 0, 0);
        check("0.0", 0, 0, 0);
        check("007", 7 * G, 7, 7000);
        check("1n", 1, 1, 1);
        check("1u", 1000, 1, 1);
        check("1k", 1000 * G, 1000, 1_000_000);
        check("1E", 1_000_000_000_000_000_000 * G, 1_000_000_000_000_000_000, i64::MAX);
        check("1Ei", (1i128 << 60) * G, 1 << 60, i64::MAX);
        check("-1.5", -1_500_000_000, -2, -1500);
        check("1.", G, 1, 1000);
        check("1.G", G * G, 1_000_000_000, 1_000_000_000_000);
        check("1e03", 1000 * G, 1000, 1_000_000);
    }

    /// Cases from upstream's `TestQuantityParse`, as (input, nano-units).
    #[test]
    fn matches_upstream_parse_table() {
        const G: i128 = 1_000_000_000;
        for (input, nanos) in [
            ("7Mi", (7i128 << 20) * G),
            ("3Ei", (3i128 << 60) * G),
            ("5n", 5),
            ("4u", 4000),
            ("50k", 50_000 * G),
            ("300T", 300_000_000_000_000 * G),
            ("1E-3", G / 1000),
            ("1e15", 1_000_000_000_000_000 * G),
            ("100.035k", 100_035 * G),
            ("0.0005k", G / 2),
            ("0.00050k", G / 2),
            ("0.5e-2", 5_000_000),
            ("1.3E+6", 1_300_000 * G),
            ("1.53E12", 1_530_000_000_000 * G),
            ("1.7E18", 1_700_000_000_000_000_000 * G),
            ("6.987654321G", 6_987_654_321 * G),
            ("1.01E", 1_010_000_000_000_000_000 * G),
            ("3.001n", 4),
            ("1.1E-9", 2),
            ("0.0000000005", 1),
            ("0.5e-9", 1),
            ("0.9n", 1),
            ("0.00000012345", 124),
            ("0.00000012354", 124),
            ("9Ei", MAX_NANOS),
            ("9223372036854775807Ki", MAX_NANOS),
            ("100.035Ki", 102_435_840_000_000),
            ("0.5Mi", (1 << 19) * G),
            ("0.05Gi", 53_687_091_200_000_000),
            ("0.025Ti", 27_487_790_694_400_000_000),
            ("0.000000000001Ki", 2),
            (".001", 1_000_000),
            (".0001k", 100_000_000),
        ] {
            assert_eq!(Quantity::parse(input).map(|q| q.nanos()), Ok(nanos), "{input:?}");
            assert_eq!(Quantity::parse(&format!("-{input}")).map(|q| q.nanos()), Ok(-nanos), "-{input:?}");
            assert_eq!(Quantity::parse(&format!("+{input}")).map(|q| q.nanos()), Ok(nanos), "+{input:?}");
        }
    }

    #[test]
    fn rounds_up_below_a_nano() {
        check("0.0000000001", 1, 1, 1);
        check("1e-12", 1, 1, 1);
        check("-1e-12", -1, -1, -1);
        check("1.0000000001", 1_000_000_001, 2, 1001);
        check("0.0000000001Ki", 103, 1, 1);
        check("1e-2147483647", 1, 1, 1);
        check("0e-99", 0, 0, 0);
    }

    #[test]
    fn saturates_absurd_values() {
        check("9223372036854775807", MAX_NANOS, i64::MAX, i64::MAX);
        check("9223372036854775808", MAX_NANOS, i64::MAX, i64::MAX);
        check("1e400", MAX_NANOS, i64::MAX, i64::MAX);
        check("-1e400", -MAX_NANOS, -i64::MAX, i64::MIN);
        check("99999999999999999999999999999999999999999Ei", MAX_NANOS, i64::MAX, i64::MAX);
        check("8Ei", MAX_NANOS, i64::MAX, i64::MAX);
        check("1e2147483647", MAX_NANOS, i64::MAX, i64::MAX);
    }

    #[test]
    fn rejects_non_quantities() {
        for input in [
            "4x",
            "",
            "1.2.3",
            "Ki",
            "1 Gi",
            " 1",
            "1 ",
            "1e",
            "1ee3",
            "1K",
            "1mi",
            "-",
            "+",
            ".",
            "e3",
            "1i",
            "0.1am",
            "1.1.M",
            "1+1.0M",
            "-3.01e-",
            "1e3.5",
            "1k3",
            "1Ki3",
            "1-3",
            "1e99999999999999999999",
            "1E3i",
            "--1",
            "１",
            "1e+",
            "1Gi ",
        ] {
            assert_eq!(Quantity::parse(input), Err(format!("{input:?} is not a quantity")), "{input:?}");
        }
    }

    #[test]
    fn error_message_quotes_the_input() {
        assert_eq!(Quantity::parse("4x").unwrap_err(), "\"4x\" is not a quantity");
        assert_eq!(Quantity::parse("").unwrap_err(), "\"\" is not a quantity");
    }

    #[test]
    fn displays_canonical_decimal_si() {
        for (input, shown) in [
            ("1.5", "1500m"),
            ("1000", "1k"),
            ("0", "0"),
            ("100m", "100m"),
            ("2Gi", "2147483648"),
            ("1e-9", "1n"),
            ("1500000u", "1500m"),
            ("-2k", "-2k"),
            ("2e18", "2E"),
            ("9e18", "9E"),
        ] {
            assert_eq!(Quantity::parse(input).map(|q| q.to_string()), Ok(shown.to_string()), "{input:?}");
        }
    }

    #[test]
    fn orders_by_amount() {
        let q = |s| Quantity::parse(s).unwrap();
        assert_eq!(q("1k"), q("1000"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("-1") < q("1m"));
        assert_eq!(Quantity::from_value(2), q("2"));
        assert_eq!(Quantity::from_milli_value(250), q("250m"));
        assert_eq!(q("1.5").saturating_add(q("500m")), q("2"));
        assert_eq!(q("-1").saturating_add(q("250m")), q("-750m"));
        assert_eq!(q("8E").saturating_add(q("8E")).value_ceil(), i64::MAX);
        assert_eq!(q("-8E").saturating_add(q("-8E")).value_ceil(), -i64::MAX);
        assert!(Quantity::ZERO.is_zero() && !q("1n").is_zero());
    }

    #[test]
    fn deserializes_strings_and_numbers() {
        for (yaml, expected) in [
            ("2", "2"),
            ("1.5", "1.5"),
            ("1e3", "1000"),
            ("\"100m\"", "100m"),
            ("100m", "100m"),
            ("0.1", "100m"),
            ("-3", "-3"),
            ("18446744073709551615", "18446744073709551615"),
        ] {
            let got: Quantity = serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"));
            assert_eq!(got, Quantity::parse(expected).unwrap(), "{yaml}");
        }
        let got: Quantity = serde_json::from_str("0.25").unwrap();
        assert_eq!(got.milli_value_ceil(), 250);
        let err = serde_json::from_str::<Quantity>("\"4x\"").unwrap_err().to_string();
        assert!(err.starts_with("\"4x\" is not a quantity"), "{err}");
        let err = serde_json::from_str::<Quantity>("[1]").unwrap_err().to_string();
        assert!(err.starts_with("invalid type: sequence, expected a quantity"), "{err}");
        let err = serde_norway::from_str::<Quantity>(".nan").unwrap_err().to_string();
        assert!(err.starts_with("\"NaN\" is not a quantity"), "{err}");
    }

    #[test]
    fn serializes_as_canonical_string() {
        let q = Quantity::parse("1.5").unwrap();
        assert_eq!(serde_json::to_string(&q).unwrap(), "\"1500m\"");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in any::<String>()) {
            let _ = Quantity::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_quantity_alphabet(s in "[-+0-9.eEinumkKMGTP ]{0,40}") {
            if let Ok(q) = Quantity::parse(&s) {
                prop_assert!(q.nanos().abs() <= MAX_NANOS);
            }
        }

        #[test]
        fn display_round_trips(nanos in -MAX_NANOS..=MAX_NANOS) {
            let q = Quantity { nanos };
            prop_assert_eq!(Quantity::parse(&q.to_string()), Ok(q));
        }

        #[test]
        fn milli_matches_integer_division(milli in -1_000_000_000_000i64..1_000_000_000_000, frac in 0u32..1_000_000) {
            let s = format!("{}.{:06}m", milli, frac);
            let q = Quantity::parse(&s).unwrap();
            let away = if frac == 0 { milli } else if s.starts_with('-') { milli - 1 } else { milli + 1 };
            prop_assert_eq!(q.milli_value_ceil(), away);
        }
    }
}
