//! Names and namespaces per scenario: every test works in namespaces of its own, with names
//! no other test of the process uses.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use serde_json::Value;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A unique, DNS-label-safe name with a prefix (per process; test binaries run in their own
/// processes, and every server is fresh, so this is unique where it matters).
pub fn unique(prefix: &str) -> String {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id() % 100_000)
}

/// Creates a namespace through kube-rs and returns its name.
pub async fn create_namespace(client: &Client, name: &str) -> String {
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns: Namespace = typed(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
    }));
    api.create(&kube::api::PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    name.to_owned()
}

/// A fresh namespace with a unique name.
pub async fn fresh_namespace(client: &Client, prefix: &str) -> String {
    create_namespace(client, &unique(prefix)).await
}

/// Parses a JSON value into a typed object.
pub fn typed<T: k8s_openapi::serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("deserializing a test object")
}
