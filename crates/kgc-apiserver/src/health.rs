//! `/healthz`, `/livez` and `/readyz`, as kube-apiserver's healthz package serves them
//! (kubernetes/apiserver `pkg/server/healthz/healthz.go`): each endpoint runs its named checks;
//! `?verbose` lists them (`[+]ping ok`), `?exclude=NAME` skips one, a failure answers 500 with
//! `[-]NAME failed: reason withheld` (the endpoints are public: the reason goes to the log, and
//! to whoever asks the check's own path, `/readyz/etcd`, which answers
//! `internal server error: <reason>`).
//!
//! The checks: `ping` always passes; `etcd` (upstream's name for the storage check, kept so
//! that probes written for kube-apiserver work) fails while the store is read-only after a
//! failed commit, or on etcd while etcd fails requests (no quorum); `shutdown` fails once the server is stopping. `/livez` runs only `ping`:
//! unlike upstream, a storage failure does not ask for a restart, since the store recovers by
//! itself once the disk takes writes and a restart on a full disk would not even start.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use kgc_meta::Status;

use crate::ApiServer;
use crate::body::ApiError;
use crate::request::Query;

/// A named check: `Err(reason)` when it fails.
struct Check {
    name: &'static str,
    run: fn(&ApiServer) -> Result<(), String>,
}

const PING: Check = Check {
    name: "ping",
    run: |_| Ok(()),
};

const ETCD: Check = Check {
    name: "etcd",
    run: |api| api.store.failure().map_or(Ok(()), Err),
};

const SHUTDOWN: Check = Check {
    name: "shutdown",
    run: |api| {
        if *api.shutdown.borrow() {
            Err("process is shutting down".to_owned())
        } else {
            Ok(())
        }
    },
};

/// The checks of each endpoint, in the order they are reported.
fn checks(endpoint: &str) -> &'static [Check] {
    match endpoint {
        "livez" => &[PING],
        "readyz" => &[PING, ETCD, SHUTDOWN],
        _ => &[PING, ETCD],
    }
}

/// Serves `endpoint` (`healthz`, `livez` or `readyz`); `rest` is the path after it.
pub(crate) fn serve(
    api: &ApiServer,
    endpoint: &str,
    rest: &[&str],
    query: &Query,
) -> Result<Response, ApiError> {
    let checks = checks(endpoint);
    match rest {
        [] | [""] => Ok(root(api, endpoint, checks, query)),
        [name] => {
            let check = checks
                .iter()
                .find(|c| c.name == *name)
                .ok_or_else(Status::no_such_resource)?;
            Ok(match (check.run)(api) {
                Ok(()) => text(StatusCode::OK, "ok".to_owned()),
                Err(reason) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal server error: {reason}\n"),
                ),
            })
        }
        _ => Err(Status::no_such_resource().into()),
    }
}

/// `handleRootHealth`.
fn root(api: &ApiServer, endpoint: &str, checks: &[Check], query: &Query) -> Response {
    let mut excluded: Vec<&str> = query.all("exclude").collect();
    let mut out = String::new();
    let mut failed = Vec::new();
    for check in checks {
        if let Some(i) = excluded.iter().position(|e| *e == check.name) {
            excluded.remove(i);
            out.push_str(&format!("[+]{} excluded: ok\n", check.name));
            continue;
        }
        match (check.run)(api) {
            Ok(()) => out.push_str(&format!("[+]{} ok\n", check.name)),
            Err(reason) => {
                out.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                failed.push(format!("[-]{} failed: {reason}", check.name));
            }
        }
    }
    if !excluded.is_empty() {
        excluded.sort_unstable();
        excluded.dedup();
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        out.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if !failed.is_empty() {
        tracing::debug!(endpoint, checks = %failed.join("; "), "health check failed");
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{out}{endpoint} check failed\n"),
        );
    }
    if query.get("verbose").is_none() {
        return text(StatusCode::OK, "ok".to_owned());
    }
    text(StatusCode::OK, format!("{out}{endpoint} check passed\n"))
}

/// A plain-text answer with the headers upstream sets.
fn text(code: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use kgc_store::Store;
    use tokio::sync::watch;

    use super::*;

    async fn get(api: &ApiServer, path: &str, query: &str) -> (u16, String) {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let resp = match serve(api, segments[0], &segments[1..], &Query::parse(Some(query))) {
            Ok(r) => r,
            Err(_) => return (404, String::new()),
        };
        let code = resp.status().as_u16();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        (code, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn checks_answer_as_upstreams_healthz_package() {
        let store = Store::in_memory().await.unwrap();
        let (stop, stopping) = watch::channel(false);
        let api = ApiServer::new(store.clone(), "127.0.0.1:1".into(), stopping);
        assert_eq!(get(&api, "/readyz", "").await, (200, "ok".into()));
        assert_eq!(
            get(&api, "/readyz", "verbose").await,
            (
                200,
                "[+]ping ok\n[+]etcd ok\n[+]shutdown ok\nreadyz check passed\n".into()
            )
        );
        assert_eq!(
            get(&api, "/livez", "verbose&exclude=ping&exclude=nope").await,
            (
                200,
                "[+]ping excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nlivez check passed\n".into()
            )
        );
        assert_eq!(get(&api, "/readyz/etcd", "").await, (200, "ok".into()));
        assert_eq!(get(&api, "/readyz/nope", "").await.0, 404);

        // A store that refuses writes makes /readyz fail, the reason only on the check's path.
        store.close();
        stop.send(true).unwrap();
        assert_eq!(
            get(&api, "/readyz", "").await,
            (
                500,
                "[+]ping ok\n[-]etcd failed: reason withheld\n[-]shutdown failed: reason withheld\nreadyz check failed\n".into()
            )
        );
        assert_eq!(
            get(&api, "/readyz/etcd", "").await,
            (
                500,
                "internal server error: the store is shut down\n".into()
            )
        );
        assert_eq!(
            get(&api, "/readyz/shutdown", "").await,
            (
                500,
                "internal server error: process is shutting down\n".into()
            )
        );
        assert_eq!(get(&api, "/livez", "").await, (200, "ok".into()));
        assert_eq!(
            get(&api, "/readyz", "exclude=etcd&exclude=shutdown").await,
            (200, "ok".into())
        );
    }
}
