//! Pods and pod templates: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use jiff::Timestamp;
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;
use crate::table::duration::human_duration;

pub(super) const POD_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    wide(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName.",
    ),
    wide(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness.",
    ),
];

pub(super) const POD_TEMPLATE_COLUMNS: &[Col] = &[
    NAME,
    col("Containers", "string", CONTAINERS_DOC),
    col("Images", "string", IMAGES_DOC),
    col("Pod Labels", "string", "The labels for the pod template."),
];

pub(super) fn pod_cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let mut restarts: i64 = 0;
    let mut restartable_init_restarts: i64 = 0;
    let mut total_containers = arr(&spec["containers"]).len();
    let mut ready_containers = 0usize;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_init_restart: Option<Timestamp> = None;

    // The pod registry sets phase Pending on create.
    let phase = st_or(&status["phase"], "Pending");
    let mut reason = st_or(&status["reason"], phase).to_owned();

    for condition in arr(&status["conditions"]) {
        if st(&condition["type"]) == "PodScheduled" && st(&condition["reason"]) == "SchedulingGated"
        {
            reason = "SchedulingGated".into();
        }
    }

    let init_specs = arr(&spec["initContainers"]);
    let restartable = |container_name: &str| {
        init_specs
            .iter()
            .any(|c| st(&c["name"]) == container_name && st(&c["restartPolicy"]) == "Always")
    };
    total_containers += init_specs
        .iter()
        .filter(|c| st(&c["restartPolicy"]) == "Always")
        .count();

    let later =
        |current: Option<Timestamp>, candidate: &Value| match (current, timestamp(candidate)) {
            (Some(c), Some(t)) if t > c => Some(t),
            (None, Some(t)) => Some(t),
            (c, _) => c,
        };

    let mut initializing = false;
    for (i, container) in arr(&status["initContainerStatuses"]).iter().enumerate() {
        let count = int(&container["restartCount"]);
        restarts += count;
        let last_terminated = &container["lastState"]["terminated"];
        if last_terminated.is_object() {
            last_restart = later(last_restart, &last_terminated["finishedAt"]);
        }
        let is_restartable = restartable(st(&container["name"]));
        if is_restartable {
            restartable_init_restarts += count;
            if last_terminated.is_object() {
                last_restartable_init_restart = later(
                    last_restartable_init_restart,
                    &last_terminated["finishedAt"],
                );
            }
        }
        let state = &container["state"];
        let terminated = &state["terminated"];
        let waiting = &state["waiting"];
        if terminated.is_object() && int(&terminated["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && container["started"].as_bool() == Some(true) {
            if container["ready"].as_bool() == Some(true) {
                ready_containers += 1;
            }
            continue;
        }
        if terminated.is_object() {
            let r = st(&terminated["reason"]);
            reason = if r.is_empty() {
                let signal = int(&terminated["signal"]);
                if signal != 0 {
                    format!("Init:Signal:{signal}")
                } else {
                    format!("Init:ExitCode:{}", int(&terminated["exitCode"]))
                }
            } else {
                format!("Init:{r}")
            };
        } else if waiting.is_object()
            && !st(&waiting["reason"]).is_empty()
            && st(&waiting["reason"]) != "PodInitializing"
        {
            reason = format!("Init:{}", st(&waiting["reason"]));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = arr(&status["conditions"])
        .iter()
        .find(|c| st(&c["type"]) == "Initialized")
        .is_some_and(|c| st(&c["status"]) == "True");
    if !initializing || initialized {
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for container in arr(&status["containerStatuses"]).iter().rev() {
            restarts += int(&container["restartCount"]);
            let last_terminated = &container["lastState"]["terminated"];
            if last_terminated.is_object() {
                last_restart = later(last_restart, &last_terminated["finishedAt"]);
            }
            let state = &container["state"];
            let terminated = &state["terminated"];
            let waiting_reason = st(&state["waiting"]["reason"]);
            if state["waiting"].is_object() && !waiting_reason.is_empty() {
                reason = waiting_reason.to_owned();
            } else if terminated.is_object() && !st(&terminated["reason"]).is_empty() {
                reason = st(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                let signal = int(&terminated["signal"]);
                reason = if signal != 0 {
                    format!("Signal:{signal}")
                } else {
                    format!("ExitCode:{}", int(&terminated["exitCode"]))
                };
            } else if container["ready"].as_bool() == Some(true) && state["running"].is_object() {
                has_running = true;
                ready_containers += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = arr(&status["conditions"])
                .iter()
                .any(|c| st(&c["type"]) == "Ready" && st(&c["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    if deleting(pod) && st(&status["reason"]) == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting(pod) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(now.duration_since(t)))
        }
        _ => restarts.to_string(),
    };

    let pod_ip = arr(&status["podIPs"])
        .first()
        .map(|p| st(&p["ip"]))
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| st(&status["podIP"]));
    let gates = arr(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let conditions = arr(&status["conditions"]);
        let true_conditions = gates
            .iter()
            .filter(|gate| {
                let wanted = st(&gate["conditionType"]);
                conditions
                    .iter()
                    .find(|c| st(&c["type"]) == wanted)
                    .is_some_and(|c| st(&c["status"]) == "True")
            })
            .count();
        format!("{true_conditions}/{}", gates.len())
    };

    vec![
        name(pod),
        format!("{ready_containers}/{total_containers}").into(),
        reason.into(),
        restarts_cell.into(),
        age(pod, now),
        if pod_ip.is_empty() { "<none>" } else { pod_ip }.into(),
        st_or(&spec["nodeName"], "<none>").into(),
        st_or(&status["nominatedNodeName"], "<none>").into(),
        readiness_gates.into(),
    ]
}

/// `printPodTemplate`.
pub(super) fn pod_template_cells(o: &Value, _now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(&o["template"]["spec"]["containers"]);
    vec![
        name(o),
        names,
        images,
        format_labels(&o["template"]["metadata"]["labels"]).into(),
    ]
}
