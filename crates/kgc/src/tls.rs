//! The cluster's own PKI: a CA, the serving certificate, client certificates and the
//! service-account signing key, created on first start and reused afterwards.
//!
//! kube-apiserver expects an operator (or kubeadm) to hand it these files; `kgc serve` makes them
//! itself so that the default start is secure with no set-up: the kubeconfig it writes carries
//! the CA (kubectl verifies the server) and an admin client certificate (`O=system:masters`).
//! Files live in `DATA_DIR/pki/` (keys 0600); with `--in-memory` they are made afresh in memory
//! and only the kubeconfig is written.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// The user the server's own kubeconfig authenticates as; `system:masters` makes it a
/// superuser, as kubeadm's `kubernetes-admin`.
pub const ADMIN_USER: &str = "kgc-admin";
/// The group that bypasses authorization (kube-apiserver's superuser group).
pub const MASTERS_GROUP: &str = "system:masters";

/// How long the CA is valid (years) and how long leaf certificates are (days).
const CA_YEARS: i16 = 10;
const LEAF_DAYS: i64 = 365;
/// A leaf certificate this close to its end is renewed on start.
const RENEW_BEFORE_DAYS: i64 = 30;

/// A certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Everything `kgc serve` needs for TLS and authentication.
pub struct Pki {
    /// The CA that signs client certificates (and, unless brought, the serving certificate).
    pub ca: Pair,
    /// The serving certificate chain and key.
    pub serving: Pair,
    /// What kubeconfigs trust to verify the server (`certificate-authority-data`).
    pub server_ca_pem: String,
    /// The admin client certificate written into the kubeconfig.
    pub admin: Pair,
    /// The PKCS#8 ECDSA P-256 key that signs service-account tokens.
    pub service_account_key_der: Vec<u8>,
}

/// A `--tls-cert-file` / `--tls-private-key-file` pair.
pub struct BroughtCert {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl Pki {
    /// Loads the PKI from `dir` (creating what is missing or expiring), or makes it in memory
    /// when `dir` is `None`. `hosts` are the names and addresses the serving certificate must
    /// cover.
    pub fn load_or_create(
        dir: Option<&Path>,
        hosts: &[String],
        brought: Option<&BroughtCert>,
    ) -> anyhow::Result<Self> {
        if let Some(dir) = dir {
            crate::data_dir::private_dir(dir)?;
        }
        let ca = match dir.map(|d| read_pair(d, "ca")).transpose()?.flatten() {
            Some(ca) => ca,
            None => {
                let ca = new_ca()?;
                if let Some(d) = dir {
                    write_pair(d, "ca", &ca)?;
                }
                ca
            }
        };
        let leaf = |name: &str, make: &dyn Fn() -> anyhow::Result<Pair>| -> anyhow::Result<Pair> {
            if let Some(d) = dir
                && let Some(p) = read_pair(d, name)?
                && still_good(&p.cert_pem, &ca.cert_pem, hosts_for(name, hosts))
            {
                return Ok(p);
            }
            let p = make()?;
            if let Some(d) = dir {
                write_pair(d, name, &p)?;
            }
            Ok(p)
        };
        let (serving, server_ca_pem) = match brought {
            Some(b) => {
                let cert_pem = std::fs::read_to_string(&b.cert_file).with_context(|| {
                    format!("reading --tls-cert-file {}", b.cert_file.display())
                })?;
                let key_pem = std::fs::read_to_string(&b.key_file).with_context(|| {
                    format!("reading --tls-private-key-file {}", b.key_file.display())
                })?;
                // Clients trust the last certificate of the chain: the root when the file
                // carries it, the certificate itself when it is self-signed.
                let last = pem_blocks(&cert_pem).pop().with_context(|| {
                    format!(
                        "--tls-cert-file {} holds no certificate",
                        b.cert_file.display()
                    )
                })?;
                (Pair { cert_pem, key_pem }, last)
            }
            None => (
                leaf("apiserver", &|| serving_cert(&ca, hosts))?,
                ca.cert_pem.clone(),
            ),
        };
        let admin = leaf("admin", &|| client_cert(&ca, ADMIN_USER, &[MASTERS_GROUP]))?;
        let sa_key = match dir {
            Some(d) => {
                let path = d.join("sa.key");
                match std::fs::read_to_string(&path) {
                    Ok(pem) => KeyPair::from_pem(&pem)
                        .with_context(|| format!("parsing {}", path.display()))?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let k = KeyPair::generate()?;
                        write_private(&path, &k.serialize_pem())?;
                        k
                    }
                    Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
                }
            }
            None => KeyPair::generate()?,
        };
        Ok(Self {
            ca,
            serving,
            server_ca_pem,
            admin,
            service_account_key_der: sa_key.serialize_der(),
        })
    }
}

/// The directory `kgc serve` keeps its PKI in.
pub fn pki_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("pki")
}

/// Reads the CA of a data directory (for `kgc serve add-user`).
pub fn read_ca(data_dir: &Path) -> anyhow::Result<Pair> {
    let dir = pki_dir(data_dir);
    read_pair(&dir, "ca")?.with_context(|| {
        format!(
            "no CA in {}: start `kgc serve --data-dir {}` once first (an --in-memory server keeps no CA)",
            dir.display(),
            data_dir.display()
        )
    })
}

/// Signs a client certificate: the user is its CN, the groups its O entries (how kube-apiserver's
/// x509 authenticator reads them).
pub fn client_cert(ca: &Pair, user: &str, groups: &[&str]) -> anyhow::Result<Pair> {
    let mut params = leaf_params(Vec::new())?;
    let mut dn = DistinguishedName::new();
    for g in groups {
        dn.push(DnType::OrganizationName, *g);
    }
    dn.push(DnType::CommonName, user);
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    sign(ca, &params)
}

fn serving_cert(ca: &Pair, hosts: &[String]) -> anyhow::Result<Pair> {
    let mut params = leaf_params(Vec::new())?;
    params.subject_alt_names = hosts
        .iter()
        .map(|h| match h.parse::<IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => Ok(SanType::DnsName(h.as_str().try_into()?)),
        })
        .collect::<Result<_, rcgen::Error>>()?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kgc-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    sign(ca, &params)
}

fn new_ca() -> anyhow::Result<Pair> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::new())?;
    params.distinguished_name.push(DnType::CommonName, "kgc-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, jiff::Span::new().years(CA_YEARS))?;
    let cert = params.self_signed(&key)?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn leaf_params(sans: Vec<String>) -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(sans)?;
    set_validity(&mut params, jiff::Span::new().days(LEAF_DAYS))?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.use_authority_key_identifier_extension = true;
    Ok(params)
}

fn sign(ca: &Pair, params: &CertificateParams) -> anyhow::Result<Pair> {
    let ca_key = KeyPair::from_pem(&ca.key_pem).context("parsing the CA key")?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key).context("parsing the CA certificate")?;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Valid from yesterday (tolerating clock skew between hosts) for `span`.
fn set_validity(params: &mut CertificateParams, span: jiff::Span) -> anyhow::Result<()> {
    let today = jiff::Zoned::now().date();
    let ymd = |d: jiff::civil::Date| {
        rcgen::date_time_ymd(i32::from(d.year()), d.month() as u8, d.day() as u8)
    };
    params.not_before = ymd(today.yesterday()?);
    params.not_after = ymd(today.checked_add(span)?);
    Ok(())
}

/// The hosts a stored leaf must cover: the serving certificate's, or none for client ones.
fn hosts_for<'a>(name: &str, hosts: &'a [String]) -> &'a [String] {
    if name == "apiserver" { hosts } else { &[] }
}

/// Whether a stored leaf is signed by this CA, covers `hosts` and is not about to expire.
fn still_good(cert_pem: &str, ca_pem: &str, hosts: &[String]) -> bool {
    use x509_parser::prelude::*;
    let (Some(der), Some(ca_der)) = (pem_der(cert_pem), pem_der(ca_pem)) else {
        return false;
    };
    let (Ok((_, cert)), Ok((_, ca))) = (
        X509Certificate::from_der(&der),
        X509Certificate::from_der(&ca_der),
    ) else {
        return false;
    };
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return false;
    }
    let renew_at = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(24 * RENEW_BEFORE_DAYS))
        .map(|t| t.as_second())
        .unwrap_or(i64::MAX);
    if cert.validity().not_after.timestamp() < renew_at {
        return false;
    }
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return hosts.is_empty();
    };
    hosts.iter().all(|h| {
        san.value.general_names.iter().any(|n| match n {
            GeneralName::DNSName(d) => d == h,
            GeneralName::IPAddress(b) => h.parse::<IpAddr>().is_ok_and(|ip| match ip {
                IpAddr::V4(v4) => *b == v4.octets(),
                IpAddr::V6(v6) => *b == v6.octets(),
            }),
            _ => false,
        })
    })
}

/// The DER of the first PEM block.
fn pem_der(pem: &str) -> Option<Vec<u8>> {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .ok()
        .map(|(_, p)| p.contents)
}

/// Each `-----BEGIN CERTIFICATE-----` block of a PEM file, as text.
fn pem_blocks(pem: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(end) = rest[start..].find(END) else {
            break;
        };
        let stop = start + end + END.len();
        out.push(format!("{}\n", &rest[start..stop]));
        rest = &rest[stop..];
    }
    out
}

fn read_pair(dir: &Path, name: &str) -> anyhow::Result<Option<Pair>> {
    let (c, k) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let read = |p: &Path| match std::fs::read_to_string(p) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
    };
    Ok(match (read(&c)?, read(&k)?) {
        (Some(cert_pem), Some(key_pem)) => Some(Pair { cert_pem, key_pem }),
        _ => None,
    })
}

fn write_pair(dir: &Path, name: &str, p: &Pair) -> anyhow::Result<()> {
    write_private(&dir.join(format!("{name}.key")), &p.key_pem)?;
    crate::serve::write_atomic(&dir.join(format!("{name}.crt")), &p.cert_pem)
}

/// Writes a secret file readable by its owner only (created so, never widened afterwards),
/// through `PATH.tmp` in the same directory and a rename, so `path` is whole or untouched; the
/// temporary file is removed when anything fails.
pub fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pki_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let a = Pki::load_or_create(Some(dir.path()), &hosts, None).unwrap();
        let b = Pki::load_or_create(Some(dir.path()), &hosts, None).unwrap();
        assert_eq!(a.ca.cert_pem, b.ca.cert_pem);
        assert_eq!(a.serving.cert_pem, b.serving.cert_pem);
        assert_eq!(a.admin.cert_pem, b.admin.cert_pem);
        assert_eq!(a.service_account_key_der, b.service_account_key_der);
        // A new listen address needs a new serving certificate from the same CA.
        let more = vec!["localhost".to_owned(), "10.1.2.3".to_owned()];
        let c = Pki::load_or_create(Some(dir.path()), &more, None).unwrap();
        assert_eq!(a.ca.cert_pem, c.ca.cert_pem);
        assert_ne!(a.serving.cert_pem, c.serving.cert_pem);
        assert!(still_good(&c.serving.cert_pem, &c.ca.cert_pem, &more));
        assert!(!still_good(
            &c.serving.cert_pem,
            &new_ca().unwrap().cert_pem,
            &more
        ));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("ca.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn pem_blocks_split_a_chain() {
        let ca = new_ca().unwrap();
        let leaf = client_cert(&ca, "u", &["g"]).unwrap();
        let chain = format!("{}{}", leaf.cert_pem, ca.cert_pem);
        let blocks = pem_blocks(&chain);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].trim(), ca.cert_pem.trim());
    }
}
