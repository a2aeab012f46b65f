//! GET, LIST (with selectors and pagination) and WATCH.

use std::collections::VecDeque;
use std::sync::Arc;

use kgc_meta::{FieldSelector, GroupResource, LabelSelector, Status};

use crate::watch::{EventType, WatchEvent, WatchFilter, Watcher};
use crate::{Result, Store, StoredObject};

/// What a LIST asks for.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    /// The opaque `continue` token of the previous page.
    pub continue_token: Option<String>,
}

/// One page of a LIST.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub items: Vec<Arc<StoredObject>>,
    /// The revision the list reflects; a watch from here misses nothing.
    pub resource_version: u64,
    /// Set while more items remain.
    pub continue_token: Option<String>,
}

/// A continue token: the list's revision and the last key returned, `rv/namespace/name`
/// (neither part may contain `/`).
fn parse_continue(token: &str) -> Result<(u64, String, String), Status> {
    let bad = || Status::bad_request(format!("invalid continue token {token:?}"));
    let mut parts = token.splitn(3, '/');
    let rv = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let ns = parts.next().ok_or_else(bad)?.to_owned();
    let name = parts.next().ok_or_else(bad)?.to_owned();
    Ok((rv, ns, name))
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

    /// Lists objects. Pages are cut in key order (namespace, name); every page reports the
    /// revision of the first, as the continue token carries it.
    ///
    /// Unlike etcd, the store keeps no old versions, so a later page shows objects as they are
    /// when it is read, not as they were at the first page's revision. A client that watches from
    /// the list's revision still converges: it sees every change after that revision.
    pub fn list(&self, gr: &GroupResource, opts: &ListOptions) -> Result<ListResult> {
        let start = opts
            .continue_token
            .as_deref()
            .map(parse_continue)
            .transpose()?;
        if let Some((rv, _, _)) = &start {
            let floor = self.watch_floor();
            if *rv < floor {
                return Err(Status::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                )
                .into());
            }
        }
        let st = self.inner.lock_state();
        let resource_version = start.as_ref().map(|s| s.0).unwrap_or(st.rv);
        let filter = WatchFilter {
            gr: gr.clone(),
            namespace: opts.namespace.clone(),
            labels: opts.labels.clone(),
            fields: opts.fields.clone(),
        };
        let limit = opts.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut continue_token = None;
        let Some(objects) = st.objects.get(gr) else {
            return Ok(ListResult {
                items,
                resource_version,
                continue_token,
            });
        };
        // A point lookup when the selector names the object.
        if let Some(name) = opts.fields.exact("metadata.name") {
            let ns = opts
                .namespace
                .clone()
                .or_else(|| opts.fields.exact("metadata.namespace").map(str::to_owned));
            if let Some(ns) = ns {
                if let Some(o) = objects.get(&(ns, name.to_owned()))
                    && filter.matches(o)
                    && start.as_ref().is_none_or(|(_, sn, sname)| {
                        (o.namespace.as_str(), o.name.as_str()) > (sn.as_str(), sname.as_str())
                    })
                {
                    items.push(Arc::clone(o));
                }
                return Ok(ListResult {
                    items,
                    resource_version,
                    continue_token,
                });
            }
        }
        use std::ops::Bound;
        let lower = match &start {
            Some((_, ns, name)) => Bound::Excluded((ns.clone(), name.clone())),
            None => match &opts.namespace {
                Some(ns) => Bound::Included((ns.clone(), String::new())),
                None => Bound::Unbounded,
            },
        };
        for ((ns, _), o) in objects.range((lower, Bound::Unbounded)) {
            if let Some(want) = &opts.namespace
                && ns != want
            {
                break;
            }
            if !filter.matches(o) {
                continue;
            }
            if items.len() == limit {
                let last: &Arc<StoredObject> = items.last().expect("limit > 0");
                continue_token = Some(format!(
                    "{resource_version}/{}/{}",
                    last.namespace, last.name
                ));
                break;
            }
            items.push(Arc::clone(o));
        }
        Ok(ListResult {
            items,
            resource_version,
            continue_token,
        })
    }

    /// The oldest revision a watch can still resume from.
    fn watch_floor(&self) -> u64 {
        self.inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .floor()
    }

    /// Starts a watch. With `from = None` the watcher first yields `ADDED` for every object that
    /// matches now, then every later change; with `Some(rv)` only changes after `rv` (a `410
    /// Expired` event if `rv` is no longer retained).
    pub fn watch(&self, filter: WatchFilter, from: Option<u64>) -> Watcher {
        let committed = self.inner.subscribe(&filter.gr);
        let mut pending = VecDeque::new();
        let cursor = match from {
            Some(rv) => rv,
            None => {
                let st = self.inner.lock_state();
                if let Some(objects) = st.objects.get(&filter.gr) {
                    pending.extend(
                        objects
                            .values()
                            .filter(|o| filter.matches(o))
                            .map(|o| WatchEvent::Event(EventType::Added, Arc::clone(o))),
                    );
                }
                st.rv
            }
        };
        Watcher {
            log: Arc::clone(&self.inner.log),
            committed,
            filter,
            cursor,
            pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        assert_eq!(
            parse_continue("12/ns/a.b").unwrap(),
            (12, "ns".to_owned(), "a.b".to_owned())
        );
        assert_eq!(
            parse_continue("3//node-1").unwrap(),
            (3, String::new(), "node-1".into())
        );
        assert!(parse_continue("x/ns/a").is_err());
        assert!(parse_continue("12").is_err());
    }
}
