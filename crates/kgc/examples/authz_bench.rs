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
//! The modes run interleaved (A B C A B C …, `--rounds` times) and each run reports, besides
//! requests per second, the server process's CPU time per request (utime + stime from
//! `/proc/PID/stat`): on a shared, loaded machine wall-clock throughput swings with the
//! neighbours' load, CPU time per request does not. Modes 2 and 3 use the same server, so
//! their difference is the RBAC decision for a non-admin user (the admin is allowed by its
//! `system:masters` group before any binding is looked at); 1 to 2 is TLS plus authentication
//! and computing the attributes.
//!
//! ```sh
//! cargo build --release -p kgc --examples
//! target/release/examples/authz_bench --kgc target/release/kgc [--requests 20000] [--clients 16] \
//!     [--bindings 1000] [--rounds 3]
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
    rounds: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        kgc: PathBuf::from("target/release/kgc"),
        requests: 20_000,
        clients: 16,
        bindings: 1_000,
        rounds: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--kgc" => a.kgc = PathBuf::from(value),
            "--requests" => a.requests = value.parse()?,
            "--clients" => a.clients = value.parse()?,
            "--bindings" => a.bindings = value.parse()?,
            "--rounds" => a.rounds = value.parse()?,
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

/// CPU time (user + system) the process `pid` has used so far, in seconds, from
/// `/proc/PID/stat` (fields 14 and 15, in clock ticks). Unlike wall-clock throughput it does
/// not depend on what else the machine runs.
fn cpu_seconds(pid: u32, ticks_per_second: f64) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces; the fields after it are plain numbers.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("/proc/PID/stat has no command name")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state): utime is field 14, stime field 15.
    let utime: f64 = fields.get(11).context("no utime")?.parse()?;
    let stime: f64 = fields.get(12).context("no stime")?.parse()?;
    Ok((utime + stime) / ticks_per_second)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless told otherwise).
fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// One way of serving: the server process and a client of it.
struct Mode {
    what: &'static str,
    pid: u32,
    client: Client,
    rates: Vec<f64>,
    cpu_us: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = args()?;
    println!(
        "authz_bench: {} GETs of one ConfigMap per run, {} concurrent clients, {} RoleBindings, \
         {} interleaved rounds; {} cores",
        a.requests,
        a.clients,
        a.bindings,
        a.rounds,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let ticks = ticks_per_second();

    let plain = serve(&a.kgc, &["--insecure-http"])?;
    let c = client(&plain.kubeconfig).await?;
    setup(&c, a.bindings).await?;

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

    let mut modes = [
        Mode {
            what: "--insecure-http (no TLS, authn, authz)",
            pid: plain.child.id(),
            client: c,
            rates: Vec::new(),
            cpu_us: Vec::new(),
        },
        Mode {
            what: "TLS, admin client certificate (system:masters)",
            pid: secure.child.id(),
            client: admin,
            rates: Vec::new(),
            cpu_us: Vec::new(),
        },
        Mode {
            what: "TLS, client certificate, RBAC (view via RoleBinding)",
            pid: secure.child.id(),
            client: user,
            rates: Vec::new(),
            cpu_us: Vec::new(),
        },
    ];
    for m in &modes {
        // Warm-up: connections, caches.
        measure(&m.client, a.requests / 10, a.clients).await?;
    }
    // Interleaved (A B C A B C …) so that a change in the machine's load hits every mode alike.
    let done = a.requests / a.clients * a.clients;
    for round in 0..a.rounds {
        for m in &mut modes {
            let before = cpu_seconds(m.pid, ticks)?;
            let rate = measure(&m.client, a.requests, a.clients).await?;
            let cpu = (cpu_seconds(m.pid, ticks)? - before) / done as f64 * 1e6;
            println!(
                "round {round}: {:<55} {rate:>9.0} req/s  {cpu:>6.1} µs CPU/req",
                m.what
            );
            m.rates.push(rate);
            m.cpu_us.push(cpu);
        }
    }
    drop((plain, secure));

    println!("\nmedian (min–max) over {} rounds:", a.rounds);
    let (base_rate, base_cpu) = (median(&modes[0].rates), median(&modes[0].cpu_us));
    for m in &modes {
        let (rate, cpu) = (median(&m.rates), median(&m.cpu_us));
        let (rlo, rhi) = range(&m.rates);
        let (clo, chi) = range(&m.cpu_us);
        println!(
            "{:<55} {rate:>7.0} ({rlo:.0}–{rhi:.0}) req/s {:+6.1} %   \
             {cpu:>5.1} ({clo:.1}–{chi:.1}) µs CPU/req {:+6.1} µs",
            m.what,
            (rate / base_rate - 1.0) * 100.0,
            cpu - base_cpu
        );
    }
    Ok(())
}
