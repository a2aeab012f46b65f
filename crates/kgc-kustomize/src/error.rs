//! The crate's one error type: every variant names the file (and field) at fault, so a
//! command prints it as one line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A kustomization (or a file it names) is wrong: `file`, the field at fault (dotted, as
    /// kustomize names it, e.g. `patches[1].target`), and why.
    #[error("{}: {}{message}", file.display(), field_prefix(field))]
    Invalid {
        file: PathBuf,
        field: String,
        message: String,
    },
}

/// `field: `, or nothing when the whole file is at fault.
fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

/// A parser's message without its source excerpt: errors are one line.
pub(crate) fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().trim().to_owned()
}
