//! The client-certificate authenticator, as kube-apiserver's
//! (`k8s.io/apiserver/pkg/authentication/request/x509/x509.go`): the TLS handshake only asks
//! for a certificate and checks that the client holds its key; whether the cluster CA signed it
//! is decided here, so a certificate from another CA, an expired one or one without a user name
//! gets the same 401 `Status` as a bad token instead of a handshake failure the client cannot
//! explain.
//!
//! The chain is verified once per TLS connection (the listener calls [`ClientCertificates::
//! authenticate`] right after the handshake); a request only compares the clock with the
//! certificate's expiry, so a kept-alive connection cannot outlive its certificate.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::authn::{UserInfo, with_authenticated};

/// What the client certificate of a connection authenticates.
pub type CertAuth = Result<VerifiedCert, Arc<str>>;

/// A client certificate the cluster CA signed, and the user it names.
#[derive(Debug, Clone)]
pub struct VerifiedCert {
    pub user: Arc<UserInfo>,
    /// Unix seconds after which the chain (leaf or an intermediate) is no longer valid.
    pub not_after: i64,
}

impl VerifiedCert {
    /// Still valid at `now` (Unix seconds)?
    pub fn valid_at(&self, now: i64) -> bool {
        now <= self.not_after
    }
}

/// Verifies client certificates against the client CA.
#[derive(Debug)]
pub struct ClientCertificates {
    roots: Vec<TrustAnchor<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertificates {
    pub fn new(roots: &rustls::RootCertStore, algorithms: WebPkiSupportedAlgorithms) -> Self {
        Self {
            roots: roots.roots.clone(),
            algorithms,
        }
    }

    /// The user `chain` (leaf first, then intermediates) authenticates at `now`, or why it
    /// authenticates nobody. Like upstream: the chain must lead to the client CA, every
    /// certificate must be valid now, and a leaf that lists extended key usages must list
    /// client authentication; the user is the CN (which must not be empty), the groups the Os.
    pub fn authenticate(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> CertAuth {
        let (leaf, intermediates) = chain
            .split_first()
            .ok_or_else(|| Arc::<str>::from("no certificate"))?;
        let ee = webpki::EndEntityCert::try_from(leaf)
            .map_err(|e| reason(format!("unparsable certificate: {e}")))?;
        ee.verify_for_usage(
            self.algorithms.all,
            &self.roots,
            intermediates,
            now,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map_err(|e| reason(format!("verifying the certificate chain: {e}")))?;
        let mut not_after = i64::MAX;
        let mut user = None;
        for (i, der) in chain.iter().enumerate() {
            use x509_parser::prelude::*;
            let (_, cert) = X509Certificate::from_der(der.as_ref())
                .map_err(|e| reason(format!("unparsable certificate: {e}")))?;
            not_after = not_after.min(cert.validity().not_after.timestamp());
            if i == 0 {
                user = Some(identity(&cert)?);
            }
        }
        let user = user.ok_or_else(|| Arc::<str>::from("no certificate"))?;
        Ok(VerifiedCert {
            user: Arc::new(user),
            not_after,
        })
    }
}

fn reason(s: String) -> Arc<str> {
    Arc::from(s)
}

/// The user a certificate names: CN and the O groups, plus `system:authenticated`. An empty CN
/// names nobody (upstream's "common name of client cert is empty").
fn identity(cert: &x509_parser::certificate::X509Certificate<'_>) -> Result<UserInfo, Arc<str>> {
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default();
    if name.is_empty() {
        return Err(Arc::from(
            "the common name of the client certificate is empty",
        ));
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    Ok(with_authenticated(UserInfo {
        name: name.to_owned(),
        uid: String::new(),
        groups,
        extra: BTreeMap::new(),
    }))
}

/// The handshake side: asks for a client certificate (naming the client CA as the acceptable
/// issuer), accepts whatever the client presents, and checks the handshake signature with the
/// provider's algorithms, so the client must hold the certificate's private key. The chain is
/// left to [`ClientCertificates`], as kube-apiserver's `tls.RequestClientCert` leaves it to its
/// x509 authenticator.
#[derive(Debug)]
pub(crate) struct RequestClientCert {
    /// The webpki verifier, used for the CA hints and the handshake signatures only.
    inner: Arc<dyn ClientCertVerifier>,
}

impl RequestClientCert {
    pub(crate) fn new(
        roots: Arc<rustls::RootCertStore>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, rustls::server::VerifierBuilderError> {
        let inner = WebPkiClientVerifier::builder_with_provider(roots, provider)
            .allow_unauthenticated()
            .build()?;
        Ok(Self { inner })
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Only well-formedness here (so the signature checks below can read its key); trust is
        // the authenticator's.
        ParsedCertificate::try_from(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    use rustls::pki_types::pem::PemObject;

    use super::*;

    fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    }

    fn leaf(
        issuer: &Issuer<'_, KeyPair>,
        cn: &str,
        eku: ExtendedKeyUsagePurpose,
        years: (i32, i32),
    ) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "devs");
        if !cn.is_empty() {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        params.extended_key_usages = vec![eku];
        params.not_before = rcgen::date_time_ymd(years.0, 1, 1);
        params.not_after = rcgen::date_time_ymd(years.1, 1, 1);
        let key = KeyPair::generate().unwrap();
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    fn authenticator(ca_pem: &str) -> ClientCertificates {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        let provider = rustls::crypto::ring::default_provider();
        ClientCertificates::new(&roots, provider.signature_verification_algorithms)
    }

    #[test]
    fn chains_are_verified_like_upstream() {
        let (ca_pem, issuer) = ca("kgc-ca");
        let (_, other) = ca("other-ca");
        let auth = authenticator(&ca_pem);
        let now = UnixTime::now();
        let current = (2000, 2999);
        let ok = leaf(
            &issuer,
            "alice",
            ExtendedKeyUsagePurpose::ClientAuth,
            current,
        );
        let v = auth.authenticate(&[ok], now).unwrap();
        assert_eq!(v.user.name, "alice");
        assert_eq!(v.user.groups, ["devs", "system:authenticated"]);
        assert!(v.valid_at(jiff::Timestamp::now().as_second()));
        assert!(!v.valid_at(i64::from(i32::MAX) * 20));
        use ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
        for (ca, cn, eku, years, want) in [
            (&other, "alice", ClientAuth, current, "UnknownIssuer"),
            (&issuer, "alice", ClientAuth, (2000, 2001), "Expired"),
            (&issuer, "web", ServerAuth, current, "RequiredEkuNotFound"),
            (&issuer, "", ClientAuth, current, "common name"),
        ] {
            let why = auth
                .authenticate(&[leaf(ca, cn, eku, years)], now)
                .unwrap_err();
            assert!(why.contains(want), "{why}");
        }
        assert!(auth.authenticate(&[], now).is_err());
        assert!(
            auth.authenticate(&[CertificateDer::from(vec![1, 2, 3])], now)
                .is_err()
        );
    }
}
