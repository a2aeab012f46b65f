//! Field ownership for writes: server-side apply (`application/apply-patch+yaml`) and the
//! `managedFields` every other write records (kubernetes/kubernetes
//! `staging/src/k8s.io/apimachinery/pkg/util/managedfields`).
//!
//! The merge and ownership engine is `kgc-managedfields`; this module tells it each kind's list
//! semantics. Built-in kinds take them from the strategic-merge-patch table (a `merge` list with
//! a key is a list map, a `merge` list of scalars a set, anything else atomic; container and
//! service ports are keyed by port *and* protocol, as upstream's OpenAPI says). Custom resources
//! take them from their schema's `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use kgc_managedfields::{DefaultSchema, FieldSet, ListType, PathElement, Schema};
use kgc_meta::status::Cause;
use kgc_meta::{FieldError, ResourceInfo, Status};
use kgc_patch::strategic::{self, Strategy};
use serde_json::Value;

use crate::request::Query;

/// The list semantics of one resource.
pub struct ApplySchema {
    smp: Option<strategic::Schema>,
    crd: Option<Arc<Value>>,
    has_status: bool,
}

impl ApplySchema {
    /// The schema for `info`, served in `version`.
    pub fn for_resource(info: &ResourceInfo, version: &str) -> Self {
        Self {
            smp: if info.custom {
                None
            } else {
                strategic::schema_for(&info.group, &info.kind)
            },
            crd: info
                .crd
                .as_ref()
                .and_then(|c| c.schemas.get(version).cloned()),
            has_status: info.has_status(),
        }
    }

    fn table_list_type(&self, path: &[&str]) -> Option<ListType> {
        let mut cur = self.smp?;
        let (last, parents) = path.split_last()?;
        for p in parents {
            cur = cur.field(p).child();
        }
        let f = cur.field(last);
        Some(match (f.strategy(), f.merge_key()) {
            (Strategy::Merge, Some("containerPort")) => {
                ListType::Map(vec!["containerPort".into(), "protocol".into()])
            }
            (Strategy::Merge, Some("port")) => {
                ListType::Map(vec!["port".into(), "protocol".into()])
            }
            (Strategy::Merge, Some(key)) => ListType::Map(vec![key.to_owned()]),
            (Strategy::Merge, None) => ListType::Set,
            _ => return None,
        })
    }

    fn crd_list_type(&self, path: &[&str]) -> Option<ListType> {
        let mut cur: &Value = self.crd.as_ref()?;
        for p in path {
            // Lists are skipped in `path`: step into `items` where the schema has them.
            if let Some(items) = cur.get("items").filter(|_| cur.get("properties").is_none()) {
                cur = items;
            }
            cur = cur.get("properties").and_then(|props| props.get(*p))?;
        }
        match cur.get("x-kubernetes-list-type").and_then(Value::as_str)? {
            "map" => Some(ListType::Map(
                cur.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| {
                        k.iter()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            )),
            "set" => Some(ListType::Set),
            _ => Some(ListType::Atomic),
        }
    }
}

impl Schema for ApplySchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        self.table_list_type(path)
            .or_else(|| self.crd_list_type(path))
            .unwrap_or_else(|| DefaultSchema.list_type(path))
    }

    fn list_map_key_default(&self, _path: &[&str], key: &str) -> Option<Value> {
        (key == "protocol").then(|| Value::from("TCP"))
    }

    fn reset_fields(&self, subresource: &str) -> FieldSet {
        let mut s = FieldSet::new();
        if self.has_status {
            match subresource {
                "" => s.insert(&[PathElement::field("status")]),
                "status" => s.insert(&[PathElement::field("spec")]),
                _ => {}
            }
        }
        s
    }
}

/// The field manager of a write: `fieldManager`, else the User-Agent's program name, as
/// upstream derives it.
pub fn field_manager(query: &Query, headers: &HeaderMap) -> String {
    if let Some(m) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_owned()
}

/// `FieldManagerMaxLength`: the longest `fieldManager` a write may name, in bytes.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The `fieldManager` of a create, update or patch, checked as kube-apiserver checks its
/// options before it reads the body (`apimachinery pkg/apis/meta/v1/validation/validation.go`
/// `ValidateFieldManager`): at most 128 bytes, printable characters only. `options` names the
/// options kind of the 422 (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub fn validate_field_manager(query: &Query, options: &str) -> Result<(), Status> {
    let Some(manager) = query.get("fieldManager") else {
        return Ok(());
    };
    let mut errors = Vec::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long(
            "fieldManager",
            manager,
            FIELD_MANAGER_MAX_LENGTH,
        ));
    }
    errors.extend(
        manager
            .char_indices()
            .filter(|(_, c)| !kgc_meta::gojson::is_go_printable(*c))
            .map(|(i, c)| {
                FieldError::invalid(
                    "fieldManager",
                    manager,
                    format!("invalid character U+{:04X} (at position {i})", u32::from(c)),
                )
            }),
    );
    match errors.is_empty() {
        true => Ok(()),
        false => Err(Status::invalid("meta.k8s.io", options, "", &errors)),
    }
}

/// An apply conflict or invalid configuration as the Status kube-apiserver answers.
pub fn status(err: kgc_managedfields::Error, info: &ResourceInfo, name: &str) -> Status {
    match err {
        kgc_managedfields::Error::Conflicts(conflicts) => {
            let message = kgc_managedfields::Error::Conflicts(conflicts.clone()).message();
            let mut s = Status::conflict(&info.group_resource(), name, "");
            s.message = message;
            s.causes = conflicts
                .iter()
                .map(|c| Cause {
                    kind: "FieldManagerConflict".into(),
                    message: c.message(),
                    field: c.field.clone(),
                })
                .collect();
            s
        }
        other => Status::bad_request(other.message()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::Catalog;

    #[test]
    fn list_types_come_from_the_patch_table() {
        let c = Catalog::builtin();
        let s = ApplySchema::for_resource(c.get("apps", "v1", "deployments").unwrap(), "v1");
        let containers = ["spec", "template", "spec", "containers"];
        assert_eq!(s.list_type(&containers), ListType::Map(vec!["name".into()]));
        let ports = ["spec", "template", "spec", "containers", "ports"];
        assert_eq!(
            s.list_type(&ports),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(s.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(
            s.list_type(&["spec", "template", "spec", "containers", "args"]),
            ListType::Atomic
        );
    }

    #[test]
    fn field_managers_are_short_and_printable() {
        let check = |m: &str| {
            let q = format!("fieldManager={}", urlencoding(m));
            validate_field_manager(&Query::parse(Some(q.as_str())), "CreateOptions")
                .map_err(|s| s.message)
        };
        assert_eq!(check("kubectl-client-side-apply"), Ok(()));
        assert_eq!(check(&"m".repeat(128)), Ok(()));
        assert_eq!(check("héllo wörld"), Ok(()));
        assert_eq!(
            check(&"m".repeat(129)),
            Err(
                "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be \
                 more than 128 bytes"
                    .to_owned()
            )
        );
        assert_eq!(
            check("a\u{1}b"),
            Err(
                "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \
                 \"a\\x01b\": invalid character U+0001 (at position 1)"
                    .to_owned()
            )
        );
        assert!(check("tab\there").is_err());
        assert!(check("zero\u{200b}width").is_err());
        assert!(validate_field_manager(&Query::parse(None), "PatchOptions").is_ok());
    }

    /// Percent-encodes every byte outside the unreserved set.
    fn urlencoding(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    }

    #[test]
    fn field_manager_falls_back_to_the_user_agent() {
        let mut h = HeaderMap::new();
        h.insert(
            header::USER_AGENT,
            "kubectl/v1.32.4 (linux/amd64)".parse().unwrap(),
        );
        assert_eq!(field_manager(&Query::parse(None), &h), "kubectl");
        assert_eq!(
            field_manager(&Query::parse(Some("fieldManager=me")), &h),
            "me"
        );
        assert_eq!(
            field_manager(&Query::parse(None), &HeaderMap::new()),
            "unknown"
        );
    }
}
