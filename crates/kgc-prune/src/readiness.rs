//! Whether a live object is ready: kstatus's rules (`kubernetes-sigs/cli-utils
//! pkg/kstatus/status`: `status.go`'s statuses, `generic.go`'s checks common to every kind,
//! `core.go`'s rules per built-in kind), the rules `kubectl`'s and Flux's waits share, so that
//! `kgc apply --wait` calls ready what they call ready and says why not in their words.
//!
//! Three departures, where kstatus stops short: a Job is ready when complete, not when
//! started ([`job`]); a custom resource with a `Ready` condition (the
//! convention of Flux, Crossplane, cert-manager and most operators) is Current only when it is
//! `True`; and a Service that selects pods is Current only when it has a ready endpoint
//! ([`service_endpoints`]), for clusters whose endpoint controllers make EndpointSlices.
//!
//! Pure: the caller lists the objects and passes the time, so every rule is tested here.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::str_at;

/// kstatus's statuses (`status.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    /// Being reconciled: not ready yet.
    InProgress,
    /// Will not become ready without a change (a progress deadline, a crash loop, a failed
    /// Job, a `Stalled` condition).
    Failed,
    /// Ready.
    Current,
    /// Being deleted.
    Terminating,
    /// Not there.
    NotFound,
    /// Could not be judged (an unknown pod phase, a failed LIST).
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::InProgress => "InProgress",
            Status::Failed => "Failed",
            Status::Current => "Current",
            Status::Terminating => "Terminating",
            Status::NotFound => "NotFound",
            Status::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status and why, worded as kstatus words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub status: Status,
    pub message: String,
}

impl Readiness {
    fn new(status: Status, message: impl Into<String>) -> Self {
        Readiness {
            status,
            message: message.into(),
        }
    }

    fn in_progress(message: impl Into<String>) -> Self {
        Self::new(Status::InProgress, message)
    }

    fn current(message: impl Into<String>) -> Self {
        Self::new(Status::Current, message)
    }

    fn failed(message: impl Into<String>) -> Self {
        Self::new(Status::Failed, message)
    }
}

/// How long a pod may be unschedulable before it counts as Failed (kstatus's
/// `ScheduleWindow`): the scheduler retries, and a node may be on its way.
const SCHEDULE_WINDOW: SignedDuration = SignedDuration::from_secs(15);

/// The status of a live object at `now` (`status.go`'s `Compute`): the generic checks first,
/// then the kind's rules, then Current.
pub fn compute(obj: &Value, now: Timestamp) -> Readiness {
    if let Some(r) = generic(obj) {
        return r;
    }
    let group = str_at(obj, "/apiVersion")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    match (group, str_at(obj, "/kind")) {
        ("apps" | "extensions", "Deployment") => deployment(obj),
        ("apps" | "extensions", "ReplicaSet") => replica_set(obj),
        ("apps" | "extensions", "DaemonSet") => daemon_set(obj),
        ("apps", "StatefulSet") => stateful_set(obj),
        ("batch", "Job") => job(obj),
        ("", "Pod") => pod(obj, now),
        ("", "PersistentVolumeClaim") => pvc(obj),
        ("", "Service") => service(obj),
        ("policy", "PodDisruptionBudget") => {
            Readiness::current("AllowedDisruptions has been computed.")
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(obj),
        ("", "ConfigMap" | "Secret") | ("batch", "CronJob") => {
            Readiness::current("Resource is always ready")
        }
        (g, _) if is_custom(g) => custom(obj),
        _ => Readiness::current("Resource is current"),
    }
}

/// Whether a group is one of a custom resource (not a built-in API group).
fn is_custom(group: &str) -> bool {
    !group.is_empty() && !group.ends_with(".k8s.io") && group.contains('.')
}

/// A condition of `status.conditions` by type.
fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| str_at(c, "/type") == kind)
}

fn conditions(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn int(obj: &Value, pointer: &str, default: i64) -> i64 {
    obj.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn kind(obj: &Value) -> &str {
    str_at(obj, "/kind")
}

/// `generic.go`: deletion, an unobserved generation, and the standard `Reconciling` and
/// `Stalled` conditions decide before any kind's rules.
fn generic(obj: &Value) -> Option<Readiness> {
    if !str_at(obj, "/metadata/deletionTimestamp").is_empty() {
        return Some(Readiness::new(
            Status::Terminating,
            "Resource scheduled for deletion",
        ));
    }
    if let (Some(generation), Some(observed)) = (
        obj.pointer("/metadata/generation").and_then(Value::as_i64),
        obj.pointer("/status/observedGeneration")
            .and_then(Value::as_i64),
    ) && generation != observed
    {
        return Some(Readiness::in_progress(format!(
            "{} generation is {generation}, but latest observed generation is {observed}",
            kind(obj)
        )));
    }
    for c in conditions(obj) {
        if str_at(c, "/status") != "True" {
            continue;
        }
        match str_at(c, "/type") {
            "Reconciling" => return Some(Readiness::in_progress(str_at(c, "/message"))),
            "Stalled" => return Some(Readiness::failed(str_at(c, "/message"))),
            _ => {}
        }
    }
    None
}

/// `core.go` `deploymentConditions`: rolled out (every replica updated, available and ready)
/// and the controller says so; Failed past `progressDeadlineSeconds`.
fn deployment(obj: &Value) -> Readiness {
    // Without a deadline the controller sets no Progressing condition.
    let mut progressing = obj.pointer("/spec/progressDeadlineSeconds").is_none()
        || int(obj, "/spec/progressDeadlineSeconds", 0) == i64::from(i32::MAX);
    let mut available = false;
    for c in conditions(obj) {
        let status = str_at(c, "/status");
        match str_at(c, "/type") {
            "Progressing" if str_at(c, "/reason") == "ProgressDeadlineExceeded" => {
                return Readiness::failed(with_detail(
                    "Progress deadline exceeded",
                    str_at(c, "/message"),
                ));
            }
            "Progressing"
                if status == "True" && str_at(c, "/reason") == "NewReplicaSetAvailable" =>
            {
                progressing = true;
            }
            "Available" if status == "True" => available = true,
            _ => {}
        }
    }
    let spec = int(obj, "/spec/replicas", 1);
    let replicas = int(obj, "/status/replicas", 0);
    let updated = int(obj, "/status/updatedReplicas", 0);
    let ready = int(obj, "/status/readyReplicas", 0);
    let avail = int(obj, "/status/availableReplicas", 0);
    if spec > replicas {
        return Readiness::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > updated {
        return Readiness::in_progress(format!("Updated: {updated}/{spec}"));
    }
    if replicas > spec {
        return Readiness::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if updated > avail {
        return Readiness::in_progress(format!("Available: {avail}/{updated}"));
    }
    if spec > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if !progressing {
        return Readiness::in_progress("ReplicaSet not Available");
    }
    if !available {
        return Readiness::in_progress("Deployment not Available");
    }
    Readiness::current(format!("Deployment is available. Replicas: {replicas}"))
}

/// kstatus's message, and the condition's own words after it when there are any.
fn with_detail(message: &str, detail: &str) -> String {
    if detail.is_empty() {
        message.to_owned()
    } else {
        format!("{message}: {detail}")
    }
}

/// `core.go` `replicasetConditions`.
fn replica_set(obj: &Value) -> Readiness {
    if conditions(obj)
        .any(|c| str_at(c, "/type") == "ReplicaFailure" && str_at(c, "/status") == "True")
    {
        return Readiness::in_progress("Replica Failure condition. Check Pods");
    }
    let spec = int(obj, "/spec/replicas", 1);
    let replicas = int(obj, "/status/replicas", 0);
    let ready = int(obj, "/status/readyReplicas", 0);
    let avail = int(obj, "/status/availableReplicas", 0);
    let labelled = int(obj, "/status/fullyLabeledReplicas", 0);
    if spec > labelled {
        return Readiness::in_progress(format!("Labelled: {labelled}/{spec}"));
    }
    if spec > avail {
        return Readiness::in_progress(format!("Available: {avail}/{spec}"));
    }
    if spec > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if replicas > spec {
        return Readiness::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    Readiness::current(format!("ReplicaSet is available. Replicas: {replicas}"))
}

/// `core.go` `stsConditions`: the controller sets no conditions, so only counts and revisions
/// tell; an `OnDelete` set is rolled by people, not waited for.
fn stateful_set(obj: &Value) -> Readiness {
    if str_at(obj, "/spec/updateStrategy/type") == "OnDelete" {
        return Readiness::current("StatefulSet is using the ondelete update strategy");
    }
    let spec = int(obj, "/spec/replicas", 1);
    let ready = int(obj, "/status/readyReplicas", 0);
    let current = int(obj, "/status/currentReplicas", 0);
    let updated = int(obj, "/status/updatedReplicas", 0);
    let replicas = int(obj, "/status/replicas", 0);
    let partition = int(obj, "/spec/updateStrategy/rollingUpdate/partition", -1);
    if spec > replicas {
        return Readiness::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if replicas > spec {
        return Readiness::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if partition != -1 {
        if updated < spec - partition {
            return Readiness::in_progress(format!("updated: {updated}/{}", spec - partition));
        }
        return Readiness::current(format!("Partition rollout complete. updated: {updated}"));
    }
    if spec > current {
        return Readiness::in_progress(format!("current: {current}/{spec}"));
    }
    if str_at(obj, "/status/currentRevision") != str_at(obj, "/status/updateRevision") {
        return Readiness::in_progress("Waiting for updated revision to match current");
    }
    Readiness::current(format!(
        "All replicas scheduled as expected. Replicas: {replicas}"
    ))
}

/// `core.go` `daemonsetConditions`: the controller always sets the generations, so their
/// absence means it has not acted yet.
fn daemon_set(obj: &Value) -> Readiness {
    for (pointer, field) in [
        ("/metadata/generation", "metadata.generation"),
        ("/status/observedGeneration", "status.observedGeneration"),
    ] {
        if obj.pointer(pointer).and_then(Value::as_i64).is_none() {
            return Readiness::in_progress(format!("{} {field} not found", kind(obj)));
        }
    }
    let desired = int(obj, "/status/desiredNumberScheduled", -1);
    if desired == -1 {
        return Readiness::in_progress("Missing .status.desiredNumberScheduled");
    }
    let current = int(obj, "/status/currentNumberScheduled", 0);
    let updated = int(obj, "/status/updatedNumberScheduled", 0);
    let avail = int(obj, "/status/numberAvailable", 0);
    let ready = int(obj, "/status/numberReady", 0);
    if desired > current {
        return Readiness::in_progress(format!("Current: {current}/{desired}"));
    }
    if desired > updated {
        return Readiness::in_progress(format!("Updated: {updated}/{desired}"));
    }
    if desired > avail {
        return Readiness::in_progress(format!("Available: {avail}/{desired}"));
    }
    if desired > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{desired}"));
    }
    Readiness::current(format!(
        "All replicas scheduled as expected. Replicas: {desired}"
    ))
}

/// `core.go` `jobConditions`, waited for until it ends: kstatus calls a started Job Current,
/// but a Job is applied to be done (a migration before the rollout that needs it), so kgc
/// waits for `Complete`, as `kubectl wait --for=condition=complete` and Helm's
/// `--wait-for-jobs` do. Failed when the controller gave up; a suspended Job is not waited for.
fn job(obj: &Value) -> Readiness {
    let parallelism = int(obj, "/spec/parallelism", 1);
    let completions = int(obj, "/spec/completions", parallelism);
    let succeeded = int(obj, "/status/succeeded", 0);
    let active = int(obj, "/status/active", 0);
    let failed = int(obj, "/status/failed", 0);
    for c in conditions(obj) {
        if str_at(c, "/status") != "True" {
            continue;
        }
        match str_at(c, "/type") {
            "Complete" => {
                return Readiness::current(format!(
                    "Job Completed. succeeded: {succeeded}/{completions}"
                ));
            }
            "Failed" => {
                return Readiness::failed(with_detail(
                    &format!("Job Failed. failed: {failed}/{completions}"),
                    str_at(c, "/message"),
                ));
            }
            "Suspended" => return Readiness::current("Job is suspended"),
            _ => {}
        }
    }
    if str_at(obj, "/status/startTime").is_empty() {
        return Readiness::in_progress("Job not started");
    }
    Readiness::in_progress(format!(
        "Job in progress. success:{succeeded}, active: {active}, failed: {failed}"
    ))
}

/// `core.go` `podConditions`: Running and Ready, or finished; Failed when crash-looping or
/// unschedulable for longer than [`SCHEDULE_WINDOW`].
fn pod(obj: &Value, now: Timestamp) -> Readiness {
    match str_at(obj, "/status/phase") {
        "Succeeded" => Readiness::current("Pod has completed successfully"),
        "Failed" => Readiness::current("Pod has completed, but not successfully"),
        "Running" => {
            if condition(obj, "Ready").is_some_and(|c| str_at(c, "/status") == "True") {
                return Readiness::current("Pod is Ready");
            }
            let looping: Vec<&str> = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|cs| str_at(cs, "/state/waiting/reason") == "CrashLoopBackOff")
                .map(|cs| str_at(cs, "/name"))
                .collect();
            if !looping.is_empty() {
                return Readiness::failed(format!(
                    "Containers in CrashLoop state: {}",
                    looping.join(",")
                ));
            }
            Readiness::in_progress("Pod is running but is not Ready")
        }
        "Pending" => {
            let unschedulable = condition(obj, "PodScheduled").filter(|c| {
                str_at(c, "/status") == "False" && str_at(c, "/reason") == "Unschedulable"
            });
            let Some(c) = unschedulable else {
                return Readiness::in_progress("Pod is in the Pending phase");
            };
            let created = str_at(obj, "/metadata/creationTimestamp")
                .parse::<Timestamp>()
                .unwrap_or(now);
            if now.duration_since(created) < SCHEDULE_WINDOW {
                return Readiness::in_progress("Pod has not been scheduled");
            }
            Readiness::failed(with_detail(
                "Pod could not be scheduled",
                str_at(c, "/message"),
            ))
        }
        "" => Readiness::in_progress("Pod phase not available"),
        other => Readiness::new(Status::Unknown, format!("unknown phase {other}")),
    }
}

/// `core.go` `pvcConditions`.
fn pvc(obj: &Value) -> Readiness {
    match str_at(obj, "/status/phase") {
        "Bound" => Readiness::current("PVC is Bound"),
        "" => Readiness::in_progress("PVC is not Bound. phase: unknown"),
        phase => Readiness::in_progress(format!("PVC is not Bound. phase: {phase}")),
    }
}

/// `core.go` `serviceConditions`: only a LoadBalancer waits, for its cluster IP. Endpoints are
/// [`service_endpoints`]'s.
fn service(obj: &Value) -> Readiness {
    if str_at(obj, "/spec/type") == "LoadBalancer" && str_at(obj, "/spec/clusterIP").is_empty() {
        return Readiness::in_progress("ClusterIP not set. Service type: LoadBalancer");
    }
    Readiness::current("Service is ready")
}

/// Whether a Service's endpoints are waited for: it selects pods (a Service without a
/// selector has its endpoints written by someone else; an ExternalName has none).
pub fn selects_pods(service: &Value) -> bool {
    str_at(service, "/spec/type") != "ExternalName"
        && service
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .is_some_and(|s| !s.is_empty())
}

/// The label an EndpointSlice names its Service by (`discovery.k8s.io/v1`).
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";

/// A Service that selects pods, by its EndpointSlices: Current with one ready endpoint (an
/// endpoint whose `conditions.ready` is absent counts as ready, as the API documents).
pub fn service_endpoints(slices: &[&Value]) -> Readiness {
    let ready = slices
        .iter()
        .filter_map(|s| s.get("endpoints").and_then(Value::as_array))
        .flatten()
        .filter(|e| {
            e.pointer("/conditions/ready")
                .and_then(Value::as_bool)
                .unwrap_or(true)
        })
        .count();
    if ready == 0 {
        Readiness::in_progress("Service has no ready endpoints")
    } else {
        Readiness::current(format!("Service is ready. Ready endpoints: {ready}"))
    }
}

/// `core.go` `crdConditions`.
fn crd(obj: &Value) -> Readiness {
    for c in conditions(obj) {
        let (status, reason, message) = (
            str_at(c, "/status"),
            str_at(c, "/reason"),
            str_at(c, "/message"),
        );
        match str_at(c, "/type") {
            "NamesAccepted" if status == "False" => {
                return Readiness::failed(with_detail(reason, message));
            }
            "Established" if status == "False" && reason != "Installing" => {
                return Readiness::failed(with_detail(reason, message));
            }
            "Established" if status == "True" => return Readiness::current("CRD is established"),
            _ => {}
        }
    }
    Readiness::in_progress("Install in progress")
}

/// A custom resource past the generic checks: by its `Ready` condition when it has one (kgc's
/// addition; kstatus calls it Current), else Current.
fn custom(obj: &Value) -> Readiness {
    match condition(obj, "Ready") {
        Some(c) if str_at(c, "/status") == "True" => {
            Readiness::current(with_detail("Resource is Ready", str_at(c, "/message")))
        }
        Some(c) => {
            let reason = str_at(c, "/reason");
            let message = str_at(c, "/message");
            Readiness::in_progress(match (reason, message) {
                ("", "") => "Resource is not Ready".to_owned(),
                ("", m) | (m, "") => m.to_owned(),
                (r, m) => format!("{r}: {m}"),
            })
        }
        None => Readiness::current("Resource is current"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-12-02T01:00:00Z".parse().unwrap()
    }

    fn at(obj: Value) -> Readiness {
        compute(&obj, now())
    }

    fn status_of(obj: Value) -> (Status, String) {
        let r = at(obj);
        (r.status, r.message)
    }

    fn deploy(status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 2},
            "spec": {"replicas": 3, "progressDeadlineSeconds": 600},
            "status": status,
        })
    }

    #[test]
    fn deployments_roll_out_replica_by_replica() {
        let rolled = json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
            "readyReplicas": 3, "availableReplicas": 3,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "ReplicaSet \"web-5d8\" has successfully progressed."},
            ],
        });
        assert_eq!(
            status_of(deploy(rolled.clone())),
            (
                Status::Current,
                "Deployment is available. Replicas: 3".into()
            )
        );
        let mut stale = rolled.clone();
        stale["observedGeneration"] = json!(1);
        assert_eq!(
            status_of(deploy(stale)),
            (
                Status::InProgress,
                "Deployment generation is 2, but latest observed generation is 1".into()
            )
        );
        let cases = [
            (json!({"replicas": 2}), "Replicas: 2/3"),
            (json!({"replicas": 3, "updatedReplicas": 1}), "Updated: 1/3"),
            (
                json!({"replicas": 4, "updatedReplicas": 3}),
                "Pending termination: 1",
            ),
            (
                json!({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 2}),
                "Available: 2/3",
            ),
            (
                json!({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 2}),
                "Ready: 2/3",
            ),
            (
                json!({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 3,
                       "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}]}),
                "ReplicaSet not Available",
            ),
            (
                json!({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 3,
                       "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}),
                "Deployment not Available",
            ),
        ];
        for (status, message) in cases {
            assert_eq!(
                status_of(deploy(status)),
                (Status::InProgress, message.into())
            );
        }
        let stuck = json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
            "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                            "message": "ReplicaSet \"web-5d8\" has timed out progressing."}],
        });
        assert_eq!(
            status_of(deploy(stuck)),
            (
                Status::Failed,
                "Progress deadline exceeded: ReplicaSet \"web-5d8\" has timed out progressing."
                    .into()
            )
        );
        // Without a deadline the controller never says NewReplicaSetAvailable.
        let mut no_deadline = deploy(json!({
            "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 3,
            "conditions": [{"type": "Available", "status": "True"}],
        }));
        no_deadline["spec"]
            .as_object_mut()
            .unwrap()
            .remove("progressDeadlineSeconds");
        assert_eq!(at(no_deadline).status, Status::Current);
    }

    #[test]
    fn replica_sets_count_labelled_available_and_ready_pods() {
        let rs = |status: Value| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"replicas": 2}, "status": status});
        assert_eq!(
            status_of(rs(
                json!({"replicas": 2, "fullyLabeledReplicas": 2, "availableReplicas": 2, "readyReplicas": 2})
            )),
            (
                Status::Current,
                "ReplicaSet is available. Replicas: 2".into()
            )
        );
        assert_eq!(
            at(rs(json!({"replicas": 2, "fullyLabeledReplicas": 1}))).message,
            "Labelled: 1/2"
        );
        assert_eq!(
            at(rs(
                json!({"replicas": 2, "fullyLabeledReplicas": 2, "availableReplicas": 1})
            ))
            .message,
            "Available: 1/2"
        );
        let quota = json!({"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"}]});
        assert_eq!(
            status_of(rs(quota)),
            (
                Status::InProgress,
                "Replica Failure condition. Check Pods".into()
            )
        );
    }

    #[test]
    fn stateful_sets_by_counts_revisions_and_partition() {
        let sts = |spec: Value, status: Value| {
            let mut spec = spec;
            spec["replicas"] = json!(3);
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": spec, "status": status})
        };
        let done = json!({"replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3,
                          "currentRevision": "db-7f", "updateRevision": "db-7f"});
        assert_eq!(
            status_of(sts(json!({}), done.clone())),
            (
                Status::Current,
                "All replicas scheduled as expected. Replicas: 3".into()
            )
        );
        let mut rolling = done.clone();
        rolling["updateRevision"] = json!("db-8a");
        assert_eq!(
            at(sts(json!({}), rolling.clone())).message,
            "Waiting for updated revision to match current"
        );
        assert_eq!(
            at(sts(json!({}), json!({"replicas": 3, "readyReplicas": 1}))).message,
            "Ready: 1/3"
        );
        let mut partial = rolling.clone();
        partial["updatedReplicas"] = json!(1);
        let partition =
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}});
        assert_eq!(
            status_of(sts(partition.clone(), partial)),
            (Status::InProgress, "updated: 1/2".into())
        );
        let mut two = rolling.clone();
        two["updatedReplicas"] = json!(2);
        assert_eq!(
            status_of(sts(partition, two)),
            (
                Status::Current,
                "Partition rollout complete. updated: 2".into()
            )
        );
        assert_eq!(
            at(sts(
                json!({"updateStrategy": {"type": "OnDelete"}}),
                json!({})
            ))
            .status,
            Status::Current
        );
    }

    #[test]
    fn daemon_sets_need_an_observed_generation_and_every_node() {
        let ds = |status: Value| json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1}, "status": status});
        assert_eq!(
            at(ds(json!({}))).message,
            "DaemonSet status.observedGeneration not found"
        );
        assert_eq!(
            at(ds(json!({"observedGeneration": 1}))).message,
            "Missing .status.desiredNumberScheduled"
        );
        let full = json!({"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                          "updatedNumberScheduled": 2, "numberAvailable": 2, "numberReady": 2});
        assert_eq!(at(ds(full.clone())).status, Status::Current);
        let mut one = full;
        one["numberAvailable"] = json!(1);
        assert_eq!(
            status_of(ds(one)),
            (Status::InProgress, "Available: 1/2".into())
        );
    }

    #[test]
    fn jobs_are_waited_for_until_complete_and_fail_when_the_controller_gives_up() {
        let job = |status: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"completions": 2}, "status": status});
        assert_eq!(
            status_of(job(json!({}))),
            (Status::InProgress, "Job not started".into())
        );
        assert_eq!(
            status_of(job(
                json!({"startTime": "2026-12-02T00:59:00Z", "active": 1})
            )),
            (
                Status::InProgress,
                "Job in progress. success:0, active: 1, failed: 0".into()
            )
        );
        let complete = json!({"startTime": "x", "succeeded": 2,
                              "conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(
            status_of(job(complete)),
            (Status::Current, "Job Completed. succeeded: 2/2".into())
        );
        let failed = json!({"startTime": "x", "failed": 7, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]});
        assert_eq!(
            status_of(job(failed)),
            (
                Status::Failed,
                "Job Failed. failed: 7/2: Job has reached the specified backoff limit".into()
            )
        );
    }

    #[test]
    fn pods_by_phase_readiness_crash_loops_and_scheduling() {
        let pod = |created: &str, status: Value| {
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "creationTimestamp": created}, "status": status})
        };
        let old = "2026-12-02T00:50:00Z";
        assert_eq!(
            at(pod(
                old,
                json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
            ))
            .status,
            Status::Current
        );
        assert_eq!(
            at(pod(old, json!({"phase": "Succeeded"}))).message,
            "Pod has completed successfully"
        );
        assert_eq!(
            at(pod(old, json!({"phase": "Running"}))).message,
            "Pod is running but is not Ready"
        );
        let looping = json!({"phase": "Running", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            {"name": "side", "state": {"running": {}}}]});
        assert_eq!(
            status_of(pod(old, looping)),
            (Status::Failed, "Containers in CrashLoop state: app".into())
        );
        let unschedulable = json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}]});
        assert_eq!(
            status_of(pod("2026-12-02T00:59:50Z", unschedulable.clone())),
            (Status::InProgress, "Pod has not been scheduled".into())
        );
        assert_eq!(
            status_of(pod(old, unschedulable)),
            (
                Status::Failed,
                "Pod could not be scheduled: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
                    .into()
            )
        );
        assert_eq!(at(pod(old, json!({}))).message, "Pod phase not available");
        assert_eq!(
            at(pod(old, json!({"phase": "Weird"}))).status,
            Status::Unknown
        );
    }

    #[test]
    fn claims_services_and_budgets() {
        let pvc = |phase: &str| json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": phase}});
        assert_eq!(
            status_of(pvc("Pending")),
            (
                Status::InProgress,
                "PVC is not Bound. phase: Pending".into()
            )
        );
        assert_eq!(at(pvc("Bound")).status, Status::Current);
        let lb = json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}});
        assert_eq!(
            at(lb).message,
            "ClusterIP not set. Service type: LoadBalancer"
        );
        let svc = json!({"apiVersion": "v1", "kind": "Service",
                         "spec": {"clusterIP": "10.0.0.1", "selector": {"app": "web"}}});
        assert_eq!(at(svc.clone()).status, Status::Current);
        assert!(selects_pods(&svc));
        assert!(!selects_pods(
            &json!({"spec": {"type": "ExternalName", "selector": {"a": "b"}}})
        ));
        assert!(!selects_pods(&json!({"spec": {}})));
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"generation": 1}, "status": {"observedGeneration": 1}});
        assert_eq!(at(pdb).status, Status::Current);
    }

    #[test]
    fn services_that_select_pods_need_a_ready_endpoint() {
        let slice = |ready: Option<bool>| {
            let conditions = ready.map_or(json!({}), |r| json!({"ready": r}));
            json!({"endpoints": [{"addresses": ["10.1.0.4"], "conditions": conditions}]})
        };
        assert_eq!(service_endpoints(&[]).status, Status::InProgress);
        let empty = json!({"endpoints": null});
        let not_ready = slice(Some(false));
        assert_eq!(
            service_endpoints(&[&empty, &not_ready]).message,
            "Service has no ready endpoints"
        );
        let unknown = slice(None);
        assert_eq!(
            service_endpoints(&[&not_ready, &unknown]),
            Readiness::current("Service is ready. Ready endpoints: 1")
        );
    }

    #[test]
    fn crds_are_current_when_established() {
        let crd = |conditions: Value| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "status": {"conditions": conditions}})
        };
        assert_eq!(
            at(crd(json!([{"type": "Established", "status": "True"}]))).status,
            Status::Current
        );
        assert_eq!(
            at(crd(
                json!([{"type": "Established", "status": "False", "reason": "Installing"}])
            ))
            .message,
            "Install in progress"
        );
        assert_eq!(
            status_of(crd(json!([{"type": "NamesAccepted", "status": "False",
                "reason": "MultipleNamesNotAllowed", "message": "\"w\" is already in use"}]))),
            (
                Status::Failed,
                "MultipleNamesNotAllowed: \"w\" is already in use".into()
            )
        );
    }

    #[test]
    fn custom_resources_by_ready_reconciling_stalled_and_generation() {
        let cr = |generation: i64, status: Value| {
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w", "generation": generation}, "status": status})
        };
        assert_eq!(
            status_of(cr(1, json!({}))),
            (Status::Current, "Resource is current".into())
        );
        let ready = json!({"observedGeneration": 1, "conditions": [
            {"type": "Ready", "status": "True", "reason": "Succeeded", "message": "all good"}]});
        assert_eq!(
            status_of(cr(1, ready.clone())),
            (Status::Current, "Resource is Ready: all good".into())
        );
        assert_eq!(
            at(cr(2, ready)).message,
            "Widget generation is 2, but latest observed generation is 1"
        );
        let waiting = json!({"conditions": [
            {"type": "Ready", "status": "False", "reason": "DependencyNotReady", "message": "waiting for the database"}]});
        assert_eq!(
            status_of(cr(1, waiting)),
            (
                Status::InProgress,
                "DependencyNotReady: waiting for the database".into()
            )
        );
        let stalled = json!({"conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "Stalled", "status": "True", "message": "invalid spec.size"}]});
        assert_eq!(
            status_of(cr(1, stalled)),
            (Status::Failed, "invalid spec.size".into())
        );
        let reconciling = json!({"conditions": [{"type": "Reconciling", "status": "True", "message": "scaling"}]});
        assert_eq!(
            status_of(cr(1, reconciling)),
            (Status::InProgress, "scaling".into())
        );
        // A built-in kind's Ready condition is not read as a custom resource's.
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"}});
        assert_eq!(at(ns).status, Status::Current);
        let gone = json!({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"deletionTimestamp": "2026-12-02T00:00:00Z"}});
        assert_eq!(
            status_of(gone),
            (
                Status::Terminating,
                "Resource scheduled for deletion".into()
            )
        );
        assert_eq!(
            at(json!({"apiVersion": "v1", "kind": "ConfigMap"})).message,
            "Resource is always ready"
        );
    }
}
