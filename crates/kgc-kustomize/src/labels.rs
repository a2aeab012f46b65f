//! `commonLabels:`, `labels:` and `commonAnnotations:` (kustomize's `api/filters/labels` and
//! `annotations`, the same filter over two tables): each pair set, as a string, in every map
//! the field specs reach, maps created where a spec says `create`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::fieldspec::FieldSpec;
use crate::resource::Resource;

pub fn apply(
    resources: &mut [Resource],
    pairs: &BTreeMap<String, String>,
    specs: &[FieldSpec],
) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    let created = Value::Object(Map::new());
    for r in resources.iter_mut() {
        for spec in specs {
            spec.apply(&mut r.object, Some(&created), &mut |v| {
                if v.is_null() {
                    *v = Value::Object(Map::new());
                }
                let Value::Object(map) = v else {
                    return Err("wrong node kind: expected MappingNode".to_owned());
                };
                for (k, val) in pairs {
                    map.insert(k.clone(), Value::String(val.clone()));
                }
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
    fn common_labels_reach_selectors_and_templates() {
        let mut rs = vec![Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"template": {"spec": {}}}}),
        )];
        let pairs = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
        apply(&mut rs, &pairs, &TransformerConfig::builtin().common_labels).unwrap();
        let o = &rs[0].object;
        assert_eq!(o["metadata"]["labels"]["app"], "web");
        assert_eq!(o["spec"]["selector"]["matchLabels"]["app"], "web");
        assert_eq!(o["spec"]["template"]["metadata"]["labels"]["app"], "web");
    }
}
