//! `kgc serve`'s security: TLS by default, authentication and RBAC, or, only on loopback and
//! only when asked, the plain-HTTP insecure port.
//!
//! `--insecure-http` is kube-apiserver's old insecure port (`--insecure-port`, removed in 1.20):
//! no TLS, no authentication, no authorization. It is refused unless the listen address is
//! loopback, so it only ever trusts processes on the same host.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kgc_apiserver::ApiServer;
use kgc_apiserver::authn::Authenticator;
use kgc_apiserver::authz::Rbac;
use kgc_apiserver::serviceaccount::{DEFAULT_ISSUER, ServiceAccountTokens};
use kgc_apiserver::tls::TlsListener;
use kgc_store::Store;

use crate::tls::{BroughtCert, Pki, pki_dir};

#[derive(clap::Args)]
pub struct SecurityArgs {
    /// Serve plain HTTP with no authentication or authorization (kube-apiserver's old insecure
    /// port). Only allowed on a loopback --listen address.
    #[arg(long)]
    insecure_http: bool,
    /// Serve this certificate (PEM, chain allowed) instead of the one kgc creates.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Static bearer tokens: CSV rows `token,user,uid,"group1,group2"` (kube-apiserver's
    /// --token-auth-file).
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// `iss` of the service-account tokens this server issues and accepts (also their audience).
    #[arg(long, default_value = DEFAULT_ISSUER)]
    service_account_issuer: String,
}

/// What a secure server runs with.
pub struct Security {
    pki: Pki,
    token_auth_file: Option<PathBuf>,
    issuer: String,
}

impl SecurityArgs {
    /// Refuses the insecure port anywhere but loopback, and TLS flags with it.
    pub fn check_listen(&self, listen: SocketAddr) -> anyhow::Result<()> {
        if !self.insecure_http {
            return Ok(());
        }
        if !listen.ip().is_loopback() {
            anyhow::bail!(
                "--insecure-http serves without TLS, authentication or authorization, so it is \
                 refused on {listen}: listen on a loopback address (127.0.0.1 or [::1]), or drop \
                 --insecure-http"
            );
        }
        if self.tls_cert_file.is_some() || self.token_auth_file.is_some() {
            anyhow::bail!(
                "--insecure-http serves plain HTTP without authentication: it cannot be combined \
                 with --tls-cert-file or --token-auth-file"
            );
        }
        Ok(())
    }

    /// Loads or creates the PKI; `None` for the insecure port.
    pub fn prepare(
        &self,
        data_dir: &Path,
        in_memory: bool,
        listen: SocketAddr,
    ) -> anyhow::Result<Option<Security>> {
        if self.insecure_http {
            return Ok(None);
        }
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        if listen.ip().is_unspecified() {
            if let Some(h) = hostname() {
                hosts.push(h);
            }
        } else if !hosts.contains(&listen.ip().to_string()) {
            hosts.push(listen.ip().to_string());
        }
        let brought = self
            .tls_cert_file
            .clone()
            .zip(self.tls_private_key_file.clone())
            .map(|(cert_file, key_file)| BroughtCert {
                cert_file,
                key_file,
            });
        let dir = (!in_memory).then(|| pki_dir(data_dir));
        let pki = Pki::load_or_create(dir.as_deref(), &hosts, brought.as_ref())?;
        Ok(Some(Security {
            pki,
            token_auth_file: self.token_auth_file.clone(),
            issuer: self.service_account_issuer.clone(),
        }))
    }
}

impl Security {
    /// The admin kubeconfig: trusts the server's CA, authenticates as `kgc-admin`.
    pub fn kubeconfig(&self, server_url: &str) -> String {
        crate::serve::kubeconfig(server_url, Some((&self.pki.server_ca_pem, &self.pki.admin)))
    }

    /// The PEM bundle clients verify this server with, which the root-CA publisher puts in
    /// every namespace's `kube-root-ca.crt`.
    pub fn root_ca(&self) -> &str {
        &self.pki.server_ca_pem
    }

    /// Turns on authentication (and authorization) in the API server; returns the tasks that
    /// keep them current.
    pub async fn secure(
        &self,
        api: ApiServer,
        store: &Store,
        informers: &kgc_runtime::informer::Informers<kgc_inprocess::InProcess>,
    ) -> anyhow::Result<(ApiServer, Vec<tokio::task::JoinHandle<()>>)> {
        let sa = ServiceAccountTokens::new(&self.pki.service_account_key_der, &self.issuer)
            .context("loading the service-account signing key")?;
        let mut authn = Authenticator::new(store.clone()).with_service_accounts(Arc::new(sa));
        if let Some(path) = &self.token_auth_file {
            authn = authn.with_token_file(path)?;
        }
        let (rbac, follower) = Rbac::start(store, informers)
            .await
            .context("loading the RBAC policy")?;
        let tasks = vec![tokio::spawn(Rbac::run(store.clone(), follower))];
        Ok((
            api.with_authentication(authn).with_authorization(rbac),
            tasks,
        ))
    }

    /// The HTTPS listener over `tcp`.
    pub fn listener(&self, tcp: tokio::net::TcpListener) -> anyhow::Result<TlsListener> {
        let tls = kgc_apiserver::tls::server_config(
            &self.pki.serving.cert_pem,
            &self.pki.serving.key_pem,
            &self.pki.ca.cert_pem,
        )?;
        Ok(TlsListener::new(tcp, tls)?)
    }
}

/// This host's name, for the serving certificate of a server listening on every address.
fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}
