//! ServiceAccounts in a running `kgc serve`, no forged state: the service-accounts controller
//! (kubernetes `pkg/controller/serviceaccount`) gives every namespace its `default` account and
//! recreates it, the root-CA publisher (`pkg/controller/certificates/rootcacertpublisher`)
//! gives it `kube-root-ca.crt` with the server's CA, and the ServiceAccount admission plugin
//! (`plugin/pkg/admission/serviceaccount`) defaults pods to `default`, mounts the projected
//! token volume, and refuses pods whose account is missing.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);
const MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn pod(name: &str, spec: Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    typed(json!({"metadata": {"name": name}, "spec": spec}))
}

async fn create_pod(s: &Server, ns: &str, name: &str, spec: Value) -> RawResponse {
    let body = serde_json::to_vec(&pod(name, spec)).unwrap();
    s.raw(
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods"),
        Some("application/json"),
        body,
    )
    .await
}

#[tokio::test]
async fn a_new_namespace_gets_its_default_account_and_the_root_ca() {
    let s = Server::start_secure(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "accounts").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    eventually("the default account and kube-root-ca.crt", T, || async {
        accounts.get("default").await.is_ok() && cms.get("kube-root-ca.crt").await.is_ok()
    })
    .await;
    let ca = std::fs::read_to_string(s.kubeconfig_path()).unwrap();
    let ca = ca
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .expect("the kubeconfig trusts a CA");
    let ca = String::from_utf8(kgc_meta::encoding::base64_decode(ca).unwrap()).unwrap();
    let cm = cms.get("kube-root-ca.crt").await.unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["ca.crt"], ca);
    let description = &cm.metadata.annotations.as_ref().unwrap()["kubernetes.io/description"];
    assert!(
        description
            .starts_with("Contains a CA bundle that can be used to verify the kube-apiserver"),
        "{description}"
    );
    // System namespaces have them from the start.
    for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), system);
        let cms: Api<ConfigMap> = Api::namespaced(s.client(), system);
        eventually(&format!("{system}'s account and CA"), T, || async {
            accounts.get("default").await.is_ok() && cms.get("kube-root-ca.crt").await.is_ok()
        })
        .await;
    }
    // Changed data and a deleted ConfigMap are put back.
    cms.patch(
        "kube-root-ca.crt",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ca.crt": "forged"}})),
    )
    .await
    .unwrap();
    eventually("the CA restored", T, || async {
        cms.get("kube-root-ca.crt")
            .await
            .is_ok_and(|cm| cm.data.unwrap_or_default().get("ca.crt") == Some(&ca))
    })
    .await;
    cms.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    eventually("kube-root-ca.crt recreated", T, || async {
        cms.get("kube-root-ca.crt")
            .await
            .is_ok_and(|cm| cm.data.unwrap_or_default().get("ca.crt") == Some(&ca))
    })
    .await;
}

#[tokio::test]
async fn a_deleted_default_account_comes_back() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "again").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
    eventually("the default account", T, || async {
        accounts.get("default").await.is_ok()
    })
    .await;
    let first = accounts.get("default").await.unwrap().metadata.uid;
    accounts
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    eventually("a new default account", T, || async {
        accounts
            .get("default")
            .await
            .is_ok_and(|a| a.metadata.uid != first)
    })
    .await;
    // A plain-HTTP server has no CA, so no kube-root-ca.crt.
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    assert!(cms.get("kube-root-ca.crt").await.is_err());
}

#[tokio::test]
async fn a_terminating_namespace_gets_no_new_account() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "ending").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
    eventually("the default account", T, || async {
        accounts.get("default").await.is_ok()
    })
    .await;
    // A finalizer keeps the namespace Terminating after its account is deleted.
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    cms.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})),
    )
    .await
    .unwrap();
    let nss: Api<Namespace> = Api::all(s.client());
    nss.delete(&ns, &DeleteParams::default()).await.unwrap();
    eventually("the account deleted with the namespace", T, || async {
        accounts.get("default").await.is_err()
    })
    .await;
    consistently("no account comes back", Duration::from_secs(2), || async {
        accounts.get("default").await.is_err()
    })
    .await;
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn pods_run_as_default_with_the_projected_token_volume() {
    let s = Server::start().await;
    // Created at once after the namespace: admission waits for the controller's account.
    let ns = fresh_namespace(&s.client(), "pods").await;
    let r = create_pod(&s, &ns, "p", json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let p = pods.get("p").await.unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    assert_eq!(spec.service_account.as_deref(), Some("default"));
    let volumes = spec.volumes.unwrap();
    assert_eq!(volumes.len(), 1);
    let v = &volumes[0];
    let suffix = v.name.strip_prefix("kube-api-access-").unwrap();
    assert_eq!(suffix.len(), 5, "{}", v.name);
    let projected = serde_json::to_value(v.projected.as_ref().unwrap()).unwrap();
    assert_eq!(
        projected,
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]})
    );
    let mounts = spec.containers[0].volume_mounts.clone().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].name, v.name);
    assert_eq!(mounts[0].mount_path, MOUNT);
    assert_eq!(mounts[0].read_only, Some(true));

    // automountServiceAccountToken: false on the pod, or on its account, mounts nothing.
    let r = create_pod(
        &s,
        &ns,
        "quiet",
        json!({"automountServiceAccountToken": false}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let quiet = r.json();
    assert!(quiet["spec"].get("volumes").is_none(), "{quiet}");
    assert!(quiet["spec"]["containers"][0].get("volumeMounts").is_none());
    assert_eq!(quiet["spec"]["serviceAccountName"], "default");
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
    accounts
        .create(
            &PostParams::default(),
            &typed(
                json!({"metadata": {"name": "robot"}, "automountServiceAccountToken": false,
                "imagePullSecrets": [{"name": "registry"}]}),
            ),
        )
        .await
        .unwrap();
    let r = create_pod(&s, &ns, "robotic", json!({"serviceAccountName": "robot"})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let robotic = r.json();
    assert!(robotic["spec"].get("volumes").is_none(), "{robotic}");
    assert_eq!(robotic["spec"]["serviceAccount"], "robot");
    assert_eq!(
        robotic["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
}

#[tokio::test]
async fn a_pod_naming_a_missing_account_is_refused_in_upstreams_words() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "missing").await;
    let r = create_pod(&s, &ns, "p", json!({"serviceAccountName": "ghost"})).await;
    assert_eq!(r.status, 403, "{}", r.text());
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        format!(
            "pods \"p\" is forbidden: error looking up service account {ns}/ghost: serviceaccount \"ghost\" not found"
        )
    );
    // kubectl shows the same words.
    let file = s.write_file(
        "ghost.json",
        &serde_json::to_string(&pod("q", json!({"serviceAccountName": "ghost"}))).unwrap(),
    );
    let out = s
        .kubectl(&["-n", &ns, "create", "-f", file.to_str().unwrap()])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error looking up service account")
            && stderr.contains("\"ghost\" not found"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_plugin_can_be_turned_off() {
    let s = Server::start_with(&[
        "--in-memory",
        "--disable-admission-plugins",
        "ServiceAccount",
    ])
    .await;
    let ns = fresh_namespace(&s.client(), "off").await;
    let r = create_pod(&s, &ns, "p", json!({"serviceAccountName": "ghost"})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.json()["spec"].get("volumes").is_none());
}
