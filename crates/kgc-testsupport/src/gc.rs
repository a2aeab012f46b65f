//! The garbage collector under test: built into `kgc serve`, or run remotely by `kgc controller`
//! (with [`GC_VIA_CONTROLLER`] set), and its graph dump (upstream's `GraphHasUID`).

use std::cell::RefCell;

use kube::Client;
use serde_json::Value;

use crate::binary::KgcBinary;
use crate::controller::Controller;
use crate::http::{http_get, raw};
use crate::server::Server;

/// Set (to anything) to run the garbage-collector suites through `kgc controller` against a
/// `kgc serve --disable gc`, instead of the collector built into `kgc serve`.
const GC_VIA_CONTROLLER: &str = "KGC_GC_VIA_CONTROLLER";

thread_local! {
    /// Where the current test's collector serves its graph, when it runs as a controller.
    static GRAPH_BASE: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub(crate) fn set_graph_base(url: Option<String>) {
    GRAPH_BASE.with(|b| *b.borrow_mut() = url);
}

impl<B: KgcBinary> Server<B> {
    /// A server whose garbage collector takes `--gc-workers`/`--gc-resync` from `args`: built in
    /// by default; with `KGC_GC_VIA_CONTROLLER` set, a `kgc serve --disable gc` plus a
    /// `kgc controller` (no leader election) pointed at it, so that the same suite exercises the
    /// remote path. The cluster's own controllers are off (see [`Server::start_with`]).
    pub async fn start_gc(args: &[&str]) -> Self {
        Self::gc_server(args, false).await
    }

    /// Like [`Server::start_gc`], in a living cluster (see [`Server::living`]): upstream's e2e
    /// suites run where the workload controllers make the children the collector collects.
    pub async fn start_gc_living(args: &[&str]) -> Self {
        Self::gc_server(args, true).await
    }

    async fn gc_server(args: &[&str], living: bool) -> Self {
        if std::env::var_os(GC_VIA_CONTROLLER).is_none() {
            return match living {
                true => Self::living(args).await,
                false => Self::start_with(args).await,
            };
        }
        Self::gc_via_controller(args, living).await
    }

    /// A `kgc serve --disable gc` plus a `kgc controller` (no leader election) pointed at it,
    /// the controller taking `--gc-workers`/`--gc-resync` from `args`.
    pub async fn start_gc_via_controller(args: &[&str]) -> Self {
        Self::gc_via_controller(args, false).await
    }

    async fn gc_via_controller(args: &[&str], living: bool) -> Self {
        let (mut serve_args, mut gc_args) = (vec!["--disable", "gc"], vec!["--leader-elect=false"]);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if matches!(*a, "--gc-workers" | "--gc-resync") {
                gc_args.push(*a);
                gc_args.extend(it.next());
            } else {
                serve_args.push(*a);
            }
        }
        let mut s = match living {
            true => Self::living(&serve_args).await,
            false => Self::start_with(&serve_args).await,
        };
        let controller = Controller::start(&s, &gc_args).await;
        set_graph_base(Some(controller.url().to_owned()));
        s.controller = Some(controller);
        s
    }
}

/// The collector's graph around `uid` (`/debug/controllers/garbagecollector/graph`, JSON):
/// from the API server, or from the controller when the collector runs as one.
pub async fn gc_graph(client: &Client, uid: &str) -> Value {
    let path = format!("/debug/controllers/garbagecollector/graph?uid={uid}&format=json");
    let (status, body) = match GRAPH_BASE.with(|b| b.borrow().clone()) {
        Some(base) => http_get(&format!("{base}{path}")),
        None => {
            let r = raw(client, "GET", &path, None, Vec::new()).await;
            (r.status, r.text())
        }
    };
    assert_eq!(status, 200, "graph dump: {body}");
    serde_json::from_str(&body).expect("the graph is JSON")
}

/// Whether the collector has observed (not merely been told about) `uid`: upstream
/// `GraphHasUID`.
pub async fn graph_observed(client: &Client, uid: &str) -> bool {
    gc_graph(client, uid).await["nodes"]
        .as_array()
        .expect("a nodes array")
        .iter()
        .any(|n| n["uid"] == uid && n["virtual"] == false)
}

/// The uid of a created object.
pub fn uid_of<K: kube::Resource>(o: &K) -> String {
    o.meta().uid.clone().expect("a created object has a uid")
}

/// Whether a read answered 404; panics on any other error.
pub fn is_not_found<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    match r {
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => false,
    }
}
