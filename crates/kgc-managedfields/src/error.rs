//! The error type and conflict reporting (apimachinery `managedfields/internal/conflict.go`,
//! structured-merge-diff `merge/conflict.go`).

use crate::managed::{ManagerKey, Operation};
use kgc_meta::gojson;

/// Why an apply or update could not be carried out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// Other managers own fields the apply would change (answer 409 Conflict, with one
    /// `FieldManagerConflict` cause per conflict: [`Conflict::field`], [`Conflict::message`]).
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The request is malformed: not an object, `metadata.managedFields` in an apply
    /// configuration, a wrong `apiVersion`, a list-map item without its key, duplicate keys in an
    /// applied list (answer 400 Bad Request, or 422 where the server validates).
    #[error("{0}")]
    Invalid(String),
    /// A `fieldsV1` value does not parse.
    #[error("invalid fieldsV1: {0}")]
    InvalidFieldsV1(String),
    /// The stored `metadata.managedFields` cannot be decoded (upstream answers 500).
    #[error("failed to decode managed fields: {0}")]
    ManagedFields(String),
}

impl Error {
    /// The message of the `Status` the API server answers with; for conflicts upstream's
    /// `Apply failed with N conflict(s): …`.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The conflicts, if this is a conflict error.
    pub fn conflicts(&self) -> &[Conflict] {
        match self {
            Error::Conflicts(c) => c,
            _ => &[],
        }
    }
}

/// A field another manager owns and the apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name (`fieldManager`).
    pub manager: String,
    /// The operation of that manager's entry.
    pub operation: Operation,
    /// The apiVersion of that manager's entry (printed only for `Update` entries).
    pub api_version: String,
    /// The subresource of that manager's entry ("" for the main resource).
    pub subresource: String,
    /// The field, printed as upstream prints paths: `.spec.replicas`,
    /// `.spec.containers[name="c"].image`.
    pub field: String,
}

impl Conflict {
    pub(crate) fn new(key: &ManagerKey, api_version: &str, field: String) -> Self {
        Conflict {
            manager: key.manager.clone(),
            operation: key.operation,
            api_version: api_version.to_string(),
            subresource: key.subresource.clone(),
            field,
        }
    }

    /// The manager as upstream prints it: `"kubectl"`, `"kube-controller-manager" using
    /// apps/v1`, `"m" with subresource "status" using v1`.
    pub fn manager_display(&self) -> String {
        let mut out = gojson::go_quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(" with subresource ");
            out.push_str(&gojson::go_quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(" using ");
            out.push_str(&self.api_version);
        }
        out
    }

    /// The message of this conflict's `FieldManagerConflict` cause: `conflict with "m" using v1`.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.manager_display())
    }

    /// Upstream's manager identifier (the JSON it keys managers by); conflicts are grouped and
    /// sorted by it.
    fn identifier(&self) -> String {
        ManagerKey {
            manager: self.manager.clone(),
            operation: self.operation,
            api_version: if self.operation == Operation::Update {
                self.api_version.clone()
            } else {
                String::new()
            },
            subresource: self.subresource.clone(),
        }
        .identifier()
    }
}

fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager_display(),
            only.field
        );
    }
    let mut groups: Vec<(String, String, Vec<&str>)> = Vec::new();
    for c in conflicts {
        let id = c.identifier();
        match groups.iter_mut().find(|g| g.0 == id) {
            Some(g) => g.2.push(&c.field),
            None => groups.push((id, c.manager_display(), vec![&c.field])),
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (_, display, fields) in groups {
        lines.push(format!("conflicts with {display}:"));
        for f in fields {
            lines.push(format!("- {f}"));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
