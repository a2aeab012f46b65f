//! Request throughput of `kgc serve` with TLS, authentication and RBAC against the plain-HTTP
//! insecure port (docs/BENCHMARKS.md, "Authorization").
//!
//! Starts the given `kgc` binary three ways and drives each with `--clients` concurrent kube-rs
//! clients, each sending GETs of one ConfigMap one after the other over keep-alive connections:
//!
//! 1. `--insecure-http`: no TLS, no authentication, no authorization;
//! 2. TLS as the admin (client certificate in `system:masters`: authenticated, RBAC skipped);
//! 3. TLS as a user allowed by a RoleBinding to `view`, with `--bindings` other RoleBindings
//!    (for other users) in the same namespace: every request is authorized by RBAC.
//!
//! ```sh
//! cargo build --release -p kgc --examples
//! target/release/examples/authz_bench --kgc target/release/kgc [--requests 20000] [--clients 16]
//! ```

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

struct Args {
    kgc: PathBuf,
    requests: usize,
    clients: usize,
    bindings: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        kgc: PathBuf::from("target/release/kgc"),
        requests: 20_000,
        clients: 16,
        bindings: 1_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--kgc" => a.kgc = PathBuf::from(value),
            "--requests" => a.requests = value.parse()?,
            "--clients" => a.clients = value.parse()?,
            "--bindings" => a.bindings = value.parse()?,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(a)
}

/// A `kgc serve` child, killed on drop.
struct Serve {
    child: Child,
    kubeconfig: PathBuf,
    data: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(kgc: &Path, extra: &[&str]) -> anyhow::Result<Serve> {
    let data = tempfile::tempdir()?;
    let mut child = Command::new(kgc)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--disable",
            "gc",
            "--data-dir",
        ])
        .arg(data.path())
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", kgc.display()))?;
    let stdout = child.stdout.take().context("piped stdout")?;
    let mut kubeconfig = None;
    for line in BufReader::new(stdout).lines() {
        if let Some(k) = line?.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(PathBuf::from(k.trim()));
            break;
        }
    }
    let kubeconfig = kubeconfig.context("kgc serve printed no kubeconfig")?;
    Ok(Serve {
        child,
        kubeconfig,
        data,
    })
}

async fn client(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

async fn send(c: &Client, method: &str, path: &str, body: String) -> anyhow::Result<()> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.into_bytes())?;
    c.request_text(req)
        .await
        .map(|_| ())
        .with_context(|| format!("{method} {path}"))
}

/// The namespace, the ConfigMap every GET reads, and `bindings` RoleBindings for other users.
async fn setup(admin: &Client, bindings: usize) -> anyhow::Result<()> {
    send(
        admin,
        "POST",
        "/api/v1/namespaces",
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}"#.into(),
    )
    .await?;
    send(
        admin,
        "POST",
        "/api/v1/namespaces/bench/configmaps",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}"#
            .into(),
    )
    .await?;
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/bench/rolebindings";
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let admin = admin.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..bindings).step_by(16) {
                let b = format!(
                    r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{{"name":"rb-{i}"}},"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}},"subjects":[{{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"user-{i}"}},{{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"group-{i}"}}]}}"#
                );
                send(&admin, "POST", path, b).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// `requests` GETs split over `clients` concurrent sequential clients: requests per second.
async fn measure(c: &Client, requests: usize, clients: usize) -> anyhow::Result<f64> {
    let per = requests / clients;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                let req =
                    http::Request::get("/api/v1/namespaces/bench/configmaps/cm").body(Vec::new())?;
                c.request_text(req).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok((per * clients) as f64 / started.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = args()?;
    println!(
        "authz_bench: {} GETs of one ConfigMap, {} concurrent clients, {} RoleBindings; {} cores",
        a.requests,
        a.clients,
        a.bindings,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let mut rows = Vec::new();

    let plain = serve(&a.kgc, &["--insecure-http"])?;
    let c = client(&plain.kubeconfig).await?;
    setup(&c, a.bindings).await?;
    measure(&c, a.requests / 10, a.clients).await?;
    rows.push((
        "--insecure-http (no TLS, authn, authz)",
        measure(&c, a.requests, a.clients).await?,
    ));
    drop(plain);

    let secure = serve(&a.kgc, &[])?;
    let admin = client(&secure.kubeconfig).await?;
    setup(&admin, a.bindings).await?;
    let out = Command::new(&a.kgc)
        .args([
            "serve",
            "add-user",
            "bench",
            "-n",
            "bench",
            "--role",
            "view",
            "--data-dir",
        ])
        .arg(secure.data.path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "add-user: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let user_kc = secure.data.path().join("bench.kubeconfig");
    std::fs::write(&user_kc, &out.stdout)?;
    let user = client(&user_kc).await?;
    measure(&admin, a.requests / 10, a.clients).await?;
    rows.push((
        "TLS, admin client certificate (system:masters)",
        measure(&admin, a.requests, a.clients).await?,
    ));
    measure(&user, a.requests / 10, a.clients).await?;
    rows.push((
        "TLS, client certificate, RBAC (view via RoleBinding)",
        measure(&user, a.requests, a.clients).await?,
    ));
    drop(secure);

    let base = rows[0].1;
    for (what, rate) in &rows {
        println!(
            "{what:<55} {rate:>9.0} req/s  ({:+.1} %)",
            (rate / base - 1.0) * 100.0
        );
    }
    Ok(())
}
