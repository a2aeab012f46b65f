//! `kgc sync`: Flux's loop (`fluxcd/kustomize-controller`) on kgc's prune engine.
//!
//! One [`Kustomization`] syncs one git source (a [`kgc_source::GitRepository`]: URL, reference,
//! paths) into one set (app + environment). A run fetches the source's artifact, reads its
//! manifests and applies and prunes them with the engine of `kgc apply`
//! ([`kgc_prune::executor`]). What Flux keeps in a Kustomization's status, kgc keeps on the set's
//! parent ConfigMap ([`record`]), and each run is announced by an Event on that parent
//! ([`event`]). Identity is the set's, never the source's: changing the URL, the branch or the
//! paths to ones with the same manifests re-labels and deletes nothing.
#![forbid(unsafe_code)]

pub mod backoff;
pub mod event;
pub mod kustomization;
pub mod metrics;
pub mod record;
pub mod schedule;
pub mod work_tree;

pub use backoff::Backoff;
pub use kustomization::{Kustomization, Run};
pub use record::{Outcome, Record};

/// Why a run could not complete. Each keeps its cause; [`chain`] spells the whole of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source could not be fetched: nothing is applied or pruned.
    #[error("fetching {url}")]
    Fetch {
        url: String,
        source: kgc_source::Error,
    },
    /// The fetch did not finish in time: nothing is applied or pruned.
    #[error("fetching {url}: no answer within {after:?} (--fetch-timeout)")]
    FetchTimeout {
        url: String,
        after: std::time::Duration,
    },
    /// The fetch task itself failed (panicked or was cancelled).
    #[error("fetching {url}: the fetch task failed")]
    FetchTask {
        url: String,
        source: tokio::task::JoinError,
    },
    /// No temporary directory for the revision's work tree (`--manifest-generation`).
    #[error("creating a temporary work tree")]
    WorkTree { source: std::io::Error },
    /// The task reading the work tree (running generators) failed.
    #[error("revision {revision}: reading the work tree failed")]
    ReadTask {
        revision: String,
        source: tokio::task::JoinError,
    },
    /// The revision's manifests could not be read, or the engine refused or failed the run.
    #[error("revision {revision}")]
    Deploy {
        revision: String,
        source: kgc_prune::Error,
    },
    #[error("{context}")]
    Kube {
        context: String,
        source: kube::Error,
    },
}

/// An error and its causes on one line, `a: b: c`, for the record and the Event (where one
/// line is all there is).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
