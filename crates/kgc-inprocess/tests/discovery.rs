//! kgc-client's discovery over the in-process cluster: it follows the store's catalog at once.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kgc_client::discovery::{Resources, served};
use kgc_client::{Cluster, Result};
use kgc_inprocess::InProcess;
use serde_json::json;

/// The in-process discovery follows the store's catalog: a CRD's kind appears with the
/// commit that establishes it and goes with the commit that deletes the CRD, long before
/// the (hour-long here) resync.
#[tokio::test]
async fn in_process_discovery_follows_crds_at_once() {
    let store = kgc_store::Store::in_memory().await.unwrap();
    let mut served = served(InProcess::new(store.clone()), Duration::from_secs(3600));
    let next = async |served: &mut BoxStream<'static, Result<Resources>>| {
        tokio::time::timeout(Duration::from_secs(5), served.next())
            .await
            .expect("a new snapshot within 5 s")
            .unwrap()
            .unwrap()
    };
    assert!(
        !next(&mut served)
            .await
            .iter()
            .any(|r| r.plural == "widgets")
    );
    let crds = store
        .catalog()
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .cloned()
        .unwrap();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let uid = store
        .create(&crds, "", crd, false)
        .await
        .unwrap()
        .uid
        .clone();
    let with = next(&mut served).await;
    let widget = with.iter().find(|r| r.plural == "widgets").expect("served");
    assert_eq!(
        (widget.kind.as_str(), widget.preferred_version()),
        ("Widget", "v1")
    );
    store
        .delete(
            &crds,
            "",
            "widgets.example.com",
            &kgc_meta::DeleteOptions::default(),
        )
        .await
        .unwrap();
    // What the CRD-cleanup controller does once no widget is left.
    Cluster::remove_finalizer(
        &InProcess::new(store.clone()),
        &crds,
        "",
        "widgets.example.com",
        &uid,
        kgc_meta::crd::CLEANUP_FINALIZER,
    )
    .await
    .unwrap();
    let without = next(&mut served).await;
    assert!(!without.iter().any(|r| r.plural == "widgets"));
}
