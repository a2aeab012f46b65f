//! Pod volumes and the volume sources shared with PersistentVolumes, following
//! kubernetes/kubernetes `pkg/apis/core/validation/validation.go` (`ValidateVolumes`,
//! `validateVolumeSource`, `validateHostPathVolumeSource`, `validateSecretVolumeSource`,
//! `validateConfigMapVolumeSource`, `validateKeyToPath`, `validateDownwardAPIVolumeFile`,
//! `validateProjectionSources`, `validateNFSVolumeSource`, `ValidateCSIDriverName`,
//! `validateEphemeralVolumeSource`, `ValidateLocalNonReservedPath`).

use std::collections::BTreeMap;

use kgc_meta::quantity::Quantity;
use kgc_meta::validation::{is_dns1123_label, is_dns1123_subdomain};
use serde_json::Value;

use crate::container::{validate_field_selector, validate_resource_field_selector};
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::labels::to_lower;

/// The sources of a pod volume in the order upstream checks them (the first one set wins and
/// every further one is "more than 1 volume type").
const POD_SOURCES: [&str; 30] = [
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

/// The sources of a PersistentVolume, in `ValidatePersistentVolumeSpec` order.
pub(crate) const PV_SOURCES: [&str; 22] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The valid volumes of a pod by name, with the source each uses (mounts and devices refer to
/// them).
pub(crate) type Volumes<'a> = BTreeMap<&'a str, &'static str>;

/// `ValidateVolumes`: names unique DNS labels, exactly one valid source each.
pub(crate) fn validate_volumes<'a>(
    spec: &'a Value,
    pod_name: &str,
    path: &Path<'_>,
    errs: &mut Errors,
) -> Volumes<'a> {
    let vols = spec.list("volumes");
    // The claim a pod's ephemeral volume creates is named `<pod name>-<volume name>`.
    let created_by_ephemeral = |claim: &str| {
        !pod_name.is_empty()
            && claim
                .strip_prefix(pod_name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|name| {
                    vols.iter()
                        .any(|v| v.has("ephemeral") && v.str_of("name") == name)
                })
    };
    let mut names = Volumes::new();
    for (i, vol) in vols.iter().enumerate() {
        let p = path.index(i);
        let name = vol.str_of("name");
        let mut el = Errors::default();
        let source = validate_sources(vol, &POD_SOURCES, &p, &mut el);
        let name_path = p.child("name");
        if name.is_empty() {
            el.required(name_path, "");
        } else {
            el.invalid_each(name_path, name, is_dns1123_label(name));
        }
        if names.contains_key(name) {
            el.duplicate(name_path, name);
        }
        if el.len() == 0 {
            if let Some(source) = source {
                names.insert(name, source);
            }
        } else {
            errs.extend(el);
        }
        let claim = vol.at("persistentVolumeClaim").str_of("claimName");
        if vol.has("persistentVolumeClaim") && created_by_ephemeral(claim) {
            errs.invalid(
                p.child("persistentVolumeClaim").child("claimName"),
                claim,
                "must not reference a PVC that gets created for an ephemeral volume",
            );
        }
    }
    names
}

/// Checks that exactly one of `sources` is set on `vol` and validates it; returns its name.
pub(crate) fn validate_sources(
    vol: &Value,
    sources: &[&'static str],
    path: &Path<'_>,
    errs: &mut Errors,
) -> Option<&'static str> {
    let mut found = None;
    for src in sources {
        if !vol.has(src) {
            continue;
        }
        let p = path.child(src);
        if found.is_some() {
            errs.forbidden(p, "may not specify more than 1 volume type");
            continue;
        }
        found = Some(*src);
        validate_source(src, vol.at(src), &p, errs);
    }
    if found.is_none() {
        errs.required(path, "must specify a volume type");
    }
    found
}

fn validate_source(src: &str, v: &Value, path: &Path<'_>, errs: &mut Errors) {
    match src {
        "emptyDir" if Quantity::from_json(v.at("sizeLimit")).is_ok_and(|q| q.is_negative()) => {
            errs.forbidden(
                path.child("sizeLimit"),
                "SizeLimit field must be a valid resource quantity",
            );
        }
        "hostPath" => host_path(v, path, errs),
        "gitRepo" => {
            if v.str_of("repository").is_empty() {
                errs.required(path.child("repository"), "");
            }
            local_descending_path(v.str_of("directory"), &path.child("directory"), errs);
        }
        "secret" => {
            if v.str_of("secretName").is_empty() {
                errs.required(path.child("secretName"), "");
            }
            mode(v, "defaultMode", path, errs);
            key_to_paths(v, path, errs);
        }
        "configMap" => {
            if v.str_of("name").is_empty() {
                errs.required(path.child("name"), "");
            }
            mode(v, "defaultMode", path, errs);
            key_to_paths(v, path, errs);
        }
        "persistentVolumeClaim" if v.str_of("claimName").is_empty() => {
            errs.required(path.child("claimName"), "");
        }
        "nfs" => {
            if v.str_of("server").is_empty() {
                errs.required(path.child("server"), "");
            }
            let p = v.str_of("path");
            if p.is_empty() {
                errs.required(path.child("path"), "");
            } else if !p.starts_with('/') {
                errs.invalid(path.child("path"), p, "must be an absolute path");
            }
        }
        "downwardAPI" => {
            mode(v, "defaultMode", path, errs);
            for (i, file) in v.list("items").iter().enumerate() {
                downward_api_file(file, &path.child("items").index(i), errs);
            }
        }
        "projected" => projected(v, path, errs),
        "csi" => csi_driver_name(v.str_of("driver"), &path.child("driver"), errs),
        "ephemeral" => {
            let t = v.at("volumeClaimTemplate");
            let p = path.child("volumeClaimTemplate");
            if t.is_null() {
                errs.required(p, "");
            } else {
                let meta = t.at("metadata");
                let mp = p.child("metadata");
                crate::labels::validate_annotations(
                    meta,
                    "annotations",
                    &mp.child("annotations"),
                    errs,
                );
                crate::labels::validate_labels(meta, "labels", &mp.child("labels"), errs);
                crate::storage::claim_spec(t.at("spec"), &p.child("spec"), errs);
            }
        }
        "local" => {
            let p = v.str_of("path");
            if p.is_empty() {
                errs.required(path.child("path"), "");
            }
            no_backsteps(p, &path.child("path"), errs);
        }
        _ => {}
    }
}

fn host_path(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    let p = v.str_of("path");
    if p.is_empty() {
        errs.required(path.child("path"), "");
        return;
    }
    no_backsteps(p, &path.child("path"), errs);
    if let Some(t) = v.opt_str("type") {
        const TYPES: [&str; 8] = [
            "",
            "BlockDevice",
            "CharDevice",
            "Directory",
            "DirectoryOrCreate",
            "File",
            "FileOrCreate",
            "Socket",
        ];
        if !TYPES.contains(&t) {
            errs.not_supported_typed(path.child("type"), t, &TYPES);
        }
    }
}

/// `ValidateCSIDriverName`.
pub(crate) fn csi_driver_name(driver: &str, path: &Path<'_>, errs: &mut Errors) {
    if driver.is_empty() {
        errs.required(path, "");
    }
    if driver.len() > 63 {
        errs.too_long(path, 63);
    }
    errs.invalid_each(path, driver, is_dns1123_subdomain(&to_lower(driver)));
}

fn mode(v: &Value, field: &str, path: &Path<'_>, errs: &mut Errors) {
    if let Some(m) = v.opt_int(field)
        && !(0..=0o777).contains(&m)
    {
        errs.invalid_int(path.child(field), m, FILE_MODE);
    }
}

/// `validateKeyToPath` for each of `items`.
fn key_to_paths(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    let items = path.child("items");
    for (i, kp) in v.list("items").iter().enumerate() {
        let p = items.index(i);
        if kp.str_of("key").is_empty() {
            errs.required(p.child("key"), "");
        }
        let target = kp.str_of("path");
        if target.is_empty() {
            errs.required(p.child("path"), "");
        }
        local_non_reserved_path(target, &p.child("path"), errs);
        mode(kp, "mode", &p, errs);
    }
}

fn downward_api_file(file: &Value, path: &Path<'_>, errs: &mut Errors) {
    let target = file.str_of("path");
    if target.is_empty() {
        errs.required(path.child("path"), "");
    }
    local_non_reserved_path(target, &path.child("path"), errs);
    if file.has("fieldRef") {
        validate_field_selector(
            file.at("fieldRef"),
            &VOLUME_FIELD_PATHS,
            &path.child("fieldRef"),
            errs,
        );
        if file.has("resourceFieldRef") {
            errs.invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            );
        }
    } else if file.has("resourceFieldRef") {
        validate_resource_field_selector(
            file.at("resourceFieldRef"),
            &path.child("resourceFieldRef"),
            true,
            errs,
        );
    } else {
        errs.required(path, "one of fieldRef and resourceFieldRef is required");
    }
    mode(file, "mode", path, errs);
}

/// `validVolumeDownwardAPIFieldPathExpressions`, sorted.
const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

fn projected<'a>(v: &'a Value, path: &Path<'_>, errs: &mut Errors) {
    mode(v, "defaultMode", path, errs);
    let mut all_paths: Vec<&str> = Vec::new();
    let mut claim_path = |target: &'a str, shown: &str, errs: &mut Errors| {
        if target.is_empty() {
            return;
        }
        if all_paths.contains(&target) {
            errs.invalid(path, shown, "conflicting duplicate paths");
        } else {
            all_paths.push(target);
        }
    };
    let sources = path.child("sources");
    for (i, src) in v.list("sources").iter().enumerate() {
        let sp = sources.index(i);
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            if !src.has(kind) {
                continue;
            }
            count += 1;
            let s = src.at(kind);
            let pp = sp.child(kind);
            if s.str_of("name").is_empty() {
                errs.required(pp.child("name"), "");
            }
            key_to_paths(s, &pp, errs);
            for item in s.list("items") {
                claim_path(item.str_of("path"), s.str_of("name"), errs);
            }
        }
        if src.has("downwardAPI") {
            count += 1;
            let pp = sp.child("downwardAPI");
            for file in src.at("downwardAPI").list("items") {
                downward_api_file(file, &pp, errs);
                claim_path(file.str_of("path"), file.str_of("path"), errs);
            }
        }
        if src.has("serviceAccountToken") {
            count += 1;
            let t = src.at("serviceAccountToken");
            let pp = sp.child("serviceAccountToken");
            let exp = t.int_of("expirationSeconds");
            if exp < 600 {
                errs.invalid_int(
                    pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                );
            }
            if exp > 1 << 32 {
                errs.invalid_int(
                    pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                );
            }
            if t.str_of("path").is_empty() {
                errs.required(path.child("path"), "");
            }
        }
        if src.has("clusterTrustBundle") {
            count += 1;
        }
        if count > 1 {
            errs.forbidden(sp, "may not specify more than 1 volume type per source");
        }
    }
}

/// `validatePathNoBacksteps`.
pub(crate) fn no_backsteps(target: &str, path: &Path<'_>, errs: &mut Errors) {
    if target.split(['/', '\\']).any(|part| part == "..") {
        errs.invalid(path, target, "must not contain '..'");
    }
}

/// `validateLocalDescendingPath`.
pub(crate) fn local_descending_path(target: &str, path: &Path<'_>, errs: &mut Errors) {
    if target.starts_with('/') {
        errs.invalid(path, target, "must be a relative path");
    }
    no_backsteps(target, path, errs);
}

/// `ValidateLocalNonReservedPath`.
fn local_non_reserved_path(target: &str, path: &Path<'_>, errs: &mut Errors) {
    local_descending_path(target, path, errs);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.invalid(path, target, "must not start with '..'");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(spec: Value) -> Vec<String> {
        crate::testutil::messages(|e| {
            validate_volumes(&spec, "pod", &Path::new("spec.volumes"), e);
        })
    }

    /// `TestValidateVolumes` (the main cases).
    #[test]
    fn test_validate_volumes() {
        assert!(run(json!({"volumes": [
            {"name": "a", "emptyDir": {}},
            {"name": "b", "secret": {"secretName": "s", "defaultMode": 0o644, "items": [{"key": "k", "path": "p"}]}},
            {"name": "c", "configMap": {"name": "c"}},
            {"name": "d", "hostPath": {"path": "/var", "type": "Directory"}},
            {"name": "e", "persistentVolumeClaim": {"claimName": "x"}},
            {"name": "f", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3607}}]}},
            {"name": "g", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
        ]})).is_empty());
        assert_eq!(
            run(json!({"volumes": [
                {"name": "a", "emptyDir": {}},
                {"name": "a", "emptyDir": {}},
                {"name": "Bad_Name", "emptyDir": {}},
                {"name": "none"},
                {"name": "two", "emptyDir": {}, "hostPath": {"path": "/x"}},
            ]})),
            vec![
                "spec.volumes[1].name: Duplicate value: \"a\"",
                "spec.volumes[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.volumes[3]: Required value: must specify a volume type",
                "spec.volumes[4].hostPath: Forbidden: may not specify more than 1 volume type",
            ]
        );
        assert_eq!(
            run(json!({"volumes": [
                {"name": "a", "hostPath": {"path": "/a/../b", "type": "Dir"}},
                {"name": "b", "secret": {"defaultMode": 512, "items": [{"key": "", "path": "/abs"}]}},
                {"name": "c", "nfs": {"server": "s", "path": "rel"}},
                {"name": "d", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]}},
            ]})),
            vec![
                "spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
                "spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
                "spec.volumes[1].secret.secretName: Required value",
                "spec.volumes[1].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[1].secret.items[0].key: Required value",
                "spec.volumes[1].secret.items[0].path: Invalid value: \"/abs\": must be a relative path",
                "spec.volumes[2].nfs.path: Invalid value: \"rel\": must be an absolute path",
                "spec.volumes[3].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
            ]
        );
        assert_eq!(
            run(json!({"volumes": [
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
                {"name": "x", "persistentVolumeClaim": {"claimName": "pod-eph"}},
            ]})),
            vec![
                "spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: \"pod-eph\": must not reference a PVC that gets created for an ephemeral volume"
            ]
        );
    }
}
