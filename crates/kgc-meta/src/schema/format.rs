//! The string `format`s kube-apiserver checks in custom resources: the ones apiextensions-apiserver
//! keeps (`pkg/apiserver/validation/formats.go` `supportedFormats`), each validated as
//! kube-openapi's `pkg/validation/strfmt` registry validates it (`default.go`, `date.go`,
//! `time.go`, `duration.go`, `bson.go`). Any other format (`int32`, `float`, a typo) is ignored,
//! as upstream ignores it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `value` is valid for `format`; `None` when the format is not one upstream checks.
pub fn check(format: &str, value: &str) -> Option<bool> {
    let ok = match format {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => value.parse::<Ipv4Addr>().is_ok(),
        // Go's net.ParseIP also takes an IPv4 address for an IPv6 one, if it has a colon.
        "ipv6" => value.contains(':') && value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(UUID, value),
        "uuid3" => matches(UUID3, value),
        "uuid4" => matches(UUID4, value),
        "uuid5" => matches(UUID5, value),
        "ssn" => matches(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", value),
        "hexcolor" => matches(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", value),
        "rgbcolor" => matches(RGB, value),
        "byte" => matches(BASE64, value),
        "password" => true,
        "date" => jiff::civil::Date::strptime("%Y-%m-%d", value).is_ok(),
        "datetime" | "date-time" => is_date_time(value),
        "duration" => is_duration(value),
        // isbn, isbn10, isbn13 and creditcard are upstream formats too, checked by checksums
        // (govalidator); they are accepted unchecked here.
        _ => return None,
    };
    Some(ok)
}

const UUID: &str = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
const UUID3: &str = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
const UUID4: &str =
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$";
const UUID5: &str =
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$";
const BASE64: &str =
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$";
const RGB: &str = r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$";
/// RFC 1034 host names as kube-openapi's `HostnamePattern` widens them (digits first, symbols and
/// letters of any script, a top-level label of two characters or more).
const HOSTNAME: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$";

/// The fixed patterns above always compile; a failure would only make the format reject.
fn matches(pattern: &str, value: &str) -> bool {
    super::pattern::is_match(pattern, value)
}

fn is_hostname(value: &str) -> bool {
    matches(HOSTNAME, value) && value.len() <= 255 && value.split('.').all(|p| p.len() <= 63)
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path, no fragment
/// handling, no spaces or control characters.
fn is_request_uri(value: &str) -> bool {
    if value.is_empty() || value.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if value.starts_with('/') {
        return true;
    }
    match value.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Go's `mail.ParseAddress` in the forms people write: `a@b.c` or `Name <a@b.c>`.
fn is_email(value: &str) -> bool {
    let addr = match (value.rfind('<'), value.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        _ => value,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atom = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && !s.ends_with('.')
            && !s.contains("..")
            && s.chars()
                .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c) || !c.is_ascii())
    };
    atom(local) && atom(domain)
}

fn is_cidr(value: &str) -> bool {
    let Some((ip, bits)) = value.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 bytes as `:`- or `-`-separated pairs or `.`-separated
/// quadruples of hex digits.
fn is_mac(value: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let sizes = [6, 8, 20];
    for sep in [':', '-'] {
        let parts: Vec<&str> = value.split(sep).collect();
        if parts.len() > 1 {
            return sizes.contains(&parts.len()) && parts.iter().all(|p| hex(p, 2));
        }
    }
    let parts: Vec<&str> = value.split('.').collect();
    sizes.contains(&(parts.len() * 2)) && parts.iter().all(|p| hex(p, 4))
}

/// kube-openapi `strfmt.ParseDateTime`: RFC 3339 with or without fractional seconds, `Z` or an
/// offset.
fn is_date_time(value: &str) -> bool {
    value.parse::<jiff::Timestamp>().is_ok() && value.len() >= 20 && value.as_bytes()[10] == b'T'
}

/// kube-openapi `strfmt.ParseDuration`: Go's `time.ParseDuration` (`1h30m`, `-1.5s`), or a
/// number and a unit word (`3 days`, `1w`).
fn is_duration(value: &str) -> bool {
    const GO: &str = r"^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$";
    const WORDS: &str = r"^([0-9]+)\s*(ns|nanoseconds?|us|microseconds?|ms|milliseconds?|s|seconds?|sec|m|minutes?|min|h|hours?|hr|d|days?|day|w|weeks?|wk)$";
    value == "0" || matches(GO, value) || matches(WORDS, value)
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn each_checked_format_accepts_and_refuses() {
        let cases = [
            ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "abc"),
            (
                "uuid4",
                "9b2d3f1c-8e4a-4c5b-9a6d-1e2f3a4b5c6d",
                "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
            ),
            ("email", "a.b@example.com", "not-an-email"),
            ("hostname", "my-host.example.com", "-bad-.example"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "fe80::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
            ("uri", "https://example.com/x", "no scheme"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("date", "2024-02-29", "2023-02-29"),
            ("date-time", "2024-01-02T03:04:05Z", "2024-01-02"),
            ("duration", "1h30m", "ten minutes"),
            ("hexcolor", "#fff", "#ggg"),
            ("bsonobjectid", "507f1f77bcf86cd799439011", "507f"),
        ];
        for (format, good, bad) in cases {
            assert_eq!(check(format, good), Some(true), "{format} {good}");
            assert_eq!(check(format, bad), Some(false), "{format} {bad}");
        }
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("no-such-format", "x"), None);
    }
}
