//! Moving in from another deploy tool (issue 29, item 5): `kgc apply|diff|sync --adopt TOOL`
//! against a spawned `kgc serve`. For each tool the test creates, with kubectl, objects carrying
//! that tool's marks: two of this app and environment (`keep`, which the source still has, and
//! `old`, which it no longer has), one of another environment, one of another app and one
//! unlabelled. Adopting prunes `old` only and makes `keep` the set's.

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use kgc_prune::adopt::flux1_gc_mark;
use kgc_prune::ownership::applyset_id;
use kgc_testsupport::*;
use serde_json::Value;

/// Which of the old tool's objects a label set is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    /// This app and environment.
    Mine,
    OtherEnv,
    OtherApp,
}

/// The old tool's labels of the object `ns/name`, as a YAML flow mapping.
type Marks = dyn Fn(&str, &str, Who) -> String;

fn configmap(ns: &str, name: &str, labels: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, labels: {labels}}}\ndata: {{k: \"{value}\"}}\n---\n"
    )
}

async fn kgc(s: &Server, cmd: &str, dir: &Path, ns: &str, args: &[&str]) -> Output {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.arg(cmd)
        .arg(dir)
        .args(["--app", "shop", "--env", "prod", "-n", ns])
        .arg("--kubeconfig")
        .arg(s.kubeconfig_path())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("kgc finished within 120 s")
        .expect("running kgc")
}

fn expect(out: &Output, code: i32, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The ConfigMaps of `ns`, without the namespace's own.
async fn configmaps(s: &Server, ns: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .kubectl_ok(&["get", "configmaps", "-n", ns, "-o", "name"])
        .await
        .lines()
        .map(|l| l.trim_start_matches("configmap/").to_owned())
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    v.sort();
    v
}

fn deleted(report: &Value) -> Vec<String> {
    let mut v: Vec<String> = report["deleted"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| d[0]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    v.sort();
    v
}

/// The old tool's own records in `ns` (an ApplySet parent, kapp's app ConfigMaps).
type Records = dyn Fn(&str) -> String;

fn no_records(_: &str) -> String {
    String::new()
}

/// The old tool's objects in a fresh namespace, and a source holding `keep` only.
async fn old_tool_objects(
    s: &Server,
    prefix: &str,
    marks: &Marks,
    records: &Records,
) -> (String, tempfile::TempDir) {
    let ns = fresh_namespace(&s.client(), prefix).await;
    let yaml = [
        records(&ns),
        configmap(&ns, "keep", &marks(&ns, "keep", Who::Mine), "1"),
        configmap(&ns, "old", &marks(&ns, "old", Who::Mine), "1"),
        configmap(
            &ns,
            "other-env",
            &marks(&ns, "other-env", Who::OtherEnv),
            "1",
        ),
        configmap(
            &ns,
            "other-app",
            &marks(&ns, "other-app", Who::OtherApp),
            "1",
        ),
        configmap(&ns, "plain", "{}", "1"),
    ]
    .concat();
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &yaml).await;
    let dir = tempfile::tempdir().expect("a source directory");
    std::fs::write(
        dir.path().join("web.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {k: \"2\"}\n",
    )
    .expect("writing the source");
    (ns, dir)
}

/// How a scenario meets the old tool.
struct OldTool<'a> {
    prefix: &'a str,
    adopt: &'a [&'a str],
    marks: &'a Marks,
    records: &'a Records,
    /// The names of the ConfigMaps among `records`.
    extra: &'a [&'a str],
}

/// `kgc diff --adopt` shows the adoption and writes nothing; `kgc apply --adopt` prunes `old`
/// only and takes `keep` over; a later plain apply changes nothing.
async fn adopt_from(s: &Server, t: OldTool<'_>) {
    let OldTool {
        prefix,
        adopt,
        marks,
        records,
        extra,
    } = t;
    let (ns, dir) = old_tool_objects(s, prefix, marks, records).await;
    let mut before = vec!["keep", "old", "other-app", "other-env", "plain"];
    before.extend_from_slice(extra);
    before.sort();
    assert_eq!(configmaps(s, &ns).await, before);

    let revision = store_revision(&s.client()).await;
    let diff = expect(
        &kgc(s, "diff", dir.path(), &ns, adopt).await,
        1,
        "kgc diff --adopt",
    );
    assert!(
        diff.contains(&format!("# adopt ConfigMap {ns}/keep: from "))
            && diff.contains(", taken over"),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("# adopt ConfigMap {ns}/old: from ")) && diff.contains(", pruned"),
        "{diff}"
    );
    assert!(diff.contains("/dev/null (pruned)"), "{diff}");
    for other in ["other-env", "other-app", "plain"] {
        assert!(
            !diff.contains(&format!("{ns}/{other}")),
            "{other} in\n{diff}"
        );
    }
    assert_eq!(
        store_revision(&s.client()).await,
        revision,
        "kgc diff wrote something"
    );

    let mut args = vec!["-o", "json"];
    args.extend_from_slice(adopt);
    let out = expect(
        &kgc(s, "apply", dir.path(), &ns, &args).await,
        0,
        "kgc apply --adopt",
    );
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(deleted(&report), ["old"], "{report}");
    let adopted: Vec<&str> = report["adoption"]["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["name"].as_str())
        .collect();
    assert_eq!(adopted, ["keep", "old"], "{report}");
    let mut after: Vec<&str> = before
        .iter()
        .copied()
        .filter(|n| *n != "old")
        .chain(["kgc-shop-prod"])
        .collect();
    after.sort();
    assert_eq!(configmaps(s, &ns).await, after);
    let keep: Value = serde_json::from_str(
        &s.kubectl_ok(&["get", "configmap", "keep", "-n", &ns, "-o", "json"])
            .await,
    )
    .expect("the ConfigMap's JSON");
    assert_eq!(keep["metadata"]["labels"]["kgc.io/app"], "shop", "{keep}");
    assert_eq!(keep["data"]["k"], "2", "{keep}");

    // The set owns `keep` now: without --adopt, nothing changes and nothing is pruned.
    let out = expect(
        &kgc(s, "apply", dir.path(), &ns, &["-o", "json"]).await,
        0,
        "kgc apply",
    );
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    assert!(deleted(&report).is_empty(), "{report}");
    assert_eq!(report["applied"][0][1], "unchanged", "{report}");
    assert_eq!(configmaps(s, &ns).await, after);
}

fn qbec(_: &str, _: &str, who: Who) -> String {
    let (app, env) = match who {
        Who::Mine => ("shop", "prod"),
        Who::OtherEnv => ("shop", "dev"),
        Who::OtherApp => ("cart", "prod"),
    };
    format!("{{qbec.io/application: {app}, qbec.io/environment: {env}}}")
}

#[tokio::test]
async fn adopt_from_qbec() {
    let s = Server::start().await;
    adopt_from(
        &s,
        OldTool {
            prefix: "adopt-qbec",
            adopt: &["--adopt", "qbec"],
            marks: &qbec,
            records: &no_records,
            extra: &[],
        },
    )
    .await;
}

#[tokio::test]
async fn a_qbec_tag_is_adopted_only_by_that_tag() {
    let s = Server::start().await;
    let tagged = |ns: &str, name: &str, who: Who| {
        let labels = qbec(ns, name, who);
        format!("{}, qbec.io/tag: pr-1}}", labels.trim_end_matches('}'))
    };
    let (ns, dir) = old_tool_objects(&s, "adopt-qbec-tag", &tagged, &no_records).await;
    // An untagged run adopts no tagged object.
    let out = kgc(&s, "diff", dir.path(), &ns, &["--adopt", "qbec"]).await;
    let diff = expect(&out, 1, "kgc diff --adopt qbec");
    assert!(!diff.contains("# adopt"), "{diff}");
    let out = kgc(
        &s,
        "apply",
        dir.path(),
        &ns,
        &["-o", "json", "--adopt", "qbec", "--tag", "pr-1"],
    )
    .await;
    let report: Value = serde_json::from_str(&expect(&out, 0, "kgc apply --adopt qbec --tag"))
        .expect("a JSON report");
    assert_eq!(deleted(&report), ["old"], "{report}");
}

#[tokio::test]
async fn adopt_from_flux() {
    let s = Server::start().await;
    let marks = |_: &str, _: &str, who: Who| {
        let (name, ns) = match who {
            Who::Mine => ("shop-prod", "flux-system"),
            Who::OtherEnv => ("shop-dev", "flux-system"),
            Who::OtherApp => ("shop-prod", "team-b"),
        };
        format!(
            "{{kustomize.toolkit.fluxcd.io/name: {name}, kustomize.toolkit.fluxcd.io/namespace: {ns}}}"
        )
    };
    adopt_from(
        &s,
        OldTool {
            prefix: "adopt-flux",
            adopt: &["--adopt", "flux", "--adopt-name", "flux-system/shop-prod"],
            marks: &marks,
            records: &no_records,
            extra: &[],
        },
    )
    .await;
}

const FLUX1_URL: &str = "git@example.com:org/deploy";

#[tokio::test]
async fn adopt_from_flux_v1() {
    let s = Server::start().await;
    let marks = |ns: &str, name: &str, who: Who| {
        let set = match who {
            Who::Mine => kgc_prune::adopt::flux1_sync_set(FLUX1_URL, "master", &["prod"]),
            Who::OtherEnv => kgc_prune::adopt::flux1_sync_set(FLUX1_URL, "master", &["dev"]),
            Who::OtherApp => {
                kgc_prune::adopt::flux1_sync_set("git@example.com:org/cart", "master", &["prod"])
            }
        };
        format!(
            "{{fluxcd.io/sync-gc-mark: \"{}\"}}",
            flux1_gc_mark(&set, "ConfigMap", ns, name)
        )
    };
    let name = format!("{FLUX1_URL}#master#prod");
    adopt_from(
        &s,
        OldTool {
            prefix: "adopt-flux1",
            adopt: &["--adopt", "flux1", "--adopt-name", &name],
            marks: &marks,
            records: &no_records,
            extra: &[],
        },
    )
    .await;
}

/// An ApplySet parent ConfigMap `name` in `ns`, as kubectl writes it.
fn applyset_parent(ns: &str, name: &str) -> String {
    let id = applyset_id(name, ns, "ConfigMap", "");
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{applyset.kubernetes.io/id: {id}}}\n  annotations: {{applyset.kubernetes.io/tooling: kubectl/v1.32.0, applyset.kubernetes.io/contains-group-kinds: ConfigMap}}\n---\n"
    )
}

#[tokio::test]
async fn adopt_from_a_kubectl_applyset() {
    let s = Server::start().await;
    let marks = |ns: &str, _: &str, who: Who| {
        let parent = match who {
            Who::Mine => "old-set",
            Who::OtherEnv => "dev-set",
            Who::OtherApp => "cart-set",
        };
        format!(
            "{{applyset.kubernetes.io/part-of: {}}}",
            applyset_id(parent, ns, "ConfigMap", "")
        )
    };
    let records = |ns: &str| {
        [
            applyset_parent(ns, "old-set"),
            applyset_parent(ns, "dev-set"),
            applyset_parent(ns, "cart-set"),
        ]
        .concat()
    };
    adopt_from(
        &s,
        OldTool {
            prefix: "adopt-applyset",
            adopt: &["--adopt", "applyset", "--adopt-name", "configmaps/old-set"],
            marks: &marks,
            records: &records,
            extra: &["cart-set", "dev-set", "old-set"],
        },
    )
    .await;
}

/// A kapp app's ConfigMap `name` whose members carry `kapp.k14s.io/app=value`.
fn kapp_app(ns: &str, name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, labels: {{kapp.k14s.io/is-app: \"\"}}}}\ndata:\n  spec: '{{\"labelKey\":\"kapp.k14s.io/app\",\"labelValue\":\"{value}\",\"usedGKs\":[{{\"Group\":\"\",\"Kind\":\"ConfigMap\"}}]}}'\n---\n"
    )
}

#[tokio::test]
async fn adopt_from_kapp() {
    let s = Server::start().await;
    let marks = |_: &str, _: &str, who: Who| {
        let value = match who {
            Who::Mine => "1641592268838201000",
            Who::OtherEnv => "1641592268838202000",
            Who::OtherApp => "1641592268838203000",
        };
        format!("{{kapp.k14s.io/app: \"{value}\", kapp.k14s.io/association: v1.abc}}")
    };
    let records = |ns: &str| {
        [
            kapp_app(ns, "shop", "1641592268838201000"),
            kapp_app(ns, "shop-dev", "1641592268838202000"),
            kapp_app(ns, "cart", "1641592268838203000"),
        ]
        .concat()
    };
    adopt_from(
        &s,
        OldTool {
            prefix: "adopt-kapp",
            adopt: &["--adopt", "kapp"],
            marks: &marks,
            records: &records,
            extra: &["cart", "shop", "shop-dev"],
        },
    )
    .await;
}

/// Runs `git` in `dir` with a fixed identity.
fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "kgc test")
        .env("GIT_AUTHOR_EMAIL", "test@kgc.invalid")
        .env("GIT_COMMITTER_NAME", "kgc test")
        .env("GIT_COMMITTER_EMAIL", "test@kgc.invalid")
        .output()
        .expect("running git (install it to run these tests)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn sync_adopts_from_qbec_on_its_first_run() {
    let s = Server::start().await;
    let (ns, repo) = old_tool_objects(&s, "adopt-sync", &qbec, &no_records).await;
    git(
        repo.path(),
        &["-c", "init.defaultBranch=main", "init", "-q"],
    );
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "the source"]);
    let cache = tempfile::tempdir().expect("a cache directory");
    let mut c = tokio::process::Command::from(Kgc::command());
    c.args(["sync", "--once", "--adopt", "qbec", "-o", "json"])
        .arg("--git")
        .arg(repo.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .args(["--app", "shop", "--env", "prod", "-n", &ns])
        .arg("--kubeconfig")
        .arg(s.kubeconfig_path())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("kgc sync finished within 120 s")
        .expect("running kgc sync");
    let report: Value = serde_json::from_str(&expect(&out, 0, "kgc sync --once --adopt qbec"))
        .expect("a JSON report");
    assert_eq!(deleted(&report), ["old"], "{report}");
    assert_eq!(
        configmaps(&s, &ns).await,
        ["keep", "kgc-shop-prod", "other-app", "other-env", "plain"]
    );
}

/// `kubectl apply --prune --applyset=configmaps/SET` of `yaml` in `ns` (ApplySet is alpha in
/// kubectl 1.32: `KUBECTL_APPLYSET=true`).
async fn kubectl_applyset(s: &Server, ns: &str, set: &str, yaml: &str) {
    let args = [
        "apply",
        "-n",
        ns,
        "--server-side",
        "--prune",
        &format!("--applyset=configmaps/{set}"),
        "-f",
        "-",
    ];
    let mut cmd = s.kubectl_command(&args);
    cmd.env("KUBECTL_APPLYSET", "true");
    let out = run_kubectl(cmd, "kubectl", &args, Some(yaml)).await;
    assert!(
        out.status.success(),
        "kubectl apply --applyset: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn adopt_an_applyset_that_kubectl_made() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "adopt-kubectl-applyset").await;
    let plain = |name: &str| configmap(&ns, name, "{}", "1");
    kubectl_applyset(&s, &ns, "old-set", &(plain("keep") + &plain("old"))).await;
    kubectl_applyset(&s, &ns, "dev-set", &plain("other-env")).await;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &plain("plain"))
        .await;
    let dir = tempfile::tempdir().expect("a source directory");
    std::fs::write(
        dir.path().join("web.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {k: \"2\"}\n",
    )
    .expect("writing the source");
    let args = [
        "-o",
        "json",
        "--adopt",
        "applyset",
        "--adopt-name",
        "configmaps/old-set",
    ];
    let out = kgc(&s, "apply", dir.path(), &ns, &args).await;
    let report: Value = serde_json::from_str(&expect(&out, 0, "kgc apply --adopt applyset"))
        .expect("a JSON report");
    assert_eq!(deleted(&report), ["old"], "{report}");
    assert_eq!(
        configmaps(&s, &ns).await,
        [
            "dev-set",
            "keep",
            "kgc-shop-prod",
            "old-set",
            "other-env",
            "plain"
        ]
    );
}
