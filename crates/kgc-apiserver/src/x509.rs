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
    /// Each root's validity window (Unix seconds, `notBefore..=notAfter`), index for index:
    /// webpki does not check a trust anchor's dates, Go's `x509.Verify` (upstream's) does, so an
    /// expired CA must stop authenticating the leaves it signed.
    validity: Vec<(i64, i64)>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertificates {
    /// An authenticator trusting `cas` (DER certificates), or why one of them cannot be a root.
    pub fn new(
        cas: &[CertificateDer<'_>],
        algorithms: WebPkiSupportedAlgorithms,
    ) -> Result<Self, String> {
        let mut roots = Vec::with_capacity(cas.len());
        let mut validity = Vec::with_capacity(cas.len());
        for (i, der) in cas.iter().enumerate() {
            let anchor = webpki::anchor_from_trusted_cert(der)
                .map_err(|e| format!("client CA certificate {i}: {e}"))?;
            roots.push(anchor.to_owned());
            validity.push(window(der).map_err(|e| format!("client CA certificate {i}: {e}"))?);
        }
        Ok(Self {
            roots,
            validity,
            algorithms,
        })
    }

    /// The user `chain` (leaf first, then intermediates) authenticates at `now`, or why it
    /// authenticates nobody. Like upstream: the chain must lead to the client CA, every
    /// certificate (the CA included) must be valid now, and a leaf that lists extended key
    /// usages must list client authentication; the user is the CN (which must not be empty),
    /// the groups the Os.
    pub fn authenticate(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> CertAuth {
        let (leaf, intermediates) = chain
            .split_first()
            .ok_or_else(|| Arc::<str>::from("no certificate"))?;
        let ee = webpki::EndEntityCert::try_from(leaf)
            .map_err(|e| reason(format!("unparsable certificate: {e}")))?;
        let path = ee
            .verify_for_usage(
                self.algorithms.all,
                &self.roots,
                intermediates,
                now,
                webpki::KeyUsage::client_auth(),
                None,
                None,
            )
            .map_err(|e| reason(format!("verifying the certificate chain: {e}")))?;
        let anchor = path.anchor();
        let (ca_not_before, ca_not_after) = self
            .roots
            .iter()
            .position(|r| std::ptr::eq(r, anchor))
            .and_then(|i| self.validity.get(i).copied())
            .ok_or_else(|| Arc::<str>::from("the chain ends at an unknown client CA"))?;
        let secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        if secs < ca_not_before || secs > ca_not_after {
            return Err(Arc::from(
                "verifying the certificate chain: the client CA is expired or not yet valid",
            ));
        }
        let mut not_after = ca_not_after;
        for der in intermediates {
            not_after = not_after.min(window(der).map_err(reason)?.1);
        }
        use x509_parser::prelude::*;
        let (_, cert) = X509Certificate::from_der(leaf.as_ref())
            .map_err(|e| reason(format!("unparsable certificate: {e}")))?;
        not_after = not_after.min(cert.validity().not_after.timestamp());
        Ok(VerifiedCert {
            user: Arc::new(identity(&cert)?),
            not_after,
        })
    }
}

/// A certificate's validity window in Unix seconds.
fn window(der: &CertificateDer<'_>) -> Result<(i64, i64), String> {
    use x509_parser::prelude::*;
    let (_, cert) = X509Certificate::from_der(der.as_ref())
        .map_err(|e| format!("unparsable certificate: {e}"))?;
    let v = cert.validity();
    Ok((v.not_before.timestamp(), v.not_after.timestamp()))
}

fn reason(s: String) -> Arc<str> {
    Arc::from(s)
}

/// The user a certificate names: CN and the O groups, plus `system:authenticated`. An empty CN
/// names nobody (upstream's "common name of client cert is empty").
fn identity(cert: &x509_parser::certificate::X509Certificate<'_>) -> Result<UserInfo, Arc<str>> {
    let subject = cert.subject();
    // The last CN, as Go's `pkix.Name.FillFromRDNSequence` (upstream's) overwrites each.
    let name = subject
        .iter_common_name()
        .last()
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
        ca_valid(name, (2000, 2999))
    }

    fn ca_valid(name: &str, years: (i32, i32)) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(years.0, 1, 1);
        params.not_after = rcgen::date_time_ymd(years.1, 1, 1);
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
        let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap();
        let provider = rustls::crypto::ring::default_provider();
        ClientCertificates::new(&[ca], provider.signature_verification_algorithms).unwrap()
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
        // webpki leaves the root's dates alone; Go's x509.Verify does not: a CA that has
        // expired authenticates nobody, whatever its leaves say.
        let (old_pem, old_ca) = ca_valid("expired-ca", (2000, 2001));
        let why = authenticator(&old_pem)
            .authenticate(&[leaf(&old_ca, "alice", ClientAuth, current)], now)
            .unwrap_err();
        assert!(why.contains("client CA is expired"), "{why}");
        // The connection's certificate stops authenticating when its CA does.
        let v = auth.authenticate(&[leaf(&issuer, "alice", ClientAuth, (2000, 3500))], now);
        assert_eq!(
            v.unwrap().not_after,
            jiff::civil::date(2999, 1, 1)
                .to_zoned(jiff::tz::TimeZone::UTC)
                .unwrap()
                .timestamp()
                .as_second()
        );
        assert!(
            auth.authenticate(&[CertificateDer::from(vec![1, 2, 3])], now)
                .is_err()
        );
    }
}
