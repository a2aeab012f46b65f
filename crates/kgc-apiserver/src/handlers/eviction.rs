//! The `pods/eviction` subresource: a deletion a PodDisruptionBudget may refuse, which is what
//! `kubectl drain` asks for (kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go).
//!
//! A pod that no longer counts towards any budget (Pending, terminal, already being deleted) is
//! deleted at once. Otherwise the one budget selecting it must allow a disruption: its
//! `status.disruptionsAllowed` is decremented and the pod recorded in `status.disruptedPods`
//! in one atomic write of the budget's status, so two evictions racing for the last allowed
//! disruption cannot both win (upstream gets the same from a resourceVersion precondition and a
//! retry). The pod is then marked `DisruptionTarget` and deleted with the Eviction's
//! DeleteOptions.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::disruption::{self, pod_ready};
use kgc_meta::time::format_time;
use kgc_meta::{DeleteOptions, GroupResource, LabelSelector, Reason, ResourceInfo, Status};
use kgc_store::ListOptions;
use serde_json::{Value, json};

use crate::ApiServer;
use crate::body;
use crate::request::{Query, RequestInfo};

use super::{Result, object_body, with_warnings};

/// More entries than this in `status.disruptedPods` means the controller is not keeping up:
/// evictions are refused until it does (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;
/// The cause type of a budget's refusal (`policyv1.DisruptionBudgetCause`).
const BUDGET_CAUSE: &str = "DisruptionBudget";
/// How often a deletion that met a concurrent change of the pod is tried again
/// (`EvictionsRetry` has 20 steps).
const RETRIES: usize = 20;

/// `POST …/pods/NAME/eviction`: 201 with a `Status` of Success once the pod is being deleted;
/// 429 when its budget allows no disruption now.
pub(super) async fn evict(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let (mut eviction, _) = object_body(info, req, headers, body).await?;
    if eviction["metadata"]["name"].as_str().unwrap_or_default() != name {
        return Err(
            Status::bad_request("name in URL does not match name in Eviction object").into(),
        );
    }
    let warnings = api
        .admit_subresource_create(info, req, query, &mut eviction)
        .await?;
    let resp = evict_admitted(api, info, query, &ns, &name, &eviction).await?;
    Ok(with_warnings(resp, &warnings))
}

/// The eviction of pod `name` an admitted Eviction asks for.
async fn evict_admitted(
    api: &ApiServer,
    info: &ResourceInfo,
    query: &Query,
    ns: &str,
    name: &str,
    eviction: &Value,
) -> Result<Response> {
    let (ns, name) = (ns.to_owned(), name.to_owned());
    let mut opts = DeleteOptions::from_json(&eviction["deleteOptions"])?;
    opts.dry_run |= query.dry_run()?;
    let pods = info.group_resource();
    let client_rv = opts.preconditions.resource_version.is_some();

    // A pod that no longer counts towards a budget goes at once; a conflict with a concurrent
    // change of the pod is tried again unless the client named the version it evicts.
    let mut tries = 0;
    let pod = loop {
        let pod = api.store.get_or_not_found(&pods, &ns, &name)?.value();
        if !can_ignore_budget(&pod) {
            break pod;
        }
        let mut delete = opts.clone();
        if enforce_resource_version(&pod) && !client_rv {
            delete.preconditions.resource_version = resource_version(&pod);
        }
        match delete_pod(api, info, &ns, &name, delete).await {
            Err(e) if e.is(Reason::Conflict) && !client_rv && tries < RETRIES => tries += 1,
            Err(e) => return Err(e.into()),
            Ok(()) => return Ok(success()),
        }
    };

    let budgets = matching_budgets(api, &pod)?;
    let budget = match budgets.as_slice() {
        [] => None,
        [budget] => Some(budget),
        _ => {
            return Err(Status::unknown(
                500,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
            .into());
        }
    };
    // An unready pod does not count towards its budget: it goes without spending a disruption
    // when the budget says so (`AlwaysAllow`) or is met without it (`IfHealthyBudget`), provided
    // it has not become ready meanwhile (the pod's resourceVersion as precondition).
    let mut unready_bypass = false;
    if let Some(budget) = budget {
        let budget_name = budget["metadata"]["name"].as_str().unwrap_or_default();
        if !pod_ready(&pod) && may_evict_unready(budget) {
            unready_bypass = true;
        } else {
            let pdbs = budget_info(api)?;
            let now = format_time(api.store.clock().now());
            api.store
                .update(
                    &pdbs,
                    &ns,
                    budget_name,
                    Some("status"),
                    opts.dry_run,
                    |current| check_and_decrement(current, &name, &now, opts.dry_run),
                )
                .await?;
        }
    }
    let mut delete = opts.clone();
    if unready_bypass {
        delete.preconditions.resource_version = resource_version(&pod);
    }
    match delete_pod(api, info, &ns, &name, delete).await {
        Err(e) if e.is(Reason::Conflict) && unready_bypass && !client_rv => {
            let budget_name = budget
                .and_then(|b| b["metadata"]["name"].as_str())
                .unwrap_or_default();
            Err(still_processing(budget_name).into())
        }
        Err(e) => Err(e.into()),
        Ok(()) => Ok(success()),
    }
}

/// The answer to a completed eviction.
fn success() -> Response {
    body::json(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
    )
}

fn budget_info(api: &ApiServer) -> Result<std::sync::Arc<ResourceInfo>, Status> {
    api.store
        .catalog()
        .get("policy", "v1", "poddisruptionbudgets")
        .cloned()
        .ok_or_else(|| Status::internal("poddisruptionbudgets are not served"))
}

fn resource_version(pod: &Value) -> Option<String> {
    pod["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned)
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or_default()
}

fn deleting(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_string()
}

/// `canIgnorePDB`: a terminal pod has already caused its disruption, a Pending one causes none,
/// a pod being deleted is going anyway.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || deleting(pod)
}

/// `shouldEnforceResourceVersion`: a Pending pod is deleted only as it was read, so that it
/// cannot have started and become ready in between.
fn enforce_resource_version(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !deleting(pod)
}

/// `unhealthyPodEvictionPolicy`: `AlwaysAllow`, or by default (`IfHealthyBudget`) when the
/// budget is met without the pod.
fn may_evict_unready(budget: &Value) -> bool {
    if budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow" {
        return true;
    }
    let status = &budget["status"];
    let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
    status["currentHealthy"].as_i64().unwrap_or(0) >= desired && desired > 0
}

/// The budgets of the pod's namespace whose selector selects it (`getPodDisruptionBudgets`): a
/// budget with an empty or invalid selector protects nothing here.
fn matching_budgets(api: &ApiServer, pod: &Value) -> Result<Vec<Value>, Status> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let labels = kgc_store::string_map(&pod["metadata"]["labels"]);
    let gr = GroupResource::new("policy", "poddisruptionbudgets");
    let list = api
        .store
        .list(
            &gr,
            &ListOptions {
                namespace: Some(ns.to_owned()),
                ..ListOptions::default()
            },
        )
        .map_err(|e| e.status())?;
    Ok(list
        .items
        .iter()
        .map(|o| o.value())
        .filter(|b| {
            LabelSelector::from_json(&b["spec"]["selector"])
                .is_ok_and(|s| !s.is_empty() && s.matches(&labels))
        })
        .collect())
}

/// The 429 of a budget whose status is behind its spec (`createTooManyRequestsError`).
fn still_processing(budget: &str) -> Status {
    refused(
        10,
        format!("The disruption budget {budget} is still being processed by the server."),
    )
}

fn refused(retry_after: u32, cause: String) -> Status {
    let mut s = Status::too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        retry_after,
    );
    s.causes.push(kgc_meta::status::Cause {
        kind: BUDGET_CAUSE.to_owned(),
        message: cause,
        field: String::new(),
    });
    s
}

/// `checkAndDecrement`: the budget, as stored now, spends one disruption on `pod` (and, unless
/// dry run, remembers it in `disruptedPods` until the controller sees the pod go), or refuses.
fn check_and_decrement(
    mut budget: Value,
    pod: &str,
    now: &str,
    dry_run: bool,
) -> Result<Value, Status> {
    let name = budget["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let gr = GroupResource::new("policy", "poddisruptionbudget");
    let status = &budget["status"];
    let int = |f: &str| status[f].as_i64().unwrap_or(0);
    if int("observedGeneration") < budget["metadata"]["generation"].as_i64().unwrap_or(0) {
        return Err(still_processing(&name));
    }
    let allowed = int("disruptionsAllowed");
    if allowed < 0 {
        return Err(Status::forbidden(
            &gr,
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    if status["disruptedPods"]
        .as_object()
        .is_some_and(|m| m.len() > MAX_DISRUPTED_PODS)
    {
        return Err(Status::forbidden(
            &gr,
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(refused(
            0,
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int("desiredHealthy"),
                int("currentHealthy")
            ),
        ));
    }
    let status = &mut budget["status"];
    status["disruptionsAllowed"] = json!(allowed - 1);
    if allowed == 1 {
        disruption::update_disruption_allowed(status, now);
    }
    if !dry_run {
        if !status["disruptedPods"].is_object() {
            status["disruptedPods"] = json!({});
        }
        status["disruptedPods"][pod] = json!(now);
    }
    Ok(budget)
}

/// `addConditionAndDeletePod`: the pod, as the preconditions describe it, gets the
/// `DisruptionTarget` condition, then is deleted with `opts` (a resourceVersion precondition
/// moved to the version the condition wrote).
async fn delete_pod(
    api: &ApiServer,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    mut opts: DeleteOptions,
) -> Result<(), Status> {
    if !opts.dry_run {
        let now = format_time(api.store.clock().now());
        let preconditions = opts.preconditions.clone();
        let updated = api
            .store
            .update(info, ns, name, Some("status"), false, |pod| {
                check_preconditions(&pod, &preconditions)?;
                Ok(disruption_target(pod, &now))
            })
            .await
            .map_err(|e| e.status())?;
        if opts.preconditions.resource_version.is_some() {
            let rv = updated.object().resource_version.to_string();
            opts.preconditions.resource_version = Some(rv);
        }
    }
    api.store
        .delete(info, ns, name, &opts)
        .await
        .map_err(|e| e.status())?;
    Ok(())
}

/// The preconditions of an eviction's DeleteOptions, checked against the latest pod.
fn check_preconditions(pod: &Value, p: &kgc_meta::Preconditions) -> Result<(), Status> {
    let meta = &pod["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let gr = GroupResource::new("", "Pod");
    let got = |f: &str| meta[f].as_str().unwrap_or_default().to_owned();
    if let Some(uid) = p.uid.as_deref().filter(|u| !u.is_empty())
        && uid != got("uid")
    {
        return Err(Status::conflict(
            &gr,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                got("uid")
            ),
        ));
    }
    if let Some(rv) = p.resource_version.as_deref().filter(|r| !r.is_empty())
        && rv != got("resourceVersion")
    {
        return Err(Status::conflict(
            &gr,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                got("resourceVersion")
            ),
        ));
    }
    Ok(())
}

/// `podutil.UpdatePodCondition` with `DisruptionTarget=True`, reason `EvictionByEvictionAPI`.
fn disruption_target(mut pod: Value, now: &str) -> Value {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let mut condition = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    if let Some(conditions) = pod["status"]["conditions"].as_array_mut() {
        match conditions
            .iter_mut()
            .find(|c| c["type"] == "DisruptionTarget")
        {
            Some(old) => {
                if old["status"] == "True" {
                    condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
                }
                *old = condition;
            }
            None => conditions.push(condition),
        }
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": 1}, "status": status})
    }

    #[test]
    fn a_budget_without_disruptions_refuses_naming_itself() {
        let b = budget(json!({"observedGeneration": 1, "disruptionsAllowed": 0,
                              "desiredHealthy": 2, "currentHealthy": 2}));
        let e = check_and_decrement(b, "p", "t", false).unwrap_err();
        let body = e.to_json();
        assert_eq!(e.code, 429);
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(
            body["message"],
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(
            body["details"]["causes"],
            json!([{"reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}])
        );
    }

    #[test]
    fn a_disruption_is_spent_and_remembered() {
        let b = budget(json!({"observedGeneration": 1, "disruptionsAllowed": 1,
                              "desiredHealthy": 2, "currentHealthy": 3}));
        let out = check_and_decrement(b.clone(), "p", "t", false).unwrap();
        assert_eq!(out["status"]["disruptionsAllowed"], 0);
        assert_eq!(out["status"]["disruptedPods"], json!({"p": "t"}));
        assert_eq!(out["status"]["conditions"][0]["reason"], "InsufficientPods");
        let dry = check_and_decrement(b, "p", "t", true).unwrap();
        assert!(dry["status"]["disruptedPods"].is_null());
    }

    #[test]
    fn a_stale_or_negative_budget_refuses() {
        let b = budget(json!({"observedGeneration": 0, "disruptionsAllowed": 5}));
        let e = check_and_decrement(b, "p", "t", false).unwrap_err();
        assert_eq!((e.code, e.retry_after_seconds), (429, Some(10)));
        assert!(
            e.causes[0]
                .message
                .ends_with("is still being processed by the server.")
        );
        let b = budget(json!({"observedGeneration": 1, "disruptionsAllowed": -1}));
        let e = check_and_decrement(b, "p", "t", false).unwrap_err();
        assert_eq!(
            e.message,
            "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"
        );
    }

    #[test]
    fn which_pods_skip_the_budget() {
        let pod = |phase: &str| json!({"metadata": {}, "status": {"phase": phase}});
        assert!(can_ignore_budget(&pod("Pending")));
        assert!(can_ignore_budget(&pod("Succeeded")));
        assert!(!can_ignore_budget(&pod("Running")));
        assert!(enforce_resource_version(&pod("Pending")));
        assert!(!enforce_resource_version(&pod("Failed")));
        let mut deleting = pod("Running");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(can_ignore_budget(&deleting) && !enforce_resource_version(&deleting));
    }

    #[test]
    fn unready_pods_go_when_the_policy_or_the_budget_allows() {
        let met = json!({"spec": {}, "status": {"currentHealthy": 2, "desiredHealthy": 2}});
        let short = json!({"spec": {}, "status": {"currentHealthy": 1, "desiredHealthy": 2}});
        assert!(may_evict_unready(&met));
        assert!(!may_evict_unready(&short));
        let mut always = short.clone();
        always["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
        assert!(may_evict_unready(&always));
        let zero = json!({"spec": {}, "status": {"currentHealthy": 0, "desiredHealthy": 0}});
        assert!(!may_evict_unready(&zero));
    }

    #[test]
    fn the_pod_is_marked_as_a_disruption_target() {
        let pod = json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "5"},
                         "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let out = disruption_target(pod.clone(), "t");
        assert_eq!(
            out["status"]["conditions"][1]["reason"],
            "EvictionByEvictionAPI"
        );
        let p = kgc_meta::Preconditions {
            uid: None,
            resource_version: Some("4".into()),
        };
        let e = check_preconditions(&pod, &p).unwrap_err();
        assert_eq!(e.code, 409);
        assert!(
            e.message
                .contains("the ResourceVersion in the precondition (4)")
        );
    }
}
