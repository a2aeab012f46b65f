//! A CRI v1 client over a unix socket: records a [`Snapshot`] from a live runtime (containerd,
//! CRI-O) and carries a [`Plan`] out.
//!
//! Only the RPCs node GC needs are vendored (see `proto/README.md`). Every call has a deadline,
//! so a hung runtime is an error, not a hung `kgc`. The image filesystem's capacity comes from
//! statvfs of the mountpoint ImageFsInfo names, since CRI reports only used bytes (the kubelet
//! asks cadvisor the same way).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::Error;
use crate::plan::Plan;
use crate::snapshot::{Container, ContainerState, FsStats, Image, Sandbox, SandboxState, Snapshot};

/// The generated `runtime.v1` messages and clients.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod api {
    tonic::include_proto!("runtime.v1");
}

use api::image_service_client::ImageServiceClient;
use api::runtime_service_client::RuntimeServiceClient;

/// The label the kubelet puts on every container with its pod's uid.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";

/// The kubelet's default; large nodes list many images and containers.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// A connection to a container runtime's CRI socket.
#[derive(Clone)]
pub struct CriClient {
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

fn cri(rpc: &'static str) -> impl FnOnce(tonic::Status) -> Error {
    move |source| Error::Cri { rpc, source }
}

fn garbage(rpc: &'static str, what: String) -> Error {
    Error::Garbage { rpc, what }
}

/// The metadata of a listed `kind` named `id`: a container or sandbox without an id or
/// metadata fails the whole answer, since node GC could neither name nor judge it.
fn identified<'a, M>(
    rpc: &'static str,
    kind: &str,
    id: &str,
    metadata: Option<&'a M>,
) -> Result<&'a M, Error> {
    if id.is_empty() {
        return Err(garbage(rpc, format!("a {kind} has no id")));
    }
    metadata.ok_or_else(|| garbage(rpc, format!("{kind} {id}: no metadata")))
}

fn timestamp(rpc: &'static str, kind: &str, id: &str, ns: i64) -> Result<Timestamp, Error> {
    if ns <= 0 {
        return Err(garbage(
            rpc,
            format!("{kind} {id}: created_at {ns} is not > 0"),
        ));
    }
    Timestamp::from_nanosecond(i128::from(ns))
        .map_err(|e| garbage(rpc, format!("{kind} {id}: created_at {ns}: {e}")))
}

impl CriClient {
    /// Connects to `unix:///path` (or a bare path), failing after `timeout`; every later call
    /// fails after `timeout` too.
    pub async fn connect(endpoint: &str, timeout: Duration) -> Result<CriClient, Error> {
        let path = PathBuf::from(match endpoint.strip_prefix("unix://") {
            Some(p) => p,
            None if endpoint.starts_with('/') => endpoint,
            None => return Err(Error::Endpoint(endpoint.to_string())),
        });
        // The URI is required by tonic but unused: the connector dials the socket.
        let channel = Endpoint::from_static("http://cri.invalid")
            .connect_timeout(timeout)
            .timeout(timeout)
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
            .map_err(|source| Error::Connect {
                endpoint: endpoint.to_string(),
                source,
            })?;
        Ok(CriClient {
            runtime: RuntimeServiceClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            images: ImageServiceClient::new(channel).max_decoding_message_size(MAX_MESSAGE_BYTES),
        })
    }

    /// The runtime service, for RPCs kgc does not wrap (tests create sandboxes with it).
    pub fn runtime_service(&mut self) -> &mut RuntimeServiceClient<Channel> {
        &mut self.runtime
    }

    /// `Version`: a health check naming the runtime.
    pub async fn version(&mut self) -> Result<api::VersionResponse, Error> {
        let req = api::VersionRequest {
            version: "v1".to_string(),
        };
        Ok(self
            .runtime
            .version(req)
            .await
            .map_err(cri("Version"))?
            .into_inner())
    }

    /// Records what the runtime reports now. `pod_logs_dir`: where pod log directories live
    /// (listed only if it exists). The pods are unknown to the runtime, so `pods` is `None`.
    pub async fn snapshot(&mut self, pod_logs_dir: Option<&Path>) -> Result<Snapshot, Error> {
        let images = self
            .images
            .list_images(api::ListImagesRequest::default())
            .await
            .map_err(cri("ListImages"))?
            .into_inner()
            .images;
        let containers = self
            .runtime
            .list_containers(api::ListContainersRequest::default())
            .await
            .map_err(cri("ListContainers"))?
            .into_inner()
            .containers;
        let sandboxes = self
            .runtime
            .list_pod_sandbox(api::ListPodSandboxRequest::default())
            .await
            .map_err(cri("ListPodSandbox"))?
            .into_inner()
            .items;
        let fs_info = self
            .images
            .image_fs_info(api::ImageFsInfoRequest::default())
            .await
            .map_err(cri("ImageFsInfo"))?
            .into_inner();
        let time = Timestamp::now();
        let mountpoint = fs_info
            .image_filesystems
            .first()
            .and_then(|f| f.fs_id.as_ref())
            .map(|id| id.mountpoint.clone())
            .filter(|m| !m.is_empty())
            .ok_or_else(|| garbage("ImageFsInfo", "no image filesystem mountpoint".to_string()))?;
        let image_fs = fs_stats(Path::new(&mountpoint))?;
        let pod_log_dirs = match pod_logs_dir {
            Some(dir) if dir.is_dir() => list_dir(dir)?,
            _ => Vec::new(),
        };
        Ok(Snapshot {
            time,
            image_fs: Some(image_fs),
            images: images
                .iter()
                .map(Image::try_from)
                .collect::<Result<_, _>>()?,
            containers: containers
                .iter()
                .map(Container::try_from)
                .collect::<Result<_, _>>()?,
            sandboxes: sandboxes
                .iter()
                .map(Sandbox::try_from)
                .collect::<Result<_, _>>()?,
            pods: None,
            pod_log_dirs,
        })
    }

    pub async fn remove_image(&mut self, id: &str) -> Result<(), Error> {
        let req = api::RemoveImageRequest {
            image: Some(api::ImageSpec {
                image: id.to_string(),
                ..api::ImageSpec::default()
            }),
        };
        self.images
            .remove_image(req)
            .await
            .map_err(cri("RemoveImage"))?;
        Ok(())
    }

    pub async fn stop_container(&mut self, id: &str) -> Result<(), Error> {
        let req = api::StopContainerRequest {
            container_id: id.to_string(),
            timeout: 0,
        };
        self.runtime
            .stop_container(req)
            .await
            .map_err(cri("StopContainer"))?;
        Ok(())
    }

    pub async fn remove_container(&mut self, id: &str) -> Result<(), Error> {
        let req = api::RemoveContainerRequest {
            container_id: id.to_string(),
        };
        self.runtime
            .remove_container(req)
            .await
            .map_err(cri("RemoveContainer"))?;
        Ok(())
    }

    pub async fn stop_pod_sandbox(&mut self, id: &str) -> Result<(), Error> {
        let req = api::StopPodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.runtime
            .stop_pod_sandbox(req)
            .await
            .map_err(cri("StopPodSandbox"))?;
        Ok(())
    }

    pub async fn remove_pod_sandbox(&mut self, id: &str) -> Result<(), Error> {
        let req = api::RemovePodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.runtime
            .remove_pod_sandbox(req)
            .await
            .map_err(cri("RemovePodSandbox"))?;
        Ok(())
    }

    /// Carries a plan out in its order. A failure is recorded and the pass goes on, except
    /// that an image whose container could not be removed is kept (it may still be in use),
    /// and a sandbox that could not be stopped is not removed (the kubelet's rule).
    pub async fn execute(&mut self, plan: &Plan<'_>, pod_logs_dir: Option<&Path>) -> Outcome {
        let mut out = Outcome::default();
        let mut held_images: HashSet<&str> = HashSet::new();
        for c in &plan.containers {
            if c.stop_first
                && let Err(e) = self.stop_container(c.id).await
            {
                out.failed(format!("container {}", c.id), e);
                held_images.insert(c.image_id);
                continue;
            }
            match self.remove_container(c.id).await {
                Ok(()) => out.containers += 1,
                Err(e) => {
                    out.failed(format!("container {}", c.id), e);
                    held_images.insert(c.image_id);
                }
            }
        }
        for s in &plan.sandboxes {
            if let Err(e) = self.stop_pod_sandbox(s.id).await {
                out.failed(format!("sandbox {}", s.id), e);
                continue;
            }
            match self.remove_pod_sandbox(s.id).await {
                Ok(()) => out.sandboxes += 1,
                Err(e) => out.failed(format!("sandbox {}", s.id), e),
            }
        }
        if let Some(dir) = pod_logs_dir {
            for d in &plan.pod_log_dirs {
                // Names come from a directory listing or a snapshot: one plain component.
                if d.name.is_empty() || d.name.contains('/') || d.name == "." || d.name == ".." {
                    out.failures
                        .push(format!("pod log directory {:?}: not a plain name", d.name));
                    continue;
                }
                match std::fs::remove_dir_all(dir.join(d.name)) {
                    Ok(()) => out.pod_log_dirs += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => out
                        .failures
                        .push(format!("pod log directory {}: {e}", d.name)),
                }
            }
        }
        for i in &plan.images.removals {
            if held_images.contains(i.id.as_str()) {
                out.failures.push(format!(
                    "image {}: kept, a container using it could not be removed",
                    i.id
                ));
                continue;
            }
            match self.remove_image(&i.id).await {
                Ok(()) => {
                    out.images += 1;
                    out.image_bytes = out.image_bytes.saturating_add(i.size.unwrap_or(0));
                    out.removed_images.push(i.id.clone());
                }
                Err(e) => out.failed(format!("image {}", i.id), e),
            }
        }
        out
    }
}

/// What executing a plan did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub containers: u64,
    pub sandboxes: u64,
    pub pod_log_dirs: u64,
    pub images: u64,
    pub image_bytes: u64,
    pub removed_images: Vec<String>,
    /// One line per failed removal, naming the object.
    pub failures: Vec<String>,
}

impl Outcome {
    fn failed(&mut self, what: String, e: Error) {
        tracing::warn!("{what}: {e}");
        self.failures.push(format!("{what}: {e}"));
    }
}

/// Capacity and free space (for unprivileged users, as `df`) of the filesystem holding `path`.
pub fn fs_stats(path: &Path) -> Result<FsStats, Error> {
    let st = rustix::fs::statvfs(path).map_err(|e| Error::Statfs {
        path: path.display().to_string(),
        source: e.into(),
    })?;
    Ok(FsStats {
        mountpoint: path.display().to_string(),
        capacity_bytes: st.f_blocks.saturating_mul(st.f_frsize),
        available_bytes: st.f_bavail.saturating_mul(st.f_frsize),
    })
}

fn list_dir(dir: &Path) -> Result<Vec<String>, Error> {
    let read = |e: std::io::Error| Error::Statfs {
        path: dir.display().to_string(),
        source: e,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// A listed image as node GC sees it.
///
/// The conversions copy what they keep, from answers that are still whole, instead of moving
/// it out: moved, a container's ids lie among the labels and annotations the decoder
/// allocated between them, and planning a node of 100,000 containers measured 113 ms instead
/// of 96 (docs/BENCHMARKS.md). Public, so that `node_bench` records its node as `kgc node gc`
/// does.
impl TryFrom<&api::Image> for Image {
    type Error = Error;

    fn try_from(i: &api::Image) -> Result<Image, Error> {
        if i.id.is_empty() {
            return Err(garbage("ListImages", "an image has no id".to_string()));
        }
        Ok(Image {
            id: i.id.clone(),
            repo_tags: i.repo_tags.clone(),
            size: (i.size > 0).then_some(i.size),
            pinned: i.pinned,
            first_detected: None,
            last_used: None,
        })
    }
}

/// A listed container as node GC sees it (its pod uid from the kubelet's label).
impl TryFrom<&api::Container> for Container {
    type Error = Error;

    fn try_from(c: &api::Container) -> Result<Container, Error> {
        const RPC: &str = "ListContainers";
        let meta = identified(RPC, "container", &c.id, c.metadata.as_ref())?;
        // An unrecognised state (a newer runtime) is treated as running: never collected.
        let state = match api::ContainerState::try_from(c.state) {
            Ok(api::ContainerState::ContainerCreated) => ContainerState::Created,
            Ok(api::ContainerState::ContainerExited) => ContainerState::Exited,
            Ok(api::ContainerState::ContainerUnknown) => ContainerState::Unknown,
            Ok(api::ContainerState::ContainerRunning) | Err(_) => ContainerState::Running,
        };
        let created_at = timestamp(RPC, "container", &c.id, c.created_at)?;
        // Runtimes before CRI's image_id field put the image id in image_ref (containerd 1.6).
        let image_id = if c.image_id.is_empty() {
            &c.image_ref
        } else {
            &c.image_id
        };
        Ok(Container {
            id: c.id.clone(),
            sandbox_id: c.pod_sandbox_id.clone(),
            name: meta.name.clone(),
            attempt: meta.attempt,
            pod_uid: c.labels.get(POD_UID_LABEL).cloned(),
            image_id: image_id.clone(),
            state,
            created_at,
            finished_at: None,
        })
    }
}

/// A listed sandbox as node GC sees it.
impl TryFrom<&api::PodSandbox> for Sandbox {
    type Error = Error;

    fn try_from(s: &api::PodSandbox) -> Result<Sandbox, Error> {
        const RPC: &str = "ListPodSandbox";
        let meta = identified(RPC, "sandbox", &s.id, s.metadata.as_ref())?;
        // An unrecognised state is treated as ready: never collected.
        let state = match api::PodSandboxState::try_from(s.state) {
            Ok(api::PodSandboxState::SandboxNotready) => SandboxState::NotReady,
            Ok(api::PodSandboxState::SandboxReady) | Err(_) => SandboxState::Ready,
        };
        let created_at = timestamp(RPC, "sandbox", &s.id, s.created_at)?;
        Ok(Sandbox {
            id: s.id.clone(),
            pod_uid: meta.uid.clone(),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            attempt: meta.attempt,
            state,
            created_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_runtime_that_is_down_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("kgc-node-cri-{}", std::process::id()));
        let sock = dir.join("missing.sock");
        let err = CriClient::connect(
            &format!("unix://{}", sock.display()),
            Duration::from_secs(1),
        )
        .await
        .err()
        .expect("no runtime");
        assert!(err.to_string().contains("missing.sock"), "{err}");
        assert!(matches!(
            CriClient::connect("tcp://x", Duration::from_secs(1)).await,
            Err(Error::Endpoint(_))
        ));
    }

    /// A socket that accepts connections and then answers `reply` (nothing: a hung runtime).
    fn fake_runtime(reply: &'static [u8]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cri.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                use tokio::io::AsyncWriteExt as _;
                let _ = stream.write_all(reply).await;
                held.push(stream);
            }
        });
        (dir, format!("unix://{}", path.display()))
    }

    async fn list_against(reply: &'static [u8]) -> Error {
        let (_dir, endpoint) = fake_runtime(reply);
        let started = std::time::Instant::now();
        let timeout = Duration::from_millis(300);
        let result = match CriClient::connect(&endpoint, timeout).await {
            Ok(mut c) => c.snapshot(None).await.map(|_| ()),
            Err(e) => Err(e),
        };
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the deadline holds: {:?}",
            started.elapsed()
        );
        result.expect_err("no snapshot from a fake runtime")
    }

    #[tokio::test]
    async fn a_runtime_that_never_answers_times_out() {
        let err = list_against(b"").await;
        assert!(!err.to_string().is_empty());
    }

    #[tokio::test]
    async fn a_runtime_answering_garbage_is_an_error() {
        let err = list_against(b"HTTP/1.1 200 OK\r\n\r\nnot grpc at all").await;
        assert!(!err.to_string().is_empty());
    }

    #[test]
    fn garbage_from_the_runtime_is_refused_with_the_object_named() {
        let c = api::Container {
            id: "c1".into(),
            metadata: Some(api::ContainerMetadata {
                name: "app".into(),
                attempt: 0,
            }),
            created_at: 0,
            ..api::Container::default()
        };
        let err = Container::try_from(&c).expect_err("created_at 0");
        assert!(err.to_string().contains("container c1"), "{err}");
        let no_meta = api::PodSandbox {
            id: "s1".into(),
            created_at: 1,
            ..api::PodSandbox::default()
        };
        assert!(
            Sandbox::try_from(&no_meta)
                .expect_err("metadata")
                .to_string()
                .contains("s1")
        );
    }

    #[test]
    fn image_ref_stands_in_for_a_missing_image_id() {
        let mut labels = std::collections::HashMap::new();
        labels.insert(POD_UID_LABEL.to_string(), "uid-1".to_string());
        let c = api::Container {
            id: "c1".into(),
            metadata: Some(api::ContainerMetadata {
                name: "app".into(),
                attempt: 1,
            }),
            image_ref: "sha256:abc".into(),
            state: api::ContainerState::ContainerExited as i32,
            created_at: 1_000_000_000,
            labels,
            ..api::Container::default()
        };
        let c = Container::try_from(&c).expect("valid");
        assert_eq!(c.image_id, "sha256:abc");
        assert_eq!(c.pod_uid.as_deref(), Some("uid-1"));
        assert_eq!(c.state, ContainerState::Exited);
    }

    #[test]
    fn statvfs_of_a_directory() {
        let fs = fs_stats(Path::new("/")).expect("statvfs /");
        assert!(fs.capacity_bytes > 0 && fs.available_bytes <= fs.capacity_bytes);
    }
}
