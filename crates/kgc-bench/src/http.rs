//! A minimal HTTP/1.1 client: one keep-alive connection per benchmark client, requests sent one
//! after the other on it, as a sequential Kubernetes client would.

use std::net::SocketAddr;

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// One keep-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        Self::over(stream, addr).await
    }

    /// HTTP/1.1 over an established stream to `addr` (plain TCP, or TLS to a webhook).
    pub async fn over<S>(stream: S, addr: SocketAddr) -> anyhow::Result<Self>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .context("HTTP/1.1 handshake")?;
        tokio::spawn(async move {
            // Ends with an error when the server closes the connection (e.g. at shutdown).
            let _ = conn.await;
        });
        Ok(Self {
            sender,
            host: addr.to_string(),
        })
    }

    /// Sends a request and returns once the response head has arrived.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Response<Incoming>> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, &self.host)
            .header(ACCEPT, "application/json");
        if body.is_some() {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let req = req.body(Full::new(body.unwrap_or_default()))?;
        self.sender
            .ready()
            .await
            .context("the connection to kgc closed")?;
        self.sender
            .send_request(req)
            .await
            .with_context(|| format!("sending {path}"))
    }

    /// Sends a request and reads the whole response body.
    pub async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let resp = self.send(method, path, body).await?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .with_context(|| format!("reading the response to {path}"))?
            .to_bytes();
        Ok((status, body))
    }

    /// Like [`Conn::call`], failing unless the status is `want`.
    pub async fn expect(
        &mut self,
        want: StatusCode,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Bytes> {
        let (status, body) = self.call(method.clone(), path, body).await?;
        if status != want {
            anyhow::bail!(
                "{method} {path}: expected {want}, got {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(500)])
            );
        }
        Ok(body)
    }
}
