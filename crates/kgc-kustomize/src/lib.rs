//! kustomize v5, natively: a directory holding a `kustomization.yaml` (`.yml`, `Kustomization`)
//! built into the same objects, in the same order, as `kubectl kustomize` (kustomize v5.5)
//! prints them. No subprocess and no Go: the transformers are re-implemented over
//! `serde_json::Value`, the field specs kustomize applies to built-in kinds are its own tables
//! (`kubernetes-sigs/kustomize api/internal/konfig/builtinpluginconsts`) kept as data in
//! `builtin/`, and patches go through kgc-patch.
//!
//! Remote bases (URLs) and `helmCharts` are refused with an error that says so (Flux's
//! `--no-remote-bases`). Files are read through [`fs::FileSystem`], confined to the
//! kustomization's root as kustomize's default `LoadRestrictionsRootOnly`.
#![forbid(unsafe_code)]

pub mod builtinconfig;
pub mod crds;
pub mod error;
pub mod fieldspec;
pub mod fs;
pub mod generator;
pub mod imagetag;
pub mod json6902;
pub mod kustomization;
pub mod kusttarget;
pub mod labels;
pub mod merge2;
pub mod nameprefix;
pub mod nameref;
pub mod namespace;
pub mod openapi;
pub mod patch;
pub mod replacement;
pub mod replicacount;
pub mod resource;
pub mod scope;
pub mod selector;
pub mod sortorder;
pub mod var;
pub mod yaml;

use std::path::{Path, PathBuf};

pub use error::Error;
pub use kusttarget::build;

/// The kustomization file of `dir` (`kustomization.yaml`, `kustomization.yml` or
/// `Kustomization`), if it has one.
pub fn find(fs: &dyn fs::FileSystem, dir: &Path) -> Result<Option<PathBuf>, Error> {
    kustomization::find(fs, dir)
}
