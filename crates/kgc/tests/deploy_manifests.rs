//! CI check of `deploy/` (issue 21 item 9): every manifest there, whichever files it holds when
//! the test runs, passes `kubectl apply --dry-run=server` against a spawned `kgc serve` with
//! authentication and RBAC on, and every workload in them names the one image the repository's
//! Dockerfile builds, running as its user. (That the collector's service account has exactly
//! the rights it needs is `security.rs`'s `deploy_manifests_grant_the_collector_exactly_what_it_needs`,
//! which runs `kgc controller` with that account's token.)

kgc_testsupport::bind_kgc!();

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every YAML or JSON file under `deploy/`, found now, so a manifest added later is covered.
fn manifests() -> Vec<PathBuf> {
    let dir = repository().join("deploy");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    files
}

/// The objects of kubectl's `-o json` output (one object, or a List of them).
fn objects(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).expect("kubectl's JSON output");
    match v.get("items").and_then(Value::as_array) {
        Some(items) if v["kind"] == "List" => items.clone(),
        _ => vec![v],
    }
}

/// The pod template of a workload, if the object is one.
fn pod_spec(o: &Value) -> Option<&Value> {
    match o["kind"].as_str()? {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            o.pointer("/spec/template/spec")
        }
        "CronJob" => o.pointer("/spec/jobTemplate/spec/template/spec"),
        "Pod" => o.get("spec"),
        _ => None,
    }
}

/// What the Dockerfile's final (default) stage says: its image title, USER and ENTRYPOINT.
struct Image {
    title: String,
    user: String,
    entrypoint: String,
}

fn dockerfile() -> Image {
    let path = repository().join("Dockerfile");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let last_stage = text
        .rsplit_once("\nFROM ")
        .map(|(_, s)| s)
        .expect("a FROM line");
    let instruction = |name: &str| {
        last_stage
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in the Dockerfile's last stage"))
    };
    let title = last_stage
        .split("org.opencontainers.image.title=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("an org.opencontainers.image.title label in the last stage")
        .to_owned();
    Image {
        title,
        user: instruction("USER "),
        entrypoint: instruction("ENTRYPOINT "),
    }
}

/// `REGISTRY/NAME:TAG` or `NAME@sha256:…` → `NAME`.
fn image_name(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split(':').next().unwrap_or(last)
}

#[tokio::test]
async fn every_manifest_under_deploy_passes_a_server_side_dry_run() {
    let server = Server::start_secure(&[]).await;
    let image = dockerfile();
    assert_eq!(image.entrypoint, r#"["kgc"]"#);
    let uid = image.user.split(':').next().unwrap_or("").to_owned();
    assert!(
        uid.parse::<u32>().is_ok_and(|u| u != 0),
        "the image runs as a numeric non-root user, not {:?}",
        image.user
    );

    let mut images = BTreeSet::new();
    for file in manifests() {
        let path = file.to_str().expect("a UTF-8 path");
        // `kubectl apply --dry-run=server` creates no namespace, so objects in a namespace the
        // same file creates would be refused; the namespaces the files declare are created for
        // real first (as an administrator installing them would have), nothing else is.
        let parsed = server
            .kubectl_ok(&["apply", "--dry-run=client", "-o", "json", "-f", path])
            .await;
        for o in objects(&parsed) {
            if o["kind"] == "Namespace" {
                let name = o["metadata"]["name"].as_str().expect("a namespace name");
                let ns = format!(
                    r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
                );
                server.kubectl_stdin_ok(&["apply", "-f", "-"], &ns).await;
            }
        }
        let out = server
            .kubectl(&["apply", "--dry-run=server", "-o", "json", "-f", path])
            .await;
        assert!(
            out.status.success(),
            "kubectl apply --dry-run=server -f {path}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for o in objects(&String::from_utf8_lossy(&out.stdout)) {
            let Some(spec) = pod_spec(&o) else { continue };
            let what = format!(
                "{} {} in {path}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            );
            let pod_user = spec.pointer("/securityContext/runAsUser");
            for c in ["initContainers", "containers"]
                .iter()
                .filter_map(|f| spec.get(*f).and_then(Value::as_array))
                .flatten()
            {
                images.insert(c["image"].as_str().unwrap_or("").to_owned());
                if let Some(user) = c.pointer("/securityContext/runAsUser").or(pod_user) {
                    assert_eq!(user.to_string(), uid, "{what}: runAsUser");
                }
            }
        }
    }
    // Nothing but the namespaces was written: a dry run.
    let deployments = server
        .kubectl_ok(&["get", "deployments", "-A", "-o", "name"])
        .await;
    assert_eq!(deployments.trim(), "", "a dry run created workloads");

    assert_eq!(
        images.len(),
        1,
        "the manifests name one image, the Dockerfile's: {images:?}"
    );
    let named = images.first().map(String::as_str).unwrap_or("");
    assert_eq!(
        image_name(named),
        image.title,
        "{named} is not the image the Dockerfile builds ({})",
        image.title
    );
}

#[test]
fn image_names_drop_registry_tag_and_digest() {
    assert_eq!(image_name("kgc:latest"), "kgc");
    assert_eq!(image_name("registry.example.com:5000/team/kgc:v1"), "kgc");
    assert_eq!(image_name("ghcr.io/x/kgc@sha256:abc"), "kgc");
}
