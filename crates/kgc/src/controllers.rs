//! Choosing and starting controllers, as kube-controller-manager does: `--controllers` takes
//! its syntax (`cmd/kube-controller-manager/app/controllermanager.go`, `IsControllerEnabled`):
//! a comma-separated list where `*` turns on every controller that is on by default, `NAME`
//! turns one on and `-NAME` turns one off, the first entry naming a controller deciding. kgc
//! also takes `-*` for "none but those named", and keeps `--disable NAME,…` as an alias of
//! `-NAME` entries.

use futures::FutureExt;
use futures::future::BoxFuture;
use kgc_client::Cluster;
use kgc_controllers::{
    crd_finalizer, namespace, pod_termination, resourcequota, root_ca, serviceaccount,
};
use kgc_nodesim::{lifecycle as node_lifecycle, simulator as nodes_sim};
use kgc_runtime::Context;
use kgc_workloads::{cronjob, deployment, job, replicaset, replicationcontroller, statefulset};

/// The part of the process that starts a controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The owner-reference garbage collector (`kgc_gc`).
    Gc,
    /// A lifecycle collector (`kgc_lifecycle::run`, by the same name).
    Lifecycle,
    /// One of the cluster's own controllers, started by [`run`].
    Cluster,
    /// The simulated nodes and their kubelets (`nodes.rs`, serve.rs).
    Nodes,
}

/// One controller as `--controllers` names it: kube-controller-manager's
/// `ControllerDescriptor` (`cmd/kube-controller-manager/app/controller_descriptor.go`) — its
/// name, whether `kgc controller` runs it against a real cluster unless named, and which part
/// of the process starts it. `--controllers`' help, both commands' defaults and the check of
/// docs/COLLECTORS.md's tables come from [`DESCRIPTORS`].
#[derive(Debug)]
pub struct Descriptor {
    pub name: &'static str,
    /// On in `kgc controller` unless turned off: the collectors. The cluster's own controllers
    /// are off there, since kube-apiserver, kube-controller-manager and the kubelets of a real
    /// cluster already do their jobs; `kgc serve` runs every controller by default.
    pub against_a_cluster: bool,
    pub part: Part,
}

const fn collector(name: &'static str, part: Part) -> Descriptor {
    Descriptor {
        name,
        against_a_cluster: true,
        part,
    }
}

const fn cluster(name: &'static str, part: Part) -> Descriptor {
    Descriptor {
        name,
        against_a_cluster: false,
        part,
    }
}

/// Every controller: the owner-reference GC and the lifecycle collectors, then the cluster's
/// own controllers, then the simulated nodes.
pub const DESCRIPTORS: &[Descriptor] = &[
    collector("gc", Part::Gc),
    collector("podgc", Part::Lifecycle),
    collector("ttl", Part::Lifecycle),
    collector("csr", Part::Lifecycle),
    collector("pv", Part::Lifecycle),
    collector("nodes", Part::Lifecycle),
    cluster(namespace::NAME, Part::Cluster),
    cluster(crd_finalizer::NAME, Part::Cluster),
    cluster(pod_termination::NAME, Part::Cluster),
    cluster(serviceaccount::NAME, Part::Cluster),
    cluster(root_ca::NAME, Part::Cluster),
    cluster(resourcequota::NAME, Part::Cluster),
    cluster(replicaset::NAME, Part::Cluster),
    cluster(deployment::NAME, Part::Cluster),
    cluster(statefulset::NAME, Part::Cluster),
    cluster(job::NAME, Part::Cluster),
    cluster(kgc_workloads::daemonset::NAME, Part::Cluster),
    cluster(replicationcontroller::NAME, Part::Cluster),
    cluster(cronjob::NAME, Part::Cluster),
    cluster(kgc_volume::provisioner::NAME, Part::Cluster),
    cluster(kgc_volume::binder::NAME, Part::Cluster),
    cluster(kgc_volume::protection::PVC_NAME, Part::Cluster),
    cluster(kgc_volume::protection::PV_NAME, Part::Cluster),
    cluster(kgc_endpoints::endpoints::NAME, Part::Cluster),
    cluster(kgc_endpoints::endpointslice::NAME, Part::Cluster),
    cluster(kgc_endpoints::mirroring::NAME, Part::Cluster),
    cluster(kgc_disruption::NAME, Part::Cluster),
    cluster(kgc_scheduler::NAME, Part::Cluster),
    cluster(nodes_sim::NAME, Part::Nodes),
    cluster(node_lifecycle::NAME, Part::Nodes),
    cluster(kgc_kubelet::NAME, Part::Nodes),
];

/// Every controller's name, in [`DESCRIPTORS`]' order.
pub fn names() -> impl Iterator<Item = &'static str> {
    DESCRIPTORS.iter().map(|d| d.name)
}

/// The names of one part's controllers.
pub fn of(part: Part) -> impl Iterator<Item = &'static str> {
    DESCRIPTORS
        .iter()
        .filter(move |d| d.part == part)
        .map(|d| d.name)
}

/// What `kgc controller` leaves off unless named.
pub fn off_against_a_cluster() -> Vec<&'static str> {
    DESCRIPTORS
        .iter()
        .filter(|d| !d.against_a_cluster)
        .map(|d| d.name)
        .collect()
}

/// `--controllers`' help, naming every controller.
fn controllers_help() -> String {
    format!(
        "Controllers to run, kube-controller-manager's syntax: `*` (every controller on by \
         default), `NAME` (turn one on), `-NAME` (turn one off), `-*` (none unless named). \
         Names: {}",
        names().collect::<Vec<_>>().join(", ")
    )
}

#[derive(clap::Args, Clone, Debug)]
pub struct Selection {
    #[arg(long, value_delimiter = ',', default_value = "*", help = controllers_help())]
    controllers: Vec<String>,
    /// Controllers to turn off (comma-separated): the same as `-NAME` in --controllers.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(names()))]
    disable: Vec<String>,
}

impl Selection {
    /// The controllers not to run; an unknown name is an error naming it.
    pub fn disabled(&self, off_by_default: &[&str]) -> Result<Vec<String>, String> {
        for c in &self.controllers {
            let name = c.strip_prefix('-').unwrap_or(c);
            if name != "*" && !names().any(|n| n == name) {
                return Err(format!(
                    "--controllers: {c:?} is not in the list of known controllers ({})",
                    names().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let list: Vec<String> = self
            .disable
            .iter()
            .map(|d| format!("-{d}"))
            .chain(self.controllers.iter().cloned())
            .collect();
        Ok(names()
            .filter(|name| !enabled(name, &list, off_by_default))
            .map(str::to_owned)
            .collect())
    }
}

/// kube-controller-manager's `IsControllerEnabled`.
fn enabled(name: &str, list: &[String], off_by_default: &[&str]) -> bool {
    let (mut star, mut none) = (false, false);
    for c in list {
        if c == name {
            return true;
        }
        if c.strip_prefix('-') == Some(name) {
            return false;
        }
        match c.as_str() {
            "*" => star = true,
            "-*" => none = true,
            _ => {}
        }
    }
    star && !none && !off_by_default.contains(&name)
}

/// Runs the cluster's own controllers that are not in `disabled`, until dropped.
pub async fn run<C: Cluster>(
    ctx: Context<C>,
    disabled: &[String],
    volumes: kgc_volume::Config,
    endpoints: kgc_endpoints::Config,
    quota: resourcequota::Config,
) {
    use kgc_endpoints::{endpointslice, mirroring};
    use kgc_volume::{binder, protection, provisioner};
    let on = |name: &str| !disabled.iter().any(|d| d == name);
    let all: Vec<(&str, BoxFuture<'static, ()>)> = vec![
        (namespace::NAME, namespace::run(ctx.clone()).boxed()),
        (crd_finalizer::NAME, crd_finalizer::run(ctx.clone()).boxed()),
        (pod_termination::NAME, {
            // The simulated kubelet finishes the deletions of its nodes' pods.
            let (ctx, kubelet_on) = (ctx.clone(), on(kgc_kubelet::NAME));
            async move {
                let kubelet = match kubelet_on {
                    true => Some(kgc_kubelet::simulated_nodes(&ctx.informers).await),
                    false => None,
                };
                pod_termination::run(ctx, kubelet).await;
            }
            .boxed()
        }),
        (
            serviceaccount::NAME,
            serviceaccount::run(ctx.clone()).boxed(),
        ),
        (root_ca::NAME, root_ca::run(ctx.clone()).boxed()),
        (
            resourcequota::NAME,
            resourcequota::run(ctx.clone(), quota).boxed(),
        ),
        (replicaset::NAME, replicaset::run(ctx.clone()).boxed()),
        (deployment::NAME, deployment::run(ctx.clone()).boxed()),
        (statefulset::NAME, statefulset::run(ctx.clone()).boxed()),
        (job::NAME, job::run(ctx.clone()).boxed()),
        (
            kgc_workloads::daemonset::NAME,
            kgc_workloads::daemonset::run(ctx.clone()).boxed(),
        ),
        (cronjob::NAME, cronjob::run(ctx.clone()).boxed()),
        (
            replicationcontroller::NAME,
            replicationcontroller::run(ctx.clone()).boxed(),
        ),
        (
            provisioner::NAME,
            provisioner::run(ctx.clone(), volumes).boxed(),
        ),
        (binder::NAME, binder::run(ctx.clone()).boxed()),
        (
            kgc_disruption::NAME,
            kgc_disruption::run(ctx.clone()).boxed(),
        ),
        (kgc_scheduler::NAME, kgc_scheduler::run(ctx.clone()).boxed()),
        (
            protection::PVC_NAME,
            protection::run_pvc(ctx.clone()).boxed(),
        ),
        (protection::PV_NAME, protection::run_pv(ctx.clone()).boxed()),
        (
            kgc_endpoints::endpoints::NAME,
            kgc_endpoints::endpoints::run(ctx.clone()).boxed(),
        ),
        (
            endpointslice::NAME,
            endpointslice::run(ctx.clone(), endpoints).boxed(),
        ),
        (mirroring::NAME, mirroring::run(ctx, endpoints).boxed()),
    ];
    debug_assert!(of(Part::Cluster).all(|n| all.iter().any(|(name, _)| *name == n)));
    let on = all
        .into_iter()
        .filter(|(name, _)| on(name))
        .map(|(_, run)| run);
    futures::future::join_all(on).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disabled(controllers: &[&str], disable: &[&str], off: &[&str]) -> Vec<String> {
        Selection {
            controllers: controllers.iter().map(|s| (*s).to_owned()).collect(),
            disable: disable.iter().map(|s| (*s).to_owned()).collect(),
        }
        .disabled(off)
        .unwrap()
    }

    #[test]
    fn star_runs_everything_on_by_default() {
        assert!(disabled(&["*"], &[], &[]).is_empty());
        assert_eq!(
            disabled(&["*"], &[], &off_against_a_cluster()),
            off_against_a_cluster()
        );
    }

    #[test]
    fn the_first_entry_naming_a_controller_decides() {
        assert_eq!(disabled(&["*", "-gc"], &[], &[]), ["gc"]);
        assert_eq!(
            disabled(&["gc", "-gc"], &[], &[]).len(),
            names().count() - 1
        );
        assert!(!disabled(&["-gc", "gc", "*"], &[], &[]).contains(&"ttl".to_owned()));
        assert!(disabled(&["-gc", "gc", "*"], &[], &[]).contains(&"gc".to_owned()));
        let named = disabled(&["*", "namespace"], &[], &off_against_a_cluster());
        assert!(!named.contains(&namespace::NAME.to_owned()));
        assert_eq!(named.len(), off_against_a_cluster().len() - 1);
    }

    #[test]
    fn minus_star_runs_only_what_is_named() {
        assert_eq!(disabled(&["-*"], &[], &[]).len(), names().count());
        assert_eq!(disabled(&["gc", "-*"], &[], &[]).len(), names().count() - 1);
        assert_eq!(
            disabled(&["-*", "namespace"], &[], &[]).len(),
            names().count() - 1
        );
        assert!(!disabled(&["-*", "namespace"], &[], &[]).contains(&"namespace".to_owned()));
        assert_eq!(disabled(&["*", "-*"], &[], &[]).len(), names().count());
    }

    #[test]
    fn disable_is_an_alias_of_minus_entries() {
        assert_eq!(disabled(&["*", "gc"], &["gc", "ttl"], &[]), ["gc", "ttl"]);
    }

    /// docs/COLLECTORS.md's tables of controllers (headed `| Name |`) name every controller,
    /// and no other (`gc` has a page of its own).
    #[test]
    fn the_docs_name_every_controller() {
        let doc = include_str!("../../../docs/COLLECTORS.md");
        let mut documented = std::collections::BTreeSet::new();
        let mut in_table = false;
        for line in doc.lines() {
            if line.starts_with("| Name |") {
                in_table = true;
            }
            in_table &= line.starts_with('|');
            if !in_table || !line.starts_with("| `") {
                continue;
            }
            let first = line.split('|').nth(1).unwrap_or_default();
            for name in first.split('`').skip(1).step_by(2) {
                documented.insert(name.to_owned());
            }
        }
        documented.insert("gc".to_owned());
        let known: std::collections::BTreeSet<String> = names().map(str::to_owned).collect();
        assert_eq!(documented, known);
    }

    #[test]
    fn unknown_names_are_refused() {
        let s = Selection {
            controllers: vec!["*".into(), "-replicasets".into()],
            disable: vec![],
        };
        let e = s.disabled(&[]).unwrap_err();
        assert!(
            e.contains("\"-replicasets\" is not in the list of known controllers"),
            "{e}"
        );
    }
}
