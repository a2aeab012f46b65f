//! `kgc tree KIND/NAME`: the ownership tree under (or, with `--owners`, above) an object, from
//! any cluster, as kubectl-tree draws it, with what the garbage collector reads in it.
//!
//! The graph comes from metadata-only lists (one per kind). Against `kgc serve` or a cluster
//! whose collector is a `kgc controller` answering on the API's address, the collector's graph
//! first says which kinds the object's ownership reaches, and only those are listed.

use std::io::Write as _;

use anyhow::Context;
use kgc_explain::load::{Loader, Scope};
use kgc_explain::tree::{self, Direction};
use kgc_explain::{exit, resolve};
use kgc_prune::executor::Progress as _;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
    Svg,
}

/// Exit codes, shared with `kgc why`.
const EXIT_CODES: &str = "\
Exit status:
  0  the tree is complete
  1  an error (a usage error, the cluster unreachable, a request failed)
  5  KIND is unknown to the server, or a short name several kinds share (the candidates are named)
  6  the object does not exist
  7  the tree was drawn, but some kinds could not be listed (forbidden): their objects are missing";

#[derive(clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    /// The object, as `KIND/NAME` or `KIND NAME`; KIND as kubectl takes it: kind, plural,
    /// singular or short name, optionally `.group` (`deploy/web`, `certificates.cert-manager.io/x`).
    #[arg(value_name = "KIND/NAME", required = true, num_args = 1..=2)]
    object: Vec<String>,
    /// The object's namespace [default: the context's, else `default`].
    #[arg(short, long)]
    namespace: Option<String>,
    /// List every namespace, not just the object's: dependents in other namespaces (always
    /// invalid references) are then shown too. A cluster-scoped object always lists all.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Walk upwards: the object's owners, and theirs.
    #[arg(long)]
    owners: bool,
    #[arg(short, long, value_enum, default_value = "table")]
    output: Format,
    /// List every kind even when the server's garbage collector (`kgc serve`, `kgc
    /// controller`) could say which kinds the object's ownership graph holds.
    #[arg(long)]
    list_all_kinds: bool,
    #[command(flatten)]
    cluster: crate::rate_limit::Cluster,
}

impl Args {
    /// The object's `KIND/NAME` (or `KIND NAME`) as given, for `main` to check before running.
    pub(crate) fn target(&self) -> &[String] {
        &self.object
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (kind, name) = resolve::parse_reference(&args.object)?;
    let cluster = args.cluster.connect(crate::rate_limit::DEPLOY).await?;
    let namespace = args.namespace.clone().unwrap_or(cluster.namespace);
    let mut loader = Loader::connect(cluster.client)
        .await
        .with_context(|| format!("connecting to {}", cluster.server))?;
    let resource = loader.resolve(&kind).await?;
    let target = loader.get(&resource, &namespace, &name).await?;

    let scope = if args.all_namespaces || !resource.namespaced() {
        Scope::All
    } else {
        Scope::Namespace(namespace)
    };
    let kinds = match args.list_all_kinds {
        true => None,
        false => loader.collector_kinds(&target.uid).await.map(|mut k| {
            k.insert(target.group_kind());
            k
        }),
    };
    let bar = crate::deploy_cmd::Bar::new();
    let mut listed = 0;
    let mut graph = loader
        .graph(&scope, kinds.as_ref(), |p| {
            if listed == 0 {
                bar.phase("listing", p.total);
            }
            for _ in listed..p.listed {
                bar.step();
            }
            listed = p.listed;
        })
        .await;
    drop(bar);
    if graph.node(&target.uid).is_none() {
        // Its kind could not be listed, yet the object could be read.
        graph.insert(target.clone());
    }
    let direction = if args.owners {
        Direction::Owners
    } else {
        Direction::Dependents
    };
    let root = graph.node(&target.uid).context("the object vanished")?;
    let uids = tree::build(&graph, root, direction).uids();
    loader.read_ready(&mut graph, &uids).await;
    let root = graph.node(&target.uid).context("the object vanished")?;
    let tree = tree::build(&graph, root, direction);

    let mut out = std::io::stdout().lock();
    match args.output {
        Format::Table => write!(out, "{}", tree.table(jiff::Timestamp::now()))?,
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&tree)?)?,
        Format::Yaml => write!(out, "{}", serde_saphyr::to_string(&tree)?)?,
        Format::Svg => write!(out, "{}", kgc_explain::svg::render(&tree))?,
    }
    out.flush()?;
    if !tree.unlisted.is_empty() {
        if args.output != Format::Table {
            for u in &tree.unlisted {
                eprintln!(
                    "kgc: warning: could not list {} ({}): objects of that kind are missing",
                    u.group_kind, u.reason
                );
            }
        }
        std::process::exit(exit::INCOMPLETE);
    }
    Ok(())
}
