//! Number formatting shared by the renderers.

/// A metric value with precision by magnitude: `1234`, `45.6`, `7.89`.
pub fn value(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A signed percentage from a fraction: `-0.07` -> `-7.0%`.
pub fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// A relative change of a cell: two decimals for instruction counts, whose A/A changes are
/// hundredths of a percent, one otherwise.
pub fn cell_pct(c: &super::evaluate::Cell, x: f64) -> String {
    if c.test == super::evaluate::INSTRUCTION_TEST {
        format!("{:+.2}%", x * 100.0)
    } else {
        pct(x)
    }
}

/// A budget from a fraction: `0.05` -> `5%`, `0.125` -> `12.5%`.
pub fn budget(b: Option<f64>) -> String {
    match b {
        Some(b) => {
            let p = b * 100.0;
            if (p - p.round()).abs() < 1e-9 {
                format!("{p:.0}%")
            } else {
                format!("{p:.1}%")
            }
        }
        None => "-".to_string(),
    }
}

/// A p-value: three decimals, or scientific below 0.001.
pub fn p(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!([value(1234.4), value(45.61), value(7.891)], ["1234", "45.6", "7.89"]);
        assert_eq!([pct(-0.07), pct(0.1234), pct(0.0)], ["-7.0%", "+12.3%", "+0.0%"]);
        assert_eq!([budget(Some(0.05)), budget(Some(0.125)), budget(None)], ["5%", "12.5%", "-"]);
        assert_eq!([p(0.0021), p(0.00072), p(1.0)], ["0.002", "7.2e-4", "1.000"]);
    }
}
