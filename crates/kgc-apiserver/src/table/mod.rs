//! `meta.k8s.io` Table responses: the server-side printing behind `kubectl get`.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the server's
//! columns verbatim, so every cell here is formatted as kube-apiserver formats it:
//!
//! - built-in kinds follow the printers of `pkg/printers/internalversion/printers.go` (1.32),
//!   always in their wide form (the server generates `Wide: true`; kubectl hides priority-1
//!   columns unless `-o wide`);
//! - kinds without a printer (Role, ClusterRole, LimitRange, CustomResourceDefinition, …) get the
//!   default `Name` / `Created At` of apiserver `pkg/registry/rest/table.go`;
//! - custom resources get `Name` plus the CRD's `additionalPrinterColumns` (or `Age` when there
//!   are none), evaluated with a JSONPath subset as apiextensions' `tableconvertor` does;
//! - ages are `duration.HumanDuration` (apimachinery `pkg/util/duration`).
//!
//! kgc stores objects without the API defaulting of a real cluster, so where a printer would show
//! a defaulted field (a Deployment's `spec.replicas`, a Service's `spec.type`, a port's protocol,
//! a Pod's `status.phase`, …) the upstream default is assumed when the field is absent. The output
//! then matches what a real cluster shows for the same manifest.
//!
//! Objects are read as untyped JSON and nothing here panics on malformed input: a missing or
//! mistyped field prints as the zero value upstream would print (`0`, `""`, `<none>`,
//! `<unknown>`).

mod cell;
mod column;
mod crd;
use kgc_meta::duration;
mod printers;
#[cfg(test)]
mod tests;

use std::borrow::Borrow;

use jiff::Timestamp;
use kgc_meta::ResourceInfo;
use kgc_store::StoredObject;
use serde_json::{Map, Value, json};

use cell::st;
use column::Col;
use crd::custom_columns;
use printers::{Printer, printer_for};

/// Which object each row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// `"object": null`.
    None,
    /// A `PartialObjectMetadata` with the object's `metadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}
impl IncludeObject {
    /// Parses the `includeObject` query parameter; absent or empty means `Metadata`. The error is
    /// the message of upstream's 400 BadRequest.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(Self::Metadata),
            "None" => Ok(Self::None),
            "Object" => Ok(Self::Object),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// Whether an Accept header asks for a Table (any of v1 / v1beta1), and which version to answer.
///
/// Media ranges are tried by descending `q`, in header order among equals, as apiserver's
/// negotiation does. The first range that is a JSON Table request in `meta.k8s.io` v1 or v1beta1
/// wins; a plain range the server can answer (`application/json`, `*/*`, …) met first means no
/// Table. Table requests in other media types or group-versions are skipped.
pub(crate) fn wants_table(accept: &str) -> Option<&'static str> {
    struct Clause<'a> {
        q: f32,
        media: String,
        as_: Option<&'a str>,
        g: Option<&'a str>,
        v: Option<&'a str>,
    }
    let mut clauses: Vec<Clause<'_>> = Vec::new();
    for part in accept.split(',') {
        let mut pieces = part.split(';');
        let media = pieces
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if media.is_empty() {
            continue;
        }
        let mut clause = Clause {
            q: 1.0,
            media,
            as_: None,
            g: None,
            v: None,
        };
        for param in pieces {
            let Some((k, v)) = param.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => clause.q = v.parse().unwrap_or(0.0),
                "as" => clause.as_ = Some(v),
                "g" => clause.g = Some(v),
                "v" => clause.v = Some(v),
                _ => {}
            }
        }
        if clause.q > 0.0 {
            clauses.push(clause);
        }
    }
    // A stable sort: equal q keeps header order.
    clauses.sort_by(|a, b| b.q.total_cmp(&a.q));
    for c in &clauses {
        match c.as_ {
            Some(kind) => {
                if kind == "Table" && c.g == Some("meta.k8s.io") && c.media == "application/json" {
                    match c.v {
                        Some("v1") => return Some("v1"),
                        Some("v1beta1") => return Some("v1beta1"),
                        _ => {}
                    }
                }
            }
            None => {
                if matches!(
                    c.media.as_str(),
                    "application/json"
                        | "application/yaml"
                        | "application/vnd.kubernetes.protobuf"
                        | "application/*"
                        | "*/*"
                ) {
                    return None;
                }
            }
        }
    }
    None
}

/// Column definitions for a resource (with priority 1 columns for -o wide).
pub(crate) fn columns(info: &ResourceInfo) -> Vec<Value> {
    match printer_for(info) {
        Printer::Custom => custom_columns(info),
        p => p.columns().iter().map(Col::to_json).collect(),
    }
}

/// One row for one object (cells as upstream prints them; `now` for ages). A row's
/// `PartialObjectMetadata` is in `meta.k8s.io/v1`; [`table`] uses the table's own version.
#[cfg(test)]
pub(crate) fn row(
    info: &ResourceInfo,
    obj: &Value,
    include: &IncludeObject,
    now: Timestamp,
) -> Value {
    row_in(info, printer_for(info), obj, include, now, "v1")
}

/// A whole Table body for stored objects. `with_columns=false` for watch events after the first:
/// upstream sets `NoHeaders` there and `columnDefinitions` is `null`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn table<I>(
    info: &ResourceInfo,
    objects: I,
    version: &str,
    resource_version: &str,
    continue_token: Option<&str>,
    include: &IncludeObject,
    with_columns: bool,
    now: Timestamp,
) -> Value
where
    I: IntoIterator,
    I::Item: Borrow<StoredObject>,
{
    let values: Vec<Value> = objects.into_iter().map(|o| o.borrow().value()).collect();
    table_of_values(
        info,
        &values,
        version,
        resource_version,
        continue_token,
        include,
        with_columns,
        now,
    )
}

/// [`table`] over objects already decoded (a single GET, a watch event's object).
#[allow(clippy::too_many_arguments)]
pub(crate) fn table_of_values<'a, I>(
    info: &ResourceInfo,
    objects: I,
    version: &str,
    resource_version: &str,
    continue_token: Option<&str>,
    include: &IncludeObject,
    with_columns: bool,
    now: Timestamp,
) -> Value
where
    I: IntoIterator<Item = &'a Value>,
{
    let version = if version == "v1beta1" {
        "v1beta1"
    } else {
        "v1"
    };
    let printer = printer_for(info);
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|o| row_in(info, printer, o, include, now, version))
        .collect();
    let mut metadata = Map::new();
    if !resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), resource_version.into());
    }
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        metadata.insert("continue".into(), token.into());
    }
    let column_definitions = if with_columns {
        Value::Array(columns(info))
    } else {
        Value::Null
    };
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

fn row_in(
    info: &ResourceInfo,
    printer: Printer,
    obj: &Value,
    include: &IncludeObject,
    now: Timestamp,
    version: &str,
) -> Value {
    let cells = printer.cells(info, obj, now);
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    if printer == Printer::Pod {
        let (reason, message) = match st(&obj["status"]["phase"]) {
            "Succeeded" => ("Succeeded", "The pod has completed successfully."),
            "Failed" => ("Failed", "The pod failed."),
            _ => ("", ""),
        };
        if !reason.is_empty() {
            row.insert(
                "conditions".into(),
                json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]),
            );
        }
    }
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let metadata = match &obj["metadata"] {
                Value::Object(m) => Value::Object(m.clone()),
                _ => Value::Object(Map::new()),
            };
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": metadata,
            })
        }
    };
    row.insert("object".into(), object);
    Value::Object(row)
}
