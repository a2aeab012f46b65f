//! The virtual, create-only resources of authentication and authorization: SelfSubjectReview
//! (`kubectl auth whoami`), TokenReview (for servers that delegate authentication to this one),
//! SelfSubjectAccessReview, SubjectAccessReview and LocalSubjectAccessReview (`kubectl auth
//! can-i`, delegated authorization), SelfSubjectRulesReview (`kubectl auth can-i --list`), and
//! TokenRequest, the `serviceaccounts/token` subresource (`kubectl create token`). None is
//! stored: each answers from the request's user, the authenticator, the authorizer and the token
//! signer.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_auth::{Attributes, UserInfo};
use kgc_meta::validation::FieldError;
use kgc_meta::{GroupResource, Status};
use serde_json::{Value, json};

use crate::ApiServer;
use crate::body::{self, ApiError, media_type};
use crate::request::{Query, RequestInfo, Verb};
use crate::serviceaccount::{Bound, Claims, ObjectRef};

/// Upstream's TokenRequest bounds and default (`pkg/apis/authentication/validation`).
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;
const DEFAULT_EXPIRATION: i64 = 3600;

/// Whether this request is one of ours.
pub fn handles(req: &RequestInfo) -> bool {
    let review = kgc_meta::catalog::REVIEWS
        .iter()
        .any(|(g, _, r, _)| *g == req.group && *r == req.resource);
    let token = req.group.is_empty()
        && req.resource == "serviceaccounts"
        && req.subresource.as_deref() == Some("token");
    review || token
}

/// The user of a request: the authenticated one, or on the insecure port upstream's
/// `system:unsecured` superuser.
fn requester() -> UserInfo {
    match crate::authn::current_user() {
        Some(u) => (*u).clone(),
        None => UserInfo {
            name: "system:unsecured".into(),
            groups: vec![
                kgc_auth::SYSTEM_MASTERS.into(),
                kgc_auth::SYSTEM_AUTHENTICATED.into(),
            ],
            ..UserInfo::default()
        },
    }
}

pub async fn serve(
    api: &ApiServer,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if req.verb != Verb::Create {
        return Err(Status::method_not_allowed(format!(
            "{} is not supported on resources of kind {:?}",
            req.verb.as_str(),
            GroupResource::new(&req.group, &req.resource).to_string()
        ))
        .into());
    }
    // A review exists only at its own scope (upstream registers no other route).
    let namespaced = kgc_meta::catalog::REVIEWS.iter().any(|(g, _, r, scope)| {
        *g == req.group && *r == req.resource && *scope == kgc_meta::catalog::Scope::Namespaced
    });
    if req.resource != "serviceaccounts" && namespaced != req.namespace.is_some() {
        return Err(Status::no_such_resource().into());
    }
    let bytes = body::read(body).await?;
    let mut obj = body::decode(&media_type(headers), &bytes)?.value;
    if !obj.is_object() {
        return Err(Status::bad_request("the body of the request must be a JSON object").into());
    }
    let user = requester();
    let (kind, status) = match req.resource.as_str() {
        "serviceaccounts" => return token_request(api, req, query, &obj).await,
        "selfsubjectreviews" => ("SelfSubjectReview", json!({"userInfo": user_json(&user)})),
        "tokenreviews" => ("TokenReview", token_review(api, &obj["spec"])?),
        "selfsubjectaccessreviews" => {
            let attrs = review_attributes(user, &obj["spec"])
                .map_err(|e| invalid("SelfSubjectAccessReview", vec![e]))?;
            ("SelfSubjectAccessReview", access_review(api, &attrs))
        }
        "subjectaccessreviews" => {
            let attrs = subject_access_review("SubjectAccessReview", &obj["spec"], Vec::new())?;
            ("SubjectAccessReview", access_review(api, &attrs))
        }
        "localsubjectaccessreviews" => {
            let ns = req.namespace.as_deref().unwrap_or_default();
            let errors = local_review_errors(&mut obj, ns)?;
            let attrs = subject_access_review("LocalSubjectAccessReview", &obj["spec"], errors)?;
            ("LocalSubjectAccessReview", access_review(api, &attrs))
        }
        "selfsubjectrulesreviews" => {
            let ns = str_of(&obj["spec"]["namespace"]);
            let status = match &api.rbac {
                Some(rbac) => rbac.read().rules_for(&user, ns).to_json(),
                None => json!({
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    "incomplete": false,
                }),
            };
            ("SelfSubjectRulesReview", status)
        }
        _ => return Err(Status::no_such_resource().into()),
    };
    let mut out = obj;
    out["apiVersion"] = json!(format!("{}/{}", req.group, req.version));
    out["kind"] = json!(kind);
    if !out["metadata"].is_object() {
        out["metadata"] = json!({});
    }
    out["metadata"]["creationTimestamp"] = Value::Null;
    out["status"] = status;
    Ok(body::json(StatusCode::CREATED, &out))
}

/// A TokenReview's status (`pkg/registry/authentication/tokenreview/storage.go`): the token is
/// authenticated as a request's bearer token would be, for `spec.audiences` (the API server's
/// own audience when none are given); `status.audiences` are those the token is good for. An
/// invalid token is not an error of the review: it answers `authenticated` false (omitted, as Go
/// omits it) and why in `status.error`.
fn token_review(api: &ApiServer, spec: &Value) -> Result<Value, ApiError> {
    let token = str_of(&spec["token"]);
    if token.is_empty() {
        return Err(
            Status::bad_request("token is required for TokenReview in authentication").into(),
        );
    }
    // The insecure port authenticates nothing: upstream returns the review untouched.
    let Some(authn) = &api.authn else {
        return Ok(json!({"user": {}}));
    };
    let mut audiences = strings(&spec["audiences"]);
    if audiences.is_empty() {
        audiences = authn.api_audiences().to_vec();
    }
    Ok(match authn.authenticate_token(token, &audiences) {
        Ok((user, audiences)) => {
            json!({"authenticated": true, "user": user_json(&user), "audiences": audiences})
        }
        Err(why) => json!({"user": {}, "error": why}),
    })
}

fn access_review(api: &ApiServer, attrs: &Attributes) -> Value {
    match &api.rbac {
        Some(rbac) => rbac.read().review(attrs).to_json(),
        // The insecure port authorizes everything.
        None => json!({"allowed": true}),
    }
}

/// The attributes a review asks about: exactly one of `resourceAttributes` and
/// `nonResourceAttributes`.
fn review_attributes(user: UserInfo, spec: &Value) -> Result<Attributes, FieldError> {
    let (res, non) = (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
    match (res.is_object(), non.is_object()) {
        (true, false) => Ok(Attributes {
            user,
            verb: str_of(&res["verb"]).to_owned(),
            namespace: str_of(&res["namespace"]).to_owned(),
            api_group: str_of(&res["group"]).to_owned(),
            resource: str_of(&res["resource"]).to_owned(),
            subresource: str_of(&res["subresource"]).to_owned(),
            name: str_of(&res["name"]).to_owned(),
            resource_request: true,
            path: String::new(),
        }),
        (false, true) => Ok(Attributes {
            user,
            verb: str_of(&non["verb"]).to_owned(),
            path: str_of(&non["path"]).to_owned(),
            ..Attributes::default()
        }),
        (both, _) => Err(FieldError::invalid(
            "spec.resourceAttributes",
            if both { "{...}" } else { "null" },
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

/// The attributes of a SubjectAccessReview or LocalSubjectAccessReview, about the user the spec
/// names (`pkg/apis/authorization/validation`: a user or a group is required); `errors` are the
/// caller's own findings, reported with these in one 422.
fn subject_access_review(
    kind: &str,
    spec: &Value,
    mut errors: Vec<FieldError>,
) -> Result<Attributes, ApiError> {
    let subject = UserInfo {
        name: str_of(&spec["user"]).to_owned(),
        uid: str_of(&spec["uid"]).to_owned(),
        groups: strings(&spec["groups"]),
        extra: spec["extra"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    };
    let nobody = subject.name.is_empty() && subject.groups.is_empty();
    let attrs = review_attributes(subject, spec);
    let mut all = Vec::new();
    if let Err(e) = &attrs {
        all.push(e.clone());
    }
    if nobody {
        all.push(FieldError::invalid(
            "spec.user",
            "",
            "at least one of user or group must be specified",
        ));
    }
    all.append(&mut errors);
    match attrs {
        Ok(attrs) if all.is_empty() => Ok(attrs),
        _ => Err(invalid(kind, all)),
    }
}

/// What a LocalSubjectAccessReview adds to a SubjectAccessReview's rules
/// (`ValidateLocalSubjectAccessReview`): it lives in the namespace of its URL (filled in when
/// absent, as for every namespaced create), its metadata holds nothing else, and it asks about
/// resources in that namespace only.
fn local_review_errors(obj: &mut Value, ns: &str) -> Result<Vec<FieldError>, ApiError> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    match obj["metadata"]["namespace"].as_str() {
        None | Some("") => obj["metadata"]["namespace"] = json!(ns),
        Some(n) if n == ns => {}
        Some(_) => {
            return Err(Status::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )
            .into());
        }
    }
    let mut errors = Vec::new();
    let meta = &obj["metadata"];
    let only_namespace = meta.as_object().is_some_and(|m| {
        m.iter().all(|(k, v)| {
            k == "namespace"
                || k == "managedFields"
                || v.is_null()
                || *v == json!("")
                || *v == json!({})
        })
    });
    if !only_namespace {
        errors.push(FieldError::invalid_value(
            "metadata",
            meta,
            "must be empty except for namespace",
        ));
    }
    let spec = &obj["spec"];
    if spec["resourceAttributes"].is_object() {
        let asked = str_of(&spec["resourceAttributes"]["namespace"]);
        if asked != ns {
            errors.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                asked,
                "must match metadata.namespace",
            ));
        }
    }
    if spec["nonResourceAttributes"].is_object() {
        errors.push(FieldError::invalid_value(
            "spec.nonResourceAttributes",
            &spec["nonResourceAttributes"],
            "disallowed on this kind of request",
        ));
    }
    Ok(errors)
}

/// `POST .../serviceaccounts/NAME/token`: a signed token for an existing service account.
async fn token_request(
    api: &ApiServer,
    req: &RequestInfo,
    query: &Query,
    obj: &Value,
) -> Result<Response, ApiError> {
    let signer = api
        .authn
        .as_ref()
        .and_then(|a| a.service_accounts())
        .ok_or_else(|| {
            Status::method_not_allowed(
                "service-account tokens are not issued on the insecure port (--insecure-http)",
            )
        })?;
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let gr = GroupResource::new("", "serviceaccounts");
    let sa = api.store.get_or_not_found(&gr, &ns, &name)?;
    let mut obj = obj.clone();
    obj["apiVersion"] = json!("authentication.k8s.io/v1");
    obj["kind"] = json!("TokenRequest");
    let catalog = api.store.catalog();
    let info = catalog
        .get("", "v1", "serviceaccounts")
        .ok_or_else(|| Status::internal("serviceaccounts are not served"))?;
    let warnings = api
        .admit_subresource_create(info, req, query, &mut obj)
        .await?;
    let spec = &obj["spec"];
    let expiration = match &spec["expirationSeconds"] {
        Value::Null => DEFAULT_EXPIRATION,
        v => v.as_i64().ok_or_else(|| {
            Status::bad_request("spec.expirationSeconds: must be an integer number of seconds")
        })?,
    };
    if expiration < MIN_EXPIRATION {
        return Err(invalid(
            "TokenRequest",
            vec![FieldError::invalid(
                "spec.expirationSeconds",
                expiration.to_string(),
                "may not specify a duration less than 10 minutes",
            )],
        ));
    }
    if expiration > MAX_EXPIRATION {
        return Err(invalid(
            "TokenRequest",
            vec![FieldError::invalid(
                "spec.expirationSeconds",
                expiration.to_string(),
                "may not specify a duration larger than 2^32 seconds",
            )],
        ));
    }
    let bound = bound_objects(api, &ns, &name, &spec["boundObjectRef"])?;
    let mut audiences = strings(&spec["audiences"]);
    if audiences.is_empty() {
        audiences = signer.api_audiences().to_vec();
    }
    let now = api.store.clock().now();
    let claims = Claims {
        namespace: ns.clone(),
        name: name.clone(),
        uid: sa.uid.clone(),
        jti: uuid::Uuid::new_v4().to_string(),
        bound,
    };
    let token = if query.dry_run()? {
        String::new()
    } else {
        signer
            .issue(&claims, &audiences, now.as_second(), expiration)
            .map_err(|e| Status::internal(e.to_string()))?
    };
    let expires = now
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .map_err(|e| Status::internal(e.to_string()))?;
    let expires = kgc_meta::time::format_time(expires);
    let out = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": spec["boundObjectRef"],
        },
        "status": {"token": token, "expirationTimestamp": expires},
    });
    Ok(crate::handlers::with_warnings(
        body::json(StatusCode::CREATED, &out),
        &warnings,
    ))
}

/// The objects a TokenRequest's `spec.boundObjectRef` binds the token to
/// (`pkg/registry/core/serviceaccount/storage/token.go`): an existing Pod running as the
/// service account (its node is named too), Secret or Node, whose uid matches the reference's
/// when it gives one.
fn bound_objects(api: &ApiServer, ns: &str, sa: &str, r: &Value) -> Result<Bound, ApiError> {
    if r.is_null() {
        return Ok(Bound::default());
    }
    let api_version = str_of(&r["apiVersion"]);
    if !matches!(api_version, "" | "v1") {
        return Err(invalid(
            "TokenRequest",
            vec![FieldError::not_supported(
                "spec.boundObjectRef.apiVersion",
                api_version,
                &["v1"],
            )],
        ));
    }
    let (kind, name) = (str_of(&r["kind"]), str_of(&r["name"]));
    let (resource, namespace) = match kind {
        "Pod" => ("pods", ns),
        "Secret" => ("secrets", ns),
        "Node" => ("nodes", ""),
        _ => {
            return Err(invalid(
                "TokenRequest",
                vec![FieldError::not_supported(
                    "spec.boundObjectRef.kind",
                    kind,
                    &["Pod", "Secret", "Node"],
                )],
            ));
        }
    };
    if name.is_empty() {
        return Err(invalid(
            "TokenRequest",
            vec![FieldError::required("spec.boundObjectRef.name", "")],
        ));
    }
    let obj = api
        .store
        .get_or_not_found(&GroupResource::new("", resource), namespace, name)?;
    let uid = str_of(&r["uid"]);
    if !uid.is_empty() && uid != obj.uid {
        return Err(Status::conflict(
            &GroupResource::new("", kind),
            name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. \
                 The object might have been deleted and then recreated"
            ),
        )
        .into());
    }
    let this = Some(ObjectRef {
        name: name.to_owned(),
        uid: obj.uid.clone(),
    });
    Ok(match kind {
        "Pod" => {
            let pod: Value = serde_json::from_str(&obj.raw)
                .map_err(|e| Status::internal(format!("reading pod {ns}/{name}: {e}")))?;
            // The ServiceAccount admission plugin defaults an unset name to `default`.
            let runs_as = match str_of(&pod["spec"]["serviceAccountName"]) {
                "" => "default",
                n => n,
            };
            if runs_as != sa {
                return Err(Status::bad_request(format!(
                    "cannot bind token for serviceaccount {sa:?} to pod running with different \
                     serviceaccount name."
                ))
                .into());
            }
            let node = match str_of(&pod["spec"]["nodeName"]) {
                "" => None,
                node => Some(ObjectRef {
                    name: node.to_owned(),
                    uid: api
                        .store
                        .get(&GroupResource::new("", "nodes"), "", node)
                        .map(|n| n.uid.clone())
                        .unwrap_or_default(),
                }),
            };
            Bound {
                pod: this,
                node,
                ..Bound::default()
            }
        }
        "Secret" => Bound {
            secret: this,
            ..Bound::default()
        },
        _ => Bound {
            node: this,
            ..Bound::default()
        },
    })
}

fn invalid(kind: &str, errors: Vec<FieldError>) -> ApiError {
    let group = if kind == "TokenRequest" || kind == "SelfSubjectReview" {
        "authentication.k8s.io"
    } else {
        "authorization.k8s.io"
    };
    Status::invalid(group, kind, "", &errors).into()
}

fn user_json(u: &UserInfo) -> Value {
    let mut o = json!({"username": u.name, "groups": u.groups});
    if !u.uid.is_empty() {
        o["uid"] = json!(u.uid);
    }
    if !u.extra.is_empty() {
        o["extra"] = json!(u.extra);
    }
    o
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
