//! A Service's children on a living `kgc serve` (issue 32, items 1 and 2): the endpoints and
//! EndpointSlice controllers, ClusterIP and NodePort allocation, and qbec's rule that a deploy
//! never prunes what a controller made. One server runs every scenario, each in its own
//! namespace, concurrently.
//!
//! Pods whose readiness a scenario changes are bound to a node no kubelet runs, their status
//! written by the test as a kubelet would: the simulated kubelet reports every running pod
//! ready, and readiness is what these scenarios are about.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(60);

#[tokio::test]
async fn services_children_on_one_server() {
    let s = Server::living(&["--in-memory"]).await;
    tokio::join!(
        expose_lists_the_pods_addresses_and_named_ports(&s),
        readiness_headless_and_publish_not_ready(&s),
        a_service_over_250_pods_gets_three_slices(&s),
        cluster_ips_and_node_ports_are_allocated_checked_and_released(&s),
        pruning_a_service_takes_only_it_and_its_children(&s),
    );
}

async fn slices(s: &Server, ns: &str, svc: &str) -> Vec<EndpointSlice> {
    let api: Api<EndpointSlice> = Api::namespaced(s.client(), ns);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={svc}"));
    api.list(&lp).await.unwrap().items
}

async fn endpoints(s: &Server, ns: &str, name: &str) -> Option<Endpoints> {
    let api: Api<Endpoints> = Api::namespaced(s.client(), ns);
    api.get_opt(name).await.unwrap()
}

/// `(ready IPs, not ready IPs)` of an Endpoints object, sorted.
fn addresses(e: &Endpoints) -> (Vec<String>, Vec<String>) {
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for s in e.subsets.iter().flatten() {
        ready.extend(s.addresses.iter().flatten().map(|a| a.ip.clone()));
        not_ready.extend(s.not_ready_addresses.iter().flatten().map(|a| a.ip.clone()));
    }
    ready.sort();
    not_ready.sort();
    (ready, not_ready)
}

/// Every endpoint of the slices: `(ip, ready, serving, terminating)`, sorted.
fn slice_endpoints(slices: &[EndpointSlice]) -> Vec<(String, bool, bool, bool)> {
    let mut v: Vec<_> = slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .map(|e| {
            let c = e.conditions.clone().unwrap_or_default();
            (
                e.addresses[0].clone(),
                c.ready == Some(true),
                c.serving == Some(true),
                c.terminating == Some(true),
            )
        })
        .collect();
    v.sort();
    v
}

async fn expose_lists_the_pods_addresses_and_named_ports(s: &Server) {
    let ns = fresh_namespace(&s.client(), "expose").await;
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns, "labels": {"app": "web", "tier": "front"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}]}}}
    });
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &deployment.to_string())
        .await;
    s.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ])
    .await;
    s.kubectl_ok(&[
        "expose",
        "deployment",
        "-n",
        &ns,
        "web",
        "--port=80",
        "--target-port=http",
    ])
    .await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let mut ips: Vec<String> = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();
    ips.sort();
    assert_eq!(ips.len(), 2);
    eventually("the Endpoints list both pods", T, || async {
        endpoints(s, &ns, "web")
            .await
            .is_some_and(|e| addresses(&e).0 == ips)
    })
    .await;
    let e = endpoints(s, &ns, "web").await.unwrap();
    let subset = &e.subsets.as_ref().unwrap()[0];
    assert_eq!(subset.ports.as_ref().unwrap()[0].port, 8080);
    let labels = e.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("tier").map(String::as_str), Some("front"));
    assert!(e.metadata.owner_references.is_none());
    let annotations = e.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.contains_key("endpoints.kubernetes.io/last-change-trigger-time"));

    eventually("one slice with both pods", T, || async {
        let sl = slices(s, &ns, "web").await;
        sl.len() == 1 && slice_endpoints(&sl).len() == 2
    })
    .await;
    let svc: Api<Service> = Api::namespaced(s.client(), &ns);
    let uid = svc.get("web").await.unwrap().metadata.uid.unwrap();
    let slice = slices(s, &ns, "web").await.remove(0);
    let m = &slice.metadata;
    assert!(m.name.as_deref().unwrap().starts_with("web-"), "{m:?}");
    assert_eq!(m.generate_name.as_deref(), Some("web-"));
    let labels = m.labels.clone().unwrap();
    assert_eq!(
        labels
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpointslice-controller.k8s.io")
    );
    assert_eq!(labels.get("tier").map(String::as_str), Some("front"));
    let owner = &m.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Service", uid.as_str())
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(slice.address_type, "IPv4");
    let port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(port.port, Some(8080));
    for ep in slice.endpoints.iter().flatten() {
        assert_eq!(ep.node_name.as_deref(), Some("kgc-node-0"));
        let target = ep.target_ref.as_ref().unwrap();
        assert_eq!(target.kind.as_deref(), Some("Pod"));
        let c = ep.conditions.as_ref().unwrap();
        assert_eq!(
            (c.ready, c.serving, c.terminating),
            (Some(true), Some(true), Some(false))
        );
    }
    // What a user sees.
    let out = s
        .kubectl_ok(&["get", "endpoints,endpointslices", "-n", &ns])
        .await;
    for ip in &ips {
        assert!(out.contains(&format!("{ip}:8080")), "{out}");
        assert!(out.contains(ip.as_str()), "{out}");
    }
    assert!(out.contains("IPv4"), "{out}");

    // Deleting the Service: the garbage collector takes the slices, the endpoints controller
    // the Endpoints.
    s.kubectl_ok(&["delete", "service", "-n", &ns, "web"]).await;
    eventually("the Service's Endpoints and slices gone", T, || async {
        endpoints(s, &ns, "web").await.is_none() && slices(s, &ns, "web").await.is_empty()
    })
    .await;
}

/// A pod on a node no kubelet runs, with the status a kubelet would report.
async fn fake_pod(s: &Server, ns: &str, name: &str, ip: &str, ready: bool) {
    let pods: Api<Pod> = Api::namespaced(s.client(), ns);
    let pod = json!({
        "metadata": {"name": name, "labels": {"app": "db"}},
        "spec": {"nodeName": "elsewhere", "containers": [{"name": "c", "image": "postgres",
            "ports": [{"name": "pg", "containerPort": 5432}]}]}
    });
    pods.create(&PostParams::default(), &typed(pod))
        .await
        .unwrap();
    set_ready(s, ns, name, Some(ip), ready).await;
}

async fn set_ready(s: &Server, ns: &str, name: &str, ip: Option<&str>, ready: bool) {
    let pods: Api<Pod> = Api::namespaced(s.client(), ns);
    let mut status = json!({"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" },
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

async fn service(s: &Server, ns: &str, spec: Value) {
    let api: Api<Service> = Api::namespaced(s.client(), ns);
    api.create(&PostParams::default(), &typed(spec))
        .await
        .unwrap();
}

async fn readiness_headless_and_publish_not_ready(s: &Server) {
    let ns = fresh_namespace(&s.client(), "ready").await;
    fake_pod(s, &ns, "a", "10.244.9.1", true).await;
    fake_pod(s, &ns, "b", "10.244.9.2", false).await;
    let ports = json!([{"name": "sql", "port": 5432, "targetPort": "pg"}]);
    service(
        s,
        &ns,
        json!({"metadata": {"name": "db"},
        "spec": {"selector": {"app": "db"}, "ports": ports}}),
    )
    .await;
    service(
        s,
        &ns,
        json!({"metadata": {"name": "db-all"},
        "spec": {"selector": {"app": "db"}, "clusterIP": "None", "publishNotReadyAddresses": true,
                 "ports": ports}}),
    )
    .await;
    service(
        s,
        &ns,
        json!({"metadata": {"name": "db-headless"},
        "spec": {"selector": {"app": "db"}, "clusterIP": "None"}}),
    )
    .await;
    let (a, b) = ("10.244.9.1".to_owned(), "10.244.9.2".to_owned());
    eventually("db: a ready, b not ready", T, || async {
        endpoints(s, &ns, "db")
            .await
            .is_some_and(|e| addresses(&e) == (vec![a.clone()], vec![b.clone()]))
            && slice_endpoints(&slices(s, &ns, "db").await)
                == [
                    (a.clone(), true, true, false),
                    (b.clone(), false, false, false),
                ]
    })
    .await;
    eventually("db-all: both published as ready", T, || async {
        endpoints(s, &ns, "db-all")
            .await
            .is_some_and(|e| addresses(&e) == (vec![a.clone(), b.clone()], vec![]))
            && slice_endpoints(&slices(s, &ns, "db-all").await)
                == [
                    (a.clone(), true, true, false),
                    (b.clone(), true, false, false),
                ]
    })
    .await;
    eventually("db-headless: addresses without ports", T, || async {
        endpoints(s, &ns, "db-headless").await.is_some_and(|e| {
            addresses(&e).0 == [a.clone()] && e.subsets.as_ref().unwrap()[0].ports.is_none()
        })
    })
    .await;
    let e = endpoints(s, &ns, "db-headless").await.unwrap();
    let labels = e.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("service.kubernetes.io/headless")
            .map(String::as_str),
        Some("")
    );
    let svc: Api<Service> = Api::namespaced(s.client(), &ns);
    let headless = svc.get("db-headless").await.unwrap().spec.unwrap();
    assert_eq!(headless.cluster_ips, Some(vec!["None".to_owned()]));

    // b turns ready.
    set_ready(s, &ns, "b", None, true).await;
    eventually("db: both ready", T, || async {
        endpoints(s, &ns, "db")
            .await
            .is_some_and(|e| addresses(&e) == (vec![a.clone(), b.clone()], vec![]))
            && slice_endpoints(&slices(s, &ns, "db").await)
                == [
                    (a.clone(), true, true, false),
                    (b.clone(), true, true, false),
                ]
    })
    .await;
    // a is deleted with a grace period: terminating, still serving, no longer ready; gone from
    // the Endpoints.
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    pods.delete("a", &DeleteParams::default().grace_period(60))
        .await
        .unwrap();
    eventually("db: a terminating", T, || async {
        endpoints(s, &ns, "db")
            .await
            .is_some_and(|e| addresses(&e) == (vec![b.clone()], vec![]))
            && slice_endpoints(&slices(s, &ns, "db").await)
                == [
                    (a.clone(), false, true, true),
                    (b.clone(), true, true, false),
                ]
    })
    .await;
    // Endpoints deleted by hand are made again.
    let api: Api<Endpoints> = Api::namespaced(s.client(), &ns);
    api.delete("db", &DeleteParams::default()).await.unwrap();
    eventually("db's Endpoints made again", T, || async {
        endpoints(s, &ns, "db").await.is_some()
    })
    .await;
}

async fn a_service_over_250_pods_gets_three_slices(s: &Server) {
    let ns = fresh_namespace(&s.client(), "many").await;
    service(
        s,
        &ns,
        json!({"metadata": {"name": "db"},
        "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]}}),
    )
    .await;
    let creates = (0..250).map(|i| {
        let ns = ns.clone();
        async move {
            let ip = format!("10.245.{}.{}", i / 200, i % 200 + 1);
            fake_pod(s, &ns, &format!("p{i}"), &ip, true).await;
        }
    });
    futures::stream::iter(creates)
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    eventually("three slices of 100, 100 and 50 endpoints", T, || async {
        let mut sizes: Vec<usize> = slices(s, &ns, "db")
            .await
            .iter()
            .map(|s| s.endpoints.as_ref().map_or(0, Vec::len))
            .collect();
        sizes.sort();
        sizes == [50, 100, 100]
    })
    .await;
    eventually("the Endpoints list all 250 pods", T, || async {
        endpoints(s, &ns, "db")
            .await
            .is_some_and(|e| addresses(&e).0.len() == 250)
    })
    .await;
}

async fn cluster_ips_and_node_ports_are_allocated_checked_and_released(s: &Server) {
    let ns = fresh_namespace(&s.client(), "alloc").await;
    let api: Api<Service> = Api::namespaced(s.client(), &ns);
    let create = |name: &str, spec: Value| {
        let svc = json!({"metadata": {"name": name}, "spec": spec});
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &typed::<Service>(svc))
                .await
        }
    };
    // Unset: allocated from 10.96.0.0/12.
    let auto = create("auto", json!({"ports": [{"port": 80}]}))
        .await
        .unwrap();
    let ip: std::net::Ipv4Addr = auto
        .spec
        .as_ref()
        .unwrap()
        .cluster_ip
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(ip.octets()[0], 10);
    assert!((96..112).contains(&ip.octets()[1]), "{ip}");
    assert_eq!(auto.spec.unwrap().cluster_ips, Some(vec![ip.to_string()]));
    // Requested: taken once, refused the second time, in upstream's words.
    create(
        "fixed",
        json!({"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}),
    )
    .await
    .unwrap();
    let e = api_error(
        create(
            "fixed2",
            json!({"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}),
        )
        .await,
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(
            "spec.clusterIPs: Invalid value: []string{\"10.96.0.50\"}: failed to allocate IP 10.96.0.50: provided IP is already allocated"
        ),
        "{}",
        e.message
    );
    let e = api_error(
        create(
            "outside",
            json!({"clusterIP": "192.168.0.1", "ports": [{"port": 80}]}),
        )
        .await,
    );
    assert!(
        e.message.contains("is not in the valid range"),
        "{}",
        e.message
    );
    // NodePorts.
    let np = create("np", json!({"type": "NodePort", "ports": [{"port": 80}]}))
        .await
        .unwrap();
    let port = np.spec.unwrap().ports.unwrap()[0].node_port.unwrap();
    assert!((30000..=32767).contains(&port), "{port}");
    create(
        "np-fixed",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30050}]}),
    )
    .await
    .unwrap();
    let e = api_error(
        create(
            "np-again",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30050}]}),
        )
        .await,
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(
            "spec.ports[0].nodePort: Invalid value: 30050: provided port is already allocated"
        ),
        "{}",
        e.message
    );
    let e = api_error(
        create(
            "np-far",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 40000}]}),
        )
        .await,
    );
    assert!(
        e.message
            .contains("The range of valid ports is 30000-32767"),
        "{}",
        e.message
    );
    // An update keeps what the Service holds.
    s.kubectl_ok(&["label", "service", "-n", &ns, "np-fixed", "x=y"])
        .await;
    let kept = api.get("np-fixed").await.unwrap().spec.unwrap();
    assert_eq!(kept.ports.unwrap()[0].node_port, Some(30050));
    // Released on deletion, and free again.
    for name in ["fixed", "np-fixed"] {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    create(
        "fixed2",
        json!({"clusterIP": "10.96.0.50", "type": "NodePort",
        "ports": [{"port": 80, "nodePort": 30050}]}),
    )
    .await
    .unwrap();
}

async fn pruning_a_service_takes_only_it_and_its_children(s: &Server) {
    let ns = fresh_namespace(&s.client(), "qbec").await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\n\
         spec:\n  replicas: 1\n  selector: {{matchLabels: {{run: web}}}}\n  template:\n    \
         metadata: {{labels: {{run: web}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
    );
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: {ns}}}\n\
         spec: {{selector: {{run: web}}, ports: [{{port: 80}}]}}\n"
    );
    std::fs::write(dir.path().join("deploy.yaml"), deployment).unwrap();
    std::fs::write(dir.path().join("service.yaml"), &service).unwrap();
    let apply = || async {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.arg("apply")
            .arg(dir.path())
            .args([
                "--app",
                "shop",
                "--env",
                "prod",
                "-n",
                &ns,
                "-o",
                "json",
                "--kubeconfig",
            ])
            .arg(s.kubeconfig_path())
            .kill_on_drop(true);
        let out = c.output().await.unwrap();
        assert!(
            out.status.success(),
            "kgc apply: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    apply().await;
    eventually(
        "the Service's children, with the set's labels",
        T,
        || async {
            let e = endpoints(s, &ns, "web").await;
            let sl = slices(s, &ns, "web").await;
            let labelled = |l: Option<&std::collections::BTreeMap<String, String>>| {
                l.is_some_and(|l| l.get("kgc.io/app").map(String::as_str) == Some("shop"))
            };
            e.is_some_and(|e| addresses(&e).0.len() == 1 && labelled(e.metadata.labels.as_ref()))
                && sl.len() == 1
                && labelled(sl[0].metadata.labels.as_ref())
        },
    )
    .await;
    // A second run with nothing removed prunes nothing, though the children carry the labels.
    let r = apply().await;
    assert!(r["deleted"].as_array().is_none_or(Vec::is_empty), "{r}");
    std::fs::remove_file(dir.path().join("service.yaml")).unwrap();
    let r = apply().await;
    let deleted: Vec<String> = r["deleted"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            format!(
                "{} {}",
                d[0]["gk"]["kind"].as_str().unwrap_or(""),
                d[0]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(deleted, ["Service web"], "{r}");
    eventually("the Service's children gone with it", T, || async {
        endpoints(s, &ns, "web").await.is_none() && slices(s, &ns, "web").await.is_empty()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let left = pods
        .list(&ListParams::default().labels("run=web"))
        .await
        .unwrap();
    assert_eq!(left.items.len(), 1);
}
