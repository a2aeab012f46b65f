//! Every fixture under `tests/fixtures/` built twice, natively and by `kubectl kustomize`
//! (kustomize v5.5): the same objects in the same order. Bad inputs: one line naming the
//! file, with the gist of kustomize's own message.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// `kubectl kustomize dir`'s stdout as objects, or its stderr.
fn kubectl(dir: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("kubectl's output parses");
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn same_as_kubectl(rel: &str) {
    let dir = fixture(rel);
    let want = kubectl(&dir).unwrap_or_else(|e| panic!("kubectl kustomize {rel}: {e}"));
    let have = kgc_kustomize::build(&kgc_kustomize::fs::Disk, &dir)
        .unwrap_or_else(|e| panic!("build {rel}: {e}"));
    if have != want {
        let show = |v: &[Value]| serde_json::to_string_pretty(v).unwrap_or_default();
        panic!(
            "{rel}: differs from kubectl kustomize\n--- kgc\n{}\n--- kubectl\n{}",
            show(&have),
            show(&want)
        );
    }
}

/// Our error, and kubectl's stderr, for a fixture both must refuse.
fn both_refuse(rel: &str) -> (String, String) {
    let dir = fixture(rel);
    let theirs = match kubectl(&dir) {
        Ok(v) => panic!("kubectl kustomize {rel} accepted it: {v:?}"),
        Err(e) => e,
    };
    let ours = match kgc_kustomize::build(&kgc_kustomize::fs::Disk, &dir) {
        Ok(v) => panic!("build {rel} accepted it: {v:?}"),
        Err(e) => e.to_string(),
    };
    assert!(!ours.contains('\n'), "one line: {ours}");
    (ours, theirs)
}

#[test]
fn base_with_common_labels_and_references() {
    same_as_kubectl("app/base");
}

#[test]
fn overlay_namespace_prefix_and_labels() {
    same_as_kubectl("app/overlays/dev");
}

#[test]
fn overlay_suffix_annotations_images_templates_and_component() {
    same_as_kubectl("app/overlays/staging");
}

#[test]
fn overlay_prefix_suffix_selectors_replicas_digest_and_namespace_object() {
    same_as_kubectl("app/overlays/prod");
}
