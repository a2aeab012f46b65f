//! Generators, replacements and vars built natively and by `kubectl kustomize` (kustomize
//! v5.5): the printed streams must be the same bytes (names with their content hashes,
//! merged and replaced generator objects, typed substitutions). Skipped without kubectl.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gen")
        .join(rel)
}

fn same_bytes_as_kubectl(rel: &str) {
    let dir = fixture(rel);
    let Ok(out) = Command::new("kubectl").arg("kustomize").arg(&dir).output() else {
        eprintln!("kubectl not found: skipped");
        return;
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = String::from_utf8(out.stdout).expect("utf-8");
    let objects = kgc_kustomize::build(&kgc_kustomize::fs::Disk, &dir)
        .unwrap_or_else(|e| panic!("build {rel}: {e}"));
    assert_eq!(kgc_kustomize::yaml::to_string(&objects), want, "{rel}");
}

/// Literals, files (one binary), env files, per-generator and global options, an empty
/// generator, Secrets with long values and a type.
#[test]
fn config_map_and_secret_generators() {
    same_bytes_as_kubectl("generators");
}

/// An overlay merging into and replacing a base's generated objects after the base's
/// prefix and namespace.
#[test]
fn generator_merge_and_replace_over_a_base() {
    same_bytes_as_kubectl("merge/overlay");
}

/// An env file with a byte-order mark, CRLF, spaces and odd lines; a merge over a base
/// object that has no hash.
#[test]
fn env_file_edges_and_merge_without_hash() {
    same_bytes_as_kubectl("envs");
}

/// Replacements by index, `[key=value]` (unanchored), `*`, delimiters, creation and reject.
#[test]
fn replacements() {
    same_bytes_as_kubectl("replacements");
}

/// Vars declared at two levels through a prefix and a namespace, typed and embedded
/// substitutions, escapes and unknown references.
#[test]
fn vars() {
    same_bytes_as_kubectl("vars");
}
