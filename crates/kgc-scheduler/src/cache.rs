//! The scheduler's cache (kubernetes/kubernetes pkg/scheduler/backend/cache): every node with
//! what the pods on it hold, kept from the shared pod and node caches, plus the pods *assumed*
//! on a node while their binding is in flight, so the next pod is judged against them at once,
//! without waiting for the binding to come back through the watch.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kgc_runtime::informer::Key;

use crate::filter::Usage;
use crate::node::Node;
use crate::pod::{Pod, Spec};

#[derive(Default)]
pub struct NodeEntry {
    /// `None` for a node pods are bound to but that the node cache does not hold (yet).
    pub node: Option<Arc<Node>>,
    pub usage: Usage,
}

struct Placed {
    node: String,
    spec: Arc<Spec>,
    assumed: bool,
}

#[derive(Default)]
pub struct State {
    /// By name, so that the nodes are visited in a stable order.
    pub nodes: BTreeMap<String, NodeEntry>,
    placed: HashMap<Key, Placed>,
    /// Where the next search for a node starts (upstream's `nextStartNodeIndex`).
    pub next_start: usize,
}

impl State {
    fn add(&mut self, key: Key, node: &str, spec: Arc<Spec>, assumed: bool) {
        let usage = &mut self.nodes.entry(node.to_owned()).or_default().usage;
        usage.requested.add(&spec.requests.requests, 1);
        usage.non_zero_cpu += spec.requests.non_zero_cpu;
        usage.non_zero_memory += spec.requests.non_zero_memory;
        usage.pods += 1;
        self.placed.insert(
            key,
            Placed {
                node: node.to_owned(),
                spec,
                assumed,
            },
        );
    }

    fn remove(&mut self, key: &Key) -> bool {
        let Some(p) = self.placed.remove(key) else {
            return false;
        };
        if let Some(entry) = self.nodes.get_mut(&p.node) {
            let usage = &mut entry.usage;
            usage.requested.add(&p.spec.requests.requests, -1);
            usage.non_zero_cpu -= p.spec.requests.non_zero_cpu;
            usage.non_zero_memory -= p.spec.requests.non_zero_memory;
            usage.pods -= 1;
            if entry.node.is_none() && usage.pods == 0 {
                self.nodes.remove(&p.node);
            }
        }
        true
    }

    /// Counts `key` on `node` until it is bound or forgotten.
    pub fn assume(&mut self, key: Key, node: &str, spec: Arc<Spec>) {
        self.remove(&key);
        self.add(key, node, spec, true);
    }

    pub fn is_assumed(&self, key: &Key) -> bool {
        self.placed.get(key).is_some_and(|p| p.assumed)
    }
}

/// The cache; clones share it.
#[derive(Clone, Default)]
pub struct Cache {
    state: Arc<Mutex<State>>,
}

impl Cache {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A node added, changed or deleted; `true` when what scheduling reads of it changed.
    pub fn set_node(&self, name: &str, node: Option<&Node>) -> bool {
        let mut st = self.lock();
        match node {
            Some(n) => {
                let entry = st.nodes.entry(name.to_owned()).or_default();
                if entry.node.as_deref() == Some(n) {
                    return false;
                }
                entry.node = Some(Arc::new(n.clone()));
                true
            }
            None => {
                let Some(entry) = st.nodes.get_mut(name) else {
                    return false;
                };
                entry.node = None;
                if entry.usage.pods == 0 {
                    st.nodes.remove(name);
                }
                true
            }
        }
    }

    /// A pod added, changed or deleted: counted on its node while it holds resources there (an
    /// assumed pod is confirmed). `true` when resources were freed.
    pub fn set_pod(&self, key: &Key, pod: Option<&Pod>) -> bool {
        let mut st = self.lock();
        match pod.filter(|p| p.holds_resources()) {
            Some(p) => {
                if let Some(placed) = st.placed.get_mut(key)
                    && placed.node == p.node_name
                {
                    placed.assumed = false;
                    return false;
                }
                let freed = st.remove(key);
                st.add(key.clone(), &p.node_name, Arc::clone(&p.spec), false);
                freed
            }
            // A pending pod may be assumed: its binding is in flight.
            None if pod.is_some_and(Pod::pending) => false,
            None => st.remove(key),
        }
    }

    /// Drops an assumption whose binding failed.
    pub fn forget(&self, key: &Key) {
        let mut st = self.lock();
        if st.is_assumed(key) {
            st.remove(key);
        }
    }
}
