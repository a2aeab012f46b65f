//! The whole-object watch caches read: objects as kube-controller-manager's informers keep
//! them, without managedFields.

use std::time::Duration;

use futures::StreamExt;
use kgc_client::{Cluster, ObjectEvent};
use kgc_inprocess::InProcess;
use serde_json::{Value, json};

fn configmap(data: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "a"},
                     "managedFields": [{"manager": "kubectl", "operation": "Update",
                                        "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:data": {"f:k": {}}}}]},
        "data": {"k": data},
    })
}

#[tokio::test]
async fn cached_objects_come_without_managed_fields() {
    let store = kgc_store::Store::in_memory().await.unwrap();
    let configmaps = store
        .catalog()
        .get("", "v1", "configmaps")
        .cloned()
        .unwrap();
    store
        .create(&configmaps, "default", configmap("1"), false)
        .await
        .unwrap();
    let mut events = InProcess::new(store.clone()).watch_objects(configmaps.clone());
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("an event within 5 s")
            .unwrap()
            .unwrap()
    };
    let check = |o: &Value, data: &str| {
        assert_eq!(o["data"]["k"], data);
        assert_eq!(o["metadata"]["labels"]["app"], "a");
        assert!(o["metadata"]["uid"].is_string());
        assert!(o["metadata"].get("managedFields").is_none(), "{o}");
    };
    assert!(matches!(next().await, ObjectEvent::Init));
    match next().await {
        ObjectEvent::InitApply(o) => check(&o, "1"),
        other => panic!("expected the listed object, got {other:?}"),
    }
    assert!(matches!(next().await, ObjectEvent::InitDone));
    store
        .update(&configmaps, "default", "cm", None, false, |_| {
            Ok(configmap("2"))
        })
        .await
        .unwrap();
    loop {
        match next().await {
            ObjectEvent::Apply(o) => break check(&o, "2"),
            ObjectEvent::Bookmark(_) => continue,
            other => panic!("expected the update, got {other:?}"),
        }
    }
    // The stored object keeps them.
    let stored = store
        .get(&configmaps.group_resource(), "default", "cm")
        .unwrap();
    assert!(stored.value()["metadata"]["managedFields"].is_array());
}
