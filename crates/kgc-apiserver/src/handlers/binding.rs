//! The `pods/binding` subresource: a scheduler assigns a pod to a node by POSTing a `v1 Binding`
//! (kubernetes/kubernetes pkg/registry/core/pod/storage/storage.go, `BindingREST`).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::time::format_time;
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::{Value, json};

use crate::ApiServer;
use crate::body;
use crate::request::{Query, RequestInfo};

use super::{Result, object_body, with_warnings};

/// `POST …/pods/NAME/binding`: sets `spec.nodeName`, merges the Binding's annotations and sets
/// `PodScheduled=True` in one atomic update; answers 201 with a `Status` of Success.
pub(super) async fn bind(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let (mut binding, _) = object_body(info, req, headers, body).await?;
    let warnings = api
        .admit_subresource_create(info, req, query, &mut binding)
        .await?;
    let binding = Binding::parse(&binding, &name)?;
    let now = format_time(api.store.clock().now());
    let gr = info.group_resource();
    api.store
        .update(
            info,
            &ns,
            &name,
            Some("binding"),
            query.dry_run()?,
            // No managedFields entry: upstream writes the pod straight to storage.
            |current| binding.assign(&gr, current, &now),
        )
        .await?;
    Ok(with_warnings(
        body::json(
            StatusCode::CREATED,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
        ),
        &warnings,
    ))
}

/// What a Binding asks for.
#[derive(Debug, PartialEq)]
struct Binding {
    uid: Option<String>,
    resource_version: Option<String>,
    annotations: serde_json::Map<String, Value>,
    node: String,
}

impl Binding {
    /// The Binding's fields, checked as `BindingREST.Create` and `ValidatePodBinding` check them.
    /// The validation errors are upstream's plain aggregate (a 500 without a reason).
    fn parse(obj: &Value, url_name: &str) -> Result<Self, Status> {
        let meta = &obj["metadata"];
        let s = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        if meta["name"].as_str().unwrap_or_default() != url_name {
            return Err(Status::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        let target = &obj["target"];
        let mut errs = Vec::new();
        if let Some(kind) = s(&target["kind"])
            && kind != "Node"
        {
            errs.push(format!(
                "target.kind: Unsupported value: {kind:?}: supported values: \"Node\", \"<empty>\""
            ));
        }
        let node = s(&target["name"]).unwrap_or_default();
        if node.is_empty() {
            errs.push("target.name: Required value".to_owned());
        }
        match errs.len() {
            0 => {}
            1 => return Err(Status::unknown(500, errs.remove(0))),
            _ => return Err(Status::unknown(500, format!("[{}]", errs.join(", ")))),
        }
        Ok(Self {
            uid: s(&meta["uid"]),
            resource_version: s(&meta["resourceVersion"]),
            annotations: meta["annotations"].as_object().cloned().unwrap_or_default(),
            node,
        })
    }

    /// The pod bound (`setPodNodeAndMetadata`): the preconditions hold, it is not being deleted,
    /// not bound yet and not gated.
    fn assign(&self, gr: &GroupResource, mut pod: Value, now: &str) -> Result<Value, Status> {
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let precondition = |what: &str, want: &str, got: &str| {
            Status::conflict(
                gr,
                &name,
                &format!(
                    "Precondition failed: {what} in precondition: {want}, {what} in object meta: {got}"
                ),
            )
        };
        let meta = &pod["metadata"];
        if let Some(uid) = &self.uid {
            let got = meta["uid"].as_str().unwrap_or_default();
            if uid != got {
                return Err(precondition("UID", uid, got));
            }
        }
        if let Some(rv) = &self.resource_version {
            let got = meta["resourceVersion"].as_str().unwrap_or_default();
            if rv != got {
                return Err(precondition("ResourceVersion", rv, got));
            }
        }
        // Errors of the update itself are a Conflict on `pods/binding` (`assignPod`).
        let refuse = |detail: String| {
            Status::conflict(
                &GroupResource::new(&gr.group, "pods/binding"),
                &name,
                &detail,
            )
        };
        if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
            return Err(refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        let spec = &pod["spec"];
        if let Some(node) = spec["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(refuse(format!(
                "pod {name} is already assigned to node {node:?}"
            )));
        }
        if spec["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty())
        {
            return Err(refuse(format!(
                "pod {name} has non-empty .spec.schedulingGates"
            )));
        }
        pod["spec"]["nodeName"] = json!(self.node);
        if !self.annotations.is_empty() {
            if !pod["metadata"]["annotations"].is_object() {
                pod["metadata"]["annotations"] = json!({});
            }
            let annotations = pod["metadata"]["annotations"]
                .as_object_mut()
                .expect("made an object");
            for (k, v) in &self.annotations {
                annotations.insert(k.clone(), v.clone());
            }
        }
        set_scheduled(&mut pod, now);
        Ok(pod)
    }
}

/// `podutil.UpdatePodCondition` with `PodScheduled=True`: the transition time moves only when
/// the status changes; the reason and message of an earlier `Unschedulable` go.
fn set_scheduled(pod: &mut Value, now: &str) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let status = &mut pod["status"];
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let conditions = status["conditions"].as_array_mut().expect("made an array");
    let mut condition = json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(old) => {
            if old["status"] == "True" {
                condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gr() -> GroupResource {
        GroupResource::new("", "pods")
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Too many pods.",
                "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        })
    }

    fn binding(extra: Value) -> Value {
        let mut b = json!({"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}});
        if let (Some(b), Some(e)) = (b["metadata"].as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        b
    }

    #[test]
    fn binding_sets_the_node_and_the_condition() {
        let b = Binding::parse(&binding(json!({"annotations": {"a": "b"}})), "p").unwrap();
        let out = b.assign(&gr(), pod(), "2026-02-02T00:00:00Z").unwrap();
        assert_eq!(out["spec"]["nodeName"], "n1");
        assert_eq!(out["metadata"]["annotations"]["a"], "b");
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-02-02T00:00:00Z"}])
        );
    }

    #[test]
    fn a_bound_pod_is_a_conflict_on_pods_binding() {
        let b = Binding::parse(&binding(json!({})), "p").unwrap();
        let mut p = pod();
        p["spec"]["nodeName"] = json!("n0");
        let e = b.assign(&gr(), p, "t").unwrap_err();
        assert_eq!(e.code, 409);
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n0\""
        );
        let mut p = pod();
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let e = b.assign(&gr(), p, "t").unwrap_err();
        assert!(
            e.message
                .ends_with("pod p is being deleted, cannot be assigned to a host")
        );
    }

    #[test]
    fn preconditions_and_validation() {
        let b = Binding::parse(&binding(json!({"uid": "other"})), "p").unwrap();
        let e = b.assign(&gr(), pod(), "t").unwrap_err();
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods \"p\": Precondition failed: UID in precondition: other, UID in object meta: u1"
        );
        let b = Binding::parse(&binding(json!({"uid": "u1", "resourceVersion": "7"})), "p");
        assert!(b.unwrap().assign(&gr(), pod(), "t").is_ok());
        let e = Binding::parse(&binding(json!({})), "q").unwrap_err();
        assert_eq!(e.code, 400);
        let e = Binding::parse(&json!({"metadata": {"name": "p"}, "target": {}}), "p").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "target.name: Required value")
        );
    }
}
