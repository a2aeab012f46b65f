//! Authentication as kube-apiserver does it: X.509 client certificates signed by the cluster CA
//! (user = CN, groups = O), static bearer tokens (`--token-auth-file`), and service-account
//! tokens; every authenticated user is also in `system:authenticated`
//! (`k8s.io/apiserver/pkg/authentication`).
//!
//! A request without credentials is anonymous: it may reach the health and version endpoints
//! only; anything else is a 401. Invalid credentials are a 401 even on those endpoints' peers, as
//! upstream's union authenticator answers.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use kgc_meta::Status;
use kgc_store::Store;

use crate::Error;
use crate::serviceaccount::ServiceAccountTokens;
use crate::tls::Peer;

pub use kgc_auth::SYSTEM_AUTHENTICATED as AUTHENTICATED_GROUP;
pub use kgc_auth::UserInfo;

tokio::task_local! {
    /// The authenticated user of the request being served (absent on the insecure port, where
    /// nothing is authenticated). Handlers that decide by user read it through [`current_user`].
    static CURRENT_USER: Option<Arc<UserInfo>>;
}

/// Runs `fut` as a request of `user`.
pub(crate) async fn scope<F: Future>(user: Option<Arc<UserInfo>>, fut: F) -> F::Output {
    CURRENT_USER.scope(user, fut).await
}

/// The user of the request being served; `None` on the insecure port.
pub(crate) fn current_user() -> Option<Arc<UserInfo>> {
    CURRENT_USER.try_with(Clone::clone).ok().flatten()
}

/// Turns credentials into users.
pub struct Authenticator {
    store: Store,
    /// Token → user (with `system:authenticated` already added).
    tokens: HashMap<String, Arc<UserInfo>>,
    service_accounts: Option<Arc<ServiceAccountTokens>>,
}

impl Authenticator {
    /// Client certificates only (verified during the TLS handshake).
    pub fn new(store: Store) -> Self {
        Self {
            store,
            tokens: HashMap::new(),
            service_accounts: None,
        }
    }

    /// Accepts the bearer tokens of a kube-apiserver token file.
    pub fn with_token_file(mut self, path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::TokenFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        self.tokens = parse_token_file(&text)
            .map_err(|reason| Error::TokenFile {
                path: path.display().to_string(),
                reason,
            })?
            .into_iter()
            .map(|(token, u)| (token, Arc::new(with_authenticated(u))))
            .collect();
        Ok(self)
    }

    /// Accepts (and lets TokenRequest issue) service-account tokens.
    pub fn with_service_accounts(mut self, sa: Arc<ServiceAccountTokens>) -> Self {
        self.service_accounts = Some(sa);
        self
    }

    /// The service-account token signer, if tokens are enabled.
    pub fn service_accounts(&self) -> Option<&Arc<ServiceAccountTokens>> {
        self.service_accounts.as_ref()
    }

    /// The user a request authenticates as: `Ok(None)` when it carries no credentials at all,
    /// 401 when it carries credentials that are not valid.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&Peer>,
    ) -> Result<Option<Arc<UserInfo>>, Status> {
        // Like upstream's union authenticator: a refused certificate is a 401 unless a bearer
        // token authenticates the request.
        let cert_refused = match peer.and_then(|p| p.cert.as_ref()) {
            Some(Ok(c)) if c.valid_at(jiff::Timestamp::now().as_second()) => {
                return Ok(Some(Arc::clone(&c.user)));
            }
            Some(Ok(c)) => {
                tracing::debug!(user = %c.user.name, "client certificate expired");
                true
            }
            Some(Err(_)) => true,
            None => false,
        };
        let Some(auth) = headers.get(header::AUTHORIZATION) else {
            return if cert_refused {
                Err(Status::unauthorized())
            } else {
                Ok(None)
            };
        };
        let token = auth
            .to_str()
            .ok()
            .and_then(bearer)
            .ok_or_else(Status::unauthorized)?;
        match self.authenticate_token(token, self.api_audiences()) {
            Ok((user, _)) => Ok(Some(user)),
            Err(why) => {
                tracing::debug!(%why, "bearer token refused");
                Err(Status::unauthorized())
            }
        }
    }

    /// The audiences a request's token must be for: the API server's own (`--api-audiences`,
    /// which defaults to the service-account issuer).
    pub fn api_audiences(&self) -> &[String] {
        self.service_accounts
            .as_ref()
            .map(|sa| sa.api_audiences())
            .unwrap_or_default()
    }

    /// The user a bearer token authenticates when presented for `audiences`, and which of them
    /// it is good for; otherwise why it authenticates nobody (a TokenReview's `status.error`).
    /// Static tokens carry no audience, so they are good only for the API server's own, as
    /// upstream's audience-agnostic wrapper (`apiserver/pkg/authentication/authenticator/
    /// audagnostic.go`) makes them: asked for other audiences, a static token authenticates
    /// nobody, so a webhook that checks its own audience through a TokenReview cannot be
    /// handed a cluster token.
    pub fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(Arc<UserInfo>, Vec<String>), String> {
        if let Some(u) = self.tokens.get(token) {
            if audiences.is_empty() {
                return Ok((Arc::clone(u), Vec::new()));
            }
            let api = self.api_audiences();
            let matched: Vec<String> = audiences
                .iter()
                .filter(|a| api.contains(a))
                .cloned()
                .collect();
            if matched.is_empty() {
                return Err(format!(
                    "the token is valid for the API server's audiences {api:?} only, not for {audiences:?}"
                ));
            }
            return Ok((Arc::clone(u), matched));
        }
        let sa = self
            .service_accounts
            .as_ref()
            .ok_or_else(|| "invalid bearer token".to_owned())?;
        let now = self.store.clock().now().as_second();
        let (user, audiences) = sa.authenticate(&self.store, token, now, audiences)?;
        Ok((Arc::new(with_authenticated(user)), audiences))
    }
}

/// `Bearer <token>` (the scheme is case-insensitive; an empty token is no token).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// What a request refused 401 tried, as its audit event says it (filters/authn_audit.go
/// `getAuthMethods`): basic credentials, a bearer token, an `access_token` parameter, a client
/// certificate.
pub(crate) fn attempted_methods(
    headers: &HeaderMap,
    query: &crate::request::Query,
    peer_cert: bool,
) -> String {
    use base64::Engine;
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .trim();
    let mut methods = Vec::new();
    // Go's `Request.BasicAuth`: the scheme, then base64 of `user:password`.
    let basic = auth
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, b)| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .is_some_and(|b| b.contains(&b':'));
    if basic {
        methods.push("basic");
    }
    let mut parts = auth.split(' ');
    if parts
        .next()
        .is_some_and(|p| p.eq_ignore_ascii_case("bearer"))
        && parts.next().is_some()
    {
        methods.push("bearer");
    }
    if query
        .get("access_token")
        .is_some_and(|t| !t.trim().is_empty())
    {
        methods.push("access_token");
    }
    if peer_cert {
        methods.push("x509");
    }
    if methods.is_empty() {
        "Authentication failed, no credentials provided".to_owned()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

/// Adds `system:authenticated`, as upstream's group adder does for every authenticated user.
pub(crate) fn with_authenticated(mut u: UserInfo) -> UserInfo {
    if !u.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        u.groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    u
}

/// Parses a kube-apiserver token file: CSV rows of `token,user,uid[,"group1,group2"]`
/// (`pkg/authentication/token/tokenfile`). Blank lines are skipped; a row with fewer than three
/// columns or an empty token is an error naming its line.
pub fn parse_token_file(text: &str) -> Result<HashMap<String, UserInfo>, String> {
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields = csv_fields(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        if fields.len() < 3 {
            return Err(format!(
                "line {}: must have at least 3 columns (token, user name, user uid), found {}",
                i + 1,
                fields.len()
            ));
        }
        if fields[0].is_empty() {
            return Err(format!("line {}: the token is empty", i + 1));
        }
        let groups = fields
            .get(3)
            .map(|g| {
                g.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        out.insert(
            fields[0].clone(),
            UserInfo {
                name: fields[1].clone(),
                uid: fields[2].clone(),
                groups,
                extra: BTreeMap::new(),
            },
        );
    }
    Ok(out)
}

/// One CSV record (RFC 4180 quoting, as Go's encoding/csv reads it).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '"' if quoted => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                    if !matches!(chars.peek(), None | Some(',')) {
                        return Err("extraneous text after a quoted field".into());
                    }
                }
            }
            ',' if !quoted => {
                fields.push(std::mem::take(&mut cur));
                at_start = true;
            }
            _ => {
                cur.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    fields.push(cur);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempted_methods_as_the_audit_event_words_them() {
        let q = crate::request::Query::parse(None);
        let mut h = HeaderMap::new();
        assert_eq!(
            attempted_methods(&h, &q, false),
            "Authentication failed, no credentials provided"
        );
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(
            attempted_methods(
                &h,
                &crate::request::Query::parse(Some("access_token=t")),
                true
            ),
            "Authentication failed, attempted: bearer, access_token, x509"
        );
        // `user:password`, base64.
        h.insert(header::AUTHORIZATION, "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(
            attempted_methods(&h, &q, false),
            "Authentication failed, attempted: basic"
        );
    }

    #[test]
    fn token_file_rows() {
        let t = parse_token_file("abc,alice,u1,\"dev,ops\"\n\nxyz,bob,u2\n\"q\"\"t\",carol,u3,\n")
            .unwrap();
        assert_eq!(t["abc"].name, "alice");
        assert_eq!(t["abc"].groups, ["dev", "ops"]);
        assert!(t["xyz"].groups.is_empty());
        assert_eq!(t["q\"t"].uid, "u3");
        assert!(
            parse_token_file("abc,alice\n")
                .unwrap_err()
                .contains("at least 3 columns")
        );
        assert!(
            parse_token_file(",alice,u\n")
                .unwrap_err()
                .contains("empty")
        );
        assert!(parse_token_file("\"abc,alice,u\n").is_err());
    }

    #[test]
    fn bearer_header() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn authenticated_group_is_added_once() {
        let u = with_authenticated(with_authenticated(UserInfo::default()));
        assert_eq!(u.groups, [AUTHENTICATED_GROUP]);
    }
}
