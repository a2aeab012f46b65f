//! A leader's writes fenced by its Lease in the datastore itself (on etcd).
//!
//! A leader's own clock (`kgc_client::Fence`) refuses its controllers' writes once its term may
//! have lapsed, but a write that passed that check just before the process was paused (SIGSTOP,
//! a frozen VM) still goes out when it resumes, possibly after another replica took the lease.
//! On etcd such a write carries one more guard in its transaction: the leader Lease's key still
//! at the revision this replica last saw it, held by this replica. Another holder's takeover
//! changes that key, so etcd itself refuses the stale write (the fencing token of a lock
//! service); the writer then catches up, sees the new holder, and is refused with
//! [`Error::Fenced`]. The leader's own renewals change the key too: a write that loses its guard
//! to one of them is planned again on the renewed lease, as any conflict is.
//!
//! Off etcd one server owns the data (a locked data directory), and the guard is not needed.

use std::future::Future;

use kgc_meta::GroupResource;

use crate::object::StoredObject;
use crate::{Error, Result, State};

tokio::task_local! {
    static LEASE: LeaseFence;
}

/// The leader Lease a term's writes are made under: its namespace and name, and the identity
/// that must hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseFence {
    pub namespace: String,
    pub name: String,
    pub holder: String,
}

/// Runs `write` (any calls to the store) with each change it commits guarded by `lease`.
pub async fn fenced<F: Future>(lease: LeaseFence, write: F) -> F::Output {
    LEASE.scope(lease, write).await
}

/// The guard of a change committed now: the lease's key and the revision it must still be at.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub namespace: String,
    pub name: String,
    pub rv: u64,
}

/// Leases' resource.
pub(crate) fn leases() -> GroupResource {
    GroupResource::new("coordination.k8s.io", "leases")
}

/// The guard for a change committed in this task, if it runs under [`fenced`]: refused at once
/// when memory already shows the lease held by another identity (or gone).
pub(crate) fn guard(st: &State) -> Result<Option<Guard>> {
    let Ok(lease) = LEASE.try_with(Clone::clone) else {
        return Ok(None);
    };
    let held = st.get(&leases(), &lease.namespace, &lease.name);
    match held.filter(|l| held_by(l, &lease.holder)) {
        Some(l) => Ok(Some(Guard {
            rv: l.resource_version,
            namespace: lease.namespace,
            name: lease.name,
        })),
        None => Err(Error::Fenced(format!(
            "the lease {}/{} is no longer held by {}",
            lease.namespace, lease.name, lease.holder
        ))),
    }
}

/// Whether the stored Lease names `holder` as its `spec.holderIdentity`. Read from the stored
/// text without building the object: every fenced commit asks.
fn held_by(lease: &StoredObject, holder: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Lease<'a> {
        #[serde(borrow, default)]
        spec: Spec<'a>,
    }
    #[derive(serde::Deserialize, Default)]
    struct Spec<'a> {
        /// A `Cow` itself, not inside an `Option`: serde borrows only a bare `Cow<str>` (an
        /// absent holder reads as "", which names no replica).
        #[serde(borrow, default, rename = "holderIdentity")]
        holder_identity: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Lease<'_>>(&lease.raw).is_ok_and(|l| l.spec.holder_identity == holder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_by_reads_the_lease_holder_from_the_stored_text() {
        let lease = |spec: &str| {
            let raw = format!(
                r#"{{"kind":"Lease","metadata":{{"name":"l","resourceVersion":"7"}}{spec}}}"#
            );
            StoredObject::from_raw(raw.into_boxed_str()).expect("a stored Lease")
        };
        let held = lease(r#","spec":{"leaseDurationSeconds":15,"holderIdentity":"a\u0062"}"#);
        assert!(held_by(&held, "ab"));
        assert!(!held_by(&held, "a"));
        assert!(!held_by(&lease(r#","spec":{}"#), "ab"));
        assert!(!held_by(&lease(""), "ab"));
        assert!(!held_by(&lease(r#","spec":{"holderIdentity":null}"#), "ab"));
    }
}
