//! Shell habits (issue 29, item 7): what a person typing `kgc` sees when a flag is wrong, the
//! server is down, a file is malformed or the output is a pipe, from the real binary. Most need
//! no server: a usage error stops before anything is read, a malformed file before connecting,
//! and a refused connection is what a port nobody listens on gives.

kgc_testsupport::bind_kgc!();

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use kgc_testsupport::*;

/// `kgc ARGS` to its end (within a minute), with stdin closed and `env` set.
async fn kgc_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.args(args)
        .envs(env.iter().copied())
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .unwrap_or_else(|_| panic!("kgc {args:?} finished within 60 s"))
        .unwrap_or_else(|e| panic!("running kgc {args:?}: {e}"))
}

async fn kgc(args: &[&str]) -> Output {
    kgc_env(args, &[]).await
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// A directory holding `files` (name, text).
fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("a temporary directory");
    for (name, text) in files {
        std::fs::write(d.path().join(name), text).expect("writing a test file");
    }
    d
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n";

#[tokio::test]
async fn a_usage_error_exits_with_the_commands_error_code() {
    // 1 for every command (2 would read as "changed" for `apply --exit-code`), 2 for `diff`
    // (whose 1 is "differences", as kubectl diff's).
    for (args, want) in [
        (&["apply", "--no-such-flag"][..], 1),
        (&["apply", "--exit-code", "--max-deletes"], 1),
        (&["prune", "--no-such-flag"], 1),
        (&["plan", "--no-such-flag"], 1),
        (&["delete", "--no-such-flag"], 1),
        (&["sync", "--once", "--interval", "soon"], 1),
        (&["sync", "status", "--no-such-flag"], 1),
        (&["tree"], 1),
        (&["why"], 1),
        (&["controller", "--no-such-flag"], 1),
        (&["serve", "--no-such-flag"], 1),
        (&["no-such-command"], 1),
        (&["diff", "--no-such-flag"], 2),
        (&["--log-format", "json", "diff", "--no-such-flag"], 2),
    ] {
        let out = kgc(args).await;
        let err = stderr(&out);
        assert_eq!(code(&out), want, "kgc {args:?}: {err}");
        assert!(err.starts_with("error: "), "kgc {args:?}: {err}");
        assert!(
            err.contains("Usage: kgc") || err.contains("try '--help'"),
            "kgc {args:?}: {err}"
        );
    }
    for args in [
        &["--help"][..],
        &["--version"],
        &["apply", "--help"],
        &["diff", "-h"],
    ] {
        let out = kgc(args).await;
        assert_eq!(code(&out), 0, "kgc {args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "kgc {args:?} printed nothing");
    }
}

#[tokio::test]
async fn a_kind_without_a_name_is_a_usage_error() {
    for command in ["why", "tree"] {
        for args in [&["cm"][..], &["cm/"], &["cm", "a/b"]] {
            let mut all = vec![command];
            all.extend_from_slice(args);
            let out = kgc(&all).await;
            let err = stderr(&out);
            assert_eq!(code(&out), 1, "kgc {all:?}: {err}");
            assert!(
                err.starts_with("error: ") && err.contains("expected KIND/NAME (or KIND NAME)"),
                "kgc {all:?}: {err}"
            );
            assert!(
                err.contains(&format!("Usage: kgc {command} ")),
                "kgc {all:?}: {err}"
            );
        }
    }
}

/// A kubeconfig whose server is `127.0.0.1:PORT`, a port nobody listens on.
fn refused_kubeconfig(dir: &Path) -> (PathBuf, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let host = format!("127.0.0.1:{port}");
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             https://{host}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  \
             context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  \
             user:\n    token: t\n"
        ),
    )
    .expect("writing the kubeconfig");
    (path, host)
}

#[tokio::test]
async fn a_refused_connection_is_kubectls_one_line() {
    let d = dir(&[("web.yaml", CM)]);
    let (kubeconfig, host) = refused_kubeconfig(d.path());
    let kc = kubeconfig.to_str().unwrap();
    let manifests = d.path().join("web.yaml");
    let f = manifests.to_str().unwrap();
    let git = d.path().to_str().unwrap();
    let set = ["--app", "shop", "--env", "prod", "--kubeconfig", kc];
    let line = format!(
        "kgc: error: the connection to the server {host} was refused - did you specify the right \
         host or port?\n"
    );
    for (args, want) in [
        (vec!["apply", "-f", f], 1),
        (vec!["diff", "-f", f], 2),
        (vec!["prune", "-f", f], 1),
        (vec!["plan", "-f", f], 1),
        (vec!["delete"], 1),
        (vec!["sync", "--once", "--git", git, "--cache-dir", git], 1),
        (vec!["sync", "status"], 1),
        (vec!["sync", "suspend"], 1),
    ] {
        let mut all = args.clone();
        all.extend_from_slice(&set);
        // The log off: what is asserted is the error kgc prints.
        let out = kgc_env(&all, &[("RUST_LOG", "off")]).await;
        assert_eq!(code(&out), want, "kgc {all:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), line, "kgc {all:?}");
    }
    for command in ["tree", "why"] {
        let all = [command, "cm/web", "--kubeconfig", kc];
        let out = kgc(&all).await;
        assert_eq!(code(&out), 1, "kgc {all:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), line, "kgc {all:?}");
    }
}

#[tokio::test]
async fn a_malformed_manifest_is_one_line_naming_the_file_and_line() {
    let d = dir(&[
        ("good.yaml", CM),
        (
            "bad.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {a: b\n",
        ),
        (
            "tab.yaml",
            "# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: web\n",
        ),
    ]);
    let (kubeconfig, _) = refused_kubeconfig(d.path());
    for (file, line) in [("bad.yaml", 5), ("tab.yaml", 6)] {
        let path = d.path().join(file);
        let all = [
            "diff",
            "-f",
            path.to_str().unwrap(),
            "--app",
            "shop",
            "--env",
            "prod",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ];
        let out = kgc(&all).await;
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "kgc {all:?}: {err}");
        let prefix = format!("kgc: error: {}:{line}: ", path.display());
        assert!(err.starts_with(&prefix), "kgc {all:?}: {err:?}");
        assert_eq!(err.lines().count(), 1, "kgc {all:?}: {err:?}");
        assert!(!err.contains('^') && !err.contains(" | "), "{err:?}");
        assert_eq!(err.matches("error").count(), 1, "{err:?}");
    }
}

#[tokio::test]
async fn logs_to_a_file_or_a_pipe_carry_no_colour() {
    // A server's log goes to a file; a failed sync's to a pipe.
    let s = Server::start().await;
    let log = s.log_tail(10_000);
    assert!(log.contains("INFO"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file: {log:?}"
    );
    let d = dir(&[]);
    let (kubeconfig, _) = refused_kubeconfig(d.path());
    let dir = d.path().to_str().unwrap();
    let out = kgc_env(
        &[
            "sync",
            "--once",
            "--git",
            dir,
            "--cache-dir",
            dir,
            "--app",
            "shop",
            "--env",
            "prod",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    // kube-client's log line of the failed connection, which RUST_LOG=info lets through.
    let err = stderr(&out);
    assert!(err.contains("ERROR"), "{err}");
    assert!(!err.contains('\u{1b}'), "colour codes in a pipe: {err:?}");
}
