//! The artifact: one commit's manifests, read from its tree in the object database without a
//! work tree (source-controller packs a tarball of a checkout; kgc needs neither).
//!
//! Bounded: a manifest blob over [`MAX_MANIFEST_BYTES`] (checked from its header before it is
//! loaded), more than [`MAX_FILES`] manifests or more than [`MAX_ARTIFACT_BYTES`] in all is an
//! error.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::object::tree::EntryMode;

use crate::{Error, GitRepository, auth};

/// The largest manifest file read (kube-apiserver's request limit is 3 MiB; a multi-document
/// file may hold several objects).
pub const MAX_MANIFEST_BYTES: u64 = 8 << 20;
/// The most manifest files one artifact holds.
pub const MAX_FILES: usize = 20_000;
/// The most bytes of manifests one artifact holds (a 2,000-object repository is a few MiB).
pub const MAX_ARTIFACT_BYTES: u64 = 256 << 20;
/// Symbolic links followed while resolving one path, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINKS: usize = 40;
/// What kubectl reads from a directory (`kubectl apply -f DIR`: `.json`, `.yaml`, `.yml`).
const MANIFEST_EXTENSIONS: [&str; 3] = [".yaml", ".yml", ".json"];
/// Flux v1's manifest generation config (`fluxcd/flux pkg/manifests/configfile.go`).
const FLUX_CONFIG: &str = ".flux.yaml";

/// One commit's manifests under the source's paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// Flux v2's revision: `main@sha1:<hex>`, `v1.0@sha1:<hex>` or `sha1:<hex>`.
    pub revision: String,
    /// The commit's 40-hex id.
    pub commit: String,
    /// Every `.yaml`/`.yml`/`.json` blob under the paths, recursively, and the `.flux.yaml`
    /// nearest above each directory path, sorted by path.
    pub files: Vec<ManifestFile>,
}

/// A manifest file of the artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestFile {
    /// Repository-relative, `/`-separated.
    pub path: String,
    /// The blob, valid UTF-8.
    pub content: Vec<u8>,
}

pub(crate) fn read(
    source: &GitRepository,
    repo: &gix::Repository,
    commit: ObjectId,
) -> Result<Artifact, Error> {
    let url = auth::redact(&source.url);
    let reader = Reader {
        url: &url,
        revision: source.reference.revision(commit),
        repo,
    };
    let root = repo
        .find_commit(commit)
        .and_then(|c| c.tree_id())
        .map_err(|e| reader.read_error("the commit's tree", e))?
        .detach();
    let mut blobs = BTreeMap::new();
    let roots = if source.paths.is_empty() {
        vec![String::new()]
    } else {
        source.paths.clone()
    };
    for path in &roots {
        let components = reader.normalize(path, &[], path, false)?;
        let at = components.join("/");
        match reader.resolve(root, components.clone(), path)? {
            Node::Tree(tree) => {
                reader.walk(root, tree, &at, &mut blobs)?;
                reader.flux_config_above(root, &components, &mut blobs)?;
            }
            Node::Blob(_) if !is_manifest(&at) => {
                return Err(reader.manifest_error(path, "not a .yaml, .yml or .json file"));
            }
            Node::Blob(blob) => reader.add(&mut blobs, at, blob)?,
        }
    }
    let mut files = Vec::with_capacity(blobs.len());
    let mut total = 0;
    for (path, blob) in blobs {
        let file = reader.load(path, blob)?;
        total += file.content.len() as u64;
        if total > MAX_ARTIFACT_BYTES {
            return Err(Error::TooLarge {
                url: url.to_string(),
                revision: reader.revision,
                limit: MAX_ARTIFACT_BYTES,
            });
        }
        files.push(file);
    }
    Ok(Artifact {
        revision: reader.revision,
        commit: commit.to_string(),
        files,
    })
}

/// What a path names in the commit's tree, links followed.
enum Node {
    Tree(ObjectId),
    Blob(ObjectId),
}

struct Reader<'a> {
    url: &'a str,
    revision: String,
    repo: &'a gix::Repository,
}

impl Reader<'_> {
    /// The manifests under `tree` (at `prefix`) into `blobs`. Links named like manifests are
    /// followed within the repository; other links (to directories, say) are not walked, as
    /// `find` without `-L`; submodules are not fetched, as source-controller's default.
    fn walk(
        &self,
        root: ObjectId,
        tree: ObjectId,
        prefix: &str,
        blobs: &mut BTreeMap<String, ObjectId>,
    ) -> Result<(), Error> {
        let mut pending = vec![(tree, prefix.to_owned())];
        while let Some((tree, prefix)) = pending.pop() {
            for (mode, name, id) in self.entries(tree, &prefix)? {
                // What may hold a manifest must have a UTF-8 name; anything else is skipped
                // whatever its name.
                if !(mode.is_tree() || is_manifest(&name)) {
                    continue;
                }
                let path = self.join(&prefix, name.as_ref())?;
                if mode.is_tree() {
                    pending.push((id, path));
                } else if mode.is_blob() && is_manifest(&path) {
                    self.add(blobs, path, id)?;
                } else if mode.is_link() && is_manifest(&path) {
                    let components = path.split('/').map(str::to_owned).collect();
                    match self.resolve(root, components, &path)? {
                        Node::Blob(target) => self.add(blobs, path, target)?,
                        Node::Tree(_) => {
                            return Err(self.manifest_error(&path, "a link to a directory"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The `.flux.yaml` nearest above a directory path, if any, into `blobs`: Flux v1's
    /// manifest generation applies it to the path (`fluxcd/flux pkg/manifests/configaware.go`),
    /// so the reader of the artifact must see it (one in the path itself is walked already).
    fn flux_config_above(
        &self,
        root: ObjectId,
        components: &[String],
        blobs: &mut BTreeMap<String, ObjectId>,
    ) -> Result<(), Error> {
        for depth in (0..=components.len()).rev() {
            let mut at = components[..depth].to_vec();
            at.push(FLUX_CONFIG.to_owned());
            let path = at.join("/");
            match self.resolve(root, at, &path) {
                Ok(Node::Blob(blob)) => return self.add(blobs, path, blob),
                Ok(Node::Tree(_)) | Err(Error::PathNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn add(
        &self,
        blobs: &mut BTreeMap<String, ObjectId>,
        path: String,
        blob: ObjectId,
    ) -> Result<(), Error> {
        blobs.insert(path, blob);
        if blobs.len() > MAX_FILES {
            return Err(Error::TooManyFiles {
                url: self.url.to_owned(),
                revision: self.revision.clone(),
                limit: MAX_FILES,
            });
        }
        Ok(())
    }

    /// A tree's entries as (mode, UTF-8 name, id).
    /// `prefix/name` as a repository-relative path; a name that is not UTF-8 is an error.
    fn join(&self, prefix: &str, name: &BStr) -> Result<String, Error> {
        let path = |name: &str| {
            if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}/{name}")
            }
        };
        match name.to_str() {
            Ok(name) => Ok(path(name)),
            Err(_) => Err(self.manifest_error(&path(&name.to_str_lossy()), "not UTF-8")),
        }
    }

    /// A tree's entries as (mode, name, id).
    fn entries(
        &self,
        tree: ObjectId,
        at: &str,
    ) -> Result<Vec<(EntryMode, BString, ObjectId)>, Error> {
        let what = || {
            if at.is_empty() {
                "the root tree".to_owned()
            } else {
                format!("tree {at}")
            }
        };
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(|e| self.read_error(&what(), e))?;
        let decoded = tree.decode().map_err(|e| self.read_error(&what(), e))?;
        let entries = decoded.entries.iter();
        Ok(entries
            .map(|entry| (entry.mode, entry.filename.to_owned(), entry.oid.to_owned()))
            .collect())
    }

    /// Walks `components` from the root tree, following links within the repository.
    fn resolve(
        &self,
        root: ObjectId,
        mut components: Vec<String>,
        asked: &str,
    ) -> Result<Node, Error> {
        let mut links = 0;
        'restart: loop {
            let mut tree = root;
            for (i, component) in components.iter().enumerate() {
                let at = components[..i].join("/");
                let Some((mode, _, id)) = self
                    .entries(tree, &at)?
                    .into_iter()
                    .find(|(_, name, _)| name == component.as_bytes())
                else {
                    return Err(self.not_found(asked));
                };
                let here = components[..=i].join("/");
                let last = i + 1 == components.len();
                if mode.is_tree() {
                    tree = id;
                } else if mode.is_link() {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(self.manifest_error(asked, "too many levels of symbolic links"));
                    }
                    let target = self.load_small(id, &here)?;
                    let mut next = self.normalize(&target, &components[..i], &here, true)?;
                    next.extend(components[i + 1..].iter().cloned());
                    components = next;
                    continue 'restart;
                } else if mode.is_blob() && last {
                    return Ok(Node::Blob(id));
                } else if mode.is_commit() {
                    return Err(self.manifest_error(&here, "a submodule, which kgc does not fetch"));
                } else {
                    return Err(self.not_found(asked));
                }
            }
            return Ok(Node::Tree(tree));
        }
    }

    /// `path` (relative to the directory `base`) as repository-relative components; `..`
    /// may not climb out of the repository, nor may a link's absolute target. An absolute
    /// `--path` counts from the repository's root, as Flux's `spec.path`.
    fn normalize(
        &self,
        path: &str,
        base: &[String],
        named: &str,
        is_link: bool,
    ) -> Result<Vec<String>, Error> {
        if is_link && path.starts_with('/') {
            return Err(self.manifest_error(named, "a link outside the repository"));
        }
        let mut out = base.to_vec();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if out.pop().is_none() {
                        let reason = if is_link {
                            "a link outside the repository"
                        } else {
                            "outside the repository"
                        };
                        return Err(self.manifest_error(named, reason));
                    }
                }
                name => out.push(name.to_owned()),
            }
        }
        Ok(out)
    }

    /// A link's target (a path: small).
    fn load_small(&self, blob: ObjectId, at: &str) -> Result<String, Error> {
        let file = self.load(at.to_owned(), blob)?;
        String::from_utf8(file.content).map_err(|_| self.manifest_error(at, "not UTF-8"))
    }

    /// A blob, bounded by its header's size before it is read, and checked to be UTF-8.
    fn load(&self, path: String, blob: ObjectId) -> Result<ManifestFile, Error> {
        let header = self
            .repo
            .find_header(blob)
            .map_err(|e| self.read_error(&path, e))?;
        if header.size() > MAX_MANIFEST_BYTES {
            let reason = format!(
                "{} bytes, more than the {} MiB a manifest may have",
                header.size(),
                MAX_MANIFEST_BYTES >> 20
            );
            return Err(self.manifest_error(&path, &reason));
        }
        let content = self
            .repo
            .find_blob(blob)
            .map_err(|e| self.read_error(&path, e))?
            .take_data();
        if std::str::from_utf8(&content).is_err() {
            return Err(self.manifest_error(&path, "not UTF-8"));
        }
        Ok(ManifestFile { path, content })
    }

    fn not_found(&self, path: &str) -> Error {
        Error::PathNotFound {
            url: self.url.to_owned(),
            revision: self.revision.clone(),
            path: path.to_owned(),
        }
    }

    fn manifest_error(&self, path: &str, reason: &str) -> Error {
        Error::Manifest {
            url: self.url.to_owned(),
            revision: self.revision.clone(),
            path: path.to_owned(),
            reason: reason.to_owned(),
        }
    }

    fn read_error(&self, what: &str, source: gix::Error) -> Error {
        Error::Read {
            url: self.url.to_owned(),
            revision: self.revision.clone(),
            what: what.to_owned(),
            source,
        }
    }
}

fn is_manifest(path: impl AsRef<[u8]>) -> bool {
    MANIFEST_EXTENSIONS
        .iter()
        .any(|ext| path.as_ref().ends_with(ext.as_bytes()))
}
