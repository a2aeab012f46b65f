//! The cluster the controllers' reconcile tests run against: kgc's own API server inside the
//! test process, over an in-memory store, reached through its loopback client, with the
//! runtime [`Context`] a controller runs on. Upstream tests each `pkg/controller/*` controller
//! against fakes (`k8s.io/client-go/kubernetes/fake`, a fake informer factory); kgc's
//! controllers write through a `kube::Client` with the whole API's semantics, so their tests
//! get the real API (admission, validation, defaulting, subresources) without a spawned
//! server or a socket, and start in milliseconds.
//!
//! A test starts one controller (its crate's `run`, as `kgc serve` starts it) with
//! [`TestCluster::run`], writes objects through [`TestCluster::client`] and waits for the
//! controller's outcome with [`eventually`] (no sleeps). The end-to-end suites
//! (`crates/kgc/tests/`, [`kgc_testsupport`]) still spawn the real binary.
//!
//! ```ignore
//! let mut c = TestCluster::start().await;
//! c.run(kgc_workloads::replicaset::run(c.context()));
//! let ns = c.namespace("rs").await;
//! ```
#![forbid(unsafe_code)]

use std::future::Future;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use kgc_apiserver::ApiServer;
use kgc_runtime::Context;
use kgc_runtime::informer::Informers;
use kgc_store::Store;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::NamespaceResourceScope;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use kgc_inprocess::InProcess;
pub use kgc_testsupport::{consistently, eventually, pods, typed, unique};

/// How long a test waits for a controller's outcome: generous, since a test only waits this
/// long when it fails.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// An API server over an in-memory store, in this process, and the controllers a test runs
/// against it; the controllers stop when it is dropped.
pub struct TestCluster {
    client: kube::Client,
    ctx: Context<InProcess>,
    controllers: JoinSet<()>,
    /// Flipping it ends the API server's open watches; kept so they stay open.
    _shutdown: watch::Sender<bool>,
}

impl TestCluster {
    /// A fresh, empty cluster (the system namespaces only), as `kgc serve --in-memory` starts
    /// with, without its controllers.
    pub async fn start() -> Self {
        Self::over(Store::in_memory().await.expect("an in-memory store opens"))
    }

    /// A cluster over `store`, which a test may have filled (or given objects the API would
    /// refuse) through the store itself.
    pub fn over(store: Store) -> Self {
        let (shutdown, stop) = watch::channel(false);
        let api = ApiServer::new(store.clone(), "127.0.0.1:0".into(), stop);
        let client = api.loopback_client();
        // As `kgc serve` builds each term's context (crates/kgc/src/serve_leading.rs), without
        // a fence, a metrics registry or a CA to publish.
        let ctx = Context {
            informers: Informers::new(InProcess::new(store.clone())),
            client: client.clone(),
            clock: Default::default(),
            queues: None,
            root_ca: None,
            decisions: Default::default(),
        };
        Self {
            client,
            ctx,
            controllers: JoinSet::new(),
            _shutdown: shutdown,
        }
    }

    /// The loopback client (`system:apiserver`, in `system:masters`): what the test writes
    /// and reads with.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The context a controller runs on: the cluster's informers and loopback client.
    pub fn context(&self) -> Context<InProcess> {
        self.ctx.clone()
    }

    /// A context whose root CA bundle is `pem` (`kgc serve`'s `--root-ca-file`).
    pub fn context_with_root_ca(&self, pem: &str) -> Context<InProcess> {
        Context {
            root_ca: Some(pem.into()),
            ..self.context()
        }
    }

    /// Runs a controller (its crate's `run(ctx, …)` future) until the cluster is dropped.
    pub fn run(&mut self, controller: impl Future<Output = ()> + Send + 'static) {
        self.controllers.spawn(controller);
    }

    /// The objects of kind `K` in namespace `ns`.
    pub fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client(), ns)
    }

    /// The objects of kind `K` across namespaces (or of a cluster-scoped kind).
    pub fn all<K>(&self) -> Api<K>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        Api::all(self.client())
    }

    /// Creates a namespace with a unique name from `prefix` and its `default` ServiceAccount
    /// (which the ServiceAccount admission plugin requires of a pod, and the serviceaccount
    /// controller would create), and returns its name.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = unique(prefix);
        let ns: Namespace = typed(serde_json::json!({"metadata": {"name": name}}));
        self.all::<Namespace>()
            .create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
        let sa: ServiceAccount = typed(serde_json::json!({"metadata": {"name": "default"}}));
        self.api::<ServiceAccount>(&name)
            .create(&PostParams::default(), &sa)
            .await
            .unwrap_or_else(|e| panic!("creating {name}/default ServiceAccount: {e}"));
        name
    }

    /// Creates `obj` (JSON, as a manifest reads) in namespace `ns` and returns what the API
    /// server stored.
    pub async fn create<K>(&self, ns: &str, obj: serde_json::Value) -> K
    where
        K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
    {
        let obj: K = typed(obj);
        self.api::<K>(ns)
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("creating a {} in {ns}: {e}", K::kind(&())))
    }

    /// Creates the cluster-scoped `obj` (a Node, a PersistentVolume, a StorageClass).
    pub async fn create_cluster_scoped<K>(&self, obj: serde_json::Value) -> K
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
    {
        let obj: K = typed(obj);
        self.all::<K>()
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("creating a {}: {e}", K::kind(&())))
    }

    /// Merges `status` into the status of `api`'s object `name` through the `status`
    /// subresource: what another controller (a kubelet, the resource-quota controller) would
    /// have written, forged for a controller tested alone. Returns the updated object.
    pub async fn set_status<K>(&self, api: &Api<K>, name: &str, status: serde_json::Value) -> K
    where
        K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
    {
        let patch = serde_json::json!({ "status": status });
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("writing the status of {} {name}: {e}", K::kind(&())))
    }

    /// Registers node `name` with `labels` and forges the status its kubelet would report:
    /// Ready, with room for 110 pods, 4 CPUs and 8 GiB (the scheduler places pods by it).
    pub async fn ready_node(&self, name: &str, labels: serde_json::Value) -> Node {
        self.ready_tainted_node(name, labels, serde_json::json!([]))
            .await
    }

    /// [`ready_node`](Self::ready_node) with `taints` from the start, so that no controller
    /// ever sees it untainted.
    pub async fn ready_tainted_node(
        &self,
        name: &str,
        labels: serde_json::Value,
        taints: serde_json::Value,
    ) -> Node {
        let node = serde_json::json!({"metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints}});
        self.create_cluster_scoped::<Node>(node).await;
        let capacity = serde_json::json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        let status = serde_json::json!({"conditions": [{"type": "Ready", "status": "True"}],
            "capacity": capacity, "allocatable": capacity});
        self.set_status(&self.all::<Node>(), name, status).await
    }

    /// Forges what pod `name`'s kubelet would report once it runs: phase Running, address
    /// `ip`, and the Ready condition as `ready` says.
    pub async fn run_pod(&self, ns: &str, name: &str, ip: &str, ready: bool) -> Pod {
        let ready = if ready { "True" } else { "False" };
        let status = serde_json::json!({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": ready}]});
        self.set_status(&self.api::<Pod>(ns), name, status).await
    }

    /// Every object of kind `K` in namespace `ns`.
    pub async fn list<K>(&self, ns: &str) -> Vec<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        self.api::<K>(ns)
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("listing {} in {ns}: {e}", K::plural(&())))
            .items
    }
}
