//! StorageClasses: kgc's default class, and what the binder and the provisioner read of a
//! class.
//!
//! A cluster installer ships a default class with its provisioner (kind's `standard`,
//! rancher/local-path-provisioner's `local-path`): `kgc serve` creates `standard` at start-up
//! when it is absent, and never touches it otherwise, so a user's edits (another default, other
//! parameters) or a deletion stand until the next start.

use std::collections::BTreeMap;

use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use crate::{PROVISIONER, Result, annotation, annotations};

/// The default class's name.
pub const DEFAULT_CLASS: &str = "standard";

/// `standard`: the default class, host-path volumes bound once a pod needs them, deleted with
/// their claim.
pub fn standard() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLASS.to_owned()),
            annotations: Some(BTreeMap::from([(
                annotations::IS_DEFAULT_CLASS.to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        provisioner: PROVISIONER.to_owned(),
        reclaim_policy: Some("Delete".to_owned()),
        volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
        ..StorageClass::default()
    }
}

/// Creates [`standard`] unless a class of that name exists.
pub async fn ensure_default(client: &kube::Client) -> Result<()> {
    let classes: Api<StorageClass> = Api::all(client.clone());
    if classes.get_opt(DEFAULT_CLASS).await?.is_some() {
        return Ok(());
    }
    match classes.create(&PostParams::default(), &standard()).await {
        Ok(_) => {
            tracing::info!(class = DEFAULT_CLASS, "created the default StorageClass");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether a class is marked default (kubernetes `pkg/volume/util/storageclass.go`,
/// `IsDefaultAnnotation`: the GA or the beta annotation, exactly `"true"`).
pub fn is_default(class: &StorageClass) -> bool {
    [
        annotations::IS_DEFAULT_CLASS,
        annotations::BETA_IS_DEFAULT_CLASS,
    ]
    .iter()
    .any(|a| annotation(&class.metadata, a) == Some("true"))
}

/// The default class among `classes` (`pkg/volume/util/storageclass.go` `GetDefaultClass`): of
/// those marked default, the newest, then the first by name.
pub fn default_class<'a>(
    classes: impl Iterator<Item = &'a StorageClass>,
) -> Option<&'a StorageClass> {
    classes.filter(|c| is_default(c)).max_by(|a, b| {
        let created = |c: &StorageClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
        created(a)
            .cmp(&created(b))
            .then_with(|| b.metadata.name.cmp(&a.metadata.name))
    })
}

/// `volumeBindingMode: WaitForFirstConsumer` (upstream's `IsDelayBindingMode`).
/// A class by name from the informer's cache, else from the API server: a class created just
/// before its claim may not be in the cache yet, and calling it missing would send a spurious
/// `ProvisioningFailed` and leave the claim waiting for a resync.
pub(crate) async fn get(
    cache: &kgc_runtime::informer::Cache<kgc_runtime::informer::Typed<StorageClass>>,
    client: &kube::Client,
    name: &str,
) -> Result<Option<StorageClass>> {
    if let Some(class) = cache.get(&(String::new(), name.to_owned())) {
        return Ok(Some(class.0));
    }
    Ok(Api::<StorageClass>::all(client.clone())
        .get_opt(name)
        .await?)
}

pub fn waits_for_first_consumer(class: &StorageClass) -> bool {
    class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
}

/// The class's reclaim policy; `Delete` when unset, as the API defaults it.
pub fn reclaim_policy(class: &StorageClass) -> String {
    class
        .reclaim_policy
        .clone()
        .unwrap_or_else(|| "Delete".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_is_the_default_host_path_class() {
        let s = standard();
        assert!(is_default(&s));
        assert!(waits_for_first_consumer(&s));
        assert_eq!(reclaim_policy(&s), "Delete");
        assert_eq!(s.provisioner, "kgc.io/host-path");
        let mut beta = StorageClass::default();
        beta.metadata.annotations = Some(BTreeMap::from([(
            annotations::BETA_IS_DEFAULT_CLASS.to_owned(),
            "true".to_owned(),
        )]));
        assert!(is_default(&beta));
        beta.metadata.annotations = Some(BTreeMap::from([(
            annotations::IS_DEFAULT_CLASS.to_owned(),
            "True".to_owned(),
        )]));
        assert!(!is_default(&beta));
    }

    #[test]
    fn the_newest_default_class_wins_then_the_first_name() {
        let class = |name: &str, secs: i64, default: bool| {
            let mut c = if default {
                standard()
            } else {
                StorageClass::default()
            };
            c.metadata.name = Some(name.to_owned());
            c.metadata.creation_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(secs).unwrap(),
                ));
            c
        };
        let name =
            |cs: &[StorageClass]| default_class(cs.iter()).and_then(|c| c.metadata.name.clone());
        assert_eq!(name(&[]), None);
        assert_eq!(name(&[class("a", 1, false)]), None);
        let cs = [
            class("old", 1, true),
            class("zeta", 2, true),
            class("beta", 2, true),
            class("newest", 3, false),
        ];
        assert_eq!(name(&cs).as_deref(), Some("beta"));
    }
}
