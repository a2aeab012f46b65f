//! The root-CA publisher (kubernetes `pkg/controller/certificates/rootcacertpublisher/
//! publisher.go`): every namespace has the ConfigMap `kube-root-ca.crt` whose `ca.crt` is the
//! bundle that verifies the API server, so that a pod's projected service-account volume (see
//! the ServiceAccount admission) can trust it. It is created when a namespace appears, and put
//! back when it is deleted or its data or description annotation is changed.
//!
//! It needs a CA: a plain-HTTP `kgc serve` has none, and then does not run it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kgc_client::Cluster;
use kgc_runtime::informer::View;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::Value;

use kgc_runtime::{Context, run_per_namespace};

use crate::{Result, namespace_unusable};

/// The name `--controllers` knows it by.
pub const NAME: &str = "root-ca-cert-publisher";
/// The ConfigMap in every namespace.
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
/// Its one key.
pub const KEY: &str = "ca.crt";
/// The annotation that says what it is for, and upstream's text.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. No \
    other usage is guaranteed across distributions of Kubernetes clusters.";
/// The field manager of its writes.
const MANAGER: &str = "kgc-root-ca-cert-publisher";
const WORKERS: usize = 1;

/// What the publisher keeps of a ConfigMap: the whole object, for `kube-root-ca.crt` only.
#[derive(Debug, Clone, PartialEq)]
struct Published(Value);

impl View for Published {
    fn view(obj: &Value) -> Option<Self> {
        (obj["metadata"]["name"] == CONFIG_MAP).then(|| Published(obj.clone()))
    }
}

/// Runs the publisher of `ctx.root_ca` until dropped; without a CA it says so and does nothing.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let Some(ca) = ctx.root_ca.clone() else {
        tracing::info!(
            controller = NAME,
            "not publishing kube-root-ca.crt: the server has no CA (plain HTTP)"
        );
        return;
    };
    let sync = move |ctx: Context<C>, ns: String, current: Option<Published>| {
        let ca = Arc::clone(&ca);
        async move { sync(&ctx, &ca, &ns, current).await }
    };
    let configmaps = ("", "configmaps");
    run_per_namespace::<C, Published, _, _, _>(ctx, NAME, configmaps, CONFIG_MAP, WORKERS, sync)
        .await;
}

/// Upstream `syncNamespace`: creates the ConfigMap, or restores its data and annotation.
async fn sync<C: Cluster>(
    ctx: &Context<C>,
    ca: &str,
    ns: &str,
    current: Option<Published>,
) -> Result<Option<Duration>> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    let Some(Published(current)) = current else {
        let fresh = ConfigMap {
            metadata: ObjectMeta {
                name: Some(CONFIG_MAP.to_owned()),
                annotations: Some(described(None)),
                ..ObjectMeta::default()
            },
            data: Some(data(ca)),
            ..ConfigMap::default()
        };
        return match api.create(&params, &fresh).await {
            Ok(_) => Ok(None),
            // Recreated meanwhile: its event queues the namespace again.
            Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(None),
            Err(e) if namespace_unusable(&e) => Ok(None),
            Err(e) => Err(e.into()),
        };
    };
    let Some(restored) = restore(&current, ca) else {
        return Ok(None);
    };
    match api.replace(CONFIG_MAP, &params, &restored).await {
        Ok(_) => Ok(None),
        // Changed or deleted meanwhile: that change queues the namespace again.
        Err(kube::Error::Api(s)) if s.is_conflict() || s.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn data(ca: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(KEY.to_owned(), ca.to_owned())])
}

/// `annotations` with the description set.
fn described(annotations: Option<BTreeMap<String, String>>) -> BTreeMap<String, String> {
    let mut a = annotations.unwrap_or_default();
    a.insert(DESCRIPTION_ANNOTATION.to_owned(), DESCRIPTION.to_owned());
    a
}

/// The ConfigMap to write back when `current` lacks the data `{ca.crt: ca}` exactly or a
/// description (other data keys go, other annotations stay, as upstream does); `None` when it
/// is as it should be. The resourceVersion is kept, so a replace fails on a newer version.
fn restore(current: &Value, ca: &str) -> Option<ConfigMap> {
    let mut cm: ConfigMap = match serde_json::from_value(current.clone()) {
        Ok(cm) => cm,
        Err(e) => {
            tracing::warn!(controller = NAME, error = %e, "kube-root-ca.crt does not decode; replacing its content");
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(CONFIG_MAP.to_owned());
            cm.metadata.resource_version = current["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned);
            cm
        }
    };
    let has_description = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if cm.data.as_ref() == Some(&data(ca)) && has_description {
        return None;
    }
    cm.data = Some(data(ca));
    cm.metadata.annotations = Some(described(cm.metadata.annotations.take()));
    Some(cm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn cm(data: Value, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP,
            "namespace": "a", "resourceVersion": "7", "annotations": annotations}, "data": data})
    }

    #[test]
    fn an_intact_config_map_is_left_alone() {
        let ok = cm(
            json!({KEY: CA}),
            json!({DESCRIPTION_ANNOTATION: "anything"}),
        );
        assert_eq!(restore(&ok, CA), None);
    }

    #[test]
    fn changed_data_and_a_lost_description_are_restored_keeping_other_annotations() {
        let changed = cm(
            json!({KEY: "forged", "extra": "x"}),
            json!({"team": "a", DESCRIPTION_ANNOTATION: ""}),
        );
        let back = restore(&changed, CA).expect("restored");
        assert_eq!(back.data, Some(data(CA)));
        let a = back.metadata.annotations.unwrap();
        assert_eq!(a[DESCRIPTION_ANNOTATION], DESCRIPTION);
        assert_eq!(a["team"], "a");
        assert_eq!(back.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn only_the_published_config_map_is_kept() {
        assert!(Published::view(&json!({"metadata": {"name": "other"}})).is_none());
        assert!(Published::view(&cm(json!({}), json!({}))).is_some());
    }
}
