//! `kgc node gc` against a real containerd (Debian's package, started here with a temporary
//! root, state dir and CRI socket), with tiny OCI images built and imported locally: the image
//! GC removes exactly the unused images and the container GC exactly the surplus dead
//! container. Where containerd cannot run (not root, not installed, not x86_64), the test says
//! so and runs the same scenario against a recorded CRI snapshot
//! (`fixtures/node_gc_snapshot.json`) through `kgc node simulate`.

use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kgc_testsupport::KgcBinary;
use std::time::{Duration, Instant};

use kgc_node::cri::{CriClient, POD_UID_LABEL, api};
use serde_json::Value;

kgc_testsupport::bind_kgc!();

/// The scenario's images: the app image doubles as the sandbox image (it carries `/pause`),
/// and two images nothing uses.
const APP: &str = "kgc.test/app:1";
const UNUSED: [&str; 2] = ["kgc.test/old-b:1", "kgc.test/old-c:1"];

fn containerd_unavailable() -> Option<String> {
    if std::env::consts::ARCH != "x86_64" {
        return Some(format!(
            "the test's pause binary is x86_64 machine code, this is {}",
            std::env::consts::ARCH
        ));
    }
    if !rustix_is_root() {
        return Some("containerd needs root".to_string());
    }
    for bin in ["containerd", "ctr", "runc"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {bin}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!(
                "{bin} is not installed (apt-get install containerd)"
            ));
        }
    }
    None
}

fn rustix_is_root() -> bool {
    // /proc/self/status "Uid:" real uid; avoids a libc dependency in the test.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A static x86_64 Linux ELF executable that loops on `pause(2)`: the sandbox's process.
fn pause_elf() -> Vec<u8> {
    let code: [u8; 9] = [0xb8, 0x22, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7]; // mov eax,34; syscall; jmp
    let total = 64 + 56 + code.len() as u64;
    let base: u64 = 0x40_0000;
    let mut e = Vec::new();
    e.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    e.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    e.extend_from_slice(&0x3eu16.to_le_bytes()); // x86-64
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&(base + 120).to_le_bytes()); // entry
    e.extend_from_slice(&64u64.to_le_bytes()); // phoff
    e.extend_from_slice(&0u64.to_le_bytes()); // shoff
    e.extend_from_slice(&0u32.to_le_bytes()); // flags
    e.extend_from_slice(&64u16.to_le_bytes());
    e.extend_from_slice(&56u16.to_le_bytes());
    e.extend_from_slice(&1u16.to_le_bytes());
    e.extend_from_slice(&[0; 6]);
    e.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    e.extend_from_slice(&5u32.to_le_bytes()); // R+X
    e.extend_from_slice(&0u64.to_le_bytes());
    e.extend_from_slice(&base.to_le_bytes());
    e.extend_from_slice(&base.to_le_bytes());
    e.extend_from_slice(&total.to_le_bytes());
    e.extend_from_slice(&total.to_le_bytes());
    e.extend_from_slice(&0x1000u64.to_le_bytes());
    e.extend_from_slice(&code);
    e
}

/// Appends one ustar entry (regular file) to `tar`.
fn tar_entry(tar: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]) {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |h: &mut [u8; 512], at: usize, width: usize, v: u64| {
        let s = format!("{v:0w$o}\0", w = width - 1);
        h[at..at + width].copy_from_slice(s.as_bytes());
    };
    octal(&mut h, 100, 8, u64::from(mode));
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, data.len() as u64);
    octal(&mut h, 136, 12, 1_700_000_000);
    h[148..156].copy_from_slice(b"        ");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    tar.extend_from_slice(&h);
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
}

fn tar_end(tar: &mut Vec<u8>) {
    tar.extend_from_slice(&[0u8; 1024]);
}

fn sha256(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(data)
        .expect("write");
    let out = child.wait_with_output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("digest")
        .to_string()
}

/// An OCI image layout archive with one uncompressed layer holding `/pause` and `/name`.
fn oci_archive(name: &str) -> Vec<u8> {
    let mut layer = Vec::new();
    tar_entry(&mut layer, "pause", 0o755, &pause_elf());
    tar_entry(&mut layer, "name", 0o644, name.as_bytes());
    tar_end(&mut layer);
    let layer_digest = sha256(&layer);
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": ["/pause"]},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{layer_digest}")]},
    })
    .to_string()
    .into_bytes();
    let config_digest = sha256(&config);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": format!("sha256:{config_digest}"),
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": format!("sha256:{layer_digest}"),
            "size": layer.len(),
        }],
    })
    .to_string()
    .into_bytes();
    let manifest_digest = sha256(&manifest);
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{manifest_digest}"),
            "size": manifest.len(),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                "io.containerd.image.name": name,
                "org.opencontainers.image.ref.name": name.rsplit(':').next().unwrap_or("1"),
            },
        }],
    })
    .to_string()
    .into_bytes();
    let mut tar = Vec::new();
    tar_entry(
        &mut tar,
        "oci-layout",
        0o644,
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    );
    tar_entry(&mut tar, "index.json", 0o644, &index);
    for (digest, blob) in [
        (&layer_digest, &layer),
        (&config_digest, &config),
        (&manifest_digest, &manifest),
    ] {
        tar_entry(&mut tar, &format!("blobs/sha256/{digest}"), 0o644, blob);
    }
    tar_end(&mut tar);
    tar
}

/// A containerd started for one test; stops its sandboxes' tasks and itself when dropped.
struct Containerd {
    child: Child,
    dir: tempfile::TempDir,
    socket: PathBuf,
    sandboxes: Vec<String>,
}

impl Containerd {
    fn start() -> Containerd {
        let dir = tempfile::Builder::new()
            .prefix("kgc-containerd-")
            .tempdir()
            .expect("tempdir");
        let socket = dir.path().join("containerd.sock");
        let config = format!(
            r#"version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{sock}"
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  sandbox_image = "{APP}"
  stream_server_port = "0"
  # runc cannot start a sandbox in cgroups set up for it on some hosts (CI VMs with hybrid
  # cgroup v1/v2: "can't get final child's PID from pipe"); GC needs no cgroups.
  disable_cgroup = true
  disable_apparmor = true
  restrict_oom_score_adj = true
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"
"#,
            root = dir.path().join("root").display(),
            state = dir.path().join("state").display(),
            sock = socket.display(),
        );
        let config_path = dir.path().join("config.toml");
        std::fs::write(&config_path, config).expect("config");
        let log = std::fs::File::create(dir.path().join("containerd.log")).expect("log");
        let child = Command::new("containerd")
            .arg("--config")
            .arg(&config_path)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("containerd");
        Containerd {
            child,
            dir,
            socket,
            sandboxes: Vec::new(),
        }
    }

    fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// containerd's log and the runc logs of its shims, for failure messages.
    fn log(&self) -> String {
        let mut out =
            std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default();
        let tasks = self
            .dir
            .path()
            .join("state/io.containerd.runtime.v2.task/k8s.io");
        for entry in std::fs::read_dir(tasks).into_iter().flatten().flatten() {
            if let Ok(log) = std::fs::read_to_string(entry.path().join("log.json")) {
                out.push_str(&format!(
                    "\n--- runc log of {}:\n{log}",
                    entry.path().display()
                ));
            }
        }
        out
    }

    async fn client(&mut self) -> CriClient {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut c) = CriClient::connect(&self.endpoint(), Duration::from_secs(5)).await
                && c.version().await.is_ok()
            {
                return c;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("containerd exited ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "containerd did not serve CRI within 20 s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn ctr(&self, args: &[&str]) -> std::process::Output {
        Command::new("ctr")
            .arg("-a")
            .arg(&self.socket)
            .args(["-n", "k8s.io"])
            .args(args)
            .output()
            .expect("ctr")
    }

    fn import(&self, name: &str) {
        let path = self
            .dir
            .path()
            .join(format!("{}.tar", name.replace(['/', ':'], "_")));
        std::fs::write(&path, oci_archive(name)).expect("archive");
        let out = self.ctr(&[
            "images",
            "import",
            "--snapshotter",
            "native",
            &path.display().to_string(),
        ]);
        assert!(
            out.status.success(),
            "ctr images import {name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        for id in &self.sandboxes {
            let _ = self.ctr(&["tasks", "kill", "-s", "SIGKILL", id]);
            let _ = self.ctr(&["tasks", "delete", "-f", id]);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Anything still mounted under our root (sandbox shm) before the tempdir goes.
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            let root = self.dir.path().display().to_string();
            for target in mounts.lines().filter_map(|l| l.split_whitespace().nth(1)) {
                if target.starts_with(&root) {
                    let _ = Command::new("umount").args(["-l", target]).status();
                }
            }
        }
    }
}

fn sandbox_config(uid: &str, logs: &Path) -> api::PodSandboxConfig {
    api::PodSandboxConfig {
        metadata: Some(api::PodSandboxMetadata {
            name: "web".into(),
            uid: uid.into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        hostname: String::new(),
        log_directory: logs.display().to_string(),
        labels: HashMap::new(),
        annotations: HashMap::new(),
        linux: Some(api::LinuxPodSandboxConfig {
            cgroup_parent: String::new(),
            security_context: Some(api::LinuxSandboxSecurityContext {
                namespace_options: Some(api::NamespaceOption {
                    network: api::NamespaceMode::Node as i32,
                    pid: api::NamespaceMode::Pod as i32,
                    ipc: api::NamespaceMode::Pod as i32,
                    target_id: String::new(),
                }),
                ..api::LinuxSandboxSecurityContext::default()
            }),
            sysctls: HashMap::new(),
        }),
    }
}

async fn image_tags(client: &mut CriClient) -> BTreeSet<String> {
    let snapshot = client.snapshot(None).await.expect("snapshot");
    snapshot
        .images
        .iter()
        .flat_map(|i| i.repo_tags.iter().cloned())
        .collect()
}

/// Policy flags that force space-based image GC on any disk: usage ≥ 1% triggers it and it
/// frees toward 0%, so every eligible image goes.
const FORCE: [&str; 6] = [
    "--image-gc-high-threshold",
    "1",
    "--image-gc-low-threshold",
    "0",
    "--minimum-image-ttl-duration",
    "0s",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_gc_removes_exactly_the_unused_images_and_surplus_containers() {
    // KGC_NODE_TEST_RECORDED=1 runs the fallback even where containerd works.
    let forced = std::env::var_os("KGC_NODE_TEST_RECORDED").is_some();
    if let Some(why) = containerd_unavailable().or(forced.then(|| "forced".to_string())) {
        println!(
            "NOTE: containerd cannot run here ({why}); running the scenario against the \
             recorded CRI snapshot fixtures/node_gc_snapshot.json instead"
        );
        recorded_snapshot_scenario();
        return;
    }
    let mut ctd = Containerd::start();
    let mut client = ctd.client().await;
    for name in [APP, UNUSED[0], UNUSED[1]] {
        ctd.import(name);
    }
    let logs = ctd.dir.path().join("pods");
    std::fs::create_dir_all(&logs).expect("logs dir");
    let sandbox = sandbox_config("uid-web", &logs);
    let sandbox_id = client
        .runtime_service()
        .run_pod_sandbox(api::RunPodSandboxRequest {
            config: Some(sandbox.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap_or_else(|e| panic!("RunPodSandbox: {e}\n{}", ctd.log()))
        .into_inner()
        .pod_sandbox_id;
    ctd.sandboxes.push(sandbox_id.clone());
    // Two dead (created, never started) attempts of one container: MaxPerPodContainer 1
    // keeps the newer, and both keep the app image in use.
    let mut containers = Vec::new();
    for attempt in 0..2 {
        let mut labels = HashMap::new();
        labels.insert(POD_UID_LABEL.to_string(), "uid-web".to_string());
        let id = client
            .runtime_service()
            .create_container(api::CreateContainerRequest {
                pod_sandbox_id: sandbox_id.clone(),
                config: Some(api::ContainerConfig {
                    metadata: Some(api::ContainerMetadata {
                        name: "app".into(),
                        attempt,
                    }),
                    image: Some(api::ImageSpec {
                        image: APP.into(),
                        ..api::ImageSpec::default()
                    }),
                    command: vec!["/pause".into()],
                    labels,
                    log_path: format!("app/{attempt}.log"),
                    ..api::ContainerConfig::default()
                }),
                sandbox_config: Some(sandbox.clone()),
            })
            .await
            .unwrap_or_else(|e| panic!("CreateContainer: {e}\n{}", ctd.log()))
            .into_inner()
            .container_id;
        containers.push(id);
        // Distinct creation times (nanoseconds), so "oldest" is well defined.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = image_tags(&mut client).await;
    for name in [APP, UNUSED[0], UNUSED[1]] {
        assert!(before.contains(name), "{name} imported: {before:?}");
    }
    let endpoint = ctd.endpoint();
    let base = [
        "node",
        "gc",
        "--runtime-endpoint",
        endpoint.as_str(),
        "-o",
        "json",
    ];

    // A dry run plans and removes nothing.
    let args: Vec<&str> = base
        .iter()
        .chain(FORCE.iter())
        .copied()
        .chain(["--dry-run"])
        .collect();
    let (ok, stdout, stderr) = Kgc::run(&args);
    assert!(ok, "kgc node gc --dry-run failed: {stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("json");
    assert!(doc["outcome"].is_null());
    let planned: BTreeSet<String> = doc["plan"]["images"]["removals"]
        .as_array()
        .expect("removals")
        .iter()
        .flat_map(|r| r["repoTags"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    assert_eq!(planned, UNUSED.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        image_tags(&mut client).await,
        before,
        "a dry run removes nothing"
    );

    // KGC_NODE_TEST_RECORD=FILE records the scenario's snapshot (the fallback's fixture).
    if let Some(path) = std::env::var_os("KGC_NODE_TEST_RECORD") {
        let (ok, stdout, stderr) = Kgc::run(&[
            "node",
            "snapshot",
            "--runtime-endpoint",
            &endpoint,
            "-o",
            "json",
        ]);
        assert!(ok, "kgc node snapshot: {stderr}");
        std::fs::write(path, stdout).expect("record");
    }

    // The real pass.
    let args: Vec<&str> = base.iter().chain(FORCE.iter()).copied().collect();
    let (_, stdout, stderr) = Kgc::run(&args);
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("kgc node gc output is not JSON ({e}): {stdout}\n{stderr}"));
    let outcome = &doc["outcome"];
    assert_eq!(outcome["failures"], serde_json::json!([]), "{stdout}");
    assert_eq!(outcome["images"], 2, "{stdout}");
    assert_eq!(outcome["containers"], 1, "{stdout}");
    let removed_container = doc["plan"]["containers"][0]["id"].as_str().expect("id");
    assert_eq!(removed_container, containers[0], "the older attempt goes");

    let after = image_tags(&mut client).await;
    assert!(after.contains(APP), "the in-use image stays: {after:?}");
    for name in UNUSED {
        assert!(!after.contains(name), "{name} removed: {after:?}");
    }
    let left: Vec<String> = client
        .snapshot(None)
        .await
        .expect("snapshot")
        .containers
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(left, [containers[1].clone()]);

    // Clean up through CRI, as the kubelet would.
    client
        .remove_pod_sandbox(&sandbox_id)
        .await
        .expect("RemovePodSandbox");
    ctd.sandboxes.clear();
}

/// The same scenario as recorded from containerd 1.6 (`kgc node snapshot -o json` just before
/// the pass), replayed as one pass by `kgc node simulate --days 0`.
fn recorded_snapshot_scenario() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node_gc_snapshot.json");
    let fixture = fixture.display().to_string();
    let mut args = vec![
        "node",
        "simulate",
        "--snapshot",
        fixture.as_str(),
        "--days",
        "0",
        "-o",
        "json",
    ];
    args.extend(FORCE);
    let (ok, stdout, stderr) = Kgc::run(&args);
    assert!(ok, "kgc node simulate failed: {stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("json");
    let events = doc["events"].as_array().expect("events");
    let images: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["kind"] == "image")
        .filter_map(|e| e["id"].as_str())
        .collect();
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).expect("fixture")).expect("json");
    let expected: BTreeSet<&str> = snapshot["images"]
        .as_array()
        .expect("images")
        .iter()
        .filter(|i| {
            i["repoTags"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| UNUSED.contains(&t.as_str().unwrap_or(""))))
        })
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert_eq!(images, expected);
    let containers: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "container")
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(containers.len(), 1, "{stdout}");
}
