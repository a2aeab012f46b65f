//! Set-up the store's own tests share.

use std::path::PathBuf;
use std::sync::Arc;

use kgc_meta::ResourceInfo;
use serde_json::{Value, json};

use crate::{Options, Store};

/// A store (at `path`, or in memory) holding the namespace `ns` and in it the ConfigMap
/// `name` with `data`; with the configmaps resource to write more.
pub async fn store_with_configmap(
    path: Option<PathBuf>,
    name: &str,
    data: Value,
) -> (Store, Arc<ResourceInfo>) {
    let store = Store::open_with(Options {
        path,
        ..Options::default()
    })
    .await
    .unwrap();
    let catalog = store.catalog();
    let ns = catalog.get("", "v1", "namespaces").unwrap().clone();
    let cm = catalog.get("", "v1", "configmaps").unwrap().clone();
    store
        .create(&ns, "", json!({"metadata": {"name": "ns"}}), false)
        .await
        .unwrap();
    let body = json!({"metadata": {"name": name}, "data": data});
    store.create(&cm, "ns", body, false).await.unwrap();
    (store, cm)
}
