//! kustomize v5, natively: a directory holding a `kustomization.yaml` (`.yml`, `Kustomization`)
//! built into the same objects, in the same order, as `kubectl kustomize` (kustomize v5.5)
//! prints them ([`build`]; [`yaml::to_string`] prints them as kubectl does). No subprocess and
//! no Go: the transformers are re-implemented over `serde_json::Value`, the field specs
//! kustomize applies to built-in kinds are its own tables
//! (`kubernetes-sigs/kustomize api/internal/konfig/builtinpluginconsts`) kept as data in
//! `builtin/`, and JSON patches go through kgc-patch.
//!
//! The pipeline is kustomize's (`kusttarget`): resources (files and nested kustomizations),
//! `configurations`/`crds`, generators, components, then the transformers in kustomize's order
//! (patches, namespace, prefix, suffix, labels, annotations, JSON 6902 patches, replicas,
//! images, replacements, built-in plugin configs), vars marked; at the top, generator hashes,
//! name references, vars resolved, local-config objects dropped, the output sorted.
//!
//! Remote bases (URLs), `helmCharts`, external plugins, validators and `buildMetadata` are
//! refused with an error that says so (Flux's `--no-remote-bases`, kubectl's default of no
//! external plugins). Files are read through [`fs::FileSystem`], confined to the
//! kustomization's root as kustomize's default `LoadRestrictionsRootOnly`. Every error is one
//! line naming the file and the field at fault.
#![forbid(unsafe_code)]

pub mod builtinconfig;
pub mod crds;
pub mod error;
pub mod factory;
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
pub mod plugins;
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
/// `Kustomization`), if it has one; more than one is kustomize's error.
pub fn find(fs: &dyn fs::FileSystem, dir: &Path) -> Result<Option<PathBuf>, Error> {
    kustomization::find(fs, dir)
}
