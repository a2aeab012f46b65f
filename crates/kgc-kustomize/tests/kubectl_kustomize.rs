//! Every fixture under `tests/fixtures/` built twice, natively and by `kubectl kustomize`
//! (kustomize v5.5): the same objects in the same order, printed byte for byte the same.
//! Bad inputs: one line naming the file, with the gist of kustomize's own message.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// `kubectl kustomize dir`'s stdout, or its stderr.
fn kubectl(dir: &Path) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout).expect("utf-8"))
}

/// A YAML stream as objects (kubectl quotes what YAML 1.1 would read otherwise).
fn objects(text: &str) -> Vec<Value> {
    let options = serde_saphyr::options! { strict_booleans: true };
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, options).expect("kubectl's output parses");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// The same objects in the same order as `kubectl kustomize`, and, printed, its text byte
/// for byte.
fn same_as_kubectl(rel: &str) {
    let dir = fixture(rel);
    let theirs = kubectl(&dir).unwrap_or_else(|e| panic!("kubectl kustomize {rel}: {e}"));
    let have = kgc_kustomize::build(&kgc_kustomize::fs::Disk, &dir)
        .unwrap_or_else(|e| panic!("build {rel}: {e}"));
    let want = objects(&theirs);
    if have != want {
        let show = |v: &[Value]| serde_json::to_string_pretty(v).unwrap_or_default();
        panic!(
            "{rel}: differs from kubectl kustomize\n--- kgc\n{}\n--- kubectl\n{}",
            show(&have),
            show(&want)
        );
    }
    let text = kgc_kustomize::yaml::to_string(&have);
    if text != theirs {
        let diff: Vec<String> = text
            .lines()
            .zip(theirs.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}: kgc {a:?} kubectl {b:?}", i + 1))
            .collect();
        panic!(
            "{rel}: printed output differs from kubectl kustomize:\n{}",
            diff.join("\n")
        );
    }
}

/// Our error, and kubectl's stderr, for a fixture both must refuse.
fn both_refuse(rel: &str) -> (String, String) {
    let dir = fixture(rel);
    let theirs = match kubectl(&dir) {
        Ok(v) => panic!("kubectl kustomize {rel} accepted it: {v}"),
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

#[test]
fn missing_resource_file() {
    let (ours, theirs) = both_refuse("errors/missing-file");
    assert!(theirs.contains("absent.yaml") && theirs.contains("no such file or directory"));
    assert!(
        ours.ends_with("kustomization.yaml: resources[1]: absent.yaml: no such file or directory"),
        "{ours}"
    );
}

#[test]
fn directory_without_kustomization() {
    let (ours, theirs) = both_refuse("errors/no-kustomization");
    let gist = "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory";
    assert!(theirs.contains(gist));
    assert!(
        ours.contains("kustomization.yaml: resources[0]: ") && ours.contains(gist),
        "{ours}"
    );
}

#[test]
fn cycle_of_bases() {
    let (ours, theirs) = both_refuse("errors/cycle/a");
    assert!(theirs.contains("cycle detected: candidate root"));
    assert!(
        ours.contains("kustomization.yaml: resources[0]: cycle detected: candidate root '"),
        "{ours}"
    );
    assert!(
        ours.contains("/errors/cycle/a' contains visited root '"),
        "{ours}"
    );
}

#[test]
fn remote_base_is_refused() {
    let (ours, _) = both_refuse("errors/remote");
    assert!(
        ours.ends_with("kustomization.yaml: resources[1]: remote bases are not supported: \"https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0\""),
        "{ours}"
    );
}

#[test]
fn helm_charts_are_refused() {
    let (ours, theirs) = both_refuse("errors/helm");
    assert!(theirs.contains("must specify --enable-helm"));
    assert!(
        ours.contains("kustomization.yaml: helmCharts: helm charts are not supported"),
        "{ours}"
    );
}

#[test]
fn unknown_field() {
    let (ours, theirs) = both_refuse("errors/unknown-field");
    let gist = "invalid Kustomization: json: unknown field \"namePrefx\"";
    assert!(
        theirs.contains(&gist.replace('"', "\\\"")) || theirs.contains(gist),
        "{theirs}"
    );
    assert!(
        ours.ends_with(&format!("kustomization.yaml: namePrefx: {gist}")),
        "{ours}"
    );
}

#[test]
fn duplicate_id() {
    let (ours, theirs) = both_refuse("errors/duplicate-id");
    let gist = "may not add resource with an already registered id: Service.v1.[noGrp]/web.[noNs]";
    assert!(theirs.contains(gist));
    assert!(
        ours.ends_with(&format!("kustomization.yaml: resources[1]: {gist}")),
        "{ours}"
    );
}

#[test]
fn legacy_order_by_default() {
    same_as_kubectl("sort/legacy");
}

#[test]
fn fifo_order_keeps_input_order() {
    same_as_kubectl("sort/fifo");
}

#[test]
fn legacy_order_with_custom_kind_lists() {
    same_as_kubectl("sort/custom");
}

#[test]
fn labels_with_and_without_selectors_and_templates() {
    same_as_kubectl("labels/selectors");
}

#[test]
fn labels_with_own_fields_and_annotations() {
    same_as_kubectl("labels/fields");
}

#[test]
fn nested_bases_with_prefixes_at_each_level_and_a_list_file() {
    same_as_kubectl("nested");
}

#[test]
fn rbac_subjects_namespaces_and_references() {
    same_as_kubectl("rbac");
}

#[test]
fn multi_document_json_and_local_config_files() {
    same_as_kubectl("files");
}

#[test]
fn crds_add_name_references_labels_and_annotations() {
    same_as_kubectl("crds");
}

#[test]
fn configurations_extend_the_builtin_tables() {
    same_as_kubectl("configurations");
}

#[test]
fn references_of_every_builtin_kind_follow_prefix_suffix_and_namespace() {
    same_as_kubectl("references/base");
    same_as_kubectl("references/overlay");
}

#[test]
fn images_tag_suffix_digest_ports_and_custom_resources() {
    same_as_kubectl("edge/images");
}

#[test]
fn references_stay_in_their_namespace() {
    same_as_kubectl("edge/multins");
}

#[test]
fn resource_file_outside_the_root() {
    let (ours, theirs) = both_refuse("errors/outside-root");
    let gist = "/errors/duplicate-id/a.yaml' is not in or below '";
    assert!(theirs.contains("security; file '") && theirs.contains(gist));
    assert!(
        ours.contains("kustomization.yaml: resources[0]: security; file '") && ours.contains(gist),
        "{ours}"
    );
}

#[test]
fn two_kustomization_files() {
    let (ours, theirs) = both_refuse("errors/two-files");
    assert!(theirs.contains("Found multiple kustomization files under: "));
    assert!(
        ours.contains("Found multiple kustomization files under: "),
        "{ours}"
    );
}

#[test]
fn generators_with_hashes_and_references() {
    same_as_kubectl("generators/base");
}

#[test]
fn generators_merged_and_replaced_by_an_overlay_rotate_their_hash() {
    same_as_kubectl("generators/overlay");
}

#[test]
fn patches_strategic_json_and_targeted_through_an_overlay() {
    same_as_kubectl("patches/overlay");
}

#[test]
fn builtin_plugin_configs_inline_in_files_and_in_a_kustomization() {
    same_as_kubectl("plugins");
}

#[test]
fn vars_resolved_at_the_top_across_bases() {
    same_as_kubectl("vars/base");
    same_as_kubectl("vars/overlay");
}

#[test]
fn replacements_inline_and_from_a_file() {
    same_as_kubectl("replacements");
}

#[test]
fn configurations_with_a_kinded_name_prefix_replace_the_builtin_one() {
    same_as_kubectl("configurations-prefix");
}

#[test]
fn a_relative_directory_is_confined_like_an_absolute_one() {
    // `.` must not make every path look inside the root.
    let dir = fixture("errors/outside-root");
    let cwd = std::env::current_dir().expect("cwd");
    std::env::set_current_dir(&dir).expect("cd");
    let result = kgc_kustomize::build(&kgc_kustomize::fs::Disk, Path::new("."));
    std::env::set_current_dir(cwd).expect("cd back");
    let err = result.expect_err("a file outside the root").to_string();
    assert!(err.contains("is not in or below"), "{err}");
}

#[test]
fn symbolic_link_out_of_the_root() {
    let (ours, theirs) = both_refuse("errors/symlink-out");
    let gist = "/errors/symlink-out/secret.txt' is not in or below '";
    assert!(
        theirs.contains("security; file '") && theirs.contains(gist),
        "{theirs}"
    );
    assert!(
        ours.contains("security; file '") && ours.contains(gist),
        "{ours}"
    );
}

#[test]
fn component_merging_a_generator_and_patching_by_label_under_an_overlay() {
    same_as_kubectl("realistic/base");
    same_as_kubectl("realistic/overlay");
}

#[test]
fn one_base_twice_under_different_prefixes_resolves_each_copys_references() {
    same_as_kubectl("diamond/top");
}
