//! Object-metadata validation, worded exactly as Kubernetes words it.
//!
//! Clients (kubectl, kube-rs, e2e suites) match on the text of 422 `Invalid` responses, so every
//! message here follows apimachinery's `field.Error` rendering and the detail strings of
//! `pkg/util/validation`, `pkg/api/validation/objectmeta.go` and core's
//! `pkg/apis/core/validation`, as of Kubernetes 1.32 (the version kgc advertises).
//!
//! The validators take `serde_json::Value` rather than typed structs because the API server sees
//! request bodies before any typed decoding; a field of the wrong JSON type is reported as an
//! `Invalid` error instead of panicking or failing the whole request.

mod field;
mod names;
mod objectmeta;

pub use field::join_aggregate;
pub use field::{FieldError, FieldErrorKind, aggregate};
pub use names::{
    NameRule, TOTAL_ANNOTATION_SIZE_LIMIT, is_dns1035_label, is_dns1123_label,
    is_dns1123_subdomain, is_label_value, is_qualified_name, max_len_error, regex_error,
    validate_name,
};
pub use objectmeta::{
    validate_object_meta, validate_object_meta_generic, validate_object_meta_update,
};
