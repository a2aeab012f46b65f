//! `kgc serve --join KUBECONFIG`: a new replica takes the cluster's identity (its CA, the
//! service-account signing key and the encryption configuration of Secrets at rest) from the
//! cluster itself instead of a copy of the first replica's `pki/` (issue 33).
//!
//! Every secure replica on etcd publishes that identity as the Secret `kube-system/kgc-pki`
//! when none exists (as kubeadm's `upload-certs` keeps the control plane's certificates in
//! the Secret `kube-system/kubeadm-certs`). A joining replica reads it through the API of a
//! running replica with the kubeconfig given, not from etcd: the Secret is encrypted in etcd
//! with the very key it carries, so etcd access alone cannot read it, and the API lets only
//! an identity allowed to read Secrets in kube-system (an admin) have it. Its files are
//! written into the new data directory's `pki/` before anything else reads it; a data
//! directory that already has a CA keeps it.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use kgc_store::Store;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// The Secret in `kube-system` that carries the cluster's identity.
pub const SECRET: &str = "kgc-pki";
const NAMESPACE: &str = "kube-system";

/// The files of `pki/` that make a replica one of the cluster: the CA (the serving and client
/// certificates each replica signs with it), the service-account key, and the encryption
/// configuration (under its default name; see [`crate::encryption`]).
const SHARED: [&str; 3] = ["ca.crt", "ca.key", "sa.key"];
const ENCRYPTION: &str = "encryption-config.yaml";

/// How long fetching the identity may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Creates `kube-system/kgc-pki` from this replica's identity when the cluster has none.
pub async fn publish(
    store: &Store,
    data_dir: &Path,
    encryption: &crate::encryption::EncryptionArgs,
) -> anyhow::Result<()> {
    let secrets = store
        .catalog()
        .get("", "v1", "secrets")
        .cloned()
        .expect("secrets are built in");
    if store
        .get(&secrets.group_resource(), NAMESPACE, SECRET)
        .is_some()
    {
        return Ok(());
    }
    let pki = crate::tls::pki_dir(data_dir);
    let mut data = serde_json::Map::new();
    let files = SHARED
        .map(|name| (name, pki.join(name)))
        .into_iter()
        .chain([(ENCRYPTION, encryption.config_path(data_dir))]);
    for (name, path) in files {
        match std::fs::read(&path) {
            Ok(bytes) => {
                data.insert(name.into(), kgc_meta::encoding::base64(&bytes).into());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    let body = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "data": data,
    });
    match store.create(&secrets, NAMESPACE, body, false).await {
        Ok(_) => {
            tracing::info!("published the cluster's identity as {NAMESPACE}/{SECRET}");
            Ok(())
        }
        // Another replica starting at the same time published its own, the same.
        Err(kgc_store::Error::Api(s)) if s.is(kgc_meta::Reason::AlreadyExists) => Ok(()),
        Err(e) => Err(e).context("publishing the cluster's identity"),
    }
}

/// Writes the identity of the cluster `kubeconfig` reaches into `data_dir`'s `pki/`, unless
/// it has a CA already. Every failure is one line that says what to do.
pub async fn fetch(kubeconfig: &Path, data_dir: &Path) -> anyhow::Result<()> {
    let pki = crate::tls::pki_dir(data_dir);
    if pki.join("ca.key").exists() {
        tracing::info!(pki = %pki.display(), "the data directory has its CA already; --join fetches nothing");
        return Ok(());
    }
    let joining = || format!("joining with {}", kubeconfig.display());
    let kc = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| anyhow::anyhow!("{}: reading the kubeconfig: {e}", joining()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| anyhow::anyhow!("{}: loading the kubeconfig: {e}", joining()))?;
    let server = config.cluster_url.to_string();
    let client =
        kube::Client::try_from(config).map_err(|e| anyhow::anyhow!("{}: {e}", joining()))?;
    let api: Api<Secret> = Api::namespaced(client, NAMESPACE);
    let secret = match tokio::time::timeout(FETCH_TIMEOUT, api.get(SECRET)).await {
        Err(_) => anyhow::bail!("{}: {server} did not answer within 30s", joining()),
        Ok(Ok(s)) => s,
        Ok(Err(kube::Error::Api(s))) if s.code == 403 || s.code == 401 => anyhow::bail!(
            "{}: {server} refuses to give the cluster's identity ({NAMESPACE}/{SECRET}) to this \
             user: --join takes an admin's kubeconfig ({})",
            joining(),
            s.message
        ),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => anyhow::bail!(
            "{}: {server} has no {NAMESPACE}/{SECRET}: --join joins a cluster whose replicas run \
             on etcd (--datastore-endpoint) with TLS",
            joining()
        ),
        Ok(Err(e)) => anyhow::bail!("{}: {server}: {e}", joining()),
    };
    let data = secret.data.unwrap_or_default();
    for name in SHARED {
        anyhow::ensure!(
            data.contains_key(name),
            "{}: {NAMESPACE}/{SECRET} has no {name}",
            joining()
        );
    }
    crate::data_dir::private_dir(&pki)?;
    for (name, bytes) in &data {
        if !SHARED.contains(&name.as_str()) && name != ENCRYPTION {
            continue;
        }
        let text = std::str::from_utf8(&bytes.0)
            .with_context(|| format!("{NAMESPACE}/{SECRET}: {name} is not text"))?;
        crate::tls::write_private(&pki.join(name), text)?;
    }
    tracing::info!(pki = %pki.display(), %server, "joined: wrote the cluster's identity");
    Ok(())
}
