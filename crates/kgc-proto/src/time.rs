//! `metav1.Time` and `metav1.MicroTime` as JSON: parsed as Go's `time.Parse` parses their layouts
//! (with its exact error texts) and printed as their `MarshalJSON` prints them.
//!
//! kubernetes/apimachinery pkg/apis/meta/v1/time.go and micro_time.go: `UnmarshalJSON` parses the
//! string with `time.Parse(time.RFC3339, s)`, resp. `time.Parse(RFC3339Micro, s)`
//! (`2006-01-02T15:04:05.000000Z07:00`); `MarshalJSON` prints the zero time as `null` and any
//! other in UTC with the same layout (so `Time` drops the fraction of a second). The parser below
//! is Go's general `time.parse` (src/time/format.go) specialised to those two layouts: it is
//! laxer than RFC 3339 in the same places Go is (a one-digit hour, a `,` before the fraction, any
//! number of fraction digits for `Time`, offsets up to `±24:60`).

use std::fmt;

use kgc_meta::time::{days_from_civil, rfc3339};

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
pub(crate) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// The earliest instant kgc stores: Python's `datetime.MIN` (year 1; the Go zero time itself is
/// printed as `null`).
const MIN_UNIX: i64 = GO_ZERO_TIME_UNIX;
/// The latest: k8s-openapi's `jiff::Timestamp::MAX`, 9999-12-30T22:00:00.999999999Z.
const MAX_UNIX: i64 = 253_402_207_200;

/// Which metav1 type: the layout it parses, and how many fraction digits it prints.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Layout {
    /// `metav1.Time`: `time.RFC3339`.
    Time,
    /// `metav1.MicroTime`: `RFC3339Micro`.
    MicroTime,
}

impl Layout {
    fn text(self) -> &'static str {
        match self {
            Layout::Time => "2006-01-02T15:04:05Z07:00",
            Layout::MicroTime => "2006-01-02T15:04:05.000000Z07:00",
        }
    }
}

/// Go's `*time.ParseError`, plus kgc's refusal of instants clients cannot represent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// `parsing time "<value>" as "<layout>": cannot parse "<rest>" as "<element>"`.
    Element {
        value: Vec<u8>,
        layout: &'static str,
        rest: Vec<u8>,
        element: &'static str,
    },
    /// `parsing time "<value>": <message>` (`month out of range`, `extra text: "…"`, …).
    Message { value: Vec<u8>, message: String },
    /// Stricter than Go (which stores what it cannot parse back): an instant outside
    /// 0001-01-01T00:00:00Z…9999-12-30T22:00:00Z, which Python's `datetime` or k8s-openapi's
    /// `jiff::Timestamp` cannot hold.
    OutOfRange { value: Vec<u8> },
    /// Stricter than Go: the zero time as a list item or map value, which Go prints as `null`
    /// and typed clients cannot read there.
    Zero { value: Vec<u8> },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Element {
                value,
                layout,
                rest,
                element,
            } => write!(
                f,
                "parsing time {} as {}: cannot parse {} as {}",
                Quoted(value),
                Quoted(layout.as_bytes()),
                Quoted(rest),
                Quoted(element.as_bytes())
            ),
            ParseError::Message { value, message } => {
                write!(f, "parsing time {}{message}", Quoted(value))
            }
            ParseError::OutOfRange { value } => write!(
                f,
                "parsing time {}: the instant is outside the range clients can read \
                 (0001-01-01T00:00:00Z to 9999-12-30T22:00:00Z)",
                Quoted(value)
            ),
            ParseError::Zero { value } => write!(
                f,
                "parsing time {}: the zero time is stored as null, which clients cannot read in \
                 a list or map",
                Quoted(value)
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Go's `time.quote`: `"`-quoted, `"` and `\` escaped, every byte that is not printable ASCII
/// as `\xNN`.
struct Quoted<'a>(&'a [u8]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &b in self.0 {
            match b {
                b'"' | b'\\' => write!(f, "\\{}", char::from(b))?,
                0x20..=0x7f => write!(f, "{}", char::from(b))?,
                _ => write!(f, "\\x{b:02x}")?,
            }
        }
        f.write_str("\"")
    }
}

/// An instant: seconds since the Unix epoch and nanoseconds in `0..1e9`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Instant {
    pub(crate) unix: i64,
    pub(crate) nanos: u32,
}

/// What the layout's `MarshalJSON` prints for a time its `UnmarshalJSON` parsed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Normalized {
    /// The value as given (already UTC, in the printed layout).
    Same,
    /// The zero time: `null`.
    Null,
    Changed(String),
}

/// Parses `value` as the layout's `UnmarshalJSON` does and returns what its `MarshalJSON` prints
/// (the zero time refused unless `null_allowed`).
pub(crate) fn normalize(
    layout: Layout,
    value: &str,
    null_allowed: bool,
) -> Result<Normalized, ParseError> {
    let instant = parse(layout, value.as_bytes())?;
    if instant.unix == GO_ZERO_TIME_UNIX && instant.nanos == 0 {
        if !null_allowed {
            return Err(ParseError::Zero {
                value: value.as_bytes().to_vec(),
            });
        }
        return Ok(Normalized::Null);
    }
    if !(MIN_UNIX..=MAX_UNIX).contains(&instant.unix) {
        return Err(ParseError::OutOfRange {
            value: value.as_bytes().to_vec(),
        });
    }
    // Parsed, `Z`-terminated and as long as the printed form: a two-digit hour and no fraction
    // for a Time; for a MicroTime also `.` and six digits (not `,`, not a sign). That is the
    // printed form.
    let b = value.as_bytes();
    let printed = match layout {
        Layout::Time => b.len() == 20,
        Layout::MicroTime => {
            b.len() == 27 && b[19] == b'.' && b[20..26].iter().all(u8::is_ascii_digit)
        }
    };
    if printed && b.ends_with(b"Z") {
        return Ok(Normalized::Same);
    }
    let micros = (layout == Layout::MicroTime).then_some(instant.nanos / 1_000);
    Ok(Normalized::Changed(rfc3339(
        i128::from(instant.unix),
        micros,
    )))
}

/// Go's `time.Parse(layout, value)` for the two metav1 layouts.
fn parse(layout: Layout, value: &[u8]) -> Result<Instant, ParseError> {
    let element = |rest: &[u8], element: &'static str| ParseError::Element {
        value: value.to_vec(),
        layout: layout.text(),
        rest: rest.to_vec(),
        element,
    };
    let out_of_range = |what: &str| ParseError::Message {
        value: value.to_vec(),
        message: format!(": {what} out of range"),
    };
    let mut rest = value;

    // "2006": four bytes, the first a digit, all of them digits.
    if rest.len() < 4 || !is_digit(rest, 0) {
        return Err(element(rest, "2006"));
    }
    let year = atoi(&rest[..4]).ok_or_else(|| element(rest, "2006"))?;
    rest = &rest[4..];

    rest = literal(rest, b'-').map_err(|r| element(r, "-"))?;
    let month = getnum(rest, true).ok_or_else(|| element(rest, "01"))?;
    rest = month.1;
    if !(1..=12).contains(&month.0) {
        return Err(out_of_range("month"));
    }
    rest = literal(rest, b'-').map_err(|r| element(r, "-"))?;
    let day = getnum(rest, true).ok_or_else(|| element(rest, "02"))?;
    rest = day.1;
    rest = literal(rest, b'T').map_err(|r| element(r, "T"))?;
    let hour = getnum(rest, false).ok_or_else(|| element(rest, "15"))?;
    rest = hour.1;
    if hour.0 >= 24 {
        return Err(out_of_range("hour"));
    }
    rest = literal(rest, b':').map_err(|r| element(r, ":"))?;
    let minute = getnum(rest, true).ok_or_else(|| element(rest, "04"))?;
    rest = minute.1;
    if minute.0 >= 60 {
        return Err(out_of_range("minute"));
    }
    rest = literal(rest, b':').map_err(|r| element(r, ":"))?;
    let second = getnum(rest, true).ok_or_else(|| element(rest, "05"))?;
    rest = second.1;
    if second.0 >= 60 {
        return Err(out_of_range("second"));
    }
    let mut nanos = 0;
    match layout {
        // RFC3339 has no fraction, but Go accepts one after the seconds (any number of digits).
        Layout::Time => {
            if rest.len() >= 2 && matches!(rest[0], b'.' | b',') && is_digit(rest, 1) {
                let n = 2 + rest[2..].iter().take_while(|b| b.is_ascii_digit()).count();
                nanos = parse_nanoseconds(rest, n)
                    .map_err(|e| fraction_error(e, &out_of_range, || element(rest, "05")))?;
                rest = &rest[n..];
            }
        }
        // ".000000": exactly a separator and six bytes.
        Layout::MicroTime => {
            if rest.len() < 7 {
                return Err(element(rest, ".000000"));
            }
            nanos = parse_nanoseconds(rest, 7)
                .map_err(|e| fraction_error(e, &out_of_range, || element(rest, ".000000")))?;
            rest = &rest[7..];
        }
    }

    // "Z07:00": `Z`, or a sign, two digits, `:`, two digits.
    let offset = if rest.first() == Some(&b'Z') {
        rest = &rest[1..];
        0
    } else {
        if rest.len() < 6 || rest[3] != b':' {
            return Err(element(rest, "Z07:00"));
        }
        // Go reads the minutes only once the hours parsed, and reports a range error before a
        // syntax error; it tests with `>`, so offsets of 24 hours or 60 minutes are accepted.
        let hours = getnum(&rest[1..3], true).map(|(n, _)| n);
        let minutes = hours.and_then(|_| getnum(&rest[4..6], true).map(|(n, _)| n));
        if minutes.is_some_and(|m| m > 60) {
            return Err(out_of_range("time zone offset minute"));
        }
        if hours.is_some_and(|h| h > 24) {
            return Err(out_of_range("time zone offset hour"));
        }
        let (Some(hours), Some(minutes)) = (hours, minutes) else {
            return Err(element(rest, "Z07:00"));
        };
        let offset = (i64::from(hours) * 60 + i64::from(minutes)) * 60;
        let offset = match rest[0] {
            b'+' => offset,
            b'-' => -offset,
            _ => return Err(element(rest, "Z07:00")),
        };
        rest = &rest[6..];
        offset
    };
    if !rest.is_empty() {
        return Err(ParseError::Message {
            value: value.to_vec(),
            message: format!(": extra text: {}", Quoted(rest)),
        });
    }
    if day.0 < 1 || day.0 > days_in(month.0, year) {
        return Err(out_of_range("day"));
    }
    let days = days_from_civil(i64::from(year), month.0, day.0);
    let unix =
        days * 86_400 + i64::from(hour.0) * 3_600 + i64::from(minute.0) * 60 + i64::from(second.0)
            - offset;
    Ok(Instant { unix, nanos })
}

/// Why Go's `parseNanoseconds` failed.
enum Fraction {
    Bad,
    Negative,
}

fn fraction_error(
    e: Fraction,
    out_of_range: &impl Fn(&str) -> ParseError,
    bad: impl FnOnce() -> ParseError,
) -> ParseError {
    match e {
        Fraction::Bad => bad(),
        Fraction::Negative => out_of_range("fractional second"),
    }
}

/// Go's `parseNanoseconds(value, nbytes)`: a `.` or `,`, then the digits of `value[1..nbytes]`
/// (only the first nine count) scaled to nanoseconds; `atoi` allows a sign there.
fn parse_nanoseconds(value: &[u8], nbytes: usize) -> Result<u32, Fraction> {
    if !matches!(value[0], b'.' | b',') {
        return Err(Fraction::Bad);
    }
    let nbytes = nbytes.min(10);
    let ns = atoi(&value[1..nbytes]).ok_or(Fraction::Bad)?;
    if ns < 0 {
        return Err(Fraction::Negative);
    }
    // At most nine digits: below 1e9, so it fits.
    let scale = 10u32.pow((10 - nbytes) as u32);
    Ok(ns as u32 * scale)
}

fn literal(rest: &[u8], want: u8) -> Result<&[u8], &[u8]> {
    match rest.split_first() {
        Some((&b, tail)) if b == want => Ok(tail),
        _ => Err(rest),
    }
}

fn is_digit(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &[u8], fixed: bool) -> Option<(u32, &[u8])> {
    if !is_digit(s, 0) {
        return None;
    }
    let first = u32::from(s[0] - b'0');
    if !is_digit(s, 1) {
        return (!fixed).then_some((first, &s[1..]));
    }
    Some((first * 10 + u32::from(s[1] - b'0'), &s[2..]))
}

/// Go's `time.atoi`: an optional sign and decimal digits, nothing else; `""` is 0.
fn atoi(s: &[u8]) -> Option<i32> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let mut x: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        // Callers pass at most nine digits.
        x = x * 10 + i64::from(b - b'0');
    }
    i32::try_from(if negative { -x } else { x }).ok()
}

fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in(month: u32, year: i32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The printed form (`None`: `null`).
    fn printed(layout: Layout, s: &str) -> Result<Option<String>, String> {
        match normalize(layout, s, true) {
            Ok(Normalized::Same) => Ok(Some(s.to_owned())),
            Ok(Normalized::Null) => Ok(None),
            Ok(Normalized::Changed(printed)) => {
                assert_ne!(printed, s, "Changed, but the same");
                Ok(Some(printed))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn time(s: &str) -> Result<Option<String>, String> {
        printed(Layout::Time, s)
    }

    fn micro(s: &str) -> Result<Option<String>, String> {
        printed(Layout::MicroTime, s)
    }

    #[test]
    fn times_normalize_to_utc_seconds() {
        assert_eq!(
            time("2024-01-01T00:00:00Z"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        assert_eq!(
            time("2024-01-01T01:30:00+01:30"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        assert_eq!(
            time("2023-12-31T23:00:00-01:00"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        // The fraction is parsed and dropped (truncated, never rounded).
        assert_eq!(
            time("2024-01-01T00:00:00.999999999999Z"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        assert_eq!(
            time("2024-01-01T00:00:00,5Z"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        // Go's lax hour and 24-hour offsets.
        assert_eq!(
            time("2024-01-01T1:00:00Z"),
            Ok(Some("2024-01-01T01:00:00Z".into()))
        );
        assert_eq!(
            time("2024-01-02T00:00:00+24:00"),
            Ok(Some("2024-01-01T00:00:00Z".into()))
        );
        assert_eq!(time("2024-02-29T00:00:00Z").map(|t| t.is_some()), Ok(true));
        // The zero time is `null`; just after it is not.
        assert_eq!(time("0001-01-01T00:00:00Z"), Ok(None));
        assert_eq!(time("0001-01-01T01:00:00+01:00"), Ok(None));
        assert_eq!(
            time("0001-01-01T00:00:00.5Z"),
            Ok(Some("0001-01-01T00:00:00Z".into()))
        );
    }

    #[test]
    fn micro_times_keep_microseconds() {
        assert_eq!(
            micro("2024-01-01T00:00:10.123456Z"),
            Ok(Some("2024-01-01T00:00:10.123456Z".into()))
        );
        assert_eq!(
            micro("2024-01-01T02:00:10.123456+02:00"),
            Ok(Some("2024-01-01T00:00:10.123456Z".into()))
        );
        assert_eq!(
            micro("2024-01-01T00:00:10,000001Z"),
            Ok(Some("2024-01-01T00:00:10.000001Z".into()))
        );
        // atoi takes a sign, and the scale counts it as a digit: Go reads `.+12345` as 12345 µs.
        assert_eq!(
            micro("2024-01-01T00:00:10.+12345Z"),
            Ok(Some("2024-01-01T00:00:10.012345Z".into()))
        );
        assert_eq!(micro("0001-01-01T00:00:00.000000Z"), Ok(None));
    }

    #[test]
    fn go_parse_errors() {
        let cases = [
            (
                "x",
                r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#,
            ),
            (
                "",
                r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#,
            ),
            (
                "2024/01/01T00:00:00Z",
                r#"parsing time "2024/01/01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/01T00:00:00Z" as "-""#,
            ),
            (
                "2024-1-01T00:00:00Z",
                r#"parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01""#,
            ),
            (
                "2024-13-01T00:00:00Z",
                r#"parsing time "2024-13-01T00:00:00Z": month out of range"#,
            ),
            (
                "2024-02-30T00:00:00Z",
                r#"parsing time "2024-02-30T00:00:00Z": day out of range"#,
            ),
            (
                "2024-01-01 00:00:00Z",
                r#"parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T""#,
            ),
            (
                "2024-01-01T24:00:00Z",
                r#"parsing time "2024-01-01T24:00:00Z": hour out of range"#,
            ),
            (
                "2024-01-01T00:60:00Z",
                r#"parsing time "2024-01-01T00:60:00Z": minute out of range"#,
            ),
            (
                "2024-01-01T00:00:60Z",
                r#"parsing time "2024-01-01T00:00:60Z": second out of range"#,
            ),
            (
                "2024-01-01T00:00:00",
                r#"parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
            (
                "2024-01-01T00:00:00z",
                r#"parsing time "2024-01-01T00:00:00z" as "2006-01-02T15:04:05Z07:00": cannot parse "z" as "Z07:00""#,
            ),
            (
                "2024-01-01T00:00:00+25:00",
                r#"parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range"#,
            ),
            (
                "2024-01-01T00:00:00Zjunk",
                r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#,
            ),
            (
                "2024-01-01T00:00:00.Z",
                r#"parsing time "2024-01-01T00:00:00.Z" as "2006-01-02T15:04:05Z07:00": cannot parse ".Z" as "Z07:00""#,
            ),
            (
                "\"é\\",
                r#"parsing time "\"\xc3\xa9\\" as "2006-01-02T15:04:05Z07:00": cannot parse "\"\xc3\xa9\\" as "2006""#,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(time(input), Err(want.to_owned()), "{input}");
        }
        assert_eq!(
            micro("2024-01-01T00:00:00Z"),
            Err(r#"parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#.to_owned())
        );
        assert_eq!(
            micro("2024-01-01T00:00:00.12345Z"),
            Err(r#"parsing time "2024-01-01T00:00:00.12345Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".12345Z" as ".000000""#.to_owned())
        );
        assert_eq!(
            micro("2024-01-01T00:00:00.-12345Z"),
            Err(
                r#"parsing time "2024-01-01T00:00:00.-12345Z": fractional second out of range"#
                    .to_owned()
            )
        );
    }

    #[test]
    fn instants_clients_cannot_read_are_refused() {
        for input in [
            "0000-12-31T23:59:59Z",
            "0001-01-01T00:00:00+00:01",
            "9999-12-31T00:00:00Z",
            "9999-12-30T22:00:01Z",
        ] {
            let err = time(input).unwrap_err();
            assert!(err.contains("outside the range clients can read"), "{err}");
        }
        assert!(time("9999-12-30T22:00:00Z").is_ok());
        assert_eq!(
            normalize(Layout::Time, "0001-01-01T00:00:00Z", false).map_err(|e| e.to_string()),
            Err(r#"parsing time "0001-01-01T00:00:00Z": the zero time is stored as null, which clients cannot read in a list or map"#.to_owned())
        );
        assert!(time("0001-01-01T00:00:01Z").is_ok());
    }
}
