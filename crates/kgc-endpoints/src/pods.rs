//! What the endpoint controllers keep of a pod, and upstream's rules over it
//! (kubernetes `staging/src/k8s.io/endpointslice/util/controller_utils.go`
//! `ShouldPodBeInEndpoints`, `pkg/api/v1/pod/util.go` `FindPort`, `IsPodReady`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServicePort;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kgc_runtime::informer::View;
use serde_json::Value;

/// A pod as the endpoint controllers see it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodInfo {
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    /// `status.podIPs` (or `status.podIP`), in the kubelet's order.
    pub ips: Vec<String>,
    pub node_name: Option<String>,
    pub hostname: Option<String>,
    pub subdomain: Option<String>,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// When the `Ready` condition last changed: the trigger time of an endpoint change.
    pub ready_changed: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    pub phase: String,
    pub restart_policy: String,
    /// The containers' ports: name, number, protocol.
    pub ports: Vec<(String, i32, String)>,
}

impl View for PodInfo {
    fn view(obj: &Value) -> Option<Self> {
        let str_of = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let m = &obj["metadata"];
        let labels = m["labels"]
            .as_object()
            .map(|l| {
                l.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let status = &obj["status"];
        let mut ips: Vec<String> = status["podIPs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| str_of(&p["ip"]))
            .collect();
        if ips.is_empty() {
            ips.extend(str_of(&status["podIP"]));
        }
        let ready_condition = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready");
        let ports = obj["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .filter_map(|p| {
                Some((
                    p["name"].as_str().unwrap_or_default().to_owned(),
                    i32::try_from(p["containerPort"].as_i64()?).ok()?,
                    p["protocol"].as_str().unwrap_or("TCP").to_owned(),
                ))
            })
            .collect();
        Some(PodInfo {
            name: str_of(&m["name"])?,
            uid: str_of(&m["uid"]).unwrap_or_default(),
            labels,
            ips,
            node_name: str_of(&obj["spec"]["nodeName"]),
            hostname: str_of(&obj["spec"]["hostname"]),
            subdomain: str_of(&obj["spec"]["subdomain"]),
            ready: ready_condition.is_some_and(|c| c["status"] == "True"),
            ready_changed: ready_condition.and_then(|c| str_of(&c["lastTransitionTime"])),
            terminating: m["deletionTimestamp"].is_string(),
            phase: status["phase"].as_str().unwrap_or_default().to_owned(),
            restart_policy: obj["spec"]["restartPolicy"]
                .as_str()
                .unwrap_or("Always")
                .to_owned(),
            ports,
        })
    }
}

impl PodInfo {
    /// `ShouldPodBeInEndpoints`: the pod has an address, is not terminating unless
    /// `include_terminating`, and can still run (a pod that will not restart and has ended is
    /// no endpoint).
    pub fn is_endpoint(&self, include_terminating: bool) -> bool {
        if self.ips.is_empty() || (self.terminating && !include_terminating) {
            return false;
        }
        match self.restart_policy.as_str() {
            "Never" => self.phase != "Failed" && self.phase != "Succeeded",
            "OnFailure" => self.phase != "Succeeded",
            _ => true,
        }
    }

    /// The pod's first IPv4 address (`getEndpointAddresses` for the IPv4 family).
    pub fn ipv4(&self) -> Option<&str> {
        self.ips
            .iter()
            .map(String::as_str)
            .find(|ip| ip.parse::<std::net::Ipv4Addr>().is_ok())
    }

    /// `FindPort`: the container port a Service port's `targetPort` names (by number as is, by
    /// name among the containers' ports of the same protocol); `None` when no container has it.
    /// An unset `targetPort` is the Service port's number, as the API server defaults it.
    pub fn find_port(&self, port: &ServicePort) -> Option<i32> {
        let protocol = port.protocol.as_deref().unwrap_or("TCP");
        match &port.target_port {
            None => Some(port.port),
            Some(IntOrString::Int(n)) => Some(*n),
            Some(IntOrString::String(name)) => match name.parse::<i32>() {
                Ok(n) => Some(n),
                Err(_) => self
                    .ports
                    .iter()
                    .find(|(n, _, p)| n == name && p == protocol)
                    .map(|(_, number, _)| *number),
            },
        }
    }

    /// `ShouldSetHostname`: the pod names the Service as its subdomain and has a hostname.
    pub fn hostname_for(&self, service: &str) -> Option<String> {
        (self.subdomain.as_deref() == Some(service))
            .then(|| self.hostname.clone())
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(extra: Value) -> PodInfo {
        let mut p = json!({
            "metadata": {"name": "p", "uid": "u", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "ports": [
                {"name": "http", "containerPort": 8080},
                {"name": "dns", "containerPort": 53, "protocol": "UDP"}
            ]}]},
            "status": {"podIP": "10.244.0.5", "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        });
        merge(&mut p, extra);
        PodInfo::view(&p).unwrap()
    }

    fn merge(a: &mut Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn svc_port(target: Option<IntOrString>, protocol: &str) -> ServicePort {
        ServicePort {
            port: 80,
            target_port: target,
            protocol: Some(protocol.into()),
            ..ServicePort::default()
        }
    }

    #[test]
    fn named_ports_resolve_by_name_and_protocol() {
        let p = pod(json!({}));
        let named = |n: &str, proto| svc_port(Some(IntOrString::String(n.into())), proto);
        assert_eq!(p.find_port(&named("http", "TCP")), Some(8080));
        assert_eq!(p.find_port(&named("dns", "UDP")), Some(53));
        assert_eq!(p.find_port(&named("dns", "TCP")), None);
        assert_eq!(p.find_port(&named("grpc", "TCP")), None);
        assert_eq!(p.find_port(&named("9000", "TCP")), Some(9000));
        assert_eq!(
            p.find_port(&svc_port(Some(IntOrString::Int(81)), "TCP")),
            Some(81)
        );
        assert_eq!(p.find_port(&svc_port(None, "TCP")), Some(80));
    }

    #[test]
    fn readiness_address_and_terminating_are_read() {
        let p = pod(json!({}));
        assert!(p.ready && !p.terminating);
        assert_eq!(p.ipv4(), Some("10.244.0.5"));
        assert_eq!(p.ready_changed.as_deref(), Some("2026-01-01T00:00:00Z"));
        let p = pod(
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:01Z"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        );
        assert!(!p.ready && p.terminating);
    }

    #[test]
    fn which_pods_are_endpoints() {
        assert!(pod(json!({})).is_endpoint(false));
        assert!(!pod(json!({"status": {"podIP": null}})).is_endpoint(true));
        let deleting = pod(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:01Z"}}));
        assert!(!deleting.is_endpoint(false));
        assert!(deleting.is_endpoint(true));
        let done = json!({"spec": {"restartPolicy": "Never"}, "status": {"phase": "Succeeded"}});
        assert!(!pod(done).is_endpoint(true));
        let failed = json!({"spec": {"restartPolicy": "OnFailure"}, "status": {"phase": "Failed"}});
        assert!(pod(failed).is_endpoint(true));
    }

    #[test]
    fn hostname_only_under_the_services_subdomain() {
        let p = pod(json!({"spec": {"hostname": "h", "subdomain": "web"}}));
        assert_eq!(p.hostname_for("web").as_deref(), Some("h"));
        assert_eq!(p.hostname_for("other"), None);
    }
}
