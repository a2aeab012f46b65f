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

    /// Evaluates it, its cost taken from `budget` (see [`kgc_cel::Program::evaluate_within`]);
    /// an error is worded as upstream's CEL filter words it (`expression 'x' resulted in error:
    /// …`, or the spent budget's own words).
    pub fn evaluate(&self, input: &[(&str, Cel)], budget: &Budget) -> Result<Cel, String> {
        let program = self.program.as_ref().map_err(Clone::clone)?;
        let mut left = budget.0.get();
        let result = program.evaluate_within(input, &mut left);
        budget.0.set(left);
        result.map_err(|e| match e {
            kgc_cel::Error::OutOfBudget => e.to_string(),
            e => format!("expression '{}' resulted in error: {e}", self.source),
        })
    }

    /// Evaluates a condition that must be a bool.
    pub fn evaluate_bool(&self, input: &[(&str, Cel)], budget: &Budget) -> Result<bool, String> {
        match self.evaluate(input, budget)? {
            Cel::Bool(b) => Ok(b),
            other => Err(format!(
                "expression '{}' resulted in error: no such overload: expected a bool, got {}",
                self.source,
                kgc_cel::value::to_json(&other)
            )),
        }
    }
}

/// What the expressions evaluated for one request may still cost together (upstream's
/// `remainingBudget` through `ForInput`): a webhook's or a binding's `matchConditions` get
/// `RuntimeCELCostBudgetMatchConditions`, a policy's other expressions `RuntimeCELCostBudget`
/// for each binding and param.
pub(crate) struct Budget(std::cell::Cell<u64>);

impl Budget {
    pub fn new(total: u64) -> Self {
        Self(std::cell::Cell::new(total))
    }

    /// Nothing left: every further evaluation is refused.
    pub fn spent(&self) -> bool {
        self.0.get() == 0
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
        let budget = Budget::new(kgc_cel::RUNTIME_COST_BUDGET_MATCH_CONDITIONS);
        let mut errors = Vec::new();
        for c in &self.conditions {
            match c.evaluate_bool(input, &budget) {
                Ok(false) => return Matched::No,
                Ok(true) => {}
                // No further condition is evaluated: the outcome is that error.
                Err(e) if budget.spent() => return Matched::Failed(e),
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

    /// A condition too dear for one call fails as cel-go cancels it; conditions that together
    /// spend the budget end the evaluation with the budget's error.
    #[test]
    fn conditions_are_bounded_in_cost() {
        let items: Vec<i64> = (0..2_000).collect();
        let small: Vec<i64> = (0..300).collect();
        let input = input(
            &json!({}),
            Some(&json!({"items": items, "small": small})),
            None,
        );
        let dear = "object.items.all(x, object.items.all(y, x + y >= 0))";
        assert_eq!(
            matcher(&[dear]).evaluate(&input),
            Matched::Failed(format!(
                "expression '{dear}' resulted in error: operation cancelled: actual cost limit exceeded"
            ))
        );
        // Each well under the per-call limit; twenty are more than 2,500,000.
        let sizeable = "object.small.all(x, object.small.all(y, x + y >= 0))";
        let many = [sizeable; 20];
        assert_eq!(
            matcher(&many).evaluate(&input),
            Matched::Failed(
                "validation failed due to running out of cost budget, no further validation rules will be run".into()
            )
        );
        assert_eq!(matcher(&[sizeable]).evaluate(&input), Matched::Yes);
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
