//! Time as kgc writes it: the one server clock, and `metav1.Time` / `metav1.MicroTime` as text.
//!
//! Every timestamp the server writes or compares against (creation and deletion times,
//! managedFields times, Table ages, review and event times, the collectors' deadlines) comes
//! from one [`Clock`], so `kgc serve --clock-offset` moves all of them together. The text forms
//! are those of kubernetes/apimachinery pkg/apis/meta/v1/time.go and micro_time.go
//! `MarshalJSON`: UTC, `Z`, whole seconds for `Time` and six fraction digits for `MicroTime`.

pub use jiff::{SignedDuration, Timestamp};

/// The server's notion of now: the system clock plus a fixed offset, so tests can move time
/// forward without sleeping.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    offset: SignedDuration,
}

impl Clock {
    pub fn with_offset(offset: SignedDuration) -> Self {
        Self { offset }
    }

    pub fn now(&self) -> Timestamp {
        Timestamp::now()
            .checked_add(self.offset)
            .unwrap_or_else(|_| Timestamp::now())
    }
}

/// A `metav1.Time` as JSON text: RFC 3339 in UTC, whole seconds (`2006-01-02T15:04:05Z`).
pub fn format_time(t: Timestamp) -> String {
    let (seconds, _) = split_nanos(t);
    rfc3339(seconds, None)
}

/// A `metav1.MicroTime` as JSON text: RFC 3339 in UTC with six fraction digits
/// (`2006-01-02T15:04:05.000000Z`).
pub fn format_micro_time(t: Timestamp) -> String {
    let (seconds, nanos) = split_nanos(t);
    // nanos < 1e9, so the microseconds fit in u32.
    rfc3339(seconds, Some((nanos / 1_000) as u32))
}

/// Whole seconds since the epoch (rounded down, also before 1970) and the nanoseconds after.
fn split_nanos(t: Timestamp) -> (i128, i128) {
    // jiff's own seconds and fraction (truncated toward zero, of one sign), not a division of
    // its i128 nanoseconds: i128 division is a library call, and every write stamps a time.
    let (seconds, nanos) = (t.as_second(), t.subsec_nanosecond());
    if nanos < 0 {
        (i128::from(seconds) - 1, i128::from(nanos) + 1_000_000_000)
    } else {
        (i128::from(seconds), i128::from(nanos))
    }
}

/// Formats a UTC instant as Go's `time.RFC3339` (`micros: None`) or as
/// `2006-01-02T15:04:05.000000Z07:00` (`micros: Some(µs)`), for any `i64` second (Go prints
/// years outside 0–9999 too, which the protobuf decoder must reproduce).
pub fn rfc3339(unix_seconds: i128, micros: Option<u32>) -> String {
    // In i64 wherever the second fits (i128 division is a library call); past it, only the
    // protobuf decoder's carry of a few seconds, whose days fit, clamped so nothing overflows.
    const FAR: i128 = 1 << 50;
    let (days, secs_of_day) = match i64::try_from(unix_seconds) {
        Ok(s) => (s.div_euclid(86_400), s.rem_euclid(86_400) as u32),
        Err(_) => (
            unix_seconds.div_euclid(86_400).clamp(-FAR, FAR) as i64,
            unix_seconds.rem_euclid(86_400) as u32,
        ),
    };
    let (year, month, day) = civil_from_days(days);
    let mut out = String::with_capacity(32);
    if year < 0 {
        out.push('-');
    }
    match year.unsigned_abs() {
        y @ 0..10_000 => push_digits(&mut out, y as u32, 4),
        y => out.push_str(&y.to_string()),
    }
    out.push('-');
    push_digits(&mut out, month, 2);
    out.push('-');
    push_digits(&mut out, day, 2);
    out.push('T');
    push_digits(&mut out, secs_of_day / 3600, 2);
    out.push(':');
    push_digits(&mut out, secs_of_day / 60 % 60, 2);
    out.push(':');
    push_digits(&mut out, secs_of_day % 60, 2);
    if let Some(micros) = micros {
        out.push('.');
        match micros {
            0..1_000_000 => push_digits(&mut out, micros, 6),
            _ => out.push_str(&micros.to_string()),
        }
    }
    out.push('Z');
    out
}

/// `n` in `width` decimal digits, zero-padded (`n` < 10^`width`): what `{:0width$}` prints,
/// without the formatting machinery every timestamp of every write went through.
fn push_digits(out: &mut String, n: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = n / 10u32.pow(place) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// Howard Hinnant's `days_from_civil`: days from 1970-01-01 to a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's `civil_from_days`: proleptic Gregorian date of a day count from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // day is in 1..=31 and month in 1..=12 by construction.
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
    const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

    #[test]
    fn rfc3339_like_go() {
        assert_eq!(rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_767_323_045, None), "2026-01-02T03:04:05Z");
        assert_eq!(
            rfc3339(1_767_323_045, Some(7)),
            "2026-01-02T03:04:05.000007Z"
        );
        assert_eq!(rfc3339(951_782_400, None), "2000-02-29T00:00:00Z");
        assert_eq!(
            rfc3339(i128::from(GO_ZERO_TIME_UNIX), None),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339(-62_167_219_200 - 86_400, None),
            "-0001-12-31T00:00:00Z"
        );
        assert_eq!(rfc3339(253_402_300_800, None), "10000-01-01T00:00:00Z");
        // Never panics at the extremes.
        rfc3339(i128::from(i64::MIN), None);
        rfc3339(i128::from(i64::MAX), Some(999_999));
        // Nor past them (the protobuf decoder's carry), on the i128 path.
        assert_eq!(
            rfc3339(i128::from(i64::MAX) + 1, None),
            rfc3339(i128::from(i64::MAX), None).replace(":07Z", ":08Z")
        );
    }

    #[test]
    fn days_round_trip() {
        for days in [-719_162, -1, 0, 1, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn metav1_times_like_go() {
        let t: Timestamp = "2026-01-02T03:04:05.0000078Z".parse().unwrap();
        assert_eq!(format_time(t), "2026-01-02T03:04:05Z");
        assert_eq!(format_micro_time(t), "2026-01-02T03:04:05.000007Z");
        let before_epoch: Timestamp = "1969-12-31T23:59:59.5Z".parse().unwrap();
        assert_eq!(format_time(before_epoch), "1969-12-31T23:59:59Z");
        assert_eq!(
            format_micro_time(before_epoch),
            "1969-12-31T23:59:59.500000Z"
        );
    }

    #[test]
    fn clock_offset_moves_now() {
        let clock = Clock::with_offset(SignedDuration::from_hours(2));
        let ahead = clock.now().duration_since(Timestamp::now());
        assert!(ahead > SignedDuration::from_mins(119), "{ahead:?}");
        assert!(ahead <= SignedDuration::from_hours(2), "{ahead:?}");
    }
}
