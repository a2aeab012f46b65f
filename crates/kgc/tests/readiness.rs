//! `kgc apply --wait` waits for what it applied to be ready (issue 29, item 6), with kstatus's
//! rules, against a spawned `kgc serve` whose controllers make the cluster live: Deployments
//! get ReplicaSets and Pods that run on simulated nodes, Jobs finish, claims bind. Each test has
//! its own server and namespace; timeouts are short where the outcome is a timeout.

kgc_testsupport::bind_kgc!();

use std::process::Output;
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::Value;

/// A source directory deployed as app `web`, env `prod`, into one namespace.
struct Project {
    dir: tempfile::TempDir,
    ns: String,
    kubeconfig: std::path::PathBuf,
}

impl Project {
    async fn new(s: &Server, prefix: &str) -> Self {
        Project {
            dir: tempfile::tempdir().expect("a source directory"),
            ns: fresh_namespace(&s.client(), prefix).await,
            kubeconfig: s.kubeconfig_path(),
        }
    }

    fn write(&self, file: &str, yaml: &str) {
        std::fs::write(self.dir.path().join(file), yaml).expect("writing a source file");
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.arg("apply")
            .arg(self.dir.path())
            .args(["--app", "web", "--env", "prod", "-n", &self.ns])
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .kill_on_drop(true);
        c
    }

    /// `kgc apply DIR ARGS`, expecting exit code `code`.
    async fn apply(&self, args: &[&str], code: i32) -> Output {
        let out = tokio::time::timeout(Duration::from_secs(120), self.command(args).output())
            .await
            .expect("kgc apply finished within 120 s")
            .expect("running kgc apply");
        assert_eq!(
            out.status.code(),
            Some(code),
            "kgc apply {args:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    async fn get(&self, s: &Server, what: &[&str]) -> Value {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend(["-n", &self.ns, "-o", "json"]);
        serde_json::from_str(&s.kubectl_ok(&args).await).expect("kubectl JSON")
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn deployment(name: &str, replicas: u32, pod_spec_extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{run: {name}}}}}
  template:
    metadata: {{labels: {{run: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{{name: app, image: nginx}}]{pod_spec_extra}
---
"
    )
}

#[tokio::test]
async fn a_deployment_is_waited_for_until_its_pods_are_ready() {
    let s = Server::living(&["--in-memory"]).await;
    let p = Project::new(&s, "ready-deploy").await;
    // A Service that selects the pods: `kgc serve` keeps no EndpointSlices, so it is ready as
    // kstatus says, at once.
    p.write(
        "web.yaml",
        &(deployment("web", 2, "")
            + "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {run: web}, ports: [{port: 80}]}\n"),
    );
    let out = p
        .apply(&["--wait", "--timeout", "60s", "-o", "json"], 0)
        .await;
    let report: Value = serde_json::from_str(&stdout(&out)).expect("the report");
    assert!(report.get("not_ready").is_none(), "{report}");
    // Returned only once rolled out.
    let d = p.get(&s, &["deployment", "web"]).await;
    assert_eq!(d["status"]["readyReplicas"], 2, "{d}");
    assert_eq!(d["status"]["availableReplicas"], 2, "{d}");
}

#[tokio::test]
async fn a_deployment_that_cannot_be_scheduled_times_out_with_exit_3_naming_it() {
    let s = Server::living(&["--in-memory"]).await;
    let p = Project::new(&s, "ready-stuck").await;
    p.write(
        "web.yaml",
        &(deployment(
            "stuck",
            1,
            "\n      nodeSelector: {kgc.io/no-such-label: x}",
        ) + &deployment("fine", 1, "")),
    );
    let started = std::time::Instant::now();
    let out = p.apply(&["--wait", "--timeout", "4s"], 3).await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the wait outlived --timeout: {:?}",
        started.elapsed()
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("not ready"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains(&format!("Deployment.apps {}/stuck", p.ns))
            && lines[0].contains("InProgress: Available: 0/1"),
        "{text}"
    );
    assert!(text.contains("1 not ready"), "{text}");
    // The JSON report names it too, with its status.
    let out = p
        .apply(&["--wait", "--timeout", "1s", "-o", "json"], 3)
        .await;
    let report: Value = serde_json::from_str(&stdout(&out)).expect("the report");
    let not_ready = report["not_ready"].as_array().expect("not_ready");
    assert_eq!(not_ready.len(), 1, "{report}");
    assert_eq!(not_ready[0]["key"]["name"], "stuck");
    assert_eq!(not_ready[0]["status"], "InProgress");
}

#[tokio::test]
async fn a_job_is_waited_for_until_complete_and_a_claim_until_bound() {
    let s = Server::living(&["--in-memory", "--job-pod-duration", "1s"]).await;
    let p = Project::new(&s, "ready-job").await;
    let class = format!("now-{}", p.ns);
    p.write(
        "batch.yaml",
        &format!(
            "apiVersion: batch/v1
kind: Job
metadata: {{name: migrate}}
spec:
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{{name: c, image: busybox}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {class}}}
provisioner: kgc.io/host-path
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data}}
spec:
  storageClassName: {class}
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Mi}}}}
"
        ),
    );
    p.apply(&["--wait", "--timeout", "60s"], 0).await;
    let job = p.get(&s, &["job", "migrate"]).await;
    let complete = job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Complete" && c["status"] == "True");
    assert!(complete, "returned before the Job completed: {job}");
    let pvc = p.get(&s, &["pvc", "data"]).await;
    assert_eq!(pvc["status"]["phase"], "Bound", "{pvc}");
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.ready.example.com}
spec:
  group: ready.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: ready.example.com/v1
kind: Gadget
metadata: {name: g}
spec: {size: 1}
";

#[tokio::test]
async fn a_custom_resource_is_ready_by_its_ready_condition() {
    let s = Server::start().await;
    let p = Project::new(&s, "ready-cr").await;
    p.write("gadget.yaml", CRD);
    // No controller has said anything: kstatus calls it Current.
    p.apply(&["--wait", "--timeout", "30s"], 0).await;
    let set_ready = |status: &'static str, message: &'static str| {
        let patch = serde_json::json!({"status": {"conditions": [
            {"type": "Ready", "status": status, "reason": "Waiting", "message": message}]}})
        .to_string();
        let s = &s;
        let ns = p.ns.clone();
        async move {
            s.kubectl_ok(&[
                "patch",
                "gadget",
                "g",
                "-n",
                &ns,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ])
            .await;
        }
    };
    set_ready("False", "waiting for the database").await;
    let out = p.apply(&["--wait", "--timeout", "2s"], 3).await;
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("not ready")
            && l.contains(&format!("Gadget.ready.example.com {}/g", p.ns))
            && l.contains("InProgress: Waiting: waiting for the database")),
        "{text}"
    );
    // A wait in progress ends when the controller says Ready. (Nothing tells when the run has
    // reached its wait; the pause only makes the test cover that path, not pass.)
    let mut c = p.command(&["--wait", "--timeout", "60s"]);
    let waiting = tokio::spawn(async move { c.output().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    set_ready("True", "up").await;
    let out = tokio::time::timeout(Duration::from_secs(90), waiting)
        .await
        .expect("the wait ended")
        .expect("the task")
        .expect("running kgc apply");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
}
