//! `namePrefix:` and `nameSuffix:` (kustomize's `PrefixTransformer`/`SuffixTransformer` over
//! `api/filters/prefix` and `suffix`): the name fields of the table get the affix; the kinds
//! kustomize never renames (CRDs, APIServices, Namespaces) are skipped. A rename is recorded
//! (previous id, and the affix in kustomize's internal annotation) so that name references
//! and later layers find the resource by its old name.

use serde_json::Value;

use crate::fieldspec::FieldSpec;
use crate::resource::{PREFIXES, Resource, SUFFIXES};

/// Which end of the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affix {
    Prefix,
    Suffix,
}

/// kustomize's `prefixFieldSpecsToSkip`/`suffixFieldSpecsToSkip`: (group, kind).
const SKIPPED: [(&str, &str); 3] = [
    ("", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("", "Namespace"),
];

pub fn apply(
    resources: &mut [Resource],
    affix: Affix,
    value: &str,
    specs: &[FieldSpec],
) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    let created = Value::String(String::new());
    for r in resources.iter_mut() {
        let org = r.original_id();
        if SKIPPED.iter().any(|(g, k)| org.is_selected(g, "", k)) {
            continue;
        }
        for spec in specs {
            if !org.is_selected(&spec.group, &spec.version, &spec.kind) {
                continue;
            }
            if spec.path == "metadata/name" {
                let key = if affix == Affix::Prefix {
                    PREFIXES
                } else {
                    SUFFIXES
                };
                r.append_csv_annotation(key, value);
                r.store_previous_id();
            }
            spec.apply(&mut r.object, Some(&created), &mut |v| {
                let old = v.as_str().unwrap_or_default();
                *v = Value::String(match affix {
                    Affix::Prefix => format!("{value}{old}"),
                    Affix::Suffix => format!("{old}{value}"),
                });
                Ok(())
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use serde_json::json;

    #[test]
    fn prefix_and_suffix_skip_namespaces_and_crds() {
        let mut rs = vec![
            Resource::new(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            ),
            Resource::new(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
            ),
        ];
        let config = TransformerConfig::builtin();
        apply(&mut rs, Affix::Prefix, "p-", &config.name_prefix).unwrap();
        apply(&mut rs, Affix::Suffix, "-s", &config.name_suffix).unwrap();
        assert_eq!(rs[0].object["metadata"]["name"], "p-c-s");
        assert_eq!(rs[0].previous.len(), 2);
        assert_eq!(rs[0].original_id().name, "c");
        assert_eq!(rs[0].csv_annotation(PREFIXES), ["p-"]);
        assert_eq!(rs[1].object["metadata"]["name"], "n");
    }
}
