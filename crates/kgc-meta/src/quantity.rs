//! `resource.Quantity`: parsed as `ParseQuantity` parses it, compared as `Cmp` compares, and
//! printed as `String` (and so `MarshalJSON`) prints it, so a stored quantity is byte for byte
//! what kube-apiserver stores and an error echoes it as kube-apiserver does (`2000m` as `"2"`).
//! Typed decoding canonicalises every quantity of a body with it, and validation compares them
//! (a request against its limit, a claim's size against zero).
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
use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use serde_json::Value;

/// `ParseQuantity`'s errors, worded as upstream's `ErrFormatWrong`, `ErrNumeric`, `ErrSuffix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// `ErrFormatWrong`.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// `ErrNumeric`.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// `ErrSuffix`; also, stricter than Go (whose int32 arithmetic wraps there), a decimal
    /// exponent beyond ±10^9.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// A `resource.Quantity`: an exact value, the format it was written in (which decides its
/// printed suffix), and the input itself when Go prints that back unchanged.
///
/// Equality and order are by value, as `Cmp` and `Equal` (`1e3 == 1k`); [`fmt::Display`] is
/// `String()`. The default is the zero quantity, printed `0`.
#[derive(Debug, Clone, Default)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// Go's cached `s`: the input, when `ParseQuantity` found it already canonical.
    text: Option<Box<str>>,
}

impl Quantity {
    /// `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let parsed = parse(s)?;
        Ok(Quantity {
            amount: parsed.amount,
            format: parsed.format,
            text: parsed.keeps_text.then(|| s.into()),
        })
    }

    /// What `Quantity.UnmarshalJSON` makes of a JSON value: a string's contents, trimmed, or a
    /// bare number; anything else is malformed.
    pub fn from_json(v: &Value) -> Result<Quantity, QuantityError> {
        match v {
            Value::String(s) => Quantity::parse(json_string(s)?),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => Err(QuantityError::Format),
        }
    }

    /// `IsZero`.
    pub fn is_zero(&self) -> bool {
        self.amount.signum() == 0
    }

    /// `Sign() < 0`.
    pub fn is_negative(&self) -> bool {
        self.amount.signum() < 0
    }

    /// `Sign() > 0`.
    pub fn is_positive(&self) -> bool {
        self.amount.signum() > 0
    }

    /// `Value()`: the value rounded up to a whole number; `None` beyond an i64.
    pub fn value(&self) -> Option<i64> {
        self.scaled_ceil(0).and_then(|v| i64::try_from(v).ok())
    }

    /// `MilliValue()`: the value in thousandths, rounded up; `None` beyond an i64.
    pub fn milli_value(&self) -> Option<i64> {
        self.scaled_ceil(-3).and_then(|v| i64::try_from(v).ok())
    }

    /// `Sign()`: -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        i64::from(self.amount.signum())
    }

    /// `AsInt64()`: the value when it is whole and fits an i64.
    pub fn as_int64(&self) -> Option<i64> {
        if self.is_integer() {
            self.value()
        } else {
            None
        }
    }

    /// `AsApproximateFloat64()`: the nearest double (infinite beyond its range).
    pub fn as_approximate_float(&self) -> f64 {
        let dec = self.amount.to_dec();
        let digits: String = dec.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let sign = if dec.negative { "-" } else { "" };
        format!("{sign}0{digits}e{}", dec.exp)
            .parse()
            .unwrap_or(0.0)
    }

    /// The value in units of 10^`scale`, rounded up (`ScaledValue`'s rounding).
    fn scaled_ceil(&self, scale: i64) -> Option<i128> {
        let mut dec = self.amount.to_dec().into_owned();
        dec.exp -= scale;
        let int = dec.int_part()?;
        Some(match (dec.negative, dec.has_fraction()) {
            (true, _) => -int,
            (false, true) => int + 1,
            (false, false) => int,
        })
    }

    /// Whether the value is whole: what validation's `MilliValue() % 1000 == 0` asks of the
    /// quantities of integer resources (the milli value rounds up, so any fraction fails).
    pub fn is_integer(&self) -> bool {
        match &self.amount {
            Amount::Int { value, scale } => {
                // An int64 amount has scale ≥ -9, so the power fits.
                *scale >= 0 || value % 10i64.pow(scale.unsigned_abs() as u32) == 0
            }
            Amount::Dec(dec) => !dec.has_fraction(),
        }
    }

    /// `ScaledValue(scale)`: the value in units of 10^scale, rounded up, saturating
    /// at the int64 range (`MilliValue` is scale -3, `Value` scale 0), as schedulers and
    /// kubelets count CPU and memory.
    pub fn scaled_value(&self, scale: i64) -> i64 {
        match self.scaled_ceil(scale) {
            Some(v) => v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
            None if self.is_negative() => i64::MIN,
            None => i64::MAX,
        }
    }
}

/// Quota arithmetic (`Quantity.Add`, `Sub`, `RoundUp(0)`), exact in nano units: quotas add
/// and compare requests, whose values parse rounded to 10^-9. Sums beyond ±1.7·10^29 (the
/// i128 range in nano units) saturate there rather than growing without bound.
impl Quantity {
    /// `Add`: the sum, in this quantity's format unless it is zero (then `other`'s), as Go's
    /// `Add` picks it.
    pub fn add(&self, other: &Quantity) -> Quantity {
        self.combine(other, self.nanos().saturating_add(other.nanos()))
    }

    /// `Sub`: the difference, formatted as [`Quantity::add`] formats.
    pub fn sub(&self, other: &Quantity) -> Quantity {
        self.combine(other, self.nanos().saturating_sub(other.nanos()))
    }

    /// `RoundUp(0)`: the value rounded up to a whole number, in the same format (a claim's
    /// storage is charged in whole bytes).
    pub fn round_up(&self) -> Quantity {
        let n = self.nanos();
        let whole = n.div_euclid(NANO) + i128::from(n.rem_euclid(NANO) != 0);
        Quantity::from_nanos(whole.saturating_mul(NANO), self.format)
    }

    /// A whole number, formatted as `resource.NewQuantity(n, DecimalSI)`.
    pub fn from_i64(n: i64) -> Quantity {
        Quantity {
            amount: Amount::Int { value: n, scale: 0 },
            format: Format::DecimalSI,
            text: None,
        }
    }

    fn combine(&self, other: &Quantity, nanos: i128) -> Quantity {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        Quantity::from_nanos(nanos, format)
    }

    /// The value in units of 10^-9, saturating at the i128 range (exact otherwise: parsing
    /// rounds to nano).
    fn nanos(&self) -> i128 {
        let dec = self.amount.to_dec();
        let scale = dec.exp + 9;
        let mut n: i128 = 0;
        for &d in &dec.digits {
            n = match n.checked_mul(10).and_then(|n| n.checked_add(i128::from(d))) {
                Some(n) => n,
                None => return if dec.negative { i128::MIN } else { i128::MAX },
            };
        }
        let n = if scale >= 0 {
            u32::try_from(scale)
                .ok()
                .and_then(|s| 10i128.checked_pow(s))
                .and_then(|p| n.checked_mul(p))
                .unwrap_or(i128::MAX)
        } else {
            // Digits below nano cannot occur after parsing; dropped if they did.
            u32::try_from(-scale)
                .ok()
                .and_then(|s| 10i128.checked_pow(s))
                .map_or(0, |p| n / p)
        };
        if dec.negative { -n } else { n }
    }

    fn from_nanos(nanos: i128, format: Format) -> Quantity {
        let (mut m, mut scale) = (nanos, -9i64);
        while m != 0 && m % 10 == 0 && scale < 0 {
            m /= 10;
            scale += 1;
        }
        let amount = match i64::try_from(m) {
            Ok(0) => Amount::default(),
            Ok(value) => Amount::Int { value, scale },
            Err(_) => {
                let mut dec = Dec::from_i64(0, scale);
                dec.negative = m < 0;
                dec.digits = m
                    .unsigned_abs()
                    .to_string()
                    .bytes()
                    .map(|b| b - b'0')
                    .collect();
                Amount::Dec(dec)
            }
        };
        Quantity {
            amount,
            format,
            text: None,
        }
    }
}

/// Nano units per unit.
const NANO: i128 = 1_000_000_000;

impl fmt::Display for Quantity {
    /// `Quantity.String()`: the input when Go kept it, else `CanonicalizeBytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(text) => f.write_str(text),
            None => Canonical(&self.amount, self.format).fmt(f),
        }
    }
}

impl Ord for Quantity {
    /// `Quantity.Cmp`: by value, whatever the suffixes.
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.amount.cmp_value(&other.amount)
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Quantity {
    /// `Quantity.Equal`.
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Quantity {}

/// `ParseQuantity(s)` followed by `String()`: the string kube-apiserver stores. Borrows `s` when
/// Go keeps it, so the common, already canonical quantity costs no allocation.
pub fn canonical(s: &str) -> Result<Cow<'_, str>, QuantityError> {
    let parsed = parse(s)?;
    Ok(if parsed.keeps_text {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(Canonical(&parsed.amount, parsed.format).to_string())
    })
}

/// `Quantity.UnmarshalJSON` then `MarshalJSON`: the string kube-apiserver stores for a JSON
/// value given as a quantity (see [`Quantity::from_json`]).
pub fn canonical_json(v: &Value) -> Result<Cow<'_, str>, QuantityError> {
    match v {
        Value::String(s) => canonical(json_string(s)?),
        Value::Number(n) => Ok(Cow::Owned(canonical(&n.to_string())?.into_owned())),
        _ => Err(QuantityError::Format),
    }
}

/// What `UnmarshalJSON` hands `ParseQuantity` of a JSON string: the raw bytes between the
/// quotes, trimmed of white space, so an escape sequence makes it fail. Characters JSON must
/// escape (controls) are therefore refused here; other escapes (`"\u0031"`) cannot be told
/// apart after parsing and are read as what they denote.
fn json_string(s: &str) -> Result<&str, QuantityError> {
    if s.bytes().any(|b| b < 0x20) {
        return Err(QuantityError::Format);
    }
    Ok(s.trim())
}

/// The largest decimal exponent accepted (see [`QuantityError::Suffix`]).
const MAX_EXPONENT: i64 = 1_000_000_000;

/// `maxInt64Factors`: the digits an int64 always holds.
const MAX_INT64_FACTORS: i64 = 18;

/// How a quantity was written, which decides how it is printed back.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Format {
    DecimalExponent,
    BinarySI,
    #[default]
    DecimalSI,
}

/// Go's two representations: `int64Amount` (`value × 10^scale`, no allocation) and
/// `infDecAmount`.
#[derive(Debug, Clone)]
enum Amount {
    Int { value: i64, scale: i64 },
    Dec(Dec),
}

impl Default for Amount {
    fn default() -> Amount {
        Amount::Int { value: 0, scale: 0 }
    }
}

impl Amount {
    fn to_dec(&self) -> Cow<'_, Dec> {
        match self {
            Amount::Int { value, scale } => Cow::Owned(Dec::from_i64(*value, *scale)),
            Amount::Dec(dec) => Cow::Borrowed(dec),
        }
    }

    fn signum(&self) -> i8 {
        match self {
            Amount::Int { value, .. } => value.signum() as i8,
            Amount::Dec(dec) => dec.signum(),
        }
    }

    fn cmp_value(&self, other: &Amount) -> Ordering {
        match (self, other) {
            (Amount::Int { value: a, scale: s }, Amount::Int { value: b, scale: t }) if s == t => {
                a.cmp(b)
            }
            _ => self.to_dec().cmp_value(&other.to_dec()),
        }
    }
}

/// `CanonicalizeBytes` of an amount in a format: number and suffix.
struct Canonical<'a>(&'a Amount, Format);

impl fmt::Display for Canonical<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            // Go's `int64Amount.AsCanonicalBytes`, without going through digit strings. A binary
            // int64 amount always has scale 0 (`ParseQuantity` takes no fraction there).
            Canonical(&Amount::Int { value: 0, .. }, _) => f.write_str("0"),
            Canonical(&Amount::Int { value, scale: 0 }, Format::BinarySI)
                if value.unsigned_abs() >= 1024 =>
            {
                write_binary(f, value < 0, u128::from(value.unsigned_abs()))
            }
            Canonical(&Amount::Int { value, scale }, format)
                if format != Format::BinarySI || scale == 0 =>
            {
                let (mut m, mut exp) = (u128::from(value.unsigned_abs()), scale);
                while m.is_multiple_of(10) {
                    m /= 10;
                    exp += 1;
                }
                // At most twice: an i64 times 100 fits.
                while exp.rem_euclid(3) != 0 {
                    m *= 10;
                    exp -= 1;
                }
                let sign = if value < 0 { "-" } else { "" };
                write!(f, "{sign}{m}")?;
                write_decimal_suffix(f, format, exp)
            }
            Canonical(amount, format) => amount.to_dec().fmt_canonical(format, f),
        }
    }
}

/// A whole magnitude of at least 1024 in binary form: the largest power of 1024 dividing it
/// as the suffix (a binary quantity is at most 2^63-1, so `Ei` is the largest).
fn write_binary(f: &mut fmt::Formatter<'_>, negative: bool, mut n: u128) -> fmt::Result {
    let mut power = 0;
    while n >= 1024 && n.is_multiple_of(1024) {
        n /= 1024;
        power += 1;
    }
    let sign = if negative { "-" } else { "" };
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
    write!(f, "{sign}{n}{suffix}")
}

/// The suffix of a decimal number whose exponent is a multiple of 3: the SI prefix, or `e`
/// and the exponent for `DecimalExponent` and (as upstream since 2025, where it used to drop
/// the exponent) for `DecimalSI` beyond `E`. A binary format has turned decimal by then.
fn write_decimal_suffix(f: &mut fmt::Formatter<'_>, format: Format, exp: i64) -> fmt::Result {
    let si = format != Format::DecimalExponent;
    f.write_str(match exp {
        0 => "",
        -9 if si => "n",
        -6 if si => "u",
        -3 if si => "m",
        3 if si => "k",
        6 if si => "M",
        9 if si => "G",
        12 if si => "T",
        15 if si => "P",
        18 if si => "E",
        _ => return write!(f, "e{exp}"),
    })
}

/// What `ParseQuantity` makes of a string.
struct Parsed {
    amount: Amount,
    format: Format,
    /// Go keeps the input as the printed form.
    keeps_text: bool,
}

/// `ParseQuantity`.
fn parse(s: &str) -> Result<Parsed, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    if s == "0" {
        return Ok(Parsed {
            amount: Amount::default(),
            format: Format::DecimalSI,
            keeps_text: true,
        });
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
                let keeps_text = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => {
                        scale % 3 == 0
                            && !ends_with_000(parts.num, parts.denom)
                            && first_digit != Some(b'0')
                    }
                };
                return Ok(Parsed {
                    amount: Amount::Int {
                        value: if parts.positive { result } else { -result },
                        scale,
                    },
                    format,
                    keeps_text,
                });
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
    Ok(Parsed {
        amount: Amount::Dec(amount),
        format,
        keeps_text: false,
    })
}

/// `strings.HasSuffix(num+denom, "000")`.
fn ends_with_000(num: &str, denom: &str) -> bool {
    let tail = num.bytes().chain(denom.bytes()).rev().take(3);
    tail.filter(|&b| b == b'0').count() == 3
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

    fn signum(&self) -> i8 {
        match (self.is_zero(), self.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    /// `inf.Dec.Cmp`, without expanding exponents.
    fn cmp_value(&self, other: &Dec) -> Ordering {
        let sign = self.signum().cmp(&other.signum());
        if sign.is_ne() || self.is_zero() {
            return sign;
        }
        let magnitude = self.cmp_magnitude(other);
        if self.negative {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// Compares two non-zero magnitudes: first by the power of their leading digit, then digit
    /// by digit (a missing trailing digit counts as zero).
    fn cmp_magnitude(&self, other: &Dec) -> Ordering {
        let lead = |d: &Dec| d.digits.len() as i64 + d.exp;
        lead(self).cmp(&lead(other)).then_with(|| {
            let len = self.digits.len().max(other.digits.len());
            let digit = |d: &Dec, i: usize| d.digits.get(i).copied().unwrap_or(0);
            (0..len)
                .map(|i| digit(self, i).cmp(&digit(other, i)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
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
    fn fmt_canonical(&self, format: Format, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        let mut format = format;
        if format == Format::BinarySI {
            match self.int_part() {
                Some(n) if n < 1024 || self.has_fraction() => format = Format::DecimalSI,
                // A binary quantity is at most 2^63-1, so it fits.
                Some(n) => return write_binary(f, self.negative, n.unsigned_abs()),
                None => format = Format::DecimalSI,
            }
        }
        // Trailing zeros folded into the exponent, which is then lowered to a multiple of 3.
        let zeros = self.digits.iter().rev().take_while(|&&d| d == 0).count();
        let digits = &self.digits[..self.digits.len() - zeros];
        let exp = self.exp + zeros as i64;
        let pad = exp.rem_euclid(3);
        if self.negative {
            f.write_str("-")?;
        }
        for &d in digits {
            f.write_char(char::from(b'0' + d))?;
        }
        for _ in 0..pad {
            f.write_char('0')?;
        }
        write_decimal_suffix(f, format, exp - pad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn q(s: &str) -> Result<String, QuantityError> {
        canonical(s).map(Cow::into_owned)
    }

    #[test]
    fn quota_arithmetic_is_exact_and_keeps_the_format() {
        let p = |s: &str| Quantity::parse(s).unwrap();
        assert_eq!(p("128Mi").add(&p("128Mi")).to_string(), "256Mi");
        assert_eq!(Quantity::default().add(&p("1Gi")).to_string(), "1Gi");
        assert_eq!(p("500m").add(&p("1500m")).to_string(), "2");
        assert_eq!(p("1").sub(&p("250m")).to_string(), "750m");
        assert_eq!(p("1").sub(&p("1")).to_string(), "0");
        assert!(p("1").sub(&p("2")).is_negative());
        assert_eq!(
            Quantity::from_i64(20)
                .add(&Quantity::from_i64(1))
                .to_string(),
            "21"
        );
        assert_eq!(p("1500m").round_up().to_string(), "2");
        assert_eq!(p("10Gi").round_up().to_string(), "10Gi");
        assert_eq!(p("9e18").add(&p("9e18")).to_string(), "18e18");
        assert_eq!(p("1e40").add(&p("1")), p("1e40").add(&p("2")));
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
            // A parsed Quantity prints the same.
            assert_eq!(
                Quantity::parse(input).map(|q| q.to_string()).as_deref(),
                Ok(want)
            );
        }
    }

    /// The forms validation echoes in its errors (`2000m` shows as `"2"`, `1024Mi` as `"1Gi"`).
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
            // Go keeps the input here (one digit, scale 9): `String()` is `1.G`.
            ("1.G", "1.G"),
            // Rounded up to nano, as `ParseQuantity` rounds.
            ("1e-99999", "1e-9"),
        ] {
            assert_eq!(Quantity::parse(input).unwrap().to_string(), want, "{input}");
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
            ("abc", Format),
            ("1Qi", Format),
            ("1 Gi", Format),
            ("10e2147483647", Suffix),
        ] {
            assert_eq!(q(input), Err(want), "{input:?}");
            assert_eq!(Quantity::parse(input).err(), Some(want), "{input:?}");
        }
        assert_eq!(
            Format.to_string(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }

    #[test]
    fn json_strings_are_trimmed_but_escapes_refused() {
        assert_eq!(canonical_json(&json!(" 1Gi ")).as_deref(), Ok("1Gi"));
        assert_eq!(
            canonical_json(&json!("\u{a0}2\u{3000}")).as_deref(),
            Ok("2")
        );
        assert_eq!(canonical_json(&json!("\t1")), Err(QuantityError::Format));
        assert_eq!(canonical_json(&json!(" 1.50 ")).as_deref(), Ok("1500m"));
        assert_eq!(canonical_json(&json!(1.5)).as_deref(), Ok("1500m"));
        for v in [json!(true), json!(null), json!([1]), json!({})] {
            assert_eq!(canonical_json(&v), Err(QuantityError::Format), "{v}");
            assert_eq!(Quantity::from_json(&v).err(), Some(QuantityError::Format));
        }
        assert_eq!(
            Quantity::from_json(&json!(" 1Gi ")).unwrap().to_string(),
            "1Gi"
        );
        assert_eq!(Quantity::from_json(&json!(2000)).unwrap().to_string(), "2k");
    }

    #[test]
    fn scaled_values_round_up() {
        let v = |s: &str, scale| Quantity::parse(s).unwrap().scaled_value(scale);
        assert_eq!(v("1.5", -3), 1500);
        assert_eq!(v("100m", -3), 100);
        assert_eq!(v("1m", 0), 1);
        assert_eq!(v("1Gi", 0), 1 << 30);
        assert_eq!(v("0.1n", -3), 1);
        assert_eq!(v("8", -3), 8000);
        assert_eq!(v("1E", -3), i64::MAX);
    }

    #[test]
    fn values_round_up_as_go_does() {
        let v = |s: &str| Quantity::parse(s).unwrap();
        assert_eq!(v("100Mi").value(), Some(100 * 1024 * 1024));
        assert_eq!(v("1.5k").value(), Some(1500));
        assert_eq!(v("100m").value(), Some(1));
        assert_eq!(v("100m").milli_value(), Some(100));
        assert_eq!(v("1").milli_value(), Some(1000));
        assert_eq!(v("1n").milli_value(), Some(1));
        assert_eq!(v("9E").milli_value(), None, "beyond an i64");
    }

    #[test]
    fn compares_across_suffixes() {
        let q = |s| Quantity::parse(s).expect(s);
        assert!(q("500m").cmp(&q("0.5")).is_eq());
        assert!(q("1Gi").cmp(&q("1G")).is_gt());
        assert!(q("-1").cmp(&Quantity::default()).is_lt());
        assert!(!q("1.5").is_integer() && q("2000m").is_integer());
        // Either representation, any magnitude, without expanding exponents.
        assert_eq!(q("1e3"), q("1k"));
        assert!(q("1e999999999") > q("12345678901234567890"));
        assert!(q("-1e999999999") < q("-8Ei"));
        assert!(q("1e-99999") > Quantity::default());
        assert!(q("1n") < q("0.0000000011"));
        assert_eq!(q("1.0000000001"), q("1000000001n"));
        assert!(q("8Ei") > q("9223372036854775806"));
        assert!(q("-0.5") > q("-1"));
        assert!(!q("1.0000000001").is_integer() && q("1e20").is_integer());
        assert!(q("-").is_zero() && !q("-").is_negative() && !q("0").is_positive());
        assert!(q("-1n").is_negative() && q("1n").is_positive());
        assert_eq!(Quantity::default().to_string(), "0");
    }

    proptest! {
        /// The int64 printer and comparison agree with the exact decimal ones.
        #[test]
        fn int_amounts_print_and_compare_as_decimals(
            value in any::<i64>(),
            scale in -9i64..40,
            format in prop::sample::select(vec![
                Format::DecimalExponent,
                Format::BinarySI,
                Format::DecimalSI,
            ]),
        ) {
            // `ParseQuantity` gives a binary int64 amount scale 0.
            let scale = if format == Format::BinarySI { 0 } else { scale };
            let int = Amount::Int { value, scale };
            let dec = Amount::Dec(Dec::from_i64(value, scale));
            prop_assert_eq!(
                Canonical(&int, format).to_string(),
                Canonical(&dec, format).to_string()
            );
            prop_assert_eq!(int.cmp_value(&dec), Ordering::Equal);
        }

        /// `Cmp` is the order of the exact values.
        #[test]
        fn order_is_the_values_order(
            (a, s) in (any::<i64>(), -9i64..10),
            (b, t) in (any::<i64>(), -9i64..10),
        ) {
            // Both times 10^18 at most: an i128 holds them.
            let exact = |v: i64, e: i64| i128::from(v) * 10i128.pow((e + 9) as u32);
            let (x, y) = (Amount::Int { value: a, scale: s }, Amount::Int { value: b, scale: t });
            prop_assert_eq!(x.cmp_value(&y), exact(a, s).cmp(&exact(b, t)));
            let (x, y) = (Amount::Dec(Dec::from_i64(a, s)), Amount::Dec(Dec::from_i64(b, t)));
            prop_assert_eq!(x.cmp_value(&y), exact(a, s).cmp(&exact(b, t)));
        }

        /// What `String()` prints parses back to the same value and prints the same again.
        #[test]
        fn printed_forms_parse_back(
            input in "[+-]?[0-9]{0,22}(\\.[0-9]{0,12})?(|[numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]{1,3})",
        ) {
            if let Ok(q) = Quantity::parse(&input) {
                let printed = q.to_string();
                let again = Quantity::parse(&printed).expect(&printed);
                prop_assert_eq!(&again, &q);
                prop_assert_eq!(again.to_string(), printed);
            }
        }
    }
}
