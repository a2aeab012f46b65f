//! API defaulting for built-in kinds: the values kube-apiserver fills in when it decodes an object
//! (on create, update, and again whenever it reads one back from storage).
//!
//! Upstream spreads these over `pkg/apis/<group>/<version>/defaults.go` (hand-written
//! `SetDefaults_*` functions), the generated `zz_generated.defaults.go` (which calls them for every
//! place a type appears, e.g. each pod template) and `+default=` markers on the `k8s.io/api`
//! types. The values here follow kube-apiserver 1.32 with its default feature gates.
//!
//! Go semantics are kept exactly where they are visible in JSON:
//! - a *pointer* field is defaulted only when absent (or `null`);
//! - a plain string field is defaulted when absent, `null` or `""`;
//! - a plain number field is defaulted when absent, `null` or `0`.
//!
//! A value of the wrong JSON type is left alone: such an object would not decode upstream, and the
//! validator reports it. Nothing here panics, whatever the input.
//!
//! Deliberately *not* here:
//! - anything the registry allocates or resets in `PrepareForCreate` (Service `clusterIP(s)`,
//!   `ipFamilies`, `ipFamilyPolicy`, `nodePort`s; Job selectors and controller-uid labels;
//!   initial `status` objects; the Namespace `kubernetes.io/metadata.name` label and phase — the
//!   store does those);
//! - admission plugins (Pod `priority`, `serviceAccountName`, service-account token volumes,
//!   tolerations from `DefaultTolerationSeconds`, LimitRanger requests);
//! - quantity canonicalisation (`SetDefaults_ResourceList` rounds to milli precision);
//! - serialisation artefacts of Go structs such as `creationTimestamp: null` in templates, except
//!   container `resources: {}`, which every client sees and so is filled in here;
//! - features whose gates are off by default in 1.32 (image volumes' `pullPolicy`, pod-level
//!   resources, in-place resize `resizePolicy`).
//!
//! [`apply`] is idempotent: callers may run it on decode and again after a registry strategy has
//! changed the object (upstream re-defaults on every read from storage, which is how, say, a Job's
//! generated template labels end up on the Job itself).
use serde_json::{Map, Value, json};

type Obj = Map<String, Value>;

/// Fills in the defaults kube-apiserver applies to a built-in object of `group`/`kind` (the
/// object as JSON, already carrying apiVersion/kind). Unknown kinds and custom resources are left
/// unchanged. Idempotent: defaulting twice equals defaulting once.
pub fn apply(group: &str, kind: &str, obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Pod") => pod(o),
        ("", "PodTemplate") => pod_template_kind(o),
        ("", "ReplicationController") => replication_controller(o),
        ("", "Service") => service(o),
        ("", "Secret") => secret(o),
        ("", "Endpoints") => endpoints(o),
        ("", "PersistentVolume") => persistent_volume(o),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(o),
        ("", "LimitRange") => limit_range(o),
        ("", "Node") => node(o),
        ("apps", "Deployment") => deployment(o),
        ("apps", "ReplicaSet") => replica_set(o),
        ("apps", "StatefulSet") => stateful_set(o),
        ("apps", "DaemonSet") => daemon_set(o),
        ("batch", "Job") => job(o),
        ("batch", "CronJob") => cron_job(o),
        ("autoscaling", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler(o),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(o),
        ("networking.k8s.io", "IngressClass") => ingress_class(o),
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice(o),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(o),
        ("storage.k8s.io", "StorageClass") => storage_class(o),
        ("storage.k8s.io", "CSIDriver") => csi_driver(o),
        ("scheduling.k8s.io", "PriorityClass") => priority_class(o),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            webhook_configuration(o, false);
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            webhook_configuration(o, true);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            validating_admission_policy(o);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            validating_admission_policy_binding(o);
        }
        // ConfigMap (`data` becomes an empty map, which serialises away), Namespace (handled by
        // the store), ServiceAccount, Event, ResourceQuota, Lease, CertificateSigningRequest
        // (certificates/v1 has no defaulters), PodDisruptionBudget (policy/v1 has none), Ingress
        // (no `pathType` default), Role/ClusterRole and everything else: nothing to fill in.
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON helpers. Each one leaves a value of an unexpected type untouched.

/// Absent or `null`: what Go decodes to a nil pointer, nil map/slice or zero value.
fn unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Pointer field: set when absent or `null`.
fn default_ptr(o: &mut Obj, key: &str, val: Value) {
    if unset(o.get(key)) {
        o.insert(key.to_owned(), val);
    }
}

/// A plain Go string at its zero value: absent, `null` or `""`.
fn blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// Plain string field: set when absent, `null` or `""`.
fn default_str(o: &mut Obj, key: &str, val: &str) {
    if blank(o.get(key)) {
        o.insert(key.to_owned(), Value::from(val));
    }
}

/// Plain integer field: set when absent, `null` or zero.
fn default_int(o: &mut Obj, key: &str, val: i64) {
    let zero = match o.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    };
    if zero {
        o.insert(key.to_owned(), Value::from(val));
    }
}

/// The object under `key`, if there is one.
fn child<'a>(o: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    o.get_mut(key).and_then(Value::as_object_mut)
}

/// The object under `key`, created empty when absent or `null` (a Go struct value, or a pointer
/// the defaulter allocates). `None` when the value there is not an object.
fn child_or_new<'a>(o: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    if unset(o.get(key)) {
        o.insert(key.to_owned(), Value::Object(Obj::new()));
    }
    child(o, key)
}

/// Every object element of the array under `key`.
fn each<'a>(o: &'a mut Obj, key: &str) -> impl Iterator<Item = &'a mut Obj> {
    o.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The string under `key`, or `""`.
fn str_at<'a>(o: &'a Obj, key: &str) -> &'a str {
    o.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Go's `len(x) == 0` for a map: absent, `null` or `{}` (a value of another type is left alone).
fn empty_map(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    }
}

/// Go's `len(x) == 0` for a slice: absent, `null` or `[]` (a value of another type is left alone).
fn empty_list(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// Copies the pod template's labels to `metadata.labels` when the object has none
/// (`SetDefaults_ReplicationController`, `SetDefaults_Job`). An empty label map serialises away
/// upstream, so only a non-empty one is copied.
fn labels_from_template(o: &mut Obj, template_labels: Option<Value>) {
    let Some(labels @ Value::Object(_)) = template_labels else {
        return;
    };
    if labels.as_object().is_some_and(Map::is_empty) {
        return;
    }
    let Some(meta) = child_or_new(o, "metadata") else {
        return;
    };
    if empty_map(meta.get("labels")) {
        meta.insert("labels".to_owned(), labels);
    }
}

// ---------------------------------------------------------------------------------------------
// core/v1: pkg/apis/core/v1/defaults.go, zz_generated.defaults.go, k8s.io/api/core/v1 markers.

/// Pod: `SetDefaults_Pod` (requests from limits, `enableServiceLinks`, host-network ports) plus
/// everything a pod template gets.
fn pod(o: &mut Obj) {
    if let Some(spec) = child_or_new(o, "spec") {
        pod_spec(spec, true);
    }
}

/// PodTemplate (the kind): its `template` gets `SetDefaults_PodSpec` and the nested defaulters.
fn pod_template_kind(o: &mut Obj) {
    template(o, "template");
}

/// A `PodTemplateSpec` struct value under `key` (Deployment, ReplicaSet, StatefulSet, DaemonSet,
/// Job, CronJob's job template, PodTemplate): created if absent, as the Go struct always exists.
fn template(o: &mut Obj, key: &str) {
    if let Some(spec) = child_or_new(o, key).and_then(|t| child_or_new(t, "spec")) {
        pod_spec(spec, false);
    }
}

/// `SetDefaults_PodSpec` plus the generated per-volume and per-container defaulters; `is_pod`
/// adds what only a Pod (not a template) gets.
fn pod_spec(spec: &mut Obj, is_pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_ptr(spec, "securityContext", json!({}));
    default_ptr(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    service_account_alias(spec);
    if is_pod {
        for key in ["containers", "initContainers"] {
            for c in each(spec, key) {
                requests_from_limits(c);
            }
        }
        default_ptr(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
            for key in ["containers", "initContainers"] {
                for c in each(spec, key) {
                    for p in each(c, "ports") {
                        host_port_from_container_port(p);
                    }
                }
            }
        }
    }
    for v in each(spec, "volumes") {
        volume(v);
    }
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for c in each(spec, key) {
            container(c);
        }
    }
}

/// The v1 conversion of a pod spec (`pkg/apis/core/v1/conversion.go`): the deprecated
/// `serviceAccount` names the account when `serviceAccountName` does not, and is always written
/// back as a copy of `serviceAccountName` (so absent when that is empty). Values of other types
/// are left to validation.
fn service_account_alias(spec: &mut Obj) {
    if blank(spec.get("serviceAccountName"))
        && let Some(Value::String(alias)) = spec.get("serviceAccount")
        && !alias.is_empty()
    {
        let alias = alias.clone();
        spec.insert("serviceAccountName".to_owned(), Value::from(alias));
    }
    match spec.get("serviceAccountName") {
        Some(Value::String(name)) if !name.is_empty() => {
            let name = name.clone();
            spec.insert("serviceAccount".to_owned(), Value::from(name));
        }
        None | Some(Value::Null | Value::String(_)) => {
            if blank(spec.get("serviceAccount")) {
                spec.remove("serviceAccount");
            }
        }
        Some(_) => {}
    }
}

/// `SetDefaults_Pod`: a container with limits but no request for a resource requests its limit.
fn requests_from_limits(c: &mut Obj) {
    let Some(res) = child(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    let Some(requests) = child_or_new(res, "requests") else {
        return;
    };
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

/// `defaultHostNetworkPorts`: with host networking, an unset host port is the container port.
fn host_port_from_container_port(p: &mut Obj) {
    let zero = match p.get("hostPort") {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    };
    if !zero {
        return;
    }
    match p.get("containerPort") {
        Some(port @ Value::Number(_)) => {
            let port = port.clone();
            p.insert("hostPort".to_owned(), port);
        }
        None | Some(Value::Null) => {
            p.insert("hostPort".to_owned(), json!(0));
        }
        Some(_) => {}
    }
}

/// `SetDefaults_Container` (and `SetDefaults_EphemeralContainer`) plus the generated nested
/// defaulters and the `+default` markers on ports and gRPC probes.
fn container(c: &mut Obj) {
    if blank(c.get("imagePullPolicy")) {
        let policy = if image_tag(str_at(c, "image")).as_deref() == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".to_owned(), Value::from(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    // `resources` is a struct value upstream, so it is always serialised, as `{}` when empty.
    default_ptr(c, "resources", json!({}));
    for p in each(c, "ports") {
        default_str(p, "protocol", "TCP");
    }
    for e in each(c, "env") {
        if let Some(fr) = child(e, "valueFrom").and_then(|vf| child(vf, "fieldRef")) {
            object_field_selector(fr);
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, key) {
            probe(p);
        }
    }
    if let Some(lc) = child(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(g) = child(lc, key).and_then(|h| child(h, "httpGet")) {
                http_get(g);
            }
        }
    }
}

/// `SetDefaults_Probe`, `SetDefaults_HTTPGetAction` and `GRPCAction.service` `+default=""`.
fn probe(p: &mut Obj) {
    default_int(p, "timeoutSeconds", 1);
    default_int(p, "periodSeconds", 10);
    default_int(p, "successThreshold", 1);
    default_int(p, "failureThreshold", 3);
    if let Some(g) = child(p, "httpGet") {
        http_get(g);
    }
    if let Some(g) = child(p, "grpc") {
        default_ptr(g, "service", json!(""));
    }
}

/// `SetDefaults_HTTPGetAction`.
fn http_get(g: &mut Obj) {
    default_str(g, "path", "/");
    default_str(g, "scheme", "HTTP");
}

/// `SetDefaults_ObjectFieldSelector`.
fn object_field_selector(f: &mut Obj) {
    default_str(f, "apiVersion", "v1");
}

/// `SetDefaults_Volume` (a volume with no source is an `emptyDir`) and each source's defaulter.
fn volume(v: &mut Obj) {
    let has_source = v
        .iter()
        .any(|(k, val)| k != "name" && !matches!(val, Value::Null));
    if !has_source {
        v.insert("emptyDir".to_owned(), json!({}));
    }
    if let Some(h) = child(v, "hostPath") {
        default_ptr(h, "type", json!(""));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = child(v, key) {
            default_ptr(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = child(v, "downwardAPI") {
        downward_api_items(d);
    }
    if let Some(p) = child(v, "projected") {
        for s in each(p, "sources") {
            if let Some(d) = child(s, "downwardAPI") {
                downward_api_items(d);
            }
            if let Some(t) = child(s, "serviceAccountToken") {
                default_ptr(t, "expirationSeconds", json!(3600));
            }
        }
    }
    if let Some(spec) = child(v, "ephemeral")
        .and_then(|e| child(e, "volumeClaimTemplate"))
        .and_then(|t| child(t, "spec"))
    {
        persistent_volume_claim_spec(spec);
    }
    legacy_volume_sources(v);
}

fn downward_api_items(d: &mut Obj) {
    for item in each(d, "items") {
        if let Some(f) = child(item, "fieldRef") {
            object_field_selector(f);
        }
    }
}

/// The `+default` markers of the in-tree sources shared by pod volumes and persistent volumes
/// (ISCSI, RBD, AzureDisk, ScaleIO).
fn legacy_volume_sources(v: &mut Obj) {
    if let Some(s) = child(v, "iscsi") {
        default_str(s, "iscsiInterface", "default");
    }
    if let Some(s) = child(v, "rbd") {
        default_str(s, "pool", "rbd");
        default_str(s, "user", "admin");
        default_str(s, "keyring", "/etc/ceph/keyring");
    }
    if let Some(s) = child(v, "azureDisk") {
        default_ptr(s, "cachingMode", json!("ReadWrite"));
        default_ptr(s, "fsType", json!("ext4"));
        default_ptr(s, "readOnly", json!(false));
        default_ptr(s, "kind", json!("Shared"));
    }
    if let Some(s) = child(v, "scaleIO") {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

/// ReplicationController: `SetDefaults_ReplicationController` (selector and labels from the
/// template's labels), `replicas` `+default=1`, and the template (a pointer: only if present).
fn replication_controller(o: &mut Obj) {
    let template_labels = o
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    if let Some(labels) = &template_labels
        && empty_map(spec.get("selector"))
    {
        spec.insert("selector".to_owned(), labels.clone());
    }
    default_ptr(spec, "replicas", json!(1));
    if let Some(ps) = child(spec, "template").and_then(|t| child_or_new(t, "spec")) {
        pod_spec(ps, false);
    }
    labels_from_template(o, template_labels);
}

/// Service: `SetDefaults_Service`. Cluster IPs, IP families and node ports are allocated by the
/// registry, not defaulted, and are not filled in here.
fn service(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    match str_at(spec, "sessionAffinity") {
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP" => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".to_owned(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    for p in each(spec, "ports") {
        default_str(p, "protocol", "TCP");
        let unset_target = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if unset_target {
            match p.get("port") {
                None | Some(Value::Null) => {
                    p.insert("targetPort".to_owned(), json!(0));
                }
                Some(port) if port.is_i64() || port.is_u64() => {
                    let port = port.clone();
                    p.insert("targetPort".to_owned(), port);
                }
                Some(_) => {}
            }
        }
    }
    let ty = str_at(spec, "type").to_owned();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally_accessible =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && has_external_ips);
    if externally_accessible {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        default_ptr(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default_ptr(spec, "allocateLoadBalancerNodePorts", json!(true));
        if let Some(lb) = child(o, "status").and_then(|s| child(s, "loadBalancer")) {
            for ing in each(lb, "ingress") {
                if !str_at(ing, "ip").is_empty() {
                    default_ptr(ing, "ipMode", json!("VIP"));
                }
            }
        }
    }
}

/// Secret: `SetDefaults_Secret`.
fn secret(o: &mut Obj) {
    default_str(o, "type", "Opaque");
}

/// Endpoints: `SetDefaults_Endpoints` and `EndpointPort.protocol` `+default="TCP"`.
fn endpoints(o: &mut Obj) {
    for ss in each(o, "subsets") {
        for p in each(ss, "ports") {
            default_str(p, "protocol", "TCP");
        }
    }
}

/// PersistentVolume: `SetDefaults_PersistentVolume` plus its source defaulters.
fn persistent_volume(o: &mut Obj) {
    if let Some(status) = child_or_new(o, "status") {
        default_str(status, "phase", "Pending");
    }
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
    default_ptr(spec, "volumeMode", json!("Filesystem"));
    if let Some(h) = child(spec, "hostPath") {
        default_ptr(h, "type", json!(""));
    }
    legacy_volume_sources(spec);
}

/// PersistentVolumeClaim: `SetDefaults_PersistentVolumeClaim` and `..ClaimSpec`.
fn persistent_volume_claim(o: &mut Obj) {
    if let Some(status) = child_or_new(o, "status") {
        default_str(status, "phase", "Pending");
    }
    if let Some(spec) = child_or_new(o, "spec") {
        persistent_volume_claim_spec(spec);
    }
}

/// `SetDefaults_PersistentVolumeClaimSpec`.
fn persistent_volume_claim_spec(spec: &mut Obj) {
    default_ptr(spec, "volumeMode", json!("Filesystem"));
}

/// LimitRange: `SetDefaults_LimitRangeItem`. For a `Container` item, `default` falls back to
/// `max`, then `defaultRequest` to `default`, then to `min` (per resource).
fn limit_range(o: &mut Obj) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    for item in each(spec, "limits") {
        if str_at(item, "type") != "Container" {
            continue;
        }
        fill_missing(item, "default", "max");
        fill_missing(item, "defaultRequest", "default");
        fill_missing(item, "defaultRequest", "min");
    }
}

/// Copies into map `to` each entry of map `from` it lacks; an empty result is not materialised
/// (an empty map serialises away upstream).
fn fill_missing(item: &mut Obj, to: &str, from: &str) {
    let Some(src) = item.get(from).and_then(Value::as_object).cloned() else {
        return;
    };
    if src.is_empty() {
        return;
    }
    let Some(dst) = child_or_new(item, to) else {
        return;
    };
    for (k, v) in src {
        dst.entry(k).or_insert(v);
    }
}

/// Node: `SetDefaults_NodeStatus` (allocatable defaults to capacity).
fn node(o: &mut Obj) {
    let Some(status) = child(o, "status") else {
        return;
    };
    if unset(status.get("allocatable"))
        && let Some(cap @ Value::Object(_)) = status.get("capacity")
    {
        let cap = cap.clone();
        status.insert("allocatable".to_owned(), cap);
    }
}

// ---------------------------------------------------------------------------------------------
// apps/v1: pkg/apis/apps/v1/defaults.go and zz_generated.defaults.go.

/// Deployment: `SetDefaults_Deployment`.
fn deployment(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_ptr(spec, "replicas", json!(1));
    if let Some(strategy) = child_or_new(spec, "strategy") {
        default_str(strategy, "type", "RollingUpdate");
        if str_at(strategy, "type") == "RollingUpdate"
            && let Some(ru) = child_or_new(strategy, "rollingUpdate")
        {
            default_ptr(ru, "maxUnavailable", json!("25%"));
            default_ptr(ru, "maxSurge", json!("25%"));
        }
    }
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    default_ptr(spec, "progressDeadlineSeconds", json!(600));
    template(spec, "template");
}

/// ReplicaSet: `SetDefaults_ReplicaSet`.
fn replica_set(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_ptr(spec, "replicas", json!(1));
    template(spec, "template");
}

/// StatefulSet: `SetDefaults_StatefulSet` (`StatefulSetAutoDeletePVC` is on by default) and the
/// claim templates' `SetDefaults_PersistentVolumeClaim`/`..ClaimSpec`.
fn stateful_set(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = child_or_new(spec, "updateStrategy") {
        if blank(us.get("type")) {
            us.insert("type".to_owned(), json!("RollingUpdate"));
            default_ptr(us, "rollingUpdate", json!({}));
        }
        if str_at(us, "type") == "RollingUpdate"
            && let Some(ru) = child(us, "rollingUpdate")
        {
            default_ptr(ru, "partition", json!(0));
        }
    }
    if let Some(p) = child_or_new(spec, "persistentVolumeClaimRetentionPolicy") {
        default_str(p, "whenDeleted", "Retain");
        default_str(p, "whenScaled", "Retain");
    }
    default_ptr(spec, "replicas", json!(1));
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    template(spec, "template");
    for pvc in each(spec, "volumeClaimTemplates") {
        persistent_volume_claim(pvc);
    }
}

/// DaemonSet: `SetDefaults_DaemonSet`.
fn daemon_set(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    if let Some(us) = child_or_new(spec, "updateStrategy") {
        default_str(us, "type", "RollingUpdate");
        if str_at(us, "type") == "RollingUpdate"
            && let Some(ru) = child_or_new(us, "rollingUpdate")
        {
            default_ptr(ru, "maxUnavailable", json!(1));
            default_ptr(ru, "maxSurge", json!(0));
        }
    }
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    template(spec, "template");
}

// ---------------------------------------------------------------------------------------------
// batch/v1: pkg/apis/batch/v1/defaults.go and zz_generated.defaults.go.

/// Job: `SetDefaults_Job` (`JobPodReplacementPolicy` is on by default since 1.29;
/// `manualSelector` has been defaulted since 1.29 too).
fn job(o: &mut Obj) {
    let template_labels = o
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .cloned();
    if let Some(spec) = child_or_new(o, "spec") {
        if unset(spec.get("completions")) && unset(spec.get("parallelism")) {
            spec.insert("completions".to_owned(), json!(1));
            spec.insert("parallelism".to_owned(), json!(1));
        }
        default_ptr(spec, "parallelism", json!(1));
        let backoff = if unset(spec.get("backoffLimitPerIndex")) {
            6
        } else {
            i64::from(i32::MAX)
        };
        default_ptr(spec, "backoffLimit", json!(backoff));
        default_ptr(spec, "completionMode", json!("NonIndexed"));
        default_ptr(spec, "suspend", json!(false));
        let replacement = if unset(spec.get("podFailurePolicy")) {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        default_ptr(spec, "podReplacementPolicy", json!(replacement));
        default_ptr(spec, "manualSelector", json!(false));
        job_spec_nested(spec);
    }
    labels_from_template(o, template_labels);
}

/// What every `JobSpec` gets, including a CronJob's job template: the pod template and
/// `SetDefaults_PodFailurePolicyOnPodConditionsPattern`.
fn job_spec_nested(spec: &mut Obj) {
    if let Some(pfp) = child(spec, "podFailurePolicy") {
        for rule in each(pfp, "rules") {
            for pattern in each(rule, "onPodConditions") {
                default_str(pattern, "status", "True");
            }
        }
    }
    template(spec, "template");
}

/// CronJob: `SetDefaults_CronJob`; the job template gets only the nested defaulters, not
/// `SetDefaults_Job` (which is registered for the Job kind alone).
fn cron_job(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_str(spec, "concurrencyPolicy", "Allow");
    default_ptr(spec, "suspend", json!(false));
    default_ptr(spec, "successfulJobsHistoryLimit", json!(3));
    default_ptr(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(js) = child_or_new(spec, "jobTemplate").and_then(|t| child_or_new(t, "spec")) {
        job_spec_nested(js);
    }
}

// ---------------------------------------------------------------------------------------------
// autoscaling: pkg/apis/autoscaling/v1/defaults.go and pkg/apis/autoscaling/v2/defaults.go.

/// HorizontalPodAutoscaler. `autoscaling/v1` only defaults `minReplicas`; v2 also defaults the
/// metrics (CPU at 80% utilisation) and, when `behavior` is given, fills both scaling rules.
/// (`selectionStrategy` is newer than 1.32 and not defaulted.)
fn horizontal_pod_autoscaler(o: &mut Obj) {
    let v1 = str_at(o, "apiVersion") == "autoscaling/v1";
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_ptr(spec, "minReplicas", json!(1));
    if v1 {
        return;
    }
    if empty_list(spec.get("metrics")) {
        spec.insert(
            "metrics".to_owned(),
            json!([{
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }]),
        );
    }
    if let Some(behavior) = child(spec, "behavior") {
        scaling_rules(
            behavior,
            "scaleUp",
            Some(0),
            json!([
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ]),
        );
        scaling_rules(
            behavior,
            "scaleDown",
            None,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// `GenerateHPAScale{Up,Down}Rules`: the defaults, overridden by each field the user set.
/// Scale-down has no default stabilisation window (the controller's flag decides).
fn scaling_rules(behavior: &mut Obj, key: &str, stabilization: Option<i64>, policies: Value) {
    let Some(rules) = child_or_new(behavior, key) else {
        return;
    };
    default_ptr(rules, "selectPolicy", json!("Max"));
    if let Some(s) = stabilization {
        default_ptr(rules, "stabilizationWindowSeconds", json!(s));
    }
    default_ptr(rules, "policies", policies);
}

// ---------------------------------------------------------------------------------------------
// networking.k8s.io/v1: pkg/apis/networking/v1/defaults.go.

/// NetworkPolicy: `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`.
fn network_policy(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    for dir in ["ingress", "egress"] {
        for rule in each(spec, dir) {
            for p in each(rule, "ports") {
                default_ptr(p, "protocol", json!("TCP"));
            }
        }
    }
    if empty_list(spec.get("policyTypes")) {
        let has_egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".to_owned(), types);
    }
}

/// IngressClass: `SetDefaults_IngressClass` (parameters are cluster-scoped unless stated).
fn ingress_class(o: &mut Obj) {
    if let Some(p) = child(o, "spec").and_then(|s| child(s, "parameters")) {
        default_ptr(p, "scope", json!("Cluster"));
    }
}

// ---------------------------------------------------------------------------------------------
// discovery.k8s.io/v1: pkg/apis/discovery/v1/defaults.go.

/// EndpointSlice: `SetDefaults_EndpointPort` (name `""`, protocol TCP).
fn endpoint_slice(o: &mut Obj) {
    for p in each(o, "ports") {
        default_ptr(p, "name", json!(""));
        default_ptr(p, "protocol", json!("TCP"));
    }
}

// ---------------------------------------------------------------------------------------------
// rbac.authorization.k8s.io/v1: pkg/apis/rbac/v1/defaults.go.

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// RoleBinding and ClusterRoleBinding: `roleRef.apiGroup` and `SetDefaults_Subject` (User and
/// Group subjects belong to the RBAC group; a ServiceAccount's group is `""`, which serialises
/// away).
fn role_binding(o: &mut Obj) {
    if let Some(r) = child_or_new(o, "roleRef") {
        default_str(r, "apiGroup", RBAC_GROUP);
    }
    for s in each(o, "subjects") {
        if matches!(str_at(s, "kind"), "User" | "Group") {
            default_str(s, "apiGroup", RBAC_GROUP);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// storage.k8s.io/v1: pkg/apis/storage/v1/defaults.go.

/// StorageClass: `SetDefaults_StorageClass`.
fn storage_class(o: &mut Obj) {
    default_ptr(o, "reclaimPolicy", json!("Delete"));
    default_ptr(o, "volumeBindingMode", json!("Immediate"));
}

/// CSIDriver: `SetDefaults_CSIDriver` (`SELinuxMountReadWriteOncePod` is on by default).
fn csi_driver(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_ptr(spec, "attachRequired", json!(true));
    default_ptr(spec, "podInfoOnMount", json!(false));
    default_ptr(spec, "storageCapacity", json!(false));
    default_ptr(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    if empty_list(spec.get("volumeLifecycleModes")) {
        spec.insert("volumeLifecycleModes".to_owned(), json!(["Persistent"]));
    }
    default_ptr(spec, "requiresRepublish", json!(false));
    default_ptr(spec, "seLinuxMount", json!(false));
}

// ---------------------------------------------------------------------------------------------
// scheduling.k8s.io/v1: pkg/apis/scheduling/v1/defaults.go.

/// PriorityClass: `SetDefaults_PriorityClass`. (A Pod's `priority` comes from the Priority
/// admission plugin, not from defaulting.)
fn priority_class(o: &mut Obj) {
    default_ptr(o, "preemptionPolicy", json!("PreemptLowerPriority"));
}

// ---------------------------------------------------------------------------------------------
// admissionregistration.k8s.io/v1: pkg/apis/admissionregistration/v1/defaults.go.

/// Validating/MutatingWebhookConfiguration: `SetDefaults_{Validating,Mutating}Webhook`,
/// `SetDefaults_Rule` and `SetDefaults_ServiceReference`.
fn webhook_configuration(o: &mut Obj, mutating: bool) {
    for w in each(o, "webhooks") {
        default_ptr(w, "failurePolicy", json!("Fail"));
        default_ptr(w, "matchPolicy", json!("Equivalent"));
        default_ptr(w, "namespaceSelector", json!({}));
        default_ptr(w, "objectSelector", json!({}));
        default_ptr(w, "timeoutSeconds", json!(10));
        if mutating {
            default_ptr(w, "reinvocationPolicy", json!("Never"));
        }
        for r in each(w, "rules") {
            default_ptr(r, "scope", json!("*"));
        }
        if let Some(s) = child(w, "clientConfig").and_then(|c| child(c, "service")) {
            default_ptr(s, "port", json!(443));
        }
    }
}

/// ValidatingAdmissionPolicy: `SetDefaults_ValidatingAdmissionPolicySpec` and
/// `SetDefaults_MatchResources`.
fn validating_admission_policy(o: &mut Obj) {
    let Some(spec) = child_or_new(o, "spec") else {
        return;
    };
    default_ptr(spec, "failurePolicy", json!("Fail"));
    if let Some(m) = child(spec, "matchConstraints") {
        match_resources(m);
    }
}

/// ValidatingAdmissionPolicyBinding: `SetDefaults_MatchResources`.
fn validating_admission_policy_binding(o: &mut Obj) {
    if let Some(m) = child(o, "spec").and_then(|s| child(s, "matchResources")) {
        match_resources(m);
    }
}

fn match_resources(m: &mut Obj) {
    default_ptr(m, "matchPolicy", json!("Equivalent"));
    default_ptr(m, "namespaceSelector", json!({}));
    default_ptr(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for r in each(m, key) {
            default_ptr(r, "scope", json!("*"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Image references (k8s.io/kubernetes/pkg/util/parsers.ParseImageName over the
// distribution/reference grammar).

/// The tag the image-pull-policy default looks at: the explicit tag; `latest` when the reference
/// has neither tag nor digest; `""` for a digest without a tag. `None` when the reference does not
/// parse (upstream then falls back to `IfNotPresent`).
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() {
        return None;
    }
    let (named, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !valid_digest(d)) {
        return None;
    }
    let last_slash = named.rfind('/');
    let (name, tag) = match named.rfind(':') {
        Some(i) if last_slash.is_none_or(|s| i > s) => (&named[..i], Some(&named[i + 1..])),
        _ => (named, None),
    };
    if tag.is_some_and(|t| !valid_tag(t)) || !valid_name(name) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_owned(),
        (None, None) => "latest".to_owned(),
        (None, Some(_)) => String::new(),
    })
}

/// `[\w][\w.-]{0,127}`.
fn valid_tag(t: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = t.chars();
    chars.next().is_some_and(word)
        && t.len() <= 128
        && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// `algorithm:hex`, checked as `go-digest` does for the algorithms it knows.
fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match algo {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `[domain/]path-component(/path-component)*`, the path in lower case, at most 255 bytes.
fn valid_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 255 {
        return false;
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 {
        let first = parts[0];
        let is_domain = first.contains(['.', ':'])
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase());
        if is_domain {
            if !valid_domain(first) {
                return false;
            }
            parts.remove(0);
        }
    }
    parts.iter().all(|p| valid_path_component(p))
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn valid_path_component(p: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = p.as_bytes();
    if bytes.first().is_none_or(|b| !alnum(*b)) || bytes.last().is_none_or(|b| !alnum(*b)) {
        return false;
    }
    let mut sep = String::new();
    for &b in bytes {
        if alnum(b) {
            if !(sep.is_empty()
                || sep == "."
                || sep == "_"
                || sep == "__"
                || sep.bytes().all(|c| c == b'-'))
            {
                return false;
            }
            sep.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            sep.push(char::from(b));
        } else {
            return false;
        }
    }
    true
}

/// `host[:port]`, the host a dotted list of DNS labels or a bracketed IPv6 address.
fn valid_domain(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return false;
        };
        if ip.is_empty() || !ip.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return false;
        }
        match after {
            "" => return true,
            a => match a.strip_prefix(':') {
                Some(p) => ("x", Some(p)),
                None => return false,
            },
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    host.split('.').all(label_ok)
        && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn defaulted(group: &str, kind: &str, mut v: Value) -> Value {
        apply(group, kind, &mut v);
        v
    }

    /// The container `kubectl create deployment/job --image=<image>` produces, defaulted.
    fn container_out(name: &str, image: &str, policy: &str) -> Value {
        json!({
            "name": name,
            "image": image,
            "imagePullPolicy": policy,
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        })
    }

    fn template_spec_out(containers: Value, restart: &str) -> Value {
        json!({
            "containers": containers,
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": restart,
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        })
    }

    #[test]
    fn deployment_as_kubectl_create_deployment() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "labels": {"app": "x"}},
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "strategy": {},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
                },
            },
        });
        let want = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "labels": {"app": "x"}},
            "spec": {
                "progressDeadlineSeconds": 600,
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "x"}},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                },
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": template_spec_out(
                        json!([container_out("nginx", "nginx", "Always")]),
                        "Always",
                    ),
                },
            },
        });
        assert_eq!(defaulted("apps", "Deployment", input), want);
    }

    #[test]
    fn deployment_keeps_user_values_and_recreate() {
        let input = json!({"spec": {
            "replicas": 0, "revisionHistoryLimit": 0,
            "strategy": {"type": "Recreate"},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                "imagePullPolicy": "Never"}]}},
        }});
        let out = defaulted("apps", "Deployment", input);
        assert_eq!(out["spec"]["replicas"], 0);
        assert_eq!(out["spec"]["revisionHistoryLimit"], 0);
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Never"
        );
        let partial = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 3}}}});
        let out = defaulted("apps", "Deployment", partial);
        assert_eq!(
            out["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": "25%"}})
        );
    }

    #[test]
    fn job_as_kubectl_create_job() {
        let input = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"template": {"metadata": {}, "spec": {
                "containers": [{"name": "j", "image": "busybox", "resources": {}}],
                "restartPolicy": "Never",
            }}},
        });
        let want = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "completions": 1,
                "manualSelector": false,
                "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed",
                "suspend": false,
                "template": {"metadata": {}, "spec": template_spec_out(
                    json!([container_out("j", "busybox", "Always")]),
                    "Never",
                )},
            },
        });
        assert_eq!(defaulted("batch", "Job", input), want);
    }

    #[test]
    fn job_variants() {
        // Parallelism alone leaves completions unset.
        let out = defaulted("batch", "Job", json!({"spec": {"parallelism": 3}}));
        assert_eq!(out["spec"]["parallelism"], 3);
        assert!(out["spec"].get("completions").is_none());
        // Completions alone: parallelism 1.
        let out = defaulted("batch", "Job", json!({"spec": {"completions": 5}}));
        assert_eq!(out["spec"]["parallelism"], 1);
        // Per-index backoff and a pod failure policy change two defaults.
        let out = defaulted(
            "batch",
            "Job",
            json!({"spec": {"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}),
        );
        assert_eq!(out["spec"]["backoffLimit"], 2_147_483_647);
        assert_eq!(out["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(
            out["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        // Template labels become the Job's labels when it has none (after the registry has added
        // its generated labels, a re-default copies them: that is what clusters show).
        let out = defaulted(
            "batch",
            "Job",
            json!({"metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"job-name": "j"}}}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"job-name": "j"}));
        let out = defaulted(
            "batch",
            "Job",
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"template": {"metadata": {"labels": {"job-name": "j"}}}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"a": "b"}));
    }

    #[test]
    fn cron_job_defaults_template_but_not_job_fields() {
        let input = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"metadata": {"name": "c"}, "spec": {
                "template": {"metadata": {}, "spec": {
                    "containers": [{"name": "c", "image": "busybox:1.36", "resources": {}}],
                    "restartPolicy": "OnFailure",
                }},
            }}},
        });
        let want = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {
                "concurrencyPolicy": "Allow",
                "failedJobsHistoryLimit": 1,
                "schedule": "*/1 * * * *",
                "successfulJobsHistoryLimit": 3,
                "suspend": false,
                "jobTemplate": {"metadata": {"name": "c"}, "spec": {
                    "template": {"metadata": {}, "spec": template_spec_out(
                        json!([container_out("c", "busybox:1.36", "IfNotPresent")]),
                        "OnFailure",
                    )},
                }},
            },
        });
        assert_eq!(defaulted("batch", "CronJob", input), want);
    }

    #[test]
    fn pod_full() {
        let input = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.9",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
                    "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
                }],
                "initContainers": [{"name": "i", "image": "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000"}],
                "volumes": [
                    {"name": "a"},
                    {"name": "s", "secret": {"secretName": "s"}},
                    {"name": "m", "configMap": {"name": "m"}},
                    {"name": "h", "hostPath": {"path": "/tmp"}},
                    {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                    {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                    {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
                ],
            },
        });
        let want = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.9",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "readinessProbe": {"grpc": {"port": 9000, "service": ""},
                        "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
                    "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop", "scheme": "HTTP"}}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }],
                "initContainers": [container_out(
                    "i",
                    "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                    "IfNotPresent",
                )],
                "volumes": [
                    {"name": "a", "emptyDir": {}},
                    {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
                    {"name": "m", "configMap": {"name": "m", "defaultMode": 420}},
                    {"name": "h", "hostPath": {"path": "/tmp", "type": ""}},
                    {"name": "d", "downwardAPI": {"defaultMode": 420, "items": [{"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
                    {"name": "p", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}},
                    {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}}},
                ],
                "dnsPolicy": "ClusterFirst",
                "enableServiceLinks": true,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30,
            },
        });
        assert_eq!(defaulted("", "Pod", input), want);
    }

    #[test]
    fn pod_host_network_ports_but_not_in_templates() {
        let spec = json!({"hostNetwork": true, "containers": [{"name": "c", "image": "x",
            "ports": [{"containerPort": 8080}, {"containerPort": 9090, "hostPort": 9091}]}]});
        let pod = defaulted("", "Pod", json!({"spec": spec.clone()}));
        let ports = &pod["spec"]["containers"][0]["ports"];
        assert_eq!(ports[0]["hostPort"], 8080);
        assert_eq!(ports[1]["hostPort"], 9091);
        let rs = defaulted(
            "apps",
            "ReplicaSet",
            json!({"spec": {"template": {"spec": spec}}}),
        );
        let tspec = &rs["spec"]["template"]["spec"];
        assert!(tspec["containers"][0]["ports"][0].get("hostPort").is_none());
        assert!(tspec.get("enableServiceLinks").is_none());
        assert_eq!(rs["spec"]["replicas"], 1);
    }

    #[test]
    fn service_account_is_the_alias_of_service_account_name_in_every_pod_spec() {
        let spec = |pod: &Value| pod["spec"].clone();
        let named = defaulted("", "Pod", json!({"spec": {"serviceAccountName": "robot"}}));
        assert_eq!(spec(&named)["serviceAccount"], "robot");
        let aliased = defaulted("", "Pod", json!({"spec": {"serviceAccount": "old"}}));
        assert_eq!(spec(&aliased)["serviceAccountName"], "old");
        let both = defaulted(
            "",
            "Pod",
            json!({"spec": {"serviceAccountName": "new", "serviceAccount": "old"}}),
        );
        assert_eq!(spec(&both)["serviceAccount"], "new");
        let none = defaulted("", "Pod", json!({"spec": {"serviceAccount": ""}}));
        assert!(spec(&none).get("serviceAccount").is_none());
        assert!(spec(&none).get("serviceAccountName").is_none());
        let rs = defaulted(
            "apps",
            "ReplicaSet",
            json!({"spec": {"template": {"spec": {"serviceAccountName": "robot"}}}}),
        );
        assert_eq!(rs["spec"]["template"]["spec"]["serviceAccount"], "robot");
    }

    #[test]
    fn pull_policy_by_image() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("docker.io/library/nginx", "Always"),
            ("localhost:5000/app", "Always"),
            ("localhost:5000/app:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry.k8s.io/pause:3.9", "IfNotPresent"),
            ("localhost:5000/app:v1", "IfNotPresent"),
            ("[::1]:5000/app", "Always"),
            (
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
            ),
            (
                "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "Always",
            ),
            ("Nginx", "IfNotPresent"),
            ("", "IfNotPresent"),
            ("nginx:", "IfNotPresent"),
            ("nginx@sha256:short", "IfNotPresent"),
            ("my--app/x__y.z", "Always"),
            ("a/-b", "IfNotPresent"),
        ] {
            let out = defaulted(
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "c", "image": image}]}}),
            );
            assert_eq!(
                out["spec"]["containers"][0]["imagePullPolicy"], policy,
                "image {image:?}"
            );
        }
    }

    #[test]
    fn service_cluster_ip() {
        let input = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "s"}, "ports": [
                {"name": "http", "port": 80},
                {"name": "named", "port": 443, "targetPort": "https"},
                {"name": "zero", "port": 8080, "targetPort": 0, "protocol": "UDP"},
            ]},
        });
        let want = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {
                "selector": {"app": "s"},
                "ports": [
                    {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80},
                    {"name": "named", "port": 443, "protocol": "TCP", "targetPort": "https"},
                    {"name": "zero", "port": 8080, "protocol": "UDP", "targetPort": 8080},
                ],
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
            },
        });
        assert_eq!(defaulted("", "Service", input), want);
    }

    #[test]
    fn service_other_types() {
        let lb = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                "ports": [{"port": 80, "targetPort": 8080}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "h"}]}}}),
        );
        assert_eq!(
            lb["spec"],
            json!({"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}],
                "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
                "allocateLoadBalancerNodePorts": true})
        );
        assert_eq!(
            lb["status"]["loadBalancer"]["ingress"],
            json!([{"ip": "1.2.3.4", "ipMode": "VIP"}, {"hostname": "h"}])
        );
        let ext = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "example.com",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}}),
        );
        assert_eq!(
            ext["spec"],
            json!({"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"})
        );
        let eips = defaulted(
            "",
            "Service",
            json!({"spec": {"externalIPs": ["1.1.1.1"], "ports": [{"port": 1}]}}),
        );
        assert_eq!(eips["spec"]["externalTrafficPolicy"], "Cluster");
    }

    #[test]
    fn small_core_kinds() {
        assert_eq!(
            defaulted("", "Secret", json!({"metadata": {"name": "s"}})),
            json!({"metadata": {"name": "s"}, "type": "Opaque"})
        );
        let tls = json!({"type": "kubernetes.io/tls"});
        assert_eq!(defaulted("", "Secret", tls.clone()), tls);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(defaulted("", "ConfigMap", cm.clone()), cm);
        assert_eq!(
            defaulted(
                "",
                "Endpoints",
                json!({"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]})
            ),
            json!({"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}]})
        );
        assert_eq!(
            defaulted(
                "",
                "PersistentVolumeClaim",
                json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
            ),
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}})
        );
        assert_eq!(
            defaulted(
                "",
                "PersistentVolume",
                json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}})
            ),
            json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d", "type": ""},
                "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"}})
        );
        assert_eq!(
            defaulted("", "Node", json!({"status": {"capacity": {"cpu": "4"}}})),
            json!({"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}}})
        );
    }

    #[test]
    fn replication_controller_copies_template_labels() {
        let input = json!({"metadata": {"name": "rc"}, "spec": {"template": {
            "metadata": {"labels": {"app": "rc"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
        let out = defaulted("", "ReplicationController", input);
        assert_eq!(out["metadata"]["labels"], json!({"app": "rc"}));
        assert_eq!(out["spec"]["selector"], json!({"app": "rc"}));
        assert_eq!(out["spec"]["replicas"], 1);
        assert_eq!(out["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        let kept = defaulted(
            "",
            "ReplicationController",
            json!({"metadata": {"labels": {"x": "y"}}, "spec": {"selector": {"s": "t"},
                "template": {"metadata": {"labels": {"app": "rc"}}}}}),
        );
        assert_eq!(kept["metadata"]["labels"], json!({"x": "y"}));
        assert_eq!(kept["spec"]["selector"], json!({"s": "t"}));
        // No template: nothing to copy and no template is invented.
        let bare = defaulted("", "ReplicationController", json!({}));
        assert_eq!(bare, json!({"spec": {"replicas": 1}}));
    }

    #[test]
    fn stateful_set_and_daemon_set() {
        let sts = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"serviceName": "s", "template": {"spec": {"containers": []}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
        );
        assert_eq!(
            sts["spec"],
            json!({
                "serviceName": "s",
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "template": {"spec": template_spec_out(json!([]), "Always")},
                "volumeClaimTemplates": [{"metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}}],
            })
        );
        let od = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(od["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let ru = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        // Upstream only allocates rollingUpdate when it also had to default the type.
        assert_eq!(
            ru["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );

        let ds = defaulted("apps", "DaemonSet", json!({"spec": {}}));
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            ds["spec"]["template"]["spec"]["schedulerName"],
            "default-scheduler"
        );
    }

    #[test]
    fn horizontal_pod_autoscaler() {
        let v2 = defaulted(
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"apiVersion": "autoscaling/v2", "spec": {"maxReplicas": 5,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}),
        );
        assert_eq!(
            v2["spec"],
            json!({"maxReplicas": 5, "minReplicas": 1,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]})
        );
        let behavior = defaulted(
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"apiVersion": "autoscaling/v2", "spec": {"minReplicas": 2,
                "metrics": [{"type": "Pods"}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        assert_eq!(behavior["spec"]["minReplicas"], 2);
        assert_eq!(behavior["spec"]["metrics"], json!([{"type": "Pods"}]));
        assert_eq!(
            behavior["spec"]["behavior"],
            json!({
                "scaleUp": {"selectPolicy": "Max", "stabilizationWindowSeconds": 0, "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"selectPolicy": "Max", "stabilizationWindowSeconds": 60, "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
            })
        );
        let v1 = defaulted(
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"apiVersion": "autoscaling/v1", "spec": {"maxReplicas": 5}}),
        );
        assert_eq!(v1["spec"], json!({"maxReplicas": 5, "minReplicas": 1}));
    }

    #[test]
    fn networking_discovery_rbac_storage_scheduling() {
        let np = defaulted(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}],
                "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}}),
        );
        assert_eq!(
            np["spec"],
            json!({"podSelector": {}, "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}],
                "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}],
                "policyTypes": ["Ingress", "Egress"]})
        );
        let deny = defaulted(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}}}),
        );
        assert_eq!(deny["spec"]["policyTypes"], json!(["Ingress"]));
        let ing = json!({"spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {}}]}}]}});
        assert_eq!(defaulted("networking.k8s.io", "Ingress", ing.clone()), ing);
        assert_eq!(
            defaulted(
                "networking.k8s.io",
                "IngressClass",
                json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n"}}})
            )["spec"]["parameters"]["scope"],
            "Cluster"
        );
        assert_eq!(
            defaulted(
                "discovery.k8s.io",
                "EndpointSlice",
                json!({"addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}]})
            ),
            json!({"addressType": "IPv4", "endpoints": [],
                "ports": [{"port": 80, "name": "", "protocol": "TCP"}]})
        );
        assert_eq!(
            defaulted(
                "rbac.authorization.k8s.io",
                "RoleBinding",
                json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
                    {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]})
            ),
            json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "u"},
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "g"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]})
        );
        assert_eq!(
            defaulted(
                "storage.k8s.io",
                "StorageClass",
                json!({"provisioner": "p"})
            ),
            json!({"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        assert_eq!(
            defaulted("storage.k8s.io", "CSIDriver", json!({}))["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false})
        );
        assert_eq!(
            defaulted("scheduling.k8s.io", "PriorityClass", json!({"value": 10})),
            json!({"value": 10, "preemptionPolicy": "PreemptLowerPriority"})
        );
    }

    #[test]
    fn limit_range_cross_fills() {
        let out = defaulted(
            "",
            "LimitRange",
            json!({"spec": {"limits": [
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
                    "default": {"cpu": "1"}},
                {"type": "Pod", "max": {"cpu": "4"}},
            ]}}),
        );
        assert_eq!(
            out["spec"]["limits"],
            json!([
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"},
                    "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
                    "default": {"cpu": "1", "memory": "1Gi"},
                    "defaultRequest": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Mi"}},
                {"type": "Pod", "max": {"cpu": "4"}},
            ])
        );
    }

    #[test]
    fn webhooks_and_policies() {
        let out = defaulted(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            json!({"webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
        );
        assert_eq!(
            out["webhooks"][0],
            json!({"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
                "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"})
        );
        let v = defaulted(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            json!({"webhooks": [{"name": "w"}]}),
        );
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
        let vap = defaulted(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["*"]}]}}}),
        );
        assert_eq!(
            vap["spec"],
            json!({"failurePolicy": "Fail", "matchConstraints": {"matchPolicy": "Equivalent",
                "namespaceSelector": {}, "objectSelector": {},
                "resourceRules": [{"operations": ["*"], "scope": "*"}]}})
        );
    }

    #[test]
    fn unknown_kinds_and_custom_resources_untouched() {
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Deployment", "spec": {}});
        assert_eq!(defaulted("example.com", "Deployment", cr.clone()), cr);
        for (g, k) in [
            ("", "Namespace"),
            ("", "ServiceAccount"),
            ("", "Event"),
            ("", "ResourceQuota"),
            ("coordination.k8s.io", "Lease"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("policy", "PodDisruptionBudget"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
        ] {
            let v = json!({"metadata": {"name": "x"}, "spec": {"a": 1}});
            assert_eq!(defaulted(g, k, v.clone()), v, "{g}/{k}");
        }
    }

    /// Every kind this module knows, with a representative object.
    fn samples() -> Vec<(&'static str, &'static str, Value)> {
        let tmpl = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
             "livenessProbe": {"httpGet": {"port": 80}}}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {}}]}});
        vec![
            (
                "",
                "Pod",
                json!({"spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "a",
                "ports": [{"containerPort": 1}], "resources": {"limits": {"cpu": "1"}}}]}}),
            ),
            ("", "PodTemplate", json!({"template": tmpl.clone()})),
            (
                "",
                "ReplicationController",
                json!({"spec": {"template": tmpl.clone()}}),
            ),
            (
                "",
                "Service",
                json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}),
            ),
            ("", "Secret", json!({})),
            (
                "",
                "Endpoints",
                json!({"subsets": [{"ports": [{"port": 1}]}]}),
            ),
            (
                "",
                "PersistentVolume",
                json!({"spec": {"rbd": {}, "azureDisk": {}, "scaleIO": {}, "iscsi": {}}}),
            ),
            ("", "PersistentVolumeClaim", json!({})),
            (
                "",
                "LimitRange",
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
            ),
            ("", "Node", json!({"status": {"capacity": {"cpu": "1"}}})),
            (
                "apps",
                "Deployment",
                json!({"spec": {"template": tmpl.clone()}}),
            ),
            (
                "apps",
                "ReplicaSet",
                json!({"spec": {"template": tmpl.clone()}}),
            ),
            (
                "apps",
                "StatefulSet",
                json!({"spec": {"template": tmpl.clone(), "volumeClaimTemplates": [{}]}}),
            ),
            (
                "apps",
                "DaemonSet",
                json!({"spec": {"template": tmpl.clone()}}),
            ),
            ("batch", "Job", json!({"spec": {"template": tmpl.clone()}})),
            (
                "batch",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": tmpl}}}}),
            ),
            (
                "autoscaling",
                "HorizontalPodAutoscaler",
                json!({"apiVersion": "autoscaling/v2", "spec": {"behavior": {}}}),
            ),
            (
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"spec": {"egress": [{}]}}),
            ),
            (
                "networking.k8s.io",
                "IngressClass",
                json!({"spec": {"parameters": {}}}),
            ),
            ("discovery.k8s.io", "EndpointSlice", json!({"ports": [{}]})),
            (
                "rbac.authorization.k8s.io",
                "RoleBinding",
                json!({"subjects": [{"kind": "User"}]}),
            ),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding", json!({})),
            ("storage.k8s.io", "StorageClass", json!({})),
            ("storage.k8s.io", "CSIDriver", json!({})),
            ("scheduling.k8s.io", "PriorityClass", json!({})),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                json!({"webhooks": [{"rules": [{}]}]}),
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
                json!({"webhooks": [{}]}),
            ),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy",
                json!({"spec": {"matchConstraints": {}}}),
            ),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
                json!({"spec": {"matchResources": {}}}),
            ),
        ]
    }

    #[test]
    fn idempotent_on_every_kind() {
        for (g, k, v) in samples() {
            let once = defaulted(g, k, v.clone());
            assert_ne!(once, v, "{g}/{k} gained no defaults");
            assert_eq!(defaulted(g, k, once.clone()), once, "{g}/{k}");
            // Defaulting an empty object must not panic and must be idempotent too.
            let empty = defaulted(g, k, json!({}));
            assert_eq!(defaulted(g, k, empty.clone()), empty, "{g}/{k} from {{}}");
        }
    }

    #[test]
    fn garbage_shapes_are_left_alone() {
        let garbage = [
            json!(null),
            json!("spec"),
            json!(7),
            json!([1, 2]),
            json!({"spec": "nope"}),
            json!({"spec": {"template": 3, "strategy": "x", "updateStrategy": [], "ports": "p",
                "containers": {"a": 1}, "metrics": "m", "policyTypes": {"x": 1},
                "jobTemplate": true, "behavior": 1, "podFailurePolicy": "p"}}),
            json!({"spec": {"template": {"spec": {"containers": [1, "x", null, {"ports": [2],
                "env": [{"valueFrom": "v"}], "livenessProbe": "p", "image": 5,
                "resources": {"limits": "l"}}], "volumes": ["v", {"name": 1}, {"secret": 1}]},
                "metadata": {"labels": "l"}}}}),
            json!({"metadata": "m", "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}),
            json!({"spec": {"ports": [{"port": "http", "targetPort": {}}], "sessionAffinity": 3,
                "type": ["x"]}, "status": "s"}),
            json!({"subsets": "s", "ports": {"p": 1}, "webhooks": [{"rules": "r", "clientConfig": 1}],
                "roleRef": "r", "subjects": [1]}),
        ];
        let kinds: Vec<(&str, &str)> = samples().into_iter().map(|(g, k, _)| (g, k)).collect();
        for (g, k) in kinds {
            for v in &garbage {
                let once = defaulted(g, k, v.clone());
                if !v.is_object() {
                    assert_eq!(&once, v, "{g}/{k}");
                }
                assert_eq!(defaulted(g, k, once.clone()), once, "{g}/{k} {v}");
            }
        }
        // Wrong-typed leaves are not overwritten.
        let out = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"replicas": "3", "strategy": "x"}}),
        );
        assert_eq!(out["spec"]["replicas"], "3");
        assert_eq!(out["spec"]["strategy"], "x");
    }

    /// Arbitrary JSON built from the field names the defaulters look at, so random trees reach
    /// deep into the paths.
    fn arb_json() -> impl Strategy<Value = Value> {
        let keys = prop::sample::select(vec![
            "spec",
            "template",
            "metadata",
            "labels",
            "containers",
            "initContainers",
            "ephemeralContainers",
            "ports",
            "protocol",
            "image",
            "imagePullPolicy",
            "resources",
            "limits",
            "requests",
            "volumes",
            "name",
            "secret",
            "hostPath",
            "projected",
            "sources",
            "downwardAPI",
            "items",
            "fieldRef",
            "env",
            "valueFrom",
            "livenessProbe",
            "httpGet",
            "grpc",
            "lifecycle",
            "preStop",
            "strategy",
            "type",
            "rollingUpdate",
            "updateStrategy",
            "jobTemplate",
            "podFailurePolicy",
            "rules",
            "onPodConditions",
            "selector",
            "behavior",
            "scaleUp",
            "scaleDown",
            "metrics",
            "policies",
            "ingress",
            "egress",
            "policyTypes",
            "subsets",
            "status",
            "loadBalancer",
            "ip",
            "port",
            "targetPort",
            "sessionAffinity",
            "hostNetwork",
            "containerPort",
            "hostPort",
            "webhooks",
            "clientConfig",
            "service",
            "subjects",
            "roleRef",
            "kind",
            "apiVersion",
            "volumeClaimTemplates",
            "max",
            "min",
            "default",
            "defaultRequest",
            "capacity",
            "allocatable",
            "completions",
            "parallelism",
            "backoffLimitPerIndex",
            "externalIPs",
            "matchConstraints",
            "parameters",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-2i64..100).prop_map(Value::from),
            prop::sample::select(vec![
                "",
                "RollingUpdate",
                "ClientIP",
                "None",
                "LoadBalancer",
                "NodePort",
                "ClusterIP",
                "Container",
                "User",
                "Group",
                "nginx",
                "nginx:latest",
                "a:1",
                "autoscaling/v1",
                "Recreate",
                "x",
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 96, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(384))]
        #[test]
        fn never_panics_and_is_idempotent(v in arb_json(), which in 0usize..29) {
            let all = samples();
            let (g, k, _) = &all[which % all.len()];
            let once = defaulted(g, k, v);
            let twice = defaulted(g, k, once.clone());
            prop_assert_eq!(once, twice);
        }
    }
}
