//! The simulated kubelet end to end: a living `kgc serve`, a simulated Node the test creates
//! itself (annotation, podCIDR, InternalIP), pods bound to it by `spec.nodeName`; no status is
//! forged.

kgc_testsupport::bind_kgc!();

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kgc_testsupport::pods::phase;
use kgc_testsupport::{consistently, eventually, fresh_namespace, metrics_text, typed};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

/// A living server with short back-offs and GC periods, whose nodes are the test's: the test
/// registers them and writes their addresses, standing in for the nodes simulator.
async fn server(extra: &[&str]) -> Server {
    let mut args = vec![
        "--in-memory",
        "--nodes=0",
        "--disable=nodes-sim,node-lifecycle,job",
        "--initial-container-restart-period",
        "1s",
        "--image-gc-period",
        "1s",
        "--container-gc-period",
        "1s",
    ];
    args.extend_from_slice(extra);
    Server::living(&args).await
}

/// A simulated node, as the nodes simulator (or a user) registers one.
async fn simulated_node(client: &Client, name: &str, cidr: &str, ip: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = typed(json!({
        "metadata": {"name": name, "annotations": {"kgc.io/simulated": "true"}},
        "spec": {"podCIDR": cidr},
    }));
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = json!({"status": {"addresses": [
        {"type": "InternalIP", "address": ip},
        {"type": "Hostname", "address": name},
    ]}});
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

fn pod(name: &str, node: &str, extra: serde_json::Value) -> Pod {
    let mut p = json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "nginx:1.25"}],
        },
    });
    merge(&mut p, extra);
    typed(p)
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

async fn wait_pod(pods: &Api<Pod>, name: &str, what: &str, cond: impl Fn(&Pod) -> bool) -> Pod {
    let until = Instant::now() + DEADLINE;
    loop {
        if let Ok(p) = pods.get(name).await
            && cond(&p)
        {
            return p;
        }
        assert!(
            Instant::now() < until,
            "timed out waiting for {name}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_bound_pod_runs_with_the_status_a_kubelet_writes() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-a", "10.244.7.0/24", "172.18.0.7").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let both = json!({"cpu": "100m", "memory": "64Mi"});
    let spec = json!({"spec": {
        "initContainers": [{"name": "setup", "image": "busybox",
                            "resources": {"requests": both, "limits": both}}],
        "containers": [{"name": "app", "image": "nginx:1.25",
                        "resources": {"requests": both, "limits": both}}],
    }});
    pods.create(&PostParams::default(), &pod("web", "sim-a", spec))
        .await
        .unwrap();
    let p = wait_pod(&pods, "web", "Running", |p| phase(p) == "Running").await;
    let st = p.status.unwrap();
    let conditions: Vec<(&str, &str)> = st
        .conditions
        .iter()
        .flatten()
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect();
    assert_eq!(
        conditions,
        [
            ("PodReadyToStartContainers", "True"),
            ("Initialized", "True"),
            ("Ready", "True"),
            ("ContainersReady", "True"),
            ("PodScheduled", "True"),
        ]
    );
    assert_eq!(st.host_ip.as_deref(), Some("172.18.0.7"));
    assert_eq!(st.host_ips.unwrap()[0].ip, "172.18.0.7");
    let ip = st.pod_ip.clone().unwrap();
    assert!(ip.starts_with("10.244.7."), "{ip}");
    assert_eq!(st.pod_ips.unwrap()[0].ip, ip);
    assert!(st.start_time.is_some());
    assert_eq!(st.qos_class.as_deref(), Some("Guaranteed"));
    let c = &st.container_statuses.unwrap()[0];
    assert_eq!(c.name, "app");
    assert_eq!(c.image, "docker.io/library/nginx:1.25");
    assert!(
        c.image_id.starts_with("docker.io/library/nginx@sha256:"),
        "{}",
        c.image_id
    );
    let id = c.container_id.as_deref().unwrap();
    assert!(
        id.starts_with("containerd://") && id.len() == 13 + 64,
        "{id}"
    );
    assert_eq!((c.ready, c.started, c.restart_count), (true, Some(true), 0));
    assert!(
        c.state
            .as_ref()
            .unwrap()
            .running
            .as_ref()
            .unwrap()
            .started_at
            .is_some()
    );
    let init = &st.init_container_statuses.unwrap()[0];
    let done = init.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (done.exit_code, done.reason.as_deref()),
        (0, Some("Completed"))
    );
    // The node reports the images it pulled.
    let nodes: Api<Node> = Api::all(client.clone());
    eventually("the node lists its images", DEADLINE, || async {
        let n = nodes.get("sim-a").await.unwrap();
        let names: Vec<String> = n
            .status
            .and_then(|s| s.images)
            .into_iter()
            .flatten()
            .flat_map(|i| i.names.unwrap_or_default())
            .collect();
        names.iter().any(|n| n == "docker.io/library/nginx:1.25")
            && names
                .iter()
                .any(|n| n == "docker.io/library/busybox:latest")
    })
    .await;
}

#[tokio::test]
async fn job_pods_complete_and_restart_policies_decide_what_follows() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-b", "10.244.8.0/24", "172.18.0.8").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let job: Job = typed(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }));
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    let owned = json!({
        "metadata": {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
            "name": "once", "uid": job.metadata.uid, "controller": true}]},
        "spec": {"restartPolicy": "Never"},
    });
    let flaky = json!({
        "metadata": {"annotations": {"kgc.io/run-for": "1s", "kgc.io/exit-code": "1"}},
        "spec": {"restartPolicy": "OnFailure"},
    });
    let failing = json!({
        "metadata": {"annotations": {"kgc.io/run-for": "1s", "kgc.io/exit-code": "1"}},
        "spec": {"restartPolicy": "Never"},
    });
    let malformed = json!({"metadata": {"annotations": {"kgc.io/run-for": "soon"}}});
    for (name, extra) in [
        ("job-pod", owned),
        ("flaky", flaky),
        ("failing", failing),
        ("malformed", malformed),
    ] {
        pods.create(&PostParams::default(), &pod(name, "sim-b", extra))
            .await
            .unwrap();
    }
    let done = wait_pod(&pods, "job-pod", "Succeeded", |p| phase(p) == "Succeeded").await;
    let c = &done.status.unwrap().container_statuses.unwrap()[0];
    let t = c.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (t.exit_code, t.reason.as_deref(), c.ready),
        (0, Some("Completed"), false)
    );

    let failed = wait_pod(&pods, "failing", "Failed", |p| phase(p) == "Failed").await;
    let c = &failed.status.unwrap().container_statuses.unwrap()[0];
    let t = c.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (1, Some("Error")));

    // OnFailure restarts: the first at once, then after the (shortened) back-off.
    let restarted = wait_pod(&pods, "flaky", "two restarts", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|cs| cs[0].restart_count >= 2)
    })
    .await;
    assert_eq!(phase(&restarted), "Running");
    let c = &restarted.status.unwrap().container_statuses.unwrap()[0];
    let last = c.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(last.exit_code, 1);

    // A malformed annotation is reported; the pod runs as if it were absent.
    let p = wait_pod(&pods, "malformed", "Running", |p| phase(p) == "Running").await;
    assert_eq!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count,
        0
    );
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    eventually("an InvalidAnnotation event", DEADLINE, || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("InvalidAnnotation")
                    && e.involved_object.name.as_deref() == Some("malformed")
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("kgc.io/run-for"))
            })
    })
    .await;
}

#[tokio::test]
async fn graceful_deletion_waits_for_the_grace_period() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-c", "10.244.9.0/24", "172.18.0.9").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    // Four seconds, of which the deletionTimestamp (whole seconds) keeps at least three; the
    // container ignores SIGTERM for an hour, so it is killed when the grace period ends.
    let extra = json!({"metadata": {"annotations": {"kgc.io/stop-after": "1h"}},
                       "spec": {"terminationGracePeriodSeconds": 4}});
    pods.create(&PostParams::default(), &pod("slow", "sim-c", extra))
        .await
        .unwrap();
    wait_pod(&pods, "slow", "Running", |p| phase(p) == "Running").await;
    let deleted = Instant::now();
    pods.delete("slow", &DeleteParams::default()).await.unwrap();
    consistently(
        "the pod stays during its grace period",
        Duration::from_millis(2000),
        || async { pods.get_opt("slow").await.unwrap().is_some() },
    )
    .await;
    eventually("the pod is deleted", DEADLINE, || async {
        pods.get_opt("slow").await.unwrap().is_none()
    })
    .await;
    assert!(deleted.elapsed() >= Duration::from_secs(3));
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let killing = events.list(&ListParams::default()).await.unwrap().items;
    assert!(
        killing
            .iter()
            .any(|e| e.reason.as_deref() == Some("Killing")
                && e.message.as_deref() == Some("Stopping container app")),
        "{killing:?}"
    );
}

/// A container stops on SIGTERM at once by default, as nginx does: the deletion completes in
/// well under a second, not after the 30 s grace period; `kgc.io/stop-after` slows the stop.
#[tokio::test]
async fn deleted_pods_stop_at_once_unless_told_to_stop_slowly() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-stop", "10.244.21.0/24", "172.18.0.21").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let slow = json!({"metadata": {"annotations": {"kgc.io/stop-after": "2s"}}});
    pods.create(
        &PostParams::default(),
        &pod("prompt", "sim-stop", json!({})),
    )
    .await
    .unwrap();
    pods.create(&PostParams::default(), &pod("slow", "sim-stop", slow))
        .await
        .unwrap();
    for name in ["prompt", "slow"] {
        wait_pod(&pods, name, "Running", |p| phase(p) == "Running").await;
    }
    let deleted = Instant::now();
    pods.delete("prompt", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the pod is deleted at once",
        Duration::from_secs(5),
        || async { pods.get_opt("prompt").await.unwrap().is_none() },
    )
    .await;
    assert!(
        deleted.elapsed() < Duration::from_secs(1),
        "{:?}",
        deleted.elapsed()
    );
    let deleted = Instant::now();
    pods.delete("slow", &DeleteParams::default()).await.unwrap();
    eventually("the slow pod is deleted", DEADLINE, || async {
        pods.get_opt("slow").await.unwrap().is_none()
    })
    .await;
    let took = deleted.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

/// A pod mounting a Secret, ConfigMap or claim that does not exist is not started: it waits in
/// `ContainerCreating` with `FailedMount` events, and starts once they appear; an optional
/// Secret that is missing does not hold it.
#[tokio::test]
async fn pods_wait_for_the_objects_their_volumes_mount() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-mount", "10.244.22.0/24", "172.18.0.22").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let volumes = json!({"spec": {"volumes": [
        {"name": "creds", "secret": {"secretName": "db"}},
        {"name": "maybe", "secret": {"secretName": "absent", "optional": true}},
        {"name": "conf", "configMap": {"name": "settings"}},
    ]}});
    pods.create(&PostParams::default(), &pod("mounts", "sim-mount", volumes))
        .await
        .unwrap();
    let waiting = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first()?.state.as_ref()?.waiting.as_ref()?.reason.clone())
    };
    wait_pod(&pods, "mounts", "ContainerCreating", |p| {
        phase(p) == "Pending" && waiting(p).as_deref() == Some("ContainerCreating")
    })
    .await;
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    eventually("FailedMount events as a kubelet words them", DEADLINE, || async {
        let all = events.list(&ListParams::default()).await.unwrap().items;
        let said = |m: &str| {
            all.iter().any(|e| {
                e.reason.as_deref() == Some("FailedMount") && e.message.as_deref() == Some(m)
            })
        };
        said("MountVolume.SetUp failed for volume \"creds\" : secret \"db\" not found")
            && said(
                "MountVolume.SetUp failed for volume \"conf\" : configmap \"settings\" not found",
            )
    })
    .await;
    consistently("the pod waits", Duration::from_millis(500), || async {
        phase(&pods.get("mounts").await.unwrap()) == "Pending"
    })
    .await;
    let secret: k8s_openapi::api::core::v1::Secret =
        typed(json!({"metadata": {"name": "db"}, "stringData": {"password": "x"}}));
    Api::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        typed(json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}));
    let created = Instant::now();
    Api::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    wait_pod(&pods, "mounts", "Running", |p| phase(p) == "Running").await;
    assert!(
        created.elapsed() < Duration::from_secs(3),
        "started when the ConfigMap appeared, not on a resync: {:?}",
        created.elapsed()
    );
}

async fn metric(client: &Client, line: &str) -> bool {
    metrics_text(client).await.lines().any(|l| l == line)
}

#[tokio::test]
async fn image_gc_removes_unused_images_oldest_first_and_keeps_images_in_use() {
    let s = server(&[
        "--node-image-fs-size",
        "1000Mi",
        "--minimum-image-ttl-duration",
        "0s",
    ])
    .await;
    let client = s.client();
    simulated_node(&client, "sim-d", "10.244.10.0/24", "172.18.0.10").await;
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let sized = |image: &str| {
        json!({"metadata": {"annotations": {"kgc.io/image-size": "300Mi"}},
               "spec": {"containers": [{"name": "app", "image": image}]}})
    };
    // Two images used and let go, one after the other, so that the first is the older;
    // 600Mi of 1000Mi stays under the high threshold (85%).
    for (i, image) in ["example.com/first:1", "example.com/second:1"]
        .iter()
        .enumerate()
    {
        let name = format!("p{i}");
        pods.create(&PostParams::default(), &pod(&name, "sim-d", sized(image)))
            .await
            .unwrap();
        wait_pod(&pods, &name, "Running", |p| phase(p) == "Running").await;
        pods.delete(&name, &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
        let removed = format!("kgc_kubelet_dead_containers_removed_total {}", i + 1);
        eventually(
            "container GC removes the deleted pod's container",
            DEADLINE,
            || metric(&client, &removed),
        )
        .await;
    }
    // A third image in use: 900Mi is 90%, GC frees down to 80% (100Mi): the oldest unused
    // image goes, the other unused one and the one in use stay.
    pods.create(
        &PostParams::default(),
        &pod("p2", "sim-d", sized("example.com/third:1")),
    )
    .await
    .unwrap();
    wait_pod(&pods, "p2", "Running", |p| phase(p) == "Running").await;
    eventually("image GC removes one image for space", DEADLINE, || {
        metric(
            &client,
            "kubelet_image_garbage_collected_total{reason=\"space\"} 1",
        )
    })
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    eventually(
        "status.images without the oldest image",
        DEADLINE,
        || async {
            let n = nodes.get("sim-d").await.unwrap();
            let names: Vec<String> = n
                .status
                .and_then(|s| s.images)
                .into_iter()
                .flatten()
                .flat_map(|i| i.names.unwrap_or_default())
                .collect();
            !names.iter().any(|n| n == "example.com/first:1")
                && names.iter().any(|n| n == "example.com/second:1")
                && names.iter().any(|n| n == "example.com/third:1")
        },
    )
    .await;
    assert!(
        metric(
            &client,
            "kubelet_image_garbage_collected_total{reason=\"space\"} 1"
        )
        .await
    );
    // What went is on the node's events too (kgc's own reason: upstream only logs it).
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    eventually(
        "an ImageGarbageCollected event on the node",
        DEADLINE,
        || async {
            events
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .iter()
                .any(|e| {
                    e.involved_object.name.as_deref() == Some("sim-d")
                        && e.reason.as_deref() == Some("ImageGarbageCollected")
                        && e.message.as_deref().is_some_and(|m| {
                            m.starts_with("Removed 1 image, ")
                                && m.ends_with(": example.com/first:1")
                        })
                })
        },
    )
    .await;
}

#[tokio::test]
async fn a_stopped_nodes_pods_wait_for_it_to_start() {
    let s = server(&[]).await;
    let client = s.client();
    simulated_node(&client, "sim-e", "10.244.11.0/24", "172.18.0.11").await;
    let nodes: Api<Node> = Api::all(client.clone());
    let annotate =
        |stopped: Option<&str>| json!({"metadata": {"annotations": {"kgc.io/stopped": stopped}}});
    nodes
        .patch(
            "sim-e",
            &PatchParams::default(),
            &Patch::Merge(&annotate(Some("true"))),
        )
        .await
        .unwrap();
    let ns = fresh_namespace(&client, "kubelet").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod("waiting", "sim-e", json!({})))
        .await
        .unwrap();
    consistently(
        "the pod stays Pending while its kubelet is down",
        Duration::from_millis(1500),
        || async { phase(&pods.get("waiting").await.unwrap()) == "Pending" },
    )
    .await;
    nodes
        .patch(
            "sim-e",
            &PatchParams::default(),
            &Patch::Merge(&annotate(None)),
        )
        .await
        .unwrap();
    wait_pod(&pods, "waiting", "Running", |p| phase(p) == "Running").await;
}
