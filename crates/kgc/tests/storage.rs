//! What `kgc serve` keeps on disk (issue 17, items 7 and 8): storage faults make the store
//! read-only and not ready, then it recovers by itself; one server per data directory; the data
//! directory is private; Secrets are encrypted at rest, and keys rotate as upstream documents.

kgc_testsupport::bind_kgc!();

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kgc_testsupport::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// The lines of a kgc's stderr (its log is off: only what it prints on failure).
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

async fn create(s: &Server, path: &str, body: Value) -> RawResponse {
    s.raw("POST", path, Some("application/json"), body.to_string())
        .await
}

#[tokio::test]
async fn second_server_on_a_locked_data_dir_exits_naming_the_holder() {
    // Secure, so that add-user has a CA to sign with.
    let mut s = Server::start_secure(&[]).await;
    let dir = s.data_dir();
    let dir_arg = dir.to_str().unwrap();
    let expected = in_use(&dir, &s.pid().to_string());
    for extra in [&[][..], &["--in-memory"][..]] {
        let mut args = vec!["serve", "--data-dir", dir_arg, "--listen", "127.0.0.1:0"];
        args.extend(extra);
        let (ok, stdout, stderr) = Kgc::run(&args);
        assert!(!ok, "a second server {extra:?} started: {stdout}");
        assert_eq!(error_lines(&stderr), vec![expected.as_str()], "{stderr}");
    }
    // The lock dies with its holder: a restart after kill -9 is not blocked.
    s.kill9();
    s.restart().await;

    // add-user writing into a stopped server's store takes the lock too.
    s.terminate();
    let add_user = || {
        Kgc::run(&[
            "serve",
            "add-user",
            "bob",
            "--role",
            "view",
            "--data-dir",
            dir_arg,
        ])
    };
    let lock = std::fs::File::options()
        .write(true)
        .open(dir.join("kgc.lock"))
        .unwrap();
    lock.try_lock()
        .expect("the stopped server released its lock");
    std::fs::write(dir.join("kgc.lock"), "4242\n").unwrap();
    let (ok, _, stderr) = add_user();
    assert!(!ok, "add-user wrote into a locked store");
    assert_eq!(error_lines(&stderr), vec![in_use(&dir, "4242")], "{stderr}");
    drop(lock);
    let (ok, _, stderr) = add_user();
    assert!(ok, "add-user on a free data directory: {stderr}");
}

/// What a process trying a data directory held by `pid` prints.
fn in_use(dir: &Path, pid: &str) -> String {
    format!(
        "kgc: error: the data directory {} is in use by process {pid} (another kgc serve or add-user): \
         stop it, or choose another --data-dir",
        dir.display()
    )
}

#[tokio::test]
async fn in_memory_server_without_a_data_dir_writes_into_no_data_dir() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Kgc::command()
        .args([
            "serve",
            "--in-memory",
            "--insecure-http",
            "--listen",
            "127.0.0.1:0",
        ])
        .env("XDG_DATA_HOME", home.path().join("share"))
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let kubeconfig = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("export KUBECONFIG=").map(PathBuf::from))
    })
    .join()
    .unwrap()
    .expect("the server announced its kubeconfig");
    assert!(
        !kubeconfig.starts_with(home.path()),
        "{} is in the default data directory",
        kubeconfig.display()
    );
    assert_eq!(mode(&kubeconfig), 0o600);
    assert_eq!(mode(kubeconfig.parent().unwrap()), 0o700);
    assert!(
        !home.path().join("share").exists(),
        "the default data dir was created"
    );
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());
    assert!(
        !kubeconfig.exists(),
        "the temporary directory outlived the server"
    );
}

#[tokio::test]
async fn data_dir_is_private() {
    let mut s = Server::start_with(&[]).await;
    let dir = s.data_dir();
    let ns = fresh_namespace(&s.client(), "private").await;
    let r = create(
        &s,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"metadata": {"name": "c"}}),
    )
    .await;
    assert_eq!(r.status, 201);
    let private = [
        "kgc.db",
        "kgc.db-wal",
        "kgc.db-shm",
        "kgc.lock",
        "kubeconfig",
        "pki/encryption-config.yaml",
    ];
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("pki")), 0o700);
    for f in private {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }

    // A data directory as an older kgc left it is made private when it is next opened.
    s.terminate();
    for (f, m) in [
        (".", 0o755),
        ("pki", 0o755),
        ("kgc.db", 0o644),
        ("kubeconfig", 0o644),
    ] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(m)).unwrap();
    }
    s.restart().await;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("pki")), 0o700);
    for f in private {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
    assert!(s.log_tail(50).contains("made the data directory private"));
}

/// Every byte kgc keeps for its store: the database, its WAL and shared memory.
fn stored_bytes(dir: &Path) -> Vec<u8> {
    ["kgc.db", "kgc.db-wal", "kgc.db-shm"]
        .iter()
        .filter_map(|f| std::fs::read(dir.join(f)).ok())
        .flatten()
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// An EncryptionConfiguration for Secrets with these aesgcm keys, then identity.
fn aesgcm_config(keys: &[(&str, &str)]) -> String {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| {
            format!("            - name: {name}\n              secret: {secret}\n")
        })
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources:\n      - secrets\n    providers:\n      - aesgcm:\n          keys:\n{keys}      - identity: {{}}\n"
    )
}

/// `data.k` of a Secret, read through the API.
async fn secret_value(s: &Server, secrets: &str, name: &str) -> Value {
    let r = s
        .raw("GET", &format!("{secrets}/{name}"), None, Vec::new())
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["data"]["k"].clone()
}

#[tokio::test]
async fn secrets_are_encrypted_at_rest() {
    // A data directory of a kgc that stored Secrets in plain text (identity only).
    let plain = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - identity: {}\n";
    let mut s = Server::start_with(&[]).await;
    let dir = s.data_dir();
    let plain_config = s.write_file("plain.yaml", plain);
    s.restart_with(&[
        "--encryption-provider-config",
        plain_config.to_str().unwrap(),
    ])
    .await;
    let ns = fresh_namespace(&s.client(), "atrest").await;
    // base64 of "old-plain-secret" and of "new-secret-value!" as the API stores them.
    let old = "b2xkLXBsYWluLXNlY3JldA==";
    let new = "bmV3LXNlY3JldC12YWx1ZSE=";
    let secrets = format!("/api/v1/namespaces/{ns}/secrets");
    let r = create(
        &s,
        &secrets,
        json!({"metadata": {"name": "old"}, "data": {"k": old}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        contains(&stored_bytes(&dir), old),
        "identity stores plain text"
    );

    // The default: the plain Secret is rewritten encrypted at start, new ones are written so.
    s.restart_with(&[]).await;
    let r = create(
        &s,
        &secrets,
        json!({"metadata": {"name": "new"}, "data": {"k": new}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let cm = create(
        &s,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"metadata": {"name": "visible"}, "data": {"k": "plain-configmap-value"}}),
    )
    .await;
    assert_eq!(cm.status, 201);
    for running in [true, false] {
        if !running {
            s.terminate();
        }
        let bytes = stored_bytes(&dir);
        assert!(
            contains(&bytes, "plain-configmap-value"),
            "looked at the wrong files"
        );
        assert!(
            !contains(&bytes, old) && !contains(&bytes, new),
            "a Secret is readable on disk"
        );
        assert!(contains(&bytes, "k8s:enc:aesgcm:v1:key1:"));
    }
    s.restart().await;
    assert_eq!(secret_value(&s, &secrets, "old").await, old);
    assert_eq!(secret_value(&s, &secrets, "new").await, new);

    // Rotation as upstream documents it: add key2 second, make it first, rewrite, remove key1.
    let default = std::fs::read_to_string(dir.join("pki/encryption-config.yaml")).unwrap();
    let key1 = default
        .lines()
        .find_map(|l| l.trim().strip_prefix("secret: "))
        .unwrap()
        .to_owned();
    let key2 = "MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjI=";
    let config = s.scratch().join("rotation.yaml");
    for keys in [
        vec![("key1", key1.as_str()), ("key2", key2)],
        vec![("key2", key2), ("key1", key1.as_str())],
    ] {
        std::fs::write(&config, aesgcm_config(&keys)).unwrap();
        s.restart_with(&["--encryption-provider-config", config.to_str().unwrap()])
            .await;
    }
    // The rewrite step: kubectl replace of every Secret (kgc already rewrote them on start).
    let all = s
        .kubectl_ok(&["get", "secrets", "-n", &ns, "-o", "json"])
        .await;
    s.kubectl_stdin_ok(&["replace", "-f", "-"], &all).await;
    std::fs::write(&config, aesgcm_config(&[("key2", key2)])).unwrap();
    s.restart().await;
    assert_eq!(secret_value(&s, &secrets, "old").await, old);
    assert_eq!(secret_value(&s, &secrets, "new").await, new);
    s.terminate();
    let bytes = stored_bytes(&dir);
    assert!(contains(&bytes, "k8s:enc:aesgcm:v1:key2:"));
    assert!(
        !contains(&bytes, "k8s:enc:aesgcm:v1:key1:"),
        "a Secret still uses key1"
    );
}

/// A size-limited tmpfs mounted on the data directory, unmounted (lazily) when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Mounts a tmpfs of `size` on `dir`; `None` (after saying why, in one line) when this
/// process may not mount.
fn mount_tmpfs(dir: &Path, size: &str) -> Option<Tmpfs> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("skipped: a real full disk needs root to mount a size-limited tmpfs");
        return None;
    }
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs failed (no CAP_SYS_ADMIN here)");
        return None;
    }
    Some(Tmpfs(dir.to_owned()))
}

/// Fills the file system holding `dir` to the last byte.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while f.write_all(&block).is_ok() {}
    while f.write_all(&[0]).is_ok() {}
    let _ = f.sync_all();
    path
}

#[tokio::test]
async fn full_disk_makes_the_store_read_only_and_not_ready_then_recovers() {
    let mut tmpfs = None;
    let mut s = Server::start_prepared(&[], |dir| tmpfs = mount_tmpfs(dir, "16m")).await;
    let Some(_tmpfs) = tmpfs else { return };
    let dir = s.data_dir();
    let ns = fresh_namespace(&s.client(), "full").await;
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut watch = s
        .raw_watch(&format!("{cms}?watch=1&resourceVersion=0"))
        .await;
    let payload = "x".repeat(200 * 1024);
    let mut acked = Vec::new();
    let r = create(
        &s,
        &cms,
        json!({"metadata": {"name": "before"}, "data": {"k": payload}}),
    )
    .await;
    assert_eq!(r.status, 201);
    acked.push("before".to_owned());

    let filler = fill(&dir);
    let mut failed = None;
    for i in 0..200 {
        let name = format!("c{i}");
        let r = create(
            &s,
            &cms,
            json!({"metadata": {"name": name}, "data": {"k": payload}}),
        )
        .await;
        match r.status {
            201 => acked.push(name),
            500 => {
                failed = Some((name, r));
                break;
            }
            other => panic!("unexpected {other}: {}", r.text()),
        }
    }
    let (failed, r) = failed.expect("a write failed on the full disk");
    // Right after the failure (the first probe is a second away): a 500 with the storage's
    // text and no reason, as kube-apiserver answers a failed etcd write.
    let status = r.json();
    assert_eq!(status["reason"], Value::Null, "{status}");
    let reason = status["message"].as_str().unwrap().to_owned();
    assert!(
        reason.contains("disk is full") || reason.contains("disk I/O error"),
        "{reason}"
    );
    let (code, body) = http_get(&format!("{}/readyz", s.url()));
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body,
        "[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"
    );
    let (code, body) = http_get(&format!("{}/readyz/etcd", s.url()));
    assert_eq!(code, 500);
    assert!(body.starts_with("internal server error: "), "{body}");
    // Read-only: writes refused, reads served, nothing of the failed write visible.
    let refused = create(&s, &cms, json!({"metadata": {"name": "refused"}})).await;
    assert_eq!(refused.status, 500, "{}", refused.text());
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("the store is read-only after a failed commit: ")
    );
    let got = s
        .raw("GET", &format!("{cms}/{failed}"), None, Vec::new())
        .await;
    assert_eq!(got.status, 404);
    let list = s.raw("GET", &cms, None, Vec::new()).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.json()["items"].as_array().unwrap().len(), acked.len());
    assert_eq!(http_get(&format!("{}/livez", s.url())).0, 200);

    // Space comes back: the store recovers by itself.
    std::fs::remove_file(filler).unwrap();
    let url = s.url().to_owned();
    eventually("the server is ready again", T, || {
        let url = url.clone();
        async move { http_get(&format!("{url}/readyz")).0 == 200 }
    })
    .await;
    let r = create(&s, &cms, json!({"metadata": {"name": "after"}})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    acked.push("after".to_owned());
    // The watch saw every acknowledged create and nothing else, up to "after".
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("after") {
        let e = next_within(&mut watch, T, "watch events").await;
        seen.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, acked);

    // Nothing acknowledged was lost.
    s.restart().await;
    let list = s.raw("GET", &cms, None, Vec::new()).await.json();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    acked.sort();
    assert_eq!(names, acked);
    s.kill9();
}

#[tokio::test]
async fn start_on_a_full_disk_fails_with_one_line() {
    let mut tmpfs = None;
    let mut s = Server::start_prepared(&[], |dir| tmpfs = mount_tmpfs(dir, "4m")).await;
    let Some(_tmpfs) = tmpfs else { return };
    let dir = s.data_dir();
    s.terminate();
    fill(&dir);
    let (ok, _, stderr) = Kgc::run(&[
        "serve",
        "--data-dir",
        dir.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--insecure-http",
    ]);
    assert!(!ok);
    assert_eq!(
        error_lines(&stderr),
        vec![format!(
            "kgc: error: cannot start: the disk holding the data directory {} is full (no space left on \
             device): free some space and start again",
            dir.display()
        )],
        "{stderr}"
    );
}
