//! Service NodePorts out of `--service-node-port-range` (kubernetes
//! `pkg/registry/core/service/portallocator/allocator.go`): pure logic over the set of ports in
//! use, as [`crate::ipallocator`] is for addresses. An unset port is the first free one of the
//! upper, dynamic part of the range (above `min(max(16, size/32), 128)` ports), then of the
//! lower part.

use std::collections::HashSet;
use std::fmt;

/// Why a port cannot be had (upstream's error texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("provided port is already allocated")]
    Allocated,
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    NotInRange(String),
    #[error("range is full")]
    Full,
}

/// An inclusive range of ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    base: i32,
    last: i32,
}

impl std::str::FromStr for PortRange {
    type Err = String;

    /// `30000-32767` (or one port, or `base+size`, as `utilnet.ParsePortRange` takes).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--service-node-port-range {s:?}: not a port range (30000-32767)");
        let port = |p: &str| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|p| (1..=65535).contains(p))
        };
        let (base, last) = if let Some((a, b)) = s.split_once('-') {
            (port(a).ok_or_else(bad)?, port(b).ok_or_else(bad)?)
        } else if let Some((a, n)) = s.split_once('+') {
            let base = port(a).ok_or_else(bad)?;
            let n: i32 = n.trim().parse().map_err(|_| bad())?;
            (base, base + n)
        } else {
            let p = port(s).ok_or_else(bad)?;
            (p, p)
        };
        if last < base || last > 65535 {
            return Err(bad());
        }
        Ok(PortRange { base, last })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.base, self.last)
    }
}

impl Default for PortRange {
    fn default() -> Self {
        PortRange {
            base: 30000,
            last: 32767,
        }
    }
}

impl PortRange {
    fn size(&self) -> i32 {
        self.last - self.base + 1
    }

    /// Checks a requested port (`Allocate`).
    pub fn check(&self, port: i32, used: &HashSet<i32>) -> Result<(), PortError> {
        if port < self.base || port > self.last {
            return Err(PortError::NotInRange(self.to_string()));
        }
        if used.contains(&port) {
            return Err(PortError::Allocated);
        }
        Ok(())
    }

    /// A free port (`AllocateNext`).
    pub fn next(&self, used: &HashSet<i32>) -> Result<i32, PortError> {
        let offset = (self.size() / 32).clamp(16, 128).min(self.size());
        (offset..self.size())
            .chain(0..offset)
            .map(|i| self.base + i)
            .find(|p| !used.contains(p))
            .ok_or(PortError::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges() {
        assert_eq!("30000-32767".parse::<PortRange>(), Ok(PortRange::default()));
        assert_eq!(
            "30000+10".parse::<PortRange>().unwrap().to_string(),
            "30000-30010"
        );
        assert!("32767-30000".parse::<PortRange>().is_err());
        assert!("a-b".parse::<PortRange>().is_err());
    }

    #[test]
    fn requested_ports_are_checked() {
        let r = PortRange::default();
        let used: HashSet<i32> = [30080].into();
        assert_eq!(r.check(30080, &used), Err(PortError::Allocated));
        assert_eq!(r.check(30081, &used), Ok(()));
        assert_eq!(
            r.check(40000, &used).unwrap_err().to_string(),
            "provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
    }

    #[test]
    fn unset_ports_come_from_the_upper_part_then_the_lower_and_are_reused() {
        let r: PortRange = "30000-30019".parse().unwrap();
        let mut used = HashSet::new();
        assert_eq!(r.next(&used), Ok(30016));
        for _ in 0..20 {
            used.insert(r.next(&used).unwrap());
        }
        assert_eq!(r.next(&used), Err(PortError::Full));
        used.remove(&30002);
        assert_eq!(r.next(&used), Ok(30002));
        assert_eq!(PortRange::default().next(&HashSet::new()), Ok(30086));
    }
}
