//! Service ClusterIPs out of `--service-cluster-ip-range` (kubernetes
//! `pkg/registry/core/service/ipallocator/bitmap.go`): pure logic over the set of addresses in
//! use; [`crate::service_alloc`] holds the lock and reads the set from the stored Services.
//!
//! As upstream: the network address and (IPv4) the broadcast address are never handed out; a
//! requested address must lie in the range and be free; an unset one is taken from the upper,
//! dynamic part of the range first (above `min(max(16, size/16), 256)` addresses), so that
//! addresses chosen by hand in the lower part (kube-dns's `10.96.0.10`) rarely collide, then
//! from the lower part. kgc takes the first free address of each part rather than a random one:
//! allocation is a scan of a set, and tests can predict it.

use std::collections::HashSet;
use std::fmt;
use std::net::Ipv4Addr;

/// Why an address cannot be had (upstream's error texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpError {
    #[error("provided IP is already allocated")]
    Allocated,
    #[error("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}")]
    NotInRange { ip: String, range: String },
    #[error("range is full")]
    Full,
}

/// An IPv4 CIDR of Service addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: u32,
    prefix: u8,
}

impl std::str::FromStr for IpRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("--service-cluster-ip-range {s:?}: {why}");
        let (ip, prefix) = s
            .split_once('/')
            .ok_or_else(|| bad("not a CIDR (a.b.c.d/n)"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad("not an IPv4 address"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (8..=30).contains(p))
            .ok_or_else(|| bad("the prefix length must be between 8 and 30"))?;
        let mask = u32::MAX << (32 - prefix);
        Ok(IpRange {
            network: u32::from(ip) & mask,
            prefix,
        })
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

impl Default for IpRange {
    /// kube-apiserver's and kubeadm's `10.96.0.0/12`.
    fn default() -> Self {
        IpRange {
            network: u32::from(Ipv4Addr::new(10, 96, 0, 0)),
            prefix: 12,
        }
    }
}

impl IpRange {
    /// How many addresses the range hands out (the network and broadcast addresses excluded).
    fn size(&self) -> u32 {
        (1u32 << (32 - self.prefix)) - 2
    }

    /// The offset (from the first usable address) where the dynamic part starts.
    fn dynamic_offset(&self) -> u32 {
        (self.size() / 16).clamp(16, 256).min(self.size())
    }

    /// Whether `ip` is one the range can hand out.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.network && ip - self.network <= self.size()
    }

    /// Checks a requested address (`AllocateService` with an IP).
    pub fn check(&self, ip: &str, used: &HashSet<Ipv4Addr>) -> Result<Ipv4Addr, IpError> {
        let not_in_range = || IpError::NotInRange {
            ip: ip.to_owned(),
            range: self.to_string(),
        };
        let addr: Ipv4Addr = ip.parse().map_err(|_| not_in_range())?;
        if !self.contains(addr) {
            return Err(not_in_range());
        }
        if used.contains(&addr) {
            return Err(IpError::Allocated);
        }
        Ok(addr)
    }

    /// A free address (`AllocateNext`).
    pub fn next(&self, used: &HashSet<Ipv4Addr>) -> Result<Ipv4Addr, IpError> {
        let first = self.network + 1;
        let offset = self.dynamic_offset();
        (offset..self.size())
            .chain(0..offset)
            .map(|i| Ipv4Addr::from(first + i))
            .find(|ip| !used.contains(ip))
            .ok_or(IpError::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> IpRange {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_prints_cidrs() {
        assert_eq!(range("10.96.0.0/12"), IpRange::default());
        assert_eq!(range("10.96.5.7/12").to_string(), "10.96.0.0/12");
        assert!(
            "10.96.0.0"
                .parse::<IpRange>()
                .unwrap_err()
                .contains("not a CIDR")
        );
        assert!("10.96.0.0/31".parse::<IpRange>().is_err());
        assert!("fd00::/108".parse::<IpRange>().is_err());
    }

    #[test]
    fn requested_addresses_are_checked() {
        let r = range("10.96.0.0/24");
        let used: HashSet<Ipv4Addr> = ["10.96.0.10".parse().unwrap()].into();
        assert_eq!(r.check("10.96.0.10", &used), Err(IpError::Allocated));
        assert_eq!(
            r.check("10.96.0.11", &used),
            Ok("10.96.0.11".parse().unwrap())
        );
        let e = r.check("192.168.0.1", &used).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/24"
        );
        assert!(r.check("10.96.0.0", &used).is_err());
        assert!(r.check("10.96.0.255", &used).is_err());
        assert!(r.check("10.96.0.254", &used).is_ok());
    }

    #[test]
    fn unset_addresses_come_from_the_upper_part_first_then_the_lower() {
        let r = range("10.96.0.0/28");
        // 14 usable addresses: all of them dynamic-first from offset 14 → wraps at once.
        let mut used = HashSet::new();
        for _ in 0..14 {
            let ip = r.next(&used).unwrap();
            assert!(r.contains(ip));
            assert!(used.insert(ip));
        }
        assert_eq!(r.next(&used), Err(IpError::Full));
        let big = IpRange::default();
        assert_eq!(
            big.next(&HashSet::new()).unwrap(),
            Ipv4Addr::new(10, 96, 1, 1)
        );
        // Released addresses are reused.
        used.remove(&Ipv4Addr::new(10, 96, 0, 3));
        assert_eq!(r.next(&used), Ok(Ipv4Addr::new(10, 96, 0, 3)));
    }
}
