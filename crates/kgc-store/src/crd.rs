//! CustomResourceDefinitions in the store: validated and given their status on write, served
//! (added to the catalog) once established, and deleted only after every one of their objects
//! is gone (apiextensions-apiserver `pkg/registry/customresourcedefinition/etcd.go`,
//! `pkg/controller/finalizer/crd_finalizer.go`).

use kgc_meta::crd::{self, CLEANUP_FINALIZER};
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::Value;

use crate::object::Meta;
use crate::watch::EventType;
use crate::{Change, State, Store};
use kgc_meta::time::format_time;

pub(crate) fn crds() -> GroupResource {
    GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions")
}

pub(crate) fn is_crd(gr: &GroupResource) -> bool {
    *gr == crds()
}

/// Every version's `x-kubernetes-validations` rules compiled and priced (apiextensions-apiserver
/// `pkg/apis/apiextensions/validation/validation.go`): a rule that does not compile or costs
/// too much refuses the CRD. Upstream validates the internal CRD, into which the versions'
/// schemas are hoisted when they are all the same (`spec.validation.openAPIV3Schema`), so its
/// errors name that path then, and each version's otherwise.
fn validation_rules(crd: &Value) -> Vec<kgc_meta::FieldError> {
    let schemas: Vec<Option<&Value>> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    if let Some(Some(first)) = schemas.first()
        && schemas.iter().all(|s| *s == Some(*first))
    {
        return kgc_cel::rules::check(first, "spec.validation.openAPIV3Schema");
    }
    let mut errs = Vec::new();
    for (i, schema) in schemas.iter().enumerate() {
        if let Some(schema) = schema {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            errs.extend(kgc_cel::rules::check(schema, &path));
        }
    }
    errs
}

impl Store {
    /// On create and update of a CRD's main resource: validate it and (re)compute its status.
    pub(crate) fn prepare_crd(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), Status> {
        let mut errs = crd::validate(obj, old);
        if errs.is_empty() {
            errs = validation_rules(obj);
        }
        if !errs.is_empty() {
            return Err(Status::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                obj.name(),
                &errs,
            ));
        }
        let conflict = crd::name_conflict(&self.catalog(), obj);
        let now = format_time(self.clock().now());
        let mut status = crd::status(obj, conflict, &now);
        // Keep a Terminating condition the deletion set.
        if let Some(old_status) = old.and_then(|o| o.get("status")) {
            let mut current = obj.clone();
            current["status"] = old_status.clone();
            status = crd::status(&current, crd::name_conflict(&self.catalog(), obj), &now);
        }
        obj["status"] = status;
        Ok(())
    }

    /// After a CRD change is applied: serve, re-serve or stop serving its resource.
    pub(crate) fn sync_catalog(&self, change: &Change) {
        let obj = change.object.value();
        let gr = crd::group_resource(&obj);
        let previous = change
            .prev
            .as_ref()
            .map(|p| crd::group_resource(&p.value()))
            .filter(|p| *p != gr);
        self.edit_catalog(|catalog| {
            if let Some(old) = previous {
                catalog.remove(&old);
            }
            if change.kind == EventType::Deleted {
                catalog.remove(&gr);
            } else if crd::is_established(&obj) {
                catalog.insert(crd::resource_info(&obj));
            }
        });
    }

    /// Serves every established CRD found at start.
    pub(crate) fn restore_catalog(&self) {
        let st = self.inner.lock_state();
        let Some(objects) = st.objects.get(&crds()) else {
            return;
        };
        let values: Vec<Value> = objects.values().map(|o| o.value()).collect();
        drop(st);
        self.edit_catalog(|catalog| {
            for v in values.iter().filter(|v| crd::is_established(v)) {
                catalog.insert(crd::resource_info(v));
            }
        });
    }

    /// CustomResourceDefinition admission for custom-resource creates: refused while the CRD
    /// is terminating (`forbidCreateAdmission`).
    pub(crate) fn admit_custom_create(
        &self,
        st: &State,
        info: &ResourceInfo,
        name: &str,
    ) -> Result<(), Status> {
        let crd_name = format!("{}.{}", info.plural, info.group);
        match st.get(&crds(), "", &crd_name) {
            Some(c) if c.deleting => Err(Status::forbidden(
                &info.group_resource(),
                name,
                "create not allowed while custom resource definition is terminating",
            )),
            _ => Ok(()),
        }
    }
}

/// The CRD part of a DELETE: the cleanup finalizer keeps the CRD while its objects go.
pub(crate) fn prepare_delete(crd_obj: &mut Value, now: &str) {
    let mut fins = crd_obj.finalizers();
    if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
        fins.push(CLEANUP_FINALIZER.to_owned());
        crd_obj.set_finalizers(fins);
    }
    crd::set_terminating(
        crd_obj,
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
}
