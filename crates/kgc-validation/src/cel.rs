//! CEL expressions in admission configuration (webhooks' `matchConditions`,
//! ValidatingAdmissionPolicy), checked as kubernetes/kubernetes
//! `pkg/apis/admissionregistration/validation/validation.go` checks them: each compiles with
//! the variables its place declares and, where a bool is wanted, evaluates to one.

use kgc_cel::Program;
use serde_json::Value;

use crate::field::{Errors, Path};
use crate::json::Json;

/// The most `matchConditions` a webhook or policy may have.
const MAX_MATCH_CONDITIONS: usize = 64;

/// What an expression must evaluate to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Returns {
    Bool,
    String,
    Any,
}

/// Compiles `expression` with `variables` and reports what upstream's compiler would refuse
/// (`compilation failed: ERROR: …`, `must evaluate to bool`).
pub(crate) fn expression(
    expression: &str,
    variables: &[&str],
    returns: Returns,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let program = match Program::compile(expression, variables) {
        Ok(p) => p,
        Err(e) => {
            errs.invalid(*path, expression, e.to_string());
            return;
        }
    };
    let wanted = match returns {
        Returns::Bool => "bool",
        Returns::String => "string",
        Returns::Any => return,
    };
    if let Some(t) = program.obvious_type()
        && t != wanted
    {
        errs.invalid(*path, expression, format!("must evaluate to {wanted}"));
    }
}

/// `matchConditions` (`validateMatchConditions`): at most 64, each with a unique qualified
/// name and a bool expression over `variables`.
pub(crate) fn match_conditions(
    obj: &Value,
    variables: &[&str],
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let conditions = obj.list("matchConditions");
    let root = path.child("matchConditions");
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.too_many(root, conditions.len(), MAX_MATCH_CONDITIONS);
    }
    let mut names = std::collections::HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = root.index(i);
        let expr = c.str_of("expression").trim();
        if expr.is_empty() {
            errs.required(p.child("expression"), "");
        } else {
            expression(expr, variables, Returns::Bool, &p.child("expression"), errs);
        }
        let name = c.str_of("name");
        if name.is_empty() {
            errs.required(p.child("name"), "");
        } else {
            errs.invalid_each(
                p.child("name"),
                name,
                kgc_meta::validation::is_qualified_name(name),
            );
            if !names.insert(name) {
                errs.duplicate(p.child("name"), name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(conditions: Value) -> Vec<String> {
        let mut e = Errors::default();
        match_conditions(
            &json!({"matchConditions": conditions}),
            &["object", "oldObject", "request", "authorizer"],
            &Path::new("webhooks").index(0),
            &mut e,
        );
        e.into_vec().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn conditions_as_upstream_checks_them() {
        assert!(run(json!([{"name": "a", "expression": "object.x == 1"}])).is_empty());
        assert_eq!(
            run(json!([
                {"name": "a", "expression": "'x'"},
                {"name": "a", "expression": "object.x =="},
                {"name": "b/c/d", "expression": "authorizer.group('').resource('pods').check('get').allowed()"},
                {"name": "", "expression": " "},
            ])),
            vec![
                "webhooks[0].matchConditions[0].expression: Invalid value: \"'x'\": must evaluate to bool",
                "webhooks[0].matchConditions[1].expression: Invalid value: \"object.x ==\": compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n| object.x ==\n| ...........^",
                "webhooks[0].matchConditions[1].name: Duplicate value: \"a\"",
                "webhooks[0].matchConditions[2].name: Invalid value: \"b/c/d\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                "webhooks[0].matchConditions[3].expression: Required value",
                "webhooks[0].matchConditions[3].name: Required value",
            ]
        );
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
            .collect();
        assert_eq!(
            run(Value::Array(many)),
            vec!["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]
        );
    }
}
