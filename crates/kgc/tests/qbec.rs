//! qbec apps (issue 29): `kgc apply --env ENV` in a directory with a qbec.yaml (or with
//! `--app-dir`) renders the environment's components with jsonnet and deploys them into the
//! environment's namespace, against a spawned `kgc serve`.

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::Value;

/// A qbec app with two environments, each in its own namespace; prod leaves out `debug`.
fn write_app(dir: &Path, context: &str, dev: &str, prod: &str) {
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("writing the app");
    };
    write(
        "qbec.yaml",
        &format!(
            "apiVersion: qbec.io/v1alpha1
kind: App
metadata: {{name: shop}}
spec:
  libPaths: [lib]
  vars:
    external:
      - {{name: greeting, default: hello}}
  environments:
    dev: {{context: {context}, defaultNamespace: {dev}}}
    prod: {{context: {context}, defaultNamespace: {prod}, excludes: [debug]}}
"
        ),
    );
    write(
        "lib/cm.libsonnet",
        "function(name, data={}) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name}, data: data}",
    );
    write(
        "components/web.jsonnet",
        "local cm = import 'cm.libsonnet';
         cm('web', {env: std.extVar('qbec.io/env'), greeting: std.extVar('greeting')})",
    );
    write(
        "components/extra.jsonnet",
        "local cm = import 'cm.libsonnet';
         {first: cm('extra-1'), rest: [cm('extra-2')]}",
    );
    write(
        "components/debug.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: debug}\n",
    );
}

/// Runs `kgc apply -o json ARGS` in `cwd`, expecting success.
async fn apply(s: &Server, cwd: &Path, args: &[&str]) -> Value {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.current_dir(cwd)
        .args(["apply", "-o", "json", "--kubeconfig"])
        .arg(s.kubeconfig_path())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .kill_on_drop(true);
    let out: Output = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("kgc finished within 120 s")
        .expect("running kgc");
    assert!(
        out.status.success(),
        "kgc apply {args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// The ConfigMaps' names in a namespace, without the server's and the set's parent.
async fn config_maps(s: &Server, ns: &str) -> Vec<String> {
    let out = s
        .kubectl_ok(&["get", "configmaps", "-n", ns, "-o", "name"])
        .await;
    let mut v: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("configmap/"))
        .filter(|n| *n != "kube-root-ca.crt" && !n.starts_with("kgc-"))
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

async fn data(s: &Server, ns: &str, name: &str) -> Value {
    let out = s
        .kubectl_ok(&["get", "configmap", name, "-n", ns, "-o", "json"])
        .await;
    let cm: Value = serde_json::from_str(&out).expect("a ConfigMap");
    cm["data"].clone()
}

#[tokio::test]
async fn environments_deploy_into_their_namespaces_and_a_removed_component_is_pruned() {
    let s = Server::start().await;
    let dev = fresh_namespace(&s.client(), "qbec-dev").await;
    let prod = fresh_namespace(&s.client(), "qbec-prod").await;
    let context = s.kubectl_ok(&["config", "current-context"]).await;
    let app = tempfile::tempdir().expect("an app directory");
    write_app(app.path(), context.trim(), &dev, &prod);
    let elsewhere = tempfile::tempdir().expect("another directory");
    let app_dir = app.path().to_str().expect("a UTF-8 path");

    // The current directory's qbec.yaml, and --app-dir from elsewhere with an ext var.
    apply(&s, app.path(), &["--env", "dev"]).await;
    apply(
        &s,
        elsewhere.path(),
        &[
            "--app-dir",
            app_dir,
            "--env",
            "prod",
            "--vm:ext-str",
            "greeting=hi",
        ],
    )
    .await;
    assert_eq!(
        config_maps(&s, &dev).await,
        ["debug", "extra-1", "extra-2", "web"]
    );
    assert_eq!(config_maps(&s, &prod).await, ["extra-1", "extra-2", "web"]);
    assert_eq!(
        data(&s, &dev, "web").await,
        serde_json::json!({"env": "dev", "greeting": "hello"})
    );
    assert_eq!(
        data(&s, &prod, "web").await,
        serde_json::json!({"env": "prod", "greeting": "hi"})
    );

    // A component removed from the app is pruned from the environment applied, and only there.
    std::fs::remove_file(app.path().join("components/extra.jsonnet")).expect("removing extra");
    let report = apply(&s, app.path(), &["--env", "dev"]).await;
    assert_eq!(
        report["deleted"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    eventually(
        "extra-1 and extra-2 deleted from dev",
        Duration::from_secs(30),
        || async { config_maps(&s, &dev).await == ["debug", "web"] },
    )
    .await;
    assert_eq!(config_maps(&s, &prod).await, ["extra-1", "extra-2", "web"]);
}

#[tokio::test]
async fn qbec_errors_name_the_environment_the_variable_and_the_file() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "qbec-err").await;
    let app = tempfile::tempdir().expect("an app directory");
    write_app(app.path(), "unused", &ns, &ns);
    let run = |args: &'static [&'static str]| {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.current_dir(app.path())
            .arg("apply")
            .arg("--kubeconfig")
            .arg(s.kubeconfig_path())
            .args(args)
            .kill_on_drop(true);
        async move { c.output().await.expect("running kgc") }
    };
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let out = run(&["--env", "qa"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("invalid environment \"qa\": the app has dev, prod"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--env", "dev", "--vm:ext-str", "greting=x"]).await;
    assert!(
        stderr(&out).contains("specified external variable 'greting' not declared for app"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        app.path().join("components/web.jsonnet"),
        "{ a: error 'no' }",
    )
    .expect("breaking web");
    let out = run(&["--env", "dev"]).await;
    assert!(
        stderr(&out).contains("components/web.jsonnet: component web: runtime error: no"),
        "{}",
        stderr(&out)
    );
}

/// An environment that names its API server instead of a context (qbec's common case): `kgc
/// build` renders it without reading any kubeconfig, and `kgc apply` finds the context whose
/// cluster has that server only when it contacts the cluster.
#[tokio::test]
async fn an_environment_named_by_its_server_builds_offline_and_applies_through_its_context() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "qbec-server").await;
    let app = tempfile::tempdir().expect("an app directory");
    std::fs::create_dir_all(app.path().join("components")).expect("components");
    std::fs::write(
        app.path().join("qbec.yaml"),
        format!(
            "apiVersion: qbec.io/v1alpha1\nkind: App\nmetadata: {{name: shop}}\nspec:\n  environments:\n    dev: {{server: '{}', defaultNamespace: {ns}}}\n    far: {{server: 'https://far.example:6443', defaultNamespace: {ns}}}\n",
            s.url()
        ),
    )
    .expect("qbec.yaml");
    std::fs::write(
        app.path().join("components/web.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
    )
    .expect("a component");
    let home = tempfile::tempdir().expect("an empty home");
    let run = |args: &[&str]| {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.current_dir(app.path())
            .args(args)
            .env("HOME", home.path())
            .env("KUBECONFIG", home.path().join("no-such-kubeconfig"))
            .env("RUST_LOG", "off")
            .kill_on_drop(true);
        async move { c.output().await.expect("running kgc") }
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();

    let out = run(&["build", "--env", "dev"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let built = text(&out.stdout);
    assert!(built.contains("name: web"), "{built}");
    assert!(built.contains(&format!("namespace: {ns}")), "{built}");

    let kubeconfig = s.kubeconfig_path();
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path");
    let out = run(&["apply", "--env", "dev", "--kubeconfig", kubeconfig]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(config_maps(&s, &ns).await, ["web"]);

    let out = run(&["apply", "--env", "far", "--kubeconfig", kubeconfig]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("no kubeconfig context has the server https://far.example:6443"),
        "{err}"
    );
    assert!(
        err.contains("kgc: error: the server https://far.example:6443 named by")
            && err.contains("(environment far)"),
        "{err}"
    );
}
