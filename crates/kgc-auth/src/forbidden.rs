//! The 403 message kube-apiserver writes, word for word: `forbiddenMessage` and `Forbidden` in
//! `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`, wrapped by
//! `apierrors.NewForbidden`. Clients and people grep for this text.

use kgc_meta::gojson::go_quote;

use crate::Attributes;

/// The `message` of the 403 Status for a denied request, e.g.
/// `pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope`,
/// `deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns"`,
/// `forbidden: User "carol" cannot get path "/metrics"`.
///
/// The Status around it: `reason: Forbidden`, `code: 403`, `details: {group: api_group,
/// kind: resource, name}` (group, kind and name omitted when empty).
pub fn forbidden_message(attrs: &Attributes) -> String {
    forbidden_message_with_reason(attrs, "")
}

/// [`forbidden_message`] followed by `": " + reason` when the authorizer gave one (upstream
/// appends the RBAC reason, e.g. `RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`).
pub fn forbidden_message_with_reason(attrs: &Attributes, reason: &str) -> String {
    // The user-controlled part is HTML-escaped (`sanitizer` in errors.go); the reason is not.
    let mut msg = sanitize(&user_message(attrs));
    if !reason.is_empty() {
        msg.push_str(": ");
        msg.push_str(reason);
    }
    // `NewForbidden(GroupResource{api_group, resource}, name, err)`.
    let gr = match (attrs.api_group.as_str(), attrs.resource.as_str()) {
        ("", "") => return format!("forbidden: {msg}"),
        ("", r) => r.to_owned(),
        (g, r) => format!("{r}.{g}"),
    };
    if attrs.name.is_empty() {
        format!("{gr} is forbidden: {msg}")
    } else {
        format!("{gr} {} is forbidden: {msg}", go_quote(&attrs.name))
    }
}

/// `forbiddenMessage`.
fn user_message(a: &Attributes) -> String {
    let user = go_quote(&a.user.name);
    if !a.resource_request {
        return format!("User {user} cannot {} path {}", a.verb, go_quote(&a.path));
    }
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let scope = if a.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace {}", go_quote(&a.namespace))
    };
    format!(
        "User {user} cannot {} resource {} in API group {} {scope}",
        a.verb,
        go_quote(&resource),
        go_quote(&a.api_group)
    )
}

fn sanitize(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UserInfo;

    fn attrs(verb: &str, ns: &str, group: &str, res: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                name: "alice".into(),
                ..UserInfo::default()
            },
            verb: verb.into(),
            namespace: ns.into(),
            api_group: group.into(),
            resource: res.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        }
    }

    #[test]
    fn cluster_scope_list() {
        assert_eq!(
            forbidden_message(&attrs("list", "", "", "pods", "", "")),
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope"#
        );
    }

    #[test]
    fn namespaced_named_subresource_in_group() {
        assert_eq!(
            forbidden_message(&attrs("get", "ns1", "apps", "deployments", "scale", "web")),
            r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns1""#
        );
    }

    #[test]
    fn non_resource_path() {
        let mut a = attrs("get", "", "", "", "", "");
        a.resource_request = false;
        a.path = "/metrics".into();
        assert_eq!(
            forbidden_message(&a),
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
    }

    #[test]
    fn reason_is_appended_and_user_text_is_sanitized() {
        let mut a = attrs("create", "ns", "", "configmaps", "", "");
        a.user.name = "<script>&".into();
        assert_eq!(
            forbidden_message_with_reason(
                &a,
                r#"RBAC: role.rbac.authorization.k8s.io "x" not found"#
            ),
            r#"configmaps is forbidden: User "&lt;script&gt;&amp;" cannot create resource "configmaps" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "x" not found"#
        );
    }
}
