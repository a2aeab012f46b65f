//! `resource.Quantity`: parsed as `ParseQuantity` parses it and printed as `MarshalJSON` prints
//! it, so a stored quantity is byte for byte what kube-apiserver stores.
//!
//! kubernetes/apimachinery pkg/api/resource/quantity.go: `ParseQuantity` splits the string
//! (`parseQuantityString`), interprets the suffix (suffix.go), keeps small values as a scaled
//! int64 (remembering the input string when it is already canonical: `+1`, `01` and `1e3` stay
//! as written) and larger or finer ones as an `inf.Dec` rounded up to nano (binary ones capped at
//! 2^63-1); `String` then canonicalises (`CanonicalizeBytes`): no fraction digits, the largest
//! suffix of the same family that keeps the value exact (`1.5` is `1500m`, `1.5Gi` is `1536Mi`,
//! `0.5Ti` is `512Gi`). The arithmetic here is on decimal digit strings, so it is exact for any
//! length, and costs nothing for exponents Go would expand.

use std::borrow::Cow;
use std::fmt;

/// `ParseQuantity`'s errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityError {
    /// `ErrFormatWrong`.
    Format,
    /// `ErrNumeric`.
    Numeric,
    /// `ErrSuffix`; also, stricter than Go (whose int32 arithmetic wraps there), a decimal
    /// exponent beyond ±10^9.
    Suffix,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::Format => {
                "quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Numeric => "unable to parse numeric part of quantity",
            QuantityError::Suffix => "unable to parse quantity's suffix",
        })
    }
}

impl std::error::Error for QuantityError {}

/// The largest decimal exponent accepted (see [`QuantityError::Suffix`]).
const MAX_EXPONENT: i64 = 1_000_000_000;

/// `maxInt64Factors`: the digits an int64 always holds.
const MAX_INT64_FACTORS: i64 = 18;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// What `Quantity.UnmarshalJSON` then `MarshalJSON` make of a JSON string's contents.
///
/// Go hands `ParseQuantity` the raw bytes between the quotes, trimmed of white space: an escape
/// sequence makes it fail. Characters JSON must escape (controls) are therefore refused here;
/// other escapes (`"\u0031"`) cannot be told apart after parsing and are read as what they
/// denote.
pub(crate) fn from_json_string(s: &str) -> Result<Cow<'_, str>, QuantityError> {
    if s.bytes().any(|b| b < 0x20) {
        return Err(QuantityError::Format);
    }
    canonical(s.trim())
}

/// `ParseQuantity(s)` followed by `MarshalJSON`: the string kube-apiserver stores.
pub(crate) fn canonical(s: &str) -> Result<Cow<'_, str>, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    if s == "0" {
        return Ok(Cow::Borrowed(s));
    }
    let parts = scan(s)?;
    let (base, exponent, mut format) = interpret(parts.suffix)?;

    // The int64 fast path.
    let digits = parts.num.len() + parts.denom.len();
    let (scale, precision, mantissa) = match format {
        Format::DecimalExponent | Format::DecimalSI => {
            (exponent, MAX_INT64_FACTORS - digits as i64, 1i64)
        }
        Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => {
            // Go: 15 - len(num) - int32(float32(exponent)*3/10) - 1 (exact for 10, 20, …, 60).
            let precision = 15 - parts.num.len() as i64 - exponent * 3 / 10 - 1;
            (0, precision, 1i64 << exponent)
        }
        Format::BinarySI => (0, -1, 1),
    };
    if precision >= 0 {
        let scale = scale - parts.denom.len() as i64;
        if scale >= -9 {
            // At most 18 digits: an i64.
            let value = parts
                .num
                .bytes()
                .chain(parts.denom.bytes())
                .fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0'));
            if let Some(result) = value.checked_mul(mantissa) {
                let first_digit = parts.num.bytes().chain(parts.denom.bytes()).next();
                let cached = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => {
                        scale % 3 == 0
                            && !ends_with_000(parts.num, parts.denom)
                            && first_digit != Some(b'0')
                    }
                };
                if cached {
                    return Ok(Cow::Borrowed(s));
                }
                let amount = Dec::from_i64(if parts.positive { result } else { -result }, scale);
                return Ok(Cow::Owned(amount.canonical(format)));
            }
        }
    }

    // The inf.Dec path.
    let mut amount = Dec::parse(parts.value).ok_or(QuantityError::Numeric)?;
    if base == 10 {
        amount.exp += exponent;
    } else {
        amount.mul_pow2(exponent as u32);
    }
    let negative = amount.negative;
    amount.negative = false;
    if !amount.is_zero() {
        amount.round_up_to_nano();
    }
    if format == Format::BinarySI && amount.exceeds_i64() {
        amount = Dec::from_i64(i64::MAX, 0);
    }
    if format == Format::BinarySI && !amount.is_zero() && amount.int_part() == Some(0) {
        format = Format::DecimalSI;
    }
    amount.negative = negative && !amount.is_zero();
    Ok(Cow::Owned(amount.canonical(format)))
}

/// `strings.HasSuffix(num+denom, "000")`.
fn ends_with_000(num: &str, denom: &str) -> bool {
    let tail: Vec<u8> = num.bytes().chain(denom.bytes()).rev().take(3).collect();
    tail.len() == 3 && tail.iter().all(|&b| b == b'0')
}

/// `parseQuantityString`'s result.
struct Parts<'a> {
    positive: bool,
    /// The numeric part as written (sign and leading zeros included).
    value: &'a str,
    /// The integer digits, leading zeros stripped (`"0"` when there are none).
    num: &'a str,
    /// The fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

/// Go's `parseQuantityString`, byte for byte.
fn scan(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    let zero = Parts {
        positive,
        value: "0",
        num: "0",
        denom: "",
        suffix: "",
    };
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(zero);
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if pos >= end {
        return Ok(Parts {
            value: s,
            num,
            ..zero
        });
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
        if pos >= end {
            return Ok(Parts {
                value: s,
                num,
                denom,
                ..zero
            });
        }
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// suffix.go `interpret`: base, exponent and format of a suffix.
fn interpret(suffix: &str) -> Result<(u32, i64, Format), QuantityError> {
    let decimal = |exponent| Ok((10, exponent, Format::DecimalSI));
    let binary = |exponent| Ok((2, exponent, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ if suffix.len() > 1 && matches!(suffix.as_bytes()[0], b'e' | b'E') => {
            match suffix[1..].parse::<i64>() {
                Ok(exponent) if exponent.abs() <= MAX_EXPONENT => {
                    Ok((10, exponent, Format::DecimalExponent))
                }
                _ => Err(QuantityError::Suffix),
            }
        }
        _ => Err(QuantityError::Suffix),
    }
}

/// An exact decimal: `digits × 10^exp`, `digits` without leading zeros (empty for zero).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dec {
    negative: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Dec {
    fn from_i64(value: i64, exp: i64) -> Dec {
        let digits = value
            .unsigned_abs()
            .to_string()
            .bytes()
            .map(|b| b - b'0')
            .skip_while(|&d| d == 0)
            .collect();
        Dec {
            negative: value < 0,
            digits,
            exp,
        }
    }

    /// `inf.Dec.SetString`: an optional sign, digits with at most one `.`, at least one digit.
    fn parse(value: &str) -> Option<Dec> {
        let (negative, rest) = match value.as_bytes().first() {
            Some(b'-') => (true, &value[1..]),
            Some(b'+') => (false, &value[1..]),
            _ => (false, value),
        };
        let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let digits = int
            .bytes()
            .chain(frac.bytes())
            .map(|b| b - b'0')
            .skip_while(|&d| d == 0)
            .collect();
        Some(Dec {
            negative,
            digits,
            exp: -(frac.len() as i64),
        })
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Multiplies by 2^k (k ≤ 60).
    fn mul_pow2(&mut self, k: u32) {
        let factor = 1u128 << k;
        let mut carry = 0u128;
        for d in self.digits.iter_mut().rev() {
            let v = u128::from(*d) * factor + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        let mut head = Vec::new();
        while carry > 0 {
            head.push((carry % 10) as u8);
            carry /= 10;
        }
        head.reverse();
        head.extend_from_slice(&self.digits);
        self.digits = head;
    }

    /// `amount.Round(amount, Nano, inf.RoundUp)` on a positive value: the ceiling at 10^-9.
    fn round_up_to_nano(&mut self) {
        if self.exp >= -9 {
            return;
        }
        let cut = (-9 - self.exp) as u64;
        self.exp = -9;
        if cut >= self.digits.len() as u64 {
            self.digits = vec![1];
            return;
        }
        let keep = self.digits.len() - cut as usize;
        let inexact = self.digits[keep..].iter().any(|&d| d != 0);
        self.digits.truncate(keep);
        if inexact {
            let mut i = keep;
            loop {
                if i == 0 {
                    self.digits.insert(0, 1);
                    break;
                }
                i -= 1;
                if self.digits[i] == 9 {
                    self.digits[i] = 0;
                } else {
                    self.digits[i] += 1;
                    break;
                }
            }
        }
    }

    /// The magnitude's integer part, when it fits an i128.
    fn int_part(&self) -> Option<i128> {
        let int_len = self.digits.len() as i64 + self.exp;
        if int_len <= 0 {
            return Some(0);
        }
        if int_len > 38 {
            return None;
        }
        let mut n: i128 = 0;
        for i in 0..int_len as usize {
            n = n * 10 + i128::from(self.digits.get(i).copied().unwrap_or(0));
        }
        Some(n)
    }

    fn has_fraction(&self) -> bool {
        let int_len = (self.digits.len() as i64 + self.exp).max(0);
        self.digits.iter().skip(int_len as usize).any(|&d| d != 0)
    }

    /// The magnitude is above 2^63-1 (`maxAllowed`).
    fn exceeds_i64(&self) -> bool {
        match self.int_part() {
            None => true,
            Some(n) => {
                n > i128::from(i64::MAX) || (n == i128::from(i64::MAX) && self.has_fraction())
            }
        }
    }

    /// `CanonicalizeBytes`, number and suffix.
    fn canonical(mut self, format: Format) -> String {
        if self.is_zero() {
            return "0".to_owned();
        }
        let sign = if self.negative { "-" } else { "" };
        let mut format = format;
        if format == Format::BinarySI {
            match self.int_part() {
                Some(n) if n < 1024 => format = Format::DecimalSI,
                _ if self.has_fraction() => format = Format::DecimalSI,
                // A binary quantity is at most 2^63-1, so it fits.
                Some(mut n) => {
                    let mut power = 0;
                    while n >= 1024 && n % 1024 == 0 {
                        n /= 1024;
                        power += 1;
                    }
                    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
                    return format!("{sign}{n}{suffix}");
                }
                None => format = Format::DecimalSI,
            }
        }
        while self.digits.last() == Some(&0) {
            self.digits.pop();
            self.exp += 1;
        }
        while self.exp.rem_euclid(3) != 0 {
            self.digits.push(0);
            self.exp -= 1;
        }
        let suffix = match (format, self.exp) {
            (Format::DecimalSI, -9) => Cow::Borrowed("n"),
            (Format::DecimalSI, -6) => Cow::Borrowed("u"),
            (Format::DecimalSI, -3) => Cow::Borrowed("m"),
            (_, 0) => Cow::Borrowed(""),
            (Format::DecimalSI, 3) => Cow::Borrowed("k"),
            (Format::DecimalSI, 6) => Cow::Borrowed("M"),
            (Format::DecimalSI, 9) => Cow::Borrowed("G"),
            (Format::DecimalSI, 12) => Cow::Borrowed("T"),
            (Format::DecimalSI, 15) => Cow::Borrowed("P"),
            (Format::DecimalSI, 18) => Cow::Borrowed("E"),
            // DecimalExponent, and (as upstream since 2025, where it used to drop the
            // exponent) DecimalSI beyond `E`.
            (_, exp) => Cow::Owned(format!("e{exp}")),
        };
        let mut out = String::with_capacity(sign.len() + self.digits.len() + suffix.len());
        out.push_str(sign);
        out.extend(self.digits.iter().map(|&d| char::from(b'0' + d)));
        out.push_str(&suffix);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Result<String, QuantityError> {
        canonical(s).map(Cow::into_owned)
    }

    #[test]
    fn canonical_forms_like_quantity_string() {
        for (input, want) in [
            ("0", "0"),
            ("1", "1"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("0.25", "250m"),
            ("1.0", "1"),
            ("1.234", "1.234"),
            ("1.2345", "1234500u"),
            ("10", "10"),
            ("1000", "1k"),
            ("1200", "1200"),
            ("12000", "12k"),
            ("1e3", "1e3"),
            ("1E3", "1E3"),
            ("10e3", "10e3"),
            ("1000e3", "1e6"),
            ("1e-7", "100e-9"),
            ("1e-12", "1e-9"),
            ("1Ki", "1Ki"),
            ("1024Ki", "1Mi"),
            ("1536Ki", "1536Ki"),
            ("2048Ki", "2Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ti", "512Gi"),
            ("0.5Ki", "512"),
            ("1.1Ki", "1126400m"),
            ("0.0001Ki", "102400u"),
            ("8Ei", "9223372036854775807"),
            ("1Ei", "1Ei"),
            ("64Mi", "64Mi"),
            ("+1", "+1"),
            ("01", "01"),
            ("-1", "-1"),
            ("-1.5", "-1500m"),
            ("-1Ki", "-1Ki"),
            ("-", "0"),
            ("+", "0"),
            ("00", "0"),
            (".", "0"),
            ("0.", "0"),
            ("1.", "1."),
            (".Ki", "0"),
            (".5", "500m"),
            ("5E", "5E"),
            ("1000E", "1e21"),
            ("0.1n", "1n"),
            ("0.9n", "1n"),
            ("1.0000000001", "1000000001n"),
            ("-0.0000000001", "-1n"),
            ("12345678901234567890", "12345678901234567890"),
            ("123456789012345678901k", "123456789012345678901k"),
            ("1234567890123456789e1000000", "12345678901234567890e999999"),
            ("1e999999999", "1e999999999"),
            ("3800m", "3800m"),
            ("1k", "1k"),
            ("30", "30"),
            ("10Gi", "10Gi"),
        ] {
            assert_eq!(q(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn parse_errors_like_parse_quantity() {
        use QuantityError::*;
        for (input, want) in [
            ("", Format),
            ("1x", Format),
            ("1 ", Format),
            ("x", Format),
            ("true", Format),
            ("{}", Format),
            ("1Gi2", Suffix),
            ("1.2.3", Format),
            ("--1", Suffix),
            ("1e", Suffix),
            ("1ki", Suffix),
            ("1EE", Suffix),
            ("1e1000000001", Suffix),
            ("1e99999999999999999999", Suffix),
            (".e-10", Numeric),
            ("-.e-10", Numeric),
        ] {
            assert_eq!(q(input), Err(want), "{input:?}");
        }
        assert_eq!(
            Format.to_string(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }

    #[test]
    fn json_strings_are_trimmed_but_escapes_refused() {
        assert_eq!(from_json_string(" 1Gi ").as_deref(), Ok("1Gi"));
        assert_eq!(from_json_string("\u{a0}2\u{3000}").as_deref(), Ok("2"));
        assert_eq!(from_json_string("\t1"), Err(QuantityError::Format));
        assert_eq!(from_json_string(" 1.50 ").as_deref(), Ok("1500m"));
    }
}
