//! `kgc node`: the kubelet's image and container garbage collection as a standalone command,
//! over the CRI (`gc`, one pass or `--every`), recorded (`snapshot`) or replayed (`simulate`);
//! and stopping and starting `kgc serve`'s simulated nodes (`stop`, `start`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use kgc_node::cri::{CriClient, Outcome};
use kgc_node::snapshot::Pod;
use kgc_node::{ContainerGcPolicy, GcState, ImageGcPolicy, Plan, Policy, Snapshot};
use kgc_runtime::metrics::Registry;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Run one GC pass (dead containers, sandboxes, pod log directories, images) against the
    /// container runtime, or one every `--every`.
    Gc(GcArgs),
    /// Record the runtime's images, containers, sandboxes and image filesystem as a snapshot
    /// (the input of `kgc node simulate`).
    Snapshot(SnapshotArgs),
    /// Replay a snapshot under a policy for N days: what would be removed, when, and the disk
    /// usage over time.
    Simulate(SimulateArgs),
    /// Stop a simulated node of `kgc serve`: it stops renewing its lease and posting status,
    /// so it goes NotReady as a machine that died (annotation kgc.io/stopped: "true").
    Stop(crate::node_stop_cmd::Args),
    /// Start a stopped simulated node again: it renews its lease and turns Ready.
    Start(crate::node_stop_cmd::Args),
}

#[derive(clap::Args)]
struct RuntimeArgs {
    /// The CRI socket of the container runtime.
    #[arg(long, default_value = "unix:///run/containerd/containerd.sock")]
    runtime_endpoint: String,
    /// Deadline of every CRI call (a hung runtime is an error, not a hung kgc).
    #[arg(long, default_value = "10s", value_parser = crate::parse_duration)]
    runtime_request_timeout: Duration,
    /// The kubelet's pod logs directory (its entries are collected only with --pods-file).
    #[arg(long, default_value = "/var/log/pods")]
    pod_logs_dir: PathBuf,
}

/// The kubelet's flags, with its defaults.
#[derive(clap::Args)]
struct PolicyArgs {
    /// Disk usage percent at or above which unused images are removed.
    #[arg(long, default_value_t = 85)]
    image_gc_high_threshold: i32,
    /// Disk usage percent image GC frees down to.
    #[arg(long, default_value_t = 80)]
    image_gc_low_threshold: i32,
    /// An image first seen less than this long ago is not removed to free space.
    #[arg(long, default_value = "2m", value_parser = crate::parse_duration)]
    minimum_image_ttl_duration: Duration,
    /// Remove images unused for longer than this, whatever the disk usage (0: off).
    #[arg(long, default_value = "0s", value_parser = crate::parse_duration)]
    image_maximum_gc_age: Duration,
    /// A dead container must have been created at least this long ago.
    #[arg(long, default_value = "0s", value_parser = crate::parse_duration)]
    minimum_container_ttl_duration: Duration,
    /// Dead containers kept per (pod, container name); negative: no limit.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    maximum_dead_containers_per_container: i64,
    /// Dead containers kept on the node; negative: no limit.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    maximum_dead_containers: i64,
    /// Also remove the containers and sandboxes of terminated (not only deleted) pods, as
    /// the kubelet's eviction manager does under disk pressure.
    #[arg(long)]
    evict_non_deleted_pods: bool,
    /// The pods that should run on this node (JSON or YAML list of {uid, terminated, deleted,
    /// evicted}). Without it, nothing is treated as belonging to a deleted pod, as a kubelet
    /// before its first sync.
    #[arg(long)]
    pods_file: Option<PathBuf>,
}

impl PolicyArgs {
    fn policy(&self) -> anyhow::Result<Policy> {
        let policy = Policy {
            images: ImageGcPolicy {
                high_threshold_percent: self.image_gc_high_threshold,
                low_threshold_percent: self.image_gc_low_threshold,
                min_age: self.minimum_image_ttl_duration,
                max_age: self.image_maximum_gc_age,
            },
            containers: ContainerGcPolicy {
                min_age: self.minimum_container_ttl_duration,
                max_per_pod_container: self.maximum_dead_containers_per_container,
                max_containers: self.maximum_dead_containers,
            },
            evict_non_deleted_pods: self.evict_non_deleted_pods,
        };
        policy.images.validate().context(
            "check --image-gc-high-threshold, --image-gc-low-threshold, \
             --minimum-image-ttl-duration and --image-maximum-gc-age",
        )?;
        Ok(policy)
    }

    fn pods(&self) -> anyhow::Result<Option<Vec<Pod>>> {
        self.pods_file.as_deref().map(read_document).transpose()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DocOutput {
    Json,
    Yaml,
}

#[derive(clap::Args)]
struct GcArgs {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Print the plan; remove nothing.
    #[arg(long)]
    dry_run: bool,
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    /// Keep image history (first seen, last used) here between runs, so MinAge and MaxAge
    /// count from the first run rather than from each one (the kubelet keeps it in memory).
    #[arg(long)]
    state_file: Option<PathBuf>,
    /// Run a pass every this long until interrupted, serving /metrics.
    #[arg(long, value_parser = crate::parse_duration)]
    every: Option<Duration>,
    /// Address of /metrics, /healthz and /readyz with --every.
    #[arg(long, default_value = "127.0.0.1:9560")]
    metrics_listen: SocketAddr,
}

#[derive(clap::Args)]
struct SnapshotArgs {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: DocOutput,
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// The snapshot to replay (JSON or YAML), from `kgc node snapshot` or written by hand.
    #[arg(long)]
    snapshot: PathBuf,
    /// How long to simulate (at most ten years of 5-minute steps).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(0..=3650))]
    days: u32,
    /// Write a plot of disk usage over time here.
    #[arg(long)]
    svg: Option<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
}

/// Reads a JSON or YAML document (JSON is YAML, but serde_json gives better errors for it).
fn read_document<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if text.trim_start().starts_with('{') || text.trim_start().starts_with('[') {
        serde_json::from_str(&text).with_context(|| format!("parsing {} as JSON", path.display()))
    } else {
        serde_saphyr::from_str(&text).map_err(|e| kgc_prune::source::yaml_error(path, 1, &e).into())
    }
}

/// Writes `value` as JSON to `path` through a temporary file and a rename: never half-written.
fn write_atomically(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

async fn connect(args: &RuntimeArgs) -> anyhow::Result<CriClient> {
    let mut client = CriClient::connect(&args.runtime_endpoint, args.runtime_request_timeout)
        .await
        .context("is the container runtime running? (--runtime-endpoint)")?;
    let v = client.version().await?;
    tracing::debug!(
        runtime = %v.runtime_name,
        version = %v.runtime_version,
        api = %v.runtime_api_version,
        "connected"
    );
    Ok(client)
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Left-aligned columns separated by two spaces, as kubectl prints.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 < r.len() {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn plan_rows(plan: &Plan<'_>) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "KIND".to_string(),
        "ID".to_string(),
        "REASON".to_string(),
        "DETAIL".to_string(),
    ]];
    for c in &plan.containers {
        rows.push(vec![
            "container".into(),
            c.id.to_string(),
            format!("{:?}", c.reason),
            format!(
                "pod {} container {} created {}",
                c.pod_uid, c.name, c.created_at
            ),
        ]);
    }
    for s in &plan.sandboxes {
        rows.push(vec![
            "sandbox".into(),
            s.id.to_string(),
            format!("{:?}", s.reason),
            format!("pod {} created {}", s.pod_uid, s.created_at),
        ]);
    }
    for d in &plan.pod_log_dirs {
        rows.push(vec![
            "podLogDir".into(),
            d.name.to_string(),
            "DeletedPod".into(),
            format!("pod {}", d.pod_uid),
        ]);
    }
    for i in &plan.images.removals {
        let last_used = i.last_used.map_or_else(
            || "never seen in use".to_string(),
            |t| format!("last used {t}"),
        );
        rows.push(vec![
            "image".into(),
            i.id.clone(),
            format!("{:?}", i.reason),
            format!(
                "{} {} {last_used}",
                i.repo_tags.first().map_or("<none>", String::as_str),
                i.size.map_or_else(|| "?".to_string(), human_bytes),
            ),
        ]);
    }
    rows
}

/// Prints `text` to stdout; a closed pipe (`kgc node … | head`) ends the output quietly.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `writeln!` into a `String`, which cannot fail.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn print_plan(plan: &Plan<'_>, outcome: Option<&Outcome>, output: Output) -> anyhow::Result<()> {
    let mut out = String::new();
    match output {
        Output::Json => {
            let doc = serde_json::json!({ "plan": plan, "outcome": outcome });
            say!(out, "{}", serde_json::to_string_pretty(&doc)?);
        }
        Output::Table => {
            if plan.is_empty() {
                say!(out, "nothing to remove");
            } else {
                out.push_str(&table(&plan_rows(plan)));
            }
            if let Some(fs) = &plan.images.fs {
                say!(
                    out,
                    "image filesystem: {}% of {} used; {} to free; the plan frees {}",
                    fs.usage_percent,
                    human_bytes(fs.capacity_bytes),
                    human_bytes(fs.bytes_to_free),
                    human_bytes(plan.image_bytes()),
                );
            }
            for w in &plan.warnings {
                say!(out, "warning: {w}");
            }
            if let Some(e) = &plan.images.error {
                say!(out, "image GC: {e}");
            }
            match outcome {
                None => say!(out, "dry run: nothing was removed"),
                Some(o) => {
                    say!(
                        out,
                        "removed {} containers, {} sandboxes, {} pod log directories, {} images ({})",
                        o.containers,
                        o.sandboxes,
                        o.pod_log_dirs,
                        o.images,
                        human_bytes(o.image_bytes)
                    );
                    for f in &o.failures {
                        say!(out, "failed: {f}");
                    }
                }
            }
        }
    }
    emit(&out)
}

/// The metrics of `kgc node gc --every`.
struct Metrics {
    passes: Counter,
    pass_errors: Counter,
    containers: Counter,
    sandboxes: Counter,
    pod_log_dirs: Counter,
    images_age: Counter,
    images_space: Counter,
    image_bytes: Counter,
    removal_failures: Counter,
    usage_percent: Gauge,
    last_pass_seconds: Gauge,
}

impl Metrics {
    fn new(registry: &Registry) -> Self {
        let images = Family::<[(&'static str, &'static str); 1], Counter>::default();
        let m = Self {
            passes: Counter::default(),
            pass_errors: Counter::default(),
            containers: Counter::default(),
            sandboxes: Counter::default(),
            pod_log_dirs: Counter::default(),
            images_age: images.get_or_create_owned(&[("reason", "age")]),
            images_space: images.get_or_create_owned(&[("reason", "space")]),
            image_bytes: Counter::default(),
            removal_failures: Counter::default(),
            usage_percent: Gauge::default(),
            last_pass_seconds: Gauge::default(),
        };
        let counters = [
            ("kgc_node_gc_passes", "GC passes run.", &m.passes),
            (
                "kgc_node_gc_pass_errors",
                "GC passes that failed before removing anything (runtime down, bad answer).",
                &m.pass_errors,
            ),
            (
                "kgc_node_containers_removed",
                "Dead containers removed.",
                &m.containers,
            ),
            (
                "kgc_node_sandboxes_removed",
                "Pod sandboxes removed.",
                &m.sandboxes,
            ),
            (
                "kgc_node_pod_log_dirs_removed",
                "Pod log directories removed.",
                &m.pod_log_dirs,
            ),
        ];
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        registry.register(
            "kgc_node_image_garbage_collected",
            "Images removed, by reason (the kubelet's image_garbage_collected_total).",
            images,
        );
        registry.register(
            "kgc_node_image_bytes_freed",
            "Bytes freed by removed images, by the sizes the runtime reported.",
            m.image_bytes.clone(),
        );
        registry.register(
            "kgc_node_removal_failures",
            "Removals the runtime refused.",
            m.removal_failures.clone(),
        );
        registry.register(
            "kgc_node_image_fs_usage_percent",
            "Image filesystem usage at the last pass.",
            m.usage_percent.clone(),
        );
        registry.register(
            "kgc_node_gc_last_pass_timestamp_seconds",
            "When the last pass finished.",
            m.last_pass_seconds.clone(),
        );
        m
    }

    fn observe(&self, plan: &Plan<'_>, outcome: Option<&Outcome>) {
        self.passes.inc();
        if let Some(fs) = &plan.images.fs {
            self.usage_percent
                .set(i64::try_from(fs.usage_percent).unwrap_or(i64::MAX));
        }
        if let Some(o) = outcome {
            self.containers.inc_by(o.containers);
            self.sandboxes.inc_by(o.sandboxes);
            self.pod_log_dirs.inc_by(o.pod_log_dirs);
            self.image_bytes.inc_by(o.image_bytes);
            self.removal_failures.inc_by(o.failures.len() as u64);
            for r in &plan.images.removals {
                if o.removed_images.contains(&r.id) {
                    match r.reason {
                        kgc_node::images::ImageReason::Age => self.images_age.inc(),
                        kgc_node::images::ImageReason::Space => self.images_space.inc(),
                    };
                }
            }
        }
        self.last_pass_seconds
            .set(jiff::Timestamp::now().as_second().max(0));
    }
}

/// One pass: snapshot (kept in `slot`, which the plan borrows its names from), plan, execute
/// (unless dry run).
async fn pass<'s>(
    client: &mut CriClient,
    args: &GcArgs,
    policy: &Policy,
    pods: Option<&[Pod]>,
    state: &mut GcState,
    slot: &'s mut Snapshot,
) -> anyhow::Result<(Plan<'s>, Option<Outcome>)> {
    let mut snapshot = client
        .snapshot(
            pods.is_some()
                .then_some(args.runtime.pod_logs_dir.as_path()),
        )
        .await?;
    snapshot.pods = pods.map(<[Pod]>::to_vec);
    *slot = snapshot;
    let snapshot: &'s Snapshot = slot;
    let plan = kgc_node::plan(snapshot, policy, state)?;
    if let Some(path) = &args.state_file {
        write_atomically(path, state)?;
    }
    if args.dry_run {
        return Ok((plan, None));
    }
    let outcome = client
        .execute(&plan, Some(args.runtime.pod_logs_dir.as_path()))
        .await;
    Ok((plan, Some(outcome)))
}

async fn gc(args: GcArgs) -> anyhow::Result<()> {
    let policy = args.policy.policy()?;
    let pods = args.policy.pods()?;
    let mut state: GcState = match &args.state_file {
        Some(path) if path.exists() => read_document(path)?,
        _ => GcState::default(),
    };
    let Some(every) = args.every else {
        let mut client = connect(&args.runtime).await?;
        let mut snapshot = Snapshot::default();
        let (plan, outcome) = pass(
            &mut client,
            &args,
            &policy,
            pods.as_deref(),
            &mut state,
            &mut snapshot,
        )
        .await?;
        print_plan(&plan, outcome.as_ref(), args.output)?;
        if outcome.as_ref().is_some_and(|o| !o.failures.is_empty()) {
            anyhow::bail!("some removals failed (listed above)");
        }
        return Ok(());
    };
    anyhow::ensure!(!every.is_zero(), "--every must be more than 0s");
    // Before the metrics address is announced: a supervisor's SIGTERM right after it is a
    // clean stop.
    let signalled = crate::signals::shutdown()?;
    let registry = Registry::default();
    let metrics = Metrics::new(&registry);
    // Ready once a pass went through; not while the last one failed.
    let last_pass: Arc<Mutex<Result<(), String>>> =
        Arc::new(Mutex::new(Err("no GC pass has run yet".to_owned())));
    let set_last_pass = |result: Result<(), String>| {
        *last_pass.lock().unwrap_or_else(PoisonError::into_inner) = result;
    };
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("listening on {}", args.metrics_listen))?;
    tracing::info!(address = %listener.local_addr()?, "serving /metrics");
    let ready = Arc::clone(&last_pass);
    let admin = crate::admin::Admin::new(registry, move || {
        let verdict = match &*ready.lock().unwrap_or_else(PoisonError::into_inner) {
            Ok(()) => Ok("ok".to_owned()),
            Err(e) => Err(format!("the last GC pass failed: {e}")),
        };
        std::future::ready(verdict)
    });
    let (stop_admin, admin_stop) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(admin.serve(listener, admin_stop));
    let mut client: Option<CriClient> = None;
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(signalled);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = &mut signalled => break,
        }
        // A runtime that is down (or restarting) is retried at the next tick.
        if client.is_none() {
            match connect(&args.runtime).await {
                Ok(c) => client = Some(c),
                Err(e) => {
                    metrics.pass_errors.inc();
                    tracing::error!("node GC pass skipped: {e:#}");
                    set_last_pass(Err(format!("{e:#}")));
                    continue;
                }
            }
        }
        let Some(c) = client.as_mut() else { continue };
        let mut snapshot = Snapshot::default();
        match pass(
            c,
            &args,
            &policy,
            pods.as_deref(),
            &mut state,
            &mut snapshot,
        )
        .await
        {
            Ok((plan, outcome)) => {
                metrics.observe(&plan, outcome.as_ref());
                set_last_pass(Ok(()));
                print_plan(&plan, outcome.as_ref(), args.output)?;
            }
            Err(e) => {
                metrics.pass_errors.inc();
                tracing::error!("node GC pass failed, nothing removed: {e:#}");
                set_last_pass(Err(format!("{e:#}")));
            }
        }
    }
    let _ = stop_admin.send(true);
    server
        .await
        .context("the admin server task")?
        .context("serving /metrics")?;
    Ok(())
}

async fn snapshot(args: SnapshotArgs) -> anyhow::Result<()> {
    let mut client = connect(&args.runtime).await?;
    let snapshot = client
        .snapshot(Some(args.runtime.pod_logs_dir.as_path()))
        .await?;
    let mut out = String::new();
    match args.output {
        DocOutput::Json => say!(out, "{}", serde_json::to_string_pretty(&snapshot)?),
        DocOutput::Yaml => print!("{}", serde_saphyr::to_string(&snapshot)?),
    }
    emit(&out)
}

fn simulate(args: SimulateArgs) -> anyhow::Result<()> {
    let policy = args.policy.policy()?;
    let mut snapshot: Snapshot = read_document(&args.snapshot)?;
    if let Some(pods) = args.policy.pods()? {
        snapshot.pods = Some(pods);
    }
    let duration = Duration::from_secs(u64::from(args.days) * 86_400);
    let sim = kgc_node::simulate::simulate(&snapshot, &policy, duration)
        .with_context(|| format!("simulating {}", args.snapshot.display()))?;
    if let Some(path) = &args.svg {
        std::fs::write(path, kgc_node::simulate::svg(&sim))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = String::new();
    match args.output {
        Output::Json => say!(out, "{}", serde_json::to_string_pretty(&sim)?),
        Output::Table => {
            let mut rows = vec![vec![
                "TIME".to_string(),
                "KIND".to_string(),
                "ID".to_string(),
                "REASON".to_string(),
                "BYTES".to_string(),
            ]];
            for e in &sim.events {
                rows.push(vec![
                    e.time.strftime("%Y-%m-%d %H:%M").to_string(),
                    e.kind.to_string(),
                    e.id.clone(),
                    e.reason.clone(),
                    e.bytes.map(human_bytes).unwrap_or_default(),
                ]);
            }
            if sim.events.is_empty() {
                say!(out, "nothing would be removed in {} days", args.days);
            } else {
                out.push_str(&table(&rows));
            }
            let peak = sim
                .samples
                .iter()
                .map(|s| s.usage_percent)
                .fold(0.0f64, f64::max);
            let last = sim.samples.last().map_or(0.0, |s| s.usage_percent);
            say!(
                out,
                "image filesystem: peak {peak:.1}%, at the end {last:.1}% of {}",
                human_bytes(sim.capacity_bytes)
            );
            for (at, steps, e) in &sim.errors {
                say!(out, "image GC error from {at} ({steps} passes): {e}");
            }
            if let Some(path) = &args.svg {
                say!(out, "plot: {}", path.display());
            }
        }
    }
    emit(&out)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Gc(a) => gc(a).await,
        Command::Snapshot(a) => snapshot(a).await,
        Command::Simulate(a) => simulate(a),
        Command::Stop(a) => crate::node_stop_cmd::set_stopped(a, true).await,
        Command::Start(a) => crate::node_stop_cmd::set_stopped(a, false).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_have_one_help_per_name() {
        let registry = Registry::default();
        Metrics::new(&registry);
        let text = registry.encode(kgc_runtime::metrics::Format::Prometheus);
        assert_eq!(
            text.matches("# HELP kgc_node_image_garbage_collected_total")
                .count(),
            1
        );
        assert!(text.contains("kgc_node_image_garbage_collected_total{reason=\"space\"} 0\n"));
    }

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["KIND".to_string(), "ID".to_string()],
            vec!["container".to_string(), "abc".to_string()],
        ];
        assert_eq!(table(&rows), "KIND       ID\ncontainer  abc\n");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(10), "10 B");
    }
}
