//! Configuration: config maps, secrets and service accounts: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;

pub(super) const CONFIG_MAP_COLUMNS: &[Col] = &[
    NAME,
    col("Data", "string", "Data contains the configuration data."),
    AGE,
];

pub(super) const SECRET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data.",
    ),
    col(
        "Data",
        "string",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'.",
    ),
    AGE,
];

pub(super) const SERVICE_ACCOUNT_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    AGE,
];

/// `printConfigMap`.
pub(super) fn config_map_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        (map_len(&o["data"]) + map_len(&o["binaryData"])).into(),
        age(o, now),
    ]
}

/// `printSecret`.
pub(super) fn secret_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    // The real server folds stringData into data on write.
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for field in ["data", "stringData"] {
        if let Some(m) = o[field].as_object() {
            keys.extend(m.keys().map(String::as_str));
        }
    }
    vec![
        name(o),
        st_or(&o["type"], "Opaque").into(),
        keys.len().into(),
        age(o, now),
    ]
}

/// `printServiceAccount`.
pub(super) fn service_account_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(o), arr(&o["secrets"]).len().into(), age(o, now)]
}
