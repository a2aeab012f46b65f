//! The SQLite backend: one file, written by one thread with group commit.
//!
//! The commit thread writes every waiting unit in one transaction and fsyncs once (WAL,
//! `synchronous=FULL`).
//!
//! Objects that expire (see [`crate::lease`]) live in their own table, `leased_objects`,
//! indexed by expiry, so that a start reads only the live ones and expired rows are deleted
//! in bounded batches ([`Op::PurgeExpired`]); the file is created with incremental
//! auto-vacuum, so the pages they free are given back to the file system.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, params};

use super::{Codec, Loaded, LoadedObject, Op, Unit};
use crate::object::StoredObject;
use crate::{Error, Result};

/// `secure_delete` makes SQLite zero the space a write frees, so that neither a deleted Secret
/// nor the plain text of one rewritten encrypted lingers in free pages.
///
/// Opens (creating if needed) the database, reads every object back (but the leased ones that
/// expired before `now`, in Unix milliseconds), rewrites those stored
/// with anything but the first encryption provider and key (a key rotation, or Secrets from
/// before encryption), and commits once, so that a disk that takes no writes fails the start
/// rather than the first write.
///
/// A new database file is created readable by its owner only; SQLite gives its WAL and
/// shared-memory files the database's mode.
pub(crate) fn open(path: &Path, codec: &Codec, now: i64) -> Result<(Connection, Loaded)> {
    let open_error = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| Error::Create {
            path: path.to_owned(),
            source,
        })?;
    let mut conn = Connection::open(path).map_err(open_error)?;
    conn.execute_batch(
        "PRAGMA auto_vacuum=INCREMENTAL;
         PRAGMA journal_mode=WAL;
         PRAGMA synchronous=FULL;
         PRAGMA secure_delete=ON;
         PRAGMA temp_store=MEMORY;
         CREATE TABLE IF NOT EXISTS objects (
             grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
             data TEXT NOT NULL,
             PRIMARY KEY (grp, resource, namespace, name)) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS leased_objects (
             grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
             data TEXT NOT NULL, expires INTEGER NOT NULL,
             UNIQUE (grp, resource, namespace, name));
         CREATE INDEX IF NOT EXISTS leased_objects_expiry ON leased_objects (expires);
         CREATE TABLE IF NOT EXISTS revision (id INTEGER PRIMARY KEY CHECK (id = 0), rv INTEGER NOT NULL);
         INSERT OR IGNORE INTO revision (id, rv) VALUES (0, 0);",
    )?;
    let revision: u64 = conn.query_row("SELECT rv FROM revision WHERE id = 0", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    let (objects, stale) = read_objects(&conn, codec, now)?;
    let txn = conn.transaction()?;
    {
        let mut rows = Rows::prepare(&txn)?;
        for &i in &stale {
            let (group, resource, object, expires) = &objects[i];
            rows.put(codec, group, resource, object, *expires)?;
        }
        txn.execute(RECORD_REVISION, params![revision as i64])?;
    }
    txn.commit()?;
    if !stale.is_empty() {
        // The old values are gone from the live pages (secure_delete zeroes what a write
        // frees), but older copies of those pages remain in the WAL until it is folded in.
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        tracing::info!(
            objects = stale.len(),
            "rewrote objects stored with an earlier encryption provider or key"
        );
    }
    let expired_rows = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM leased_objects WHERE expires <= ?1)",
        params![now],
        |r| r.get(0),
    )?;
    Ok((
        conn,
        Loaded {
            revision,
            objects,
            expired_rows,
        },
    ))
}

/// Every object of an existing database, for `kgc serve migrate`, without writing to it (no
/// table created, no stale row rewritten): read-only, so that a data directory left as it was
/// is the copy's source.
pub(crate) fn read_only(path: &Path, codec: &Codec, now: i64) -> Result<Vec<LoadedObject>> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
    let kgc: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'objects')",
        [],
        |r| r.get(0),
    )?;
    if !kgc {
        return Err(Error::Datastore(
            "not a kgc database (it has no objects table)".into(),
        ));
    }
    Ok(read_objects(&conn, codec, now)?.0)
}

/// Every object of `objects` and the live ones of `leased_objects` (expiring after `now`), and
/// the indexes of those not stored as the codec would store them now.
fn read_objects(
    conn: &Connection,
    codec: &Codec,
    now: i64,
) -> Result<(Vec<LoadedObject>, Vec<usize>)> {
    let mut objects = Vec::new();
    let mut stale = Vec::new();
    let live: [&dyn rusqlite::ToSql; 1] = [&now];
    for (query, args) in [
        (
            "SELECT grp, resource, namespace, name, data, NULL FROM objects",
            &[][..],
        ),
        (
            "SELECT grp, resource, namespace, name, data, expires FROM leased_objects WHERE expires > ?1",
            &live[..],
        ),
    ] {
        let mut stmt = conn.prepare(query)?;
        let mut rows = stmt.query(args)?;
        while let Some(row) = rows.next()? {
            let group: String = row.get(0)?;
            let resource: String = row.get(1)?;
            let namespace: String = row.get(2)?;
            let name: String = row.get(3)?;
            let data = match row.get_ref(4)? {
                ValueRef::Text(b) | ValueRef::Blob(b) => b,
                _ => &[][..],
            };
            let (object, is_stale) = codec.decode(&group, &resource, &namespace, &name, data)?;
            let expires: Option<i64> = row.get(5)?;
            if is_stale {
                stale.push(objects.len());
            }
            objects.push((group, resource, object, expires));
        }
    }
    Ok((objects, stale))
}

const RECORD_REVISION: &str = "UPDATE revision SET rv = max(rv, ?1) WHERE id = 0";

/// The statements that write object rows, prepared once per transaction.
struct Rows<'t> {
    put: rusqlite::CachedStatement<'t>,
    put_leased: rusqlite::CachedStatement<'t>,
    delete: rusqlite::CachedStatement<'t>,
    delete_leased: rusqlite::CachedStatement<'t>,
}

impl<'t> Rows<'t> {
    fn prepare(txn: &'t rusqlite::Transaction<'_>) -> Result<Self> {
        Ok(Self {
            put: txn.prepare_cached(
                "INSERT OR REPLACE INTO objects (grp, resource, namespace, name, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            put_leased: txn.prepare_cached(
                "INSERT OR REPLACE INTO leased_objects (grp, resource, namespace, name, data, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            delete: txn.prepare_cached(
                "DELETE FROM objects WHERE grp = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
            )?,
            delete_leased: txn.prepare_cached(
                "DELETE FROM leased_objects WHERE grp = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
            )?,
        })
    }

    /// Writes one object's row, encrypted as its resource's providers say; an object with an
    /// expiry goes to `leased_objects` (and leaves `objects`, where it was stored before its
    /// resource had a TTL).
    fn put(
        &mut self,
        codec: &Codec,
        group: &str,
        resource: &str,
        object: &StoredObject,
        expires: Option<i64>,
    ) -> Result<()> {
        let (ns, name) = (&object.namespace, &object.name);
        let sealed = codec.encode(group, resource, object)?;
        let raw: &str = &object.raw;
        let data: &dyn rusqlite::ToSql = match &sealed {
            Some(sealed) => sealed,
            None => &raw,
        };
        match expires {
            None => self.put.execute(params![group, resource, ns, name, data])?,
            Some(at) => {
                self.delete.execute(params![group, resource, ns, name])?;
                self.put_leased
                    .execute(params![group, resource, ns, name, data, at])?
            }
        };
        Ok(())
    }

    fn delete(
        &mut self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
        leased: bool,
    ) -> Result<()> {
        self.delete
            .execute(params![group, resource, namespace, name])?;
        if leased {
            self.delete_leased
                .execute(params![group, resource, namespace, name])?;
        }
        Ok(())
    }
}

/// Deletes up to `limit` expired rows; when none is left due (the backlog is gone), gives the
/// free pages back to the file system in the same transaction, so that whoever sees the last
/// row gone also sees the file shrunk.
fn purge_expired(txn: &rusqlite::Transaction<'_>, before: i64, limit: usize) -> Result<usize> {
    let deleted = txn.execute(
        "DELETE FROM leased_objects WHERE rowid IN
           (SELECT rowid FROM leased_objects WHERE expires <= ?1 ORDER BY expires LIMIT ?2)",
        params![before, limit as i64],
    )?;
    let more_due = deleted == limit
        && txn.query_row(
            "SELECT EXISTS(SELECT 1 FROM leased_objects WHERE expires <= ?1)",
            params![before],
            |r| r.get::<_, bool>(0),
        )?;
    if !more_due {
        // The pragma frees pages as its statement is stepped.
        let mut vacuum = txn.prepare("PRAGMA incremental_vacuum")?;
        let mut rows = vacuum.query([])?;
        while rows.next()?.is_some() {}
    }
    Ok(deleted)
}

/// A probe commit: records the highest revision handed out, then moves the WAL into the
/// database and empties it. The checkpoint needs the space the failed writes needed, and once
/// it passes the next write asks the file system for space again instead of reusing the pages
/// a failed write had taken, so a disk that is still full fails the probe.
pub(super) fn probe(conn: &mut Connection, rv: u64) -> rusqlite::Result<()> {
    let txn = conn.transaction()?;
    txn.execute(RECORD_REVISION, params![rv as i64])?;
    txn.commit()?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
}

pub(super) fn write_batch(conn: &mut Connection, codec: &Codec, batch: &[Unit]) -> Result<()> {
    let txn = conn.transaction()?;
    let mut purged = Vec::new();
    {
        let mut rows = Rows::prepare(&txn)?;
        for unit in batch {
            for op in &unit.ops {
                match op {
                    Op::Put {
                        group,
                        resource,
                        object,
                        expires,
                    } => rows.put(codec, group, resource, object, *expires)?,
                    Op::Delete {
                        group,
                        resource,
                        namespace,
                        name,
                        leased,
                    } => rows.delete(group, resource, namespace, name, *leased)?,
                    Op::PurgeExpired {
                        before,
                        limit,
                        deleted,
                    } => purged.push((purge_expired(&txn, *before, *limit)?, deleted)),
                }
            }
        }
        if let Some(last) = batch.last() {
            txn.execute(
                "UPDATE revision SET rv = max(rv, ?1) WHERE id = 0",
                params![last.rv as i64],
            )?;
        }
    }
    txn.commit()?;
    for (count, deleted) in purged {
        deleted.store(count, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use crate::testing::store_with_configmap;
    use crate::watch::{EventType, WatchEvent, WatchFilter};
    use crate::{Error, GroupResource, Options, Store};

    /// Arms (or disarms) a failure of every commit, injected with SQLite triggers through a
    /// second connection: the real commit path, and its real error handling, see it.
    fn inject_failure(path: &std::path::Path, armed: bool) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS fail (x);
             CREATE TRIGGER IF NOT EXISTS fail_put BEFORE INSERT ON objects
               WHEN EXISTS (SELECT 1 FROM fail) BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END;
             CREATE TRIGGER IF NOT EXISTS fail_rv BEFORE UPDATE ON revision
               WHEN EXISTS (SELECT 1 FROM fail) BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END;
             DELETE FROM fail;",
        )
        .unwrap();
        if armed {
            conn.execute("INSERT INTO fail VALUES (1)", []).unwrap();
        }
    }

    fn data(store: &Store, name: &str) -> Option<serde_json::Value> {
        store
            .get(&GroupResource::new("", "configmaps"), "ns", name)
            .map(|o| o.value()["data"].clone())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_commit_is_undone_and_the_store_recovers_by_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kgc.db");
        let (store, cm) = store_with_configmap(Some(path.clone()), "c0", json!({"v": "0"})).await;
        let from = store.revision();
        let mut watcher = store.watch(
            WatchFilter::new(GroupResource::new("", "configmaps")),
            Some(from),
        );

        inject_failure(&path, true);
        let update = |v: &'static str| {
            let (store, cm) = (store.clone(), cm.clone());
            async move {
                store
                    .update(&cm, "ns", "c0", None, false, |mut o| {
                        o["data"]["v"] = json!(v);
                        Ok(o)
                    })
                    .await
            }
        };
        let create = |name: &'static str| {
            let (store, cm) = (store.clone(), cm.clone());
            async move {
                let body = json!({"metadata": {"name": name}, "data": {"v": name}});
                store.create(&cm, "ns", body, false).await
            }
        };
        // Several writes at once: the failed batch and whatever queued behind it all fail.
        let (a, b, c) = tokio::join!(update("1"), create("c1"), update("2"));
        for r in [a.map(|_| ()), b.map(|_| ()), c.map(|_| ())] {
            match r {
                Err(Error::Failed(reason)) => assert!(reason.contains("injected"), "{reason}"),
                Err(Error::Api(s)) => panic!("unexpected API error {s:?}"),
                other => panic!("expected a failed commit, got {other:?}"),
            }
        }
        // Memory holds exactly what is committed; nothing was published.
        assert_eq!(data(&store, "c0"), Some(json!({"v": "0"})));
        assert_eq!(data(&store, "c1"), None);
        assert!(watcher.try_next().is_none());
        // Read-only, with the reason, until the disk takes writes again.
        assert!(store.failure().unwrap().contains("injected"));
        let refused = create("c2").await.unwrap_err();
        assert!(matches!(refused, Error::Failed(_)), "{refused:?}");
        let status = refused.status();
        assert_eq!(
            (status.code, status.message.as_str()),
            (
                500,
                "the store is read-only after a failed commit: injected: disk I/O error"
            )
        );

        inject_failure(&path, false);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while store.failure().is_some() {
            assert!(Instant::now() < deadline, "the store did not recover");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        create("c3").await.unwrap();
        match watcher.next().await {
            WatchEvent::Event(EventType::Added, o) => assert_eq!(o.name, "c3"),
            other => panic!("expected ADDED c3, got {other:?}"),
        }
        assert!(watcher.try_next().is_none());
        store.close();

        // What was acknowledged is on disk, and only that.
        let reopened = Store::open(&path).await.unwrap();
        assert_eq!(data(&reopened, "c0"), Some(json!({"v": "0"})));
        assert_eq!(data(&reopened, "c1"), None);
        assert_eq!(data(&reopened, "c3"), Some(json!({"v": "c3"})));
        assert!(reopened.revision() > from);
        reopened.close();
    }

    fn encryption(providers: &str) -> Option<std::sync::Arc<kgc_encryption::Transformers>> {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
        );
        let config = kgc_encryption::EncryptionConfig::parse(yaml.as_bytes(), "enc.yaml").unwrap();
        Some(std::sync::Arc::new(config.transformers().unwrap()))
    }

    /// The stored bytes of a Secret.
    fn row(path: &std::path::Path, name: &str) -> Vec<u8> {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT CAST(data AS BLOB) FROM objects WHERE resource = 'secrets' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn secrets_are_encrypted_on_disk_and_rewritten_with_the_first_key() {
        const K1: &str =
            "      - {name: k1, secret: MTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTE=}\n";
        const K2: &str =
            "      - {name: k2, secret: MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjI=}\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kgc.db");
        let open = |encryption| {
            Store::open_with(Options {
                path: Some(path.clone()),
                encryption,
                ..Options::default()
            })
        };
        // Before encryption: plain JSON.
        let store = open(None).await.unwrap();
        let secrets = store.catalog().get("", "v1", "secrets").unwrap().clone();
        let body = json!({"metadata": {"name": "s"}, "data": {"k": "c2VjcmV0LXZhbHVl"}});
        store
            .create(&secrets, "default", body, false)
            .await
            .unwrap();
        store.close();
        assert!(row(&path, "s").starts_with(b"{"));

        // Encryption on: the plain Secret is read (identity) and rewritten encrypted.
        let store = open(encryption(&format!(
            "  - aesgcm:\n      keys:\n{K1}  - identity: {{}}\n"
        )))
        .await
        .unwrap();
        store.close();
        let sealed = row(&path, "s");
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:k1:"), "{sealed:?}");
        assert!(!sealed.windows(12).any(|w| w == b"c2VjcmV0LXZh"));

        // Rotation: k2 first, k1 second; the start rewrites with k2, which then reads alone.
        let rotated = encryption(&format!("  - aesgcm:\n      keys:\n{K2}{K1}"));
        let store = open(rotated).await.unwrap();
        store.close();
        assert!(row(&path, "s").starts_with(b"k8s:enc:aesgcm:v1:k2:"));
        let store = open(encryption(&format!("  - aesgcm:\n      keys:\n{K2}")))
            .await
            .unwrap();
        let s = store
            .get(&GroupResource::new("", "secrets"), "default", "s")
            .unwrap();
        assert_eq!(s.value()["data"]["k"], "c2VjcmV0LXZhbHVl");
        store.close();

        // Without the key, the open fails naming the object.
        let Err(err) = open(encryption(&format!("  - aesgcm:\n      keys:\n{K1}"))).await else {
            panic!("opened without the key");
        };
        assert_eq!(
            err.to_string(),
            "unable to transform key \"/registry/secrets/default/s\": no matching key was found for the provided AES transformer"
        );
    }
}
