//! apimachinery's `field.Error` and `ErrorList.ToAggregate()`: how one invalid field is worded
//! and how a list of them is joined (kubernetes/apimachinery pkg/util/validation/field/errors.go).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use crate::gojson::{go_json, go_quote};

/// The category of a field error; it picks both the human prefix ("Invalid value", "Required
/// value", ...) and the machine `reason` clients read from `Status.details.causes[].type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    Forbidden,
    TooLong,
    Duplicate,
    NotSupported,
    TooMany,
    NotFound,
}

impl FieldErrorKind {
    /// The `CauseType` upstream puts in `Status.details.causes[].type`.
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::Duplicate => "FieldValueDuplicate",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooMany => "FieldValueTooMany",
            Self::NotFound => "FieldValueNotFound",
        }
    }

    /// The human prefix of `ErrorType.String()`.
    fn label(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid => "Invalid value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::Duplicate => "Duplicate value",
            Self::NotSupported => "Unsupported value",
            Self::TooMany => "Too many",
            Self::NotFound => "Not found",
        }
    }

    /// Kinds whose rendering shows the offending value (upstream prints none for the others,
    /// e.g. a too-long value is never echoed back).
    fn shows_value(self) -> bool {
        matches!(
            self,
            Self::Invalid | Self::Duplicate | Self::NotSupported | Self::TooMany | Self::NotFound
        )
    }
}

/// One invalid field, mirroring apimachinery's `field.Error` so a 422 body can be rendered word
/// for word.
///
/// `value` holds the offending value **already rendered** the way upstream prints it: Go-quoted
/// for strings (`"Foo"`), bare for numbers and booleans, JSON for lists and structures. Storing
/// the rendering keeps the type information `Display` needs without a richer value type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    /// The field path, e.g. `metadata.finalizers[0]`.
    pub field: String,
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    /// A missing value; `detail` may be empty (`metadata.namespace: Required value`).
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }

    /// A malformed string value; it is shown Go-quoted, as upstream shows string values.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        let value = go_quote(&value.into());
        Self::new(FieldErrorKind::Invalid, field, Some(value), detail)
    }

    /// A malformed value of any JSON type, rendered as upstream renders a Go value of that type
    /// (strings quoted, numbers bare, lists and objects as JSON).
    pub fn invalid_value(
        field: impl Into<String>,
        value: &Value,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorKind::Invalid,
            field,
            Some(render_value(value)),
            detail,
        )
    }

    /// A value that is well-formed but not allowed in this situation.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }

    /// A value longer than `max` bytes. The value itself is never echoed (upstream omits it,
    /// since it may be huge), so `_value` is accepted only for call-site symmetry.
    pub fn too_long(field: impl Into<String>, _value: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            FieldErrorKind::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// A value that must be unique but repeats.
    pub fn duplicate(field: impl Into<String>, value: impl Into<String>) -> Self {
        let value = go_quote(&value.into());
        Self::new(FieldErrorKind::Duplicate, field, Some(value), "")
    }

    /// A value outside an enumeration; the detail lists the accepted values.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<String>,
        supported: &[&str],
    ) -> Self {
        let value = go_quote(&value.into());
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorKind::NotSupported, field, Some(value), detail)
    }

    /// A reference to something that does not exist (e.g. a volume mount naming no volume).
    pub fn not_found(field: impl Into<String>, value: impl Into<String>) -> Self {
        let value = go_quote(&value.into());
        Self::new(FieldErrorKind::NotFound, field, Some(value), "")
    }

    /// A list with more than `max` items.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            FieldErrorKind::TooMany,
            field,
            Some(actual.to_string()),
            format!("must have at most {max} {unit}"),
        )
    }

    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        value: Option<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// The `reason` string Kubernetes puts in `Status.details.causes[].type`:
    /// "FieldValueRequired", "FieldValueInvalid", "FieldValueForbidden", "FieldValueTooLong",
    /// "FieldValueDuplicate", "FieldValueNotSupported", "FieldValueTooMany".
    pub fn cause_type(&self) -> &'static str {
        self.kind.cause_type()
    }

    /// The message without the field path (upstream `ErrorBody()`), which is what
    /// `Status.details.causes[].message` carries.
    pub fn body(&self) -> String {
        let mut s = self.kind.label().to_owned();
        if self.kind.shows_value()
            && let Some(v) = &self.value
        {
            s.push_str(": ");
            s.push_str(v);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    /// `<field>: <body>`, exactly as upstream `field.Error.Error()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// Joins a list the way upstream's `ErrorList.ToAggregate().Error()` does, because that string is
/// the tail of every 422 message: duplicates are dropped, one message stands alone, several are
/// wrapped as `[a, b]`, none gives "".
pub fn aggregate(errors: &[FieldError]) -> String {
    join_aggregate(errors.iter().map(ToString::to_string))
}

/// The aggregate rule on plain messages; the label-selector parser reuses it.
pub fn join_aggregate(messages: impl IntoIterator<Item = String>) -> String {
    let mut seen = BTreeSet::new();
    let mut unique = Vec::new();
    for m in messages {
        if seen.insert(m.clone()) {
            unique.push(m);
        }
    }
    match unique.len() {
        0 => String::new(),
        1 => unique.pop().unwrap_or_default(),
        _ => format!("[{}]", unique.join(", ")),
    }
}

impl FieldError {
    /// An `Invalid` error whose value is already rendered.
    pub(crate) fn invalid_rendered(
        field: impl Into<String>,
        rendered: String,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(rendered), detail)
    }
}

/// Renders a JSON value as Go's `field.Error` prints a bad value of the matching Go type.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_matches_upstream_for_every_kind() {
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(
            FieldError::required("metadata.namespace", "").to_string(),
            "metadata.namespace: Required value"
        );
        assert_eq!(
            FieldError::invalid("metadata.name", "Foo", "bad").to_string(),
            "metadata.name: Invalid value: \"Foo\": bad"
        );
        assert_eq!(
            FieldError::forbidden("metadata.namespace", "not allowed on this type").to_string(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        assert_eq!(
            FieldError::too_long("metadata.annotations", "", 262144).to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::too_long("x", "", 1).to_string(),
            "x: Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::duplicate("spec.ports[1].name", "http").to_string(),
            "spec.ports[1].name: Duplicate value: \"http\""
        );
        assert_eq!(
            FieldError::not_supported("propagationPolicy", "Sideways", &["Foreground", "Orphan"])
                .to_string(),
            "propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Orphan\""
        );
        assert_eq!(
            FieldError::too_many("spec.items", 5, 3).to_string(),
            "spec.items: Too many: 5: must have at most 3 items"
        );
        assert_eq!(
            FieldError::invalid_value("metadata.generation", &json!(-1), "m").to_string(),
            "metadata.generation: Invalid value: -1: m"
        );
        assert_eq!(
            FieldError::invalid_value("f", &json!(["a", "<b>"]), "m").to_string(),
            "f: Invalid value: [\"a\",\"\\u003cb\\u003e\"]: m"
        );
    }

    #[test]
    fn cause_types_and_body() {
        let cases = [
            (FieldError::required("f", ""), "FieldValueRequired"),
            (FieldError::invalid("f", "v", ""), "FieldValueInvalid"),
            (FieldError::forbidden("f", ""), "FieldValueForbidden"),
            (FieldError::too_long("f", "v", 3), "FieldValueTooLong"),
            (FieldError::duplicate("f", "v"), "FieldValueDuplicate"),
            (
                FieldError::not_supported("f", "v", &[]),
                "FieldValueNotSupported",
            ),
            (FieldError::too_many("f", 2, 1), "FieldValueTooMany"),
        ];
        for (e, t) in cases {
            assert_eq!(e.cause_type(), t);
            assert_eq!(e.to_string(), format!("f: {}", e.body()));
        }
        assert_eq!(
            FieldError::not_supported("f", "v", &[]).to_string(),
            "f: Unsupported value: \"v\""
        );
    }

    #[test]
    fn aggregate_like_upstream() {
        assert_eq!(aggregate(&[]), "");
        let a = FieldError::required("a", "");
        let b = FieldError::forbidden("b", "no");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value");
        assert_eq!(
            aggregate(&[a.clone(), b.clone()]),
            "[a: Required value, b: Forbidden: no]"
        );
        assert_eq!(aggregate(&[a.clone(), a.clone()]), "a: Required value");
        assert_eq!(
            aggregate(&[a.clone(), b.clone(), a]),
            "[a: Required value, b: Forbidden: no]"
        );
    }
}
