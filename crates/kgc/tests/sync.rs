//! `kgc sync` (issue 21): a git repository made by the test with the `git` binary, synced into
//! a set on a spawned `kgc serve`, by the real `kgc` binary. Each scenario has its own server,
//! namespace, repository and cache.

kgc_testsupport::bind_kgc!();

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use kgc_testsupport::*;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

/// A git repository with a deterministic author, committer and default branch.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let r = Repo {
            dir: tempfile::tempdir().expect("a repository directory"),
        };
        r.git(&["-c", "init.defaultBranch=main", "init", "-q"]);
        r
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.path())
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "kgc test")
            .env("GIT_AUTHOR_EMAIL", "test@kgc.invalid")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "kgc test")
            .env("GIT_COMMITTER_EMAIL", "test@kgc.invalid")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .expect("running git (install it to run these tests)");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn write(&self, file: &str, text: &str) {
        let p = self.path().join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn remove(&self, file: &str) {
        std::fs::remove_file(self.path().join(file)).unwrap();
    }

    /// Commits everything; returns the commit id.
    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// A set synced from a repository: the identity flags, the cache and the server.
struct Set {
    app: String,
    env: String,
    ns: String,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
}

impl Set {
    async fn new(s: &Server, prefix: &str) -> Self {
        Set {
            app: "shop".into(),
            env: "prod".into(),
            ns: fresh_namespace(&s.client(), prefix).await,
            kubeconfig: s.kubeconfig_path(),
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(Kgc::command());
        c.arg("sync")
            .args(args)
            .args(["--app", &self.app, "--env", &self.env, "-n", &self.ns])
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env("RUST_BACKTRACE", "1")
            .kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut c = self.command(args);
        tokio::time::timeout(Duration::from_secs(60), c.output())
            .await
            .expect("kgc sync finished within 60 s")
            .expect("running kgc sync")
    }

    /// `kgc sync --once --git REPO -o json ARGS`, expecting `code`; the report.
    async fn once(&self, repo: &Path, args: &[&str], code: i32) -> Value {
        let cache = self.cache.path().to_str().unwrap().to_owned();
        let mut all = vec![
            "--once",
            "--git",
            repo.to_str().unwrap(),
            "--cache-dir",
            &cache,
            "-o",
            "json",
        ];
        all.extend_from_slice(args);
        let out = self.run(&all).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "kgc sync {all:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&out.stderr).into_owned()))
    }

    async fn status(&self) -> Value {
        let out = self.run(&["status", "-o", "json"]).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    async fn configmaps(&self, s: &Server) -> Vec<String> {
        let mut v: Vec<String> = s
            .kubectl_ok(&["get", "configmaps", "-n", &self.ns, "-o", "name"])
            .await
            .lines()
            .map(|l| l.trim_start_matches("configmap/").to_owned())
            .filter(|n| n != "kgc-shop-prod" && n != "kube-root-ca.crt")
            .collect();
        v.sort();
        v
    }

    async fn event_reasons(&self, s: &Server) -> Vec<String> {
        let out = s
            .kubectl_ok(&["get", "events", "-n", &self.ns, "-o", "json"])
            .await;
        let v: Value = serde_json::from_str(&out).unwrap();
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["involvedObject"]["name"] == "kgc-shop-prod")
            .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

fn cm(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: \"{value}\"}}\n"
    )
}

/// `Kind ns/name` of a report's deletions.
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

/// The actions of a report's applies, by object name.
fn applied(report: &Value) -> Vec<(String, String)> {
    report["applied"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            (
                a[0]["name"].as_str().unwrap_or("").to_owned(),
                a[1].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn all_unchanged(report: &Value) -> bool {
    applied(report).iter().all(|(_, a)| a == "unchanged") && deleted(report).is_empty()
}

#[tokio::test]
async fn first_sync_prunes_removed_files_and_paths() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-first").await;
    let repo = Repo::new();
    repo.write("app/a.yaml", &cm("a", "1"));
    repo.write("app/b.yaml", &cm("b", "1"));
    repo.write("extra/c.yaml", &cm("c", "1"));
    repo.write("app/README.md", "not a manifest");
    let first = repo.commit("first");
    let r = set.once(repo.path(), &["--path", "app"], 0).await;
    assert_eq!(applied(&r).len(), 2, "{r}");
    assert_eq!(set.configmaps(&s).await, ["a", "b"]);
    let st = set.status().await;
    assert_eq!(st["revision"], format!("main@sha1:{first}"), "{st}");
    assert_eq!(st["outcome"], "Succeeded");
    assert_eq!(st["counts"]["created"], 2);
    assert_eq!(st["suspended"], false);
    assert!(
        st["source"]
            .as_str()
            .unwrap()
            .ends_with("branch=main paths=app"),
        "{st}"
    );
    assert!(
        set.event_reasons(&s)
            .await
            .contains(&"ReconciliationSucceeded".to_owned())
    );
    // The object carries its component: the repository path without extension.
    let a = s
        .kubectl_ok(&["get", "configmap", "a", "-n", &set.ns, "-o", "json"])
        .await;
    let a: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(a["metadata"]["annotations"]["kgc.io/component"], "app/a");

    // Unchanged: exit 0 even with --exit-code, and nothing written, the record included (it
    // says what it said).
    let parent_version = || async {
        s.kubectl_ok(&[
            "get",
            "configmap",
            "kgc-shop-prod",
            "-n",
            &set.ns,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .await
    };
    let (before, parent_before) = (store_revision(&s.client()).await, parent_version().await);
    let r = set
        .once(repo.path(), &["--path", "app", "--exit-code"], 0)
        .await;
    assert!(all_unchanged(&r), "{r}");
    assert_eq!(
        parent_version().await,
        parent_before,
        "an unchanged re-sync rewrote the record"
    );
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "an unchanged re-sync wrote"
    );

    // A removed file is pruned; --exit-code says it changed.
    repo.remove("app/b.yaml");
    repo.commit("remove b");
    let r = set
        .once(repo.path(), &["--path", "app", "--exit-code"], 2)
        .await;
    assert_eq!(deleted(&r), ["b"], "{r}");
    assert_eq!(set.configmaps(&s).await, ["a"]);

    // A path added creates its objects; removed, prunes them.
    let r = set
        .once(repo.path(), &["--path", "app", "--path", "extra"], 0)
        .await;
    assert!(applied(&r).contains(&("c".into(), "create".into())), "{r}");
    assert_eq!(set.configmaps(&s).await, ["a", "c"]);
    let r = set.once(repo.path(), &["--path", "app"], 0).await;
    assert_eq!(deleted(&r), ["c"], "{r}");
    assert_eq!(set.configmaps(&s).await, ["a"]);
}

/// A ConfigMap's uid and resourceVersion.
async fn live(s: &Server, ns: &str, name: &str) -> (Value, Value) {
    let json = s
        .kubectl_ok(&["get", "configmap", "-n", ns, name, "-o", "json"])
        .await;
    let v: Value = serde_json::from_str(&json).unwrap();
    (
        v["metadata"]["uid"].clone(),
        v["metadata"]["resourceVersion"].clone(),
    )
}

/// Polls until the set's ConfigMaps are `want`.
async fn wait_for(s: &Server, set: &Set, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got = set.configmaps(s).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waited for {want:?}, have {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn branch_and_url_switches_with_the_same_manifests_change_nothing() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-switch").await;
    let repo = Repo::new();
    repo.write("deploy/a.yaml", &cm("a", "1"));
    repo.write("deploy/b.yaml", &cm("b", "1"));
    repo.commit("first");
    set.once(repo.path(), &[], 0).await;
    let before = (live(&s, &set.ns, "a").await, live(&s, &set.ns, "b").await);

    // Another branch with the same manifests (and a commit of its own).
    repo.git(&["checkout", "-q", "-b", "release"]);
    let release = repo.commit("an empty commit on release");
    let r = set.once(repo.path(), &["--branch", "release"], 0).await;
    assert!(all_unchanged(&r), "{r}");
    // Another URL: a clone.
    let clone = tempfile::tempdir().unwrap();
    let dest = clone.path().join("mirror");
    repo.git(&[
        "clone",
        "-q",
        repo.path().to_str().unwrap(),
        dest.to_str().unwrap(),
    ]);
    let url = format!("file://{}", dest.display());
    let r = set.once(Path::new(&url), &["--branch", "release"], 0).await;
    assert!(all_unchanged(&r), "{r}");
    assert_eq!(
        (live(&s, &set.ns, "a").await, live(&s, &set.ns, "b").await),
        before,
        "a switch re-labelled or replaced something"
    );
    let st = set.status().await;
    assert_eq!(st["revision"], format!("release@sha1:{release}"), "{st}");
    assert!(
        st["source"].as_str().unwrap().starts_with("file://"),
        "{st}"
    );
}

#[tokio::test]
async fn a_renamed_object_is_replaced_and_drift_is_restored() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-drift").await;
    let repo = Repo::new();
    repo.write("web.yaml", &cm("old", "1"));
    repo.commit("first");
    set.once(repo.path(), &[], 0).await;
    repo.write("web.yaml", &cm("new", "1"));
    repo.commit("rename");
    let r = set.once(repo.path(), &[], 0).await;
    assert_eq!(deleted(&r), ["old"], "{r}");
    assert_eq!(set.configmaps(&s).await, ["new"]);

    // Someone changes a field kgc applied and adds one of their own.
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "new",
        "-n",
        &set.ns,
        "--type=merge",
        "-p",
        r#"{"data":{"k":"edited","theirs":"x"},"metadata":{"labels":{"team":"blue"}}}"#,
    ])
    .await;
    let r = set.once(repo.path(), &[], 0).await;
    assert!(
        applied(&r).contains(&("new".into(), "update".into())),
        "{r}"
    );
    let v: Value = serde_json::from_str(
        &s.kubectl_ok(&["get", "configmap", "new", "-n", &set.ns, "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(v["data"]["k"], "1", "kgc's field is restored: {v}");
    assert_eq!(
        v["data"]["theirs"], "x",
        "another manager's field is left: {v}"
    );
    assert_eq!(v["metadata"]["labels"]["team"], "blue", "{v}");
    // And the next run finds nothing to do.
    let r = set.once(repo.path(), &[], 0).await;
    assert!(all_unchanged(&r), "{r}");
}

#[tokio::test]
async fn an_unreadable_revision_applies_and_prunes_nothing() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-invalid").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    repo.write("b.yaml", &cm("b", "1"));
    let good = repo.commit("good");
    set.once(repo.path(), &[], 0).await;

    // A commit that removes b, changes a, and holds an invalid file.
    repo.remove("b.yaml");
    repo.write("a.yaml", &cm("a", "2"));
    repo.write("bad.yaml", "apiVersion: v1\nkind: [unclosed\n");
    let bad = repo.commit("bad");
    let out = set.once(repo.path(), &[], 1).await;
    let err = out.as_str().unwrap_or_default().to_owned();
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(err.contains("\nkgc: error: syncing "), "{err}");
    assert!(err.contains("\n  caused by: bad.yaml:2: "), "{err}");
    assert!(!err.contains("stack backtrace"), "{err}");
    assert_eq!(set.configmaps(&s).await, ["a", "b"], "something was pruned");
    let a = s
        .kubectl_ok(&[
            "get",
            "configmap",
            "a",
            "-n",
            &set.ns,
            "-o",
            "jsonpath={.data.k}",
        ])
        .await;
    assert_eq!(a.trim(), "1", "something was applied");
    let st = set.status().await;
    assert_eq!(st["revision"], format!("main@sha1:{good}"), "{st}");
    assert_eq!(st["attempted_revision"], format!("main@sha1:{bad}"), "{st}");
    assert_eq!(st["outcome"], "Failed");
    assert!(st["message"].as_str().unwrap().contains("bad.yaml"), "{st}");
    assert!(
        set.event_reasons(&s)
            .await
            .contains(&"ReconciliationFailed".to_owned())
    );

    // An unknown kind is as bad; a missing branch too.
    repo.remove("bad.yaml");
    repo.write(
        "odd.yaml",
        "apiVersion: example.com/v1\nkind: Nothing\nmetadata: {name: x}\n",
    );
    repo.commit("unknown kind");
    set.once(repo.path(), &[], 1).await;
    set.once(repo.path(), &["--branch", "nope"], 1).await;
    assert_eq!(set.configmaps(&s).await, ["a", "b"]);
    assert_eq!(set.status().await["revision"], format!("main@sha1:{good}"));

    // Fixed: applied and pruned.
    repo.remove("odd.yaml");
    repo.commit("fixed");
    set.once(repo.path(), &[], 0).await;
    assert_eq!(set.configmaps(&s).await, ["a"]);
    assert_eq!(set.status().await["outcome"], "Succeeded");
}

#[tokio::test]
async fn a_suspended_sync_does_nothing_until_resumed() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-suspend").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    repo.write("b.yaml", &cm("b", "1"));
    repo.commit("first");
    set.once(repo.path(), &[], 0).await;
    let out = set.run(&["suspend"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(set.status().await["suspended"], true);
    repo.remove("b.yaml");
    repo.commit("remove b");
    set.once(repo.path(), &[], 3).await;
    assert_eq!(set.configmaps(&s).await, ["a", "b"]);
    let out = set.run(&["resume"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(set.status().await["suspended"], false);
    set.once(repo.path(), &[], 0).await;
    assert_eq!(set.configmaps(&s).await, ["a"]);
}

#[tokio::test]
async fn the_daemon_picks_up_a_new_commit_within_an_interval() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-daemon").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    repo.commit("first");
    let cache = set.cache.path().to_str().unwrap().to_owned();
    let mut c = set.command(&[
        "--git",
        repo.path().to_str().unwrap(),
        "--cache-dir",
        &cache,
        "--interval",
        "1s",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().expect("spawning kgc sync");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("kgc sync announced its address")
        .unwrap()
        .unwrap_or_default();
    let url = first
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    assert!(url.starts_with("http://"), "{first}");

    wait_for(&s, &set, &["a"]).await;
    repo.write("b.yaml", &cm("b", "1"));
    let second = repo.commit("add b");
    let added = Instant::now();
    wait_for(&s, &set, &["a", "b"]).await;
    assert!(
        added.elapsed() < Duration::from_secs(5),
        "picked up after {:?}",
        added.elapsed()
    );

    let (code, body) = http_get(&format!("{url}/healthz"));
    assert_eq!(code, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, body) = http_get(&format!("{url}/metrics"));
        assert_eq!(code, 200);
        if body.contains(&format!("revision=\"main@sha1:{second}\"")) {
            assert!(body.contains("kgc_sync_objects_applied_total 2"), "{body}");
            assert!(body.contains("kgc_sync_last_duration_seconds"), "{body}");
            assert!(body.contains("kgc_sync_failures_total 0"), "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The set's lease.
    s.kubectl_ok(&["get", "lease", "kgc-shop-prod-sync", "-n", &set.ns])
        .await;

    // SIGTERM stops it cleanly.
    let pid = child.id().expect("a pid") as i32;
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("kgc sync stopped on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn the_project_file_names_the_source_and_flags_win() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-project").await;
    let repo = Repo::new();
    repo.write("app/a.yaml", &cm("a", "1"));
    repo.write("other/x.yaml", &cm("x", "1"));
    repo.commit("first");
    repo.git(&["checkout", "-q", "-b", "release"]);
    repo.write("app/b.yaml", &cm("b", "1"));
    repo.commit("release");
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("kgc.yaml");
    std::fs::write(
        &project,
        format!(
            "app: shop\nsync: {{git: {:?}, paths: [app]}}\nenvironments:\n  prod: {{namespace: {}, sync: {{branch: release}}}}\n",
            repo.path().to_str().unwrap(),
            set.ns
        ),
    )
    .unwrap();
    let cache = set.cache.path().to_str().unwrap().to_owned();
    let project = project.to_str().unwrap();
    // No --git: the repository, the environment's branch and the top's paths come from the file.
    let out = set
        .run(&["--once", "--project", project, "--cache-dir", &cache])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(set.configmaps(&s).await, ["a", "b"]);
    let st = set.status().await;
    assert!(
        st["revision"]
            .as_str()
            .unwrap()
            .starts_with("release@sha1:"),
        "{st}"
    );
    // Flags win: --path other takes the place of the file's paths.
    let out = set
        .run(&[
            "--once",
            "--project",
            project,
            "--cache-dir",
            &cache,
            "--path",
            "other",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(set.configmaps(&s).await, ["x"]);
}

#[tokio::test]
async fn a_stalled_fetch_times_out_and_prunes_nothing() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-stalled").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    repo.commit("first");
    set.once(repo.path(), &[], 0).await;
    // A git server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/shop.git", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(60));
        drop(held);
    });
    let cache = set.cache.path().to_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    let out = set
        .run(&[
            "--once",
            "--git",
            &url,
            "--cache-dir",
            &cache,
            "--fetch-timeout",
            "1s",
        ])
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no answer within 1s"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20), "{err}");
    assert_eq!(set.configmaps(&s).await, ["a"], "something was pruned");
}

/// `(reason, message)` of the Events on the set's parent, oldest first.
async fn events(s: &Server, set: &Set) -> Vec<(String, String)> {
    let out = s
        .kubectl_ok(&[
            "get",
            "events",
            "-n",
            &set.ns,
            "--sort-by=.metadata.name",
            "-o",
            "json",
        ])
        .await;
    let v: Value = serde_json::from_str(&out).unwrap();
    v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == "kgc-shop-prod")
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or("").to_owned();
            (text("reason"), text("message"))
        })
        .collect()
}

#[tokio::test]
async fn what_a_sync_says_is_about_its_own_run() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-words").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    let first = repo.commit("first");
    set.once(repo.path(), &[], 0).await;

    // A single run has no next run to announce.
    let said = events(&s, &set).await;
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].0, "ReconciliationSucceeded");
    assert!(
        said[0].1.starts_with("Reconciliation finished in ")
            && said[0].1.ends_with(&format!(
                ": main@sha1:{first} (1 created, 0 configured, 0 unchanged, 0 deleted, 0 kept, 0 undetermined)"
            ))
            && !said[0].1.contains("next run"),
        "{said:?}"
    );

    // An unchanged run logs its own counts, not those of the run that created `a`.
    let cache = set.cache.path().to_str().unwrap().to_owned();
    let git = repo.path().to_str().unwrap().to_owned();
    let out = set
        .command(&["--once", "--git", &git, "--cache-dir", &cache])
        .env("RUST_LOG", "info")
        .output()
        .await
        .expect("running kgc sync");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains(
            "counts=0 created, 0 configured, 1 unchanged, 0 deleted, 0 kept, 0 undetermined"
        ),
        "{log}"
    );

    // A failure names its revision once.
    repo.write("bad.yaml", "apiVersion: v1\nkind: [unclosed\n");
    let bad = repo.commit("bad");
    set.once(repo.path(), &[], 1).await;
    let said = events(&s, &set).await;
    let (reason, message) = said.last().unwrap();
    assert_eq!(reason, "ReconciliationFailed", "{said:?}");
    assert_eq!(message.matches(&bad).count(), 1, "{message}");
    assert!(message.contains("bad.yaml:2: "), "{message}");

    // `kgc sync status`: every value starts in the same column.
    let out = set.run(&["status"]).await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starts: Vec<usize> = table
        .lines()
        .map(|l| {
            let key_end = l.find("   ").unwrap_or_else(|| panic!("{l:?} in\n{table}"));
            key_end + l[key_end..].len() - l[key_end..].trim_start().len()
        })
        .collect();
    assert_eq!(starts.len(), 10, "{table}");
    assert!(starts.iter().all(|&c| c == starts[0]), "{table}");
    assert!(table.contains("\nLAST CHANGE   "), "{table}");
}

/// A Job: on a server without the Job controller it never starts, so it is never ready.
const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
";

#[tokio::test]
async fn a_sync_that_waits_records_the_sets_health() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-health").await;
    let repo = Repo::new();
    repo.write("a.yaml", &cm("a", "1"));
    repo.write("job.yaml", JOB);
    repo.commit("a job that never runs");
    // Not ready at the deadline: exit 3, unhealthy, and why.
    set.once(repo.path(), &["--wait", "--timeout", "1s"], 3)
        .await;
    let st = set.status().await;
    assert_eq!(st["health"], "False", "{st}");
    assert_eq!(st["outcome"], "Incomplete", "{st}");
    assert_eq!(
        st["health_message"],
        format!(
            "Job.batch {}/migrate is InProgress: Job not started",
            set.ns
        ),
        "{st}"
    );
    let table = set.run(&["status"]).await;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("HEALTHY") && l.contains("False (Job.batch ")),
        "{table}"
    );

    repo.remove("job.yaml");
    repo.commit("no job");
    set.once(repo.path(), &["--wait", "--timeout", "10s"], 0)
        .await;
    let st = set.status().await;
    assert_eq!(st["health"], "True", "{st}");
    assert!(st["health_message"].is_null(), "{st}");
    // Healthy again and unchanged: nothing written.
    let before = store_revision(&s.client()).await;
    set.once(repo.path(), &["--wait", "--timeout", "10s"], 0)
        .await;
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "an unchanged, healthy re-sync wrote"
    );
    // A run that does not wait does not judge health: the record drops it.
    set.once(repo.path(), &[], 0).await;
    assert!(set.status().await["health"].is_null());
}

/// A generator (at the repository's root, run in the synced path) that prints a ConfigMap for
/// each word of the path's `names` file, and fails when one of them is `FAIL`.
const GENERATOR: &str = r#"#!/bin/sh
if grep -qw FAIL names; then echo "chart shop not found" >&2; exit 7; fi
for n in $(cat names); do
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: generated}\n---\n' "$n"
done
"#;

impl Repo {
    fn executable(&self, file: &str, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        self.write(file, text);
        let p = self.path().join(file);
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[tokio::test]
async fn flux_yaml_generators_run_only_with_manifest_generation_and_prune_what_they_stop_printing()
{
    let s = Server::start().await;
    let set = Set::new(&s, "sync-fluxyaml").await;
    let repo = Repo::new();
    // fluxd's layout: one .flux.yaml at the top serves every path below it.
    repo.write(
        ".flux.yaml",
        "version: 1\ncommandUpdated:\n  generators:\n  - command: ../generate.sh\n",
    );
    repo.executable("generate.sh", GENERATOR);
    repo.write("deploy/names", "a b c\n");
    // Generated paths are not read: this file is never applied.
    repo.write("deploy/plain.yaml", &cm("plain", "1"));
    repo.commit("generated");
    let path = ["--path", "deploy"];
    let with_flag = ["--path", "deploy", "--manifest-generation"];

    let out = set.once(repo.path(), &path, 1).await;
    let err = out.as_str().unwrap_or_default();
    assert!(
        err.contains(
            ".flux.yaml: manifest generation is disabled; pass --manifest-generation to run its generators"
        ),
        "{err}"
    );
    assert!(set.configmaps(&s).await.is_empty(), "something was applied");
    assert_eq!(set.status().await["outcome"], "Failed");

    set.once(repo.path(), &with_flag, 0).await;
    assert_eq!(set.configmaps(&s).await, ["a", "b", "c"]);
    let component = s
        .kubectl_ok(&[
            "get",
            "configmap",
            "a",
            "-n",
            &set.ns,
            "-o",
            "jsonpath={.metadata.annotations.kgc\\.io/component}",
        ])
        .await;
    assert_eq!(component.trim(), "deploy/.flux");

    // The generator stops printing b: b is pruned.
    repo.write("deploy/names", "a c\n");
    repo.commit("without b");
    let report = set.once(repo.path(), &with_flag, 0).await;
    assert_eq!(deleted(&report), ["b"]);
    assert_eq!(set.configmaps(&s).await, ["a", "c"]);

    // A failing generator: its exit code and stderr reported, nothing applied or pruned.
    repo.write("deploy/names", "FAIL\n");
    let failing = repo.commit("failing generator");
    let out = set.once(repo.path(), &with_flag, 1).await;
    let err = out.as_str().unwrap_or_default();
    assert!(
        err.contains(
            "generator \"../generate.sh\" failed with exit code 7; stderr: chart shop not found"
        ),
        "{err}"
    );
    assert_eq!(set.configmaps(&s).await, ["a", "c"]);
    let st = set.status().await;
    assert_eq!(
        st["attempted_revision"],
        format!("main@sha1:{failing}"),
        "{st}"
    );
    assert!(
        st["message"]
            .as_str()
            .unwrap_or("")
            .contains("chart shop not found"),
        "{st}"
    );

    // scanForFiles below resets the path to its files.
    repo.write("deploy/.flux.yaml", "version: 1\nscanForFiles: {}\n");
    repo.commit("plain files");
    let report = set.once(repo.path(), &path, 0).await;
    assert_eq!(deleted(&report), ["a", "c"]);
    assert_eq!(set.configmaps(&s).await, ["plain"]);
}

/// A kustomize overlay synced from git (issue 29): built natively as `kgc apply` builds it, an
/// unchanged re-sync writes nothing, and a generator's new data rotates its hash suffix: the
/// new ConfigMap is created, the Deployment points at it and the old one is pruned.
#[tokio::test]
async fn a_kustomize_overlay_syncs_and_its_rotated_configmap_is_pruned() {
    let s = Server::start().await;
    let set = Set::new(&s, "sync-kustomize").await;
    let repo = Repo::new();
    repo.write(
        "base/kustomization.yaml",
        "resources: [deployment.yaml]\nconfigMapGenerator:\n- name: settings\n  literals: [MODE=one]\n",
    );
    repo.write(
        "base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n        envFrom: [{configMapRef: {name: settings}}]\n",
    );
    repo.write(
        "deploy/kustomization.yaml",
        "namePrefix: prod-\nresources: [../base]\n",
    );
    repo.commit("an overlay");
    set.once(repo.path(), &["--path", "deploy"], 0).await;
    let first = set.configmaps(&s).await;
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].starts_with("prod-settings-"), "{first:?}");

    let before = store_revision(&s.client()).await;
    set.once(repo.path(), &["--path", "deploy"], 0).await;
    assert_eq!(
        store_revision(&s.client()).await,
        before,
        "an unchanged re-sync of a kustomization wrote"
    );

    repo.write(
        "base/kustomization.yaml",
        "resources: [deployment.yaml]\nconfigMapGenerator:\n- name: settings\n  literals: [MODE=two]\n",
    );
    repo.commit("new settings");
    let report = set.once(repo.path(), &["--path", "deploy"], 0).await;
    let now = set.configmaps(&s).await;
    assert_eq!(
        now.len(),
        1,
        "the rotated ConfigMap is pruned: {now:?} {report}"
    );
    assert_ne!(now, first);
    let env_from = s
        .kubectl_ok(&[
            "get",
            "deployment",
            "prod-web",
            "-n",
            &set.ns,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].envFrom[0].configMapRef.name}",
        ])
        .await;
    assert_eq!(env_from.trim(), now[0]);
}
