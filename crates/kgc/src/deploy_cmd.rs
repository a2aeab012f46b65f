//! `kgc apply`, `kgc diff`, `kgc prune`, `kgc plan`, `kgc delete`: deploy a set of manifests
//! and garbage-collect what the source no longer has (crate `kgc-prune`).
//!
//! Exit codes, as kubectl's, so that `kgc apply … && next` and `set -e` scripts go on after a
//! good deploy: 0 = done, whether or not something changed; 1 = error (nothing written when the
//! error is in the input, a guard or ownership); 2 = something changed (or would), only with
//! `--exit-code` (as `git diff --exit-code`); 3 = done, but something is undetermined (a kind
//! that could not be listed) or, with `--wait`, a deleted object is still held by finalizers
//! or an applied one is not ready (kstatus's Current; Failed ends the wait early) at the
//! deadline. `kgc diff` is `kubectl diff`'s: 0 no differences, 1 differences, 2 error
//! (3 undetermined).
//!
//! Without `--wait` a DELETE the server accepted is "deleted" and exits 0, as
//! `kubectl delete --wait=false` counts it: the run ends at the acceptance, before any
//! finalizer (a PVC's protection, the GC's `foregroundDeletion`, a controller's cleanup) has
//! had its chance, so "held" could not be told from "about to go", and exiting 3 after every
//! delete of such an object would make 3 mean nothing. Who needs to know asks with `--wait`.
//!
//! An empty source is an error unless `--allow-empty` says so: an empty render (a failed
//! template, a wrong path) must not delete the whole set. `kgc delete` is the way to delete
//! it on purpose; it deletes the set's parent last, after every member and the namespace
//! that held it, and only when nothing of the set was kept, so a second run finds what is
//! left.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use kgc_prune::adopt::{Adopt, Tool};
use kgc_prune::desired::{self, ObjectKey};
use kgc_prune::executor::{
    self, Action, Adoption, ApiServer, DeleteOutcome, Execution, Options, Prepared, Progress,
    Report,
};
use kgc_prune::ownership::{self, Identity};
use kgc_prune::plan::{Filters, Guards};
use kgc_prune::source::{self, Input, SourceObject};
use serde_json::Value;

/// Exit code: something changed (or would change), with `--exit-code`.
pub const EXIT_CHANGED: i32 = 2;
/// `kgc diff`'s exit code when there are differences (`kubectl diff`'s).
pub const EXIT_DIFFERENT: i32 = 1;
/// `kgc diff`'s exit code on an error (`kubectl diff`: greater than 1).
pub const EXIT_DIFF_ERROR: u8 = 2;
/// Exit code: finished, but something is undetermined or still being deleted.
pub const EXIT_INCOMPLETE: i32 = 3;

/// Which set, from where, against which cluster.
#[derive(clap::Args, Clone, Default)]
pub struct Target {
    /// Files and directories of YAML/JSON manifests, directories with their subdirectories
    /// (each file is a component) [default: the project file's components directory].
    pub(crate) paths: Vec<PathBuf>,
    /// A file or directory of manifests, as kubectl's `-f` (repeatable; `-` reads standard
    /// input; a directory's subdirectories only with `-R`).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub(crate) filenames: Vec<PathBuf>,
    /// Read the subdirectories of `-f` directories too.
    #[arg(short = 'R', long)]
    pub(crate) recursive: bool,
    /// The project file (app, environments, components directory) [default: ./kgc.yaml if it
    /// exists].
    #[arg(long)]
    pub(crate) project: Option<PathBuf>,
    /// The application name [default: the project's `app`].
    #[arg(long)]
    pub(crate) app: Option<String>,
    /// The environment [default: the project's only environment].
    #[arg(long)]
    pub(crate) env: Option<String>,
    /// Keep this run's objects apart from untagged runs and other tags (branch deploys).
    #[arg(long)]
    pub(crate) tag: Option<String>,
    /// The kubeconfig [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: the environment's, else the current context].
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// The namespace of objects that name none, and of the set's parent [default: the
    /// environment's, else `default`].
    #[arg(short = 'n', long)]
    pub(crate) namespace: Option<String>,
    /// Only prune objects of these components (the scope is still the whole source).
    #[arg(long = "component")]
    pub(crate) components: Vec<String>,
    /// Only prune objects of these kinds (`Kind` or `Kind.group`).
    #[arg(long = "kind")]
    pub(crate) kinds: Vec<String>,
    /// Take over objects that another app, environment or tag owns.
    #[arg(long)]
    pub(crate) force_ownership: bool,
    /// Run the generators of a `.flux.yaml` at or above a directory and read their output
    /// instead of its files (Flux v1's manifest generation); without it such a directory is
    /// refused.
    #[arg(long)]
    pub(crate) manifest_generation: bool,
    #[command(flatten)]
    pub(crate) adopt: AdoptFlags,
    #[command(flatten)]
    pub(crate) rate_limit: crate::rate_limit::Flags,
    #[command(flatten)]
    pub(crate) qbec: crate::qbec_app::QbecFlags,
}

/// Moving in from another deploy tool (crate `kgc-prune`, module `adopt`).
#[derive(clap::Args, Clone, Default)]
pub struct AdoptFlags {
    /// Take into the set the objects this tool applied for the app and environment: those the
    /// source has become the set's, the others are pruned (qbec, flux, flux1, applyset, kapp).
    #[arg(long, value_name = "TOOL")]
    pub(crate) adopt: Option<Tool>,
    /// The old tool's name of the set: qbec `APP[/ENV]` [default: --app, --env]; flux
    /// `NAMESPACE/NAME` of the Kustomization; flux1 `URL#BRANCH[#PATH,...]` (fluxd's git
    /// flags); applyset `[RESOURCE[.GROUP]/]NAME` (kubectl's --applyset, in -n); kapp
    /// `[NAMESPACE/]APP` [default: -n, --app].
    #[arg(long, value_name = "NAME", requires = "adopt")]
    pub(crate) adopt_name: Option<String>,
}

impl AdoptFlags {
    fn adopt(&self) -> Option<Adopt> {
        self.adopt.map(|tool| Adopt {
            tool,
            name: self.adopt_name.clone(),
        })
    }
}

/// Safety limits on deletion.
#[derive(clap::Args, Clone)]
pub struct Limits {
    /// Refuse to delete more than N objects (checked before anything is written).
    #[arg(long)]
    pub(crate) max_deletes: Option<usize>,
    /// Allow an empty source to delete every object of the set.
    #[arg(long)]
    pub(crate) allow_empty: bool,
    /// Wait until every deleted object is gone (same uid), reporting the finalizers that hold
    /// those that are not, and every applied object is ready (kstatus's rules: rolled out,
    /// complete, bound, established), reporting why those that are not are not (exit 3).
    #[arg(long)]
    pub(crate) wait: bool,
    /// How long `--wait` waits.
    #[arg(long, default_value = "5m", value_parser = crate::parse_duration)]
    pub(crate) timeout: Duration,
    /// Exit with 2 when something changed (or, dry, would change), as `git diff --exit-code`.
    #[arg(long)]
    pub(crate) exit_code: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
}

#[derive(clap::Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    limits: Limits,
    /// Prune objects the source no longer has (after every apply succeeded).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    prune: bool,
    /// Server-side dry run: print what would change, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Execute exactly this reviewed plan (`kgc plan -o FILE`), refusing if any object it
    /// touches changed since.
    #[arg(long, conflicts_with_all = ["paths", "filenames", "dry_run"])]
    plan: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Format,
}

/// The arguments of the commands that only delete: `kgc prune` and `kgc delete`.
#[derive(clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    limits: Limits,
    /// List what would be deleted, delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Format,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    #[command(flatten)]
    target: Target,
}

#[derive(clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    limits: Limits,
    /// Write the plan to this file instead of standard output (terraform's `plan -out`).
    #[arg(long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// The plan's format (`kgc apply --plan` reads either).
    #[arg(short = 'o', long = "output", value_enum, default_value = "json")]
    output: PlanFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    Json,
    Yaml,
}

/// `kgc.yaml`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Project {
    app: Option<String>,
    /// The components directory, relative to the project file.
    components: Option<PathBuf>,
    #[serde(default)]
    environments: BTreeMap<String, Environment>,
    /// `kgc sync`'s source for every environment.
    #[serde(default)]
    sync: SyncSource,
}

/// `kgc sync`'s git source in the project file: at the top, and per environment (an
/// environment's fields win over the top's, flags over both), so one file names the
/// repository once and each environment its branch or paths.
#[derive(serde::Deserialize, Default, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SyncSource {
    pub(crate) git: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) tag: Option<String>,
    pub(crate) commit: Option<String>,
    #[serde(default)]
    pub(crate) paths: Vec<String>,
    pub(crate) interval: Option<String>,
}

impl SyncSource {
    /// `self`'s fields where set, else `base`'s; the reference (branch, tag or commit) is
    /// taken whole, so an environment's `tag` is not mixed with the top's `branch`.
    pub(crate) fn over(self, base: &SyncSource) -> SyncSource {
        let has_reference = self.branch.is_some() || self.tag.is_some() || self.commit.is_some();
        let (branch, tag, commit) = if has_reference {
            (self.branch, self.tag, self.commit)
        } else {
            (base.branch.clone(), base.tag.clone(), base.commit.clone())
        };
        SyncSource {
            git: self.git.or_else(|| base.git.clone()),
            branch,
            tag,
            commit,
            paths: if self.paths.is_empty() {
                base.paths.clone()
            } else {
                self.paths
            },
            interval: self.interval.or_else(|| base.interval.clone()),
        }
    }
}

#[derive(serde::Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct Environment {
    context: Option<String>,
    /// A qbec environment's API server, when it names no context (see [`client`]).
    #[serde(skip)]
    server: Option<String>,
    namespace: Option<String>,
    #[serde(default)]
    sync: SyncSource,
}

/// A resolved target.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) identity: Identity,
    pub(crate) namespace: String,
    pub(crate) inputs: Vec<Input>,
    /// Where the context came from, for errors: the project file and environment.
    pub(crate) context_origin: Option<String>,
    pub(crate) kubeconfig: Option<PathBuf>,
    pub(crate) context: Option<String>,
    /// The API server whose kubeconfig context to use when there is no `context`.
    pub(crate) server: Option<String>,
    pub(crate) filters: Filters,
    pub(crate) force_ownership: bool,
    pub(crate) adopt: Option<Adopt>,
    pub(crate) manifest_generation: bool,
    pub(crate) throttle: kgc_client::throttle::Throttle,
    /// `kgc sync`'s source from the project file (the environment's over the top's).
    pub(crate) sync: SyncSource,
    /// A qbec app's environment, rendered instead of reading `inputs`.
    pub(crate) qbec: Option<crate::qbec_app::Source>,
}

/// The project file (`--project`, else `./kgc.yaml` when it exists) and its path.
fn load_project(t: &Target) -> anyhow::Result<(Option<PathBuf>, Project)> {
    let implicit = t.project.is_none();
    let mut project_path = t.project.clone().or_else(|| {
        Path::new("kgc.yaml")
            .exists()
            .then(|| PathBuf::from("kgc.yaml"))
    });
    let mut project: Project = match &project_path {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_saphyr::from_str(&text).map_err(|e| source::yaml_error(p, 1, &e))?
        }
        None => Project::default(),
    };
    if let Some(p) = project_path.as_deref().filter(|_| implicit) {
        // A kgc.yaml found in the current directory is said, never silent; one for another
        // app than `--app` names is not this run's and is left alone.
        match (&t.app, &project.app) {
            (Some(flag), Some(file)) if flag != file => {
                eprintln!(
                    "kgc: ignoring {}: it is app {file:?}, not {flag:?}",
                    p.display()
                );
                project = Project::default();
                project_path = None;
            }
            _ => eprintln!("kgc: using the project file {}", p.display()),
        }
    }
    Ok((project_path, project))
}

/// The inputs the arguments name, else (`need_paths`) the project's components directory.
fn inputs(
    t: &Target,
    project: &Project,
    project_path: Option<&Path>,
    need_paths: bool,
) -> anyhow::Result<Vec<Input>> {
    let mut inputs: Vec<Input> = t
        .paths
        .iter()
        .map(|p| Input::Path {
            path: p.clone(),
            recursive: true,
        })
        .chain(t.filenames.iter().map(|p| match p.to_str() {
            Some("-") => Input::Stdin,
            _ => Input::Path {
                path: p.clone(),
                recursive: t.recursive,
            },
        }))
        .collect();
    if inputs.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        anyhow::bail!("-f -: standard input can be read once");
    }
    if inputs.is_empty() && need_paths {
        let dir = project
            .components
            .clone()
            .context("no manifests: pass files or directories, or set `components` in kgc.yaml")?;
        let base = project_path
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        inputs.push(Input::Path {
            path: base.join(dir),
            recursive: true,
        });
    }
    Ok(inputs)
}

pub(crate) fn resolve(t: &Target, need_paths: bool) -> anyhow::Result<Resolved> {
    let (mut project_path, mut project) = load_project(t)?;
    // A qbec app stands in for the project file (qbec_app.rs).
    let has_paths = !t.paths.is_empty() || !t.filenames.is_empty();
    let qbec = crate::qbec_app::load(
        &t.qbec,
        t.project.is_some(),
        project_path.is_some(),
        has_paths,
    )?;
    if let Some(q) = &qbec {
        project = Project {
            app: Some(q.app.name().to_owned()),
            ..Project::default()
        };
        project_path = Some(q.app.file().to_owned());
        for e in q.environments(t.env.as_deref(), t.tag.as_deref())? {
            let env = Environment {
                context: e.context,
                server: e.server,
                namespace: Some(e.namespace),
                sync: SyncSource::default(),
            };
            project.environments.insert(e.name, env);
        }
    }
    let app = t
        .app
        .clone()
        .or(project.app.clone())
        .context("no app: pass --app or set `app` in kgc.yaml")?;
    let env_name = match (&t.env, project.environments.len()) {
        (Some(e), _) => e.clone(),
        (None, 1) => project
            .environments
            .keys()
            .next()
            .cloned()
            .unwrap_or_default(),
        (None, 0) => anyhow::bail!("no environment: pass --env"),
        (None, _) => anyhow::bail!(
            "several environments in the project ({}): pass --env",
            project
                .environments
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if !project.environments.is_empty() && !project.environments.contains_key(&env_name) {
        anyhow::bail!(
            "environment {env_name:?} is not in the project file (it has {})",
            project
                .environments
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let env = project
        .environments
        .get(&env_name)
        .cloned()
        .unwrap_or_default();
    let identity = Identity::new(&app, &env_name, t.tag.as_deref())?;
    let qbec = qbec.map(|q| q.into_source(&env_name, t.tag.as_deref()));
    let inputs = inputs(
        t,
        &project,
        project_path.as_deref(),
        need_paths && qbec.is_none(),
    )?;
    let names_cluster = env.context.is_some() || env.server.is_some();
    let context_origin = match (&t.context, names_cluster, &project_path) {
        (None, true, Some(p)) => Some(format!("{} (environment {env_name})", p.display())),
        _ => None,
    };
    Ok(Resolved {
        identity,
        namespace: t
            .namespace
            .clone()
            .or(env.namespace)
            .unwrap_or_else(|| "default".to_owned()),
        inputs,
        context_origin,
        kubeconfig: t.kubeconfig.clone(),
        server: t.context.is_none().then_some(env.server).flatten(),
        context: t.context.clone().or(env.context),
        filters: Filters {
            components: t.components.clone(),
            kinds: t.kinds.clone(),
        },
        force_ownership: t.force_ownership,
        adopt: t.adopt.adopt(),
        manifest_generation: t.manifest_generation,
        throttle: t.rate_limit.throttle(crate::rate_limit::DEPLOY),
        sync: env.sync.over(&project.sync),
        qbec,
    })
}

/// The target's client and the server's URL (for messages).
pub(crate) async fn client(r: &Resolved) -> anyhow::Result<(kube::Client, String)> {
    let found;
    let context = match (&r.context, &r.server) {
        (None, Some(server)) => {
            let origin = r.context_origin.as_deref().unwrap_or("the environment");
            found = crate::qbec_app::context_for_server(r.kubeconfig.as_deref(), server)
                .with_context(|| format!("the server {server} named by {origin}"))?;
            Some(found.as_str())
        }
        (context, _) => context.as_deref(),
    };
    let config = crate::controller::kube_config(r.kubeconfig.as_deref(), context)
        .await
        .with_context(|| match (&r.context, &r.context_origin) {
            (Some(c), Some(origin)) => format!("the context {c:?} named by {origin}"),
            _ => "the kubeconfig".to_owned(),
        })?;
    let server = config.cluster_url.to_string();
    Ok((crate::rate_limit::client(config, r.throttle, None)?, server))
}

async fn connect(r: &Resolved) -> anyhow::Result<ApiServer> {
    let (client, server) = client(r).await?;
    ApiServer::connect(client)
        .await
        .with_context(|| format!("connecting to {server}"))
}

pub(crate) fn options(r: &Resolved, l: &Limits) -> Options {
    Options {
        filters: r.filters.clone(),
        guards: Guards {
            max_deletes: l.max_deletes,
            allow_empty: l.allow_empty,
        },
        force_ownership: r.force_ownership,
        adopt: r.adopt.clone(),
    }
}

/// The one reader of a target's sources: what `kgc build` prints is what `kgc apply`, `diff`,
/// `prune`, `plan` and `delete` read, from the same arguments.
pub(crate) fn read_sources(r: &Resolved) -> anyhow::Result<Vec<SourceObject>> {
    if let Some(q) = &r.qbec {
        return q.render();
    }
    let options = source::Options {
        manifest_generation: r.manifest_generation,
        ..source::Options::default()
    };
    Ok(source::load(&r.inputs, &options)?)
}

#[derive(clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    target: Target,
    /// Output format: a YAML stream as `kubectl kustomize` prints it, or a JSON `List`.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: BuildFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BuildFormat {
    Yaml,
    Json,
}

/// `kgc build`: what `kgc apply` would apply from the same arguments, printed. Without `--app`
/// or `--env` it is the source as rendered, nothing added (a kustomization prints as
/// `kubectl kustomize` prints it); with them, stamped as the set stamps it (its labels and
/// annotations, the namespace defaulted), the kinds judged by the built-in catalog, since
/// `kgc build` reads no cluster.
pub async fn build(args: BuildArgs) -> anyhow::Result<()> {
    let t = &args.target;
    let objects: Vec<Value> = if t.app.is_some() || t.env.is_some() {
        let r = resolve(t, true)?;
        let sources = read_sources(&r)?;
        let set_id =
            ownership::applyset_id(&r.identity.parent_name(), &r.namespace, "ConfigMap", "");
        desired::build(
            sources,
            &r.identity,
            &set_id,
            &r.namespace,
            &desired::Offline::default(),
        )?
        .into_iter()
        .map(|d| d.object)
        .collect()
    } else {
        let (project_path, project) = load_project(t)?;
        let inputs = inputs(t, &project, project_path.as_deref(), true)?;
        let options = source::Options {
            manifest_generation: t.manifest_generation,
            ..source::Options::default()
        };
        source::load(&inputs, &options)?
            .into_iter()
            .map(|s| s.object)
            .collect()
    };
    let text = match args.output {
        BuildFormat::Yaml => kgc_kustomize::yaml::to_string(&objects),
        BuildFormat::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
            format!("{}\n", serde_json::to_string_pretty(&list)?)
        }
    };
    match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Reads the sources and plans against the cluster: everything before the first write.
async fn prepare(r: &Resolved, l: &Limits) -> anyhow::Result<(ApiServer, Prepared)> {
    let sources = read_sources(r)?;
    let cluster = connect(r).await?;
    let prepared =
        executor::prepare(&cluster, sources, &r.identity, &r.namespace, &options(r, l)).await?;
    Ok((cluster, prepared))
}

/// An indicatif bar on stderr (hidden when stderr is not a terminal).
pub(crate) struct Bar(indicatif::ProgressBar);

impl Bar {
    pub(crate) fn new() -> Self {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg:>7} [{bar:40}] {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Bar(bar)
    }
}

impl Progress for Bar {
    fn phase(&self, name: &str, total: usize) {
        self.0.set_message(name.to_owned());
        self.0.set_length(total as u64);
        self.0.set_position(0);
    }
    fn step(&self) {
        self.0.inc(1);
    }
    fn waiting(&self, ready: usize, by_kind: &str) {
        self.0.set_position(ready as u64);
        self.0.set_message(format!("{by_kind} ready"));
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn exit_code(report: &Report, on_change: bool) -> i32 {
    if report.failed() {
        1
    } else if report.incomplete() {
        EXIT_INCOMPLETE
    } else if report.changed() && on_change {
        EXIT_CHANGED
    } else {
        0
    }
}

pub(crate) fn print_report(report: &Report, format: Format) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(report)?)?,
        Format::Yaml => write!(
            out,
            "{}",
            serde_saphyr::to_string(&serde_json::to_value(report)?)?
        )?,
        Format::Table => {
            let dry = if report.dry_run { " (dry run)" } else { "" };
            let mut rows: Vec<[String; 3]> = Vec::new();
            for (key, action) in &report.applied {
                let a = match action {
                    Action::Create => "created",
                    Action::Update => "configured",
                    Action::Unchanged => "unchanged",
                };
                rows.push([a.to_owned(), key.to_string(), String::new()]);
            }
            for (key, outcome) in &report.deleted {
                let (a, note) = match outcome {
                    DeleteOutcome::Deleted => ("deleted", String::new()),
                    DeleteOutcome::Gone => ("deleted", "gone".to_owned()),
                    DeleteOutcome::WouldDelete => ("delete", String::new()),
                    DeleteOutcome::NotFound => ("gone", "already deleted".to_owned()),
                    DeleteOutcome::Changed => {
                        ("kept", "replaced or changed since it was listed".to_owned())
                    }
                    DeleteOutcome::Waiting { finalizers } => (
                        "deleting",
                        format!("held by finalizers {}", finalizers.join(", ")),
                    ),
                    DeleteOutcome::Kept { reason } => ("kept", reason.clone()),
                    DeleteOutcome::Failed { error } => ("failed", error.clone()),
                };
                rows.push([a.to_owned(), key.to_string(), note]);
            }
            for k in &report.kept {
                rows.push(["kept".to_owned(), k.key.to_string(), k.reason.clone()]);
            }
            for (key, from) in report.adoption.iter().flat_map(adopted) {
                rows.push(["adopted".to_owned(), key.to_string(), from]);
            }
            for n in &report.not_ready {
                rows.push([
                    "not ready".to_owned(),
                    n.key.to_string(),
                    format!("{}: {}", n.status, n.message),
                ]);
            }
            for u in &report.undetermined {
                let where_ = u.namespace.as_deref().unwrap_or("all namespaces");
                rows.push([
                    "undetermined".to_owned(),
                    format!("{} in {where_}", u.gk),
                    u.reason.clone(),
                ]);
            }
            let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(6);
            let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0).max(6);
            if !rows.is_empty() {
                writeln!(out, "{:w0$}  {:w1$}  NOTE", "ACTION", "OBJECT")?;
            }
            for r in &rows {
                writeln!(out, "{:w0$}  {:w1$}  {}", r[0], r[1], r[2])?;
            }
            for e in &report.apply_errors {
                writeln!(out, "error: {e}")?;
            }
            if let Some(why) = &report.prune_skipped {
                writeln!(out, "prune skipped: {why}")?;
            }
            let count = |a: Action| report.applied.iter().filter(|(_, x)| *x == a).count();
            let deleted = report
                .deleted
                .iter()
                .filter(|(_, o)| {
                    matches!(
                        o,
                        DeleteOutcome::Deleted | DeleteOutcome::Gone | DeleteOutcome::WouldDelete
                    )
                })
                .count();
            writeln!(
                out,
                "{} created, {} configured, {} unchanged, {deleted} deleted, {} kept, {} undetermined{dry}",
                count(Action::Create),
                count(Action::Update),
                count(Action::Unchanged),
                report.kept_count(),
                report.undetermined.len(),
            )?;
            if !report.not_ready.is_empty() {
                writeln!(out, "{} not ready", report.not_ready.len())?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The adopted objects, each with where it came from.
fn adopted(a: &Adoption) -> impl Iterator<Item = (&ObjectKey, String)> {
    a.objects.iter().map(|k| (k, format!("from {}", a.from)))
}

fn finish(report: &Report, format: Format, limits: &Limits) -> anyhow::Result<()> {
    print_report(report, format)?;
    match exit_code(report, limits.exit_code) {
        0 => Ok(()),
        1 => anyhow::bail!("the run did not complete (see above)"),
        code => std::process::exit(code),
    }
}

pub async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let r = resolve(&args.target, args.plan.is_none())?;
    let wait = args.limits.wait.then_some(args.limits.timeout);
    let (cluster, prepared, exact) = match &args.plan {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading the plan {}", file.display()))?;
            // `kgc plan` writes JSON, or YAML with `-o yaml`.
            let reviewed: Prepared = match serde_json::from_str(&text) {
                Ok(p) => p,
                Err(_) => serde_saphyr::from_str(&text)
                    .map_err(|e| source::yaml_error(file, 1, &e))
                    .with_context(|| format!("{} is not a kgc plan", file.display()))?,
            };
            if reviewed.identity != r.identity || reviewed.namespace != r.namespace {
                anyhow::bail!(
                    "the plan is for {} in namespace {}, not {} in {}",
                    reviewed.identity.describe(),
                    reviewed.namespace,
                    r.identity.describe(),
                    r.namespace
                );
            }
            let cluster = connect(&r).await?;
            let sources = reviewed_sources(&reviewed);
            let mut opts = options(&r, &args.limits);
            opts.guards = Guards {
                max_deletes: None,
                allow_empty: true,
            };
            opts.force_ownership = true;
            opts.adopt = reviewed.adoption.as_ref().map(|a| a.adopt.clone());
            let fresh =
                executor::prepare(&cluster, sources, &r.identity, &r.namespace, &opts).await?;
            executor::check_drift(&reviewed, &fresh)?;
            (cluster, reviewed, true)
        }
        None => {
            let (c, p) = prepare(&r, &args.limits).await?;
            (c, p, false)
        }
    };
    let bar = Bar::new();
    let report = executor::execute(
        &cluster,
        &prepared,
        Execution {
            apply: true,
            prune: args.prune,
            dry_run: args.dry_run,
            wait,
            exact,
        },
        &bar,
    )
    .await?;
    drop(bar);
    finish(&report, args.output, &args.limits)
}

/// The reviewed plan's desired objects as sources again (stamping is idempotent).
fn reviewed_sources(reviewed: &Prepared) -> Vec<SourceObject> {
    reviewed
        .changes
        .iter()
        .map(|c| {
            let mut object = c.desired.object.clone();
            if let Some(a) = object
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(kgc_prune::ownership::ANNOTATION_APPLIED_HASH);
            }
            let (file, line) = c
                .desired
                .origin
                .rsplit_once(':')
                .map_or((c.desired.origin.as_str(), 0), |(f, l)| {
                    (f, l.parse().unwrap_or(0))
                });
            SourceObject {
                component: c.desired.component.clone(),
                file: file.into(),
                line,
                object,
            }
        })
        .collect()
}

/// Prunes without applying (`kgc prune`, `kgc delete`).
async fn prune_only(
    cluster: &ApiServer,
    prepared: &Prepared,
    limits: &Limits,
    dry_run: bool,
) -> anyhow::Result<Report> {
    let bar = Bar::new();
    let report = executor::execute(
        cluster,
        prepared,
        Execution {
            apply: false,
            prune: true,
            dry_run,
            wait: limits.wait.then_some(limits.timeout),
            exact: false,
        },
        &bar,
    )
    .await?;
    Ok(report)
}

pub async fn prune(args: PruneArgs) -> anyhow::Result<()> {
    let r = resolve(&args.target, true)?;
    let (cluster, prepared) = prepare(&r, &args.limits).await?;
    let report = prune_only(&cluster, &prepared, &args.limits, args.dry_run).await?;
    finish(&report, args.output, &args.limits)
}

pub async fn plan(args: PlanArgs) -> anyhow::Result<()> {
    let r = resolve(&args.target, true)?;
    let (_, prepared) = prepare(&r, &args.limits).await?;
    let text = match args.output {
        PlanFormat::Json => serde_json::to_string_pretty(&prepared)? + "\n",
        PlanFormat::Yaml => serde_saphyr::to_string(&serde_json::to_value(&prepared)?)?,
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    let changes = prepared
        .changes
        .iter()
        .filter(|c| c.action != Action::Unchanged)
        .count();
    eprintln!(
        "plan: {changes} to apply, {} unchanged, {} to delete, {} kept, {} undetermined",
        prepared.changes.len() - changes,
        prepared.prune.deletes.len(),
        prepared.prune.kept.len(),
        prepared.prune.undetermined.len()
    );
    if args.limits.exit_code && (changes > 0 || !prepared.prune.deletes.is_empty()) {
        std::process::exit(EXIT_CHANGED);
    }
    Ok(())
}

pub async fn delete(args: PruneArgs) -> anyhow::Result<()> {
    let r = resolve(&args.target, false)?;
    let cluster = connect(&r).await?;
    let prepared = executor::prepare_delete(
        &cluster,
        &r.identity,
        &r.namespace,
        &options(&r, &args.limits),
    )
    .await?;
    let mut report = prune_only(&cluster, &prepared, &args.limits, args.dry_run).await?;
    let parent = prepared.parent_key();
    if prepared.previous.is_none() {
        eprintln!(
            "kgc: nothing to delete: there is no set {} in namespace {} (no {parent})",
            r.identity.describe(),
            r.namespace
        );
    } else if !report.failed() && report.kept_count() == 0 && report.undetermined.is_empty() {
        let outcome = executor::delete_parent(&cluster, &prepared, &report, args.dry_run).await?;
        report.deleted.push((parent, outcome));
    } else {
        // The inventory stays so that the next `kgc delete` finds what is left.
        eprintln!("kgc: keeping {parent}: the set still has members (see above)");
    }
    finish(&report, args.output, &args.limits)
}

/// Strips what the server maintains, for a readable diff.
fn diffable(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
        ] {
            m.remove(f);
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    v
}

/// kubectl diff's `Masker` (`staging/src/k8s.io/kubectl/pkg/cmd/diff/diff.go`): a Secret's
/// `data` and `stringData` values never reach the terminal; a value that changes shows as
/// `*** (before)` and `*** (after)`, any other as `***`. Objects of other kinds are untouched.
fn mask_secret(key: &ObjectKey, mut before: Option<&mut Value>, mut after: Option<&mut Value>) {
    // By the key, not the objects: listed objects carry no kind.
    if key.gk.kind != "Secret" || !key.gk.group.is_empty() {
        return;
    }
    for field in ["data", "stringData"] {
        let old = before.as_deref().and_then(|v| v.get(field)).cloned();
        let new = after.as_deref().and_then(|v| v.get(field)).cloned();
        let mask = |own: &mut Value, other: Option<&Value>, marker: &str| {
            if let Some(map) = own.get_mut(field).and_then(Value::as_object_mut) {
                for (k, v) in map.iter_mut() {
                    let changed = other
                        .and_then(|o| o.get(k))
                        .is_some_and(|theirs| theirs != v);
                    *v = Value::from(if changed { marker } else { "***" });
                }
            }
        };
        if let Some(b) = before.as_deref_mut() {
            mask(b, new.as_ref(), "*** (before)");
        }
        if let Some(a) = after.as_deref_mut() {
            mask(a, old.as_ref(), "*** (after)");
        }
    }
}

fn yaml(v: &Value) -> String {
    serde_saphyr::to_string(v).unwrap_or_else(|e| format!("# unprintable: {e}\n"))
}

pub async fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let r = resolve(&args.target, true)?;
    let limits = Limits {
        max_deletes: None,
        allow_empty: true,
        wait: false,
        timeout: Duration::ZERO,
        exit_code: false,
    };
    let (cluster, prepared) = prepare(&r, &limits).await?;
    let mut out = std::io::stdout().lock();
    let mut changed = false;
    for c in &prepared.changes {
        if c.action == Action::Unchanged {
            continue;
        }
        changed = true;
        let before = prepared.live.get(&c.desired.key).map(diffable);
        let after = match cluster.dry_run_apply(&c.desired).await {
            Ok(v) => diffable(&v),
            Err(e) => {
                tracing::debug!(
                    "dry run of {} failed ({e}); showing the manifest",
                    c.desired.key
                );
                diffable(&c.desired.object)
            }
        };
        let (mut before, mut after) = (before, after);
        mask_secret(&c.desired.key, before.as_mut(), Some(&mut after));
        let old = before.as_ref().map(yaml).unwrap_or_default();
        let new = yaml(&after);
        let name = c.desired.key.to_string();
        write!(
            out,
            "{}",
            similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .header(&format!("live/{name}"), &format!("source/{name}"))
        )?;
    }
    for d in &prepared.prune.deletes {
        changed = true;
        let old = prepared
            .live
            .get(&d.key)
            .map(|v| {
                let mut v = diffable(v);
                mask_secret(&d.key, Some(&mut v), None);
                yaml(&v)
            })
            .unwrap_or_default();
        let name = d.key.to_string();
        write!(
            out,
            "{}",
            similar::TextDiff::from_lines(old.as_str(), "")
                .unified_diff()
                .header(&format!("live/{name}"), "/dev/null (pruned)")
        )?;
    }
    for k in &prepared.prune.kept {
        writeln!(out, "# kept {}: {}", k.key, k.reason)?;
    }
    for (key, from) in prepared.adoption.iter().flat_map(adopted) {
        let fate = if prepared.prune.deletes.iter().any(|d| d.key == *key) {
            "pruned"
        } else {
            "taken over"
        };
        writeln!(out, "# adopt {key}: {from}, {fate}")?;
    }
    for u in &prepared.prune.undetermined {
        writeln!(
            out,
            "# undetermined {} in {}: {}",
            u.gk,
            u.namespace.as_deref().unwrap_or("all namespaces"),
            u.reason
        )?;
    }
    out.flush()?;
    if !prepared.prune.undetermined.is_empty() {
        std::process::exit(EXIT_INCOMPLETE);
    }
    if changed {
        std::process::exit(EXIT_DIFFERENT);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        target: Target,
    }

    /// The deploy commands' target as the arguments give it.
    pub(crate) fn target(args: &[&str]) -> Target {
        Cli::parse_from(std::iter::once("kgc").chain(args.iter().copied())).target
    }

    #[test]
    fn the_project_file_names_the_sync_source_once_and_each_environment_its_reference() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("kgc.yaml");
        std::fs::write(
            &project,
            "app: shop\nsync: {git: https://git.example/shop.git, paths: [deploy], interval: 5m}\nenvironments:\n  prod: {sync: {tag: v1, paths: [deploy/prod]}}\n  dev: {}\n",
        )
        .unwrap();
        let p = project.to_str().unwrap();
        let prod = resolve(&target(&["--project", p, "--env", "prod"]), false).unwrap();
        assert_eq!(
            prod.sync,
            SyncSource {
                git: Some("https://git.example/shop.git".into()),
                tag: Some("v1".into()),
                paths: vec!["deploy/prod".into()],
                interval: Some("5m".into()),
                ..SyncSource::default()
            }
        );
        let dev = resolve(&target(&["--project", p, "--env", "dev"]), false).unwrap();
        assert_eq!(dev.sync.paths, ["deploy"]);
        assert_eq!(dev.sync.tag, None);
    }

    #[test]
    fn the_project_file_supplies_app_environment_and_components() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("kgc.yaml");
        std::fs::write(
            &project,
            "app: shop\ncomponents: manifests\nenvironments:\n  prod: {context: prod-ctx, namespace: shop}\n  dev: {namespace: shop-dev}\n",
        )
        .unwrap();
        let p = project.to_str().unwrap();
        let r = resolve(&target(&["--project", p, "--env", "prod"]), true).unwrap();
        assert_eq!(r.identity.describe(), "app=shop,env=prod");
        assert_eq!(r.namespace, "shop");
        assert_eq!(r.context.as_deref(), Some("prod-ctx"));
        assert_eq!(
            r.inputs,
            [Input::Path {
                path: dir.path().join("manifests"),
                recursive: true
            }]
        );
        // Flags override the project.
        let r = resolve(
            &target(&["--project", p, "--env", "dev", "-n", "x", "src"]),
            true,
        )
        .unwrap();
        assert_eq!((r.namespace.as_str(), r.context), ("x", None));
        assert_eq!(
            r.inputs,
            [Input::Path {
                path: PathBuf::from("src"),
                recursive: true
            }]
        );
        // kubectl's -f: one level unless -R; `-` is standard input.
        let r = resolve(
            &target(&["--project", p, "--env", "dev", "-f", "a", "-f", "-"]),
            true,
        )
        .unwrap();
        assert_eq!(
            r.inputs,
            [
                Input::Path {
                    path: PathBuf::from("a"),
                    recursive: false
                },
                Input::Stdin
            ]
        );
        let r = resolve(&target(&["--project", p, "--env", "dev", "-Rf", "a"]), true).unwrap();
        assert_eq!(
            r.inputs,
            [Input::Path {
                path: PathBuf::from("a"),
                recursive: true
            }]
        );
        // Several environments need --env; unknown ones are named.
        let err = resolve(&target(&["--project", p]), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("dev, prod"), "{err}");
        let err = resolve(&target(&["--project", p, "--env", "qa"]), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"qa\""), "{err}");
    }

    #[test]
    fn secret_values_are_masked_as_kubectl_diff_masks_them() {
        let key = |kind: &str| ObjectKey {
            gk: kgc_prune::gvk::GroupKind {
                group: String::new(),
                kind: kind.to_owned(),
            },
            namespace: "ns".into(),
            name: "s".into(),
        };
        let mut before = serde_json::json!({
            "data": {"same": "YQ==", "changed": "Yg==", "gone": "Yw=="}});
        let mut after = serde_json::json!({
            "data": {"same": "YQ==", "changed": "ZA==", "new": "ZQ=="}, "stringData": {"s": "x"}});
        mask_secret(&key("Secret"), Some(&mut before), Some(&mut after));
        assert_eq!(
            before["data"],
            serde_json::json!({"same": "***", "changed": "*** (before)", "gone": "***"})
        );
        assert_eq!(
            after["data"],
            serde_json::json!({"same": "***", "changed": "*** (after)", "new": "***"})
        );
        assert_eq!(after["stringData"]["s"], "***");
        // Other kinds are shown as they are.
        let mut cm = serde_json::json!({"data": {"k": "v"}});
        mask_secret(&key("ConfigMap"), Some(&mut cm), None);
        assert_eq!(cm["data"]["k"], "v");
    }

    #[test]
    fn without_a_project_app_and_env_are_required() {
        let err = resolve(&target(&["--project", "/nonexistent/kgc.yaml"]), true)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("kgc.yaml"), "{err}");
        let r = resolve(&target(&["--app", "a", "--env", "e", "dir"]), true).unwrap();
        assert_eq!(r.namespace, "default");
        assert!(resolve(&target(&["--app", "A", "--env", "e"]), true).is_err());
    }
}
