//! Serving HTTPS: a TLS listener for `axum::serve` that asks for (but does not require) a client
//! certificate, and hands what that certificate authenticates to the request.
//!
//! Handshakes run on their own tasks (with a deadline), so one slow or hostile client never
//! holds up the accept loop. The handshake checks that a client holds its certificate's key but
//! not who signed it: as in kube-apiserver, a certificate from another CA completes the
//! handshake and is refused by the x509 authenticator ([`crate::x509`]) with a 401, once per
//! connection, before any request of that connection is served.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::Error;
use crate::x509::{CertAuth, ClientCertificates, RequestClientCert};

/// A client's handshake must finish within this.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// Connections that finished their handshake but are not yet picked up by the server.
const ACCEPT_BACKLOG: usize = 128;

/// Who is on the other end of a connection: its address and, when it presented a client
/// certificate, the user that certificate authenticates or why it authenticates nobody (decided
/// once per connection, so a request over a kept-alive connection only clones an `Arc`).
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub cert: Option<CertAuth>,
}

/// The server's TLS configuration and the authenticator of the client certificates it asks for.
pub struct ServerTls {
    config: Arc<rustls::ServerConfig>,
    clients: Arc<ClientCertificates>,
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// The rustls configuration: serve `cert_chain_pem` with `key_pem`, ask for client
/// certificates naming `client_ca_pem` as their issuer, and authenticate them against it.
pub fn server_config(
    cert_chain_pem: &str,
    key_pem: &str,
    client_ca_pem: &str,
) -> Result<ServerTls, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = CertificateDer::pem_slice_iter(cert_chain_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Tls(format!("the serving certificate: {e}")))?;
    if chain.is_empty() {
        return Err(Error::Tls(
            "the serving certificate file holds no certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| Error::Tls(format!("the serving key: {e}")))?;
    let cas = CertificateDer::pem_slice_iter(client_ca_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Tls(format!("the client CA: {e}")))?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in &cas {
        roots
            .add(ca.clone())
            .map_err(|e| Error::Tls(format!("the client CA: {e}")))?;
    }
    let clients = Arc::new(
        ClientCertificates::new(&cas, provider.signature_verification_algorithms)
            .map_err(|e| Error::Tls(format!("the client CA: {e}")))?,
    );
    let verifier = RequestClientCert::new(Arc::new(roots), provider.clone())
        .map_err(|e| Error::Tls(format!("the client certificate verifier: {e}")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(chain, key)
        .map_err(|e| Error::Tls(format!("the serving certificate and key: {e}")))?;
    // The server speaks HTTP/1.1 only (watches are chunked responses).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ServerTls {
        config: Arc::new(config),
        clients,
    })
}

/// A listener yielding connections whose TLS handshake has completed.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, Peer)>,
}

impl TlsListener {
    /// Starts accepting on `tcp`; handshakes run in the background.
    pub fn new(tcp: TcpListener, tls: ServerTls) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(ACCEPT_BACKLOG);
        let acceptor = TlsAcceptor::from(tls.config);
        let clients = tls.clients;
        tokio::spawn(async move {
            loop {
                let (stream, addr) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accepting a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                if tx.is_closed() {
                    return;
                }
                let (acceptor, tx, clients) = (acceptor.clone(), tx.clone(), clients.clone());
                tokio::spawn(async move {
                    let tls =
                        match tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(tls)) => tls,
                            Ok(Err(e)) => {
                                tracing::debug!(%addr, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%addr, "TLS handshake timed out");
                                return;
                            }
                        };
                    let cert = tls.get_ref().1.peer_certificates().map(|chain| {
                        let auth = clients.authenticate(chain, rustls::pki_types::UnixTime::now());
                        if let Err(why) = &auth {
                            tracing::debug!(%addr, %why, "client certificate refused");
                        }
                        auth
                    });
                    let _ = tx.send((tls, Peer { addr, cert })).await;
                });
            }
        });
        Ok(Self { local, ready })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept task only ends when this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer {
            addr: self.local,
            cert: None,
        })
    }
}
