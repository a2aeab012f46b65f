//! ResourceQuota in `kgc serve` (issue 30, item 1), as kubectl users meet it: the controller
//! fills a quota's status, the admission plugin refuses what exceeds it with kube-apiserver's
//! message, charges are race-free under concurrent creates, a namespace `edit` user cannot
//! raise their own quota, and a Deployment larger than the quota gets exactly the quota's pods.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }))
    .expect("a pod")
}

/// The quota's `status.used[name]`, if computed.
async fn used(quotas: &Api<ResourceQuota>, quota: &str, name: &str) -> Option<String> {
    let q = quotas.get(quota).await.ok()?;
    let v = serde_json::to_value(q).ok()?;
    v["status"]["used"][name].as_str().map(str::to_owned)
}

async fn wait_used(quotas: &Api<ResourceQuota>, quota: &str, name: &str, want: &str) {
    eventually(&format!("status.used[{name}] = {want}"), T, || async {
        used(quotas, quota, name).await.as_deref() == Some(want)
    })
    .await;
}

/// `kubectl` as the user of `kubeconfig`.
async fn kubectl_as(
    s: &Server,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = s.kubectl_command(args);
    cmd.env("KUBECONFIG", kubeconfig);
    run_kubectl(cmd, "kubectl", args, None).await
}

#[tokio::test]
async fn a_quota_is_filled_in_enforced_with_upstreams_message_and_replenished() {
    // On disk: `add-user` needs the server's CA.
    let s = Server::start_secure(&[]).await;
    let ns = fresh_namespace(&s.client(), "quota").await;
    let editor = add_user(&s, "ed", &["-n", &ns, "--role", "edit"]);
    s.kubectl_ok(&["-n", &ns, "create", "quota", "q", "--hard=pods=20"])
        .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    wait_used(&quotas, "q", "pods", "0").await;
    let q = serde_json::to_value(quotas.get("q").await.unwrap()).unwrap();
    assert_eq!(q["status"]["hard"], json!({"pods": "20"}));

    // The editor creates 20 pods; the 21st is refused as kube-apiserver refuses it.
    for i in 0..20 {
        let out = kubectl_as(
            &s,
            &editor,
            &["-n", &ns, "run", &format!("p{i}"), "--image=nginx"],
        )
        .await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(used(&quotas, "q", "pods").await.as_deref(), Some("20"));
    let out = kubectl_as(&s, &editor, &["-n", &ns, "run", "p20", "--image=nginx"]).await;
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): pods \"p20\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=20, limited: pods=20"
    );
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        20
    );

    // The editor may not raise their own quota.
    let out = kubectl_as(
        &s,
        &editor,
        &[
            "-n",
            &ns,
            "patch",
            "quota",
            "q",
            "-p",
            r#"{"spec":{"hard":{"pods":"100"}}}"#,
        ],
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Forbidden") && err.contains("resourcequotas"),
        "{err}"
    );

    // A deleted pod gives its place back at once.
    s.kubectl_ok(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "p0",
        "--grace-period=0",
        "--force",
    ])
    .await;
    wait_used(&quotas, "q", "pods", "19").await;
    let out = kubectl_as(&s, &editor, &["-n", &ns, "run", "p20", "--image=nginx"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The admin raises it; the controller follows at once.
    s.kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "quota",
        "q",
        "-p",
        r#"{"spec":{"hard":{"pods":"30"}}}"#,
    ])
    .await;
    eventually("status.hard follows spec.hard", T, || async {
        let q = serde_json::to_value(quotas.get("q").await.unwrap()).unwrap();
        q["status"]["hard"]["pods"] == "30"
    })
    .await;
}

#[tokio::test]
async fn concurrent_creates_never_exceed_a_quota() {
    let s = Server::start_secure(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "race").await;
    s.kubectl_ok(&[
        "-n",
        &ns,
        "create",
        "quota",
        "q",
        "--hard=pods=10,count/configmaps=5",
    ])
    .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    wait_used(&quotas, "q", "pods", "0").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let creates = (0..60).map(|i| {
        let pods = pods.clone();
        async move {
            pods.create(&PostParams::default(), &pod(&format!("p{i}")))
                .await
        }
    });
    let results = futures::future::join_all(creates).await;
    let admitted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(admitted, 10);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        let kube::Error::Api(e) = r else {
            panic!("{r}")
        };
        assert_eq!(e.code, 403, "{}", e.message);
        assert!(e.message.contains("exceeded quota: q"), "{}", e.message);
    }
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        10
    );
    assert_eq!(used(&quotas, "q", "pods").await.as_deref(), Some("10"));

    // Object counts of any resource, likewise.
    let configmaps = (0..20).map(|i| {
        let s = &s;
        let ns = ns.clone();
        async move {
            s.kubectl(&["-n", &ns, "create", "configmap", &format!("c{i}")])
                .await
                .status
                .success()
        }
    });
    let made = futures::future::join_all(configmaps)
        .await
        .into_iter()
        .filter(|ok| *ok)
        .count();
    // kube-root-ca.crt may or may not be there yet: it counts too.
    let all: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(s.client(), &ns);
    let stored = all.list(&ListParams::default()).await.unwrap().items.len();
    assert!(stored <= 5 && made <= 5, "{stored} stored, {made} created");
}

#[tokio::test]
async fn bad_quotas_are_refused_with_422() {
    let s = Server::start_secure(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "badquota").await;
    let out = s
        .kubectl(&["-n", &ns, "create", "quota", "q", "--hard=foo=1"])
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified"),
        "{err}"
    );
    let out = s
        .kubectl(&[
            "-n",
            &ns,
            "create",
            "quota",
            "q",
            "--hard=configmaps=1",
            "--scopes=BestEffort",
        ])
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unsupported scope applied to resource"),
        "{err}"
    );
}

#[tokio::test]
async fn a_deployment_larger_than_the_quota_gets_the_quotas_pods() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "big").await;
    s.kubectl_ok(&["-n", &ns, "create", "quota", "q", "--hard=pods=20"])
        .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    wait_used(&quotas, "q", "pods", "0").await;
    s.kubectl_ok(&[
        "create",
        "deployment",
        "-n",
        &ns,
        "web",
        "--image=nginx",
        "--replicas=50",
    ])
    .await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    eventually("20 pods", T, || async {
        pods.list(&ListParams::default()).await.unwrap().items.len() == 20
    })
    .await;
    wait_used(&quotas, "q", "pods", "20").await;
    consistently("no more than 20 pods", Duration::from_secs(2), || async {
        pods.list(&ListParams::default()).await.unwrap().items.len() == 20
    })
    .await;
    let q: Value = serde_json::to_value(quotas.get("q").await.unwrap()).unwrap();
    assert_eq!(q["status"]["used"]["pods"], "20");
}

/// The server's resident memory in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The attack of issue 30: a Deployment of 1,000,000 replicas under `pods=100` makes 100 pods
/// and a `ReplicaFailure` condition naming the quota, not a flood of refused requests: each
/// failed sync of the ReplicaSet costs one refused create (slow start stops at the first
/// refusal) and is retried after the queue's back-off. The server's memory stays bounded.
#[tokio::test]
async fn a_million_replicas_under_a_quota_make_the_quotas_pods_and_a_condition() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "million").await;
    s.kubectl_ok(&["-n", &ns, "create", "quota", "q", "--hard=pods=100"])
        .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    wait_used(&quotas, "q", "pods", "0").await;
    s.kubectl_ok(&[
        "create",
        "deployment",
        "-n",
        &ns,
        "web",
        "--image=nginx",
        "--replicas=1000000",
    ])
    .await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    eventually("100 pods", T, || async {
        pods.list(&ListParams::default()).await.unwrap().items.len() == 100
    })
    .await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(s.client(), &ns);
    let refused = "exceeded quota: q, requested: pods=1, used: pods=100, limited: pods=100";
    eventually(
        "the Deployment's ReplicaFailure names the quota",
        T,
        || async {
            let d = serde_json::to_value(deployments.get("web").await.unwrap()).unwrap();
            d["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    c["type"] == "ReplicaFailure"
                        && c["status"] == "True"
                        && c["message"].as_str().is_some_and(|m| m.contains(refused))
                })
        },
    )
    .await;
    // Both counters from one scrape: the first retries come 5 ms apart, and two scrapes a few
    // milliseconds apart would count refusals and failed syncs over different windows.
    let counters = || async {
        let text = metrics_text(&s.client()).await;
        (
            counter_in(&text, r#"kgc_apiserver_requests_total{code="403"}"#),
            counter_in(&text, r#"workqueue_retries_total{name="replicaset"}"#),
        )
    };
    let before = counters().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = counters().await;
    let made = pods.list(&ListParams::default()).await.unwrap().items.len();
    assert_eq!(made, 100, "pods after the back-off window");
    let (refusals, failed_syncs) = (after.0 - before.0, after.1 - before.1);
    assert!(
        refusals <= failed_syncs + 2.0 && refusals <= 40.0,
        "{refusals} refused requests for {failed_syncs} failed syncs in 5 s"
    );
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        100
    );
    let rss = rss_kib(s.pid());
    assert!(rss < 512 * 1024, "the server holds {rss} KiB");
}

/// Server-side apply is charged as every other write: a claim's storage (in total and per
/// StorageClass) when it creates one, a Service's NodePorts when it changes its type. And any
/// object count is given back at once when its object goes.
#[tokio::test]
async fn server_side_apply_is_charged_and_object_counts_replenish_at_once() {
    let s = Server::start().await;
    object_counts_replenish_at_once(&s).await;
    let ns = fresh_namespace(&s.client(), "quota-ssa").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "q"},
        "spec": {"hard": {
            "requests.storage": "2Gi",
            "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
            "services.nodeports": "1",
        }},
    }))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    wait_used(&quotas, "q", "services.nodeports", "0").await;
    let apply = |path: String, body: Value| {
        let s = &s;
        async move {
            let path = format!("{path}?fieldManager=ssa-test");
            s.raw(
                "PATCH",
                &path,
                Some("application/apply-patch+yaml"),
                body.to_string(),
            )
            .await
        }
    };
    let claim = |name: &str, size: &str| {
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"storageClassName": "gold", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}},
        })
    };
    let claims = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims");
    let created = apply(format!("{claims}/a"), claim("a", "1Gi")).await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(
        used(&quotas, "q", "requests.storage").await.as_deref(),
        Some("1Gi")
    );
    let refused = apply(format!("{claims}/b"), claim("b", "1Gi")).await;
    assert_status(
        &refused,
        403,
        "Forbidden",
        "persistentvolumeclaims \"b\" is forbidden: exceeded quota: q, requested: \
         gold.storageclass.storage.k8s.io/requests.storage=1Gi, used: \
         gold.storageclass.storage.k8s.io/requests.storage=1Gi, limited: \
         gold.storageclass.storage.k8s.io/requests.storage=1Gi",
    );

    let service = |name: &str, type_: &str| {
        json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": type_, "selector": {"app": name}, "ports": [{"port": 80}]},
        })
    };
    let services = format!("/api/v1/namespaces/{ns}/services");
    for name in ["s", "t"] {
        let created = apply(format!("{services}/{name}"), service(name, "ClusterIP")).await;
        assert_eq!(created.status, 201, "{}", created.text());
    }
    let changed = apply(format!("{services}/s"), service("s", "NodePort")).await;
    assert_eq!(changed.status, 200, "{}", changed.text());
    assert_eq!(
        used(&quotas, "q", "services.nodeports").await.as_deref(),
        Some("1")
    );
    let refused = apply(format!("{services}/t"), service("t", "NodePort")).await;
    assert_status(
        &refused,
        403,
        "Forbidden",
        "services \"t\" is forbidden: exceeded quota: q, requested: services.nodeports=1, \
         used: services.nodeports=1, limited: services.nodeports=1",
    );
    let t = s
        .raw("GET", &format!("{services}/t"), None, "")
        .await
        .json();
    assert_eq!(t["spec"]["type"], "ClusterIP");
}

/// A `count/<resource>.<group>` of a resource the controller does not always watch is given
/// back when its object is deleted, not at the next resync (5 minutes), as upstream's quota
/// monitors do.
async fn object_counts_replenish_at_once(s: &Server) {
    let ns = fresh_namespace(&s.client(), "quota-count").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client(), &ns);
    let name = "count/leases.coordination.k8s.io";
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "q"}, "spec": {"hard": {name: "1"}},
    }))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    wait_used(&quotas, "q", name, "0").await;
    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    let lease = |n: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": n}})
            .to_string()
    };
    let created = s
        .raw("POST", &leases, Some("application/json"), lease("a"))
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let refused = s
        .raw("POST", &leases, Some("application/json"), lease("b"))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let deleted = s.raw("DELETE", &format!("{leases}/a"), None, "").await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    wait_used(&quotas, "q", name, "0").await;
    let created = s
        .raw("POST", &leases, Some("application/json"), lease("b"))
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
}
