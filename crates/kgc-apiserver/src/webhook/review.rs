//! The AdmissionReview a webhook gets and the answer it gives (kubernetes/apiserver
//! `pkg/admission/plugin/webhook/request/admissionreview.go`: `CreateV1AdmissionReview`,
//! `VerifyAdmissionResponse`).

use base64::Engine;
use kgc_auth::UserInfo;
use serde_json::{Value, json};

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

/// The AdmissionReview of `version` (`v1` or `v1beta1`, identical but for the apiVersion).
pub(crate) fn body(version: &str, r: &Request<'_>) -> Vec<u8> {
    let review = json!({
        "apiVersion": format!("admission.k8s.io/{version}"),
        "kind": "AdmissionReview",
        "request": request(r),
    });
    review.to_string().into_bytes()
}

/// The `request` of an AdmissionReview, which CEL expressions also read as `request`.
pub(crate) fn request(r: &Request<'_>) -> Value {
    let gvk = |g: &Gvx<'_>| json!({"group": g.group, "version": g.version, "kind": g.name});
    let gvr = |g: &Gvx<'_>| json!({"group": g.group, "version": g.version, "resource": g.name});
    let user = match r.user {
        Some(u) => {
            let mut o = json!({"username": u.name, "groups": u.groups});
            if !u.uid.is_empty() {
                o["uid"] = json!(u.uid);
            }
            if !u.extra.is_empty() {
                o["extra"] = json!(u.extra);
            }
            o
        }
        // The insecure port: kube-apiserver's old insecure port served as this user.
        None => json!({"username": "system:unsecured",
            "groups": ["system:masters", "system:authenticated"]}),
    };
    let mut req = json!({
        "uid": r.uid,
        "kind": gvk(&r.kind),
        "resource": gvr(&r.resource),
        "requestKind": gvk(&r.request_kind),
        "requestResource": gvr(&r.request_resource),
        "name": r.name,
        "operation": r.operation,
        "userInfo": user,
        "object": r.object.cloned().unwrap_or(Value::Null),
        "oldObject": r.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": r.dry_run,
        "options": r.options,
    });
    if !r.sub_resource.is_empty() {
        req["subResource"] = json!(r.sub_resource);
        req["requestSubResource"] = json!(r.sub_resource);
    }
    if !r.namespace.is_empty() {
        req["namespace"] = json!(r.namespace);
    }
    req
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
