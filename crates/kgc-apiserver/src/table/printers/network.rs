//! Services and networking: services, endpoints, endpoint slices, ingresses, ingress classes and network policies: columns and cells as kubernetes/kubernetes
//! pkg/printers/internalversion/printers.go prints them.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use crate::table::cell::*;
use crate::table::column::*;

pub(super) const SERVICE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Type",
        "string",
        "type determines how the Service is exposed. Defaults to ClusterIP.",
    ),
    col(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    col(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    col(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service.",
    ),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];

pub(super) const ENDPOINTS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets.",
    ),
    AGE,
];

pub(super) const ENDPOINT_SLICE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    col(
        "Ports",
        "string",
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    col(
        "Endpoints",
        "string",
        "endpoints is a list of unique endpoints in this slice.",
    ),
    AGE,
];

pub(super) const INGRESS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

pub(super) const INGRESS_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

pub(super) const NETWORK_POLICY_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.",
    ),
    AGE,
];

/// `loadBalancerStatusStringer` in its wide form (the server always prints wide).
fn load_balancer_ingress(status: &Value) -> String {
    let set: BTreeSet<&str> = arr(&status["ingress"])
        .iter()
        .filter_map(|i| {
            let ip = st(&i["ip"]);
            let host = st(&i["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

pub(super) fn service_cells(svc: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &svc["spec"];
    // The real server defaults type ClusterIP and protocol TCP.
    let svc_type = st_or(&spec["type"], "ClusterIP");
    let cluster_ip = arr(&spec["clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| spec["clusterIP"].as_str().filter(|s| !s.is_empty()))
        .unwrap_or("<none>");
    let external_ips: Vec<&str> = arr(&spec["externalIPs"]).iter().map(st).collect();
    let external_ip = match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_owned()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(&svc["status"]["loadBalancer"]);
            if !external_ips.is_empty() {
                let mut results: Vec<&str> = Vec::new();
                if !lb.is_empty() {
                    results.extend(lb.split(','));
                }
                results.extend(external_ips.iter().copied());
                results.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_owned()
            }
        }
        "ExternalName" => st(&spec["externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = arr(&spec["ports"])
        .iter()
        .map(|p| {
            let port = int(&p["port"]);
            let protocol = st_or(&p["protocol"], "TCP");
            let node_port = int(&p["nodePort"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    };
    vec![
        name(svc),
        svc_type.into(),
        cluster_ip.into(),
        external_ip.into(),
        ports.into(),
        age(svc, now),
        format_labels(&spec["selector"]).into(),
    ]
}

pub(super) fn ingress_cells(ing: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &ing["spec"];
    let class = spec["ingressClassName"].as_str().unwrap_or("<none>");
    // formatHosts, quirks included: at most three hosts, the rest counted by rule.
    let rules = arr(&spec["rules"]);
    let max = 3;
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == max {
            more = true;
        }
        let host = st(&rule["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_owned()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - max)
    } else {
        hosts.join(",")
    };
    let ports = if arr(&spec["tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(ing),
        class.into(),
        hosts.into(),
        load_balancer_ingress(&ing["status"]["loadBalancer"]).into(),
        ports.into(),
        age(ing, now),
    ]
}

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints` with all ports.
fn format_endpoints(ep: &Value) -> String {
    let subsets = arr(&ep["subsets"]);
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(&ss["addresses"]);
        let ports = arr(&ss["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for addr in addresses {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(st(&addr["ip"]).to_owned());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for addr in addresses {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(&addr["ip"]), int(&port["port"])));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

pub(super) fn endpoint_slice_cells(slice: &Value, now: Timestamp) -> Vec<Value> {
    let max = 3;
    let (mut ports, mut more, mut count) = (Vec::new(), false, 0usize);
    for port in arr(&slice["ports"]) {
        if ports.len() < max {
            let text = if port["port"].is_number() {
                int(&port["port"]).to_string()
            } else if let Some(n) = port["name"].as_str() {
                n.to_owned()
            } else {
                "*".to_owned()
            };
            ports.push(text);
        } else if ports.len() == max {
            more = true;
        }
        count += 1;
    }
    let ports_text = list_with_more(&ports, more, count, max);
    let (mut endpoints, mut more, mut count) = (Vec::new(), false, 0usize);
    for endpoint in arr(&slice["endpoints"]) {
        for address in arr(&endpoint["addresses"]) {
            if endpoints.len() < max {
                endpoints.push(st(address).to_owned());
            } else if endpoints.len() == max {
                more = true;
            }
            count += 1;
        }
    }
    vec![
        name(slice),
        st(&slice["addressType"]).into(),
        ports_text.into(),
        list_with_more(&endpoints, more, count, max).into(),
        age(slice, now),
    ]
}

/// `printEndpoints`.
pub(super) fn endpoints_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(o), format_endpoints(o).into(), age(o, now)]
}

/// `printIngressClass`.
pub(super) fn ingress_class_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let params = &o["spec"]["parameters"];
    let parameters = if params.is_object() {
        let mut p = st(&params["kind"]).to_owned();
        if let Some(group) = params["apiGroup"].as_str() {
            p = format!("{p}.{group}");
        }
        format!("{p}/{}", st(&params["name"]))
    } else {
        "<none>".into()
    };
    vec![
        name(o),
        st(&o["spec"]["controller"]).into(),
        parameters.into(),
        age(o, now),
    ]
}

/// `printNetworkPolicy`.
pub(super) fn network_policy_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(o),
        // A missing podSelector prints as the empty selector: `<none>`.
        format_label_selector(&o["spec"]["podSelector"]).into(),
        age(o, now),
    ]
}
