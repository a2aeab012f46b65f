//! The service-accounts controller (kubernetes `pkg/controller/serviceaccount/
//! serviceaccounts_controller.go`): every active namespace has a ServiceAccount named
//! `default`, which pods run as unless they name another (the ServiceAccount admission plugin
//! defaults `spec.serviceAccountName` to it and refuses pods whose account is missing). It is
//! created when a namespace appears (and, at start-up, for every namespace there is), and again
//! whenever it is deleted; a terminating namespace is left alone.

use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use kgc_client::Cluster;
use kgc_runtime::informer::View;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::Value;

use kgc_runtime::{Context, run_per_namespace};

use crate::{Result, namespace_unusable};

/// The name `--controllers` knows it by.
pub const NAME: &str = "serviceaccount";
/// The account every namespace gets (upstream `DefaultServiceAccountsControllerOptions`).
pub const DEFAULT: &str = "default";
/// Upstream `--concurrent-serviceaccount-syncs`' default.
const WORKERS: usize = 1;
/// The field manager of its writes.
const MANAGER: &str = "kgc-serviceaccount";

/// What the controller keeps of a ServiceAccount: whether it is a `default` one.
#[derive(Debug, Clone, PartialEq)]
struct DefaultAccount;

impl View for DefaultAccount {
    fn view(obj: &Value) -> Option<Self> {
        (obj["metadata"]["name"] == DEFAULT).then_some(DefaultAccount)
    }
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let sync = async |ctx: Context<C>, ns: String, current: Option<DefaultAccount>| {
        if current.is_some() {
            return Ok(None);
        }
        create(&ctx, &ns).await
    };
    let accounts = ("", "serviceaccounts");
    run_per_namespace::<C, DefaultAccount, _, _, _>(ctx, NAME, accounts, DEFAULT, WORKERS, sync)
        .await;
}

/// Creates the `default` account of `ns` (upstream `syncNamespace`): one that exists already
/// (the cache was behind) is fine, and so is a namespace that went or started terminating.
async fn create<C: Cluster>(ctx: &Context<C>, ns: &str) -> Result<Option<Duration>> {
    let api: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), ns);
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(DEFAULT.to_owned()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    match api.create(&params, &account).await {
        Ok(_) => {
            tracing::debug!(controller = NAME, namespace = %ns, "created the default service account");
            Ok(None)
        }
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(None),
        Err(e) if namespace_unusable(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_default_accounts_are_kept() {
        assert_eq!(
            DefaultAccount::view(&json!({"metadata": {"name": "default", "namespace": "a"}})),
            Some(DefaultAccount)
        );
        assert_eq!(
            DefaultAccount::view(&json!({"metadata": {"name": "robot"}})),
            None
        );
    }
}
