//! The JSON renderings Go gives the special Kubernetes types: RFC 3339 for
//! `metav1.Time`/`MicroTime`, and `resource.Quantity` syntax checks (base64 for `[]byte` is
//! `kgc_meta::encoding::base64`).

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
pub(crate) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Formats a UTC instant as Go's `time.RFC3339` (`micros: None`) or as
/// `2006-01-02T15:04:05.000000Z07:00` (`micros: Some(µs)`), for any `i64` second.
pub(crate) fn rfc3339(unix_seconds: i128, micros: Option<u32>) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs_of_day = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = String::with_capacity(32);
    if year < 0 {
        out.push('-');
    }
    out.push_str(&format!(
        "{:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        year.unsigned_abs(),
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    ));
    if let Some(micros) = micros {
        out.push_str(&format!(".{micros:06}"));
    }
    out.push('Z');
    out
}

/// Howard Hinnant's `civil_from_days`: proleptic Gregorian date of a day count from 1970-01-01.
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    // day is in 1..=31 and month in 1..=12 by construction.
    (year, month as u32, day as u32)
}

/// The error apimachinery's `ParseQuantity` reports for malformed quantities.
const QUANTITY_FORMAT: &str = "quantities must match the regular expression \
     '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Checks a quantity string the way `resource.ParseQuantity` does (`parseQuantityString` plus
/// the suffix interpretation), so a body kube-apiserver would reject is rejected here too.
pub(crate) fn check_quantity(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(QUANTITY_FORMAT.to_owned());
    }
    let mut pos = 0;
    if matches!(b[0], b'+' | b'-') {
        pos += 1;
    }
    let digits = |pos: &mut usize| {
        while *pos < b.len() && b[*pos].is_ascii_digit() {
            *pos += 1;
        }
    };
    digits(&mut pos);
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        digits(&mut pos);
    }
    if pos == b.len() {
        return Ok(());
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'+' | b'-') {
        pos += 1;
    }
    digits(&mut pos);
    if pos != b.len() {
        return Err(QUANTITY_FORMAT.to_owned());
    }
    let suffix = &s[suffix_start..];
    let known = matches!(
        suffix,
        "Ki" | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    );
    let exponent = suffix.len() > 1
        && matches!(suffix.as_bytes()[0], b'e' | b'E')
        && suffix[1..].parse::<i64>().is_ok();
    if known || exponent {
        Ok(())
    } else {
        Err("unable to parse quantity's suffix".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn quantities_like_parse_quantity() {
        for ok in [
            "0", "1", "Gi", "100m", "1.5Gi", "+1", "-2k", "1e3", "1E-3", "5E", "0.", ".", "1.G",
        ] {
            assert_eq!(check_quantity(ok), Ok(()), "{ok}");
        }
        for bad in ["", "1x", "1 ", "1Gi2", "1e", "1ki", "1.2.3", "--1"] {
            assert!(check_quantity(bad).is_err(), "{bad}");
        }
    }
}
