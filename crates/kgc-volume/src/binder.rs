//! The PersistentVolume controller's binding (kubernetes `pkg/controller/volume/
//! persistentvolume/pv_controller.go`: `syncClaim` → `syncUnboundClaim` / `syncBoundClaim`,
//! `syncVolume`, `bind`, `provisionClaim` for an external provisioner).
//!
//! A claim without a volume takes the best pre-created one (see [`crate::matching`]); with none
//! and a class, it is handed to the class's provisioner by the `storage-provisioner`
//! annotations — at once, or for a `WaitForFirstConsumer` class once the scheduler has written
//! `volume.kubernetes.io/selected-node` — and bound when the provisioned volume appears. Binding
//! writes what upstream writes, in its order: the volume's `claimRef` (with
//! `bound-by-controller` when the controller chose it), its phase Bound, the claim's
//! `volumeName` and `bind-completed`, then the claim's phase Bound with the volume's capacity and
//! access modes.
//!
//! One worker, as upstream: two syncs at once could bind one volume to two claims (the
//! resourceVersion preconditions would catch it, at the cost of retries). A volume whose claim
//! is gone is the `pv` collector's to release and reclaim (kgc-lifecycle `volume`), so this
//! controller never writes `Released`.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, View, describe};
use kgc_runtime::queue::WorkQueue;
use kgc_runtime::{Context, Controller};
use kube::api::{Api, PostParams};

use crate::matching::{self, claim_class};
use crate::{Error, Result, annotation, annotations, class};
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::Typed;

/// The name `--controllers` knows it by.
pub const NAME: &str = "persistentvolume-binder";
/// Upstream's event source.
const COMPONENT: &str = "persistentvolume-controller";
const MANAGER: &str = "kgc-persistentvolume-binder";
/// Upstream's `--pvclaimbinder-sync-period` default: every claim and volume is looked at again
/// this often (a claim waiting for a volume that appears later).
const RESYNC: Duration = Duration::from_secs(15);

pub(crate) type Claim = Typed<PersistentVolumeClaim>;
pub(crate) type Volume = Typed<PersistentVolume>;
pub(crate) type Class = Typed<StorageClass>;

/// What the queue holds: a claim or a volume.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Item {
    Claim(Key),
    Volume(String),
    /// Every claim still waiting for a volume: a class changed (a default appeared).
    Waiting,
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Claim(k) => write!(f, "claim {}", describe(k)),
            Item::Volume(n) => write!(f, "volume {n}"),
            Item::Waiting => f.write_str("waiting claims"),
        }
    }
}

struct Binder<C> {
    ctx: Context<C>,
    claims: Cache<Claim>,
    volumes: Cache<Volume>,
    classes: Cache<Class>,
    nodes: Cache<NodeLabels>,
    queue: WorkQueue<Item>,
    /// The claims (uid) told an informational event (reason), so that a claim waiting is told
    /// once, not at every sync (upstream's event correlator counts the repeats instead).
    told: Mutex<HashSet<(String, &'static str)>>,
}

/// Runs the binder until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let pvcs = ctx.informers.resource("", "persistentvolumeclaims").await;
    let pvs = ctx.informers.resource("", "persistentvolumes").await;
    let scs = ctx
        .informers
        .resource("storage.k8s.io", "storageclasses")
        .await;
    let claims = ctx.informers.cache::<Claim>(pvcs);
    let volumes = ctx.informers.cache::<Volume>(pvs);
    let classes = ctx.informers.cache::<Class>(scs);
    let nodes = ctx
        .informers
        .cache::<NodeLabels>(ctx.informers.resource("", "nodes").await);
    let declared = Controller::named(&ctx, NAME)
        .watches(&claims, |key: &Key, c: Option<&Claim>| {
            c.map(|_| Item::Claim(key.clone()))
        })
        .watches(&volumes, |key: &Key, v: Option<&Volume>| {
            v.map(|_| Item::Volume(key.1.clone()))
        })
        .watches(&classes, |_: &Key, _: Option<&Class>| Some(Item::Waiting));
    let binder = Arc::new(Binder {
        ctx,
        claims,
        volumes,
        classes,
        nodes,
        queue: declared.queue().clone(),
        told: Mutex::default(),
    });
    let resync = {
        let b = Arc::clone(&binder);
        async move {
            loop {
                tokio::time::sleep(RESYNC).await;
                b.resync();
            }
        }
    };
    declared
        .beside(resync)
        .run_with(1, binder, |b, item: Item| async move {
            b.sync(&item).await.map(|()| None)
        })
        .await;
}

fn pp() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn set_annotation(
    meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
    value: &str,
) {
    meta.annotations
        .get_or_insert_default()
        .insert(key.to_owned(), value.to_owned());
}

impl<C: Cluster> Binder<C> {
    fn resync(&self) {
        let uids: HashSet<String> = self.claims.read(|m| {
            m.values()
                .filter_map(|c| c.0.metadata.uid.clone())
                .collect()
        });
        self.told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(uid, _)| uids.contains(uid));
        for k in self.claims.read(|m| m.keys().cloned().collect::<Vec<_>>()) {
            self.queue.add(Item::Claim(k));
        }
        for k in self.volumes.read(|m| m.keys().cloned().collect::<Vec<_>>()) {
            self.queue.add(Item::Volume(k.1));
        }
    }

    /// Queues every claim still waiting for a volume: a volume became Available.
    fn requeue_unbound_claims(&self) {
        let waiting: Vec<Key> = self.claims.read(|m| {
            m.iter()
                .filter(|(_, c)| annotation(&c.0.metadata, annotations::BIND_COMPLETED).is_none())
                .map(|(k, _)| k.clone())
                .collect()
        });
        for k in waiting {
            self.queue.add(Item::Claim(k));
        }
    }

    async fn sync(&self, item: &Item) -> Result<()> {
        match item {
            Item::Claim(key) => match self.claims.get(key) {
                Some(Typed(claim))
                    if annotation(&claim.metadata, annotations::BIND_COMPLETED).is_some() =>
                {
                    self.sync_bound_claim(claim).await
                }
                Some(Typed(claim)) => self.sync_unbound_claim(claim).await,
                None => Ok(()),
            },
            Item::Volume(name) => match self.volumes.get(&(String::new(), name.clone())) {
                Some(Typed(pv)) => self.sync_volume(pv).await,
                None => Ok(()),
            },
            Item::Waiting => {
                self.requeue_unbound_claims();
                Ok(())
            }
        }
    }

    fn claims_api(&self, claim: &PersistentVolumeClaim) -> Api<PersistentVolumeClaim> {
        Api::namespaced(
            self.ctx.client.clone(),
            claim.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }

    fn volumes_api(&self) -> Api<PersistentVolume> {
        Api::all(self.ctx.client.clone())
    }

    /// Whether the claim is yet to be told `reason` (and now counts as told).
    fn first_time(&self, claim: &PersistentVolumeClaim, reason: &'static str) -> bool {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        self.told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((uid, reason))
    }

    async fn event(&self, claim: &PersistentVolumeClaim, warning: bool, reason: &str, msg: &str) {
        let recorder = Recorder::new(self.ctx.client.clone(), COMPONENT, self.ctx.clock);
        if warning {
            recorder.warning(reference(claim), reason, msg.to_owned());
        } else {
            recorder.normal(reference(claim), reason, msg.to_owned());
        }
    }

    /// `syncUnboundClaim`.
    async fn sync_unbound_claim(&self, claim: PersistentVolumeClaim) -> Result<()> {
        let volume_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        if volume_name.is_empty() {
            return self.sync_claim_without_volume(claim).await;
        }
        // The user asked for a volume by name.
        let Some(Typed(pv)) = self.volumes.get(&(String::new(), volume_name.clone())) else {
            return self.update_claim_phase(claim, "Pending", None).await;
        };
        let claimed = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_some();
        if !claimed {
            if let Err(why) = matching::check_volume_satisfies_claim(&pv, &claim) {
                let msg = format!("Cannot bind to requested volume {volume_name:?}: {why}");
                self.event(&claim, true, "VolumeMismatch", &msg).await;
                return self.update_claim_phase(claim, "Pending", None).await;
            }
            return self.bind(pv, claim).await;
        }
        if matching::is_bound_to_claim(&pv, &claim) {
            return self.bind(pv, claim).await;
        }
        let msg = format!("volume {volume_name:?} already bound to a different claim.");
        self.event(&claim, true, "FailedBinding", &msg).await;
        if annotation(&claim.metadata, annotations::BOUND_BY_CONTROLLER).is_some() {
            return Err(Error::Invalid(format!(
                "invalid binding of claim {:?} to volume {volume_name:?}: volume already claimed by another claim",
                name_of(&claim.metadata)
            )));
        }
        self.update_claim_phase(claim, "Pending", None).await
    }

    /// `syncUnboundClaim` for a claim that names no volume.
    async fn sync_claim_without_volume(&self, claim: PersistentVolumeClaim) -> Result<()> {
        let class_name = claim_class(&claim).to_owned();
        let class = match class_name.as_str() {
            "" => None,
            name => class::get(&self.classes, &self.ctx.client, name).await?,
        };
        let delay = class.as_ref().is_some_and(class::waits_for_first_consumer);
        let selected = selected_node(&claim);
        // kgc's scheduler only chooses the node; the volume it would bind upstream is bound
        // here, reachable from that node, before anything is provisioned.
        let labels = match (delay, selected) {
            (true, Some(n)) => self.nodes.get(&(String::new(), n.to_owned())).map(|l| l.0),
            _ => None,
        };
        let node = selected
            .zip(labels.as_ref())
            .map(|(name, labels)| matching::Node { name, labels });
        let found = self.volumes.read(|m| {
            let all: Vec<&PersistentVolume> = m.values().map(|v| &v.0).collect();
            matching::find_best_match(&claim, &all, delay, node).map(|v| v.cloned())
        });
        let found = match found {
            Ok(v) => v,
            Err(why) => {
                let msg = format!("error finding PV for claim: {why}");
                self.event(&claim, true, "FailedBinding", &msg).await;
                return self.update_claim_phase(claim, "Pending", None).await;
            }
        };
        if let Some(pv) = found {
            return self.bind(pv, claim).await;
        }
        if let Some(claim) = self.assign_default_class(&claim).await? {
            tracing::info!(controller = NAME, claim = %describe(&key_of_claim(&claim)), class = claim_class(&claim), "assigned the default StorageClass");
            return Ok(());
        }
        let claim = if delay && selected.is_none() {
            if self.first_time(&claim, "WaitForFirstConsumer") {
                self.event(
                    &claim,
                    false,
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                )
                .await;
            }
            claim
        } else if !class_name.is_empty() {
            self.provision_claim(claim, &class_name, class.as_ref())
                .await?
        } else {
            if self.first_time(&claim, "FailedBinding") {
                self.event(
                    &claim,
                    false,
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                )
                .await;
            }
            claim
        };
        self.update_claim_phase(claim, "Pending", None).await
    }

    /// `assignDefaultStorageClass` (retroactive default class): a claim created with no class
    /// (`storageClassName` unset, not `""`) before there was a default gets the default now;
    /// the update brings it back to a sync. `None`: nothing assigned.
    async fn assign_default_class(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<Option<PersistentVolumeClaim>> {
        let unset = claim
            .spec
            .as_ref()
            .is_none_or(|s| s.storage_class_name.is_none())
            && claim_class(claim).is_empty();
        if !unset {
            return Ok(None);
        }
        let default = self.classes.read(|m| {
            class::default_class(m.values().map(|c| &c.0)).and_then(|c| c.metadata.name.clone())
        });
        let Some(default) = default else {
            return Ok(None);
        };
        let mut claim = claim.clone();
        claim.spec.get_or_insert_default().storage_class_name = Some(default);
        let claim = self
            .claims_api(&claim)
            .replace(name_of(&claim.metadata), &pp(), &claim)
            .await?;
        Ok(Some(claim))
    }

    /// `provisionClaim` → `provisionClaimOperationExternal`: hands the claim to its class's
    /// provisioner with the `storage-provisioner` annotations.
    async fn provision_claim(
        &self,
        mut claim: PersistentVolumeClaim,
        class_name: &str,
        class: Option<&StorageClass>,
    ) -> Result<PersistentVolumeClaim> {
        let Some(class) = class else {
            if self.first_time(&claim, "ProvisioningFailed") {
                let msg = format!("storageclass.storage.k8s.io {class_name:?} not found");
                self.event(&claim, true, "ProvisioningFailed", &msg).await;
            }
            return Ok(claim);
        };
        let provisioner = class.provisioner.as_str();
        if annotation(&claim.metadata, annotations::STORAGE_PROVISIONER) == Some(provisioner)
            && annotation(&claim.metadata, annotations::BETA_STORAGE_PROVISIONER)
                == Some(provisioner)
        {
            return Ok(claim);
        }
        set_annotation(
            &mut claim.metadata,
            annotations::STORAGE_PROVISIONER,
            provisioner,
        );
        set_annotation(
            &mut claim.metadata,
            annotations::BETA_STORAGE_PROVISIONER,
            provisioner,
        );
        let claim = self
            .claims_api(&claim)
            .replace(name_of(&claim.metadata), &pp(), &claim)
            .await?;
        let msg = format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
        );
        self.event(&claim, false, "ExternalProvisioning", &msg)
            .await;
        Ok(claim)
    }

    /// `syncBoundClaim`.
    async fn sync_bound_claim(&self, claim: PersistentVolumeClaim) -> Result<()> {
        let volume_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        if volume_name.is_empty() {
            return self
                .lose_claim(claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
                .await;
        }
        let Some(Typed(pv)) = self.volumes.get(&(String::new(), volume_name)) else {
            return self
                .lose_claim(
                    claim,
                    "ClaimLost",
                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                )
                .await;
        };
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        match claim_ref {
            None => self.bind(pv, claim).await,
            Some(r) if r.uid == claim.metadata.uid => self.bind(pv, claim).await,
            Some(_) => {
                self.lose_claim(
                    claim,
                    "ClaimMisbound",
                    "Two claims are bound to the same volume, this one is bound incorrectly",
                )
                .await
            }
        }
    }

    /// `updateClaimStatusWithEvent` to Lost.
    async fn lose_claim(
        &self,
        claim: PersistentVolumeClaim,
        reason: &str,
        msg: &str,
    ) -> Result<()> {
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Ok(());
        }
        self.event(&claim, true, reason, msg).await;
        self.update_claim_phase(claim, "Lost", None).await
    }

    /// `syncVolume`, without the release (the `pv` collector's).
    async fn sync_volume(&self, pv: PersistentVolume) -> Result<()> {
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.clone());
        let Some(r) = claim_ref.filter(|r| r.uid.as_deref().is_some_and(|u| !u.is_empty())) else {
            // Unused, or reserved for a claim whose sync will bind it.
            let was = pv.status.as_ref().and_then(|s| s.phase.clone());
            self.update_volume_phase(pv, "Available").await?;
            if was.as_deref() != Some("Available") {
                self.requeue_unbound_claims();
            }
            return Ok(());
        };
        let key = (
            r.namespace.clone().unwrap_or_default(),
            r.name.clone().unwrap_or_default(),
        );
        let claim = self
            .claims
            .get(&key)
            .map(|c| c.0)
            .filter(|c| c.metadata.uid == r.uid);
        let Some(claim) = claim else {
            // The claim is gone: the `pv` collector releases and reclaims the volume.
            return Ok(());
        };
        let claim_volume = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .unwrap_or_default();
        if claim_volume.is_empty() {
            // Provisioned (or chosen) for the claim, which is not bound yet: its sync binds it.
            self.queue.add(Item::Claim(key));
            Ok(())
        } else if claim_volume == name_of(&pv.metadata) {
            self.update_volume_phase(pv, "Bound").await.map(drop)
        } else {
            // Bound elsewhere: released, the `pv` collector's.
            Ok(())
        }
    }

    /// `bind`: the volume first, then the claim, each spec then status.
    async fn bind(&self, pv: PersistentVolume, claim: PersistentVolumeClaim) -> Result<()> {
        let pv = self.bind_volume_to_claim(pv, &claim).await?;
        let pv = self.update_volume_phase(pv, "Bound").await?;
        let claim = self.bind_claim_to_volume(claim, &pv).await?;
        self.update_claim_phase(claim, "Bound", Some(&pv)).await?;
        tracing::info!(controller = NAME, claim = %format!("{}/{}", claim_namespace(&pv), name_of_claim(&pv)), volume = name_of(&pv.metadata), "bound");
        Ok(())
    }

    /// `bindVolumeToClaim` (`GetBindVolumeToClaim`).
    async fn bind_volume_to_claim(
        &self,
        mut pv: PersistentVolume,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolume> {
        let chosen_by_us = !matching::is_bound_to_claim(&pv, claim);
        let spec = pv.spec.get_or_insert_default();
        let current = spec.claim_ref.as_ref();
        let mut dirty = false;
        if current.is_none_or(|r| {
            r.name != claim.metadata.name
                || r.namespace != claim.metadata.namespace
                || r.uid != claim.metadata.uid
        }) {
            spec.claim_ref = Some(reference(claim));
            dirty = true;
        }
        if chosen_by_us && annotation(&pv.metadata, annotations::BOUND_BY_CONTROLLER).is_none() {
            set_annotation(&mut pv.metadata, annotations::BOUND_BY_CONTROLLER, "yes");
            dirty = true;
        }
        if !dirty {
            return Ok(pv);
        }
        Ok(self
            .volumes_api()
            .replace(name_of(&pv.metadata), &pp(), &pv)
            .await?)
    }

    /// `bindClaimToVolume`.
    async fn bind_claim_to_volume(
        &self,
        mut claim: PersistentVolumeClaim,
        pv: &PersistentVolume,
    ) -> Result<PersistentVolumeClaim> {
        let mut dirty = false;
        let spec = claim.spec.get_or_insert_default();
        if spec.volume_name.as_deref() != pv.metadata.name.as_deref() {
            spec.volume_name = pv.metadata.name.clone();
            if annotation(&claim.metadata, annotations::BOUND_BY_CONTROLLER).is_none() {
                set_annotation(&mut claim.metadata, annotations::BOUND_BY_CONTROLLER, "yes");
            }
            dirty = true;
        }
        if annotation(&claim.metadata, annotations::BIND_COMPLETED).is_none() {
            set_annotation(&mut claim.metadata, annotations::BIND_COMPLETED, "yes");
            dirty = true;
        }
        if !dirty {
            return Ok(claim);
        }
        Ok(self
            .claims_api(&claim)
            .replace(name_of(&claim.metadata), &pp(), &claim)
            .await?)
    }

    /// `updateVolumePhase`.
    async fn update_volume_phase(
        &self,
        mut pv: PersistentVolume,
        phase: &str,
    ) -> Result<PersistentVolume> {
        let status = pv.status.get_or_insert_default();
        if status.phase.as_deref() == Some(phase) {
            return Ok(pv);
        }
        status.phase = Some(phase.to_owned());
        status.message = None;
        let pv = self
            .volumes_api()
            .replace_status(name_of(&pv.metadata), &pp(), &pv)
            .await?;
        tracing::debug!(
            controller = NAME,
            volume = name_of(&pv.metadata),
            phase,
            "volume entered phase"
        );
        Ok(pv)
    }

    /// `updateClaimStatus`: the phase, and the volume's access modes and capacity (cleared
    /// without a volume).
    async fn update_claim_phase(
        &self,
        mut claim: PersistentVolumeClaim,
        phase: &str,
        pv: Option<&PersistentVolume>,
    ) -> Result<()> {
        let status = claim.status.get_or_insert_default();
        let (modes, capacity) = match pv.and_then(|p| p.spec.as_ref()) {
            Some(s) => (s.access_modes.clone(), s.capacity.clone()),
            None => (None, None),
        };
        if status.phase.as_deref() == Some(phase)
            && status.access_modes == modes
            && status.capacity == capacity
        {
            return Ok(());
        }
        status.phase = Some(phase.to_owned());
        status.access_modes = modes;
        status.capacity = capacity;
        self.claims_api(&claim)
            .replace_status(name_of(&claim.metadata), &pp(), &claim)
            .await?;
        Ok(())
    }
}

/// The scheduler's choice for the claim's first consumer; an empty value is none.
pub(crate) fn selected_node(claim: &PersistentVolumeClaim) -> Option<&str> {
    annotation(&claim.metadata, annotations::SELECTED_NODE).filter(|n| !n.is_empty())
}

/// What the binder keeps of a Node: its labels, which volumes' node affinity selects on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeLabels(BTreeMap<String, String>);

impl View for NodeLabels {
    fn view(obj: &serde_json::Value) -> Option<Self> {
        let labels = obj["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(NodeLabels(labels))
    }
}

fn key_of_claim(claim: &PersistentVolumeClaim) -> Key {
    (
        claim.metadata.namespace.clone().unwrap_or_default(),
        claim.metadata.name.clone().unwrap_or_default(),
    )
}

fn claim_namespace(pv: &PersistentVolume) -> &str {
    pv.spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .and_then(|r| r.namespace.as_deref())
        .unwrap_or_default()
}

fn name_of_claim(pv: &PersistentVolume) -> &str {
    pv.spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .and_then(|r| r.name.as_deref())
        .unwrap_or_default()
}
