//! WATCH (kubernetes/apiserver pkg/endpoints/handlers/watch.go and get.go `ListResource`).

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{FieldSelector, ResourceInfo};
use kgc_store::WatchFilter;

use crate::ApiServer;
use crate::consistency::{self, WatchFrom};
use crate::request::{Query, RequestInfo};
use crate::watch::{self as watch_stream, WatchParams};

use super::get::selectors;
use super::{Result, TableRequest, served_version};

pub(super) async fn watch(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    req: &RequestInfo,
    query: &Query,
    table: TableRequest,
) -> Result<Response> {
    let (labels, mut fields) = selectors(info, query)?;
    // `/watch/.../pods/p1` and `GET .../pods/p1?watch=true` watch one object.
    if let Some(name) = &req.name {
        fields = FieldSelector::parse(&format!("metadata.name={name}"))?;
    }
    let start = consistency::watch(query)?;
    let filter = WatchFilter {
        gr: info.storage_resource(),
        namespace: req.namespace.clone(),
        labels,
        fields,
    };
    let timeout = match query.int("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        // Upstream picks 30–60 minutes at random so that watches do not all end together.
        _ => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    let params = WatchParams {
        kind: info.kind.clone(),
        api_version: api_version(&req.group, &req.version),
        timeout,
        // The catalog's entry, shared: a watch lives for an hour.
        info: Arc::clone(info),
        version: served_version(info, req),
        table: table.map(|(version, include)| crate::watch::TableParams {
            info: Arc::clone(info),
            version,
            include,
            clock: api.store.clock(),
        }),
        bookmarks: query.flag("allowWatchBookmarks"),
        // Upstream sends it only to clients that take bookmarks (cacher
        // `setInitialEventsEndBookmarkIfRequested`).
        initial_events_end: start.send_initial_events && query.flag("allowWatchBookmarks"),
    };
    // A streaming list not older than a revision the store has not reached: like every error
    // after the watch is accepted, an ERROR event (cacher `Watch`, `newErrWatcher`).
    if let Some(rv) = start.wait_for
        && let Err(status) = api.store.wait_for_revision(rv).await
    {
        return Ok(watch_stream::respond_error(&status));
    }
    let from = match start.from {
        WatchFrom::Initial => None,
        WatchFrom::Now => Some(api.store.revision()),
        WatchFrom::After(rv) => Some(rv),
    };
    let watcher = api.store.watch(filter, from);
    Ok(watch_stream::respond(watcher, params, api.shutdown.clone()))
}
