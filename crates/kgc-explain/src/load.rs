//! Builds a [`Graph`] from any cluster through kube-rs: discovery (the one every kgc collector
//! uses), then one metadata-only LIST per listable resource, paged, a few at a time. This is
//! what upstream's garbage collector reads too (`PartialObjectMetadata` lists,
//! kubernetes/kubernetes `pkg/controller/garbagecollector/graph_builder.go`), so the graph
//! holds exactly what the collector judges by.
//!
//! A kind the caller may not list is recorded as [`Unlisted`], never taken as empty: answers
//! that depend on it say they are unknown.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use kgc_client::{Cluster, Remote, api_resource};
use kgc_meta::ResourceInfo;
use kube::api::{Api, DynamicObject, ListParams};

use crate::graph::{GroupKind, Node, Ready, Unlisted};
use crate::{Error, Graph, Result, resolve};

/// How many LISTs (or GETs) run at once: enough to hide latency, few enough to spare the API
/// server (kubectl's discovery burst is of the same order).
const CONCURRENCY: usize = 8;
/// Objects per LIST page (kube-controller-manager's informers page at 500 too).
const PAGE: u32 = 500;
/// Objects of one resource and namespace whose `Ready` is read one GET each; more are listed.
const GET_AT_MOST: usize = 20;
/// The aggregated discovery document, as kubectl asks for it.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// How far a load has come, reported after each resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Resources listed so far, of `total`.
    pub listed: usize,
    pub total: usize,
    /// Objects read so far.
    pub objects: usize,
}

/// Which namespaces to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace and the cluster-scoped objects.
    All,
    /// One namespace and the cluster-scoped objects (kubectl-tree's default).
    Namespace(String),
}

/// A cluster, discovered.
pub struct Loader {
    client: kube::Client,
    resources: Vec<Arc<ResourceInfo>>,
}

impl Loader {
    /// Discovers the server's resources, and puts them in the order kube-apiserver lists
    /// groups (the core group, then the built-in groups by priority, then the others by name),
    /// the order kubectl's RESTMapper prefers them in; kube-rs's discovery has none.
    pub async fn connect(client: kube::Client) -> Result<Self> {
        let mut resources = Remote::new(client.clone())
            .resources()
            .await
            .map_err(Error::Discovery)?;
        let builtin = kgc_meta::Catalog::builtin();
        let rank = |g: &str| {
            let known = builtin.groups().iter().position(|b| b == g);
            (known.unwrap_or(usize::MAX), g.to_owned())
        };
        resources.sort_by_cached_key(|r| (rank(&r.group), r.plural.clone()));
        Ok(Self { client, resources })
    }

    /// The served resources, in discovery order.
    pub fn resources(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// The resource `kind` names, as kubectl resolves it. Short names are not in kube-rs's
    /// discovery (kgc-client's has those of built-in kinds from kgc's catalog): when `kind` is
    /// not a full name, they are read from the aggregated discovery documents first (two
    /// requests), so a custom resource's short names count, and clash, as in kubectl.
    pub async fn resolve(&mut self, kind: &str) -> Result<Arc<ResourceInfo>> {
        if let Some(r) = resolve::by_name(&self.resources, kind) {
            return Ok(r);
        }
        self.read_short_names().await;
        resolve::resolve(&self.resources, kind)
    }

    /// Sets every resource's short names from the server's aggregated discovery
    /// (`apidiscovery.k8s.io/v2`). A server without it keeps kgc's catalog's short names.
    async fn read_short_names(&mut self) {
        let mut short: HashMap<(String, String), Vec<String>> = HashMap::new();
        for path in ["/api", "/apis"] {
            let request = http::Request::get(path)
                .header(http::header::ACCEPT, AGGREGATED)
                .body(Vec::new());
            let Ok(request) = request else { continue };
            let Ok(text) = self.client.request_text(request).await else {
                continue;
            };
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if doc["kind"] != "APIGroupDiscoveryList" {
                continue;
            }
            for group in doc["items"].as_array().into_iter().flatten() {
                let name = group["metadata"]["name"].as_str().unwrap_or_default();
                let versions = group["versions"].as_array().into_iter().flatten();
                for r in versions.flat_map(|v| v["resources"].as_array().into_iter().flatten()) {
                    let names = r["shortNames"].as_array().into_iter().flatten();
                    short
                        .entry((
                            name.to_owned(),
                            r["resource"].as_str().unwrap_or_default().to_owned(),
                        ))
                        .or_insert_with(|| {
                            names
                                .filter_map(|n| n.as_str().map(str::to_owned))
                                .collect()
                        });
                }
            }
        }
        if short.is_empty() {
            return;
        }
        for r in &mut self.resources {
            if let Some(names) = short.get(&(r.group.clone(), r.plural.clone())) {
                Arc::make_mut(r).short_names = names.clone();
            }
        }
    }

    fn api(&self, r: &ResourceInfo, namespace: &str) -> Api<DynamicObject> {
        let ar = api_resource(r);
        if r.namespaced() && !namespace.is_empty() {
            Api::namespaced_with(self.client.clone(), namespace, &ar)
        } else {
            Api::all_with(self.client.clone(), &ar)
        }
    }

    /// One object's metadata (a single GET, before any list: a mistyped name fails at once,
    /// not after listing the cluster).
    pub async fn get(&self, r: &ResourceInfo, namespace: &str, name: &str) -> Result<Node> {
        let namespace = if r.namespaced() { namespace } else { "" };
        let found = self
            .api(r, namespace)
            .get_metadata_opt(name)
            .await
            .map_err(|source| Error::Request {
                what: format!("{} {name}", resolve::qualified(r)),
                source,
            })?;
        let m = found.ok_or_else(|| Error::NotFound {
            resource: resolve::qualified(r),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
        Ok(Node::from_metadata(
            &api_resource(r).api_version,
            &r.kind,
            &m.metadata,
        ))
    }

    /// The kinds of the objects connected to `uid` by ownership (owners and dependents,
    /// transitively), as the garbage collector inside `kgc serve` or a `kgc controller` serving
    /// this API knows them (`/debug/controllers/garbagecollector/graph`): one request that
    /// spares listing every other kind. `None` when the server has no such collector (any
    /// other cluster).
    ///
    /// The collector's graph follows the cluster through watches, so an object created a
    /// moment ago may not be in it yet; its kind is then missed only if no other object of
    /// that kind is connected.
    pub async fn collector_kinds(&self, uid: &str) -> Option<BTreeSet<GroupKind>> {
        let uid: String = uid
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let path = format!("/debug/controllers/garbagecollector/graph?format=json&uid={uid}");
        let request = http::Request::get(path).body(Vec::new()).ok()?;
        let text = self.client.request_text(request).await.ok()?;
        let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
        let nodes = doc["nodes"].as_array()?;
        let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Some(
            nodes
                .iter()
                .map(|n| GroupKind::of(&s(n, "apiVersion"), &s(n, "kind")))
                .collect(),
        )
    }

    /// The graph of every object in `scope` (of the `kinds` given, or of every kind),
    /// `progress` told after each resource. Resources are inserted in discovery order and an
    /// object met twice (Events are served by two groups) keeps its first, core, form.
    pub async fn graph(
        &self,
        scope: &Scope,
        kinds: Option<&BTreeSet<GroupKind>>,
        mut progress: impl FnMut(Progress),
    ) -> Graph {
        let listable: Vec<&Arc<ResourceInfo>> = self
            .resources
            .iter()
            .filter(|r| r.supports("list"))
            .filter(|r| kinds.is_none_or(|k| k.contains(&GroupKind::new(&r.group, &r.kind))))
            .collect();
        let mut graph = Graph::new(&self.resources);
        let mut report = Progress {
            listed: 0,
            total: listable.len(),
            objects: 0,
        };
        let mut lists = futures::stream::iter(listable)
            .map(|r| self.list(r, scope))
            .buffered(CONCURRENCY);
        while let Some(listed) = lists.next().await {
            match listed {
                Ok(nodes) => {
                    report.objects += nodes.len();
                    for n in nodes {
                        if graph.node(&n.uid).is_none() {
                            graph.insert(n);
                        }
                    }
                }
                Err(Some(u)) => graph.mark_unlisted(u),
                Err(None) => {}
            }
            report.listed += 1;
            progress(report);
        }
        graph
    }

    /// Every object of one resource in `scope`, paged. `Err(None)`: the server no longer
    /// serves it (nothing to know); `Err(Some(_))`: it could not be listed.
    async fn list(
        &self,
        r: &ResourceInfo,
        scope: &Scope,
    ) -> std::result::Result<Vec<Node>, Option<Unlisted>> {
        let namespace = match scope {
            Scope::Namespace(ns) if r.namespaced() => ns.as_str(),
            _ => "",
        };
        let api = self.api(r, namespace);
        let api_version = api_resource(r).api_version;
        let mut nodes = Vec::new();
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = match api.list_metadata(&params).await {
                Ok(page) => page,
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => return Err(None),
                Err(e) => {
                    tracing::debug!(resource = %resolve::qualified(r), "list failed: {e}");
                    return Err(Some(Unlisted {
                        group_kind: GroupKind::new(&r.group, &r.kind),
                        namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
                        reason: match e {
                            kube::Error::Api(s) if s.code == 403 => {
                                format!("forbidden: {}", s.message)
                            }
                            other => other.to_string(),
                        },
                    }));
                }
            };
            nodes.extend(
                page.items
                    .iter()
                    .map(|o| Node::from_metadata(&api_version, &r.kind, &o.metadata)),
            );
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(nodes),
            }
        }
    }

    /// Fills the `Ready` condition of the objects `uids` from the whole objects (lists of
    /// metadata do not carry status). Only kinds with a status subresource can have the
    /// condition; of each such kind in each namespace, a few objects are read one GET each, many
    /// with one paged LIST. An object that cannot be read keeps `None`: its READY column stays
    /// empty.
    pub async fn read_ready(&self, graph: &mut Graph, uids: &[String]) {
        let mut groups: BTreeMap<(usize, String), Vec<(String, String)>> = BTreeMap::new();
        for uid in uids {
            let Some(n) = graph.node(uid) else { continue };
            let gk = n.group_kind();
            let found = self.resources.iter().position(|r| {
                r.group == gk.group && r.kind == gk.kind && r.has_status() && r.supports("get")
            });
            if let Some(i) = found {
                groups
                    .entry((i, n.namespace.clone()))
                    .or_default()
                    .push((uid.clone(), n.name.clone()));
            }
        }
        let read: Vec<Vec<(String, Option<Ready>)>> = futures::stream::iter(groups)
            .map(|((i, ns), objects)| self.read_group(&self.resources[i], ns, objects))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (uid, ready) in read.into_iter().flatten() {
            if let Some(n) = graph.node_mut(&uid) {
                n.ready = ready;
            }
        }
    }

    /// The `Ready` condition of `objects` (uid, name) of one resource in one namespace.
    async fn read_group(
        &self,
        r: &ResourceInfo,
        namespace: String,
        objects: Vec<(String, String)>,
    ) -> Vec<(String, Option<Ready>)> {
        let api = self.api(r, &namespace);
        let ready_of = |o: &DynamicObject| serde_json::to_value(o).ok().and_then(|v| Ready::of(&v));
        if objects.len() <= GET_AT_MOST || !r.supports("list") {
            let mut out = Vec::with_capacity(objects.len());
            for (uid, name) in objects {
                let object = api.get_opt(&name).await.ok().flatten();
                // The same object, not a newer one of that name.
                let ready = object
                    .filter(|o| o.metadata.uid.as_deref() == Some(uid.as_str()))
                    .and_then(|o| ready_of(&o));
                out.push((uid, ready));
            }
            return out;
        }
        let mut by_uid: HashMap<String, Option<Ready>> =
            objects.into_iter().map(|(uid, _)| (uid, None)).collect();
        let mut params = ListParams::default().limit(PAGE);
        while let Ok(page) = api.list(&params).await {
            for o in &page.items {
                if let Some(slot) = o.metadata.uid.as_ref().and_then(|u| by_uid.get_mut(u)) {
                    *slot = ready_of(o);
                }
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        by_uid.into_iter().collect()
    }
}
