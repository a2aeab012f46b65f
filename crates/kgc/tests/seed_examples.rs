//! The Kubernetes garbage-collection pages' examples, verbatim, against a spawned `kgc serve`
//! with every controller on: `kubectl apply` of the ReplicaSet `my-repset`, then deletions
//! through `kubectl proxy` and `curl -X DELETE` with each propagation policy, and
//! `kubectl delete replicaset my-repset --cascade=false`; a Deployment deleted with each
//! `--cascade`. Nothing is forged: the pods are the ReplicaSet controller's.

kgc_testsupport::bind_kgc!();

use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kgc_testsupport::pods::active;
use kgc_testsupport::*;
use kube::Api;
use kube::api::ListParams;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

const T: Duration = Duration::from_secs(30);
/// Waits that include the pods' graceful termination: the page's template leaves
/// `terminationGracePeriodSeconds` at its default, 30 s, and the simulated kubelet's containers
/// use all of it before the final DELETE.
const GONE: Duration = Duration::from_secs(90);

/// The page's `replicaset.yaml`.
const MY_REPSET: &str = "apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: my-repset
spec:
  replicas: 3
  selector:
    matchLabels:
      pod-is-for: garbage-collection-example
  template:
    metadata:
      labels:
        pod-is-for: garbage-collection-example
    spec:
      containers:
      - name: nginx
        image: nginx
";

const NGINX_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
";

/// `kubectl proxy` on a free port, stopped when dropped.
struct Proxy {
    child: tokio::process::Child,
    url: String,
}

impl Proxy {
    async fn start(s: &Server) -> Self {
        let mut cmd = s.kubectl_command(&["proxy", "--port=0"]);
        cmd.stdout(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawning kubectl proxy");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let line = tokio::time::timeout(T, lines.next_line())
            .await
            .expect("kubectl proxy announces its port")
            .expect("reading kubectl proxy")
            .expect("a line");
        let addr = line
            .rsplit(' ')
            .next()
            .expect("Starting to serve on ADDR")
            .to_owned();
        Self {
            child,
            url: format!("http://{addr}"),
        }
    }

    /// The page's `curl -X DELETE … -d '{"kind":"DeleteOptions",…}'`.
    fn delete(&self, path: &str, policy: &str) -> Value {
        let body = format!(
            r#"{{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"{policy}"}}"#
        );
        let out = std::process::Command::new("curl")
            .args(["-sS", "-X", "DELETE", &format!("{}{path}", self.url)])
            .args(["-d", &body, "-H", "Content-Type: application/json"])
            .output()
            .expect("running curl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("a JSON answer")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn owned(p: &Pod) -> bool {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .next()
        .is_some()
}

/// Applies `my-repset` in `ns` and waits for its three pods.
async fn my_repset(s: &Server, ns: &str, pods: &Api<Pod>) {
    s.kubectl_stdin_ok(&["apply", "-n", ns, "-f", "-"], MY_REPSET)
        .await;
    eventually("the ReplicaSet's three pods", T, || async {
        let p = active(pods).await;
        p.len() == 3 && p.iter().all(owned)
    })
    .await;
}

#[tokio::test]
async fn deleting_my_repset_through_kubectl_proxy_and_curl_with_each_propagation_policy() {
    let s = Server::living(&["--in-memory"]).await;
    let proxy = Proxy::start(&s).await;
    for policy in ["Foreground", "Background", "Orphan"] {
        let ns = fresh_namespace(&s.client(), &policy.to_lowercase()).await;
        let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
        let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
        my_repset(&s, &ns, &pods).await;
        let answer = proxy.delete(
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets/my-repset"),
            policy,
        );
        match policy {
            // The owner goes at once; its dependents follow.
            "Background" => assert_eq!(answer["kind"], "Status", "{answer}"),
            // The owner waits, marked, while the collector deletes (Foreground) or orphans
            // (Orphan) its dependents.
            _ => {
                let finalizer = if policy == "Foreground" {
                    "foregroundDeletion"
                } else {
                    "orphan"
                };
                assert!(
                    answer["metadata"]["deletionTimestamp"].is_string(),
                    "{answer}"
                );
                assert_eq!(answer["metadata"]["finalizers"][0], finalizer, "{answer}");
            }
        }
        eventually(&format!("{policy}: the ReplicaSet gone"), GONE, || async {
            sets.get_opt("my-repset").await.unwrap().is_none()
        })
        .await;
        if policy == "Orphan" {
            eventually("the pods orphaned", T, || async {
                let p = active(&pods).await;
                p.len() == 3 && !p.iter().any(owned)
            })
            .await;
        } else {
            eventually(&format!("{policy}: the pods collected"), T, || async {
                active(&pods).await.is_empty()
            })
            .await;
        }
    }
}

#[tokio::test]
async fn kubectl_delete_cascade_false_orphans_the_pods() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "cascade-false").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    my_repset(&s, &ns, &pods).await;
    let out = s
        .kubectl(&[
            "delete",
            "-n",
            &ns,
            "replicaset",
            "my-repset",
            "--cascade=false",
        ])
        .await;
    assert!(out.status.success(), "{out:?}");
    // kubectl itself warns that the boolean is deprecated.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cascade=orphan"), "{stderr}");
    eventually("the pods orphaned", T, || async {
        let p = active(&pods).await;
        p.len() == 3 && !p.iter().any(owned)
    })
    .await;
}

#[tokio::test]
async fn a_deployment_deleted_with_each_cascade() {
    let s = Server::living(&["--in-memory"]).await;
    for cascade in ["background", "foreground", "orphan"] {
        let ns = fresh_namespace(&s.client(), cascade).await;
        let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
        let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
        let deployments: Api<Deployment> = Api::namespaced(s.client(), &ns);
        s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], NGINX_DEPLOYMENT)
            .await;
        eventually("a ReplicaSet and three pods", T, || async {
            sets.list(&ListParams::default()).await.unwrap().items.len() == 1
                && active(&pods).await.len() == 3
        })
        .await;
        s.kubectl_ok(&[
            "delete",
            "-n",
            &ns,
            "deployment",
            "nginx-deployment",
            &format!("--cascade={cascade}"),
        ])
        .await;
        eventually(&format!("{cascade}: the Deployment gone"), GONE, || async {
            deployments
                .get_opt("nginx-deployment")
                .await
                .unwrap()
                .is_none()
        })
        .await;
        let rs_left = || async { sets.list(&ListParams::default()).await.unwrap().items.len() };
        if cascade == "orphan" {
            eventually("the ReplicaSet orphaned, its pods kept", T, || async {
                let rs = sets.list(&ListParams::default()).await.unwrap().items;
                rs.len() == 1
                    && rs[0]
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .next()
                        .is_none()
                    && active(&pods).await.len() == 3
            })
            .await;
        } else {
            // The page's note: ReplicaSets *and* their pods go.
            eventually(
                &format!("{cascade}: ReplicaSets and pods gone"),
                T,
                || async { rs_left().await == 0 && active(&pods).await.is_empty() },
            )
            .await;
        }
    }
}
