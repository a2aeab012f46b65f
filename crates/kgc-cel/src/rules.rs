//! A CRD's `x-kubernetes-validations` rules (apiextensions-apiserver
//! `pkg/apiserver/schema/cel/compilation.go` and `validation.go`): compiled and priced when
//! the CRD is written ([`check`]), run on every write of its custom resources ([`Validator`]).
//!
//! A rule sees its own value as `self` and, on an update where the old object has the same
//! place, the old value as `oldSelf` (a *transition rule*, which only runs then, unless
//! `optionalOldSelf` makes `oldSelf` an `optional`). Old and new values are correlated through
//! object properties, map values and the items of `x-kubernetes-list-type: map` lists (by
//! their keys), as upstream does; other list items have no old value.

use std::collections::BTreeMap;

use kgc_meta::FieldError;
use kgc_meta::gojson::go_quote;
use kgc_meta::validation::FieldErrorKind;
use serde_json::Value;

use crate::value::{optional, to_cel};
use crate::{
    Error, Program, RUNTIME_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT,
    STATIC_ESTIMATED_CRD_COST_LIMIT, Shape,
};

/// The variables a rule may read.
const RULE_VARIABLES: [&str; 2] = ["self", "oldSelf"];

/// How many of the most expensive rules upstream names when the schema's total is too high.
const MOST_EXPENSIVE: usize = 4;

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    program: Program,
    message_expression: Option<Program>,
    message: String,
    reason: String,
    field_path: String,
    optional_old_self: bool,
}

/// The compiled rules of one schema node and of the nodes below it that have any.
#[derive(Debug, Default)]
struct Node {
    schema: Value,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
}

/// The rules of one version's schema, compiled once and run on every write.
#[derive(Debug, Default)]
pub struct Validator {
    root: Option<Node>,
}

fn text<'a>(rule: &'a Value, key: &str) -> &'a str {
    rule.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Go's `%#v` of the internal `apiextensions.ValidationRule`, which upstream shows as the
/// invalid value of a rule that does not compile. Go prints a set pointer as its address,
/// which has no meaning here: a fixed one stands in for it.
fn go_rule(rule: &Value) -> String {
    let pointer = |key: &str, ty: &str| match rule.get(key) {
        None | Some(Value::Null) => format!("(*{ty})(nil)"),
        Some(_) => format!("(*{ty})(0xc000000000)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        go_quote(text(rule, "rule")),
        go_quote(text(rule, "message")),
        go_quote(text(rule, "messageExpression")),
        pointer("reason", "apiextensions.FieldValueErrorReason"),
        go_quote(text(rule, "fieldPath")),
        pointer("optionalOldSelf", "bool"),
    )
}

/// `detail` as upstream's `getCostErrorMessage` words an estimate over its limit.
fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// A rule's estimated cost at one place of the schema: its cost per call, times how many
/// times it may run for one object.
struct Priced {
    path: String,
    total: u64,
}

/// Compiles and prices every rule of a version's schema, as kube-apiserver does when the CRD
/// is written; `path` names the schema (`spec.versions[0].schema.openAPIV3Schema`). A rule that
/// does not compile, or whose estimated cost is over `StaticEstimatedCostLimit`, is an error
/// on its field; rules whose costs, times how often each may run, add up to more than
/// `StaticEstimatedCRDCostLimit` are errors on the most expensive of them and on the schema.
pub fn check(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut priced = Vec::new();
    check_node(schema, path, 1, &mut errs, &mut priced);
    let total = priced
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.total));
    if total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        priced.sort_by_key(|p| std::cmp::Reverse(p.total));
        for p in priced.iter().take(MOST_EXPENSIVE) {
            errs.push(FieldError::forbidden(
                p.path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(FieldError::forbidden(
            path,
            cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    errs
}

fn check_node(
    schema: &Value,
    path: &str,
    cardinality: u64,
    errs: &mut Vec<FieldError>,
    priced: &mut Vec<Priced>,
) {
    let rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array);
    if let Some(rules) = rules {
        let shape = Shape::of_schema(schema);
        let shapes = [("self", shape.clone()), ("oldSelf", shape)];
        for (i, rule) in rules.iter().enumerate() {
            let at = format!("{path}.x-kubernetes-validations[{i}]");
            let source = text(rule, "rule");
            if source.trim().is_empty() {
                continue; // kgc-meta's shape check already refused it.
            }
            match Program::compile(source, &RULE_VARIABLES) {
                Err(e) => errs.push(invalid_rule(format!("{at}.rule"), rule, e)),
                Ok(program) => {
                    let cost = program.estimate(&shapes);
                    if cost > STATIC_ESTIMATED_COST_LIMIT {
                        errs.push(FieldError::forbidden(
                            format!("{at}.rule"),
                            cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                        ));
                    }
                    priced.push(Priced {
                        path: format!("{at}.rule"),
                        total: cost.saturating_mul(cardinality),
                    });
                }
            }
            let message_expression = text(rule, "messageExpression");
            if !message_expression.trim().is_empty() {
                match Program::compile(message_expression, &RULE_VARIABLES) {
                    Err(e) => errs.push(invalid_rule(format!("{at}.messageExpression"), rule, e)),
                    Ok(program) => {
                        let cost = program.estimate(&shapes);
                        if cost > STATIC_ESTIMATED_COST_LIMIT {
                            errs.push(FieldError::forbidden(
                                format!("{at}.messageExpression"),
                                cost_message(
                                    "estimated messageExpression cost",
                                    cost,
                                    STATIC_ESTIMATED_COST_LIMIT,
                                ),
                            ));
                        }
                        priced.push(Priced {
                            path: format!("{at}.messageExpression"),
                            total: cost.saturating_mul(cardinality),
                        });
                    }
                }
            }
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            check_node(
                v,
                &format!("{path}.properties[{k}]"),
                cardinality,
                errs,
                priced,
            );
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let n = Shape::of_schema(schema).max_size.max(1);
        check_node(
            items,
            &format!("{path}.items"),
            cardinality.saturating_mul(n),
            errs,
            priced,
        );
    }
    if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let n = Shape::of_schema(schema).max_size.max(1);
        let at = format!("{path}.additionalProperties");
        check_node(add, &at, cardinality.saturating_mul(n), errs, priced);
    }
}

/// `<field>: Invalid value: apiextensions.ValidationRule{…}: compilation failed: …`.
fn invalid_rule(field: String, rule: &Value, error: Error) -> FieldError {
    let detail = match (&error, field.ends_with("messageExpression")) {
        (Error::Compile(e), true) => format!("messageExpression compilation failed: {e}"),
        _ => error.to_string(),
    };
    FieldError {
        kind: FieldErrorKind::Invalid,
        field,
        value: Some(go_rule(rule)),
        detail,
    }
}

impl Validator {
    /// Compiles the rules of a version's schema. A rule that does not compile is left out: the
    /// CRD's admission ([`check`]) refuses such rules, so only a CRD stored before could have
    /// one.
    pub fn new(schema: &Value) -> Self {
        Self {
            root: compile_node(schema),
        }
    }

    /// Whether the schema has no rule at all (most CRDs): nothing to run.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Runs every rule on `obj` (with `old`, the stored object, on an update); each failure is
    /// an error on the rule's place, as kube-apiserver words it.
    ///
    /// On an update, failures are ratcheted as upstream's `CRDValidationRatcheting` does
    /// (apiextensions-apiserver `pkg/apiserver/schema/cel/validation.go`,
    /// `shouldRatchetError`): a rule that does not read `oldSelf`, failing on a value equal to
    /// its old value (or, where the value has no old one of its own, inside an unchanged
    /// ancestor), is a warning (the second list, its error's text) rather than an error.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> (Vec<FieldError>, Vec<String>) {
        let mut out = Outcome::default();
        if let Some(root) = &self.root {
            let mut budget = RUNTIME_COST_BUDGET;
            let unchanged = old == Some(obj);
            // Upstream passes a nil field path for the root, which prints as `<nil>`.
            let _ = validate_node(root, obj, old, unchanged, "", &mut budget, &mut out);
        }
        (out.errors, out.warnings)
    }
}

/// What the rules found: errors, and the ratcheted failures as warnings.
#[derive(Default)]
struct Outcome {
    errors: Vec<FieldError>,
    warnings: Vec<String>,
}

impl Outcome {
    fn push(&mut self, e: FieldError, ratcheted: bool) {
        if ratcheted {
            self.warnings.push(e.to_string());
        } else {
            self.errors.push(e);
        }
    }
}

fn compile_node(schema: &Value) -> Option<Node> {
    let rules: Vec<Rule> = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| {
            let program = Program::compile(text(rule, "rule"), &RULE_VARIABLES).ok()?;
            let message_expression = Some(text(rule, "messageExpression"))
                .filter(|m| !m.trim().is_empty())
                .and_then(|m| Program::compile(m, &RULE_VARIABLES).ok());
            Some(Rule {
                program,
                message_expression,
                message: text(rule, "message").to_owned(),
                reason: text(rule, "reason").to_owned(),
                field_path: text(rule, "fieldPath").to_owned(),
                optional_old_self: rule.get("optionalOldSelf").and_then(Value::as_bool)
                    == Some(true),
            })
        })
        .collect();
    let properties: BTreeMap<String, Node> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), compile_node(v)?)))
        .collect();
    let items = schema
        .get("items")
        .filter(|i| i.is_object())
        .and_then(compile_node)
        .map(Box::new);
    let additional = schema
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .and_then(compile_node)
        .map(Box::new);
    if rules.is_empty() && properties.is_empty() && items.is_none() && additional.is_none() {
        return None;
    }
    // Only what the values need to be read as CEL reads them, not the whole subtree twice.
    Some(Node {
        schema: schema.clone(),
        rules,
        properties,
        items,
        additional,
    })
}

/// The budget ran out: upstream stops running rules for the whole object.
struct OutOfBudget;

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

/// `unchanged`: whether this value equals its old one, or, having none of its own, is inside
/// an unchanged ancestor (what ratchets its rules' failures).
fn validate_node(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    unchanged: bool,
    path: &str,
    budget: &mut u64,
    errs: &mut Outcome,
) -> Result<(), OutOfBudget> {
    if value.is_null() {
        return Ok(());
    }
    let ty = node
        .schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("");
    for rule in &node.rules {
        run_rule(
            rule,
            &node.schema,
            ty,
            value,
            old,
            unchanged,
            path,
            budget,
            errs,
        )?;
    }
    match value {
        Value::Object(map) => {
            for (k, child_node) in &node.properties {
                if let Some(v) = map.get(k) {
                    let o = old.and_then(|o| o.get(k));
                    let same = o.map_or(unchanged, |o| o == v);
                    validate_node(child_node, v, o, same, &child(path, k), budget, errs)?;
                }
            }
            if let Some(add) = &node.additional {
                for (k, v) in map {
                    if node.properties.contains_key(k) {
                        continue;
                    }
                    let o = old.and_then(|o| o.get(k));
                    let same = o.map_or(unchanged, |o| o == v);
                    let at = format!("{}[{k}]", shown(path));
                    validate_node(add, v, o, same, &at, budget, errs)?;
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                let old_items = old.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
                for (i, item) in items.iter().enumerate() {
                    let o = kgc_meta::schema::correlated_item(item, old_items, &node.schema);
                    let same = o.map_or(unchanged, |o| o == item);
                    let at = format!("{}[{i}]", shown(path));
                    validate_node(item_node, item, o, same, &at, budget, errs)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_rule(
    rule: &Rule,
    schema: &Value,
    ty: &str,
    value: &Value,
    old: Option<&Value>,
    unchanged: bool,
    path: &str,
    budget: &mut u64,
    errs: &mut Outcome,
) -> Result<(), OutOfBudget> {
    let transition = rule.program.uses("oldSelf");
    // Only a rule's false result is ratcheted (`addErr`); errors and costs are not.
    let ratcheted = unchanged && !transition;
    if transition && old.is_none() && !rule.optional_old_self {
        return Ok(());
    }
    let here = shown(path);
    let invalid = |detail: String| FieldError::invalid(here.clone(), ty, detail);
    let shapes = [
        ("self", Shape::of_value(value)),
        ("oldSelf", old.map(Shape::of_value).unwrap_or_default()),
    ];
    match rule.program.charge(&shapes, budget) {
        Ok(()) => {}
        Err(Error::CostLimit) => {
            errs.push(
                invalid(format!(
                    "call cost exceeds limit for rule: {}",
                    rule.program.source().trim()
                )),
                false,
            );
            return Ok(());
        }
        Err(e) => {
            errs.push(invalid(e.to_string()), false);
            return Err(OutOfBudget);
        }
    }
    let old_cel = old.map(|o| to_cel(o, Some(schema)));
    let old_var = if rule.optional_old_self {
        optional(old_cel)
    } else {
        old_cel.unwrap_or(cel::Value::Null)
    };
    let vars = [("self", to_cel(value, Some(schema))), ("oldSelf", old_var)];
    match rule.program.evaluate(&vars) {
        Ok(cel::Value::Bool(true)) => {}
        Ok(cel::Value::Bool(false)) => {
            let message = rule
                .message_expression
                .as_ref()
                .and_then(|m| match m.evaluate(&vars) {
                    Ok(cel::Value::String(s)) if !s.trim().is_empty() => Some(s.to_string()),
                    _ => None,
                })
                .or_else(|| Some(rule.message.clone()).filter(|m| !m.is_empty()))
                .unwrap_or_else(|| format!("failed rule: {}", rule.program.source().trim()));
            let field = field_path(path, &rule.field_path);
            let e = match rule.reason.as_str() {
                "FieldValueForbidden" => FieldError::forbidden(field, message),
                "FieldValueRequired" => FieldError::required(field, message),
                "FieldValueDuplicate" => FieldError::duplicate(field, ty),
                _ => FieldError::invalid(field, ty, message),
            };
            errs.push(e, ratcheted);
        }
        Ok(other) => errs.push(
            invalid(format!(
                "rule did not evaluate to a boolean: {} evaluating rule: {}",
                crate::value::to_json(&other),
                rule.program.source().trim()
            )),
            false,
        ),
        Err(e) => errs.push(
            invalid(format!(
                "{e} evaluating rule: {}",
                rule.program.source().trim()
            )),
            false,
        ),
    }
    Ok(())
}

/// The error's field: the rule's place, then its `fieldPath` (`.spec.x`, `['a.b']`, `[0]`).
fn field_path(path: &str, field_path: &str) -> String {
    if field_path.is_empty() {
        return shown(path);
    }
    let mut out = path.to_owned();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = child(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out = child(&out, &r[..end]);
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            out = format!("{}[{}]", shown(&out), &r[..end]);
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            out = child(&out, rest);
            break;
        }
    }
    shown(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.replicas >= oldSelf.replicas",
             "messageExpression": "'replicas may not shrink from ' + string(oldSelf.replicas)"},
            {"rule": "self.name.startsWith('a')", "fieldPath": ".name",
             "reason": "FieldValueForbidden"},
        ],
        "properties": {
            "min": {"type": "integer"}, "max": {"type": "integer"},
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 10},
            "tags": {"type": "array", "maxItems": 5,
                     "items": {"type": "string", "maxLength": 5,
                               "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}}
        }}}})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rules_report_on_their_place_as_kube_apiserver_words_it() {
        let v = Validator::new(&schema());
        let obj = json!({"spec": {"min": 3, "max": 1, "replicas": 1, "name": "b",
                                  "tags": ["ok", "bad"]}});
        assert_eq!(
            messages(&v.validate(&obj, None).0),
            [
                "spec: Invalid value: \"object\": min must not exceed max",
                "spec.name: Forbidden: failed rule: self.name.startsWith('a')",
                "spec.tags[1]: Invalid value: \"string\": failed rule: self != 'bad'",
            ]
        );
        let old = json!({"spec": {"min": 1, "max": 1, "replicas": 3, "name": "a"}});
        let new = json!({"spec": {"min": 1, "max": 1, "replicas": 2, "name": "a"}});
        assert_eq!(
            messages(&v.validate(&new, Some(&old)).0),
            ["spec: Invalid value: \"object\": replicas may not shrink from 3"]
        );
    }

    /// validation.go `shouldRatchetError`: an unchanged value's failed rule is a warning, an
    /// atomic list's items follow their list, a transition rule is never ratcheted.
    #[test]
    fn unchanged_values_ratchet_their_failures_into_warnings() {
        let v = Validator::new(&schema());
        let old =
            json!({"spec": {"min": 3, "max": 1, "replicas": 1, "name": "b", "tags": ["bad"]}});
        let (errs, warnings) = v.validate(&old, Some(&old));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            warnings,
            [
                "spec: Invalid value: \"object\": min must not exceed max",
                "spec.name: Forbidden: failed rule: self.name.startsWith('a')",
                "spec.tags[0]: Invalid value: \"string\": failed rule: self != 'bad'",
            ]
        );
        // spec changed (replicas), so its rules fail again; its tags did not.
        let new =
            json!({"spec": {"min": 3, "max": 1, "replicas": 0, "name": "b", "tags": ["bad"]}});
        let (errs, warnings) = v.validate(&new, Some(&old));
        assert_eq!(
            messages(&errs),
            [
                "spec: Invalid value: \"object\": min must not exceed max",
                "spec: Invalid value: \"object\": replicas may not shrink from 1",
                "spec.name: Forbidden: failed rule: self.name.startsWith('a')",
            ]
        );
        assert_eq!(
            warnings,
            ["spec.tags[0]: Invalid value: \"string\": failed rule: self != 'bad'"]
        );
    }

    #[test]
    fn evaluation_errors_name_the_rule() {
        let v = Validator::new(&schema());
        let obj = json!({"spec": {"max": 1, "replicas": 1, "name": "a"}});
        assert_eq!(
            messages(&v.validate(&obj, None).0),
            [
                "spec: Invalid value: \"object\": no such key: min evaluating rule: self.min <= self.max"
            ]
        );
    }

    #[test]
    fn crds_with_bad_or_expensive_rules_are_refused() {
        assert!(
            check(&schema(), "s").is_empty(),
            "{:?}",
            check(&schema(), "s")
        );
        let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.x >"}]});
        let errs = messages(&check(&bad, "s"));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("s.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.x >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"),
            "{}",
            errs[0]
        );
        let nested = json!({"type": "object", "properties": {"l": {
            "type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}});
        let errs = messages(&check(&nested, "s"));
        assert!(
            errs.contains(&"s.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)".to_owned()),
            "{errs:?}"
        );
        let undeclared =
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "other == 1"}]});
        assert_eq!(check(&undeclared, "s").len(), 1);
    }

    #[test]
    fn optional_old_self_runs_on_create() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self.v >= oldSelf.value().v", "optionalOldSelf": true,
             "message": "v may only grow"}],
            "properties": {"v": {"type": "integer"}}});
        let v = Validator::new(&schema);
        assert!(v.validate(&json!({"v": 1}), None).0.is_empty());
        assert_eq!(
            messages(&v.validate(&json!({"v": 1}), Some(&json!({"v": 2}))).0),
            ["<nil>: Invalid value: \"object\": v may only grow"]
        );
    }

    #[test]
    fn field_paths_join_the_rule_s_place() {
        assert_eq!(field_path("spec", ".a.b"), "spec.a.b");
        assert_eq!(field_path("spec", "['x.y']"), "spec.x.y");
        assert_eq!(field_path("", ".l[2]"), "l[2]");
    }
}
