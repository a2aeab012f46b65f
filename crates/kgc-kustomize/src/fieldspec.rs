//! Field specs (kustomize's `types.FieldSpec`): which field of which kinds a transformer
//! touches. The built-in tables are kustomize's own (`builtinpluginconsts`), kept as data in
//! `builtin/`.

use serde::Deserialize;

/// One field spec: the kinds it applies to (empty matches any) and the path, `/`-separated
/// (`spec/template/metadata/labels`; `[]` steps into every item of a list).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FieldSpec {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    pub path: String,
    /// Create the field where it is missing.
    #[serde(default)]
    pub create: bool,
}
