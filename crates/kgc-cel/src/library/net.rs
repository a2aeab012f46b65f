//! Kubernetes' IP and CIDR libraries (kubernetes/apiserver `pkg/cel/library/ip.go`,
//! `cidr.go`), on Go's `net/netip` rules: no zones, no IPv4-mapped IPv6 addresses, no
//! leading zeros in IPv4 octets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::{error, function, opaque, opaque_arg, string_arg};

/// A `net.IP` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ip(IpAddr);

/// A `net.CIDR` value: an address (not necessarily masked) and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr(IpAddr, u8);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

fn ip_type() -> Type {
    Type::new_opaque_type("net.IP")
}

fn cidr_type() -> Type {
    Type::new_opaque_type("net.CIDR")
}

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let (ip, cidr) = (ip_type, cidr_type);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], parse_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![ip()], to_string)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    for (name, id, f) in [
        (
            "isUnspecified",
            "ip_is_unspecified",
            is_unspecified as cel::common::functions::Function,
        ),
        ("isLoopback", "ip_is_loopback", is_loopback),
        (
            "isLinkLocalMulticast",
            "ip_is_link_local_multicast",
            is_link_local_multicast,
        ),
        (
            "isLinkLocalUnicast",
            "ip_is_link_local_unicast",
            is_link_local_unicast,
        ),
        ("isGlobalUnicast", "ip_is_global_unicast", is_global_unicast),
    ] {
        env.add_member_overload(name, id, ip(), vec![], f)?;
    }
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], parse_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], to_string)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )?;
    Ok(())
}

/// Go's `netip.ParseAddr` as the library restricts it (`parseIPAddr`).
fn ip_addr(raw: &str) -> Result<IpAddr, String> {
    if let Some((addr, _zone)) = raw.split_once('%')
        && addr.parse::<Ipv6Addr>().is_ok()
    {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    let addr = raw.parse::<IpAddr>().map_err(|_| {
        format!("IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP")
    })?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

/// Go's `netip.ParsePrefix` as the library restricts it (`parseCIDR`).
fn prefix(raw: &str) -> Result<Cidr, String> {
    let bad = |why: &str| {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({raw:?}): {why}"
        )
    };
    let (addr, bits) = raw.split_once('/').ok_or_else(|| bad("no '/'"))?;
    if addr.contains('%') {
        return Err(bad("IPv6 zones cannot be present in a prefix"));
    }
    let ip = addr
        .parse::<IpAddr>()
        .map_err(|_| bad(&format!("ParseAddr({addr:?}): unable to parse IP")))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let valid_digits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && (bits == "0" || !bits.starts_with('0'));
    let bits = bits
        .parse::<u8>()
        .ok()
        .filter(|b| valid_digits && *b <= max)
        .ok_or_else(|| bad(&format!("bad bits after slash: {bits:?}")))?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(Cidr(ip, bits))
}

/// `addr` with all but its first `bits` bits cleared.
fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

impl Cidr {
    /// `netip.Prefix.Contains`: same family, same masked bits.
    fn contains(self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.0.is_ipv4() && mask(ip, self.1) == mask(self.0, self.1)
    }
}

fn ip_arg(args: &[Value], i: usize, function: &str) -> Result<IpAddr, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => ip_addr(s).map_err(|e| error(function, e)),
        _ => opaque_arg::<Ip>(args, i, function).map(|ip| ip.0),
    }
}

fn cidr_arg(args: &[Value], i: usize, function: &str) -> Result<Cidr, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => prefix(s).map_err(|e| error(function, e)),
        _ => opaque_arg::<Cidr>(args, i, function).copied(),
    }
}

function!(parse_ip, |args: &[Value]| Ok(opaque(Ip(ip_arg(
    args, 0, "ip"
)?))));

function!(is_ip, |args: &[Value]| {
    Ok(Value::Bool(ip_addr(string_arg(args, 0, "isIP")?).is_ok()))
});

function!(is_canonical, |args: &[Value]| {
    let raw = string_arg(args, 0, "ip.isCanonical")?;
    let addr = ip_addr(raw).map_err(|e| error("ip.isCanonical", e))?;
    Ok(Value::Bool(addr.to_string() == raw))
});

function!(to_string, |args: &[Value]| {
    Ok(Value::from(match args.first() {
        Some(Value::Opaque(o)) => match (o.downcast_ref::<Ip>(), o.downcast_ref::<Cidr>()) {
            (Some(ip), _) => ip.0.to_string(),
            (_, Some(c)) => format!("{}/{}", c.0, c.1),
            _ => return Err(super::no_such_overload("string")),
        },
        _ => return Err(super::no_such_overload("string")),
    }))
});

function!(family, |args: &[Value]| {
    Ok(Value::Int(if ip_arg(args, 0, "family")?.is_ipv4() {
        4
    } else {
        6
    }))
});

function!(is_unspecified, |args: &[Value]| {
    Ok(Value::Bool(
        ip_arg(args, 0, "isUnspecified")?.is_unspecified(),
    ))
});

function!(is_loopback, |args: &[Value]| {
    Ok(Value::Bool(ip_arg(args, 0, "isLoopback")?.is_loopback()))
});

/// Go's `IsLinkLocalMulticast`: 224.0.0.0/24, ff02::/16.
fn link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.octets()[0] == 0xff && v6.octets()[1] & 0x0f == 0x02,
    }
}

/// Go's `IsLinkLocalUnicast`: 169.254.0.0/16, fe80::/10.
fn link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

function!(is_link_local_multicast, |args: &[Value]| {
    Ok(Value::Bool(link_local_multicast(ip_arg(
        args,
        0,
        "isLinkLocalMulticast",
    )?)))
});

function!(is_link_local_unicast, |args: &[Value]| {
    Ok(Value::Bool(link_local_unicast(ip_arg(
        args,
        0,
        "isLinkLocalUnicast",
    )?)))
});

function!(is_global_unicast, |args: &[Value]| {
    let ip = ip_arg(args, 0, "isGlobalUnicast")?;
    let broadcast = ip == IpAddr::V4(Ipv4Addr::BROADCAST);
    Ok(Value::Bool(
        !broadcast
            && !ip.is_unspecified()
            && !ip.is_loopback()
            && !ip.is_multicast()
            && !link_local_unicast(ip),
    ))
});

function!(parse_cidr, |args: &[Value]| Ok(opaque(cidr_arg(
    args, 0, "cidr"
)?)));

function!(is_cidr, |args: &[Value]| {
    Ok(Value::Bool(prefix(string_arg(args, 0, "isCIDR")?).is_ok()))
});

function!(contains_ip, |args: &[Value]| {
    let cidr = cidr_arg(args, 0, "containsIP")?;
    Ok(Value::Bool(cidr.contains(ip_arg(args, 1, "containsIP")?)))
});

function!(contains_cidr, |args: &[Value]| {
    let cidr = cidr_arg(args, 0, "containsCIDR")?;
    let other = cidr_arg(args, 1, "containsCIDR")?;
    Ok(Value::Bool(cidr.1 <= other.1 && cidr.contains(other.0)))
});

function!(cidr_ip, |args: &[Value]| Ok(opaque(Ip(cidr_arg(
    args, 0, "ip"
)?
.0))));

function!(masked, |args: &[Value]| {
    let Cidr(addr, bits) = cidr_arg(args, 0, "masked")?;
    Ok(opaque(Cidr(mask(addr, bits), bits)))
});

function!(prefix_length, |args: &[Value]| {
    Ok(Value::Int(i64::from(cidr_arg(args, 0, "prefixLength")?.1)))
});

#[cfg(test)]
mod tests {
    use crate::library::tests::{eval, eval_err};
    use cel::Value;

    /// Cases of kubernetes/apiserver `pkg/cel/library/ip_test.go` and `cidr_test.go`.
    #[test]
    fn the_ip_library() {
        let t = |s: &str| assert_eq!(eval(s), Value::Bool(true), "{s}");
        t("isIP('192.168.0.1')");
        t("isIP('2001:db8::abcd')");
        t("!isIP('192.168.0.1.0')");
        t("!isIP('192.168.0.01')");
        t("!isIP('::ffff:192.168.0.1')");
        t("!isIP('fe80::1%eth0')");
        t("ip.isCanonical('127.0.0.1')");
        t("!ip.isCanonical('2001:DB8::abcd')");
        t("ip.isCanonical('2001:db8::abcd')");
        t("!ip.isCanonical('2001:db8:0:0:0:0:0:abcd')");
        t("ip('127.0.0.1').family() == 4");
        t("ip('::1').family() == 6");
        t("ip('0.0.0.0').isUnspecified()");
        t("ip('::').isUnspecified()");
        t("ip('127.0.0.1').isLoopback()");
        t("!ip('192.168.0.1').isLoopback()");
        t("ip('224.0.0.1').isLinkLocalMulticast()");
        t("!ip('224.0.1.1').isLinkLocalMulticast()");
        t("ip('ff02::1').isLinkLocalMulticast()");
        t("!ip('fd00::1').isLinkLocalMulticast()");
        t("ip('169.254.169.254').isLinkLocalUnicast()");
        t("ip('fe80::1').isLinkLocalUnicast()");
        t("!ip('fd80::1').isLinkLocalUnicast()");
        t("ip('192.168.0.1').isGlobalUnicast()");
        t("!ip('255.255.255.255').isGlobalUnicast()");
        t("ip('2001:db8::abcd').isGlobalUnicast()");
        t("!ip('ff00::1').isGlobalUnicast()");
        t("string(ip('2001:db8:0:0:0:0:0:abcd')) == '2001:db8::abcd'");
        t("ip('127.0.0.1') == ip('127.0.0.1')");
        t("ip('127.0.0.1') != ip('127.0.0.2')");
        assert_eq!(
            eval_err("ip('::ffff:192.168.0.1')"),
            "IPv4-mapped IPv6 address \"::ffff:192.168.0.1\" is not allowed"
        );
        assert_eq!(
            eval_err("ip('fe80::1%eth0')"),
            "IP address \"fe80::1%eth0\" with zone value is not allowed"
        );
    }

    #[test]
    fn the_cidr_library() {
        let t = |s: &str| assert_eq!(eval(s), Value::Bool(true), "{s}");
        t("isCIDR('192.168.0.0/24')");
        t("!isCIDR('192.168.0.0/33')");
        t("!isCIDR('192.168.0.0')");
        t("isCIDR('2001:db8::/32')");
        t("!isCIDR('::ffff:192.168.0.1/24')");
        t("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))");
        t("cidr('192.168.0.0/24').containsIP('192.168.0.1')");
        t("!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))");
        t("!cidr('192.168.0.0/24').containsIP('::1')");
        t("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))");
        t("cidr('192.168.0.0/24').containsCIDR('192.168.0.128/25')");
        t("!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')");
        t("cidr('2001:db8::/32').containsCIDR('2001:db8::/33')");
        t("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')");
        t("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')");
        t("string(cidr('192.168.0.1/24').masked()) == '192.168.0.0/24'");
        t("cidr('192.168.0.0/24').prefixLength() == 24");
        t("cidr('2001:db8::/32').ip().family() == 6");
        assert_eq!(
            eval_err("cidr('192.168.0.0/33')"),
            "network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/33\"): bad bits after slash: \"33\""
        );
    }
}
