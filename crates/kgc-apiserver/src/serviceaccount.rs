//! Service-account tokens: signed JWTs (ES256) as kube-apiserver's TokenRequest issues them,
//! and their validation (`pkg/serviceaccount/jwt.go`, `claims.go`).
//!
//! A token names its service account by namespace, name and uid; it is accepted only while that
//! account still exists with that uid, so deleting (or recreating) the account revokes every
//! token issued for it.

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
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub jti: String,
}

impl ServiceAccountTokens {
    /// `pkcs8_der` is an ECDSA P-256 private key.
    pub fn new(pkcs8_der: &[u8], issuer: impl Into<String>) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8_der, &rng)
                .map_err(|e| Error::SigningKey(e.to_string()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key().as_ref());
        let key_id = B64.encode(digest.as_ref());
        Ok(Self {
            key,
            issuer: issuer.into(),
            key_id,
            rng,
        })
    }

    /// The audience the API server itself accepts (`--api-audiences`, which defaults to the
    /// issuer).
    pub fn api_audience(&self) -> &str {
        &self.issuer
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
        let payload = json!({
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

    /// The claims of a token this server signed, for the API audience, valid at `now`. `None`
    /// for anything else (upstream answers every such failure with the same 401).
    pub fn verify(&self, token: &str, now: i64) -> Option<Claims> {
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
        let aud_ok = match &c["aud"] {
            Value::String(a) => a == &self.issuer,
            Value::Array(a) => a.iter().any(|a| a == self.issuer.as_str()),
            _ => false,
        };
        let exp = c["exp"].as_i64()?;
        let nbf = c["nbf"].as_i64().unwrap_or(i64::MIN);
        if !aud_ok || now >= exp || now < nbf {
            return None;
        }
        let k8s = &c["kubernetes.io"];
        let claims = Claims {
            namespace: k8s["namespace"].as_str()?.to_owned(),
            name: k8s["serviceaccount"]["name"].as_str()?.to_owned(),
            uid: k8s["serviceaccount"]["uid"].as_str()?.to_owned(),
            jti: c["jti"].as_str().unwrap_or_default().to_owned(),
        };
        let sub = format!("{SA_PREFIX}{}:{}", claims.namespace, claims.name);
        (c["sub"] == sub.as_str()).then_some(claims)
    }

    /// Authenticates a bearer token: a valid signature and claims, and the service account
    /// still exists with the uid the token names and is not being deleted.
    pub fn authenticate(&self, store: &Store, token: &str, now: i64) -> Option<UserInfo> {
        let claims = self.verify(token, now)?;
        let sa = store.get(
            &GroupResource::new("", "serviceaccounts"),
            &claims.namespace,
            &claims.name,
        )?;
        if sa.uid != claims.uid || sa.deleting {
            tracing::debug!(namespace = %claims.namespace, name = %claims.name, "token for a deleted or recreated service account");
            return None;
        }
        let mut user = user_info(&claims.namespace, &claims.name, &claims.uid);
        if !claims.jti.is_empty() {
            user.extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![format!("JTI={}", claims.jti)],
            );
        }
        Some(user)
    }
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

    fn claims() -> Claims {
        Claims {
            namespace: "ns".into(),
            name: "sa".into(),
            uid: "u-1".into(),
            jti: "j".into(),
        }
    }

    #[test]
    fn round_trip_and_rejections() {
        let t = tokens();
        let api = vec![DEFAULT_ISSUER.to_owned()];
        let tok = t.issue(&claims(), &api, 1000, 600).unwrap();
        assert_eq!(t.verify(&tok, 1000), Some(claims()));
        assert_eq!(t.verify(&tok, 1599), Some(claims()));
        // Expired, not yet valid.
        assert_eq!(t.verify(&tok, 1600), None);
        assert_eq!(t.verify(&tok, 999), None);
        // Another audience is not for the API server.
        let other = t.issue(&claims(), &["vault".into()], 1000, 600).unwrap();
        assert_eq!(t.verify(&other, 1000), None);
        // Another key's signature.
        let forged = tokens().issue(&claims(), &api, 1000, 600).unwrap();
        assert_eq!(t.verify(&forged, 1000), None);
        // A payload swapped under a valid signature.
        let mut parts: Vec<&str> = tok.split('.').collect();
        let evil = B64.encode(
            json!({"iss": DEFAULT_ISSUER, "aud": api, "exp": 9999, "sub": "system:serviceaccount:kube-system:admin",
                   "kubernetes.io": {"namespace": "kube-system", "serviceaccount": {"name": "admin", "uid": "x"}}})
            .to_string(),
        );
        parts[1] = &evil;
        assert_eq!(t.verify(&parts.join("."), 1000), None);
        for junk in [
            "",
            "a.b",
            "a.b.c",
            "....",
            "\u{0}.\u{1}.\u{2}",
            "e30.e30.e30",
        ] {
            assert_eq!(t.verify(junk, 1000), None, "{junk:?}");
        }
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
