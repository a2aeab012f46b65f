//! `kgc serve migrate`: a stopped SQLite data directory's objects copied into etcd.
//!
//! The copy is what a start on etcd would find had the cluster always lived there: each object
//! under its key in kube-apiserver's layout (see [`crate::backend::etcd`]), encoded (Secrets
//! encrypted) as the etcd backend writes it, one put per object in the order of the
//! `resourceVersion`s SQLite gave them. Their new `resourceVersion`s are etcd's revisions of
//! those puts: the same order, other numbers (etcd numbers its revisions itself), so clients
//! list again after the move, as after any restore. Uids, owner references, finalizers and
//! timestamps are in the objects and move with them.

use std::path::Path;
use std::sync::Arc;

use crate::backend::{Codec, LoadedObject, etcd};
use crate::{Clock, EtcdOptions, Result};

/// The objects of a SQLite database, in revision order.
pub struct Source {
    objects: Vec<LoadedObject>,
}

impl Source {
    /// Reads every live object of the database at `path` without writing to it. `encryption`
    /// is the data directory's (what its Secrets were encrypted with); leased objects that
    /// expired before `clock`'s now are left behind, as a start would leave them.
    pub fn read_sqlite(
        path: &Path,
        encryption: Option<Arc<kgc_encryption::Transformers>>,
        clock: Clock,
    ) -> Result<Self> {
        let codec = Codec::new(encryption);
        let now = clock.now().as_millisecond();
        let mut objects = crate::backend::sqlite::read_only(path, &codec, now)?;
        objects.sort_by(|a, b| {
            let key = |o: &LoadedObject| (o.2.resource_version, o.0.clone(), o.1.clone());
            key(a)
                .cmp(&key(b))
                .then_with(|| (&a.2.namespace, &a.2.name).cmp(&(&b.2.namespace, &b.2.name)))
        });
        Ok(Self { objects })
    }

    /// How many objects there are to copy.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// An etcd cluster whose prefix holds nothing, ready to take a [`Source`].
pub struct Target(etcd::Target);

/// Where a copy landed: etcd's revisions of the first and last object put.
#[derive(Debug, Clone, Copy)]
pub struct Copied {
    pub first: u64,
    pub last: u64,
}

impl Target {
    /// Connects, and refuses an etcd that does not answer within 10 s or whose prefix already
    /// holds any key (one line each).
    pub async fn connect(opts: &EtcdOptions) -> Result<Self> {
        Ok(Self(etcd::Target::connect(opts).await?))
    }

    /// Copies `source`, encoding with `encryption` (the configuration the servers on etcd
    /// will read with). Nothing is left in etcd when it fails.
    pub async fn copy(
        &self,
        source: &Source,
        encryption: Option<Arc<kgc_encryption::Transformers>>,
    ) -> Result<Copied> {
        let (first, last) = self
            .0
            .copy(&Codec::new(encryption), &source.objects)
            .await?;
        Ok(Copied { first, last })
    }
}

#[cfg(test)]
mod tests {
    use etcd_client::{Client, GetOptions};
    use kgc_testsupport::EtcdCluster;

    use super::{Source, Target};
    use crate::object::StoredObject;
    use crate::{Error, EtcdOptions};

    fn config_map(name: &str, rv: u64) -> crate::backend::LoadedObject {
        let raw = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"{rv}"}}}}"#
        );
        let object = StoredObject::from_raw(raw.into_boxed_str()).unwrap();
        ("".into(), "configmaps".into(), object, None)
    }

    /// A copy that fails half-way (here: a key taken before its put, as another writer on the
    /// prefix would take it) removes what it put: etcd is left as it was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_copy_that_fails_half_way_leaves_nothing_in_etcd() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let target = Target::connect(&EtcdOptions::new(cluster.endpoint_list()))
            .await
            .unwrap();
        // The same key twice: the second put finds it taken.
        let source = Source {
            objects: vec![config_map("a", 1), config_map("b", 2), config_map("a", 3)],
        };
        let Err(Error::Datastore(message)) = target.copy(&source, None).await else {
            panic!("the copy succeeded");
        };
        assert_eq!(
            message,
            "/registry/configmaps/ns/a appeared in etcd during the copy: another writer uses the \
             prefix (nothing was kept in etcd)"
        );
        let mut etcd = Client::connect(cluster.endpoint_list(), None)
            .await
            .unwrap();
        let left = etcd
            .get("/registry/", Some(GetOptions::new().with_prefix()))
            .await
            .unwrap();
        assert_eq!(left.count(), 0);

        // The same target, given a source without the clash, copies in order.
        let source = Source {
            objects: vec![config_map("a", 1), config_map("b", 2)],
        };
        let copied = target.copy(&source, None).await.unwrap();
        assert_eq!(copied.last, copied.first + 1);
        let b = etcd.get("/registry/configmaps/ns/b", None).await.unwrap();
        assert_eq!(b.kvs()[0].mod_revision() as u64, copied.last);
    }
}
