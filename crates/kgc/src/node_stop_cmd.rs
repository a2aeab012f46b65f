//! `kgc node stop|start NAME`: sets or removes a simulated node's `kgc.io/stopped` annotation
//! through the API, as a user with kubectl would. The node's simulated kubelet reads it.

use std::path::PathBuf;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Node;
use kgc_nodesim::{SIMULATED, STOPPED};
use kube::Api;
use kube::api::{Patch, PatchParams};

#[derive(clap::Args)]
pub struct Args {
    /// The node.
    name: String,
    /// The kubeconfig [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: the current context].
    #[arg(long)]
    context: Option<String>,
}

/// Stops (`stopped`) or starts the node; prints `node/NAME stopped|started`.
pub async fn set_stopped(args: Args, stopped: bool) -> anyhow::Result<()> {
    let config =
        crate::controller::kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let server = config.cluster_url.to_string();
    let client = crate::rate_limit::client(config, crate::rate_limit::UNLIMITED, None)?;
    let api: Api<Node> = Api::all(client);
    let name = &args.name;
    let node = api
        .get_opt(name)
        .await
        .with_context(|| format!("reading node {name:?} from {server}"))?
        .with_context(|| format!("node {name:?} not found"))?;
    let simulated = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIMULATED))
        .is_some_and(|v| v == "true");
    if !simulated {
        anyhow::bail!(
            "node {name:?} is not simulated (it has no annotation {SIMULATED}: \"true\")"
        );
    }
    let value = if stopped {
        "true".into()
    } else {
        serde_json::Value::Null
    };
    let patch = serde_json::json!({"metadata": {"annotations": {STOPPED: value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .with_context(|| format!("patching node {name:?}"))?;
    println!(
        "node/{name} {}",
        if stopped { "stopped" } else { "started" }
    );
    Ok(())
}
