//! Storage: persistent volumes, their claims and storage classes: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use jiff::Timestamp;
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;

pub(super) const PERSISTENT_VOLUME_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity.",
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted.",
    ),
    col(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
    ),
    col(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim.",
    ),
    col(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
    ),
    col("StorageClass", "string", "StorageClass of the pv"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    col(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
    ),
];

pub(super) const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Status",
        "string",
        "phase represents the current phase of PersistentVolumeClaim.",
    ),
    col(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    col(
        "Capacity",
        "string",
        "capacity represents the actual resources of the underlying volume.",
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has.",
    ),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim.",
    ),
];

pub(super) const STORAGE_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Provisioner",
        "string",
        "provisioner indicates the type of the provisioner.",
    ),
    col(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
    ),
    col(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
    ),
    AGE,
];

/// `helper.GetAccessModesAsString`.
fn access_modes(modes: &Value) -> String {
    let modes: Vec<&str> = arr(modes).iter().map(st).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The storage class of a PV or PVC: the beta annotation wins over `spec.storageClassName`.
fn storage_class(obj: &Value) -> String {
    let annotation = &obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"];
    match annotation.as_str() {
        Some(class) => class.to_owned(),
        None => st(&obj["spec"]["storageClassName"]).to_owned(),
    }
}

pub(super) fn persistent_volume_cells(pv: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pv["spec"];
    let claim = &spec["claimRef"];
    let claim = if claim.is_object() {
        format!("{}/{}", st(&claim["namespace"]), st(&claim["name"]))
    } else {
        String::new()
    };
    let phase = if deleting(pv) {
        "Terminating"
    } else {
        st_or(&pv["status"]["phase"], "Pending")
    };
    vec![
        name(pv),
        quantity(&spec["capacity"]["storage"]).into(),
        access_modes(&spec["accessModes"]).into(),
        st_or(&spec["persistentVolumeReclaimPolicy"], "Retain").into(),
        phase.into(),
        claim.into(),
        storage_class(pv).into(),
        st_or(&spec["volumeAttributesClassName"], "<unset>").into(),
        st(&pv["status"]["reason"]).into(),
        age(pv, now),
        st_or(&spec["volumeMode"], "Filesystem").into(),
    ]
}

pub(super) fn persistent_volume_claim_cells(pvc: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pvc["spec"];
    let status = &pvc["status"];
    let phase = if deleting(pvc) {
        "Terminating"
    } else {
        st_or(&status["phase"], "Pending")
    };
    let volume = st(&spec["volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(&status["capacity"]["storage"]),
            access_modes(&status["accessModes"]),
        )
    };
    vec![
        name(pvc),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        storage_class(pvc).into(),
        st_or(&spec["volumeAttributesClassName"], "<unset>").into(),
        age(pvc, now),
        st_or(&spec["volumeMode"], "Filesystem").into(),
    ]
}

/// `printStorageClass`.
pub(super) fn storage_class_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let annotations = &o["metadata"]["annotations"];
    let is_default = st(&annotations["storageclass.kubernetes.io/is-default-class"]) == "true"
        || st(&annotations["storageclass.beta.kubernetes.io/is-default-class"]) == "true";
    let mut n = st(&o["metadata"]["name"]).to_owned();
    if is_default {
        n.push_str(" (default)");
    }
    vec![
        n.into(),
        st(&o["provisioner"]).into(),
        st_or(&o["reclaimPolicy"], "Delete").into(),
        st_or(&o["volumeBindingMode"], "Immediate").into(),
        o["allowVolumeExpansion"].as_bool().unwrap_or(false).into(),
        age(o, now),
    ]
}
