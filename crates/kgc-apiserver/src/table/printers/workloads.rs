//! Workloads: the `apps`, `batch`, `autoscaling` and `policy` kinds and replication controllers: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::table::cell::*;
use crate::table::column::*;
use crate::table::duration::human_duration;

pub(super) const DEPLOYMENT_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    col(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) const REPLICA_SET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas.",
    ),
    col(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas.",
    ),
    col(
        "Ready",
        "integer",
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) const STATEFUL_SET_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

pub(super) const DAEMON_SET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod.",
    ),
    col(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    col(
        "Up-to-date",
        "integer",
        "The total number of nodes that are running updated daemon pod",
    ),
    col(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
    ),
    col(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) const CONTROLLER_REVISION_COLUMNS: &[Col] = &[
    NAME,
    col("Controller", "string", "Controller of the object"),
    col(
        "Revision",
        "string",
        "Revision indicates the revision of the state represented by Data.",
    ),
    AGE,
];

pub(super) const JOB_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) const CRON_JOB_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Schedule",
        "string",
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    col(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    col(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.",
    ),
    col(
        "Active",
        "integer",
        "A list of pointers to currently running jobs.",
    ),
    col(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) const HPA_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Reference",
        "string",
        "scaleTargetRef points to the target resource to scale.",
    ),
    col(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to calculate the desired replica count.",
    ),
    col(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
    ),
    col(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
    ),
    col(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler.",
    ),
    AGE,
];

pub(super) const PDB_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

pub(super) fn controller_revision_cells(cr: &Value, now: Timestamp) -> Vec<Value> {
    let controller = arr(&cr["metadata"]["ownerReferences"])
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
        .map_or_else(
            || "<none>".to_owned(),
            |r| {
                let group = st(&r["apiVersion"]).rsplit_once('/').map_or("", |(g, _)| g);
                let kind = st(&r["kind"]);
                let group_kind = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                if kind.is_empty() && group.is_empty() {
                    st(&r["name"]).to_owned()
                } else {
                    format!("{}/{}", group_kind.to_lowercase(), st(&r["name"]))
                }
            },
        );
    vec![
        name(cr),
        controller.into(),
        int(&cr["revision"]).into(),
        age(cr, now),
    ]
}

pub(super) fn job_cells(job: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &job["spec"];
    let status = &job["status"];
    let succeeded = int(&status["succeeded"]);
    let completions = if spec["completions"].is_number() {
        format!("{succeeded}/{}", int(&spec["completions"]))
    } else {
        let parallelism = int(&spec["parallelism"]);
        if parallelism > 1 {
            format!("{succeeded}/1 of {parallelism}")
        } else {
            format!("{succeeded}/1")
        }
    };
    let duration = match (
        timestamp(&status["startTime"]),
        timestamp(&status["completionTime"]),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.duration_since(start)),
    };
    let has = |kind: &str| {
        arr(&status["conditions"])
            .iter()
            .find(|c| st(&c["type"]) == kind)
            .is_some_and(|c| st(&c["status"]) == "True")
    };
    let state = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(job),
        state.into(),
        completions.into(),
        duration.into(),
        age(job, now),
        names,
        images,
        format_label_selector(&spec["selector"]).into(),
    ]
}

pub(super) fn cron_job_cells(cj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &cj["spec"];
    let last_schedule = if timestamp(&cj["status"]["lastScheduleTime"]).is_some() {
        since(&cj["status"]["lastScheduleTime"], now)
    } else {
        "<none>".into()
    };
    // The real server defaults suspend to false.
    let suspend = match spec["suspend"].as_bool() {
        Some(true) => "True",
        _ => "False",
    };
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = container_cells(&job_spec["template"]["spec"]["containers"]);
    vec![
        name(cj),
        st(&spec["schedule"]).into(),
        spec["timeZone"].as_str().unwrap_or("<none>").into(),
        suspend.into(),
        arr(&cj["status"]["active"]).len().into(),
        last_schedule.into(),
        age(cj, now),
        names,
        images,
        format_label_selector(&job_spec["selector"]).into(),
    ]
}

/// `formatHPAMetrics` over autoscaling/v2 metric specs and statuses.
fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let max = 2;
    let mut list: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i).unwrap_or(&Value::Null);
        let text = match st(&spec["type"]) {
            t @ ("External" | "Object") => {
                let key = if t == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = &spec[key]["target"];
                let current = &status[key]["current"];
                if !target["averageValue"].is_null() {
                    let cur = if current["averageValue"].is_null() {
                        "<unknown>".to_owned()
                    } else {
                        quantity(&current["averageValue"])
                    };
                    format!("{cur}/{} (avg)", quantity(&target["averageValue"]))
                } else {
                    let cur = if status[key].is_object() {
                        quantity(&current["value"])
                    } else {
                        "<unknown>".to_owned()
                    };
                    format!("{cur}/{}", quantity(&target["value"]))
                }
            }
            "Pods" => {
                let cur = if status["pods"].is_object() {
                    quantity(&status["pods"]["current"]["averageValue"])
                } else {
                    "<unknown>".to_owned()
                };
                format!(
                    "{cur}/{}",
                    quantity(&spec["pods"]["target"]["averageValue"])
                )
            }
            t @ ("Resource" | "ContainerResource") => {
                let key = if t == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let source = &spec[key];
                let target = &source["target"];
                let current = &status[key];
                let resource = st(&source["name"]);
                if !target["averageValue"].is_null() {
                    let cur = if current.is_object() {
                        quantity(&current["current"]["averageValue"])
                    } else {
                        "<unknown>".to_owned()
                    };
                    format!("{resource}: {cur}/{}", quantity(&target["averageValue"]))
                } else {
                    let cur = if current["current"]["averageUtilization"].is_number() {
                        format!("{}%", int(&current["current"]["averageUtilization"]))
                    } else {
                        "<unknown>".to_owned()
                    };
                    let tgt = if target["averageUtilization"].is_number() {
                        format!("{}%", int(&target["averageUtilization"]))
                    } else {
                        "<auto>".to_owned()
                    };
                    format!("{resource}: {cur}/{tgt}")
                }
            }
            _ => "<unknown type>".to_owned(),
        };
        list.push(text);
    }
    let count = list.len();
    if count > max {
        list.truncate(max);
        return format!("{} + {} more...", list.join(", "), count - max);
    }
    list.join(", ")
}

pub(super) fn hpa_cells(hpa: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &hpa["spec"];
    let target = &spec["scaleTargetRef"];
    let reference = format!("{}/{}", st(&target["kind"]), st(&target["name"]));
    // autoscaling/v2 defaulting: minReplicas 1 and, without metrics, 80% CPU utilization.
    let cpu = |utilization: &Value| {
        json!({
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
        })
    };
    let specs = match arr(&spec["metrics"]) {
        // autoscaling/v1 shape.
        [] if spec["targetCPUUtilizationPercentage"].is_number() => {
            vec![cpu(&spec["targetCPUUtilizationPercentage"])]
        }
        [] => vec![cpu(&json!(80))],
        m => m.to_vec(),
    };
    let metrics = hpa_metrics(&specs, arr(&hpa["status"]["currentMetrics"]));
    vec![
        name(hpa),
        reference.into(),
        metrics.into(),
        int_or(&spec["minReplicas"], 1).to_string().into(),
        int(&spec["maxReplicas"]).into(),
        int(&hpa["status"]["currentReplicas"]).into(),
        age(hpa, now),
    ]
}

/// `printReplicationController`.
pub(super) fn replication_controller_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(o),
        int_or(&spec["replicas"], 1).into(),
        int(&o["status"]["replicas"]).into(),
        int(&o["status"]["readyReplicas"]).into(),
        age(o, now),
        names,
        images,
        format_labels(&spec["selector"]).into(),
    ]
}

/// `printDeployment`.
pub(super) fn deployment_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let status = &o["status"];
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    let selector = label_selector_string(&spec["selector"]).unwrap_or_else(|()| "<invalid>".into());
    vec![
        name(o),
        format!(
            "{}/{}",
            int(&status["readyReplicas"]),
            int_or(&spec["replicas"], 1)
        )
        .into(),
        int(&status["updatedReplicas"]).into(),
        int(&status["availableReplicas"]).into(),
        age(o, now),
        names,
        images,
        selector.into(),
    ]
}

/// `printReplicaSet`.
pub(super) fn replica_set_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(o),
        int_or(&spec["replicas"], 1).into(),
        int(&o["status"]["replicas"]).into(),
        int(&o["status"]["readyReplicas"]).into(),
        age(o, now),
        names,
        images,
        format_label_selector(&spec["selector"]).into(),
    ]
}

/// `printStatefulSet`.
pub(super) fn stateful_set_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(o),
        format!(
            "{}/{}",
            int(&o["status"]["readyReplicas"]),
            int_or(&spec["replicas"], 1)
        )
        .into(),
        age(o, now),
        names,
        images,
    ]
}

/// `printDaemonSet`.
pub(super) fn daemon_set_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let status = &o["status"];
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(o),
        int(&status["desiredNumberScheduled"]).into(),
        int(&status["currentNumberScheduled"]).into(),
        int(&status["numberReady"]).into(),
        int(&status["updatedNumberScheduled"]).into(),
        int(&status["numberAvailable"]).into(),
        format_labels(&spec["template"]["spec"]["nodeSelector"]).into(),
        age(o, now),
        names,
        images,
        format_label_selector(&spec["selector"]).into(),
    ]
}

/// `printPodDisruptionBudget`.
pub(super) fn pod_disruption_budget_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        int_or_string(&o["spec"]["minAvailable"])
            .unwrap_or_else(|| "N/A".into())
            .into(),
        int_or_string(&o["spec"]["maxUnavailable"])
            .unwrap_or_else(|| "N/A".into())
            .into(),
        int(&o["status"]["disruptionsAllowed"]).into(),
        age(o, now),
    ]
}
