//! Cross-check of the YAML printer against the real `kubectl kustomize` (skipped when kubectl
//! is not installed): kustomize builds a fixture, its output is read back and printed again
//! by `kgc_kustomize::yaml`, and the bytes must be the same.

use std::path::Path;
use std::process::Command;

fn kubectl_kustomize(dir: &Path) -> Option<String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("kubectl prints UTF-8"))
}

fn round_trip(resources: &str) {
    round_trip_file("r.yaml", resources);
}

fn round_trip_file(name: &str, resources: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!("resources:\n- {name}\n"),
    )
    .expect("write");
    std::fs::write(dir.path().join(name), resources).expect("write");
    let Some(printed) = kubectl_kustomize(dir.path()) else {
        eprintln!("kubectl not found: skipped");
        return;
    };
    let objects: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&printed).expect("kubectl's output parses");
    assert_eq!(kgc_kustomize::yaml::to_string(&objects), printed);
}

#[test]
fn scalars_print_as_kubectl_kustomize_prints_them() {
    round_trip(include_str!("fixtures/yaml_scalars.yaml"));
}

#[test]
fn structure_prints_as_kubectl_kustomize_prints_it() {
    round_trip(include_str!("fixtures/yaml_structure.yaml"));
}

/// Many awkward strings (indicators, YAML 1.1 look-alikes, timestamps, line breaks, long lines
/// to fold, non-ASCII) as values, keys and list items.
#[test]
fn awkward_strings_print_as_kubectl_kustomize_prints_them() {
    round_trip_file("r.json", include_str!("fixtures/yaml_stress.json"));
}
