//! `kgc build` and kustomizations in deploy sources (issue 29): the reader every deploy command
//! shares prints what `kubectl kustomize` prints, byte for byte; with `--app`/`--env` it is
//! stamped as the set stamps it; and `kgc apply` of a kustomize overlay prunes the ConfigMap a
//! generator's hash suffix rotated away.

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::Value;

fn write(root: &Path, file: &str, text: &str) {
    let p = root.join(file);
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("a directory");
    std::fs::write(p, text).expect("writing a fixture");
}

/// A base and three overlays, as a kustomize repository keeps them: generators, a name
/// prefix, a namespace, labels, annotations, images, replicas and patches of both kinds.
fn repository(root: &Path) {
    write(
        root,
        "base/kustomization.yaml",
        "resources:\n- deployment.yaml\n- service.yaml\n- account.yaml\n\
         labels:\n- pairs: {app: web}\n  includeSelectors: true\n\
         configMapGenerator:\n- name: web-config\n  literals: [LOG_LEVEL=info, MODE=base]\n\
         secretGenerator:\n- name: web-secret\n  literals: [password=s3cret]\n",
    );
    write(
        root,
        "base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      serviceAccountName: web\n      containers:\n      - name: web\n        image: nginx:1.25\n        envFrom:\n        - configMapRef: {name: web-config}\n        - secretRef: {name: web-secret}\n        ports:\n        - containerPort: 80\n          name: http\n",
    );
    write(
        root,
        "base/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n    targetPort: http\n",
    );
    write(
        root,
        "base/account.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
    );
    for (env, replicas, tag) in [
        ("dev", 1, "1.25-alpine"),
        ("staging", 2, "1.26"),
        ("prod", 5, "1.27"),
    ] {
        write(
            root,
            &format!("overlays/{env}/kustomization.yaml"),
            &format!(
                "namespace: web-{env}\nnamePrefix: {env}-\nresources:\n- ../../base\n\
                 commonAnnotations:\n  team: platform\n\
                 images:\n- name: nginx\n  newTag: \"{tag}\"\n\
                 replicas:\n- name: web\n  count: {replicas}\n\
                 configMapGenerator:\n- name: web-config\n  behavior: merge\n  literals: [MODE={env}]\n\
                 patches:\n- path: resources.yaml\n\
                 - target: {{kind: Service}}\n  patch: |-\n    - op: add\n      path: /metadata/labels/exposed\n      value: \"true\"\n"
            ),
        );
        write(
            root,
            &format!("overlays/{env}/resources.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        resources:\n          limits: {memory: 128Mi}\n",
        );
    }
}

fn kgc(dir: &Path, args: &[&str]) -> Output {
    Kgc::command()
        .current_dir(dir)
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("running kgc")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kubectl kustomize DIR`'s stdout.
fn kubectl_kustomize(dir: &Path) -> String {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("running kubectl kustomize");
    assert!(
        out.status.success(),
        "kubectl kustomize: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn kgc_build_prints_what_kubectl_kustomize_prints() {
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    for dir in ["base", "overlays/dev", "overlays/staging", "overlays/prod"] {
        let out = kgc(repo.path(), &["build", dir]);
        assert!(
            out.status.success(),
            "kgc build {dir}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            text(&out.stdout),
            kubectl_kustomize(&repo.path().join(dir)),
            "kgc build {dir}"
        );
    }
    // `-f` naming the kustomization file is the same build.
    let out = kgc(
        repo.path(),
        &["build", "-f", "overlays/prod/kustomization.yaml"],
    );
    assert_eq!(
        text(&out.stdout),
        kubectl_kustomize(&repo.path().join("overlays/prod"))
    );
}

#[test]
fn kgc_build_json_is_a_list_of_the_same_objects() {
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    let out = kgc(repo.path(), &["build", "overlays/dev", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    assert_eq!(list["kind"], "List");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert!(names.contains(&"dev-web"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("dev-web-config-")),
        "{names:?}"
    );
}

#[test]
fn kgc_build_with_app_and_env_stamps_what_apply_would_apply() {
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    let out = kgc(
        repo.path(),
        &[
            "build",
            "overlays/prod",
            "--app",
            "web",
            "--env",
            "prod",
            "-o",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    for o in list["items"].as_array().expect("items") {
        let labels = &o["metadata"]["labels"];
        assert_eq!(labels["kgc.io/app"], "web", "{o}");
        assert_eq!(labels["kgc.io/env"], "prod", "{o}");
        assert_eq!(o["metadata"]["namespace"], "web-prod", "{o}");
    }
}

#[test]
fn kgc_build_of_a_plain_directory_builds_its_kustomizations_as_bases() {
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    write(
        repo.path(),
        "apps/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: v}\n",
    );
    std::fs::rename(
        repo.path().join("overlays/dev"),
        repo.path().join("apps/dev"),
    )
    .expect("moving the overlay");
    std::fs::rename(repo.path().join("base"), repo.path().join("base-moved"))
        .expect("moving the base");
    write(
        repo.path(),
        "apps/dev/kustomization.yaml",
        &std::fs::read_to_string(repo.path().join("apps/dev/kustomization.yaml"))
            .expect("the overlay")
            .replace("../../base", "../../base-moved"),
    );
    let out = kgc(repo.path(), &["build", "apps", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert!(
        names.contains(&"extra") && names.contains(&"dev-web"),
        "{names:?}"
    );
}

#[test]
fn kgc_build_refuses_remote_bases_in_one_line() {
    let repo = tempfile::tempdir().expect("a repository");
    write(
        repo.path(),
        "remote/kustomization.yaml",
        "resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0\n",
    );
    let out = kgc(repo.path(), &["build", "remote"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("kustomization.yaml") && err.contains("remote"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// `kgc apply overlays/ENV --app web --env ENV -n NS` in `repo` against `s`.
async fn apply_overlay(s: &Server, repo: &Path, env: &str, ns: &str) -> Output {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.current_dir(repo)
        .arg("apply")
        .arg(format!("overlays/{env}"))
        .args(["--app", "web", "--env", env, "-n", ns])
        .arg("--kubeconfig")
        .arg(s.kubeconfig_path())
        .env("RUST_LOG", "off")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("kgc finished within 120 s")
        .expect("running kgc")
}

/// `kgc apply` of a kustomize overlay, then of the same overlay with a generator's literal
/// changed: the ConfigMap under the old hash is pruned, the Deployment names the new one.
#[tokio::test]
async fn apply_of_an_overlay_prunes_the_rotated_generated_configmap() {
    let s = Server::start().await;
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    let ns = "web-staging";
    s.kubectl_ok(&["create", "namespace", ns]).await;
    let apply = || async {
        let out = apply_overlay(&s, repo.path(), "staging", ns).await;
        assert!(out.status.success(), "kgc apply: {}", text(&out.stderr));
    };
    let generated = |built: &str| -> String {
        built
            .lines()
            .find_map(|l| l.trim().strip_prefix("name: staging-web-config-"))
            .map(|h| format!("staging-web-config-{h}"))
            .expect("the generated ConfigMap's name")
    };
    let before = generated(&text(
        &kgc(repo.path(), &["build", "overlays/staging"]).stdout,
    ));
    apply().await;
    let configmaps = s
        .kubectl_ok(&["get", "configmaps", "-n", ns, "-o", "name"])
        .await;
    assert!(configmaps.contains(&before), "{configmaps}");

    let k = repo.path().join("overlays/staging/kustomization.yaml");
    let changed = std::fs::read_to_string(&k)
        .expect("the overlay")
        .replace("MODE=staging", "MODE=staging-2");
    std::fs::write(&k, changed).expect("changing the literal");
    let after = generated(&text(
        &kgc(repo.path(), &["build", "overlays/staging"]).stdout,
    ));
    assert_ne!(before, after, "the hash suffix rotates with the data");
    apply().await;
    let configmaps = s
        .kubectl_ok(&["get", "configmaps", "-n", ns, "-o", "name"])
        .await;
    assert!(configmaps.contains(&after), "{configmaps}");
    assert!(
        !configmaps.contains(&before),
        "the rotated ConfigMap is pruned: {configmaps}"
    );
    let env_from = s
        .kubectl_ok(&[
            "get",
            "deployment",
            "staging-web",
            "-n",
            ns,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].envFrom[0].configMapRef.name}",
        ])
        .await;
    assert_eq!(env_from.trim(), after);
}

/// A kustomization that cannot be built (a resource file gone) fails `kgc apply` in one line
/// naming the file, before anything is written: nothing applied, nothing pruned.
#[tokio::test]
async fn a_broken_kustomization_applies_and_prunes_nothing() {
    let s = Server::start().await;
    let repo = tempfile::tempdir().expect("a repository");
    repository(repo.path());
    let ns = "web-dev";
    s.kubectl_ok(&["create", "namespace", ns]).await;
    let apply = || apply_overlay(&s, repo.path(), "dev", ns);
    let out = apply().await;
    assert!(out.status.success(), "kgc apply: {}", text(&out.stderr));
    let listed = || async {
        s.kubectl_ok(&[
            "get",
            "deployments,services,configmaps,secrets",
            "-n",
            ns,
            "-o",
            "name",
        ])
        .await
    };
    let before = listed().await;
    assert!(before.contains("service/dev-web"), "{before}");

    std::fs::remove_file(repo.path().join("base/service.yaml")).expect("removing a resource");
    let out = apply().await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("service.yaml"), "{err}");
    assert_eq!(listed().await, before, "nothing applied, nothing pruned");
}
