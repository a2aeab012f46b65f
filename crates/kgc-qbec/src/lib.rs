//! qbec apps as a kgc source: `qbec.yaml` (splunk/qbec `internal/model/app.go`), its
//! environments and the components each one includes, rendered as qbec renders them
//! (`internal/eval/eval.go`): jsonnet through jrsonnet with qbec's external variables, YAML and
//! JSON files as they are, every value walked for Kubernetes objects (`object-extract.go`).
//!
//! What kgc does with the objects (labels, ownership, apply, prune) is the binary's; this crate
//! only answers "which objects, from which component".

#![forbid(unsafe_code)]

mod app;
mod eval;
mod natives;
mod vars;
mod walk;

use std::path::PathBuf;
use std::time::Duration;

pub use app::{App, FILE_NAME};
pub use eval::{Limits, Rendered};
pub use vars::{ExtVars, Flag};

/// Everything that can go wrong loading or rendering a qbec app; each names its file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `qbec.yaml` (or an env file) is not a valid app: its schema, references, names.
    #[error("{}: {message}", file.display())]
    App { file: PathBuf, message: String },
    /// qbec's `invalid environment "x"`, with the environments there are.
    #[error("invalid environment {env:?}: the app has {}", known.join(", "))]
    UnknownEnvironment { env: String, known: Vec<String> },
    /// A `--vm:*` flag's value.
    #[error("--vm:{flag} {value:?}: {message}")]
    Flag {
        flag: &'static str,
        value: String,
        message: String,
    },
    /// A variable the command line sets that qbec.yaml does not declare (qbec's strict check,
    /// always on here: a misspelt name would otherwise silently render the default).
    #[error("specified {kind} variable '{name}' not declared for app")]
    Undeclared { kind: &'static str, name: String },
    /// Jsonnet failed: the first line names the file, then jsonnet's first frames.
    #[error("{}: component {component}: {message}", file.display())]
    Jsonnet {
        component: String,
        file: PathBuf,
        message: String,
    },
    /// A YAML or JSON component that does not parse.
    #[error("{}: component {component}: {message}", file.display())]
    Parse {
        component: String,
        file: PathBuf,
        message: String,
    },
    /// A component's value holds something that is not a Kubernetes object.
    #[error("{}: component {component}: {message}", file.display())]
    Object {
        component: String,
        file: PathBuf,
        message: String,
    },
    /// Jsonnet that did not finish in time; the evaluation is abandoned, not awaited.
    #[error("jsonnet evaluation did not finish within {}s: component(s) {} still running (an endless recursion or loop?)", limit.as_secs_f64(), components.join(", "))]
    Timeout {
        components: Vec<String>,
        limit: Duration,
    },
    /// Several components failed; the first few are shown, as qbec shows them.
    #[error("{}", many(.0))]
    Many(Vec<Error>),
}

/// qbec's `maxDisplayErrors` (`internal/eval/eval.go`).
const MAX_DISPLAY_ERRORS: usize = 3;

fn many(errors: &[Error]) -> String {
    let mut lines: Vec<String> = errors
        .iter()
        .take(MAX_DISPLAY_ERRORS)
        .map(ToString::to_string)
        .collect();
    if errors.len() > MAX_DISPLAY_ERRORS {
        lines.push(format!(
            "... and {} more errors",
            errors.len() - MAX_DISPLAY_ERRORS
        ));
    }
    lines.join("\n")
}
