//! `metav1.Status`: the error shape every Kubernetes client understands.
//!
//! The store produces these, the API server writes them as bodies, and the collectors match on
//! [`Reason`] whichever cluster they talk to, so a `NotFound` or a `Conflict` means the same thing
//! in-process and over HTTP. Messages follow apimachinery `pkg/api/errors/errors.go` word for word,
//! because kubectl prints them as `Error from server (<Reason>): <message>`.

use serde_json::{Value, json};

use crate::catalog::GroupResource;
use crate::validation::{FieldError, aggregate};

/// `metav1.StatusReason` values kgc produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    NotFound,
    AlreadyExists,
    Conflict,
    Invalid,
    BadRequest,
    Unauthorized,
    Forbidden,
    Expired,
    MethodNotAllowed,
    UnsupportedMediaType,
    NotAcceptable,
    RequestEntityTooLarge,
    InternalError,
    Timeout,
    /// A 429: the request may succeed later (an eviction a disruption budget refuses now).
    TooManyRequests,
    /// Some upstream errors carry no reason at all (for instance "resourceVersion should not be
    /// set on objects to be created", a 500 without a reason).
    Unknown,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::Expired => "Expired",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::InternalError => "InternalError",
            Reason::Timeout => "Timeout",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::Unknown => "",
        }
    }
}

/// One entry of `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub kind: String,
    pub message: String,
    pub field: String,
}

/// A failed (or, for deletions, successful) API outcome, as `metav1.Status` describes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Status {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    pub name: String,
    pub group: String,
    /// The resource (plural) for most errors, the Kind for `Invalid`, as upstream does.
    pub kind: String,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u32>,
}

impl Status {
    fn new(code: u16, reason: Reason, message: String) -> Self {
        Self {
            code,
            reason,
            message,
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            causes: Vec::new(),
            retry_after_seconds: None,
        }
    }

    fn about(mut self, gr: &GroupResource, name: &str) -> Self {
        self.group = gr.group.clone();
        self.kind = gr.resource.clone();
        self.name = name.to_owned();
        self
    }

    /// `pods "p1" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(404, Reason::NotFound, format!("{gr} \"{name}\" not found")).about(gr, name)
    }

    /// A path or resource the server does not serve.
    pub fn no_such_resource() -> Self {
        Self::new(
            404,
            Reason::NotFound,
            "the server could not find the requested resource".into(),
        )
    }

    /// `pods "p1" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            Reason::AlreadyExists,
            format!("{gr} \"{name}\" already exists"),
        )
        .about(gr, name)
    }

    /// `Operation cannot be fulfilled on pods "p1": <detail>`.
    pub fn conflict(gr: &GroupResource, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            Reason::Conflict,
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {detail}"),
        )
        .about(gr, name)
    }

    /// The optimistic-concurrency conflict of a stale `resourceVersion`.
    pub fn stale(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `Pod "p1" is invalid: <field errors>`; `group` and `kind` name the Kind.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut s = Self::new(
            422,
            Reason::Invalid,
            format!("{qualified} \"{name}\" is invalid: {}", aggregate(errors)),
        );
        s.group = group.to_owned();
        s.kind = kind.to_owned();
        s.name = name.to_owned();
        s.causes = errors
            .iter()
            .map(|e| Cause {
                kind: e.cause_type().to_owned(),
                message: e.body(),
                field: e.field.clone(),
            })
            .collect();
        s
    }

    /// `pods "x" is forbidden: <reason>`.
    /// `<resource> "<name>" is forbidden: <reason>`, without the name when there is none (a
    /// DELETECOLLECTION) as `errors.NewForbidden` words it.
    pub fn forbidden(gr: &GroupResource, name: &str, reason: &str) -> Self {
        let message = if name.is_empty() {
            format!("{gr} is forbidden: {reason}")
        } else {
            format!("{gr} \"{name}\" is forbidden: {reason}")
        };
        Self::new(403, Reason::Forbidden, message).about(gr, name)
    }

    /// The 401 of a request without valid credentials. Upstream says no more than
    /// `Unauthorized`, so that a probe learns nothing about why its credentials failed
    /// (apiserver `endpoints/handlers/responsewriters.UnauthorizedResponse`... `errors.NewUnauthorized`).
    pub fn unauthorized() -> Self {
        Self::new(401, Reason::Unauthorized, "Unauthorized".into())
    }

    /// An authorization refusal: `message` is the whole sentence (`User "u" cannot list
    /// resource "pods" ...`), the details name the resource as upstream's `NewForbidden` does.
    pub fn forbidden_by_policy(gr: &GroupResource, name: &str, message: String) -> Self {
        Self::new(403, Reason::Forbidden, message).about(gr, name)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, Reason::BadRequest, message.into())
    }

    /// The generic 422 of `NewGenericServerResponse`, without details.
    pub fn unprocessable() -> Self {
        Self::new(
            422,
            Reason::Invalid,
            "the server rejected our request due to an error in our request".into(),
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, Reason::Expired, message.into())
    }

    /// `<verb> is not supported on resources of kind "<kind>"`-style refusals.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, Reason::MethodNotAllowed, message.into())
    }

    /// A body in a media type the endpoint does not take, listing those it does, as upstream.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, Reason::NotAcceptable, message.into())
    }

    pub fn too_large(limit: usize) -> Self {
        Self::entity_too_large(format!("limit is {limit}"))
    }

    /// `Request entity too large: <message>` (`NewRequestEntityTooLargeError`).
    pub fn entity_too_large(message: impl std::fmt::Display) -> Self {
        Self::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: {message}"),
        )
    }

    /// `Internal error occurred: <detail>`.
    pub fn internal(detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let mut s = Self::new(
            500,
            Reason::InternalError,
            format!("Internal error occurred: {detail}"),
        );
        s.causes.push(Cause {
            kind: String::new(),
            message: detail,
            field: String::new(),
        });
        s
    }

    /// A 429 `TooManyRequests` (`errors.NewTooManyRequests`): `retry_after` seconds, if any,
    /// become the `Retry-After` header and `details.retryAfterSeconds`.
    pub fn too_many_requests(message: impl Into<String>, retry_after: u32) -> Self {
        let mut s = Self::new(429, Reason::TooManyRequests, message.into());
        s.retry_after_seconds = (retry_after > 0).then_some(retry_after);
        s
    }

    /// A 500 without a reason, as upstream answers a create that carries a resourceVersion.
    pub fn unknown(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, Reason::Unknown, message.into())
    }

    pub fn is(&self, reason: Reason) -> bool {
        self.reason == reason
    }

    /// The `metav1.Status` JSON body.
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        if self.reason != Reason::Unknown {
            body["reason"] = json!(self.reason.as_str());
        }
        let mut details = serde_json::Map::new();
        for (k, v) in [
            ("name", &self.name),
            ("group", &self.group),
            ("kind", &self.kind),
        ] {
            if !v.is_empty() {
                details.insert(k.into(), json!(v));
            }
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut o = serde_json::Map::new();
                    if !c.kind.is_empty() {
                        o.insert("reason".into(), json!(c.kind));
                    }
                    o.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        o.insert("field".into(), json!(c.field));
                    }
                    Value::Object(o)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(s) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(s));
        }
        if !details.is_empty() {
            body["details"] = Value::Object(details);
        }
        body
    }
}

/// The body of a successful immediate DELETE for kinds that do not return the object.
pub fn success(gr: &GroupResource, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": gr.group, "kind": gr.resource, "uid": uid},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_uses_resource_dot_group() {
        let s = Status::not_found(&GroupResource::new("apps", "deployments"), "x");
        assert_eq!(s.message, "deployments.apps \"x\" not found");
        let j = s.to_json();
        assert_eq!(j["reason"], "NotFound");
        assert_eq!(j["code"], 404);
        assert_eq!(j["details"]["kind"], "deployments");
        assert_eq!(j["details"]["group"], "apps");
    }

    #[test]
    fn conflict_message_is_upstreams() {
        let s = Status::stale(&GroupResource::new("", "pods"), "p1");
        assert_eq!(
            s.message,
            "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please apply your changes to the latest version and try again"
        );
    }

    #[test]
    fn invalid_names_the_kind_and_fields() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        let s = Status::invalid("", "ConfigMap", "", &[e]);
        assert_eq!(
            s.message,
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let j = s.to_json();
        assert_eq!(j["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(j["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(
            j["details"]["causes"][0]["message"],
            "Required value: name or generateName is required"
        );
    }

    #[test]
    fn unknown_reason_is_omitted() {
        let j = Status::unknown(
            500,
            "resourceVersion should not be set on objects to be created",
        )
        .to_json();
        assert!(j.get("reason").is_none());
        assert_eq!(j["code"], 500);
    }
}
