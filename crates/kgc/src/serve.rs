//! `kgc serve`: the embedded cluster.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use anyhow::Context;
use kgc_apiserver::ApiServer;
use kgc_gc::Config as GcConfig;
use kgc_inprocess::InProcess;
use kgc_runtime::leader_election::LeaderMetrics;
use kgc_runtime::metrics::Registry;
use kgc_store::{Options, Store};

use crate::lifecycle::WithClock;
use tokio::sync::watch;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (HTTPS, with authentication and RBAC, unless --insecure-http).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where the database and the kubeconfig live; one server (or add-user) at a time
    /// [default: $XDG_DATA_HOME/kgc or ~/.local/share/kgc; with --in-memory, a private
    /// temporary directory removed on exit].
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Keep every object in memory only; nothing survives a restart.
    #[arg(long)]
    in_memory: bool,
    #[command(flatten)]
    datastore: DatastoreArgs,
    /// Join the cluster already on --datastore-endpoint: before the first start, read its
    /// identity (CA, service-account key, encryption configuration: the Secret
    /// kube-system/kgc-pki) through a running replica with this admin kubeconfig, into
    /// DATA_DIR/pki/. A data directory with a CA keeps it.
    #[arg(long, value_name = "KUBECONFIG", requires = "datastore_endpoint")]
    join: Option<PathBuf>,
    /// How many committed changes are kept for watch resumption.
    #[arg(long, default_value_t = kgc_store::DEFAULT_WATCH_LOG)]
    watch_cache_size: usize,
    /// How long Events are kept after their last write, as kube-apiserver's `--event-ttl`
    /// (`0s` keeps them forever).
    #[arg(long, default_value = "1h", value_parser = crate::parse_duration)]
    event_ttl: std::time::Duration,
    #[command(flatten)]
    selection: crate::controllers::Selection,
    /// Owner-reference GC workers per queue.
    #[arg(long, default_value_t = 20)]
    gc_workers: usize,
    /// How often the garbage collector re-runs discovery anyway: a CRD change makes it re-run
    /// at once, this is the safety net.
    #[arg(long, default_value = "30s", value_parser = crate::parse_duration)]
    gc_resync: std::time::Duration,
    /// Reads (GET) served at once; more are refused with 429 (0: no limit). Watches do not count.
    #[arg(long, default_value_t = kgc_apiserver::inflight::DEFAULT_READ_LIMIT)]
    max_requests_inflight: usize,
    /// Writes served at once; more are refused with 429 (0: no limit).
    #[arg(long, default_value_t = kgc_apiserver::inflight::DEFAULT_MUTATING_LIMIT)]
    max_mutating_requests_inflight: usize,
    /// Writes the audit log to this file (`-`: standard output), one `audit.k8s.io/v1 Event`
    /// per line, for the requests `--audit-policy-file` audits.
    #[arg(long)]
    audit_log_path: Option<String>,
    /// The audit policy (`audit.k8s.io/v1 Policy`, YAML or JSON); nothing is audited without it.
    #[arg(long)]
    audit_policy_file: Option<std::path::PathBuf>,
    /// The size in megabytes past which the audit log is rotated (0: 100, lumberjack's default).
    #[arg(long, default_value_t = 0)]
    audit_log_maxsize: u64,
    /// Rotated audit logs kept (0: all).
    #[arg(long, default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Days a rotated audit log is kept, by the time in its name (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxage: u64,
    /// Admission plugins to turn off (comma-separated). kgc enforces
    /// OwnerReferencesPermissionEnforcement by default, which kube-apiserver leaves off;
    /// ServiceAccount, DefaultStorageClass, StorageObjectInUseProtection and ResourceQuota are
    /// on, as upstream.
    #[arg(long, value_delimiter = ',', value_parser = [
        kgc_apiserver::owner_references::PLUGIN,
        kgc_apiserver::serviceaccount_admission::PLUGIN,
        kgc_apiserver::storage_admission::DEFAULT_STORAGE_CLASS,
        kgc_apiserver::storage_admission::STORAGE_OBJECT_IN_USE_PROTECTION,
        kgc_apiserver::resourcequota_admission::PLUGIN,
    ])]
    disable_admission_plugins: Vec<String>,
    /// The CIDR Services' ClusterIPs are allocated from (IPv4).
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cluster_ip_range: kgc_apiserver::ipallocator::IpRange,
    /// The ports NodePort and LoadBalancer Services' node ports are allocated from.
    #[arg(long, default_value = "30000-32767")]
    service_node_port_range: kgc_apiserver::portallocator::PortRange,
    #[command(flatten)]
    lifecycle: crate::lifecycle::LifecycleArgs,
    #[command(flatten)]
    nodes: crate::nodes::NodeArgs,
    #[command(flatten)]
    kubelet: Box<crate::kubelet::KubeletArgs>,
    #[command(flatten)]
    security: crate::secure::SecurityArgs,
    #[command(flatten)]
    encryption: crate::encryption::EncryptionArgs,
    #[command(flatten)]
    election: crate::election::ElectionArgs,
    #[command(subcommand)]
    action: Option<Action>,
}

/// Where the objects live when not in the data directory's SQLite file: an etcd v3 cluster, with
/// k3s's flag names (and kube-apiserver's for the prefix and compaction).
#[derive(clap::Args)]
struct DatastoreArgs {
    /// Keep the objects in etcd instead of the data directory's SQLite file: the members'
    /// client URLs, comma-separated (`http://a:2379,http://b:2379`, `https://…`, or `etcd://…`,
    /// https when TLS files are given). The data directory still holds `pki/` and the kubeconfig.
    #[arg(long, value_delimiter = ',', conflicts_with = "in_memory")]
    datastore_endpoint: Vec<String>,
    #[command(flatten)]
    etcd: EtcdArgs,
    /// How often etcd's old revisions are compacted (0s: never), as kube-apiserver's flag.
    #[arg(long, default_value = "5m", value_parser = crate::parse_duration)]
    etcd_compaction_interval: std::time::Duration,
}

/// How an etcd cluster is reached and where in it the objects live: shared by
/// `--datastore-endpoint` and `kgc serve migrate --to` (whose argument has the id
/// `datastore_endpoint` too, so that these flags require it in both).
#[derive(clap::Args)]
pub(crate) struct EtcdArgs {
    /// The CA file that signed the etcd members' certificates.
    #[arg(long, requires = "datastore_endpoint")]
    datastore_cafile: Option<PathBuf>,
    /// The client certificate kgc presents to etcd.
    #[arg(long, requires_all = ["datastore_endpoint", "datastore_keyfile"])]
    datastore_certfile: Option<PathBuf>,
    /// The key of --datastore-certfile.
    #[arg(long, requires_all = ["datastore_endpoint", "datastore_certfile"])]
    datastore_keyfile: Option<PathBuf>,
    /// The key prefix of every object in etcd, as kube-apiserver's --etcd-prefix.
    #[arg(long, default_value = "/registry", requires = "datastore_endpoint")]
    etcd_prefix: String,
}

impl EtcdArgs {
    /// The options that reach `endpoints` (compaction at its default).
    pub(crate) fn options(&self, endpoints: &[String]) -> kgc_store::EtcdOptions {
        let mut opts = kgc_store::EtcdOptions::new(endpoints.to_vec());
        opts.prefix = self.etcd_prefix.clone();
        opts.ca_file = self.datastore_cafile.clone();
        opts.cert_file = self.datastore_certfile.clone();
        opts.key_file = self.datastore_keyfile.clone();
        opts
    }
}

impl DatastoreArgs {
    fn etcd(&self) -> Option<kgc_store::EtcdOptions> {
        if self.datastore_endpoint.is_empty() {
            return None;
        }
        let mut opts = self.etcd.options(&self.datastore_endpoint);
        opts.compaction_interval = self.etcd_compaction_interval;
        Some(opts)
    }
}

/// What `kgc serve` can do besides serving.
#[derive(clap::Subcommand)]
enum Action {
    /// Sign a client certificate for a user with the data directory's CA, optionally bind it
    /// to a default role, and print a kubeconfig for it on stdout (or write it with
    /// --write-kubeconfig FILE).
    AddUser(crate::add_user::Args),
    /// Copy a stopped SQLite data directory's cluster into an empty etcd prefix (every object,
    /// in revision order); afterwards the data directory starts only with --datastore-endpoint.
    Migrate(crate::migrate::Args),
}

fn default_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("kgc");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/kgc")
}

/// The kubeconfig clients use to reach this server (context `kgc`): with TLS, it trusts `ca`
/// and authenticates with a client certificate.
pub(crate) fn kubeconfig(server: &str, tls: Option<(&str, &crate::tls::Pair)>) -> String {
    let (cluster_tls, user) = match tls {
        None => (String::new(), "{}".to_owned()),
        Some((ca, client)) => {
            let b64 = |s: &str| kgc_meta::encoding::base64(s.as_bytes());
            (
                format!("\n    certificate-authority-data: {}", b64(ca)),
                format!(
                    "\n    client-certificate-data: {}\n    client-key-data: {}",
                    b64(&client.cert_pem),
                    b64(&client.key_pem)
                ),
            )
        }
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kgc
  cluster:
    server: {server}{cluster_tls}
users:
- name: kgc
  user: {user}
contexts:
- name: kgc
  context:
    cluster: kgc
    user: kgc
    namespace: default
current-context: kgc
"
    )
}

/// Below this much free space, a failed start is put down to a full disk: SQLite reports a
/// full disk as `SQLITE_FULL` only when a write fails, and as an I/O error when its
/// shared-memory file cannot grow.
const FULL_DISK_BYTES: u64 = 1 << 20;

/// The one line a start on a full disk fails with, instead of the error chain.
fn full_disk(data_dir: &Path) -> impl Fn(anyhow::Error) -> anyhow::Error + '_ {
    move |e| {
        let said_full = e.chain().any(|c| {
            c.downcast_ref::<kgc_store::Error>()
                .is_some_and(kgc_store::Error::is_disk_full)
                || c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull)
        });
        if said_full || free_bytes(data_dir).is_some_and(|b| b < FULL_DISK_BYTES) {
            anyhow::anyhow!(
                "cannot start: the disk holding the data directory {} is full (no space left on \
                 device): free some space and start again",
                data_dir.display()
            )
        } else {
            e
        }
    }
}

/// The space left to unprivileged writers on the file system holding `path` (or its nearest
/// existing ancestor).
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let st = rustix::fs::statvfs(existing).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Writes a file atomically (temporary file, then rename), so readers never see half of it.
pub(crate) fn write_atomic(path: &Path, contents: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// How an etcd datastore is named in messages and in the data directory's marker.
pub(crate) fn describe_etcd(etcd: &kgc_store::EtcdOptions) -> String {
    format!("etcd {} (prefix {})", etcd.endpoints.join(","), etcd.prefix)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    match args.action {
        Some(Action::AddUser(a)) => {
            let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
            return crate::add_user::run(a, &data_dir, &args.encryption).await;
        }
        Some(Action::Migrate(m)) => {
            let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
            let clock = args.lifecycle.clock();
            return crate::migrate::run(m, &data_dir, &args.encryption, clock).await;
        }
        None => {}
    }
    args.security.check_listen(args.listen)?;
    args.election.check()?;
    let disabled = args.selection.disabled(&[]).map_err(anyhow::Error::msg)?;
    let nodes = args.nodes.config()?;
    let kubelet = args.kubelet.config()?;
    // An --in-memory server owns no data directory unless given one: its kubeconfig (for a
    // throwaway CA) goes to a private temporary directory, never over a durable server's.
    let scratch = match (&args.data_dir, args.in_memory) {
        (None, true) => Some(
            tempfile::Builder::new()
                .prefix("kgc-in-memory-")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .context("creating a temporary directory for the --in-memory server")?,
        ),
        _ => None,
    };
    let data_dir = match (&scratch, args.data_dir) {
        (Some(t), _) => t.path().to_owned(),
        (None, Some(d)) => d,
        (None, None) => default_data_dir(),
    };
    let full = full_disk(&data_dir);
    let _held = crate::data_dir::DataDir::lock(&data_dir).map_err(&full)?;
    let etcd = args.datastore.etcd();
    let datastore = etcd.as_ref().map(describe_etcd);
    if !args.in_memory {
        crate::data_dir::check_datastore(&data_dir, datastore.as_deref())?;
    }
    if let Some(kubeconfig) = &args.join {
        crate::join::fetch(kubeconfig, &data_dir).await?;
    }
    let encryption = args
        .encryption
        .transformers(&data_dir, !args.in_memory)
        .map_err(&full)?;
    let started = std::time::Instant::now();
    let store = Store::open_with(
        Options {
            path: (!args.in_memory && etcd.is_none()).then(|| data_dir.join("kgc.db")),
            etcd,
            watch_log: args.watch_cache_size,
            encryption: encryption.filter(|_| !args.in_memory),
            ttl: (!args.event_ttl.is_zero())
                .then(|| (kgc_meta::GroupResource::new("", "events"), args.event_ttl))
                .into_iter()
                .collect(),
            ..Options::default()
        }
        .with_clock(args.lifecycle.clock()),
    )
    .await
    .map_err(|e| {
        // A replica on etcd that made its own pki/ cannot read what the others encrypted.
        let foreign_key = matches!(
            e,
            kgc_store::Error::Encryption(kgc_encryption::Error::Transform { .. })
        );
        let context = match &datastore {
            Some(etcd) if foreign_key => format!(
                "opening the store in {etcd}: this replica's encryption key is not the \
                 cluster's (start it with --join and an admin's kubeconfig, or with a copy of \
                 the first replica's pki/)"
            ),
            Some(etcd) => format!("opening the store in {etcd}"),
            None => format!("opening the store in {}", data_dir.display()),
        };
        anyhow::Error::from(e).context(context)
    })
    .map_err(&full)?;
    tracing::info!(
        objects = store.len(),
        revision = store.revision(),
        durable = store.is_durable(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "store opened"
    );
    if let Some(datastore) = datastore.as_deref().filter(|_| !args.in_memory) {
        crate::data_dir::record_datastore(&data_dir, datastore)?;
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let local = listener.local_addr()?;
    let client_host = if local.ip().is_unspecified() {
        format!("127.0.0.1:{}", local.port())
    } else {
        local.to_string()
    };
    let security = args
        .security
        .prepare(&data_dir, args.in_memory, args.listen)
        .map_err(&full)?;
    // On etcd the cluster's identity is published for the replicas that `--join` it.
    if datastore.is_some() && security.is_some() {
        crate::join::publish(&store, &data_dir, &args.encryption).await?;
    }
    let scheme = if security.is_some() { "https" } else { "http" };
    let server_url = format!("{scheme}://{client_host}");
    let kubeconfig_path = data_dir.join("kubeconfig");
    let config = match &security {
        None => kubeconfig(&server_url, None),
        Some(s) => s.kubeconfig(&server_url),
    };
    crate::tls::write_private(&kubeconfig_path, &config).map_err(&full)?;

    // The API server's own watches and caches (authentication's); the controllers get fresh
    // ones each leadership term (serve_leading.rs).
    let informers = kgc_runtime::informer::Informers::new(InProcess::new(store.clone()));
    // The process's one registry: the API server, the controllers and collectors, and
    // `/metrics` on the API server, which encodes it.
    let registry = Registry::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut api = ApiServer::new(store.clone(), client_host.clone(), stop_rx.clone())
        .with_metrics(registry.clone())
        .with_inflight_limits(
            args.max_requests_inflight,
            args.max_mutating_requests_inflight,
        )
        .with_service_ranges(args.service_cluster_ip_range, args.service_node_port_range);
    match (&args.audit_log_path, &args.audit_policy_file) {
        (Some(path), Some(policy)) => {
            let rotation = kgc_apiserver::audit::Rotation {
                max_size_mb: args.audit_log_maxsize,
                max_backups: args.audit_log_maxbackup,
                max_age_days: args.audit_log_maxage,
            };
            api = api.with_audit(kgc_apiserver::audit::AuditLog::open(
                policy, path, rotation,
            )?);
        }
        (Some(_), None) => {
            tracing::warn!("--audit-log-path without --audit-policy-file: nothing is audited")
        }
        (None, Some(_)) => {
            tracing::warn!("--audit-policy-file without --audit-log-path: nothing is written")
        }
        (None, None) => {}
    }
    let admission_off = |p: &str| args.disable_admission_plugins.iter().any(|d| d == p);
    if admission_off(kgc_apiserver::owner_references::PLUGIN) {
        api = api.without_owner_references_enforcement();
    }
    for plugin in &args.disable_admission_plugins {
        api = api.without_storage_admission_plugin(plugin);
    }
    if admission_off(kgc_apiserver::serviceaccount_admission::PLUGIN) {
        api = api.without_service_account_admission();
    }
    if admission_off(kgc_apiserver::resourcequota_admission::PLUGIN) {
        api = api.without_resource_quota_admission();
    }
    // The collectors' decision history, served on `/debug/gc/decisions`.
    let decisions = kgc_runtime::decisions::Decisions::default();
    api = api.with_decisions(decisions.clone());
    // The collector of the current leadership term, if this replica leads.
    let graph: crate::serve_leading::GraphSlot = Arc::default();
    let gc = (!disabled.iter().any(|d| d == "gc")).then(|| {
        let g = Arc::clone(&graph);
        api = api.clone().with_graph(Arc::new(move |uid, json| {
            let gc = g.read().unwrap_or_else(|p| p.into_inner()).clone()?;
            Some(if json {
                gc.dump_json(uid).to_string()
            } else {
                gc.dump_dot(uid)
            })
        }));
        let config = GcConfig {
            workers: args.gc_workers,
            resync: args.gc_resync,
            clock: args.lifecycle.clock(),
            decisions: decisions.clone(),
            ..GcConfig::default()
        };
        (config, kgc_gc::Metrics::new(&registry))
    });
    // Provisioned volumes live in the data directory unless --pv-host-path-root says where;
    // the `pv` collector's deleter is confined to the same root.
    let lifecycle_args = args
        .lifecycle
        .with_default_volumes_root(data_dir.join("volumes"));
    let security_tasks = match &security {
        Some(s) => {
            let (secured, tasks) = s.secure(api, &store, &informers).await?;
            api = secured;
            tasks
        }
        None => Vec::new(),
    };
    let base = crate::serve_leading::Base {
        store: store.clone(),
        client: api.loopback_client(),
        clock: args.lifecycle.clock(),
        queues: registry.queues(),
        // What verifies this server; a plain-HTTP server has none to publish.
        root_ca: security.as_ref().map(|s| s.root_ca().into()),
        decisions,
        disabled: disabled.clone(),
    };
    // Upstream's identity is `hostname_uuid`; a replica is named by its address instead, as
    // several replicas share one machine.
    let identity = format!("{local}_{}", uuid::Uuid::new_v4());
    let election = args
        .election
        .leader_elect
        .then_some((&args.election, identity.as_str()));
    use crate::serve_leading::{CONTROLLER_MANAGER, NAMESPACE, SCHEDULER};
    let leases = [CONTROLLER_MANAGER, SCHEDULER].map(|l| format!("{NAMESPACE}/{l}"));
    let mut leader_metrics =
        LeaderMetrics::register_each(&registry, &[&leases[0], &leases[1]]).into_iter();
    let (kcm_metrics, scheduler_metrics) = (
        leader_metrics.next().unwrap_or_default(),
        leader_metrics.next().unwrap_or_default(),
    );
    // On SQLite the data directory admits one server: a lease holder found at start is this
    // server's previous run.
    let sole_candidate = datastore.is_none();
    let controller_manager = crate::serve_leading::ControllerManager {
        base: base.clone(),
        gc,
        graph,
        lifecycle: lifecycle_args.clone(),
        lifecycle_metrics: Arc::new(kgc_lifecycle::Metrics::new(&registry)),
        nodes,
        kubelet,
        kubelet_metrics: kgc_kubelet::Metrics::register(&registry),
    };
    let mut leading = vec![crate::serve_leading::spawn(
        controller_manager,
        election,
        &base.client,
        CONTROLLER_MANAGER,
        sole_candidate,
        kcm_metrics,
        stop_rx.clone(),
    )];
    if !disabled.iter().any(|d| d == kgc_scheduler::NAME) {
        leading.push(crate::serve_leading::spawn(
            crate::serve_leading::Scheduler(base.clone()),
            election,
            &base.client,
            SCHEDULER,
            sole_candidate,
            scheduler_metrics,
            stop_rx.clone(),
        ));
    }
    let app = api.router();
    tracing::info!(listen = %local, kubeconfig = %kubeconfig_path.display(), %identity, leader_elect = args.election.leader_elect, "serving");
    let signalled = crate::signals::shutdown()?;
    println!("kgc serve: listening on {server_url}");
    println!("export KUBECONFIG={}", kubeconfig_path.display());
    let stopping = async move {
        signalled.await;
        tracing::info!("shutting down");
        // Ends open watches so that connections drain.
        let _ = stop_tx.send(true);
    };
    match &security {
        None => axum::serve(listener, app)
            .with_graceful_shutdown(stopping)
            .await
            .context("serving HTTP")?,
        Some(s) => axum::serve(
            s.listener(listener)?,
            app.into_make_service_with_connect_info::<kgc_apiserver::tls::Peer>(),
        )
        .with_graceful_shutdown(stopping)
        .await
        .context("serving HTTPS")?,
    }
    for t in security_tasks {
        t.abort();
    }
    // Each term's controllers stop and the leases are released (bounded by the renew
    // deadline) before the store closes, so that another replica takes over at once.
    for task in leading {
        let _ = task.await;
    }
    store.close();
    tracing::info!("stopped; every acknowledged write is on disk");
    Ok(())
}
