//! Apply: whether a live object already holds what the source says, and the writes of the
//! apply step that are not plain object applies (the parent, waiting for readiness).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Error;
use crate::desired::Desired;
use crate::gvk::GroupKind;
use crate::inventory::Inventory;
use crate::listing::Resource;
use crate::str_at;

use super::client::ApiServer;
use super::{Prepared, READY_TIMEOUT};

/// Whether every field of `desired` has the same value in `live` (lists element-wise, same
/// length). Fields only `live` has (server defaults, other managers) do not matter, nor do
/// fields `desired` sets to null: a server-side apply drops them, so a manifest written by
/// `kubectl create … --dry-run=client -o yaml` (`creationTimestamp: null`) is unchanged when
/// the live object has a timestamp, instead of rewritten on every run.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| dv.is_null() || l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv))
        }
        (l, d) => l == d,
    }
}

/// A desired object as the server stores it, where that differs in a way a comparison can
/// undo: a Secret's write-only `stringData` is stored base64-encoded in `data`.
pub(super) fn as_stored(desired: &Value) -> std::borrow::Cow<'_, Value> {
    let Some(Value::Object(string_data)) = desired.get("stringData") else {
        return std::borrow::Cow::Borrowed(desired);
    };
    let mut v = desired.clone();
    let mut data = v
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, s) in string_data {
        if let Some(s) = s.as_str() {
            data.insert(
                k.clone(),
                Value::String(kgc_meta::encoding::base64(s.as_bytes())),
            );
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("stringData");
        o.insert("data".into(), Value::Object(data));
    }
    std::borrow::Cow::Owned(v)
}

/// Applies the parent with `inventory` (server-side dry run with `dry_run`); `false` when its
/// namespace does not exist yet.
pub(super) async fn write_parent(
    cluster: &ApiServer,
    prepared: &Prepared,
    inventory: &Inventory,
    dry_run: bool,
) -> Result<bool, Error> {
    let cm = Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let parent = inventory.parent(&prepared.identity, &prepared.namespace, &prepared.set_id);
    match cluster.apply(&cm, &parent, dry_run).await {
        Ok(_) => Ok(true),
        Err(Error::Kube {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waits until an applied CRD is Established or a Namespace is Active.
pub(super) async fn wait_ready(cluster: &ApiServer, d: &Desired) -> Result<(), Error> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let live = cluster
            .get(&d.resource, &d.key.namespace, &d.key.name)
            .await?
            .unwrap_or(Value::Null);
        let ready = if d.key.gk.is_crd() {
            live.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        str_at(c, "/type") == "Established" && str_at(c, "/status") == "True"
                    })
                })
        } else if d.key.gk.is_namespace() {
            // A server that does not report a phase is taken at its word.
            matches!(str_at(&live, "/status/phase"), "Active" | "")
        } else {
            true
        };
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Invalid(format!(
                "{} did not become ready within {READY_TIMEOUT:?}",
                d.key
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_string_data_compares_as_stored() {
        let live = json!({"kind": "Secret", "data": {"a": "eA==", "b": "eQ=="}});
        let desired = json!({"kind": "Secret", "stringData": {"a": "x"}, "data": {"b": "eQ=="}});
        assert!(contains(&live, &as_stored(&desired)));
        let changed = json!({"kind": "Secret", "stringData": {"a": "z"}});
        assert!(!contains(&live, &as_stored(&changed)));
    }

    #[test]
    fn containment_ignores_server_additions_only() {
        let live = json!({"spec": {"replicas": 1, "template": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}]}}, "status": {}});
        assert!(contains(
            &live,
            &json!({"spec": {"template": {"containers": [{"name": "a", "image": "x"}]}}})
        ));
        assert!(!contains(&live, &json!({"spec": {"replicas": 2}})));
        assert!(!contains(
            &live,
            &json!({"spec": {"template": {"containers": [{"name": "a"}, {"name": "b"}]}}})
        ));
        assert!(!contains(
            &live,
            &json!({"metadata": {"labels": {"a": "b"}}})
        ));
    }

    #[test]
    fn a_null_in_the_manifest_matches_what_the_server_set() {
        let live = json!({"metadata": {"name": "a", "creationTimestamp": "2026-11-27T00:00:00Z"}, "spec": {}});
        let desired =
            json!({"metadata": {"name": "a", "creationTimestamp": null}, "spec": {"x": null}});
        assert!(contains(&live, &desired));
    }
}
