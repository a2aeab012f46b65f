//! The files a build reads (kustomize's `filesys.FileSystem` and `loader.FileLoader`), behind a
//! trait so that confinement is in one place: a kustomization reads files under its own
//! directory only (kustomize's default `LoadRestrictionsRootOnly`); bases and components are
//! directories it names, each confined to itself in turn.

use std::path::{Component, Path, PathBuf};

use crate::Error;

/// Where files come from: the disk, or a test's memory.
pub trait FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    fn is_dir(&self, path: &Path) -> bool;
    fn exists(&self, path: &Path) -> bool;
    /// The entries of a directory, sorted by name.
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>>;
    /// The path with symbolic links resolved, where the file system has them (`None`: it has
    /// none, or the path does not exist).
    fn canonical(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl FileSystem for Disk {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut out = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort();
        Ok(out)
    }
}

/// Reads files relative to one kustomization's directory, refusing any outside it.
#[derive(Clone, Copy)]
pub struct Loader<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
}

impl<'a> Loader<'a> {
    pub fn new(fs: &'a dyn FileSystem, dir: &'a Path) -> Loader<'a> {
        Loader { fs, dir }
    }

    /// The kustomization's directory.
    pub fn dir(&self) -> &'a Path {
        self.dir
    }

    pub fn fs(&self) -> &'a dyn FileSystem {
        self.fs
    }

    /// `rel` resolved against the directory, lexically (no symlinks followed), refused when it
    /// leaves the directory: kustomize's message.
    /// A symbolic link is followed before the check, as kustomize's `evalsymlink`: a link
    /// inside the root to a file outside it is refused too.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, Error> {
        let joined = normalize(&self.dir.join(rel));
        let escapes = match (self.fs.canonical(&joined), self.fs.canonical(self.dir)) {
            (Some(file), Some(root)) => !file.starts_with(root),
            _ => false,
        };
        if escapes || !joined.starts_with(normalize(self.dir)) {
            // kustomize names the path as written (a link, not its target).
            return Err(Error::Io {
                path: joined.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "security; file '{}' is not in or below '{}'",
                        joined.display(),
                        self.dir.display()
                    ),
                ),
            });
        }
        Ok(joined)
    }

    /// The bytes of `rel`, confined.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        let path = self.resolve(rel)?;
        self.fs
            .read(&path)
            .map_err(|source| Error::Io { path, source })
    }

    /// The text of `rel`, confined; not UTF-8 is an error naming it.
    pub fn read_to_string(&self, rel: &str) -> Result<String, Error> {
        let path = self.resolve(rel)?;
        let bytes = self.fs.read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        String::from_utf8(bytes).map_err(|e| Error::Io {
            path,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }
}

/// `.` and `..` removed lexically.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}
