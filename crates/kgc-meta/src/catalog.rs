//! The resource catalog: every kind kgc serves, with the facts the API server, the store and the
//! collectors need about it (scope, verbs, short names, categories, subresources, the default
//! garbage-collection policy, naming rule, graceful deletion).
//!
//! Built-in kinds are listed once in [`Catalog::builtin`]; custom resources are added at run time
//! with [`Catalog::insert`] and taken out with [`Catalog::remove`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::validation::NameRule;

/// Whether objects of a kind live inside a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// What a DELETE without a propagation policy does to dependents
/// (each kind's `DefaultGarbageCollectionPolicy`, e.g. kubernetes/kubernetes
/// `pkg/registry/core/replicationcontroller/strategy.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are collected in the background: no finalizer is added.
    Background,
    /// Dependents are orphaned: the `orphan` finalizer is added (core/v1 ReplicationController,
    /// batch/v1 Job).
    Orphan,
    /// The kind never takes part in garbage collection (core Event): no GC finalizer is ever added.
    Unsupported,
}

/// A kind in its group, the version aside (apimachinery's `schema.GroupKind`,
/// `staging/src/k8s.io/apimachinery/pkg/runtime/schema/group_version.go`): how owner
/// references, ApplySets and the deploy tools compare types. `""` is the core group.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        Self {
            group: group.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// The group and kind of an `apiVersion` and `kind` pair, as written.
    pub fn of(api_version: &str, kind: &str) -> Self {
        Self::new(group_of(api_version), kind)
    }

    /// Parses the form [`GroupKind`] displays as, `Kind.group` (`Kind` for core), as upstream's
    /// `schema.ParseGroupKind` does; `None` for a blank string.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        Some(match s.split_once('.') {
            Some((kind, group)) => Self::new(group, kind),
            None => Self::new("", s),
        })
    }

    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }

    pub fn is_crd(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.kind == "CustomResourceDefinition"
    }
}

/// `Kind.group`, or `Kind` for the core group (upstream's `GroupKind.String`, which is also the
/// ApplySet `contains-group-kinds` element form of KEP-3659).
impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// A kind, identified the way manifests name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    /// Splits an `apiVersion` (`v1` or `group/version`) and pairs it with `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Result<Self, crate::Error> {
        let (group, version) = split_api_version(api_version)?;
        Ok(Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        })
    }

    /// The `apiVersion` string of this kind.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

/// A resource (a URL path segment), identified the way the REST API names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// A resource without its version: the unit of storage, because every served version of a
/// resource reads and writes the same objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

impl fmt::Display for GroupResource {
    /// `pods` for the core group, `deployments.apps` otherwise: the form Kubernetes uses in
    /// `NotFound` and `AlreadyExists` messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// Splits `apiVersion` into group and version; the core group is `""`.
pub fn split_api_version(api_version: &str) -> Result<(&str, &str), crate::Error> {
    let bad = || crate::Error::InvalidApiVersion(api_version.to_owned());
    match api_version.split_once('/') {
        None if !api_version.is_empty() => Ok(("", api_version)),
        Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => Ok((g, v)),
        _ => Err(bad()),
    }
}

/// The group of an `apiVersion` (`""` for the core group), read without judging the rest: how
/// owner references and manifests are compared by group.
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Joins group and version into an `apiVersion`.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// A subresource served under a resource (`status`, `scale`, `finalize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    pub name: String,
    /// The kind the subresource speaks: the parent's kind, or `autoscaling/v1 Scale`.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

/// Everything kgc knows about one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub group: String,
    /// Served versions, preferred first.
    pub versions: Vec<String>,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub scope: Scope,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    pub subresources: Vec<Subresource>,
    pub gc_policy: GcPolicy,
    pub name_rule: NameRule,
    /// Pods are deleted gracefully: a DELETE sets a future deletionTimestamp and the object stays
    /// for the grace period (apiserver `rest.BeforeDelete`).
    pub graceful: bool,
    /// Whether an immediate DELETE answers with the deleted object rather than a `Status`
    /// (`ReturnDeletedObject` in the upstream registry).
    pub return_deleted_object: bool,
    /// Field selectors accepted beyond `metadata.name` and `metadata.namespace`.
    pub field_selectors: Vec<String>,
    /// True for resources defined by a CustomResourceDefinition.
    pub custom: bool,
    /// A CRD's `additionalPrinterColumns`; empty for built-ins, whose columns are fixed.
    pub printer_columns: Vec<PrinterColumn>,
    /// Schemas, scale paths and storage version of a custom resource.
    pub crd: Option<Arc<crate::crd::CustomResource>>,
    /// Whether objects carry `metadata.generation` (kinds whose registry strategy sets it:
    /// workloads, pods, HPAs, PDBs, ingresses, network policies, CRDs and custom resources).
    pub tracks_generation: bool,
}

/// One `additionalPrinterColumns` entry of a CustomResourceDefinition version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    /// A JSONPath into the object, such as `.spec.replicas`.
    pub json_path: String,
}

impl ResourceInfo {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// The unit of storage this resource reads and writes: its own group and resource, but for
    /// events.k8s.io Events, which are the core Events (upstream serves the one event store
    /// under both groups, kubernetes/kubernetes `pkg/registry/events/rest/storage_events.go`).
    pub fn storage_resource(&self) -> GroupResource {
        if self.group == "events.k8s.io" && self.plural == "events" {
            return GroupResource::new("", "events");
        }
        self.group_resource()
    }

    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The storage (preferred) version.
    pub fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    pub fn serves_version(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    pub fn has_status(&self) -> bool {
        self.subresource("status").is_some()
    }

    /// Whether a field selector on `field` is supported for this resource.
    pub fn supports_field(&self, field: &str) -> bool {
        matches!(field, "metadata.name" | "metadata.namespace")
            || self.field_selectors.iter().any(|f| f == field)
    }
}

/// The verbs of an ordinary, fully writable resource.
pub const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The set of resources served, indexed for the lookups the REST layer makes.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    by_resource: BTreeMap<GroupResource, Arc<ResourceInfo>>,
    /// Group names in the order `/apis` lists them (insertion order).
    group_order: Vec<String>,
}

impl Catalog {
    /// The built-in kinds (issue: embedded cluster, point 4).
    pub fn builtin() -> Self {
        let mut c = Self::default();
        for info in builtin_resources() {
            c.insert(info);
        }
        c
    }

    /// Adds or replaces a resource (a CRD being served).
    pub fn insert(&mut self, info: ResourceInfo) -> Arc<ResourceInfo> {
        if !self.group_order.contains(&info.group) {
            self.group_order.push(info.group.clone());
        }
        let info = Arc::new(info);
        self.by_resource
            .insert(info.group_resource(), Arc::clone(&info));
        info
    }

    /// Stops serving a resource; its group disappears when it was the group's last resource.
    pub fn remove(&mut self, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
        let removed = self.by_resource.remove(gr)?;
        if !self.by_resource.keys().any(|k| k.group == gr.group) {
            self.group_order.retain(|g| g != &gr.group);
        }
        Some(removed)
    }

    /// The resource served at `/apis/{group}/{version}/{resource}`.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<ResourceInfo>> {
        self.by_resource
            .get(&GroupResource::new(group, resource))
            .filter(|r| r.serves_version(version))
    }

    /// The resource whose rules a write of `info`'s objects follows once converted to storage:
    /// `info` itself, or the resource it shares storage with (see
    /// [`ResourceInfo::storage_resource`]).
    pub fn stored_as<'a>(&'a self, info: &'a ResourceInfo) -> &'a ResourceInfo {
        let gr = info.storage_resource();
        if gr.group == info.group {
            return info;
        }
        self.get_group_resource(&gr)
            .map_or(info, |stored| &**stored)
    }

    pub fn get_group_resource(&self, gr: &GroupResource) -> Option<&Arc<ResourceInfo>> {
        self.by_resource.get(gr)
    }

    /// The resource serving `kind` in `group`/`version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        self.by_resource
            .values()
            .find(|r| r.group == group && r.kind == kind && r.serves_version(version))
    }

    /// Every resource, in a stable order (group order, then resource name).
    pub fn resources(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.group_order.iter().flat_map(move |g| {
            self.by_resource
                .range(GroupResource::new(g.clone(), "")..)
                .take_while(move |(k, _)| &k.group == g)
                .map(|(_, v)| v)
        })
    }

    /// Group names in discovery order; the core group is `""`.
    pub fn groups(&self) -> &[String] {
        &self.group_order
    }

    /// The versions served in `group`, preferred first.
    pub fn group_versions(&self, group: &str) -> Vec<String> {
        let mut versions: Vec<String> = Vec::new();
        for r in self.resources().filter(|r| r.group == group) {
            for v in &r.versions {
                if !versions.contains(v) {
                    versions.push(v.clone());
                }
            }
        }
        versions.sort_by(|a, b| compare_versions(b, a));
        versions
    }
}

/// Kubernetes version priority (`v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other`), used to pick a
/// group's preferred version (apimachinery `version.CompareKubeAwareVersionStrings`).
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn rank(v: &str) -> (u8, u64, u8, u64, String) {
        let parsed = v.strip_prefix('v').and_then(|rest| {
            let digits_end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let major: u64 = rest[..digits_end].parse().ok()?;
            let tail = &rest[digits_end..];
            if tail.is_empty() {
                return Some((3, major, 0, 0));
            }
            for (name, level) in [("beta", 2u8), ("alpha", 1u8)] {
                if let Some(n) = tail.strip_prefix(name) {
                    let minor: u64 = n.parse().ok()?;
                    return Some((level, major, level, minor));
                }
            }
            None
        });
        match parsed {
            Some((level, major, _, minor)) => (level, major, 0, minor, String::new()),
            None => (0, 0, 0, 0, v.to_owned()),
        }
    }
    let (ra, rb) = (rank(a), rank(b));
    // Among non-kube versions, the lexically smaller one ranks higher.
    ra.0.cmp(&rb.0)
        .then(ra.1.cmp(&rb.1))
        .then(ra.3.cmp(&rb.3))
        .then_with(|| rb.4.cmp(&ra.4))
}

/// Describes one built-in resource compactly; see [`builtin_resources`].
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    scope: Scope,
    short: &'static [&'static str],
    all: bool,
    subresources: &'static [&'static str],
}

impl Builtin {
    fn into_info(self) -> ResourceInfo {
        let parent = |name: &str| Subresource {
            name: name.to_owned(),
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            kind: self.kind.to_owned(),
            verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        };
        let subresources = self
            .subresources
            .iter()
            .map(|&name| match name {
                "scale" => Subresource {
                    name: "scale".into(),
                    group: "autoscaling".into(),
                    version: "v1".into(),
                    kind: "Scale".into(),
                    verbs: ["get", "patch", "update"].map(String::from).to_vec(),
                },
                "finalize" => Subresource {
                    verbs: vec!["update".into()],
                    ..parent("finalize")
                },
                // A scheduler's `v1 Binding` of a pod to a node.
                "binding" => Subresource {
                    name: "binding".into(),
                    kind: "Binding".into(),
                    verbs: vec!["create".into()],
                    ..parent("binding")
                },
                // A policy/v1 Eviction: a deletion a PodDisruptionBudget may refuse
                // (`kubectl drain`).
                "eviction" => Subresource {
                    name: "eviction".into(),
                    group: "policy".into(),
                    version: "v1".into(),
                    kind: "Eviction".into(),
                    verbs: vec!["create".into()],
                },
                // TokenRequest: `kubectl create token` (served by the API server's authn).
                "token" => Subresource {
                    name: "token".into(),
                    group: "authentication.k8s.io".into(),
                    version: "v1".into(),
                    kind: "TokenRequest".into(),
                    verbs: vec!["create".into()],
                },
                other => parent(other),
            })
            .collect();
        let mut verbs: Vec<String> = ALL_VERBS.map(String::from).to_vec();
        // Namespaces are removed one at a time, through their own finalization.
        if self.plural == "namespaces" {
            verbs.retain(|v| v != "deletecollection");
        }
        let gc_policy = match (self.group, self.plural) {
            ("", "replicationcontrollers") | ("batch", "jobs") => GcPolicy::Orphan,
            ("", "events") | ("events.k8s.io", "events") => GcPolicy::Unsupported,
            _ => GcPolicy::Background,
        };
        let name_rule = match (self.group, self.plural) {
            ("", "namespaces") => NameRule::Dns1123Label,
            ("", "services") => NameRule::Dns1035Label,
            ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
            _ => NameRule::Dns1123Subdomain,
        };
        let field_selectors: &[&str] = match (self.group, self.plural) {
            ("", "pods") => &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            ("", "events") | ("events.k8s.io", "events") => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
            ("", "secrets") => &["type"],
            ("", "namespaces") => &["status.phase"],
            ("", "replicationcontrollers") | ("apps", "replicasets") => &["status.replicas"],
            ("batch", "jobs") => &["status.successful"],
            ("certificates.k8s.io", _) => &["spec.signerName"],
            _ => &[],
        };
        ResourceInfo {
            group: self.group.to_owned(),
            versions: vec![self.version.to_owned()],
            kind: self.kind.to_owned(),
            list_kind: format!("{}List", self.kind),
            plural: self.plural.to_owned(),
            singular: self.kind.to_ascii_lowercase(),
            scope: self.scope,
            short_names: self.short.iter().map(|s| (*s).to_owned()).collect(),
            categories: if self.all {
                vec!["all".to_owned()]
            } else {
                vec![]
            },
            verbs,
            subresources,
            gc_policy,
            name_rule,
            graceful: self.group.is_empty() && self.plural == "pods",
            return_deleted_object: self.group.is_empty()
                && matches!(self.plural, "pods" | "serviceaccounts" | "services"),
            field_selectors: field_selectors.iter().map(|s| (*s).to_owned()).collect(),
            custom: false,
            printer_columns: Vec::new(),
            crd: None,
            tracks_generation: match (self.group, self.plural) {
                ("apps", p) => p != "controllerrevisions",
                ("batch", _) => true,
                ("", p) => matches!(p, "pods" | "replicationcontrollers"),
                ("autoscaling" | "policy" | "apiextensions.k8s.io", _) => true,
                ("admissionregistration.k8s.io", p) => p.starts_with("validatingadmissionpolic"),
                ("networking.k8s.io", p) => matches!(p, "ingresses" | "networkpolicies"),
                _ => false,
            },
        }
    }
}

fn builtin_resources() -> impl Iterator<Item = ResourceInfo> {
    use Scope::{Cluster, Namespaced};
    let b = |group, version, kind, plural, scope, short, all, subresources| Builtin {
        group,
        version,
        kind,
        plural,
        scope,
        short,
        all,
        subresources,
    };
    const STATUS: &[&str] = &["status"];
    const SCALE: &[&str] = &["status", "scale"];
    const NONE: &[&str] = &[];
    [
        // Discovery order of `kubectl get all` on a real cluster: pods, services,
        // replicationcontrollers, then apps, batch, autoscaling.
        b(
            "",
            "v1",
            "Pod",
            "pods",
            Namespaced,
            &["po"],
            true,
            &["status", "binding", "eviction"],
        ),
        b(
            "",
            "v1",
            "Service",
            "services",
            Namespaced,
            &["svc"],
            true,
            STATUS,
        ),
        b(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            Namespaced,
            &["rc"],
            true,
            SCALE,
        ),
        b(
            "",
            "v1",
            "Namespace",
            "namespaces",
            Cluster,
            &["ns"],
            false,
            &["status", "finalize"],
        ),
        b(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            Namespaced,
            &["cm"],
            false,
            NONE,
        ),
        b("", "v1", "Secret", "secrets", Namespaced, &[], false, NONE),
        b(
            "",
            "v1",
            "Endpoints",
            "endpoints",
            Namespaced,
            &["ep"],
            false,
            NONE,
        ),
        b(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Namespaced,
            &["sa"],
            false,
            &["token"],
        ),
        b(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            Cluster,
            &["pv"],
            false,
            STATUS,
        ),
        b(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            Namespaced,
            &["pvc"],
            false,
            STATUS,
        ),
        b("", "v1", "Node", "nodes", Cluster, &["no"], false, STATUS),
        b(
            "",
            "v1",
            "Event",
            "events",
            Namespaced,
            &["ev"],
            false,
            NONE,
        ),
        b(
            "",
            "v1",
            "LimitRange",
            "limitranges",
            Namespaced,
            &["limits"],
            false,
            NONE,
        ),
        b(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            Namespaced,
            &["quota"],
            false,
            STATUS,
        ),
        b(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            Namespaced,
            &["deploy"],
            true,
            SCALE,
        ),
        b(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            Namespaced,
            &["rs"],
            true,
            SCALE,
        ),
        b(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            Namespaced,
            &["sts"],
            true,
            SCALE,
        ),
        b(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            Namespaced,
            &["ds"],
            true,
            STATUS,
        ),
        b(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            Namespaced,
            &[],
            false,
            NONE,
        ),
        b("batch", "v1", "Job", "jobs", Namespaced, &[], true, STATUS),
        b(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            Namespaced,
            &["cj"],
            true,
            STATUS,
        ),
        b(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            Namespaced,
            &["hpa"],
            true,
            STATUS,
        ),
        b(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            Namespaced,
            &[],
            false,
            NONE,
        ),
        // Admission webhook configurations (called by kgc-apiserver's `webhook`).
        b(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            Cluster,
            &[],
            false,
            NONE,
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            Cluster,
            &[],
            false,
            NONE,
        ),
        // ValidatingAdmissionPolicies (run by kgc-apiserver's `admission_policy`).
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            Cluster,
            &[],
            false,
            STATUS,
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            Cluster,
            &[],
            false,
            NONE,
        ),
        b(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            Cluster,
            &["csr"],
            false,
            &["status", "approval"],
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            Namespaced,
            &[],
            false,
            NONE,
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            Namespaced,
            &[],
            false,
            NONE,
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            Cluster,
            &[],
            false,
            NONE,
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            Cluster,
            &[],
            false,
            NONE,
        ),
        b(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            Namespaced,
            &["ing"],
            false,
            STATUS,
        ),
        b(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            Namespaced,
            &["netpol"],
            false,
            NONE,
        ),
        b(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            Namespaced,
            &["pdb"],
            false,
            STATUS,
        ),
        b(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            Cluster,
            &["sc"],
            false,
            NONE,
        ),
        b(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            Namespaced,
            &[],
            false,
            NONE,
        ),
        b(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            Namespaced,
            &["ev"],
            false,
            NONE,
        ),
        b(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            Cluster,
            &["pc"],
            false,
            NONE,
        ),
        b(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            Cluster,
            &["crd", "crds"],
            false,
            STATUS,
        ),
    ]
    .into_iter()
    .chain(REVIEWS.iter().map(move |&(group, kind, plural, scope)| {
        b(group, "v1", kind, plural, scope, &[], false, NONE)
    }))
    .map(Builtin::into_info)
    .map(|mut info| {
        // Stored as v2, also served as v1 (converted by the API server).
        if info.group == "autoscaling" {
            info.versions.push("v1".into());
        }
        if REVIEWS
            .iter()
            .any(|r| r.0 == info.group && r.2 == info.plural)
        {
            info.verbs = vec!["create".into()];
        }
        info
    })
}

/// The create-only review resources of authentication and authorization: answered by the API
/// server from the request's user, the authenticator and the authorizer, never stored.
pub const REVIEWS: [(&str, &str, &str, Scope); 6] = [
    (
        "authentication.k8s.io",
        "SelfSubjectReview",
        "selfsubjectreviews",
        Scope::Cluster,
    ),
    (
        "authentication.k8s.io",
        "TokenReview",
        "tokenreviews",
        Scope::Cluster,
    ),
    (
        "authorization.k8s.io",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        Scope::Namespaced,
    ),
    (
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        Scope::Cluster,
    ),
    (
        "authorization.k8s.io",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        Scope::Cluster,
    ),
    (
        "authorization.k8s.io",
        "SubjectAccessReview",
        "subjectaccessreviews",
        Scope::Cluster,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_defaults_follow_upstream_gc_policies() {
        let c = Catalog::builtin();
        let policy = |g: &str, v: &str, r: &str| c.get(g, v, r).map(|r| r.gc_policy);
        assert_eq!(
            policy("", "v1", "replicationcontrollers"),
            Some(GcPolicy::Orphan)
        );
        assert_eq!(policy("batch", "v1", "jobs"), Some(GcPolicy::Orphan));
        assert_eq!(
            policy("apps", "v1", "deployments"),
            Some(GcPolicy::Background)
        );
        assert_eq!(policy("", "v1", "events"), Some(GcPolicy::Unsupported));
        assert_eq!(
            policy("batch", "v1", "cronjobs"),
            Some(GcPolicy::Background)
        );
    }

    #[test]
    fn lookups_by_kind_and_version() {
        let c = Catalog::builtin();
        let d = c.by_kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(d.plural, "deployments");
        assert!(c.get("apps", "v2", "deployments").is_none());
        assert_eq!(
            c.get("", "v1", "pods")
                .unwrap()
                .subresource("status")
                .unwrap()
                .kind,
            "Pod"
        );
        let scale = c.get("apps", "v1", "deployments").unwrap();
        assert_eq!(scale.subresource("scale").unwrap().group, "autoscaling");
        assert!(
            !c.get("", "v1", "namespaces")
                .unwrap()
                .supports("deletecollection")
        );
    }

    #[test]
    fn every_builtin_group_is_listed_once_in_order() {
        let c = Catalog::builtin();
        assert_eq!(c.groups()[0], "");
        assert_eq!(c.groups()[1], "apps");
        let mut sorted = c.groups().to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), c.groups().len());
        assert_eq!(c.resources().count(), 46);
    }

    #[test]
    fn reviews_are_create_only_and_tokens_a_subresource() {
        let c = Catalog::builtin();
        for (group, kind, plural, scope) in REVIEWS {
            let r = c.get(group, "v1", plural).unwrap();
            assert_eq!(
                (r.kind.as_str(), r.verbs.as_slice()),
                (kind, &["create".to_owned()][..])
            );
            assert_eq!(r.namespaced(), scope == Scope::Namespaced, "{plural}");
        }
        let token = c
            .get("", "v1", "serviceaccounts")
            .unwrap()
            .subresource("token")
            .unwrap()
            .clone();
        assert_eq!(
            (token.group.as_str(), token.kind.as_str()),
            ("authentication.k8s.io", "TokenRequest")
        );
    }

    #[test]
    fn remove_drops_empty_groups() {
        let mut c = Catalog::builtin();
        c.remove(&GroupResource::new("policy", "poddisruptionbudgets"));
        assert!(!c.groups().iter().any(|g| g == "policy"));
    }

    #[test]
    fn api_version_round_trip() {
        assert_eq!(split_api_version("v1").unwrap(), ("", "v1"));
        assert_eq!(split_api_version("apps/v1").unwrap(), ("apps", "v1"));
        assert!(split_api_version("").is_err());
        assert!(split_api_version("a/b/c").is_err());
        assert!(split_api_version("/v1").is_err());
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
        assert_eq!(api_version("", "v1"), "v1");
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
    }

    #[test]
    fn kube_aware_version_order() {
        let mut v = vec![
            "v1alpha1", "v1", "foo", "v2beta1", "v1beta2", "v2", "v1beta1",
        ];
        v.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(
            v,
            [
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }
}
