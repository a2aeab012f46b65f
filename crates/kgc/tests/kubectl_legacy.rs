//! kubectl 1.20 (Debian's `kubernetes-client`), which knows only legacy discovery (`/api`,
//! `/apis`, then one `/apis/G/V` per group-version), sends JSON bodies from its generators,
//! waits on deletion without bookmarks, and validates `create -f`/`apply -f` client-side
//! against `/openapi/v2`. Every assertion is what this
//! kubectl prints against a real cluster.
//!
//! The binary is `$KGC_LEGACY_KUBECTL` (set by `.ci/run`), else
//! `/opt/kubectl-1.20/usr/bin/kubectl`; when it is missing the tests fail naming the package.

kgc_testsupport::bind_kgc!();

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const DEFAULT_LEGACY_KUBECTL: &str = "/opt/kubectl-1.20/usr/bin/kubectl";

/// The kubectl 1.20 binary; panics naming the package when it is missing (never skips).
fn legacy_kubectl() -> PathBuf {
    let path = std::env::var_os("KGC_LEGACY_KUBECTL")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LEGACY_KUBECTL));
    let executable = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    assert!(
        executable,
        "kubectl 1.20 (Debian package `kubernetes-client`) is required by the legacy-discovery \
         tests but {} is not an executable file. Install it as .ci/run does: `apt-get download \
         kubernetes-client && dpkg-deb -x kubernetes-client_*.deb /opt/kubectl-1.20`, or point \
         KGC_LEGACY_KUBECTL at it.",
        path.display()
    );
    path
}

/// A server, a namespace and kubectl 1.20 with its own discovery cache.
struct Legacy {
    s: Server,
    ns: String,
    cache: tempfile::TempDir,
}

impl Legacy {
    async fn start(prefix: &str) -> Self {
        let kubectl = legacy_kubectl();
        let s = Server::start().await;
        let ns = fresh_namespace(&s.client(), prefix).await;
        let cache = tempfile::Builder::new()
            .prefix("kgc-kubectl120-cache-")
            .tempdir()
            .expect("creating a cache dir");
        let l = Legacy { s, ns, cache };
        let out = std::process::Command::new(&kubectl)
            .args(["version", "--client", "--short"])
            .output()
            .expect("running kubectl 1.20");
        let v = String::from_utf8_lossy(&out.stdout);
        assert!(
            v.contains("Client Version: v1.20."),
            "{} is not kubectl 1.20: {v}",
            kubectl.display()
        );
        l
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(legacy_kubectl());
        cmd.arg(format!("--cache-dir={}", self.cache.path().display()))
            .args(args)
            .env("KUBECONFIG", self.s.kubeconfig_path())
            .env_remove("KUBECACHEDIR")
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str], input: Option<&str>) -> Output {
        run_kubectl(self.command(args), "kubectl 1.20", args, input).await
    }

    #[track_caller]
    fn check(args: &[&str], o: &Output) -> String {
        assert!(
            o.status.success(),
            "kubectl 1.20 {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    async fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args, None).await;
        Self::check(args, &o)
    }

    async fn ok_in(&self, args: &[&str], input: &str) -> String {
        let o = self.run(args, Some(input)).await;
        Self::check(args, &o)
    }

    async fn err(&self, args: &[&str]) -> String {
        let o = self.run(args, None).await;
        assert!(
            !o.status.success(),
            "kubectl 1.20 {args:?} was expected to fail:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-o", "json"]);
        let out = self.ok(&a).await;
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{a:?}: not JSON ({e}): {out}"))
    }

    /// The legacy discovery cache kubectl wrote for this server.
    fn discovery_dir(&self) -> PathBuf {
        let host = self.s.url().trim_start_matches("http://").replace(':', "_");
        self.cache.path().join("discovery").join(host)
    }
}

fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

fn table(out: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = cells(
        lines
            .next()
            .unwrap_or_else(|| panic!("no table in {out:?}")),
    );
    (header, lines.map(cells).collect())
}

#[track_caller]
fn row<'a>(rows: &'a [Vec<String>], name: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r.first().is_some_and(|c| c == name))
        .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
}

fn configmap(ns: &str, name: &str, data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": ns}, "data": data})
    .to_string()
}

/// `kubectl api-versions` and `api-resources` through legacy discovery; the per-group-version
/// cache files prove the legacy path was taken.
#[tokio::test]
async fn legacy_discovery() {
    let l = Legacy::start("legacy-disc").await;
    let out = l.ok(&["api-versions"]).await;
    for want in [
        "v1",
        "apps/v1",
        "batch/v1",
        "apiextensions.k8s.io/v1",
        "networking.k8s.io/v1",
    ] {
        assert!(out.lines().any(|v| v == want), "{want} missing:\n{out}");
    }
    let (header, rows) = table(&l.ok(&["api-resources"]).await);
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    assert_eq!(
        h,
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    assert_eq!(row(&rows, "pods"), ["pods", "po", "v1", "true", "Pod"]);
    assert_eq!(
        row(&rows, "deployments"),
        ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    );
    let dir = l.discovery_dir();
    assert!(
        Path::exists(&dir.join("servergroups.json")),
        "no {dir:?}/servergroups.json"
    );
    assert!(
        Path::exists(&dir.join("apps").join("v1").join("serverresources.json")),
        "kubectl 1.20 did not fetch /apis/apps/v1"
    );
    assert!(
        Path::exists(&dir.join("v1").join("serverresources.json")),
        "no /api/v1 in the cache"
    );
}

/// `kubectl get`: table with the upstream columns, -o json/yaml/name/jsonpath.
#[tokio::test]
async fn legacy_get() {
    let l = Legacy::start("legacy-get").await;
    let ns = &l.ns;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let out = l
        .ok_in(&["create", "--validate=false", "-f", "-"], &pod.to_string())
        .await;
    assert_eq!(out.trim(), "pod/p1 created");
    let (header, rows) = table(&l.ok(&["get", "pods", "-n", ns]).await);
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    assert_eq!(h, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(&row(&rows, "p1")[1..4], ["0/1", "Pending", "0"]);
    let v = l.json(&["pod", "p1", "-n", ns]).await;
    assert_eq!(v["spec"]["containers"][0]["image"], "nginx");
    let y = l.ok(&["get", "pod", "p1", "-n", ns, "-o", "yaml"]).await;
    assert!(
        y.starts_with("apiVersion: v1\nkind: Pod\nmetadata:\n"),
        "{y}"
    );
    assert_eq!(
        l.ok(&["get", "pods", "-n", ns, "-o", "name"]).await,
        "pod/p1\n"
    );
    assert_eq!(
        l.ok(&[
            "get",
            "pod",
            "p1",
            "-n",
            ns,
            "-o",
            "jsonpath={.metadata.name}"
        ])
        .await,
        "p1"
    );
    let err = l.err(&["get", "pod", "nope", "-n", ns]).await;
    assert_eq!(
        err.trim(),
        "Error from server (NotFound): pods \"nope\" not found"
    );
}

/// `kubectl create -f` with kubectl 1.20's default client-side validation, which downloads
/// `/openapi/v2` (protobuf). A real cluster serves it, so this just works there.
#[tokio::test]
async fn legacy_create_validated() {
    let l = Legacy::start("legacy-validate").await;
    let f =
        l.s.write_file("cm.yaml", &configmap(&l.ns, "cm1", json!({"a": "1"})));
    let out = l.ok(&["create", "-f", f.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "configmap/cm1 created");
}

/// `kubectl create <generator>` (JSON bodies in 1.20).
#[tokio::test]
async fn legacy_create_generators() {
    let l = Legacy::start("legacy-gen").await;
    let ns = &l.ns;
    let cases: [(&[&str], &str); 5] = [
        (
            &["create", "configmap", "cm1", "--from-literal=a=1"],
            "configmap/cm1 created",
        ),
        (
            &["create", "secret", "generic", "s1", "--from-literal=a=1"],
            "secret/s1 created",
        ),
        (
            &["create", "deployment", "d1", "--image=nginx"],
            "deployment.apps/d1 created",
        ),
        (
            &["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
            "service/svc1 created",
        ),
        (
            &["create", "job", "j1", "--image=busybox"],
            "job.batch/j1 created",
        ),
    ];
    for (args, want) in cases {
        let mut a = args.to_vec();
        a.extend_from_slice(&["-n", ns]);
        assert_eq!(l.ok(&a).await.trim(), want, "kubectl 1.20 {a:?}");
    }
    let name = unique("legacy-ns");
    assert_eq!(
        l.ok(&["create", "namespace", &name]).await.trim(),
        format!("namespace/{name} created")
    );
    assert_eq!(
        l.json(&["cm", "cm1", "-n", ns]).await["data"],
        json!({"a": "1"})
    );
}

/// `kubectl apply -f` (client-side): created, configured, unchanged.
#[tokio::test]
async fn legacy_apply() {
    let l = Legacy::start("legacy-apply").await;
    let ns = &l.ns;
    let f = l.s.write_file(
        "cm.yaml",
        &configmap(ns, "cm1", json!({"a": "1", "b": "2"})),
    );
    let f = f.to_str().unwrap();
    let apply = ["apply", "--validate=false", "-f", f];
    assert_eq!(l.ok(&apply).await.trim(), "configmap/cm1 created");
    assert_eq!(l.ok(&apply).await.trim(), "configmap/cm1 unchanged");
    l.s.write_file("cm.yaml", &configmap(ns, "cm1", json!({"a": "9"})));
    assert_eq!(l.ok(&apply).await.trim(), "configmap/cm1 configured");
    assert_eq!(
        l.json(&["cm", "cm1", "-n", ns]).await["data"],
        json!({"a": "9"})
    );
}

/// `kubectl apply --server-side` (1.20 sends no fieldValidation) with a conflict.
#[tokio::test]
async fn legacy_apply_server_side() {
    let l = Legacy::start("legacy-ssa").await;
    let ns = &l.ns;
    let f =
        l.s.write_file("cm.yaml", &configmap(ns, "cm1", json!({"a": "1"})));
    let out = l
        .ok(&[
            "apply",
            "--server-side",
            "--validate=false",
            "-f",
            f.to_str().unwrap(),
        ])
        .await;
    assert_eq!(out.trim(), "configmap/cm1 serverside-applied");
    let g =
        l.s.write_file("other.yaml", &configmap(ns, "cm1", json!({"a": "2"})));
    let g = g.to_str().unwrap();
    let err = l
        .err(&[
            "apply",
            "--server-side",
            "--validate=false",
            "--field-manager=other",
            "-f",
            g,
        ])
        .await;
    assert!(
        err.starts_with(
            "error: Apply failed with 1 conflict: conflict with \"kubectl\": .data.a\n"
        ),
        "{err}"
    );
    let out = l
        .ok(&[
            "apply",
            "--server-side",
            "--validate=false",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            g,
        ])
        .await;
    assert_eq!(out.trim(), "configmap/cm1 serverside-applied");
    assert_eq!(
        l.json(&["cm", "cm1", "-n", ns]).await["data"],
        json!({"a": "2"})
    );
}

/// `kubectl patch` (merge, json, strategic), `label`, `annotate`.
#[tokio::test]
async fn legacy_patch_label_annotate() {
    let l = Legacy::start("legacy-patch").await;
    let ns = &l.ns;
    l.ok(&["create", "deployment", "d1", "--image=nginx", "-n", ns])
        .await;
    let cases: [(&str, &str); 3] = [
        ("merge", r#"{"metadata":{"labels":{"m":"1"}}}"#),
        (
            "json",
            r#"[{"op":"add","path":"/metadata/labels/j","value":"2"}]"#,
        ),
        (
            "strategic",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}"#,
        ),
    ];
    for (ty, p) in cases {
        let out = l
            .ok(&["patch", "deploy", "d1", "-n", ns, "--type", ty, "-p", p])
            .await;
        assert_eq!(out.trim(), "deployment.apps/d1 patched", "--type {ty}");
    }
    let v = l.json(&["deploy", "d1", "-n", ns]).await;
    assert_eq!(v["metadata"]["labels"]["m"], "1");
    assert_eq!(v["metadata"]["labels"]["j"], "2");
    let cs = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0]["image"], "nginx:2");
    assert_eq!(
        l.ok(&["label", "deploy", "d1", "-n", ns, "tier=web"])
            .await
            .trim(),
        "deployment.apps/d1 labeled"
    );
    assert_eq!(
        l.ok(&["annotate", "deploy", "d1", "-n", ns, "note=x"])
            .await
            .trim(),
        "deployment.apps/d1 annotated"
    );
}

/// `kubectl scale` through the Scale subresource.
#[tokio::test]
async fn legacy_scale() {
    let l = Legacy::start("legacy-scale").await;
    let ns = &l.ns;
    l.ok(&["create", "deployment", "d1", "--image=nginx", "-n", ns])
        .await;
    assert_eq!(
        l.ok(&["scale", "deploy", "d1", "--replicas=4", "-n", ns])
            .await
            .trim(),
        "deployment.apps/d1 scaled"
    );
    assert_eq!(
        l.json(&["deploy", "d1", "-n", ns]).await["spec"]["replicas"],
        4
    );
}

/// `kubectl delete` (1.20 waits with a plain list+watch) with the cascade modes.
#[tokio::test]
async fn legacy_delete_cascade() {
    let l = Legacy::start("legacy-delete").await;
    let ns = &l.ns;
    for mode in ["background", "foreground", "orphan"] {
        let parent = format!("parent-{mode}");
        let child = format!("child-{mode}");
        l.ok_in(
            &["create", "--validate=false", "-f", "-"],
            &configmap(ns, &parent, json!({})),
        )
        .await;
        let uid = l
            .ok(&[
                "get",
                "cm",
                &parent,
                "-n",
                ns,
                "-o",
                "jsonpath={.metadata.uid}",
            ])
            .await;
        let c = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": child, "namespace": ns,
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": parent, "uid": uid}]}});
        l.ok_in(&["create", "--validate=false", "-f", "-"], &c.to_string())
            .await;
        let cascade = format!("--cascade={mode}");
        assert_eq!(
            l.ok(&["delete", "cm", &parent, "-n", ns, &cascade])
                .await
                .trim(),
            format!("configmap \"{parent}\" deleted")
        );
        let err = l.err(&["get", "cm", &parent, "-n", ns]).await;
        assert_eq!(
            err.trim(),
            format!("Error from server (NotFound): configmaps \"{parent}\" not found")
        );
        match mode {
            "orphan" => {
                let v = l.json(&["cm", &child, "-n", ns]).await;
                assert!(v["metadata"].get("ownerReferences").is_none(), "{v}");
            }
            "foreground" => {
                l.err(&["get", "cm", &child, "-n", ns]).await;
            }
            _ => {
                // (kubectl 1.20's `wait --for=delete` fails with "no matching resources found"
                // when the collector was faster, so poll instead.)
                let mut left = 300;
                while !l
                    .ok(&[
                        "get",
                        "cm",
                        &child,
                        "-n",
                        ns,
                        "--ignore-not-found",
                        "-o",
                        "name",
                    ])
                    .await
                    .is_empty()
                {
                    left -= 1;
                    assert!(left > 0, "the collector did not delete {child}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// `kubectl get -w`: the table, then a row per change.
#[tokio::test]
async fn legacy_get_watch() {
    let l = Legacy::start("legacy-watch").await;
    let ns = &l.ns;
    l.ok(&["create", "configmap", "before", "-n", ns]).await;
    let mut cmd = l.command(&["get", "cm", "-n", ns, "-w"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawning kubectl 1.20 get -w");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next =
        async || match tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await {
            Ok(Ok(Some(l))) => cells(&l),
            other => panic!("kubectl 1.20 get -w: no next line ({other:?})"),
        };
    assert_eq!(next().await, ["NAME", "DATA", "AGE"]);
    loop {
        if next().await[0] == "before" {
            break;
        }
    }
    l.ok(&[
        "create",
        "configmap",
        "after",
        "--from-literal=a=1",
        "-n",
        ns,
    ])
    .await;
    assert_eq!(&next().await[..2], ["after", "1"]);
    assert!(child.try_wait().unwrap().is_none(), "kubectl get -w exited");
}

/// A CRD and its objects: the new group is found through legacy discovery after the cache
/// misses; printer columns; merge patch; delete.
#[tokio::test]
async fn legacy_crd_and_custom_resources() {
    let l = Legacy::start("legacy-crd").await;
    let ns = &l.ns;
    // Warm the cache before the CRD exists, so the CR lookup must invalidate it.
    l.ok(&["get", "cm", "-n", ns]).await;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#;
    assert_eq!(
        l.ok_in(&["apply", "--validate=false", "-f", "-"], crd)
            .await
            .trim(),
        "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com created"
    );
    assert_eq!(
        l.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/gizmos.example.com",
            "--timeout=30s"
        ])
        .await
        .trim(),
        "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com condition met"
    );
    let g = format!(
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\n  namespace: {ns}\nspec:\n  size: 2\n"
    );
    assert_eq!(
        l.ok_in(&["apply", "--validate=false", "-f", "-"], &g)
            .await
            .trim(),
        "gizmo.example.com/g1 created"
    );
    let (header, rows) = table(&l.ok(&["get", "gz", "-n", ns]).await);
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    assert_eq!(h, ["NAME", "SIZE", "AGE"]);
    assert_eq!(row(&rows, "g1")[1], "2");
    assert_eq!(
        l.ok(&[
            "patch",
            "gizmo",
            "g1",
            "-n",
            ns,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":3}}"#
        ])
        .await
        .trim(),
        "gizmo.example.com/g1 patched"
    );
    assert_eq!(l.json(&["gizmo", "g1", "-n", ns]).await["spec"]["size"], 3);
    assert_eq!(
        l.ok(&["delete", "gizmo", "g1", "-n", ns]).await.trim(),
        "gizmo.example.com \"g1\" deleted"
    );
    assert_eq!(
        l.ok(&["delete", "crd", "gizmos.example.com"]).await.trim(),
        "customresourcedefinition.apiextensions.k8s.io \"gizmos.example.com\" deleted"
    );
}

/// `kubectl describe`.
#[tokio::test]
async fn legacy_describe() {
    let l = Legacy::start("legacy-describe").await;
    let ns = &l.ns;
    l.ok(&["create", "configmap", "cm1", "--from-literal=a=1", "-n", ns])
        .await;
    let out = l.ok(&["describe", "cm", "cm1", "-n", ns]).await;
    assert!(out.starts_with("Name:         cm1\n"), "{out}");
    assert!(out.contains(&format!("\nNamespace:    {ns}\n")), "{out}");
    assert!(out.contains("\nData\n====\na:\n----\n1\n"), "{out}");
    assert!(out.trim_end().ends_with("Events:  <none>"), "{out}");
}
