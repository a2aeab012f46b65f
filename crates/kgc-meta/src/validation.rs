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

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

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
pub(crate) fn join_aggregate(messages: impl IntoIterator<Item = String>) -> String {
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

/// Name rules differ per kind (most kinds: DNS-1123 subdomain; namespaces: DNS-1123 label;
/// services: DNS-1035 label upstream; RBAC roles/bindings: path segment name), and the rule also
/// decides how `generateName` is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, and every custom resource.
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: namespaces.
    Dns1123Label,
    /// `NameIsDNS1035Label`: services (a label that must start with a letter).
    Dns1035Label,
    /// `ValidatePathSegmentName`: RBAC roles and bindings, whose names only have to survive
    /// being a URL path segment.
    PathSegment,
}

/// The detail messages (upstream wording) for a `metadata.name` under `rule`; empty if valid.
pub fn validate_name(rule: NameRule, name: &str) -> Vec<String> {
    name_errors(rule, name, false)
}

/// `prefix` is upstream's flag for `generateName`, which gets random characters appended and may
/// therefore end in '-'.
fn name_errors(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    if rule == NameRule::PathSegment {
        return path_segment_errors(name, prefix);
    }
    let masked;
    let name = if prefix {
        masked = mask_trailing_dash(name);
        masked.as_str()
    } else {
        name
    };
    match rule {
        NameRule::Dns1123Label => is_dns1123_label(name),
        NameRule::Dns1035Label => is_dns1035_label(name),
        NameRule::Dns1123Subdomain | NameRule::PathSegment => is_dns1123_subdomain(name),
    }
}

/// Upstream `maskTrailingDash`: a trailing '-' (and, as upstream slices it, the byte before it)
/// is replaced by 'a' so the prefix can be checked with the full-name rule.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => {
            let mut chars = rest.chars();
            match chars.next_back() {
                // Dropping a multi-byte character would hide it from the check; upstream would
                // have produced invalid UTF-8 there, which fails the check, so keep it.
                Some(c) if c.is_ascii() => format!("{}a", chars.as_str()),
                _ => format!("{rest}a"),
            }
        }
        _ => name.to_owned(),
    }
}

fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

/// `TotalAnnotationSizeLimitB`: keys plus values, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Upstream `MaxLenError` (1.32 says "characters" although it counts bytes).
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Upstream `RegexError`, including its quirk of rendering examples as `'a',  or 'b', `.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        let _ = write!(s, "'{e}', ");
    }
    let _ = write!(s, "regex used for validation is '{fmt}')");
    s
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn dns_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn dns1035_label_shape(s: &str) -> bool {
    dns_label_shape(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

fn dns_subdomain_shape(s: &str) -> bool {
    s.split('.').all(dns_label_shape)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn qualified_name_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Upstream `IsDNS1123Subdomain`: detail messages, empty if `value` is valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !dns_subdomain_shape(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream `IsDNS1123Label`: detail messages, empty if `value` is valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !dns_label_shape(value) {
        if dns_subdomain_shape(value) {
            // A valid subdomain that is not a label can only be failing on its dots.
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Upstream `IsDNS1035Label`: detail messages, empty if `value` is valid.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !dns1035_label_shape(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Upstream `IsQualifiedName` (label keys, annotation keys, finalizer names): an optional
/// DNS-subdomain prefix and '/', then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !qualified_name_shape(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Upstream `IsValidLabelValue`: empty, or a qualified-name-shaped string of at most 63 bytes.
pub fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !qualified_name_shape(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Finalizer names core accepts without a domain prefix (`IsStandardFinalizerName`).
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];
const FINALIZER_ORPHAN: &str = "orphan";
const FINALIZER_FOREGROUND: &str = "foregroundDeletion";
const FIELD_IMMUTABLE: &str = "field is immutable";

/// Validates `metadata` of a built-in object being created (core `ValidateObjectMeta`, which is
/// apimachinery's `ValidateObjectMetaAccessor` plus core's finalizer-name rule).
///
/// `meta` is the JSON value of `metadata`; missing fields count as empty and wrongly typed fields
/// are reported as `Invalid`. Checks, in upstream order: `generateName` (with the prefix form of
/// the name rule), `name` (required unless `generateName` is given, so the check also works
/// before a name is generated), `namespace` (required iff `namespaced`), `generation` (not
/// negative), label keys and values, annotation keys and total size, ownerReferences (non-empty
/// identity, a single controller, no core `Event` owner), finalizer names (qualified names;
/// `orphan` with `foregroundDeletion` is invalid; duplicates are accepted, as upstream does) and
/// finally that unprefixed finalizers are standard ones.
///
/// Error paths are upstream's: label, annotation and ownerReference errors name the map or list
/// (`metadata.labels`, `metadata.ownerReferences.uid`), qualified-name finalizer errors name
/// `metadata.finalizers`, and only the standard-name rule indexes (`metadata.finalizers[0]`).
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_generic(meta, namespaced, name_rule);
    if let Some(obj) = meta.as_object() {
        for (i, name) in finalizer_list(obj).iter().enumerate() {
            if let Some(name) = name
                && !name.contains('/')
                && !STANDARD_FINALIZERS.contains(&name.as_str())
            {
                errs.push(FieldError::invalid(
                    format!("metadata.finalizers[{i}]"),
                    name.as_str(),
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    errs
}

/// Validates `metadata` with apimachinery's `ValidateObjectMetaAccessor` alone, which is what
/// custom resources get: unlike built-ins they may use unprefixed finalizer names (upstream only
/// warns about those).
pub fn validate_object_meta_generic(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<FieldError> {
    let empty = Map::new();
    let obj = match meta {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => return vec![type_error("metadata", other, "object")],
    };
    let mut errs = Vec::new();

    let generate_name = string_field(obj, "generateName", "metadata.generateName", &mut errs);
    if let Some(g) = generate_name.filter(|g| !g.is_empty()) {
        for msg in name_errors(name_rule, g, true) {
            errs.push(FieldError::invalid("metadata.generateName", g, msg));
        }
    }
    match obj.get("name") {
        Some(Value::String(n)) if !n.is_empty() => {
            for msg in name_errors(name_rule, n, false) {
                errs.push(FieldError::invalid("metadata.name", n.as_str(), msg));
            }
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {
            if generate_name.is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                ));
            }
        }
        Some(other) => errs.push(type_error("metadata.name", other, "string")),
    }

    match obj.get("namespace") {
        Some(Value::String(ns)) if !ns.is_empty() => {
            if namespaced {
                for msg in name_errors(NameRule::Dns1123Label, ns, false) {
                    errs.push(FieldError::invalid("metadata.namespace", ns.as_str(), msg));
                }
            } else {
                errs.push(FieldError::forbidden(
                    "metadata.namespace",
                    "not allowed on this type",
                ));
            }
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {
            if namespaced {
                errs.push(FieldError::required("metadata.namespace", ""));
            }
        }
        Some(other) => errs.push(type_error("metadata.namespace", other, "string")),
    }

    if let Some(g) = integer_field(obj, "generation", "metadata.generation", &mut errs)
        && g < 0
    {
        errs.push(FieldError::invalid_value(
            "metadata.generation",
            &Value::from(g),
            "must be greater than or equal to 0",
        ));
    }

    validate_labels(obj, &mut errs);
    validate_annotations(obj, &mut errs);
    validate_owner_references(obj, &mut errs);
    validate_finalizers(obj, &mut errs);
    errs
}

fn validate_labels(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.labels";
    for (k, v) in string_map(obj, "labels", PATH, errs) {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(PATH, k, msg));
        }
        for msg in is_label_value(v) {
            errs.push(FieldError::invalid(PATH, v, msg));
        }
    }
}

fn validate_annotations(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.annotations";
    let entries = string_map(obj, "annotations", PATH, errs);
    let mut total = 0usize;
    for (k, v) in &entries {
        // Annotation keys are qualified names except that case does not matter.
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(PATH, *k, msg));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(PATH, "", TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// An ownerReference as Go's `metav1.OwnerReference` holds it, so errors can echo it in the same
/// JSON shape (field order and `omitempty`) upstream prints.
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    fn to_go_json(&self) -> String {
        let mut s = format!(
            "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
            json_string(&self.api_version),
            json_string(&self.kind),
            json_string(&self.name),
            json_string(&self.uid)
        );
        if let Some(c) = self.controller {
            let _ = write!(s, ",\"controller\":{c}");
        }
        if let Some(b) = self.block_owner_deletion {
            let _ = write!(s, ",\"blockOwnerDeletion\":{b}");
        }
        s.push('}');
        s
    }
}

fn validate_owner_references(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.ownerReferences";
    let items = match obj.get("ownerReferences") {
        None | Some(Value::Null) => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(type_error(PATH, other, "array"));
            return;
        }
    };
    let mut refs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{PATH}[{i}]");
        let Some(m) = item.as_object() else {
            errs.push(type_error(&item_path, item, "object"));
            continue;
        };
        let mut s = |key: &str| {
            string_field(m, key, &format!("{item_path}.{key}"), errs)
                .unwrap_or_default()
                .to_owned()
        };
        let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let controller = bool_field(m, "controller", &format!("{item_path}.controller"), errs);
        let block_owner_deletion = bool_field(
            m,
            "blockOwnerDeletion",
            &format!("{item_path}.blockOwnerDeletion"),
            errs,
        );
        refs.push(OwnerRef {
            api_version,
            kind,
            name,
            uid,
            controller,
            block_owner_deletion,
        });
    }

    let mut first_controller: Option<String> = None;
    for r in &refs {
        let (group, version) = parse_group_version(&r.api_version);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.apiVersion"),
                r.api_version.as_str(),
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.kind"),
                r.kind.as_str(),
                "kind must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.name"),
                r.name.as_str(),
                "name must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid_rendered(
                format!("{PATH}.uid"),
                json_string(&r.uid),
                "uid must not be empty",
            ));
        }
        // BannedOwners holds only core v1 Event: events must never keep anything alive.
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid_rendered(
                PATH,
                r.to_go_json(),
                format!(
                    "{group}/{version}, Kind={} is disallowed from being an owner",
                    r.kind
                ),
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(OwnerRef::to_go_json).collect();
                    errs.push(FieldError::invalid_rendered(
                        PATH,
                        format!("[{}]", all.join(",")),
                        format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
}

/// Upstream `schema.ParseGroupVersion` as `FromAPIVersionAndKind` uses it: an unparsable
/// apiVersion yields an empty group and version.
fn parse_group_version(api_version: &str) -> (&str, &str) {
    if api_version.is_empty() || api_version == "/" {
        return ("", "");
    }
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((g, v)) if !v.contains('/') => (g, v),
        Some(_) => ("", ""),
    }
}

fn validate_finalizers(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.finalizers";
    let Some(items) = finalizer_items(obj, errs) else {
        return;
    };
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = match item {
            Value::String(s) => s.as_str(),
            Value::Null => "",
            other => {
                errs.push(type_error(&format!("{PATH}[{i}]"), other, "string"));
                continue;
            }
        };
        for msg in is_qualified_name(name) {
            errs.push(FieldError::invalid(PATH, name, msg));
        }
        names.push(name);
    }
    if names.contains(&FINALIZER_ORPHAN) && names.contains(&FINALIZER_FOREGROUND) {
        let list: Vec<Value> = names.iter().map(|n| Value::from(*n)).collect();
        errs.push(FieldError::invalid_value(
            PATH,
            &Value::Array(list),
            format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
        ));
    }
}

/// The finalizers array, reporting a wrong type once.
fn finalizer_items<'a>(
    obj: &'a Map<String, Value>,
    errs: &mut Vec<FieldError>,
) -> Option<&'a Vec<Value>> {
    match obj.get("finalizers") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items),
        Some(other) => {
            errs.push(type_error("metadata.finalizers", other, "array"));
            None
        }
    }
}

/// Finalizer names by index (`None` for items that are not strings); no errors reported.
fn finalizer_list(obj: &Map<String, Value>) -> Vec<Option<String>> {
    match obj.get("finalizers") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => Some(String::new()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Validates what an update may not do to `metadata` (apimachinery
/// `ValidateObjectMetaAccessorUpdate`): `name`, `namespace`, `uid`, `creationTimestamp`,
/// `deletionTimestamp` and `deletionGracePeriodSeconds` are immutable ("field is immutable"),
/// `generation` must not decrease, and while `old` has a `deletionTimestamp` no finalizer may be
/// added.
///
/// Only the update-specific rules are here: run [`validate_object_meta`] on `new` as well, as
/// upstream strategies do.
///
/// Upstream's store (`rest.BeforeUpdate`) fills `generation`, `uid`, `creationTimestamp`,
/// `deletionTimestamp` and `deletionGracePeriodSeconds` (and the handler the namespace) from the
/// stored object before validating, so an update that merely *omits* one of them never fails
/// there; this function therefore treats an omitted one as unchanged and reports only values the
/// request actually changes. (The store also silently restores a changed `creationTimestamp`, and
/// a changed `deletionTimestamp` once one is set; callers wanting that leniency copy those before
/// calling.) Upstream's "must be specified for an update" check on `resourceVersion` is left out
/// because unconditional updates fill the version in before that check runs.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let empty = Map::new();
    let new_obj = match new {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => return vec![type_error("metadata", other, "object")],
    };
    let old_obj = old.as_object().unwrap_or(&empty);
    let mut errs = Vec::new();

    if present(old_obj.get("deletionTimestamp")).is_some() {
        let strings = |m: &Map<String, Value>| -> BTreeSet<String> {
            finalizer_list(m).into_iter().flatten().collect()
        };
        let old_set = strings(old_obj);
        let added: Vec<String> = strings(new_obj)
            .into_iter()
            .filter(|f| !old_set.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| go_quote(f)).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }

    let generation = |m: &Map<String, Value>| m.get("generation").and_then(Value::as_i64);
    if let Some(new_generation) = generation(new_obj)
        && new_generation < generation(old_obj).unwrap_or(0)
    {
        errs.push(FieldError::invalid_value(
            "metadata.generation",
            &Value::from(new_generation),
            "must not be decremented",
        ));
    }

    // (field, how its new value is echoed, whether omitting it means "keep the stored value")
    for (key, render, omittable) in [
        ("name", Render::GoString, false),
        ("namespace", Render::GoString, true),
        ("uid", Render::JsonString, true),
        ("creationTimestamp", Render::Json, true),
        ("deletionTimestamp", Render::Json, true),
        ("deletionGracePeriodSeconds", Render::Json, true),
    ] {
        let (n, o) = (present(new_obj.get(key)), present(old_obj.get(key)));
        if n != o && !(omittable && n.is_none()) {
            let shown = match (render, n) {
                (Render::GoString, Some(Value::String(s))) => go_quote(s),
                (Render::GoString, None) => go_quote(""),
                (Render::JsonString, None) => json_string(""),
                (_, None) => "null".to_owned(),
                (_, Some(v)) => go_json(v),
            };
            errs.push(FieldError::invalid_rendered(
                format!("metadata.{key}"),
                shown,
                FIELD_IMMUTABLE,
            ));
        }
    }
    errs
}

/// How an immutable field's new value is echoed: Go prints a `string` with `%q`, and marshals
/// named string types (UID), times and pointers as JSON.
#[derive(Clone, Copy)]
enum Render {
    GoString,
    JsonString,
    Json,
}

/// A field's value with "unset" normalised: absent, `null` and `""` all mean the Go zero value.
fn present(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    }
}

impl FieldError {
    /// An `Invalid` error whose value is already rendered.
    fn invalid_rendered(
        field: impl Into<String>,
        rendered: String,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(rendered), detail)
    }
}

fn type_error(path: &str, value: &Value, expected: &str) -> FieldError {
    FieldError::invalid_value(path, value, format!("must be of type {expected}"))
}

/// A string field; absent and `null` are `None`, other types are reported.
fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<&'a str> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            errs.push(type_error(path, other, "string"));
            None
        }
    }
}

fn integer_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<i64> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => {
            let n = v.as_i64();
            if n.is_none() {
                errs.push(type_error(path, v, "integer"));
            }
            n
        }
    }
}

fn bool_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            errs.push(type_error(path, other, "boolean"));
            None
        }
    }
}

/// A `map[string]string` field as sorted entries (Go decodes a `null` entry as ""), reporting
/// entries and maps of the wrong type.
fn string_map<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Vec<(&'a str, &'a str)> {
    let m = match obj.get(key) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Object(m)) => m,
        Some(other) => {
            errs.push(type_error(path, other, "object"));
            return Vec::new();
        }
    };
    let mut entries: Vec<(&str, &Value)> = m.iter().map(|(k, v)| (k.as_str(), v)).collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        match v {
            Value::String(s) => out.push((k, s.as_str())),
            Value::Null => out.push((k, "")),
            other => errs.push(type_error(&format!("{path}[{k}]"), other, "string")),
        }
    }
    out
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

/// Go `strconv.Quote` (what `%q` prints): printable characters stay, the rest are escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the ASCII space, but no
/// other spaces, controls, format characters, private-use characters or noncharacters.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c as u32,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0xD800..=0xDFFF
            | 0xE000..=0xF8FF
            | 0xFDD0..=0xFDEF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE..=0xFFFF
            | 0xF0000..=0x10FFFF
    )
}

/// Go `encoding/json` output for a value: object keys sorted, HTML-sensitive characters escaped.
/// This is how `field.Error` renders a bad value that is not a plain Go string or number.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, v);
    out
}

fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                if let Some(item) = m.get(*k) {
                    write_go_json(out, item);
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string literal as Go's `encoding/json` writes it (with HTML escaping on).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn strings(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn ok_meta() -> Value {
        json!({"name": "x", "namespace": "ns"})
    }

    fn with(extra: Value) -> Value {
        let mut m = ok_meta();
        if let (Some(m), Some(e)) = (m.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        m
    }

    fn check(meta: Value) -> Vec<String> {
        strings(&validate_object_meta(
            &meta,
            true,
            NameRule::Dns1123Subdomain,
        ))
    }

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
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\tc\u{1}\u{7f}"), r#""a\nb\tc\x01\x7f""#);
        assert_eq!(go_quote("héllo ✓"), "\"héllo ✓\"");
        assert_eq!(go_quote("\u{200b}\u{a0}"), r#""\u200b\u00a0""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
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

    #[test]
    fn dns_rules() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(is_dns1123_subdomain("a").is_empty());
        assert_eq!(is_dns1123_subdomain("Foo"), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain(""), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain("a..b"), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain("a-.b"), vec![SUBDOMAIN_MSG]);
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            vec!["must be no more than 253 characters".to_owned()]
        );
        assert!(is_dns1123_subdomain(&"a".repeat(253)).is_empty());

        assert!(is_dns1123_label("my-name").is_empty());
        assert!(is_dns1123_label("123-abc").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(is_dns1123_label("-a"), vec![LABEL_MSG]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(
            is_dns1123_label(&"A".repeat(64)),
            vec![
                "must be no more than 63 characters".to_owned(),
                LABEL_MSG.to_owned()
            ]
        );

        assert!(is_dns1035_label("abc-123").is_empty());
        assert_eq!(is_dns1035_label("1abc"), vec![DNS1035_MSG]);
    }

    #[test]
    fn qualified_names_and_label_values() {
        for ok in ["a", "A", "a.b_c-D", "example.com/MyName", "k8s.io/x", "a/b"] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        assert_eq!(is_qualified_name("app:monolith"), vec![NAME_PART_MSG]);
        assert_eq!(
            is_qualified_name(""),
            vec![
                "name part must be non-empty".to_owned(),
                NAME_PART_MSG.to_owned()
            ]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            is_qualified_name("Example.com/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );

        assert!(is_label_value("").is_empty());
        assert!(is_label_value("MyValue").is_empty());
        assert!(is_label_value("my_value-1.2").is_empty());
        assert_eq!(is_label_value("-x"), vec![LABEL_VALUE_MSG]);
        assert_eq!(is_label_value("a b"), vec![LABEL_VALUE_MSG]);
        assert_eq!(
            is_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn name_rules() {
        assert!(validate_name(NameRule::Dns1123Subdomain, "a.b").is_empty());
        assert_eq!(
            validate_name(NameRule::Dns1123Label, "a.b"),
            vec!["must not contain dots"]
        );
        assert_eq!(
            validate_name(NameRule::Dns1035Label, "1a"),
            vec![DNS1035_MSG]
        );
        assert!(validate_name(NameRule::PathSegment, "system:admin").is_empty());
        assert_eq!(
            validate_name(NameRule::PathSegment, ".."),
            vec!["may not be '..'"]
        );
        assert_eq!(
            validate_name(NameRule::PathSegment, "."),
            vec!["may not be '.'"]
        );
        assert_eq!(
            validate_name(NameRule::PathSegment, "a/b%c"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        // generateName: the prefix form.
        assert!(name_errors(NameRule::PathSegment, "..", true).is_empty());
        assert!(name_errors(NameRule::Dns1123Subdomain, "web-", true).is_empty());
        assert!(name_errors(NameRule::Dns1123Label, "web-", true).is_empty());
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "-", true),
            vec![SUBDOMAIN_MSG]
        );
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "Web-", true),
            vec![SUBDOMAIN_MSG]
        );
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "wé-", true),
            vec![SUBDOMAIN_MSG]
        );
    }

    #[test]
    fn valid_metadata_passes() {
        let meta = json!({
            "name": "web-1",
            "namespace": "default",
            "generation": 3,
            "labels": {"app": "web", "example.com/tier": "", "Empty": null},
            "annotations": {"Example.COM/Note": "anything at all"},
            "finalizers": ["orphan", "kubernetes", "example.com/x", "x/y", "example.com/x"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2", "controller": false},
            ],
            "uid": "ignored", "resourceVersion": "5",
        });
        assert_eq!(check(meta), Vec::<String>::new());
    }

    #[test]
    fn name_required_or_invalid() {
        assert_eq!(
            check(json!({"namespace": "ns"})),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(
            check(json!({"name": "", "namespace": "ns"})),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(
            check(json!({"generateName": "web-", "namespace": "ns"})),
            Vec::<String>::new()
        );
        assert_eq!(
            check(json!({"name": "Foo", "namespace": "ns"})),
            vec![format!(
                "metadata.name: Invalid value: \"Foo\": {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(json!({"generateName": "Web-", "namespace": "ns"})),
            vec![format!(
                "metadata.generateName: Invalid value: \"Web-\": {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(json!({"name": 5, "namespace": "ns"})),
            vec!["metadata.name: Invalid value: 5: must be of type string"]
        );
    }

    #[test]
    fn per_kind_name_rules() {
        let ns = strings(&validate_object_meta(
            &json!({"name": "a.b"}),
            false,
            NameRule::Dns1123Label,
        ));
        assert_eq!(
            ns,
            vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        let role = strings(&validate_object_meta(
            &json!({"name": "system:controller:x"}),
            false,
            NameRule::PathSegment,
        ));
        assert!(role.is_empty());
    }

    #[test]
    fn namespace_rules() {
        assert_eq!(
            check(json!({"name": "x"})),
            vec!["metadata.namespace: Required value"]
        );
        assert_eq!(
            check(json!({"name": "x", "namespace": "Bad_NS"})),
            vec![format!(
                "metadata.namespace: Invalid value: \"Bad_NS\": {LABEL_MSG}"
            )]
        );
        let cluster = strings(&validate_object_meta(
            &json!({"name": "x", "namespace": "ns"}),
            false,
            NameRule::Dns1123Subdomain,
        ));
        assert_eq!(
            cluster,
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        let cluster_ok = validate_object_meta(
            &json!({"name": "x", "namespace": ""}),
            false,
            NameRule::Dns1123Subdomain,
        );
        assert!(cluster_ok.is_empty());
    }

    #[test]
    fn generation_not_negative() {
        assert_eq!(
            check(with(json!({"generation": -2}))),
            vec!["metadata.generation: Invalid value: -2: must be greater than or equal to 0"]
        );
        assert_eq!(
            check(with(json!({"generation": "1"}))),
            vec!["metadata.generation: Invalid value: \"1\": must be of type integer"]
        );
    }

    #[test]
    fn labels_rules() {
        assert_eq!(
            check(with(json!({"labels": {"app:x": "ok", "b": "bad value"}}))),
            vec![
                format!("metadata.labels: Invalid value: \"app:x\": {NAME_PART_MSG}"),
                format!("metadata.labels: Invalid value: \"bad value\": {LABEL_VALUE_MSG}"),
            ]
        );
        assert_eq!(
            check(with(json!({"labels": {"a": 1}}))),
            vec!["metadata.labels[a]: Invalid value: 1: must be of type string"]
        );
        assert_eq!(
            check(with(json!({"labels": ["a"]}))),
            vec!["metadata.labels: Invalid value: [\"a\"]: must be of type object"]
        );
    }

    #[test]
    fn annotation_rules() {
        assert_eq!(
            check(with(json!({"annotations": {"a b": "x"}}))),
            vec![format!(
                "metadata.annotations: Invalid value: \"a b\": {NAME_PART_MSG}"
            )]
        );
        // Case does not matter for annotation keys, even in the prefix.
        assert!(check(with(json!({"annotations": {"EXAMPLE.com/Key": "x"}}))).is_empty());
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            check(with(json!({"annotations": {"a": big}}))),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let exact = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1);
        assert!(check(with(json!({"annotations": {"a": exact}}))).is_empty());
    }

    #[test]
    fn finalizer_rules() {
        assert_eq!(
            check(with(
                json!({"finalizers": ["orphan", "foregroundDeletion"]})
            )),
            vec![
                "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["x/y", "custom"]}))),
            vec![
                "metadata.finalizers[1]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["a b/c"]}))),
            vec![format!(
                "metadata.finalizers: Invalid value: \"a b/c\": prefix part {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["bad name"]}))),
            vec![
                format!("metadata.finalizers: Invalid value: \"bad name\": {NAME_PART_MSG}"),
                "metadata.finalizers[0]: Invalid value: \"bad name\": name is neither a standard finalizer name nor is it fully qualified".to_owned(),
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": [3]}))),
            vec!["metadata.finalizers[0]: Invalid value: 3: must be of type string"]
        );
        // Custom resources may use unprefixed names.
        let generic = validate_object_meta_generic(
            &with(json!({"finalizers": ["custom", "custom"]})),
            true,
            NameRule::Dns1123Subdomain,
        );
        assert!(generic.is_empty());
    }

    #[test]
    fn owner_reference_rules() {
        assert_eq!(
            check(with(json!({"ownerReferences": [{}]}))),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"},
                {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"},
            ]}))),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u", "blockOwnerDeletion": false}
            ]}))),
            vec![
                "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"u\",\"blockOwnerDeletion\":false}: /v1, Kind=Event is disallowed from being an owner"
            ]
        );
        // Only the core Event is banned upstream.
        assert!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "u"}
            ]})))
            .is_empty()
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "c", "uid": "3", "controller": true},
            ]}))),
            vec![
                "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"b\",\"uid\":\"2\"},{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"c\",\"uid\":\"3\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and Deployment/c"
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "v1", "kind": "K", "name": "n", "uid": 7, "controller": "yes"}
            ]}))),
            vec![
                "metadata.ownerReferences[0].uid: Invalid value: 7: must be of type string",
                "metadata.ownerReferences[0].controller: Invalid value: \"yes\": must be of type boolean",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": {"a": 1}}))),
            vec!["metadata.ownerReferences: Invalid value: {\"a\":1}: must be of type array"]
        );
    }

    #[test]
    fn errors_follow_upstream_order() {
        let got = check(json!({
            "name": "Bad",
            "generation": -1,
            "labels": {"k": "-"},
            "finalizers": ["nope"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n"}],
        }));
        let fields: Vec<&str> = got
            .iter()
            .map(|s| s.split(':').next().unwrap_or_default())
            .collect();
        assert_eq!(
            fields,
            vec![
                "metadata.name",
                "metadata.namespace",
                "metadata.generation",
                "metadata.labels",
                "metadata.ownerReferences.uid",
                "metadata.finalizers[0]",
            ]
        );
    }

    #[test]
    fn wrong_shapes_never_panic() {
        for meta in [
            json!(null),
            json!(3),
            json!("x"),
            json!([]),
            json!({"name": null, "namespace": null, "labels": null, "finalizers": null}),
            json!({"name": {}, "namespace": [], "annotations": 3, "ownerReferences": [1, null]}),
        ] {
            let _ = validate_object_meta(&meta, true, NameRule::Dns1123Subdomain);
            let _ = validate_object_meta_update(&meta, &meta);
            let _ = validate_object_meta_update(&meta, &json!(7));
        }
        assert_eq!(
            strings(&validate_object_meta(
                &json!(3),
                true,
                NameRule::Dns1123Subdomain
            )),
            vec!["metadata: Invalid value: 3: must be of type object"]
        );
    }

    fn update(new: Value, old: Value) -> Vec<String> {
        strings(&validate_object_meta_update(&new, &old))
    }

    #[test]
    fn update_immutable_fields() {
        let old = json!({
            "name": "a", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2
        });
        assert!(update(old.clone(), old.clone()).is_empty());
        assert_eq!(
            update(
                json!({
                    "name": "b", "namespace": "other", "uid": "u2",
                    "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 2
                }),
                old.clone()
            ),
            vec![
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.namespace: Invalid value: \"other\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable",
            ]
        );
        // Omitted fields are filled from the stored object upstream, so they are no change.
        assert!(update(json!({"name": "a"}), old.clone()).is_empty());
        assert_eq!(
            update(json!({"namespace": "ns"}), old.clone()),
            vec!["metadata.name: Invalid value: \"\": field is immutable"]
        );
        assert_eq!(
            update(
                json!({"name": "a", "creationTimestamp": "2024-01-01T00:00:01Z"}),
                old
            ),
            vec![
                "metadata.creationTimestamp: Invalid value: \"2024-01-01T00:00:01Z\": field is immutable"
            ]
        );
    }

    #[test]
    fn update_deletion_fields_and_generation() {
        let old = json!({
            "name": "a", "generation": 3,
            "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30
        });
        assert_eq!(
            update(json!({"name": "a", "generation": 2}), old.clone()),
            vec!["metadata.generation: Invalid value: 2: must not be decremented"]
        );
        assert!(update(json!({"name": "a"}), old.clone()).is_empty());
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": null}),
                old.clone()
            ),
            vec![
                "metadata.deletionTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable"
            ]
        );
        assert_eq!(
            update(
                json!({"name": "a", "generation": 4, "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}),
                old
            ),
            vec!["metadata.deletionGracePeriodSeconds: Invalid value: 0: field is immutable"]
        );
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}),
                json!({"name": "a"})
            ),
            vec![
                "metadata.deletionTimestamp: Invalid value: \"2024-01-01T00:00:00Z\": field is immutable"
            ]
        );
    }

    #[test]
    fn update_no_new_finalizers_while_deleting() {
        let old = json!({"name": "a", "deletionTimestamp": "t", "finalizers": ["x/y"]});
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "t", "finalizers": ["x/y", "b/z", "a/z", "b/z"]}),
                old.clone()
            ),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a/z\", \"b/z\"}"
            ]
        );
        // Removing or keeping finalizers is fine; adding before deletion is fine.
        assert!(update(json!({"name": "a", "deletionTimestamp": "t"}), old).is_empty());
        assert!(
            update(
                json!({"name": "a", "finalizers": ["new/one"]}),
                json!({"name": "a"})
            )
            .is_empty()
        );
    }
}
