//! A Service's children: what turns a Service with a selector into the addresses of the pods it
//! selects, as kube-controller-manager's controllers do:
//!
//! - [`endpoints`]: the Endpoints object named after the Service (kubernetes
//!   `pkg/controller/endpoint/endpoints_controller.go`), controller `endpoint`;
//! - [`endpointslice`] and its pure [`reconciler`]: the Service's EndpointSlices, at most
//!   `--max-endpoints-per-slice` endpoints each, owned by the Service (kubernetes
//!   `pkg/controller/endpointslice/`, `staging/src/k8s.io/endpointslice/reconciler.go`,
//!   `utils.go`), controller `endpointslice`;
//! - [`mirroring`]: EndpointSlices mirrored from Endpoints written by hand for a Service without
//!   a selector (kubernetes `pkg/controller/endpointslicemirroring/`), controller
//!   `endpointslicemirroring`.
//!
//! [`pods`] holds what they share: which pods a Service selects, whether a pod is an endpoint,
//! and its ports. The queues are fed by [`services::Watched`].
#![forbid(unsafe_code)]

pub mod endpoints;
pub mod endpointslice;
pub mod mirroring;
pub mod pods;
pub mod reconciler;
pub mod services;

/// The annotation of the time of the change that led to the current endpoints (upstream
/// `v1.EndpointsLastChangeTriggerTime`).
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The label every EndpointSlice names its Service by (`discovery.LabelServiceName`).
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages a slice (`discovery.LabelManagedBy`).
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The label the children of a headless Service carry (`v1.IsHeadlessService`).
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";

/// Errors of a sync; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// `--max-endpoints-per-slice` (upstream's default 100, at most 1000).
    pub max_endpoints_per_slice: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_endpoints_per_slice: 100,
        }
    }
}

/// The labels of a Service's children (`setEndpointSliceLabels`, the endpoints controller's
/// copy): the Service's own, and `service.kubernetes.io/headless` for a headless Service.
pub(crate) fn child_labels(
    svc: &k8s_openapi::api::core::v1::Service,
) -> std::collections::BTreeMap<String, String> {
    let mut labels = svc.metadata.labels.clone().unwrap_or_default();
    if services::headless(svc) {
        labels.insert(LABEL_HEADLESS.to_owned(), String::new());
    } else {
        labels.remove(LABEL_HEADLESS);
    }
    labels
}
