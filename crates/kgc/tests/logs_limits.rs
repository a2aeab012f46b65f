//! `kubectl logs` and `kubectl exec` on simulated pods, and LimitRanges, with real kubectl
//! against one `kgc serve`: each scenario in its own namespace, run side by side.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kgc_testsupport::pods::phase;
use kgc_testsupport::*;
use kube::Api;

const T: Duration = Duration::from_secs(60);

#[tokio::test]
async fn logs_exec_and_limit_ranges_on_one_server() {
    let s = Server::living(&["--in-memory"]).await;
    tokio::join!(
        logs_of_a_running_pod(&s),
        follow_and_previous(&s),
        waiting_container(&s),
        limit_range_defaults_and_bounds(&s),
        invalid_limit_range(&s),
    );
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn running(s: &Server, ns: &str, name: &str) {
    let pods: Api<Pod> = Api::namespaced(s.client(), ns);
    eventually(&format!("pod {name} Running"), T, || async {
        pods.get_opt(name)
            .await
            .unwrap()
            .is_some_and(|p| phase(&p) == "Running")
    })
    .await;
}

async fn logs_of_a_running_pod(s: &Server) {
    let ns = fresh_namespace(&s.client(), "logs").await;
    let pod = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    kgc.io/log: |
      hello
      world
    kgc.io/log.side: side says hi
spec:
  containers:
  - {name: app, image: nginx}
  - {name: side, image: busybox}
"#;
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], pod)
        .await;
    running(s, &ns, "web").await;
    let app = s.kubectl_ok(&["logs", "-n", &ns, "web", "-c", "app"]).await;
    assert_eq!(
        app,
        "kgc: container app started (image nginx; simulated, no process runs)\nhello\nworld\n"
    );
    let side = s
        .kubectl_ok(&["logs", "-n", &ns, "web", "-c", "side"])
        .await;
    assert!(side.ends_with("\nside says hi\n"), "{side}");
    let tail = s
        .kubectl_ok(&["logs", "-n", &ns, "web", "-c", "app", "--tail=1"])
        .await;
    assert_eq!(tail, "world\n");
    let stamped = s
        .kubectl_ok(&["logs", "-n", &ns, "web", "-c", "app", "--timestamps"])
        .await;
    for line in stamped.lines() {
        let (at, _) = line.split_once(' ').unwrap();
        assert!(at.len() == 30 && at.ends_with('Z'), "{line}");
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "{line}");
    }
    let none = s
        .kubectl(&["logs", "-n", &ns, "web", "-c", "app", "--previous"])
        .await;
    assert!(
        stderr(&none).contains("previous terminated container \"app\" in pod \"web\" not found"),
        "{}",
        stderr(&none)
    );
    let exec = s
        .kubectl(&["exec", "-n", &ns, "web", "-c", "app", "--", "ls"])
        .await;
    assert!(!exec.status.success());
    let err = stderr(&exec);
    assert!(
        err.contains("Error from server (BadRequest): exec is not supported on a simulated node"),
        "{err}"
    );
    let forward = tokio::time::timeout(
        T,
        s.kubectl(&["port-forward", "-n", &ns, "pod/web", "18080:80"]),
    )
    .await
    .expect("kubectl port-forward gives up");
    assert!(!forward.status.success());
    let err = stderr(&forward);
    assert!(
        err.contains("port-forward is not supported on a simulated node"),
        "{err}"
    );
}

async fn follow_and_previous(s: &Server) {
    let ns = fresh_namespace(&s.client(), "follow").await;
    let pod = r#"
apiVersion: v1
kind: Pod
metadata:
  name: crash
  annotations:
    kgc.io/run-for: 4s
    kgc.io/exit-code: "3"
spec:
  containers:
  - {name: c, image: busybox}
"#;
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], pod)
        .await;
    running(s, &ns, "crash").await;
    // Follows the first run until it exits, then ends by itself.
    let followed = tokio::time::timeout(T, s.kubectl(&["logs", "-n", &ns, "crash", "-f"]))
        .await
        .expect("kubectl logs -f ends when the container does");
    let text = String::from_utf8_lossy(&followed.stdout).into_owned();
    assert!(
        text.starts_with("kgc: container c started")
            && text.ends_with("kgc: container c exited with code 3 (Error)\n"),
        "{text}"
    );
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    eventually("a previous run", T, || async {
        let p = pods.get("crash").await.unwrap();
        let cs = p
            .status
            .and_then(|s| s.container_statuses)
            .unwrap_or_default();
        cs.first()
            .and_then(|c| c.last_state.as_ref())
            .is_some_and(|l| l.terminated.is_some())
    })
    .await;
    let previous = s
        .kubectl_ok(&["logs", "-n", &ns, "crash", "--previous"])
        .await;
    assert!(
        previous.ends_with("kgc: container c exited with code 3 (Error)\n"),
        "{previous}"
    );
}

async fn waiting_container(s: &Server) {
    let ns = fresh_namespace(&s.client(), "waiting").await;
    let pod = r#"
apiVersion: v1
kind: Pod
metadata:
  name: pending
spec:
  containers:
  - name: c
    image: busybox
    volumeMounts: [{name: s, mountPath: /s}]
  volumes:
  - {name: s, secret: {secretName: missing}}
"#;
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], pod)
        .await;
    let mut last = String::new();
    let want = "Error from server (BadRequest): container \"c\" in pod \"pending\" is waiting to start: ContainerCreating";
    for _ in 0..60 {
        let out = s.kubectl(&["logs", "-n", &ns, "pending"]).await;
        last = stderr(&out);
        if last.contains(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{last}");
}

async fn limit_range_defaults_and_bounds(s: &Server) {
    let ns = fresh_namespace(&s.client(), "limits").await;
    let range = r#"
apiVersion: v1
kind: LimitRange
metadata:
  name: limits
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
    min: {memory: 32Mi}
"#;
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], range)
        .await;
    s.kubectl_ok(&["run", "-n", &ns, "plain", "--image=nginx"])
        .await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let p = pods.get("plain").await.unwrap();
    let res = p.spec.unwrap().containers[0].resources.clone().unwrap();
    let q = |m: &Option<
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >,
             k: &str| { m.as_ref().and_then(|m| m.get(k)).map(|q| q.0.clone()) };
    assert_eq!(q(&res.limits, "cpu").as_deref(), Some("500m"));
    assert_eq!(q(&res.limits, "memory").as_deref(), Some("128Mi"));
    assert_eq!(q(&res.requests, "cpu").as_deref(), Some("100m"));
    assert_eq!(q(&res.requests, "memory").as_deref(), Some("128Mi"));
    let annotations = p.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("kubernetes.io/limit-ranger")
            .map(String::as_str),
        Some(
            "LimitRanger plugin set: cpu, memory request for container plain; cpu, memory limit for container plain"
        )
    );
    let big = r#"
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers:
  - {name: c, image: nginx, resources: {limits: {cpu: "2"}}}
"#;
    let out = s.kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], big).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
        ),
        "{}",
        stderr(&out)
    );
    let small = r#"
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  containers:
  - {name: c, image: nginx, resources: {requests: {memory: 16Mi}}}
"#;
    let out = s
        .kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], small)
        .await;
    assert!(
        stderr(&out).contains(
            "pods \"small\" is forbidden: minimum memory usage per Container is 32Mi, but request is 16Mi"
        ),
        "{}",
        stderr(&out)
    );
}

async fn invalid_limit_range(s: &Server) {
    let ns = fresh_namespace(&s.client(), "badlimits").await;
    let bad = r#"
apiVersion: v1
kind: LimitRange
metadata: {name: bad}
spec:
  limits:
  - {type: Container, min: {cpu: "2"}, max: {cpu: "1"}}
  - {type: Node, max: {cpu: "1"}}
"#;
    let out = s.kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], bad).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("The LimitRange \"bad\" is invalid"), "{err}");
    assert!(
        err.contains(
            "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"
        ),
        "{err}"
    );
    assert!(
        err.contains("spec.limits[1].type: Invalid value: \"Node\": must be a standard limit type or fully qualified"),
        "{err}"
    );
}
