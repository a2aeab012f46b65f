//! Turning a request path and query into what it asks for (apiserver
//! `pkg/endpoints/request/requestinfo.go`).

use std::collections::HashMap;

use axum::http::Method;
use kgc_meta::Status;

/// A resource request, parsed from `/api/v1/...` or `/apis/{group}/{version}/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub verb: Verb,
}

/// The Kubernetes verb of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// Namespace subresources, which stay with the namespace instead of naming a resource in it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses the segments after `/api/v1` or `/apis/{group}/{version}`. `None` for paths that are
/// not resource requests (discovery documents).
pub fn parse(
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &Query,
) -> Result<Option<RequestInfo>, Status> {
    let mut parts: Vec<&str> = rest.iter().copied().filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let mut watch_path = false;
    if parts[0] == "watch" {
        watch_path = true;
        parts.remove(0);
        if parts.is_empty() {
            return Err(Status::no_such_resource());
        }
    }
    let mut namespace = None;
    if parts[0] == "namespaces" && parts.len() > 1 {
        namespace = Some(parts[1].to_owned());
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts.drain(..2);
        }
    }
    if parts.len() > 3 {
        return Err(Status::no_such_resource());
    }
    let resource = parts[0].to_owned();
    let name = parts.get(1).map(|s| (*s).to_owned());
    let subresource = parts.get(2).map(|s| (*s).to_owned());
    // `/api/v1/namespaces/{name}` names the namespace itself.
    let namespace = if resource == "namespaces" && group.is_empty() {
        None
    } else {
        namespace
    };
    let watch = watch_path || query.flag("watch");
    let verb = match (method, name.is_some()) {
        (&Method::GET, true) if watch => Verb::Watch,
        (&Method::GET, true) => Verb::Get,
        (&Method::GET, false) if watch => Verb::Watch,
        (&Method::GET, false) => Verb::List,
        (&Method::POST, false) => Verb::Create,
        // `serviceaccounts/NAME/token` (TokenRequest) is created under an existing object.
        (&Method::POST, true) if subresource.is_some() => Verb::Create,
        (&Method::PUT, true) => Verb::Update,
        (&Method::PATCH, true) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => {
            return Err(Status::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method} {resource})"
            )));
        }
    };
    Ok(Some(RequestInfo {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace,
        resource,
        name,
        subresource,
        verb,
    }))
}

/// Decodes the `%XX` escapes of a path once, as Go's `url.PathUnescape` does before
/// kube-apiserver sees `req.URL.Path` (so `/clusterroles/system%3Abasic-user` names
/// `system:basic-user`, and a decoded `/` splits segments as it does upstream). `+` stays `+`. A
/// `%` not followed by two hex digits, or escapes that do not decode to UTF-8, are the error: Go's
/// server refuses such a request line with 400 before any handler runs.
pub fn percent_decode(s: &str) -> Result<String, Status> {
    if !s.contains('%') {
        return Ok(s.to_owned());
    }
    let bad = || Status::bad_request(format!("invalid URL escape in {s:?}"));
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(bad)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// Query parameters, tolerant of what clients send: empty pairs (kube-rs writes `?&watch=true`)
/// and unknown keys are ignored.
#[derive(Debug, Clone, Default)]
pub struct Query {
    params: HashMap<String, Vec<String>>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        let mut params: HashMap<String, Vec<String>> = HashMap::new();
        if let Some(raw) = raw {
            let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw).unwrap_or_default();
            for (k, v) in pairs {
                params.entry(k).or_default().push(v);
            }
        }
        Self { params }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key)?.first().map(String::as_str)
    }

    pub fn all(&self, key: &str) -> impl Iterator<Item = &str> {
        self.params
            .get(key)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// A boolean parameter: `true` or `1`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    /// An integer parameter; a malformed value is a 400 naming it.
    pub fn int(&self, key: &str) -> Result<Option<i64>, Status> {
        self.get(key)
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.parse().map_err(|_| {
                    Status::bad_request(format!("invalid {key} {v:?}: not an integer"))
                })
            })
            .transpose()
    }

    /// This query with `key` set to `value` alone.
    pub fn with(&self, key: &str, value: &str) -> Self {
        let mut query = self.clone();
        query.params.insert(key.to_owned(), vec![value.to_owned()]);
        query
    }

    /// `dryRun=All`.
    pub fn dry_run(&self) -> Result<bool, Status> {
        kgc_meta::deletion::parse_dry_run(self.all("dryRun"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, group: &str, rest: &str, query: &str) -> RequestInfo {
        let parts: Vec<&str> = rest.split('/').collect();
        parse(&method, group, "v1", &parts, &Query::parse(Some(query)))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn namespaced_and_cluster_paths() {
        let i = info(Method::GET, "", "namespaces/ns/pods/p1", "");
        assert_eq!(
            (
                i.namespace.as_deref(),
                i.resource.as_str(),
                i.name.as_deref(),
                i.verb
            ),
            (Some("ns"), "pods", Some("p1"), Verb::Get)
        );
        let i = info(Method::GET, "", "namespaces/ns", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_deref(), i.namespace),
            ("namespaces", Some("ns"), None)
        );
        let i = info(Method::PUT, "", "namespaces/ns/finalize", "");
        assert_eq!(
            (i.name.as_deref(), i.subresource.as_deref()),
            (Some("ns"), Some("finalize"))
        );
        let i = info(Method::GET, "apps", "deployments", "&watch=true&");
        assert_eq!((i.namespace, i.verb), (None, Verb::Watch));
        let i = info(Method::DELETE, "", "namespaces/ns/configmaps", "");
        assert_eq!(i.verb, Verb::DeleteCollection);
        let i = info(Method::GET, "", "watch/namespaces/ns/pods", "");
        assert_eq!(i.verb, Verb::Watch);
        let i = info(
            Method::PATCH,
            "apps",
            "namespaces/ns/deployments/d/scale",
            "",
        );
        assert_eq!(
            (i.verb, i.subresource.as_deref()),
            (Verb::Patch, Some("scale"))
        );
    }

    #[test]
    fn bad_methods_and_paths() {
        let q = Query::default();
        assert!(parse(&Method::POST, "", "v1", &["pods", "p"], &q).is_err());
        assert!(parse(&Method::GET, "", "v1", &["a", "b", "c", "d"], &q).is_err());
        assert!(parse(&Method::GET, "", "v1", &[], &q).unwrap().is_none());
    }

    #[test]
    fn paths_are_percent_decoded_once() {
        assert_eq!(
            percent_decode("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Abasic-user")
                .unwrap(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:basic-user"
        );
        // Once: `%253A` is the three characters `%3A`, not `:`.
        assert_eq!(percent_decode("/a%253A").unwrap(), "/a%3A");
        assert_eq!(percent_decode("/a%2Fb+c").unwrap(), "/a/b+c");
        for bad in ["/a%", "/a%3", "/a%zz", "/a%ff"] {
            assert_eq!(percent_decode(bad).unwrap_err().code, 400, "{bad}");
        }
    }

    #[test]
    fn query_is_tolerant() {
        let q = Query::parse(Some("&&limit=5&labelSelector=a%3Db&dryRun=All&x"));
        assert_eq!(q.int("limit").unwrap(), Some(5));
        assert_eq!(q.get("labelSelector"), Some("a=b"));
        assert!(q.dry_run().unwrap());
        assert!(Query::parse(Some("limit=x")).int("limit").is_err());
    }
}
