//! `pods/log` on simulated pods (kubernetes/kubernetes `pkg/registry/core/pod/rest/log.go`,
//! `pkg/registry/core/pod/strategy.go` `LogLocation`, and the kubelet's
//! `pkg/kubelet/kubelet_pods.go` `validateContainerLogStatus`).
//!
//! A simulated container runs no process, so its log is derived from the pod, and nothing is
//! stored for it: one line when the run started (its `startedAt`), the lines of the pod's
//! annotation `kgc.io/log.<container>` (or, for every container without its own, `kgc.io/log`),
//! one per line of the value, stamped with the start too, and one line when it exited (its
//! `finishedAt`, with the exit code and reason). `previous` reads the run in `lastState`. The
//! options are kube-apiserver's: `container`, `previous`, `tailLines`, `sinceSeconds`,
//! `sinceTime`, `timestamps` (the kubelet's fixed nine-digit RFC 3339), `limitBytes`, and
//! `follow`, which streams until that run of the container ends (its exit line), the pod goes,
//! or the server stops. The refusals are the API server's and the kubelet's, word for word.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::stream;
use jiff::Timestamp;
use kgc_meta::{FieldError, FieldSelector, GroupResource, Status};
use kgc_store::{EventType, WatchEvent, WatchFilter};
use serde_json::Value;

use crate::ApiServer;
use crate::body::ApiError;
use crate::request::{Query, RequestInfo};

/// The annotation whose lines every container logs (one without its own
/// `kgc.io/log.<container>`).
pub const LOG_ANNOTATION: &str = "kgc.io/log";

/// The `PodLogOptions` of a request.
#[derive(Debug, Default)]
struct Options {
    container: Option<String>,
    previous: bool,
    follow: bool,
    timestamps: bool,
    tail: Option<usize>,
    since: Option<Timestamp>,
    limit_bytes: Option<usize>,
}

impl Options {
    /// Parses and validates the options (`ValidatePodLogOptions`: 422 naming the field).
    fn parse(query: &Query, pod: &str, now: Timestamp) -> Result<Self, Status> {
        let mut errs = Vec::new();
        let tail = query.int("tailLines")?;
        if let Some(t) = tail.filter(|t| *t < 0) {
            errs.push(FieldError::invalid_value(
                "tailLines",
                &Value::from(t),
                "must be greater than or equal to 0",
            ));
        }
        let limit = query.int("limitBytes")?;
        if let Some(l) = limit.filter(|l| *l < 1) {
            errs.push(FieldError::invalid_value(
                "limitBytes",
                &Value::from(l),
                "must be greater than 0",
            ));
        }
        let since_seconds = query.int("sinceSeconds")?;
        let since_time = match query.get("sinceTime") {
            Some(t) => Some(
                t.parse::<Timestamp>()
                    .map_err(|e| Status::bad_request(format!("invalid sinceTime {t:?}: {e}")))?,
            ),
            None => None,
        };
        if since_seconds.is_some() && since_time.is_some() {
            errs.push(FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        } else if let Some(s) = since_seconds.filter(|s| *s < 1) {
            errs.push(FieldError::invalid_value(
                "sinceSeconds",
                &Value::from(s),
                "must be greater than 0",
            ));
        }
        if !errs.is_empty() {
            return Err(Status::invalid("", "PodLogOptions", pod, &errs));
        }
        let since = since_time.or_else(|| {
            since_seconds.and_then(|s| now.checked_sub(jiff::SignedDuration::from_secs(s)).ok())
        });
        Ok(Self {
            container: query
                .get("container")
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            previous: query.flag("previous"),
            follow: query.flag("follow"),
            timestamps: query.flag("timestamps"),
            tail: tail.map(|t| usize::try_from(t).unwrap_or(0)),
            since,
            limit_bytes: limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        })
    }
}

/// One run of a container: its id, start, and exit once it has one.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    id: String,
    started: Timestamp,
    exit: Option<Exit>,
}

#[derive(Debug, Clone, PartialEq)]
struct Exit {
    at: Timestamp,
    code: i64,
    reason: String,
}

/// One log line and when it was written.
#[derive(Debug, PartialEq)]
struct Line {
    at: Timestamp,
    text: String,
}

impl Line {
    fn render(&self, timestamps: bool) -> String {
        if timestamps {
            format!("{} {}\n", kubelet_time(self.at), self.text)
        } else {
            format!("{}\n", self.text)
        }
    }
}

/// The kubelet's `timeFormatOut`: RFC 3339 in UTC with nine fraction digits.
fn kubelet_time(t: Timestamp) -> String {
    format!(
        "{}.{:09}Z",
        t.strftime("%Y-%m-%dT%H:%M:%S"),
        t.subsec_nanosecond()
    )
}

/// Serves `GET …/pods/NAME/log`.
pub(crate) async fn serve(
    api: &ApiServer,
    req: &RequestInfo,
    query: &Query,
) -> Result<Response, ApiError> {
    let ns = req.namespace.as_deref().unwrap_or_default();
    let name = req.name.as_deref().unwrap_or_default();
    let gr = GroupResource::new("", "pods");
    let opts = Options::parse(query, name, api.store.clock().now())?;
    // Watch from before the read, so that nothing the follow waits for can fall in between.
    let from = api.store.revision();
    let stored = api
        .store
        .get(&gr, ns, name)
        .ok_or_else(|| Status::not_found(&gr, name))?;
    let pod = stored.value();
    let container = select_container(&pod, opts.container.as_deref())?;
    if pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        // No node yet: upstream answers with an empty stream.
        return Ok(text(String::new()));
    }
    let run = run_of(&pod, &container, opts.previous)?;
    let mut lines = lines(&pod, &container, &run);
    if let Some(since) = opts.since {
        lines.retain(|l| l.at >= since);
    }
    if let Some(tail) = opts.tail {
        lines.drain(..lines.len().saturating_sub(tail));
    }
    let mut out: String = lines.iter().map(|l| l.render(opts.timestamps)).collect();
    let mut budget = opts.limit_bytes.unwrap_or(usize::MAX);
    truncate(&mut out, &mut budget);
    if !opts.follow || run.exit.is_some() || opts.previous || budget == 0 {
        return Ok(text(out));
    }
    let mut filter = WatchFilter::new(gr);
    filter.namespace = Some(ns.to_owned());
    filter.fields = FieldSelector::parse(&format!("metadata.name={name}"))?;
    let follow = Follow {
        watcher: api.store.watch(filter, Some(from)),
        shutdown: api.shutdown.clone(),
        uid: pod["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        container,
        run_id: run.id,
        timestamps: opts.timestamps,
        budget,
        first: Some(out),
        done: false,
    };
    let body = stream::unfold(follow, |mut f| async move {
        f.next_chunk()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), f))
    });
    Ok(text_response(Body::from_stream(body)))
}

/// Cuts `out` to what `budget` bytes allow (at a character boundary) and charges it; once
/// something was cut, the budget is spent.
fn truncate(out: &mut String, budget: &mut usize) {
    if out.len() > *budget {
        let mut end = *budget;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        *budget = 0;
    } else {
        *budget -= out.len();
    }
}

fn text(s: String) -> Response {
    text_response(Body::from(s))
}

fn text_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// A followed run: the lines so far, then its exit line once its status records it.
struct Follow {
    watcher: kgc_store::Watcher,
    shutdown: tokio::sync::watch::Receiver<bool>,
    uid: String,
    container: String,
    run_id: String,
    timestamps: bool,
    budget: usize,
    first: Option<String>,
    done: bool,
}

impl Follow {
    async fn next_chunk(&mut self) -> Option<String> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        if self.done {
            return None;
        }
        loop {
            tokio::select! {
                ev = self.watcher.next() => match ev {
                    WatchEvent::Event(EventType::Deleted, _) => return None,
                    WatchEvent::Event(_, obj) => {
                        let pod = obj.value();
                        if pod["metadata"]["uid"].as_str() != Some(self.uid.as_str()) {
                            return None;
                        }
                        match ended(&pod, &self.container, &self.run_id) {
                            Ended::No => {}
                            Ended::Gone => return None,
                            Ended::Exited(exit) => {
                                self.done = true;
                                let mut line = exit_line(&self.container, &exit).render(self.timestamps);
                                truncate(&mut line, &mut self.budget);
                                return Some(line);
                            }
                        }
                    }
                    WatchEvent::Expired { .. } | WatchEvent::Closed => return None,
                },
                r = self.shutdown.changed() => {
                    if r.is_err() || *self.shutdown.borrow() {
                        return None;
                    }
                }
            }
        }
    }
}

/// Whether the followed run has ended in this version of the pod.
enum Ended {
    No,
    /// Replaced or forgotten without a recorded exit.
    Gone,
    Exited(Exit),
}

fn ended(pod: &Value, container: &str, run_id: &str) -> Ended {
    let Some(status) = container_status(pod, container) else {
        return Ended::Gone;
    };
    for state in [&status["state"], &status["lastState"]] {
        let t = &state["terminated"];
        if t.is_object() && t["containerID"].as_str() == Some(run_id) {
            return exit_of(t).map_or(Ended::Gone, Ended::Exited);
        }
    }
    if status["containerID"].as_str() == Some(run_id) || run_id.is_empty() {
        Ended::No
    } else {
        Ended::Gone
    }
}

/// `validateContainer`: the named container must be the pod's; without a name, the only
/// container, else a 400 listing them all (init, regular, ephemeral), as Go prints a slice.
fn select_container(pod: &Value, requested: Option<&str>) -> Result<String, Status> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let names: Vec<&str> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|f| pod["spec"][*f].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    match requested {
        Some(c) if names.contains(&c) => Ok(c.to_owned()),
        Some(c) => Err(Status::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let regular = pod["spec"]["containers"].as_array().map_or(0, Vec::len);
            match regular {
                1 => Ok(pod["spec"]["containers"][0]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()),
                0 => Err(Status::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(Status::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    names.join(" ")
                ))),
            }
        }
    }
}

fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|f| pod["status"][*f].as_array().into_iter().flatten())
    .find(|s| s["name"].as_str() == Some(container))
}

fn time(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|s| s.parse().ok())
}

fn exit_of(t: &Value) -> Option<Exit> {
    Some(Exit {
        at: time(&t["finishedAt"]).or_else(|| time(&t["startedAt"]))?,
        code: t["exitCode"].as_i64().unwrap_or_default(),
        reason: t["reason"].as_str().unwrap_or_default().to_owned(),
    })
}

/// A terminated state with a container id as a run.
fn terminated_run(t: &Value) -> Option<Run> {
    let id = t["containerID"].as_str().filter(|id| !id.is_empty())?;
    let exit = exit_of(t)?;
    Some(Run {
        id: id.to_owned(),
        started: time(&t["startedAt"]).unwrap_or(exit.at),
        exit: Some(exit),
    })
}

/// The run whose log is asked for, or the kubelet's refusal (`validateContainerLogStatus`).
fn run_of(pod: &Value, container: &str, previous: bool) -> Result<Run, Status> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let refuse = |why: String| Err(Status::bad_request(why));
    let Some(status) = container_status(pod, container) else {
        // Bound but not yet reported: a kubelet's status says ContainerCreating.
        return refuse(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: ContainerCreating"
        ));
    };
    let last = terminated_run(&status["lastState"]["terminated"]);
    let state = &status["state"];
    if previous {
        return last.map_or_else(
            || {
                refuse(format!(
                    "previous terminated container {container:?} in pod {pod_name:?} not found"
                ))
            },
            Ok,
        );
    }
    if let Some(started) = time(&state["running"]["startedAt"]) {
        return Ok(Run {
            id: status["containerID"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            started,
            exit: None,
        });
    }
    if state["terminated"].is_object() {
        return match terminated_run(&state["terminated"]).or(last) {
            Some(run) => Ok(run),
            None => refuse(format!(
                "container {container:?} in pod {pod_name:?} is terminated"
            )),
        };
    }
    if let Some(run) = last {
        return Ok(run);
    }
    match state["waiting"]["reason"].as_str() {
        Some("ErrImagePull") => refuse(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: image can't be pulled"
        )),
        Some("ImagePullBackOff") => refuse(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: trying and failing to pull image"
        )),
        Some(reason) => refuse(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: {reason}"
        )),
        None => refuse(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start - no logs yet"
        )),
    }
}

/// The simulated lines of one run.
fn lines(pod: &Value, container: &str, run: &Run) -> Vec<Line> {
    let spec = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|f| pod["spec"][*f].as_array().into_iter().flatten())
        .find(|c| c["name"].as_str() == Some(container));
    let image = spec.and_then(|c| c["image"].as_str()).unwrap_or_default();
    let mut out = vec![Line {
        at: run.started,
        text: format!(
            "kgc: container {container} started (image {image}; simulated, no process runs)"
        ),
    }];
    let annotations = &pod["metadata"]["annotations"];
    let own = format!("{LOG_ANNOTATION}.{container}");
    let text = annotations[own.as_str()]
        .as_str()
        .or_else(|| annotations[LOG_ANNOTATION].as_str())
        .unwrap_or_default();
    out.extend(text.lines().map(|l| Line {
        at: run.started,
        text: l.to_owned(),
    }));
    if let Some(exit) = &run.exit {
        out.push(exit_line(container, exit));
    }
    out
}

fn exit_line(container: &str, exit: &Exit) -> Line {
    Line {
        at: exit.at,
        text: format!(
            "kgc: container {container} exited with code {} ({})",
            exit.code, exit.reason
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web", "uid": "u1", "annotations": {
                "kgc.io/log": "hello\nworld", "kgc.io/log.side": "side line"}},
            "spec": {"nodeName": "n", "containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "busybox"}]},
            "status": {"containerStatuses": [
                {"name": "app", "containerID": "containerd://b",
                 "state": {"running": {"startedAt": "2026-01-01T00:01:00Z"}},
                 "lastState": {"terminated": {"containerID": "containerd://a", "exitCode": 1, "reason": "Error",
                    "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:30Z"}}},
                {"name": "side", "state": {"waiting": {"reason": "ContainerCreating"}}},
            ]},
        })
    }

    #[test]
    fn a_running_container_logs_its_start_and_the_annotation() {
        let p = pod();
        let run = run_of(&p, "app", false).unwrap();
        let text: String = lines(&p, "app", &run)
            .iter()
            .map(|l| l.render(true))
            .collect();
        assert_eq!(
            text,
            "2026-01-01T00:01:00.000000000Z kgc: container app started (image nginx; simulated, no process runs)\n\
             2026-01-01T00:01:00.000000000Z hello\n2026-01-01T00:01:00.000000000Z world\n"
        );
    }

    #[test]
    fn previous_reads_the_last_run_with_its_exit() {
        let p = pod();
        let run = run_of(&p, "app", true).unwrap();
        let text: Vec<String> = lines(&p, "app", &run)
            .iter()
            .map(|l| l.render(false))
            .collect();
        assert_eq!(
            text.last().unwrap(),
            "kgc: container app exited with code 1 (Error)\n"
        );
        assert_eq!(
            run_of(&p, "side", true).unwrap_err().message,
            "previous terminated container \"side\" in pod \"web\" not found"
        );
    }

    #[test]
    fn refusals_are_worded_as_upstream() {
        let p = pod();
        assert_eq!(
            run_of(&p, "side", false).unwrap_err().message,
            "container \"side\" in pod \"web\" is waiting to start: ContainerCreating"
        );
        assert_eq!(
            select_container(&p, None).unwrap_err().message,
            "a container name must be specified for pod web, choose one of: [app side]"
        );
        assert_eq!(
            select_container(&p, Some("x")).unwrap_err().message,
            "container x is not valid for pod web"
        );
    }

    #[test]
    fn a_run_ends_when_its_id_is_recorded_terminated() {
        let p = pod();
        assert!(matches!(ended(&p, "app", "containerd://b"), Ended::No));
        assert!(matches!(ended(&p, "app", "containerd://a"), Ended::Exited(e) if e.code == 1));
        assert!(matches!(ended(&p, "app", "containerd://c"), Ended::Gone));
    }

    #[test]
    fn bad_options_are_a_422_naming_each_field() {
        let q = Query::parse(Some("tailLines=-1&limitBytes=0&sinceSeconds=0"));
        let err = Options::parse(&q, "web", Timestamp::UNIX_EPOCH).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "PodLogOptions \"web\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, \
             limitBytes: Invalid value: 0: must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]"
        );
    }

    #[test]
    fn limit_bytes_cuts_at_a_character_boundary() {
        let mut s = "héllo\n".to_owned();
        let mut budget = 2;
        truncate(&mut s, &mut budget);
        assert_eq!((s.as_str(), budget), ("h", 0));
    }
}
