//! The claim evaluator, kubernetes/kubernetes `pkg/quota/v1/evaluator/core/
//! persistent_volume_claims.go`: a claim counts once in `persistentvolumeclaims` and
//! `count/persistentvolumeclaims`, its storage request (rounded up to whole bytes) in
//! `requests.storage`, and both again under its class as
//! `<class>.storageclass.storage.k8s.io/<name>`.

use kgc_meta::quantity::Quantity;
use serde_json::Value;

use crate::resources::ResourceList;

pub(crate) const OBJECT_COUNT: &str = "count/persistentvolumeclaims";
const CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";
/// `pvcResources`.
const RESOURCES: [&str; 2] = ["persistentvolumeclaims", "requests.storage"];
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// `MatchingResources` for one name.
pub(crate) fn matches_resource(name: &str) -> bool {
    name == OBJECT_COUNT
        || RESOURCES.contains(&name)
        || RESOURCES
            .iter()
            .any(|r| name.ends_with(&format!("{CLASS_SUFFIX}{r}")))
}

/// `GetPersistentVolumeClaimClass`: the beta annotation first, then `spec.storageClassName`.
fn class(claim: &Value) -> &str {
    claim["metadata"]["annotations"][BETA_CLASS]
        .as_str()
        .or_else(|| claim["spec"]["storageClassName"].as_str())
        .unwrap_or_default()
}

/// `Usage`.
pub(crate) fn usage(claim: &Value) -> ResourceList {
    let one = Quantity::from_i64(1);
    let mut out = ResourceList::from([
        ("persistentvolumeclaims".to_owned(), one.clone()),
        (OBJECT_COUNT.to_owned(), one.clone()),
    ]);
    let class = class(claim);
    if !class.is_empty() {
        out.insert(format!("{class}{CLASS_SUFFIX}persistentvolumeclaims"), one);
    }
    if let Some(storage) = claim["spec"]["resources"]["requests"]
        .get("storage")
        .and_then(|q| Quantity::from_json(q).ok())
    {
        let storage = storage.round_up();
        if !class.is_empty() {
            out.insert(
                format!("{class}{CLASS_SUFFIX}requests.storage"),
                storage.clone(),
            );
        }
        out.insert("requests.storage".to_owned(), storage);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::to_json;
    use serde_json::json;

    #[test]
    fn charged_to_the_class_too() {
        let claim = json!({"spec": {"storageClassName": "gold",
            "resources": {"requests": {"storage": "1500m"}}}});
        assert_eq!(
            to_json(&usage(&claim)),
            json!({
                "count/persistentvolumeclaims": "1",
                "persistentvolumeclaims": "1",
                "requests.storage": "2",
                "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                "gold.storageclass.storage.k8s.io/requests.storage": "2",
            })
        );
        assert!(matches_resource(
            "gold.storageclass.storage.k8s.io/requests.storage"
        ));
        assert!(!matches_resource("gold.storageclass.storage.k8s.io/pods"));
        assert!(!matches_resource("pods"));
    }
}
