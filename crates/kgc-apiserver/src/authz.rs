//! Authorization: every authenticated request is turned into RBAC attributes exactly as
//! apiserver's `RequestInfoFactory` does (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`)
//! and decided by the `kgc-auth` authorizer, which the process's informers keep current with the
//! Roles, ClusterRoles and their bindings. Writes of RBAC objects are validated and checked for
//! privilege escalation (`pkg/registry/rbac/*/policybased`).

use std::sync::{Arc, RwLock};

use axum::http::Method;
use kgc_auth::{Attributes, Authorizer, Decision, RBAC_GROUP, UserInfo};
use kgc_inprocess::InProcess;
use kgc_meta::{GroupResource, ResourceInfo, Status};
use kgc_runtime::informer::{Cache, Informers, Key};
use kgc_store::Store;
use serde_json::Value;
use tokio::sync::Notify;

use crate::request::{Query, RequestInfo, Verb};

/// The four RBAC resources and their kinds.
const RBAC_RESOURCES: [(&str, &str); 4] = [
    ("clusterroles", "ClusterRole"),
    ("roles", "Role"),
    ("clusterrolebindings", "ClusterRoleBinding"),
    ("rolebindings", "RoleBinding"),
];

tokio::task_local! {
    /// The authorizer of the request being served (absent without authorization, on the
    /// insecure port): what admission expressions' `authorizer` asks.
    static REQUEST_RBAC: Option<Arc<Rbac>>;
}

/// Runs `fut` as a request authorized by `rbac`.
pub(crate) async fn scope<F: Future>(rbac: Option<Arc<Rbac>>, fut: F) -> F::Output {
    REQUEST_RBAC.scope(rbac, fut).await
}

/// The `authorizer` of admission CEL expressions (kubernetes/apiserver
/// `pkg/cel/library/authz.go`): RBAC decisions for the request's user, or for the service
/// account a check names; everything is allowed where nothing is authorized (as on the insecure
/// port), as upstream's `AlwaysAllow` authorizer would.
struct CelAuthorizer {
    rbac: Option<Arc<Rbac>>,
    user: Option<Arc<UserInfo>>,
}

impl kgc_cel::Authorize for CelAuthorizer {
    fn authorize(&self, r: &kgc_cel::AuthzRequest) -> (bool, String) {
        let Some(rbac) = &self.rbac else {
            return (true, String::new());
        };
        let user = match &r.service_account {
            // `serviceaccount.UserInfo(namespace, name, "")`.
            Some((ns, name)) => UserInfo {
                name: UserInfo::service_account_name(ns, name),
                groups: vec![
                    "system:serviceaccounts".to_owned(),
                    format!("system:serviceaccounts:{ns}"),
                ],
                ..UserInfo::default()
            },
            None => self.user.as_deref().cloned().unwrap_or_default(),
        };
        let attrs = Attributes {
            user,
            verb: r.verb.clone(),
            namespace: r.namespace.clone(),
            api_group: r.group.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            name: r.name.clone(),
            resource_request: r.path.is_none(),
            path: r.path.clone().unwrap_or_default(),
        };
        match rbac.read().authorize(&attrs) {
            Decision::Allow => (true, String::new()),
            Decision::Deny { reason } => (false, reason),
        }
    }
}

/// The `authorizer` and `authorizer.requestResource` variables of an admission expression
/// about `request` (an AdmissionReview request: its `resource`, `subResource`, `namespace` and
/// `name`), for the user of the request being served.
pub(crate) fn cel_variables(request: &Value) -> [(&'static str, kgc_cel::Value); 2] {
    let authorize: Arc<dyn kgc_cel::Authorize> = Arc::new(CelAuthorizer {
        rbac: REQUEST_RBAC.try_with(Clone::clone).ok().flatten(),
        user: crate::authn::current_user(),
    });
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let resource = kgc_cel::AuthzRequest {
        group: text(&request["resource"]["group"]),
        resource: text(&request["resource"]["resource"]),
        subresource: text(&request["subResource"]),
        namespace: text(&request["namespace"]),
        name: text(&request["name"]),
        ..kgc_cel::AuthzRequest::default()
    };
    [
        (
            "authorizer.requestResource",
            kgc_cel::library::authz::request_resource(Arc::clone(&authorize), resource),
        ),
        ("authorizer", kgc_cel::library::authz::authorizer(authorize)),
    ]
}

/// The RBAC authorizer, shared by every request and kept current by the process's informers
/// (one cache per RBAC resource, whose handlers apply each change to it).
#[derive(Default)]
pub struct Rbac {
    authorizer: RwLock<Authorizer>,
}

/// What keeps the authorizer current: the RBAC caches (their watches stop when it is dropped)
/// and the ClusterRole aggregation they trigger.
pub struct Follower {
    _caches: Vec<Cache<Value>>,
    aggregate: Arc<Notify>,
}

impl Rbac {
    /// Creates the bootstrap policy objects that are missing, loads every RBAC object the store
    /// holds through `informers`, and returns the authorizer, current before the first request
    /// is served; then [`Rbac::run`] aggregates ClusterRoles as they change.
    pub async fn start(
        store: &Store,
        informers: &Informers<InProcess>,
    ) -> Result<(Arc<Self>, Follower), Status> {
        bootstrap(store).await?;
        aggregate_cluster_roles(store).await;
        let rbac = Arc::new(Self::default());
        let aggregate = Arc::new(Notify::new());
        let catalog = store.catalog();
        let mut caches = Vec::new();
        for (resource, kind) in RBAC_RESOURCES {
            let Some(info) = catalog.get_group_resource(&GroupResource::new(RBAC_GROUP, resource))
            else {
                continue;
            };
            let cache = informers.cache::<Value>(Arc::clone(info));
            let (r, agg) = (Arc::clone(&rbac), Arc::clone(&aggregate));
            cache.on_change(Arc::new(move |key: &Key, obj: Option<&Value>| {
                match obj {
                    Some(o) => {
                        if let Err(err) = r.write().apply(o) {
                            tracing::warn!(error = %err, "RBAC object partly ignored");
                        }
                    }
                    None => r.write().remove(kind, &key.0, &key.1),
                }
                if resource == "clusterroles" {
                    agg.notify_one();
                }
            }));
            caches.push(cache);
        }
        for c in &caches {
            c.synced().await;
        }
        Ok((
            rbac,
            Follower {
                _caches: caches,
                aggregate,
            },
        ))
    }

    /// Runs ClusterRole aggregation whenever a ClusterRole changes (changes arriving together
    /// are aggregated once), until dropped.
    pub async fn run(store: Store, follower: Follower) {
        loop {
            follower.aggregate.notified().await;
            aggregate_cluster_roles(&store).await;
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Authorizer> {
        self.authorizer.write().unwrap_or_else(|p| p.into_inner())
    }

    /// A read view of the authorizer (decisions, reviews, escalation checks).
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, Authorizer> {
        self.authorizer.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Decides a request; `Err` is the 403 to answer.
    pub fn check(&self, attrs: &Attributes) -> Result<(), Status> {
        match self.read().authorize(attrs) {
            Decision::Allow => Ok(()),
            Decision::Deny { reason } => Err(Self::forbidden(attrs, &reason)),
        }
    }

    /// [`Self::check`] with the authorizer's reason, for the audit event's
    /// `authorization.k8s.io/reason` (filters/authorization.go): the binding that allowed the
    /// request (empty for `system:masters`), or the deny reason. Dearer than a plain check (the
    /// bindings are visited in upstream's order and the allowing one described), so only
    /// audited requests pay it.
    pub fn check_with_reason(&self, attrs: &Attributes) -> (Result<(), Status>, String) {
        let review = self.read().review(attrs);
        if review.allowed {
            (Ok(()), review.reason)
        } else {
            (Err(Self::forbidden(attrs, &review.reason)), review.reason)
        }
    }

    fn forbidden(attrs: &Attributes, reason: &str) -> Status {
        tracing::debug!(user = %attrs.user.name, verb = %attrs.verb, resource = %attrs.resource, path = %attrs.path, %reason, "forbidden");
        Status::forbidden_by_policy(
            &GroupResource::new(&attrs.api_group, &attrs.resource),
            &attrs.name,
            kgc_auth::forbidden_message_with_reason(attrs, reason),
        )
    }
}

/// Creates the default roles and bindings that do not exist yet (upstream reconciles them on
/// every start; kgc only adds what is missing, so an operator's edits stay).
async fn bootstrap(store: &Store) -> Result<(), Status> {
    let catalog = store.catalog();
    for obj in kgc_auth::bootstrap_policy() {
        let kind = obj["kind"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = obj["metadata"]["namespace"].as_str().unwrap_or_default();
        let Some(info) = catalog.by_kind(RBAC_GROUP, "v1", kind) else {
            continue;
        };
        if store.get(&info.group_resource(), namespace, name).is_some() {
            continue;
        }
        match store.create(info, namespace, obj.clone(), false).await {
            Ok(_) => {}
            Err(kgc_store::Error::Api(s)) if s.is(kgc_meta::Reason::AlreadyExists) => {}
            Err(e) => {
                return Err(Status::internal(format!(
                    "creating the bootstrap {kind} {name:?}: {e}"
                )));
            }
        }
    }
    Ok(())
}

/// The ClusterRole aggregation controller: rewrites the rules of every ClusterRole with an
/// `aggregationRule` to the union of the ClusterRoles it selects
/// (`pkg/controller/clusterroleaggregation`).
async fn aggregate_cluster_roles(store: &Store) {
    let gr = GroupResource::new(RBAC_GROUP, "clusterroles");
    let Ok(list) = store.list(&gr, &kgc_store::ListOptions::default()) else {
        return;
    };
    let roles: Vec<Value> = list.items.iter().map(|o| o.value()).collect();
    let catalog = store.catalog();
    let Some(info) = catalog.get_group_resource(&gr) else {
        return;
    };
    for (name, rules) in kgc_auth::aggregate(&roles) {
        let rules: Vec<Value> = rules.iter().map(kgc_auth::PolicyRule::to_json).collect();
        let r = store
            .update(info, "", &name, None, false, |mut current| {
                current["rules"] = Value::Array(rules);
                Ok(current)
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(clusterrole = %name, error = %e, "aggregating a ClusterRole");
        }
    }
}

/// Acting as another user (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*` headers, as
/// `kubectl --as` sends them): the requester needs the `impersonate` verb on each thing it
/// claims (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`). Returns the user the
/// request then runs as; without these headers, the requester itself.
pub fn impersonate(
    rbac: &Rbac,
    requester: Arc<UserInfo>,
    headers: &axum::http::HeaderMap,
) -> Result<Arc<UserInfo>, Status> {
    let values = |name: &str| -> Result<Vec<String>, Status> {
        headers
            .get_all(name)
            .iter()
            .map(|v| {
                v.to_str().map(str::to_owned).map_err(|_| {
                    Status::bad_request(format!("the {name} header is not valid text"))
                })
            })
            .collect()
    };
    let users = values("impersonate-user")?;
    let groups = values("impersonate-group")?;
    let uids = values("impersonate-uid")?;
    let mut extra: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-") {
            let value = value
                .to_str()
                .map_err(|_| Status::bad_request(format!("the {name} header is not valid text")))?;
            // Keys are percent-encoded in header names (`%2F` for `/`).
            // Upstream (`unescapeExtraKey`) keeps a key whose escapes do not decode as it is.
            let key = crate::request::percent_decode(key).unwrap_or_else(|_| key.to_owned());
            extra.push((key, value.to_owned()));
        }
    }
    if users.is_empty() {
        if groups.is_empty() && uids.is_empty() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(Status::bad_request(
            "requested impersonation of groups, uid or extra without impersonating a user",
        ));
    }
    if users.len() > 1 || uids.len() > 1 {
        return Err(Status::bad_request(
            "only one user and one uid may be impersonated",
        ));
    }
    let check = |namespace: &str, group: &str, resource: &str, sub: &str, name: &str| {
        rbac.check(&Attributes {
            user: (*requester).clone(),
            verb: "impersonate".into(),
            namespace: namespace.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        })
    };
    let name = users[0].clone();
    let mut user = UserInfo {
        name: name.clone(),
        ..UserInfo::default()
    };
    match crate::serviceaccount::split_username(&name) {
        Some((ns, sa)) => {
            check(ns, "", "serviceaccounts", "", sa)?;
            user.groups = crate::serviceaccount::user_info(ns, sa, "").groups;
        }
        None => check("", "", "users", "", &name)?,
    }
    for g in &groups {
        check("", "", "groups", "", g)?;
        if !user.groups.contains(g) {
            user.groups.push(g.clone());
        }
    }
    if let Some(uid) = uids.first() {
        check("", "authentication.k8s.io", "uids", "", uid)?;
        user.uid = uid.clone();
    }
    for (key, value) in extra {
        check("", "authentication.k8s.io", "userextras", &key, &value)?;
        user.extra.entry(key).or_default().push(value);
    }
    let implicit = if name == "system:anonymous" {
        kgc_auth::SYSTEM_UNAUTHENTICATED
    } else {
        kgc_auth::SYSTEM_AUTHENTICATED
    };
    if !user.groups.iter().any(|g| g == implicit) {
        user.groups.push(implicit.to_owned());
    }
    Ok(Arc::new(user))
}

/// The attributes of a request (`RequestInfoFactory.NewRequestInfo`): resource requests under
/// `/api` and `/apis` with verb, namespace, group, resource, subresource and name; everything
/// else a non-resource request with the lower-case method as verb.
pub fn attributes(user: &UserInfo, method: &Method, path: &str, query: &Query) -> Attributes {
    let non_resource = || Attributes {
        user: user.clone(),
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_owned(),
        ..Attributes::default()
    };
    // Empty segments are dropped as the router drops them (`request::parse`), so that what is
    // authorized is what is served: `/api/v1//namespaces/x/secrets` reads secrets in `x`.
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() < 3 {
        return non_resource();
    }
    let (group, mut rest) = match parts[0] {
        "api" => ("", &parts[2..]),
        "apis" if parts.len() >= 4 => (parts[1], &parts[3..]),
        _ => return non_resource(),
    };
    let mut verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    };
    if matches!(rest.first(), Some(&("watch" | "proxy"))) {
        if rest.len() < 2 {
            // Upstream fails the request; treat it as the non-resource path it names.
            return non_resource();
        }
        verb = if rest[0] == "watch" { "watch" } else { "proxy" };
        rest = &rest[1..];
    }
    let mut namespace = "";
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = rest[1];
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let resource = rest.first().copied().unwrap_or_default();
    let mut name = rest.get(1).copied().unwrap_or_default().to_owned();
    let subresource = if verb == "proxy" {
        ""
    } else {
        rest.get(2).copied().unwrap_or_default()
    };
    let mut verb = verb.to_owned();
    if name.is_empty() && verb == "get" {
        // The router watches on exactly this flag, so the decision covers what is served.
        verb = if query.flag("watch") { "watch" } else { "list" }.to_owned();
        if let Some(n) = exact_name(query.get("fieldSelector").unwrap_or_default()) {
            name = n;
        }
    }
    if name.is_empty() && verb == "delete" {
        verb = "deletecollection".to_owned();
    }
    Attributes {
        user: user.clone(),
        verb,
        namespace: namespace.to_owned(),
        api_group: group.to_owned(),
        resource: resource.to_owned(),
        subresource: subresource.to_owned(),
        name,
        resource_request: true,
        path: path.to_owned(),
    }
}

/// `fieldSelector` requiring `metadata.name` to equal a valid path segment (the name a list or
/// watch of one object is authorized for).
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|req| {
        let v = req
            .strip_prefix("metadata.name==")
            .or_else(|| req.strip_prefix("metadata.name="))?;
        let valid = !v.is_empty() && v != "." && v != ".." && !v.contains(['/', '%']);
        valid.then(|| v.to_owned())
    })
}

/// Validates an RBAC object being written and refuses privilege escalation by the requesting
/// user: a Role or ClusterRole may only grant what its author holds (or may `escalate`), a
/// binding only bind what its author holds (or may `bind`).
pub(crate) fn admit_write(
    rbac: Option<&Rbac>,
    info: &ResourceInfo,
    req: &RequestInfo,
    obj: &Value,
) -> Result<(), Status> {
    if info.group != RBAC_GROUP || req.subresource.is_some() {
        return Ok(());
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let errors = kgc_auth::validate(obj);
    if !errors.is_empty() {
        return Err(Status::invalid(RBAC_GROUP, &info.kind, name, &errors));
    }
    let (Some(rbac), Some(user)) = (rbac, crate::authn::current_user()) else {
        return Ok(());
    };
    let authorizer = rbac.read();
    let checked = match info.plural.as_str() {
        "roles" | "clusterroles" => {
            authorizer.can_write_role(&user, obj, !matches!(req.verb, Verb::Create))
        }
        "rolebindings" | "clusterrolebindings" => authorizer.can_bind(&user, obj),
        _ => Ok(()),
    };
    checked.map_err(|why| Status::forbidden(&info.group_resource(), name, &why))
}

/// The update-only rules of an RBAC object (a binding's `roleRef` is immutable).
pub(crate) fn admit_update(info: &ResourceInfo, old: &Value, new: &Value) -> Result<(), Status> {
    if info.group != RBAC_GROUP {
        return Ok(());
    }
    let errors = kgc_auth::validate_update(new, old);
    if errors.is_empty() {
        return Ok(());
    }
    let name = new["metadata"]["name"].as_str().unwrap_or_default();
    Err(Status::invalid(RBAC_GROUP, &info.kind, name, &errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: Method, path: &str, query: &str) -> Attributes {
        let a = attributes(
            &UserInfo::default(),
            &method,
            path,
            &Query::parse(Some(query)),
        );
        Attributes {
            user: UserInfo::default(),
            ..a
        }
    }

    fn res(verb: &str, ns: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            namespace: ns.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            ..Attributes::default()
        }
    }

    /// Upstream's `TestGetAPIRequestInfo` cases (requestinfo_test.go).
    #[test]
    fn request_info_like_upstream() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces",
                "",
                res("list", "", "", "namespaces", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other",
                "",
                res("get", "other", "", "namespaces", "", "other"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                "",
                res("list", "other", "", "pods", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo",
                "",
                res("get", "other", "", "pods", "", "foo"),
            ),
            (
                Method::HEAD,
                "/api/v1/namespaces/other/pods/foo",
                "",
                res("get", "other", "", "pods", "", "foo"),
            ),
            (
                Method::GET,
                "/api/v1/pods",
                "",
                res("list", "", "", "pods", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/watch/pods",
                "",
                res("watch", "", "", "pods", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods",
                "watch=true",
                res("watch", "", "", "pods", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                "fieldSelector=metadata.name%3Dfoo",
                res("list", "other", "", "pods", "", "foo"),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/other/pods/foo",
                "",
                res("watch", "other", "", "pods", "", "foo"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/other/pods",
                "",
                res("create", "other", "", "pods", "", ""),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/pods/foo",
                "",
                res("update", "other", "", "pods", "", "foo"),
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/other/pods/foo",
                "",
                res("patch", "other", "", "pods", "", "foo"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods/foo",
                "",
                res("delete", "other", "", "pods", "", "foo"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods",
                "",
                res("deletecollection", "other", "", "pods", "", ""),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/finalize",
                "",
                res("update", "other", "", "namespaces", "finalize", "other"),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/status",
                "",
                res("update", "other", "", "namespaces", "status", "other"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/ns/serviceaccounts/sa/token",
                "",
                res("create", "ns", "", "serviceaccounts", "token", "sa"),
            ),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/ns/deployments/d/scale",
                "",
                res("get", "ns", "apps", "deployments", "scale", "d"),
            ),
            (
                Method::GET,
                "/apis/extensions/v1beta1/namespaces/other/pods",
                "",
                res("list", "other", "extensions", "pods", "", ""),
            ),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                "",
                res(
                    "create",
                    "",
                    "authorization.k8s.io",
                    "selfsubjectaccessreviews",
                    "",
                    "",
                ),
            ),
        ];
        for (method, path, query, mut want) in cases {
            want.path = path.to_owned();
            assert_eq!(
                attrs(method.clone(), path, query),
                want,
                "{method} {path}?{query}"
            );
        }
    }

    #[test]
    fn non_resource_requests() {
        for (path, verb) in [
            ("/healthz", "get"),
            ("/api", "get"),
            ("/api/v1", "get"),
            ("/apis/apps", "get"),
            ("/apis/apps/v1", "get"),
            ("/metrics", "get"),
            ("/version", "get"),
        ] {
            let a = attrs(Method::GET, path, "");
            assert!(!a.resource_request, "{path}");
            assert_eq!((a.verb.as_str(), a.path.as_str()), (verb, path));
        }
        assert_eq!(attrs(Method::POST, "/logs", "").verb, "post");
    }

    #[test]
    fn empty_segments_are_ignored_as_the_router_ignores_them() {
        let a = attrs(Method::GET, "/api/v1//namespaces//other/secrets/", "");
        assert_eq!(
            (
                a.verb.as_str(),
                a.namespace.as_str(),
                a.resource.as_str(),
                a.name.as_str()
            ),
            ("list", "other", "secrets", "")
        );
    }

    #[test]
    fn exact_names() {
        assert_eq!(exact_name("metadata.name=foo"), Some("foo".into()));
        assert_eq!(exact_name("a=b,metadata.name==foo"), Some("foo".into()));
        assert_eq!(exact_name("metadata.name!=foo"), None);
        assert_eq!(exact_name("metadata.name=a/b"), None);
        assert_eq!(exact_name(""), None);
    }
}
