//! The simulated container runtime of one pod: its containers' attempts, exits, restarts with
//! the kubelet's crash back-off, and the stop of a deleted pod. Pure: every step takes "now",
//! and `advance` replays whatever happened since the last step in order, so a pod seen late
//! (a node started again, a busy queue) gets the state it would have had.
//!
//! Upstream: the restart decision is `kubecontainer.ShouldContainerBeRestarted` with the pod's
//! `restartPolicy`; the back-off is `pkg/kubelet/kuberuntime/kuberuntime_manager.go`
//! `doBackOff` over client-go's `flowcontrol.Backoff` (first restart at once, then 10 s doubling
//! to 5 min, forgotten after twice the maximum without a restart).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kgc_node::snapshot::{Container as CriContainer, ContainerState as CriState};

use crate::image::ImageRef;

/// The kubelet's settings that shape container lifecycles.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long a Job's pod runs before it exits (`--job-pod-duration`).
    pub job_pod_duration: Duration,
    /// The first crash back-off (the kubelet's 10 s).
    pub backoff_initial: Duration,
    /// The longest crash back-off (`MaxContainerBackOff`, 5 min).
    pub backoff_max: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            job_pod_duration: Duration::from_secs(1),
            backoff_initial: Duration::from_secs(10),
            backoff_max: Duration::from_secs(300),
        }
    }
}

/// `spec.restartPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    pub fn parse(s: Option<&str>) -> RestartPolicy {
        match s {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }

    fn restarts(self, exit_code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// What a pod's containers do, from its owner and annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// How long each attempt runs; `None`: until the pod is deleted.
    pub run_for: Option<Duration>,
    pub exit_code: i32,
    pub restart: RestartPolicy,
    /// How long a container takes to stop on SIGTERM (`kgc.io/stop-after`, default 0).
    pub stop_after: Duration,
}

/// The exit code of a container killed at the end of its grace period (SIGKILL).
pub const KILLED: i32 = 137;
/// The exit code of a container that stopped on SIGTERM within its grace period: 128 + 15, a
/// process ended by the signal, as the runtime reports it. Not 0: a Job's pod deleted while it
/// runs must end Failed (the Job counts it failed), not race to Succeeded.
pub const STOPPED: i32 = 143;

/// When a deleted pod's containers stop, and with which exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    pub at: Timestamp,
    pub code: i32,
}

impl Stop {
    /// The stop of containers sent SIGTERM at `sigterm` that take `stop_after` to stop, in a
    /// grace period ending at `deadline`: they exit on their own if that comes first, or are
    /// killed at the deadline (`killContainer`: SIGTERM, then SIGKILL when the grace period
    /// ends; upstream `pkg/kubelet/kuberuntime/kuberuntime_container.go`).
    pub fn after_sigterm(sigterm: Timestamp, stop_after: Duration, deadline: Timestamp) -> Stop {
        let own = after(sigterm, stop_after);
        if own <= deadline {
            Stop {
                at: own,
                code: STOPPED,
            }
        } else {
            Stop {
                at: deadline,
                code: KILLED,
            }
        }
    }
}

/// One finished attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
    pub started: Timestamp,
    pub finished: Timestamp,
    /// The attempt's container id (64 hex digits).
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Running {
        started: Timestamp,
    },
    /// Exited and not restarted (yet: a restart due at once happens in the same step).
    Exited(Exit),
    /// `CrashLoopBackOff`: exited (`last`), restarting at `until`; `delay` is the back-off.
    BackOff {
        until: Timestamp,
        delay: Duration,
    },
}

/// One container of the pod spec and its current attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    pub image: ImageRef,
    /// The current attempt's container id.
    pub id: String,
    /// `restartCount`: the current attempt's number.
    pub attempt: u32,
    pub created: Timestamp,
    pub state: State,
    /// The previous attempt's exit (`lastState.terminated`).
    pub last: Option<Exit>,
    /// The back-off period and when it was last set (`flowcontrol.Backoff`'s entry).
    backoff: Option<(Duration, Timestamp)>,
    /// A regular init container: runs to completion before the others start.
    pub init: bool,
    /// An init container with `restartPolicy: Always`: runs beside the regular containers.
    pub sidecar: bool,
}

/// A container spec the runtime starts.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub image: ImageRef,
    pub init: bool,
    pub sidecar: bool,
}

/// A pod's sandbox and containers on its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRuntime {
    pub uid: String,
    pub started: Timestamp,
    pub containers: Vec<Container>,
    /// Every container has stopped and none will start again: the sandbox is gone.
    pub terminal: bool,
    /// When a deleted pod's containers stop (on SIGTERM, or killed when its grace period ends).
    pub stop: Option<Stop>,
}

fn container_id(uid: &str, name: &str, attempt: u32) -> String {
    let digest = crate::image::sha256(&format!("{uid}/{name}/{attempt}"));
    digest.trim_start_matches("sha256:").to_owned()
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

impl Container {
    fn exit(&mut self, code: i32, at: Timestamp) -> Exit {
        let started = match self.state {
            State::Running { started } => started,
            _ => at,
        };
        Exit {
            code,
            started,
            finished: at,
            id: self.id.clone(),
        }
    }

    /// The attempt as the runtime lists it, for node GC.
    pub fn as_cri(&self, pod_uid: &str) -> CriContainer {
        CriContainer {
            id: self.id.clone(),
            name: self.name.clone(),
            attempt: self.attempt,
            pod_uid: Some(pod_uid.to_owned()),
            image_id: self.image.id.clone(),
            state: match self.state {
                State::Running { .. } => CriState::Running,
                _ => CriState::Exited,
            },
            created_at: self.created,
            ..CriContainer::default()
        }
    }
}

impl PodRuntime {
    /// Starts a pod at `now`: init containers run to completion (at once), then the sidecars
    /// and the regular containers start.
    pub fn start(uid: &str, specs: &[Spec], now: Timestamp) -> PodRuntime {
        let containers = specs
            .iter()
            .map(|s| {
                let id = container_id(uid, &s.name, 0);
                let state = if s.init && !s.sidecar {
                    State::Exited(Exit {
                        code: 0,
                        started: now,
                        finished: now,
                        id: id.clone(),
                    })
                } else {
                    State::Running { started: now }
                };
                Container {
                    name: s.name.clone(),
                    image: s.image.clone(),
                    id,
                    attempt: 0,
                    created: now,
                    state,
                    last: None,
                    backoff: None,
                    init: s.init,
                    sidecar: s.sidecar,
                }
            })
            .collect();
        PodRuntime {
            uid: uid.to_owned(),
            started: now,
            containers,
            terminal: false,
            stop: None,
        }
    }

    /// The regular containers (not init containers).
    pub fn regular(&self) -> impl Iterator<Item = &Container> {
        self.containers.iter().filter(|c| !c.init)
    }

    /// Replays everything due by `now`. Returns the attempts that were replaced (dead
    /// containers the node keeps) and when the next thing happens.
    pub fn advance(
        &mut self,
        b: &Behaviour,
        s: &Settings,
        now: Timestamp,
    ) -> (Vec<CriContainer>, Option<Timestamp>) {
        let mut dead = Vec::new();
        if self.terminal {
            return (dead, None);
        }
        let uid = self.uid.clone();
        for c in self.containers.iter_mut().filter(|c| !c.init) {
            loop {
                match c.state.clone() {
                    State::Running { started } => {
                        let Some(end) = b.run_for.map(|d| after(started, d)) else {
                            break;
                        };
                        if end > now || self.stop.is_some_and(|k| k.at <= end) {
                            break;
                        }
                        let exit = c.exit(b.exit_code, end);
                        c.state = State::Exited(exit);
                    }
                    State::Exited(exit) => {
                        if !b.restart.restarts(exit.code) {
                            break;
                        }
                        // `IsInBackOffSince`: a back-off entry still held delays the restart.
                        let held = c
                            .backoff
                            .filter(|(_, set)| exit.finished.duration_since(*set) <= twice(s));
                        match held {
                            Some((delay, _)) => {
                                c.state = State::BackOff {
                                    until: after(exit.finished, delay),
                                    delay,
                                };
                                c.last = Some(exit);
                            }
                            None => restart(c, &uid, exit.finished, s, &mut dead),
                        }
                    }
                    State::BackOff { until, .. } => {
                        if until > now || self.stop.is_some_and(|k| k.at <= until) {
                            break;
                        }
                        restart(c, &uid, until, s, &mut dead);
                    }
                }
            }
        }
        if let Some(k) = self.stop.filter(|k| k.at <= now) {
            self.kill(k);
        } else if self.regular().all(|c| matches!(c.state, State::Exited(_))) {
            // Nothing will restart: the sidecars are stopped and the sandbox goes.
            for c in self.containers.iter_mut().filter(|c| c.sidecar) {
                if let State::Running { .. } = c.state {
                    let exit = c.exit(0, now);
                    c.state = State::Exited(exit);
                }
            }
            self.terminal = true;
        }
        let next = if self.terminal {
            None
        } else {
            let due = self.containers.iter().filter_map(|c| match c.state {
                State::Running { started } if !c.init => b.run_for.map(|d| after(started, d)),
                State::BackOff { until, .. } => Some(until),
                _ => None,
            });
            due.chain(self.stop.map(|k| k.at)).min()
        };
        (dead, next)
    }

    /// Stops every container as `stop` says: running ones exit with its code, a container
    /// in back-off stays exited.
    fn kill(&mut self, stop: Stop) {
        for c in &mut self.containers {
            match c.state.clone() {
                State::Running { .. } => {
                    let exit = c.exit(stop.code, stop.at);
                    c.state = State::Exited(exit);
                }
                State::BackOff { .. } => {
                    if let Some(last) = c.last.take() {
                        c.state = State::Exited(last);
                    }
                }
                State::Exited(_) => {}
            }
        }
        self.terminal = true;
    }
}

fn twice(s: &Settings) -> SignedDuration {
    SignedDuration::try_from(s.backoff_max * 2).unwrap_or(SignedDuration::MAX)
}

/// Starts the next attempt of `c` at `at` (`flowcontrol.Backoff.Next`: the first back-off, or
/// twice the last up to the maximum, or the first again once the entry expired).
fn restart(
    c: &mut Container,
    uid: &str,
    at: Timestamp,
    s: &Settings,
    dead: &mut Vec<CriContainer>,
) {
    let previous = match c.state.clone() {
        State::Exited(e) => Some(e),
        _ => c.last.take(),
    };
    if let Some(e) = &previous {
        let mut old = c.as_cri(uid);
        old.id.clone_from(&e.id);
        old.state = CriState::Exited;
        dead.push(old);
    }
    c.backoff = Some(match c.backoff {
        Some((d, set)) if at.duration_since(set) <= twice(s) => ((d * 2).min(s.backoff_max), at),
        _ => (s.backoff_initial, at),
    });
    c.last = previous;
    c.attempt += 1;
    c.id = container_id(uid, &c.name, c.attempt);
    c.created = at;
    c.state = State::Running { started: at };
}

/// Go's `time.Duration.String()` for whole seconds (`10s`, `1m20s`, `5m0s`).
pub fn go_duration(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::resolve;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn pod(specs: &[(&str, bool)]) -> PodRuntime {
        let specs: Vec<Spec> = specs
            .iter()
            .map(|(n, init)| Spec {
                name: (*n).into(),
                image: resolve("busybox"),
                init: *init,
                sidecar: false,
            })
            .collect();
        PodRuntime::start("uid-1", &specs, at(0))
    }

    fn behaviour(run_for: u64, code: i32, restart: RestartPolicy) -> Behaviour {
        Behaviour {
            run_for: Some(Duration::from_secs(run_for)),
            exit_code: code,
            restart,
            stop_after: Duration::ZERO,
        }
    }

    #[test]
    fn init_containers_complete_and_regular_ones_run() {
        let mut p = pod(&[("setup", true), ("app", false)]);
        assert!(matches!(
            p.containers[0].state,
            State::Exited(Exit { code: 0, .. })
        ));
        let forever = Behaviour {
            run_for: None,
            exit_code: 0,
            restart: RestartPolicy::Always,
            stop_after: Duration::ZERO,
        };
        let (dead, next) = p.advance(&forever, &Settings::default(), at(1000));
        assert!(dead.is_empty() && next.is_none() && !p.terminal);
        assert_eq!(p.containers[1].state, State::Running { started: at(0) });
    }

    #[test]
    fn never_ends_the_pod_with_its_exit_code() {
        let mut p = pod(&[("app", false)]);
        let b = behaviour(5, 1, RestartPolicy::Never);
        let (_, next) = p.advance(&b, &Settings::default(), at(1));
        assert_eq!(next, Some(at(5)));
        p.advance(&b, &Settings::default(), at(5));
        assert!(p.terminal);
        let State::Exited(e) = &p.containers[0].state else {
            panic!("exited")
        };
        assert_eq!((e.code, e.started, e.finished), (1, at(0), at(5)));
    }

    #[test]
    fn failures_restart_at_once_then_back_off_doubling() {
        let mut p = pod(&[("app", false)]);
        let b = behaviour(1, 1, RestartPolicy::OnFailure);
        let s = Settings::default();
        // Exits at 1 and restarts at once; exits at 2, back-off 10 s until 12; runs to 13,
        // back-off 20 s until 33.
        let (dead, next) = p.advance(&b, &s, at(2));
        assert_eq!(dead.len(), 1, "the first attempt is a dead container");
        assert_eq!(p.containers[0].attempt, 1);
        assert_eq!(
            p.containers[0].state,
            State::BackOff {
                until: at(12),
                delay: Duration::from_secs(10)
            }
        );
        assert_eq!(next, Some(at(12)));
        p.advance(&b, &s, at(14));
        assert_eq!(p.containers[0].attempt, 2);
        assert_eq!(
            p.containers[0].state,
            State::BackOff {
                until: at(33),
                delay: Duration::from_secs(20)
            }
        );
        assert_eq!(p.containers[0].last.as_ref().unwrap().finished, at(13));
        // Long after: capped at five minutes.
        p.advance(&b, &s, at(3000));
        let State::BackOff { delay, .. } = p.containers[0].state else {
            panic!("backing off")
        };
        assert_eq!(delay, Duration::from_secs(300));
        assert!(!p.terminal);
    }

    #[test]
    fn on_failure_succeeds_when_the_exit_is_clean() {
        let mut p = pod(&[("app", false)]);
        p.advance(
            &behaviour(1, 0, RestartPolicy::OnFailure),
            &Settings::default(),
            at(1),
        );
        assert!(p.terminal);
    }

    #[test]
    fn a_deleted_pod_is_killed_at_the_end_of_its_grace_period() {
        let mut p = pod(&[("app", false)]);
        let forever = Behaviour {
            run_for: None,
            exit_code: 0,
            restart: RestartPolicy::Always,
            stop_after: Duration::ZERO,
        };
        p.stop = Some(Stop::after_sigterm(
            at(0),
            Duration::from_secs(3600),
            at(30),
        ));
        let (_, next) = p.advance(&forever, &Settings::default(), at(10));
        assert_eq!(next, Some(at(30)));
        assert!(!p.terminal);
        p.advance(&forever, &Settings::default(), at(30));
        assert!(p.terminal);
        let State::Exited(e) = &p.containers[0].state else {
            panic!("exited")
        };
        assert_eq!((e.code, e.finished), (KILLED, at(30)));
    }

    #[test]
    fn a_deleted_pod_stops_on_sigterm_within_its_grace_period() {
        let sigterm = |stop_after: u64, grace: i64| {
            Stop::after_sigterm(at(10), Duration::from_secs(stop_after), at(10 + grace))
        };
        // At once by default, in the time the annotation says, killed when grace ends first.
        assert_eq!(
            sigterm(0, 30),
            Stop {
                at: at(10),
                code: STOPPED
            }
        );
        assert_eq!(
            sigterm(20, 30),
            Stop {
                at: at(30),
                code: STOPPED
            }
        );
        assert_eq!(
            sigterm(3600, 30),
            Stop {
                at: at(40),
                code: KILLED
            }
        );
        assert_eq!(
            sigterm(0, 0),
            Stop {
                at: at(10),
                code: STOPPED
            }
        );
        let mut p = pod(&[("app", false)]);
        let forever = Behaviour {
            run_for: None,
            exit_code: 0,
            restart: RestartPolicy::Always,
            stop_after: Duration::ZERO,
        };
        p.stop = Some(sigterm(0, 30));
        p.advance(&forever, &Settings::default(), at(10));
        assert!(p.terminal);
        let State::Exited(e) = &p.containers[0].state else {
            panic!("exited")
        };
        assert_eq!((e.code, e.finished), (STOPPED, at(10)));
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
    }
}
