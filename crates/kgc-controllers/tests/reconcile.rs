//! The cluster's own controllers' reconcile, each run alone against an API server in the test
//! process (`kgc-testcluster`), as upstream tests `pkg/controller/{serviceaccount,
//! certificates/rootcacertpublisher,resourcequota}` against fakes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ResourceQuota, ServiceAccount};
use kgc_controllers::{resourcequota, root_ca, serviceaccount};
use kgc_testcluster::{DEADLINE, TestCluster, eventually, unique};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

/// A namespace alone, without the `default` account `TestCluster::namespace` adds.
async fn bare_namespace(c: &TestCluster, prefix: &str) -> String {
    let name = unique(prefix);
    c.create_cluster_scoped::<Namespace>(json!({"metadata": {"name": name}}))
        .await;
    name
}

/// Upstream `TestServiceAccountCreation`'s "new active namespace missing serviceaccounts" and
/// "deleted serviceaccount with active namespace": the `default` account is made, and made
/// again when deleted.
#[tokio::test]
async fn service_account_creation() {
    let mut c = TestCluster::start().await;
    c.run(serviceaccount::run(c.context()));
    let ns = bare_namespace(&c, "sa").await;
    let accounts = c.api::<ServiceAccount>(&ns);
    eventually("the default account", DEADLINE, || async {
        accounts
            .get_opt(serviceaccount::DEFAULT)
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let first = accounts
        .get(serviceaccount::DEFAULT)
        .await
        .unwrap()
        .metadata
        .uid;
    accounts
        .delete(serviceaccount::DEFAULT, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the default account made again", DEADLINE, || async {
        accounts
            .get_opt(serviceaccount::DEFAULT)
            .await
            .unwrap()
            .is_some_and(|a| a.metadata.uid != first)
    })
    .await;
}

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn published(cm: &ConfigMap) -> bool {
    let data = cm.data.clone().unwrap_or_default();
    let annotations = cm.metadata.annotations.clone().unwrap_or_default();
    data == BTreeMap::from([(root_ca::KEY.to_owned(), CA.to_owned())])
        && annotations
            .get(root_ca::DESCRIPTION_ANNOTATION)
            .map(String::as_str)
            == Some(root_ca::DESCRIPTION)
}

/// Upstream `TestConfigMapCreation` (`rootcacertpublisher/publisher_test.go`): a new
/// namespace gets `kube-root-ca.crt` with the CA and its description; changed data is put back,
/// and a deleted ConfigMap is made again.
#[tokio::test]
async fn config_map_creation() {
    let mut c = TestCluster::start().await;
    c.run(root_ca::run(c.context_with_root_ca(CA)));
    let ns = bare_namespace(&c, "ca").await;
    let maps = c.api::<ConfigMap>(&ns);
    eventually("kube-root-ca.crt published", DEADLINE, || async {
        maps.get_opt(root_ca::CONFIG_MAP)
            .await
            .unwrap()
            .is_some_and(|cm| published(&cm))
    })
    .await;
    let tampered = json!({"data": {root_ca::KEY: "not a CA", "extra": "x"}});
    maps.patch(
        root_ca::CONFIG_MAP,
        &PatchParams::default(),
        &Patch::Merge(&tampered),
    )
    .await
    .unwrap();
    eventually("the data put back", DEADLINE, || async {
        published(&maps.get(root_ca::CONFIG_MAP).await.unwrap())
    })
    .await;
    maps.delete(root_ca::CONFIG_MAP, &DeleteParams::default())
        .await
        .unwrap();
    eventually("kube-root-ca.crt made again", DEADLINE, || async {
        maps.get_opt(root_ca::CONFIG_MAP)
            .await
            .unwrap()
            .is_some_and(|cm| published(&cm))
    })
    .await;
}

/// The quota's `status.used` of `resource`, as written.
async fn used(c: &TestCluster, ns: &str, resource: &str) -> Option<String> {
    let q = c.api::<ResourceQuota>(ns).get("q").await.unwrap();
    Some(q.status?.used?.get(resource)?.0.clone())
}

/// Upstream `TestSyncResourceQuota`: `status.hard` is `spec.hard` and `status.used` what the
/// namespace's objects use; a deleted pod gives its share back (replenishment).
#[tokio::test]
async fn sync_resource_quota() {
    let mut c = TestCluster::start().await;
    c.run(resourcequota::run(
        c.context(),
        resourcequota::Config::default(),
    ));
    let ns = c.namespace("quota").await;
    for name in ["a", "b"] {
        let pod = json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]}});
        c.create::<Pod>(&ns, pod).await;
    }
    let quota = json!({"metadata": {"name": "q"},
        "spec": {"hard": {"pods": "5", "requests.cpu": "1", "count/configmaps": "10"}}});
    c.create::<ResourceQuota>(&ns, quota).await;
    let quotas = c.api::<ResourceQuota>(&ns);
    eventually("the quota's status", DEADLINE, || async {
        used(&c, &ns, "pods").await.as_deref() == Some("2")
    })
    .await;
    let status = quotas.get("q").await.unwrap().status.unwrap();
    let hard: BTreeMap<String, String> = status
        .hard
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(
        hard,
        BTreeMap::from([
            ("count/configmaps".into(), "10".into()),
            ("pods".into(), "5".into()),
            ("requests.cpu".into(), "1".into())
        ])
    );
    assert_eq!(used(&c, &ns, "requests.cpu").await.as_deref(), Some("200m"));
    assert_eq!(
        used(&c, &ns, "count/configmaps").await.as_deref(),
        Some("0")
    );
    c.api::<Pod>(&ns)
        .delete("a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    eventually("the deleted pod's share given back", DEADLINE, || async {
        used(&c, &ns, "pods").await.as_deref() == Some("1")
            && used(&c, &ns, "requests.cpu").await.as_deref() == Some("100m")
    })
    .await;
}

/// Upstream's full recalculation every `--resource-quota-sync-period` (the controller's
/// informer resync): a `status.used` no event corrects (a charge for an object that never
/// came) is recalculated at the next period.
#[tokio::test]
async fn resync_recalculates_every_quota() {
    let mut c = TestCluster::start().await;
    let config = resourcequota::Config {
        sync_period: std::time::Duration::from_millis(300),
    };
    c.run(resourcequota::run(c.context(), config));
    let ns = c.namespace("resync").await;
    let quota = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5"}}});
    c.create::<ResourceQuota>(&ns, quota).await;
    eventually("the quota's status", DEADLINE, || async {
        used(&c, &ns, "pods").await.as_deref() == Some("0")
    })
    .await;
    let charged = json!({"status": {"used": {"pods": "4"}}});
    c.api::<ResourceQuota>(&ns)
        .patch_status("q", &PatchParams::default(), &Patch::Merge(&charged))
        .await
        .unwrap();
    eventually("the quota recalculated", DEADLINE, || async {
        used(&c, &ns, "pods").await.as_deref() == Some("0")
    })
    .await;
}

/// Upstream `TestSyncNamespaceThatIsTerminating` (`namespace_controller_test.go`,
/// `deletion/namespaced_resources_deleter_test.go`): a deleted namespace's content is deleted,
/// then its `kubernetes` finalizer removed, and the namespace goes.
#[tokio::test]
async fn sync_namespace_that_is_terminating() {
    let mut c = TestCluster::start().await;
    c.run(kgc_controllers::namespace::run(c.context()));
    let ns = c.namespace("gone").await;
    c.create::<ConfigMap>(&ns, json!({"metadata": {"name": "cm"}}))
        .await;
    let maps = c.api::<ConfigMap>(&ns);
    let namespaces = c.all::<Namespace>();
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the namespace gone", DEADLINE, || async {
        namespaces.get_opt(&ns).await.unwrap().is_none()
    })
    .await;
    assert!(
        maps.get_opt("cm").await.unwrap().is_none(),
        "its content deleted"
    );
}

/// A pod deleted gracefully on a node without a kubelet is deleted for good when its grace
/// period ends, as its kubelet's final delete would (upstream `status_manager.go`
/// `canBeDeleted`); here the controller's clock is a minute ahead, so the 30 s default grace
/// period is over at once.
#[tokio::test]
async fn a_graceful_deletion_ends_with_the_grace_period() {
    let mut c = TestCluster::start().await;
    let ahead = kgc_runtime::Context {
        clock: kgc_meta::time::Clock::with_offset(kgc_meta::time::SignedDuration::from_mins(1)),
        ..c.context()
    };
    c.run(kgc_controllers::pod_termination::run(ahead, None));
    let ns = c.namespace("term").await;
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "registry.example/app:1"}]}});
    c.create::<Pod>(&ns, pod).await;
    let pods = c.api::<Pod>(&ns);
    let deleted = pods.delete("p", &DeleteParams::default()).await.unwrap();
    let terminating = deleted
        .left()
        .expect("a graceful deletion answers with the pod");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    eventually(
        "the pod deleted once its grace period is over",
        DEADLINE,
        || async { pods.get_opt("p").await.unwrap().is_none() },
    )
    .await;
}

/// apiextensions-apiserver's `TestFinalization` (`test/integration/finalization_test.go`): a
/// deleted CustomResourceDefinition waits for its custom resources to be deleted, then goes.
#[tokio::test]
async fn finalization() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
    let mut c = TestCluster::start().await;
    c.run(kgc_controllers::crd_finalizer::run(c.context()));
    let crd = json!({"metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    c.create_cluster_scoped::<CustomResourceDefinition>(crd.clone())
        .await;
    let ns = c.namespace("crd").await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(c.client(), &ns, &ApiResource::from_gvk(&gvk));
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}))
    .unwrap();
    eventually("the custom resource created", DEADLINE, || async {
        widgets
            .create(&PostParams::default(), &widget)
            .await
            .is_ok()
    })
    .await;
    let crds = c.all::<CustomResourceDefinition>();
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the definition gone", DEADLINE, || async {
        crds.get_opt("widgets.example.com").await.unwrap().is_none()
    })
    .await;
    // Defined again, the kind serves nothing from before: its instances were deleted, not
    // merely hidden.
    c.create_cluster_scoped::<CustomResourceDefinition>(crd)
        .await;
    eventually("the kind served again", DEADLINE, || async {
        widgets.list(&ListParams::default()).await.is_ok()
    })
    .await;
    let listed = widgets.list(&ListParams::default()).await.unwrap().items;
    assert!(
        listed.is_empty(),
        "instances outlived their definition: {listed:?}"
    );
}
