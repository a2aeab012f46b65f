//! Image references as containerd reports them: a pod's `image: nginx` is pulled as
//! `docker.io/library/nginx:latest`, its container status shows that name and an `imageID` of
//! the form `docker.io/library/nginx@sha256:…` (the repo digest), and the runtime knows the
//! image by its config digest `sha256:…`. The simulation derives both digests from the name,
//! so one name is one image on every node.

use sha2::{Digest, Sha256};

/// A pulled image's names and identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// `docker.io/library/nginx:latest` (or `…@sha256:…` when the pod named a digest).
    pub name: String,
    /// `docker.io/library/nginx@sha256:…`: the container status's `imageID`.
    pub repo_digest: String,
    /// `sha256:…`: the runtime's image id, the key of image GC.
    pub id: String,
}

/// Resolves a pod's image as containerd does with Docker Hub defaults
/// (github.com/distribution/reference `ParseNormalizedNamed` + `TagNameOnly`).
pub fn resolve(image: &str) -> ImageRef {
    let image = image.trim();
    let (path, digest) = match image.split_once('@') {
        Some((p, d)) => (p, Some(d)),
        None => (image, None),
    };
    // A tag is the part after the last ':' that is not part of a registry's host:port.
    let last = path.rsplit('/').next().unwrap_or(path);
    let (repo, tag) = match last.rsplit_once(':') {
        Some((_, t)) => (&path[..path.len() - t.len() - 1], Some(t)),
        None => (path, None),
    };
    let first = repo.split('/').next().unwrap_or(repo);
    let has_registry =
        repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let repo = if has_registry {
        repo.to_owned()
    } else if repo.contains('/') {
        format!("docker.io/{repo}")
    } else {
        format!("docker.io/library/{repo}")
    };
    let (name, repo_digest) = match digest {
        Some(d) => (format!("{repo}@{d}"), format!("{repo}@{d}")),
        None => {
            let name = format!("{repo}:{}", tag.unwrap_or("latest"));
            let d = sha256(&format!("manifest {name}"));
            (name, format!("{repo}@{d}"))
        }
    };
    let id = sha256(&format!("config {name}"));
    ImageRef {
        name,
        repo_digest,
        id,
    }
}

/// `sha256:<64 hex digits>` of `s`.
pub fn sha256(s: &str) -> String {
    format!("sha256:{}", hex(&Sha256::digest(s.as_bytes())))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized_as_containerd_does() {
        let n = |s: &str| resolve(s).name;
        assert_eq!(n("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(n("nginx:1.25"), "docker.io/library/nginx:1.25");
        assert_eq!(n("bitnami/redis"), "docker.io/bitnami/redis:latest");
        assert_eq!(
            n("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(n("localhost:5000/app"), "localhost:5000/app:latest");
        let pinned = resolve("busybox@sha256:abc");
        assert_eq!(pinned.name, "docker.io/library/busybox@sha256:abc");
        assert_eq!(pinned.repo_digest, pinned.name);
    }

    #[test]
    fn one_name_is_one_image() {
        let (a, b) = (resolve("nginx"), resolve("docker.io/library/nginx:latest"));
        assert_eq!(a, b);
        assert!(a.repo_digest.starts_with("docker.io/library/nginx@sha256:"));
        assert_eq!(a.id.len(), "sha256:".len() + 64);
        assert_ne!(a.id, resolve("nginx:1.25").id);
    }
}
