//! CustomResourceDefinitions: validation, the status the server writes, and the catalog entry a
//! CRD serves (apiextensions-apiserver `pkg/apis/apiextensions/validation/validation.go`,
//! `pkg/controller/status/naming_controller.go`, `pkg/controller/establish`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::catalog::{
    ALL_VERBS, Catalog, GcPolicy, GroupResource, PrinterColumn, ResourceInfo, Scope, Subresource,
    compare_versions,
};
use crate::validation::{FieldError, NameRule, is_dns1035_label, is_dns1123_subdomain};

/// The finalizer that keeps a CRD until every one of its objects is gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Where a custom resource's scale subresource reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// What a CRD adds to its resource beyond the common catalog facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CustomResource {
    /// `openAPIV3Schema` per version.
    pub schemas: BTreeMap<String, Arc<Value>>,
    pub scale: Option<ScalePaths>,
    /// The version objects are stored in.
    pub storage_version: String,
    /// `spec.conversion.webhook` (`clientConfig`, `conversionReviewVersions`) when the strategy
    /// is `Webhook`: objects change versions through that webhook.
    pub conversion_webhook: Option<Arc<Value>>,
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `spec.conversion.webhook` of a CRD whose strategy is `Webhook` (kubernetes/kubernetes
/// `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
/// `validateCustomResourceConversion`).
fn validate_conversion_webhook(crd: &Value, errs: &mut Vec<FieldError>) {
    let Some(hook) = crd
        .pointer("/spec/conversion/webhook")
        .filter(|h| h.is_object())
    else {
        errs.push(FieldError::required(
            "spec.conversion.webhook",
            "required when strategy is set to Webhook",
        ));
        return;
    };
    let cc = &hook["clientConfig"];
    match (cc["url"].as_str(), cc["service"].is_object()) {
        (Some(url), false) if !url.starts_with("https://") => errs.push(FieldError::invalid(
            "spec.conversion.webhook.clientConfig.url",
            url,
            "'https' is the only allowed URL scheme",
        )),
        (Some(_), false) | (None, true) => {}
        _ => errs.push(FieldError::required(
            "spec.conversion.webhook.clientConfig",
            "exactly one of url or service is required",
        )),
    }
    let versions = strings(crd, "/spec/conversion/webhook/conversionReviewVersions");
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        errs.push(FieldError::required(
            "spec.conversion.webhook.conversionReviewVersions",
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// Validates a CRD for create or update; `old` is the stored CRD on update.
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = s(crd, "/spec/group");
    let plural = s(crd, "/spec/names/plural");
    let kind = s(crd, "/spec/names/kind");
    let name = s(crd, "/metadata/name");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, m));
        }
        if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else {
        for m in is_dns1035_label(plural) {
            errs.push(FieldError::invalid("spec.names.plural", plural, m));
        }
    }
    let singular = s(crd, "/spec/names/singular");
    if !singular.is_empty() {
        for m in is_dns1035_label(singular) {
            errs.push(FieldError::invalid("spec.names.singular", singular, m));
        }
    }
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    let list_kind = s(crd, "/spec/names/listKind");
    if !list_kind.is_empty() && list_kind == kind {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, short) in strings(crd, "/spec/names/shortNames").iter().enumerate() {
        for m in is_dns1035_label(short) {
            errs.push(FieldError::invalid(
                format!("spec.names.shortNames[{i}]"),
                short,
                m,
            ));
        }
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match s(crd, "/spec/scope") {
        "Namespaced" | "Cluster" => {}
        "" => errs.push(FieldError::required("spec.scope", "")),
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    match s(crd, "/spec/conversion/strategy") {
        "" | "None" => {}
        "Webhook" => validate_conversion_webhook(crd, &mut errs),
        other => errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let mut seen = Vec::new();
    let mut storage = 0;
    let mut served = 0;
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let vname = s(v, "/name");
        if vname.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else {
            for m in is_dns1035_label(vname) {
                errs.push(FieldError::invalid(format!("{path}.name"), vname, m));
            }
            if seen.contains(&vname) {
                errs.push(FieldError::duplicate(format!("{path}.name"), vname));
            }
            seen.push(vname);
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if v.get("served").and_then(Value::as_bool) == Some(true) {
            served += 1;
        }
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                errs.push(FieldError::required(
                    format!("{path}.schema.openAPIV3Schema"),
                    "schemas are required",
                ));
            }
            Some(schema) => {
                let root = format!("{path}.schema.openAPIV3Schema");
                match schema.get("type").and_then(Value::as_str) {
                    Some("object") => {}
                    None | Some("") => errs.push(FieldError::required(
                        format!("{root}.type"),
                        "must not be empty at the root",
                    )),
                    Some(other) => errs.push(FieldError::invalid(
                        format!("{root}.type"),
                        other,
                        "must be object at the root",
                    )),
                }
                openapi_schema(schema, &root, &mut errs);
            }
        }
        if let Some(scale) = v.pointer("/subresources/scale").filter(|s| s.is_object()) {
            for key in ["specReplicasPath", "statusReplicasPath"] {
                let p = s(scale, &format!("/{key}"));
                if p.is_empty() {
                    errs.push(FieldError::required(
                        format!("{path}.subresources.scale.{key}"),
                        "",
                    ));
                } else if !p.starts_with('.') {
                    errs.push(FieldError::invalid(
                        format!("{path}.subresources.scale.{key}"),
                        p,
                        "should be a json path under .spec or .status",
                    ));
                }
            }
        }
    }
    if !versions.is_empty() && storage != 1 {
        errs.push(FieldError::invalid_value(
            "spec.versions",
            &Value::Array(versions.clone()),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.is_empty() && served == 0 {
        errs.push(FieldError::invalid_value(
            "spec.versions",
            &Value::Array(versions),
            "must have at least one version marked as served",
        ));
    }
    if let Some(old) = old {
        for (field, pointer) in [("spec.group", "/spec/group"), ("spec.scope", "/spec/scope")] {
            if s(old, pointer) != s(crd, pointer) {
                errs.push(FieldError::invalid(
                    field,
                    s(crd, pointer),
                    "field is immutable",
                ));
            }
        }
    }
    errs
}

/// The OpenAPI types a structural schema may use.
const SCHEMA_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Checks every `type` and the value validations of a schema (apiextensions-apiserver
/// `pkg/apis/apiextensions/validation/validation.go` `ValidateCustomResourceDefinitionOpenAPISchema`
/// and `pkg/apiserver/schema/validation.go` for `pattern`), naming the path as upstream does:
/// `…properties[spec].properties[color].type`.
fn openapi_schema(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(t) = schema.get("type") {
        match t.as_str() {
            Some(t) if t.is_empty() || SCHEMA_TYPES.contains(&t) => {}
            _ => errs.push(FieldError::not_supported(
                format!("{path}.type"),
                t.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| t.to_string()),
                &SCHEMA_TYPES,
            )),
        }
    }
    value_validations(schema, path, errs);
    list_type(schema, path, errs);
    x_validations(schema, path, errs);
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            openapi_schema(v, &format!("{path}.properties[{k}]"), errs);
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        openapi_schema(items, &format!("{path}.items"), errs);
    }
    if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        openapi_schema(add, &format!("{path}.additionalProperties"), errs);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in schema
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            openapi_schema(sub, &format!("{path}.{junctor}[{i}]"), errs);
        }
    }
    if let Some(not) = schema.get("not").filter(|n| n.is_object()) {
        openapi_schema(not, &format!("{path}.not"), errs);
    }
}

/// `pattern` must compile (with RE2 syntax, as Go's `regexp`), `uniqueItems` may not be true.
fn value_validations(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && !pattern.is_empty()
        && let Err(e) = regex::Regex::new(pattern)
    {
        errs.push(FieldError::invalid(
            format!("{path}.pattern"),
            pattern,
            format!(
                "must be a valid regular expression, but isn't: {}",
                crate::schema::go_regexp_error(&e, pattern)
            ),
        ));
    }
    if schema.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
}

/// The reasons an `x-kubernetes-validations` rule may give, sorted as upstream lists them.
const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The shape of `x-kubernetes-validations` rules (upstream
/// `ValidateCustomResourceDefinitionOpenAPISchema`). The CEL rules themselves are compiled and
/// priced by kgc-cel (`rules::check`, called by kgc-store).
fn x_validations(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let newline = |s: &str| s.contains(['\n', '\r']);
    let rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (i, rule) in rules.enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let text = |key: &str| rule.get(key).and_then(Value::as_str).unwrap_or("");
        let (expr, message) = (text("rule"), text("message"));
        if expr.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{at}.rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && message.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{at}.message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if newline(message.trim()) {
            errs.push(FieldError::invalid(
                format!("{at}.message"),
                message,
                "message must not contain line breaks",
            ));
        } else if newline(expr.trim()) && message.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{at}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let message_expression = text("messageExpression");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{at}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !VALIDATION_REASONS.contains(&reason)
        {
            errs.push(FieldError::not_supported(
                format!("{at}.reason"),
                reason,
                &VALIDATION_REASONS,
            ));
        }
        let field_path = text("fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{at}.fieldPath"),
                field_path,
                "fieldPath must be non-empty if specified",
            ));
        }
        if newline(field_path) {
            errs.push(FieldError::invalid(
                format!("{at}.fieldPath"),
                field_path,
                "fieldPath must not contain line breaks",
            ));
        }
    }
}

/// `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` (upstream
/// `ValidateCustomResourceDefinitionOpenAPISchema`).
fn list_type(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    if list_type.is_some() && ty != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        errs.push(if ty.is_empty() {
            FieldError::required(format!("{path}.type"), detail)
        } else {
            FieldError::invalid(format!("{path}.type"), ty, detail)
        });
    }
    if let Some(t) = list_type
        && !matches!(t, "atomic" | "set" | "map")
    {
        errs.push(FieldError::not_supported(
            format!("{path}.x-kubernetes-list-type"),
            t,
            &["atomic", "set", "map"],
        ));
    }
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                format!("{path}.x-kubernetes-list-type"),
                detail,
            )),
            Some("map") => {}
            Some(t) => errs.push(FieldError::invalid(
                format!("{path}.x-kubernetes-list-type"),
                t,
                detail,
            )),
        }
    }
    if list_type != Some("map") {
        return;
    }
    if keys.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = schema.get("items").filter(|i| i.is_object()) else {
        errs.push(FieldError::required(
            format!("{path}.items"),
            "must have a schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    let item_type = items.get("type").and_then(Value::as_str).unwrap_or("");
    if item_type != "object" {
        errs.push(FieldError::invalid(
            format!("{path}.items.type"),
            item_type,
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys_value = Value::Array(keys.clone());
    let mut seen = Vec::new();
    for k in keys.iter().filter_map(Value::as_str) {
        match items.pointer(&format!(
            "/properties/{}",
            k.replace('~', "~0").replace('/', "~1")
        )) {
            Some(prop) => {
                if matches!(
                    prop.get("type").and_then(Value::as_str),
                    Some("array" | "object")
                ) {
                    errs.push(FieldError::invalid(
                        format!("{path}.items.properties[{k}].type"),
                        item_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(FieldError::invalid_value(
                format!("{path}.x-kubernetes-list-map-keys"),
                &keys_value,
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k) {
            errs.push(FieldError::invalid_value(
                format!("{path}.x-kubernetes-list-map-keys"),
                &keys_value,
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

/// The resource a CRD serves: the group and plural it claims.
pub fn group_resource(crd: &Value) -> GroupResource {
    GroupResource::new(s(crd, "/spec/group"), s(crd, "/spec/names/plural"))
}

/// The catalog entry of a CRD (its `spec.names`, served versions preferred first, subresources,
/// printer columns, schemas and scale paths of the storage version).
pub fn resource_info(crd: &Value) -> ResourceInfo {
    let group = s(crd, "/spec/group").to_owned();
    let kind = s(crd, "/spec/names/kind").to_owned();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut served: Vec<String> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| s(v, "/name").to_owned())
        .collect();
    served.sort_by(|a, b| compare_versions(b, a));
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| versions.first())
        .cloned()
        .unwrap_or(Value::Null);
    let storage_version = s(&storage, "/name").to_owned();
    let mut subresources = Vec::new();
    let mut scale = None;
    if storage
        .pointer("/subresources/status")
        .is_some_and(|v| !v.is_null())
    {
        subresources.push(Subresource {
            name: "status".into(),
            group: group.clone(),
            version: storage_version.clone(),
            kind: kind.clone(),
            verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        });
    }
    if let Some(sc) = storage
        .pointer("/subresources/scale")
        .filter(|v| v.is_object())
    {
        subresources.push(Subresource {
            name: "scale".into(),
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        });
        scale = Some(ScalePaths {
            spec_replicas: s(sc, "/specReplicasPath").to_owned(),
            status_replicas: s(sc, "/statusReplicasPath").to_owned(),
            label_selector: Some(s(sc, "/labelSelectorPath").to_owned()).filter(|p| !p.is_empty()),
        });
    }
    let printer_columns = storage
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| PrinterColumn {
                    name: s(c, "/name").to_owned(),
                    type_: s(c, "/type").to_owned(),
                    format: s(c, "/format").to_owned(),
                    description: s(c, "/description").to_owned(),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
                    json_path: s(c, "/jsonPath").to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    let schemas = versions
        .iter()
        .filter_map(|v| {
            let schema = v.pointer("/schema/openAPIV3Schema")?;
            Some((s(v, "/name").to_owned(), Arc::new(schema.clone())))
        })
        .collect();
    let singular = match s(crd, "/spec/names/singular") {
        "" => kind.to_ascii_lowercase(),
        x => x.to_owned(),
    };
    let list_kind = match s(crd, "/spec/names/listKind") {
        "" => format!("{kind}List"),
        x => x.to_owned(),
    };
    ResourceInfo {
        group,
        versions: served,
        kind,
        list_kind,
        plural: s(crd, "/spec/names/plural").to_owned(),
        singular,
        scope: if s(crd, "/spec/scope") == "Cluster" {
            Scope::Cluster
        } else {
            Scope::Namespaced
        },
        short_names: strings(crd, "/spec/names/shortNames"),
        categories: strings(crd, "/spec/names/categories"),
        verbs: ALL_VERBS.map(String::from).to_vec(),
        subresources,
        gc_policy: GcPolicy::Background,
        name_rule: NameRule::Dns1123Subdomain,
        graceful: false,
        return_deleted_object: false,
        field_selectors: Vec::new(),
        custom: true,
        printer_columns,
        tracks_generation: true,
        crd: Some(Arc::new(CustomResource {
            schemas,
            scale,
            storage_version,
            conversion_webhook: (s(crd, "/spec/conversion/strategy") == "Webhook")
                .then(|| crd.pointer("/spec/conversion/webhook").cloned())
                .flatten()
                .map(Arc::new),
        })),
    }
}

/// A name conflict with a resource already served in the group, as the naming controller
/// reports it (`NamesAccepted=False`).
pub fn name_conflict(catalog: &Catalog, crd: &Value) -> Option<(&'static str, String)> {
    let info = resource_info(crd);
    let own = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    for other in catalog.resources().filter(|r| r.group == info.group) {
        if format!("{}.{}", other.plural, other.group) == own {
            continue;
        }
        if other.plural == info.plural {
            return Some((
                "PluralConflict",
                format!("{:?} is already in use", info.plural),
            ));
        }
        if other.kind == info.kind {
            return Some(("KindConflict", format!("{:?} is already in use", info.kind)));
        }
        if info
            .short_names
            .iter()
            .any(|n| other.short_names.contains(n))
        {
            return Some((
                "ShortNamesConflict",
                "a short name is already in use".to_owned(),
            ));
        }
    }
    None
}

/// The status the server keeps on a CRD: accepted names, stored versions and the
/// NamesAccepted/Established conditions; `conflict` comes from [`name_conflict`].
pub fn status(crd: &Value, conflict: Option<(&str, String)>, now: &str) -> Value {
    let info = resource_info(crd);
    let storage_version = info
        .crd
        .as_ref()
        .map(|c| c.storage_version.clone())
        .unwrap_or_default();
    let mut stored: Vec<String> = strings(crd, "/status/storedVersions");
    if !stored.contains(&storage_version) {
        stored.push(storage_version);
    }
    let previous = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let keep_time = |t: &str, status: &str| -> String {
        previous
            .iter()
            .find(|c| c["type"] == t && c["status"] == status)
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_owned()
    };
    let mut conditions = Vec::new();
    match conflict {
        None => {
            conditions.push(json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                "message": "no conflicts found", "lastTransitionTime": keep_time("NamesAccepted", "True")}));
            conditions.push(json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted", "lastTransitionTime": keep_time("Established", "True")}));
        }
        Some((reason, message)) => {
            conditions.push(
                json!({"type": "NamesAccepted", "status": "False", "reason": reason,
                "message": message, "lastTransitionTime": keep_time("NamesAccepted", "False")}),
            );
            conditions.push(json!({"type": "Established", "status": "False", "reason": "NotAccepted",
                "message": "not all names are accepted", "lastTransitionTime": keep_time("Established", "False")}));
        }
    }
    if let Some(t) = previous.iter().find(|c| c["type"] == "Terminating") {
        conditions.push(t.clone());
    }
    let mut accepted = json!({"plural": info.plural, "singular": info.singular, "kind": info.kind, "listKind": info.list_kind});
    if !info.short_names.is_empty() {
        accepted["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        accepted["categories"] = json!(info.categories);
    }
    json!({"acceptedNames": accepted, "storedVersions": stored, "conditions": conditions})
}

/// Whether a stored CRD is served: its names were accepted.
pub fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Sets the `Terminating` condition while a CRD's objects are being deleted.
pub fn set_terminating(crd: &mut Value, reason: &str, message: &str, now: &str) {
    if !crd["status"].is_object() {
        crd["status"] = json!({});
    }
    let mut conditions: Vec<Value> = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let existing = conditions.iter_mut().find(|c| c["type"] == "Terminating");
    let cond = json!({"type": "Terminating", "status": "True", "reason": reason, "message": message, "lastTransitionTime": now});
    match existing {
        Some(c) if c["reason"] == reason => {}
        Some(c) => *c = cond,
        None => conditions.push(cond),
    }
    crd["status"]["conditions"] = Value::Array(conditions);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        })
    }

    #[test]
    fn valid_crd_serves_its_names() {
        let crd = widget();
        assert!(
            validate(&crd, None).is_empty(),
            "{:?}",
            validate(&crd, None)
        );
        let info = resource_info(&crd);
        let custom = info.crd.clone().unwrap();
        assert_eq!(info.plural, "widgets");
        assert_eq!(info.singular, "widget");
        assert_eq!(info.list_kind, "WidgetList");
        assert_eq!(info.versions, ["v1", "v1beta1"]);
        assert!(info.custom && info.has_status() && info.subresource("scale").is_some());
        assert_eq!(info.printer_columns[0].json_path, ".spec.size");
        assert_eq!(custom.storage_version, "v1");
        assert_eq!(
            custom.scale.as_ref().unwrap().spec_replicas,
            ".spec.replicas"
        );
        let st = status(&crd, None, "2026-01-01T00:00:00Z");
        assert_eq!(st["acceptedNames"]["kind"], "Widget");
        assert_eq!(st["storedVersions"], json!(["v1"]));
        let mut with_status = crd.clone();
        with_status["status"] = st;
        assert!(is_established(&with_status));
    }

    #[test]
    fn schema_keywords_are_checked_as_upstream_checks_them() {
        let mut crd = widget();
        crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "+"},
            "b": {"type": "array", "uniqueItems": true},
            "c": {"type": "array", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}},
            "d": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}},
            "e": {"type": "string", "x-kubernetes-list-type": "set"},
            "f": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["nope"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        }});
        let got: Vec<String> = validate(&crd, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        let root = "spec.versions[1].schema.openAPIV3Schema.properties";
        for want in [
            format!(
                "{root}[a].pattern: Invalid value: \"+\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`"
            ),
            format!(
                "{root}[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            ),
            format!(
                "{root}[c].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            ),
            format!(
                "{root}[d].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
            ),
            format!(
                "{root}[d].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"
            ),
            format!(
                "{root}[e].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
            ),
            format!(
                "{root}[f].x-kubernetes-list-map-keys: Invalid value: [\"nope\"]: entries must all be names of item properties"
            ),
        ] {
            assert!(got.contains(&want), "missing {want}\nin {got:#?}");
        }
        assert_eq!(got.len(), 7, "{got:#?}");

        let mut rules = widget();
        rules["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self.a > 0", "message": "a\nb"},
            {"rule": "self.a > 0", "reason": "Bogus"},
            {"rule": "self.a > 0", "message": "ok"},
        ]});
        let got: Vec<String> = validate(&rules, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        let at = "spec.versions[1].schema.openAPIV3Schema.x-kubernetes-validations";
        assert_eq!(
            got,
            [
                format!("{at}[0].rule: Required value: rule is not specified"),
                format!(
                    "{at}[1].message: Invalid value: \"a\\nb\": message must not contain line breaks"
                ),
                format!(
                    "{at}[2].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
            ]
        );
    }

    #[test]
    fn invalid_crds_name_the_field() {
        let mut crd = widget();
        crd["metadata"]["name"] = json!("wrong.example.com");
        crd["spec"]["versions"][1]["storage"] = json!(true);
        crd["spec"]["versions"][0]["schema"] = Value::Null;
        let fields: Vec<String> = validate(&crd, None).into_iter().map(|e| e.field).collect();
        assert!(fields.contains(&"metadata.name".to_owned()), "{fields:?}");
        assert!(fields.contains(&"spec.versions".to_owned()), "{fields:?}");
        assert!(
            fields.contains(&"spec.versions[0].schema.openAPIV3Schema".to_owned()),
            "{fields:?}"
        );
        let mut bad_scope = widget();
        bad_scope["spec"]["scope"] = json!("Galaxy");
        assert_eq!(validate(&bad_scope, None)[0].field, "spec.scope");
        assert!(!validate(&bad_scope, Some(&widget())).is_empty());
    }

    #[test]
    fn conflicts_with_served_names() {
        let mut catalog = Catalog::builtin();
        let crd = widget();
        assert_eq!(name_conflict(&catalog, &crd), None);
        catalog.insert(resource_info(&crd));
        assert_eq!(
            name_conflict(&catalog, &crd),
            None,
            "a CRD never conflicts with itself"
        );
        let mut other = widget();
        other["metadata"]["name"] = json!("gadgets.example.com");
        other["spec"]["names"] = json!({"plural": "gadgets", "kind": "Widget"});
        assert_eq!(
            name_conflict(&catalog, &other).map(|c| c.0),
            Some("KindConflict")
        );
        let st = status(&other, name_conflict(&catalog, &other), "t");
        let mut with_status = other.clone();
        with_status["status"] = st;
        assert!(!is_established(&with_status));
    }
}
