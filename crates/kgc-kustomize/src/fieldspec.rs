//! Field specs (kustomize's `types.FieldSpec`): which field of which kinds a transformer
//! touches. The built-in tables are kustomize's own (`builtinpluginconsts`), kept as data in
//! `builtin/`.
