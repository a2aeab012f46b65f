//! The one error type of the crate: every variant names the source (URL, reference or path),
//! since `kgc sync` reports it as the reason a run was undetermined.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid git source {url}: {reason}")]
    Invalid { url: String, reason: String },
    #[error("git cache {}", path.display())]
    Cache {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("reading credentials for {url} from {from}")]
    Credentials {
        url: String,
        from: String,
        #[source]
        source: std::io::Error,
    },
    #[error("fetching {url}")]
    Fetch {
        url: String,
        #[source]
        source: gix::Error,
    },
    #[error("{reference} not found in {url}")]
    ReferenceNotFound { url: String, reference: String },
    #[error("reading {what} at {revision} of {url}")]
    Read {
        url: String,
        revision: String,
        what: String,
        #[source]
        source: gix::Error,
    },
    #[error("path {path} does not exist at {revision} of {url}")]
    PathNotFound {
        url: String,
        revision: String,
        path: String,
    },
    #[error("{path} at {revision} of {url}: {reason}")]
    Manifest {
        url: String,
        revision: String,
        path: String,
        reason: String,
    },
    #[error("{url} at {revision}: more than {limit} manifest files under the given paths")]
    TooManyFiles {
        url: String,
        revision: String,
        limit: usize,
    },
    #[error("{url} at {revision}: more than {} MiB of manifests under the given paths", limit >> 20)]
    TooLarge {
        url: String,
        revision: String,
        limit: u64,
    },
    /// A work tree could not be written (see [`crate::GitRepository::fetch_into`]).
    #[error("writing the work tree of {url} at {revision}: {}", path.display())]
    WorkTree {
        url: String,
        revision: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{url} at {revision}: the work tree would hold more than {files} files or {mib} MiB")]
    WorkTreeTooLarge {
        url: String,
        revision: String,
        files: usize,
        mib: u64,
    },
}
