//! A refused connection said as kubectl says it (`StandardErrorMessage` in `kubernetes/kubectl
//! pkg/cmd/util/helpers.go`): one line naming the server's host and port, instead of the
//! connector's chain (`ServiceError: client error (Connect)`, `tcp connect error`, `Connection
//! refused (os error 111)`) that says neither.

use tower::BoxError;

/// The API server refused the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the connection to the server {host} was refused - did you specify the right host or port?"
)]
pub struct Refused {
    /// The server URL's host and port, as the kubeconfig gives them.
    host: String,
}

impl Refused {
    /// The layer to put outermost on a `kube::client::ClientBuilder` for `server`: a request
    /// failing on a refused connection fails with [`Refused`].
    pub fn layer(
        server: &http::Uri,
    ) -> tower::util::MapErrLayer<impl FnOnce(BoxError) -> BoxError + Clone + use<>> {
        let host = match (server.host(), server.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => server.to_string(),
        };
        tower::util::MapErrLayer::new(move |e: BoxError| -> BoxError {
            if refused(&*e) {
                Box::new(Refused { host: host.clone() })
            } else {
                e
            }
        })
    }

    /// The [`Refused`] among `e` and its causes.
    pub fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
        let mut cause = Some(e);
        while let Some(c) = cause {
            if let Some(r) = c.downcast_ref::<Refused>() {
                return Some(r);
            }
            cause = c.source();
        }
        None
    }
}

/// Whether an I/O error among `e` and its causes is a refused connection.
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer as _, Service as _, ServiceExt as _};

    /// A connector's failure, as hyper-util nests it: a message whose cause is the I/O error.
    #[derive(Debug, thiserror::Error)]
    #[error("tcp connect error")]
    struct Connect(#[source] std::io::Error);

    async fn fail_with(server: &str, e: std::io::Error) -> BoxError {
        let failing = tower::service_fn(move |()| {
            let e = Connect(std::io::Error::new(e.kind(), "os error"));
            async move { Err::<(), BoxError>(Box::new(e)) }
        });
        let mut svc = Refused::layer(&server.parse().unwrap()).layer(failing);
        svc.ready().await.unwrap().call(()).await.unwrap_err()
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_servers_host_and_port() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = fail_with("https://127.0.0.1:6443", refused).await;
        assert_eq!(
            e.to_string(),
            "the connection to the server 127.0.0.1:6443 was refused - did you specify the right \
             host or port?"
        );
        let kube = kube::Error::Service(e);
        assert!(Refused::find(&kube).is_some());
        let e = fail_with(
            "https://example.com",
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        )
        .await;
        assert!(
            e.to_string().contains("server example.com was refused"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn other_failures_keep_their_causes() {
        let e = fail_with(
            "https://127.0.0.1:6443",
            std::io::Error::from(std::io::ErrorKind::TimedOut),
        )
        .await;
        assert_eq!(e.to_string(), "tcp connect error");
        assert!(Refused::find(&*e).is_none());
    }
}
