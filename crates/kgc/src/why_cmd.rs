//! `kgc why KIND/NAME`: why an object is kept, will be collected, is held in deletion, or went.
//!
//! Reads what the verdict rests on: the object, the graph of its namespace (the whole cluster
//! for a cluster-scoped object) through metadata-only lists, the few whole objects the graph
//! cannot speak for (a namespace's spec and conditions, the pods using a claim), and, for an
//! object that is gone, the collectors' decision history (`/debug/gc/decisions` of `kgc serve`
//! or of a `kgc controller`). The verdict itself is `kgc_explain::why`'s.

use std::io::Write as _;

use anyhow::Context as _;
use kgc_explain::exit;
use kgc_explain::load::{Loader, Scope};
use kgc_explain::why::{self, Answer, Facts};
use kgc_explain::{Error, resolve};
use kgc_meta::ResourceInfo;
use kgc_runtime::decisions::Decision;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

#[derive(clap::Args)]
pub struct Args {
    /// The object: KIND/NAME (or KIND NAME), KIND as kubectl resolves it (`deploy`,
    /// `replicasets.apps`, `ns`).
    #[arg(required = true, num_args = 1..=2, value_name = "KIND/NAME")]
    target: Vec<String>,
    /// The namespace [default: the kubeconfig context's, else `default`].
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: Output,
    /// Read the collectors' decision history from this address (a `kgc controller`'s
    /// `--listen`, such as http://127.0.0.1:9443) instead of the API server.
    #[arg(long)]
    server_url: Option<String>,
    #[command(flatten)]
    cluster: crate::rate_limit::Cluster,
}

impl Args {
    /// The object's `KIND/NAME` (or `KIND NAME`) as given, for `main` to check before running.
    pub(crate) fn target(&self) -> &[String] {
        &self.target
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Text,
    Json,
    Yaml,
}

/// Runs `kgc why`; ends the process with the verdict's exit code (see
/// [`kgc_explain::exit`]): 0 kept, will be collected or collected; 4 held in deletion; 7 parts
/// unknown. Errors carry theirs (5 an unknown or ambiguous kind, 6 not found and not in the
/// history), which `main` returns.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let answer = answer(&args).await?;
    print(&answer, args.output)?;
    match answer.exit_code() {
        exit::OK => Ok(()),
        code => {
            std::io::stdout().flush()?;
            std::process::exit(code)
        }
    }
}

async fn answer(args: &Args) -> anyhow::Result<Answer> {
    let (kind, name) = resolve::parse_reference(&args.target)?;
    let cluster = args.cluster.connect(crate::rate_limit::DEPLOY).await?;
    let namespace = args.namespace.clone().unwrap_or(cluster.namespace);
    let client = cluster.client;
    let mut loader = Loader::connect(client.clone())
        .await
        .with_context(|| format!("connecting to {}", cluster.server))?;
    let resource = loader.resolve(&kind).await?;
    let namespace = if resource.namespaced() {
        namespace
    } else {
        String::new()
    };
    let node = match loader.get(&resource, &namespace, &name).await {
        Ok(node) => node,
        Err(e @ Error::NotFound { .. }) => {
            return gone(args, &client, &resource, e).await;
        }
        Err(e) => return Err(e.into()),
    };
    // A namespace's content, a namespaced object's neighbours, or for a cluster-scoped object
    // (whose dependents may live anywhere) the whole cluster.
    let scope = match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => Scope::Namespace(node.name.clone()),
        _ if resource.namespaced() => Scope::Namespace(namespace.clone()),
        _ => Scope::All,
    };
    let mut graph = loader.graph(&scope, None, |_| {}).await;
    if graph.node(&node.uid).is_none() {
        graph.insert(node.clone());
    }
    let facts = facts(&client, &resource, &namespace, &name).await?;
    let node = graph.node(&node.uid).unwrap_or(&node);
    Ok(why::explain(&graph, node, &facts, jiff::Timestamp::now()))
}

/// What the graph cannot hold: read from the whole object (a namespace, a volume, a custom
/// resource definition) or, for a claim, from its namespace's pods.
async fn facts(
    client: &kube::Client,
    resource: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Facts> {
    let api = |r: &ResourceInfo, ns: &str| {
        let ar = kgc_client::api_resource(r);
        if ns.is_empty() {
            Api::<DynamicObject>::all_with(client.clone(), &ar)
        } else {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
    };
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace" | "PersistentVolume")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let object = api(resource, namespace)
                .get_opt(name)
                .await
                .with_context(|| format!("reading {} {name}", resource.kind))?;
            let object = object.map(serde_json::to_value).transpose()?;
            Ok(object
                .map(|o| Facts::of_object(&resource.kind, &o))
                .unwrap_or_default())
        }
        ("", "PersistentVolumeClaim") => {
            let pods = kgc_meta::Catalog::builtin()
                .resources()
                .find(|r| r.group.is_empty() && r.kind == "Pod")
                .cloned()
                .context("the built-in catalog has no pods")?;
            let listed = api(&pods, namespace)
                .list(&ListParams::default())
                .await
                .with_context(|| format!("listing the pods of namespace {namespace}"))?;
            let pods: Vec<Value> = listed
                .items
                .into_iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?;
            Ok(Facts {
                claim_users: Facts::pods_using_claim(&pods, name),
                ..Facts::default()
            })
        }
        _ => Ok(Facts::default()),
    }
}

/// The answer about an object that does not exist (`missing`): the history's entries about
/// it; else `missing`, saying what the history knows.
async fn gone(
    args: &Args,
    client: &kube::Client,
    resource: &ResourceInfo,
    missing: Error,
) -> anyhow::Result<Answer> {
    let Error::NotFound {
        namespace, name, ..
    } = &missing
    else {
        return Err(missing.into());
    };
    let Some(decisions) = history(args, client, resource, namespace, name).await? else {
        let what = format!(
            "{missing}; no collector history available (the cluster runs no kgc collector, or \
             pass a `kgc controller`'s address with --server-url)"
        );
        return Err(anyhow::Error::new(missing).context(what));
    };
    let Some(last) = decisions.last() else {
        let elsewhere = if args.server_url.is_none() {
            " (if the garbage collector runs in a `kgc controller`, pass its address with \
             --server-url)"
        } else {
            ""
        };
        let what = format!(
            "{missing}, and the collectors' history does not mention it: it was not collected \
             recently{elsewhere}"
        );
        return Err(anyhow::Error::new(missing).context(what));
    };
    let object = why::Object {
        api_version: last.api_version.clone(),
        kind: last.kind.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        uid: String::new(),
        finalizers: Vec::new(),
        deletion_timestamp: None,
    };
    Ok(why::collected(object, decisions))
}

/// The collectors' decisions about `kind` `namespace/name`, oldest first; `None` when no
/// collector history is served.
async fn history(
    args: &Args,
    client: &kube::Client,
    resource: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Option<Vec<Decision>>> {
    let client = match &args.server_url {
        Some(url) => {
            let uri: http::Uri = url
                .parse()
                .with_context(|| format!("invalid --server-url {url:?}"))?;
            let mut config = kube::Config::new(uri);
            config.default_retry = false;
            crate::rate_limit::client(config, crate::rate_limit::UNLIMITED, None)?
        }
        None => client.clone(),
    };
    let path = format!(
        "/debug/gc/decisions?kind={}&namespace={}&name={}",
        crate::gc_cmd::encode(&resource.kind),
        crate::gc_cmd::encode(namespace),
        crate::gc_cmd::encode(name)
    );
    let request = http::Request::get(&path)
        .body(Vec::new())
        .context("building the request")?;
    let body = match client.request_text(request).await {
        Ok(body) => body,
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("GET {path}")),
    };
    let mut page: Value =
        serde_json::from_str(&body).with_context(|| format!("GET {path}: not JSON"))?;
    let decisions: Vec<Decision> = serde_json::from_value(page["items"].take())
        .with_context(|| format!("GET {path}: not a decision list"))?;
    // Only the resource's own group: a kind of the same name in another group is another object.
    Ok(Some(
        decisions
            .into_iter()
            .filter(|d| kgc_meta::catalog::group_of(&d.api_version) == resource.group)
            .collect(),
    ))
}

fn print(answer: &Answer, output: Output) -> anyhow::Result<()> {
    match output {
        Output::Text => print!("{}", why::render(answer)),
        Output::Json => println!("{}", serde_json::to_string_pretty(answer)?),
        Output::Yaml => print!(
            "{}",
            serde_saphyr::to_string(&serde_json::to_value(answer)?)?
        ),
    }
    Ok(())
}
