//! IP addresses and CIDRs as Kubernetes 1.32 validates them: `netutils.ParseIPSloppy` /
//! `ParseCIDRSloppy` (IPv4 octets may carry leading zeros) and apimachinery's
//! `IsValidIP` / `IsValidCIDR` messages.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::field::{Errors, Path};

/// `netutils.ParseIPSloppy`.
pub(crate) fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = p.trim_start_matches('0');
        if digits.len() > 3 {
            return None;
        }
        let v: u16 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        *o = u8::try_from(v).ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// `netutils.ParseCIDRSloppy`: the address and the prefix length.
pub(crate) fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (ip, bits) = s.split_once('/')?;
    let ip = parse_ip(ip)?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

/// `validation.IsValidIP`.
pub(crate) fn validate_ip(path: &Path<'_>, value: &str, errs: &mut Errors) -> bool {
    const MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
    valid_or_report(parse_ip(value).is_some(), path, value, MSG, errs)
}

/// `validation.IsValidCIDR`.
pub(crate) fn validate_cidr(path: &Path<'_>, value: &str, errs: &mut Errors) -> bool {
    const MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
    valid_or_report(parse_cidr(value).is_some(), path, value, MSG, errs)
}

fn valid_or_report(
    valid: bool,
    path: &Path<'_>,
    value: &str,
    msg: &str,
    errs: &mut Errors,
) -> bool {
    if !valid {
        errs.invalid(path, value, msg);
    }
    valid
}

/// Exactly one IPv4 and one IPv6 address: `netutils.IsDualStackIPStrings` with the `len > 2`
/// check its callers add. An address that does not parse counts as IPv6 (it has its own error).
pub(crate) fn is_dual_stack_ips(ips: &[&str]) -> bool {
    is_dual_stack(ips, parse_ip)
}

/// The same of CIDRs (`netutils.IsDualStackCIDRStrings`).
pub(crate) fn is_dual_stack_cidrs(cidrs: &[&str]) -> bool {
    is_dual_stack(cidrs, |c| parse_cidr(c).map(|(ip, _)| ip))
}

fn is_dual_stack(values: &[&str], parse: impl Fn(&str) -> Option<IpAddr>) -> bool {
    let is_v4 = |v: &str| parse(v).is_some_and(|ip| ip.is_ipv4());
    matches!(values, [a, b] if is_v4(a) != is_v4(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sloppy_parsing() {
        assert_eq!(
            parse_ip("010.1.1.1"),
            Some(IpAddr::V4(Ipv4Addr::new(10, 1, 1, 1)))
        );
        assert!(parse_ip("10.0.0.0").is_some());
        assert!(parse_ip("2001:db8::1").is_some());
        assert!(parse_ip("256.1.1.1").is_none());
        assert!(parse_ip("1.1.1").is_none());
        assert!(parse_ip("").is_none());
        assert_eq!(parse_cidr("10.0.0.0/8").map(|c| c.1), Some(8));
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("fd00::/64").is_some());
        assert!(parse_cidr("10.0.0.0").is_none());
    }
}
