//! Who is writing: the `managedFields` entry a write records
//! (kubernetes/apiserver pkg/endpoints/handlers/fieldmanager).

use axum::http::HeaderMap;
use kgc_meta::ResourceInfo;
use kgc_meta::catalog::api_version;
use kgc_meta::time::{Clock, format_time};
use serde_json::Value;

use crate::request::{Query, RequestInfo};

/// Who is writing, for `managedFields`.
pub(crate) struct Tracking {
    info: ResourceInfo,
    manager: String,
    api_version: String,
    time: String,
    subresource: String,
    pub(super) schema: crate::apply::ApplySchema,
}

impl Tracking {
    pub(crate) fn new(
        clock: Clock,
        info: &ResourceInfo,
        req: &RequestInfo,
        query: &Query,
        headers: &HeaderMap,
    ) -> Self {
        Self {
            info: info.clone(),
            manager: crate::apply::field_manager(query, headers),
            api_version: api_version(&req.group, &req.version),
            time: format_time(clock.now()),
            subresource: req.subresource.clone().unwrap_or_default(),
            schema: crate::apply::ApplySchema::for_resource(info, &req.version),
        }
    }

    pub(super) fn manager(&self) -> kgc_managedfields::Manager<'_> {
        kgc_managedfields::Manager {
            name: &self.manager,
            api_version: &self.api_version,
            time: &self.time,
            subresource: &self.subresource,
        }
    }

    /// Records the fields this write changed under its manager (an Update entry), on the object
    /// as it will be stored.
    pub(crate) fn record(&self, old: Option<&Value>, new: &Value) -> Value {
        let mut new = new.clone();
        kgc_store::normalize(&self.info, &mut new);
        kgc_managedfields::update_or_keep_owned(old, new, &self.manager(), &self.schema)
    }
}
