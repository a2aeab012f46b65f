//! `resource.Quantity` as validation needs it: parsed exactly (so `500m` and `0.5` compare equal
//! and a request can be checked against its limit) and printed in canonical form, because
//! upstream echoes quantities with `Quantity.String()` (`2000m` shows as `"2"`, `1024Mi` as
//! `"1Gi"`). Follows apimachinery `pkg/api/resource/quantity.go` (`ParseQuantity`,
//! `CanonicalizeBytes`) for every value representable in 128 bits; larger ones are treated as
//! unparsable and skipped by the checks.

use std::cmp::Ordering;

use serde_json::Value;

/// How a quantity was written, which decides how it is printed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// An exact value `mantissa × 10^exponent`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    mantissa: i128,
    exponent: i32,
    format: Format,
}

/// Upstream keeps nano precision (`Nano = -9`), rounding finer values up.
const MIN_EXPONENT: i32 = -9;
/// Powers of ten beyond this are treated as unparsable.
const MAX_EXPONENT: i32 = 1000;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Quantity {
    /// `resource.ParseQuantity`; `None` for malformed or out-of-range input.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, rest) = rest.split_at(int_len);
        let (frac, suffix) = match rest.strip_prefix('.') {
            Some(r) => {
                let n = r.bytes().take_while(u8::is_ascii_digit).count();
                r.split_at(n)
            }
            None => ("", rest),
        };
        let (format, ten, two) = parse_suffix(suffix)?;
        let digits = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else if digits.len() > 36 {
            return None;
        } else {
            digits.parse().ok()?
        };
        let mut exponent = ten.checked_sub(i32::try_from(frac.len()).ok()?)?;
        // Far beyond any real quantity, and would overflow the canonical form's arithmetic.
        if !(-MAX_EXPONENT..=MAX_EXPONENT).contains(&exponent) {
            return None;
        }
        if two > 0 {
            mantissa = mantissa.checked_mul(1i128.checked_shl(two)?)?;
        }
        if negative {
            mantissa = -mantissa;
        }
        if exponent < MIN_EXPONENT {
            let div = pow10(u32::try_from(MIN_EXPONENT - exponent).ok()?)?;
            let (q, r) = (mantissa / div, mantissa % div);
            mantissa = if r == 0 { q } else { q + mantissa.signum() };
            exponent = MIN_EXPONENT;
        }
        // A binary quantity below one is printed as decimal (`ParseQuantity`).
        let format = if format == Format::BinarySi && mantissa > 0 && exponent < 0 && {
            let scale = pow10(exponent.unsigned_abs())?;
            mantissa < scale
        } {
            Format::DecimalSi
        } else {
            format
        };
        Some(Self {
            mantissa,
            exponent,
            format,
        })
    }

    /// A quantity as the JSON decoder accepts it: a string or a bare number.
    pub(crate) fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Self::parse(s),
            Value::Number(n) => Self::parse(&n.to_string()),
            _ => None,
        }
    }

    pub(crate) fn zero() -> Self {
        Self {
            mantissa: 0,
            exponent: 0,
            format: Format::DecimalSi,
        }
    }

    /// `Quantity.Cmp`.
    pub(crate) fn cmp(&self, other: &Self) -> Ordering {
        let e = self.exponent.min(other.exponent);
        let scaled = |q: &Self| {
            pow10(u32::try_from(q.exponent - e).unwrap_or(u32::MAX))
                .and_then(|p| q.mantissa.checked_mul(p))
        };
        match (scaled(self), scaled(other)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // Only astronomically different magnitudes overflow; the sign and exponent decide.
            _ => self.as_f64().total_cmp(&other.as_f64()),
        }
    }

    fn as_f64(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exponent)
    }

    pub(crate) fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    pub(crate) fn is_positive(&self) -> bool {
        self.mantissa > 0
    }

    /// Whether `MilliValue()` is a multiple of 1000 (upstream's "must be an integer" check; the
    /// milli value rounds up, so any fraction fails).
    pub(crate) fn is_integer(&self) -> bool {
        if self.exponent >= 0 {
            return true;
        }
        pow10(self.exponent.unsigned_abs()).is_some_and(|p| self.mantissa % p == 0)
    }

    /// `Quantity.String()`: the canonical form.
    pub(crate) fn canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let small =
                self.cmp(&Self::from_int(-1024)).is_gt() && self.cmp(&Self::from_int(1024)).is_lt();
            if small || !self.is_integer() {
                format = Format::DecimalSi;
            }
        }
        if format == Format::BinarySi {
            let Some(mut n) = self.integer_value() else {
                return self.decimal(Format::DecimalSi);
            };
            let mut power = 0;
            while n != 0 && n % 1024 == 0 && power < 6 {
                n /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{n}{suffix}");
        }
        self.decimal(format)
    }

    fn from_int(n: i128) -> Self {
        Self {
            mantissa: n,
            exponent: 0,
            format: Format::DecimalSi,
        }
    }

    fn integer_value(&self) -> Option<i128> {
        if self.exponent >= 0 {
            self.mantissa
                .checked_mul(pow10(u32::try_from(self.exponent).ok()?)?)
        } else {
            Some(self.mantissa / pow10(self.exponent.unsigned_abs())?)
        }
    }

    /// `AsCanonicalBytes` with a decimal suffix: trailing zeros folded into the exponent, which
    /// is then lowered to a multiple of three.
    fn decimal(&self, format: Format) -> String {
        let (mut m, mut e) = (self.mantissa, self.exponent);
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        while e.rem_euclid(3) != 0 || (format == Format::DecimalSi && e > 18) {
            match m.checked_mul(10) {
                Some(n) => m = n,
                None => break,
            }
            e -= 1;
        }
        let suffix = match format {
            Format::DecimalExponent if e == 0 => String::new(),
            Format::DecimalExponent => format!("e{e}"),
            _ => match e {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }
            .to_owned(),
        };
        format!("{m}{suffix}")
    }
}

/// The suffix of a quantity: its format, its power of ten and its power of two.
fn parse_suffix(s: &str) -> Option<(Format, i32, u32)> {
    let binary = |p| Some((Format::BinarySi, 0, p));
    let decimal = |p| Some((Format::DecimalSi, p, 0));
    match s {
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => {
            let rest = s.strip_prefix(['e', 'E'])?;
            let valid = rest
                .strip_prefix(['+', '-'])
                .unwrap_or(rest)
                .bytes()
                .all(|b| b.is_ascii_digit());
            if !valid || rest.is_empty() {
                return None;
            }
            Some((Format::DecimalExponent, rest.parse().ok()?, 0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_default()
    }

    #[test]
    fn canonical_forms_match_quantity_string() {
        for (input, want) in [
            ("0", "0"),
            ("2000m", "2"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1024Mi", "1Gi"),
            ("1536", "1536"),
            ("1.5Ki", "1536"),
            ("0.5Gi", "512Mi"),
            ("100Mi", "100Mi"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("1E", "1E"),
            ("0.0000000001", "1n"),
            ("-1500m", "-1500m"),
            ("-2", "-2"),
            ("12.5Gi", "12800Mi"),
            ("512", "512"),
            ("1.G", "1G"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn rejects_malformed_quantities() {
        for bad in [
            "",
            "abc",
            "1.2.3",
            "1Qi",
            "1e",
            "--1",
            "1 Gi",
            "10e2147483647",
            "1e-99999",
        ] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn compares_across_suffixes() {
        let q = |s| Quantity::parse(s).expect(s);
        assert!(q("500m").cmp(&q("0.5")).is_eq());
        assert!(q("1Gi").cmp(&q("1G")).is_gt());
        assert!(q("-1").cmp(&Quantity::zero()).is_lt());
        assert!(!q("1.5").is_integer() && q("2000m").is_integer());
    }
}
