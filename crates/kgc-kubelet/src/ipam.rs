//! Pod IPs from a node's `spec.podCIDR`, as the host-local IPAM plugin of a CNI bridge hands
//! them out: the network address and the gateway (`.1`) are never given, nor the broadcast
//! address; an address is free again once its pod's sandbox is gone.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use crate::Error;

/// The addresses of one node's pod range.
#[derive(Clone, Debug)]
pub struct Range {
    base: u32,
    size: u32,
    used: BTreeSet<u32>,
    /// Where the next search starts: host-local hands addresses out round-robin, so a freed
    /// address is not reused at once.
    next: u32,
}

impl Range {
    /// The range of `cidr` (`10.244.0.0/24`); IPv4 only.
    pub fn parse(cidr: &str) -> Result<Range, Error> {
        let bad = |why: &str| Error::PodCidr(format!("{cidr:?}: {why}"));
        let (ip, bits) = cidr
            .split_once('/')
            .ok_or_else(|| bad("no prefix length"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad("not an IPv4 address"))?;
        let bits: u32 = bits.parse().map_err(|_| bad("bad prefix length"))?;
        if !(1..=30).contains(&bits) {
            return Err(bad("the prefix length must be 1 to 30"));
        }
        let size = 1u32 << (32 - bits);
        Ok(Range {
            base: u32::from(ip) & !(size - 1),
            size,
            used: BTreeSet::new(),
            next: 2,
        })
    }

    /// The next free address, `None` when every one is taken.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        let hosts = 2..self.size - 1;
        let start = self.next.clamp(hosts.start, hosts.end - 1);
        let found = (start..hosts.end)
            .chain(hosts.start..start)
            .find(|o| !self.used.contains(o))?;
        self.used.insert(found);
        self.next = found + 1;
        Some(Ipv4Addr::from(self.base + found))
    }

    /// Takes a given address (a pod that already has it), if it is in the range and free.
    pub fn reserve(&mut self, ip: Ipv4Addr) -> bool {
        let o = u32::from(ip).wrapping_sub(self.base);
        (2..self.size - 1).contains(&o) && self.used.insert(o)
    }

    pub fn release(&mut self, ip: Ipv4Addr) {
        self.used.remove(&u32::from(ip).wrapping_sub(self.base));
    }

    pub fn in_use(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_hosts_round_robin_and_frees_them() {
        let mut r = Range::parse("10.244.3.0/30").unwrap();
        assert_eq!(r.allocate(), Some("10.244.3.2".parse().unwrap()));
        assert_eq!(r.allocate(), None, "a /30 has one pod address");
        r.release("10.244.3.2".parse().unwrap());
        assert_eq!(r.allocate(), Some("10.244.3.2".parse().unwrap()));
        let mut r = Range::parse("10.244.0.0/24").unwrap();
        let a = r.allocate().unwrap();
        let b = r.allocate().unwrap();
        assert_eq!(
            (a.to_string(), b.to_string()),
            ("10.244.0.2".into(), "10.244.0.3".into())
        );
        r.release(a);
        assert_eq!(r.allocate().unwrap().to_string(), "10.244.0.4");
        assert!(r.reserve("10.244.0.9".parse().unwrap()));
        assert!(!r.reserve("10.244.0.9".parse().unwrap()));
        assert!(!r.reserve("10.245.0.9".parse().unwrap()));
        assert_eq!(r.in_use(), 3);
    }

    #[test]
    fn malformed_ranges_are_named() {
        for bad in ["10.244.0.0", "10.244.0.0/33", "fd00::/64", "x/24"] {
            let e = Range::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
