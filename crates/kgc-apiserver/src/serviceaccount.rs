//! Service-account tokens: signed JWTs (ES256) as kube-apiserver's TokenRequest issues them,
//! and their validation (`pkg/serviceaccount/jwt.go`, `claims.go`).
//!
//! A token names its service account by namespace, name and uid; it is accepted only while that
//! account still exists with that uid, so deleting (or recreating) the account revokes every
//! token issued for it. A bound token (TokenRequest `spec.boundObjectRef`) also names a Pod,
//! Secret or Node and is accepted only while that object exists with that uid too.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use kgc_meta::GroupResource;
use kgc_store::Store;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

use crate::Error;
use crate::authn::UserInfo;

/// The issuer kubeadm clusters use; tokens carry it in `iss` and (as the API audience) in `aud`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The `sub` prefix and the groups every service account belongs to.
const SA_PREFIX: &str = "system:serviceaccount:";
const SA_GROUP: &str = "system:serviceaccounts";

/// Signs and verifies service-account tokens.
pub struct ServiceAccountTokens {
    key: EcdsaKeyPair,
    issuer: String,
    /// `kid`: identifies the signing key, as upstream derives it from the public key.
    key_id: String,
    rng: SystemRandom,
    /// Tokens whose signature was verified, with their claims: an ECDSA verification costs
    /// tens of µs, and a client sends the same token with every request (upstream caches token
    /// authentication for 10 s, `pkg/kubeapiserver/authenticator`). What a token's bytes say
    /// never changes, so a hit is exact; the validity window, the audiences and the service
    /// account's existence are still checked on every use. Failures are not kept.
    verified: Mutex<HashMap<String, Verified>>,
    /// `[issuer]`: the audiences of the API server itself.
    api_audiences: Vec<String>,
}

/// A verified token's claims, audiences and the seconds it is valid in (`nbf` ≤ now < `exp`).
#[derive(Debug, Clone)]
struct Verified {
    claims: Claims,
    audiences: Vec<String>,
    not_before: i64,
    expires: i64,
}

/// At most this many verified tokens are kept; when full the cache starts over (a bound on
/// memory against a client sending ever new valid tokens, cheap because hits are the rule).
const VERIFIED_CAPACITY: usize = 4096;

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claims {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub jti: String,
    /// The objects the token is bound to (`pkg/serviceaccount/claims.go`).
    pub bound: Bound,
}

/// The objects a token is bound to: at most one of pod, secret and node is the binding; a
/// pod-bound token also names the pod's node, for information only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bound {
    pub pod: Option<ObjectRef>,
    pub secret: Option<ObjectRef>,
    pub node: Option<ObjectRef>,
}

/// A bound object by name and uid (the uid of a pod's node is empty when the node did not
/// exist when the token was issued).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectRef {
    pub name: String,
    pub uid: String,
}

impl ObjectRef {
    fn to_json(&self) -> Value {
        json!({"name": self.name, "uid": self.uid})
    }

    fn from_json(v: &Value) -> Option<Option<Self>> {
        match v {
            Value::Null => Some(None),
            v => Some(Some(Self {
                name: v["name"].as_str()?.to_owned(),
                uid: v["uid"].as_str().unwrap_or_default().to_owned(),
            })),
        }
    }
}

/// Upstream accepts a token of an object being deleted for this long after its
/// `deletionTimestamp`, so a terminating pod can still shut down cleanly (`claims.go`).
const DELETION_GRACE_SECONDS: i64 = 60;

impl ServiceAccountTokens {
    /// `pkcs8_der` is an ECDSA P-256 private key.
    pub fn new(pkcs8_der: &[u8], issuer: impl Into<String>) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8_der, &rng)
                .map_err(|e| Error::SigningKey(e.to_string()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key().as_ref());
        let key_id = B64.encode(digest.as_ref());
        let issuer = issuer.into();
        Ok(Self {
            key,
            api_audiences: vec![issuer.clone()],
            issuer,
            key_id,
            rng,
            verified: Mutex::new(HashMap::new()),
        })
    }

    /// The audiences the API server itself accepts (`--api-audiences`, which defaults to the
    /// issuer).
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// A token for a service account, valid from `now` for `expiration_seconds`.
    pub fn issue(
        &self,
        sa: &Claims,
        audiences: &[String],
        now: i64,
        expiration_seconds: i64,
    ) -> Result<String, Error> {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let mut payload = json!({
            "aud": audiences,
            "exp": now + expiration_seconds,
            "iat": now,
            "nbf": now,
            "iss": self.issuer,
            "jti": sa.jti,
            "sub": format!("{SA_PREFIX}{}:{}", sa.namespace, sa.name),
            "kubernetes.io": {
                "namespace": sa.namespace,
                "serviceaccount": {"name": sa.name, "uid": sa.uid},
            },
        });
        for (key, r) in [
            ("pod", &sa.bound.pod),
            ("secret", &sa.bound.secret),
            ("node", &sa.bound.node),
        ] {
            if let Some(r) = r {
                payload["kubernetes.io"][key] = r.to_json();
            }
        }
        let signing_input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(payload.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|e| Error::SigningKey(e.to_string()))?;
        Ok(format!("{signing_input}.{}", B64.encode(sig.as_ref())))
    }

    /// The claims of a token this server signed, valid at `now`, and which of `audiences` it is
    /// for (at least one must be); otherwise why not. Requests only see a 401 whatever the
    /// reason; a TokenReview reports it.
    pub fn verify(
        &self,
        token: &str,
        now: i64,
        audiences: &[String],
    ) -> Result<(Claims, Vec<String>), String> {
        let mut cache = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        let v = match cache.get(token) {
            Some(v) => v.clone(),
            None => {
                drop(cache);
                let v = self
                    .verify_signed(token)
                    .ok_or_else(|| "invalid bearer token".to_owned())?;
                cache = self.verified.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() >= VERIFIED_CAPACITY {
                    cache.clear();
                }
                cache.insert(token.to_owned(), v.clone());
                v
            }
        };
        drop(cache);
        if now >= v.expires {
            return Err("the token has expired".into());
        }
        if now < v.not_before {
            return Err("the token is not valid yet".into());
        }
        let matched: Vec<String> = audiences
            .iter()
            .filter(|a| v.audiences.contains(a))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "token audiences {:?} is invalid for the target audiences {audiences:?}",
                v.audiences
            ));
        }
        Ok((v.claims, matched))
    }

    /// [`Self::verify`] without the cache: checks the signature, the issuer and the shape of the
    /// claims.
    fn verify_signed(&self, token: &str) -> Option<Verified> {
        let mut parts = token.split('.');
        let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value = serde_json::from_slice(&B64.decode(h).ok()?).ok()?;
        if header["alg"] != "ES256" {
            return None;
        }
        let sig = B64.decode(s).ok()?;
        UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        )
        .verify(format!("{h}.{p}").as_bytes(), &sig)
        .ok()?;
        let c: Value = serde_json::from_slice(&B64.decode(p).ok()?).ok()?;
        if c["iss"] != self.issuer.as_str() {
            return None;
        }
        let audiences = match &c["aud"] {
            Value::String(a) => vec![a.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            _ => return None,
        };
        let exp = c["exp"].as_i64()?;
        let nbf = c["nbf"].as_i64().unwrap_or(i64::MIN);
        let k8s = &c["kubernetes.io"];
        let claims = Claims {
            namespace: k8s["namespace"].as_str()?.to_owned(),
            name: k8s["serviceaccount"]["name"].as_str()?.to_owned(),
            uid: k8s["serviceaccount"]["uid"].as_str()?.to_owned(),
            jti: c["jti"].as_str().unwrap_or_default().to_owned(),
            bound: Bound {
                pod: ObjectRef::from_json(&k8s["pod"])?,
                secret: ObjectRef::from_json(&k8s["secret"])?,
                node: ObjectRef::from_json(&k8s["node"])?,
            },
        };
        let sub = format!("{SA_PREFIX}{}:{}", claims.namespace, claims.name);
        (c["sub"] == sub.as_str()).then_some(Verified {
            claims,
            audiences,
            not_before: nbf,
            expires: exp,
        })
    }

    /// Authenticates a bearer token presented for `audiences`: a valid signature and claims,
    /// and the service account still exists with the uid the token names and is not being
    /// deleted. Returns the user and the audiences the token is good for, or why not.
    pub fn authenticate(
        &self,
        store: &Store,
        token: &str,
        now: i64,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let (claims, audiences) = self.verify(token, now, audiences)?;
        let sa = store
            .get(
                &GroupResource::new("", "serviceaccounts"),
                &claims.namespace,
                &claims.name,
            )
            .ok_or_else(|| {
                format!(
                    "serviceaccounts \"{}\" not found in namespace {}",
                    claims.name, claims.namespace
                )
            })?;
        if deleted_before(&sa, now - DELETION_GRACE_SECONDS) {
            return Err(format!(
                "service account {}/{} has been deleted",
                claims.namespace, claims.name
            ));
        }
        if sa.uid != claims.uid {
            return Err(format!(
                "service account UID ({}) does not match claim ({})",
                sa.uid, claims.uid
            ));
        }
        let b = &claims.bound;
        // A pod-bound token names the pod's node for information; only a node-bound one is
        // checked against the node.
        let node = if b.pod.is_none() {
            b.node.as_ref()
        } else {
            None
        };
        for (resource, namespace, r) in [
            ("pods", claims.namespace.as_str(), &b.pod),
            ("secrets", claims.namespace.as_str(), &b.secret),
            ("nodes", "", &node.cloned()),
        ] {
            let Some(r) = r else { continue };
            let obj = store.get(&GroupResource::new("", resource), namespace, &r.name);
            match obj {
                Some(o) if !deleted_before(&o, now - DELETION_GRACE_SECONDS) && o.uid == r.uid => {}
                Some(o) if o.uid != r.uid => {
                    return Err(format!(
                        "{resource} {:?} UID ({}) does not match claim ({})",
                        r.name, o.uid, r.uid
                    ));
                }
                _ => return Err("service account token has been invalidated".into()),
            }
        }
        let mut user = user_info(&claims.namespace, &claims.name, &claims.uid);
        // The extras upstream's `serviceaccount.ServiceAccountInfo.UserInfo` adds.
        let mut extra = |key: &str, value: &str| {
            if !value.is_empty() {
                user.extra.insert(
                    format!("authentication.kubernetes.io/{key}"),
                    vec![value.to_owned()],
                );
            }
        };
        if let Some(pod) = &b.pod {
            extra("pod-name", &pod.name);
            extra("pod-uid", &pod.uid);
        }
        if let Some(node) = &b.node {
            extra("node-name", &node.name);
            extra("node-uid", &node.uid);
        }
        if !claims.jti.is_empty() {
            extra("credential-id", &format!("JTI={}", claims.jti));
        }
        Ok((user, audiences))
    }
}

/// Whether `obj` has been being deleted since before `cutoff` (Unix seconds); an object being
/// deleted whose timestamp cannot be read counts as long deleted.
fn deleted_before(obj: &kgc_store::StoredObject, cutoff: i64) -> bool {
    if !obj.deleting {
        return false;
    }
    let since = serde_json::from_str::<Value>(&obj.raw).ok().and_then(|v| {
        v["metadata"]["deletionTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    });
    since.is_none_or(|t| t.as_second() < cutoff)
}

/// The user a service account is: `system:serviceaccount:NS:NAME` in `system:serviceaccounts`
/// and `system:serviceaccounts:NS` (`pkg/serviceaccount/util.go`).
pub fn user_info(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        name: format!("{SA_PREFIX}{namespace}:{name}"),
        uid: uid.to_owned(),
        groups: vec![SA_GROUP.to_owned(), format!("{SA_GROUP}:{namespace}")],
        extra: Default::default(),
    }
}

/// Splits `system:serviceaccount:NS:NAME` (for `--as` and SubjectAccessReview users).
pub fn split_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SA_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> ServiceAccountTokens {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        ServiceAccountTokens::new(der.as_ref(), DEFAULT_ISSUER).unwrap()
    }

    /// The claims of a token presented for the API audience.
    fn verify(t: &ServiceAccountTokens, token: &str, now: i64) -> Option<Claims> {
        t.verify(token, now, &[DEFAULT_ISSUER.to_owned()])
            .ok()
            .map(|(c, _)| c)
    }

    fn claims() -> Claims {
        Claims {
            namespace: "ns".into(),
            name: "sa".into(),
            uid: "u-1".into(),
            jti: "j".into(),
            bound: Bound::default(),
        }
    }

    #[test]
    fn round_trip_and_rejections() {
        let t = tokens();
        let api = vec![DEFAULT_ISSUER.to_owned()];
        let tok = t.issue(&claims(), &api, 1000, 600).unwrap();
        assert_eq!(verify(&t, &tok, 1000), Some(claims()));
        assert_eq!(verify(&t, &tok, 1599), Some(claims()));
        // Expired, not yet valid.
        assert_eq!(verify(&t, &tok, 1600), None);
        assert_eq!(verify(&t, &tok, 999), None);
        // Another audience is not for the API server.
        let other = t.issue(&claims(), &["vault".into()], 1000, 600).unwrap();
        assert_eq!(verify(&t, &other, 1000), None);
        // A token for another audience is good for that one only, and says so.
        let (_, matched) = t
            .verify(&other, 1000, &["x".into(), "vault".into()])
            .unwrap();
        assert_eq!(matched, ["vault"]);
        let why = t.verify(&other, 1000, &api).unwrap_err();
        assert!(why.contains("vault"), "{why}");
        // Another key's signature.
        let forged = tokens().issue(&claims(), &api, 1000, 600).unwrap();
        assert_eq!(verify(&t, &forged, 1000), None);
        // A payload swapped under a valid signature.
        let mut parts: Vec<&str> = tok.split('.').collect();
        let evil = B64.encode(
            json!({"iss": DEFAULT_ISSUER, "aud": api, "exp": 9999, "sub": "system:serviceaccount:kube-system:admin",
                   "kubernetes.io": {"namespace": "kube-system", "serviceaccount": {"name": "admin", "uid": "x"}}})
            .to_string(),
        );
        parts[1] = &evil;
        assert_eq!(verify(&t, &parts.join("."), 1000), None);
        for junk in [
            "",
            "a.b",
            "a.b.c",
            "....",
            "\u{0}.\u{1}.\u{2}",
            "e30.e30.e30",
        ] {
            assert_eq!(verify(&t, junk, 1000), None, "{junk:?}");
        }
    }

    #[test]
    fn bound_objects_round_trip() {
        let t = tokens();
        let api = vec![DEFAULT_ISSUER.to_owned()];
        let c = Claims {
            bound: Bound {
                pod: Some(ObjectRef {
                    name: "p".into(),
                    uid: "pu".into(),
                }),
                node: Some(ObjectRef {
                    name: "n".into(),
                    uid: String::new(),
                }),
                secret: None,
            },
            ..claims()
        };
        let tok = t.issue(&c, &api, 1000, 600).unwrap();
        assert_eq!(verify(&t, &tok, 1000), Some(c));
    }

    #[test]
    fn verified_tokens_are_cached_failures_are_not() {
        let t = tokens();
        let api = vec![DEFAULT_ISSUER.to_owned()];
        let tok = t.issue(&claims(), &api, 1000, 600).unwrap();
        // A forgery is refused and not remembered.
        let forged = tokens().issue(&claims(), &api, 1000, 600).unwrap();
        assert_eq!(verify(&t, &forged, 1000), None);
        assert!(t.verified.lock().unwrap().is_empty());
        // Not yet valid: refused, but its signature is remembered.
        assert_eq!(verify(&t, &tok, 999), None);
        assert!(t.verified.lock().unwrap().contains_key(&tok));
        assert_eq!(verify(&t, &tok, 1000), Some(claims()));
        // A hit still honours the validity window.
        assert_eq!(verify(&t, &tok, 1600), None);
        assert_eq!(verify(&t, &tok, 1001), Some(claims()));
        // Bounded: a full cache starts over.
        for i in 0..VERIFIED_CAPACITY {
            let c = Claims {
                jti: i.to_string(),
                ..claims()
            };
            let other = t.issue(&c, &api, 1000, 600).unwrap();
            assert!(verify(&t, &other, 1000).is_some());
        }
        assert!(t.verified.lock().unwrap().len() <= VERIFIED_CAPACITY);
    }

    #[test]
    fn usernames() {
        assert_eq!(
            split_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(split_username("system:serviceaccount:ns"), None);
        assert_eq!(split_username("alice"), None);
        let u = user_info("ns", "sa", "u");
        assert_eq!(u.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            u.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }
}
