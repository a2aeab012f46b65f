//! The max-in-flight filter (kubernetes/apiserver `pkg/server/filters/maxinflight.go`): at most
//! `--max-requests-inflight` reads and `--max-mutating-requests-inflight` writes are served at
//! once; beyond that a request is refused at once with 429, so that a flood queues nowhere and
//! costs the server no memory. Watches are long-running and not counted (upstream's
//! `BasicLongRunningRequestCheck`), and `system:masters` is never refused: "a super-admin or a
//! loopback connection … should always get an answer".

use std::sync::Arc;

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::authn::UserInfo;
use crate::request::Query;

/// kube-apiserver's `--max-requests-inflight` default.
pub const DEFAULT_READ_LIMIT: usize = 400;
/// kube-apiserver's `--max-mutating-requests-inflight` default.
pub const DEFAULT_MUTATING_LIMIT: usize = 200;

/// The two budgets; `None` is unlimited (a flag set to 0).
pub struct Limits {
    read: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl Limits {
    pub fn new(read: usize, mutating: usize) -> Self {
        let budget = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Self {
            read: budget(read),
            mutating: budget(mutating),
        }
    }

    /// A place for this request (held until it is answered), none when it is not counted, or
    /// upstream's 429: plain text, `Retry-After: 1`.
    pub fn admit(
        &self,
        method: &Method,
        path: &str,
        query: &Query,
        user: Option<&UserInfo>,
    ) -> Result<Option<OwnedSemaphorePermit>, Response> {
        // Upstream's non-mutating verbs are get, list and watch: every GET (and HEAD).
        let reads = matches!(*method, Method::GET | Method::HEAD);
        if reads && is_watch(path, query) {
            return Ok(None);
        }
        let budget = if reads { &self.read } else { &self.mutating };
        let Some(budget) = budget else {
            return Ok(None);
        };
        match Arc::clone(budget).try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) if user.is_some_and(|u| u.groups.iter().any(|g| g == "system:masters")) => {
                Ok(None)
            }
            Err(_) => Err(too_many_requests()),
        }
    }
}

/// `/api/v1/watch/…`, `/apis/G/V/watch/…` or `?watch=true`; or a pod's log, exec, attach or
/// port-forward, which upstream counts as long-running too.
fn is_watch(path: &str, query: &Query) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let [.., "pods", _, "log" | "exec" | "attach" | "portforward"] = segments.as_slice() {
        return true;
    }
    let verb_at = match segments.first() {
        Some(&"api") => 2,
        Some(&"apis") => 3,
        _ => return false,
    };
    query.flag("watch") || segments.get(verb_at) == Some(&"watch")
}

fn too_many_requests() -> Response {
    let mut resp = (
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests, please try again later.\n",
    )
        .into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_budget_and_frees_places_when_answered() {
        let limits = Limits::new(1, 1);
        let q = Query::default();
        let held = limits
            .admit(&Method::GET, "/api/v1/pods", &q, None)
            .unwrap();
        assert!(held.is_some());
        let refused = limits
            .admit(&Method::GET, "/api/v1/pods", &q, None)
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        // Writes have their own budget; watches are not counted.
        assert!(
            limits
                .admit(&Method::POST, "/api/v1/pods", &q, None)
                .is_ok()
        );
        let watch = Query::parse(Some("watch=true"));
        assert!(
            limits
                .admit(&Method::GET, "/api/v1/pods", &watch, None)
                .unwrap()
                .is_none()
        );
        assert!(
            limits
                .admit(&Method::GET, "/api/v1/watch/pods", &q, None)
                .unwrap()
                .is_none()
        );
        // A namespace named `watch` is no watch.
        let ns = "/api/v1/namespaces/watch/pods";
        assert!(limits.admit(&Method::GET, ns, &q, None).is_err());
        drop(held);
        assert!(limits.admit(&Method::GET, "/api/v1/pods", &q, None).is_ok());
    }

    #[test]
    fn system_masters_are_never_refused() {
        let limits = Limits::new(1, 0);
        let q = Query::default();
        let _held = limits.admit(&Method::GET, "/api", &q, None).unwrap();
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
            ..UserInfo::default()
        };
        assert!(limits.admit(&Method::GET, "/api", &q, Some(&admin)).is_ok());
        // 0 lifts the mutating limit.
        for _ in 0..3 {
            assert!(limits.admit(&Method::DELETE, "/api", &q, None).is_ok());
        }
    }
}
