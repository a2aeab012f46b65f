//! What ValidatingAdmissionPolicies record in the request's audit event
//! (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go`:
//! `publishValidationFailureAnnotation`, `auditAnnotationCollector`).

use crate::matchconditions::Budget;
use kgc_cel::Value as Cel;

use super::compiled::{Binding, Policy};

/// The key of a failed validation under a binding's `Audit` action.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";
/// A longer `auditAnnotations` value is cut (`maxAuditAnnotationValueLength`).
const MAX_VALUE_BYTES: usize = 10 * 1024;

/// A failed validation under `Audit`: a JSON list of one failure (`ValidationFailureValue`,
/// its fields in upstream's order). The first one recorded stays: upstream's annotations are
/// never overwritten.
pub(super) fn validation_failure(policy: &Policy, binding: &Binding, index: usize, message: &str) {
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let actions: Vec<String> = binding.actions.iter().map(|a| quote(a)).collect();
    let value = format!(
        "[{{\"message\":{},\"policy\":{},\"binding\":{},\"expressionIndex\":{index},\"validationActions\":[{}]}}]",
        quote(message),
        quote(&policy.name),
        quote(&binding.name),
        actions.join(",")
    );
    crate::audit::annotate(VALIDATION_FAILURE.to_owned(), value);
}

/// A policy's `auditAnnotations` over every binding and param it ran with: each key's distinct
/// values, in the order they came.
#[derive(Default)]
pub(super) struct Collector {
    annotations: Vec<(String, Vec<String>)>,
}

impl Collector {
    /// Evaluates `policy`'s `auditAnnotations` on one input. A `null` value is left out; a
    /// value of another type, or an error, adds nothing (logged).
    pub fn evaluate(&mut self, policy: &Policy, input: &[(&str, Cel)], budget: &Budget) {
        for (key, expression) in &policy.audit_annotations {
            let mut value = match expression.evaluate(input, budget) {
                Ok(Cel::String(v)) => v.to_string(),
                Ok(Cel::Null) => continue,
                Ok(other) => {
                    tracing::warn!(policy = %policy.name, %key, "auditAnnotations valueExpression resulted in unsupported return type {other:?}: must be either string or null");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(policy = %policy.name, %key, error = %e, "auditAnnotations valueExpression failed");
                    continue;
                }
            };
            if value.len() > MAX_VALUE_BYTES {
                let mut cut = MAX_VALUE_BYTES;
                while !value.is_char_boundary(cut) {
                    cut -= 1;
                }
                value.truncate(cut);
            }
            match self.annotations.iter_mut().find(|(k, _)| k == key) {
                Some((_, values)) if !values.contains(&value) => values.push(value),
                Some(_) => {}
                None => self.annotations.push((key.clone(), vec![value])),
            }
        }
    }

    /// Adds `<policy>/<key>` to the audit event, several values joined with `, `.
    pub fn publish(self, policy: &str) {
        for (key, values) in self.annotations {
            crate::audit::annotate(format!("{policy}/{key}"), values.join(", "));
        }
    }
}
