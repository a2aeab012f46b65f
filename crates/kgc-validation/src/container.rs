//! Containers, init containers and ephemeral containers of a pod spec: names, images, ports,
//! environment, resources, probes, lifecycle hooks and volume mounts, following
//! kubernetes/kubernetes `pkg/apis/core/validation/validation.go` (`validateContainers`,
//! `validateInitContainers`, `validateEphemeralContainers`, `validateContainerCommon`,
//! `validateContainerPorts`, `ValidateEnv`, `ValidateEnvFrom`, `ValidateVolumeMounts`,
//! `ValidateVolumeDevices`, `validateProbe`, `validateHandler`, `checkHostPortConflicts`) and
//! apimachinery `IsValidPortName`, `IsRelaxedEnvVarName`.

use std::collections::BTreeSet;

use kgc_meta::validation::{is_dns1123_label, is_qualified_name, max_len_error, regex_error};
use serde_json::Value;

use crate::config::is_config_map_key;
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::labels::to_lower;
use crate::volume::{Volumes, local_descending_path};

/// `supportedPortProtocols`, sorted as `sets.List` returns them.
pub(crate) const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// apimachinery `IsValidPortNum`.
pub(crate) fn port_num_errors(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_owned()]
    }
}

/// apimachinery `IsValidPortName` (an IANA_SVC_NAME).
pub(crate) fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// `ValidatePortNumOrName` of an `IntOrString`.
pub(crate) fn validate_port_num_or_name(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    match v {
        Value::String(s) => errs.invalid_each(path, s, port_name_errors(s)),
        other => {
            let n = other.as_i64().unwrap_or(0);
            for m in port_num_errors(n) {
                errs.invalid_int(path, n, m);
            }
        }
    }
}

/// Validates `containers`, `initContainers` and `ephemeralContainers` of a pod spec.
pub(crate) fn validate_all(
    spec: &Value,
    vols: &Volumes<'_>,
    grace: Option<i64>,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let regular = spec.list("containers");
    let cpath = path.child("containers");
    // The names seen so far: init containers may not reuse a regular container's name,
    // ephemeral containers any other container's.
    let mut names = BTreeSet::new();
    if regular.is_empty() {
        errs.required(cpath, "");
    } else {
        for (i, c) in regular.iter().enumerate() {
            let p = cpath.index(i);
            common(c, vols, &p, errs);
            let name = c.str_of("name");
            if !names.insert(name) {
                errs.duplicate(p.child("name"), name);
            }
            lifecycle_and_probes(c, grace, &p, errs);
            if c.has("restartPolicy") {
                errs.forbidden(
                    p.child("restartPolicy"),
                    "may not be set for non-init containers",
                );
            }
        }
        host_port_conflicts(regular, &cpath, errs);
    }

    let ipath = path.child("initContainers");
    for (i, c) in spec.list("initContainers").iter().enumerate() {
        let p = ipath.index(i);
        common(c, vols, &p, errs);
        let restart_always = match c.opt_str("restartPolicy") {
            Some("Always") => true,
            Some(other) => {
                errs.not_supported_typed(p.child("restartPolicy"), other, &["Always"]);
                false
            }
            None => false,
        };
        let name = c.str_of("name");
        if names.contains(name) {
            errs.duplicate(p.child("name"), name);
        } else if !name.is_empty() {
            names.insert(name);
        }
        host_port_conflicts(std::slice::from_ref(c), &ipath, errs);
        if restart_always {
            lifecycle_and_probes(c, grace, &p, errs);
        } else {
            const NEEDS_ALWAYS: &str =
                "may not be set for init containers without restartPolicy=Always";
            for (field, msg) in [
                ("lifecycle", NEEDS_ALWAYS),
                ("livenessProbe", NEEDS_ALWAYS),
                ("readinessProbe", "may not be set for init containers"),
                ("startupProbe", NEEDS_ALWAYS),
            ] {
                if c.has(field) {
                    errs.forbidden(p.child(field), msg);
                }
            }
        }
        if !c.list("resizePolicy").is_empty() {
            errs.invalid_json(
                p.child("resizePolicy"),
                c.at("resizePolicy"),
                "must not be set for init containers",
            );
        }
    }

    let ephemeral = spec.list("ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    // Ephemeral containers may only target the regular and init containers.
    let others = names.clone();
    let epath = path.child("ephemeralContainers");
    for (i, c) in ephemeral.iter().enumerate() {
        let p = epath.index(i);
        common(c, vols, &p, errs);
        only_for_pod(c, &p, errs);
        let name = c.str_of("name");
        if !names.insert(name) {
            errs.duplicate(p.child("name"), name);
        }
        let target = c.str_of("targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            errs.not_found(p.child("targetContainerName"), target);
        }
        for field in [
            "ports",
            "resources",
            "lifecycle",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "restartPolicy",
        ] {
            let v = c.at(field);
            let set = match v {
                Value::Object(m) => !m.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Null => false,
                _ => true,
            };
            if set {
                errs.forbidden(p.child(field), "cannot be set for an Ephemeral Container");
            }
        }
        let mounts = p.child("volumeMounts");
        for (j, m) in c.list("volumeMounts").iter().enumerate() {
            let mp = mounts.index(j);
            for field in ["subPath", "subPathExpr"] {
                if !m.str_of(field).is_empty() {
                    errs.forbidden(mp.child(field), "cannot be set for an Ephemeral Container");
                }
            }
        }
    }
}

/// `validateContainersOnlyForPod`: pods (not templates) may not pad images with spaces.
pub(crate) fn only_for_pod(c: &Value, path: &Path<'_>, errs: &mut Errors) {
    let image = c.str_of("image");
    if image.trim() != image {
        errs.invalid(
            path.child("image"),
            image,
            "must not have leading or trailing whitespace",
        );
    }
}

/// `validateContainerCommon`.
fn common(c: &Value, vols: &Volumes<'_>, path: &Path<'_>, errs: &mut Errors) {
    let name = c.str_of("name");
    let name_path = path.child("name");
    if name.is_empty() {
        errs.required(name_path, "");
    } else {
        errs.invalid_each(name_path, name, is_dns1123_label(name));
    }
    if c.str_of("image").is_empty() {
        errs.required(path.child("image"), "");
    }
    errs.one_of(
        path.child("terminationMessagePolicy"),
        c.str_of("terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
    );
    ports(c, &path.child("ports"), errs);
    env(c, &path.child("env"), errs);
    env_from(c, &path.child("envFrom"), errs);
    volume_mounts(c, vols, &path.child("volumeMounts"), errs);
    volume_devices(c, vols, &path.child("volumeDevices"), errs);
    errs.one_of(
        path.child("imagePullPolicy"),
        c.str_of("imagePullPolicy"),
        &["Always", "IfNotPresent", "Never"],
    );
    crate::resources::validate_requirements(c.at("resources"), &path.child("resources"), errs);
}

/// `validateContainerPorts`.
fn ports(c: &Value, path: &Path<'_>, errs: &mut Errors) {
    let mut names = BTreeSet::new();
    for (i, port) in c.list("ports").iter().enumerate() {
        let p = path.index(i);
        let name = port.str_of("name");
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                errs.invalid_each(p.child("name"), name, msgs);
            } else if !names.insert(name) {
                errs.duplicate(p.child("name"), name);
            }
        }
        let cp = port.int_of("containerPort");
        if cp == 0 {
            errs.required(p.child("containerPort"), "");
        } else {
            for m in port_num_errors(cp) {
                errs.invalid_int(p.child("containerPort"), cp, m);
            }
        }
        let hp = port.int_of("hostPort");
        if hp != 0 {
            for m in port_num_errors(hp) {
                errs.invalid_int(p.child("hostPort"), hp, m);
            }
        }
        errs.one_of(p.child("protocol"), port.str_of("protocol"), &PROTOCOLS);
    }
}

/// `checkHostPortConflicts`: a protocol/hostIP/hostPort triple may be used once.
fn host_port_conflicts(containers: &[Value], path: &Path<'_>, errs: &mut Errors) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in c.list("ports").iter().enumerate() {
            let hp = port.int_of("hostPort");
            if hp == 0 {
                continue;
            }
            let (protocol, ip) = (port.str_of("protocol"), port.str_of("hostIP"));
            if !seen.insert((protocol, ip, hp)) {
                let container = path.index(ci);
                let ports = container.child("ports");
                let key = format!("{protocol}/{ip}/{hp}");
                errs.duplicate(ports.index(pi).child("hostPort"), &key);
            }
        }
    }
}

const RELAXED_ENV_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";

/// apimachinery `IsRelaxedEnvVarName` (the `RelaxedEnvironmentVariableValidation` gate is on
/// by default in 1.32).
fn env_var_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push("environment variable name must be non-empty".to_owned());
    }
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(RELAXED_ENV_MSG.to_owned());
    }
    errs
}

/// `ValidateEnv`.
fn env(c: &Value, path: &Path<'_>, errs: &mut Errors) {
    for (i, ev) in c.list("env").iter().enumerate() {
        let p = path.index(i);
        let name = ev.str_of("name");
        if name.is_empty() {
            errs.required(p.child("name"), "");
        }
        errs.invalid_each(p.child("name"), name, env_var_name_errors(name));
        if ev.has("valueFrom") {
            value_from(ev, &p.child("valueFrom"), errs);
        }
    }
}

/// `validEnvDownwardAPIFieldPathExpressions`, sorted.
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateEnvVarValueFrom`.
fn value_from(ev: &Value, path: &Path<'_>, errs: &mut Errors) {
    let vf = ev.at("valueFrom");
    let mut sources = 0;
    if vf.has("fieldRef") {
        sources += 1;
        validate_field_selector(
            vf.at("fieldRef"),
            &ENV_FIELD_PATHS,
            &path.child("fieldRef"),
            errs,
        );
    }
    if vf.has("resourceFieldRef") {
        sources += 1;
        validate_resource_field_selector(
            vf.at("resourceFieldRef"),
            &path.child("resourceFieldRef"),
            false,
            errs,
        );
    }
    for kind in ["configMapKeyRef", "secretKeyRef"] {
        if vf.has(kind) {
            sources += 1;
            key_selector(vf.at(kind), &path.child(kind), errs);
        }
    }
    if sources == 0 {
        errs.invalid(
            path,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        );
    } else if !ev.str_of("value").is_empty() {
        errs.invalid(path, "", "may not be specified when `value` is not empty");
    } else if sources > 1 {
        errs.invalid(
            path,
            "",
            "may not have more than one field specified at a time",
        );
    }
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn key_selector(s: &Value, path: &Path<'_>, errs: &mut Errors) {
    let name = s.str_of("name");
    errs.invalid_each(path.child("name"), name, crate::config::name_errors(name));
    let k = s.str_of("key");
    if k.is_empty() {
        errs.required(path.child("key"), "");
    } else {
        errs.invalid_each(path.child("key"), k, is_config_map_key(k));
    }
}

/// `validateObjectFieldSelector` against the downward-API paths allowed where it appears.
pub(crate) fn validate_field_selector(
    fs: &Value,
    allowed: &[&str],
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let version = fs.str_of("apiVersion");
    if version.is_empty() {
        errs.required(path.child("apiVersion"), "");
        return;
    }
    let field_path = fs.str_of("fieldPath");
    if field_path.is_empty() {
        errs.required(path.child("fieldPath"), "");
        return;
    }
    if let Err(e) = convert_downward_api_field(version, field_path) {
        errs.invalid(
            path.child("fieldPath"),
            field_path,
            format!("error converting fieldPath: {e}"),
        );
        return;
    }
    match split_subscript(field_path) {
        Some(("metadata.annotations", sub)) => {
            let sub = to_lower(sub);
            errs.invalid_each(path, &sub, is_qualified_name(&sub));
        }
        Some(("metadata.labels", sub)) => errs.invalid_each(path, sub, is_qualified_name(sub)),
        Some((p, _)) => errs.invalid(path, p, "does not support subscript"),
        None if !allowed.contains(&field_path) => {
            errs.not_supported(path.child("fieldPath"), field_path, allowed);
        }
        None => {}
    }
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `path['key']`.
fn split_subscript(p: &str) -> Option<(&str, &str)> {
    let inner = p.strip_suffix("']")?;
    let (path, key) = inner.split_once("['")?;
    Some((path, key))
}

/// `podutil.ConvertDownwardAPIFieldLabel`.
fn convert_downward_api_field(version: &str, field: &str) -> Result<(), String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((p, _)) = split_subscript(field) {
        return match p {
            "metadata.annotations" | "metadata.labels" => Ok(()),
            _ => Err(format!("field label does not support subscript: {p}")),
        };
    }
    match field {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(()),
        _ => Err(format!("field label not supported: {field}")),
    }
}

/// `validContainerResourceFieldPathExpressions`, sorted.
const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validateContainerResourceFieldSelector` (`volume`: a downward-API file, which must name
/// its container).
pub(crate) fn validate_resource_field_selector(
    fs: &Value,
    path: &Path<'_>,
    volume: bool,
    errs: &mut Errors,
) {
    let resource = fs.str_of("resource");
    if volume && fs.str_of("containerName").is_empty() {
        errs.required(path.child("containerName"), "");
    } else if resource.is_empty() {
        errs.required(path.child("resource"), "");
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("limits.hugepages-")
        && !resource.starts_with("requests.hugepages-")
    {
        errs.not_supported(path.child("resource"), resource, &RESOURCE_FIELD_PATHS);
    }
}

/// `ValidateEnvFrom`.
fn env_from(c: &Value, path: &Path<'_>, errs: &mut Errors) {
    for (i, ev) in c.list("envFrom").iter().enumerate() {
        let p = path.index(i);
        let prefix = ev.str_of("prefix");
        if !prefix.is_empty() {
            errs.invalid_each(p.child("prefix"), prefix, env_var_name_errors(prefix));
        }
        let mut sources = 0;
        for kind in ["configMapRef", "secretRef"] {
            if !ev.has(kind) {
                continue;
            }
            sources += 1;
            let name = ev.at(kind).str_of("name");
            let source = p.child(kind);
            let np = source.child("name");
            if name.is_empty() {
                errs.required(np, "");
            } else {
                errs.invalid_each(np, name, crate::config::name_errors(name));
            }
        }
        if sources == 0 {
            errs.invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            );
        } else if sources > 1 {
            errs.invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            );
        }
    }
}

/// `ValidateVolumeMounts`.
fn volume_mounts(c: &Value, vols: &Volumes<'_>, path: &Path<'_>, errs: &mut Errors) {
    let devices = c.list("volumeDevices");
    let privileged = c.at("securityContext").opt_bool("privileged") == Some(true);
    let mut mount_points = BTreeSet::new();
    for (i, m) in c.list("volumeMounts").iter().enumerate() {
        let p = path.index(i);
        let name = m.str_of("name");
        if name.is_empty() {
            errs.required(p.child("name"), "");
        }
        if !vols.contains_key(name) {
            errs.not_found(p.child("name"), name);
        }
        let mount_path = m.str_of("mountPath");
        if mount_path.is_empty() {
            errs.required(p.child("mountPath"), "");
        }
        if !mount_points.insert(mount_path) {
            errs.invalid(p.child("mountPath"), mount_path, "must be unique");
        }
        if devices.iter().any(|d| d.str_of("name") == name) {
            errs.invalid(
                p.child("name"),
                name,
                "must not already exist in volumeDevices",
            );
        }
        if devices.iter().any(|d| d.str_of("devicePath") == mount_path) {
            errs.invalid(
                p.child("mountPath"),
                mount_path,
                "must not already exist as a path in volumeDevices",
            );
        }
        // Upstream names these two without the mount's index.
        let sub_path = m.str_of("subPath");
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &path.child("subPath"), errs);
        }
        let expr = m.str_of("subPathExpr");
        if !expr.is_empty() {
            if !sub_path.is_empty() {
                errs.invalid(
                    p.child("subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                );
            }
            local_descending_path(expr, &path.child("subPathExpr"), errs);
        }
        let propagation = m.opt_str("mountPropagation");
        if let Some(mode) = propagation {
            let pp = path.child("mountPropagation");
            const MODES: [&str; 3] = ["Bidirectional", "HostToContainer", "None"];
            if !MODES.contains(&mode) {
                errs.not_supported_typed(pp, mode, &MODES);
            }
            if mode == "Bidirectional" && !privileged {
                errs.forbidden(
                    pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                );
            }
        }
        if let Some(rro) = m.opt_str("recursiveReadOnly") {
            let rp = path.child("recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "IfPossible" | "Enabled" => {
                    if m.opt_bool("readOnly") != Some(true) {
                        errs.forbidden(rp, "may only be specified when readOnly is true");
                    }
                    if propagation.is_some_and(|p| p != "None") {
                        errs.forbidden(
                            rp,
                            "may only be specified when mountPropagation is None or not specified",
                        );
                    }
                }
                other => {
                    errs.not_supported_typed(rp, other, &["Disabled", "IfPossible", "Enabled"])
                }
            }
        }
    }
}

/// `ValidateVolumeDevices`: block devices come from claims.
fn volume_devices(c: &Value, vols: &Volumes<'_>, path: &Path<'_>, errs: &mut Errors) {
    let mounts = c.list("volumeMounts");
    let mut device_paths = BTreeSet::new();
    let mut device_names = BTreeSet::new();
    for (i, d) in c.list("volumeDevices").iter().enumerate() {
        let p = path.index(i);
        let name = d.str_of("name");
        let dev_path = d.str_of("devicePath");
        if name.is_empty() {
            errs.required(p.child("name"), "");
        }
        if !device_names.insert(name) {
            errs.invalid(p.child("name"), name, "must be unique");
        }
        match vols.get(name) {
            Some(&"persistentVolumeClaim" | &"ephemeral") => {}
            Some(_) => errs.invalid(
                p.child("name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ),
            None => errs.not_found(p.child("name"), name),
        }
        if dev_path.is_empty() {
            errs.required(p.child("devicePath"), "");
        }
        if !device_paths.insert(dev_path) {
            errs.invalid(p.child("devicePath"), dev_path, "must be unique");
        }
        if !dev_path.is_empty() && dev_path.split('/').any(|s| s == "..") {
            errs.invalid(
                p.child("devicePath"),
                dev_path,
                "can not contain backsteps ('..')",
            );
        } else if !dev_path.starts_with('/') && !dev_path.is_empty() {
            errs.invalid(p.child("devicePath"), dev_path, "must be an absolute path");
        }
        if mounts.iter().any(|m| m.str_of("mountPath") == dev_path) {
            errs.invalid(
                p.child("devicePath"),
                dev_path,
                "must not already exist as a path in volumeMounts",
            );
        }
    }
}

/// Lifecycle hooks and probes, which regular and restartable init containers may have.
fn lifecycle_and_probes(c: &Value, grace: Option<i64>, path: &Path<'_>, errs: &mut Errors) {
    if c.has("lifecycle") {
        let lc = c.at("lifecycle");
        let lp = path.child("lifecycle");
        for hook in ["postStart", "preStop"] {
            if lc.has(hook) {
                handler(
                    lc.at(hook),
                    LIFECYCLE_HANDLERS,
                    grace,
                    &lp.child(hook),
                    errs,
                );
            }
        }
    }
    for (field, kind) in [
        ("livenessProbe", ProbeKind::Liveness),
        ("readinessProbe", ProbeKind::Readiness),
        ("startupProbe", ProbeKind::Startup),
    ] {
        if c.has(field) {
            probe(c.at(field), kind, grace, &path.child(field), errs);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
const LIFECYCLE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// `validateProbe` plus the per-kind rules of `validateLivenessProbe`,
/// `validateReadinessProbe` and `validateStartupProbe`.
fn probe(pr: &Value, kind: ProbeKind, grace: Option<i64>, path: &Path<'_>, errs: &mut Errors) {
    handler(pr, PROBE_HANDLERS, grace, path, errs);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.nonnegative(path.child(field), pr.int_of(field));
    }
    if let Some(t) = pr.opt_int("terminationGracePeriodSeconds")
        && t <= 0
    {
        errs.invalid_int(
            path.child("terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        );
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup => {
            let s = pr.int_of("successThreshold");
            if s != 1 {
                errs.invalid_int(path.child("successThreshold"), s, "must be 1");
            }
        }
        ProbeKind::Readiness => {
            if let Some(t) = pr.opt_int("terminationGracePeriodSeconds") {
                errs.invalid_int(
                    path.child("terminationGracePeriodSeconds"),
                    t,
                    "must not be set for readinessProbes",
                );
            }
        }
    }
}

/// `validateHandler`: exactly one handler type, each valid.
fn handler(h: &Value, kinds: &[&str], grace: Option<i64>, path: &Path<'_>, errs: &mut Errors) {
    let mut found = false;
    for kind in kinds {
        if !h.has(kind) {
            continue;
        }
        let p = path.child(kind);
        if found {
            errs.forbidden(p, "may not specify more than 1 handler type");
            continue;
        }
        found = true;
        let v = h.at(kind);
        match *kind {
            "exec" if v.list("command").is_empty() => {
                errs.required(p.child("command"), "");
            }
            "httpGet" => {
                validate_port_num_or_name(v.at("port"), &p.child("port"), errs);
                let scheme = v.str_of("scheme");
                if !matches!(scheme, "HTTP" | "HTTPS") {
                    errs.not_supported_typed(p.child("scheme"), scheme, &["HTTP", "HTTPS"]);
                }
                for header in v.list("httpHeaders") {
                    let name = header.str_of("name");
                    let valid = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                    if !valid {
                        errs.invalid(
                            p.child("httpHeaders"),
                            name,
                            regex_error(
                                "a valid HTTP header must consist of alphanumeric characters or '-'",
                                "[-A-Za-z0-9]+",
                                &["X-Header-Name"],
                            ),
                        );
                    }
                }
            }
            "tcpSocket" => validate_port_num_or_name(v.at("port"), &p.child("port"), errs),
            "grpc" => {
                let port = v.int_of("port");
                for m in port_num_errors(port) {
                    errs.invalid_int(p.child("port"), port, m);
                }
            }
            "sleep" => {
                let secs = v.int_of("seconds");
                if let Some(g) = grace
                    && (secs <= 0 || secs > g)
                {
                    errs.invalid_int(
                        p,
                        secs,
                        format!(
                            "must be greater than 0 and less than terminationGracePeriodSeconds ({g}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    if !found {
        errs.required(path, "must specify a handler type");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(spec: Value) -> Vec<String> {
        crate::testutil::messages(|e| {
            let vols = crate::volume::validate_volumes(&spec, "", &Path::new("spec.volumes"), e);
            validate_all(&spec, &vols, Some(30), &Path::new("spec"), e);
        })
    }

    fn ctr(extra: Value) -> Value {
        let mut c = json!({"name": "c", "image": "img", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    /// `TestValidateContainers` (the main failure cases).
    #[test]
    fn test_validate_containers() {
        assert_eq!(run(json!({})), vec!["spec.containers: Required value"]);
        assert_eq!(
            run(json!({"containers": [ctr(json!({"name": ""})), ctr(json!({"name": "Bad", "image": ""})), ctr(json!({})), ctr(json!({}))]})),
            vec![
                "spec.containers[0].name: Required value".to_owned(),
                "spec.containers[1].name: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned(),
                "spec.containers[1].image: Required value".to_owned(),
                "spec.containers[3].name: Duplicate value: \"c\"".to_owned(),
            ]
        );
        assert_eq!(
            run(
                json!({"containers": [ctr(json!({"imagePullPolicy": "Sometimes", "terminationMessagePolicy": "Nope", "restartPolicy": "Always"}))]})
            ),
            vec![
                "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Nope\": supported values: \"File\", \"FallbackToLogsOnError\"",
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            ]
        );
    }

    /// `TestValidateContainerPorts` and host-port conflicts.
    #[test]
    fn test_validate_container_ports() {
        assert_eq!(
            run(json!({"containers": [ctr(json!({"ports": [
                {"name": "http", "containerPort": 80, "protocol": "TCP"},
                {"name": "http", "containerPort": 81, "protocol": "TCP"},
                {"name": "Not_Valid", "containerPort": 0, "protocol": "HTTP"},
                {"containerPort": 70000, "hostPort": 8080, "protocol": "UDP"},
                {"containerPort": 90, "hostPort": 8080, "protocol": "UDP"},
            ]}))]})),
            vec![
                "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
                "spec.containers[0].ports[2].name: Invalid value: \"Not_Valid\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[2].containerPort: Required value",
                "spec.containers[0].ports[2].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[3].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[4].hostPort: Duplicate value: \"UDP//8080\"",
            ]
        );
    }

    /// `TestValidateEnv`.
    #[test]
    fn test_validate_env() {
        assert_eq!(
            run(json!({"containers": [ctr(json!({"env": [
                {"name": "OK.name-1", "value": "v"},
                {"name": ""},
                {"name": "A=B"},
                {"name": "X", "value": "v", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "Y", "valueFrom": {}},
                {"name": "Z", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.phase"}}},
                {"name": "W", "valueFrom": {"secretKeyRef": {"name": "s", "key": ""}}},
            ]}))]})),
            vec![
                "spec.containers[0].env[1].name: Required value",
                "spec.containers[0].env[1].name: Invalid value: \"\": environment variable name must be non-empty",
                "spec.containers[0].env[2].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].env[3].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].env[4].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                "spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
                "spec.containers[0].env[6].valueFrom.secretKeyRef.key: Required value",
            ]
        );
    }

    /// `TestValidateVolumeMounts`.
    #[test]
    fn test_validate_volume_mounts() {
        assert_eq!(
            run(
                json!({"volumes": [{"name": "v", "emptyDir": {}}], "containers": [ctr(json!({"volumeMounts": [
                    {"name": "v", "mountPath": "/a"},
                    {"name": "missing", "mountPath": "/a"},
                    {"name": "v", "mountPath": "/b", "subPath": "../x"},
                    {"name": "v", "mountPath": "/c", "mountPropagation": "Bidirectional"},
                    {"name": "v", "mountPath": "/d", "recursiveReadOnly": "Enabled"},
                ]}))]})
            ),
            vec![
                "spec.containers[0].volumeMounts[1].name: Not found: \"missing\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
                "spec.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'",
                "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
                "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
            ]
        );
    }

    /// `TestValidateProbe`, `TestValidateHandler` and the init-container rules.
    #[test]
    fn test_validate_probes_and_init_containers() {
        assert_eq!(
            run(json!({"containers": [ctr(json!({
                "livenessProbe": {"successThreshold": 2, "periodSeconds": -1, "httpGet": {"port": "web", "scheme": "HTTP"}, "exec": {"command": ["x"]}},
                "readinessProbe": {"successThreshold": 1, "terminationGracePeriodSeconds": 5},
                "lifecycle": {"preStop": {"sleep": {"seconds": 60}}},
            }))], "initContainers": [ctr(json!({"name": "i", "readinessProbe": {}, "restartPolicy": "OnFailure"}))]})),
            vec![
                "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
                "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
                "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers",
            ]
        );
    }
}
