//! `--kube-api-qps` and `--kube-api-burst` for the commands that talk to a remote cluster
//! (kube-controller-manager's flag names), and the one place their clients are built.

use anyhow::Context;
use kgc_client::throttle::Throttle;

/// kube-controller-manager's defaults (`--kube-api-qps 20 --kube-api-burst 30`), for
/// `kgc controller`: it shares an API server with everything else.
pub const CONTROLLER: Throttle = Throttle {
    qps: 20.0,
    burst: 30,
};

/// For a deploy (`apply`, `prune`, `delete`) run by a person or a pipeline: 2,000 objects in
/// about 40 s, while an API server under load is still spared a burst of thousands.
pub const DEPLOY: Throttle = Throttle {
    qps: 50.0,
    burst: 100,
};

/// No limit: for one-shot commands that send a request or two (`kgc gc graph`, `kgc node
/// stop`), which still want [`client`]'s one-line refused connection.
pub const UNLIMITED: Throttle = Throttle { qps: 0.0, burst: 0 };

/// kubectl's `--kubeconfig` and `--context` with the rate limit: how the commands that only
/// read a cluster (`kgc tree`, `kgc why`) reach it.
#[derive(clap::Args, Clone, Debug)]
pub struct Cluster {
    /// The kubeconfig [default: $KUBECONFIG, else ~/.kube/config, else in-cluster].
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context [default: the current context].
    #[arg(long)]
    context: Option<String>,
    #[command(flatten)]
    rate_limit: Flags,
}

/// A client of the cluster, and what the kubeconfig says about it.
pub struct Connection {
    pub client: kube::Client,
    /// The context's namespace, else `default`.
    pub namespace: String,
    /// The API server's URL, for messages.
    pub server: String,
}

impl Cluster {
    pub async fn connect(&self, defaults: Throttle) -> anyhow::Result<Connection> {
        let config =
            crate::controller::kube_config(self.kubeconfig.as_deref(), self.context.as_deref())
                .await?;
        let namespace = config.default_namespace.clone();
        let server = config.cluster_url.to_string();
        let client = client(config, self.rate_limit.throttle(defaults), None)?;
        Ok(Connection {
            client,
            namespace,
            server,
        })
    }
}

#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct Flags {
    /// Requests a second to the API server, sustained (0: unlimited) [default: 20 for
    /// `controller`, as kube-controller-manager; 50 for deploy commands].
    #[arg(long)]
    kube_api_qps: Option<f32>,
    /// Requests that may go at once [default: 30 for `controller`; 100 for deploy commands].
    #[arg(long)]
    kube_api_burst: Option<u32>,
}

impl Flags {
    /// The limit, the command's `default` where a flag is not given.
    pub fn throttle(self, default: Throttle) -> Throttle {
        Throttle {
            qps: self.kube_api_qps.unwrap_or(default.qps),
            burst: self.kube_api_burst.unwrap_or(default.burst),
        }
    }
}

/// Sees each request as it is sent (e.g. to count it).
pub type Observer = std::sync::Arc<dyn Fn(&http::Method, &http::Uri) + Send + Sync>;

/// A client for `config` that keeps to `throttle`, each request shown to `observe` first.
pub fn client(
    config: kube::Config,
    throttle: Throttle,
    observe: Option<Observer>,
) -> anyhow::Result<kube::Client> {
    // Outermost: a refused connection is kubectl's one line whichever layer it comes through.
    let refused = kgc_client::Refused::layer(&config.cluster_url);
    let builder =
        kube::client::ClientBuilder::try_from(config).context("building the Kubernetes client")?;
    let observe =
        tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
            if let Some(o) = &observe {
                o(req.method(), req.uri());
            }
            req
        });
    Ok(builder
        .with_layer(&tower::util::option_layer(throttle.layer()))
        .with_layer(&observe)
        .with_layer(&refused)
        .build())
}
