//! `kgc serve add-user NAME`: a client certificate signed by the data directory's CA, an
//! optional RoleBinding (or ClusterRoleBinding) to one of the default roles, and a ready
//! kubeconfig on stdout or, with `--write-kubeconfig FILE`, in a file written only once
//! everything else has succeeded (as k3s's `--write-kubeconfig`): a shell redirect would leave an
//! empty, world-readable file behind when add-user fails.
//!
//! The namespace of `-n` must exist: like `kubectl create rolebinding -n NS`, add-user never
//! creates one implicitly (a typo would otherwise make a namespace nobody asked for, and the
//! binding would silently grant nothing where the operator meant it to).
//!
//! The binding is written through the running server when it answers (with the admin
//! kubeconfig of the data directory), so the server sees it at once; when no server runs, it is
//! written straight into the stopped server's store, where the server finds it on start: under
//! the data directory's lock (so never beside a running server), and with the same encryption
//! configuration as the server (`--encryption-provider-config`, or the data directory's own).

use std::path::Path;

use anyhow::Context;
use kgc_store::{Options, Store};
use kube::api::{Api, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::tls::{client_cert, read_ca};

#[derive(clap::Args)]
pub struct Args {
    /// The user name (the certificate's CN).
    name: String,
    /// Groups the user belongs to (the certificate's O entries); repeatable.
    #[arg(long = "group")]
    groups: Vec<String>,
    /// Bind --role in this namespace (a RoleBinding), which must exist: add-user does not
    /// create it. Without -n, --role binds cluster-wide (a ClusterRoleBinding).
    #[arg(long, short = 'n', requires = "role")]
    namespace: Option<String>,
    /// The default ClusterRole to bind.
    #[arg(long, value_parser = ["view", "edit", "admin", "cluster-admin"])]
    role: Option<String>,
    /// Write the kubeconfig to FILE (mode 0600, replaced whole, only on success) instead of
    /// printing it on stdout.
    #[arg(long, value_name = "FILE")]
    write_kubeconfig: Option<std::path::PathBuf>,
}

pub async fn run(
    args: Args,
    data_dir: &Path,
    encryption: &crate::encryption::EncryptionArgs,
) -> anyhow::Result<()> {
    if args.name.is_empty() || args.name.contains(['/', '%']) || args.name == "." {
        anyhow::bail!(
            "invalid user name {:?}: it must be a valid path segment",
            args.name
        );
    }
    let ca = read_ca(data_dir)?;
    let admin_path = data_dir.join("kubeconfig");
    let admin = Kubeconfig::read_from(&admin_path).with_context(|| {
        format!(
            "reading {} (start `kgc serve --data-dir {}` once first)",
            admin_path.display(),
            data_dir.display()
        )
    })?;
    let cluster = admin
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .context("the admin kubeconfig names no cluster")?;
    let server = cluster.server.clone().unwrap_or_default();
    if !server.starts_with("https://") {
        anyhow::bail!(
            "the server in {} ({server}) runs with --insecure-http, which has no users: \
             start it without --insecure-http",
            admin_path.display()
        );
    }
    let ca_pem = String::from_utf8(decode_base64(
        cluster
            .certificate_authority_data
            .as_deref()
            .context("the admin kubeconfig carries no certificate-authority-data")?,
    )?)
    .context("certificate-authority-data is not PEM")?;
    let groups: Vec<&str> = args.groups.iter().map(String::as_str).collect();
    let cert = client_cert(&ca, &args.name, &groups)?;
    if let Some(role) = &args.role {
        let binding = binding(&args.name, role, args.namespace.as_deref());
        create_binding(admin, data_dir, encryption, binding).await?;
    }
    let mut kubeconfig = crate::serve::kubeconfig(&server, Some((&ca_pem, &cert)));
    if let Some(ns) = &args.namespace {
        kubeconfig = kubeconfig.replace(
            "    namespace: default\n",
            &format!("    namespace: {ns}\n"),
        );
    }
    match &args.write_kubeconfig {
        Some(path) => {
            crate::tls::write_private(path, &kubeconfig)?;
            eprintln!("kubeconfig for {} written to {}", args.name, path.display());
        }
        None => print!("{kubeconfig}"),
    }
    Ok(())
}

fn binding(user: &str, role: &str, namespace: Option<&str>) -> Value {
    let name = format!("kgc-user:{user}:{role}");
    let mut b = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": if namespace.is_some() { "RoleBinding" } else { "ClusterRoleBinding" },
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    if let Some(ns) = namespace {
        b["metadata"]["namespace"] = json!(ns);
    }
    b
}

async fn create_binding(
    admin: Kubeconfig,
    data_dir: &Path,
    encryption: &crate::encryption::EncryptionArgs,
    binding: Value,
) -> anyhow::Result<()> {
    let kind = binding["kind"].as_str().unwrap_or_default().to_owned();
    let name = binding["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let namespace = binding["metadata"]["namespace"].as_str().map(str::to_owned);
    let config = kube::Config::from_custom_kubeconfig(admin, &KubeConfigOptions::default())
        .await
        .context("loading the admin kubeconfig")?;
    let client = crate::rate_limit::client(config, crate::rate_limit::UNLIMITED, None)?;
    let plural = if namespace.is_some() {
        "rolebindings"
    } else {
        "clusterrolebindings"
    };
    let ar = ApiResource {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        api_version: "rbac.authorization.k8s.io/v1".into(),
        kind: kind.clone(),
        plural: plural.into(),
    };
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client, ns, &ar),
        None => Api::all_with(client, &ar),
    };
    let obj: DynamicObject = serde_json::from_value(binding.clone())?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {
            eprintln!("{kind} {name} created");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {
            eprintln!("{kind} {name} already exists");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 404 && namespace.is_some() => {
            Err(missing_namespace(&kind, &name, namespace.as_deref()))
        }
        Err(kube::Error::Api(s)) => Err(anyhow::anyhow!("creating {kind} {name}: {}", s.message)),
        Err(e) => {
            // No server answers: write into the stopped server's store.
            tracing::debug!(error = %e, "the server does not answer; writing the binding offline");
            offline(
                data_dir,
                encryption,
                &binding,
                &kind,
                &name,
                namespace.as_deref(),
            )
            .await
        }
    }
}

async fn offline(
    data_dir: &Path,
    encryption: &crate::encryption::EncryptionArgs,
    binding: &Value,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> anyhow::Result<()> {
    let db = data_dir.join("kgc.db");
    if !db.exists() {
        anyhow::bail!(
            "no server answers and {} does not exist (an --in-memory server keeps no store): \
             start kgc serve and run add-user again",
            db.display()
        );
    }
    let _held = crate::data_dir::DataDir::lock(data_dir)?;
    let store = Store::open_with(Options {
        path: Some(db.clone()),
        encryption: encryption.transformers(data_dir, false)?,
        ..Options::default()
    })
    .await
    .with_context(|| format!("opening the store {}", db.display()))?;
    let catalog = store.catalog();
    let info = catalog
        .by_kind("rbac.authorization.k8s.io", "v1", kind)
        .context("RBAC kinds are built in")?;
    let result = store
        .create(info, namespace.unwrap_or_default(), binding.clone(), false)
        .await;
    store.close();
    match result {
        Ok(_) => eprintln!("{kind} {name} written to the stopped server's store"),
        Err(kgc_store::Error::Api(s)) if s.is(kgc_meta::Reason::AlreadyExists) => {
            eprintln!("{kind} {name} already exists")
        }
        Err(kgc_store::Error::Api(s)) if s.is(kgc_meta::Reason::NotFound) => {
            return Err(missing_namespace(kind, name, namespace));
        }
        Err(e) => return Err(e).with_context(|| format!("creating {kind} {name}")),
    }
    Ok(())
}

/// The error for a binding whose namespace does not exist, with the command that fixes it.
fn missing_namespace(kind: &str, name: &str, namespace: Option<&str>) -> anyhow::Error {
    let ns = namespace.unwrap_or_default();
    anyhow::anyhow!(
        "creating {kind} {name}: namespace {ns:?} does not exist \
         (add-user does not create it: `kubectl create namespace {ns}` first)"
    )
}

fn decode_base64(s: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .context("certificate-authority-data is not base64")
}
