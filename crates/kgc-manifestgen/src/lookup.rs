//! Which `.flux.yaml` applies to a path (`fluxcd/flux pkg/manifests/configaware.go`,
//! `findConfigFilePaths`): the path itself when it names a `.flux.yaml`; else the first found
//! in the path's directory or a parent, up to the repository's root and never above it. The
//! commands then run in the path, not in the config's directory (fluxd's working directory is
//! the target path, so one `.flux.yaml` at the top serves `staging/` and `production/`).

use std::path::{Path, PathBuf};

use crate::{CONFIG_FILENAME, ConfigFile, Error};

/// A `.flux.yaml` that applies to a target.
#[derive(Debug)]
pub struct Found {
    /// Its absolute path.
    pub config: PathBuf,
    /// Its path as messages show it.
    pub shown: PathBuf,
    /// Where commands run and the patch file is found: the target directory.
    pub working_dir: PathBuf,
    pub file: ConfigFile,
}

/// A target within its repository, canonical, and how to show paths.
#[derive(Debug)]
pub(crate) struct Scope {
    pub(crate) target: PathBuf,
    root: PathBuf,
    /// Paths are shown relative to this directory when under it.
    shown_from: Option<PathBuf>,
}

impl Scope {
    /// `root` given: the repository's root, and paths shown relative to it (a temporary work
    /// tree's location means nothing to the user). Otherwise the enclosing git work tree, else
    /// the target's own directory, and paths shown relative to the current directory.
    pub(crate) fn new(target: &Path, root: Option<&Path>) -> Result<Scope, Error> {
        let canonical = |p: &Path| {
            std::fs::canonicalize(p).map_err(|e| Error::Io {
                path: p.to_owned(),
                source: e,
            })
        };
        let abs = canonical(target)?;
        let dir = if abs.is_dir() {
            abs.clone()
        } else {
            abs.parent()
                .map(Path::to_owned)
                .unwrap_or_else(|| abs.clone())
        };
        let (root, shown_from) = match root {
            Some(r) => {
                let r = canonical(r)?;
                (r.clone(), Some(r))
            }
            None => {
                let work_tree = dir.ancestors().find(|d| d.join(".git").exists());
                let root = work_tree.unwrap_or(dir.as_path()).to_owned();
                (root, std::env::current_dir().ok())
            }
        };
        if !abs.starts_with(&root) {
            return Err(Error::OutsideRoot {
                target: target.to_owned(),
                root,
            });
        }
        Ok(Scope {
            target: abs,
            root,
            shown_from,
        })
    }

    /// `path` as messages show it.
    pub(crate) fn show(&self, path: &Path) -> PathBuf {
        let rel = self
            .shown_from
            .as_deref()
            .and_then(|base| path.strip_prefix(base).ok());
        match rel {
            Some(r) if r.as_os_str().is_empty() => PathBuf::from("."),
            Some(r) => r.to_owned(),
            None => path.to_owned(),
        }
    }

    pub(crate) fn read_config(&self, path: &Path) -> Result<ConfigFile, Error> {
        let shown = self.show(path);
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: shown.clone(),
            source: e,
        })?;
        ConfigFile::parse(&text, &shown)
    }
}

/// The `.flux.yaml` that applies to the scope's target, parsed.
pub(crate) fn find(scope: &Scope) -> Result<Option<Found>, Error> {
    let target = &scope.target;
    let (config, working_dir) = if target.is_dir() {
        let found = target
            .ancestors()
            .take_while(|d| d.starts_with(&scope.root))
            .map(|d| d.join(CONFIG_FILENAME))
            .find(|f| f.is_file());
        match found {
            Some(f) => (f, target.clone()),
            None => return Ok(None),
        }
    } else if target.file_name().is_some_and(|n| n == CONFIG_FILENAME) {
        let dir = target.parent().unwrap_or(target).to_owned();
        (target.clone(), dir)
    } else {
        return Ok(None);
    };
    let file = scope.read_config(&config)?;
    Ok(Some(Found {
        shown: scope.show(&config),
        config,
        working_dir,
        file,
    }))
}

/// The `.flux.yaml` files in the subdirectories of the scope's target (not in the target's own
/// directory), in path order; links to directories are not followed, nor is `.git`.
pub(crate) fn below(scope: &Scope) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    if !scope.target.is_dir() {
        return Ok(found);
    }
    let mut pending = vec![scope.target.clone()];
    while let Some(dir) = pending.pop() {
        let io = |e| Error::Io {
            path: scope.show(&dir),
            source: e,
        };
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let kind = entry.file_type().map_err(io)?;
            if kind.is_dir() && entry.file_name() != ".git" {
                let sub = entry.path();
                let config = sub.join(CONFIG_FILENAME);
                if config.is_file() {
                    found.push(config);
                }
                pending.push(sub);
            }
        }
    }
    found.sort();
    Ok(found)
}
