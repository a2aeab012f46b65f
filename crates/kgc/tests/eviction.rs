//! Issue 30, "eviction with PodDisruptionBudgets": `kubectl drain` evicts a node's pods as a
//! budget allows, the disruption controller keeps `kubectl get pdb` filled in, a budget with no
//! disruption left answers 429 naming itself, evictions racing for a budget's disruptions win
//! no more than it allows, a namespace `edit` user may evict there, and the controller records
//! upstream's events about budgets. One living, secure server with
//! three simulated nodes serves every scenario, each in its own namespace.

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use kgc_testsupport::*;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(60);
const NODES: [&str; 3] = ["kgc-node-0", "kgc-node-1", "kgc-node-2"];

#[tokio::test]
async fn eviction_respects_pod_disruption_budgets() {
    let s = Server::living_secure(&["--nodes", "3"]).await;
    // The drain cordons nodes, so it goes first and alone.
    drain_respects_the_budget(&s).await;
    tokio::join!(
        status_is_filled_in(&s),
        no_disruption_left_is_a_429_naming_the_budget(&s),
        concurrent_evictions_spend_each_disruption_once(&s),
        an_edit_user_evicts_in_their_namespace(&s),
        budgets_record_upstreams_events(&s),
    );
}

/// A Deployment `name` of `replicas` pods labelled `app: name`, stopping within a second.
async fn deployment(s: &Server, ns: &str, name: &str, replicas: u32) {
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    });
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &d.to_string())
        .await;
}

/// A PodDisruptionBudget `name` over `app: app` with `spec` (`minAvailable` or
/// `maxUnavailable`).
async fn budget(s: &Server, ns: &str, name: &str, app: &str, spec: Value) {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    let pdb = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns}, "spec": spec,
    });
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &pdb.to_string())
        .await;
}

async fn get_json(c: &Client, path: &str) -> Value {
    let r = raw(c, "GET", path, None, Vec::new()).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    r.json()
}

async fn budget_status(s: &Server, ns: &str, name: &str) -> Value {
    let path = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}");
    get_json(&s.client(), &path).await["status"].clone()
}

/// Waits until the budget allows `allowed` disruptions with `healthy` pods healthy.
async fn budget_settles(s: &Server, ns: &str, name: &str, healthy: i64, allowed: i64) {
    eventually(
        &format!("budget {ns}/{name}: {healthy} healthy, {allowed} allowed"),
        T,
        || async {
            let st = budget_status(s, ns, name).await;
            st["currentHealthy"] == healthy && st["disruptionsAllowed"] == allowed
        },
    )
    .await;
}

/// The names of the ready pods labelled `app: app`, not being deleted, with their nodes.
async fn ready_pods(c: &Client, ns: &str, app: &str) -> Vec<(String, String)> {
    let list = get_json(
        c,
        &format!("/api/v1/namespaces/{ns}/pods?labelSelector=app%3D{app}"),
    )
    .await;
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .map(|p| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (s(&p["metadata"]["name"]), s(&p["spec"]["nodeName"]))
        })
        .collect()
}

async fn evict(c: &Client, ns: &str, pod: &str) -> RawResponse {
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                      "metadata": {"name": pod, "namespace": ns}});
    raw(
        c,
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}/eviction"),
        Some("application/json"),
        body.to_string(),
    )
    .await
}

/// `kubectl drain` of a node holding all three pods of a Deployment whose budget keeps two:
/// the drain evicts one pod at a time, retrying on the budget's 429 until a replacement is
/// ready elsewhere, and never leaves fewer than two pods ready.
async fn drain_respects_the_budget(s: &Server) {
    let ns = fresh_namespace(&s.client(), "drain").await;
    let (home, others) = (NODES[0], &NODES[1..]);
    for n in others {
        s.kubectl_ok(&["cordon", n]).await;
    }
    deployment(s, &ns, "web", 3).await;
    budget(s, &ns, "web", "web", json!({"minAvailable": 2})).await;
    budget_settles(s, &ns, "web", 3, 1).await;
    let pods = ready_pods(&s.client(), &ns, "web").await;
    assert!(pods.iter().all(|(_, n)| n == home), "{pods:?}");
    for n in others {
        s.kubectl_ok(&["uncordon", n]).await;
    }

    // Watch the ready count while the drain runs.
    let done = Arc::new(AtomicBool::new(false));
    let fewest = Arc::new(AtomicUsize::new(usize::MAX));
    let watcher = {
        let (c, ns, done, fewest) = (s.client(), ns.clone(), done.clone(), fewest.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                let ready = ready_pods(&c, &ns, "web").await.len();
                fewest.fetch_min(ready, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let out = s
        .kubectl(&[
            "drain",
            home,
            "--pod-selector=app=web",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=120s",
        ])
        .await;
    done.store(true, Ordering::SeqCst);
    watcher.await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("node/{home} drained")), "{stdout}");
    assert_eq!(stdout.matches("evicted").count(), 3, "{stdout}");
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    assert!(fewest.load(Ordering::SeqCst) >= 2, "the budget was broken");
    eventually("three pods ready away from the drained node", T, || async {
        let pods = ready_pods(&s.client(), &ns, "web").await;
        pods.len() == 3 && pods.iter().all(|(_, n)| n != home)
    })
    .await;
    s.kubectl_ok(&["uncordon", home]).await;
}

/// The controller fills in the status from the Deployment's scale; `kubectl get pdb` shows it;
/// a pod two budgets select cannot be evicted (upstream's 500).
async fn status_is_filled_in(s: &Server) {
    let ns = fresh_namespace(&s.client(), "status").await;
    deployment(s, &ns, "api", 3).await;
    budget(s, &ns, "api", "api", json!({"minAvailable": 2})).await;
    budget(s, &ns, "half", "api", json!({"maxUnavailable": "50%"})).await;
    budget_settles(s, &ns, "api", 3, 1).await;
    let st = budget_status(s, &ns, "api").await;
    assert_eq!(
        (
            &st["expectedPods"],
            &st["desiredHealthy"],
            &st["observedGeneration"]
        ),
        (&json!(3), &json!(2), &json!(1)),
        "{st}"
    );
    let cond = &st["conditions"][0];
    assert_eq!(
        (&cond["type"], &cond["status"], &cond["reason"]),
        (
            &json!("DisruptionAllowed"),
            &json!("True"),
            &json!("SufficientPods")
        ),
        "{st}"
    );
    // 50% of the Deployment's 3 replicas, rounded up, may be unavailable: 1 must stay.
    budget_settles(s, &ns, "half", 3, 2).await;
    let st = budget_status(s, &ns, "half").await;
    assert_eq!(
        (&st["expectedPods"], &st["desiredHealthy"]),
        (&json!(3), &json!(1)),
        "{st}"
    );
    let table = s.kubectl_ok(&["get", "pdb", "-n", &ns, "api"]).await;
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..4], ["api", "2", "N/A", "1"], "{table}");

    let (pod, _) = ready_pods(&s.client(), &ns, "api").await.remove(0);
    let r = evict(&client_from(&s.kubeconfig_path()).await, &ns, &pod).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
}

/// A budget with no disruption left refuses with 429 and names itself; a dry run of an
/// allowed eviction changes nothing.
async fn no_disruption_left_is_a_429_naming_the_budget(s: &Server) {
    let ns = fresh_namespace(&s.client(), "full").await;
    deployment(s, &ns, "db", 2).await;
    budget(s, &ns, "db", "db", json!({"minAvailable": 2})).await;
    budget_settles(s, &ns, "db", 2, 0).await;
    let (pod, _) = ready_pods(&s.client(), &ns, "db").await.remove(0);
    let r = evict(&client_from(&s.kubeconfig_path()).await, &ns, &pod).await;
    assert_status(
        &r,
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    assert_eq!(
        r.json()["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget db needs 2 healthy pods and has 2 currently"}])
    );
    let st = budget_status(s, &ns, "db").await;
    assert_eq!(st["conditions"][0]["reason"], "InsufficientPods", "{st}");

    // Once the budget allows one, a dry run spends nothing.
    budget(s, &ns, "db", "db", json!({"minAvailable": 1})).await;
    budget_settles(s, &ns, "db", 2, 1).await;
    let dry = raw(
        &client_from(&s.kubeconfig_path()).await,
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}/eviction?dryRun=All"),
        Some("application/json"),
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}})
            .to_string(),
    )
    .await;
    assert_eq!(dry.status, 201, "{}", dry.text());
    assert_eq!(budget_status(s, &ns, "db").await["disruptionsAllowed"], 1);
    let p = get_json(&s.client(), &format!("/api/v1/namespaces/{ns}/pods/{pod}")).await;
    assert!(p["metadata"]["deletionTimestamp"].is_null(), "{p}");
}

/// Ten evictions racing for a budget's two disruptions: two 201s, eight 429s. The pods have no
/// controller, so nothing replaces an evicted one and gives the budget a disruption back
/// meanwhile: any third 201 would be a disruption spent twice.
async fn concurrent_evictions_spend_each_disruption_once(s: &Server) {
    let ns = fresh_namespace(&s.client(), "race").await;
    let pods: Vec<Value> = (0..10)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": format!("cache-{i}"), "namespace": ns,
                                "labels": {"app": "cache"}},
                   "spec": {"terminationGracePeriodSeconds": 1,
                            "containers": [{"name": "c", "image": "nginx"}]}})
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &list.to_string())
        .await;
    budget(s, &ns, "cache", "cache", json!({"minAvailable": 8})).await;
    budget_settles(s, &ns, "cache", 10, 2).await;
    let c = client_from(&s.kubeconfig_path()).await;
    let all = futures::future::join_all((0..10).map(|i| {
        let (c, ns) = (c.clone(), ns.clone());
        async move { evict(&c, &ns, &format!("cache-{i}")).await }
    }))
    .await;
    let mut codes: Vec<u16> = all.iter().map(|r| r.status).collect();
    codes.sort_unstable();
    assert_eq!(codes, [201, 201, 429, 429, 429, 429, 429, 429, 429, 429]);
    let st = budget_status(s, &ns, "cache").await;
    assert_eq!(st["disruptionsAllowed"], 0, "{st}");
    eventually("the budget to count the eight pods left", T, || async {
        let st = budget_status(s, &ns, "cache").await;
        st["currentHealthy"] == 8 && st["disruptionsAllowed"] == 0
    })
    .await;
}

/// A client of `kubeconfig` that shows every answer: kube-rs would otherwise retry a 429 for
/// minutes (its default retry policy), where kubectl reports it.
async fn client_from(kubeconfig: &Path) -> Client {
    let kc = Kubeconfig::read_from(kubeconfig).expect("reading a kubeconfig");
    let opts = KubeConfigOptions {
        context: Some("kgc".into()),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .expect("loading a kubeconfig");
    config.default_retry = false;
    Client::try_from(config).expect("building a client")
}

/// The `edit` role includes `pods/eviction` create: a namespace user may evict there, not
/// elsewhere; the evicted pod is marked `DisruptionTarget` and replaced.
async fn an_edit_user_evicts_in_their_namespace(s: &Server) {
    let ns = fresh_namespace(&s.client(), "team").await;
    let elsewhere = fresh_namespace(&s.client(), "other").await;
    let user = unique("evictor");
    let kubeconfig = add_user(s, &user, &["-n", &ns, "--role", "edit"]);
    let c = client_from(&kubeconfig).await;
    deployment(s, &ns, "app", 2).await;
    budget(s, &ns, "app", "app", json!({"maxUnavailable": 1})).await;
    budget_settles(s, &ns, "app", 2, 1).await;
    let (pod, _) = ready_pods(&s.client(), &ns, "app").await.remove(0);
    let r = evict(&c, &elsewhere, &pod).await;
    assert_eq!(r.status, 403, "{}", r.text());
    let r = evict(&c, &ns, &pod).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    let path = format!("/api/v1/namespaces/{ns}/pods/{pod}");
    let gone_or_marked = raw(&s.client(), "GET", &path, None, Vec::new()).await;
    if gone_or_marked.status == 200 {
        let p = gone_or_marked.json();
        let marked = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "DisruptionTarget" && c["reason"] == "EvictionByEvictionAPI");
        assert!(
            marked && !p["metadata"]["deletionTimestamp"].is_null(),
            "{p}"
        );
    }
    budget_settles(s, &ns, "app", 2, 1).await;
    assert!(
        !ready_pods(&s.client(), &ns, "app")
            .await
            .iter()
            .any(|(n, _)| *n == pod)
    );
}

/// The event `reason` about the budget `name`, once recorded.
async fn budget_event(s: &Server, ns: &str, name: &str, reason: &str) -> Value {
    let path = format!(
        "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{name},reason%3D{reason}"
    );
    let first = || async { get_json(&s.client(), &path).await["items"][0].clone() };
    eventually(
        &format!("a {reason} event about {ns}/{name}"),
        T,
        || async { !first().await.is_null() },
    )
    .await;
    first().await
}

/// The disruption controller's events (`pkg/controller/disruption/disruption.go`): a budget
/// selecting no pod, and one whose pods have no controller while it needs their scale.
async fn budgets_record_upstreams_events(s: &Server) {
    let ns = fresh_namespace(&s.client(), "pdb-events").await;
    budget(s, &ns, "empty", "nothing", json!({"minAvailable": 1})).await;
    let event = budget_event(s, &ns, "empty", "NoPods").await;
    assert_eq!(
        (
            &event["type"],
            &event["message"],
            &event["source"]["component"]
        ),
        (
            &json!("Normal"),
            &json!("No matching pods found"),
            &json!("controllermanager")
        ),
        "{event}"
    );
    assert_eq!(event["involvedObject"]["kind"], "PodDisruptionBudget");

    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bare", "namespace": ns, "labels": {"app": "bare"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    });
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &pod.to_string())
        .await;
    budget(s, &ns, "bare", "bare", json!({"maxUnavailable": 1})).await;
    let event = budget_event(s, &ns, "bare", "UnmanagedPods").await;
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(
        event["message"],
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:\
         map[string]string{app: bare,},MatchExpressions:[]LabelSelectorRequirement{},}) were \
         found to be unmanaged. As a result, the status of the PDB cannot be calculated \
         correctly, which may result in undefined behavior. To account for these pods please \
         set \".spec.minAvailable\" field of the PDB to an integer value."
    );
}
