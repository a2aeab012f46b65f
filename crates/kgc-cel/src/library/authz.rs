//! Kubernetes' authz library (kubernetes/apiserver `pkg/cel/library/authz.go`): the
//! `authorizer` variable of admission expressions asks the server's authorizer about the
//! requesting user (or, after `serviceAccount(ns, name)`, about a service account):
//! `authorizer.group('apps').resource('deployments').namespace('x').name('y').check('get')`
//! is a decision with `allowed()`, `reason()`, `errored()` and `error()`;
//! `authorizer.path('/healthz').check('get')` asks about a non-resource path.
//!
//! cel-rust's functions are plain `fn`s, so the authorizer travels inside the values: the
//! caller's [`Authorize`] is held by the `authorizer` value and each check built from it.

use std::fmt;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{Env, Value};

use super::{function, opaque, opaque_arg, string_arg};

/// What a check asks (`authorizer.AttributesRecord`, API version `*`): a resource request when
/// `path` is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthzRequest {
    /// `(namespace, name)` after `serviceAccount(ns, name)`: ask about that account instead
    /// of the requesting user.
    pub service_account: Option<(String, String)>,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub path: Option<String>,
}

/// The server's authorizer as CEL calls it: allowed or not, with the authorizer's reason.
pub trait Authorize: Send + Sync {
    fn authorize(&self, request: &AuthzRequest) -> (bool, String);
}

/// The `authorizer` variable: asks `authorize` on behalf of the requesting user.
pub fn authorizer(authorize: Arc<dyn Authorize>) -> Value {
    opaque(Check {
        kind: Kind::Authorizer,
        authorize: Handle(authorize),
        request: AuthzRequest::default(),
    })
}

/// The `authorizer.requestResource` variable: a resource check of the request's own resource.
pub fn request_resource(authorize: Arc<dyn Authorize>, request: AuthzRequest) -> Value {
    opaque(Check {
        kind: Kind::Resource,
        authorize: Handle(authorize),
        request,
    })
}

/// The authorizer, compared by identity (values must be comparable to be CEL values).
#[derive(Clone)]
struct Handle(Arc<dyn Authorize>);

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Handle {}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorize")
    }
}

/// Which of upstream's types a [`Check`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Authorizer,
    Path,
    Group,
    Resource,
}

/// An `Authorizer`, `PathCheck`, `GroupCheck` or `ResourceCheck`: the request built so far.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Check {
    kind: Kind,
    authorize: Handle,
    request: AuthzRequest,
}

/// A `Decision`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision {
    allowed: bool,
    reason: String,
}

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        match self.kind {
            Kind::Authorizer => AUTHORIZER,
            Kind::Path => PATH_CHECK,
            Kind::Group => GROUP_CHECK,
            Kind::Resource => RESOURCE_CHECK,
        }
    }
}

impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        DECISION
    }
}

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let t = Type::new_opaque_type;
    env.add_member_overload(
        "path",
        "authorizer_path",
        t(AUTHORIZER),
        vec![STRING_TYPE],
        path,
    )?;
    env.add_member_overload(
        "group",
        "authorizer_group",
        t(AUTHORIZER),
        vec![STRING_TYPE],
        group,
    )?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        t(AUTHORIZER),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload(
        "resource",
        "groupcheck_resource",
        t(GROUP_CHECK),
        vec![STRING_TYPE],
        resource,
    )?;
    env.add_member_overload(
        "subresource",
        "resourcecheck_subresource",
        t(RESOURCE_CHECK),
        vec![STRING_TYPE],
        subresource,
    )?;
    env.add_member_overload(
        "namespace",
        "resourcecheck_namespace",
        t(RESOURCE_CHECK),
        vec![STRING_TYPE],
        namespace,
    )?;
    env.add_member_overload(
        "name",
        "resourcecheck_name",
        t(RESOURCE_CHECK),
        vec![STRING_TYPE],
        name,
    )?;
    env.add_member_overload(
        "check",
        "pathcheck_check",
        t(PATH_CHECK),
        vec![STRING_TYPE],
        check,
    )?;
    env.add_member_overload(
        "check",
        "resourcecheck_check",
        t(RESOURCE_CHECK),
        vec![STRING_TYPE],
        check,
    )?;
    env.add_member_overload("allowed", "decision_allowed", t(DECISION), vec![], allowed)?;
    env.add_member_overload("reason", "decision_reason", t(DECISION), vec![], reason)?;
    env.add_member_overload("errored", "decision_errored", t(DECISION), vec![], errored)?;
    env.add_member_overload("error", "decision_error", t(DECISION), vec![], error)?;
    Ok(())
}

/// The receiver with one more field set, as a check of `kind`.
fn refine(
    args: &[Value],
    function: &str,
    kind: Kind,
    set: impl FnOnce(&mut AuthzRequest, &str),
) -> Result<Value, cel::ExecutionError> {
    let mut next = opaque_arg::<Check>(args, 0, function)?.clone();
    set(&mut next.request, string_arg(args, 1, function)?);
    next.kind = kind;
    Ok(opaque(next))
}

function!(path, |args: &[Value]| {
    refine(args, "path", Kind::Path, |r, v| r.path = Some(v.to_owned()))
});
function!(group, |args: &[Value]| {
    refine(args, "group", Kind::Group, |r, v| r.group = v.to_owned())
});
function!(resource, |args: &[Value]| {
    refine(args, "resource", Kind::Resource, |r, v| {
        r.resource = v.to_owned()
    })
});
function!(subresource, |args: &[Value]| {
    refine(args, "subresource", Kind::Resource, |r, v| {
        r.subresource = v.to_owned()
    })
});
function!(namespace, |args: &[Value]| {
    refine(args, "namespace", Kind::Resource, |r, v| {
        r.namespace = v.to_owned()
    })
});
function!(name, |args: &[Value]| {
    refine(args, "name", Kind::Resource, |r, v| r.name = v.to_owned())
});

function!(service_account, |args: &[Value]| {
    let mut next = opaque_arg::<Check>(args, 0, "serviceAccount")?.clone();
    let ns = string_arg(args, 1, "serviceAccount")?;
    let name = string_arg(args, 2, "serviceAccount")?;
    next.request.service_account = Some((ns.to_owned(), name.to_owned()));
    Ok(opaque(next))
});

function!(check, |args: &[Value]| {
    let this = opaque_arg::<Check>(args, 0, "check")?;
    let mut request = this.request.clone();
    request.verb = string_arg(args, 1, "check")?.to_owned();
    let (allowed, reason) = this.authorize.0.authorize(&request);
    Ok(opaque(Decision { allowed, reason }))
});

function!(allowed, |args: &[Value]| {
    Ok(Value::Bool(
        opaque_arg::<Decision>(args, 0, "allowed")?.allowed,
    ))
});
function!(reason, |args: &[Value]| {
    Ok(Value::from(
        opaque_arg::<Decision>(args, 0, "reason")?.reason.as_str(),
    ))
});
// kgc's RBAC authorizer decides without errors.
function!(errored, |args: &[Value]| {
    opaque_arg::<Decision>(args, 0, "errored").map(|_| Value::Bool(false))
});
function!(error, |args: &[Value]| {
    opaque_arg::<Decision>(args, 0, "error").map(|_| Value::from(""))
});

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::Program;

    /// Allows `get` only, and records what it was asked.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<AuthzRequest>>);

    impl Authorize for Recorder {
        fn authorize(&self, request: &AuthzRequest) -> (bool, String) {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(request.clone());
            (request.verb == "get", format!("asked {}", request.verb))
        }
    }

    fn run(source: &str, recorder: &Arc<Recorder>) -> Value {
        let authorize: Arc<dyn Authorize> = recorder.clone();
        let program = Program::compile(source, &["authorizer"]).unwrap_or_else(|e| panic!("{e}"));
        program
            .evaluate(&[("authorizer", authorizer(authorize))])
            .unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    #[test]
    fn checks_ask_the_authorizer() {
        let r = Arc::new(Recorder::default());
        assert_eq!(
            run(
                "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('web').check('get').allowed()",
                &r
            ),
            Value::Bool(true)
        );
        assert_eq!(
            run(
                "authorizer.group('').resource('pods').check('delete').allowed()",
                &r
            ),
            Value::Bool(false)
        );
        assert_eq!(
            run("authorizer.path('/healthz').check('post').reason()", &r),
            Value::from("asked post")
        );
        assert_eq!(
            run(
                "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').errored()",
                &r
            ),
            Value::Bool(false)
        );
        let asked = r.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(
            asked[0],
            AuthzRequest {
                verb: "get".into(),
                group: "apps".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                namespace: "ns".into(),
                name: "web".into(),
                ..AuthzRequest::default()
            }
        );
        assert_eq!(asked[2].path.as_deref(), Some("/healthz"));
        assert_eq!(asked[3].service_account, Some(("ns".into(), "sa".into())));
    }
}
