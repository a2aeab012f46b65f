//! `--node-capacity`: what every simulated node reports as capacity and allocatable, written
//! `cpu=8,memory=32Gi,pods=110` (the form of the kubelet's `--system-reserved`).

use std::collections::BTreeMap;

use kgc_meta::quantity::Quantity;

use crate::Error;

/// The default: a mid-sized machine with the kubelet's default `maxPods`.
pub const DEFAULT: &str = "cpu=8,memory=32Gi,pods=110";

/// The kubelet's Ready condition needs these three (`pkg/kubelet/nodestatus/setters.go`
/// `ReadyCondition`: "Missing node capacity for resources").
const REQUIRED: [&str; 3] = ["cpu", "memory", "pods"];

/// Resource name → canonical quantity (as kube-apiserver prints it, so a re-read compares
/// equal).
pub type Capacity = BTreeMap<String, String>;

/// Parses `name=quantity,…`; every resource must be a valid, non-negative quantity, and `pods`
/// a whole number. `cpu`, `memory` and `pods` are required.
pub fn parse(s: &str) -> Result<Capacity, Error> {
    let bad = |key: &str, why: String| Error::Capacity {
        key: key.to_owned(),
        why,
    };
    let mut out = Capacity::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(bad(entry, "expected name=quantity".into()));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(bad(entry, "the resource name is empty".into()));
        }
        let q = Quantity::parse(value).map_err(|e| bad(key, format!("{value:?}: {e}")))?;
        if q.is_negative() {
            return Err(bad(
                key,
                format!("{value:?}: must be greater than or equal to 0"),
            ));
        }
        if key == "pods" && !q.is_integer() {
            return Err(bad(key, format!("{value:?}: must be an integer")));
        }
        if out.insert(key.to_owned(), q.to_string()).is_some() {
            return Err(bad(key, "given twice".into()));
        }
    }
    if let Some(missing) = REQUIRED.iter().find(|r| !out.contains_key(**r)) {
        return Err(bad(
            missing,
            "missing (cpu, memory and pods are required)".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_parses_to_canonical_quantities() {
        let c = parse(DEFAULT).unwrap();
        assert_eq!(c["cpu"], "8");
        assert_eq!(c["memory"], "32Gi");
        assert_eq!(c["pods"], "110");
        let c = parse("cpu=1500m, memory=1.5Gi,pods=10,ephemeral-storage=100Gi").unwrap();
        assert_eq!(
            (c["cpu"].as_str(), c["memory"].as_str()),
            ("1500m", "1536Mi")
        );
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert!(
            e("cpu=abc,memory=1Gi,pods=1").starts_with("cpu: \"abc\": quantities must match"),
            "{}",
            e("cpu=abc,memory=1Gi,pods=1")
        );
        assert_eq!(
            e("cpu=-1,memory=1Gi,pods=1"),
            "cpu: \"-1\": must be greater than or equal to 0"
        );
        assert_eq!(
            e("cpu=1,memory=1Gi,pods=1.5"),
            "pods: \"1.5\": must be an integer"
        );
        assert_eq!(
            e("cpu=1,memory=1Gi"),
            "pods: missing (cpu, memory and pods are required)"
        );
        assert_eq!(e("cpu=1,memory"), "memory: expected name=quantity");
        assert_eq!(e("cpu=1,cpu=2,memory=1,pods=1"), "cpu: given twice");
    }
}
