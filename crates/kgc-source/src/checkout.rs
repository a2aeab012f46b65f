//! A work tree: one commit's whole tree written into a directory, for what must read files
//! from disk or run in a directory (Flux v1's `.flux.yaml` generators run in a checkout of the
//! commit, `fluxcd/flux pkg/git/working.go`).
//!
//! Written from the object database, as `git checkout` would, with the executable bit; what
//! could reach outside the directory is not written: entries named `.`, `..`, `.git` or with a
//! `/`, and links that resolve outside it (removed once every file is in place, so a chain of
//! links is judged as the file system resolves it). Submodules are empty directories, as an
//! uninitialised submodule's. Bounded by [`MAX_WORK_TREE_BYTES`] and [`MAX_WORK_TREE_FILES`].

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::{Error, GitRepository, auth};

/// The most bytes a work tree may hold (manifests, charts, scripts; not a monorepo's assets).
pub const MAX_WORK_TREE_BYTES: u64 = 1 << 30;
/// The most entries a work tree may hold.
pub const MAX_WORK_TREE_FILES: usize = 200_000;

struct Writer<'a> {
    url: &'a str,
    revision: &'a str,
    repo: &'a gix::Repository,
    bytes: u64,
    files: usize,
}

/// Writes the tree of `commit` into `dir`, which must exist (and is best empty).
pub(crate) fn write(
    source: &GitRepository,
    repo: &gix::Repository,
    commit: ObjectId,
    revision: &str,
    dir: &Path,
) -> Result<(), Error> {
    let url = auth::redact(&source.url);
    let mut w = Writer {
        url: &url,
        revision,
        repo,
        bytes: 0,
        files: 0,
    };
    let root = repo
        .find_commit(commit)
        .and_then(|c| c.tree_id())
        .map_err(|e| w.read_error("the commit's tree", e))?
        .detach();
    let mut links = Vec::new();
    let mut pending = vec![(root, dir.to_owned())];
    while let Some((tree, at)) = pending.pop() {
        let object = w
            .repo
            .find_tree(tree)
            .map_err(|e| w.read_error(&at.display().to_string(), e))?;
        let decoded = object
            .decode()
            .map_err(|e| w.read_error(&at.display().to_string(), e))?;
        for entry in &decoded.entries {
            let name: &[u8] = entry.filename.as_ref();
            if name.is_empty()
                || name == b"."
                || name == b".."
                || name.contains(&b'/')
                || name.contains(&0)
                || name.eq_ignore_ascii_case(b".git")
            {
                tracing::debug!(name = %entry.filename, "not written to the work tree");
                continue;
            }
            let path = at.join(OsStr::from_bytes(name));
            w.count(0)?;
            let id = entry.oid.to_owned();
            if entry.mode.is_tree() {
                w.create_dir(&path)?;
                pending.push((id, path));
            } else if entry.mode.is_commit() {
                w.create_dir(&path)?;
            } else if entry.mode.is_link() {
                let target = w.blob(id, &path)?;
                std::os::unix::fs::symlink(OsStr::from_bytes(&target), &path)
                    .map_err(|e| w.write_error(&path, e))?;
                links.push(path);
            } else if entry.mode.is_blob() {
                let content = w.blob(id, &path)?;
                std::fs::write(&path, content).map_err(|e| w.write_error(&path, e))?;
                if entry.mode.is_executable() {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                        .map_err(|e| w.write_error(&path, e))?;
                }
            }
        }
    }
    let canonical_root = std::fs::canonicalize(dir).map_err(|e| w.write_error(dir, e))?;
    for link in links {
        if let Ok(resolved) = std::fs::canonicalize(&link)
            && !resolved.starts_with(&canonical_root)
        {
            tracing::debug!(link = %link.display(), "a link outside the work tree, removed");
            std::fs::remove_file(&link).map_err(|e| w.write_error(&link, e))?;
        }
    }
    Ok(())
}

impl Writer<'_> {
    fn count(&mut self, bytes: u64) -> Result<(), Error> {
        if bytes == 0 {
            self.files += 1;
        }
        self.bytes += bytes;
        if self.files > MAX_WORK_TREE_FILES || self.bytes > MAX_WORK_TREE_BYTES {
            return Err(Error::WorkTreeTooLarge {
                url: self.url.to_owned(),
                revision: self.revision.to_owned(),
                files: MAX_WORK_TREE_FILES,
                mib: MAX_WORK_TREE_BYTES >> 20,
            });
        }
        Ok(())
    }

    /// A blob's content, counted (by its header, before it is read) against the limit.
    fn blob(&mut self, id: ObjectId, path: &Path) -> Result<Vec<u8>, Error> {
        let what = || path.display().to_string();
        let header = self
            .repo
            .find_header(id)
            .map_err(|e| self.read_error(&what(), e))?;
        self.count(header.size())?;
        Ok(self
            .repo
            .find_blob(id)
            .map_err(|e| self.read_error(&what(), e))?
            .take_data())
    }

    fn create_dir(&self, path: &Path) -> Result<(), Error> {
        std::fs::create_dir(path).map_err(|e| self.write_error(path, e))
    }

    fn write_error(&self, path: &Path, source: std::io::Error) -> Error {
        Error::WorkTree {
            url: self.url.to_owned(),
            revision: self.revision.to_owned(),
            path: PathBuf::from(path),
            source,
        }
    }

    fn read_error(&self, what: &str, source: gix::Error) -> Error {
        Error::Read {
            url: self.url.to_owned(),
            revision: self.revision.to_owned(),
            what: what.to_owned(),
            source,
        }
    }
}
