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
    Context, crd_finalizer, namespace, pod_termination, resourcequota, root_ca, serviceaccount,
};
use kgc_nodesim::{lifecycle as node_lifecycle, simulator as nodes_sim};
use kgc_workloads::{cronjob, deployment, job, replicaset, replicationcontroller, statefulset};

/// Every controller, by the name `--controllers` takes: the owner-reference GC and the lifecycle
/// collectors first (six), then the cluster's own controllers ([`OFF_AGAINST_A_CLUSTER`]).
pub const ALL: [&str; 27] = [
    "gc",
    "podgc",
    "ttl",
    "csr",
    "pv",
    "nodes",
    namespace::NAME,
    crd_finalizer::NAME,
    pod_termination::NAME,
    serviceaccount::NAME,
    root_ca::NAME,
    resourcequota::NAME,
    replicaset::NAME,
    deployment::NAME,
    statefulset::NAME,
    job::NAME,
    kgc_workloads::daemonset::NAME,
    replicationcontroller::NAME,
    cronjob::NAME,
    kgc_volume::provisioner::NAME,
    kgc_volume::binder::NAME,
    kgc_volume::protection::PVC_NAME,
    kgc_volume::protection::PV_NAME,
    kgc_scheduler::NAME,
    nodes_sim::NAME,
    node_lifecycle::NAME,
    kgc_kubelet::NAME,
];

/// What `kgc controller` leaves off unless named: every name in [`ALL`] after the six
/// collectors. Against a real cluster, kube-apiserver, kube-controller-manager and the kubelets
/// already do these jobs.
pub const OFF_AGAINST_A_CLUSTER: &[&str] = ALL.split_at(6).1;

#[derive(clap::Args, Clone, Debug)]
pub struct Selection {
    /// Controllers to run, kube-controller-manager's syntax: `*` (every controller on by
    /// default), `NAME` (turn one on), `-NAME` (turn one off), `-*` (none unless named). Names:
    /// gc, podgc, ttl, csr, pv, nodes, namespace, crd-cleanup, pod-termination, serviceaccount,
    /// root-ca-cert-publisher, resourcequota, replicaset, replicationcontroller, deployment,
    /// statefulset, job, daemonset, cronjob, provisioner, persistentvolume-binder, pvc-protection, pv-protection,
    /// scheduler, nodes-sim (simulated nodes), node-lifecycle, kubelet-sim.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// Controllers to turn off (comma-separated): the same as `-NAME` in --controllers.
    #[arg(long, value_delimiter = ',', value_parser = ALL)]
    disable: Vec<String>,
}

impl Selection {
    /// The controllers not to run; an unknown name is an error naming it.
    pub fn disabled(&self, off_by_default: &[&str]) -> Result<Vec<String>, String> {
        for c in &self.controllers {
            let name = c.strip_prefix('-').unwrap_or(c);
            if name != "*" && !ALL.contains(&name) {
                return Err(format!(
                    "--controllers: {c:?} is not in the list of known controllers ({})",
                    ALL.join(", ")
                ));
            }
        }
        let list: Vec<String> = self
            .disable
            .iter()
            .map(|d| format!("-{d}"))
            .chain(self.controllers.iter().cloned())
            .collect();
        Ok(ALL
            .iter()
            .filter(|name| !enabled(name, &list, off_by_default))
            .map(|name| (*name).to_owned())
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
    quota: resourcequota::Config,
) {
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
        (kgc_scheduler::NAME, kgc_scheduler::run(ctx.clone()).boxed()),
        (
            protection::PVC_NAME,
            protection::run_pvc(ctx.clone()).boxed(),
        ),
        (protection::PV_NAME, protection::run_pv(ctx).boxed()),
    ];
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
            disabled(&["*"], &[], OFF_AGAINST_A_CLUSTER),
            OFF_AGAINST_A_CLUSTER
        );
    }

    #[test]
    fn the_first_entry_naming_a_controller_decides() {
        assert_eq!(disabled(&["*", "-gc"], &[], &[]), ["gc"]);
        assert_eq!(disabled(&["gc", "-gc"], &[], &[]).len(), ALL.len() - 1);
        assert!(!disabled(&["-gc", "gc", "*"], &[], &[]).contains(&"ttl".to_owned()));
        assert!(disabled(&["-gc", "gc", "*"], &[], &[]).contains(&"gc".to_owned()));
        let named = disabled(&["*", "namespace"], &[], OFF_AGAINST_A_CLUSTER);
        assert!(!named.contains(&namespace::NAME.to_owned()));
        assert_eq!(named.len(), OFF_AGAINST_A_CLUSTER.len() - 1);
    }

    #[test]
    fn minus_star_runs_only_what_is_named() {
        assert_eq!(disabled(&["-*"], &[], &[]).len(), ALL.len());
        assert_eq!(disabled(&["gc", "-*"], &[], &[]).len(), ALL.len() - 1);
        assert_eq!(
            disabled(&["-*", "namespace"], &[], &[]).len(),
            ALL.len() - 1
        );
        assert!(!disabled(&["-*", "namespace"], &[], &[]).contains(&"namespace".to_owned()));
        assert_eq!(disabled(&["*", "-*"], &[], &[]).len(), ALL.len());
    }

    #[test]
    fn disable_is_an_alias_of_minus_entries() {
        assert_eq!(disabled(&["*", "gc"], &["gc", "ttl"], &[]), ["gc", "ttl"]);
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
