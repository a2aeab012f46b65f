//! Label-selected listing of the set's scope, with the fallbacks that keep it honest.
//!
//! Every kind is listed cluster-wide first (one LIST per kind, whatever the number of
//! namespaces: Flux v1's per-namespace listing took minutes, fluxcd/flux#3573). A 403 on the
//! cluster-wide list falls back to one LIST per namespace of the inventory and the source
//! (kapp's fallback; qbec's second gotcha). Whatever still cannot be listed is *undetermined*:
//! its objects are not candidates and the run says so, instead of treating the kind as empty
//! the way qbec and Flux v1 do after a 403 (fluxcd/flux#2648). A kind the server no longer
//! serves (404) has no objects left to prune.

use std::collections::BTreeSet;
use std::future::Future;

use futures::StreamExt;
use serde_json::Value;

use crate::gvk::GroupKind;

/// A listable resource, resolved through discovery.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resource {
    pub gk: GroupKind,
    /// The version to list and delete through (the server's preferred one).
    pub version: String,
    pub plural: String,
    pub namespaced: bool,
}

/// Why a LIST failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListError {
    /// 403: not allowed at this scope.
    Forbidden(String),
    /// 404: the resource is not served (any more).
    NotFound,
    /// Anything else (5xx, transport).
    Failed(String),
}

/// Lists objects; the executor implements it with kube-rs, tests with a fake.
pub trait Lister: Sync {
    /// LISTs `resource` in `namespace` (all namespaces with `None`) with a label selector.
    fn list(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        selector: &str,
    ) -> impl Future<Output = Result<Vec<Value>, ListError>> + Send;
}

/// The live objects of one resource.
#[derive(Debug, Clone)]
pub struct Listed {
    pub resource: Resource,
    pub objects: Vec<Value>,
}

/// A kind (in one namespace, or everywhere with `None`) whose objects could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Undetermined {
    pub gk: GroupKind,
    pub namespace: Option<String>,
    pub reason: String,
}

/// How many LISTs run at once.
const CONCURRENCY: usize = 8;

/// Lists every resource with `selector`: cluster-wide, falling back per namespace over
/// `namespaces` on 403.
pub async fn list_scope<L: Lister>(
    lister: &L,
    resources: &[Resource],
    namespaces: &BTreeSet<String>,
    selector: &str,
) -> (Vec<Listed>, Vec<Undetermined>) {
    let results: Vec<_> = futures::stream::iter(resources)
        .map(|r| list_one(lister, r, namespaces, selector))
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let mut listed = Vec::new();
    let mut undetermined = Vec::new();
    for (l, u) in results {
        listed.push(l);
        undetermined.extend(u);
    }
    (listed, undetermined)
}

async fn list_one<L: Lister>(
    lister: &L,
    resource: &Resource,
    namespaces: &BTreeSet<String>,
    selector: &str,
) -> (Listed, Vec<Undetermined>) {
    let mut listed = Listed {
        resource: resource.clone(),
        objects: Vec::new(),
    };
    let undetermined = |namespace: Option<&str>, reason: String| Undetermined {
        gk: resource.gk.clone(),
        namespace: namespace.map(str::to_owned),
        reason,
    };
    match lister.list(resource, None, selector).await {
        Ok(objects) => listed.objects = objects,
        Err(ListError::NotFound) => {}
        Err(ListError::Forbidden(why)) if resource.namespaced => {
            tracing::info!(gk = %resource.gk, "cluster-wide list forbidden ({why}); listing per namespace");
            let mut missing = Vec::new();
            for ns in namespaces {
                match lister.list(resource, Some(ns), selector).await {
                    Ok(objects) => listed.objects.extend(objects),
                    Err(ListError::NotFound) => {}
                    Err(ListError::Forbidden(why) | ListError::Failed(why)) => {
                        missing.push(undetermined(Some(ns), why));
                    }
                }
            }
            return (listed, missing);
        }
        Err(ListError::Forbidden(why) | ListError::Failed(why)) => {
            return (listed, vec![undetermined(None, why)]);
        }
    }
    (listed, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// A lister that forbids cluster-wide lists of namespaced kinds and one namespace, and
    /// records every call.
    struct NamespaceUser {
        calls: Mutex<Vec<(String, Option<String>)>>,
    }

    impl Lister for NamespaceUser {
        fn list(
            &self,
            resource: &Resource,
            namespace: Option<&str>,
            _selector: &str,
        ) -> impl Future<Output = Result<Vec<Value>, ListError>> + Send {
            self.calls
                .lock()
                .unwrap()
                .push((resource.plural.clone(), namespace.map(str::to_owned)));
            let result = match (resource.plural.as_str(), namespace) {
                ("gone", _) => Err(ListError::NotFound),
                ("nodes", None) => Err(ListError::Forbidden("nodes is forbidden".into())),
                (_, None) => Err(ListError::Forbidden("cluster-wide list forbidden".into())),
                (_, Some("secret-ns")) => {
                    Err(ListError::Forbidden("forbidden in secret-ns".into()))
                }
                (_, Some(ns)) => Ok(vec![json!({"metadata": {"name": "x", "namespace": ns}})]),
            };
            async move { result }
        }
    }

    fn res(plural: &str, namespaced: bool) -> Resource {
        Resource {
            gk: GroupKind::new("", plural),
            version: "v1".into(),
            plural: plural.into(),
            namespaced,
        }
    }

    #[tokio::test]
    async fn forbidden_cluster_lists_fall_back_per_namespace_and_report_the_rest() {
        let lister = NamespaceUser {
            calls: Mutex::default(),
        };
        let nss: BTreeSet<String> = ["a", "b", "secret-ns"].map(String::from).into();
        let (listed, undetermined) = list_scope(
            &lister,
            &[
                res("configmaps", true),
                res("nodes", false),
                res("gone", true),
            ],
            &nss,
            "kgc.io/app",
        )
        .await;
        assert_eq!(
            listed[0].objects.len(),
            2,
            "a and b were listed per namespace"
        );
        assert!(listed[1].objects.is_empty() && listed[2].objects.is_empty());
        assert_eq!(
            undetermined,
            [
                Undetermined {
                    gk: GroupKind::new("", "configmaps"),
                    namespace: Some("secret-ns".into()),
                    reason: "forbidden in secret-ns".into()
                },
                Undetermined {
                    gk: GroupKind::new("", "nodes"),
                    namespace: None,
                    reason: "nodes is forbidden".into()
                },
            ]
        );
        let calls = lister.calls.lock().unwrap();
        assert_eq!(calls.len(), 4 + 1 + 1, "{calls:?}");
    }
}
