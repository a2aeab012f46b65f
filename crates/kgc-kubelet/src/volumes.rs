//! The volumes a pod mounts that must exist before its containers are created: a Secret, a
//! ConfigMap (directly or in a projected volume) and a PersistentVolumeClaim. The kubelet's
//! volume manager waits for them and reports each failed mount as a `FailedMount` event; an
//! `optional: true` Secret or ConfigMap that is missing mounts empty (upstream
//! `pkg/volume/secret/secret.go`, `pkg/volume/configmap/configmap.go` `SetUpAt`;
//! `pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go` for claims).

use k8s_openapi::api::core::v1::PodSpec;

/// The ConfigMap of the cluster's CA that ServiceAccount admission projects into every pod
/// (upstream `pkg/controller/certificates/rootcacertpublisher`).
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// An object a pod's volume needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Needed {
    Secret(String),
    ConfigMap(String),
    Claim(String),
}

/// A volume that cannot be mounted, with the message of its `FailedMount` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub needed: Needed,
    pub message: String,
}

/// The objects the pod's volumes need that are not optional, with their volume's name.
pub fn needed(spec: &PodSpec) -> Vec<(String, Needed)> {
    let mut out = Vec::new();
    for v in spec.volumes.iter().flatten() {
        let name = &v.name;
        if let Some(s) = &v.secret
            && s.optional != Some(true)
            && let Some(secret) = &s.secret_name
        {
            out.push((name.clone(), Needed::Secret(secret.clone())));
        }
        if let Some(c) = &v.config_map
            && c.optional != Some(true)
        {
            out.push((name.clone(), Needed::ConfigMap(c.name.clone())));
        }
        if let Some(c) = &v.persistent_volume_claim {
            out.push((name.clone(), Needed::Claim(c.claim_name.clone())));
        }
        for source in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(s) = &source.secret
                && s.optional != Some(true)
            {
                out.push((name.clone(), Needed::Secret(s.name.clone())));
            }
            // The service-account volume's CA bundle is published only by a server that has a
            // CA (`kgc serve` over plain HTTP has none, and its root-CA publisher says so): a
            // simulated pod mounts it empty rather than never starting.
            if let Some(c) = &source.config_map
                && c.optional != Some(true)
                && c.name != ROOT_CA_CONFIG_MAP
            {
                out.push((name.clone(), Needed::ConfigMap(c.name.clone())));
            }
        }
    }
    out
}

/// The volumes of a pod in `namespace` whose object `exists` says is missing, each with the
/// message a kubelet's `FailedMount` event carries.
pub fn missing(spec: &PodSpec, namespace: &str, exists: impl Fn(&Needed) -> bool) -> Vec<Missing> {
    needed(spec)
        .into_iter()
        .filter(|(_, n)| !exists(n))
        .map(|(volume, needed)| {
            let message = match &needed {
                Needed::Secret(s) => {
                    format!(
                        "MountVolume.SetUp failed for volume {volume:?} : secret {s:?} not found"
                    )
                }
                Needed::ConfigMap(c) => format!(
                    "MountVolume.SetUp failed for volume {volume:?} : configmap {c:?} not found"
                ),
                Needed::Claim(c) => format!(
                    "Unable to attach or mount volumes: unmounted volumes=[{volume}], unattached \
                     volumes=[], failed to process volumes=[{volume}]: error processing PVC \
                     {namespace}/{c}: failed to fetch PVC from API server: \
                     persistentvolumeclaims {c:?} not found"
                ),
            };
            Missing { needed, message }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(volumes: serde_json::Value) -> PodSpec {
        serde_json::from_value(json!({"containers": [{"name": "c"}], "volumes": volumes})).unwrap()
    }

    #[test]
    fn required_objects_are_named_and_optional_ones_skipped() {
        let s = spec(json!([
            {"name": "creds", "secret": {"secretName": "db"}},
            {"name": "maybe", "secret": {"secretName": "x", "optional": true}},
            {"name": "conf", "configMap": {"name": "settings"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}},
            {"name": "all", "projected": {"sources": [
                {"configMap": {"name": "p-cm"}},
                {"secret": {"name": "p-s", "optional": true}}]}},
            {"name": "scratch", "emptyDir": {}},
        ]));
        assert_eq!(
            needed(&s),
            [
                ("creds".into(), Needed::Secret("db".into())),
                ("conf".into(), Needed::ConfigMap("settings".into())),
                ("data".into(), Needed::Claim("pvc".into())),
                ("all".into(), Needed::ConfigMap("p-cm".into())),
            ]
        );
    }

    #[test]
    fn missing_objects_are_worded_as_a_kubelet_words_them() {
        let s = spec(json!([
            {"name": "creds", "secret": {"secretName": "db"}},
            {"name": "conf", "configMap": {"name": "settings"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}},
        ]));
        let found = missing(&s, "team", |n| matches!(n, Needed::ConfigMap(_)));
        let messages: Vec<&str> = found.iter().map(|m| m.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "MountVolume.SetUp failed for volume \"creds\" : secret \"db\" not found",
                "Unable to attach or mount volumes: unmounted volumes=[data], unattached \
                 volumes=[], failed to process volumes=[data]: error processing PVC team/pvc: \
                 failed to fetch PVC from API server: persistentvolumeclaims \"pvc\" not found",
            ]
        );
        assert!(missing(&s, "team", |_| true).is_empty());
    }
}
