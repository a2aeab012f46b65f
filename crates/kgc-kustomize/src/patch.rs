//! A kustomization's patches: `patches` (kustomize's `PatchTransformer`), and the deprecated
//! `patchesStrategicMerge` and `patchesJson6902` (`PatchStrategicMergeTransformer`,
//! `PatchJson6902Transformer`), as `kubernetes-sigs/kustomize api/internal/builtins` and
//! `api/resmap/reswrangler.go` apply them.
//!
//! A patch whose text is a YAML (or JSON) list is a JSON patch (RFC 6902, through
//! `kgc_patch::json_patch`); anything else is one or more strategic merge patches, merged as
//! kustomize merges them ([`crate::merge2`]). A strategic merge patch without `target` patches
//! the one resource with its id (by its current or any previous id: a patch written against a
//! base's name still applies after a prefix) and is an error when none has it; a `target` that
//! selects nothing is not an error, as upstream.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::fs::Loader;
use crate::json6902;
use crate::kustomization;
use crate::merge2;
use crate::openapi::Schemas;
use crate::resource::{ResId, Resource};
use crate::selector::Selector;

/// One entry of `patches` or `patchesJson6902` (kustomize's `types.Patch`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Patch {
    /// A file holding the patch, relative to the kustomization.
    #[serde(default)]
    pub path: String,
    /// The patch, inline.
    #[serde(default)]
    pub patch: String,
    #[serde(default)]
    pub target: Option<Selector>,
    #[serde(default)]
    pub options: PatchOptions,
}

/// kustomize's `types.PatchArgs`: whether a strategic merge patch may rename the resources it
/// patches, or change their kind (without, the name and kind are put back after merging).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchOptions {
    #[serde(default)]
    pub allow_name_change: bool,
    #[serde(default)]
    pub allow_kind_change: bool,
}

/// One entry of `patchesStrategicMerge` (kustomize's `types.PatchStrategicMerge`): a file
/// name, or the patch itself inline.
pub type PatchStrategicMerge = String;

/// A loaded patch.
enum Loaded {
    Strategic(Vec<Value>),
    Json(Vec<Value>),
}

/// Where a patch came from, for messages: its file, or the kustomization it is inline in.
struct Source {
    file: PathBuf,
    field: String,
}

impl Source {
    fn error(&self, message: impl Into<String>) -> Error {
        Error::Invalid {
            file: self.file.clone(),
            field: self.field.clone(),
            message: message.into(),
        }
    }
}

fn kustomization_file(loader: &Loader) -> PathBuf {
    kustomization::find(loader.fs(), loader.dir())
        .ok()
        .flatten()
        .unwrap_or_else(|| loader.dir().join(kustomization::FILE_NAMES[0]))
}

/// Applies `patches` in order.
pub fn apply_patches(
    resources: &mut Vec<Resource>,
    patches: &[Patch],
    loader: &Loader,
    schemas: &Schemas,
) -> Result<(), Error> {
    let kfile = kustomization_file(loader);
    for (i, p) in patches.iter().enumerate() {
        let field = format!("patches[{i}]");
        let entry = Source {
            file: kfile.clone(),
            field: field.clone(),
        };
        let (source, text) = patch_text(p, loader, &entry)?;
        match parse(&text, &source)? {
            Loaded::Strategic(docs) => match &p.target {
                Some(target) => {
                    let [doc] = docs.as_slice() else {
                        return Err(source.error(
                            "Multiple Strategic-Merge Patches in one `patches` entry is not \
                             allowed to set `patches.target` field",
                        ));
                    };
                    let selected = select(resources, target, &entry)?;
                    patch_selected(resources, &selected, doc, p.options, schemas, &source)?;
                }
                None => {
                    for doc in &docs {
                        let target = by_id(resources, doc, &source)?;
                        patch_selected(resources, &[target], doc, p.options, schemas, &source)?;
                    }
                }
            },
            Loaded::Json(ops) => {
                let Some(target) = &p.target else {
                    return Err(source.error("must specify a target for JSON patch"));
                };
                let selected = select(resources, target, &entry)?;
                if ops.is_empty() {
                    continue;
                }
                for i in selected {
                    // kustomize's PatchTransformer records the id before a JSON patch, which
                    // may rename.
                    resources[i].store_previous_id();
                    json_patch(&mut resources[i], &ops, &source)?;
                }
            }
        }
    }
    Ok(())
}

/// Applies `patchesStrategicMerge`: each entry a file or an inline patch, each document of it
/// patching the resource with its id.
pub fn apply_patches_strategic_merge(
    resources: &mut Vec<Resource>,
    entries: &[PatchStrategicMerge],
    loader: &Loader,
    schemas: &Schemas,
) -> Result<(), Error> {
    let kfile = kustomization_file(loader);
    let mut loaded = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let inline = Source {
            file: kfile.clone(),
            field: format!("patchesStrategicMerge[{i}]"),
        };
        // kustomize tries the entry as YAML first and falls back to reading a file by that name.
        let docs = match serde_saphyr::from_multiple::<Value>(entry) {
            Ok(docs)
                if docs.iter().any(is_resource)
                    && docs.iter().all(|d| is_resource(d) || d.is_null()) =>
            {
                (inline, docs)
            }
            _ => {
                let text = loader.read_to_string(entry.trim()).map_err(|e| {
                    inline.error(format!(
                        "failed to get the patch file from path({entry}): {e}"
                    ))
                })?;
                let source = Source {
                    file: loader.dir().join(entry.trim()),
                    field: "documents".to_owned(),
                };
                let docs = serde_saphyr::from_multiple::<Value>(&text)
                    .map_err(|e| source.error(crate::error::first_line(&e.to_string())))?;
                (source, docs)
            }
        };
        loaded.push(docs);
    }
    for (source, docs) in &loaded {
        for doc in docs.iter().filter(|d| !d.is_null()) {
            if !is_resource(doc) {
                return Err(source.error(
                    "a strategic merge patch must be a resource with kind and metadata.name",
                ));
            }
            let target = by_id(resources, doc, source)?;
            patch_selected(
                resources,
                &[target],
                doc,
                PatchOptions::default(),
                schemas,
                source,
            )?;
        }
    }
    Ok(())
}

/// Applies `patchesJson6902`: JSON patches on the resources their target (which must name a
/// resource) selects.
pub fn apply_patches_json6902(
    resources: &mut [Resource],
    patches: &[Patch],
    loader: &Loader,
) -> Result<(), Error> {
    let kfile = kustomization_file(loader);
    for (i, p) in patches.iter().enumerate() {
        let entry = Source {
            file: kfile.clone(),
            field: format!("patchesJson6902[{i}]"),
        };
        let Some(target) = p.target.as_ref().filter(|t| !t.name.is_empty()) else {
            return Err(entry.error("must specify the target name"));
        };
        let (source, text) = patch_text(p, loader, &entry)?;
        let ops = match parse(&text, &source)? {
            Loaded::Json(ops) => ops,
            Loaded::Strategic(_) => {
                return Err(source.error("a JSON patch must be a list of operations"));
            }
        };
        if ops.is_empty() {
            return Err(source.error("patch appears to be empty"));
        }
        for i in select(resources, target, &entry)? {
            json_patch(&mut resources[i], &ops, &source)?;
        }
    }
    Ok(())
}

/// The patch's text, inline or read from `path`, and where it came from.
fn patch_text(p: &Patch, loader: &Loader, entry: &Source) -> Result<(Source, String), Error> {
    let inline = p.patch.trim();
    match (inline.is_empty(), p.path.is_empty()) {
        (true, true) => Err(entry.error("must specify one of patch and path")),
        (false, false) => Err(entry.error("patch and path can't be set at the same time")),
        (false, true) => Ok((
            Source {
                file: entry.file.clone(),
                field: format!("{}.patch", entry.field),
            },
            inline.to_owned(),
        )),
        (true, false) => {
            let text = loader.read_to_string(&p.path).map_err(|e| Error::Invalid {
                file: entry.file.clone(),
                field: format!("{}.path", entry.field),
                message: format!("failed to get the patch file from path({}): {e}", p.path),
            })?;
            Ok((
                Source {
                    file: loader.dir().join(&p.path),
                    field: "patch".to_owned(),
                },
                text,
            ))
        }
    }
}

/// A strategic merge patch is a resource: kustomize reads it as one, so it needs a kind and a
/// name even when a target chooses what it patches.
fn is_resource(doc: &Value) -> bool {
    let has = |p: &str| {
        doc.pointer(p)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    has("/kind") && has("/metadata/name")
}

/// A YAML list is a JSON patch; mappings are strategic merge patches.
fn parse(text: &str, source: &Source) -> Result<Loaded, Error> {
    // Text that opens a list is JSON to kustomize (`jsonPatchFromBytes`), not YAML: a flow
    // list of YAML maps (`[{op: add, …}]`) is refused.
    if text.starts_with('[') {
        return match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(ops)) => Ok(Loaded::Json(ops)),
            _ => Err(source.error(
                "unable to parse SM or JSON patch: a patch that opens with '[' must be a JSON list",
            )),
        };
    }
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| {
        source.error(format!(
            "unable to parse SM or JSON patch: {}",
            crate::error::first_line(&e.to_string())
        ))
    })?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    match docs.as_slice() {
        // An empty patch is, to kustomize, a JSON patch with nothing to do.
        [] => Ok(Loaded::Json(Vec::new())),
        [Value::Array(ops)] => Ok(Loaded::Json(ops.clone())),
        _ if docs.iter().all(is_resource) => Ok(Loaded::Strategic(docs)),
        _ => Err(source.error(
            "unable to parse SM or JSON patch: expected resources with kind and metadata.name \
             (strategic merge) or one list of operations (JSON 6902)",
        )),
    }
}

/// The indexes of the resources `target` selects, in order.
fn select(resources: &[Resource], target: &Selector, entry: &Source) -> Result<Vec<usize>, Error> {
    let compiled = target.compile().map_err(|e| match e {
        Error::Invalid { field, message, .. } => Error::Invalid {
            file: entry.file.clone(),
            field: format!("{}.target.{field}", entry.field),
            message,
        },
        other => other,
    })?;
    Ok(resources
        .iter()
        .enumerate()
        .filter(|(_, r)| compiled.matches(r))
        .map(|(i, _)| i)
        .collect())
}

/// kustomize's `ResId.String`, as its patch messages print ids.
fn id_string(id: &ResId) -> String {
    let or = |s: &str, d: &'static str| {
        if s.is_empty() {
            d.to_owned()
        } else {
            s.to_owned()
        }
    };
    format!(
        "{}.{}.{}/{}.{}",
        or(&id.kind, "[noKind]"),
        or(&id.version, "[noVer]"),
        or(&id.group, "[noGrp]"),
        id.name,
        or(&id.namespace, "[noNs]")
    )
}

/// The one resource whose current or any previous id is the patch's (kustomize's
/// `GetById`: group, version, kind and name equal, namespaces equal once effective).
fn by_id(resources: &[Resource], patch: &Value, source: &Source) -> Result<usize, Error> {
    let want = ResId::of(patch);
    let same = |id: &ResId| {
        id.group == want.group
            && id.version == want.version
            && id.kind == want.kind
            && id.name == want.name
            && id.effective_namespace() == want.effective_namespace()
    };
    let found: Vec<usize> = resources
        .iter()
        .enumerate()
        .filter(|(_, r)| r.previous.iter().any(same) || same(&r.id()))
        .map(|(i, _)| i)
        .collect();
    let id = id_string(&want);
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(source.error(format!(
            "no resource matches strategic merge patch \"{id}\": no matches for Id {id}; \
             failed to find unique target for patch {id}"
        ))),
        _ => Err(source.error(format!(
            "no resource matches strategic merge patch \"{id}\": multiple matches for Id {id}; \
             failed to find unique target for patch {id}"
        ))),
    }
}

/// Merges `patch` into each selected resource (kustomize's `resWrangler.ApplySmPatch` and
/// `Resource.ApplySmPatch`); resources the patch deletes are removed.
fn patch_selected(
    resources: &mut Vec<Resource>,
    selected: &[usize],
    patch: &Value,
    options: PatchOptions,
    schemas: &Schemas,
    source: &Source,
) -> Result<(), Error> {
    let mut deleted = Vec::new();
    for &i in selected {
        let r = &mut resources[i];
        let id = r.id();
        let api_version = id.api_version();
        // The patch takes the target's apiVersion, and its kind unless it names one.
        let mut patch = patch.clone();
        if let Value::Object(p) = &mut patch {
            // A target without an apiVersion gains none (kustomize's `examples/breakfast`).
            if !api_version.is_empty() {
                p.insert("apiVersion".into(), Value::String(api_version.clone()));
            }
            if p.get("kind")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                p.insert("kind".into(), Value::String(id.kind.clone()));
            }
        }
        if options.allow_name_change || options.allow_kind_change {
            r.store_previous_id();
        }
        let schema = schemas.for_kind(&api_version, &id.kind);
        let merged = merge2::merge(&r.object, &patch, schema).map_err(|m| source.error(m))?;
        let Some(mut merged) = merged else {
            deleted.push(i);
            continue;
        };
        // Both sides are maps (resources), so the merge is one: anything else is refused
        // rather than trusted.
        let Some(object) = merged.as_object_mut() else {
            return Err(source.error("the strategic merge did not produce a map"));
        };
        if !options.allow_kind_change {
            object.insert("kind".into(), Value::String(id.kind.clone()));
        }
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            if !options.allow_name_change {
                meta.insert("name".into(), Value::String(id.name.clone()));
            }
            if id.namespace.is_empty() {
                meta.remove("namespace");
            } else {
                meta.insert("namespace".into(), Value::String(id.namespace.clone()));
            }
        }
        r.object = merged;
    }
    let mut i = 0;
    resources.retain(|_| {
        i += 1;
        !deleted.contains(&(i - 1))
    });
    Ok(())
}

/// Applies JSON patch `ops` to `r`, all or nothing, naming the resource when one fails.
fn json_patch(r: &mut Resource, ops: &[Value], source: &Source) -> Result<(), Error> {
    json6902::apply(&mut r.object, ops)
        .map_err(|m| source.error(format!("{m} (on {})", id_string(&r.id()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FileSystem;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Files in memory.
    struct Mem(BTreeMap<PathBuf, String>);

    impl FileSystem for Mem {
        fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
            self.0
                .get(path)
                .map(|s| s.clone().into_bytes())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }
        fn is_dir(&self, _: &Path) -> bool {
            false
        }
        fn exists(&self, path: &Path) -> bool {
            self.0.contains_key(path)
        }
        fn read_dir(&self, _: &Path) -> std::io::Result<Vec<PathBuf>> {
            Ok(Vec::new())
        }
    }

    fn mem(files: &[(&str, &str)]) -> Mem {
        Mem(files
            .iter()
            .map(|(p, t)| (Path::new("/k").join(p), (*t).to_owned()))
            .collect())
    }

    fn resources() -> Vec<Resource> {
        vec![
            Resource::new(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"replicas": 1, "template": {"spec": {"containers": [
                    {"name": "app", "image": "app:1"}]}}}})),
            Resource::new(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})),
        ]
    }

    fn patches(y: &str) -> Vec<Patch> {
        serde_saphyr::from_str(y).unwrap()
    }

    fn run(files: &[(&str, &str)], y: &str) -> Result<Vec<Resource>, Error> {
        let fs = mem(files);
        let loader = Loader::new(&fs, Path::new("/k"));
        let mut rs = resources();
        apply_patches(&mut rs, &patches(y), &loader, &Schemas::Builtin)?;
        Ok(rs)
    }

    #[test]
    fn strategic_without_target_patches_its_own_id() {
        let rs = run(
            &[],
            "- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec: {replicas: 3}\n",
        )
        .unwrap();
        assert_eq!(rs[0].object["spec"]["replicas"], json!(3));
        assert_eq!(rs[1], resources()[1]);
    }

    #[test]
    fn strategic_by_a_previous_name() {
        let fs = mem(&[]);
        let loader = Loader::new(&fs, Path::new("/k"));
        let mut rs = resources();
        rs[0].store_previous_id();
        rs[0].object["metadata"]["name"] = json!("p-web");
        let p = patches(
            "- patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2}}'",
        );
        apply_patches(&mut rs, &p, &loader, &Schemas::Builtin).unwrap();
        assert_eq!(rs[0].object["spec"]["replicas"], json!(2));
        assert_eq!(rs[0].object["metadata"]["name"], json!("p-web"));
    }

    #[test]
    fn json6902_with_target_from_a_file() {
        let rs = run(
            &[(
                "p.yaml",
                "- op: replace\n  path: /spec/replicas\n  value: 5\n",
            )],
            "- path: p.yaml\n  target: {kind: Deployment}\n",
        )
        .unwrap();
        assert_eq!(rs[0].object["spec"]["replicas"], json!(5));
        assert_eq!(rs[0].previous.len(), 1);
    }

    #[test]
    fn a_name_change_records_the_previous_id() {
        let rs = run(
            &[],
            "- patch: '{kind: Deployment, metadata: {name: other}}'\n  target: {name: web, kind: Deployment}\n  options: {allowNameChange: true}\n",
        )
        .unwrap();
        assert_eq!(rs[0].object["metadata"]["name"], json!("other"));
        assert_eq!(rs[0].original_id().name, "web");
        // Without the option the name is put back.
        let rs = run(
            &[],
            "- patch: '{kind: Deployment, metadata: {name: other}}'\n  target: {name: web, kind: Deployment}\n",
        )
        .unwrap();
        assert_eq!(rs[0].object["metadata"]["name"], json!("web"));
        assert!(rs[0].previous.is_empty());
    }

    #[test]
    fn delete_removes_the_resource() {
        let rs = run(
            &[],
            "- patch: |\n    apiVersion: v1\n    kind: Service\n    metadata: {name: web}\n    $patch: delete\n",
        )
        .unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].id().kind, "Deployment");
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let e = run(&[], "- path: missing.yaml\n").unwrap_err().to_string();
        assert!(
            e.starts_with("/k/kustomization.yaml: patches[0].path: failed to get the patch file from path(missing.yaml)"),
            "{e}"
        );
        let e = run(&[("bad.yaml", "a: [")], "- path: bad.yaml\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/k/bad.yaml: patch: unable to parse SM or JSON patch"),
            "{e}"
        );
        let e = run(
            &[("p.yaml", "- op: remove\n  path: /spec/nothere\n")],
            "- path: p.yaml\n  target: {kind: Deployment}\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "/k/p.yaml: patch: error in remove for path: '/spec/nothere': Unable to remove nonexistent key: nothere: missing value (on Deployment.v1.apps/web.[noNs])"
        );
        let e = run(
            &[],
            "- patch: '{kind: Deployment, metadata: {name: nope}}'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no resource matches strategic merge patch \"Deployment.[noVer].[noGrp]/nope.[noNs]\""), "{e}");
        let e = run(&[], "- patch: '[]'\n").unwrap_err().to_string();
        assert!(e.ends_with("must specify a target for JSON patch"), "{e}");
        let e = run(&[], "- patch: '[]'\n  target: {name: '(['}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/k/kustomization.yaml: patches[0].target.name: "),
            "{e}"
        );
        let e = run(&[], "- {}\n").unwrap_err().to_string();
        assert!(e.ends_with("must specify one of patch and path"), "{e}");
    }

    #[test]
    fn a_target_matching_nothing_is_silent() {
        let rs = run(
            &[],
            "- patch: '{kind: Nope, metadata: {name: x}}'\n  target: {kind: Nope}\n- patch: '[{\"op\": \"remove\", \"path\": \"/x\"}]'\n  target: {kind: Nope}\n",
        )
        .unwrap();
        assert_eq!(rs, resources());
    }

    #[test]
    fn deprecated_fields() {
        let fs = mem(&[(
            "svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort}\n",
        )]);
        let loader = Loader::new(&fs, Path::new("/k"));
        let mut rs = resources();
        apply_patches_strategic_merge(
            &mut rs,
            &[
                "svc.yaml".to_owned(),
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 4}\n"
                    .to_owned(),
            ],
            &loader,
            &Schemas::Builtin,
        )
        .unwrap();
        assert_eq!(rs[1].object["spec"]["type"], json!("NodePort"));
        assert_eq!(rs[0].object["spec"]["replicas"], json!(4));
        let p = patches(
            "- target: {kind: Deployment, name: web}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/paused\", \"value\": true}]'\n",
        );
        apply_patches_json6902(&mut rs, &p, &loader).unwrap();
        assert_eq!(rs[0].object["spec"]["paused"], json!(true));
        let p = patches("- target: {kind: Deployment}\n  patch: '[]'\n");
        let e = apply_patches_json6902(&mut rs, &p, &loader).unwrap_err();
        assert!(
            e.to_string().ends_with("must specify the target name"),
            "{e}"
        );
    }
}
