//! kustomize's `types.Selector` (a patch's `target`, a replacement's `select`/`reject`).
//! PLACEHOLDER: exact matching only until the selector helper lands the regex version.

use serde::Deserialize;

use crate::Error;
use crate::resource::Resource;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub label_selector: String,
    #[serde(default)]
    pub annotation_selector: String,
}

impl Selector {
    /// Whether `r` is selected.
    pub fn matches(&self, r: &Resource) -> Result<bool, Error> {
        let id = r.id();
        let eq = |want: &str, have: &str| want.is_empty() || want == have;
        Ok(eq(&self.group, &id.group)
            && eq(&self.version, &id.version)
            && eq(&self.kind, &id.kind)
            && eq(&self.name, &id.name)
            && eq(&self.namespace, &id.namespace))
    }
}
