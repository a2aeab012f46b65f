//! Cluster objects: nodes, namespaces, events, resource quotas, leases and priority classes: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use jiff::Timestamp;
use kgc_meta::ResourceInfo;
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;

pub(super) const NODE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide(
        "Internal-IP",
        "string",
        "List of addresses reachable to the node.",
    ),
    wide(
        "External-IP",
        "string",
        "List of addresses reachable to the node.",
    ),
    wide(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];

pub(super) const NAMESPACE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the namespace"),
    AGE,
];

pub(super) const EVENT_COLUMNS: &[Col] = &[
    col(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    col(
        "Type",
        "string",
        "Type of this event (Normal, Warning), new types could be added in the future",
    ),
    col(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    col("Object", "string", "The object that this event is about."),
    wide(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
    ),
    wide(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
    ),
    col(
        "Message",
        "string",
        "A human-readable description of the status of this operation.",
    ),
    wide(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    wide(
        "Count",
        "string",
        "The number of times this event has occurred.",
    ),
    Col {
        priority: 1,
        ..NAME
    },
];

pub(super) const RESOURCE_QUOTA_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];

pub(super) const LEASE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease.",
    ),
    AGE,
];

pub(super) const PRIORITY_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Value",
        "integer",
        "value represents the integer value of this priority class.",
    ),
    col(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority.",
    ),
];

pub(super) fn node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    let status = &node["status"];
    // Later duplicates win, as in upstream's condition map.
    let ready = arr(&status["conditions"])
        .iter()
        .rev()
        .find(|c| st(&c["type"]) == "Ready");
    let mut states: Vec<&str> = vec![match ready {
        Some(c) if st(&c["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"].as_bool() == Some(true) {
        states.push("SchedulingDisabled");
    }
    let mut roles: BTreeSet<&str> = BTreeSet::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if k == "kubernetes.io/role" && !st(v).is_empty() {
                roles.insert(st(v));
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        arr(&status["addresses"])
            .iter()
            .find(|a| st(&a["type"]) == kind)
            .map_or("<none>", |a| st(&a["address"]))
            .to_owned()
    };
    let info = &status["nodeInfo"];
    vec![
        name(node),
        states.join(",").into(),
        roles.into(),
        age(node, now),
        st(&info["kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        st_or(&info["osImage"], "<unknown>").into(),
        st_or(&info["kernelVersion"], "<unknown>").into(),
        st_or(&info["containerRuntimeVersion"], "<unknown>").into(),
    ]
}

pub(super) fn event_cells(info: &ResourceInfo, ev: &Value, now: Timestamp) -> Vec<Value> {
    // events.k8s.io/v1 renames the core fields; both print through the same internal type.
    let new_api = info.group == "events.k8s.io";
    let field = |core: &'static str, events: &'static str| {
        if new_api { &ev[events] } else { &ev[core] }
    };
    let first_ts = field("firstTimestamp", "deprecatedFirstTimestamp");
    let last_ts = field("lastTimestamp", "deprecatedLastTimestamp");
    let first = if timestamp(first_ts).is_none() {
        since(&ev["eventTime"], now)
    } else {
        since(first_ts, now)
    };
    let mut last = if timestamp(last_ts).is_none() {
        first.clone()
    } else {
        since(last_ts, now)
    };
    let mut count = int(field("count", "deprecatedCount"));
    let series = &ev["series"];
    if series.is_object() {
        last = since(&series["lastObservedTime"], now);
        count = int(&series["count"]);
    } else if count == 0 {
        count = 1;
    }
    let involved = field("involvedObject", "regarding");
    let kind = st(&involved["kind"]).to_lowercase();
    let target = match st(&involved["name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let source = field("source", "deprecatedSource");
    let component = st_or(
        &source["component"],
        st(field("reportingComponent", "reportingController")),
    );
    let instance = st_or(&source["host"], st(&ev["reportingInstance"]));
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        last.into(),
        st(&ev["type"]).into(),
        st(&ev["reason"]).into(),
        target.into(),
        st(&involved["fieldPath"]).into(),
        source.into(),
        st(field("message", "note")).trim().into(),
        first.into(),
        count.into(),
        name(ev),
    ]
}

pub(super) fn resource_quota_cells(rq: &Value, now: Timestamp) -> Vec<Value> {
    let status = &rq["status"];
    let hard: BTreeMap<&str, &Value> = status["hard"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default();
    let (mut requests, mut limits) = (String::new(), String::new());
    for (resource, hard_qty) in hard {
        let used = quantity(&status["used"][resource]);
        let w = if resource.starts_with("limits.") {
            &mut limits
        } else {
            &mut requests
        };
        let _ = write!(w, "{resource}: {used}/{}, ", quantity(hard_qty));
    }
    vec![
        name(rq),
        requests.trim_end_matches(", ").into(),
        limits.trim_end_matches(", ").into(),
        age(rq, now),
    ]
}

/// `printNamespace`.
pub(super) fn namespace_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        st_or(&o["status"]["phase"], "Active").into(),
        age(o, now),
    ]
}

/// `printLease`.
pub(super) fn lease_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        st(&o["spec"]["holderIdentity"]).into(),
        age(o, now),
    ]
}

/// `printPriorityClass`.
pub(super) fn priority_class_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        int(&o["value"]).into(),
        o["globalDefault"].as_bool().unwrap_or(false).into(),
        age(o, now),
        st_or(&o["preemptionPolicy"], "PreemptLowerPriority").into(),
    ]
}
