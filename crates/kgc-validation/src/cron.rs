//! The cron schedule parser CronJob validation runs: robfig/cron v3's `ParseStandard` (five
//! fields — minute, hour, day of month, month, day of week — or a `@descriptor`, with an
//! optional `TZ=`/`CRON_TZ=` prefix), returning its error strings verbatim because
//! `spec.schedule` errors echo them. Follows robfig/cron `parser.go` (`Parse`,
//! `normalizeFields`, `getField`, `getRange`, `parseDescriptor`) and Go's `time.ParseDuration`
//! and `time.LoadLocation`.

use kgc_meta::gojson::go_quote;

/// Bit 63 marks a field written as `*` or `?` (robfig/cron `starBit`: a day-of-month or
/// day-of-week field so written makes the two fields AND, not OR).
pub const STAR_BIT: u64 = 1 << 63;

/// The range and names of one field.
#[derive(Clone, Copy)]
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

impl Bounds {
    /// A field written with numbers only.
    const fn numeric(min: u32, max: u32) -> Bounds {
        Bounds {
            min,
            max,
            names: &[],
        }
    }
}

const MINUTES: Bounds = Bounds::numeric(0, 59);
const HOURS: Bounds = Bounds::numeric(0, 23);
const DOM: Bounds = Bounds::numeric(1, 31);
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// A parsed schedule: the bit sets of a five-field spec, or a descriptor.
#[derive(Debug, PartialEq, Eq)]
pub enum Schedule {
    Spec {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
    },
    /// `@every <duration>`, in nanoseconds.
    Every(i64),
    /// `@yearly`, `@monthly`, ... (as the name written).
    Descriptor(&'static str),
}

/// `cron.ParseStandard`.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".to_owned());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // Upstream slices up to the first space; a prefix without one has no schedule after it.
        let eq = spec.find('=').unwrap_or_default();
        let end = spec.find(' ').unwrap_or(spec.len()).max(eq + 1);
        let location = &spec[eq + 1..end];
        if let Err(e) = load_location(location) {
            return Err(format!("provided bad location {location}: {e}"));
        }
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(Schedule::Spec {
        minute: get_field(fields[0], MINUTES)?,
        hour: get_field(fields[1], HOURS)?,
        dom: get_field(fields[2], DOM)?,
        month: get_field(fields[3], MONTHS)?,
        dow: get_field(fields[4], DOW)?,
    })
}

fn parse_descriptor(descriptor: &str) -> Result<Schedule, String> {
    for name in [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ] {
        if descriptor == name {
            return Ok(Schedule::Descriptor(name));
        }
    }
    if let Some(d) = descriptor.strip_prefix("@every ") {
        return parse_duration(d)
            .map(Schedule::Every)
            .map_err(|e| format!("failed to parse duration {descriptor}: {e}"));
    }
    Err(format!("unrecognized descriptor: {descriptor}"))
}

/// `getField`: a comma-separated list of ranges, OR-ed together.
fn get_field(field: &str, r: Bounds) -> Result<u64, String> {
    field
        .split(',')
        .try_fold(0, |bits, expr| Ok(bits | get_range(expr, r)?))
}

/// `getRange`: `number | number "-" number [ "/" number ]`, `*` or `?`, names allowed.
fn get_range(expr: &str, r: Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (start, end, extra) = (r.min, r.max, STAR_BIT);
    } else {
        start = parse_int_or_name(low_and_high[0], r.names)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], r.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            r.min
        ));
    }
    if end > r.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            r.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(get_bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, names: &[(&str, u32)]) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    match names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => must_parse_int(expr),
    }
}

/// `mustParseInt`: Go's `strconv.Atoi`, refusing negative numbers.
fn must_parse_int(expr: &str) -> Result<u32, String> {
    let num = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if num < 0 {
        return Err(format!("negative number ({num}) not allowed: {expr}"));
    }
    // Values past the bit range fail the bounds check, as upstream's do.
    Ok(u32::try_from(num).unwrap_or(u32::MAX))
}

/// Go's `strconv.Atoi` with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// The bits `min..=max` stepping by `step`.
fn get_bits(min: u32, max: u32, step: u32) -> u64 {
    (min..=max.min(63))
        .step_by(step as usize)
        .fold(0, |bits, i| bits | 1 << i)
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(orig));
    let (neg, mut s) = match orig.as_bytes().first() {
        Some(b'-') => (true, &orig[1..]),
        Some(b'+') => (false, &orig[1..]),
        _ => (false, orig),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u128 = 1 << 63;
    let mut total: u128 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let int: u128 = if int_len == 0 {
            0
        } else {
            s[..int_len]
                .parse::<u128>()
                .ok()
                .filter(|v| *v < LIMIT)
                .ok_or_else(invalid)?
        };
        s = &s[int_len..];
        let mut frac = "";
        if let Some(rest) = s.strip_prefix('.') {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            frac = &rest[..n];
            s = &rest[n..];
            if int_len == 0 && n == 0 {
                return Err(invalid());
            }
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let unit_name = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u128 = match unit_name {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(unit_name),
                    go_quote(orig)
                ));
            }
        };
        let mut v = int
            .checked_mul(unit)
            .filter(|v| *v <= LIMIT)
            .ok_or_else(invalid)?;
        if !frac.is_empty() {
            let f: f64 = format!("0.{frac}").parse().unwrap_or(0.0);
            v += (f * unit as f64) as u128;
        }
        total += v;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        return Ok(i64::try_from(total).map_or(i64::MIN, |t| -t));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Go's `time.LoadLocation` against the system time-zone database (kube-apiserver reads the
/// same files): `""` and `UTC` are UTC, `Local` is local time, names are case-sensitive.
pub(crate) fn load_location(name: &str) -> Result<(), String> {
    if matches!(name, "" | "UTC" | "Local") {
        return Ok(());
    }
    if name.contains("..") || name.starts_with(['/', '\\']) {
        return Err("time: invalid location name".to_owned());
    }
    match jiff::tz::TimeZone::get(name) {
        Ok(tz) if tz.iana_name() == Some(name) => Ok(()),
        _ => Err(format!("unknown time zone {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(min: u32, max: u32) -> Bounds {
        Bounds {
            min,
            max,
            names: &[],
        }
    }

    /// robfig/cron `parser_test.go` `TestRange`.
    #[test]
    fn test_range() {
        let cases: &[(&str, u32, u32, u64, &str)] = &[
            ("5", 0, 7, 1 << 5, ""),
            ("0", 0, 7, 1 << 0, ""),
            ("7", 0, 7, 1 << 7, ""),
            ("5-5", 0, 7, 1 << 5, ""),
            ("5-6", 0, 7, 1 << 5 | 1 << 6, ""),
            ("5-7", 0, 7, 1 << 5 | 1 << 6 | 1 << 7, ""),
            ("5-6/2", 0, 7, 1 << 5, ""),
            ("5-7/2", 0, 7, 1 << 5 | 1 << 7, ""),
            ("5-7/1", 0, 7, 1 << 5 | 1 << 6 | 1 << 7, ""),
            ("*", 1, 3, 1 << 1 | 1 << 2 | 1 << 3 | STAR_BIT, ""),
            ("*/2", 1, 3, 1 << 1 | 1 << 3, ""),
            ("5--5", 0, 0, 0, "too many hyphens"),
            ("jan-x", 0, 0, 0, "failed to parse int from"),
            ("2-x", 1, 5, 0, "failed to parse int from"),
            ("*/-12", 0, 0, 0, "negative number"),
            ("*//2", 0, 0, 0, "too many slashes"),
            ("1", 3, 5, 0, "below minimum"),
            ("6", 3, 5, 0, "above maximum"),
            ("5-3", 3, 5, 0, "beyond end of range"),
            ("*/0", 0, 0, 0, "should be a positive number"),
        ];
        for (expr, min, max, want, err) in cases {
            let got = get_range(expr, bounds(*min, *max));
            if err.is_empty() {
                assert_eq!(got, Ok(*want), "{expr}");
            } else {
                let msg = got.expect_err(expr);
                assert!(msg.contains(err), "{expr}: {msg}");
            }
        }
    }

    /// `TestField`.
    #[test]
    fn test_field() {
        for (expr, want) in [
            ("5", 1u64 << 5),
            ("5,6", 1 << 5 | 1 << 6),
            ("5,6,7", 1 << 5 | 1 << 6 | 1 << 7),
            ("1,5-7/2,3", 1 << 1 | 1 << 5 | 1 << 7 | 1 << 3),
        ] {
            assert_eq!(get_field(expr, bounds(1, 7)), Ok(want), "{expr}");
        }
    }

    /// `TestBits`.
    #[test]
    fn test_bits() {
        assert_eq!(get_bits(0, 0, 1), 0x1);
        assert_eq!(get_bits(1, 1, 1), 0x2);
        assert_eq!(get_bits(1, 5, 2), 0x2a);
        assert_eq!(get_bits(1, 4, 2), 0xa);
    }

    /// `TestAll`: `*` sets every bit of the range plus the star bit.
    #[test]
    fn test_all() {
        for r in [MINUTES, HOURS, DOM, MONTHS, DOW] {
            assert_eq!(get_field("*", r), Ok(get_bits(r.min, r.max, 1) | STAR_BIT));
        }
    }

    /// `TestParseScheduleErrors` and `TestStandardSpecSchedule`, with the exact texts.
    #[test]
    fn test_parse_schedule_errors() {
        for (spec, want) in [
            (
                "* 5 j * *",
                "failed to parse int from j: strconv.Atoi: parsing \"j\": invalid syntax",
            ),
            (
                "@every Xm",
                "failed to parse duration @every Xm: time: invalid duration \"Xm\"",
            ),
            ("@unrecognized", "unrecognized descriptor: @unrecognized"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("", "empty spec string"),
            (
                "5 j * * *",
                "failed to parse int from j: strconv.Atoi: parsing \"j\": invalid syntax",
            ),
            ("0 0 31 13 *", "end of range (13) above maximum (12): 13"),
            ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
            (
                "TZ=Nowhere/Land 0 * * * *",
                "provided bad location Nowhere/Land: unknown time zone Nowhere/Land",
            ),
        ] {
            assert_eq!(parse_standard(spec).expect_err(spec), want, "{spec}");
        }
    }

    /// `TestStandardSpecSchedule` and the descriptor cases of `TestParseSchedule`.
    #[test]
    fn test_standard_spec_schedule() {
        assert_eq!(
            parse_standard("5 * * * *"),
            Ok(Schedule::Spec {
                minute: 1 << 5,
                hour: get_bits(0, 23, 1) | STAR_BIT,
                dom: get_bits(1, 31, 1) | STAR_BIT,
                month: get_bits(1, 12, 1) | STAR_BIT,
                dow: get_bits(0, 6, 1) | STAR_BIT,
            })
        );
        assert_eq!(
            parse_standard("@every 5m"),
            Ok(Schedule::Every(300_000_000_000))
        );
        assert_eq!(
            parse_standard("@every 1h30m"),
            Ok(Schedule::Every(5_400_000_000_000))
        );
        assert_eq!(
            parse_standard("@midnight"),
            Ok(Schedule::Descriptor("@midnight"))
        );
        assert!(parse_standard("CRON_TZ=UTC 5 * * * *").is_ok());
        assert!(parse_standard("TZ=UTC  0 5 * * *").is_ok());
        let Ok(Schedule::Spec { month, dow, .. }) = parse_standard("0 0 * JAN-mar MON-fri") else {
            panic!("names must parse");
        };
        assert_eq!(month, get_bits(1, 3, 1));
        assert_eq!(dow, get_bits(1, 5, 1));
    }

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("-2m"), Ok(-120_000_000_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("300ms"), Ok(300_000_000));
        assert_eq!(
            parse_duration("3x"),
            Err("time: unknown unit \"x\" in duration \"3x\"".to_owned())
        );
        assert!(parse_duration(".s").is_err());
        assert!(parse_duration("9999999999999h").is_err());
    }
}
