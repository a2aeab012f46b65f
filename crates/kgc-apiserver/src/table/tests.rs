//! The printers against upstream's output for the same objects.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use kgc_meta::Catalog;
use kgc_meta::catalog::PrinterColumn;

use super::*;

const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn now() -> Timestamp {
    "2025-06-01T12:00:00Z".parse().unwrap()
}

/// An RFC 3339 time `secs` seconds before [`now`].
fn ago(secs: i64) -> String {
    (now() - SignedDuration::from_secs(secs)).to_string()
}

fn info(group: &str, plural: &str) -> ResourceInfo {
    Catalog::builtin()
        .resources()
        .find(|r| r.group == group && r.plural == plural)
        .map(|r| (**r).clone())
        .unwrap_or_else(|| panic!("no {plural}.{group} in the catalog"))
}

fn cells(info: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let r = row(info, obj, &IncludeObject::None, now());
    r["cells"].as_array().unwrap().clone()
}

fn column_names(info: &ResourceInfo) -> Vec<(String, i64)> {
    columns(info)
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn names_at(info: &ResourceInfo, priority: i64) -> Vec<String> {
    column_names(info)
        .into_iter()
        .filter(|(_, p)| *p == priority)
        .map(|(n, _)| n)
        .collect()
}

fn meta(name: &str, age_secs: i64) -> Value {
    json!({"name": name, "namespace": "ns", "uid": "u-1", "creationTimestamp": ago(age_secs)})
}

// --- durations -------------------------------------------------------------------------

#[test]
fn table_age_is_unknown_without_creation_timestamp() {
    let ns = info("", "namespaces");
    let c = cells(&ns, &json!({"metadata": {"name": "a"}}));
    assert_eq!(c[2], "<unknown>");
    let c = cells(
        &ns,
        &json!({"metadata": {"name": "a", "creationTimestamp": "0001-01-01T00:00:00Z"}}),
    );
    assert_eq!(c[2], "<unknown>");
}

// --- Accept negotiation ----------------------------------------------------------------

#[test]
fn table_wants_table_on_kubectl_accept() {
    assert_eq!(wants_table(KUBECTL_ACCEPT), Some("v1"));
    assert_eq!(
        wants_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"),
        Some("v1beta1")
    );
    assert_eq!(
        wants_table("application/json; as=Table; v=v1; g=meta.k8s.io"),
        Some("v1")
    );
    assert_eq!(wants_table("application/json"), None);
    assert_eq!(wants_table("*/*"), None);
    assert_eq!(wants_table(""), None);
    // A plain type preferred by q wins.
    assert_eq!(
        wants_table("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json"),
        None
    );
    assert_eq!(
        wants_table("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io"),
        Some("v1")
    );
    // Other conversions, groups, versions and media types are not Tables.
    assert_eq!(
        wants_table(
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
        ),
        None
    );
    assert_eq!(
        wants_table("application/json;as=Table;v=v2;g=meta.k8s.io"),
        None
    );
    assert_eq!(wants_table("application/json;as=Table;v=v1"), None);
    assert_eq!(
        wants_table(
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
        ),
        Some("v1")
    );
    assert_eq!(
        wants_table("application/json;as=Table;v=v1;g=meta.k8s.io;q=0"),
        None
    );
}

#[test]
fn table_include_object_parse() {
    assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse(Some("")), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
    assert_eq!(
        IncludeObject::parse(Some("Object")),
        Ok(IncludeObject::Object)
    );
    assert_eq!(
        IncludeObject::parse(Some("all")),
        Err("unrecognized includeObject value: \"all\"".to_owned())
    );
}

// --- pods ------------------------------------------------------------------------------

fn pod(spec: Value, status: Value) -> Value {
    json!({"metadata": meta("p", 300), "spec": spec, "status": status})
}

fn two_containers() -> Value {
    json!({"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "j"}]})
}

#[test]
fn table_pod_columns() {
    let pods = info("", "pods");
    assert_eq!(
        names_at(&pods, 0),
        ["Name", "Ready", "Status", "Restarts", "Age"]
    );
    assert_eq!(
        names_at(&pods, 1),
        ["IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    let cols = columns(&pods);
    assert_eq!(cols[0]["format"], "name");
    assert_eq!(cols[0]["type"], "string");
    assert_eq!(cols[3]["type"], "string");
    assert_eq!(cols[1]["format"], "");
    assert!(
        cols[0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Name must be unique")
    );
}

#[test]
fn table_pod_running_and_ready_counts() {
    let pods = info("", "pods");
    let p = pod(
        two_containers(),
        json!({
            "phase": "Running",
            "podIP": "10.0.0.7",
            "podIPs": [{"ip": "10.0.0.7"}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"running": {}}},
            ],
        }),
    );
    let c = cells(&pods, &p);
    assert_eq!(
        c,
        vec![
            json!("p"),
            json!("1/2"),
            json!("Running"),
            json!("0"),
            json!("5m"),
            json!("10.0.0.7"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn table_pod_without_status_is_pending() {
    let pods = info("", "pods");
    let p = json!({"metadata": meta("p", 5), "spec": {"containers": [{"name": "a"}], "nodeName": "n1"}});
    let c = cells(&pods, &p);
    assert_eq!(c[1], "0/1");
    assert_eq!(c[2], "Pending");
    assert_eq!(c[3], "0");
    assert_eq!(c[4], "5s");
    assert_eq!(c[5], "<none>");
    assert_eq!(c[6], "n1");
}

#[test]
fn table_pod_restarts_with_last_restart_age() {
    let pods = info("", "pods");
    let p = pod(
        two_containers(),
        json!({
            "phase": "Running",
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}},
                {"name": "b", "ready": true, "restartCount": 1, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(90)}}},
            ],
        }),
    );
    let c = cells(&pods, &p);
    assert_eq!(c[1], "2/2");
    assert_eq!(c[3], "3 (90s ago)");
    // Restarts without a recorded termination print the bare count.
    let p = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 4, "state": {"running": {}}}]}),
    );
    assert_eq!(cells(&pods, &p)[3], "4");
}

#[test]
fn table_pod_waiting_and_terminated_reasons() {
    let pods = info("", "pods");
    let status = |state: Value| {
        json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 5, "state": state}]})
    };
    let spec = json!({"containers": [{"name": "a"}]});
    let reason = |state: Value| cells(&pods, &pod(spec.clone(), status(state)))[2].clone();
    assert_eq!(
        reason(json!({"waiting": {"reason": "CrashLoopBackOff"}})),
        "CrashLoopBackOff"
    );
    assert_eq!(
        reason(json!({"waiting": {"reason": "ContainerCreating"}})),
        "ContainerCreating"
    );
    assert_eq!(
        reason(json!({"terminated": {"reason": "OOMKilled", "exitCode": 137}})),
        "OOMKilled"
    );
    assert_eq!(reason(json!({"terminated": {"exitCode": 3}})), "ExitCode:3");
    assert_eq!(
        reason(json!({"terminated": {"exitCode": 0, "signal": 9}})),
        "Signal:9"
    );
    // An empty waiting reason leaves the phase.
    assert_eq!(reason(json!({"waiting": {}})), "Running");
}

#[test]
fn table_pod_completed_and_failed() {
    let pods = info("", "pods");
    let p = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0,
             "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
    );
    let r = row(&pods, &p, &IncludeObject::None, now());
    assert_eq!(r["cells"][1], "0/1");
    assert_eq!(r["cells"][2], "Completed");
    assert_eq!(r["conditions"][0]["type"], "Completed");
    assert_eq!(r["conditions"][0]["reason"], "Succeeded");
    assert_eq!(r["object"], Value::Null);

    let p = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
    );
    let r = row(&pods, &p, &IncludeObject::None, now());
    assert_eq!(r["cells"][2], "Error");
    assert_eq!(r["conditions"][0]["reason"], "Failed");

    // Running pods carry no row conditions.
    let p = pod(json!({"containers": []}), json!({"phase": "Running"}));
    assert!(
        row(&pods, &p, &IncludeObject::None, now())
            .get("conditions")
            .is_none()
    );
}

#[test]
fn table_pod_completed_with_running_container() {
    let pods = info("", "pods");
    let statuses = json!([
        {"name": "a", "ready": true, "state": {"running": {}}},
        {"name": "b", "ready": false, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
    ]);
    let p = pod(
        two_containers(),
        json!({"phase": "Running", "containerStatuses": statuses}),
    );
    assert_eq!(cells(&pods, &p)[2], "NotReady");
    let p = pod(
        two_containers(),
        json!({"phase": "Running", "containerStatuses": statuses,
               "conditions": [{"type": "Ready", "status": "True"}]}),
    );
    assert_eq!(cells(&pods, &p)[2], "Running");
}

#[test]
fn table_pod_terminating_and_unknown() {
    let pods = info("", "pods");
    let mut p = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": true, "state": {"running": {}}}]}),
    );
    p["metadata"]["deletionTimestamp"] = json!(ago(-30));
    assert_eq!(cells(&pods, &p)[2], "Terminating");
    p["status"]["reason"] = json!("NodeLost");
    assert_eq!(cells(&pods, &p)[2], "Unknown");
    // Terminal pods keep their reason while being deleted.
    let mut p = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
    );
    p["metadata"]["deletionTimestamp"] = json!(ago(0));
    assert_eq!(cells(&pods, &p)[2], "Completed");
}

#[test]
fn table_pod_init_containers() {
    let pods = info("", "pods");
    let spec = json!({
        "initContainers": [{"name": "i1"}, {"name": "i2"}],
        "containers": [{"name": "a"}],
    });
    let with = |init: Value| {
        cells(
            &pods,
            &pod(
                spec.clone(),
                json!({"phase": "Pending", "initContainerStatuses": init,
                       "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
            ),
        )
    };
    let c = with(json!([
        {"name": "i1", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "i2", "restartCount": 1, "state": {"running": {}}},
    ]));
    assert_eq!(c[2], "Init:1/2");
    assert_eq!(c[1], "0/1");
    assert_eq!(c[3], "1");
    let c =
        with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]));
    assert_eq!(c[2], "Init:Error");
    let c = with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}]));
    assert_eq!(c[2], "Init:ExitCode:2");
    let c = with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2, "signal": 15}}}]));
    assert_eq!(c[2], "Init:Signal:15");
    let c = with(json!([{"name": "i1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]));
    assert_eq!(c[2], "Init:CrashLoopBackOff");
    let c = with(json!([{"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}}]));
    assert_eq!(c[2], "Init:0/2");
    // All init containers done: the main containers decide.
    let c = with(json!([
        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
        {"name": "i2", "state": {"terminated": {"exitCode": 0}}},
    ]));
    assert_eq!(c[2], "PodInitializing");
}

#[test]
fn table_pod_sidecar_counts_as_container() {
    let pods = info("", "pods");
    let p = pod(
        json!({
            "initContainers": [{"name": "side", "restartPolicy": "Always"}],
            "containers": [{"name": "a"}],
        }),
        json!({
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "side", "started": true, "ready": true, "restartCount": 2,
                "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(200)}}}],
            "containerStatuses": [{"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}}}],
        }),
    );
    let c = cells(&pods, &p);
    assert_eq!(c[1], "2/2");
    assert_eq!(c[2], "Running");
    assert_eq!(c[3], "3 (3m20s ago)");
}

#[test]
fn table_pod_scheduling_gated_and_readiness_gates() {
    let pods = info("", "pods");
    let p = pod(
        json!({"containers": [{"name": "a"}],
               "readinessGates": [{"conditionType": "x/one"}, {"conditionType": "x/two"}]}),
        json!({"phase": "Pending", "nominatedNodeName": "n2", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
            {"type": "x/one", "status": "True"},
            {"type": "x/two", "status": "False"},
        ]}),
    );
    let c = cells(&pods, &p);
    assert_eq!(c[2], "SchedulingGated");
    assert_eq!(c[7], "n2");
    assert_eq!(c[8], "1/2");
}

// --- workloads ---------------------------------------------------------------------------

#[test]
fn table_deployment_columns_and_cells() {
    let d = info("apps", "deployments");
    assert_eq!(
        names_at(&d, 0),
        ["Name", "Ready", "Up-to-date", "Available", "Age"]
    );
    assert_eq!(names_at(&d, 1), ["Containers", "Images", "Selector"]);
    let obj = json!({
        "metadata": meta("web", 2 * 86400 + 3 * 3600),
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"tier": "front", "app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                     {"key": "gone", "operator": "DoesNotExist"}],
            },
            "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.27"},
                {"name": "log", "image": "busybox"},
            ]}},
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    });
    assert_eq!(
        cells(&d, &obj),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("2d3h"),
            json!("nginx,log"),
            json!("nginx:1.27,busybox"),
            json!("app=web,env in (dev,prod),!gone,tier=front"),
        ]
    );
    // A fresh deployment without status or replicas: 0/1 (replicas default to 1).
    let fresh =
        json!({"metadata": meta("x", 1), "spec": {"selector": {"matchLabels": {"a": "b"}}}});
    let c = cells(&d, &fresh);
    assert_eq!(c[1], "0/1");
    assert_eq!(c[2], 0);
    assert_eq!(c[7], "a=b");
    let bad = json!({"metadata": meta("x", 1), "spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}});
    assert_eq!(cells(&d, &bad)[7], "<invalid>");
}

#[test]
fn table_replica_set_stateful_set_daemon_set() {
    let rs = info("apps", "replicasets");
    assert_eq!(
        names_at(&rs, 0),
        ["Name", "Desired", "Current", "Ready", "Age"]
    );
    let obj = json!({"metadata": meta("rs", 30), "spec": {"replicas": 2, "selector": {}},
                     "status": {"replicas": 2, "readyReplicas": 1}});
    let c = cells(&rs, &obj);
    assert_eq!(c[1..4], [json!(2), json!(2), json!(1)]);
    assert_eq!(c[7], "<none>");

    let sts = info("apps", "statefulsets");
    assert_eq!(names_at(&sts, 0), ["Name", "Ready", "Age"]);
    let obj = json!({"metadata": meta("db", 30), "spec": {"replicas": 3}, "status": {"readyReplicas": 3}});
    assert_eq!(cells(&sts, &obj)[1], "3/3");

    let ds = info("apps", "daemonsets");
    assert_eq!(
        names_at(&ds, 0),
        [
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Up-to-date",
            "Available",
            "Node Selector",
            "Age"
        ]
    );
    let obj = json!({"metadata": meta("agent", 30),
        "spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                   "updatedNumberScheduled": 3, "numberAvailable": 2}});
    let c = cells(&ds, &obj);
    assert_eq!(
        c[1..7],
        [
            json!(3),
            json!(3),
            json!(2),
            json!(3),
            json!(2),
            json!("kubernetes.io/os=linux")
        ]
    );
    assert_eq!(c[10], "<none>");

    let rc = info("", "replicationcontrollers");
    let obj = json!({"metadata": meta("rc", 30), "spec": {"selector": {"app": "x"}}});
    let c = cells(&rc, &obj);
    assert_eq!(c[1], 1);
    assert_eq!(c[7], "app=x");
}

#[test]
fn table_jobs_and_cron_jobs() {
    let jobs = info("batch", "jobs");
    assert_eq!(
        names_at(&jobs, 0),
        ["Name", "Status", "Completions", "Duration", "Age"]
    );
    let done = json!({"metadata": meta("j", 600),
        "spec": {"completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
        "status": {"succeeded": 1, "startTime": ago(600), "completionTime": ago(595),
                   "conditions": [{"type": "Complete", "status": "True"}]}});
    let c = cells(&jobs, &done);
    assert_eq!(
        c[1..5],
        [json!("Complete"), json!("1/1"), json!("5s"), json!("10m")]
    );
    assert_eq!(c[7], "batch.kubernetes.io/controller-uid=u");
    let running = json!({"metadata": meta("j", 600), "spec": {"parallelism": 3},
        "status": {"startTime": ago(130)}});
    let c = cells(&jobs, &running);
    assert_eq!(
        c[1..4],
        [json!("Running"), json!("0/1 of 3"), json!("2m10s")]
    );
    let failed = json!({"metadata": meta("j", 1), "spec": {"completions": 2},
        "status": {"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}});
    assert_eq!(
        cells(&jobs, &failed)[1..4],
        [json!("Failed"), json!("0/2"), json!("")]
    );
    let mut suspended = json!({"metadata": meta("j", 1), "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
    assert_eq!(cells(&jobs, &suspended)[1], "Suspended");
    suspended["metadata"]["deletionTimestamp"] = json!(ago(0));
    assert_eq!(cells(&jobs, &suspended)[1], "Terminating");

    let cj = info("batch", "cronjobs");
    assert_eq!(
        names_at(&cj, 0),
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age"
        ]
    );
    let obj = json!({"metadata": meta("c", 3600), "spec": {"schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {"active": [{"name": "c-1"}], "lastScheduleTime": ago(45)}});
    let c = cells(&cj, &obj);
    assert_eq!(
        c,
        vec![
            json!("c"),
            json!("*/5 * * * *"),
            json!("<none>"),
            json!("False"),
            json!(1),
            json!("45s"),
            json!("60m"),
            json!("c"),
            json!("busybox"),
            json!("<none>"),
        ]
    );
    let never = json!({"metadata": meta("c", 1), "spec": {"suspend": true, "timeZone": "Etc/UTC"}});
    let c = cells(&cj, &never);
    assert_eq!(
        c[2..6],
        [json!("Etc/UTC"), json!("True"), json!(0), json!("<none>")]
    );
}

#[test]
fn table_hpa_and_controller_revision_and_pdb() {
    let hpa = info("autoscaling", "horizontalpodautoscalers");
    let obj = json!({"metadata": meta("h", 60), "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
        "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
        ]},
        "status": {"currentReplicas": 2, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "12m"}}}]}});
    let c = cells(&hpa, &obj);
    assert_eq!(
        c[1..6],
        [
            json!("Deployment/web"),
            json!("cpu: 12%/50%, memory: <unknown>/100Mi + 1 more..."),
            json!("1"),
            json!(5),
            json!(2)
        ]
    );
    let bare = json!({"metadata": meta("h", 60), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 4}});
    let c = cells(&hpa, &bare);
    assert_eq!(c[2], "cpu: <unknown>/80%");
    assert_eq!(c[3], "2");

    let cr = info("apps", "controllerrevisions");
    let obj = json!({"metadata": {"name": "web-5d", "creationTimestamp": ago(10), "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 3});
    assert_eq!(
        cells(&cr, &obj)[1..3],
        [json!("statefulset.apps/web"), json!(3)]
    );
    assert_eq!(cells(&cr, &json!({"metadata": {"name": "x"}}))[1], "<none>");

    let pdb = info("policy", "poddisruptionbudgets");
    let obj = json!({"metadata": meta("b", 10), "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
    assert_eq!(
        cells(&pdb, &obj)[1..4],
        [json!("50%"), json!("N/A"), json!(1)]
    );
    let obj = json!({"metadata": meta("b", 10), "spec": {"maxUnavailable": 1}});
    assert_eq!(
        cells(&pdb, &obj)[1..4],
        [json!("N/A"), json!("1"), json!(0)]
    );
}

// --- core and networking kinds -----------------------------------------------------------

#[test]
fn table_services() {
    let svc = info("", "services");
    assert_eq!(
        names_at(&svc, 0),
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age"
        ]
    );
    assert_eq!(names_at(&svc, 1), ["Selector"]);
    let obj = json!({"metadata": meta("web", 90), "spec": {
        "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
        "ports": [{"port": 80}, {"port": 443, "nodePort": 30443, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
    assert_eq!(
        cells(&svc, &obj),
        vec![
            json!("web"),
            json!("ClusterIP"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("80/TCP,443:30443/TCP,53/UDP"),
            json!("90s"),
            json!("app=web"),
        ]
    );
    let lb = json!({"metadata": meta("lb", 1), "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 31000}]}});
    let c = cells(&svc, &lb);
    assert_eq!(
        c[1..5],
        [
            json!("LoadBalancer"),
            json!("<none>"),
            json!("<pending>"),
            json!("80:31000/TCP")
        ]
    );
    let mut ready = lb.clone();
    ready["status"] =
        json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a.example"}]}});
    ready["spec"]["externalIPs"] = json!(["198.51.100.1"]);
    assert_eq!(cells(&svc, &ready)[3], "203.0.113.9,a.example,198.51.100.1");
    let ext = json!({"metadata": meta("ext", 1), "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
    let c = cells(&svc, &ext);
    assert_eq!(
        c[2..5],
        [json!("<none>"), json!("db.example.com"), json!("<none>")]
    );
    assert_eq!(c[6], "<none>");
}

#[test]
fn table_namespaces_configmaps_secrets_serviceaccounts() {
    let ns = info("", "namespaces");
    assert_eq!(names_at(&ns, 0), ["Name", "Status", "Age"]);
    assert_eq!(cells(&ns, &json!({"metadata": meta("a", 10)}))[1], "Active");
    assert_eq!(
        cells(
            &ns,
            &json!({"metadata": meta("a", 10), "status": {"phase": "Terminating"}})
        )[1],
        "Terminating"
    );

    let cm = info("", "configmaps");
    assert_eq!(names_at(&cm, 0), ["Name", "Data", "Age"]);
    let obj = json!({"metadata": meta("c", 10), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(cells(&cm, &obj), vec![json!("c"), json!(3), json!("10s")]);

    let secret = info("", "secrets");
    assert_eq!(names_at(&secret, 0), ["Name", "Type", "Data", "Age"]);
    let obj = json!({"metadata": meta("s", 10), "data": {"a": "MQ=="}, "stringData": {"a": "1", "b": "2"}});
    assert_eq!(cells(&secret, &obj)[1..3], [json!("Opaque"), json!(2)]);
    let obj = json!({"metadata": meta("s", 10), "type": "kubernetes.io/tls"});
    assert_eq!(
        cells(&secret, &obj)[1..3],
        [json!("kubernetes.io/tls"), json!(0)]
    );

    let sa = info("", "serviceaccounts");
    assert_eq!(names_at(&sa, 0), ["Name", "Secrets", "Age"]);
    assert_eq!(cells(&sa, &json!({"metadata": meta("default", 10)}))[1], 0);
}

#[test]
fn table_nodes() {
    let nodes = info("", "nodes");
    assert_eq!(
        names_at(&nodes, 0),
        ["Name", "Status", "Roles", "Age", "Version"]
    );
    let obj = json!({
        "metadata": {"name": "n1", "creationTimestamp": ago(86400 * 3),
                     "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "n1"}],
                   "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12 (bookworm)"}},
    });
    assert_eq!(
        cells(&nodes, &obj),
        vec![
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,master"),
            json!("3d"),
            json!("v1.32.0"),
            json!("172.18.0.2"),
            json!("<none>"),
            json!("Debian GNU/Linux 12 (bookworm)"),
            json!("<unknown>"),
            json!("<unknown>"),
        ]
    );
    let c = cells(&nodes, &json!({"metadata": {"name": "n2"}}));
    assert_eq!(c[1..3], [json!("Unknown"), json!("<none>")]);
    let c = cells(
        &nodes,
        &json!({"metadata": {"name": "n2"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
    );
    assert_eq!(c[1], "NotReady");
}

#[test]
fn table_events_core_and_events_api() {
    let ev = info("", "events");
    assert_eq!(
        names_at(&ev, 0),
        ["Last Seen", "Type", "Reason", "Object", "Message"]
    );
    assert_eq!(
        names_at(&ev, 1),
        ["Subobject", "Source", "First Seen", "Count", "Name"]
    );
    assert_eq!(columns(&ev)[9]["format"], "name");
    let obj = json!({"metadata": meta("p.17a", 600), "type": "Normal", "reason": "Scheduled",
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
        "source": {"component": "default-scheduler"}, "message": "Successfully assigned ns/p to n1\n",
        "firstTimestamp": ago(600), "lastTimestamp": ago(60), "count": 3});
    assert_eq!(
        cells(&ev, &obj),
        vec![
            json!("60s"),
            json!("Normal"),
            json!("Scheduled"),
            json!("pod/p"),
            json!("spec.containers{a}"),
            json!("default-scheduler"),
            json!("Successfully assigned ns/p to n1"),
            json!("10m"),
            json!(3),
            json!("p.17a"),
        ]
    );
    // A new-style event: eventTime, no count, reporting controller and instance.
    let obj = json!({"metadata": meta("e", 5), "type": "Warning", "reason": "BackOff",
        "involvedObject": {"kind": "Node"}, "eventTime": "2025-06-01T11:58:59.500000Z",
        "reportingComponent": "kubelet", "reportingInstance": "n1", "message": "m"});
    let c = cells(&ev, &obj);
    assert_eq!(c[0], "60s");
    assert_eq!(c[3], "node");
    assert_eq!(c[5], "kubelet, n1");
    assert_eq!(c[8], 1);

    let ev2 = info("events.k8s.io", "events");
    let obj = json!({"metadata": meta("e", 5), "type": "Normal", "reason": "Pulled",
        "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "eventTime": ago(300),
        "reportingController": "kubelet", "reportingInstance": "n1",
        "series": {"count": 7, "lastObservedTime": ago(20)}});
    let c = cells(&ev2, &obj);
    assert_eq!(
        c[..9],
        [
            json!("20s"),
            json!("Normal"),
            json!("Pulled"),
            json!("pod/p"),
            json!(""),
            json!("kubelet, n1"),
            json!("pulled"),
            json!("5m"),
            json!(7)
        ]
    );
}

#[test]
fn table_volumes_and_storage() {
    let pv = info("", "persistentvolumes");
    assert_eq!(
        names_at(&pv, 0),
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age"
        ]
    );
    let obj = json!({"metadata": {"name": "pv1", "creationTimestamp": ago(60)},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                 "claimRef": {"namespace": "ns", "name": "data"}, "storageClassName": "standard"},
        "status": {"phase": "Bound"}});
    assert_eq!(
        cells(&pv, &obj),
        vec![
            json!("pv1"),
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("ns/data"),
            json!("standard"),
            json!("<unset>"),
            json!(""),
            json!("60s"),
            json!("Filesystem"),
        ]
    );
    let pvc = info("", "persistentvolumeclaims");
    let pending = json!({"metadata": meta("data", 60), "spec": {"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(
        cells(&pvc, &pending)[1..7],
        [
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!(""),
            json!("<unset>")
        ]
    );
    let mut bound = pending.clone();
    bound["spec"]["volumeName"] = json!("pv1");
    bound["status"] =
        json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
    bound["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "fast"});
    assert_eq!(
        cells(&pvc, &bound)[1..6],
        [
            json!("Bound"),
            json!("pv1"),
            json!("1Gi"),
            json!("RWO"),
            json!("fast")
        ]
    );
    bound["metadata"]["deletionTimestamp"] = json!(ago(0));
    assert_eq!(cells(&pvc, &bound)[1], "Terminating");

    let sc = info("storage.k8s.io", "storageclasses");
    let obj = json!({"metadata": {"name": "standard", "creationTimestamp": ago(60),
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
    assert_eq!(
        cells(&sc, &obj),
        vec![
            json!("standard (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("WaitForFirstConsumer"),
            json!(false),
            json!("60s"),
        ]
    );

    let rq = info("", "resourcequotas");
    let obj = json!({"metadata": meta("q", 60), "status": {
        "hard": {"requests.cpu": "2", "pods": "10", "limits.memory": "2Gi", "limits.cpu": "4"},
        "used": {"requests.cpu": "500m", "pods": "3", "limits.cpu": "1"}}});
    assert_eq!(
        cells(&rq, &obj)[1..3],
        [
            json!("pods: 3/10, requests.cpu: 500m/2"),
            json!("limits.cpu: 1/4, limits.memory: 0/2Gi")
        ]
    );
}

#[test]
fn table_networking_rbac_and_others() {
    let ing = info("networking.k8s.io", "ingresses");
    assert_eq!(
        names_at(&ing, 0),
        ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    );
    let obj = json!({"metadata": meta("i", 60), "spec": {"ingressClassName": "nginx",
        "rules": [{"host": "a.example"}, {"host": "b.example"}, {}, {"host": "c.example"}, {"host": "d.example"}],
        "tls": [{"hosts": ["a.example"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}});
    assert_eq!(
        cells(&ing, &obj)[1..5],
        [
            json!("nginx"),
            json!("a.example,b.example,c.example + 2 more..."),
            json!("10.0.0.1"),
            json!("80, 443")
        ]
    );
    assert_eq!(
        cells(&ing, &json!({"metadata": meta("i", 1)}))[1..5],
        [json!("<none>"), json!("*"), json!(""), json!("80")]
    );

    let np = info("networking.k8s.io", "networkpolicies");
    assert_eq!(
        cells(
            &np,
            &json!({"metadata": meta("n", 1), "spec": {"podSelector": {}}})
        )[1],
        "<none>"
    );
    assert_eq!(
        cells(
            &np,
            &json!({"metadata": meta("n", 1), "spec": {"podSelector": {"matchLabels": {"role": "db"}}}})
        )[1],
        "role=db"
    );

    let rb = info("rbac.authorization.k8s.io", "rolebindings");
    assert_eq!(names_at(&rb, 0), ["Name", "Role", "Age"]);
    assert_eq!(names_at(&rb, 1), ["Users", "Groups", "ServiceAccounts"]);
    let obj = json!({"metadata": meta("rb", 60), "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                     {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ns", "name": "ci"}]});
    assert_eq!(
        cells(&rb, &obj)[1..6],
        [
            json!("ClusterRole/view"),
            json!("60s"),
            json!("alice, bob"),
            json!("devs"),
            json!("ns/ci")
        ]
    );
    let crb = info("rbac.authorization.k8s.io", "clusterrolebindings");
    assert_eq!(cells(&crb, &obj)[1], "ClusterRole/view");

    let lease = info("coordination.k8s.io", "leases");
    assert_eq!(names_at(&lease, 0), ["Name", "Holder", "Age"]);
    let obj = json!({"metadata": meta("l", 5), "spec": {"holderIdentity": "kgc-1"}});
    assert_eq!(cells(&lease, &obj)[1], "kgc-1");

    let csr = info("certificates.k8s.io", "certificatesigningrequests");
    assert_eq!(
        names_at(&csr, 0),
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
    let obj = json!({"metadata": meta("c", 5), "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
        "username": "alice", "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}});
    assert_eq!(
        cells(&csr, &obj)[1..6],
        [
            json!("5s"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );
    let pending = json!({"metadata": meta("c", 5), "spec": {}});
    assert_eq!(
        cells(&csr, &pending)[2..6],
        [
            json!("<none>"),
            json!(""),
            json!("<none>"),
            json!("Pending")
        ]
    );

    let pc = info("scheduling.k8s.io", "priorityclasses");
    let obj = json!({"metadata": meta("high", 5), "value": 1000000, "globalDefault": true});
    assert_eq!(
        cells(&pc, &obj),
        vec![
            json!("high"),
            json!(1000000),
            json!(true),
            json!("5s"),
            json!("PreemptLowerPriority")
        ]
    );

    let ep = info("", "endpoints");
    let obj = json!({"metadata": meta("web", 5), "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
    assert_eq!(
        cells(&ep, &obj)[1],
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."
    );
    let obj = json!({"metadata": meta("web", 5), "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]});
    assert_eq!(cells(&ep, &obj)[1], "[fd00::1]:80");
    assert_eq!(
        cells(&ep, &json!({"metadata": meta("web", 5)}))[1],
        "<none>"
    );

    let eps = info("discovery.k8s.io", "endpointslices");
    assert_eq!(
        names_at(&eps, 0),
        ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    );
    let obj = json!({"metadata": meta("web-abc", 5), "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "metrics"}, {}, {"port": 9}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]}]});
    assert_eq!(
        cells(&eps, &obj)[1..4],
        [
            json!("IPv4"),
            json!("80,metrics,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")
        ]
    );
    assert_eq!(
        cells(&eps, &json!({"metadata": meta("e", 1)}))[2..4],
        [json!("<unset>"), json!("<unset>")]
    );
}

#[test]
fn table_default_columns_for_kinds_without_printer() {
    for (group, plural) in [
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("", "limitranges"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        let i = info(group, plural);
        let cols = columns(&i);
        assert_eq!(cols.len(), 2, "{plural}");
        assert_eq!(cols[0]["name"], "Name");
        assert_eq!(cols[0]["format"], "name");
        assert_eq!(cols[1]["name"], "Created At");
        assert_eq!(cols[1]["type"], "date");
        let obj = json!({"metadata": {"name": "x", "creationTimestamp": "2024-03-04T05:06:07Z"}});
        assert_eq!(
            cells(&i, &obj),
            vec![json!("x"), json!("2024-03-04T05:06:07Z")]
        );
    }
}

// --- custom resources ------------------------------------------------------------------

fn custom(columns: Vec<PrinterColumn>) -> ResourceInfo {
    let mut i = info("apps", "deployments");
    i.group = "example.com".into();
    i.kind = "Widget".into();
    i.plural = "widgets".into();
    i.custom = true;
    i.printer_columns = columns;
    i
}

fn pc(name: &str, ty: &str, path: &str, priority: i32) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: ty.into(),
        format: String::new(),
        description: String::new(),
        priority,
        json_path: path.into(),
    }
}

#[test]
fn table_custom_resource_without_printer_columns() {
    let w = custom(Vec::new());
    let cols = columns(&w);
    assert_eq!(cols.len(), 2);
    assert_eq!(cols[0]["name"], "Name");
    assert_eq!(cols[0]["format"], "name");
    assert_eq!(cols[1]["name"], "Age");
    assert_eq!(cols[1]["type"], "date");
    assert_eq!(
        cells(&w, &json!({"metadata": meta("w1", 700)})),
        vec![json!("w1"), json!("11m")]
    );
}

#[test]
fn table_custom_resource_printer_columns() {
    let mut described = pc("Replicas", "integer", ".spec.replicas", 0);
    described.description = "How many".into();
    let w = custom(vec![
        described,
        pc(
            "Ready",
            "string",
            ".status.conditions[?(@.type==\"Ready\")].status",
            0,
        ),
        pc(
            "Reason",
            "string",
            ".status.conditions[?(@.type=='Ready')].reason",
            1,
        ),
        pc("First", "string", ".spec.items[*].name", 0),
        pc("Second", "string", ".spec.items[1].name", 0),
        pc("Last", "string", ".spec.items[-1].name", 0),
        pc("Ratio", "number", ".spec.ratio", 0),
        pc("Enabled", "boolean", ".spec.enabled", 0),
        pc("Obj", "string", ".spec.selector", 0),
        pc("Count", "string", ".spec.replicas", 0),
        pc("Missing", "string", ".spec.nothing.here", 0),
        pc("Mistyped", "integer", ".spec.name", 0),
        pc("Created", "date", ".metadata.creationTimestamp", 0),
        pc("Bad date", "date", ".spec.name", 0),
        pc(
            "Dotted",
            "string",
            ".metadata.labels.app\\.kubernetes\\.io/name",
            0,
        ),
        pc(
            "Bracket",
            "string",
            ".metadata.labels['app.kubernetes.io/name']",
            0,
        ),
    ]);
    let cols = columns(&w);
    assert_eq!(cols.len(), 17);
    assert_eq!(cols[1]["name"], "Replicas");
    assert_eq!(cols[1]["type"], "integer");
    assert_eq!(cols[1]["description"], "How many");
    assert_eq!(
        cols[2]["description"],
        "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status"
    );
    assert_eq!(cols[3]["priority"], 1);

    let mut m = meta("w1", 3600 * 5);
    m["labels"] = json!({"app.kubernetes.io/name": "widget"});
    let obj = json!({
        "metadata": m,
        "spec": {"replicas": 3, "ratio": 0.5, "enabled": true, "name": "n",
                 "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                 "selector": {"matchLabels": {"x": "y"}}},
        "status": {"conditions": [
            {"type": "Synced", "status": "False", "reason": "Nope"},
            {"type": "Ready", "status": "True", "reason": "AllGood"},
        ]},
    });
    assert_eq!(
        cells(&w, &obj),
        vec![
            json!("w1"),
            json!(3),
            json!("True"),
            json!("AllGood"),
            json!("a"),
            json!("b"),
            json!("c"),
            json!(0.5),
            json!(true),
            json!("{\"matchLabels\":{\"x\":\"y\"}}"),
            json!("3"),
            Value::Null,
            Value::Null,
            json!("5h"),
            json!("<invalid>"),
            json!("widget"),
            json!("widget"),
        ]
    );
    // No status at all: the status columns are null, not errors.
    let bare = json!({"metadata": meta("w2", 1), "spec": {}});
    let c = cells(&w, &bare);
    assert_eq!(c.len(), 17);
    assert_eq!(c[2], Value::Null);
    assert_eq!(c[1], Value::Null);
}

// --- rows and tables ---------------------------------------------------------------------

fn stored(obj: &Value, rv: u64) -> StoredObject {
    let m = &obj["metadata"];
    StoredObject {
        namespace: st(&m["namespace"]).to_owned(),
        name: st(&m["name"]).to_owned(),
        uid: st(&m["uid"]).to_owned(),
        resource_version: rv,
        deleting: false,
        labels: BTreeMap::new(),
        raw: obj.to_string().into_boxed_str(),
    }
}

#[test]
fn table_rows_carry_partial_object_metadata() {
    let cm = info("", "configmaps");
    let mut m = meta("c", 10);
    m["labels"] = json!({"app": "x"});
    m["resourceVersion"] = json!("42");
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"k": "v"}});
    let r = row(&cm, &obj, &IncludeObject::default(), now());
    assert_eq!(
        r["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
    );
    let r = row(&cm, &obj, &IncludeObject::Object, now());
    assert_eq!(r["object"], obj);
    let r = row(&cm, &obj, &IncludeObject::None, now());
    assert_eq!(r["object"], Value::Null);
    assert!(r.as_object().unwrap().contains_key("object"));
}

#[test]
fn table_whole_body() {
    let pods = info("", "pods");
    let a = json!({"metadata": meta("a", 10), "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
    let b = json!({"metadata": meta("b", 20), "spec": {"containers": [{"name": "c"}]}});
    let objects = vec![stored(&a, 5), stored(&b, 6)];
    let t = table(
        &pods,
        &objects,
        "v1",
        "17",
        Some("tok"),
        &IncludeObject::Metadata,
        true,
        now(),
    );
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "17", "continue": "tok"})
    );
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 9);
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["cells"][0], "a");
    assert_eq!(rows[1]["cells"][2], "Pending");
    assert_eq!(rows[1]["object"]["metadata"]["name"], "b");
    for r in rows {
        assert_eq!(r["cells"].as_array().unwrap().len(), 9);
    }

    // A watch event after the first: no column definitions, v1beta1 partial metadata.
    let arcs = [std::sync::Arc::new(stored(&a, 5))];
    let t = table(
        &pods,
        arcs.iter().map(|a| &**a),
        "v1beta1",
        "5",
        None,
        &IncludeObject::Metadata,
        false,
        now(),
    );
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["columnDefinitions"], Value::Null);
    assert_eq!(t["metadata"], json!({"resourceVersion": "5"}));
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

    // An empty list.
    let t = table_of_values(
        &pods,
        &[],
        "v1",
        "",
        Some(""),
        &IncludeObject::None,
        true,
        now(),
    );
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["metadata"], json!({}));
}

#[test]
fn table_garbage_objects_never_panic() {
    let garbage = [
        json!(null),
        json!("text"),
        json!(42),
        json!([1, 2]),
        json!({}),
        json!({"metadata": 5, "spec": "x", "status": [1]}),
        json!({
            "metadata": {"name": 7, "creationTimestamp": "yesterday", "deletionTimestamp": 3,
                         "labels": [], "annotations": "a", "ownerReferences": {"x": 1}},
            "spec": {"containers": "no", "initContainers": [null, 1, {"restartPolicy": 5}],
                     "replicas": "three", "selector": {"matchLabels": [1], "matchExpressions": [{"operator": "In"}]},
                     "ports": [{"port": "eighty", "nodePort": -1}], "type": 5, "rules": [null],
                     "metrics": [{"type": "Resource"}, {"type": "External"}, {"type": "Object", "object": 1}, {"type": "Pods"}],
                     "capacity": {"storage": {}}, "accessModes": "RWO", "claimRef": "c",
                     "template": {"spec": {"containers": [1, {"name": []}]}}, "completions": "1",
                     "expirationSeconds": -5, "podSelector": "x", "tls": {}, "readinessGates": [1]},
            "status": {"phase": 1, "conditions": [null, {"type": 5}], "containerStatuses": [null, {"state": "x", "restartCount": "2"},
                       {"lastState": {"terminated": {"finishedAt": 12}}, "restartCount": 1e300}],
                       "initContainerStatuses": [{"state": {"terminated": {"exitCode": "x"}}}],
                       "podIPs": [null], "hard": {"cpu": [1]}, "used": 5, "loadBalancer": {"ingress": [1]},
                       "currentMetrics": "m", "active": 3, "startTime": "2025-13-45T00:00:00Z"},
            "subsets": [{"addresses": [1], "ports": [null]}], "endpoints": [{"addresses": [1, null]}],
            "ports": [null], "involvedObject": "o", "series": {"count": "many"}, "roleRef": 1, "subjects": [1],
            "data": [], "secrets": "s", "value": "v", "revision": {}
        }),
    ];
    let mut infos: Vec<ResourceInfo> = Catalog::builtin()
        .resources()
        .map(|r| (**r).clone())
        .collect();
    infos.push(custom(Vec::new()));
    infos.push(custom(vec![
        pc("A", "integer", ".spec.replicas", 0),
        pc("B", "date", ".status.startTime", 0),
        pc("C", "string", "[[[", 0),
        pc("D", "string", ".status.conditions[?(@.type==)].x", 0),
        pc("E", "number", ".spec.ports[*].port", 0),
        pc("F", "mystery", ".spec", 0),
    ]));
    for i in &infos {
        let n = columns(i).len();
        for g in &garbage {
            for include in [
                IncludeObject::None,
                IncludeObject::Metadata,
                IncludeObject::Object,
            ] {
                let r = row(i, g, &include, now());
                assert_eq!(
                    r["cells"].as_array().map(Vec::len),
                    Some(n),
                    "{} cells for {g}",
                    i.plural
                );
            }
        }
    }
}

#[test]
fn table_every_builtin_row_matches_its_columns() {
    let obj = json!({"metadata": meta("x", 1)});
    for i in Catalog::builtin().resources() {
        let cols = columns(i);
        assert!(!cols.is_empty(), "{}", i.plural);
        for c in &cols {
            for key in ["name", "type", "format", "description", "priority"] {
                assert!(c.get(key).is_some(), "{} column lacks {key}", i.plural);
            }
        }
        let name_cols: Vec<_> = cols.iter().filter(|c| c["format"] == "name").collect();
        assert_eq!(name_cols.len(), 1, "{}", i.plural);
        assert_eq!(cells(i, &obj).len(), cols.len(), "{}", i.plural);
    }
}
