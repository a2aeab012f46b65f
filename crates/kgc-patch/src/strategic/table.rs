//! Patch metadata of the built-in kinds, from the `patchStrategy`/`patchMergeKey` struct tags of
//! kubernetes/api `core/v1/types.go`, `apps/v1/types.go`, `batch/v1/types.go`,
//! `policy/v1/types.go`, `autoscaling/v2/types.go`, `admissionregistration/v1/types.go` and
//! apimachinery `pkg/apis/meta/v1/types.go`. Only fields that carry a strategy, or lead to one,
//! are listed; every other field merges like JSON merge patch (maps recurse, lists replace).
//! Fields whose list is `+listType=atomic` or untagged (`command`, `args`, `envFrom`,
//! `tolerations`, `Endpoints.subsets`, RBAC `rules`/`subjects`, CSR and CRD `status.conditions`,
//! …) have no strategy upstream and are therefore absent.

use super::{EMPTY, FieldMeta, Fields, Schema};

const fn obj(child: &'static Fields) -> FieldMeta {
    FieldMeta::object(child)
}

const fn by(key: &'static str) -> FieldMeta {
    FieldMeta::merge_list(key, &EMPTY)
}

// meta/v1 ObjectMeta: `finalizers` patchStrategy=merge; `ownerReferences` merge on `uid`.
static OBJECT_META: Fields = Fields::new(&[
    ("finalizers", FieldMeta::merge_set()),
    ("ownerReferences", by("uid")),
]);

/// A kind with nothing but ObjectMeta to merge specially.
static META_ONLY: Fields = Fields::new(&[("metadata", obj(&OBJECT_META))]);

/// A status whose only strategic field is `conditions` merged on `type`
/// (metav1.Condition lists and the per-kind condition lists of core/apps/batch/policy/autoscaling).
static CONDITIONS_STATUS: Fields = Fields::new(&[("conditions", by("type"))]);

// core/v1 Container (and EphemeralContainerCommon, which has the same tags).
static CONTAINER: Fields = Fields::new(&[
    ("ports", by("containerPort")),
    ("env", by("name")),
    ("volumeMounts", by("mountPath")),
    ("volumeDevices", by("devicePath")),
]);

// core/v1 PodSpec.
static POD_SPEC: Fields = Fields::new(&[
    ("volumes", by("name").retain_keys()),
    ("initContainers", FieldMeta::merge_list("name", &CONTAINER)),
    ("containers", FieldMeta::merge_list("name", &CONTAINER)),
    (
        "ephemeralContainers",
        FieldMeta::merge_list("name", &CONTAINER),
    ),
    ("imagePullSecrets", by("name")),
    ("hostAliases", by("ip")),
    ("topologySpreadConstraints", by("topologyKey")),
    ("schedulingGates", by("name")),
    ("resourceClaims", by("name").retain_keys()),
]);

// core/v1 PodStatus.
static POD_STATUS: Fields = Fields::new(&[
    ("conditions", by("type")),
    ("podIPs", by("ip")),
    ("hostIPs", by("ip")),
    ("resourceClaimStatuses", by("name").retain_keys()),
]);

static POD: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&POD_SPEC)),
    ("status", obj(&POD_STATUS)),
]);

// core/v1 PodTemplateSpec, shared by every pod-template-bearing kind.
static POD_TEMPLATE_SPEC: Fields =
    Fields::new(&[("metadata", obj(&OBJECT_META)), ("spec", obj(&POD_SPEC))]);

static POD_TEMPLATE: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("template", obj(&POD_TEMPLATE_SPEC)),
]);

/// `spec.template` plus `status.conditions` (ReplicaSet, StatefulSet, DaemonSet,
/// ReplicationController, Job).
static TEMPLATE_SPEC: Fields = Fields::new(&[("template", obj(&POD_TEMPLATE_SPEC))]);

static WORKLOAD: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&TEMPLATE_SPEC)),
    ("status", obj(&CONDITIONS_STATUS)),
]);

// apps/v1 DeploymentSpec: `strategy` is patchStrategy=retainKeys.
static DEPLOYMENT_SPEC: Fields = Fields::new(&[
    ("template", obj(&POD_TEMPLATE_SPEC)),
    ("strategy", obj(&EMPTY).retain_keys()),
]);

static DEPLOYMENT: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&DEPLOYMENT_SPEC)),
    ("status", obj(&CONDITIONS_STATUS)),
]);

// batch/v1 CronJobSpec.jobTemplate (JobTemplateSpec: metadata + JobSpec).
static JOB_TEMPLATE_SPEC: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&TEMPLATE_SPEC)),
]);

static CRON_JOB_SPEC: Fields = Fields::new(&[("jobTemplate", obj(&JOB_TEMPLATE_SPEC))]);

static CRON_JOB: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&CRON_JOB_SPEC)),
]);

// core/v1 ServiceSpec.ports merge on `port`; ServiceStatus.conditions merge on `type`.
static SERVICE_SPEC: Fields = Fields::new(&[("ports", by("port"))]);

static SERVICE: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&SERVICE_SPEC)),
    ("status", obj(&CONDITIONS_STATUS)),
]);

// core/v1 ServiceAccount.secrets merge on `name` (imagePullSecrets is atomic).
static SERVICE_ACCOUNT: Fields =
    Fields::new(&[("metadata", obj(&OBJECT_META)), ("secrets", by("name"))]);

// core/v1 NodeSpec.podCIDRs (set); NodeStatus.conditions and .addresses merge on `type`.
static NODE_SPEC: Fields = Fields::new(&[("podCIDRs", FieldMeta::merge_set())]);

static NODE_STATUS: Fields = Fields::new(&[("conditions", by("type")), ("addresses", by("type"))]);

static NODE: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("spec", obj(&NODE_SPEC)),
    ("status", obj(&NODE_STATUS)),
]);

/// Metadata plus `status.conditions` merged on `type` (Namespace, PersistentVolumeClaim,
/// PodDisruptionBudget, HorizontalPodAutoscaler v2).
static META_AND_CONDITIONS: Fields = Fields::new(&[
    ("metadata", obj(&OBJECT_META)),
    ("status", obj(&CONDITIONS_STATUS)),
]);

// admissionregistration/v1 {Validating,Mutating}WebhookConfiguration.webhooks merge on `name`.
static WEBHOOK_CONFIGURATION: Fields =
    Fields::new(&[("metadata", obj(&OBJECT_META)), ("webhooks", by("name"))]);

/// The strategic-merge-patch metadata of a built-in kind; `None` for kinds without a table
/// (custom resources), which the API server answers with 415.
pub fn schema_for(group: &str, kind: &str) -> Option<Schema> {
    let root: &'static Fields = match (group, kind) {
        ("" | "core", k) => match k {
            "Pod" => &POD,
            "PodTemplate" => &POD_TEMPLATE,
            "ReplicationController" => &WORKLOAD,
            "Service" => &SERVICE,
            "ServiceAccount" => &SERVICE_ACCOUNT,
            "Node" => &NODE,
            "Namespace" | "PersistentVolumeClaim" => &META_AND_CONDITIONS,
            "PersistentVolume" | "ConfigMap" | "Secret" | "Endpoints" | "Event" | "LimitRange"
            | "ResourceQuota" => &META_ONLY,
            _ => return None,
        },
        ("apps", k) => match k {
            "Deployment" => &DEPLOYMENT,
            "ReplicaSet" | "StatefulSet" | "DaemonSet" => &WORKLOAD,
            "ControllerRevision" => &META_ONLY,
            _ => return None,
        },
        ("batch", "Job") => &WORKLOAD,
        ("batch", "CronJob") => &CRON_JOB,
        ("policy", "PodDisruptionBudget") => &META_AND_CONDITIONS,
        ("autoscaling", "HorizontalPodAutoscaler") => &META_AND_CONDITIONS,
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            &WEBHOOK_CONFIGURATION
        }
        ("coordination.k8s.io", "Lease")
        | ("certificates.k8s.io", "CertificateSigningRequest")
        | (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        )
        | ("networking.k8s.io", "Ingress" | "NetworkPolicy" | "IngressClass")
        | ("storage.k8s.io", "StorageClass")
        // Their lists are atomic (`+listType=atomic`): only the metadata merges.
        | (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding",
        )
        | ("discovery.k8s.io", "EndpointSlice")
        | ("events.k8s.io", "Event")
        | ("scheduling.k8s.io", "PriorityClass")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => &META_ONLY,
        _ => return None,
    };
    Some(Schema::new(root))
}
