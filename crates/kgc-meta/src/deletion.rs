//! `DeleteOptions` and the rule that turns them into garbage-collection finalizers.
//!
//! This is the part of kube-apiserver's DELETE that the garbage collector stands on
//! (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`,
//! `deletionFinalizersForGarbageCollection`). It is pure so that the table can be tested row by
//! row.

use serde_json::Value;

use crate::catalog::GcPolicy;
use crate::status::Status;
use crate::validation::FieldError;

/// The finalizer that makes the collector orphan an owner's dependents before it goes.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// The finalizer that keeps an owner until its blocking dependents are gone.
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    Orphan,
    Background,
    Foreground,
}

impl PropagationPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PropagationPolicy::Orphan => "Orphan",
            PropagationPolicy::Background => "Background",
            PropagationPolicy::Foreground => "Foreground",
        }
    }
}

/// `DeleteOptions.preconditions`: the delete applies only to this exact object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// The options of a DELETE, from its body and query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Preconditions,
    pub orphan_dependents: Option<bool>,
    pub propagation_policy: Option<PropagationPolicy>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Background propagation guarded by the object's uid: how every collector deletes.
    pub fn background_for(uid: &str) -> Self {
        Self {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            },
            ..Self::default()
        }
    }

    /// Reads a `DeleteOptions` body; `null` or `{}` are the defaults. Unknown propagation
    /// policies and contradictory options are a 422 `DeleteOptions.meta.k8s.io "" is invalid`,
    /// as upstream `ValidateDeleteOptions` reports them.
    pub fn from_json(body: &Value) -> Result<Self, Status> {
        let mut opts = Self::default();
        let Some(obj) = body.as_object() else {
            return if body.is_null() {
                Ok(opts)
            } else {
                Err(Status::bad_request("DeleteOptions must be a JSON object"))
            };
        };
        if let Some(g) = obj.get("gracePeriodSeconds").filter(|v| !v.is_null()) {
            opts.grace_period_seconds = Some(g.as_i64().ok_or_else(|| {
                Status::bad_request("DeleteOptions.gracePeriodSeconds must be an integer")
            })?);
        }
        if let Some(o) = obj.get("orphanDependents").filter(|v| !v.is_null()) {
            opts.orphan_dependents = Some(o.as_bool().ok_or_else(|| {
                Status::bad_request("DeleteOptions.orphanDependents must be a boolean")
            })?);
        }
        if let Some(p) = obj.get("propagationPolicy").filter(|v| !v.is_null()) {
            let p = p.as_str().unwrap_or_default();
            opts.propagation_policy = Some(parse_policy(p)?);
        }
        if let Some(pre) = obj.get("preconditions").and_then(Value::as_object) {
            let s = |k: &str| pre.get(k).and_then(Value::as_str).map(str::to_owned);
            opts.preconditions = Preconditions {
                uid: s("uid"),
                resource_version: s("resourceVersion"),
            };
        }
        if let Some(d) = obj.get("dryRun").and_then(Value::as_array) {
            opts.dry_run = parse_dry_run(d.iter().filter_map(Value::as_str))?;
        }
        opts.validate()?;
        Ok(opts)
    }

    /// Rejects `orphanDependents` together with `propagationPolicy`.
    pub fn validate(&self) -> Result<(), Status> {
        if let (Some(_), Some(p)) = (self.orphan_dependents, self.propagation_policy) {
            return Err(invalid(FieldError::invalid(
                "propagationPolicy",
                p.as_str(),
                "orphanDependents and deletionPropagation cannot be both set",
            )));
        }
        Ok(())
    }
}

/// Parses a propagation policy name, as a query parameter or body field carries it.
pub fn parse_policy(p: &str) -> Result<PropagationPolicy, Status> {
    match p {
        "Orphan" => Ok(PropagationPolicy::Orphan),
        "Background" => Ok(PropagationPolicy::Background),
        "Foreground" => Ok(PropagationPolicy::Foreground),
        other => Err(invalid(FieldError::not_supported(
            "propagationPolicy",
            other,
            &["Foreground", "Background", "Orphan", "nil"],
        ))),
    }
}

/// `dryRun` accepts only `All`.
pub fn parse_dry_run<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<bool, Status> {
    let mut dry = false;
    for v in values {
        if v != "All" {
            return Err(Status::bad_request(format!(
                "Invalid dryRun value {v:?}: valid values are \"All\""
            )));
        }
        dry = true;
    }
    Ok(dry)
}

fn invalid(e: FieldError) -> Status {
    Status::invalid("meta.k8s.io", "DeleteOptions", "", &[e])
}

/// Whether the deletion must orphan dependents (`shouldOrphanDependents`; first rule wins).
pub fn should_orphan(policy: GcPolicy, opts: &DeleteOptions, finalizers: &[String]) -> bool {
    if policy == GcPolicy::Unsupported {
        return false;
    }
    if let Some(o) = opts.orphan_dependents {
        return o;
    }
    if let Some(p) = opts.propagation_policy {
        return p == PropagationPolicy::Orphan;
    }
    for f in finalizers {
        match f.as_str() {
            FINALIZER_ORPHAN => return true,
            FINALIZER_FOREGROUND => return false,
            _ => {}
        }
    }
    policy == GcPolicy::Orphan
}

/// Whether the deletion must wait for dependents (`shouldDeleteDependents`; first rule wins).
pub fn should_delete_dependents(
    policy: GcPolicy,
    opts: &DeleteOptions,
    finalizers: &[String],
) -> bool {
    if policy == GcPolicy::Unsupported || opts.orphan_dependents.is_some() {
        return false;
    }
    if let Some(p) = opts.propagation_policy {
        return p == PropagationPolicy::Foreground;
    }
    for f in finalizers {
        match f.as_str() {
            FINALIZER_FOREGROUND => return true,
            FINALIZER_ORPHAN => return false,
            _ => {}
        }
    }
    false
}

/// The finalizer list a DELETE leaves on the object: the existing ones without the two GC
/// finalizers, then `orphan` and/or `foregroundDeletion` as the rules decide. Returns `None`
/// when the resulting *set* equals the existing one (upstream counts only set changes).
pub fn deletion_finalizers(
    policy: GcPolicy,
    opts: &DeleteOptions,
    finalizers: &[String],
) -> Option<Vec<String>> {
    let orphan = should_orphan(policy, opts, finalizers);
    let foreground = should_delete_dependents(policy, opts, finalizers);
    let mut next: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != FINALIZER_ORPHAN && *f != FINALIZER_FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(FINALIZER_ORPHAN.to_owned());
    }
    if foreground {
        next.push(FINALIZER_FOREGROUND.to_owned());
    }
    let same_set =
        next.iter().all(|f| finalizers.contains(f)) && finalizers.iter().all(|f| next.contains(f));
    (!same_set).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fins(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn opts(policy: Option<PropagationPolicy>, orphan: Option<bool>) -> DeleteOptions {
        DeleteOptions {
            propagation_policy: policy,
            orphan_dependents: orphan,
            ..Default::default()
        }
    }

    use GcPolicy::{Background as B, Orphan as O, Unsupported as U};
    use PropagationPolicy::{Background, Foreground, Orphan};

    /// The rows of `shouldOrphanDependents` (`store.go`).
    #[test]
    fn should_orphan_table() {
        assert!(!should_orphan(U, &opts(Some(Orphan), None), &[]));
        assert!(should_orphan(B, &opts(None, Some(true)), &[]));
        assert!(!should_orphan(O, &opts(None, Some(false)), &[]));
        assert!(should_orphan(B, &opts(Some(Orphan), None), &[]));
        assert!(!should_orphan(O, &opts(Some(Background), None), &[]));
        assert!(!should_orphan(O, &opts(Some(Foreground), None), &[]));
        assert!(should_orphan(
            B,
            &opts(None, None),
            &fins(&["x/y", "orphan"])
        ));
        assert!(!should_orphan(
            O,
            &opts(None, None),
            &fins(&["foregroundDeletion", "orphan"])
        ));
        assert!(should_orphan(O, &opts(None, None), &[]));
        assert!(!should_orphan(B, &opts(None, None), &[]));
    }

    /// The rows of `shouldDeleteDependents` (`store.go`).
    #[test]
    fn should_delete_dependents_table() {
        assert!(!should_delete_dependents(
            U,
            &opts(Some(Foreground), None),
            &[]
        ));
        assert!(!should_delete_dependents(
            B,
            &opts(None, Some(false)),
            &fins(&["foregroundDeletion"])
        ));
        assert!(should_delete_dependents(
            B,
            &opts(Some(Foreground), None),
            &[]
        ));
        assert!(!should_delete_dependents(B, &opts(Some(Orphan), None), &[]));
        assert!(should_delete_dependents(
            B,
            &opts(None, None),
            &fins(&["foregroundDeletion"])
        ));
        assert!(!should_delete_dependents(
            B,
            &opts(None, None),
            &fins(&["orphan", "foregroundDeletion"])
        ));
        assert!(!should_delete_dependents(O, &opts(None, None), &[]));
    }

    #[test]
    fn background_removes_prior_gc_finalizers() {
        let next = deletion_finalizers(B, &opts(Some(Background), None), &fins(&["orphan", "a/b"]));
        assert_eq!(next, Some(fins(&["a/b"])));
        let next = deletion_finalizers(B, &opts(None, Some(false)), &fins(&["orphan"]));
        assert_eq!(next, Some(vec![]));
    }

    #[test]
    fn unchanged_set_reports_none() {
        assert_eq!(
            deletion_finalizers(B, &opts(None, None), &fins(&["a/b"])),
            None
        );
        assert_eq!(
            deletion_finalizers(O, &opts(None, None), &fins(&["orphan"])),
            None
        );
        assert_eq!(
            deletion_finalizers(O, &opts(None, None), &[]),
            Some(fins(&["orphan"]))
        );
        assert_eq!(
            deletion_finalizers(B, &opts(Some(Foreground), None), &fins(&["a/b"])),
            Some(fins(&["a/b", "foregroundDeletion"]))
        );
    }

    #[test]
    fn parse_body() {
        let o = DeleteOptions::from_json(&json!({
            "kind": "DeleteOptions", "apiVersion": "v1",
            "propagationPolicy": "Foreground",
            "preconditions": {"uid": "u1"},
            "gracePeriodSeconds": 0,
            "dryRun": ["All"],
        }))
        .unwrap();
        assert_eq!(o.propagation_policy, Some(Foreground));
        assert_eq!(o.preconditions.uid.as_deref(), Some("u1"));
        assert_eq!(o.grace_period_seconds, Some(0));
        assert!(o.dry_run);
        assert_eq!(
            DeleteOptions::from_json(&Value::Null).unwrap(),
            DeleteOptions::default()
        );
    }

    #[test]
    fn contradictory_or_unknown_options_are_invalid() {
        let e = DeleteOptions::from_json(
            &json!({"orphanDependents": true, "propagationPolicy": "Orphan"}),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .starts_with("DeleteOptions.meta.k8s.io \"\" is invalid"),
            "{}",
            e.message
        );
        let e = DeleteOptions::from_json(&json!({"propagationPolicy": "Sideways"})).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("Unsupported value: \"Sideways\""),
            "{}",
            e.message
        );
    }
}
