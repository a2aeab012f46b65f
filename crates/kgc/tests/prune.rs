//! Deploy-side garbage collection (issue 6): `kgc apply`, `kgc prune`, `kgc diff`, `kgc plan`,
//! `kgc delete` against a spawned `kgc serve`, one test per scenario of the issue. Each scenario
//! runs the real `kgc` binary and checks the live objects with kubectl.

kgc_testsupport::bind_kgc!();

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::Value;

/// A deploy project: a source directory and the identity flags.
struct Project {
    dir: tempfile::TempDir,
    app: String,
    env: String,
    ns: String,
    extra: Vec<String>,
    /// Who runs `kgc`: the server's admin kubeconfig unless a test says otherwise.
    kubeconfig: PathBuf,
}

impl Project {
    fn new(s: &Server, app: &str, env: &str, ns: &str) -> Self {
        Project {
            dir: tempfile::tempdir().expect("a source directory"),
            app: app.into(),
            env: env.into(),
            ns: ns.into(),
            extra: Vec::new(),
            kubeconfig: s.kubeconfig_path(),
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn write(&self, file: &str, yaml: &str) {
        std::fs::write(self.path(file), yaml).expect("writing a source file");
    }

    fn remove(&self, file: &str) {
        std::fs::remove_file(self.path(file)).expect("removing a source file");
    }

    /// Runs `kgc <cmd> DIR --app --env -n … args`.
    async fn kgc(&self, cmd: &str, args: &[&str]) -> Output {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.arg(cmd);
        if cmd != "delete" && !args.contains(&"--plan") {
            c.arg(self.dir.path());
        }
        c.args(["--app", &self.app, "--env", &self.env, "-n", &self.ns])
            .args(&self.extra)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .kill_on_drop(true);
        tokio::time::timeout(Duration::from_secs(120), c.output())
            .await
            .expect("kgc finished within 120 s")
            .expect("running kgc")
    }

    /// `kgc apply -o json`, expecting exit code `code`; returns the report.
    async fn apply(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let out = self.kgc("apply", &all).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "kgc apply {args:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `kind/name` rows of `kubectl get KIND -n NS` (names only).
async fn names(s: &Server, kind: &str, ns: Option<&str>) -> Vec<String> {
    let mut args = vec!["get", kind, "-o", "name"];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    let mut v: Vec<String> = s
        .kubectl_ok(&args)
        .await
        .lines()
        .map(|l| l.rsplit('/').next().unwrap_or(l).to_owned())
        .collect();
    v.sort();
    v
}

/// The set's deleted objects in a report, as `Kind ns/name` strings.
fn deleted(report: &Value) -> Vec<String> {
    let mut v: Vec<String> = report["deleted"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| key(&d[0]))
        .collect();
    v.sort();
    v
}

fn key(k: &Value) -> String {
    let kind = k["gk"]["kind"].as_str().unwrap_or("");
    let ns = k["namespace"].as_str().unwrap_or("");
    let name = k["name"].as_str().unwrap_or("");
    if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    }
}

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: v}}\n---\n")
}

fn cm_in(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\ndata: {{k: v}}\n---\n"
    )
}

fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n---\n")
}

async fn setup(prefix: &str) -> (Server, String) {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), prefix).await;
    // The namespace's own write (its `default` ServiceAccount, which upstream's e2e framework
    // waits for too) is done before a test counts revisions.
    let sa: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(s.client(), &ns);
    eventually(
        "the namespace's default ServiceAccount",
        Duration::from_secs(10),
        || async { matches!(sa.get_opt("default").await, Ok(Some(_))) },
    )
    .await;
    (s, ns)
}

#[tokio::test]
async fn remove_an_object() {
    let (s, ns) = setup("rm-object").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    // The Secret's write-only stringData must not make every re-apply a write.
    const SECRET: &str =
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n";
    p.write("secret.yaml", SECRET);
    p.write("web.yaml", &(cm("a") + &cm("b")));
    let r = p.apply(&[], 0).await;
    assert_eq!(r["applied"].as_array().map(Vec::len), Some(3));
    // An unchanged re-apply writes nothing.
    let before = store_revision(&s.client()).await;
    let r = p.apply(&[], 0).await;
    assert!(
        r["applied"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|a| a[1] == "unchanged"),
        "{r}"
    );
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "an unchanged re-apply wrote something"
    );
    p.write("web.yaml", &cm("a"));
    // A dry run reports the deletion and writes nothing.
    let r = p.apply(&["--dry-run"], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/b")]);
    assert_eq!(r["deleted"][0][1], "would-delete", "{r}");
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "a dry run wrote something"
    );
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/b")]);
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["a", "kgc-shop-prod"]
    );
}

#[tokio::test]
async fn rename_an_object() {
    let (s, ns) = setup("rename").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("old"));
    p.apply(&[], 0).await;
    p.write("web.yaml", &cm("new"));
    // --prune=false applies and keeps the old name.
    let r = p.apply(&["--prune=false"], 0).await;
    assert!(deleted(&r).is_empty(), "{r}");
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["kgc-shop-prod", "new", "old"]
    );
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/old")]);
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["kgc-shop-prod", "new"]
    );
}

#[tokio::test]
async fn remove_a_whole_component_file() {
    let (s, ns) = setup("rm-file").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("web"));
    p.write("db.yaml", &(cm("db-1") + &cm("db-2")));
    p.apply(&[], 0).await;
    let live = s
        .kubectl_ok(&["get", "configmap", "db-1", "-n", &ns, "-o", "json"])
        .await;
    let live: Value = serde_json::from_str(&live).unwrap();
    assert_eq!(live["metadata"]["annotations"]["kgc.io/component"], "db");
    p.remove("db.yaml");
    let r = p.apply(&[], 0).await;
    assert_eq!(
        deleted(&r),
        [
            format!("ConfigMap {ns}/db-1"),
            format!("ConfigMap {ns}/db-2")
        ]
    );
}

#[tokio::test]
async fn move_an_object_to_another_namespace() {
    let (s, ns) = setup("move").await;
    let other = fresh_namespace(&s.client(), "move-to").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("a"));
    p.apply(&[], 0).await;
    p.write("web.yaml", &cm_in(&other, "a"));
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/a")]);
    assert_eq!(names(&s, "configmaps", Some(&other)).await, ["a"]);
}

#[tokio::test]
async fn remove_the_last_object_of_a_namespace() {
    let (s, ns) = setup("last-ns").await;
    let other = fresh_namespace(&s.client(), "last-ns-other").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &cm_in(&other, "lonely")));
    p.apply(&[], 0).await;
    // The source no longer mentions `other` at all: the inventory still does.
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {other}/lonely")]);
    assert!(names(&s, "configmaps", Some(&other)).await.is_empty());
    // The parent was trimmed: `other` is no longer recorded.
    let parent = s
        .kubectl_ok(&["get", "configmap", "kgc-shop-prod", "-n", &ns, "-o", "json"])
        .await;
    let parent: Value = serde_json::from_str(&parent).unwrap();
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/additional-namespaces"],
        ""
    );
}

#[tokio::test]
async fn remove_the_last_cluster_scoped_object() {
    let (s, ns) = setup("last-cluster").await;
    let extra = unique("last-cluster-ns");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &namespace(&extra)));
    p.apply(&[], 0).await;
    assert!(names(&s, "namespaces", None).await.contains(&extra));
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("Namespace {extra}")]);
    poll_gone(&s, "namespace", &extra, None).await;
}

async fn poll_gone(s: &Server, kind: &str, name: &str, ns: Option<&str>) {
    let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if s.kubectl_ok(&args).await.trim().is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{kind} {name} was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
";

fn widget(name: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {{size: 1}}\n---\n"
    )
}

#[tokio::test]
async fn first_apply_with_a_crd_and_its_custom_resources() {
    let (s, ns) = setup("crd").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("crd.yaml", CRD);
    p.write("widgets.yaml", &(widget("w1") + &widget("w2")));
    // The dry run of a first apply cannot dry-run the custom resources: not an error.
    p.apply(&["--dry-run"], 0).await;
    p.apply(&[], 0).await;
    assert_eq!(names(&s, "widgets", Some(&ns)).await, ["w1", "w2"]);
    p.apply(&[], 0).await;
    // Removing one widget prunes it; removing the CRD and the rest prunes the widgets, then
    // the CRD.
    p.write("widgets.yaml", &widget("w1"));
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("Widget {ns}/w2")]);
    p.remove("widgets.yaml");
    p.remove("crd.yaml");
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&["--wait"], 0).await;
    assert_eq!(
        deleted(&r),
        [
            "CustomResourceDefinition widgets.example.com".to_owned(),
            format!("Widget {ns}/w1")
        ]
    );
    poll_gone(&s, "crd", "widgets.example.com", None).await;
}

#[tokio::test]
async fn controller_created_children_carrying_copied_labels() {
    let (s, ns) = setup("children").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("parent"));
    p.apply(&[], 0).await;
    let parent: Value = serde_json::from_str(
        &s.kubectl_ok(&["get", "configmap", "parent", "-n", &ns, "-o", "json"])
            .await,
    )
    .unwrap();
    // A controller's child with every label and annotation of its owner copied.
    let mut child = parent.clone();
    let meta = child["metadata"].as_object_mut().unwrap();
    for f in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(f);
    }
    meta.insert("name".into(), "parent-child".into());
    meta.insert(
        "ownerReferences".into(),
        serde_json::json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
            "uid": parent["metadata"]["uid"], "controller": true}]),
    );
    s.kubectl_stdin_ok(&["create", "-f", "-"], &child.to_string())
        .await;
    let r = p.apply(&[], 0).await;
    assert!(deleted(&r).is_empty(), "{r}");
    assert!(
        names(&s, "configmaps", Some(&ns))
            .await
            .contains(&"parent-child".to_owned())
    );
}

#[tokio::test]
async fn a_foreign_object_with_copied_labels() {
    let (s, ns) = setup("copy").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("orig"));
    p.apply(&[], 0).await;
    // `kubectl get -o json | rename | kubectl create`: labels and annotations copied.
    let mut copy: Value = serde_json::from_str(
        &s.kubectl_ok(&["get", "configmap", "orig", "-n", &ns, "-o", "json"])
            .await,
    )
    .unwrap();
    let meta = copy["metadata"].as_object_mut().unwrap();
    for f in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(f);
    }
    meta.insert("name".into(), "copy".into());
    s.kubectl_stdin_ok(&["create", "-f", "-"], &copy.to_string())
        .await;
    let r = p.apply(&[], 0).await;
    assert!(deleted(&r).is_empty(), "{r}");
    let kept: Vec<String> = r["kept"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|k| format!("{} {}", key(&k["key"]), k["reason"]))
        .collect();
    assert!(
        kept.iter()
            .any(|k| k.contains("/copy") && k.contains("a copy")),
        "{kept:?}"
    );
}

#[tokio::test]
async fn two_environments_and_two_tags_in_one_namespace() {
    let (s, ns) = setup("envs").await;
    let a = Project::new(&s, "shop", "staging", &ns);
    let b = Project::new(&s, "shop", "prod", &ns);
    let mut t1 = Project::new(&s, "shop", "prod", &ns);
    t1.extra = vec!["--tag".into(), "pr-1".into()];
    let mut t2 = Project::new(&s, "shop", "prod", &ns);
    t2.extra = vec!["--tag".into(), "pr-2".into()];
    a.write("x.yaml", &(cm("staging-1") + &cm("staging-2")));
    b.write("x.yaml", &(cm("prod-1") + &cm("prod-2")));
    t1.write("x.yaml", &(cm("t1-1") + &cm("t1-2")));
    t2.write("x.yaml", &(cm("t2-1") + &cm("t2-2")));
    for p in [&a, &b, &t1, &t2] {
        p.apply(&[], 0).await;
    }
    // Each set prunes only its own.
    for (p, prefix) in [(&a, "staging"), (&b, "prod"), (&t1, "t1"), (&t2, "t2")] {
        p.write("x.yaml", &cm(&format!("{prefix}-1")));
        let r = p.apply(&[], 0).await;
        assert_eq!(deleted(&r), [format!("ConfigMap {ns}/{prefix}-2")]);
    }
    let mut expected: Vec<String> = [
        "kgc-shop-prod",
        "kgc-shop-prod-pr-1",
        "kgc-shop-prod-pr-2",
        "kgc-shop-staging",
        "prod-1",
        "staging-1",
        "t1-1",
        "t2-1",
    ]
    .map(String::from)
    .into();
    expected.sort();
    assert_eq!(names(&s, "configmaps", Some(&ns)).await, expected);
    // An object another set owns is not taken over without --force-ownership.
    t1.write("x.yaml", &(cm("t1-1") + &cm("prod-1")));
    let out = t1.kgc("apply", &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("prod-1") && stderr(&out).contains("app=shop,env=prod"),
        "{}",
        stderr(&out)
    );
    t1.apply(&["--force-ownership"], 0).await;
    // Now tag pr-1 owns it: prod's next run refuses to take it back.
    let out = b.kgc("apply", &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("tag=pr-1"), "{}", stderr(&out));
}

#[tokio::test]
async fn an_interrupted_run_followed_by_a_clean_run_prunes_correctly() {
    let (s, ns) = setup("interrupt").await;
    let extra = unique("interrupt-new");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &cm("a"));
    p.apply(&[], 0).await;
    // A run that adds a namespace of 600 objects is killed as soon as the namespace appears.
    let mut big = namespace(&extra);
    for i in 0..600 {
        big.push_str(&cm_in(&extra, &format!("c{i}")));
    }
    p.write("big.yaml", &big);
    let mut child = tokio::process::Command::from(Kgc::command())
        .arg("apply")
        .arg(p.dir.path())
        .args(["--app", "shop", "--env", "prod", "-n", &ns, "--kubeconfig"])
        .arg(s.kubeconfig_path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning kgc apply");
    let url = format!("{}/api/v1/namespaces/{extra}/configmaps", s.url());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = http_get(&url);
        if status == 200 && body.contains("\"name\":\"c") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().await.expect("killing kgc apply");
    let created = names(&s, "configmaps", Some(&extra)).await.len();
    assert!(
        created > 0 && created < 600,
        "interrupted after {created} objects"
    );
    // The clean run's source has neither the namespace nor its objects.
    p.remove("big.yaml");
    let r = p.apply(&["--wait", "--timeout", "60s"], 0).await;
    let d = deleted(&r);
    assert!(d.contains(&format!("Namespace {extra}")), "{d:?}");
    assert_eq!(d.len(), created + 1, "{d:?}");
    poll_gone(&s, "namespace", &extra, None).await;
}

#[tokio::test]
async fn max_deletes_and_an_empty_render() {
    let (s, ns) = setup("guards").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &cm("b") + &cm("c")));
    p.apply(&[], 0).await;
    p.write("web.yaml", &cm("a"));
    let before = store_revision(&s.client()).await;
    let out = p.kgc("apply", &["--max-deletes", "1"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--max-deletes 1"), "{}", stderr(&out));
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "a refused run wrote something"
    );
    // An empty render (the file is there but renders nothing) prunes nothing.
    p.write("web.yaml", "# nothing\n");
    let out = p.kgc("apply", &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--allow-empty"), "{}", stderr(&out));
    assert_eq!(names(&s, "configmaps", Some(&ns)).await.len(), 4);
    let r = p.apply(&["--allow-empty"], 0).await;
    assert_eq!(deleted(&r).len(), 3);
}

#[tokio::test]
async fn plan_drift() {
    let (s, ns) = setup("plan").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &cm("b")));
    p.apply(&[], 0).await;
    p.write("web.yaml", &(cm("a") + &cm("c")));
    let plan_dir = tempfile::tempdir().unwrap();
    let plan_file = plan_dir.path().join("plan.json");
    let plan_arg = plan_file.to_str().unwrap();
    let out = p.kgc("plan", &["--out", plan_arg]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Someone changes the object the plan deletes: the plan is refused, nothing is written.
    s.kubectl_ok(&["label", "configmap", "b", "-n", &ns, "touched=yes"])
        .await;
    let before = store_revision(&s.client()).await;
    let out = p.kgc("apply", &["--plan", plan_arg]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("changed since the plan") && stderr(&out).contains("/b"),
        "{}",
        stderr(&out)
    );
    assert_eq!(store_revision(&s.client()).await, before);
    // A fresh plan executes exactly (YAML too); `--exit-code` says it would change things.
    let out = p
        .kgc("plan", &["--out", plan_arg, "-o", "yaml", "--exit-code"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = p.apply(&["--plan", plan_arg], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/b")]);
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["a", "c", "kgc-shop-prod"]
    );
}

#[tokio::test]
async fn diff_prune_and_delete() {
    let (s, ns) = setup("diff").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &cm("b")));
    p.apply(&[], 0).await;
    p.write(
        "web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: changed}\n---\n",
    );
    // kubectl diff's exit codes: 1 for differences.
    let out = p.kgc("diff", &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("-  k: v") && text.contains("+  k: changed"),
        "{text}"
    );
    assert!(
        text.contains(&format!("live/ConfigMap {ns}/b")) && text.contains("(pruned)"),
        "{text}"
    );
    // `kgc prune` deletes without applying.
    let out = p.kgc("prune", &["--dry-run", "--exit-code"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = p.kgc("prune", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["a", "kgc-shop-prod"]
    );
    // `kgc delete` removes the set and its parent.
    let out = p.kgc("delete", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(names(&s, "configmaps", Some(&ns)).await.is_empty());
}

#[tokio::test]
async fn bad_input_fails_before_anything_is_written() {
    let (s, ns) = setup("bad").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    let before = store_revision(&s.client()).await;
    let cases: [(&str, &str, &str); 5] = [
        (
            "a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\nkind: [\n",
            "a.yaml:",
        ),
        (
            "b.yaml",
            "apiVersion: v1\nmetadata: {name: x}\n",
            "has no kind",
        ),
        (
            "c.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
            "c.yaml:1: ConfigMap has no metadata.name",
        ),
        (
            "d.yaml",
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n",
            "unknown kind Gadget",
        ),
        ("e.yaml", &(cm("dup") + &cm("dup")), "defined twice"),
    ];
    for (file, text, expected) in cases {
        p.write("ok.yaml", &cm("fine"));
        p.write(file, text);
        let out = p.kgc("apply", &[]).await;
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert!(stderr(&out).contains(expected), "{file}: {}", stderr(&out));
        p.remove(file);
    }
    // Duplicates across files.
    p.write("x.yaml", &cm("same"));
    p.write("y.yaml", &cm("same"));
    let out = p.kgc("apply", &[]).await;
    assert!(
        stderr(&out).contains("x.yaml") && stderr(&out).contains("y.yaml"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "bad input wrote something"
    );
    // A kubeconfig pointing nowhere.
    let kc = p.path("nowhere.kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    )
    .unwrap();
    let out = tokio::process::Command::from(Kgc::command())
        .arg("apply")
        .arg(p.dir.path())
        .args(["--app", "shop", "--env", "prod", "--kubeconfig"])
        .arg(&kc)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("127.0.0.1:1"), "{}", stderr(&out));
}

#[tokio::test]
async fn wait_reports_the_finalizer_that_holds_a_deleted_object() {
    let (s, ns) = setup("finalizer").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write(
        "web.yaml",
        &(cm("a")
            + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/hold]}\n---\n"),
    );
    p.apply(&[], 0).await;
    p.write("web.yaml", &cm("a"));
    // Exit code 3: finished, but an object is still being deleted.
    let r = p.apply(&["--wait", "--timeout", "1s"], 3).await;
    let outcome = &r["deleted"][0][1];
    assert_eq!(
        outcome["waiting"]["finalizers"][0], "example.com/hold",
        "{r}"
    );
    // The table says the same, and YAML output works too.
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await;
    poll_gone(&s, "configmap", "held", Some(&ns)).await;
    let out = p.kgc("apply", &["-o", "yaml"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("applied:"));
}

#[tokio::test]
async fn a_namespace_holding_someone_elses_objects_is_kept() {
    let (s, ns) = setup("ns-others").await;
    let extra = unique("ns-others-extra");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write(
        "web.yaml",
        &(cm("a") + &namespace(&extra) + &cm_in(&extra, "ours")),
    );
    p.apply(&[], 0).await;
    // Someone puts an unlabelled object of their own into the set's namespace.
    s.kubectl_ok(&["create", "configmap", "theirs", "-n", &extra])
        .await;
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 0).await;
    let outcome = r["deleted"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d[0]["name"] == extra.as_str())
        .map(|d| d[1].clone())
        .unwrap_or_default();
    assert!(
        outcome["kept"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ConfigMap theirs")),
        "{r}"
    );
    assert_eq!(names(&s, "configmaps", Some(&extra)).await, ["theirs"]);
}

/// Issue 6, "a 403 on cluster-wide lists (run as a namespace-scoped user)": a user bound to
/// `edit` in the app's namespace only may not list anything cluster-wide, so `kgc apply` lists
/// per namespace and still prunes there; a cluster-scoped kind in scope cannot be listed at all,
/// so it is reported undetermined (exit 3) and nothing of it is deleted.
#[tokio::test]
async fn a_403_on_cluster_wide_lists_run_as_a_namespace_scoped_user() {
    let s = Server::start_secure(&[]).await;
    let ns = fresh_namespace(&s.client(), "ns-user").await;
    let deployer = add_user(&s, "deployer", &["-n", &ns, "--role", "edit"]);
    let mut p = Project::new(&s, "shop", "prod", &ns);
    p.kubeconfig = deployer.clone();
    let configmaps = || async { names(&s, "configmaps", Some(&ns)).await };

    p.write("web.yaml", &(cm("a") + &cm("b")));
    let r = p.apply(&[], 0).await;
    assert_eq!(r["applied"].as_array().map(Vec::len), Some(2), "{r}");
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/b")], "{r}");
    assert!(!configmaps().await.contains(&"b".to_owned()));

    // The admin adds a cluster-scoped object to the set; the namespace-scoped user then removes
    // it from the source together with a ConfigMap.
    let role = unique("ns-user-reader");
    let cluster_role = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {role}}}\nrules: []\n---\n"
    );
    p.write("web.yaml", &(cm("a") + &cm("c") + &cluster_role));
    p.kubeconfig = s.kubeconfig_path();
    p.apply(&[], 0).await;
    p.kubeconfig = deployer;
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 3).await;
    assert_eq!(deleted(&r), [format!("ConfigMap {ns}/c")], "{r}");
    let undetermined: Vec<&str> = r["undetermined"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u["gk"]["kind"].as_str())
        .collect();
    assert_eq!(undetermined, ["ClusterRole"], "{r}");
    assert!(!configmaps().await.contains(&"c".to_owned()));
    assert_eq!(
        names(&s, "clusterroles", None)
            .await
            .into_iter()
            .filter(|n| *n == role)
            .count(),
        1,
        "the undetermined ClusterRole was deleted"
    );

    // Nothing is lost: the admin's next run still knows the kind and prunes the ClusterRole.
    p.kubeconfig = s.kubeconfig_path();
    let r = p.apply(&[], 0).await;
    assert_eq!(deleted(&r), [format!("ClusterRole {role}")], "{r}");
}

/// Runs `kgc ARGS` with `stdin` on standard input and `RUST_BACKTRACE=1` (as many Rust users
/// have it set): what a shell script sees.
async fn kgc_in_shell(args: &[&str], stdin: &str) -> Output {
    use tokio::io::AsyncWriteExt;
    let mut c = tokio::process::Command::from(Kgc::command());
    c.args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = c.spawn().expect("running kgc");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("kgc finished within 120 s")
        .expect("kgc's output")
}

#[tokio::test]
async fn exit_codes_and_flags_fit_shell_habits() {
    let (s, ns) = setup("habits").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    let kubeconfig = s.kubeconfig_path();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let ident = [
        "--app",
        "shop",
        "--env",
        "prod",
        "-n",
        &ns,
        "--kubeconfig",
        kubeconfig,
    ];
    // A good apply that changed something exits 0, as kubectl's; `--exit-code` opts into 2.
    p.write("web.yaml", &cm("a"));
    p.apply(&[], 0).await;
    p.write("web.yaml", &(cm("a") + &cm("b")));
    p.apply(&["--exit-code"], 2).await;
    p.apply(&["--exit-code"], 0).await;
    // kubectl diff's codes: 0 no differences, 1 differences, 2 error.
    assert_eq!(p.kgc("diff", &[]).await.status.code(), Some(0));
    p.write("web.yaml", &cm("a"));
    assert_eq!(p.kgc("diff", &[]).await.status.code(), Some(1));
    let missing = p.path("missing.yaml");
    let mut args = vec!["diff", missing.to_str().unwrap()];
    args.extend(ident);
    let out = kgc_in_shell(&args, "").await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // One line per cause, no stack trace though RUST_BACKTRACE=1.
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "kgc: error: {}: No such file or directory (os error 2)",
            missing.display()
        )
    );

    // kubectl's -f: standard input, and a directory one level deep unless -R.
    std::fs::create_dir(p.path("sub")).unwrap();
    std::fs::write(p.path("sub/deep.yaml"), cm("deep")).unwrap();
    let dir = p.dir.path().to_str().unwrap();
    let mut args = vec!["apply", "-f", dir, "-f", "-"];
    args.extend(ident);
    let out = kgc_in_shell(&args, &cm("piped")).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["a", "kgc-shop-prod", "piped"]
    );
    let mut args = vec!["apply", "-R", "-f", dir];
    args.extend(ident);
    let out = kgc_in_shell(&args, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["a", "deep", "kgc-shop-prod"]
    );

    // The client-side rate limit: a run of at least three requests (discovery, lists, the
    // applies, the parent) at 2 a second with no burst takes at least a second.
    let started = std::time::Instant::now();
    let mut args = vec![
        "apply",
        "-R",
        "-f",
        dir,
        "--kube-api-qps",
        "2",
        "--kube-api-burst",
        "1",
    ];
    args.extend(ident);
    let out = kgc_in_shell(&args, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn diff_masks_secret_values_as_kubectl_diff() {
    let (s, ns) = setup("mask").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    let secret = |v: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: db}}\nstringData: {{password: {v}}}\n"
        )
    };
    p.write("db.yaml", &secret("hunter2"));
    p.apply(&[], 0).await;
    p.write("db.yaml", &secret("correct-horse"));
    let out = p.kgc("diff", &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("*** (before)") && text.contains("*** (after)"),
        "{text}"
    );
    // Neither the values nor their base64 reach the terminal.
    for leak in [
        "hunter2",
        "correct-horse",
        "aHVudGVyMg==",
        "Y29ycmVjdC1ob3JzZQ==",
    ] {
        assert!(!text.contains(leak), "{leak} in:\n{text}");
    }
}

/// Runs `kgc` through [`Project::kgc`], expecting exit code `code`; returns stdout.
async fn kgc_ok(p: &Project, cmd: &str, args: &[&str], code: i32) -> (String, String) {
    let out = p.kgc(cmd, args).await;
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    );
    assert_eq!(
        out.status.code(),
        Some(code),
        "kgc {cmd} {args:?}\nstdout: {stdout}\nstderr: {err}"
    );
    (stdout, err)
}

/// Issue 21: `kgc delete` of a set whose Namespace holds the set's parent deletes the
/// namespace (the parent does not keep it alive) and then the parent, as its dry run said; the
/// summary counts are true, and a second `kgc delete` has nothing to do.
#[tokio::test]
async fn delete_takes_the_namespace_that_holds_the_parent() {
    let s = Server::start().await;
    let ns = unique("delete-own-ns");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(namespace(&ns) + &cm("a")));
    p.apply(&[], 0).await;
    let everything = [
        format!("ConfigMap {ns}/a"),
        format!("ConfigMap {ns}/kgc-shop-prod"),
        format!("Namespace {ns}"),
    ];
    let (dry, _) = kgc_ok(&p, "delete", &["--dry-run", "-o", "json"], 0).await;
    let dry: Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(deleted(&dry), everything, "{dry}");
    let (out, _) = kgc_ok(&p, "delete", &[], 0).await;
    assert!(out.contains("3 deleted, 0 kept"), "{out}");
    poll_gone(&s, "namespace", &ns, None).await;
    let (out, err) = kgc_ok(&p, "delete", &[], 0).await;
    assert!(err.contains("nothing to delete"), "{err}");
    assert!(out.contains("0 deleted, 0 kept"), "{out}");
}

/// Issue 21: a namespace of the set that holds someone else's object is kept, the summary
/// counts it, and the parent stays so that the next `kgc delete` finishes the job.
#[tokio::test]
async fn delete_keeps_the_parent_while_a_member_is_kept() {
    let s = Server::start().await;
    let ns = unique("delete-kept-ns");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(namespace(&ns) + &cm("a")));
    p.apply(&[], 0).await;
    s.kubectl_ok(&["create", "configmap", "theirs", "-n", &ns])
        .await;
    let (out, err) = kgc_ok(&p, "delete", &[], 0).await;
    assert!(out.contains("1 deleted, 1 kept"), "{out}");
    assert!(
        out.contains("ConfigMap theirs") && err.contains("keeping ConfigMap"),
        "{out}\n{err}"
    );
    assert_eq!(
        names(&s, "configmaps", Some(&ns)).await,
        ["kgc-shop-prod", "theirs"]
    );
    s.kubectl_ok(&["delete", "configmap", "theirs", "-n", &ns])
        .await;
    let (out, _) = kgc_ok(&p, "delete", &[], 0).await;
    assert!(out.contains("2 deleted, 0 kept"), "{out}");
    poll_gone(&s, "namespace", &ns, None).await;
}

/// Issue 21: `kgc apply --dry-run` sends server-side dry runs through the same admission as the
/// apply, so an object in a namespace that does not exist fails the dry run as it fails the
/// apply; a namespace the same set creates is fine.
#[tokio::test]
async fn a_dry_run_fails_where_the_apply_would() {
    let (s, ns) = setup("dry-ns").await;
    let missing = unique("dry-missing");
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write("web.yaml", &(cm("a") + &cm_in(&missing, "lost")));
    let before = store_revision(&s.client()).await;
    let not_found = format!("namespaces \"{missing}\" not found");
    let (dry, _) = kgc_ok(&p, "apply", &["--dry-run"], 1).await;
    assert!(dry.contains(&not_found), "{dry}");
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "a dry run wrote something"
    );
    let (real, _) = kgc_ok(&p, "apply", &[], 1).await;
    assert!(real.contains(&not_found), "{real}");

    // The set's parent in a namespace nobody creates: the dry run says so too.
    let nowhere = unique("dry-nowhere");
    let q = Project::new(&s, "shop", "qa", &nowhere);
    q.write("web.yaml", &cm("a"));
    let (_, err) = kgc_ok(&q, "apply", &["--dry-run"], 1).await;
    assert!(
        err.contains(&format!(
            "the namespace {nowhere} of the set's parent does not exist"
        )),
        "{err}"
    );

    // Objects in a namespace the same set creates would be created.
    let created = unique("dry-created");
    p.write(
        "web.yaml",
        &(cm("a") + &namespace(&created) + &cm_in(&created, "b")),
    );
    let before = store_revision(&s.client()).await;
    let r = p.apply(&["--dry-run"], 0).await;
    let b = r["applied"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| key(&a[0]) == format!("ConfigMap {created}/b"))
        .map(|a| a[1].clone());
    assert_eq!(b, Some(Value::from("create")), "{r}");
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "a dry run wrote something"
    );
    p.apply(&[], 0).await;
    assert_eq!(names(&s, "configmaps", Some(&created)).await, ["b"]);
}

/// Issue 21: without `--wait` an accepted delete is "deleted" and exits 0 (finalizers are only
/// judged by waiting, exit code 3); an empty source is refused, naming `--allow-empty`.
#[tokio::test]
async fn without_wait_an_accepted_delete_exits_0() {
    let (s, ns) = setup("no-wait").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write(
        "web.yaml",
        &(cm("a")
            + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/hold]}\n---\n"),
    );
    p.apply(&[], 0).await;
    p.write("web.yaml", &cm("a"));
    let r = p.apply(&[], 0).await;
    assert_eq!(r["deleted"][0][1], "deleted", "{r}");
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await;
    p.write("web.yaml", "");
    let (_, err) = kgc_ok(&p, "prune", &[], 1).await;
    assert!(
        err.contains("the source is empty") && err.contains("--allow-empty"),
        "{err}"
    );
}

/// Flux v1's manifest generation on `kgc apply DIR`: a `.flux.yaml` (here `patchUpdated`) is
/// refused without `--manifest-generation`; with it, its generator's output, patched by its
/// patch file, replaces the directory's files.
#[tokio::test]
async fn a_flux_yaml_directory_is_generated_only_with_manifest_generation() {
    let (s, ns) = setup("fluxyaml").await;
    let p = Project::new(&s, "shop", "prod", &ns);
    p.write(
        ".flux.yaml",
        "version: 1\npatchUpdated:\n  generators:\n  - command: cat generated.txt\n  patchFile: flux-patch.yaml\n",
    );
    p.write(
        "generated.txt",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: generated}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: generated}\n",
    );
    p.write(
        "flux-patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: patched}\n",
    );
    let out = p.kgc("apply", &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            ".flux.yaml: manifest generation is disabled; pass --manifest-generation to run its generators"
        ),
        "{}",
        stderr(&out)
    );
    assert!(
        names(&s, "configmaps", Some(&ns))
            .await
            .iter()
            .all(|n| n != "a")
    );

    p.apply(&["--manifest-generation"], 0).await;
    let data = async |name: &str| {
        s.kubectl_ok(&[
            "get",
            "configmap",
            name,
            "-n",
            &ns,
            "-o",
            "jsonpath={.data.k}",
        ])
        .await
    };
    assert_eq!(data("a").await.trim(), "generated");
    assert_eq!(data("b").await.trim(), "patched");

    // A generator that fails leaves everything in place.
    p.write(
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'echo no chart >&2; exit 2'}]}\n",
    );
    let out = p.kgc("apply", &["--manifest-generation"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed with exit code 2; stderr: no chart"),
        "{}",
        stderr(&out)
    );
    assert_eq!(data("b").await.trim(), "patched");
}
