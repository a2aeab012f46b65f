//! Flux v1's manifest generation (`fluxcd/flux pkg/manifests/configaware.go`,
//! `configfile.go`; `docs/references/fluxyaml-config-files.md`): a `.flux.yaml` at a synced
//! path, or in a directory above it up to the repository's root, replaces the path's YAML files
//! by the output of commands it names — `helm template`, `kustomize build`, a script.
//!
//! As fluxd, only when asked (`--manifest-generation`, fluxd's flag): the commands are the
//! repository's code, run with kgc's rights. Unlike fluxd, a `.flux.yaml` is never silently
//! read as a manifest or ignored: without the flag, one that would generate is refused (see
//! [`plan`]), so a repository made for generation is not applied as plain files.
//!
//! The crate finds and validates the config ([`config`], [`lookup`]), runs the generators
//! ([`generator`]) and applies a `patchUpdated` config's patch file ([`patch`]); parsing the
//! generated YAML stream into objects is the deploy sources' job (`kgc_prune::source`), so
//! generated objects are read exactly as files are.
#![forbid(unsafe_code)]

pub mod config;
pub mod generator;
pub mod lookup;
pub mod patch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

pub use config::{Command, ConfigFile, Mode};
pub use lookup::Found;

/// The config file's name (`pkg/manifests/configfile.go` `ConfigFilename`).
pub const CONFIG_FILENAME: &str = ".flux.yaml";

/// How long a generator may run unless its `timeout` says otherwise: fluxd's `--sync-timeout`
/// default (`cmd/fluxd/main.go`), one minute.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a generator may print on stdout: a runaway generator fails instead of exhausting
/// memory (fluxd buffers without a bound). 64 MiB is thousands of objects.
pub const MAX_OUTPUT: usize = 64 << 20;

/// Why a path could not be generated. Every variant names the `.flux.yaml` (as shown to the
/// user: relative to the repository or the current directory).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The config is not YAML, or not what fluxd's schema accepts.
    #[error("{}: {message}", file.display())]
    Config { file: PathBuf, message: String },
    /// A `.flux.yaml` would generate, and generation was not asked for.
    #[error(
        "{}: manifest generation is disabled; pass --manifest-generation to run its generators",
        file.display()
    )]
    Disabled { file: PathBuf },
    /// A `.flux.yaml` below the synced path: fluxd would not see it and would read the
    /// directory's files as plain manifests, which they rarely are.
    #[error(
        "{}: below the synced path {}, where it does not apply (a .flux.yaml applies to its own directory and those below it); sync {} itself",
        file.display(), target.display(), dir.display()
    )]
    Below {
        file: PathBuf,
        target: PathBuf,
        dir: PathBuf,
    },
    /// The target is outside the repository's root.
    #[error("{}: outside the repository {}", target.display(), root.display())]
    OutsideRoot { target: PathBuf, root: PathBuf },
    #[error("{}: generator {command:?} could not be started", file.display())]
    Spawn {
        file: PathBuf,
        command: String,
        source: std::io::Error,
    },
    /// A generator exited unsuccessfully, ran out of time or printed too much.
    #[error("{}: generator {command:?} {failure}{}", file.display(), generator::stderr_suffix(stderr))]
    Failed {
        file: PathBuf,
        command: String,
        failure: generator::Failure,
        /// The end of its stderr (see [`generator::STDERR_KEPT`]).
        stderr: String,
    },
    #[error("{}: generator {command:?} printed something that is not UTF-8 text", file.display())]
    NotUtf8 { file: PathBuf, command: String },
    /// The patch file of a `patchUpdated` config could not be read or applied.
    #[error("{}: patchFile {}: {message}", file.display(), patch_file.display())]
    Patch {
        file: PathBuf,
        patch_file: PathBuf,
        message: String,
    },
}

/// How paths are looked at.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run generators (fluxd's `--manifest-generation`); without it a generating `.flux.yaml` is
    /// refused.
    pub enabled: bool,
    /// The repository's root: `.flux.yaml` is looked for up to here, and paths are shown
    /// relative to it. `None`: the enclosing git work tree (a directory holding `.git`), else
    /// the path itself; paths are shown relative to the current directory.
    pub root: Option<PathBuf>,
    pub timeout: Duration,
    pub max_output: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            enabled: false,
            root: None,
            timeout: DEFAULT_TIMEOUT,
            max_output: MAX_OUTPUT,
        }
    }
}

/// What to do with a directory given as a source.
#[derive(Debug)]
pub enum Plan {
    /// Read its files: no `.flux.yaml` applies, or one says `scanForFiles`.
    Read,
    /// Run the generators of the `.flux.yaml` that applies.
    Generate(Generation),
}

/// Decides how `target` (a directory, or a `.flux.yaml` file named directly, as fluxd allows)
/// is read: the `.flux.yaml` at it or above it within the root applies (fluxd's
/// `findConfigFilePaths`). One below it that would generate is an error ([`Error::Below`]), and
/// so is any that would generate when `options.enabled` is false ([`Error::Disabled`]).
pub fn plan(target: &Path, options: &Options) -> Result<Plan, Error> {
    let scope = lookup::Scope::new(target, options.root.as_deref())?;
    for below in lookup::below(&scope)? {
        let file = scope.read_config(&below)?;
        if file.mode != Mode::ScanForFiles {
            if !options.enabled {
                return Err(Error::Disabled {
                    file: scope.show(&below),
                });
            }
            let dir = below.parent().unwrap_or(below.as_path());
            return Err(Error::Below {
                file: scope.show(&below),
                target: scope.show(&scope.target),
                dir: scope.show(dir),
            });
        }
    }
    let Some(found) = lookup::find(&scope)? else {
        return Ok(Plan::Read);
    };
    if found.file.mode == Mode::ScanForFiles {
        return Ok(Plan::Read);
    }
    if !options.enabled {
        return Err(Error::Disabled { file: found.shown });
    }
    Ok(Plan::Generate(Generation {
        found,
        timeout: options.timeout,
        max_output: options.max_output,
    }))
}

/// A `.flux.yaml` read from memory, where there is no directory to run generators in (a git
/// artifact read without a work tree): an error unless it only says `scanForFiles`.
pub fn refuse(file: &Path, text: &str) -> Result<(), Error> {
    match ConfigFile::parse(text, file)?.mode {
        Mode::ScanForFiles => Ok(()),
        _ => Err(Error::Disabled {
            file: file.to_owned(),
        }),
    }
}

/// A `.flux.yaml` to run for one target path.
#[derive(Debug)]
pub struct Generation {
    found: Found,
    timeout: Duration,
    max_output: usize,
}

impl Generation {
    /// The `.flux.yaml`, as shown in messages.
    pub fn config_file(&self) -> &Path {
        &self.found.shown
    }

    /// Runs the generators in turn in the target directory, stopping at the first that fails
    /// (fluxd's `execGenerators`), and reads the patch file of a `patchUpdated` config.
    pub fn run(&self) -> Result<Generated, Error> {
        let f = &self.found;
        let (generators, patch_file): (&[Command], _) = match &f.file.mode {
            Mode::CommandUpdated { generators } => (generators, None),
            Mode::PatchUpdated {
                generators,
                patch_file,
            } => (generators, Some(patch_file)),
            Mode::ScanForFiles => (&[], None),
        };
        let mut text = String::new();
        for g in generators {
            let timeout = g.timeout.unwrap_or(self.timeout);
            let out = generator::run(&g.command, &f.working_dir, timeout, self.max_output)
                .map_err(|e| e.into_error(&f.shown, &g.command))?;
            let out = String::from_utf8(out).map_err(|_| Error::NotUtf8 {
                file: f.shown.clone(),
                command: g.command.clone(),
            })?;
            // Each generator's stream starts a document (fluxd's `appendYAMLToBuffer`); the
            // first starts the text, so its lines are the text's.
            if !text.is_empty() {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str("---\n");
            }
            text.push_str(&out);
        }
        let patches = match patch_file {
            Some(p) => patch::Patches::read(&f.working_dir, p, &f.shown)?,
            None => patch::Patches::default(),
        };
        Ok(Generated { text, patches })
    }
}

/// The generators' output, and the patches to apply once it is parsed.
#[derive(Debug)]
pub struct Generated {
    /// The generators' stdout, one YAML stream.
    pub text: String,
    patches: patch::Patches,
}

impl Generated {
    /// Applies the patch file's patches to the generated objects (nothing for
    /// `commandUpdated`); a patch that matches no object is an error, as in fluxd.
    pub fn patch<'a>(&self, objects: impl IntoIterator<Item = &'a mut Value>) -> Result<(), Error> {
        self.patches.apply(objects)
    }
}

#[cfg(test)]
mod tests;
