//! Access: role bindings, cluster role bindings and certificate signing requests: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;
use crate::table::duration::human_duration;

pub(super) const ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Role",
        "string",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
    ),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    ),
];

pub(super) const CLUSTER_ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Role",
        "string",
        "RoleRef can only reference a ClusterRole in the global namespace.",
    ),
    AGE,
    wide("Users", "string", "Users in the clusterRoleBinding"),
    wide("Groups", "string", "Groups in the clusterRoleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    ),
];

pub(super) const CSR_COLUMNS: &[Col] = &[
    NAME,
    AGE,
    col("SignerName", "string", "Requested signer for the request."),
    col("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
    col(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of the issued certificate.",
    ),
    col(
        "Condition",
        "string",
        "Conditions applied to the request, such as approval or denial.",
    ),
];

pub(super) fn role_binding_cells(rb: &Value, now: Timestamp) -> Vec<Value> {
    let role_ref = &rb["roleRef"];
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in arr(&rb["subjects"]) {
        let n = st(&subject["name"]);
        match st(&subject["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{n}", st(&subject["namespace"]))),
            "User" => users.push(n.to_owned()),
            "Group" => groups.push(n.to_owned()),
            _ => {}
        }
    }
    vec![
        name(rb),
        format!("{}/{}", st(&role_ref["kind"]), st(&role_ref["name"])).into(),
        age(rb, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        sas.join(", ").into(),
    ]
}

pub(super) fn csr_cells(csr: &Value, now: Timestamp) -> Vec<Value> {
    let (mut approved, mut denied, mut failed) = (false, false, false);
    for c in arr(&csr["status"]["conditions"]) {
        match st(&c["type"]) {
            "Approved" => approved = true,
            "Denied" => denied = true,
            "Failed" => failed = true,
            _ => {}
        }
    }
    let mut condition = if denied {
        "Denied"
    } else if approved {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if failed {
        condition.push_str(",Failed");
    }
    if !st(&csr["status"]["certificate"]).is_empty() {
        condition.push_str(",Issued");
    }
    let spec = &csr["spec"];
    let requested = if spec["expirationSeconds"].is_number() {
        human_duration(SignedDuration::from_secs(int(&spec["expirationSeconds"])))
    } else {
        "<none>".into()
    };
    vec![
        name(csr),
        age(csr, now),
        st_or(&spec["signerName"], "<none>").into(),
        st(&spec["username"]).into(),
        requested.into(),
        condition.into(),
    ]
}
