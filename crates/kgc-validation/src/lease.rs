//! coordination.k8s.io/v1 Lease, following kubernetes/kubernetes
//! `pkg/apis/coordination/validation/validation.go` (`ValidateLeaseSpec`). The strategy and
//! preferred-holder fields belong to the `CoordinatedLeaderElection` gate, off in 1.32 (the
//! registry drops them), so they are not checked.

use serde_json::Value;

use crate::field::Errors;
use crate::json::Json;

/// A Lease create or update (both validate the spec alone).
pub(crate) fn lease(obj: &Value, errs: &mut Errors) {
    let spec = obj.at("spec");
    if let Some(d) = spec.opt_int("leaseDurationSeconds")
        && d <= 0
    {
        errs.invalid_int("spec.leaseDurationSeconds", d, "must be greater than 0");
    }
    if let Some(t) = spec.opt_int("leaseTransitions") {
        errs.nonnegative("spec.leaseTransitions", t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `TestValidateLeaseSpec`.
    #[test]
    fn test_validate_lease_spec() {
        let run = |spec: Value| {
            let mut e = Errors::default();
            lease(&json!({"spec": spec}), &mut e);
            e.into_vec()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert!(
            run(json!({"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}))
                .is_empty()
        );
        assert_eq!(
            run(json!({"leaseDurationSeconds": 0, "leaseTransitions": -1})),
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }
}
