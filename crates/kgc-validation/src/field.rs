//! Building `field.Error`s the way apimachinery's `field` package does, so every message renders
//! word for word as kube-apiserver's.
//!
//! Upstream prints a bad value by its Go type: a plain `string` with `%q`, numbers and booleans
//! bare, and anything else (named string types such as `core.RestartPolicy`, pointers, maps,
//! structs) as its `encoding/json` encoding. The helpers here take the value in the shape upstream
//! passes it, so call sites read like the Go they follow.

use kgc_meta::validation::{FieldError, FieldErrorKind, go_json};
use serde_json::Value;

/// `field.Path.Child`: `a` + `b` → `a.b` (a root has no leading dot).
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `field.Path.Index`: `a[3]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `field.Path.Key`: `a[key]` (the key is not quoted).
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// A named Go string type (`core.RestartPolicy`, `core.Protocol`, ...) as `field.Error` prints
/// it: through `encoding/json`, not `%q`.
pub(crate) fn typed(s: &str) -> String {
    go_json(&Value::from(s))
}

/// An internal Go struct (no JSON tags) as `encoding/json` prints it: `{"Name":value,…}`, the
/// Go field names in declaration order, each value already rendered. Upstream passes internal
/// structs (a taint, a strategy, a condition) as the bad value of many errors.
pub(crate) fn go_struct(fields: &[(&str, String)]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("\"{name}\":{value}"))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// `apimachineryvalidation.FieldImmutableErrorMsg`.
pub(crate) const IMMUTABLE: &str = "field is immutable";
/// `apimachineryvalidation.IsNegativeErrorMsg`.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";

/// The errors of one object, in the order upstream appends them.
#[derive(Default)]
pub(crate) struct Errors(Vec<FieldError>);

impl Errors {
    pub(crate) fn into_vec(self) -> Vec<FieldError> {
        self.0
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    pub(crate) fn extend(&mut self, other: Errors) {
        self.0.extend(other.0);
    }

    fn raw(&mut self, kind: FieldErrorKind, path: String, value: Option<String>, detail: String) {
        self.0.push(FieldError {
            kind,
            field: path,
            value,
            detail,
        });
    }

    /// `field.Required`.
    pub(crate) fn required(&mut self, path: impl Into<String>, detail: impl Into<String>) {
        self.0.push(FieldError::required(path, detail));
    }

    /// `field.Forbidden`.
    pub(crate) fn forbidden(&mut self, path: impl Into<String>, detail: impl Into<String>) {
        self.0.push(FieldError::forbidden(path, detail));
    }

    /// `field.Invalid` of a plain Go `string`.
    pub(crate) fn invalid(&mut self, path: impl Into<String>, v: &str, detail: impl Into<String>) {
        self.0.push(FieldError::invalid(path, v, detail));
    }

    /// `field.Invalid` of a named string type or a `*string` (rendered through JSON).
    pub(crate) fn invalid_typed(
        &mut self,
        path: impl Into<String>,
        v: &str,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, typed(v), detail);
    }

    /// `field.Invalid` of an integer (any width, pointer or not: both print bare).
    pub(crate) fn invalid_int(
        &mut self,
        path: impl Into<String>,
        v: i64,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, v.to_string(), detail);
    }

    /// `field.Invalid` of a value already rendered as upstream prints it.
    pub(crate) fn invalid_raw(
        &mut self,
        path: impl Into<String>,
        rendered: String,
        detail: impl Into<String>,
    ) {
        self.raw(
            FieldErrorKind::Invalid,
            path.into(),
            Some(rendered),
            detail.into(),
        );
    }

    /// `field.Invalid` of a map, list or JSON-tagged struct (rendered as Go's `encoding/json`).
    pub(crate) fn invalid_json(
        &mut self,
        path: impl Into<String>,
        v: &Value,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, go_json(v), detail);
    }

    /// `field.Invalid(path, field.OmitValueType{}, detail)`: no value shown.
    pub(crate) fn invalid_omit(&mut self, path: impl Into<String>, detail: impl Into<String>) {
        self.raw(FieldErrorKind::Invalid, path.into(), None, detail.into());
    }

    /// `field.NotSupported` of a plain Go `string`.
    pub(crate) fn not_supported(&mut self, path: impl Into<String>, v: &str, supported: &[&str]) {
        self.0.push(FieldError::not_supported(path, v, supported));
    }

    /// `field.NotSupported` of a named string type or pointer (rendered through JSON).
    pub(crate) fn not_supported_typed(
        &mut self,
        path: impl Into<String>,
        v: &str,
        supported: &[&str],
    ) {
        self.not_supported_raw(path, typed(v), supported);
    }

    /// An enumerated named-string field: `Required` when empty, `NotSupported` when unknown.
    pub(crate) fn one_of(&mut self, path: impl Into<String>, v: &str, supported: &[&str]) {
        if v.is_empty() {
            self.required(path, "");
        } else if !supported.contains(&v) {
            self.not_supported_typed(path, v, supported);
        }
    }

    /// `field.NotSupported` of a value already rendered.
    pub(crate) fn not_supported_raw(
        &mut self,
        path: impl Into<String>,
        rendered: String,
        supported: &[&str],
    ) {
        let mut e = FieldError::not_supported(path, "", supported);
        e.value = Some(rendered);
        self.0.push(e);
    }

    /// `field.Duplicate` of a plain Go `string`.
    pub(crate) fn duplicate(&mut self, path: impl Into<String>, v: &str) {
        self.0.push(FieldError::duplicate(path, v));
    }

    /// `field.Duplicate` of a value already rendered (numbers, named types, structs).
    pub(crate) fn duplicate_raw(&mut self, path: impl Into<String>, rendered: String) {
        self.raw(
            FieldErrorKind::Duplicate,
            path.into(),
            Some(rendered),
            String::new(),
        );
    }

    /// `field.NotFound` of a plain Go `string`.
    pub(crate) fn not_found(&mut self, path: impl Into<String>, v: &str) {
        self.0.push(FieldError::not_found(path, v));
    }

    /// `field.TooLong` (the value is never shown).
    pub(crate) fn too_long(&mut self, path: impl Into<String>, max: usize) {
        self.0.push(FieldError::too_long(path, "", max));
    }

    /// `field.TooMany`.
    pub(crate) fn too_many(&mut self, path: impl Into<String>, actual: usize, max: usize) {
        self.0.push(FieldError::too_many(path, actual, max));
    }

    /// `ValidateNonnegativeField`.
    pub(crate) fn nonnegative(&mut self, path: impl Into<String>, v: i64) {
        if v < 0 {
            self.invalid_int(path, v, NEGATIVE);
        }
    }

    /// `ValidateImmutableField`: `new` must equal `old` (absent and `null` are the same Go zero
    /// value); the new value is shown as `encoding/json` renders it.
    pub(crate) fn immutable(&mut self, path: impl Into<String>, new: &Value, old: &Value) {
        if !crate::json::same(new, old) {
            self.invalid_json(path, new, IMMUTABLE);
        }
    }

    /// Messages from a `[]string`-returning upstream check, each as `field.Invalid` of `v`.
    pub(crate) fn invalid_each(&mut self, path: &str, v: &str, msgs: Vec<String>) {
        for m in msgs {
            self.invalid(path, v, m);
        }
    }
}
