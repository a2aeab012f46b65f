//! The endpoints, EndpointSlice and mirroring controllers' reconcile, each run alone against an
//! API server in the test process (`kgc-testcluster`), as upstream tests
//! `pkg/controller/{endpoint,endpointslice,endpointslicemirroring}` against fakes.

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kgc_endpoints::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME};
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use kube::api::{DeleteParams, ListParams};
use serde_json::json;

/// Service `web` selecting `app: web`, port 80 to the pods' named port `http`.
async fn web_service(c: &TestCluster, ns: &str) -> Service {
    let svc = json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
    c.create(ns, svc).await
}

/// Pod `name` with `labels` listening on 8080 (named `http`), run on node n1 at `ip`.
async fn pod(c: &TestCluster, ns: &str, name: &str, app: &str, ip: &str, ready: bool) {
    let pod = json!({"metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "registry.example/app:1",
            "ports": [{"name": "http", "containerPort": 8080}]}]}});
    c.create::<Pod>(ns, pod).await;
    c.run_pod(ns, name, ip, ready).await;
}

fn ips(addresses: Option<&Vec<k8s_openapi::api::core::v1::EndpointAddress>>) -> Vec<String> {
    let mut ips: Vec<String> = addresses
        .into_iter()
        .flatten()
        .map(|a| a.ip.clone())
        .collect();
    ips.sort();
    ips
}

/// Upstream `TestSyncEndpointsProtocolTCP` and `TestSyncEndpointsItemsWithLabels`: the
/// Service's Endpoints list the ready selected pods' addresses, the not-ready ones apart, at
/// the target port the named port resolves to; pods the selector does not select are left out.
#[tokio::test]
async fn sync_endpoints_items_with_labels() {
    let mut c = TestCluster::start().await;
    c.run(kgc_endpoints::endpoints::run(c.context()));
    let ns = c.namespace("ep").await;
    web_service(&c, &ns).await;
    pod(&c, &ns, "web-1", "web", "10.0.0.1", true).await;
    pod(&c, &ns, "web-2", "web", "10.0.0.2", true).await;
    pod(&c, &ns, "web-3", "web", "10.0.0.3", false).await;
    pod(&c, &ns, "db-1", "db", "10.0.0.9", true).await;
    let api = c.api::<Endpoints>(&ns);
    eventually("the Endpoints of every selected pod", DEADLINE, || async {
        let Some(ep) = api.get_opt("web").await.unwrap() else {
            return false;
        };
        let subsets = ep.subsets.unwrap_or_default();
        subsets.len() == 1
            && ips(subsets[0].addresses.as_ref()) == ["10.0.0.1", "10.0.0.2"]
            && ips(subsets[0].not_ready_addresses.as_ref()) == ["10.0.0.3"]
    })
    .await;
    let ep = api.get("web").await.unwrap();
    let ports = ep.subsets.unwrap()[0].ports.clone().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        (
            ports[0].name.as_deref(),
            ports[0].port,
            ports[0].protocol.as_deref()
        ),
        (Some("http"), 8080, Some("TCP"))
    );
}

/// Upstream `TestSyncEndpointsServiceNotFound`: the Endpoints of a deleted Service are deleted.
#[tokio::test]
async fn sync_endpoints_service_not_found() {
    let mut c = TestCluster::start().await;
    c.run(kgc_endpoints::endpoints::run(c.context()));
    let ns = c.namespace("ep").await;
    web_service(&c, &ns).await;
    let api = c.api::<Endpoints>(&ns);
    eventually("the Endpoints", DEADLINE, || async {
        api.get_opt("web").await.unwrap().is_some()
    })
    .await;
    c.api::<Service>(&ns)
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Endpoints deleted", DEADLINE, || async {
        api.get_opt("web").await.unwrap().is_none()
    })
    .await;
}

fn endpoints(slice: &EndpointSlice) -> &[k8s_openapi::api::discovery::v1::Endpoint] {
    slice.endpoints.as_deref().unwrap_or_default()
}

/// The Service's EndpointSlices (by the service-name label).
async fn slices(c: &TestCluster, ns: &str) -> Vec<EndpointSlice> {
    let lp = ListParams::default().labels(&format!("{LABEL_SERVICE_NAME}=web"));
    c.api::<EndpointSlice>(ns).list(&lp).await.unwrap().items
}

/// Upstream `TestSyncServicePodSelection` (`endpointslice_controller_test.go`): one slice
/// owned by the Service, managed by the controller, holding the selected pod only, with its
/// readiness and the resolved port.
#[tokio::test]
async fn sync_service_pod_selection() {
    let mut c = TestCluster::start().await;
    c.run(kgc_endpoints::endpointslice::run(
        c.context(),
        kgc_endpoints::Config::default(),
    ));
    let ns = c.namespace("eps").await;
    let svc = web_service(&c, &ns).await;
    pod(&c, &ns, "web-1", "web", "10.0.0.1", true).await;
    pod(&c, &ns, "db-1", "db", "10.0.0.9", true).await;
    eventually("a slice with the selected pod", DEADLINE, || async {
        let s = slices(&c, &ns).await;
        s.len() == 1 && endpoints(&s[0]).len() == 1
    })
    .await;
    let slice = slices(&c, &ns).await.remove(0);
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), &owner.uid, owner.controller),
        ("Service", svc.metadata.uid.as_ref().unwrap(), Some(true))
    );
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[LABEL_MANAGED_BY], "endpointslice-controller.k8s.io");
    assert_eq!(slice.address_type, "IPv4");
    let ep = &endpoints(&slice)[0];
    assert_eq!(ep.addresses, ["10.0.0.1"]);
    assert_eq!(ep.conditions.as_ref().unwrap().ready, Some(true));
    assert_eq!(
        ep.target_ref.as_ref().unwrap().name.as_deref(),
        Some("web-1")
    );
    let port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("http"), Some(8080))
    );
}

/// Upstream `TestSyncEndpoints` (`endpointslicemirroring_controller_test.go`): the Endpoints
/// written by hand for a Service without a selector are mirrored into a slice managed by the
/// mirroring controller.
#[tokio::test]
async fn sync_endpoints_mirrors_a_service_without_selector() {
    let mut c = TestCluster::start().await;
    c.run(kgc_endpoints::mirroring::run(
        c.context(),
        kgc_endpoints::Config::default(),
    ));
    let ns = c.namespace("mirror").await;
    let svc =
        json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}});
    c.create::<Service>(&ns, svc).await;
    let ep = json!({"metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}, {"ip": "192.0.2.11"}],
            "ports": [{"port": 9376, "protocol": "TCP"}]}]});
    c.create::<Endpoints>(&ns, ep).await;
    eventually("a mirrored slice", DEADLINE, || async {
        let s = slices(&c, &ns).await;
        s.len() == 1 && endpoints(&s[0]).len() == 2
    })
    .await;
    let slice = slices(&c, &ns).await.remove(0);
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(
        labels[LABEL_MANAGED_BY],
        "endpointslicemirroring-controller.k8s.io"
    );
    let mut addresses: Vec<String> = endpoints(&slice)
        .iter()
        .flat_map(|e| e.addresses.clone())
        .collect();
    addresses.sort();
    assert_eq!(addresses, ["192.0.2.10", "192.0.2.11"]);
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(9376));
}

/// Upstream `TestSyncEndpointsHeadlessService`: a headless Service's Endpoints list its pods
/// too, and carry the `service.kubernetes.io/headless` label.
#[tokio::test]
async fn sync_endpoints_headless_service() {
    let mut c = TestCluster::start().await;
    c.run(kgc_endpoints::endpoints::run(c.context()));
    let ns = c.namespace("ep").await;
    let svc = json!({"metadata": {"name": "web"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
    c.create::<Service>(&ns, svc).await;
    pod(&c, &ns, "web-1", "web", "10.0.0.1", true).await;
    let api = c.api::<Endpoints>(&ns);
    eventually("the headless Service's Endpoints", DEADLINE, || async {
        api.get_opt("web").await.unwrap().is_some_and(|ep| {
            let subsets = ep.subsets.unwrap_or_default();
            subsets.len() == 1 && ips(subsets[0].addresses.as_ref()) == ["10.0.0.1"]
        })
    })
    .await;
    let labels = api
        .get("web")
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        labels
            .get(kgc_endpoints::LABEL_HEADLESS)
            .map(String::as_str),
        Some("")
    );
}
