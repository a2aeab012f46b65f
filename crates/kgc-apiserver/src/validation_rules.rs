//! A custom resource's CEL rules (`x-kubernetes-validations`) on every write, after its schema
//! validation passed, as apiextensions-apiserver's `customresource` strategy runs them: on
//! create without an old object, on update with the stored one (transition rules).
//!
//! Each version's rules are compiled once, when the first write of the CRD version arrives,
//! and kept as long as the catalog holds that schema (a changed CRD brings a new schema, and
//! so new compiled rules).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use kgc_cel::rules::Validator;
use kgc_meta::{ResourceInfo, Status};
use serde_json::Value;

/// Compiled rules per schema, keyed by the schema's address; the weak reference tells a live
/// schema from a freed one whose address was reused.
type Cache = BTreeMap<usize, (Weak<Value>, Arc<Validator>)>;

static COMPILED: Mutex<Cache> = Mutex::new(BTreeMap::new());

/// The compiled rules of `schema`, compiling them on first use.
fn validator(schema: &Arc<Value>) -> Arc<Validator> {
    let key = Arc::as_ptr(schema) as usize;
    let mut cache = COMPILED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((weak, v)) = cache.get(&key)
        && weak.upgrade().is_some_and(|s| Arc::ptr_eq(&s, schema))
    {
        return Arc::clone(v);
    }
    cache.retain(|_, (weak, _)| weak.strong_count() > 0);
    let compiled = Arc::new(Validator::new(schema));
    cache.insert(key, (Arc::downgrade(schema), Arc::clone(&compiled)));
    compiled
}

/// Runs the rules of the version `obj` is written in against it (`old`: the stored object of
/// an update); a failure is a 422 naming every failed rule. Returns the warnings of the
/// failures ratcheting forgave (an update leaving an invalid value as it was).
pub(crate) fn admit(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, Status> {
    let Some(crd) = info.crd.as_ref() else {
        return Ok(Vec::new());
    };
    let version = obj["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit('/').next())
        .unwrap_or_default();
    let Some(schema) = crd.schemas.get(version) else {
        return Ok(Vec::new());
    };
    let rules = validator(schema);
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let (errs, warnings) = rules.validate(obj, old);
    if errs.is_empty() {
        return Ok(warnings);
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    Err(Status::invalid(&info.group, &info.kind, name, &errs))
}
