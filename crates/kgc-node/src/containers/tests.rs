//! Ported from kubernetes/kubernetes `pkg/kubelet/kuberuntime/kuberuntime_gc_test.go`
//! (`TestContainerGC`, `TestSandboxGC`, `TestPodLogDirectoryGC`,
//! `TestUnknowStateContainerGC`). Results are the indexes of surviving objects, as upstream.

use super::*;
use crate::hash::FxHashSet as HashSet;

fn ns(n: i64) -> Timestamp {
    Timestamp::from_nanosecond(i128::from(n)).expect("valid")
}

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).expect("valid")
}

/// `makeGCContainer(podName, containerName, attempt, createdAt, state)`; the pod uid is the
/// pod name, as in upstream's helper.
fn ctr(
    pod: &str,
    name: &str,
    attempt: u32,
    created: Timestamp,
    state: ContainerState,
) -> Container {
    Container {
        id: format!("{pod}-{name}-{attempt}"),
        sandbox_id: format!("sandbox-{pod}"),
        name: name.to_string(),
        attempt,
        pod_uid: Some(pod.to_string()),
        image_id: "image".to_string(),
        state,
        created_at: created,
        finished_at: None,
    }
}

fn exited(pod: &str, name: &str, attempt: u32, created_ns: i64) -> Container {
    ctr(pod, name, attempt, ns(created_ns), ContainerState::Exited)
}

fn pod(uid: &str) -> Pod {
    Pod {
        uid: uid.to_string(),
        ..Pod::default()
    }
}

fn default_policy() -> ContainerGcPolicy {
    ContainerGcPolicy {
        min_age: Duration::from_secs(3600),
        max_per_pod_container: 2,
        max_containers: 6,
    }
}

fn survivors(containers: &[Container], removed: &[ContainerRemoval]) -> Vec<usize> {
    let gone: HashSet<&str> = removed.iter().map(|r| r.id).collect();
    (0..containers.len())
        .filter(|i| !gone.contains(containers[*i].id.as_str()))
        .collect()
}

struct Case {
    description: &'static str,
    containers: Vec<Container>,
    policy: ContainerGcPolicy,
    /// Pods the kubelet knows as existing; others are deleted. `None`: sources not ready.
    pods: Option<Vec<Pod>>,
    evict_non_deleted_pods: bool,
    remain: Vec<usize>,
}

fn existing(uids: &[&str]) -> Option<Vec<Pod>> {
    Some(uids.iter().map(|u| pod(u)).collect())
}

#[test]
fn container_gc() {
    let all_foo = existing(&[
        "foo", "foo1", "foo2", "foo3", "foo4", "foo5", "foo6", "foo7", "running",
    ]);
    let cases = vec![
        Case {
            description: "all containers should be removed when max container limit is 0",
            containers: vec![exited("foo", "bar", 0, 0)],
            policy: ContainerGcPolicy {
                min_age: Duration::from_secs(60),
                max_per_pod_container: 1,
                max_containers: 0,
            },
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![],
        },
        Case {
            description: "max containers should be complied when no max per pod container limit is set",
            containers: (0..5)
                .map(|i| exited("foo", "bar", 4 - i, i64::from(4 - i)))
                .collect(),
            policy: ContainerGcPolicy {
                min_age: Duration::from_secs(60),
                max_per_pod_container: -1,
                max_containers: 4,
            },
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 2, 3],
        },
        Case {
            description: "no containers should be removed if both max container and per pod container limits are not set",
            containers: (0..3)
                .map(|i| exited("foo", "bar", 2 - i, i64::from(2 - i)))
                .collect(),
            policy: ContainerGcPolicy {
                min_age: Duration::from_secs(60),
                max_per_pod_container: -1,
                max_containers: -1,
            },
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 2],
        },
        Case {
            description: "recently started containers should not be removed",
            containers: (0..3)
                .map(|i| ctr("foo", "bar", 2 - i, now(), ContainerState::Exited))
                .collect(),
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 2],
        },
        Case {
            description: "oldest containers should be removed when per pod container limit exceeded",
            containers: (0..3)
                .map(|i| exited("foo", "bar", 2 - i, i64::from(2 - i)))
                .collect(),
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1],
        },
        Case {
            description: "running containers should not be removed",
            containers: vec![
                exited("foo", "bar", 2, 2),
                exited("foo", "bar", 1, 1),
                ctr("foo", "bar", 0, ns(0), ContainerState::Running),
            ],
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 2],
        },
        Case {
            description: "no containers should be removed when limits are not exceeded",
            containers: vec![exited("foo", "bar", 1, 1), exited("foo", "bar", 0, 0)],
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1],
        },
        Case {
            description: "max container count should apply per (UID, container) pair",
            containers: ["foo", "foo1", "foo2"]
                .iter()
                .flat_map(|p| (0..3).map(move |i| exited(p, "bar", 2 - i, i64::from(2 - i))))
                .collect(),
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 3, 4, 6, 7],
        },
        Case {
            description: "max limit should apply and try to keep from every pod",
            containers: ["foo", "foo1", "foo2", "foo3", "foo4"]
                .iter()
                .flat_map(|p| (0..2).map(move |i| exited(p, "bar", 1 - i, i64::from(1 - i))))
                .collect(),
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 2, 4, 6, 8],
        },
        Case {
            description: "oldest pods should be removed if limit exceeded",
            containers: vec![
                exited("foo", "bar", 2, 2),
                exited("foo", "bar", 1, 1),
                exited("foo1", "bar", 2, 2),
                exited("foo1", "bar", 1, 1),
                exited("foo2", "bar", 1, 1),
                exited("foo3", "bar", 0, 0),
                exited("foo4", "bar", 1, 1),
                exited("foo5", "bar", 0, 0),
                exited("foo6", "bar", 2, 2),
                exited("foo7", "bar", 1, 1),
            ],
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 2, 4, 6, 8, 9],
        },
        Case {
            description: "all non-running containers should be removed when evictTerminatingPods is set",
            containers: vec![
                exited("foo", "bar", 2, 2),
                exited("foo", "bar", 1, 1),
                exited("foo1", "bar", 2, 2),
                exited("foo1", "bar", 1, 1),
                exited("running", "bar2", 1, 1),
                ctr("foo3", "bar3", 0, ns(0), ContainerState::Running),
            ],
            policy: default_policy(),
            pods: Some(vec![
                Pod {
                    terminated: true,
                    ..pod("foo")
                },
                Pod {
                    terminated: true,
                    ..pod("foo1")
                },
                pod("running"),
                pod("foo3"),
            ]),
            evict_non_deleted_pods: true,
            remain: vec![4, 5],
        },
        Case {
            description: "containers for deleted pods should be removed",
            containers: vec![
                exited("foo", "bar", 1, 1),
                exited("foo", "bar", 0, 0),
                // deleted pods still respect MinAge.
                ctr("deleted", "bar1", 2, now(), ContainerState::Exited),
                exited("deleted", "bar1", 1, 1),
                exited("deleted", "bar1", 0, 0),
            ],
            policy: default_policy(),
            pods: all_foo.clone(),
            evict_non_deleted_pods: false,
            remain: vec![0, 1, 2],
        },
        Case {
            description: "containers for deleted pods may not be removed if allSourcesReady is set false",
            containers: vec![exited("deleted", "bar1", 0, 0)],
            policy: default_policy(),
            pods: None,
            evict_non_deleted_pods: true,
            remain: vec![0],
        },
    ];
    for case in cases {
        let view = PodView::new(case.pods.as_deref());
        let removed = plan_containers(
            &case.policy,
            &case.containers,
            view,
            now(),
            case.evict_non_deleted_pods,
        )
        .expect("numbered");
        assert_eq!(
            survivors(&case.containers, &removed),
            case.remain,
            "{}",
            case.description
        );
    }
}

#[test]
fn unknow_state_container_gc() {
    let containers = vec![ctr("foo", "bar", 0, ns(0), ContainerState::Unknown)];
    let policy = ContainerGcPolicy {
        min_age: Duration::from_secs(3600),
        max_per_pod_container: 0,
        max_containers: 0,
    };
    let pods = [pod("foo")];
    let view = PodView::new(Some(&pods));
    let removed = plan_containers(&policy, &containers, view, now(), false).expect("numbered");
    assert_eq!(removed.len(), 1);
    assert!(
        removed[0].stop_first,
        "an unknown-state container is stopped first"
    );
}

#[test]
fn containers_without_pod_uid_label_are_never_collected() {
    let mut c = exited("foo", "bar", 0, 0);
    c.pod_uid = None;
    let pods: [Pod; 0] = [];
    let view = PodView::new(Some(&pods));
    let policy = ContainerGcPolicy {
        max_per_pod_container: 0,
        max_containers: 0,
        ..ContainerGcPolicy::default()
    };
    let containers = [c];
    let removed = plan_containers(&policy, &containers, view, now(), true).expect("numbered");
    assert!(removed.is_empty());
}

#[test]
fn removals_go_oldest_first_and_equal_times_by_id() {
    // Times before the epoch have negative nanoseconds in jiff; ids tie for more than 16 bytes.
    let at = |second: i64, nanosecond: i32| Timestamp::new(second, nanosecond).expect("valid");
    let long = "x".repeat(20);
    let gone = [
        (format!("{long}b"), at(-1, -500_000_000)),
        ("a".to_string(), at(0, 500_000_000)),
        (format!("{long}a"), at(-1, -500_000_000)),
        ("c".to_string(), at(0, -500_000_000)),
        ("b".to_string(), at(-2, 0)),
    ];
    let mut containers: Vec<Container> = gone
        .iter()
        .map(|(id, t)| Container {
            id: id.clone(),
            created_at: *t,
            ..exited("gone", "app", 0, 0)
        })
        .collect();
    // An existing pod's unit of two created together: the greater id counts as newer and stays.
    for id in ["kept-1", "kept-2"] {
        containers.push(Container {
            id: id.to_string(),
            ..exited("here", "app", 0, 0)
        });
    }
    let pods = [pod("here")];
    let policy = ContainerGcPolicy {
        max_per_pod_container: 1,
        ..ContainerGcPolicy::default()
    };
    let removed = plan_containers(
        &policy,
        &containers,
        PodView::new(Some(&pods)),
        now(),
        false,
    )
    .expect("numbered");
    let ids: Vec<&str> = removed.iter().map(|r| r.id).collect();
    let long_a = format!("{long}a");
    let long_b = format!("{long}b");
    assert_eq!(ids, ["b", &long_a, &long_b, "c", "kept-1", "a"]);
}

fn sandbox(uid: &str, n: usize, state: SandboxState, created_ns: i64) -> Sandbox {
    Sandbox {
        id: format!("{uid}-sandbox-{n}"),
        pod_uid: uid.to_string(),
        name: uid.to_string(),
        namespace: "ns".to_string(),
        attempt: 0,
        state,
        created_at: ns(created_ns),
    }
}

#[test]
fn sandbox_gc() {
    use SandboxState::{NotReady, Ready};
    struct SandboxCase {
        description: &'static str,
        sandboxes: Vec<Sandbox>,
        /// (sandbox index, container) pairs still present.
        containers: Vec<usize>,
        pods: Vec<Pod>,
        evict_non_deleted_pods: bool,
        remain: Vec<usize>,
    }
    let cases = vec![
        SandboxCase {
            description: "notready sandboxes without containers for deleted pods should be garbage collected.",
            sandboxes: vec![sandbox("deleted", 0, NotReady, 0)],
            containers: vec![],
            pods: vec![],
            evict_non_deleted_pods: false,
            remain: vec![],
        },
        SandboxCase {
            description: "ready sandboxes without containers for deleted pods should not be garbage collected.",
            sandboxes: vec![sandbox("deleted", 0, Ready, 0)],
            containers: vec![],
            pods: vec![],
            evict_non_deleted_pods: false,
            remain: vec![0],
        },
        SandboxCase {
            description: "sandboxes for existing pods should not be garbage collected.",
            sandboxes: vec![
                sandbox("pod0", 0, Ready, 0),
                sandbox("pod1", 0, NotReady, 0),
            ],
            containers: vec![],
            pods: vec![pod("pod0"), pod("pod1")],
            evict_non_deleted_pods: false,
            remain: vec![0, 1],
        },
        SandboxCase {
            description: "older exited sandboxes without containers for existing pods should be garbage collected if there are more than one exited sandboxes.",
            sandboxes: vec![
                sandbox("pod0", 1, NotReady, 1),
                sandbox("pod0", 0, NotReady, 0),
            ],
            containers: vec![],
            pods: vec![pod("pod0")],
            evict_non_deleted_pods: false,
            remain: vec![0],
        },
        SandboxCase {
            description: "older exited sandboxes with containers for existing pods should not be garbage collected even if there are more than one exited sandboxes.",
            sandboxes: vec![
                sandbox("pod0", 1, NotReady, 1),
                sandbox("pod0", 0, NotReady, 0),
            ],
            containers: vec![1],
            pods: vec![pod("pod0")],
            evict_non_deleted_pods: false,
            remain: vec![0, 1],
        },
        SandboxCase {
            description: "non-running sandboxes for existing pods should be garbage collected if evictTerminatingPods is set.",
            sandboxes: vec![
                sandbox("pod0", 0, Ready, 0),
                sandbox("pod1", 0, NotReady, 0),
            ],
            containers: vec![],
            pods: vec![
                Pod {
                    terminated: true,
                    ..pod("pod0")
                },
                Pod {
                    terminated: true,
                    ..pod("pod1")
                },
            ],
            evict_non_deleted_pods: true,
            remain: vec![0],
        },
        SandboxCase {
            description: "sandbox with containers should not be garbage collected.",
            sandboxes: vec![sandbox("deleted", 0, NotReady, 0)],
            containers: vec![0],
            pods: vec![],
            evict_non_deleted_pods: false,
            remain: vec![0],
        },
        SandboxCase {
            description: "multiple sandboxes should be handled properly.",
            sandboxes: vec![
                // running sandbox.
                sandbox("pod0", 1, Ready, 1),
                // exited sandbox without containers.
                sandbox("pod0", 0, NotReady, 0),
                // exited sandbox with containers.
                sandbox("pod1", 1, NotReady, 1),
                // exited sandbox without containers.
                sandbox("pod1", 0, NotReady, 0),
                // exited sandbox without containers for deleted pods.
                sandbox("deleted", 0, NotReady, 0),
            ],
            containers: vec![2],
            pods: vec![pod("pod0"), pod("pod1")],
            evict_non_deleted_pods: false,
            remain: vec![0, 2],
        },
    ];
    for case in cases {
        let containers: Vec<Container> = case
            .containers
            .iter()
            .map(|i| Container {
                sandbox_id: case.sandboxes[*i].id.clone(),
                ..exited(&case.sandboxes[*i].pod_uid, "c", 0, 0)
            })
            .collect();
        let view = PodView::new(Some(&case.pods));
        let removed = plan_sandboxes(
            &case.sandboxes,
            &containers,
            view,
            case.evict_non_deleted_pods,
        )
        .expect("unique sandbox ids");
        let gone: HashSet<&str> = removed.iter().map(|r| r.id).collect();
        let remain: Vec<usize> = (0..case.sandboxes.len())
            .filter(|i| !gone.contains(case.sandboxes[*i].id.as_str()))
            .collect();
        assert_eq!(remain, case.remain, "{}", case.description);
    }
}

#[test]
fn pod_log_directory_gc() {
    let dirs: Vec<String> = [
        "123",
        "456",
        "789",
        "012",
        "name_namespace_321",
        "name_namespace_654",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let pods = vec![pod("123"), pod("456"), pod("321")];
    let view = PodView::new(Some(&pods));
    let removed: Vec<&str> = plan_log_dirs(&dirs, view)
        .expect("numbered")
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(removed, ["789", "012", "name_namespace_654"]);
    // allSourcesReady = false: nothing is removed.
    let removed = plan_log_dirs(&dirs, PodView::new(None)).expect("numbered");
    assert!(removed.is_empty());
}
