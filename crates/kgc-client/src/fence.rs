//! A leader's writes fenced by its own clock.
//!
//! client-go's elector stops leading when it could not renew within its renew deadline
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go`,
//! `renew`), and kube-controller-manager exits then. Both happen only once the elector runs
//! again: a replica paused past its lease (SIGSTOP, a frozen VM, a long stall) wakes with its
//! controllers' queues full and runs them side by side with the elector, so they may write
//! on behalf of a lease another replica took meanwhile. A [`Fence`] closes that gap: the
//! elector moves its end at each renewal and closes it when the term ends, and the term's
//! clients check it right before each write, so a lapsed leader's writes are refused by its
//! own monotonic clock before its elector has even looked at the lease.
//!
//! A write that passed the check before the pause may still go out after it: a fence that
//! names its lease ([`Fence::on_lease`]) lets an in-process client guard each write with the
//! lease in the store itself (`kgc_store::fenced`: on etcd, a precondition on the Lease's key
//! in the write's own transaction), so that one is refused by etcd once another replica holds
//! the lease.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::{Error, Result};

/// Until when a leader may write, and under which lease. See the module documentation.
#[derive(Clone, Debug)]
pub struct Fence(
    Option<Arc<Mutex<Option<Instant>>>>,
    Option<Arc<LeaseHolder>>,
);

/// The lease a term holds: `namespace/name`, held by `identity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseHolder {
    pub namespace: String,
    pub name: String,
    pub identity: String,
}

impl Fence {
    /// A leader's fence, closed until its elector opens it.
    pub fn closed() -> Self {
        Self(Some(Arc::default()), None)
    }

    /// A fence that never closes: a process that does not elect leads alone.
    pub fn open() -> Self {
        Self(None, None)
    }

    /// The same fence, naming the lease its term holds.
    pub fn on_lease(self, lease: LeaseHolder) -> Self {
        Self(self.0, Some(Arc::new(lease)))
    }

    /// The lease the term holds, if the fence names it.
    pub fn lease(&self) -> Option<&LeaseHolder> {
        self.1.as_deref()
    }

    /// Lets writes through until `until`: the start of the renewal that just succeeded plus
    /// the renew deadline, which is shorter than the lease duration, so the end always comes
    /// before another candidate may take the lease.
    pub fn open_until(&self, until: Instant) {
        if let Some(end) = &self.0 {
            *end.lock().unwrap_or_else(PoisonError::into_inner) = Some(until);
        }
    }

    /// Refuses every write from now on (the term ended).
    pub fn close(&self) {
        if let Some(end) = &self.0 {
            *end.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    /// Whether a write may go now.
    pub fn is_open(&self) -> bool {
        self.0.as_ref().is_none_or(|end| {
            end.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some_and(|until| Instant::now() < until)
        })
    }

    /// [`Error::Fenced`] when a write may not go now.
    pub fn check(&self) -> Result<()> {
        if self.is_open() {
            Ok(())
        } else {
            Err(Error::Fenced)
        }
    }

    /// `client`, its requests other than reads (GET, HEAD) failing with [`Error::Fenced`]
    /// while the fence is closed. The check runs in the caller's task, before the request
    /// enters the client.
    pub fn client(&self, client: kube::Client) -> kube::Client {
        if self.0.is_none() {
            return client;
        }
        let namespace = client.default_namespace().to_owned();
        let fence = self.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let (client, fence) = (client.clone(), fence.clone());
            async move {
                let read = matches!(*req.method(), http::Method::GET | http::Method::HEAD);
                if !read {
                    fence.check()?;
                }
                Ok::<_, tower::BoxError>(client.send(req).await?)
            }
        });
        kube::Client::new(service, namespace)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};

    use super::*;

    #[test]
    fn a_fence_is_open_until_its_end_and_shut_once_closed() {
        let fence = Fence::closed();
        assert!(!fence.is_open(), "closed until opened");
        fence.open_until(Instant::now() + Duration::from_secs(60));
        assert!(fence.check().is_ok());
        fence.open_until(Instant::now());
        assert!(matches!(fence.check(), Err(Error::Fenced)), "past its end");
        fence.open_until(Instant::now() + Duration::from_secs(60));
        fence.close();
        assert!(!fence.is_open());
        assert!(Fence::open().is_open());
    }

    /// The fenced client refuses a write without sending it and lets reads through.
    #[tokio::test]
    async fn a_closed_fence_refuses_writes_before_they_are_sent() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&sent);
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            seen.lock().unwrap().push(req.method().clone());
            async {
                let body = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}"#;
                Ok::<_, tower::BoxError>(http::Response::new(kube::client::Body::from(
                    body.as_bytes().to_vec(),
                )))
            }
        });
        let fence = Fence::closed();
        let api: Api<ConfigMap> =
            Api::namespaced(fence.client(kube::Client::new(service, "default")), "ns");
        let write = api
            .create(&PostParams::default(), &ConfigMap::default())
            .await;
        let Err(kube::Error::Service(e)) = write else {
            panic!("a write through a closed fence: {write:?}");
        };
        assert!(
            matches!(e.downcast_ref::<Error>(), Some(Error::Fenced)),
            "{e}"
        );
        api.get("a").await.expect("a read through a closed fence");
        fence.open_until(Instant::now() + Duration::from_secs(60));
        api.create(&PostParams::default(), &ConfigMap::default())
            .await
            .expect("a write through an open fence");
        assert_eq!(
            *sent.lock().unwrap(),
            [http::Method::GET, http::Method::POST]
        );
    }
}
