//! Upstream's per-kind validation of built-in objects, worded as kube-apiserver words it.
//!
//! kube-apiserver refuses a Deployment whose selector does not match its template, a Pod
//! without containers or a CronJob whose schedule does not parse — with a 422 whose causes name
//! the field (`spec.template.spec.containers[0].image`) and say what is wrong in a fixed
//! sentence. Clients (kubectl, Helm, Argo CD, kube-rs users) show and match those sentences,
//! and kgc's own controllers rely on never reading back an object upstream would have refused.
//! This crate holds those rules so the API server can apply them before it stores an object.
//!
//! It follows kubernetes/kubernetes at 1.32 with its default feature gates:
//! `pkg/apis/core/validation/validation.go` and `events.go`, `pkg/apis/apps/validation`,
//! `pkg/apis/batch/validation`, `pkg/apis/certificates/validation`,
//! `pkg/apis/storage/validation` and `pkg/apis/coordination/validation`, plus the parts of the
//! registry strategies that decide what validation sees (immutable apps/v1 selectors, the
//! Service cluster-IP bookkeeping, the Job status options). Errors are [`FieldError`]s from
//! `kgc_meta`, so they render exactly as upstream's `field.Error`, in upstream's order.
//!
//! `metadata` is not validated here (the store does that with `kgc_meta::validation`), except
//! for the kind-specific metadata rules upstream keeps in the kind validators (a CronJob name
//! of at most 52 characters, an Indexed Job's pod host names, an Event's namespace).
//!
//! | kind | create | update | subresources |
//! |---|---|---|---|
//! | ConfigMap, Secret | keys, 1 MiB payload, Secret types | `immutable`, Secret `type` | — |
//! | Pod | spec, containers, volumes, ports, env, resources, probes, tolerations, DNS | only updatable fields change, tolerations only added, deadline | `status` |
//! | PodTemplate | template | template | — |
//! | ReplicationController | selector, template, replicas | same | `status` |
//! | apps Deployment, ReplicaSet | selector, template, strategy, limits | immutable selector | `status` |
//! | apps StatefulSet | policies, strategy, retention policy, selector | only mutable fields change | `status` |
//! | apps DaemonSet | selector, template, update strategy | immutable selector | `status` |
//! | batch Job | counts, generated or manual selector, modes, failure and success policies | immutable fields, elastic indexed Jobs, suspended scheduling | `status` |
//! | batch CronJob | schedule (robfig/cron), time zone, policies, job template | TZ-in-schedule rules | — |
//! | Service | ports, types, cluster IPs, traffic policies, affinity | cluster IPs | `status` |
//! | LimitRange | types, resource names, min ≤ default request ≤ default ≤ max, ratios | same | — |
//! | Namespace | finalizer names | — | `status`, `finalize` |
//! | Node | taints, pod CIDRs, capacity | pod CIDRs, provider ID, addresses | `status` |
//! | PersistentVolume | capacity, access modes, one source, reclaim policy | immutable source | — |
//! | PersistentVolumeClaim | access modes, storage request, class, data sources | spec fixed except bound requests | — |
//! | storage StorageClass | provisioner, parameters, policies | immutable fields | — |
//! | coordination Lease | durations | same | — |
//! | policy PodDisruptionBudget | one of minAvailable and maxUnavailable, int or percent, selector, eviction policy | same | `status` |
//! | ResourceQuota | resource names for quota, quantities, scopes and scope selectors | scopes immutable | `status` |
//! | Event, events.k8s.io Event | namespaces, reporting fields, strict events.k8s.io fields | events.k8s.io immutables | — |
//! | certificates CertificateSigningRequest | PEM request and signature, signer, usages, expiry | conditions, certificate | `status`, `approval` |
//!
//! ServiceAccounts have no rules beyond metadata upstream. RBAC kinds are validated in
//! `kgc-auth`. Any other kind, and any other subresource, yields no errors.
//!
//! Not (yet) covered: pod and container `securityContext`, affinity, topology spread
//! constraints, resource claims, `os`, overhead and the pod-specific annotations; the
//! sources of rarely used volume types (counted for "exactly one source", not checked
//! inside); StatefulSet `volumeClaimTemplates`; PersistentVolume node affinity and per-driver
//! fields; PersistentVolumeClaim status; Service IP-family policy consistency; the Pod
//! `binding`, `ephemeralcontainers` and `resize` subresources.
//!
//! Two renderings differ from upstream by necessity: a "may not change" error on a Pod, a
//! PersistentVolume or a PersistentVolumeClaim ends with upstream's `cmp.Diff` of internal Go
//! structs, which is rendered here as a diff of the changed JSON fields (the first line, which
//! clients match, is upstream's); and values upstream prints as internal Go structs (such as a
//! whole pod template) are printed with their JSON field names. Go's x509 and PEM error texts
//! for malformed certificate requests are approximated.
#![forbid(unsafe_code)]

use kgc_meta::FieldError;
use serde_json::Value;

mod admission_policy;
mod cel;
mod config;
mod container;
mod cron;
mod cronjob;
mod csr;
mod daemonset;
mod deployment;
mod diff;
mod event;
mod field;
mod job;
mod json;
mod json_syntax;
mod labels;
mod lease;
mod limit_range;
mod namespace;
mod net;
mod node;
mod pod;
mod policy;
mod replica_set;
mod resource_quota;
mod resources;
mod service;
mod statefulset;
mod storage;
mod taint;
#[cfg(test)]
mod testutil;
mod volume;
mod webhook;
mod workload;

/// Go's `time.ParseDuration` (nanoseconds, Go's error text), for the `kgc.io/*` annotations
/// that take a duration.
pub use cron::parse_duration as parse_go_duration;
/// robfig/cron's standard parser, which the CronJob controller computes its schedule times from.
pub use cron::{STAR_BIT as CRON_STAR_BIT, Schedule as CronSchedule, parse_standard as parse_cron};

/// The errors upstream's validation finds in `obj`, a built-in object of `group`/`kind` (core
/// is `""`), in upstream's order; empty when it is valid or the kind is not covered.
///
/// `old` is the stored object on an update (`None` on create) and `subresource` the
/// subresource written (`Some("status")`, `Some("approval")`, `Some("finalize")`, ...; `None`
/// for the object itself). `obj` should have been decoded and defaulted
/// (`kgc_meta::defaults::apply`) and, where upstream's registry prepares the object before
/// validating it (a Job's generated selector, allocated Service IPs), prepared likewise.
/// Values of unexpected JSON types read as Go's zero value; nothing here panics.
pub fn validate(
    group: &str,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<FieldError> {
    let op = match (old, subresource) {
        (None, None) => Op::Create,
        (Some(old), None) => Op::Update(old),
        (Some(old), Some(sub)) => Op::Subresource(sub, old),
        // Subresources are only ever written to existing objects.
        (None, Some(_)) => return Vec::new(),
    };
    let mut errs = field::Errors::default();
    let e = &mut errs;
    let whole = matches!(op, Op::Create | Op::Update(_));
    match (group, kind) {
        ("", "ConfigMap") if whole => config::config_map(obj, op.old(), e),
        ("", "Secret") if whole => config::secret(obj, op.old(), e),
        ("", "Pod") => pod::pod(obj, op, e),
        ("", "PodTemplate") if whole => pod::pod_template(obj, e),
        ("", "ReplicationController") => replica_set::replication_controller(obj, op, e),
        ("", "Service") => service::service(obj, op, e),
        ("", "Namespace") => namespace::namespace(obj, op, e),
        ("", "LimitRange") if whole => limit_range::limit_range(obj, e),
        ("", "Node") if whole || op.is_status() => node::node(obj, op.old(), e),
        ("", "PersistentVolume") if whole => storage::persistent_volume(obj, op.old(), e),
        ("", "PersistentVolumeClaim") if whole => {
            storage::persistent_volume_claim(obj, op.old(), e);
        }
        ("", "ResourceQuota") if whole || op.is_status() => {
            resource_quota::resource_quota(obj, op, e);
        }
        ("", "Event") if whole => event::event(obj, op.old(), false, e),
        ("events.k8s.io", "Event") if whole => event::event(obj, op.old(), true, e),
        ("apps", "Deployment") => deployment::deployment(obj, op, e),
        ("apps", "ReplicaSet") => replica_set::replica_set(obj, op, e),
        ("apps", "StatefulSet") => statefulset::stateful_set(obj, op, e),
        ("apps", "DaemonSet") => daemonset::daemon_set(obj, op, e),
        ("batch", "Job") => job::job(obj, op, e),
        ("batch", "CronJob") if whole => cronjob::cron_job(obj, op.old(), e),
        ("storage.k8s.io", "StorageClass") if whole => storage::storage_class(obj, op.old(), e),
        ("coordination.k8s.io", "Lease") if whole => lease::lease(obj, e),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") if whole => {
            webhook::configuration(obj, false, e)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") if whole => {
            webhook::configuration(obj, true, e)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") if whole => {
            admission_policy::policy(obj, e)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") if whole => {
            admission_policy::binding(obj, e)
        }
        ("policy", "PodDisruptionBudget") => policy::pod_disruption_budget(obj, op, e),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            csr::certificate_signing_request(obj, op, e)
        }
        _ => {}
    }
    errs.into_vec()
}

/// What is written: a new object, the object itself over a stored one, or one of its
/// subresources (with the stored object).
#[derive(Clone, Copy)]
pub(crate) enum Op<'a> {
    Create,
    Update(&'a Value),
    Subresource(&'a str, &'a Value),
}

impl<'a> Op<'a> {
    /// The stored object, on any update.
    pub(crate) fn old(self) -> Option<&'a Value> {
        match self {
            Self::Create => None,
            Self::Update(old) | Self::Subresource(_, old) => Some(old),
        }
    }

    pub(crate) fn is_status(self) -> bool {
        matches!(self, Self::Subresource("status", _))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const KINDS: &[(&str, &str)] = &[
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("", "Service"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ResourceQuota"),
        ("", "Event"),
        ("events.k8s.io", "Event"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("storage.k8s.io", "StorageClass"),
        ("coordination.k8s.io", "Lease"),
        ("policy", "PodDisruptionBudget"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
    ];

    /// Field names the validators read, so generated objects reach deep into them.
    const FIELDS: &[&str] = &[
        "spec",
        "metadata",
        "template",
        "status",
        "containers",
        "initContainers",
        "ephemeralContainers",
        "volumes",
        "ports",
        "env",
        "envFrom",
        "valueFrom",
        "fieldRef",
        "resourceFieldRef",
        "selector",
        "matchLabels",
        "matchExpressions",
        "labels",
        "annotations",
        "name",
        "image",
        "key",
        "operator",
        "values",
        "type",
        "rollingUpdate",
        "maxUnavailable",
        "maxSurge",
        "replicas",
        "data",
        "binaryData",
        "immutable",
        "schedule",
        "timeZone",
        "jobTemplate",
        "clusterIP",
        "clusterIPs",
        "conditions",
        "request",
        "usages",
        "signerName",
        "capacity",
        "accessModes",
        "resources",
        "requests",
        "limits",
        "storage",
        "hostPath",
        "path",
        "nfs",
        "projected",
        "sources",
        "serviceAccountToken",
        "tolerations",
        "taints",
        "effect",
        "completionMode",
        "podFailurePolicy",
        "rules",
        "onExitCodes",
        "onPodConditions",
        "successPolicy",
        "podCIDRs",
        "completions",
        "parallelism",
        "regarding",
        "eventTime",
        "series",
        "count",
        "items",
        "mode",
        "defaultMode",
        "restartPolicy",
        "dnsPolicy",
        "dnsConfig",
        "nameservers",
        "volumeMounts",
        "mountPath",
        "subPath",
        "livenessProbe",
        "httpGet",
        "exec",
        "lifecycle",
        "preStop",
        "sleep",
        "ipFamilies",
        "externalIPs",
        "loadBalancer",
        "ingress",
        "ip",
        "hostname",
        "parameters",
        "provisioner",
        "updateStrategy",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
        "secret",
        "configMap",
        "ephemeral",
        "volumeClaimTemplate",
        "csi",
        "driver",
        "completedIndexes",
        "failedIndexes",
        "uncountedTerminatedPods",
        "podIPs",
        "containerStatuses",
        "state",
        "terminated",
        "succeededIndexes",
        "succeededCount",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "nodeSelector",
        "schedulingGates",
        "hostNetwork",
        "protocol",
        "port",
        "targetPort",
        "nodePort",
        "containerPort",
        "hostPort",
        "strategy",
        "manualSelector",
        "uid",
        "deletionTimestamp",
        "certificate",
        "startTime",
        "completionTime",
        "volumeDevices",
        "devicePath",
        "periodSeconds",
    ];

    /// Values that steer validators into their branches, plus hostile ones.
    const WORDS: &[&str] = &[
        "",
        "RollingUpdate",
        "Recreate",
        "OnDelete",
        "Indexed",
        "NonIndexed",
        "None",
        "Always",
        "Never",
        "OnFailure",
        "TZ=UTC * * * *",
        "TZ=",
        "@every 1m",
        "@every",
        "*/0 * * * *",
        "1Gi",
        "-1",
        "500m",
        "10e2147483647",
        "1e-2147483648",
        "10.0.0.1",
        "fd00::/64",
        "Local",
        "True",
        "False",
        "Approved",
        "Denied",
        "Complete",
        "Failed",
        "LoadBalancer",
        "ExternalName",
        "NodePort",
        "ClusterIP",
        "kubernetes.io/dockercfg",
        "kubernetes.io/tls",
        "e30=",
        "!!",
        "1-3,5",
        "3-1",
        "v1",
        "metadata.labels['a']",
        "Exists",
        "In",
        "NotIn",
        "é\u{0}\u{202e}",
        "Bidirectional",
        "25%",
        "101%",
    ];

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-3i64..70_000).prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            prop::sample::select(WORDS).prop_map(Value::from),
            "[ -~]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(prop::sample::select(FIELDS), inner, 0..6).prop_map(
                    |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                ),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the shape of the input, validation answers (and never panics).
        #[test]
        fn never_panics(
            obj in arb_json(),
            old in arb_json(),
            kind in prop::sample::select(KINDS),
            sub in prop::sample::select(&[None, Some("status"), Some("approval"), Some("finalize")][..]),
        ) {
            let (group, kind) = kind;
            let _ = validate(group, kind, &obj, None, None);
            let _ = validate(group, kind, &obj, Some(&old), None);
            let _ = validate(group, kind, &obj, Some(&old), sub);
            let _ = validate(group, kind, &obj, Some(&obj), sub);
        }
    }

    /// Rich valid objects whose every field the mutation test below replaces in turn.
    fn fixtures() -> Vec<(&'static str, &'static str, Value)> {
        let pod_spec = json!({
            "containers": [{"name": "c", "image": "i", "ports": [{"name": "http", "containerPort": 80, "hostPort": 80}],
                "env": [{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "envFrom": [{"configMapRef": {"name": "cm"}}],
                "resources": {"limits": {"cpu": "1", "hugepages-2Mi": "2Mi"}, "requests": {"cpu": "500m"}},
                "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x", "mountPropagation": "None", "recursiveReadOnly": "Disabled"}],
                "volumeDevices": [{"name": "b", "devicePath": "/dev/b"}],
                "livenessProbe": {"httpGet": {"port": "http", "httpHeaders": [{"name": "X-A", "value": "1"}]}, "successThreshold": 1},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}],
            "initContainers": [{"name": "i", "image": "i", "restartPolicy": "Always", "startupProbe": {"grpc": {"port": 9000}, "successThreshold": 1}}],
            "volumes": [
                {"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}, {"downwardAPI": {"items": [{"path": "l", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}}]}},
                {"name": "b", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
            ],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
            "dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["a.b"], "options": [{"name": "ndots"}]},
            "hostNetwork": true, "schedulingGates": [{"name": "g"}], "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["h"]}],
            "serviceAccountName": "sa", "activeDeadlineSeconds": 10,
        });
        let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec});
        let mut out = vec![
            (
                "",
                "Pod",
                json!({"metadata": {"name": "p"}, "spec": pod_spec.clone(), "status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}}),
            ),
            (
                "apps",
                "Deployment",
                json!({"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["x"]}]}, "template": template.clone(),
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}}, "progressDeadlineSeconds": 600}, "status": {"replicas": 1, "collisionCount": 1}}),
            ),
            (
                "apps",
                "StatefulSet",
                json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template.clone(), "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"}}, "ordinals": {"start": 1},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}}}),
            ),
            (
                "apps",
                "DaemonSet",
                json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template.clone(),
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"}}}}),
            ),
            (
                "",
                "ReplicationController",
                json!({"spec": {"selector": {"app": "a"}, "template": template.clone()}}),
            ),
            (
                "batch",
                "Job",
                json!({"metadata": {"name": "j", "uid": "u"}, "spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3, "backoffLimitPerIndex": 1, "maxFailedIndexes": 1,
                "selector": {"matchLabels": {"controller-uid": "u"}}, "template": template.clone(),
                "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 2]}}, {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
                "successPolicy": {"rules": [{"succeededIndexes": "0-1", "succeededCount": 1}]}},
                "status": {"completedIndexes": "0", "failedIndexes": "1", "uncountedTerminatedPods": {"succeeded": ["a"]}, "startTime": "2024-01-01T00:00:00Z",
                    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}}),
            ),
            (
                "batch",
                "CronJob",
                json!({"spec": {"schedule": "0 */2 * JAN-DEC mon-fri", "timeZone": "Europe/Paris", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {"template": template}}}}),
            ),
            (
                "",
                "Service",
                json!({"spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1", "fd00::1"], "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack",
                "ports": [{"name": "a", "port": 80, "targetPort": "web", "nodePort": 30000, "protocol": "TCP"}], "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10}},
                "externalTrafficPolicy": "Local", "healthCheckNodePort": 30001, "allocateLoadBalancerNodePorts": true, "loadBalancerSourceRanges": ["10.0.0.0/8"], "externalIPs": ["1.2.3.4"]},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP"}]}}}),
            ),
            (
                "",
                "PersistentVolume",
                json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "csi": {"driver": "d.example.com", "volumeHandle": "h"}, "persistentVolumeReclaimPolicy": "Delete"}}),
            ),
            (
                "",
                "PersistentVolumeClaim",
                json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
            ),
            (
                "events.k8s.io",
                "Event",
                json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}, "eventTime": "2024-01-01T00:00:00.000000Z", "reportingComponent": "a/b", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal", "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z"}}),
            ),
            (
                "",
                "Node",
                json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"capacity": {"cpu": "1"}, "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
            ),
            (
                "",
                "Secret",
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhIjpbMSwyXX0="}}),
            ),
            (
                "certificates.k8s.io",
                "CertificateSigningRequest",
                json!({"spec": {"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KQUFBQQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K", "signerName": "a.b/c", "usages": ["any"]},
                "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}}),
            ),
        ];
        for (g, k, obj) in &mut out {
            kgc_meta::defaults::apply(g, k, obj);
        }
        out
    }

    /// Every JSON pointer inside `v`.
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    pointers(c, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate() {
                    pointers(c, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Replacing any one field of a rich valid object by anything never panics, on create,
        /// update and the status subresource.
        #[test]
        fn mutated_fixtures_never_panic(pick in any::<prop::sample::Index>(), field in any::<prop::sample::Index>(), with in arb_json()) {
            let all = fixtures();
            let (group, kind, obj) = &all[pick.index(all.len())];
            let mut paths = Vec::new();
            pointers(obj, String::new(), &mut paths);
            let path = &paths[field.index(paths.len())];
            let mut mutated = obj.clone();
            match mutated.pointer_mut(path) {
                Some(slot) => *slot = with,
                None => mutated = with,
            }
            let _ = validate(group, kind, &mutated, None, None);
            let _ = validate(group, kind, &mutated, Some(obj), None);
            let _ = validate(group, kind, obj, Some(&mutated), None);
            let _ = validate(group, kind, &mutated, Some(obj), Some("status"));
        }
    }

    #[test]
    fn unknown_kinds_and_subresources_have_no_rules() {
        let junk = json!({"spec": {"replicas": -1}});
        assert!(validate("example.com", "Widget", &junk, None, None).is_empty());
        assert!(validate("rbac.authorization.k8s.io", "Role", &junk, None, None).is_empty());
        assert!(validate("", "ServiceAccount", &junk, None, None).is_empty());
        assert!(validate("apps", "Deployment", &junk, Some(&junk), Some("scale")).is_empty());
        assert_eq!(
            validate("apps", "Deployment", &junk, None, None)
                .first()
                .map(ToString::to_string),
            Some("spec.replicas: Invalid value: -1: must be greater than or equal to 0".to_owned())
        );
    }

    /// An upstream-shaped Deployment manifest, as kubectl sends it after defaulting, passes;
    /// the error kubectl users know best comes back word for word.
    #[test]
    fn defaulted_deployment_round_trip() {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}},
            },
        });
        kgc_meta::defaults::apply("apps", "Deployment", &mut d);
        assert_eq!(validate("apps", "Deployment", &d, None, None), vec![]);
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "nginx"});
        let errs: Vec<String> = validate("apps", "Deployment", &d, None, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"nginx\"}: `selector` does not match template `labels`"
            ]
        );
    }
}
