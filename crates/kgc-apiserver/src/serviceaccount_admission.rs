//! The ServiceAccount admission plugin (kubernetes/kubernetes
//! `plugin/pkg/admission/serviceaccount/admission.go`), on pod creation:
//!
//! - a pod that names no account runs as `default` (`spec.serviceAccountName`; the deprecated
//!   `spec.serviceAccount` is read as its alias, as the v1 conversion does);
//! - a pod whose account does not exist is refused, 403 `error looking up service account
//!   NS/NAME: serviceaccount "NAME" not found`;
//! - unless the pod (or else its account) sets `automountServiceAccountToken: false`, every
//!   container and init container that mounts nothing at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` gets the projected volume
//!   `kube-api-access-<5 random>` there: a bound token (3607 s), `ca.crt` from the
//!   `kube-root-ca.crt` ConfigMap and the namespace from the downward API;
//! - a pod with no `imagePullSecrets` gets its account's;
//! - a mirror pod (a kubelet's static pod) is not changed, and may reference no account, no
//!   secret and no token projection.
//!
//! The `default` account is created by the service-accounts controller moments after its
//! namespace, so a pod created right after a namespace may find it missing. Upstream looks it up
//! live up to ten times, 100–200 ms apart, before refusing; kgc, whose store is in the process,
//! waits for it on a watch of the namespace's accounts for at most as long (2 s) and admits the
//! pod as soon as it appears. A namespace that is missing or terminating is left to the
//! namespace lifecycle check, which refuses the pod in its own words, as upstream's
//! NamespaceLifecycle plugin runs first.
//!
//! `--disable-admission-plugins ServiceAccount` turns it off.

use std::time::Duration;

use kgc_meta::{GroupResource, ResourceInfo, Status};
use kgc_store::{EventType, Store, WatchEvent, WatchFilter};
use serde_json::{Map, Value, json};

use crate::request::RequestInfo;

/// The plugin's name, as `--disable-admission-plugins` takes it.
pub const PLUGIN: &str = "ServiceAccount";
/// The account of a pod that names none.
pub const DEFAULT_ACCOUNT: &str = "default";
/// Where the token, the CA and the namespace are mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the projected volume's name.
pub const VOLUME_PREFIX: &str = "kube-api-access-";
/// The token's lifetime: upstream `WarnOnlyBoundTokenExpirationSeconds`, an hour and seven
/// seconds, which marks the token as one the API server may extend.
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The annotation that makes a pod a mirror pod (upstream `MirrorPodAnnotationKey`).
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// How long a pod waits for its namespace's `default` account: upstream's ten live look-ups at
/// most 200 ms apart.
const DEFAULT_ACCOUNT_WAIT: Duration = Duration::from_secs(2);

impl crate::ApiServer {
    /// Runs the plugin on the creation of `obj`, when it is on and `obj` is a pod.
    pub(crate) async fn admit_service_account(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &mut Value,
    ) -> Result<(), Status> {
        if !self.service_account_admission
            || !info.group.is_empty()
            || info.plural != "pods"
            || req.subresource.is_some()
        {
            return Ok(());
        }
        let namespace = req.namespace.as_deref().unwrap_or_default();
        admit(&self.store, info, namespace, obj).await
    }
}

/// Admits the creation of the pod `pod` in `namespace`.
async fn admit(
    store: &Store,
    info: &ResourceInfo,
    namespace: &str,
    pod: &mut Value,
) -> Result<(), Status> {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let forbidden = |why: String| forbidden(&info.group_resource(), &name, why);
    if pod["metadata"]["annotations"]
        .get(MIRROR_ANNOTATION)
        .is_some()
    {
        return mirror_pod_refusal(pod).map_or(Ok(()), |why| Err(forbidden(why.to_owned())));
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        // Not a pod spec the kind's validation would take: it refuses it.
        return Ok(());
    };
    let account = account_name(spec);
    spec.insert("serviceAccountName".into(), Value::from(account.as_str()));
    if !namespace_active(store, namespace) {
        return Ok(());
    }
    let Some(sa) = find_account(store, namespace, &account).await else {
        return Err(forbidden(format!(
            "error looking up service account {namespace}/{account}: serviceaccount \"{account}\" not found"
        )));
    };
    if automount(spec, &sa) {
        mount_token(spec);
    }
    copy_image_pull_secrets(spec, &sa);
    Ok(())
}

/// `pods "NAME" is forbidden: …` (`pods is forbidden: …` for a name still to be generated), as
/// upstream's `admission.NewForbidden` words it.
pub(crate) fn forbidden(gr: &GroupResource, name: &str, why: String) -> Status {
    if name.is_empty() {
        Status::forbidden_by_policy(gr, name, format!("{gr} is forbidden: {why}"))
    } else {
        Status::forbidden(gr, name, &why)
    }
}

/// The account a pod runs as: `serviceAccountName`, else the deprecated `serviceAccount`, else
/// `default`.
fn account_name(spec: &Map<String, Value>) -> String {
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_str))
        .find(|n| !n.is_empty())
        .unwrap_or(DEFAULT_ACCOUNT)
        .to_owned()
}

fn namespace_active(store: &Store, namespace: &str) -> bool {
    store
        .get(&GroupResource::new("", "namespaces"), "", namespace)
        .is_some_and(|ns| !ns.deleting)
}

/// The account `name` of `namespace`; the `default` account is waited for (see the module's
/// documentation), others are looked up once.
async fn find_account(store: &Store, namespace: &str, name: &str) -> Option<Value> {
    let gr = GroupResource::new("", "serviceaccounts");
    let found = |store: &Store| store.get(&gr, namespace, name).map(|sa| sa.value());
    if let Some(sa) = found(store) {
        return Some(sa);
    }
    if name != DEFAULT_ACCOUNT {
        return None;
    }
    // Watch from now, then look again: an account created in between is not missed.
    let mut filter = WatchFilter::new(gr.clone());
    filter.namespace = Some(namespace.to_owned());
    let mut watch = store.watch(filter, Some(store.revision()));
    if let Some(sa) = found(store) {
        return Some(sa);
    }
    let deadline = tokio::time::Instant::now() + DEFAULT_ACCOUNT_WAIT;
    loop {
        match tokio::time::timeout_at(deadline, watch.next()).await {
            Ok(WatchEvent::Event(EventType::Added | EventType::Modified, sa))
                if sa.name == name =>
            {
                return Some(sa.value());
            }
            Ok(WatchEvent::Event(..)) => {}
            // Timed out, or the watch ended: one last look.
            _ => return found(store),
        }
    }
}

/// Upstream `shouldAutomount`: the pod's choice, else the account's, else yes.
fn automount(spec: &Map<String, Value>, sa: &Value) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| sa["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

/// The projected volume of upstream's `TokenVolumeSource`.
fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}})
}

/// Upstream `mountServiceAccountToken`: every init container and container that mounts nothing
/// at [`TOKEN_MOUNT_PATH`] mounts the token volume there, read-only; the volume (an existing
/// `kube-api-access-*` one, else a new one) is added when some container needs it.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_owned);
    let volume = existing
        .clone()
        .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", kgc_store::random_suffix()));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for key in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if !mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                mounts.push(mount.clone());
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(token_volume(&volume));
        } else {
            *volumes = json!([token_volume(&volume)]);
        }
    }
}

/// A pod with no `imagePullSecrets` gets its account's (their names only).
fn copy_image_pull_secrets(spec: &mut Map<String, Value>, sa: &Value) {
    let has_own = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    let Some(theirs) = sa["imagePullSecrets"].as_array().filter(|s| !s.is_empty()) else {
        return;
    };
    if has_own {
        return;
    }
    let names: Vec<Value> = theirs
        .iter()
        .map(|s| json!({"name": s["name"].as_str().unwrap_or_default()}))
        .collect();
    spec.insert("imagePullSecrets".into(), Value::from(names));
}

/// Why a mirror pod is refused, if it is: it may reference no account, no secret (upstream's
/// `VisitPodSecretNames`) and no token projection.
fn mirror_pod_refusal(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["serviceAccountName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
    {
        return Some("a mirror pod may not reference service accounts");
    }
    if references_secrets(spec) {
        return Some("a mirror pod may not reference secrets");
    }
    let projects_token = items(&spec["volumes"])
        .any(|v| items(&v["projected"]["sources"]).any(|s| s.get("serviceAccountToken").is_some()));
    projects_token.then_some("a mirror pod may not use ServiceAccountToken volume projections")
}

/// The entries of a JSON array (none for anything else).
fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// Whether a pod spec names a secret: image pull secrets, secret volumes and projections, the
/// secret references of volume plugins, and containers' `env`/`envFrom`.
fn references_secrets(spec: &Value) -> bool {
    let named = |v: &Value| v.as_str().is_some_and(|n| !n.is_empty());
    if items(&spec["imagePullSecrets"]).next().is_some() {
        return true;
    }
    let volume_secret = |v: &Value| {
        v.as_object().into_iter().flatten().any(|(kind, source)| {
            named(&source["secretName"])
                || source.get("secretRef").is_some()
                || source.get("nodePublishSecretRef").is_some()
                || (kind == "projected"
                    && items(&source["sources"]).any(|s| s.get("secret").is_some()))
        })
    };
    if items(&spec["volumes"]).any(volume_secret) {
        return true;
    }
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| items(&spec[*k]))
        .any(|c| {
            items(&c["envFrom"]).any(|e| e.get("secretRef").is_some())
                || items(&c["env"]).any(|e| e["valueFrom"].get("secretKeyRef").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_account_is_named_default_or_by_its_alias() {
        assert_eq!(account_name(&spec(json!({}))), "default");
        assert_eq!(
            account_name(&spec(json!({"serviceAccountName": ""}))),
            "default"
        );
        assert_eq!(account_name(&spec(json!({"serviceAccount": "old"}))), "old");
        assert_eq!(
            account_name(&spec(
                json!({"serviceAccountName": "new", "serviceAccount": "old"})
            )),
            "new"
        );
    }

    #[test]
    fn the_pod_decides_automounting_before_its_account() {
        let off = json!({"automountServiceAccountToken": false});
        let on = json!({"automountServiceAccountToken": true});
        assert!(automount(&spec(json!({})), &json!({})));
        assert!(!automount(&spec(json!({})), &off));
        assert!(automount(&spec(on.clone()), &off));
        assert!(!automount(&spec(off), &on));
    }

    #[test]
    fn every_container_mounts_one_projected_volume() {
        let mut s = spec(json!({
            "initContainers": [{"name": "i"}],
            "containers": [
                {"name": "a", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        }));
        mount_token(&mut s);
        let volumes = s["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 2);
        let name = volumes[1]["name"].as_str().unwrap();
        let suffix = name.strip_prefix(VOLUME_PREFIX).unwrap();
        assert_eq!(suffix.len(), 5, "{name}");
        assert_eq!(volumes[1], token_volume(name));
        let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(s["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(s["containers"][0]["volumeMounts"][1], mount);
        assert_eq!(
            s["containers"][1]["volumeMounts"].as_array().unwrap().len(),
            1,
            "a container mounting its own volume there keeps it"
        );
        // Mounting again reuses the volume.
        mount_token(&mut s);
        assert_eq!(s["volumes"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn the_token_volume_is_upstreams() {
        let v = token_volume("kube-api-access-abcde");
        let sources = &v["projected"]["sources"];
        assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
        assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
        assert_eq!(
            sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
            "metadata.namespace"
        );
        assert_eq!(v["projected"]["defaultMode"], 420);
    }

    #[test]
    fn image_pull_secrets_come_from_the_account_when_the_pod_has_none() {
        let sa = json!({"imagePullSecrets": [{"name": "reg"}]});
        let mut s = spec(json!({}));
        copy_image_pull_secrets(&mut s, &sa);
        assert_eq!(s["imagePullSecrets"], json!([{"name": "reg"}]));
        let mut own = spec(json!({"imagePullSecrets": [{"name": "mine"}]}));
        copy_image_pull_secrets(&mut own, &sa);
        assert_eq!(own["imagePullSecrets"], json!([{"name": "mine"}]));
    }

    #[test]
    fn mirror_pods_may_not_reference_accounts_secrets_or_tokens() {
        let pod = |spec: Value| json!({"spec": spec});
        assert_eq!(
            mirror_pod_refusal(&pod(json!({"containers": [{"name": "c"}]}))),
            None
        );
        assert_eq!(
            mirror_pod_refusal(&pod(json!({"serviceAccountName": "x"}))),
            Some("a mirror pod may not reference service accounts")
        );
        for secret in [
            json!({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}),
            json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}]}),
            json!({"containers": [{"name": "c", "env": [{"name": "E",
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}),
            json!({"imagePullSecrets": [{"name": "r"}]}),
        ] {
            assert_eq!(
                mirror_pod_refusal(&pod(secret.clone())),
                Some("a mirror pod may not reference secrets"),
                "{secret}"
            );
        }
        assert_eq!(
            mirror_pod_refusal(&pod(
                json!({"volumes": [{"name": "t", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}}]}}]})
            )),
            Some("a mirror pod may not use ServiceAccountToken volume projections")
        );
    }

    #[tokio::test]
    async fn a_missing_account_is_refused_in_upstreams_words() {
        let store = Store::in_memory().await.unwrap();
        let info = kgc_meta::Catalog::builtin()
            .get("", "v1", "pods")
            .map(|i| (**i).clone())
            .unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"serviceAccountName": "ghost",
            "containers": [{"name": "c", "image": "i"}]}});
        let s = admit(&store, &info, "default", &mut pod).await.unwrap_err();
        assert_eq!(s.code, 403);
        assert_eq!(
            s.message,
            "pods \"p\" is forbidden: error looking up service account default/ghost: serviceaccount \"ghost\" not found"
        );
        // A namespace that does not exist is the namespace check's to refuse.
        admit(&store, &info, "nowhere", &mut pod).await.unwrap();
    }

    #[tokio::test]
    async fn a_pod_waits_for_the_default_account_created_after_it() {
        let store = Store::in_memory().await.unwrap();
        let catalog = kgc_meta::Catalog::builtin();
        let info = catalog
            .get("", "v1", "pods")
            .map(|i| (**i).clone())
            .unwrap();
        let accounts = catalog.get("", "v1", "serviceaccounts").cloned().unwrap();
        let late = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default"}, "automountServiceAccountToken": false});
            late.create(&accounts, "default", sa, false).await.unwrap();
        });
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "image": "i"}]}});
        admit(&store, &info, "default", &mut pod).await.unwrap();
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert!(
            pod["spec"].get("volumes").is_none(),
            "the account's automount choice was read"
        );
    }
}
