//! Discovery, once for every consumer: which resources a cluster serves, and a stream that
//! keeps that current. The owner-reference garbage collector's monitors, the lifecycle
//! collectors and `kgc apply`/`prune` all read it.
//!
//! Upstream's garbage collector re-runs discovery every 30 s (`GarbageCollector.Sync`,
//! `kubernetes/kubernetes pkg/controller/garbagecollector/garbagecollector.go`), so a new CRD's
//! objects go uncollected and a deleted CRD's kind is watched in vain for up to that long. Here
//! the cluster also says when its resources may have changed ([`Cluster::resource_changes`]):
//! the in-process cluster from the store's catalog, which a CRD's commit edits; a remote one
//! from watches of CustomResourceDefinitions and APIServices, the objects that make an API
//! server serve or stop serving resources. The periodic re-run stays as the safety net.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::backoff::Backoff;
use futures::FutureExt;
use futures::stream::{self, BoxStream, StreamExt};
use kgc_meta::{Catalog, GcPolicy, GroupResource, ResourceInfo, Scope};
use kube::api::ApiResource;
use kube::discovery::{Discovery, Scope as KubeScope};

use crate::{Cluster, ObjectEvent, Result};

/// The served resources, each with every version it is served at, preferred first.
pub type Resources = Vec<Arc<ResourceInfo>>;

/// The resources whose objects decide what an API server serves: a change to one of them is a
/// reason to run discovery again.
const DEFINITIONS: [(&str, &str); 2] = [
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
];

/// The served resources, kept current: the first snapshot as soon as discovery succeeds, then
/// a new one each time it differs from the last, checked whenever the cluster says its
/// resources changed and at least every `resync`. A failed discovery is yielded as an error
/// and retried with back-off. The stream never ends.
pub fn served<C: Cluster>(cluster: C, resync: Duration) -> BoxStream<'static, Result<Resources>> {
    struct State<C> {
        cluster: C,
        resync: Duration,
        /// Opened after the first discovery, from what it found.
        changes: Option<BoxStream<'static, ()>>,
        last: Option<Resources>,
        backoff: Backoff,
        /// How long to wait before the next discovery (`None`: run it now).
        wait: Option<Duration>,
    }
    let state = State {
        cluster,
        resync,
        changes: None,
        last: None,
        backoff: Backoff::reflector(),
        wait: None,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(wait) = st.wait.take() {
                match st.changes.as_mut() {
                    Some(changes) => {
                        tokio::select! {
                            _ = changes.next() => {
                                // A burst of changes (a CRD and its status) is one discovery.
                                while let Some(Some(())) = changes.next().now_or_never() {}
                            }
                            () = tokio::time::sleep(wait) => {}
                        }
                    }
                    None => tokio::time::sleep(wait).await,
                }
            }
            match st.cluster.resources().await {
                Ok(resources) => {
                    st.wait = Some(st.resync);
                    if st.changes.is_none() {
                        // A stream of changes that ends (the store closed) leaves the resync.
                        let changes = st.cluster.resource_changes(&resources);
                        st.changes = Some(changes.chain(stream::pending()).boxed());
                    }
                    if st.last.as_ref() == Some(&resources) {
                        continue;
                    }
                    st.last = Some(resources.clone());
                    return Some((Ok(resources), st));
                }
                Err(e) => {
                    st.wait = Some(st.backoff.next_delay());
                    return Some((Err(e), st));
                }
            }
        }
    })
    .boxed()
}

/// The default [`Cluster::resource_changes`]: one wake-up per change to a CustomResourceDefinition
/// or an APIService among `served`, and per list of them, the first included: a definition
/// changed between the discovery that found `served` and that list is seen in it, not by the
/// watch. The watches are the cluster's own, so a remote cluster paces and logs their failures.
pub(crate) fn definition_changes<C: Cluster>(
    cluster: &C,
    served: &[Arc<ResourceInfo>],
) -> BoxStream<'static, ()> {
    let watches = served
        .iter()
        .filter(|r| {
            DEFINITIONS
                .iter()
                .any(|(g, p)| r.group_resource() == GroupResource::new(*g, *p))
        })
        .map(|r| {
            cluster
                .watch(Arc::clone(r))
                .filter_map(|event| {
                    futures::future::ready(match event {
                        // Once per list, not per listed object.
                        Ok(
                            ObjectEvent::InitDone | ObjectEvent::Apply(_) | ObjectEvent::Delete(_),
                        ) => Some(()),
                        Ok(_) | Err(_) => None,
                    })
                })
                .boxed()
        });
    stream::select_all(watches).boxed()
}

/// Facts discovery does not carry (singular, list kind, GC policy, naming rule) come from the
/// built-in catalog when kgc knows the resource, defaults otherwise.
fn builtin() -> &'static Catalog {
    static BUILTIN: OnceLock<Catalog> = OnceLock::new();
    BUILTIN.get_or_init(Catalog::builtin)
}

fn resource_info(
    ar: &ApiResource,
    caps: &kube::discovery::ApiCapabilities,
    version: &str,
) -> ResourceInfo {
    let known = builtin().get_group_resource(&GroupResource::new(&ar.group, &ar.plural));
    let subresources = caps
        .subresources
        .iter()
        .map(|(sar, scaps)| kgc_meta::catalog::Subresource {
            name: sar.plural.rsplit('/').next().unwrap_or_default().to_owned(),
            group: sar.group.clone(),
            version: sar.version.clone(),
            kind: sar.kind.clone(),
            verbs: scaps.operations.clone(),
        })
        .collect();
    let scope = match caps.scope {
        KubeScope::Cluster => Scope::Cluster,
        KubeScope::Namespaced => Scope::Namespaced,
    };
    let mut info = match known {
        Some(k) => ResourceInfo::clone(k),
        None => ResourceInfo {
            group: ar.group.clone(),
            versions: Vec::new(),
            kind: ar.kind.clone(),
            list_kind: format!("{}List", ar.kind),
            plural: ar.plural.clone(),
            singular: ar.kind.to_lowercase(),
            scope,
            short_names: Vec::new(),
            categories: Vec::new(),
            verbs: Vec::new(),
            subresources: Vec::new(),
            gc_policy: GcPolicy::Background,
            name_rule: kgc_meta::validation::NameRule::Dns1123Subdomain,
            graceful: false,
            return_deleted_object: false,
            field_selectors: Vec::new(),
            custom: false,
            printer_columns: Vec::new(),
            tracks_generation: false,
            crd: None,
        },
    };
    info.versions = vec![version.to_owned()];
    info.kind = ar.kind.clone();
    info.scope = scope;
    info.verbs = caps.operations.clone();
    info.subresources = subresources;
    info
}

/// Runs discovery (aggregated, falling back to the legacy per-group documents) and returns one
/// [`ResourceInfo`] per resource with every version it is served at, the group's preferred
/// version first (then by Kubernetes version priority).
pub(crate) async fn remote(
    client: &kube::Client,
    legacy: &AtomicBool,
) -> Result<Vec<Arc<ResourceInfo>>> {
    let aggregated = if legacy.load(Ordering::Relaxed) {
        None
    } else {
        match Discovery::new(client.clone()).run_aggregated().await {
            Ok(d) => Some(d),
            Err(e) => {
                // A server without aggregated discovery answers with the legacy documents (which
                // do not parse as aggregated ones) or an error status; a transport failure says
                // nothing about the server's abilities.
                if matches!(e, kube::Error::Api(_) | kube::Error::SerdeError(_)) {
                    legacy.store(true, Ordering::Relaxed);
                }
                tracing::debug!(error = %e, "aggregated discovery failed; using legacy discovery");
                None
            }
        }
    };
    let discovery = match aggregated {
        Some(d) => d,
        None => Discovery::new(client.clone())
            .run()
            .await
            .map_err(crate::remote::from_kube)?,
    };
    let mut out = Vec::new();
    for group in discovery.groups() {
        let preferred = group.preferred_version_or_latest().to_owned();
        let mut versions = vec![preferred.clone()];
        versions.extend(
            group
                .versions()
                .filter(|v| *v != preferred)
                .map(str::to_owned),
        );
        // plural → info, in first-seen order.
        let mut infos: BTreeMap<String, (usize, ResourceInfo)> = BTreeMap::new();
        for version in &versions {
            for (ar, caps) in group.versioned_resources(version) {
                if ar.plural.contains('/') {
                    continue;
                }
                let next = infos.len();
                infos
                    .entry(ar.plural.clone())
                    .and_modify(|(_, info)| {
                        if !info.versions.contains(version) {
                            info.versions.push(version.clone());
                        }
                    })
                    .or_insert_with(|| (next, resource_info(&ar, &caps, version)));
            }
        }
        let mut infos: Vec<(usize, ResourceInfo)> = infos.into_values().collect();
        infos.sort_by_key(|(i, _)| *i);
        out.extend(infos.into_iter().map(|(_, info)| Arc::new(info)));
    }
    Ok(out)
}
