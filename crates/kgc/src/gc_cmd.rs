//! `kgc gc`: inspect a running garbage collector.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Print the live dependency graph (`/debug/controllers/garbagecollector/graph`) of the
    /// collector inside `kgc serve` or of a `kgc controller`.
    Graph(GraphArgs),
}

#[derive(clap::Args)]
struct GraphArgs {
    /// The kubeconfig naming the API server [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: the current context].
    #[arg(long)]
    context: Option<String>,
    /// Ask this URL instead of the kubeconfig's API server: a `kgc controller`'s `--listen`
    /// address, such as http://127.0.0.1:9443.
    #[arg(long)]
    server_url: Option<String>,
    /// Only the part of the graph connected to this uid (its owners and dependents,
    /// transitively).
    #[arg(long)]
    uid: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "dot")]
    output: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Dot,
    Json,
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
pub(crate) fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn path(uid: Option<&str>, format: Format) -> String {
    let mut path = String::from("/debug/controllers/garbagecollector/graph");
    if format == Format::Json {
        path.push_str("?format=json");
    }
    if let Some(uid) = uid {
        path.push(if format == Format::Json { '&' } else { '?' });
        path.push_str("uid=");
        path.push_str(&encode(uid));
    }
    path
}

async fn graph(args: GraphArgs) -> anyhow::Result<()> {
    let mut config = match &args.server_url {
        Some(url) => {
            let uri: http::Uri = url
                .parse()
                .with_context(|| format!("invalid --server-url {url:?}"))?;
            kube::Config::new(uri)
        }
        None => {
            crate::controller::kube_config(args.kubeconfig.as_deref(), args.context.as_deref())
                .await?
        }
    };
    // An interactive command reports a busy server rather than retrying for minutes.
    config.default_retry = false;
    let client = crate::rate_limit::client(config, crate::rate_limit::UNLIMITED, None)?;
    let path = path(args.uid.as_deref(), args.output);
    let request = http::Request::get(&path)
        .body(Vec::new())
        .context("building the request")?;
    let body = match client.request_text(request).await {
        Ok(body) => body,
        Err(kube::Error::Api(s)) if s.code == 404 && args.server_url.is_none() => {
            anyhow::bail!(
                "GET {path}: the API server has no garbage collector graph ({}); if its \
                 collector runs elsewhere (`kgc serve --disable gc` with a `kgc controller`), \
                 pass the controller's address with --server-url",
                s.message.trim()
            )
        }
        Err(kube::Error::Api(s)) => {
            anyhow::bail!("GET {path}: {} ({})", s.message.trim(), s.code)
        }
        Err(e) => return Err(e).with_context(|| format!("GET {path}")),
    };
    match args.output {
        Format::Json => {
            let v: serde_json::Value = serde_json::from_str(&body)
                .with_context(|| format!("the graph is not JSON: {body}"))?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Dot => print!("{body}"),
    }
    Ok(())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Graph(a) => graph(a).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_paths() {
        assert_eq!(
            path(None, Format::Dot),
            "/debug/controllers/garbagecollector/graph"
        );
        assert_eq!(
            path(Some("a b/c"), Format::Json),
            "/debug/controllers/garbagecollector/graph?format=json&uid=a%20b%2Fc"
        );
        assert_eq!(
            path(Some("u-1"), Format::Dot),
            "/debug/controllers/garbagecollector/graph?uid=u-1"
        );
    }
}
