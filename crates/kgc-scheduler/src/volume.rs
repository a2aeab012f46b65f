//! Volumes (kubernetes/kubernetes pkg/scheduler/framework/plugins/volumebinding): a pod's claims
//! must exist and not be going; a bound claim's PersistentVolume may restrict the nodes; an
//! unbound claim of a `WaitForFirstConsumer` class is provisioned for the chosen node, which
//! the scheduler names in the claim's `volume.kubernetes.io/selected-node` annotation before
//! binding the pod once the claim is bound (`PreBind`, `BindPodVolumes`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kgc_runtime::informer::{Cache, View};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::selector::{Term, parse_terms};
use crate::{Error, FIELD_MANAGER};

/// The annotation naming the node a claim is to be provisioned for.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// How long a binding waits for its claims to be bound (`bindTimeoutSeconds`, 600).
const BIND_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub volume_name: String,
    pub deleting: bool,
    pub class: String,
    pub selected_node: String,
}

impl View for Claim {
    fn view(obj: &Value) -> Option<Self> {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Some(Claim {
            volume_name: s(&obj["spec"]["volumeName"]),
            deleting: !obj["metadata"]["deletionTimestamp"].is_null(),
            class: s(&obj["spec"]["storageClassName"]),
            selected_node: s(&obj["metadata"]["annotations"][SELECTED_NODE]),
        })
    }
}

/// A PersistentVolume's required node affinity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub node_terms: Option<Vec<Term>>,
}

impl View for Volume {
    fn view(obj: &Value) -> Option<Self> {
        let required = &obj["spec"]["nodeAffinity"]["required"];
        Some(Volume {
            node_terms: required
                .is_object()
                .then(|| parse_terms(&required["nodeSelectorTerms"])),
        })
    }
}

/// A StorageClass's binding mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub wait_for_first_consumer: bool,
}

impl View for Class {
    fn view(obj: &Value) -> Option<Self> {
        Some(Class {
            wait_for_first_consumer: obj["volumeBindingMode"] == "WaitForFirstConsumer",
        })
    }
}

/// The claims, volumes and classes, and a signal of any claim's change.
#[derive(Clone)]
pub struct Volumes {
    pub claims: Cache<Claim>,
    pub volumes: Cache<Volume>,
    pub classes: Cache<Class>,
    pub claim_changed: Arc<Notify>,
}

/// What the pod's claims ask of scheduling.
#[derive(Debug, Default, PartialEq)]
pub struct Prepared {
    /// The node affinities of the volumes its bound claims hold.
    pub node_terms: Vec<Vec<Term>>,
    /// Unbound claims to provision on the chosen node.
    pub to_provision: Vec<String>,
}

impl Volumes {
    /// `PreFilter`: the claims exist, are not being deleted, and are bound or wait for their
    /// first consumer; otherwise upstream's message, which stands for every node.
    pub fn prepare(&self, namespace: &str, claims: &[String]) -> Result<Prepared, String> {
        let mut out = Prepared::default();
        for name in claims {
            let key = (namespace.to_owned(), name.clone());
            let Some(claim) = self.claims.get(&key) else {
                return Err(format!("persistentvolumeclaim {name:?} not found"));
            };
            if claim.deleting {
                return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
            }
            if !claim.volume_name.is_empty() {
                let pv = self
                    .volumes
                    .get(&(String::new(), claim.volume_name.clone()));
                if let Some(terms) = pv.and_then(|v| v.node_terms) {
                    out.node_terms.push(terms);
                }
                continue;
            }
            let delayed = !claim.class.is_empty()
                && match self.classes.get(&(String::new(), claim.class.clone())) {
                    Some(c) => c.wait_for_first_consumer,
                    None => {
                        return Err(format!(
                            "storageclass.storage.k8s.io {:?} not found",
                            claim.class
                        ));
                    }
                };
            if !delayed {
                return Err("pod has unbound immediate PersistentVolumeClaims".to_owned());
            }
            out.to_provision.push(name.clone());
        }
        Ok(out)
    }

    /// `PreBind`: names `node` in each claim to provision, then waits until every one is bound.
    pub async fn bind(
        &self,
        client: &kube::Client,
        namespace: &str,
        claims: &[String],
        node: &str,
    ) -> Result<(), Error> {
        let api = kube::Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        for name in claims {
            let key = (namespace.to_owned(), name.clone());
            if self
                .claims
                .get(&key)
                .is_some_and(|c| c.selected_node == node)
            {
                continue;
            }
            let patch = json!({"metadata": {"annotations": {SELECTED_NODE: node}}});
            api.patch(name, &params, &Patch::Merge(&patch)).await?;
        }
        let deadline = tokio::time::Instant::now() + BIND_TIMEOUT;
        loop {
            let changed = self.claim_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let bound = claims.iter().all(|name| {
                self.claims
                    .get(&(namespace.to_owned(), name.clone()))
                    .is_some_and(|c| !c.volume_name.is_empty())
            });
            if bound {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(Error::VolumeBindingTimeout);
            }
        }
    }
}
