//! Deploy-side garbage collection: apply a set of manifests and delete what a previous apply
//! created and the source no longer has.
//!
//! The pure parts (sources, canonical kinds, ownership, order, inventory, the prune plan) are
//! separate from [`executor`], which talks to any API server through kube-rs, so the rules are
//! unit-tested without a cluster and the same executor runs against `kgc serve` and a real
//! cluster. The researched behaviour of qbec, Flux, kubectl ApplySet, cli-utils, kapp and Argo
//! CD this follows (and the gaps it closes) is summarised in each module.
#![forbid(unsafe_code)]

pub mod adopt;
pub mod desired;
pub mod executor;
pub mod gvk;
pub mod inventory;
pub mod listing;
pub mod order;
pub mod ownership;
pub mod plan;
pub mod readiness;
pub mod source;

use std::path::PathBuf;

use serde_json::Value;

/// The string at a JSON pointer, or `""` (absent or not a string).
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Errors of a deploy run. Each says which object or file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Line 0: an object a kustomization built (kustomize keeps no lines).
    #[error("{}{}: {message}", file.display(), if *line == 0 { String::new() } else { format!(":{line}") })]
    Source {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A `.flux.yaml` refused, invalid, or whose generators failed.
    #[error(transparent)]
    ManifestGeneration(#[from] kgc_manifestgen::Error),
    #[error("{0}")]
    Invalid(String),
    /// A kustomization could not be built (its error names the file and field).
    #[error(transparent)]
    Kustomize(#[from] kgc_kustomize::Error),
    /// Another set or tool owns an object or the parent.
    #[error("{0}")]
    Ownership(String),
    /// A guard (`--max-deletes`, empty render) refused the plan.
    #[error("refusing to prune: {0}")]
    Guard(String),
    /// The live objects changed since a reviewed plan was made.
    #[error("the cluster changed since the plan was made: {0}")]
    Drift(String),
    #[error("discovering the server's kinds: {0}")]
    Discovery(#[source] kgc_client::Error),
    #[error("{context}: {source}")]
    Kube {
        context: String,
        source: kube::Error,
    },
}
