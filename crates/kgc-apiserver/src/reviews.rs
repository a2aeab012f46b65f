//! The virtual, create-only resources of authentication and authorization: SelfSubjectReview
//! (`kubectl auth whoami`), SelfSubjectAccessReview and SubjectAccessReview (`kubectl auth
//! can-i`), SelfSubjectRulesReview (`kubectl auth can-i --list`), and TokenRequest, the
//! `serviceaccounts/token` subresource (`kubectl create token`). None is stored: each answers
//! from the request's user, the authorizer and the token signer.

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
use crate::serviceaccount::Claims;

/// Upstream's TokenRequest bounds and default (`pkg/apis/authentication/validation`).
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;
const DEFAULT_EXPIRATION: i64 = 3600;

/// Whether this request is one of ours.
pub fn handles(req: &RequestInfo) -> bool {
    let review = kgc_meta::catalog::REVIEWS
        .iter()
        .any(|(g, _, r)| *g == req.group && *r == req.resource);
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
    let bytes = body::read(body).await?;
    let obj = body::decode(&media_type(headers), &bytes)?;
    let user = requester();
    let (kind, status) = match req.resource.as_str() {
        "serviceaccounts" => return token_request(api, req, query, &obj).await,
        "selfsubjectreviews" => ("SelfSubjectReview", json!({"userInfo": user_json(&user)})),
        "selfsubjectaccessreviews" => {
            let attrs = review_attributes("SelfSubjectAccessReview", user, &obj["spec"])?;
            ("SelfSubjectAccessReview", access_review(api, &attrs))
        }
        "subjectaccessreviews" => {
            let spec = &obj["spec"];
            let subject = UserInfo {
                name: str_of(&spec["user"]).to_owned(),
                uid: str_of(&spec["uid"]).to_owned(),
                groups: strings(&spec["groups"]),
                extra: spec["extra"]
                    .as_object()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
                    .unwrap_or_default(),
            };
            if subject.name.is_empty() && subject.groups.is_empty() {
                return Err(invalid(
                    "SubjectAccessReview",
                    FieldError::invalid(
                        "spec.user",
                        "",
                        "at least one of user or group must be specified",
                    ),
                ));
            }
            let attrs = review_attributes("SubjectAccessReview", subject, spec)?;
            ("SubjectAccessReview", access_review(api, &attrs))
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
    let mut out = obj.clone();
    out["apiVersion"] = json!(format!("{}/{}", req.group, req.version));
    out["kind"] = json!(kind);
    if !out["metadata"].is_object() {
        out["metadata"] = json!({});
    }
    out["metadata"]["creationTimestamp"] = Value::Null;
    out["status"] = status;
    Ok(body::json(StatusCode::CREATED, &out))
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
fn review_attributes(kind: &str, user: UserInfo, spec: &Value) -> Result<Attributes, ApiError> {
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
        (both, _) => Err(invalid(
            kind,
            FieldError::invalid(
                "spec.resourceAttributes",
                if both { "{...}" } else { "null" },
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ),
        )),
    }
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
            FieldError::invalid(
                "spec.expirationSeconds",
                expiration.to_string(),
                "may not specify a duration less than 10 minutes",
            ),
        ));
    }
    if expiration > MAX_EXPIRATION {
        return Err(invalid(
            "TokenRequest",
            FieldError::invalid(
                "spec.expirationSeconds",
                expiration.to_string(),
                "may not specify a duration larger than 2^32 seconds",
            ),
        ));
    }
    if !spec["boundObjectRef"].is_null() {
        return Err(invalid(
            "TokenRequest",
            FieldError::invalid(
                "spec.boundObjectRef",
                "{...}",
                "bound tokens are not supported by kgc",
            ),
        ));
    }
    let mut audiences = strings(&spec["audiences"]);
    if audiences.is_empty() {
        audiences.push(signer.api_audience().to_owned());
    }
    let now = jiff::Timestamp::now();
    let claims = Claims {
        namespace: ns.clone(),
        name: name.clone(),
        uid: sa.uid.clone(),
        jti: uuid::Uuid::new_v4().to_string(),
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
        .map_err(|e| Status::internal(e.to_string()))?
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let out = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
        "spec": {"audiences": audiences, "expirationSeconds": expiration, "boundObjectRef": null},
        "status": {"token": token, "expirationTimestamp": expires},
    });
    Ok(body::json(StatusCode::CREATED, &out))
}

fn invalid(kind: &str, e: FieldError) -> ApiError {
    let group = if kind == "TokenRequest" || kind == "SelfSubjectReview" {
        "authentication.k8s.io"
    } else {
        "authorization.k8s.io"
    };
    Status::invalid(group, kind, "", &[e]).into()
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
