//! What the managedFields bookkeeping of one write costs: `update_or_keep` on a realistic,
//! defaulted Deployment, as `kgc serve` calls it for every create, update and patch.
//!
//! ```text
//! cargo build --release -p kgc-managedfields --example update_bench
//! target/release/examples/update_bench [create|update|apply] N
//! ```
//!
//! * `create`: the creator's write (no old object): every field is recorded.
//! * `update`: a patch of the stored object (image and replicas changed) by a third manager,
//!   with the creator's and the controller's (status) entries already there.
//! * `apply`: a server-side apply of a partial configuration over the stored object.
//!
//! Prints the mean time per call. For figures that do not depend on the machine's load, run it
//! under `valgrind --tool=callgrind` with two values of N and divide the difference of the
//! instruction totals by the difference of N.

use std::hint::black_box;
use std::time::Instant;

use kgc_managedfields::{FieldSet, ListType, Manager, PathElement, Schema, apply, update_or_keep};
use serde_json::{Value, json};

/// The list semantics `kgc serve` gives a Deployment (the strategic-merge-patch table), with a
/// fresh key list on every call as the server's schema builds it.
struct Deployments;

impl Schema for Deployments {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path {
            [.., "containers"] | [.., "initContainers"] | [.., "env"] | [.., "volumes"] => {
                ListType::Map(vec!["name".into()])
            }
            [.., "containers", "ports"] => {
                ListType::Map(vec!["containerPort".into(), "protocol".into()])
            }
            ["metadata", "ownerReferences"] => ListType::Map(vec!["uid".into()]),
            ["metadata", "finalizers"] => ListType::Set,
            ["status", "conditions"] => ListType::Map(vec!["type".into()]),
            _ => ListType::Atomic,
        }
    }

    fn list_map_key_default(&self, _path: &[&str], key: &str) -> Option<Value> {
        (key == "protocol").then(|| Value::from("TCP"))
    }

    fn reset_fields(&self, subresource: &str) -> FieldSet {
        let mut s = FieldSet::new();
        match subresource {
            "" => s.insert(&[PathElement::field("status")]),
            "status" => s.insert(&[PathElement::field("spec")]),
            _ => {}
        }
        s
    }
}

/// A Deployment as the server stores it after defaulting (no status, no managedFields).
fn deployment(image: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "5f0c6a8e-0d3c-4a47-9a3e-2f1f3f6f0b1a",
            "resourceVersion": "1042", "generation": 1, "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": replicas, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "frontend"}},
                "spec": {"containers": [{"name": "web", "image": image, "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                    "env": [{"name": "MODE", "value": "production"}, {"name": "LOG_LEVEL", "value": "info"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                        "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                    "securityContext": {}, "schedulerName": "default-scheduler"}}}
    })
}

fn manager<'a>(name: &'a str, time: &'a str, subresource: &'a str) -> Manager<'a> {
    Manager {
        name,
        api_version: "apps/v1",
        time,
        subresource,
    }
}

/// The stored object: created by kubectl, then its status written by the controller.
fn stored() -> Value {
    let created = update_or_keep(
        None,
        &deployment("nginx:1.27", 3),
        &manager("kubectl-create", "2024-05-01T10:00:00Z", ""),
        &Deployments,
    );
    let mut with_status = created.clone();
    with_status["status"] = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
        "readyReplicas": 3, "availableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "lastUpdateTime": "2024-05-01T10:00:05Z", "lastTransitionTime": "2024-05-01T10:00:05Z",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "lastUpdateTime": "2024-05-01T10:00:05Z", "lastTransitionTime": "2024-05-01T10:00:01Z",
             "message": "ReplicaSet \"web-7d4b9c\" has successfully progressed."}]});
    update_or_keep(
        Some(&created),
        &with_status,
        &manager("kube-controller-manager", "2024-05-01T10:00:05Z", "status"),
        &Deployments,
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "create".into());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let new = deployment("nginx:1.27", 3);
    let old = stored();
    let mut patched = old.clone();
    patched["spec"]["replicas"] = json!(5);
    patched["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}});
    let create = manager("kubectl-create", "2024-05-01T10:00:00Z", "");
    let edit = manager("kubectl-edit", "2024-05-01T11:00:00Z", "");
    let start = Instant::now();
    for _ in 0..n {
        let out = match mode.as_str() {
            "create" => update_or_keep(None, black_box(&new), &create, &Deployments),
            "update" => update_or_keep(Some(&old), black_box(&patched), &edit, &Deployments),
            "apply" => apply(Some(&old), black_box(&config), &edit, true, &Deployments)
                .expect("the configuration applies"),
            other => panic!("unknown mode {other:?}: create, update or apply"),
        };
        black_box(out);
    }
    let per = start.elapsed().as_secs_f64() / n.max(1) as f64;
    println!("{mode}: {n} calls, {:.2} µs per call", per * 1e6);
}
