//! The ValidatingAdmissionPolicy admission plugin (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating`: `dispatcher.go`,
//! `validator.go`, and `policy/generic` for params).
//!
//! A policy applies to a request when its `matchConstraints` match and a binding of it does
//! (its `matchResources`, if any); then its `matchConditions`, and for each param the binding
//! selects, its `variables` and `validations`. A failed validation is acted on by the
//! binding's `validationActions`: `Deny` refuses the request (the first refusal is the
//! answer), `Warn` adds a warning, `Audit` records the failure in the request's audit event
//! (`validation.policy.admission.k8s.io/validation_failure`). Errors (an expression failing, a
//! param missing under `parameterNotFoundAction: Deny`) follow the policy's `failurePolicy`.
//! `auditAnnotations` go into the audit event as `<policy>/<key>`, and `authorizer` asks RBAC about
//! the requesting user (`authz::cel_variables`).

mod audit;
mod compiled;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kgc_cel::Value as Cel;
use kgc_meta::status::Cause;
use kgc_meta::{GroupResource, Reason, Status};
use kgc_store::ListOptions;
use serde_json::Value;

use crate::matchconditions::{self, Budget, Matched};
use crate::webhook::config::{Cached, read_cached};
use crate::webhook::{Call, Webhooks, in_version, review};
use compiled::{Binding, CompiledPolicies, ParamRef, Policy};

/// The longest message a `messageExpression` may give (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The policies and bindings in the store, compiled, re-read when either changes.
pub(crate) struct Policies {
    store: kgc_store::Store,
    policies: Mutex<Option<Cached<CompiledPolicies>>>,
    bindings: Mutex<Option<Cached<Vec<Binding>>>>,
}

/// A refusal: the policy, the binding, the message and its reason.
struct Denial {
    policy: String,
    binding: String,
    message: String,
    reason: String,
}

impl Policies {
    pub fn new(store: kgc_store::Store) -> Self {
        Self {
            store,
            policies: Mutex::new(None),
            bindings: Mutex::new(None),
        }
    }

    fn current(&self) -> (Arc<CompiledPolicies>, Arc<Vec<Binding>>) {
        let gr = |r| GroupResource::new("admissionregistration.k8s.io", r);
        let policies = read_cached(
            &self.store,
            &self.policies,
            &gr("validatingadmissionpolicies"),
            CompiledPolicies::build,
        );
        let bindings = read_cached(
            &self.store,
            &self.bindings,
            &gr("validatingadmissionpolicybindings"),
            |objects, _| compiled::bindings(objects),
        );
        (policies, bindings)
    }

    /// Whether a bound policy's rules name this request (before its objects are looked at).
    pub fn applies(&self, call: &Call<'_>) -> bool {
        let (policies, bindings) = self.current();
        if bindings.is_empty() {
            return false;
        }
        let catalog = self.store.catalog();
        let target = call.target(&call.req.version);
        let name = call.req.name.as_deref().unwrap_or_default();
        bindings.iter().any(|b| {
            policies
                .0
                .get(&b.policy)
                .is_some_and(|p| p.constraints.rules_match(&catalog, &target, name).is_some())
        })
    }

    /// Runs every bound policy over a write of `obj` (absent on DELETE) over `old` (absent on
    /// CREATE), both in the storage version. Returns the warnings; the error is the refusal.
    pub fn validate(
        &self,
        call: &Call<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
        ns_labels: Option<&BTreeMap<String, String>>,
    ) -> Result<Vec<String>, Status> {
        let (policies, bindings) = self.current();
        let mut warnings = Vec::new();
        if bindings.is_empty() {
            return Ok(warnings);
        }
        let catalog = self.store.catalog();
        let target = call.target(&call.req.version);
        let name = call.name(obj, old);
        let mut denials = Vec::new();
        let namespace = self.namespace_object(call);
        let user = crate::authn::current_user();
        for binding in bindings.iter() {
            let Some(policy) = policies.0.get(&binding.policy) else {
                continue;
            };
            let Some(version) = policy
                .constraints
                .matches(&catalog, &target, name, ns_labels, obj, old)
            else {
                continue;
            };
            if let Some(c) = &binding.constraints
                && c.matches(&catalog, &target, name, ns_labels, obj, old)
                    .is_none()
            {
                continue;
            }
            let mut deny = |message: String, reason: &str| {
                denials.push(Denial {
                    policy: policy.name.clone(),
                    binding: binding.name.clone(),
                    message,
                    reason: reason.to_owned(),
                });
            };
            let params = match self.params(policy, binding, call) {
                Ok(p) => p,
                Err(e) => {
                    if policy.fail {
                        deny(format!("failed to configure binding: {e}"), "");
                    }
                    continue;
                }
            };
            let versioned = obj.map(|o| in_version(call, &version, o));
            let old_versioned = old.map(|o| in_version(call, &version, o));
            let request = review::request(&Webhooks::review_request(
                call,
                &version,
                "",
                user.as_deref(),
                None,
                None,
            ));
            let base = matchconditions::input(&request, versioned.as_ref(), old_versioned.as_ref());
            let mut annotations = audit::Collector::default();
            for param in params {
                let mut input = base.clone();
                input.push(("params", to_cel(param.as_ref())));
                input.push(("namespaceObject", to_cel(namespace.as_ref())));
                let decisions = evaluate(policy, &mut input, &mut annotations);
                for (index, message, reason) in decisions {
                    if binding.audit {
                        audit::validation_failure(policy, binding, index, &message);
                    }
                    if binding.deny {
                        deny(message.clone(), &reason);
                    }
                    if binding.warn {
                        warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                            policy.name, binding.name
                        ));
                    }
                }
            }
            annotations.publish(&policy.name);
        }
        match denials.into_iter().next() {
            None => Ok(warnings),
            Some(d) => Err(refusal(&call.info.group_resource(), name, d)),
        }
    }

    /// The request's Namespace (`namespaceObject`); none for a cluster-scoped object and for
    /// a Namespace itself.
    fn namespace_object(&self, call: &Call<'_>) -> Option<Value> {
        let ns = call.req.namespace.as_deref().filter(|n| !n.is_empty())?;
        if call.info.group.is_empty() && call.info.plural == "namespaces" {
            return None;
        }
        let stored = self
            .store
            .get(&GroupResource::new("", "namespaces"), "", ns)?;
        serde_json::from_str(&stored.raw).ok()
    }

    /// The params a binding gives its policy (`generic.CollectParams`): one `null` without a
    /// `paramKind` or `paramRef`, else the objects the `paramRef` names, each validated in
    /// turn; none found is an error under `parameterNotFoundAction: Deny`.
    fn params(
        &self,
        policy: &Policy,
        binding: &Binding,
        call: &Call<'_>,
    ) -> Result<Vec<Option<Value>>, String> {
        let (Some((api_version, kind)), Some(r)) = (&policy.param_kind, &binding.param_ref) else {
            return Ok(vec![None]);
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let catalog = self.store.catalog();
        let info = catalog
            .by_kind(group, version, kind)
            .ok_or_else(|| format!("paramKind kind `{api_version}, Kind={kind}` not known"))?
            .clone();
        let namespace = if info.namespaced() {
            let ns = if r.namespace.is_empty() {
                call.req.namespace.as_deref().unwrap_or_default()
            } else {
                &r.namespace
            };
            if ns.is_empty() {
                return Err(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                        .into(),
                );
            }
            ns.to_owned()
        } else {
            String::new()
        };
        let found = find_params(&self.store, &info.group_resource(), &namespace, r);
        if found.is_empty() {
            if r.deny_when_missing {
                return Err(
                    "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
                );
            }
            return Ok(Vec::new());
        }
        Ok(found.into_iter().map(Some).collect())
    }
}

/// The objects a `paramRef` names: by `name`, or every one its `selector` selects.
fn find_params(
    store: &kgc_store::Store,
    gr: &GroupResource,
    namespace: &str,
    r: &ParamRef,
) -> Vec<Value> {
    let parse = |raw: &str| serde_json::from_str::<Value>(raw).ok();
    if !r.name.is_empty() {
        return store
            .get(gr, namespace, &r.name)
            .and_then(|o| parse(&o.raw))
            .into_iter()
            .collect();
    }
    let Some(selector) = &r.selector else {
        return Vec::new();
    };
    let opts = ListOptions {
        namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
        ..ListOptions::default()
    };
    store
        .list(gr, &opts)
        .map(|l| {
            l.items
                .iter()
                .filter(|o| selector.matches(&o.labels))
                .filter_map(|o| parse(&o.raw))
                .collect()
        })
        .unwrap_or_default()
}

fn to_cel(v: Option<&Value>) -> Cel {
    v.map_or(Cel::Null, |v| kgc_cel::value::to_cel(v, None))
}

/// A policy's decisions on one input (`validator.go` `Validate`): the index, message and
/// reason of each validation that failed, and of each error under `failurePolicy: Fail`.
fn evaluate(
    policy: &Policy,
    input: &mut Vec<(&'static str, Cel)>,
    annotations: &mut audit::Collector,
) -> Vec<(usize, String, String)> {
    let error = |i: usize, e: String| {
        if policy.fail {
            vec![(i, e, String::new())]
        } else {
            Vec::new()
        }
    };
    match policy.conditions.evaluate(input) {
        Matched::Yes => {}
        Matched::No => return Vec::new(),
        Matched::Failed(e) => return error(0, e),
    }
    let budget = Budget::new(kgc_cel::RUNTIME_COST_BUDGET);
    // `variables`, each seeing those before it; one that fails is left out, so that the
    // expressions reading it fail with the name they read.
    let mut variables: Vec<(String, Cel)> = Vec::new();
    for (name, expr) in &policy.variables {
        let mut scope = input.clone();
        scope.push(("variables", kgc_cel::value::map(variables.clone())));
        if let Ok(v) = expr.evaluate(&scope, &budget) {
            variables.push((name.clone(), v));
        }
    }
    input.push(("variables", kgc_cel::value::map(variables)));
    annotations.evaluate(policy, input, &budget);
    let mut decisions = Vec::new();
    for (i, v) in policy.validations.iter().enumerate() {
        match v.expression.evaluate_bool(input, &budget) {
            Ok(true) => {}
            Ok(false) => decisions.push((i, message(v, input, &budget), v.reason.clone())),
            // A spent budget is the one decision (validator.go returns its error alone).
            Err(e) if budget.spent() => return error(i, e),
            Err(e) => decisions.extend(error(i, e)),
        }
    }
    decisions
}

/// A failed validation's message: its `messageExpression`'s when that gives a one-line
/// string, else its `message`, else `failed expression: <expression>`.
fn message(v: &compiled::Validation, input: &[(&str, Cel)], budget: &Budget) -> String {
    let from_expression = v
        .message_expression
        .as_ref()
        .and_then(|m| match m.evaluate(input, budget) {
            Ok(Cel::String(s)) => Some(s.trim().to_owned()),
            _ => None,
        })
        .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
    from_expression
        .or_else(|| Some(v.message.trim().to_owned()).filter(|m| !m.is_empty()))
        .unwrap_or_else(|| format!("failed expression: {}", v.source.trim()))
}

/// `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>'
/// denied request: <message>`, with the validation's reason (`Invalid` by default) and its code.
fn refusal(gr: &GroupResource, name: &str, d: Denial) -> Status {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        d.policy, d.binding, d.message
    );
    let mut s = Status::forbidden(gr, name, &message);
    let reason = if d.reason.is_empty() {
        "Invalid"
    } else {
        &d.reason
    };
    s.reason = crate::webhook::reason(reason);
    s.code = match s.reason {
        Reason::Forbidden => 403,
        Reason::Unauthorized => 401,
        Reason::RequestEntityTooLarge => 413,
        _ => 422,
    };
    s.causes.push(Cause {
        kind: String::new(),
        message,
        field: String::new(),
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> Policy {
        let objects =
            vec![json!({"metadata": {"name": "p", "resourceVersion": "1"}, "spec": spec})];
        let compiled = CompiledPolicies::build(objects, None);
        Arc::try_unwrap(compiled.0.into_values().next().expect("one policy"))
            .unwrap_or_else(|_| panic!("shared"))
    }

    fn run(spec: Value, obj: Value) -> Vec<(String, String)> {
        let mut input = matchconditions::input(&json!({"operation": "CREATE"}), Some(&obj), None);
        input.push(("params", Cel::Null));
        input.push(("namespaceObject", Cel::Null));
        evaluate(&policy(spec), &mut input, &mut audit::Collector::default())
            .into_iter()
            .map(|(_, message, reason)| (message, reason))
            .collect()
    }

    #[test]
    fn messages_reasons_and_variables() {
        let spec = json!({"variables": [{"name": "r", "expression": "object.spec.replicas"}],
        "validations": [
            {"expression": "variables.r <= 5"},
            {"expression": "variables.r <= 4", "message": "too many", "reason": "Forbidden"},
            {"expression": "variables.r <= 3", "messageExpression": "'got ' + string(variables.r)"},
            {"expression": "variables.r <= 2", "messageExpression": "1", "message": "fallback"},
        ]});
        assert_eq!(
            run(spec, json!({"spec": {"replicas": 6}})),
            vec![
                (
                    "failed expression: variables.r <= 5".to_owned(),
                    "Invalid".to_owned()
                ),
                ("too many".to_owned(), "Forbidden".to_owned()),
                ("got 6".to_owned(), "Invalid".to_owned()),
                ("fallback".to_owned(), "Invalid".to_owned()),
            ]
        );
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let spec = |policy: &str| json!({"failurePolicy": policy, "validations": [{"expression": "object.nope > 1"}]});
        assert_eq!(
            run(spec("Fail"), json!({})),
            vec![(
                "expression 'object.nope > 1' resulted in error: no such key: nope".to_owned(),
                String::new()
            )]
        );
        assert!(run(spec("Ignore"), json!({})).is_empty());
        let skipped = json!({"matchConditions": [{"name": "c", "expression": "false"}],
            "validations": [{"expression": "false"}]});
        assert!(run(skipped, json!({})).is_empty());
    }

    /// A binding's evaluation has `RuntimeCELCostBudget` for all its expressions: past it, the
    /// budget's error is the one decision (a denial under `failurePolicy: Fail`).
    #[test]
    fn a_spent_budget_is_the_one_decision() {
        let small: Vec<i64> = (0..300).collect();
        let dear = json!({"expression": "object.small.all(x, object.small.all(y, x + y >= 0))"});
        let spec = json!({"validations": vec![dear; 100]});
        assert_eq!(
            run(spec, json!({"small": small})),
            vec![(
                "validation failed due to running out of cost budget, no further validation rules will be run".to_owned(),
                String::new()
            )]
        );
    }

    #[test]
    fn refusal_words() {
        let s = refusal(
            &GroupResource::new("apps", "deployments"),
            "web",
            Denial {
                policy: "p".into(),
                binding: "b".into(),
                message: "failed expression: x".into(),
                reason: String::new(),
            },
        );
        assert_eq!(
            s.message,
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: x"
        );
        assert_eq!((s.code, s.reason), (422, Reason::Invalid));
    }
}
