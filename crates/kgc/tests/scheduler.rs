//! The scheduler against a living `kgc serve` (kubernetes/kubernetes pkg/scheduler): pods are
//! bound through `pods/binding` to a node that fits; a pod that fits nowhere carries upstream's
//! `PodScheduled=False` condition and message and is bound once a node fits; nodeSelector, node
//! affinity, taints and tolerations steer pods; a claim waiting for its first consumer is given
//! the node. Nodes are the test's own (Ready through their status subresource). The binding
//! subresource itself is tested with the scheduler off.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// The server: everything on, and none of the simulated nodes `kgc serve` registers by default,
/// so that the nodes are the test's.
async fn living() -> Server {
    // The tests make their own nodes: no simulated one.
    Server::living(&["--in-memory", "--nodes=0"]).await
}

/// A Ready node with `cpu` cores, `pods` pods, and `extra` merged into the object.
async fn node(s: &Server, name: &str, cpu: &str, pods: &str, extra: Value) {
    let api: Api<Node> = Api::all(s.client());
    let mut obj = json!({"metadata": {"name": name}});
    merge(&mut obj, extra);
    api.create(&PostParams::default(), &typed(obj))
        .await
        .unwrap();
    let resources = json!({"cpu": cpu, "memory": "8Gi", "pods": pods});
    let status = json!({"status": {
        "capacity": resources, "allocatable": resources,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}],
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

fn merge(into: &mut Value, extra: Value) {
    match (into, extra) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// A pod with one container requesting `cpu`, and `spec` merged into its spec.
async fn pod(s: &Server, ns: &str, name: &str, cpu: &str, spec: Value) {
    let mut obj = json!({"metadata": {"name": name}, "spec": {"containers": [{
        "name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}});
    merge(&mut obj["spec"], spec);
    Api::<Pod>::namespaced(s.client(), ns)
        .create(&PostParams::default(), &typed(obj))
        .await
        .unwrap();
}

async fn node_of(s: &Server, ns: &str, name: &str) -> Option<String> {
    let p = Api::<Pod>::namespaced(s.client(), ns)
        .get(name)
        .await
        .ok()?;
    p.spec?.node_name
}

async fn bound_to(s: &Server, ns: &str, name: &str, want: &str) {
    eventually(&format!("{ns}/{name} bound to {want}"), T, || async {
        node_of(s, ns, name).await.as_deref() == Some(want)
    })
    .await;
}

/// The pod's `PodScheduled` condition as `(status, reason, message)`.
async fn scheduled(s: &Server, ns: &str, name: &str) -> Option<(String, String, String)> {
    let p = Api::<Pod>::namespaced(s.client(), ns)
        .get(name)
        .await
        .ok()?;
    let c = p
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")?;
    Some((
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    ))
}

async fn unschedulable(s: &Server, ns: &str, name: &str, message: &str) {
    let want = Some((
        "False".to_owned(),
        "Unschedulable".to_owned(),
        message.to_owned(),
    ));
    eventually(&format!("{ns}/{name} unschedulable"), T, || async {
        scheduled(s, ns, name).await == want
    })
    .await;
}

/// The events about a pod, as `(type, reason, message)`.
async fn events(s: &Server, ns: &str, name: &str) -> Vec<(String, String, String)> {
    let lp = ListParams::default().fields(&format!("involvedObject.name={name}"));
    let list = Api::<Event>::namespaced(s.client(), ns)
        .list(&lp)
        .await
        .unwrap();
    list.items
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_pod_is_bound_to_the_node_that_fits() {
    let s = living().await;
    let ns = fresh_namespace(&s.client(), "sched").await;
    node(&s, "small", "1", "110", json!({})).await;
    node(&s, "big", "8", "110", json!({})).await;
    pod(&s, &ns, "p", "2", json!({})).await;
    bound_to(&s, &ns, "p", "big").await;
    let (status, _, _) = scheduled(&s, &ns, "p").await.unwrap();
    assert_eq!(status, "True");
    let want = (
        "Normal".to_owned(),
        "Scheduled".to_owned(),
        format!("Successfully assigned {ns}/p to big"),
    );
    eventually("the Scheduled event", T, || async {
        events(&s, &ns, "p").await.contains(&want)
    })
    .await;
    // Pods of another scheduler, or already placed, are left alone.
    pod(
        &s,
        &ns,
        "other",
        "1",
        json!({"schedulerName": "my-scheduler"}),
    )
    .await;
    pod(&s, &ns, "placed", "1", json!({"nodeName": "small"})).await;
    pod(&s, &ns, "after", "100m", json!({})).await;
    bound_to(&s, &ns, "after", "big").await;
    assert_eq!(node_of(&s, &ns, "other").await, None);
    assert_eq!(node_of(&s, &ns, "placed").await.as_deref(), Some("small"));
    assert_eq!(scheduled(&s, &ns, "other").await, None);
}

#[tokio::test]
async fn an_unschedulable_pod_says_why_and_is_bound_once_a_node_fits() {
    let s = living().await;
    let ns = fresh_namespace(&s.client(), "sched").await;
    node(&s, "n1", "1", "110", json!({})).await;
    node(
        &s,
        "n2",
        "8",
        "110",
        json!({"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
    )
    .await;
    node(&s, "n3", "8", "1", json!({"spec": {"unschedulable": true}})).await;
    pod(&s, &ns, "p", "2", json!({})).await;
    let message = "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint \
                   {k: v}, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: \
                   3 Preemption is not helpful for scheduling..";
    unschedulable(&s, &ns, "p", message).await;
    let want = (
        "Warning".to_owned(),
        "FailedScheduling".to_owned(),
        message.to_owned(),
    );
    eventually("the FailedScheduling event", T, || async {
        events(&s, &ns, "p").await.contains(&want)
    })
    .await;
    // A node that fits appears: the pod is bound to it.
    node(&s, "n4", "4", "110", json!({})).await;
    bound_to(&s, &ns, "p", "n4").await;
    let (status, reason, message) = scheduled(&s, &ns, "p").await.unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str(), message.as_str()),
        ("True", "", "")
    );
    // n4 has 2 of its 4 cores left: a pod asking for 3 waits, with the reasons counted.
    pod(&s, &ns, "q", "3", json!({})).await;
    let message = "0/4 nodes are available: 1 node(s) had untolerated taint {k: v}, 1 node(s) \
                   were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are available: \
                   1 No preemption victims found for incoming pod, 3 Preemption is not helpful \
                   for scheduling..";
    unschedulable(&s, &ns, "q", message).await;
    // Deleting the pod that holds the cores frees them.
    Api::<Pod>::namespaced(s.client(), &ns)
        .delete("p", &kube::api::DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    bound_to(&s, &ns, "q", "n4").await;
}

#[tokio::test]
async fn selectors_affinity_and_tolerations_steer_pods() {
    let s = living().await;
    let ns = fresh_namespace(&s.client(), "sched").await;
    node(
        &s,
        "a",
        "8",
        "110",
        json!({"metadata": {"labels": {"zone": "a", "cores": "16"}}}),
    )
    .await;
    node(
        &s,
        "b",
        "8",
        "110",
        json!({"metadata": {"labels": {"zone": "b"}},
               "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]}}),
    )
    .await;
    pod(
        &s,
        &ns,
        "by-selector",
        "1",
        json!({"nodeSelector": {"zone": "a"}}),
    )
    .await;
    let affinity = |term: Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [term]}}}})
    };
    let mut by_name = affinity(
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}),
    );
    by_name["tolerations"] = json!([{"key": "dedicated", "operator": "Exists"}]);
    pod(&s, &ns, "by-field", "1", by_name).await;
    pod(
        &s,
        &ns,
        "by-gt",
        "1",
        affinity(
            json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}),
        ),
    )
    .await;
    pod(
        &s,
        &ns,
        "untolerated",
        "1",
        affinity(
            json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
        ),
    )
    .await;
    bound_to(&s, &ns, "by-selector", "a").await;
    bound_to(&s, &ns, "by-field", "b").await;
    bound_to(&s, &ns, "by-gt", "a").await;
    unschedulable(
        &s,
        &ns,
        "untolerated",
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) \
         had untolerated taint {dedicated: x}. preemption: 0/2 nodes are available: 2 Preemption \
         is not helpful for scheduling..",
    )
    .await;
    // A pod tolerating the taint but matching no node's labels waits for a label to change.
    let mut tolerant =
        affinity(json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}));
    tolerant["tolerations"] = json!([{"key": "dedicated", "value": "x", "effect": "NoExecute"}]);
    pod(&s, &ns, "nowhere", "1", tolerant).await;
    unschedulable(
        &s,
        &ns,
        "nowhere",
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..",
    )
    .await;
    // Labelling a node is a cluster event: the waiting pod is tried again.
    let label = json!({"metadata": {"labels": {"zone": null}}});
    Api::<Node>::all(s.client())
        .patch("b", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    bound_to(&s, &ns, "nowhere", "b").await;
}

#[tokio::test]
async fn a_claim_waiting_for_its_first_consumer_is_given_the_node() {
    let s = living().await;
    let ns = fresh_namespace(&s.client(), "sched").await;
    let c = s.client();
    node(&s, "only", "8", "110", json!({})).await;
    let sc = unique("wffc");
    Api::<StorageClass>::all(c.clone())
        .create(
            &PostParams::default(),
            &typed(
                json!({"metadata": {"name": sc}, "provisioner": "example.com/test",
                          "volumeBindingMode": "WaitForFirstConsumer"}),
            ),
        )
        .await
        .unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(c.clone(), &ns);
    claims
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "data"}, "spec": {
                "storageClassName": sc, "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}})),
        )
        .await
        .unwrap();
    let volume = |claim: &str| json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]});
    pod(&s, &ns, "missing", "1", volume("nope")).await;
    unschedulable(
        &s,
        &ns,
        "missing",
        "0/1 nodes are available: persistentvolumeclaim \"nope\" not found. preemption: 0/1 \
         nodes are available: 1 Preemption is not helpful for scheduling..",
    )
    .await;
    pod(&s, &ns, "user", "1", volume("data")).await;
    eventually("the selected-node annotation", T, || async {
        let claim = claims.get("data").await.unwrap();
        claim
            .metadata
            .annotations
            .unwrap_or_default()
            .get("volume.kubernetes.io/selected-node")
            == Some(&"only".to_owned())
    })
    .await;
    // The pod waits for its claim to be bound: the test provisions as a provisioner would.
    assert_eq!(node_of(&s, &ns, "user").await, None);
    let pv = unique("pv");
    Api::<PersistentVolume>::all(c.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": pv}, "spec": {
                "storageClassName": sc, "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/tmp/kgc-test-pv"},
                "claimRef": {"namespace": ns, "name": "data"}}})),
        )
        .await
        .unwrap();
    claims
        .patch(
            "data",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"volumeName": pv}})),
        )
        .await
        .unwrap();
    bound_to(&s, &ns, "user", "only").await;
}

#[tokio::test]
async fn the_binding_subresource() {
    // The scheduler is off: the test binds.
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "bind").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    pod(&s, &ns, "p", "1", json!({})).await;
    let uid = pods.get("p").await.unwrap().metadata.uid.unwrap();
    let binding = |node: &str, uid: &str| {
        json!({"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "p", "uid": uid}, "target": {"kind": "Node", "name": node}})
    };
    // A uid precondition that does not hold.
    let e = api_error(
        pods.create_subresource::<_, Value>(
            "binding",
            "p",
            &PostParams::default(),
            &binding("n1", "wrong"),
        )
        .await,
    );
    assert_eq!(e.code, 409, "{e:?}");
    assert!(
        e.message
            .contains("Precondition failed: UID in precondition: wrong"),
        "{e:?}"
    );
    let status: Value = pods
        .create_subresource("binding", "p", &PostParams::default(), &binding("n1", &uid))
        .await
        .unwrap();
    assert_eq!(status["status"], "Success");
    let p = pods.get("p").await.unwrap();
    assert_eq!(p.spec.unwrap().node_name.as_deref(), Some("n1"));
    let c = p.status.unwrap().conditions.unwrap();
    assert!(
        c.iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True"),
        "{c:?}"
    );
    // Bound already: a Conflict on pods/binding, as kubectl shows it.
    let e = api_error(
        pods.create_subresource::<_, Value>(
            "binding",
            "p",
            &PostParams::default(),
            &binding("n2", &uid),
        )
        .await,
    );
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (
            409,
            "Conflict",
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
        )
    );
    let file = s.write_file("binding.json", &binding("n2", "").to_string());
    let path = format!("/api/v1/namespaces/{ns}/pods/p/binding");
    let out = s
        .kubectl(&["create", "--raw", &path, "-f", file.to_str().unwrap()])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("Error from server (Conflict)")
            && stderr.contains("is already assigned to node"),
        "{stderr}"
    );
    // A missing target, and a name that is not the URL's.
    let e = api_error(
        pods.create_subresource::<_, Value>(
            "binding",
            "p",
            &PostParams::default(),
            &json!({"metadata": {"name": "other"}, "target": {"name": "n1"}}),
        )
        .await,
    );
    assert_eq!(e.code, 400, "{e:?}");
    // Discovery lists the subresource, with create only.
    let doc = s.kubectl_ok(&["get", "--raw", "/api/v1"]).await;
    let doc: Value = serde_json::from_str(&doc).unwrap();
    let entry = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/binding")
        .cloned()
        .unwrap();
    assert_eq!(
        (entry["kind"].clone(), entry["verbs"].clone()),
        (json!("Binding"), json!(["create"]))
    );
}

#[tokio::test]
async fn binding_needs_create_on_pods_binding() {
    let s = Server::start_secure(&[]).await;
    let ns = fresh_namespace(&s.client(), "bindrbac").await;
    pod(&s, &ns, "p", "1", json!({})).await;
    let role = format!(
        r#"{{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {{"name": "binder", "namespace": "{ns}"}},
            "rules": [{{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}}]}}"#
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &role).await;
    for (sa, role) in [
        ("binder", "--role=binder"),
        ("viewer", "--clusterrole=view"),
    ] {
        s.kubectl_ok(&["-n", &ns, "create", "serviceaccount", sa])
            .await;
        let subject = format!("--serviceaccount={ns}:{sa}");
        s.kubectl_ok(&["-n", &ns, "create", "rolebinding", sa, role, &subject])
            .await;
    }
    let can = |sa: &'static str| {
        let (s, ns) = (&s, ns.clone());
        async move {
            let who = format!("--as=system:serviceaccount:{ns}:{sa}");
            let out = s
                .kubectl(&[
                    "auth",
                    "can-i",
                    "create",
                    "pods",
                    "--subresource=binding",
                    "-n",
                    &ns,
                    &who,
                ])
                .await;
            String::from_utf8_lossy(&out.stdout).trim() == "yes"
        }
    };
    // RBAC takes the new bindings in through its watch.
    eventually("the binder may bind", T, || can("binder")).await;
    assert!(!can("viewer").await);
    let file = s.write_file(
        "binding.json",
        &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                "target": {"kind": "Node", "name": "n1"}})
        .to_string(),
    );
    let path = format!("/api/v1/namespaces/{ns}/pods/p/binding");
    let f = file.to_str().unwrap();
    let viewer = format!("--as=system:serviceaccount:{ns}:viewer");
    let out = s
        .kubectl(&["create", "--raw", &path, "-f", f, &viewer])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error from server (Forbidden)")
            && stderr.contains("cannot create resource \"pods/binding\""),
        "{stderr}"
    );
    let binder = format!("--as=system:serviceaccount:{ns}:binder");
    s.kubectl_ok(&["create", "--raw", &path, "-f", f, &binder])
        .await;
    assert_eq!(node_of(&s, &ns, "p").await.as_deref(), Some("n1"));
}
