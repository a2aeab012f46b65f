//! The AdmissionReview a webhook gets and the answer it gives (kubernetes/apiserver
//! `pkg/admission/plugin/webhook/request/admissionreview.go`: `CreateV1AdmissionReview`,
//! `VerifyAdmissionResponse`).

use std::collections::BTreeMap;

use base64::Engine;
use kgc_auth::UserInfo;
use serde::Serialize;
use serde_json::Value;

/// `group/version/kind` or `group/version/resource` as the review spells them.
pub(crate) struct Gvx<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub name: &'a str,
}

/// The request of an AdmissionReview.
pub(crate) struct Request<'a> {
    pub uid: &'a str,
    pub kind: Gvx<'a>,
    pub resource: Gvx<'a>,
    pub sub_resource: &'a str,
    pub request_kind: Gvx<'a>,
    pub request_resource: Gvx<'a>,
    pub name: &'a str,
    pub namespace: &'a str,
    pub operation: &'a str,
    pub user: Option<&'a UserInfo>,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    pub options: &'a Value,
}

/// The AdmissionReview of `version` (`v1` or `v1beta1`, identical but for the apiVersion),
/// written straight from the borrowed request: a webhook called on every write should cost a
/// round trip, not a copy of the object into a JSON tree printed in a second pass.
pub(crate) fn body(version: &str, r: &Request<'_>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Review<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'a str,
        kind: &'static str,
        request: Wire<'a>,
    }
    let api_version = format!("admission.k8s.io/{version}");
    let review = Review {
        api_version: &api_version,
        kind: "AdmissionReview",
        request: Wire::of(r),
    };
    // Strings, string maps and `Value`s always serialize.
    serde_json::to_vec(&review).unwrap_or_default()
}

/// The `request` of an AdmissionReview, which CEL expressions also read as `request`.
pub(crate) fn request(r: &Request<'_>) -> Value {
    serde_json::to_value(Wire::of(r)).unwrap_or_default()
}

#[derive(Serialize)]
struct Gvk<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
}

#[derive(Serialize)]
struct Gvr<'a> {
    group: &'a str,
    version: &'a str,
    resource: &'a str,
}

impl<'a> Gvx<'a> {
    fn kind(&self) -> Gvk<'a> {
        Gvk {
            group: self.group,
            version: self.version,
            kind: self.name,
        }
    }

    fn resource(&self) -> Gvr<'a> {
        Gvr {
            group: self.group,
            version: self.version,
            resource: self.name,
        }
    }
}

/// `userInfo` (authentication/v1 `UserInfo`'s JSON names).
#[derive(Serialize)]
struct User<'a> {
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    groups: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<&'a BTreeMap<String, Vec<String>>>,
}

/// `request` as it is sent (admission/v1 `AdmissionRequest`'s JSON names).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    uid: &'a str,
    kind: Gvk<'a>,
    resource: Gvr<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    sub_resource: &'a str,
    request_kind: Gvk<'a>,
    request_resource: Gvr<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    request_sub_resource: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    operation: &'a str,
    user_info: User<'a>,
    object: Option<&'a Value>,
    old_object: Option<&'a Value>,
    dry_run: bool,
    options: &'a Value,
}

impl<'a> Wire<'a> {
    fn of(r: &Request<'a>) -> Self {
        let user_info = match r.user {
            Some(u) => User {
                username: &u.name,
                uid: &u.uid,
                groups: u.groups.iter().map(String::as_str).collect(),
                extra: Some(&u.extra).filter(|e| !e.is_empty()),
            },
            // The insecure port: kube-apiserver's old insecure port served as this user.
            None => User {
                username: "system:unsecured",
                uid: "",
                groups: vec!["system:masters", "system:authenticated"],
                extra: None,
            },
        };
        Self {
            uid: r.uid,
            kind: r.kind.kind(),
            resource: r.resource.resource(),
            sub_resource: r.sub_resource,
            request_kind: r.request_kind.kind(),
            request_resource: r.request_resource.resource(),
            request_sub_resource: r.sub_resource,
            name: r.name,
            namespace: r.namespace,
            operation: r.operation,
            user_info,
            object: r.object,
            old_object: r.old_object,
            dry_run: r.dry_run,
            options: r.options,
        }
    }
}

/// What a webhook answered.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub allowed: bool,
    /// `response.status` (a `metav1.Status`), when the webhook gave one.
    pub status: Value,
    /// The JSON patch to apply (mutating webhooks).
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
    /// `auditAnnotations`, which go into the request's audit event as `<webhook>/<key>`.
    pub audit_annotations: Vec<(String, String)>,
}

/// Checks and reads an answer (`VerifyAdmissionResponse`); the error is the reason the answer
/// is unusable.
pub(crate) fn parse(
    version: &str,
    uid: &str,
    mutating: bool,
    bytes: &[u8],
) -> Result<Response, String> {
    let review: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let want = format!("admission.k8s.io/{version}");
    let (api_version, kind) = (
        review["apiVersion"].as_str().unwrap_or_default(),
        review["kind"].as_str().unwrap_or_default(),
    );
    // v1beta1 answers were never checked for their type upstream; v1 answers must say it.
    if version == "v1" && (api_version != want || kind != "AdmissionReview") {
        return Err(format!(
            "expected webhook response of {want}, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let resp = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got_uid = resp["uid"].as_str().unwrap_or_default();
    if version == "v1" && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let patch = match resp.get("patch").and_then(Value::as_str) {
        None | Some("") => None,
        Some(_) if !mutating => return Err("validating webhooks may not return patches".into()),
        Some(p) => {
            match resp["patchType"].as_str() {
                Some("JSONPatch") => {}
                None | Some("") if version == "v1" => {
                    return Err("webhook returned response.patch but not response.patchType".into());
                }
                None | Some("") => {}
                Some(other) => {
                    return Err(format!(
                        "webhook returned invalid response.patchType of {other:?}"
                    ));
                }
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("response.patch is not base64: {e}"))?;
            Some(
                serde_json::from_slice(&raw)
                    .map_err(|e| format!("response.patch is not JSON: {e}"))?,
            )
        }
    };
    Ok(Response {
        allowed: resp["allowed"].as_bool().unwrap_or(false),
        status: resp.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings: resp["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        audit_annotations: resp["auditAnnotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn review_as_sent() {
        let gvx = |version, name| Gvx {
            group: "apps",
            version,
            name,
        };
        let (object, options) = (
            json!({"metadata": {"name": "d"}}),
            json!({"kind": "CreateOptions"}),
        );
        let user = UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["g".into()],
            extra: BTreeMap::from([("k".into(), vec!["v".into()])]),
        };
        let mut r = Request {
            uid: "u",
            kind: gvx("v1", "Deployment"),
            resource: gvx("v1", "deployments"),
            sub_resource: "",
            request_kind: gvx("v1beta1", "Deployment"),
            request_resource: gvx("v1beta1", "deployments"),
            name: "d",
            namespace: "",
            operation: "CREATE",
            user: Some(&user),
            object: Some(&object),
            old_object: None,
            dry_run: false,
            options: &options,
        };
        let sent: Value = serde_json::from_slice(&body("v1", &r)).expect("JSON");
        assert_eq!(
            sent,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "u",
                "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "requestKind": {"group": "apps", "version": "v1beta1", "kind": "Deployment"},
                "requestResource": {"group": "apps", "version": "v1beta1", "resource": "deployments"},
                "name": "d", "operation": "CREATE",
                "userInfo": {"username": "alice", "groups": ["g"], "extra": {"k": ["v"]}},
                "object": {"metadata": {"name": "d"}}, "oldObject": null,
                "dryRun": false, "options": {"kind": "CreateOptions"}}})
        );
        (r.sub_resource, r.namespace, r.user) = ("status", "ns", None);
        let sent = request(&r);
        assert_eq!(
            (
                &sent["subResource"],
                &sent["requestSubResource"],
                &sent["namespace"]
            ),
            (&json!("status"), &json!("status"), &json!("ns"))
        );
        assert_eq!(
            sent["userInfo"],
            json!({"username": "system:unsecured",
                "groups": ["system:masters", "system:authenticated"]})
        );
    }

    fn answer(v: Value) -> Vec<u8> {
        v.to_string().into_bytes()
    }

    #[test]
    fn verifies_answers() {
        let ok = answer(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "warnings": ["w"]}}),
        );
        let r = parse("v1", "u", false, &ok).expect("valid");
        assert!(r.allowed);
        assert_eq!(r.warnings, ["w"]);
        assert_eq!(
            parse("v1", "other", false, &ok).err().as_deref(),
            Some("expected response.uid=\"other\", got \"u\"")
        );
        assert!(parse("v1", "u", false, b"not json").is_err());
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let with_patch = answer(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"}}),
        );
        assert!(parse("v1", "u", false, &with_patch).is_err());
        let r = parse("v1", "u", true, &with_patch).expect("valid");
        assert_eq!(
            r.patch,
            Some(json!([{"op": "add", "path": "/a", "value": 1}]))
        );
        let untyped = answer(json!({"response": {"uid": "x", "allowed": false}}));
        assert!(parse("v1", "x", false, &untyped).is_err());
        assert!(
            !parse("v1beta1", "u", false, &untyped)
                .expect("lenient")
                .allowed
        );
    }
}
