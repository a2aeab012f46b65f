//! Durability: one SQLite file, written by one thread with group commit.
//!
//! Writers hand a [`Unit`] (the rows one API write changes, and its watch events) to the commit
//! thread and wait. The thread takes every unit that is waiting, writes them all in one
//! transaction, fsyncs once (WAL, `synchronous=FULL`), and only then publishes their watch events
//! and acknowledges the writers. So an acknowledged write survives `kill -9` and power loss, a
//! watcher never sees a write that could still be lost, and the fsync cost is shared by every
//! writer that arrived while the previous commit was on disk.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use crate::object::StoredObject;
use crate::watch::Event;
use crate::{Error, Result};

/// The most units one transaction takes; bounds commit latency under a flood.
const MAX_BATCH: usize = 4096;

/// A row change.
#[derive(Debug)]
pub(crate) enum Op {
    Put {
        group: String,
        resource: String,
        object: Arc<StoredObject>,
    },
    Delete {
        group: String,
        resource: String,
        namespace: String,
        name: String,
    },
}

/// What one API write commits.
pub(crate) struct Unit {
    pub rv: u64,
    pub ops: Vec<Op>,
    pub events: Vec<Arc<Event>>,
    pub done: oneshot::Sender<Result<()>>,
}

/// Everything loaded from disk at start.
pub(crate) struct Loaded {
    pub revision: u64,
    /// (group, resource, object)
    pub objects: Vec<(String, String, Arc<StoredObject>)>,
}

/// Opens (creating if needed) the database and reads every object back.
pub(crate) fn open(path: &Path) -> Result<(Connection, Loaded)> {
    let conn = Connection::open(path).map_err(|e| Error::Open {
        path: path.to_owned(),
        source: e,
    })?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=FULL;
         PRAGMA temp_store=MEMORY;
         CREATE TABLE IF NOT EXISTS objects (
             grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
             data TEXT NOT NULL,
             PRIMARY KEY (grp, resource, namespace, name)) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS revision (id INTEGER PRIMARY KEY CHECK (id = 0), rv INTEGER NOT NULL);
         INSERT OR IGNORE INTO revision (id, rv) VALUES (0, 0);",
    )?;
    let revision: u64 = conn.query_row("SELECT rv FROM revision WHERE id = 0", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    let mut objects = Vec::new();
    {
        let mut stmt = conn.prepare("SELECT grp, resource, data FROM objects")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let group: String = row.get(0)?;
            let resource: String = row.get(1)?;
            let data: String = row.get(2)?;
            let object = StoredObject::from_raw(data.into_boxed_str())
                .map_err(|s| Error::Corrupt(format!("{resource}.{group}: {}", s.message)))?;
            objects.push((group, resource, object));
        }
    }
    Ok((conn, Loaded { revision, objects }))
}

/// The commit thread's handle.
pub(crate) struct Committer {
    tx: mpsc::Sender<Unit>,
    thread: JoinHandle<()>,
}

impl Committer {
    /// Starts the commit thread. `publish` runs after each successful commit with the events in
    /// revision order; `fail` runs once if a commit fails, after which the store refuses writes.
    pub fn start(
        mut conn: Connection,
        publish: impl Fn(Vec<Arc<Event>>, u64) + Send + 'static,
        fail: impl Fn(&str) + Send + 'static,
    ) -> Self {
        let (tx, rx) = mpsc::channel::<Unit>();
        let thread = std::thread::Builder::new()
            .name("kgc-commit".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(u) => batch.push(u),
                            Err(_) => break,
                        }
                    }
                    match write_batch(&mut conn, &batch) {
                        Ok(()) => {
                            let rv = batch.last().map(|u| u.rv).unwrap_or_default();
                            let mut events = Vec::new();
                            let mut acks = Vec::with_capacity(batch.len());
                            for u in batch {
                                events.extend(u.events);
                                acks.push(u.done);
                            }
                            publish(events, rv);
                            for a in acks {
                                let _ = a.send(Ok(()));
                            }
                        }
                        Err(e) => {
                            let msg = e.to_string();
                            tracing::error!(error = %msg, "commit failed; the store is now read-only");
                            fail(&msg);
                            for u in batch {
                                let _ = u.done.send(Err(Error::Failed(msg.clone())));
                            }
                        }
                    }
                }
                // All senders are gone: checkpoint so the next start reads one file.
                let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
            })
            .expect("spawning the commit thread");
        Self { tx, thread }
    }

    /// Queues a unit; the caller awaits `unit.done`.
    pub fn submit(&self, unit: Unit) -> std::result::Result<(), Unit> {
        self.tx.send(unit).map_err(|e| e.0)
    }

    /// Commits what is queued and stops the thread.
    pub fn close(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

fn write_batch(conn: &mut Connection, batch: &[Unit]) -> rusqlite::Result<()> {
    let txn = conn.transaction()?;
    {
        let mut put = txn.prepare_cached(
            "INSERT OR REPLACE INTO objects (grp, resource, namespace, name, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut del = txn.prepare_cached(
            "DELETE FROM objects WHERE grp = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        for unit in batch {
            for op in &unit.ops {
                match op {
                    Op::Put {
                        group,
                        resource,
                        object,
                    } => {
                        put.execute(params![
                            group,
                            resource,
                            object.namespace,
                            object.name,
                            &*object.raw
                        ])?;
                    }
                    Op::Delete {
                        group,
                        resource,
                        namespace,
                        name,
                    } => {
                        del.execute(params![group, resource, namespace, name])?;
                    }
                }
            }
        }
        if let Some(last) = batch.last() {
            txn.execute(
                "UPDATE revision SET rv = ?1 WHERE id = 0",
                params![last.rv as i64],
            )?;
        }
    }
    txn.commit()
}
