//! The API status of a pod from its simulated runtime, as the kubelet generates it (kubernetes
//! `pkg/kubelet/kubelet_pods.go` `generateAPIPodStatus`, `getPhase`,
//! `convertToAPIContainerStatuses`; `pkg/kubelet/status/generate.go`; the status manager's
//! `updateLastTransitionTime` in `pkg/kubelet/status/status_manager.go`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::runtime::{Container, Exit, PodRuntime, RestartPolicy, State, go_duration};

/// Conditions the kubelet owns (`kubetypes.PodConditionsByKubelet` with
/// PodReadyToStartContainers); others (readiness gates', DisruptionTarget) are kept.
const KUBELET_CONDITIONS: [&str; 5] = [
    "PodScheduled",
    "Ready",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
];

/// Where the pod runs.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pub host_ip: Option<String>,
    /// `None` for a pod whose sandbox has no address yet.
    pub pod_ip: Option<String>,
}

fn time(t: Timestamp) -> Time {
    Time(t)
}

fn terminated(e: &Exit) -> ContainerStateTerminated {
    ContainerStateTerminated {
        exit_code: e.code,
        // containerd's reasons (`completeExitReason`, `errorExitReason`).
        reason: Some(if e.code == 0 { "Completed" } else { "Error" }.to_owned()),
        started_at: Some(time(e.started)),
        finished_at: Some(time(e.finished)),
        container_id: Some(format!("containerd://{}", e.id)),
        ..Default::default()
    }
}

/// `format.Pod`: `name_namespace(uid)`.
fn describe(pod: &Pod) -> String {
    let m = &pod.metadata;
    format!(
        "{}_{}({})",
        m.name.as_deref().unwrap_or_default(),
        m.namespace.as_deref().unwrap_or_default(),
        m.uid.as_deref().unwrap_or_default()
    )
}

fn container_status(pod: &Pod, c: &Container) -> ContainerStatus {
    let last = ContainerState {
        terminated: c.last.as_ref().map(terminated),
        ..Default::default()
    };
    let (state, ready, started, id) = match &c.state {
        State::Running { started } => (
            ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(time(*started)),
                }),
                ..Default::default()
            },
            // No readiness probe runs here: a started container is ready.
            !c.init || c.sidecar,
            true,
            c.id.clone(),
        ),
        State::Exited(e) => (
            ContainerState {
                terminated: Some(terminated(e)),
                ..Default::default()
            },
            // A completed init container counts as ready.
            c.init && !c.sidecar && e.code == 0,
            false,
            e.id.clone(),
        ),
        State::BackOff { delay, .. } => (
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("CrashLoopBackOff".to_owned()),
                    message: Some(format!(
                        "back-off {} restarting failed container={} pod={}",
                        go_duration(*delay),
                        c.name,
                        describe(pod)
                    )),
                }),
                ..Default::default()
            },
            false,
            false,
            c.last.as_ref().map(|e| e.id.clone()).unwrap_or_default(),
        ),
    };
    ContainerStatus {
        name: c.name.clone(),
        image: c.image.name.clone(),
        image_id: c.image.repo_digest.clone(),
        container_id: Some(format!("containerd://{id}")),
        started: Some(started),
        ready,
        restart_count: i32::try_from(c.attempt).unwrap_or(i32::MAX),
        state: Some(state),
        last_state: Some(last),
        ..Default::default()
    }
}

/// `getPhase` over the runtime's containers (without the ContainerRestartRules gate).
pub fn phase(rt: &PodRuntime, restart: RestartPolicy) -> &'static str {
    let (mut running, mut stopped, mut succeeded) = (0, 0, 0);
    for c in rt.containers.iter().filter(|c| !c.init || c.sidecar) {
        match &c.state {
            State::Running { .. } => running += 1,
            // Stopped sidecars do not count.
            State::Exited(_) if c.sidecar => {}
            State::Exited(e) => {
                stopped += 1;
                if e.code == 0 {
                    succeeded += 1;
                }
            }
            State::BackOff { .. } => stopped += 1,
        }
    }
    if running > 0 {
        return "Running";
    }
    if stopped == 0 {
        return "Pending";
    }
    if rt.terminal {
        return if stopped == succeeded {
            "Succeeded"
        } else {
            "Failed"
        };
    }
    match restart {
        RestartPolicy::Always => "Running",
        _ if stopped == succeeded => "Succeeded",
        RestartPolicy::Never => "Failed",
        RestartPolicy::OnFailure => "Running",
    }
}

fn condition(kind: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: kind.to_owned(),
        status: if ok { "True" } else { "False" }.to_owned(),
        reason: reason.map(str::to_owned),
        message,
        ..Default::default()
    }
}

/// Go's `%s` of a string slice: `[a b]`.
fn go_list(names: &[&str]) -> String {
    format!("[{}]", names.join(" "))
}

/// The kubelet's conditions, in its order: PodReadyToStartContainers, Initialized, Ready,
/// ContainersReady, PodScheduled; `kept` are the conditions it does not own (readiness gates
/// read them).
fn kubelet_conditions(
    pod: &Pod,
    statuses: &[ContainerStatus],
    init_statuses: &[ContainerStatus],
    phase: &str,
    sandbox: bool,
    kept: &[PodCondition],
) -> Vec<PodCondition> {
    let spec = pod.spec.as_ref();
    let terminal = phase == "Succeeded" || phase == "Failed";
    // GenerateContainersReadyCondition: regular containers and sidecars.
    let sidecars = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let regular = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut unready = Vec::new();
    for c in sidecars.chain(regular) {
        let status = statuses
            .iter()
            .chain(init_statuses)
            .find(|s| s.name == c.name);
        if status.is_some_and(|s| !s.ready) {
            unready.push(c.name.as_str());
        }
    }
    let containers_ready = match phase {
        "Succeeded" => condition("ContainersReady", false, Some("PodCompleted"), None),
        "Failed" => condition("ContainersReady", false, Some("PodFailed"), None),
        _ if !unready.is_empty() => condition(
            "ContainersReady",
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: {}",
                go_list(&unready)
            )),
        ),
        _ => condition("ContainersReady", true, None, None),
    };
    // GeneratePodReadyCondition: the containers, then the readiness gates.
    let ready = if containers_ready.status != "True" {
        PodCondition {
            type_: "Ready".to_owned(),
            ..containers_ready.clone()
        }
    } else {
        let gates = spec.and_then(|s| s.readiness_gates.as_ref());
        let messages: Vec<String> = gates
            .into_iter()
            .flatten()
            .filter_map(|g| {
                let kind = &g.condition_type;
                match kept.iter().find(|c| &c.type_ == kind) {
                    None => Some(format!(
                        "corresponding condition of pod readiness gate {kind:?} does not exist."
                    )),
                    Some(c) if c.status != "True" => Some(format!(
                        "the status of pod readiness gate {kind:?} is not \"True\", but {}",
                        c.status
                    )),
                    Some(_) => None,
                }
            })
            .collect();
        if messages.is_empty() {
            condition("Ready", true, None, None)
        } else {
            condition(
                "Ready",
                false,
                Some("ReadinessGatesNotReady"),
                Some(messages.join(", ")),
            )
        }
    };
    // GeneratePodInitializedCondition: init containers run to completion here, so only the
    // terminal phase's reason differs.
    let initialized = if phase == "Succeeded" {
        condition("Initialized", true, Some("PodCompleted"), None)
    } else {
        condition("Initialized", true, None, None)
    };
    vec![
        condition(
            "PodReadyToStartContainers",
            sandbox && !terminal,
            None,
            None,
        ),
        initialized,
        ready,
        containers_ready,
        condition("PodScheduled", true, None, None),
    ]
}

/// The status the kubelet writes for `pod` running as `rt`, at `now`. Conditions keep their
/// `lastTransitionTime` while their status stays; `startTime` is kept once set.
pub fn generate(
    pod: &Pod,
    rt: &PodRuntime,
    restart: RestartPolicy,
    placement: &Placement,
    qos: &str,
    now: Timestamp,
) -> PodStatus {
    let old_phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let (init, regular): (Vec<&Container>, Vec<&Container>) =
        rt.containers.iter().partition(|c| c.init);
    let statuses: Vec<ContainerStatus> = regular.iter().map(|c| container_status(pod, c)).collect();
    let init_statuses: Vec<ContainerStatus> =
        init.iter().map(|c| container_status(pod, c)).collect();
    let mut phase = phase(rt, restart);
    // Pods are not allowed to leave a terminal phase.
    if let Some(p @ ("Succeeded" | "Failed")) = old_phase {
        phase = if p == "Succeeded" {
            "Succeeded"
        } else {
            "Failed"
        };
    }
    let observed = Observed {
        statuses,
        init_statuses,
        phase,
        sandbox: !rt.terminal,
        started: rt.started,
    };
    assemble(pod, observed, placement, qos, now)
}

/// The status of a pod whose containers cannot be created yet (a volume it mounts is missing):
/// `Pending`, each container waiting `ContainerCreating` (`PodInitializing` when the pod has
/// init containers), as `convertToAPIContainerStatuses` reports containers the runtime does
/// not have.
pub fn creating(pod: &Pod, placement: &Placement, qos: &str, now: Timestamp) -> PodStatus {
    let spec = pod.spec.clone().unwrap_or_default();
    let init = spec.init_containers.unwrap_or_default();
    let reason = if init.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let waiting = |c: &k8s_openapi::api::core::v1::Container| ContainerStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        image_id: String::new(),
        started: Some(false),
        ready: false,
        restart_count: 0,
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.to_owned()),
                message: None,
            }),
            ..Default::default()
        }),
        last_state: Some(ContainerState::default()),
        ..Default::default()
    };
    let observed = Observed {
        statuses: spec.containers.iter().map(waiting).collect(),
        init_statuses: init.iter().map(waiting).collect(),
        phase: "Pending",
        sandbox: false,
        started: now,
    };
    let placement = Placement {
        host_ip: placement.host_ip.clone(),
        pod_ip: None,
    };
    assemble(pod, observed, &placement, qos, now)
}

/// What the kubelet saw of a pod's containers.
struct Observed {
    statuses: Vec<ContainerStatus>,
    init_statuses: Vec<ContainerStatus>,
    phase: &'static str,
    /// The sandbox is up (`PodReadyToStartContainers`).
    sandbox: bool,
    /// When the kubelet started the pod (`startTime`, kept once set).
    started: Timestamp,
}

/// The status from what the kubelet saw, the old status's conditions' transition times and
/// the conditions the kubelet does not own kept.
fn assemble(
    pod: &Pod,
    observed: Observed,
    placement: &Placement,
    qos: &str,
    now: Timestamp,
) -> PodStatus {
    let old = pod.status.clone().unwrap_or_default();
    let generation = pod.metadata.generation;
    let Observed {
        statuses,
        init_statuses,
        phase,
        sandbox,
        started,
    } = observed;
    let kept: Vec<PodCondition> = old
        .conditions
        .iter()
        .flatten()
        .filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    let mut conditions = kept.clone();
    for mut c in kubelet_conditions(pod, &statuses, &init_statuses, phase, sandbox, &kept) {
        let before = old
            .conditions
            .iter()
            .flatten()
            .find(|o| o.type_ == c.type_ && o.status == c.status);
        c.last_transition_time = Some(
            before
                .and_then(|o| o.last_transition_time.clone())
                .unwrap_or(time(now)),
        );
        c.observed_generation = generation;
        conditions.push(c);
    }
    let host_ip = placement.host_ip.clone().or(old.host_ip.clone());
    let pod_ip = placement.pod_ip.clone().or(old.pod_ip.clone());
    let same_phase = old.phase.as_deref() == Some(phase);
    PodStatus {
        phase: Some(phase.to_owned()),
        conditions: Some(conditions),
        host_ips: host_ip.clone().map(|ip| vec![HostIP { ip }]),
        host_ip,
        pod_ips: pod_ip.clone().map(|ip| vec![PodIP { ip }]),
        pod_ip,
        start_time: old.start_time.clone().or(Some(time(started))),
        qos_class: Some(qos.to_owned()),
        container_statuses: Some(statuses),
        init_container_statuses: (!init_statuses.is_empty()).then_some(init_statuses),
        // The reason and message belong to the phase they came with.
        reason: old.reason.filter(|_| same_phase),
        message: old.message.filter(|_| same_phase),
        observed_generation: generation,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container as SpecContainer, PodReadinessGate, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::image::resolve;
    use crate::runtime::{Behaviour, Settings, Spec};

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn api_pod(init: &[&str], containers: &[&str]) -> Pod {
        let c = |n: &&str| SpecContainer {
            name: (*n).into(),
            image: Some("nginx".into()),
            ..Default::default()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("u1".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                init_containers: (!init.is_empty()).then(|| init.iter().map(c).collect()),
                containers: containers.iter().map(c).collect(),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                conditions: Some(vec![PodCondition {
                    type_: "PodScheduled".into(),
                    status: "True".into(),
                    last_transition_time: Some(time(at(-5))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    fn runtime(pod: &Pod) -> PodRuntime {
        let spec = pod.spec.as_ref().unwrap();
        let specs: Vec<Spec> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| (c, true))
            .chain(spec.containers.iter().map(|c| (c, false)))
            .map(|(c, init)| Spec {
                name: c.name.clone(),
                image: resolve(c.image.as_deref().unwrap()),
                init,
                sidecar: false,
            })
            .collect();
        PodRuntime::start("u1", &specs, at(0))
    }

    fn placement() -> Placement {
        Placement {
            host_ip: Some("172.18.0.2".into()),
            pod_ip: Some("10.244.0.2".into()),
        }
    }

    #[test]
    fn a_started_pod_is_running_and_ready() {
        let pod = api_pod(&["setup"], &["web"]);
        let rt = runtime(&pod);
        let s = generate(
            &pod,
            &rt,
            RestartPolicy::Always,
            &placement(),
            "BestEffort",
            at(1),
        );
        assert_eq!(s.phase.as_deref(), Some("Running"));
        let conds: Vec<(&str, &str, Option<&str>)> = s
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()))
            .collect();
        assert_eq!(
            conds,
            [
                ("PodReadyToStartContainers", "True", None),
                ("Initialized", "True", None),
                ("Ready", "True", None),
                ("ContainersReady", "True", None),
                ("PodScheduled", "True", None),
            ]
        );
        let scheduled = &s.conditions.as_ref().unwrap()[4];
        assert_eq!(scheduled.last_transition_time, Some(time(at(-5))), "kept");
        let cs = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(cs.image, "docker.io/library/nginx:latest");
        assert!(cs.image_id.starts_with("docker.io/library/nginx@sha256:"));
        assert!(
            cs.container_id
                .as_ref()
                .unwrap()
                .starts_with("containerd://")
        );
        assert_eq!(
            (cs.ready, cs.started, cs.restart_count),
            (true, Some(true), 0)
        );
        let init = &s.init_container_statuses.as_ref().unwrap()[0];
        let t = init.state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(
            (t.exit_code, t.reason.as_deref(), init.ready),
            (0, Some("Completed"), true)
        );
        assert_eq!(s.pod_ip.as_deref(), Some("10.244.0.2"));
        assert_eq!(s.host_ips.as_ref().unwrap()[0].ip, "172.18.0.2");
        assert_eq!(s.start_time, Some(time(at(0))));
        assert_eq!(s.qos_class.as_deref(), Some("BestEffort"));
    }

    #[test]
    fn finished_pods_report_upstream_reasons() {
        let pod = api_pod(&[], &["job"]);
        let mut rt = runtime(&pod);
        let b = Behaviour {
            run_for: Some(std::time::Duration::from_secs(1)),
            exit_code: 0,
            restart: RestartPolicy::Never,
            stop_after: std::time::Duration::ZERO,
        };
        rt.advance(&b, &Settings::default(), at(1));
        let s = generate(
            &pod,
            &rt,
            RestartPolicy::Never,
            &placement(),
            "BestEffort",
            at(1),
        );
        assert_eq!(s.phase.as_deref(), Some("Succeeded"));
        let c = s.conditions.unwrap();
        assert_eq!(
            (c[0].type_.as_str(), c[0].status.as_str()),
            ("PodReadyToStartContainers", "False")
        );
        assert_eq!(c[1].reason.as_deref(), Some("PodCompleted"));
        assert_eq!(c[2].reason.as_deref(), Some("PodCompleted"));
        assert_eq!(c[3].reason.as_deref(), Some("PodCompleted"));
        let mut rt = runtime(&pod);
        rt.advance(
            &Behaviour { exit_code: 2, ..b },
            &Settings::default(),
            at(1),
        );
        let s = generate(
            &pod,
            &rt,
            RestartPolicy::Never,
            &placement(),
            "BestEffort",
            at(1),
        );
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(
            s.conditions.unwrap()[3].reason.as_deref(),
            Some("PodFailed")
        );
    }

    #[test]
    fn crash_loops_wait_with_the_last_exit() {
        let pod = api_pod(&[], &["app"]);
        let mut rt = runtime(&pod);
        let b = Behaviour {
            run_for: Some(std::time::Duration::from_secs(1)),
            exit_code: 1,
            restart: RestartPolicy::OnFailure,
            stop_after: std::time::Duration::ZERO,
        };
        rt.advance(&b, &Settings::default(), at(2));
        let s = generate(
            &pod,
            &rt,
            RestartPolicy::OnFailure,
            &placement(),
            "BestEffort",
            at(2),
        );
        assert_eq!(s.phase.as_deref(), Some("Running"));
        let cs = &s.container_statuses.as_ref().unwrap()[0];
        let w = cs.state.as_ref().unwrap().waiting.as_ref().unwrap();
        assert_eq!(w.reason.as_deref(), Some("CrashLoopBackOff"));
        assert_eq!(
            w.message.as_deref(),
            Some("back-off 10s restarting failed container=app pod=web_default(u1)")
        );
        assert_eq!(cs.restart_count, 1);
        let last = cs.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
        let ready = &s.conditions.as_ref().unwrap()[2];
        assert_eq!(ready.reason.as_deref(), Some("ContainersNotReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some("containers with unready status: [app]")
        );
    }

    #[test]
    fn readiness_gates_hold_ready_back() {
        let mut pod = api_pod(&[], &["web"]);
        pod.spec.as_mut().unwrap().readiness_gates = Some(vec![PodReadinessGate {
            condition_type: "example.com/lb".into(),
        }]);
        let rt = runtime(&pod);
        let s = generate(
            &pod,
            &rt,
            RestartPolicy::Always,
            &placement(),
            "BestEffort",
            at(1),
        );
        let ready = &s.conditions.as_ref().unwrap()[2];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("False", Some("ReadinessGatesNotReady"))
        );
        assert_eq!(
            ready.message.as_deref(),
            Some(
                "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."
            )
        );
    }
}
