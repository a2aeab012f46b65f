//! List-and-watch against a remote API server, as client-go's reflector does it
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/cache/reflector.go`,
//! `ListAndWatch`): a paged list, then a watch from the list's resourceVersion, following
//! bookmarks, re-listing when the server says the version is gone (410), and re-watching from
//! the last version seen when a watch ends.
//!
//! Why not kube-runtime's `watcher`: it re-opens a watch the server closed without an event
//! or an error at once and silently, so a server that closes every watch straight away (a
//! proxy, a server short of watch capacity) is hammered in a tight loop with nothing to pace
//! or log. The reflector counts such a "very short watch" as a failure; so does this one: it
//! yields an error, and [`crate::remote`]'s pacing backs off and reports it once.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::Resource;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::remote::{from_kube, status};
use crate::{Error, ObjectEvent, Result};

/// The page size of a list (client-go's reflector pages by 500).
const PAGE: u32 = 500;
/// What the server is asked to hold a watch open for; the reflector picks 5-10 minutes.
const WATCH_TIMEOUT: u32 = 290;
/// A watch silent this long past its timeout is taken as lost and re-opened.
const IDLE: Duration = Duration::from_secs(WATCH_TIMEOUT as u64 + 30);
/// A watch that ends sooner than this without one event is a failure (the reflector's
/// "very short watch").
const SHORT_WATCH: Duration = Duration::from_secs(1);

enum Phase<K> {
    /// List the next page (`None`: the first).
    List(Option<String>),
    /// The list (or the last event) was at this resourceVersion: watch from it.
    Watch(String),
    Watching {
        version: String,
        stream: BoxStream<'static, kube::Result<WatchEvent<K>>>,
        opened: Instant,
        events: u64,
    },
}

struct State<K, T> {
    api: Api<K>,
    convert: fn(&K) -> T,
    phase: Phase<K>,
    /// Events of the page just listed, handed out one at a time.
    ready: VecDeque<ObjectEvent<T>>,
}

/// The events of `api`'s resource, each object converted by `convert`: a list (`Init`,
/// `InitApply`…, `InitDone`), then changes, re-listing and re-watching by itself for ever.
/// Errors are yielded as they happen, for the caller to pace.
pub(crate) fn list_and_watch<K, T>(
    api: Api<K>,
    convert: fn(&K) -> T,
) -> BoxStream<'static, Result<ObjectEvent<T>>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    T: Send + 'static,
{
    let state = State {
        api,
        convert,
        phase: Phase::List(None),
        ready: VecDeque::new(),
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.ready.pop_front() {
                return Some((Ok(event), st));
            }
            if let Some(error) = step(&mut st).await {
                return Some((Err(error), st));
            }
        }
    })
    .boxed()
}

/// Moves one step on; an error to report, if the step failed.
async fn step<K, T>(st: &mut State<K, T>) -> Option<Error>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    match std::mem::replace(&mut st.phase, Phase::List(None)) {
        Phase::List(token) => {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let page = match st.api.list(&params).await {
                Ok(page) => page,
                // An expired continue token (410) starts the list again, as any failure does.
                Err(e) => return Some(from_kube(e)),
            };
            if token.is_none() {
                st.ready.push_back(ObjectEvent::Init);
            }
            st.ready.extend(
                page.items
                    .iter()
                    .map(|o| ObjectEvent::InitApply((st.convert)(o))),
            );
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => st.phase = Phase::List(Some(next)),
                None => {
                    st.ready.push_back(ObjectEvent::InitDone);
                    st.phase = Phase::Watch(page.metadata.resource_version.unwrap_or_default());
                }
            }
            None
        }
        Phase::Watch(version) => {
            let params = WatchParams::default().timeout(WATCH_TIMEOUT);
            match st.api.watch(&params, &version).await {
                Ok(stream) => {
                    st.phase = Phase::Watching {
                        version,
                        stream: stream.boxed(),
                        opened: Instant::now(),
                        events: 0,
                    };
                    None
                }
                Err(e) => {
                    let e = from_kube(e);
                    if !is_gone(&e) {
                        st.phase = Phase::Watch(version);
                    }
                    Some(e)
                }
            }
        }
        Phase::Watching {
            mut version,
            mut stream,
            opened,
            mut events,
        } => {
            let next = tokio::time::timeout(IDLE, stream.next()).await;
            let event = match next {
                Ok(Some(Ok(event))) => event,
                Ok(Some(Err(e))) => {
                    st.phase = Phase::Watch(version);
                    return Some(from_kube(e));
                }
                Ok(None) | Err(_) => {
                    let short = events == 0 && opened.elapsed() < SHORT_WATCH;
                    st.phase = Phase::Watch(version);
                    return short.then(|| {
                        Error::Transport(
                            "very short watch: the server closed it at once, without an event"
                                .to_owned(),
                        )
                    });
                }
            };
            events += 1;
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    version = o.meta().resource_version.clone().unwrap_or(version);
                    st.ready.push_back(ObjectEvent::Apply((st.convert)(&o)));
                }
                WatchEvent::Deleted(o) => {
                    version = o.meta().resource_version.clone().unwrap_or(version);
                    st.ready.push_back(ObjectEvent::Delete((st.convert)(&o)));
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(e) => {
                    let e = Error::Api(status(&e));
                    // 410: the version is gone, list again; anything else: watch again.
                    if !is_gone(&e) {
                        st.phase = Phase::Watch(version);
                    }
                    return Some(e);
                }
            }
            st.phase = Phase::Watching {
                version,
                stream,
                opened,
                events,
            };
            None
        }
    }
}

fn is_gone(e: &Error) -> bool {
    e.status().is_some_and(|s| s.code == 410)
}
