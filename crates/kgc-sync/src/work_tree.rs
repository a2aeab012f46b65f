//! Reading a revision's manifests from a checked-out work tree ([`GitRepository::fetch_into`])
//! instead of the artifact in memory: what runs commands or reads files beside the manifests
//! needs a directory — Flux v1's `.flux.yaml` generators (`--manifest-generation`).
//!
//! The objects are named by their path from the repository's root (`deploy/web` for `deploy/web.yaml`), so that a set synced
//! either way keeps its components, and messages show repository paths, not the temporary
//! directory's.
//!
//! [`GitRepository::fetch_into`]: kgc_source::GitRepository::fetch_into

use std::path::{Component, Path, PathBuf};

use kgc_prune::source::{self, Input, SourceObject};

/// The manifests of `paths` (repository-relative, as `--path` takes them; none is the whole
/// repository) in the work tree at `root`.
pub fn read(
    root: &Path,
    paths: &[String],
    manifest_generation: bool,
) -> Result<Vec<SourceObject>, kgc_prune::Error> {
    let options = source::Options {
        manifest_generation,
        repository_root: Some(root.to_owned()),
    };
    let relative: Vec<PathBuf> = if paths.is_empty() {
        vec![PathBuf::new()]
    } else {
        paths.iter().map(|p| normalize(p)).collect()
    };
    let mut out = Vec::new();
    for rel in relative {
        let path = root.join(&rel);
        // A file is named by its stem; the artifact names it by its whole path.
        let prefix = if path.is_dir() {
            rel
        } else {
            rel.parent().map(Path::to_owned).unwrap_or_default()
        };
        let input = Input::Path {
            path,
            recursive: true,
        };
        let objects = source::load(&[input], &options).map_err(|e| from_root(e, root))?;
        out.extend(objects.into_iter().map(|mut o| {
            o.component = prefix.join(&o.component).to_string_lossy().into_owned();
            o.file = strip(o.file, root);
            o
        }));
    }
    Ok(out)
}

/// `--path` as a relative path: `/deploy/`, `./deploy` and `deploy` alike. The artifact, read
/// first, has refused a path that leaves the repository.
fn normalize(path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn strip(path: PathBuf, root: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rel) => rel.to_owned(),
        Err(_) => path,
    }
}

/// An error naming a file of the work tree, named from the repository's root instead.
fn from_root(e: kgc_prune::Error, root: &Path) -> kgc_prune::Error {
    match e {
        kgc_prune::Error::Source {
            file,
            line,
            message,
        } => kgc_prune::Error::Source {
            file: strip(file, root),
            line,
            message,
        },
        kgc_prune::Error::Io { path, source } => kgc_prune::Error::Io {
            path: strip(path, root),
            source,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_named_from_the_repository_root() {
        let root = tempfile::tempdir().unwrap();
        let cm =
            |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n");
        let files = [
            ("deploy/web.yaml", cm("web")),
            ("deploy/db/main.yml", cm("db")),
            ("other/x.yaml", cm("x")),
        ];
        for (path, text) in &files {
            let p = root.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let on_disk = read(root.path(), &[], false).unwrap();
        let named = |objs: &[SourceObject]| -> Vec<(String, String)> {
            let mut v: Vec<_> = objs
                .iter()
                .map(|o| (o.component.clone(), o.origin()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            named(&on_disk),
            [
                ("deploy/db/main".into(), "deploy/db/main.yml:1".into()),
                ("deploy/web".into(), "deploy/web.yaml:1".into()),
                ("other/x".into(), "other/x.yaml:1".into()),
            ]
        );
        let some = read(
            root.path(),
            &["/deploy/".into(), "./other/x.yaml".into()],
            false,
        )
        .unwrap();
        assert_eq!(
            named(&some),
            [
                ("deploy/db/main".into(), "deploy/db/main.yml:1".into()),
                ("deploy/web".into(), "deploy/web.yaml:1".into()),
                ("other/x".into(), "other/x.yaml:1".into()),
            ]
        );

        std::fs::write(root.path().join("deploy/bad.yaml"), "kind: [\n").unwrap();
        let err = read(root.path(), &["deploy".into()], false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("deploy/bad.yaml:"), "{err}");
    }

    #[test]
    fn generated_objects_are_a_component_of_the_synced_path() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("staging")).unwrap();
        std::fs::write(
            root.path().join(".flux.yaml"),
            "version: 1\ncommandUpdated:\n  generators:\n  - command: \"printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: g}\\n'\"\n",
        )
        .unwrap();
        let err = read(root.path(), &["staging".into()], false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            ".flux.yaml: manifest generation is disabled; pass --manifest-generation to run its generators"
        );
        let objs = read(root.path(), &["staging".into()], true).unwrap();
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0].component, "staging/.flux");
        assert_eq!(objs[0].origin(), ".flux.yaml (generated):1");
    }
}
