//! The data directory of `kgc serve`: one process at a time, readable by its owner only.
//!
//! Two servers on one SQLite file would each keep their own state and hand out the same
//! revisions (split brain), so whatever writes into a data directory first takes an exclusive
//! lock on `kgc.lock` in it (as etcd locks its data directory), with its PID written inside
//! for the message the next one prints. The lock is `flock(2)`: the kernel drops it when the
//! process ends, however it ends, so a restart after `kill -9` is never blocked.
//!
//! The directory is 0700 and every file kgc keeps secrets in 0600 (the database and its WAL
//! and shared memory hold every Secret; the kubeconfig and `pki/` hold keys). A directory left
//! by an older kgc, which made them 0755/0644, is tightened when it is next opened.

use std::fs::{File, TryLockError};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::Context;

/// The lock file inside the data directory.
const LOCK_FILE: &str = "kgc.lock";

/// Files directly in the data directory that must be private.
const PRIVATE_FILES: [&str; 5] = [
    "kgc.db",
    "kgc.db-wal",
    "kgc.db-shm",
    "kubeconfig",
    LOCK_FILE,
];

/// A data directory this process holds; the lock lasts as long as the value.
pub struct DataDir {
    _lock: File,
}

impl DataDir {
    /// Creates `path` (0700) if needed, tightens what an older kgc left, and takes the lock;
    /// fails at once, naming the holder, when another process has it.
    pub fn lock(path: &Path) -> anyhow::Result<Self> {
        private_dir(path)?;
        let lock_path = path.join(LOCK_FILE);
        let mut lock = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = lock.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "another process".to_owned(),
                    pid => format!("process {pid}"),
                };
                anyhow::bail!(
                    "the data directory {} is in use by {holder} (another kgc serve or add-user): \
                     stop it, or choose another --data-dir",
                    path.display()
                );
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", lock_path.display()));
            }
        }
        tighten(path)?;
        lock.set_len(0)
            .and_then(|()| writeln!(lock, "{}", std::process::id()))
            .with_context(|| format!("writing {}", lock_path.display()))?;
        Ok(Self { _lock: lock })
    }
}

/// The file that says a data directory's cluster lives in etcd, and which.
const DATASTORE_FILE: &str = "datastore";

/// Refuses to start a data directory on another datastore than the one its cluster lives in:
/// a SQLite database (`kgc.db`) started on etcd, or a directory whose cluster is in etcd
/// started without it. Nothing is ever migrated silently. `etcd` names the etcd datastore of
/// this start (recorded for the next one), `None` for SQLite.
pub fn check_datastore(path: &Path, etcd: Option<&str>) -> anyhow::Result<()> {
    let marker = path.join(DATASTORE_FILE);
    let recorded = std::fs::read_to_string(&marker).ok();
    match (etcd, recorded) {
        (Some(_), _) if path.join("kgc.db").exists() => anyhow::bail!(
            "the data directory {} holds a SQLite database (kgc.db): its cluster does not move to \
             etcd (--datastore-endpoint) by itself; start without --datastore-endpoint, or choose \
             another --data-dir",
            path.display()
        ),
        (None, Some(recorded)) => anyhow::bail!(
            "the data directory {} belongs to a cluster kept in {}: start with \
             --datastore-endpoint, or choose another --data-dir",
            path.display(),
            recorded.trim()
        ),
        _ => Ok(()),
    }
}

/// Records in the data directory that its cluster is kept in `etcd`, once the store opened
/// there: a start that never reached etcd (a mistyped endpoint) leaves the directory as it was.
pub fn record_datastore(path: &Path, etcd: &str) -> anyhow::Result<()> {
    let marker = path.join(DATASTORE_FILE);
    let recorded = std::fs::read_to_string(&marker).ok();
    if recorded.as_deref().map(str::trim) == Some(etcd) {
        return Ok(());
    }
    std::fs::write(&marker, format!("{etcd}\n"))
        .with_context(|| format!("writing {}", marker.display()))
}

/// The SQLite database `kgc serve migrate` copies from: refuses a directory that is not a kgc
/// data directory, and one whose cluster already lives in etcd.
pub fn migratable(path: &Path) -> anyhow::Result<std::path::PathBuf> {
    if let Ok(recorded) = std::fs::read_to_string(path.join(DATASTORE_FILE)) {
        anyhow::bail!(
            "the data directory {} belongs to a cluster already kept in {}: there is nothing to \
             migrate",
            path.display(),
            recorded.trim()
        );
    }
    let db = path.join("kgc.db");
    if !db.is_file() {
        anyhow::bail!(
            "{} is not a kgc data directory (it has no kgc.db): give the --data-dir of a stopped \
             kgc serve that kept its cluster in SQLite",
            path.display()
        );
    }
    Ok(db)
}

/// After `kgc serve migrate`: records that the cluster is kept in `etcd` (so that a start
/// without `--datastore-endpoint` is refused), then keeps the SQLite files aside as
/// `kgc.db.migrated` (so that one with it is not refused for holding a SQLite database). In
/// that order: an interruption between the two leaves a directory no start accepts, never one
/// that starts on the stale copy.
pub fn retire_sqlite(path: &Path, etcd: &str) -> anyhow::Result<()> {
    record_datastore(path, etcd)?;
    for suffix in ["", "-wal", "-shm"] {
        let from = path.join(format!("kgc.db{suffix}"));
        let to = path.join(format!("kgc.db.migrated{suffix}"));
        match std::fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !suffix.is_empty() => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("renaming {} to {}", from.display(), to.display()));
            }
        }
    }
    Ok(())
}

/// Creates a directory (and its parents) readable by its owner only.
pub fn private_dir(path: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("creating the directory {}", path.display()))
}

/// Makes the directory 0700 and its private files 0600 (`pki/` too, certificates aside);
/// logs once what it changed.
fn tighten(dir: &Path) -> anyhow::Result<()> {
    let mut changed = Vec::new();
    let mut set = |path: &Path, mode: u32| -> anyhow::Result<()> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        if meta.file_type().is_symlink() || meta.permissions().mode() & 0o777 == mode {
            return Ok(());
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("making {} private", path.display()))?;
        changed.push(path.display().to_string());
        Ok(())
    };
    set(dir, 0o700)?;
    for name in PRIVATE_FILES {
        set(&dir.join(name), 0o600)?;
    }
    let pki = crate::tls::pki_dir(dir);
    set(&pki, 0o700)?;
    if let Ok(entries) = std::fs::read_dir(&pki) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "crt") {
                set(&path, 0o600)?;
            }
        }
    }
    if !changed.is_empty() {
        tracing::info!(
            files = %changed.join(", "),
            "made the data directory private (files readable by others, as an older kgc left them)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_second_holder_is_refused_and_an_old_directory_is_tightened() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        std::fs::create_dir_all(dir.join("pki")).unwrap();
        for (f, m) in [
            ("kgc.db", 0o644),
            ("pki/ca.key", 0o644),
            ("pki/ca.crt", 0o644),
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
            std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let held = DataDir::lock(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("kgc.db")), 0o600);
        assert_eq!(mode(&dir.join("pki")), 0o700);
        assert_eq!(mode(&dir.join("pki/ca.key")), 0o600);
        assert_eq!(mode(&dir.join("pki/ca.crt")), 0o644);
        assert_eq!(mode(&dir.join(LOCK_FILE)), 0o600);
        // flock locks belong to the open file: a second open in this process conflicts too.
        let err = DataDir::lock(&dir).err().unwrap().to_string();
        assert_eq!(
            err,
            format!(
                "the data directory {} is in use by process {} (another kgc serve or add-user): \
                 stop it, or choose another --data-dir",
                dir.display(),
                std::process::id()
            )
        );
        drop(held);
        DataDir::lock(&dir).unwrap();
    }
}
