//! `kgc serve migrate --to etcd://…` (issue 33): a stopped SQLite data directory's cluster
//! copied into an etcd prefix, every object in revision order, Secrets encrypted as a server on
//! etcd stores them; the same data directory then serves the same cluster on etcd (uids,
//! objects, kubeconfig, the collector over the copied owner references) and refuses a start
//! on its stale SQLite copy. Each bad input is refused in one line, with nothing written.
//!
//! The first server of each scenario must be on SQLite: the tests name their backends
//! themselves, whatever `KGC_TEST_DATASTORE` says (they check that it kept `kgc.db`).

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::time::Duration;

use etcd_client::Client;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

/// `kgc serve --data-dir DIR migrate ARGS`: whether it succeeded, its stdout and stderr.
fn migrate(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let dir = dir.to_str().expect("a UTF-8 path");
    let all: Vec<&str> = ["serve", "--data-dir", dir, "migrate"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    Kgc::run(&all)
}

/// The one line a refused `kgc serve migrate` prints (its stderr must be exactly that line).
fn refused(dir: &Path, args: &[&str]) -> String {
    let (ok, _, stderr) = migrate(dir, args);
    assert!(!ok, "kgc serve migrate {args:?} succeeded");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "not one line: {stderr}");
    lines[0].to_owned()
}

/// Every key under `prefix`, with its value and `mod_revision`.
async fn keys(etcd: &mut Client, prefix: &str) -> Vec<(String, Vec<u8>, u64)> {
    let got = etcd
        .get(prefix, Some(etcd_client::GetOptions::new().with_prefix()))
        .await
        .expect("reading etcd");
    got.kvs()
        .iter()
        .map(|kv| {
            let key = String::from_utf8_lossy(kv.key()).into_owned();
            (key, kv.value().to_vec(), kv.mod_revision() as u64)
        })
        .collect()
}

fn rv(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    let rv = meta.resource_version.as_deref().unwrap_or_default();
    rv.parse().expect("a numeric resourceVersion")
}

/// (name, uid, resourceVersion, data) of each ConfigMap, by resourceVersion.
async fn config_maps(cms: &Api<ConfigMap>) -> Vec<(String, String, u64, String)> {
    let mut out: Vec<_> = cms
        .list(&ListParams::default())
        .await
        .expect("listing config maps")
        .items
        .into_iter()
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|c| {
            (
                c.metadata.name.clone().unwrap_or_default(),
                uid_of(&c),
                rv(&c.metadata),
                serde_json::to_string(&c.data).unwrap(),
            )
        })
        .collect();
    out.sort_by_key(|c| c.2);
    out
}

/// A secure SQLite cluster with an owner, its dependents and a Secret, migrated into a fresh
/// etcd, serves them on etcd from the same data directory: same uids and data, resourceVersions
/// in the same order (etcd's revisions of the copy), the Secret encrypted in etcd, the admin
/// kubeconfig unchanged, and the collector deletes the dependents with their owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_sqlite_cluster_moves_into_etcd_and_serves_the_same_objects() {
    let Some(cluster) = EtcdCluster::start(1).await else {
        return;
    };
    let mut s = Server::start_secure(&[]).await;
    let dir = s.data_dir();
    assert!(
        dir.join("kgc.db").is_file(),
        "the first server is not on SQLite"
    );
    let ns = fresh_namespace(&s.client(), "migrate").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let owner = cms
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "owner"}, "data": {"v": "owner"}})),
        )
        .await
        .unwrap();
    for i in 0..3 {
        let child = json!({"metadata": {"name": format!("child-{i}"), "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": uid_of(&owner), "blockOwnerDeletion": true,
        }]}, "data": {"v": i.to_string()}});
        cms.create(&PostParams::default(), &typed(child))
            .await
            .unwrap();
    }
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    let secret = typed(json!({"metadata": {"name": "s"}, "stringData": {"k": "secret-value"}}));
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let before = config_maps(&cms).await;
    assert_eq!(before.len(), 4);
    let kubeconfig = std::fs::read_to_string(s.kubeconfig_path()).unwrap();
    assert!(s.terminate().success());

    let endpoint = cluster.endpoint_list()[0].replace("http://", "etcd://");
    let (ok, stdout, stderr) = migrate(&dir, &["--to", &endpoint]);
    assert!(ok, "kgc serve migrate failed: {stderr}");
    assert!(stdout.contains("kgc serve migrate: copied "), "{stdout}");
    assert!(!dir.join("kgc.db").exists());
    assert!(dir.join("kgc.db.migrated").is_file());

    // In etcd: the objects under kube-apiserver's keys, the Secret encrypted.
    let mut etcd = Client::connect(cluster.endpoint_list(), None)
        .await
        .unwrap();
    let stored = keys(&mut etcd, "/registry/").await;
    let value = |key: &str| {
        stored
            .iter()
            .find(|(k, _, _)| k == key)
            .unwrap_or_else(|| panic!("{key} is not in etcd"))
    };
    let (_, sealed, _) = value(&format!("/registry/secrets/{ns}/s"));
    assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:"), "{sealed:?}");
    assert!(!sealed.windows(6).any(|w| w == b"secret"));
    assert!(!sealed.windows(16).any(|w| w == b"c2VjcmV0LXZhbHVl"));
    value("/registry/namespaces/kube-system");
    value(&format!("/registry/namespaces/{ns}"));

    // The stale SQLite copy is never served.
    let (ok, _, stderr) = Kgc::run(&[
        "serve",
        "--insecure-http",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(!ok, "kgc serve started on the migrated SQLite copy");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "kgc: error: the data directory {} belongs to a cluster kept in etcd {endpoint} \
             (prefix /registry): start with --datastore-endpoint, or choose another --data-dir",
            dir.display()
        )
    );

    // The same data directory on etcd: the same cluster.
    s.restart_with(&["--datastore-endpoint", &endpoint]).await;
    let after_kubeconfig = std::fs::read_to_string(s.kubeconfig_path()).unwrap();
    let identity = |k: &str| {
        k.lines()
            .filter(|l| !l.contains("server:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        identity(&after_kubeconfig),
        identity(&kubeconfig),
        "the kubeconfig's CA or credentials changed"
    );
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let after = config_maps(&cms).await;
    let without_rv = |v: &[(String, String, u64, String)]| -> Vec<(String, String, String)> {
        v.iter()
            .map(|(n, u, _, d)| (n.clone(), u.clone(), d.clone()))
            .collect()
    };
    assert_eq!(
        without_rv(&after),
        without_rv(&before),
        "objects or their order changed"
    );
    for (name, _, rv, _) in &after {
        let (_, _, mod_revision) = value(&format!("/registry/configmaps/{ns}/{name}"));
        assert_eq!(
            *rv, *mod_revision,
            "{name}'s resourceVersion is not its mod_revision"
        );
    }
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    let read = secrets.get("s").await.unwrap();
    assert_eq!(uid_of(&read), uid_of(&secret));
    assert_eq!(read.data.unwrap()["k"].0, b"secret-value");
    assert!(rv(&read.metadata) > after.last().unwrap().2);

    // The collector works on the copied owner references.
    cms.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the dependents collected with their owner", T, || async {
        config_maps(&cms).await.is_empty()
    })
    .await;
}

/// A data directory that is not a kgc one, one a server is running on, one already on etcd, an
/// etcd that does not answer, and an etcd whose prefix holds keys: each refused in one line,
/// the data directory left as it was and nothing written to etcd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_in_one_line_with_nothing_written() {
    let Some(cluster) = EtcdCluster::start(1).await else {
        return;
    };
    let endpoint = cluster.endpoints();
    let to = ["--to", endpoint.as_str()];
    let scratch = tempfile::tempdir().unwrap();

    // Not a kgc data directory: missing (and not created), empty, or with a
    // kgc.db that is not kgc's.
    let missing = scratch.path().join("missing");
    assert_eq!(
        refused(&missing, &to),
        format!(
            "kgc: error: {} is not a kgc data directory (it has no kgc.db): give the --data-dir \
             of a stopped kgc serve that kept its cluster in SQLite",
            missing.display()
        )
    );
    assert!(!missing.exists());
    let foreign = scratch.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    refused(&foreign, &to);
    // An empty file is an empty SQLite database, with no table of kgc's.
    std::fs::write(foreign.join("kgc.db"), "").unwrap();
    assert_eq!(
        refused(&foreign, &to),
        format!(
            "kgc: error: reading {}: not a kgc database (it has no objects table)",
            foreign.join("kgc.db").display()
        )
    );

    // A data directory a server runs on.
    let mut s = Server::start_with(&[]).await;
    let dir = s.data_dir();
    assert!(dir.join("kgc.db").is_file(), "the server is not on SQLite");
    let ns = fresh_namespace(&s.client(), "bad").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    cms.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "c"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        refused(&dir, &to),
        format!(
            "kgc: error: the data directory {} is in use by process {} (another kgc serve or \
             add-user): stop it, or choose another --data-dir",
            dir.display(),
            s.pid()
        )
    );
    assert!(s.terminate().success());

    // An etcd that does not answer.
    let line = refused(&dir, &["--to", "http://127.0.0.1:1"]);
    assert!(
        line.starts_with("kgc: error: etcd at http://127.0.0.1:1: "),
        "{line}"
    );

    // An etcd whose prefix holds a key (another cluster's, or an earlier copy's).
    let mut etcd = Client::connect(cluster.endpoint_list(), None)
        .await
        .unwrap();
    etcd.put("/registry/configmaps/other/x", "{}", None)
        .await
        .unwrap();
    assert_eq!(
        refused(&dir, &to),
        format!(
            "kgc: error: etcd at {endpoint} already holds 1 keys under /registry/: kgc serve \
             migrate copies into an empty prefix only (choose another --etcd-prefix, or remove \
             them with `etcdctl del --prefix /registry/`)"
        )
    );
    assert_eq!(
        keys(&mut etcd, "/").await.len(),
        1,
        "the refused copy wrote to etcd"
    );
    // Nothing marked the data directory: it still starts on SQLite, with its objects.
    assert!(!dir.join("datastore").exists());
    s.restart().await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    assert!(cms.get_opt("c").await.unwrap().is_some());
    cms.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "last"}})),
    )
    .await
    .unwrap();
    // Killed: its last writes are in SQLite's write-ahead log, not yet in kgc.db.
    s.kill9();

    // Another prefix takes it; the directory is then etcd's, and a second migrate is refused.
    let (ok, _, stderr) = migrate(&dir, &["--to", &endpoint, "--etcd-prefix", "/moved"]);
    assert!(ok, "{stderr}");
    let moved = keys(&mut etcd, "/moved/").await;
    for name in ["c", "last"] {
        let key = format!("/moved/configmaps/{ns}/{name}");
        assert!(
            moved.iter().any(|(k, _, _)| *k == key),
            "{key} was not copied"
        );
    }
    assert!(!dir.join("kgc.db-wal").exists());
    assert_eq!(
        refused(&dir, &to),
        format!(
            "kgc: error: the data directory {} belongs to a cluster already kept in etcd \
             {endpoint} (prefix /moved): there is nothing to migrate",
            dir.display()
        )
    );
}

/// A second replica started with `--join` and the first one's admin kubeconfig takes the
/// cluster's identity (`kube-system/kgc-pki`, published by the first): its own kubeconfig is
/// signed by the same CA, the first one's works against it, and it reads the Secrets the first
/// encrypted. A kubeconfig whose user may not read Secrets in kube-system is refused in one
/// line, and the new data directory gets no `pki/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_joins_with_an_admin_kubeconfig_only() {
    let Some(cluster) = EtcdCluster::start(1).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let a = Server::start_secure(&["--datastore-endpoint", &endpoints]).await;
    let ns = fresh_namespace(&a.client(), "join").await;
    let secret = typed(json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}));
    Api::<Secret>::namespaced(a.client(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    let editor = add_user(&a, "editor", &["-n", &ns, "--role", "edit"]);
    let scratch = tempfile::tempdir().unwrap();
    let refused_dir = scratch.path().join("refused");
    let (ok, _, stderr) = Kgc::run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        refused_dir.to_str().unwrap(),
        "--datastore-endpoint",
        &endpoints,
        "--join",
        editor.to_str().unwrap(),
    ]);
    assert!(!ok, "a replica joined with an editor's kubeconfig");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!(
            "kgc: error: joining with {}: {}/ refuses to give the cluster's identity \
             (kube-system/kgc-pki) to this user: --join takes an admin's kubeconfig",
            editor.display(),
            a.url()
        )),
        "{stderr}"
    );
    assert!(!refused_dir.join("pki").exists());

    // Without --join, a replica makes an identity of its own and cannot read the cluster.
    let own_dir = scratch.path().join("own");
    let (ok, _, stderr) = Kgc::run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        own_dir.to_str().unwrap(),
        "--datastore-endpoint",
        &endpoints,
    ]);
    assert!(!ok, "a replica with a foreign encryption key started");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].ends_with(
            "this replica's encryption key is not the cluster's (start it with --join and an \
             admin's kubeconfig, or with a copy of the first replica's pki/)"
        ),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("  caused by: unable to transform key"),
        "{stderr}"
    );

    let admin = a.kubeconfig_path();
    let b = Server::start_secure(&[
        "--datastore-endpoint",
        &endpoints,
        "--join",
        admin.to_str().unwrap(),
    ])
    .await;
    for file in ["ca.crt", "ca.key", "sa.key", "encryption-config.yaml"] {
        assert_eq!(
            std::fs::read(b.data_dir().join("pki").join(file)).unwrap(),
            std::fs::read(a.data_dir().join("pki").join(file)).unwrap(),
            "{file} differs"
        );
    }
    // B's own kubeconfig, and A's pointed at B.
    let read = Api::<Secret>::namespaced(b.client(), &ns)
        .get("s")
        .await
        .unwrap();
    assert_eq!(read.data.as_ref().unwrap()["k"].0, b"v");
    let a_kubeconfig = std::fs::read_to_string(&admin)
        .unwrap()
        .replace(a.url(), b.url());
    let kc = kube::config::Kubeconfig::from_yaml(&a_kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let a_on_b: Api<Secret> = Api::namespaced(kube::Client::try_from(config).unwrap(), &ns);
    assert_eq!(uid_of(&a_on_b.get("s").await.unwrap()), uid_of(&read));
}
