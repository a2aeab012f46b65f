//! `matchConditions`: CEL expressions that decide whether an admission webhook is called or a
//! ValidatingAdmissionPolicy applies (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go`).
//!
//! Any condition false: no match, whatever the others did. Otherwise any evaluation error
//! makes the outcome an error, which the caller's `failurePolicy` turns into a refusal (Fail)
//! or no match (Ignore). All true: a match.

use kgc_cel::{Program, Value as Cel};
use serde_json::Value;

/// One compiled expression and its source; one that does not compile (stored before
/// validation refused it) fails every evaluation with its compile error.
pub(crate) struct Expression {
    source: String,
    program: Result<Program, String>,
}

impl Expression {
    pub fn compile(source: &str, variables: &[&str]) -> Self {
        Self {
            source: source.to_owned(),
            program: Program::compile(source, variables).map_err(|e| e.to_string()),
        }
    }

    /// Evaluates it; an error is worded as upstream's CEL filter words it (`expression 'x'
    /// resulted in error: …`).
    pub fn evaluate(&self, input: &[(&str, Cel)]) -> Result<Cel, String> {
        let program = self.program.as_ref().map_err(Clone::clone)?;
        program
            .evaluate(input)
            .map_err(|e| format!("expression '{}' resulted in error: {e}", self.source))
    }

    /// Evaluates a condition that must be a bool.
    pub fn evaluate_bool(&self, input: &[(&str, Cel)]) -> Result<bool, String> {
        match self.evaluate(input)? {
            Cel::Bool(b) => Ok(b),
            other => Err(format!(
                "expression '{}' resulted in error: no such overload: expected a bool, got {}",
                self.source,
                kgc_cel::value::to_json(&other)
            )),
        }
    }
}

/// How a request met the conditions.
#[derive(Debug, PartialEq)]
pub(crate) enum Matched {
    Yes,
    No,
    /// Some evaluation failed and none was false: the errors, aggregated as upstream's
    /// `utilerrors.NewAggregate` prints them.
    Failed(String),
}

/// The compiled `matchConditions` of one webhook or policy.
#[derive(Default)]
pub(crate) struct Matcher {
    conditions: Vec<Expression>,
}

impl Matcher {
    /// `conditions` is the `matchConditions` list; `variables` what they may read.
    pub fn from_json(conditions: &Value, variables: &[&str]) -> Self {
        Self {
            conditions: conditions
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    Expression::compile(c["expression"].as_str().unwrap_or_default(), variables)
                })
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    pub fn evaluate(&self, input: &[(&str, Cel)]) -> Matched {
        let mut errors = Vec::new();
        for c in &self.conditions {
            match c.evaluate_bool(input) {
                Ok(false) => return Matched::No,
                Ok(true) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Matched::Yes,
            1 => Matched::Failed(errors.remove(0)),
            _ => Matched::Failed(format!("[{}]", errors.join(", "))),
        }
    }
}

/// The variables every admission expression reads: `object` and `oldObject` (null when the
/// operation has none), `request`, the AdmissionReview's request without its objects, and
/// `authorizer` (with `authorizer.requestResource`) for the request's user.
pub(crate) fn input(
    request: &Value,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> Vec<(&'static str, Cel)> {
    let mut request = request.clone();
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    let cel = |v: Option<&Value>| v.map_or(Cel::Null, |v| kgc_cel::value::to_cel(v, None));
    let mut input = vec![
        ("object", cel(obj)),
        ("oldObject", cel(old)),
        ("request", cel(Some(&request))),
    ];
    input.extend(crate::authz::cel_variables(&request));
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matcher(exprs: &[&str]) -> Matcher {
        let list: Vec<Value> = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
            .collect();
        Matcher::from_json(&Value::Array(list), &kgc_cel::WEBHOOK_VARIABLES)
    }

    #[test]
    fn false_wins_then_errors_then_true() {
        let obj = json!({"metadata": {"name": "a", "labels": {"skip": "yes"}}});
        let input = input(&json!({"operation": "CREATE"}), Some(&obj), None);
        assert_eq!(matcher(&[]).evaluate(&input), Matched::Yes);
        assert_eq!(
            matcher(&["request.operation == 'CREATE'", "oldObject == null"]).evaluate(&input),
            Matched::Yes
        );
        assert_eq!(
            matcher(&["object.nope == 1", "!has(object.metadata.labels.skip)"]).evaluate(&input),
            Matched::No
        );
        assert_eq!(
            matcher(&["object.nope == 1", "true"]).evaluate(&input),
            Matched::Failed(
                "expression 'object.nope == 1' resulted in error: no such key: nope".into()
            )
        );
        assert_eq!(
            matcher(&["object.nope == 1", "1"]).evaluate(&input),
            Matched::Failed("[expression 'object.nope == 1' resulted in error: no such key: nope, expression '1' resulted in error: no such overload: expected a bool, got 1]".into())
        );
    }

    /// Without authorization (no RBAC in scope) every check is allowed, as upstream's
    /// `AlwaysAllow`; `authorizer.requestResource` is the request's own resource.
    #[test]
    fn authorizer_checks_without_authorization_allow() {
        let request = json!({"operation": "CREATE", "resource": {"group": "apps", "version": "v1", "resource": "deployments"}, "namespace": "ns", "name": "web"});
        let input = input(&request, Some(&json!({})), None);
        assert_eq!(
            matcher(&[
                "authorizer.group('').resource('pods').namespace('ns').check('create').allowed()",
                "authorizer.requestResource.check('update').allowed()",
                "authorizer.path('/healthz').check('get').reason() == ''",
            ])
            .evaluate(&input),
            Matched::Yes
        );
    }
}
