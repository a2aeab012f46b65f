//! Building `field.Error`s the way apimachinery's `field` package does, so every message renders
//! word for word as kube-apiserver's.
//!
//! Upstream prints a bad value by its Go type: a plain `string` with `%q`, numbers and booleans
//! bare, and anything else (named string types such as `core.RestartPolicy`, pointers, maps,
//! structs) as its `encoding/json` encoding. The helpers here take the value in the shape upstream
//! passes it, so call sites read like the Go they follow.

use std::fmt::{self, Write as _};

use kgc_meta::gojson::go_json;
use kgc_meta::validation::{FieldError, FieldErrorKind};
use serde_json::Value;

/// `field.Path` (kubernetes/apimachinery `pkg/util/validation/field/path.go`): where in the
/// object an error is, built as validation descends and rendered only when an error is
/// recorded. Nearly every write is valid, so a path costs nothing but a few words on the stack:
/// each step borrows its parent and names one field, index or key, as upstream's linked
/// `*field.Path` does.
#[derive(Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    step: Step<'a>,
}

/// One step of a [`Path`] below its parent.
#[derive(Clone, Copy)]
enum Step<'a> {
    /// A root (`field.NewPath`) or a field name (`Child`).
    Name(&'a str),
    /// `Index`.
    Index(usize),
    /// `Key`.
    Key(&'a str),
}

impl<'a> Path<'a> {
    /// `field.NewPath`: a root, which may already name nested fields (`"spec.template"`).
    pub(crate) const fn new(root: &'a str) -> Self {
        Path {
            parent: None,
            step: Step::Name(root),
        }
    }

    /// `field.Path.Child`: `a` + `b` → `a.b` (an empty path gets no leading dot).
    pub(crate) fn child<'s>(&'s self, name: &'s str) -> Path<'s> {
        Path {
            parent: Some(self),
            step: Step::Name(name),
        }
    }

    /// `field.Path.Index`: `a[3]`.
    pub(crate) fn index(&self, i: usize) -> Path<'_> {
        Path {
            parent: Some(self),
            step: Step::Index(i),
        }
    }

    /// `field.Path.Key`: `a[key]` (the key is not quoted).
    pub(crate) fn key<'s>(&'s self, k: &'s str) -> Path<'s> {
        Path {
            parent: Some(self),
            step: Step::Key(k),
        }
    }

    /// Appends the path to `out`: parents first, a dot before a name unless nothing precedes it.
    fn render(&self, out: &mut String) {
        if let Some(parent) = self.parent {
            parent.render(out);
        }
        match self.step {
            Step::Name(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Step::Index(i) => {
                // Writing to a `String` cannot fail.
                let _ = write!(out, "[{i}]");
            }
            Step::Key(k) => {
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.render(&mut out);
        f.write_str(&out)
    }
}

/// A literal path (`"spec.selector"`) is a root, so error sites can name fixed fields plainly.
impl<'a> From<&'a str> for Path<'a> {
    fn from(root: &'a str) -> Self {
        Path::new(root)
    }
}

/// The recording methods take a path by value or by reference alike.
impl<'a> From<&Path<'a>> for Path<'a> {
    fn from(p: &Path<'a>) -> Self {
        *p
    }
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

/// A path rendered for an error being recorded (the only place paths become strings).
fn at<'a>(path: impl Into<Path<'a>>) -> String {
    path.into().to_string()
}

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
    pub(crate) fn required<'p>(&mut self, path: impl Into<Path<'p>>, detail: impl Into<String>) {
        self.0.push(FieldError::required(at(path), detail));
    }

    /// `field.Forbidden`.
    pub(crate) fn forbidden<'p>(&mut self, path: impl Into<Path<'p>>, detail: impl Into<String>) {
        self.0.push(FieldError::forbidden(at(path), detail));
    }

    /// `field.Invalid` of a plain Go `string`.
    pub(crate) fn invalid<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &str,
        detail: impl Into<String>,
    ) {
        self.0.push(FieldError::invalid(at(path), v, detail));
    }

    /// `field.Invalid` of a named string type or a `*string` (rendered through JSON).
    pub(crate) fn invalid_typed<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &str,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, typed(v), detail);
    }

    /// `field.Invalid` of an integer (any width, pointer or not: both print bare).
    pub(crate) fn invalid_int<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: i64,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, v.to_string(), detail);
    }

    /// `field.Invalid` of a value already rendered as upstream prints it.
    pub(crate) fn invalid_raw<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        rendered: String,
        detail: impl Into<String>,
    ) {
        self.raw(
            FieldErrorKind::Invalid,
            at(path),
            Some(rendered),
            detail.into(),
        );
    }

    /// `field.Invalid` of a map, list or JSON-tagged struct (rendered as Go's `encoding/json`).
    pub(crate) fn invalid_json<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &Value,
        detail: impl Into<String>,
    ) {
        self.invalid_raw(path, go_json(v), detail);
    }

    /// `field.Invalid(path, field.OmitValueType{}, detail)`: no value shown.
    pub(crate) fn invalid_omit<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        detail: impl Into<String>,
    ) {
        self.raw(FieldErrorKind::Invalid, at(path), None, detail.into());
    }

    /// `field.NotSupported` of a plain Go `string`.
    pub(crate) fn not_supported<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &str,
        supported: &[&str],
    ) {
        self.0
            .push(FieldError::not_supported(at(path), v, supported));
    }

    /// `field.NotSupported` of a named string type or pointer (rendered through JSON).
    pub(crate) fn not_supported_typed<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &str,
        supported: &[&str],
    ) {
        self.not_supported_raw(path, typed(v), supported);
    }

    /// An enumerated named-string field: `Required` when empty, `NotSupported` when unknown.
    pub(crate) fn one_of<'p>(&mut self, path: impl Into<Path<'p>>, v: &str, supported: &[&str]) {
        if v.is_empty() {
            self.required(path, "");
        } else if !supported.contains(&v) {
            self.not_supported_typed(path, v, supported);
        }
    }

    /// `field.NotSupported` of a value already rendered.
    pub(crate) fn not_supported_raw<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        rendered: String,
        supported: &[&str],
    ) {
        let mut e = FieldError::not_supported(at(path), "", supported);
        e.value = Some(rendered);
        self.0.push(e);
    }

    /// `field.Duplicate` of a plain Go `string`.
    pub(crate) fn duplicate<'p>(&mut self, path: impl Into<Path<'p>>, v: &str) {
        self.0.push(FieldError::duplicate(at(path), v));
    }

    /// `field.Duplicate` of a value already rendered (numbers, named types, structs).
    pub(crate) fn duplicate_raw<'p>(&mut self, path: impl Into<Path<'p>>, rendered: String) {
        self.raw(
            FieldErrorKind::Duplicate,
            at(path),
            Some(rendered),
            String::new(),
        );
    }

    /// `field.NotFound` of a plain Go `string`.
    pub(crate) fn not_found<'p>(&mut self, path: impl Into<Path<'p>>, v: &str) {
        self.0.push(FieldError::not_found(at(path), v));
    }

    /// `field.TooLong` (the value is never shown).
    pub(crate) fn too_long<'p>(&mut self, path: impl Into<Path<'p>>, max: usize) {
        self.0.push(FieldError::too_long(at(path), "", max));
    }

    /// `field.TooMany`.
    pub(crate) fn too_many<'p>(&mut self, path: impl Into<Path<'p>>, actual: usize, max: usize) {
        self.0.push(FieldError::too_many(at(path), actual, max));
    }

    /// `ValidateNonnegativeField`.
    pub(crate) fn nonnegative<'p>(&mut self, path: impl Into<Path<'p>>, v: i64) {
        if v < 0 {
            self.invalid_int(path, v, NEGATIVE);
        }
    }

    /// `ValidateImmutableField`: `new` must equal `old` (absent and `null` are the same Go zero
    /// value); the new value is shown as `encoding/json` renders it.
    pub(crate) fn immutable<'p>(&mut self, path: impl Into<Path<'p>>, new: &Value, old: &Value) {
        if !crate::json::same(new, old) {
            self.invalid_json(path, new, IMMUTABLE);
        }
    }

    /// Messages from a `[]string`-returning upstream check, each as `field.Invalid` of `v`.
    pub(crate) fn invalid_each<'p>(
        &mut self,
        path: impl Into<Path<'p>>,
        v: &str,
        msgs: Vec<String>,
    ) {
        let path = path.into();
        for m in msgs {
            self.invalid(path, v, m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths render as `field.Path.String` does, and only when asked.
    #[test]
    fn paths_render_like_upstream() {
        let spec = Path::new("spec");
        let containers = spec.child("containers");
        let c = containers.index(0);
        assert_eq!(c.child("name").to_string(), "spec.containers[0].name");
        let resources = c.child("resources");
        let limits = resources.child("limits");
        assert_eq!(
            limits.key("cpu").to_string(),
            "spec.containers[0].resources.limits[cpu]"
        );
        let root = Path::new("");
        assert_eq!(root.child("type").to_string(), "type");
        let second = root.index(2);
        assert_eq!(second.child("a").to_string(), "[2].a");
        assert_eq!(Path::new("[]").to_string(), "[]");
    }
}
