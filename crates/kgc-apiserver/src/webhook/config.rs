//! Mutating and validating webhook configurations as the dispatcher uses them, read from the
//! store once per change (kubernetes/apiserver `pkg/admission/configuration`: an informer's
//! cache, sorted by configuration name).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kgc_meta::GroupResource;
use kgc_store::{ListOptions, Store, WatchFilter, Watcher};
use serde_json::Value;

use super::client::ClientConfig;
use super::rules::{Rule, Selector};
use crate::matchconditions::Matcher;

/// `timeoutSeconds` when a webhook does not say (admissionregistration/v1 defaults.go).
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The largest `timeoutSeconds` validation lets through.
const MAX_TIMEOUT_SECONDS: u64 = 30;

/// One webhook of a configuration.
#[derive(Clone)]
pub(crate) struct Hook {
    pub name: String,
    /// The name of its configuration (audit annotations name it).
    pub configuration: String,
    pub client: ClientConfig,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail: bool,
    /// `matchPolicy: Equivalent` (the default) rather than `Exact`.
    pub equivalent: bool,
    pub namespace_selector: Selector,
    pub object_selector: Selector,
    /// `sideEffects` is `None` or `NoneOnDryRun`: the webhook may be called on dry run.
    pub dry_run_safe: bool,
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    /// The AdmissionReview version sent: the first of `admissionReviewVersions` kgc speaks.
    pub review_version: Option<&'static str>,
    /// `matchConditions`, compiled once per change of the configurations.
    pub match_conditions: Arc<Matcher>,
}

impl Hook {
    fn from_json(configuration: &str, h: &Value) -> Self {
        let timeout = h["timeoutSeconds"]
            .as_u64()
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TIMEOUT_SECONDS);
        Self {
            name: h["name"].as_str().unwrap_or_default().to_owned(),
            configuration: configuration.to_owned(),
            client: ClientConfig::from_json(&h["clientConfig"]),
            rules: h["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Rule::from_json)
                .collect(),
            fail: h["failurePolicy"].as_str() != Some("Ignore"),
            equivalent: h["matchPolicy"].as_str() != Some("Exact"),
            namespace_selector: Selector::from_json(&h["namespaceSelector"]),
            object_selector: Selector::from_json(&h["objectSelector"]),
            dry_run_safe: matches!(h["sideEffects"].as_str(), Some("None" | "NoneOnDryRun")),
            timeout: Duration::from_secs(timeout),
            reinvoke: h["reinvocationPolicy"].as_str() == Some("IfNeeded"),
            review_version: h["admissionReviewVersions"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|v| match v.as_str() {
                    Some("v1") => Some("v1"),
                    Some("v1beta1") => Some("v1beta1"),
                    _ => None,
                }),
            match_conditions: Arc::new(Matcher::from_json(
                &h["matchConditions"],
                &kgc_cel::WEBHOOK_VARIABLES,
            )),
        }
    }
}

/// Objects of one admission configuration resource as something built from them, as of the
/// store's last change to that resource.
pub(crate) struct Cached<T> {
    /// `Store::last_change` of the resource when `value` was built.
    change: Option<u64>,
    value: Arc<T>,
    /// Keeps the store counting changes to the resource (see `Store::last_change`).
    watcher: Watcher,
}

/// What `build` makes of every object of `gr`, rebuilt only when one of them changed; `build`
/// gets the objects and what it made last time (to keep what did not change).
pub(crate) fn read_cached<T>(
    store: &Store,
    slot: &Mutex<Option<Cached<T>>>,
    gr: &GroupResource,
    build: impl FnOnce(Vec<Value>, Option<&T>) -> T,
) -> Arc<T> {
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    let change = store.last_change(gr);
    if let Some(c) = slot.as_ref()
        && c.change.is_some()
        && c.change == change
    {
        return Arc::clone(&c.value);
    }
    let (watcher, previous) = match slot.take() {
        Some(c) => (c.watcher, Some(c.value)),
        None => (
            store.watch(WatchFilter::new(gr.clone()), Some(store.revision())),
            None,
        ),
    };
    let change = store.last_change(gr);
    let objects = match store.list(gr, &ListOptions::default()) {
        Ok(list) => list
            .items
            .iter()
            .filter_map(|o| serde_json::from_str::<Value>(&o.raw).ok())
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, resource = %gr, "reading admission configuration");
            Vec::new()
        }
    };
    let value = Arc::new(build(objects, previous.as_deref()));
    *slot = Some(Cached {
        change,
        value: Arc::clone(&value),
        watcher,
    });
    value
}

/// Mutating and validating webhooks, re-read only when their configurations change, and the
/// ValidatingAdmissionPolicies that run between them.
pub(crate) struct Webhooks {
    store: Store,
    mutating: Mutex<Option<Cached<Vec<Hook>>>>,
    validating: Mutex<Option<Cached<Vec<Hook>>>>,
    pub policies: crate::admission_policy::Policies,
}

impl Webhooks {
    pub fn new(store: Store) -> Self {
        Self {
            policies: crate::admission_policy::Policies::new(store.clone()),
            store,
            mutating: Mutex::new(None),
            validating: Mutex::new(None),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The webhooks of every mutating (or validating) configuration, by configuration name.
    pub fn hooks(&self, mutating: bool) -> Arc<Vec<Hook>> {
        let (slot, resource) = if mutating {
            (&self.mutating, "mutatingwebhookconfigurations")
        } else {
            (&self.validating, "validatingwebhookconfigurations")
        };
        let gr = GroupResource::new("admissionregistration.k8s.io", resource);
        read_cached(&self.store, slot, &gr, |configs, _| {
            configs
                .iter()
                .flat_map(|c| {
                    let configuration = c["metadata"]["name"].as_str().unwrap_or_default();
                    c["webhooks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|h| Hook::from_json(configuration, h))
                        .collect::<Vec<_>>()
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_review_version() {
        let h = Hook::from_json(
            "c",
            &json!({"name": "a.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/"},
            "sideEffects": "None", "admissionReviewVersions": ["v2", "v1beta1", "v1"]}),
        );
        assert!(h.fail && h.equivalent && h.dry_run_safe && !h.reinvoke);
        assert_eq!(h.timeout, Duration::from_secs(10));
        assert_eq!(h.review_version, Some("v1beta1"));
        let h = Hook::from_json(
            "c",
            &json!({"timeoutSeconds": 99, "sideEffects": "Some",
            "failurePolicy": "Ignore", "matchPolicy": "Exact"}),
        );
        assert!(!h.fail && !h.equivalent && !h.dry_run_safe);
        assert_eq!(h.timeout, Duration::from_secs(30));
        assert_eq!(h.review_version, None);
    }
}
