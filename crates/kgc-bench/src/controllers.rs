//! What the controllers cost when there is little to do: the idle CPU of a server holding
//! objects, and the requests the namespace controller makes to delete a namespace of many
//! objects while other clients write elsewhere (issue 18: one controller runtime), and how fast
//! the owner-reference collector deletes under its client rate limit (issue 21).

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::{Method, StatusCode};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::thousands;
use crate::{Bench, Kind, configmap, configmaps_path, create_many, create_namespace};

/// How long the idle measurement watches the server's CPU time.
const IDLE_WINDOW: Duration = Duration::from_secs(60);

/// `kgc controller` running one controller against a benchmark server.
struct Controller {
    child: std::process::Child,
    url: String,
}

impl Controller {
    fn start(
        kgc: &std::path::Path,
        kubeconfig: &std::path::Path,
        controllers: &str,
        extra: Option<&str>,
    ) -> anyhow::Result<Self> {
        let mut child = std::process::Command::new(kgc)
            .arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--listen", "127.0.0.1:0", "--leader-elect=false"])
            .arg(format!("--controllers={controllers}"))
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning kgc controller")?;
        let stdout = child.stdout.take().context("piped stdout")?;
        let url = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("kgc controller: listening on ")
                    .map(|u| u.trim().to_owned())
            })
            .context("kgc controller did not say where it listens")?;
        Ok(Self { child, url })
    }

    /// `kgc_controller_api_requests_total` by verb, from the controller's `/metrics`.
    fn requests(&self) -> anyhow::Result<Vec<(String, u64)>> {
        let body = plain_get(&format!("{}/metrics", self.url))?;
        Ok(body
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("kgc_controller_api_requests_total{verb=\"")?;
                let (verb, value) = rest.split_once("\"} ")?;
                Some((verb.to_owned(), value.trim().parse().ok()?))
            })
            .collect())
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking GET over a plain TCP connection (the admin endpoint is HTTP/1.1 on loopback).
fn plain_get(url: &str) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").context("an http:// URL")?;
    let (host, path) = rest.split_once('/').map_or((rest, "/"), |(h, p)| (h, p));
    let mut s =
        std::net::TcpStream::connect(host).with_context(|| format!("connecting to {host}"))?;
    write!(
        s,
        "GET /{} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        path.trim_start_matches('/')
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default())
}

impl Bench {
    /// The server's CPU time over a minute with nothing to do but hold `small_list` objects.
    pub(crate) async fn idle(&mut self) -> anyhow::Result<()> {
        let n = self.cli.small_list;
        println!(
            "\n== idle CPU: a durable server holding {} ConfigMaps, CPU time (user + system) over {} s with no client",
            thousands(n as u64),
            IDLE_WINDOW.as_secs()
        );
        let dir = self.tempdir("idle")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, "idle").await?;
        drop(conn);
        create_many(server.addr, Kind::Configmaps, "idle", "cm", 16, n).await?;
        // Let the collectors' first passes and the commit path settle.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let before = server.cpu_time()?;
        tokio::time::sleep(IDLE_WINDOW).await;
        let used = server.cpu_time()? - before;
        let share = used.as_secs_f64() / IDLE_WINDOW.as_secs_f64() * 100.0;
        let result = format!(
            "{:.0} ms of CPU in {} s ({share:.2}% of a core)",
            used.as_secs_f64() * 1e3,
            IDLE_WINDOW.as_secs()
        );
        println!("   {result}");
        self.row(format!("idle CPU, {} objects", thousands(n as u64)), result);
        server.stop().await?;
        Ok(())
    }

    /// The requests the namespace controller, run as `kgc controller`, makes to delete a
    /// namespace of `small_list` ConfigMaps while a client keeps writing in another namespace.
    pub(crate) async fn namespace(&mut self) -> anyhow::Result<()> {
        let n = self.cli.small_list;
        println!(
            "\n== namespace deletion: {} ConfigMaps in a namespace, deleted by `kgc controller --controllers=-*,namespace` against `kgc serve --controllers=*,-namespace`, while one client creates ConfigMaps in another namespace",
            thousands(n as u64)
        );
        let dir = self.tempdir("namespace")?;
        let mut launch = self.launch(dir.path(), true);
        let mut args = launch.extra_args.to_vec();
        args.push("--controllers=*,-namespace".into());
        launch.extra_args = &args;
        let (server, _) = Server::start(launch).await?;
        let controller = Controller::start(
            &self.kgc,
            &dir.path().join("kubeconfig"),
            "-*,namespace",
            None,
        )?;
        let mut conn = Conn::connect(server.addr).await?;
        for ns in ["doomed", "busy"] {
            create_namespace(&mut conn, ns).await?;
        }
        create_many(server.addr, Kind::Configmaps, "doomed", "cm", 16, n).await?;
        let baseline = controller.requests()?;
        let started = Instant::now();
        conn.expect(
            StatusCode::OK,
            Method::DELETE,
            "/api/v1/namespaces/doomed",
            None,
        )
        .await?;
        // A steady writer elsewhere: before, every one of its commits made the controller list
        // every namespaced resource.
        let mut writer = Conn::connect(server.addr).await?;
        let mut writes = 0usize;
        loop {
            let (status, _) = conn
                .call(Method::GET, "/api/v1/namespaces/doomed", None)
                .await?;
            if status == StatusCode::NOT_FOUND {
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(300),
                "the namespace was not gone after 300 s"
            );
            let body = configmap(&format!("w-{writes:06}"), writes).to_string();
            writer
                .expect(
                    StatusCode::CREATED,
                    Method::POST,
                    &configmaps_path("busy"),
                    Some(body.into()),
                )
                .await?;
            writes += 1;
        }
        let elapsed = started.elapsed();
        let after = controller.requests()?;
        let made: Vec<(String, u64)> = after
            .iter()
            .map(|(verb, v)| {
                let before = baseline
                    .iter()
                    .find(|(b, _)| b == verb)
                    .map_or(0, |(_, n)| *n);
                (verb.clone(), v - before)
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let total: u64 = made.iter().map(|(_, n)| n).sum();
        let detail = made
            .iter()
            .map(|(v, n)| format!("{v} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let result = format!(
            "{total} requests ({detail}) in {:.1} s, {} writes elsewhere meanwhile",
            elapsed.as_secs_f64(),
            thousands(writes as u64)
        );
        println!("   {result}");
        self.row(
            format!("namespace of {} objects deleted", thousands(n as u64)),
            result,
        );
        drop(controller);
        server.stop().await?;
        Ok(())
    }
}

impl Bench {
    /// How fast `kgc controller`'s owner-reference collector deletes against a remote server
    /// under its default client rate limit (`--kube-api-qps` 20, `--kube-api-burst` 30, as
    /// kube-controller-manager's), and unthrottled for comparison: one owner with
    /// `--gc-dependents` ConfigMaps, deleted in the background.
    pub(crate) async fn collector_rate(&mut self) -> anyhow::Result<()> {
        let n = self.cli.gc_dependents;
        println!(
            "\n== collector deletions/s: 1 owner × {} ConfigMaps, background deletion, collected by `kgc controller --controllers=-*,gc` against `kgc serve --controllers=*,-gc`",
            thousands(n as u64)
        );
        for (limit, extra) in [
            ("default rate limit (20 qps, burst 30)", None),
            ("unthrottled (--kube-api-qps=0)", Some("--kube-api-qps=0")),
        ] {
            let dir = self.tempdir("collector")?;
            let mut launch = self.launch(dir.path(), true);
            let mut args = launch.extra_args.to_vec();
            args.push("--controllers=*,-gc".into());
            launch.extra_args = &args;
            let (server, _) = Server::start(launch).await?;
            let mut conn = Conn::connect(server.addr).await?;
            create_namespace(&mut conn, "cascade").await?;
            let owner = conn
                .expect(
                    StatusCode::CREATED,
                    Method::POST,
                    &configmaps_path("cascade"),
                    Some(configmap("owner", 0).to_string().into()),
                )
                .await?;
            let owner: serde_json::Value = serde_json::from_slice(&owner)?;
            let uid = owner["metadata"]["uid"].as_str().context("owner uid")?;
            for i in 0..n {
                let mut cm = configmap(&format!("dep-{i:06}"), i);
                cm["metadata"]["labels"]["role"] = "dependent".into();
                cm["metadata"]["ownerReferences"] = serde_json::json!([
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}
                ]);
                conn.expect(
                    StatusCode::CREATED,
                    Method::POST,
                    &configmaps_path("cascade"),
                    Some(cm.to_string().into()),
                )
                .await?;
            }
            let controller =
                Controller::start(&self.kgc, &dir.path().join("kubeconfig"), "-*,gc", extra)?;
            let started = Instant::now();
            conn.expect(
                StatusCode::OK,
                Method::DELETE,
                &format!("{}/owner", configmaps_path("cascade")),
                None,
            )
            .await?;
            let list = format!(
                "{}?labelSelector=role%3Ddependent",
                configmaps_path("cascade")
            );
            loop {
                let body = conn
                    .expect(StatusCode::OK, Method::GET, &list, None)
                    .await?;
                let left: serde_json::Value = serde_json::from_slice(&body)?;
                if left["items"].as_array().is_none_or(Vec::is_empty) {
                    break;
                }
                anyhow::ensure!(
                    started.elapsed() < Duration::from_secs(600),
                    "dependents left after 600 s"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let elapsed = started.elapsed();
            let result = format!(
                "{:.1} deletions/s ({} in {:.1} s)",
                n as f64 / elapsed.as_secs_f64(),
                thousands(n as u64),
                elapsed.as_secs_f64()
            );
            println!("   {limit}: {result}");
            self.row(format!("`kgc controller` GC, {limit}"), result);
            drop(controller);
            server.stop().await?;
        }
        Ok(())
    }
}
