//! CEL for kgc: the Common Expression Language as Kubernetes uses it, over `serde_json` values.
//!
//! kube-apiserver runs CEL in CRD `x-kubernetes-validations` rules, admission webhooks'
//! `matchConditions` and ValidatingAdmissionPolicy. This crate compiles a
//! program with declared variables ([`Program::compile`]), estimates its worst-case cost from
//! the sizes its inputs may have ([`Program::estimate`], with [`Shape`]), and evaluates it
//! ([`Program::evaluate`]); [`rules`] applies all of that to a CRD's structural schema.
//!
//! The parser and interpreter are the `cel` crate's (cel-rust). Kubernetes' own library is
//! added in [`library`]; the cost limits are upstream's (`k8s.io/apiserver/pkg/cel/limits.go`).
//! Upstream counts the cost of every evaluation step inside cel-go; cel-rust has no such
//! counter, so the runtime cost of a call is the same estimator run on the actual sizes of the
//! values (never less than what the evaluation does, by construction of the estimate).
#![forbid(unsafe_code)]

pub mod cost;
pub mod library;
pub mod program;
pub mod rules;
pub mod value;

/// A CEL value, as programs take their variables and give their results.
pub use cel::Value;
pub use cost::Shape;
pub use library::authz::{Authorize, AuthzRequest};
pub use program::Program;

/// The most one evaluation of one expression may cost (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all the rules of one object's validation may cost together
/// (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// The most the `matchConditions` of one webhook or one policy binding may cost together for
/// one request (`RuntimeCELCostBudgetMatchConditions`).
pub const RUNTIME_COST_BUDGET_MATCH_CONDITIONS: u64 = 2_500_000;
/// The most a rule's estimated cost may be, per call (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// The most all the rules of a CRD version's schema may cost, each multiplied by how many
/// times it may run for one object (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// The largest request body kube-apiserver accepts, which bounds every list, map and string
/// without a declared maximum (`apiextensions-apiserver` `maxRequestSizeBytes`).
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// What an admission webhook's `matchConditions` may read (kubernetes/apiserver
/// `pkg/admission/plugin/cel` `OptionalVariableDeclarations` without params).
pub const WEBHOOK_VARIABLES: [&str; 4] = ["object", "oldObject", "request", "authorizer"];

/// What a ValidatingAdmissionPolicy's expressions may read: the webhook's, its `params`, the
/// request's namespace, its `variables` (and `authorizer.requestResource`, through
/// `authorizer`).
pub const POLICY_VARIABLES: [&str; 7] = [
    "object",
    "oldObject",
    "request",
    "authorizer",
    "params",
    "namespaceObject",
    "variables",
];

/// What can go wrong compiling or running a CEL program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source does not parse or names what is not declared; the text is cel-go's
    /// (`ERROR: <input>:1:6: …`).
    #[error("compilation failed: {0}")]
    Compile(String),
    /// The evaluation failed (no such key, no matching overload, division by zero…).
    #[error("{0}")]
    Evaluation(String),
    /// The evaluation would cost more than its budget.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimit,
    /// The evaluations of one request have spent their budget (admission's `ForInput`).
    #[error(
        "validation failed due to running out of cost budget, no further validation rules will be run"
    )]
    OutOfBudget,
    /// An overload or declaration of kgc's library was refused by the interpreter.
    #[error("declaring the Kubernetes CEL library: {0}")]
    Declaration(#[from] cel::DeclarationError),
}
