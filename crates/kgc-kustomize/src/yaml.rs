//! The YAML stream `kubectl kustomize` prints (go-yaml v3 through kyaml), byte for byte.

/// PLACEHOLDER until the printer lands: serde-saphyr's YAML, documents joined by `---`.
pub fn to_string(objects: &[serde_json::Value]) -> String {
    objects
        .iter()
        .map(|o| serde_saphyr::to_string(o).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}
