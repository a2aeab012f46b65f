//! The built-in printers: which printer a resource gets, and its columns and cells. Columns and
//! cells of each kind live with the other kinds of its group.

mod auth;
mod cluster;
mod config;
mod network;
mod pod;
mod storage;
mod workloads;

use jiff::Timestamp;
use kgc_meta::ResourceInfo;
use serde_json::Value;

use super::cell::{name, timestamp};
use super::column::{Col, DEFAULT_COLUMNS};
use super::crd::custom_cells;

use auth::*;
use cluster::*;
use config::*;
use network::*;
use pod::*;
use storage::*;
use workloads::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Printer {
    Pod,
    PodTemplate,
    Service,
    ReplicationController,
    Namespace,
    ConfigMap,
    Secret,
    Endpoints,
    ServiceAccount,
    PersistentVolume,
    PersistentVolumeClaim,
    Node,
    Event,
    ResourceQuota,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    ControllerRevision,
    Job,
    CronJob,
    HorizontalPodAutoscaler,
    Lease,
    CertificateSigningRequest,
    RoleBinding,
    ClusterRoleBinding,
    Ingress,
    IngressClass,
    NetworkPolicy,
    PodDisruptionBudget,
    StorageClass,
    EndpointSlice,
    PriorityClass,
    /// A custom resource: Name plus the CRD's printer columns.
    Custom,
    /// Name and Created At.
    Default,
}

pub(super) fn printer_for(info: &ResourceInfo) -> Printer {
    use Printer as P;
    if info.custom {
        return P::Custom;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => P::Pod,
        ("", "PodTemplate") => P::PodTemplate,
        ("", "Service") => P::Service,
        ("", "ReplicationController") => P::ReplicationController,
        ("", "Namespace") => P::Namespace,
        ("", "ConfigMap") => P::ConfigMap,
        ("", "Secret") => P::Secret,
        ("", "Endpoints") => P::Endpoints,
        ("", "ServiceAccount") => P::ServiceAccount,
        ("", "PersistentVolume") => P::PersistentVolume,
        ("", "PersistentVolumeClaim") => P::PersistentVolumeClaim,
        ("", "Node") => P::Node,
        ("" | "events.k8s.io", "Event") => P::Event,
        ("", "ResourceQuota") => P::ResourceQuota,
        ("apps" | "extensions", "Deployment") => P::Deployment,
        ("apps" | "extensions", "ReplicaSet") => P::ReplicaSet,
        ("apps", "StatefulSet") => P::StatefulSet,
        ("apps" | "extensions", "DaemonSet") => P::DaemonSet,
        ("apps", "ControllerRevision") => P::ControllerRevision,
        ("batch", "Job") => P::Job,
        ("batch", "CronJob") => P::CronJob,
        ("autoscaling", "HorizontalPodAutoscaler") => P::HorizontalPodAutoscaler,
        ("coordination.k8s.io", "Lease") => P::Lease,
        ("certificates.k8s.io", "CertificateSigningRequest") => P::CertificateSigningRequest,
        ("rbac.authorization.k8s.io", "RoleBinding") => P::RoleBinding,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => P::ClusterRoleBinding,
        ("networking.k8s.io" | "extensions", "Ingress") => P::Ingress,
        ("networking.k8s.io", "IngressClass") => P::IngressClass,
        ("networking.k8s.io", "NetworkPolicy") => P::NetworkPolicy,
        ("policy", "PodDisruptionBudget") => P::PodDisruptionBudget,
        ("storage.k8s.io", "StorageClass") => P::StorageClass,
        ("discovery.k8s.io", "EndpointSlice") => P::EndpointSlice,
        ("scheduling.k8s.io", "PriorityClass") => P::PriorityClass,
        _ => P::Default,
    }
}

impl Printer {
    pub(super) fn columns(self) -> &'static [Col] {
        use Printer as P;
        match self {
            P::Pod => POD_COLUMNS,
            P::PodTemplate => POD_TEMPLATE_COLUMNS,
            P::Service => SERVICE_COLUMNS,
            // Same columns as replica sets, with the RC's own field docs upstream.
            P::ReplicationController | P::ReplicaSet => REPLICA_SET_COLUMNS,
            P::Namespace => NAMESPACE_COLUMNS,
            P::ConfigMap => CONFIG_MAP_COLUMNS,
            P::Secret => SECRET_COLUMNS,
            P::Endpoints => ENDPOINTS_COLUMNS,
            P::ServiceAccount => SERVICE_ACCOUNT_COLUMNS,
            P::PersistentVolume => PERSISTENT_VOLUME_COLUMNS,
            P::PersistentVolumeClaim => PERSISTENT_VOLUME_CLAIM_COLUMNS,
            P::Node => NODE_COLUMNS,
            P::Event => EVENT_COLUMNS,
            P::ResourceQuota => RESOURCE_QUOTA_COLUMNS,
            P::Deployment => DEPLOYMENT_COLUMNS,
            P::StatefulSet => STATEFUL_SET_COLUMNS,
            P::DaemonSet => DAEMON_SET_COLUMNS,
            P::ControllerRevision => CONTROLLER_REVISION_COLUMNS,
            P::Job => JOB_COLUMNS,
            P::CronJob => CRON_JOB_COLUMNS,
            P::HorizontalPodAutoscaler => HPA_COLUMNS,
            P::Lease => LEASE_COLUMNS,
            P::CertificateSigningRequest => CSR_COLUMNS,
            P::RoleBinding => ROLE_BINDING_COLUMNS,
            P::ClusterRoleBinding => CLUSTER_ROLE_BINDING_COLUMNS,
            P::Ingress => INGRESS_COLUMNS,
            P::IngressClass => INGRESS_CLASS_COLUMNS,
            P::NetworkPolicy => NETWORK_POLICY_COLUMNS,
            P::PodDisruptionBudget => PDB_COLUMNS,
            P::StorageClass => STORAGE_CLASS_COLUMNS,
            P::EndpointSlice => ENDPOINT_SLICE_COLUMNS,
            P::PriorityClass => PRIORITY_CLASS_COLUMNS,
            P::Custom | P::Default => DEFAULT_COLUMNS,
        }
    }

    pub(super) fn cells(self, info: &ResourceInfo, o: &Value, now: Timestamp) -> Vec<Value> {
        use Printer as P;
        match self {
            P::Pod => pod_cells(o, now),
            P::PodTemplate => pod_template_cells(o, now),
            P::Service => service_cells(o, now),
            P::ReplicationController => replication_controller_cells(o, now),
            P::Namespace => namespace_cells(o, now),
            P::ConfigMap => config_map_cells(o, now),
            P::Secret => secret_cells(o, now),
            P::Endpoints => endpoints_cells(o, now),
            P::ServiceAccount => service_account_cells(o, now),
            P::PersistentVolume => persistent_volume_cells(o, now),
            P::PersistentVolumeClaim => persistent_volume_claim_cells(o, now),
            P::Node => node_cells(o, now),
            P::Event => event_cells(info, o, now),
            P::ResourceQuota => resource_quota_cells(o, now),
            P::Deployment => deployment_cells(o, now),
            P::ReplicaSet => replica_set_cells(o, now),
            P::StatefulSet => stateful_set_cells(o, now),
            P::DaemonSet => daemon_set_cells(o, now),
            P::ControllerRevision => controller_revision_cells(o, now),
            P::Job => job_cells(o, now),
            P::CronJob => cron_job_cells(o, now),
            P::HorizontalPodAutoscaler => hpa_cells(o, now),
            P::Lease => lease_cells(o, now),
            P::CertificateSigningRequest => csr_cells(o, now),
            P::RoleBinding | P::ClusterRoleBinding => role_binding_cells(o, now),
            P::Ingress => ingress_cells(o, now),
            P::IngressClass => ingress_class_cells(o, now),
            P::NetworkPolicy => network_policy_cells(o, now),
            P::PodDisruptionBudget => pod_disruption_budget_cells(o, now),
            P::StorageClass => storage_class_cells(o, now),
            P::EndpointSlice => endpoint_slice_cells(o, now),
            P::PriorityClass => priority_class_cells(o, now),
            P::Custom => custom_cells(info, o, now),
            P::Default => default_cells(o),
        }
    }
}

/// Apiserver `pkg/registry/rest/table.go` `DefaultTableConvertor`: the name and the creation
/// time.
fn default_cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        match timestamp(&o["metadata"]["creationTimestamp"]) {
            Some(t) => kgc_meta::time::format_time(t).into(),
            // Go formats the zero time.
            None => "0001-01-01T00:00:00Z".into(),
        },
    ]
}
