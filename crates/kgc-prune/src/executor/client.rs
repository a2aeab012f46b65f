//! The client side: the server's kinds (discovery) and the reads and writes of one run, through
//! kube-rs against any API server.

use std::collections::HashMap;
use std::sync::Arc;

use kgc_client::Cluster as _;
use kgc_meta::ResourceInfo;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;

use crate::Error;
use crate::desired::{Desired, KindResolver};
use crate::gvk::GroupKind;
use crate::listing::{ListError, Lister, Resource};
use crate::ownership::FIELD_MANAGER;

pub(super) fn kube_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let context = context.into();
    move |source| Error::Kube { context, source }
}

/// The server's kinds, from discovery.
#[derive(Debug, Default)]
pub struct ServerCatalog {
    /// (group, version, kind) → resource.
    exact: HashMap<(String, String, String), Resource>,
    /// Canonical group/kind → the resource at its most stable served version.
    pub(super) preferred: HashMap<GroupKind, Resource>,
}
impl KindResolver for ServerCatalog {
    fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<Resource> {
        self.exact
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
            .cloned()
    }
}

impl ServerCatalog {
    /// The resource to list and delete `gk` through.
    pub fn preferred(&self, gk: &GroupKind) -> Option<&Resource> {
        self.preferred.get(gk)
    }

    /// The kinds of discovery's resources: every served version of each resource that can be
    /// listed, read, deleted and patched, and each listable kind at its preferred version.
    fn from_resources(resources: &[Arc<ResourceInfo>]) -> Self {
        let mut c = ServerCatalog::default();
        for r in resources {
            let namespaced = r.namespaced();
            if ["list", "get", "delete", "patch"]
                .iter()
                .all(|v| r.supports(v))
            {
                for version in &r.versions {
                    c.exact.insert(
                        (r.group.clone(), version.clone(), r.kind.clone()),
                        Resource {
                            gk: GroupKind::new(&r.group, &r.kind),
                            version: version.clone(),
                            plural: r.plural.clone(),
                            namespaced,
                        },
                    );
                }
            }
            if !r.supports("list") {
                continue;
            }
            let canonical = GroupKind::new(crate::gvk::canonical_group(&r.group, &r.kind), &r.kind);
            // An alias group never shadows the canonical one.
            if canonical.group != r.group && c.preferred.contains_key(&canonical) {
                continue;
            }
            c.preferred.insert(
                canonical.clone(),
                Resource {
                    gk: canonical,
                    version: r.preferred_version().to_owned(),
                    plural: r.plural.clone(),
                    namespaced,
                },
            );
        }
        c
    }
}

/// The API server a deploy runs against: a client and the kinds the server serves.
pub struct ApiServer {
    client: Client,
    pub(super) catalog: ServerCatalog,
}
impl ApiServer {
    /// Discovers the server's kinds, through the discovery every kgc collector uses
    /// (aggregated discovery: two requests; the per-group documents for servers without it).
    pub async fn connect(client: Client) -> Result<Self, Error> {
        let resources = kgc_client::Remote::new(client.clone())
            .resources()
            .await
            .map_err(Error::Discovery)?;
        Ok(ApiServer {
            catalog: ServerCatalog::from_resources(&resources),
            client,
        })
    }

    pub fn catalog(&self) -> &ServerCatalog {
        &self.catalog
    }

    pub(super) fn api(&self, r: &Resource, namespace: &str) -> Api<DynamicObject> {
        let ar = api_resource(r);
        if r.namespaced && !namespace.is_empty() {
            Api::namespaced_with(self.client.clone(), namespace, &ar)
        } else {
            Api::all_with(self.client.clone(), &ar)
        }
    }

    pub(super) async fn get(
        &self,
        r: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.api(r, namespace)
            .get_opt(name)
            .await
            .map(|o| o.map(to_value))
            .map_err(kube_err(format!("getting {} {namespace}/{name}", r.gk)))
    }

    /// What the server would make of `d` (a server-side dry-run apply), for diffs.
    pub async fn dry_run_apply(&self, d: &Desired) -> Result<Value, Error> {
        self.apply(&d.resource, &d.object, true).await
    }

    /// Server-side applies `object` through `r` (force: kgc owns what it deploys).
    pub(super) async fn apply(
        &self,
        r: &Resource,
        object: &Value,
        dry_run: bool,
    ) -> Result<Value, Error> {
        let name = crate::str_at(object, "/metadata/name");
        let ns = crate::str_at(object, "/metadata/namespace");
        let pp = PatchParams {
            dry_run,
            force: true,
            field_manager: Some(FIELD_MANAGER.to_owned()),
            field_validation: None,
        };
        self.api(r, ns)
            .patch(name, &pp, &Patch::Apply(object))
            .await
            .map(to_value)
            .map_err(kube_err(format!("applying {} {}", r.gk, display(ns, name))))
    }
}

fn api_resource(r: &Resource) -> ApiResource {
    ApiResource {
        group: r.gk.group.clone(),
        version: r.version.clone(),
        api_version: if r.gk.group.is_empty() {
            r.version.clone()
        } else {
            format!("{}/{}", r.gk.group, r.version)
        },
        kind: r.gk.kind.clone(),
        plural: r.plural.clone(),
    }
}

pub(super) fn display(ns: &str, name: &str) -> String {
    if ns.is_empty() {
        name.to_owned()
    } else {
        format!("{ns}/{name}")
    }
}

fn to_value(o: DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

impl Lister for ApiServer {
    async fn list(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<Value>, ListError> {
        let api = self.api(resource, namespace.unwrap_or(""));
        let mut params = ListParams::default().labels(selector).limit(500);
        let mut out = Vec::new();
        loop {
            match api.list(&params).await {
                Ok(list) => {
                    let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                    out.extend(list.items.into_iter().map(to_value));
                    match next {
                        Some(c) => params = params.continue_token(&c),
                        None => return Ok(out),
                    }
                }
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    return Err(ListError::Forbidden(s.message.clone()));
                }
                Err(kube::Error::Api(s)) if s.code == 404 => return Err(ListError::NotFound),
                Err(e) => return Err(ListError::Failed(e.to_string())),
            }
        }
    }
}
