//! Flux's source-controller for kgc: fetch a git repository and hand out one commit's
//! manifests as an [`Artifact`].
//!
//! Like `fluxcd/source-controller`'s GitRepository reconciler, a fetch resolves a reference
//! (branch, tag or commit) to one commit and records it as a revision in Flux v2's form
//! (`main@sha1:<hex>`). Unlike it, kgc keeps no tarball: the manifests are read straight from
//! the commit's tree in a bare cache repository, without a work tree, so nothing on disk can
//! drift from the commit and a symlink cannot point outside the repository.
//!
//! What must run in a directory (Flux v1's `.flux.yaml` generators) gets a work tree written
//! from the commit on request ([`GitRepository::fetch_into`]), links out of it removed.
//!
//! An incomplete read is an error, never a partial artifact: `kgc sync` prunes what the
//! artifact no longer has, so a missing path, an unreadable blob or an unknown reference must
//! stop the run before anything is deleted.
#![forbid(unsafe_code)]

mod artifact;
mod auth;
mod checkout;
mod error;
mod fetch;
mod reference;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use artifact::{Artifact, MAX_ARTIFACT_BYTES, MAX_FILES, MAX_MANIFEST_BYTES, ManifestFile};
pub use auth::{Auth, redact};
pub use checkout::{MAX_WORK_TREE_BYTES, MAX_WORK_TREE_FILES};
pub use error::Error;
pub use reference::Reference;

/// A git source: Flux's `GitRepository` (URL, reference, credentials) plus the paths whose
/// manifests make up the artifact (Flux's `Kustomization.spec.path`, here several).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitRepository {
    /// A local path, `file://`, `https://`, `http://`, `ssh://` or scp-like `git@host:repo`.
    pub url: String,
    pub reference: Reference,
    /// Repository-relative directories or files; empty means the repository's root.
    pub paths: Vec<String>,
    pub auth: Auth,
}

impl GitRepository {
    /// Blocking (call it from `spawn_blocking`). Fetches into a bare cache repository under
    /// `cache_dir` (one per URL, reused across runs, so an unchanged re-sync transfers no
    /// objects), resolves the reference and reads the commit's tree without a work tree.
    pub fn fetch(&self, cache_dir: &Path) -> Result<Artifact, Error> {
        let fetched = fetch::fetch(self, cache_dir)?;
        let artifact = artifact::read(self, &fetched.repo, fetched.commit)?;
        tracing::debug!(
            url = %auth::redact(&self.url),
            revision = %artifact.revision,
            transferred = fetched.transferred,
            files = artifact.files.len(),
            "git source fetched"
        );
        Ok(artifact)
    }

    /// [`fetch`](Self::fetch), and the commit's whole tree written into `work_tree` (an
    /// existing, empty directory) for what needs real files: `.flux.yaml` generators run in it.
    /// The artifact still validates the paths and names the revision.
    pub fn fetch_into(&self, cache_dir: &Path, work_tree: &Path) -> Result<Artifact, Error> {
        let fetched = fetch::fetch(self, cache_dir)?;
        let artifact = artifact::read(self, &fetched.repo, fetched.commit)?;
        checkout::write(
            self,
            &fetched.repo,
            fetched.commit,
            &artifact.revision,
            work_tree,
        )?;
        Ok(artifact)
    }
}
