//! `kgc sync`: a git source synced into a set every interval, Flux's loop on kgc's prune engine
//! (crate `kgc-sync`); `kgc sync status|suspend|resume` read and set the record it keeps on the
//! set's parent.
//!
//! `--once` runs once, for CI, with `kgc apply`'s exit codes (0 done, 1 error, 2 changed with
//! `--exit-code`, 3 undetermined, held by finalizers, or suspended). Without it, the command is a
//! daemon: leader election among replicas on a Lease named after the set, `/metrics` and
//! `/healthz` on `--metrics-addr`, and a clean stop on SIGTERM (the run in progress finishes).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::ConfigMap;
use kgc_runtime::metrics::Registry;
use kgc_source::{Auth, GitRepository, Reference};
use kgc_sync::metrics::Metrics;
use kgc_sync::record::{self, Record};
use kgc_sync::{Kustomization, Outcome, schedule};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::watch;

use crate::admin::Admin;
use crate::deploy_cmd::{self, Format, Limits, SyncSource, Target};
use kgc_runtime::leader_election::{self, Ended, LeaderElector};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SyncArgs {
    #[command(subcommand)]
    command: Option<SyncCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Subcommand)]
enum SyncCommand {
    /// The set's sync record: revision, source, last change, outcome, counts, suspended,
    /// health.
    Status(StatusArgs),
    /// Suspend the sync: the loop applies and prunes nothing until resumed.
    Suspend(SetArgs),
    /// Resume a suspended sync.
    Resume(SetArgs),
}

/// Which set, against which cluster.
#[derive(clap::Args, Clone)]
struct SetArgs {
    /// The project file (app, environments) [default: ./kgc.yaml if it exists].
    #[arg(long)]
    project: Option<PathBuf>,
    /// The application name [default: the project's `app`].
    #[arg(long)]
    app: Option<String>,
    /// The environment [default: the project's only environment].
    #[arg(long)]
    env: Option<String>,
    /// The namespace of objects that name none, and of the set's parent [default: the
    /// environment's, else `default`].
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// The kubeconfig [default: $KUBECONFIG, else ~/.kube/config, else in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: the environment's, else the current context].
    #[arg(long)]
    context: Option<String>,
    #[command(flatten)]
    rate_limit: crate::rate_limit::Flags,
}

impl SetArgs {
    /// The deploy commands' target for this set (no paths: the manifests come from git).
    fn target(&self, force_ownership: bool) -> Target {
        Target {
            project: self.project.clone(),
            app: self.app.clone(),
            env: self.env.clone(),
            namespace: self.namespace.clone(),
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            rate_limit: self.rate_limit,
            force_ownership,
            ..Target::default()
        }
    }

    async fn connect(&self) -> anyhow::Result<(deploy_cmd::Resolved, kube::Client)> {
        let r = deploy_cmd::resolve(&self.target(false), false)?;
        let (client, _) = deploy_cmd::client(&r).await?;
        Ok((r, client))
    }
}

#[derive(clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    set: SetArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Format,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The git repository: a local path, `file://`, `https://` or `ssh://` URL [default: the
    /// project file's `sync.git`].
    #[arg(long, value_name = "URL")]
    git: Option<String>,
    /// The branch to follow [default: the project file's reference, else main].
    #[arg(long, group = "reference")]
    branch: Option<String>,
    /// A tag to sync.
    #[arg(long, group = "reference")]
    tag: Option<String>,
    /// A commit to sync (full SHA-1).
    #[arg(long, group = "reference", value_name = "SHA")]
    commit: Option<String>,
    /// A directory of the repository whose manifests are synced (repeatable) [default: the
    /// project file's `sync.paths`, else the whole repository].
    #[arg(long = "path", value_name = "P")]
    paths: Vec<String>,
    /// How often to sync; failures are retried sooner, with back-off up to the interval
    /// [default: the project file's `sync.interval`, else 1m].
    #[arg(long, value_parser = crate::parse_duration)]
    interval: Option<Duration>,
    /// Sync once and exit (CI): 0 done, 1 error, 2 changed with --exit-code, 3 undetermined
    /// or suspended.
    #[arg(long)]
    once: bool,
    /// An SSH private key for `ssh://` URLs [default: the ssh-agent].
    #[arg(long, value_name = "FILE", group = "auth")]
    ssh_key: Option<PathBuf>,
    /// A file holding a token for `https://` URLs.
    #[arg(long, value_name = "FILE", group = "auth")]
    token_file: Option<PathBuf>,
    /// An environment variable holding a token for `https://` URLs.
    #[arg(long, value_name = "VAR", group = "auth")]
    token_env: Option<String>,
    /// How long a fetch may take before the run fails (and prunes nothing), as Flux's
    /// GitRepository `spec.timeout`.
    #[arg(long, default_value = "60s", value_parser = crate::parse_duration)]
    fetch_timeout: Duration,
    /// Where fetched repositories are kept [default: $XDG_CACHE_HOME/kgc/git, else
    /// ~/.cache/kgc/git].
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    #[command(flatten)]
    set: SetArgs,
    /// Take over objects that another app or environment owns.
    #[arg(long)]
    force_ownership: bool,
    /// Run the generators of a `.flux.yaml` at or above a synced path, in a temporary checkout
    /// of the revision, and sync their output instead of the path's files (Flux v1's manifest
    /// generation); without it such a path is refused.
    #[arg(long)]
    manifest_generation: bool,
    #[command(flatten)]
    adopt: deploy_cmd::AdoptFlags,
    #[command(flatten)]
    limits: Limits,
    /// Output format of `--once`'s report.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Format,
    /// Address of `/metrics` and `/healthz` (`:0` picks a free port; the address is printed
    /// on stdout).
    #[arg(long, default_value = "127.0.0.1:9444")]
    metrics_addr: SocketAddr,
    /// Elect a leader among replicas on a Lease named after the set; only the leader syncs.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    leader_elect: bool,
    /// This replica's identity in the Lease [default: HOSTNAME-PID].
    #[arg(long)]
    identity: Option<String>,
}

pub async fn run(args: SyncArgs) -> anyhow::Result<()> {
    match args.command {
        Some(SyncCommand::Status(a)) => status(a).await,
        Some(SyncCommand::Suspend(a)) => set_suspended(a, true).await,
        Some(SyncCommand::Resume(a)) => set_suspended(a, false).await,
        None => sync(args.run).await,
    }
}

/// `$XDG_CACHE_HOME/kgc/git`, else `~/.cache/kgc/git`.
fn default_cache_dir() -> anyhow::Result<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("kgc").join("git"))
        .context("no cache directory: pass --cache-dir (neither XDG_CACHE_HOME nor HOME is set)")
}

impl RunArgs {
    /// The git source: flags over the project file's `sync`.
    fn source(&self, project: &SyncSource) -> anyhow::Result<GitRepository> {
        let s = SyncSource {
            git: self.git.clone(),
            branch: self.branch.clone(),
            tag: self.tag.clone(),
            commit: self.commit.clone(),
            paths: self.paths.clone(),
            interval: None,
        }
        .over(project);
        let url = s
            .git
            .context("no git repository: pass --git, or set `sync.git` in the project file")?;
        let reference = match (s.branch, s.tag, s.commit) {
            (_, Some(t), _) => Reference::Tag(t),
            (_, _, Some(c)) => Reference::Commit(c),
            (Some(b), _, _) => Reference::Branch(b),
            (None, None, None) => Reference::Branch("main".into()),
        };
        let auth = match (&self.ssh_key, &self.token_file, &self.token_env) {
            (Some(k), _, _) => Auth::SshKey(k.clone()),
            (_, Some(f), _) => Auth::TokenFile(f.clone()),
            (_, _, Some(v)) => Auth::TokenEnv(v.clone()),
            _ => Auth::Default,
        };
        Ok(GitRepository {
            url,
            reference,
            paths: s.paths,
            auth,
        })
    }

    /// `--interval`, else the project file's `sync.interval`, else a minute (Flux's examples).
    fn interval(&self, project: &SyncSource) -> anyhow::Result<Duration> {
        match (self.interval, &project.interval) {
            (Some(i), _) => Ok(i),
            (None, Some(s)) => crate::parse_duration(s)
                .map_err(|e| anyhow::anyhow!("sync.interval in the project file: {e}")),
            (None, None) => Ok(Duration::from_secs(60)),
        }
    }
}

async fn sync(args: RunArgs) -> anyhow::Result<()> {
    let target = Target {
        adopt: args.adopt.clone(),
        ..args.set.target(args.force_ownership)
    };
    let r = deploy_cmd::resolve(&target, false)?;
    let (client, _) = deploy_cmd::client(&r).await?;
    let cache_dir = match &args.cache_dir {
        Some(d) => d.clone(),
        None => default_cache_dir()?,
    };
    let k = Kustomization {
        source: args.source(&r.sync)?,
        identity: r.identity.clone(),
        namespace: r.namespace.clone(),
        options: deploy_cmd::options(&r, &args.limits),
        cache_dir,
        interval: args.interval(&r.sync)?,
        wait: args.limits.wait.then_some(args.limits.timeout),
        fetch_timeout: args.fetch_timeout,
        manifest_generation: args.manifest_generation,
    };
    if args.once {
        return once(&k, &client, &args).await;
    }
    daemon(k, client, &args).await
}

async fn once(k: &Kustomization, client: &kube::Client, args: &RunArgs) -> anyhow::Result<()> {
    let run = k.reconcile(client, None).await;
    if let Some(report) = &run.report {
        deploy_cmd::print_report(report, args.output)?;
    }
    let set = k.identity.describe();
    let revision = run.record.attempted_revision.as_deref().unwrap_or("");
    match run.outcome.exit_code(run.changed, args.limits.exit_code) {
        0 => {
            eprintln!("kgc sync: {set} at {revision}");
            Ok(())
        }
        1 => Err(match run.error {
            Some(e) => anyhow::Error::new(e).context(format!("syncing {}", k.describe_source())),
            None => anyhow::anyhow!(
                "syncing {revision}: the run did not complete (see above); the applied revision stays {}",
                run.record.revision.as_deref().unwrap_or("none")
            ),
        }),
        code => {
            match run.outcome {
                Outcome::Suspended => eprintln!(
                    "kgc sync: {set} is suspended (`kgc sync resume`): nothing applied or pruned"
                ),
                Outcome::Incomplete => eprintln!(
                    "kgc sync: {set} at {revision}, incomplete: {}",
                    run.record.message.as_deref().unwrap_or("")
                ),
                _ => eprintln!("kgc sync: {set} at {revision}"),
            }
            std::process::exit(code)
        }
    }
}

/// client-go's leader-election defaults (`--leader-elect-lease-duration` 15s,
/// `--leader-elect-renew-deadline` 10s, `--leader-elect-retry-period` 2s), as `kgc controller`'s.
const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
const RETRY_PERIOD: Duration = Duration::from_secs(2);

async fn daemon(k: Kustomization, client: kube::Client, args: &RunArgs) -> anyhow::Result<()> {
    let registry = Registry::default();
    let metrics = Metrics::new(&registry);
    let listener = tokio::net::TcpListener::bind(args.metrics_addr)
        .await
        .with_context(|| format!("listening on {}", args.metrics_addr))?;
    let local = listener.local_addr()?;
    let admin = Admin::new(registry, || async { Ok("ok".to_owned()) });
    let lease = format!("{}-sync", k.identity.parent_name());
    let identity = args
        .identity
        .clone()
        .unwrap_or_else(crate::controller::default_identity);
    let namespace = k.namespace.clone();
    let (stop_tx, stop_rx) = watch::channel(false);
    let signalled = crate::signals::shutdown()?;
    tracing::info!(listen = %local, %identity, lease = %format!("{namespace}/{lease}"), leader_elect = args.leader_elect, "kgc sync started");
    println!("kgc sync: listening on http://{local}");
    let server = tokio::spawn(admin.serve(listener, stop_rx.clone()));
    // The loop runs on this task, not a spawned one: the engine's future borrows across its
    // concurrent writes and is not `Send`.
    let work = async {
        if args.leader_elect {
            let elector = LeaderElector::new(
                client.clone(),
                leader_election::Config {
                    namespace: namespace.clone(),
                    name: lease.clone(),
                    identity: identity.clone(),
                    lease_duration: LEASE_DURATION,
                    renew_deadline: RENEW_DEADLINE,
                    retry_period: RETRY_PERIOD,
                },
            );
            run_elected(elector, &k, &client, &metrics, stop_rx.clone()).await;
        } else {
            schedule::run(&k, &client, Some(&metrics), stop_rx.clone()).await;
        }
    };
    let stop = async {
        signalled.await;
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
    };
    tokio::join!(work, stop);
    server
        .await
        .context("the HTTP server task")?
        .context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
}

/// Campaigns, syncs while the lease is held, and campaigns again when it is lost, until `stop`.
async fn run_elected(
    mut elector: LeaderElector,
    k: &Kustomization,
    client: &kube::Client,
    metrics: &Metrics,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if !elector.acquire(&mut stop).await {
            return;
        }
        tracing::info!(identity = %elector.identity(), "became the leader; syncing");
        let sync = schedule::run(k, client, Some(metrics), stop.clone());
        tokio::pin!(sync);
        // The loop only ends when stopping.
        let mut synced = false;
        let ended = {
            let renew = elector.renew(&mut stop);
            tokio::pin!(renew);
            loop {
                tokio::select! {
                    ended = &mut renew => break ended,
                    () = &mut sync, if !synced => synced = true,
                }
            }
        };
        match ended {
            Ended::Stopped => {
                // The run in progress finishes; then the lease is released for a standby.
                if !synced {
                    sync.await;
                }
                elector.release().await;
                return;
            }
            // Dropping the loop cancels the run in progress, as client-go cancels the
            // leader's context.
            Ended::Lost => tracing::warn!("leadership lost; sync stopped"),
        }
    }
}

async fn parent(r: &deploy_cmd::Resolved, client: &kube::Client) -> anyhow::Result<ConfigMap> {
    let name = r.identity.parent_name();
    Api::<ConfigMap>::namespaced(client.clone(), &r.namespace)
        .get_opt(&name)
        .await
        .with_context(|| format!("reading the set's parent ConfigMap {}/{name}", r.namespace))?
        .with_context(|| {
            format!(
                "{} has no parent ConfigMap {}/{name}: it was never synced (run `kgc sync` first)",
                r.identity.describe(),
                r.namespace
            )
        })
}

async fn status(a: StatusArgs) -> anyhow::Result<()> {
    let (r, client) = a.set.connect().await?;
    let cm = parent(&r, &client).await?;
    let rec = Record::from_annotations(&cm.metadata.annotations.unwrap_or_default());
    let mut v = serde_json::to_value(&rec)?;
    v["set"] = json!(r.identity.describe());
    v["namespace"] = json!(r.namespace);
    v["parent"] = json!(r.identity.parent_name());
    match a.output {
        Format::Json => println!("{}", serde_json::to_string_pretty(&v)?),
        Format::Yaml => print!("{}", serde_saphyr::to_string(&v)?),
        Format::Table => {
            let or = |s: Option<&str>, d: &'static str| s.unwrap_or(d).to_owned();
            let rows = [
                (
                    "SET",
                    format!(
                        "{} (parent {}/{})",
                        r.identity.describe(),
                        r.namespace,
                        r.identity.parent_name()
                    ),
                ),
                ("SOURCE", rec.source.clone()),
                ("REVISION", or(rec.revision.as_deref(), "none applied")),
                ("ATTEMPTED", or(rec.attempted_revision.as_deref(), "-")),
                ("LAST CHANGE", or(rec.last_change.as_deref(), "never")),
                ("OUTCOME", or(rec.outcome.map(Outcome::as_str), "-")),
                ("COUNTS", rec.counts.to_string()),
                ("SUSPENDED", rec.suspended.to_string()),
                (
                    "HEALTHY",
                    match (rec.health, rec.health_message.as_deref()) {
                        (None, _) => "- (not checked: sync with --wait)".to_owned(),
                        (Some(h), None) => h.as_str().to_owned(),
                        (Some(h), Some(m)) => format!("{} ({m})", h.as_str()),
                    },
                ),
                ("MESSAGE", or(rec.message.as_deref(), "")),
            ];
            // kubectl's tabwriter: every cell padded to its column's widest, then 3 spaces.
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (k, v) in rows {
                println!("{k:<width$}   {v}");
            }
        }
    }
    Ok(())
}

async fn set_suspended(a: SetArgs, suspended: bool) -> anyhow::Result<()> {
    let (r, client) = a.connect().await?;
    let cm = parent(&r, &client).await?;
    let name = cm.metadata.name.unwrap_or_default();
    // A merge patch, not an apply: it also clears an annotation someone set by hand.
    let value = suspended.then_some("true");
    let patch = json!({"metadata": {"annotations": {record::ANNOTATION_SUSPENDED: value}}});
    let params = PatchParams {
        field_manager: Some(record::FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    Api::<ConfigMap>::namespaced(client, &r.namespace)
        .patch(&name, &params, &Patch::Merge(&patch))
        .await
        .with_context(|| format!("annotating {}/{name}", r.namespace))?;
    let done = if suspended { "suspended" } else { "resumed" };
    eprintln!("kgc sync: {} {done}", r.identity.describe());
    Ok(())
}
