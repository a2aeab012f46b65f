//! The Event each run files on the set's parent, with Flux's reasons and wording
//! (`fluxcd/kustomize-controller internal/controller/kustomization_controller.go`:
//! `ReconciliationSucceeded` "Reconciliation finished in …, next run in …", and
//! `ReconciliationFailed` with the error). Named and timestamped as client-go's recorder files
//! core/v1 Events (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`).
//! Unlike the cluster controllers' recorder (which sends in the background), the write is
//! awaited: `kgc sync --once` exits right after it. A failed write is logged, never fatal.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};

/// Flux's reason of a run that applied its revision.
pub const SUCCEEDED: &str = "ReconciliationSucceeded";
/// Flux's reason of a run that failed.
pub const FAILED: &str = "ReconciliationFailed";

/// The component events come from.
pub const COMPONENT: &str = "kgc-sync";

/// Files a `Normal` (`warning` false) or `Warning` event about `parent`.
pub async fn emit(
    client: &kube::Client,
    parent: ObjectReference,
    warning: bool,
    reason: &str,
    message: String,
) {
    let namespace = parent.namespace.clone().unwrap_or_default();
    let now = k8s_openapi::jiff::Timestamp::now();
    let event = Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{:x}",
                parent.name.as_deref().unwrap_or_default(),
                now.as_nanosecond().max(0)
            )),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: parent,
        reason: Some(reason.to_owned()),
        message: Some(message),
        type_: Some(if warning { "Warning" } else { "Normal" }.to_owned()),
        source: Some(EventSource {
            component: Some(COMPONENT.to_owned()),
            host: None,
        }),
        reporting_component: Some(COMPONENT.to_owned()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Err(e) = api.create(&PostParams::default(), &event).await {
        tracing::warn!(error = %e, "recording the sync's event failed");
    }
}
