//! The loopback client: a `kube::Client` that reaches this API server without a socket, as
//! kube-apiserver's own controllers reach it through its loopback client config
//! (`kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/server/config.go`,
//! `LoopbackClientConfig`, user `system:apiserver` in `system:masters`).
//!
//! Controllers running inside `kgc serve` write through it with typed k8s-openapi objects and
//! the whole API's semantics (admission, validation, defaulting, every patch type,
//! subresources such as `pods/binding`), and the same controller code runs unchanged against
//! any cluster with a `kube::Client` from a kubeconfig (`kgc controller`). Each request is one
//! call into the router: no TCP, no TLS, no HTTP framing.

use std::sync::Arc;

use kgc_auth::{SYSTEM_AUTHENTICATED, UserInfo};

use crate::ApiServer;

/// The identity of a loopback request, set by [`ApiServer::loopback_client`] only: a request
/// extension cannot come from the network, so no client can claim it.
#[derive(Clone)]
pub(crate) struct LoopbackUser(pub(crate) Arc<UserInfo>);

/// kube-apiserver's loopback identity.
pub const LOOPBACK_USER: &str = "system:apiserver";

impl ApiServer {
    /// A client of this API server for the controllers of the same process, authenticated as
    /// `system:apiserver` (`system:masters`) and exempt from the in-flight limits, as upstream's
    /// loopback client is exempt from priority and fairness.
    pub fn loopback_client(&self) -> kube::Client {
        let user = Arc::new(UserInfo {
            name: LOOPBACK_USER.to_owned(),
            uid: String::new(),
            groups: vec!["system:masters".to_owned(), SYSTEM_AUTHENTICATED.to_owned()],
            extra: Default::default(),
        });
        let router = self.clone().router();
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut req: axum::http::Request<kube::client::Body>| {
                req.extensions_mut().insert(LoopbackUser(Arc::clone(&user)));
                req
            })
            .service(router);
        kube::Client::new(service, "default")
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kgc_store::Store;
    use kube::api::{Api, ListParams, PostParams};

    use super::*;

    #[tokio::test]
    async fn a_typed_client_reaches_the_api_without_a_socket() {
        let store = Store::in_memory().await.unwrap();
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let api = ApiServer::new(store, "127.0.0.1:0".into(), shutdown);
        let client = api.loopback_client();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("loopback".into());
        let created = cms.create(&PostParams::default(), &cm).await.unwrap();
        assert!(created.metadata.uid.is_some());
        let listed = cms.list(&ListParams::default()).await.unwrap();
        assert_eq!(listed.items.len(), 1);
        let err = cms.get("missing").await.unwrap_err();
        assert!(matches!(err, kube::Error::Api(s) if s.code == 404));
    }
}
