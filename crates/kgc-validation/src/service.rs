//! core/v1 Service, following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidateService`, `validateServicePort`, `ValidateServiceClusterIPsRelatedFields`,
//! `validateServiceExternalTrafficPolicy`, `validateServiceInternalTrafficFieldsValue`,
//! `validateClientIPAffinityConfig`, `ValidateServiceUpdate`,
//! `validateUpgradeDowngradeClusterIPs`, `ValidateServiceStatusUpdate`) and
//! `pkg/registry/core/service/strategy.go` (`normalizeClusterIPs`, `patchAllocatedValues`), which
//! upstream applies before validating and which decide what the rules see.

use std::borrow::Cow;
use std::collections::BTreeSet;

use kgc_meta::validation::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use serde_json::{Value, json};

use crate::Op;
use crate::container::{PROTOCOLS, port_num_errors, validate_port_num_or_name};
use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, strings};
use crate::labels::validate_labels;
use crate::net::{is_dual_stack_ips, parse_ip, validate_cidr, validate_ip};

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// A Service create, update or `status` update.
pub(crate) fn service(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    match op {
        Op::Subresource("status", _) => status(obj.at("status"), errs),
        Op::Subresource(..) => {}
        Op::Create | Op::Update(_) => {
            let old = op.old();
            let spec = prepared_spec(obj.at("spec"), old.map(|o| o.at("spec")));
            if let Some(old) = old {
                upgrade_downgrade_cluster_ips(&spec, old.at("spec"), errs);
                let (lbc, old_lbc) = (
                    spec.opt_str("loadBalancerClass"),
                    old.at("spec").opt_str("loadBalancerClass"),
                );
                let lb = |s: &Value| s.str_of("type") == "LoadBalancer";
                if lb(&spec) && lb(old.at("spec")) && lbc != old_lbc {
                    errs.invalid_raw(
                        "spec.loadBalancerClass",
                        lbc.map_or("null".to_owned(), typed),
                        "may not change once set",
                    );
                }
            }
            validate(&spec, errs);
        }
    }
}

/// The spec as upstream's registry hands it to validation: on create `clusterIPs` is derived
/// from `clusterIP`; on update the allocated values the request left out are kept
/// (`patchAllocatedValues`) and the two IP fields are reconciled (`normalizeClusterIPs`).
/// The spec is copied only when one of these changes it.
fn prepared_spec<'a>(spec: &'a Value, old: Option<&Value>) -> Cow<'a, Value> {
    fn ip(s: &Value) -> &str {
        s.str_of("clusterIP")
    }
    let mut new = Cow::Borrowed(spec);
    let ips = |s: &Value| s.at("clusterIPs").clone();
    let set = |s: &mut Cow<'_, Value>, k: &str, v: Value| {
        if let Some(m) = s.to_mut().as_object_mut() {
            m.insert(k.to_owned(), v);
        }
    };
    let Some(old) = old else {
        if !ip(&new).is_empty() && new.list("clusterIPs").is_empty() {
            let v = json!([ip(&new)]);
            set(&mut new, "clusterIPs", v);
        }
        return new;
    };
    let needs_ip = |s: &Value| s.str_of("type") != "ExternalName";
    if needs_ip(old) && needs_ip(&new) {
        if ip(&new).is_empty() {
            set(&mut new, "clusterIP", Value::from(ip(old)));
        }
        if new.list("clusterIPs").is_empty() && !old.list("clusterIPs").is_empty() {
            set(&mut new, "clusterIPs", ips(old));
        }
    }
    if needs_health_check(old) && needs_health_check(&new) && new.int_of("healthCheckNodePort") == 0
    {
        set(
            &mut new,
            "healthCheckNodePort",
            old.at("healthCheckNodePort").clone(),
        );
    }
    if !old.list("clusterIPs").is_empty()
        && new.list("clusterIPs").is_empty()
        && ip(old) == ip(&new)
    {
        set(&mut new, "clusterIPs", ips(old));
    }
    if ip(old) != ip(&new) && crate::json::same(new.at("clusterIPs"), old.at("clusterIPs")) {
        let v = if ip(&new).is_empty() {
            Value::Null
        } else {
            json!([ip(&new)])
        };
        set(&mut new, "clusterIPs", v);
    }
    new
}

fn needs_health_check(spec: &Value) -> bool {
    spec.str_of("type") == "LoadBalancer" && spec.str_of("externalTrafficPolicy") == "Local"
}

fn is_headless(spec: &Value) -> bool {
    let ips = strings(spec, "clusterIPs");
    ips.len() == 1 && ips[0] == "None"
}

/// `ValidateService` (the spec part).
fn validate(spec: &Value, errs: &mut Errors) {
    let ty = spec.str_of("type");
    let headless = is_headless(spec);
    let ports = spec.list("ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.required("spec.ports", "");
    }
    let first_ip = || {
        strings(spec, "clusterIPs")
            .first()
            .copied()
            .unwrap_or_default()
            .to_owned()
    };
    match ty {
        "LoadBalancer" => {
            if headless {
                errs.invalid(
                    "spec.clusterIPs[0]",
                    &first_ip(),
                    "may not be set to 'None' for LoadBalancer services",
                );
            }
            for (i, p) in ports.iter().enumerate() {
                if p.int_of("port") == 10250 {
                    errs.invalid_int(
                        Path::new("spec.ports").index(i),
                        10250,
                        "may not expose port 10250 externally since it is used by kubelet",
                    );
                }
            }
        }
        "NodePort" if headless => {
            errs.invalid(
                "spec.clusterIPs[0]",
                &first_ip(),
                "may not be set to 'None' for NodePort services",
            );
        }
        "ExternalName" => {
            if !spec.list("clusterIPs").is_empty() {
                errs.forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                );
            }
            if !spec.list("ipFamilies").is_empty() {
                errs.forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                );
            }
            if spec.has("ipFamilyPolicy") {
                errs.forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                );
            }
            let name = spec.str_of("externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                errs.required("spec.externalName", "");
            } else {
                errs.invalid_each("spec.externalName", cname, is_dns1123_subdomain(cname));
            }
        }
        _ => {}
    }
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        port(
            p,
            ports.len() > 1,
            &mut names,
            &Path::new("spec.ports").index(i),
            errs,
        );
    }
    if spec.has("selector") {
        validate_labels(spec, "selector", &Path::new("spec.selector"), errs);
    }
    match spec.str_of("sessionAffinity") {
        "" => errs.required("spec.sessionAffinity", ""),
        "ClientIP" => client_ip_affinity(spec.at("sessionAffinityConfig"), errs),
        "None" => {
            if spec.has("sessionAffinityConfig") {
                errs.forbidden(
                    "spec.sessionAffinityConfig",
                    "must not be set when session affinity is None",
                );
            }
        }
        other => errs.not_supported_typed("spec.sessionAffinity", other, &["ClientIP", "None"]),
    }
    cluster_ip_fields(spec, errs);
    let external_ips = Path::new("spec.externalIPs");
    for (i, ip) in strings(spec, "externalIPs").iter().enumerate() {
        let p = external_ips.index(i);
        if validate_ip(&p, ip, errs) {
            non_special_ip(ip, &p, errs);
        }
    }
    errs.one_of("spec.type", ty, &TYPES);
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if p.int_of("nodePort") != 0 {
                errs.forbidden(
                    Path::new("spec.ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                );
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let np = p.int_of("nodePort");
        if np != 0 && !node_ports.insert((p.str_of("protocol"), np)) {
            errs.duplicate_raw(
                Path::new("spec.ports").index(i).child("nodePort"),
                np.to_string(),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let (proto, num) = (p.str_of("protocol"), p.int_of("port"));
        if !seen.insert((proto, num)) {
            errs.duplicate_raw(
                Path::new("spec.ports").index(i),
                go_struct(&[
                    ("Name", typed("")),
                    ("Protocol", typed(proto)),
                    ("AppProtocol", "null".to_owned()),
                    ("Port", num.to_string()),
                    ("TargetPort", "0".to_owned()),
                    ("NodePort", "0".to_owned()),
                ]),
            );
        }
    }
    let ranges = strings(spec, "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        // Upstream capitalises this path.
        let p = Path::new("spec.LoadBalancerSourceRanges");
        if ty != "LoadBalancer" {
            errs.forbidden(p, "may only be used when `type` is 'LoadBalancer'");
        }
        for (i, r) in ranges.iter().enumerate() {
            validate_cidr(&p.index(i), r.trim(), errs);
        }
    }
    if spec.has("allocateLoadBalancerNodePorts") && ty != "LoadBalancer" {
        errs.forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        );
    }
    if ty == "LoadBalancer" && !spec.has("allocateLoadBalancerNodePorts") {
        errs.required("allocateLoadBalancerNodePorts", "");
    }
    if let Some(class) = spec.opt_str("loadBalancerClass") {
        if ty == "LoadBalancer" {
            errs.invalid_each("spec.loadBalancerClass", class, is_qualified_name(class));
        } else {
            errs.forbidden(
                "spec.loadBalancerClass",
                "may only be used when `type` is 'LoadBalancer'",
            );
        }
    }
    traffic_policies(spec, ty, errs);
}

/// `validateServicePort`.
fn port<'a>(
    p: &'a Value,
    require_name: bool,
    names: &mut BTreeSet<&'a str>,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let name = p.str_of("name");
    if require_name && name.is_empty() {
        errs.required(path.child("name"), "");
    } else if !name.is_empty() {
        errs.invalid_each(path.child("name"), name, is_dns1123_label(name));
        if !names.insert(name) {
            errs.duplicate(path.child("name"), name);
        }
    }
    let num = p.int_of("port");
    for m in port_num_errors(num) {
        errs.invalid_int(path.child("port"), num, m);
    }
    errs.one_of(path.child("protocol"), p.str_of("protocol"), &PROTOCOLS);
    validate_port_num_or_name(p.at("targetPort"), &path.child("targetPort"), errs);
    if let Some(ap) = p.opt_str("appProtocol") {
        errs.invalid_each(path.child("appProtocol"), ap, is_qualified_name(ap));
    }
}

/// `validateClientIPAffinityConfig`.
fn client_ip_affinity(cfg: &Value, errs: &mut Errors) {
    const WHEN: &str = "when session affinity type is ClientIP";
    let p = Path::new("spec.sessionAffinityConfig");
    if cfg.is_null() {
        errs.required(p, WHEN);
    } else if !cfg.has("clientIP") {
        errs.required(p.child("clientIP"), WHEN);
    } else {
        match cfg.at("clientIP").opt_int("timeoutSeconds") {
            None => errs.required(p.child("clientIP").child("timeoutSeconds"), WHEN),
            Some(t) if t <= 0 || t > 86400 => errs.invalid_int(
                p.child("clientIP").child("timeoutSeconds"),
                t,
                "must be greater than 0 and less than 86400",
            ),
            Some(_) => {}
        }
    }
}

/// `ValidateNonSpecialIP`.
fn non_special_ip(ip: &str, path: &Path<'_>, errs: &mut Errors) {
    let Some(addr) = parse_ip(ip) else {
        return;
    };
    let msg = if addr.is_unspecified() {
        "may not be unspecified (0.0.0.0)"
    } else if addr.is_loopback() {
        "may not be in the loopback range (127.0.0.0/8, ::1/128)"
    } else if match addr {
        std::net::IpAddr::V4(v4) => v4.is_link_local(),
        std::net::IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    } {
        "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
    } else if addr.is_multicast() {
        "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
    } else {
        return;
    };
    errs.invalid(path, ip, msg);
}

/// `ValidateServiceClusterIPsRelatedFields`.
fn cluster_ip_fields(spec: &Value, errs: &mut Errors) {
    if spec.str_of("type") == "ExternalName" {
        return;
    }
    let ips = strings(spec, "clusterIPs");
    let ips_json = spec.at("clusterIPs");
    let cluster_ip = spec.str_of("clusterIP");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.required("spec.clusterIPs", "");
        } else if ips[0] != cluster_ip {
            errs.invalid_json(
                "spec.clusterIPs",
                ips_json,
                "first value must match `clusterIP`",
            );
        }
    } else if !ips.is_empty() {
        errs.invalid_json(
            "spec.clusterIPs",
            ips_json,
            "must be empty when `clusterIP` is not specified",
        );
    }
    let mut seen = BTreeSet::new();
    let families = Path::new("spec.ipFamilies");
    for (i, fam) in strings(spec, "ipFamilies").iter().enumerate() {
        let p = families.index(i);
        if !matches!(*fam, "IPv4" | "IPv6") {
            errs.not_supported_typed(p, fam, &["IPv4", "IPv6"]);
        }
        if !seen.insert(*fam) {
            errs.duplicate_raw(p, typed(fam));
        }
    }
    if let Some(policy) = spec.opt_str("ipFamilyPolicy") {
        const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
        if !POLICIES.contains(&policy) {
            errs.not_supported_typed("spec.ipFamilyPolicy", policy, &POLICIES);
        }
    }
    let mut bad_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && *ip == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                errs.invalid_json(
                    "spec.clusterIPs",
                    ips_json,
                    "'None' must be the first and only value",
                );
            }
            continue;
        }
        bad_ips |= !validate_ip(&Path::new("spec.clusterIPs").index(i), ip, errs);
    }
    if ips.len() > 2 {
        errs.invalid_json("spec.clusterIPs", ips_json, "may only hold up to 2 values");
    }
    if bad_ips {
        return;
    }
    if ips.len() > 1 && !is_dual_stack_ips(&ips) {
        errs.invalid_json(
            "spec.clusterIPs",
            ips_json,
            "may specify no more than one IP for each IP family",
        );
    }
    let families = strings(spec, "ipFamilies");
    if !is_headless(spec) {
        for (i, (ip, fam)) in ips.iter().zip(&families).enumerate() {
            let v6 = parse_ip(ip).is_some_and(|a| a.is_ipv6());
            if *fam == "IPv4" && v6 {
                errs.invalid(
                    Path::new("spec.clusterIPs").index(i),
                    ip,
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                );
            }
            if *fam == "IPv6" && !v6 {
                errs.invalid(
                    Path::new("spec.clusterIPs").index(i),
                    ip,
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                );
            }
        }
    }
}

/// `validateServiceExternalTrafficPolicy`, `validateServiceInternalTrafficFieldsValue` and the
/// traffic distribution check.
fn traffic_policies(spec: &Value, ty: &str, errs: &mut Errors) {
    let external = ty == "LoadBalancer"
        || ty == "NodePort"
        || (ty == "ClusterIP" && !spec.list("externalIPs").is_empty());
    let etp = spec.str_of("externalTrafficPolicy");
    if !external {
        if !etp.is_empty() {
            errs.invalid_typed(
                "spec.externalTrafficPolicy",
                etp,
                "may only be set for externally-accessible services",
            );
        }
    } else if etp.is_empty() {
        errs.required("spec.externalTrafficPolicy", "");
    } else if !matches!(etp, "Cluster" | "Local") {
        errs.not_supported_typed("spec.externalTrafficPolicy", etp, &["Cluster", "Local"]);
    }
    let hc = spec.int_of("healthCheckNodePort");
    if !needs_health_check(spec) {
        if hc != 0 {
            errs.invalid_int(
                "spec.healthCheckNodePort",
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            );
        }
    } else if hc == 0 {
        errs.required("spec.healthCheckNodePort", "");
    } else {
        for m in port_num_errors(hc) {
            errs.invalid_int("spec.healthCheckNodePort", hc, m);
        }
    }
    match spec.opt_str("internalTrafficPolicy") {
        None if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            errs.required("spec.internalTrafficPolicy", "must be Cluster or Local");
        }
        Some(p) if !matches!(p, "Cluster" | "Local") => {
            errs.not_supported_typed("spec.internalTrafficPolicy", p, &["Cluster", "Local"]);
        }
        _ => {}
    }
    if let Some(td) = spec.opt_str("trafficDistribution")
        && td != "PreferClose"
    {
        errs.not_supported_typed("spec.trafficDistribution", td, &["PreferClose"]);
    }
}

/// `validateUpgradeDowngradeClusterIPs`: the primary cluster IP never changes; the secondary
/// may be added, or released with `SingleStack`.
fn upgrade_downgrade_cluster_ips(spec: &Value, old: &Value, errs: &mut Errors) {
    if spec.str_of("type") == "ExternalName" || old.str_of("type") == "ExternalName" {
        return;
    }
    if is_headless(spec) && is_headless(old) {
        return;
    }
    let (new_ips, old_ips) = (strings(spec, "clusterIPs"), strings(old, "clusterIPs"));
    let shown = spec.at("clusterIPs");
    const CHANGED: &str = "may not change once set";
    if new_ips.len() == old_ips.len() {
        for (i, (n, o)) in new_ips.iter().zip(&old_ips).enumerate() {
            if n != o {
                errs.invalid_json(Path::new("spec.clusterIPs").index(i), shown, CHANGED);
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.invalid_json(
                "spec.clusterIPs[0]",
                shown,
                "primary clusterIP can not be unset",
            );
        }
        if !new_ips.is_empty() && new_ips[0] != old_ips[0] {
            errs.invalid_json("spec.clusterIPs[0]", shown, CHANGED);
        }
        if new_ips.len() == 1 && spec.opt_str("ipFamilyPolicy") != Some("SingleStack") {
            errs.invalid_json(
                "spec.clusterIPs[0]",
                shown,
                "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP",
            );
        }
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        errs.invalid_json("spec.clusterIPs[0]", shown, CHANGED);
    }
}

/// `ValidateServiceStatusUpdate` → `ValidateLoadBalancerStatus`.
fn status(s: &Value, errs: &mut Errors) {
    let ingress = Path::new("status.loadBalancer.ingress");
    for (i, ing) in s.at("loadBalancer").list("ingress").iter().enumerate() {
        let p = ingress.index(i);
        let ip = ing.str_of("ip");
        if !ip.is_empty() {
            validate_ip(&p.child("ip"), ip, errs);
        }
        let host = ing.str_of("hostname");
        if !host.is_empty() {
            errs.invalid_each(p.child("hostname"), host, is_dns1123_subdomain(host));
            if parse_ip(host).is_some() {
                errs.invalid(
                    p.child("hostname"),
                    host,
                    "must be a DNS name, not an IP address",
                );
            }
        }
        if let Some(mode) = ing.opt_str("ipMode") {
            if ip.is_empty() {
                errs.forbidden(p.child("ipMode"), "may not be specified when `ip` is not");
            } else if !matches!(mode, "VIP" | "Proxy") {
                errs.not_supported_typed(p.child("ipMode"), mode, &["Proxy", "VIP"]);
            }
        } else if !ip.is_empty() {
            errs.required(p.child("ipMode"), "must be specified when `ip` is set");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        let mut base = json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
            "selector": {"app": "web"}});
        if let (Some(b), Some(s)) = (base.as_object_mut(), spec.as_object()) {
            b.extend(s.clone());
        }
        json!({"metadata": {"name": "s", "namespace": "ns"}, "spec": base})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(service, obj, old, sub)
    }

    /// `TestValidateServiceCreate` (the main cases).
    #[test]
    fn test_validate_service_create() {
        assert!(run(&svc(json!({})), None, None).is_empty());
        assert!(run(&svc(json!({"clusterIP": "None", "ports": []})), None, None).is_empty());
        assert!(run(&svc(json!({"type": "ExternalName", "externalName": "example.com.", "ports": [], "internalTrafficPolicy": null})), None, None).is_empty());
        assert_eq!(
            run(&svc(json!({"ports": []})), None, None),
            vec!["spec.ports: Required value"]
        );
        assert_eq!(
            run(
                &svc(json!({"ports": [
                    {"port": 80, "protocol": "TCP", "targetPort": 80},
                    {"name": "http", "port": 0, "protocol": "HTTP", "targetPort": "Not_Valid"},
                    {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30000},
                ]})),
                None,
                None
            ),
            vec![
                "spec.ports[0].name: Required value",
                "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[1].targetPort: Invalid value: \"Not_Valid\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.ports[2].name: Duplicate value: \"http\"",
                "spec.ports[2].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                "spec.ports[2]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
            ]
        );
        assert_eq!(
            run(&svc(json!({"type": "Magic"})), None, None),
            vec![
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ]
        );
        assert_eq!(
            run(&svc(json!({"clusterIP": "10.0.0.300"})), None, None),
            vec![
                "spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            ]
        );
        assert_eq!(
            run(
                &svc(
                    json!({"type": "NodePort", "clusterIP": "None", "externalTrafficPolicy": "Cluster"})
                ),
                None,
                None
            ),
            vec![
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
            ]
        );
        assert_eq!(
            run(
                &svc(
                    json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": true})
                ),
                None,
                None
            ),
            vec!["spec.healthCheckNodePort: Required value"]
        );
        assert_eq!(
            run(&svc(json!({"externalTrafficPolicy": "Local"})), None, None),
            vec![
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services"
            ]
        );
        assert_eq!(
            run(&svc(json!({"selector": {"a b": "c"}})), None, None),
            vec![
                "spec.selector: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
    }

    /// `TestValidateServiceUpdate`: the cluster IP is fixed once allocated.
    #[test]
    fn test_validate_service_update() {
        let old = svc(json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"]}));
        // Leaving the allocated IP out keeps it, as upstream's strategy does.
        assert!(run(&svc(json!({})), Some(&old), None).is_empty());
        assert_eq!(
            run(&svc(json!({"clusterIP": "10.0.0.2"})), Some(&old), None),
            vec!["spec.clusterIPs[0]: Invalid value: [\"10.0.0.2\"]: may not change once set"]
        );
    }

    #[test]
    fn status_ingress_rules() {
        let old = svc(json!({}));
        let mut obj = svc(json!({}));
        obj["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP"}, {"hostname": "10.0.0.1"}, {"ip": "x", "ipMode": "VIP"}]}});
        assert_eq!(
            run(&obj, Some(&old), Some("status")),
            vec![
                "status.loadBalancer.ingress[1].hostname: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
                "status.loadBalancer.ingress[2].ip: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ]
        );
    }
}
