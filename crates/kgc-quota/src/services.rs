//! The service evaluator, kubernetes/kubernetes `pkg/quota/v1/evaluator/core/services.go`: a
//! Service counts in `services` and `count/services`, a `NodePort` Service its ports in
//! `services.nodeports`, a `LoadBalancer` one itself in `services.loadbalancers` and its ports
//! as node ports unless it allocates none.

use kgc_meta::quantity::Quantity;
use serde_json::Value;

use crate::resources::ResourceList;

pub(crate) const OBJECT_COUNT: &str = "count/services";
const RESOURCES: [&str; 4] = [
    OBJECT_COUNT,
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

pub(crate) fn matches_resource(name: &str) -> bool {
    RESOURCES.contains(&name)
}

/// `Usage`: the zero entries are kept, as upstream keeps them.
pub(crate) fn usage(svc: &Value) -> ResourceList {
    let spec = &svc["spec"];
    let ports = spec["ports"].as_array().map_or(0, Vec::len);
    let ports = Quantity::from_i64(i64::try_from(ports).unwrap_or(i64::MAX));
    let mut out = ResourceList::from([
        (OBJECT_COUNT.to_owned(), Quantity::from_i64(1)),
        ("services".to_owned(), Quantity::from_i64(1)),
        ("services.loadbalancers".to_owned(), Quantity::from_i64(0)),
        ("services.nodeports".to_owned(), Quantity::from_i64(0)),
    ]);
    match spec["type"].as_str() {
        Some("NodePort") => {
            out.insert("services.nodeports".to_owned(), ports);
        }
        Some("LoadBalancer") => {
            if spec["allocateLoadBalancerNodePorts"].as_bool() != Some(false) {
                out.insert("services.nodeports".to_owned(), ports);
            }
            out.insert("services.loadbalancers".to_owned(), Quantity::from_i64(1));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::to_json;
    use serde_json::json;

    #[test]
    fn node_ports_and_load_balancers() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            to_json(&usage(&lb)),
            json!({"count/services": "1", "services": "1",
                "services.loadbalancers": "1", "services.nodeports": "2"})
        );
        let lb_no_ports = json!({"spec": {"type": "LoadBalancer",
            "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}});
        assert_eq!(usage(&lb_no_ports)["services.nodeports"].to_string(), "0");
        let np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        assert_eq!(usage(&np)["services.nodeports"].to_string(), "1");
        let ip = json!({"spec": {"ports": [{"port": 80}]}});
        assert_eq!(usage(&ip)["services.nodeports"].to_string(), "0");
    }
}
