//! Simulated nodes and the node-lifecycle controller against a living `kgc serve` (nothing
//! forged): the registered node's capacity, labels and conditions, its lease (renewed, owned by
//! it, collected with it), a user's annotated node, `kgc node stop` making a node Unknown and
//! unreachable (and the departed-nodes collector deleting it), `kgc node start` bringing it
//! back, and a bad `--node-capacity`.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kgc_testsupport::{KgcBinary, eventually};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

kgc_testsupport::bind_kgc!();

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

async fn get<K>(api: &Api<K>, name: &str) -> Option<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.expect("GET")
}

fn condition<'a>(
    node: &'a Node,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

fn ready(node: &Node) -> Option<&str> {
    condition(node, "Ready").map(|c| c.status.as_str())
}

fn taints(node: &Node) -> Vec<(String, String)> {
    let spec = node.spec.clone().unwrap_or_default();
    spec.taints
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.effect))
        .collect()
}

/// Waits for `name` to be Ready=`status` and returns it.
async fn wait_ready(api: &Api<Node>, name: &str, status: &str, deadline: Duration) -> Node {
    eventually(&format!("node {name} Ready={status}"), deadline, || async {
        get(api, name)
            .await
            .is_some_and(|n| ready(&n) == Some(status))
    })
    .await;
    get(api, name).await.expect("the node")
}

fn renew_time(lease: &Lease) -> jiff::Timestamp {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .expect("renewTime")
        .0
}

#[tokio::test]
async fn the_default_node_is_ready_and_its_lease_lives_and_dies_with_it() {
    let s = Server::living(&["--in-memory"]).await;
    let nodes: Api<Node> = Api::all(s.client());
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-node-lease");
    let node = wait_ready(&nodes, "kgc-node-0", "True", secs(20)).await;

    let status = node.status.clone().unwrap();
    let capacity = status.capacity.clone().unwrap();
    assert_eq!(
        (
            capacity["cpu"].0.as_str(),
            capacity["memory"].0.as_str(),
            capacity["pods"].0.as_str()
        ),
        ("8", "32Gi", "110")
    );
    assert_eq!(status.allocatable, status.capacity);
    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], "kgc-node-0");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(
        labels["kubernetes.io/arch"],
        labels["beta.kubernetes.io/arch"]
    );
    assert_eq!(
        node.metadata.annotations.clone().unwrap()["kgc.io/simulated"],
        "true"
    );
    assert_eq!(
        node.spec.clone().unwrap().pod_cidr.as_deref(),
        Some("10.244.0.0/24")
    );
    let types: Vec<&str> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    );
    let r = condition(&node, "Ready").unwrap();
    assert_eq!(r.reason.as_deref(), Some("KubeletReady"));
    assert_eq!(
        r.message.as_deref(),
        Some("kubelet is posting ready status")
    );
    let addresses: Vec<(&str, &str)> = status
        .addresses
        .iter()
        .flatten()
        .map(|a| (a.type_.as_str(), a.address.as_str()))
        .collect();
    assert_eq!(
        addresses,
        [("InternalIP", "172.16.0.2"), ("Hostname", "kgc-node-0")]
    );
    assert!(
        status
            .node_info
            .unwrap()
            .kubelet_version
            .starts_with("kgc-")
    );
    assert!(taints(&node).is_empty(), "{:?}", taints(&node));

    // The lease: held by the node, 40 s, owned by it exactly as the kubelet owns it.
    eventually("the node's lease", secs(10), || async {
        get(&leases, "kgc-node-0").await.is_some()
    })
    .await;
    let lease = get(&leases, "kgc-node-0").await.unwrap();
    let spec = lease.spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("kgc-node-0"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let owners = lease.metadata.owner_references.clone().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].api_version.as_str(), owners[0].kind.as_str()),
        ("v1", "Node")
    );
    assert_eq!(owners[0].name, "kgc-node-0");
    assert_eq!(Some(&owners[0].uid), node.metadata.uid.as_ref());
    assert_eq!(
        (owners[0].controller, owners[0].block_owner_deletion),
        (None, None)
    );

    // Renewed (every 10 s, the first at a random point of the interval).
    let first = renew_time(&lease);
    eventually("a lease renewal", secs(25), || async {
        get(&leases, "kgc-node-0")
            .await
            .is_some_and(|l| renew_time(&l) > first)
    })
    .await;

    // Deleted with its node by the owner-reference collector.
    nodes
        .delete("kgc-node-0", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the lease collected with its node", secs(20), || async {
        get(&leases, "kgc-node-0").await.is_none()
    })
    .await;
    // The simulator does not register a deleted node again.
    tokio::time::sleep(secs(1)).await;
    assert!(get(&nodes, "kgc-node-0").await.is_none());
}

#[tokio::test]
async fn a_node_a_user_creates_with_the_annotation_is_simulated() {
    let s = Server::living(&["--in-memory"]).await;
    let nodes: Api<Node> = Api::all(s.client());
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-node-lease");
    wait_ready(&nodes, "kgc-node-0", "True", secs(20)).await;
    let mine: Node = serde_json::from_value(json!({
        "metadata": {
            "name": "my-node",
            "annotations": {"kgc.io/simulated": "true"},
            "labels": {"kubernetes.io/hostname": "custom", "pool": "a"},
        },
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &mine).await.unwrap();
    let fixed: Node = serde_json::from_value(json!({
        "metadata": {"name": "my-cidr", "annotations": {"kgc.io/simulated": "true"}},
        "spec": {"podCIDR": "192.168.7.0/24"},
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &fixed).await.unwrap();
    let plain: Node =
        serde_json::from_value(json!({"metadata": {"name": "not-simulated"}})).unwrap();
    nodes.create(&PostParams::default(), &plain).await.unwrap();
    let typo: Node = serde_json::from_value(json!({
        "metadata": {"name": "typo", "annotations": {"kgc.io/simulated": "yes"}},
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &typo).await.unwrap();

    let node = wait_ready(&nodes, "my-node", "True", secs(20)).await;
    // The first free range (kgc-node-0 holds 10.244.0.0/24); the user's labels stay.
    assert_eq!(
        node.spec.clone().unwrap().pod_cidr.as_deref(),
        Some("10.244.1.0/24")
    );
    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(
        (
            labels["kubernetes.io/hostname"].as_str(),
            labels["pool"].as_str()
        ),
        ("custom", "a")
    );
    assert_eq!(labels["kubernetes.io/os"], "linux");
    let internal = node.status.clone().unwrap().addresses.unwrap()[0].clone();
    assert_eq!(
        (internal.type_.as_str(), internal.address.as_str()),
        ("InternalIP", "172.16.0.3")
    );
    eventually("my-node's lease", secs(10), || async {
        get(&leases, "my-node").await.is_some()
    })
    .await;

    let node = wait_ready(&nodes, "my-cidr", "True", secs(20)).await;
    assert_eq!(
        node.spec.clone().unwrap().pod_cidr.as_deref(),
        Some("192.168.7.0/24")
    );
    // A node without the annotation is left alone.
    let plain = get(&nodes, "not-simulated").await.unwrap();
    assert_eq!(ready(&plain), None);
    assert!(get(&leases, "not-simulated").await.is_none());
    // A malformed annotation: a Warning Event on the node says so, and it is not simulated.
    let events: Api<Event> = Api::namespaced(s.client(), "default");
    eventually("the InvalidAnnotation event", secs(20), || async {
        let list = events.list(&Default::default()).await.unwrap();
        list.items.iter().any(|e| {
            e.reason.as_deref() == Some("InvalidAnnotation")
                && e.involved_object.name.as_deref() == Some("typo")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("annotation kgc.io/simulated: \"yes\" is neither"))
        })
    })
    .await;
    assert_eq!(ready(&get(&nodes, "typo").await.unwrap()), None);
}

#[tokio::test]
async fn stopped_nodes_go_unknown_unreachable_and_departed_ones_are_deleted() {
    let s = Server::living(&[
        "--in-memory",
        "--nodes",
        "3",
        // More than the 10 s between two lease renewals, as upstream requires.
        "--node-monitor-grace-period",
        "15s",
        "--node-monitor-period",
        "500ms",
        "--node-gone-after",
        "8s",
        "--node-exists-command",
        "test \"$1\" != kgc-node-1 #",
    ])
    .await;
    let nodes: Api<Node> = Api::all(s.client());
    for i in 0..3 {
        wait_ready(&nodes, &format!("kgc-node-{i}"), "True", secs(20)).await;
    }
    let kubeconfig = s.kubeconfig_path();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let node_cmd = |verb: &str, name: &str| {
        Kgc::run(&[
            "node",
            verb,
            name,
            "--kubeconfig",
            kubeconfig,
            "--context",
            "kgc",
        ])
    };
    // A Ready pod on kgc-node-2. Its status is the kubelet's to write; where no simulated
    // kubelet runs, the test writes what one would.
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "on-node-2"},
        "spec": {"nodeName": "kgc-node-2", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pod_ready = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status.clone())
    };
    if pod_ready(&pods.get("on-node-2").await.unwrap()).is_none() {
        let status = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        pods.patch_status("on-node-2", &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
    }
    eventually("the pod Ready", secs(20), || async {
        pod_ready(&pods.get("on-node-2").await.unwrap()).as_deref() == Some("True")
    })
    .await;

    for name in ["kgc-node-1", "kgc-node-2"] {
        let (ok, out, err) = node_cmd("stop", name);
        assert!(ok, "kgc node stop {name}: {err}");
        assert_eq!(out.trim(), format!("node/{name} stopped"));
    }

    // Silent past the grace period: Unknown, as the node-lifecycle controller says it, and
    // tainted unreachable for scheduling and execution (one node is still Ready, so the zone
    // is not fully disrupted).
    let node = wait_ready(&nodes, "kgc-node-2", "Unknown", secs(60)).await;
    let r = condition(&node, "Ready").unwrap();
    assert_eq!(r.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        r.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    assert_eq!(
        condition(&node, "MemoryPressure").unwrap().status,
        "Unknown"
    );
    // (The zone's eviction rate limiter lets one node a 10 s get a NoExecute taint.)
    eventually("the unreachable taints", secs(30), || async {
        let t = taints(&get(&nodes, "kgc-node-2").await.unwrap());
        ["NoSchedule", "NoExecute"]
            .iter()
            .all(|e| t.contains(&("node.kubernetes.io/unreachable".into(), (*e).into())))
    })
    .await;
    assert_eq!(
        ready(&get(&nodes, "kgc-node-0").await.unwrap()),
        Some("True")
    );
    // The controller's events: each node registered, kgc-node-2 NotReady.
    let events: Api<Event> = Api::namespaced(s.client(), "default");
    eventually(
        "RegisteredNode and NodeNotReady events",
        secs(10),
        || async {
            let seen: Vec<(String, String, String)> = events
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|e| {
                    (
                        e.involved_object.name.unwrap_or_default(),
                        e.reason.unwrap_or_default(),
                        e.message.unwrap_or_default(),
                    )
                })
                .collect();
            let has = |node: &str, reason: &str, message: &str| {
                seen.iter()
                    .any(|e| (e.0.as_str(), e.1.as_str(), e.2.as_str()) == (node, reason, message))
            };
            (0..3).all(|i| {
                let n = format!("kgc-node-{i}");
                has(
                    &n,
                    "RegisteredNode",
                    &format!("Registered Node {n} in Controller"),
                )
            }) && has(
                "kgc-node-2",
                "NodeNotReady",
                "Node kgc-node-2 status is now: NodeNotReady",
            )
        },
    )
    .await;
    // Its pods are marked not Ready.
    eventually("the pod on the silent node not Ready", secs(10), || async {
        pod_ready(&pods.get("on-node-2").await.unwrap()).as_deref() == Some("False")
    })
    .await;

    // The machine of kgc-node-1 is gone (the command says so): the departed-nodes collector
    // deletes it.
    eventually("kgc-node-1 deleted", secs(60), || async {
        get(&nodes, "kgc-node-1").await.is_none()
    })
    .await;
    let (ok, _, err) = node_cmd("start", "kgc-node-1");
    assert!(!ok);
    assert_eq!(err.trim(), "kgc: error: node \"kgc-node-1\" not found");

    // Started again: Ready, untainted.
    let (ok, out, err) = node_cmd("start", "kgc-node-2");
    assert!(ok, "kgc node start: {err}");
    assert_eq!(out.trim(), "node/kgc-node-2 started");
    let node = wait_ready(&nodes, "kgc-node-2", "True", secs(20)).await;
    assert!(
        !node
            .metadata
            .annotations
            .unwrap()
            .contains_key("kgc.io/stopped")
    );
    eventually("the taints removed", secs(10), || async {
        taints(&get(&nodes, "kgc-node-2").await.unwrap()).is_empty()
    })
    .await;
    assert!(get(&nodes, "kgc-node-2").await.is_some());
}

#[test]
fn a_bad_node_capacity_is_one_line_naming_flag_and_key() {
    let (ok, _, err) = Kgc::run(&[
        "serve",
        "--in-memory",
        "--insecure-http",
        "--listen",
        "127.0.0.1:0",
        "--node-capacity",
        "cpu=8,memory=lots,pods=110",
    ]);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("kgc: error: --node-capacity: memory: \"lots\": quantities must match"),
        "{err}"
    );
    let (ok, _, err) = Kgc::run(&[
        "node",
        "stop",
        "x",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert!(!ok);
    // One line per cause.
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "kgc: error: reading the kubeconfig /nonexistent/kubeconfig",
            "  caused by: failed to read kubeconfig from '\"/nonexistent/kubeconfig\"': No such file or directory (os error 2)"
        ],
        "{err}"
    );
}
