//! Pods, pod templates and the pod spec every workload embeds, following kubernetes/kubernetes
//! `pkg/apis/core/validation/validation.go` (`ValidatePodSpec`, `ValidatePodTemplateSpec`,
//! `ValidatePodCreate`, `validatePodMetadataAndSpec`, `ValidatePodUpdate`,
//! `ValidatePodStatusUpdate`, `ValidateContainerStateTransition`, `validatePodIPs`,
//! `validatePodDNSConfig`, `ValidatePodTemplate`).

use std::collections::BTreeSet;

use kgc_meta::validation::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use serde_json::{Map, Value};

use crate::Op;
use crate::container;
use crate::diff::forbid_changes;
use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, same};
use crate::labels::{validate_annotations, validate_labels};
use crate::net::{is_dual_stack_ips, validate_ip};
use crate::taint::{validate_only_added, validate_tolerations};
use crate::volume::validate_volumes;

/// Whether the spec belongs to a Pod (true) or a template (false): a few rules are pod-only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Pod,
    Template,
}

/// `ValidatePodSpec`.
pub(crate) fn validate_spec(
    spec: &Value,
    pod_name: &str,
    owner: Owner,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let vols = validate_volumes(spec, pod_name, &path.child("volumes"), errs);
    let grace = spec.opt_int("terminationGracePeriodSeconds");
    container::validate_all(spec, &vols, grace, path, errs);
    host_network_ports(spec, owner, path, errs);
    errs.one_of(
        path.child("restartPolicy"),
        spec.str_of("restartPolicy"),
        &["Always", "OnFailure", "Never"],
    );
    let dns_policy = spec.str_of("dnsPolicy");
    errs.one_of(
        path.child("dnsPolicy"),
        dns_policy,
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
    );
    validate_labels(spec, "nodeSelector", &path.child("nodeSelector"), errs);
    dns_config(spec, dns_policy, &path.child("dnsConfig"), errs);
    for (i, gate) in spec.list("readinessGates").iter().enumerate() {
        let t = gate.str_of("conditionType");
        errs.invalid_each(
            path.child("readinessGates").index(i).child("conditionType"),
            t,
            is_qualified_name(t),
        );
    }
    let mut gates = BTreeSet::new();
    let gates_path = path.child("schedulingGates");
    for (i, gate) in spec.list("schedulingGates").iter().enumerate() {
        let p = gates_path.index(i);
        let name = gate.str_of("name");
        errs.invalid_each(p, name, is_qualified_name(name));
        if !gates.insert(name) {
            errs.duplicate(p, name);
        }
    }
    for field in ["serviceAccountName", "nodeName"] {
        let v = spec.str_of(field);
        if !v.is_empty() {
            errs.invalid_each(path.child(field), v, is_dns1123_subdomain(v));
        }
    }
    if let Some(ads) = spec.opt_int("activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.invalid_int(
            path.child("activeDeadlineSeconds"),
            ads,
            "must be between 1 and 2147483647, inclusive",
        );
    }
    for field in ["hostname", "subdomain"] {
        let v = spec.str_of(field);
        if !v.is_empty() {
            errs.invalid_each(path.child(field), v, is_dns1123_label(v));
        }
    }
    validate_tolerations(spec.list("tolerations"), &path.child("tolerations"), errs);
    let aliases = path.child("hostAliases");
    for (i, alias) in spec.list("hostAliases").iter().enumerate() {
        let p = aliases.index(i);
        validate_ip(&p.child("ip"), alias.str_of("ip"), errs);
        for (j, h) in alias.list("hostnames").iter().enumerate() {
            let h = h.as_str().unwrap_or_default();
            errs.invalid_each(p.child("hostnames").index(j), h, is_dns1123_subdomain(h));
        }
    }
    let pcn = spec.str_of("priorityClassName");
    if !pcn.is_empty() {
        errs.invalid_each(
            path.child("priorityClassName"),
            pcn,
            is_dns1123_subdomain(pcn),
        );
    }
    if let Some(rc) = spec.opt_str("runtimeClassName") {
        errs.invalid_each(path.child("runtimeClassName"), rc, is_dns1123_subdomain(rc));
    }
    if let Some(pp) = spec.opt_str("preemptionPolicy")
        && !matches!(pp, "PreemptLowerPriority" | "Never")
    {
        errs.not_supported_typed(
            path.child("preemptionPolicy"),
            pp,
            &["PreemptLowerPriority", "Never"],
        );
    }
}

/// `validatePodHostNetworkDeps`: with `hostNetwork`, host ports equal container ports.
fn host_network_ports(spec: &Value, owner: Owner, path: &Path<'_>, errs: &mut Errors) {
    if spec.opt_bool("hostNetwork") != Some(true) {
        return;
    }
    let containers = path.child("containers");
    for (i, c) in spec.list("containers").iter().enumerate() {
        let container = containers.index(i);
        let ports = container.child("ports");
        for (j, port) in c.list("ports").iter().enumerate() {
            let (hp, cp) = (port.int_of("hostPort"), port.int_of("containerPort"));
            if hp != cp && (owner == Owner::Pod || hp != 0) {
                errs.invalid_int(
                    ports.index(j).child("containerPort"),
                    cp,
                    "must match `hostPort` when `hostNetwork` is true",
                );
            }
        }
    }
}

/// `validatePodDNSConfig`.
fn dns_config(spec: &Value, policy: &str, path: &Path<'_>, errs: &mut Errors) {
    let cfg = spec.at("dnsConfig");
    if policy == "None" {
        if cfg.is_null() {
            errs.required(path, "must provide `dnsConfig` when `dnsPolicy` is None");
            return;
        }
        if cfg.list("nameservers").is_empty() {
            errs.required(
                path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            );
            return;
        }
    }
    if cfg.is_null() {
        return;
    }
    let ns = cfg.list("nameservers");
    if ns.len() > 3 {
        errs.invalid_json(
            path.child("nameservers"),
            cfg.at("nameservers"),
            "must not have more than 3 nameservers",
        );
    }
    for (i, n) in ns.iter().enumerate() {
        validate_ip(
            &path.child("nameservers").index(i),
            n.as_str().unwrap_or_default(),
            errs,
        );
    }
    let searches: Vec<&str> = crate::json::strings(cfg, "searches");
    if searches.len() > 32 {
        errs.invalid_json(
            path.child("searches"),
            cfg.at("searches"),
            "must not have more than 32 search paths",
        );
    }
    let joined_len = searches
        .iter()
        .map(|s| s.len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    if joined_len > 2048 {
        errs.invalid_json(
            path.child("searches"),
            cfg.at("searches"),
            "must not have more than 2048 characters (including spaces) in the search list",
        );
    }
    for (i, s) in searches.iter().enumerate() {
        if *s == "." {
            continue;
        }
        let s = s.strip_suffix('.').unwrap_or(s);
        errs.invalid_each(path.child("searches").index(i), s, is_dns1123_subdomain(s));
    }
    for (i, o) in cfg.list("options").iter().enumerate() {
        if o.str_of("name").is_empty() {
            errs.required(path.child("options").index(i), "must not be empty");
        }
    }
}

/// `ValidatePodTemplateSpec` of the template at `path` (labels and annotations are reported
/// under `<path>.labels`, as upstream does).
pub(crate) fn validate_template(template: &Value, path: &Path<'_>, errs: &mut Errors) {
    let meta = template.at("metadata");
    validate_labels(meta, "labels", &path.child("labels"), errs);
    validate_annotations(meta, "annotations", &path.child("annotations"), errs);
    let spec_path = path.child("spec");
    validate_spec(template.at("spec"), "", Owner::Template, &spec_path, errs);
    if !template.at("spec").list("ephemeralContainers").is_empty() {
        errs.forbidden(
            spec_path.child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        );
    }
}

/// A core `PodTemplate` (`ValidatePodTemplate`, `ValidatePodTemplateUpdate`).
pub(crate) fn pod_template(obj: &Value, errs: &mut Errors) {
    validate_template(obj.at("template"), &Path::new("template"), errs);
}

/// `validatePodMetadataAndSpec` (what create and update share).
fn metadata_and_spec(pod: &Value, errs: &mut Errors) {
    let spec = pod.at("spec");
    validate_spec(
        spec,
        pod.at("metadata").str_of("name"),
        Owner::Pod,
        &Path::new("spec"),
        errs,
    );
    if spec.str_of("serviceAccountName").is_empty() {
        for (vi, vol) in spec.list("volumes").iter().enumerate() {
            for (si, src) in vol.at("projected").list("sources").iter().enumerate() {
                if src.has("serviceAccountToken") {
                    errs.forbidden(
                        Path::new("spec.volumes")
                            .index(vi)
                            .child("projected")
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    );
                }
            }
        }
    }
    for field in ["containers", "initContainers"] {
        for (i, c) in spec.list(field).iter().enumerate() {
            container::only_for_pod(c, &Path::new("spec").child(field).index(i), errs);
        }
    }
}

/// A Pod: `ValidatePodCreate`, `ValidatePodUpdate` or (subresource `status`)
/// `ValidatePodStatusUpdate`.
pub(crate) fn pod(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    match op {
        Op::Create => {
            metadata_and_spec(obj, errs);
            let spec = obj.at("spec");
            if !spec.list("ephemeralContainers").is_empty() {
                errs.forbidden("spec.ephemeralContainers", "cannot be set on create");
            }
            if !spec.str_of("nodeName").is_empty() && !spec.list("schedulingGates").is_empty() {
                errs.forbidden(
                    "spec.nodeName",
                    "cannot be set until all schedulingGates have been cleared",
                );
            }
            ips(obj.at("status"), "podIPs", errs);
        }
        Op::Subresource("status", old) => status_update(obj, old, errs),
        Op::Update(old) => update(obj, old, errs),
        // Other subresources (binding, ephemeralcontainers, resize) are not covered.
        Op::Subresource(..) => {}
    }
}

const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`.
fn update(new: &Value, old: &Value, errs: &mut Errors) {
    metadata_and_spec(new, errs);
    let (spec, old_spec) = (new.at("spec"), old.at("spec"));
    let spec_path = Path::new("spec");
    for field in ["containers", "initContainers"] {
        let (n, o) = (spec.list(field), old_spec.list(field));
        let p = spec_path.child(field);
        if n.len() != o.len() {
            errs.forbidden(p, "pod updates may not add or remove containers");
            return;
        }
        for (i, c) in n.iter().enumerate() {
            let image = c.str_of("image");
            let container = p.index(i);
            let ip = container.child("image");
            if image.is_empty() {
                errs.required(ip, "");
            }
            if image.trim() != image {
                errs.invalid(ip, image, "must not have leading or trailing whitespace");
            }
        }
    }
    let ads_path = "spec.activeDeadlineSeconds";
    match (
        spec.opt_int("activeDeadlineSeconds"),
        old_spec.opt_int("activeDeadlineSeconds"),
    ) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.invalid_int(ads_path, n, "must be between 0 and 2147483647, inclusive");
            return;
        }
        (Some(n), Some(o)) if o < n => {
            errs.invalid_int(ads_path, n, "must be less than or equal to previous value");
            return;
        }
        (None, Some(_)) => errs.invalid_raw(
            ads_path,
            "null".to_owned(),
            "must not update from a positive integer to nil value",
        ),
        _ => {}
    }
    validate_only_added(
        spec.list("tolerations"),
        old_spec.list("tolerations"),
        &Path::new("spec.tolerations"),
        errs,
    );
    let old_gates: Vec<&str> = old_spec
        .list("schedulingGates")
        .iter()
        .map(|g| g.str_of("name"))
        .collect();
    for g in spec.list("schedulingGates") {
        let name = g.str_of("name");
        if !old_gates.contains(&name) {
            errs.forbidden(
                "spec.schedulingGates",
                format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            );
        }
    }
    if same(spec, old_spec) {
        return;
    }
    // Copy the updatable fields from the old spec; whatever still differs is forbidden.
    let mut munged = spec.clone();
    if let Some(m) = munged.as_object_mut() {
        for field in ["containers", "initContainers"] {
            if let Some(Value::Array(cs)) = m.get_mut(field) {
                for (c, o) in cs.iter_mut().zip(old_spec.list(field)) {
                    if let Some(c) = c.as_object_mut() {
                        c.insert("image".to_owned(), o.at("image").clone());
                    }
                }
            }
        }
        for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            copy_field(m, old_spec, field);
        }
        let old_grace = old_spec.opt_int("terminationGracePeriodSeconds");
        if old_grace.is_some_and(|g| g < 0)
            && spec.opt_int("terminationGracePeriodSeconds") == Some(1)
        {
            copy_field(m, old_spec, "terminationGracePeriodSeconds");
        }
        if !old_spec.list("schedulingGates").is_empty() {
            node_selector_additions(spec, old_spec, errs);
            copy_field(m, old_spec, "nodeSelector");
        }
    }
    forbid_changes(
        "spec",
        format_args!("pod updates may not change fields other than {UPDATABLE}"),
        "core.PodSpec",
        old_spec,
        &munged,
        errs,
    );
}

fn copy_field(m: &mut Map<String, Value>, from: &Value, field: &str) {
    match from.get(field) {
        Some(v) => m.insert(field.to_owned(), v.clone()),
        None => m.remove(field),
    };
}

/// `validateNodeSelectorMutation`: a gated pod may only add node-selector entries.
fn node_selector_additions(spec: &Value, old_spec: &Value, errs: &mut Errors) {
    let new = spec.at("nodeSelector");
    let kept = crate::json::string_map(old_spec, "nodeSelector")
        .into_iter()
        .all(|(k, v)| new.get(k).and_then(Value::as_str) == Some(v));
    if !kept {
        errs.invalid_json(
            "spec.nodeSelector",
            new,
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
        );
    }
}

/// `ValidatePodStatusUpdate`.
fn status_update(new: &Value, old: &Value, errs: &mut Errors) {
    let status = new.at("status");
    const SYSTEM: [&str; 3] = ["PodScheduled", "Ready", "Initialized"];
    for (i, c) in status.list("conditions").iter().enumerate() {
        let t = c.str_of("type");
        if !SYSTEM.contains(&t) {
            // Upstream builds this path from `metadata`.
            errs.invalid_each(
                Path::new("metadata.conditions").index(i).child("Type"),
                t,
                is_qualified_name(t),
            );
        }
    }
    let (spec, old_spec) = (new.at("spec"), old.at("spec"));
    if spec.str_of("nodeName") != old_spec.str_of("nodeName") {
        errs.forbidden("status.nodeName", "may not be changed directly");
    }
    let nominated = status.str_of("nominatedNodeName");
    if nominated != old.at("status").str_of("nominatedNodeName") && !nominated.is_empty() {
        errs.invalid_each(
            "status.nominatedNodeName",
            nominated,
            is_dns1123_subdomain(nominated),
        );
    }
    let old_status = old.at("status");
    let restart = old_spec.str_of("restartPolicy");
    state_transitions(
        status,
        old_status,
        "containerStatuses",
        restart,
        |_| false,
        errs,
    );
    let restartable_init: Vec<&str> = old_spec
        .list("initContainers")
        .iter()
        .filter(|c| c.str_of("restartPolicy") == "Always")
        .map(|c| c.str_of("name"))
        .collect();
    state_transitions(
        status,
        old_status,
        "initContainerStatuses",
        restart,
        |name| restartable_init.contains(&name),
        errs,
    );
    state_transitions(
        status,
        old_status,
        "ephemeralContainerStatuses",
        "Never",
        |_| false,
        errs,
    );
    ips(status, "podIPs", errs);
    ips(status, "hostIPs", errs);
}

/// `ValidateContainerStateTransition`: under `Never` (or `OnFailure` after success) a
/// terminated container stays terminated.
fn state_transitions(
    status: &Value,
    old_status: &Value,
    field: &str,
    restart: &str,
    restartable: impl Fn(&str) -> bool,
    errs: &mut Errors,
) {
    if restart == "Always" {
        return;
    }
    let new = status.list(field);
    for (i, o) in old_status.list(field).iter().enumerate() {
        let term = o.at("state").at("terminated");
        if term.is_null() || restartable(o.str_of("name")) {
            continue;
        }
        if term.int_of("exitCode") != 0 && restart == "OnFailure" {
            continue;
        }
        for n in new {
            if n.str_of("name") == o.str_of("name") && n.at("state").at("terminated").is_null() {
                errs.forbidden(
                    Path::new("status").child(field).index(i),
                    "may not be transitioned to non-terminated state",
                );
            }
        }
    }
}

/// `validatePodIPs` / `validateHostIPs`: valid, at most one per family, no duplicates.
fn ips(status: &Value, field: &str, errs: &mut Errors) {
    // The internal `PodIP` / `HostIP`, as `encoding/json` prints it.
    let render_ip = |ip: &str| go_struct(&[("IP", typed(ip))]);
    let status_path = Path::new("status");
    let path = status_path.child(field);
    let list = status.list(field);
    let addrs: Vec<&str> = list.iter().map(|p| p.str_of("ip")).collect();
    for (i, ip) in addrs.iter().enumerate() {
        validate_ip(&path.index(i), ip, errs);
    }
    if addrs.len() > 1 {
        if !is_dual_stack_ips(&addrs) {
            let rendered: Vec<String> = addrs.iter().map(|a| render_ip(a)).collect();
            errs.invalid_raw(
                path,
                format!("[{}]", rendered.join(",")),
                "may specify no more than one IP for each IP family",
            );
        }
        let mut seen = BTreeSet::new();
        for (i, a) in addrs.iter().enumerate() {
            if !seen.insert(*a) {
                errs.duplicate_raw(path.index(i), render_ip(a));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_json(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn good_spec() -> Value {
        json!({
            "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
        })
    }

    fn with(mut v: Value, extra: Value) -> Value {
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        v
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(pod, obj, old, sub)
    }

    /// `TestValidatePodSpec` (the main failure cases).
    #[test]
    fn test_validate_pod_spec() {
        assert!(run(&pod_json(good_spec()), None, None).is_empty());
        assert_eq!(
            run(
                &pod_json(with(
                    good_spec(),
                    json!({
                        "restartPolicy": "Sometimes", "dnsPolicy": "", "activeDeadlineSeconds": 0,
                        "nodeName": "Node_1", "serviceAccountName": "sa", "hostname": "a.b",
                        "nodeSelector": {"k": "bad value"},
                    })
                )),
                None,
                None
            ),
            vec![
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Required value",
                "spec.nodeSelector: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
                "spec.hostname: Invalid value: \"a.b\": must not contain dots",
            ]
        );
        assert_eq!(
            run(
                &pod_json(with(good_spec(), json!({"dnsPolicy": "None"}))),
                None,
                None
            ),
            vec![
                "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"
            ]
        );
        assert_eq!(
            run(
                &pod_json(with(
                    good_spec(),
                    json!({"ephemeralContainers": [{"name": "e", "image": "i", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}], "nodeName": "n", "schedulingGates": [{"name": "g"}]})
                )),
                None,
                None
            ),
            vec![
                "spec.ephemeralContainers: Forbidden: cannot be set on create",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
            ]
        );
        assert_eq!(
            run(
                &pod_json(with(
                    good_spec(),
                    json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}}]})
                )),
                None,
                None
            ),
            vec![
                "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set"
            ]
        );
    }

    /// `TestValidatePodUpdate` (the main cases).
    #[test]
    fn test_validate_pod_update() {
        let old = pod_json(with(
            good_spec(),
            json!({"activeDeadlineSeconds": 100, "tolerations": [{"key": "a", "operator": "Exists"}]}),
        ));
        let image = pod_json(with(
            good_spec(),
            json!({"activeDeadlineSeconds": 50, "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}], "containers": [{"name": "c", "image": "nginx:2", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}),
        ));
        assert!(run(&image, Some(&old), None).is_empty());
        let node = pod_json(with(
            good_spec(),
            json!({"activeDeadlineSeconds": 100, "tolerations": [{"key": "a", "operator": "Exists"}], "nodeName": "other"}),
        ));
        assert_eq!(
            run(&node, Some(&old), None),
            vec![format!(
                "spec: Forbidden: pod updates may not change fields other than {UPDATABLE}\n  core.PodSpec{{\n+ \tNodeName: \"other\",\n  }}\n"
            )]
        );
        let more = pod_json(with(
            good_spec(),
            json!({"activeDeadlineSeconds": 200, "tolerations": [{"key": "a", "operator": "Exists"}]}),
        ));
        assert_eq!(
            run(&more, Some(&old), None),
            vec![
                "spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"
            ]
        );
        let removed = pod_json(with(good_spec(), json!({"activeDeadlineSeconds": 100})));
        assert_eq!(
            run(&removed, Some(&old), None),
            vec![
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
        let two = pod_json(with(
            good_spec(),
            json!({"containers": [good_spec()["containers"][0].clone(), {"name": "d", "image": "x", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}),
        ));
        assert_eq!(
            run(&two, Some(&pod_json(good_spec())), None),
            vec!["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
    }

    /// `TestValidatePodStatusUpdate` (the main cases).
    #[test]
    fn test_validate_pod_status_update() {
        let spec = with(good_spec(), json!({"restartPolicy": "Never"}));
        let old = json!({"spec": spec, "status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0}}}]}});
        let running = json!({"spec": spec, "status": {
            "containerStatuses": [{"name": "c", "state": {"running": {}}}],
            "conditions": [{"type": "Ready"}, {"type": "bad type"}],
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "nope"}],
        }});
        assert_eq!(
            run(&running, Some(&old), Some("status")),
            vec![
                "metadata.conditions[1].Type: Invalid value: \"bad type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "status.containerStatuses[0]: Forbidden: may not be transitioned to non-terminated state",
                "status.podIPs[2]: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "status.podIPs: Invalid value: [{\"IP\":\"10.0.0.1\"},{\"IP\":\"10.0.0.2\"},{\"IP\":\"nope\"}]: may specify no more than one IP for each IP family",
            ]
        );
    }

    /// `TestValidatePodTemplateSpec`: labels are reported under `<template>.labels` and
    /// ephemeral containers are refused.
    #[test]
    fn test_validate_pod_template_spec() {
        let mut e = Errors::default();
        validate_template(
            &json!({"metadata": {"labels": {"a b": "x"}}, "spec": with(good_spec(), json!({"ephemeralContainers": [{"name": "e", "image": "i", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]}))}),
            &Path::new("spec.template"),
            &mut e,
        );
        let got: Vec<String> = e.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            vec![
                "spec.template.labels: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template",
            ]
        );
    }
}
