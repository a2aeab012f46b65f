//! A Service's ClusterIPs and NodePorts on its way into the store (kubernetes
//! `pkg/registry/core/service/storage/alloc.go`): unset ones are allocated, requested ones
//! checked (422 `provided IP is already allocated`, `provided port is already allocated`, out
//! of range), `None` keeps a Service headless, and an update keeps what the Service had
//! (`patchAllocatedValues`).
//!
//! What is in use is read from the stored Services themselves, under one lock held from the
//! read until the Service is stored: allocation cannot race, an address or port is free again
//! the moment its Service is gone (however it goes: a DELETE, a namespace's deletion, the
//! garbage collector), and a restart rebuilds nothing. Upstream keeps a bitmap in a separate
//! object and needs a repair controller to mend it against the Services; with one store in
//! one process, the Services are the only truth kgc keeps.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use kgc_meta::validation::FieldErrorKind;
use kgc_meta::{FieldError, GroupResource, ResourceInfo, Status};
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard};

use crate::ipallocator::{IpError, IpRange};
use crate::portallocator::{PortError, PortRange};
use crate::request::RequestInfo;

/// The ranges, and the lock that serializes every Service write that may allocate.
#[derive(Debug, Default)]
pub(crate) struct ServiceRanges {
    pub ips: IpRange,
    pub ports: PortRange,
    lock: Mutex<()>,
}

impl ServiceRanges {
    pub(crate) fn new(ips: IpRange, ports: PortRange) -> Self {
        ServiceRanges {
            ips,
            ports,
            lock: Mutex::default(),
        }
    }
}

/// What one Service write may take, and the lock that keeps it so until the write is stored.
pub(crate) struct Allocation<'a> {
    ranges: &'a ServiceRanges,
    used_ips: HashSet<Ipv4Addr>,
    used_ports: HashSet<i32>,
    _guard: MutexGuard<'a, ()>,
}

impl crate::ApiServer {
    /// `--service-cluster-ip-range` and `--service-node-port-range`.
    pub fn with_service_ranges(mut self, ips: IpRange, ports: PortRange) -> Self {
        self.service_ranges = std::sync::Arc::new(ServiceRanges::new(ips, ports));
        self
    }

    /// For a write of a Service (not of its status), the addresses and ports other Services
    /// hold, locked until the returned value is dropped.
    pub(crate) async fn service_allocation(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
    ) -> Result<Option<Allocation<'_>>, Status> {
        if !info.group.is_empty() || info.plural != "services" || req.subresource.is_some() {
            return Ok(None);
        }
        let guard = self.service_ranges.lock.lock().await;
        let gr = GroupResource::new("", "services");
        let list = self
            .store
            .list(&gr, &kgc_store::ListOptions::default())
            .map_err(|e| Status::internal(format!("listing Services: {e}")))?;
        let this = (req.namespace.as_deref(), req.name.as_deref());
        let mut used_ips = HashSet::new();
        let mut used_ports = HashSet::new();
        for svc in &list.items {
            let v = svc.value();
            let m = &v["metadata"];
            if req.name.is_some() && (m["namespace"].as_str(), m["name"].as_str()) == this {
                continue;
            }
            let (ips, ports) = held(&v);
            used_ips.extend(ips);
            used_ports.extend(ports);
        }
        Ok(Some(Allocation {
            ranges: &self.service_ranges,
            used_ips,
            used_ports,
            _guard: guard,
        }))
    }
}

/// The addresses and node ports a stored Service holds.
fn held(svc: &Value) -> (Vec<Ipv4Addr>, Vec<i32>) {
    let spec = &svc["spec"];
    let ips = spec["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(&spec["clusterIP"]))
        .filter_map(|ip| ip.as_str()?.parse().ok())
        .collect();
    let ports = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| i32::try_from(p["nodePort"].as_i64()?).ok())
        .filter(|p| *p > 0)
        .collect();
    (ips, ports)
}

/// Whether the Service type exposes node ports (`needsNodePort`).
fn needs_node_port(svc: &Value) -> bool {
    matches!(
        svc["spec"]["type"].as_str(),
        Some("NodePort" | "LoadBalancer")
    )
}

impl Allocation<'_> {
    /// Fills and checks `svc`'s ClusterIPs and NodePorts; `old` is the stored Service of an
    /// update.
    pub(crate) fn assign(&self, svc: &mut Value, old: Option<&Value>) -> Result<(), Status> {
        let name = svc["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut errors = Vec::new();
        if svc["spec"]["type"].as_str() != Some("ExternalName") {
            self.cluster_ip(svc, old, &mut errors)?;
        }
        if needs_node_port(svc) {
            self.node_ports(svc, old, &mut errors)?;
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Status::invalid("", "Service", &name, &errors))
        }
    }

    fn cluster_ip(
        &self,
        svc: &mut Value,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) -> Result<(), Status> {
        let requested = |v: &Value| {
            v["spec"]["clusterIPs"][0]
                .as_str()
                .or(v["spec"]["clusterIP"].as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let had = old.and_then(requested);
        let ip = match requested(svc).or_else(|| had.clone()) {
            Some(ip) if ip == "None" => ip,
            Some(ip) if Some(&ip) == had.as_ref() => ip,
            Some(ip) => match self.ranges.ips.check(&ip, &self.used_ips) {
                Ok(_) => ip,
                Err(e) => {
                    errors.push(FieldError {
                        kind: FieldErrorKind::Invalid,
                        field: "spec.clusterIPs".into(),
                        value: Some(format!("[]string{{{ip:?}}}")),
                        detail: format!("failed to allocate IP {ip}: {e}"),
                    });
                    return Ok(());
                }
            },
            None => match self.ranges.ips.next(&self.used_ips) {
                Ok(ip) => ip.to_string(),
                Err(e @ IpError::Full) => {
                    return Err(Status::internal(format!(
                        "failed to allocate a serviceIP: {e}"
                    )));
                }
                Err(e) => return Err(Status::internal(e.to_string())),
            },
        };
        let spec = &mut svc["spec"];
        spec["clusterIP"] = json!(ip);
        spec["clusterIPs"] = json!([ip]);
        if spec["ipFamilies"].is_null() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if spec["ipFamilyPolicy"].is_null() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        Ok(())
    }

    fn node_ports(
        &self,
        svc: &mut Value,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) -> Result<(), Status> {
        // Ports the Service held before, by (port, protocol), kept when asked for again or
        // left unset (`patchAllocatedValues`).
        let before: Vec<(i64, String, i32)> = old
            .filter(|o| needs_node_port(o))
            .and_then(|o| o["spec"]["ports"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let np = i32::try_from(p["nodePort"].as_i64()?).ok()?;
                Some((p["port"].as_i64()?, protocol(p), np))
            })
            .collect();
        let mut mine: HashSet<i32> = HashSet::new();
        let mut used = self.used_ports.clone();
        let Some(ports) = svc["spec"]["ports"].as_array_mut() else {
            return Ok(());
        };
        for (i, p) in ports.iter_mut().enumerate() {
            let asked = p["nodePort"].as_i64().and_then(|n| i32::try_from(n).ok());
            let kept = before
                .iter()
                .find(|(port, proto, _)| Some(*port) == p["port"].as_i64() && *proto == protocol(p))
                .map(|b| b.2);
            let port = match asked.filter(|n| *n > 0) {
                Some(n) if mine.contains(&n) || before.iter().any(|b| b.2 == n) => n,
                Some(n) => match self.ranges.ports.check(n, &used) {
                    Ok(()) => n,
                    Err(e) => {
                        errors.push(FieldError {
                            kind: FieldErrorKind::Invalid,
                            field: format!("spec.ports[{i}].nodePort"),
                            value: Some(n.to_string()),
                            detail: e.to_string(),
                        });
                        continue;
                    }
                },
                None => match kept {
                    Some(n) => n,
                    None => match self.ranges.ports.next(&used) {
                        Ok(n) => n,
                        Err(e @ PortError::Full) => {
                            return Err(Status::internal(format!(
                                "failed to allocate a nodePort: {e}"
                            )));
                        }
                        Err(e) => return Err(Status::internal(e.to_string())),
                    },
                },
            };
            mine.insert(port);
            used.insert(port);
            p["nodePort"] = json!(port);
        }
        Ok(())
    }
}

fn protocol(port: &Value) -> String {
    port["protocol"].as_str().unwrap_or("TCP").to_owned()
}
