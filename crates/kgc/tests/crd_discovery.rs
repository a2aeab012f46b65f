//! The garbage collector follows discovery as it changes: a custom resource's kind is watched
//! from the moment its CRD is established, not at the next periodic discovery (30 s by
//! default, left at that here). A dependent created a second after its owner's CRD is collected
//! within 5 s of the owner's deletion, by the collector inside `kgc serve` (which hears of the
//! CRD from the store's catalog) and by `kgc controller` (which hears of it from a watch of
//! CustomResourceDefinitions).

kgc_testsupport::bind_kgc!();

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kgc_testsupport::*;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams, PropagationPolicy};
use kube::{Api, Client};
use serde_json::json;

/// Creates a CRD of a fresh group and waits until it is established.
async fn establish_crd(client: &Client) -> ApiResource {
    let group = format!("{}.example.com", unique("disc"));
    let crd: CustomResourceDefinition = typed(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}
    }));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crds
        .create(&PostParams::default(), &crd)
        .await
        .expect("creating the CRD")
        .metadata
        .name
        .expect("a name");
    eventually("the CRD to be established", Duration::from_secs(10), || {
        let crds = crds.clone();
        let name = name.clone();
        async move {
            crds.get(&name)
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        }
    })
    .await;
    ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    }
}

/// Creates a CRD, then an owner of its kind, and a second after the CRD a ConfigMap it owns;
/// deletes the owner in the background and expects the ConfigMap gone within 5 s.
async fn dependent_of_a_new_kind_is_collected(server: &Server) {
    let client = server.client();
    let ns = fresh_namespace(&client, "crd-discovery").await;
    let created = Instant::now();
    let gadget = establish_crd(&client).await;
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &gadget);
    let owner: DynamicObject = typed(json!({
        "apiVersion": gadget.api_version, "kind": "Gadget", "metadata": {"name": "owner"}
    }));
    let owner = gadgets
        .create(&PostParams::default(), &owner)
        .await
        .expect("creating the owner");
    tokio::time::sleep(Duration::from_secs(1).saturating_sub(created.elapsed())).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let dependent: ConfigMap = typed(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "dependent", "ownerReferences": [{
            "apiVersion": gadget.api_version, "kind": "Gadget", "name": "owner",
            "uid": owner.metadata.uid.clone().expect("a uid"),
        }]}
    }));
    config_maps
        .create(&PostParams::default(), &dependent)
        .await
        .expect("creating the dependent");
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    gadgets
        .delete("owner", &background)
        .await
        .expect("deleting the owner");
    eventually(
        "the dependent of the deleted owner to be collected",
        Duration::from_secs(5),
        || {
            let config_maps = config_maps.clone();
            async move { matches!(config_maps.get_opt("dependent").await, Ok(None)) }
        },
    )
    .await;
}

#[tokio::test]
async fn in_process_gc_watches_a_new_kind_at_once() {
    let server = Server::start().await;
    dependent_of_a_new_kind_is_collected(&server).await;
}

#[tokio::test]
async fn controller_gc_watches_a_new_kind_at_once() {
    // The default resync (30 s): only the controller's watch of CRDs can be in time.
    let server = Server::start_gc_via_controller(&["--in-memory"]).await;
    dependent_of_a_new_kind_is_collected(&server).await;
}
