//! GET, LIST (with selectors, pagination and reads at a past revision) and WATCH.

use std::collections::VecDeque;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::time::Duration;

use kgc_meta::status::Cause;
use kgc_meta::{FieldSelector, GroupResource, LabelSelector, Reason, Status};

use crate::continue_token::Continue;
use crate::history::Key;
use crate::watch::{InitialState, WatchFilter, Watcher};
use crate::{Result, State, Store, StoredObject};

/// How long a read of a revision the store has not reached waits for it, as the watch cache
/// does (`kubernetes/apiserver pkg/storage/cacher/watch_cache.go` `blockTimeout`).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// What a client told to retry a read of a future revision waits (`watch_cache.go`
/// `resourceVersionTooHighRetrySeconds`).
const TOO_LARGE_RETRY_SECONDS: u32 = 1;

/// Which state of the collection a LIST reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ReadFrom {
    /// The current state.
    #[default]
    Latest,
    /// The current state, which must be at least this revision.
    NotOlderThan(u64),
    /// The state at exactly this revision (`resourceVersionMatch=Exact`, or a first page asked
    /// for at a revision).
    Exact(u64),
    /// The rest of a paginated list, at the revision its token names.
    Continue(Continue),
}

impl ReadFrom {
    /// The revision the store must have reached to serve this read (see
    /// [`Store::wait_for_revision`]).
    pub fn needs_revision(&self) -> Option<u64> {
        match self {
            ReadFrom::Latest => None,
            ReadFrom::NotOlderThan(rv) | ReadFrom::Exact(rv) => Some(*rv),
            ReadFrom::Continue(c) => c.revision,
        }
    }
}

/// What a LIST asks for.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub read: ReadFrom,
}

/// One page of a LIST.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub items: Vec<Arc<StoredObject>>,
    /// The revision the list reflects; a watch from here misses nothing.
    pub resource_version: u64,
    /// Set while more items remain.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when more remain and the list has no selector
    /// (`metadata.remainingItemCount`: kube-apiserver counts the keys left in the range, which
    /// it cannot do truthfully through a selector; `apiserver pkg/storage/etcd3/store.go`
    /// `GetList`).
    pub remaining_item_count: Option<u64>,
}

/// The answer to a read of a revision the store has not reached (`kubernetes/apiserver
/// pkg/storage/errors.go` `NewTooLargeResourceVersionError`, a `NewTimeoutError`).
pub fn too_large_resource_version(requested: u64, current: u64) -> Status {
    let mut s = Status::unknown(
        504,
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    );
    s.reason = Reason::Timeout;
    s.causes.push(Cause {
        kind: "ResourceVersionTooLarge".into(),
        message: "Too large resource version".into(),
        field: String::new(),
    });
    s.retry_after_seconds = Some(TOO_LARGE_RETRY_SECONDS);
    s
}

/// The 410 of a read at a revision the history no longer holds (`kubernetes/apiserver
/// pkg/storage/etcd3/errors.go`): for a continued list, the message that offers the token of the
/// same position at the latest revision, which the API server puts in the Status's
/// `metadata.continue` ([`Continue::at_latest`]).
fn expired(continuing: bool) -> Status {
    Status::expired(if continuing {
        "The provided continue parameter is too old to display a consistent list result. You can \
         start a new list without the continue parameter, or use the continue token in this \
         response to retrieve the remainder of the results. Continuing with the provided token \
         results in an inconsistent list - objects that were created, modified, or deleted \
         between the time the first chunk was returned and now may show up in the list."
    } else {
        "The resourceVersion for the provided list is too old."
    })
}

impl Store {
    /// The current state of one object.
    pub fn get(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        self.inner.lock_state().get(gr, namespace, name).cloned()
    }

    /// The current state of one object, or the 404 a client expects.
    pub fn get_or_not_found(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<StoredObject>> {
        self.get(gr, namespace, name)
            .ok_or_else(|| Status::not_found(gr, name).into())
    }

    /// Waits until the store has reached revision `rv`, at most 3 s, as the watch cache waits to
    /// be fresh enough for a read "not older than" `rv`; then the 504 "Too large resource
    /// version" a client retries after a second.
    pub async fn wait_for_revision(&self, rv: u64) -> Result<(), Status> {
        let mut committed = self.inner.committed.subscribe();
        let deadline = tokio::time::Instant::now() + BLOCK_TIMEOUT;
        loop {
            let current = self.revision();
            if current >= rv {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, committed.changed()).await {
                Ok(Ok(())) => {}
                // Timed out, or the store closed and will not move again.
                Ok(Err(_)) | Err(_) => return Err(too_large_resource_version(rv, current)),
            }
        }
    }

    /// Lists objects at the revision `opts.read` names. Pages are cut in key order (namespace,
    /// name) and every page of a list is served at the first page's revision, rebuilt from the
    /// history when the store has moved on (see [`crate::history`]), so pages never mix
    /// revisions. A revision the history no longer covers is `410 Expired`; one the store has not
    /// reached is the 504 of [`too_large_resource_version`] (see [`Store::wait_for_revision`]).
    pub fn list(&self, gr: &GroupResource, opts: &ListOptions) -> Result<ListResult> {
        let st = self.inner.lock_state();
        if let Some(needed) = opts.read.needs_revision()
            && needed > st.rv
        {
            return Err(too_large_resource_version(needed, st.rv).into());
        }
        let (rv, start) = match &opts.read {
            ReadFrom::Latest | ReadFrom::NotOlderThan(_) => (st.rv, None),
            ReadFrom::Exact(rv) => (*rv, None),
            ReadFrom::Continue(c) => (c.revision.unwrap_or(st.rv), Some(&c.start)),
        };
        if rv < st.history.floor_of(gr) {
            return Err(expired(start.is_some()).into());
        }
        let filter = WatchFilter {
            gr: gr.clone(),
            namespace: opts.namespace.clone(),
            labels: opts.labels.clone(),
            fields: opts.fields.clone(),
        };
        let from = start.map_or(Bound::Unbounded, Bound::Included);
        let limit = opts.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let counted = opts.labels.is_empty() && opts.fields.is_empty();
        let mut remaining = 0u64;
        matching_at(&st, &filter, rv, from, |o| {
            if items.len() < limit {
                items.push(Arc::clone(o));
                return ControlFlow::Continue(());
            }
            remaining += 1;
            match counted {
                true => ControlFlow::Continue(()),
                false => ControlFlow::Break(()),
            }
        });
        let more = remaining > 0;
        let continue_token = match items.last() {
            Some(last) if more => Some(
                Continue::after(&(last.namespace.clone(), last.name.clone()), rv)
                    .encode(opts.namespace.as_deref()),
            ),
            _ => None,
        };
        Ok(ListResult {
            items,
            resource_version: rv,
            continue_token,
            remaining_item_count: (more && counted).then_some(remaining),
        })
    }

    /// Up to `max` objects matching `filter` at revision `rv`, after the key `after`: a page of
    /// a watch's initial state. `Err` carries the history's floor once `rv` has left it.
    pub(crate) fn state_page(
        &self,
        filter: &WatchFilter,
        rv: u64,
        after: Option<&Key>,
        max: usize,
    ) -> Result<Vec<Arc<StoredObject>>, u64> {
        let st = self.inner.lock_state();
        let floor = st.history.floor_of(&filter.gr);
        if rv < floor {
            return Err(floor);
        }
        let mut page = Vec::with_capacity(max.min(64));
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        matching_at(&st, filter, rv, from, |o| {
            page.push(Arc::clone(o));
            if page.len() == max {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        Ok(page)
    }

    /// Starts a watch. With `from = None` the watcher first yields `ADDED` for every object that
    /// matches now, read from the store a page at a time, then every later change; with
    /// `Some(rv)` only changes after `rv` (a `410 Expired` event if `rv` is no longer retained).
    pub fn watch(&self, filter: WatchFilter, from: Option<u64>) -> Watcher {
        let committed = self.inner.subscribe(&filter.gr);
        let (cursor, initial) = match from {
            Some(rv) => (rv, None),
            None => {
                let st = self.inner.lock_state();
                let mut left = 0;
                matching_at(&st, &filter, st.rv, Bound::Unbounded, |_| {
                    left += 1;
                    ControlFlow::Continue(())
                });
                let initial = (left > 0).then(|| InitialState {
                    store: self.clone(),
                    after: None,
                    left,
                });
                (st.rv, initial)
            }
        };
        Watcher {
            log: Arc::clone(&self.inner.log),
            committed,
            filter,
            cursor,
            pending: VecDeque::new(),
            initial,
            gone: None,
        }
    }
}

/// Visits, in key order from `from`, the objects matching `filter` as they were at revision `rv`
/// (at least the history's floor, at most the current revision), until `visit` breaks. The
/// namespace and an exact `metadata.name` selector bound the range read.
fn matching_at(
    st: &State,
    filter: &WatchFilter,
    rv: u64,
    from: Bound<&Key>,
    mut visit: impl FnMut(&Arc<StoredObject>) -> ControlFlow<()>,
) {
    let namespace = filter
        .namespace
        .as_deref()
        .or_else(|| filter.fields.exact("metadata.namespace"));
    // A point lookup when the selector names the object.
    let only: Option<Key> = match (namespace, filter.fields.exact("metadata.name")) {
        (Some(ns), Some(name)) => Some((ns.to_owned(), name.to_owned())),
        _ => None,
    };
    let first = only
        .clone()
        .or_else(|| namespace.map(|ns| (ns.to_owned(), String::new())));
    let from = match (from, &first) {
        (Bound::Unbounded, Some(first)) => Bound::Included(first),
        (Bound::Included(k), Some(first)) if k < first => Bound::Included(first),
        (Bound::Excluded(k), Some(first)) if k < first => Bound::Included(first),
        (from, _) => from,
    };
    st.history
        .visit_at(st.objects.get(&filter.gr), &filter.gr, rv, from, |o| {
            if namespace.is_some_and(|ns| o.namespace != ns)
                || only
                    .as_ref()
                    .is_some_and(|(ns, name)| (&o.namespace, &o.name) > (ns, name))
            {
                return ControlFlow::Break(());
            }
            if filter.matches(o) {
                visit(o)
            } else {
                ControlFlow::Continue(())
            }
        });
}
