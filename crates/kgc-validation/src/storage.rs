//! PersistentVolume, PersistentVolumeClaim (core/v1) and StorageClass (storage.k8s.io/v1),
//! following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidatePersistentVolumeSpec`, `ValidatePersistentVolumeUpdate`,
//! `ValidatePersistentVolumeClaimSpec`, `ValidatePersistentVolumeClaimUpdate`) and
//! `pkg/apis/storage/validation/validation.go` (`ValidateStorageClass`,
//! `ValidateStorageClassUpdate`), with 1.32's default gates (`RecoverVolumeExpansionFailure`
//! on, `VolumeAttributesClass` off).

use kgc_meta::gojson::go_json;
use kgc_meta::quantity::{self, Quantity};
use kgc_meta::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::{Map, Value};

use crate::diff::forbid_changes;
use crate::field::{Errors, Path};
use crate::json::{Json, same, string_map, strings};
use crate::labels::{to_lower, validate_selector};
use crate::resources::{resource_list, validate_positive, validate_quantity_value};
use crate::volume::{PV_SOURCES, validate_sources};

/// `supportedAccessModes`, sorted.
const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];

/// Access modes: known values, and `ReadWriteOncePod` alone.
fn access_modes(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    let (mut once_pod, mut other) = (false, false);
    for mode in strings(spec, "accessModes") {
        if !ACCESS_MODES.contains(&mode) {
            errs.not_supported_typed(path, mode, &ACCESS_MODES);
        } else if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        errs.forbidden(path, "may not use ReadWriteOncePod with other access modes");
    }
}

fn volume_mode(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    if let Some(m) = spec.opt_str("volumeMode")
        && !VOLUME_MODES.contains(&m)
    {
        errs.not_supported_typed(path, m, &VOLUME_MODES);
    }
}

/// A PersistentVolume create or update (`status` updates have no spec rules).
pub(crate) fn persistent_volume(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    let spec = obj.at("spec");
    pv_spec(spec, errs);
    let Some(old) = old else {
        return;
    };
    let old_spec = old.at("spec");
    let sources = |s: &Value| {
        let mut m = Map::new();
        for src in PV_SOURCES {
            if let Some(v) = s.get(src) {
                m.insert(src.to_owned(), v.clone());
            }
        }
        Value::Object(m)
    };
    let (mut new_sources, old_sources) = (sources(spec), sources(old_spec));
    // A CSI volume may gain a controllerExpandSecretRef.
    if !old_spec.at("csi").has("controllerExpandSecretRef")
        && let Some(csi) = new_sources.get_mut("csi").and_then(Value::as_object_mut)
    {
        csi.remove("controllerExpandSecretRef");
    }
    forbid_changes(
        "spec.persistentvolumesource",
        "spec.persistentvolumesource is immutable after creation",
        "core.PersistentVolumeSource",
        &old_sources,
        &new_sources,
        errs,
    );
    errs.immutable(
        "volumeMode",
        spec.at("volumeMode"),
        old_spec.at("volumeMode"),
    );
    if old_spec.has("nodeAffinity") && !same(spec.at("nodeAffinity"), old_spec.at("nodeAffinity")) {
        errs.invalid_json(
            "nodeAffinity",
            spec.at("nodeAffinity"),
            "field is immutable, except for updating from beta label to GA",
        );
    }
}

/// `ValidatePersistentVolumeSpec`.
fn pv_spec(spec: &Value, errs: &mut Errors) {
    if spec.list("accessModes").is_empty() {
        errs.required("spec.accessModes", "");
    }
    access_modes(spec, &Path::new("spec.accessModes"), errs);
    let capacity = spec.at("capacity");
    let cap = spec.obj("capacity");
    if cap.is_none_or(|m| m.is_empty()) {
        errs.required("spec.capacity", "");
    }
    if cap.is_none_or(|m| !m.contains_key("storage") || m.len() > 1) {
        errs.not_supported_raw(
            "spec.capacity",
            render_resource_list(capacity),
            &["storage"],
        );
    }
    let capacity_path = Path::new("spec.capacity");
    for (name, q) in resource_list(spec, "capacity") {
        let p = capacity_path.key(name);
        validate_positive(&q, &p, errs);
    }
    let class = spec.str_of("storageClassName");
    if !class.is_empty() {
        errs.invalid_each("spec.storageClassName", class, is_dns1123_subdomain(class));
    }
    volume_mode(spec, &Path::new("spec.volumeMode"), errs);
    let reclaim = spec.str_of("persistentVolumeReclaimPolicy");
    if !reclaim.is_empty() && !matches!(reclaim, "Delete" | "Recycle" | "Retain") {
        errs.not_supported_typed(
            "spec.persistentVolumeReclaimPolicy",
            reclaim,
            &["Delete", "Recycle", "Retain"],
        );
    }
    let source = validate_sources(spec, &PV_SOURCES, &Path::new("spec"), errs);
    match source {
        Some("local") if !spec.has("nodeAffinity") => {
            errs.required("spec.nodeAffinity", "Local volume requires node affinity");
        }
        Some("csi") if spec.at("csi").str_of("volumeHandle").is_empty() => {
            errs.required("spec.csi.volumeHandle", "");
        }
        _ => {}
    }
    let host_path = spec.at("hostPath").str_of("path");
    if spec.has("hostPath")
        && host_path.trim_end_matches('/').is_empty()
        && !host_path.is_empty()
        && reclaim == "Recycle"
    {
        errs.forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        );
    }
}

/// A `core.ResourceList` as `encoding/json` prints it (quantities in canonical form).
fn render_resource_list(v: &Value) -> String {
    match v.as_object() {
        None => "null".to_owned(),
        Some(m) => {
            let canon: Map<String, Value> = m
                .iter()
                .map(|(k, q)| {
                    let shown = quantity::canonical_json(q)
                        .map_or_else(|_| q.clone(), |q| Value::from(q.into_owned()));
                    (k.clone(), shown)
                })
                .collect();
            go_json(&Value::Object(canon))
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec` (also run on ephemeral volume claim templates).
pub(crate) fn claim_spec(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    if spec.list("accessModes").is_empty() {
        errs.required(
            path.child("accessModes"),
            "at least 1 access mode is required",
        );
    }
    if spec.has("selector") {
        validate_selector(spec.at("selector"), false, &path.child("selector"), errs);
    }
    access_modes(spec, &path.child("accessModes"), errs);
    // Upstream keys the storage request on `resources` directly.
    let resources = path.child("resources");
    let storage_path = resources.key("storage");
    match Quantity::from_json(spec.at("resources").at("requests").at("storage")) {
        Err(_) => errs.required(storage_path, ""),
        Ok(q) => {
            if validate_positive(&q, &storage_path, errs) {
                validate_quantity_value("storage", &q, &storage_path, errs);
            }
        }
    }
    if let Some(class) = spec.opt_str("storageClassName")
        && !class.is_empty()
    {
        errs.invalid_each(
            path.child("storageClassName"),
            class,
            is_dns1123_subdomain(class),
        );
    }
    volume_mode(spec, &path.child("volumeMode"), errs);
    for field in ["dataSource", "dataSourceRef"] {
        let ds = spec.at(field);
        if ds.is_null() {
            continue;
        }
        let p = path.child(field);
        if ds.str_of("name").is_empty() {
            errs.required(p.child("name"), "");
        }
        if ds.str_of("kind").is_empty() {
            errs.required(p.child("kind"), "");
        }
        if ds.opt_str("apiGroup").unwrap_or_default().is_empty()
            && ds.str_of("kind") != "PersistentVolumeClaim"
        {
            errs.invalid(
                p,
                ds.str_of("kind"),
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            );
        }
    }
    let (ds, dsr) = (spec.at("dataSource"), spec.at("dataSourceRef"));
    if dsr.opt_str("namespace").is_some_and(|n| !n.is_empty()) {
        if !ds.is_null() {
            errs.invalid(
                path,
                &path.child("dataSource").to_string(),
                "may not be specified when dataSourceRef.namespace is specified",
            );
        }
    } else if !ds.is_null() && !dsr.is_null() {
        let same_ref = ["apiGroup", "kind", "name"]
            .iter()
            .all(|f| ds.str_of(f) == dsr.str_of(f));
        if !same_ref {
            errs.invalid(
                path,
                &path.child("dataSource").to_string(),
                "must match dataSourceRef",
            );
        }
    }
}

/// A PersistentVolumeClaim create or update (`status` updates are not covered).
pub(crate) fn persistent_volume_claim(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    claim_spec(obj.at("spec"), &Path::new("spec"), errs);
    if let Some(old) = old {
        claim_update(obj, old, errs);
    }
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed except the volume binding (once)
/// and, for bound claims, the storage request (which may grow, or shrink back to what the
/// volume actually has).
fn claim_update(obj: &Value, old: &Value, errs: &mut Errors) {
    let (spec, old_spec) = (obj.at("spec"), old.at("spec"));
    let mut new_clone = spec.clone();
    let mut old_clone = old_spec.clone();
    if old_spec.str_of("volumeName").is_empty()
        && let Some(m) = old_clone.as_object_mut()
    {
        m.insert("volumeName".to_owned(), spec.at("volumeName").clone());
    }
    // A claim created before storageClassName existed may set it from the beta annotation or
    // from nothing (`validateStorageClassUpgradeFromAnnotation`, `...FromNil`).
    let beta = "volume.beta.kubernetes.io/storage-class";
    let old_annotation = old.at("metadata").at("annotations").opt_str(beta);
    let new_class = spec.opt_str("storageClassName");
    let from_annotation = old_annotation.is_some()
        && old_spec.opt_str("storageClassName").is_none()
        && new_class == old_annotation
        && obj.at("metadata").at("annotations").opt_str(beta) == old_annotation;
    let from_nil = old_annotation.is_none()
        && old_spec.opt_str("storageClassName").is_none()
        && new_class.is_some();
    if (from_annotation || from_nil)
        && let Some(m) = new_clone.as_object_mut()
    {
        m.remove("storageClassName");
    } else {
        let new_annotation = obj.at("metadata").at("annotations").opt_str(beta);
        if new_annotation != old_annotation {
            errs.invalid(
                Path::new("metadata.annotations").child(beta),
                new_annotation.unwrap_or_default(),
                crate::field::IMMUTABLE,
            );
        }
    }
    let bound = obj.at("status").str_of("phase") == "Bound";
    if bound
        && let Some(requests) = new_clone
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
            .and_then(Value::as_object_mut)
    {
        match old_spec.at("resources").at("requests").get("storage") {
            Some(v) => requests.insert("storage".to_owned(), v.clone()),
            None => requests.remove("storage"),
        };
    }
    forbid_changes(
        "spec",
        "spec is immutable after creation except resources.requests for bound claims",
        "core.PersistentVolumeClaimSpec",
        &old_clone,
        &new_clone,
        errs,
    );
    let storage = |s: &Value| {
        Quantity::from_json(s.at("resources").at("requests").at("storage")).unwrap_or_default()
    };
    let (new_size, old_size) = (storage(spec), storage(old_spec));
    if new_size < old_size {
        let status_size =
            Quantity::from_json(old.at("status").at("capacity").at("storage")).unwrap_or_default();
        if new_size <= status_size {
            errs.forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            );
        }
    }
    errs.immutable(
        "volumeMode",
        spec.at("volumeMode"),
        old_spec.at("volumeMode"),
    );
}

/// A StorageClass create or update.
pub(crate) fn storage_class(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    if let Some(old) = old {
        if !same(obj.at("parameters"), old.at("parameters")) {
            errs.forbidden("parameters", "updates to parameters are forbidden.");
        }
        if obj.str_of("provisioner") != old.str_of("provisioner") {
            errs.forbidden("provisioner", "updates to provisioner are forbidden.");
        }
        if obj.str_of("reclaimPolicy") != old.str_of("reclaimPolicy") {
            errs.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.");
        }
        errs.immutable(
            "volumeBindingMode",
            obj.at("volumeBindingMode"),
            old.at("volumeBindingMode"),
        );
        return;
    }
    let provisioner = obj.str_of("provisioner");
    if provisioner.is_empty() {
        errs.required("provisioner", "");
    } else {
        let provisioner = to_lower(provisioner);
        errs.invalid_each("provisioner", &provisioner, is_qualified_name(&provisioner));
    }
    let params = string_map(obj, "parameters");
    if params.len() > 512 {
        errs.too_long("parameters", 512);
    } else {
        let mut total = 0usize;
        for (k, v) in &params {
            if k.is_empty() {
                errs.invalid("parameters", k, "field can not be empty.");
            }
            total += k.len() + v.len();
        }
        if total > 256 * 1024 {
            errs.too_long("parameters", 256 * 1024);
        }
    }
    if let Some(p) = obj.opt_str("reclaimPolicy")
        && !p.is_empty()
        && !matches!(p, "Delete" | "Retain")
    {
        errs.not_supported_typed("reclaimPolicy", p, &["Delete", "Retain"]);
    }
    match obj.opt_str("volumeBindingMode") {
        None => errs.required("volumeBindingMode", ""),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(m) => errs.not_supported_typed(
            "volumeBindingMode",
            m,
            &["Immediate", "WaitForFirstConsumer"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::messages as run;
    use serde_json::json;

    fn pv(spec: Value) -> Value {
        json!({"spec": spec})
    }

    /// `TestValidatePersistentVolumes`.
    #[test]
    fn test_validate_persistent_volumes() {
        let good = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}, "hostPath": {"path": "/data"}, "persistentVolumeReclaimPolicy": "Retain"}),
        );
        assert!(run(|e| persistent_volume(&good, None, e)).is_empty());
        assert_eq!(
            run(|e| persistent_volume(
                &pv(
                    json!({"capacity": {"storage": "0", "cpu": "1"}, "persistentVolumeReclaimPolicy": "Keep"})
                ),
                None,
                e
            )),
            vec![
                "spec.accessModes: Required value",
                "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"0\"}: supported values: \"storage\"",
                "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
                "spec: Required value: must specify a volume type",
            ]
        );
        assert_eq!(
            run(|e| persistent_volume(
                &pv(
                    json!({"accessModes": ["ReadWriteOncePod", "ReadOnlyMany", "Sometimes"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/"}, "nfs": {"server": "s", "path": "/x"}, "persistentVolumeReclaimPolicy": "Recycle"})
                ),
                None,
                e
            )),
            vec![
                "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.nfs: Forbidden: may not specify more than 1 volume type",
                "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'",
            ]
        );
        let local = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "local": {"path": "/mnt"}}),
        );
        assert_eq!(
            run(|e| persistent_volume(&local, None, e)),
            vec!["spec.nodeAffinity: Required value: Local volume requires node affinity"]
        );
        let moved = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "20Gi"}, "hostPath": {"path": "/other"}, "persistentVolumeReclaimPolicy": "Retain"}),
        );
        let got = run(|e| persistent_volume(&moved, Some(&good), e));
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"));
    }

    fn pvc(spec: Value) -> Value {
        json!({"spec": spec})
    }

    /// `TestValidatePersistentVolumeClaim`.
    #[test]
    fn test_validate_persistent_volume_claim() {
        let good = pvc(
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"}),
        );
        assert!(run(|e| persistent_volume_claim(&good, None, e)).is_empty());
        assert_eq!(
            run(|e| persistent_volume_claim(&pvc(json!({"resources": {}})), None, e)),
            vec![
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ]
        );
        assert_eq!(
            run(|e| persistent_volume_claim(
                &pvc(
                    json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}, "storageClassName": "Fast_", "volumeMode": "Raw"})
                ),
                None,
                e
            )),
            vec![
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.storageClassName: Invalid value: \"Fast_\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            ]
        );
    }

    /// `TestValidatePersistentVolumeClaimUpdate` (the main cases).
    #[test]
    fn test_validate_persistent_volume_claim_update() {
        let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let bind = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast", "volumeName": "pv1"}, "status": {"phase": "Bound"}});
        assert!(run(|e| persistent_volume_claim(&bind, Some(&old), e)).is_empty());
        let grow = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}, "storageClassName": "fast"}, "status": {"phase": "Bound"}});
        assert!(run(|e| persistent_volume_claim(&grow, Some(&old), e)).is_empty());
        let shrink = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "512Mi"}}, "storageClassName": "fast"}, "status": {"phase": "Bound"}});
        assert_eq!(
            run(|e| persistent_volume_claim(&shrink, Some(&old), e)),
            vec![
                "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
            ]
        );
        let modes = json!({"spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"}, "status": {"phase": "Bound"}});
        let got = run(|e| persistent_volume_claim(&modes, Some(&old), e));
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests for bound claims\n"), "{got:?}");
    }

    /// `TestValidateStorageClass` and `TestValidateUpdateStorageClass`.
    #[test]
    fn test_validate_storage_class() {
        let good = json!({"provisioner": "kubernetes.io/foo", "parameters": {"a": "b"}, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"});
        assert!(run(|e| storage_class(&good, None, e)).is_empty());
        assert_eq!(
            run(|e| storage_class(
                &json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}),
                None,
                e
            )),
            vec![
                "provisioner: Required value",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ]
        );
        let changed = json!({"provisioner": "kubernetes.io/bar", "parameters": {"a": "c"}, "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            run(|e| storage_class(&changed, Some(&good), e)),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
            ]
        );
    }
}
