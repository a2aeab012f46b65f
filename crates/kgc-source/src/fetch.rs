//! Fetching into the bare cache repository: one per URL under the cache directory, reused
//! across runs, so a re-sync of a ref that did not move lists the remote's refs and transfers
//! nothing (a tip already in the cache is not negotiated). Runs of several processes on one
//! cache take turns under an OS file lock, released even when a process is killed.
//!
//! Only the asked-for ref is fetched, at depth 1, as source-controller's shallow clone does
//! (`fluxcd/pkg git/gogit/clone.go`); a commit is fetched by id (git's protocol v2 serves any
//! object id) and, being immutable, never again once cached.

use std::fs::File;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix::ObjectId;
use gix::remote::Direction;
use gix::remote::fetch::{Shallow, Status, Tags};
use gix::remote::ref_map;
use sha2::{Digest, Sha256};

use crate::{Error, GitRepository, Reference, auth};

/// The cache repository after a fetch, and the commit the reference resolved to.
pub(crate) struct Fetched {
    pub repo: gix::Repository,
    /// Held until the artifact is read: no other run recreates the cache meanwhile.
    _lock: std::fs::File,
    pub commit: ObjectId,
    /// Whether any object was received; false for an unchanged ref or a cached commit.
    pub transferred: bool,
}

pub(crate) fn fetch(source: &GitRepository, cache_dir: &Path) -> Result<Fetched, Error> {
    let redacted = auth::redact(&source.url);
    let url = redacted.as_ref();
    let invalid = |reason: String| Error::Invalid {
        url: url.to_owned(),
        reason,
    };
    source.reference.validate().map_err(invalid)?;
    let parsed = gix::url::parse(source.url.as_str()).map_err(|e| invalid(e.to_string()))?;
    source.auth.check_scheme(url, &parsed.scheme)?;

    let (mut repo, _lock) = open_cache(cache_dir, &source.url)?;
    if let Reference::Commit(hex) = &source.reference {
        let id = ObjectId::from_hex(hex.as_bytes()).map_err(|e| invalid(e.to_string()))?;
        if repo.find_commit(id).is_ok() {
            return Ok(Fetched {
                repo,
                _lock,
                commit: id,
                transferred: false,
            });
        }
    }
    source
        .auth
        .configure(&mut repo)
        .map_err(|err| Error::Fetch {
            url: url.to_owned(),
            source: err,
        })?;
    let account = source.auth.http_account(url, parsed.user())?;

    // reqwest is built without a TLS crypto provider (see the root Cargo.toml): ring, as kube.
    // Installed once per process; one installed before (by the binary) is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fetch_error = |err: gix::Error| Error::Fetch {
        url: url.to_owned(),
        source: err,
    };
    let remote = repo
        .remote_at(parsed)
        .and_then(|remote| {
            remote.with_refspecs(Some(source.reference.refspec().as_str()), Direction::Fetch)
        })
        .map_err(fetch_error)?
        .with_fetch_tags(Tags::None);
    let connection = remote.connect(Direction::Fetch).map_err(fetch_error)?;
    // A token answers every request for credentials; otherwise git's credential helpers do.
    let mut configured = connection.configured_credentials_for_current_url();
    let connection = connection.with_credentials(move |action| match &account {
        Some(account) => Ok(auth::answer(account, action)),
        None => configured(action),
    });
    // The remote lists only refs under the refspec's prefix (ls-refs with a ref-prefix).
    let prepare = connection
        .prepare_fetch(gix::progress::Discard, ref_map::Options::default())
        .map_err(fetch_error)?;
    let not_found = || Error::ReferenceNotFound {
        url: url.to_owned(),
        reference: source.reference.to_string(),
    };
    let tip = prepare
        .ref_map()
        .mappings
        .first()
        .and_then(|mapping| mapping.remote.as_id())
        .map(ToOwned::to_owned)
        .ok_or_else(not_found)?;
    // The tip is cached (the ref did not move, or moved to a commit fetched before): nothing to
    // negotiate. A shallow fetch would otherwise always receive a pack, if an empty one.
    let transferred = if repo.has_object(tip) {
        false
    } else {
        let depth = NonZeroU32::new(1).expect("1 is not zero");
        let outcome = prepare
            .with_shallow(Shallow::DepthAtRemote(depth))
            .receive(gix::progress::Discard, &AtomicBool::new(false))
            .map_err(fetch_error)?;
        matches!(outcome.status, Status::Change { write_pack_bundle, .. } if write_pack_bundle.index.num_objects > 0)
    };
    // An annotated tag names a tag object; the artifact is its commit.
    let commit = repo
        .find_object(tip)
        .and_then(|object| object.peel_to_commit())
        .map_err(|err| Error::Read {
            url: url.to_owned(),
            revision: source.reference.revision(tip),
            what: "the commit".into(),
            source: err,
        })?
        .id;
    Ok(Fetched {
        repo,
        _lock,
        commit,
        transferred,
    })
}

/// The cache repository of `url`, locked: named by a hash of the URL (which may carry a user
/// name, and must not become a path), created bare on first use. A repository that does not
/// open (a run killed while creating it) is made anew: it is only a cache.
fn open_cache(cache_dir: &Path, url: &str) -> Result<(gix::Repository, File), Error> {
    let digest = Sha256::digest(url.as_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let path = cache_dir.join(format!("{name}.git"));
    let cache_error =
        |path: &Path, source: Box<dyn std::error::Error + Send + Sync>| Error::Cache {
            path: path.to_owned(),
            source,
        };
    std::fs::create_dir_all(cache_dir).map_err(|e| cache_error(cache_dir, e.into()))?;
    let lock_path = cache_dir.join(format!("{name}.lock"));
    let lock = File::create(&lock_path)
        .and_then(|file| file.lock().map(|()| file))
        .map_err(|e| cache_error(&lock_path, e.into()))?;
    if path.exists() {
        match gix::open(&path) {
            Ok(repo) if repo.is_bare() => return Ok((repo, lock)),
            Ok(_) | Err(_) => {
                tracing::warn!(cache = %path.display(), "git cache does not open as a bare repository; recreating it");
                std::fs::remove_dir_all(&path).map_err(|e| cache_error(&path, e.into()))?;
            }
        }
    }
    // Made under another name and renamed: a run killed meanwhile leaves no half-made cache.
    let staging = cache_dir.join(format!("{name}.git.tmp"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| cache_error(&staging, e.into()))?;
    }
    gix::init_bare(&staging).map_err(|e| cache_error(&staging, e.into()))?;
    std::fs::rename(&staging, &path).map_err(|e| cache_error(&path, e.into()))?;
    let repo = gix::open(&path).map_err(|e| cache_error(&path, e.into()))?;
    Ok((repo, lock))
}
