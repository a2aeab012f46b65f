//! The CSR cleaner (upstream `pkg/controller/certificates/cleaner/cleaner.go`): every hour it
//! deletes CertificateSigningRequests that are
//!
//! 1. approved and issued, approved more than 1 h ago;
//! 2. denied more than 1 h ago;
//! 3. failed more than 1 h ago;
//! 4. pending (no condition at all) and created more than 24 h ago;
//! 5. approved and issued with a certificate whose `NotAfter` has passed.
//!
//! As upstream, a CSR approved but never issued (and not Failed) is kept: its requester may
//! still be waiting for a signer. A certificate that does not parse makes rule 5 false (logged);
//! the other rules still apply. Times of zero never expire.

use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use serde_json::Value;

use crate::{Metrics, Result, Target, time_field};
use kgc_runtime::Context;
use kgc_runtime::informer::{describe, key_of};

const COLLECTOR: &str = "csr";
const APPROVED_EXPIRATION: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);
const DENIED_EXPIRATION: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);
const PENDING_EXPIRATION: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `pollingInterval`: 1 h.
    pub period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            period: Duration::from_secs(3600),
        }
    }
}

/// Upstream `isOlderThan`: a non-zero time more than `d` before `now`.
fn older_than(t: Option<jiff::Timestamp>, d: jiff::SignedDuration, now: jiff::Timestamp) -> bool {
    t.is_some_and(|t| now.duration_since(t) > d)
}

/// Why a CSR is to be deleted, or `None` to keep it. `Err` names a malformed field (the CSR is
/// then left alone).
pub fn judge(csr: &Value, now: jiff::Timestamp) -> Result<Option<&'static str>> {
    let status = &csr["status"];
    let conditions: &[Value] = status["conditions"].as_array().map_or(&[], Vec::as_slice);
    let certificate = status["certificate"].as_str().filter(|c| !c.is_empty());
    let updated = |c: &Value| {
        time_field(
            csr,
            &c["lastUpdateTime"],
            "status.conditions[].lastUpdateTime",
        )
    };
    for c in conditions {
        let at = updated(c)?;
        match c["type"].as_str() {
            Some("Approved")
                if certificate.is_some() && older_than(at, APPROVED_EXPIRATION, now) =>
            {
                return Ok(Some("issued-past-deadline"));
            }
            Some("Denied") if older_than(at, DENIED_EXPIRATION, now) => return Ok(Some("denied")),
            Some("Failed") if older_than(at, DENIED_EXPIRATION, now) => return Ok(Some("failed")),
            _ => {}
        }
    }
    if conditions.is_empty() {
        let created = time_field(
            csr,
            &csr["metadata"]["creationTimestamp"],
            "metadata.creationTimestamp",
        )?;
        if older_than(created, PENDING_EXPIRATION, now) {
            return Ok(Some("pending"));
        }
    }
    let approved = conditions.iter().any(|c| c["type"] == "Approved");
    if let (true, Some(cert)) = (approved, certificate) {
        match not_after(cert) {
            Ok(t) if now > t => return Ok(Some("expired")),
            Ok(_) => {}
            Err(e) => tracing::info!(collector = COLLECTOR, csr = %describe(&key_of(csr)),
                error = %e, "the issued certificate does not parse; judging by its conditions only"),
        }
    }
    Ok(None)
}

/// The `NotAfter` of the first certificate in the first PEM block of `status.certificate`
/// (base64 of PEM, as JSON carries `[]byte`).
pub fn not_after(certificate_b64: &str) -> Result<jiff::Timestamp, String> {
    let pem = kgc_meta::encoding::base64_decode(certificate_b64)
        .ok_or("status.certificate is not base64")?;
    let pem = std::str::from_utf8(&pem).map_err(|_| "the certificate is not PEM text")?;
    let der = pem_block(pem).ok_or("expected the certificate to be PEM encoded")?;
    der_not_after(&der)
}

/// The bytes of the first PEM block (Go `pem.Decode`), any type.
fn pem_block(text: &str) -> Option<Vec<u8>> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start..];
    let body_start = rest.find('\n')? + 1;
    let body_end = rest.find("-----END ")?;
    kgc_meta::encoding::base64_decode(rest.get(body_start..body_end)?)
}

/// One DER element: tag, contents, what follows.
fn der(b: &[u8]) -> Result<(u8, &[u8], &[u8]), String> {
    let short = || "truncated DER".to_string();
    let (&tag, rest) = b.split_first().ok_or_else(short)?;
    let (&first, rest) = rest.split_first().ok_or_else(short)?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err("unsupported DER length".into());
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err(short());
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

/// `tbsCertificate.validity.notAfter` of an X.509 certificate (RFC 5280, section 4.1).
fn der_not_after(cert: &[u8]) -> Result<jiff::Timestamp, String> {
    const SEQUENCE: u8 = 0x30;
    let (tag, certificate, _) = der(cert)?;
    let (tag2, tbs, _) = der(certificate)?;
    if tag != SEQUENCE || tag2 != SEQUENCE {
        return Err("not an X.509 certificate".into());
    }
    let mut rest = tbs;
    // version [0] EXPLICIT (optional), serialNumber, signature, issuer, then validity.
    let (tag, _, after) = der(rest)?;
    if tag == 0xa0 {
        rest = after;
    }
    for _ in 0..3 {
        rest = der(rest)?.2;
    }
    let (tag, validity, _) = der(rest)?;
    if tag != SEQUENCE {
        return Err("no validity in the certificate".into());
    }
    let (_, _, after_not_before) = der(validity)?;
    let (tag, time, _) = der(after_not_before)?;
    let text = std::str::from_utf8(time).map_err(|_| "notAfter is not text")?;
    let full = match tag {
        // UTCTime YYMMDDHHMMSSZ: 50–99 are 19xx (RFC 5280, section 4.1.2.5.1).
        0x17 => {
            let yy: u32 = text
                .get(..2)
                .and_then(|y| y.parse().ok())
                .ok_or("bad UTCTime")?;
            format!("{}{text}", if yy >= 50 { "19" } else { "20" })
        }
        0x18 => text.to_owned(),
        _ => return Err("notAfter is not a time".into()),
    };
    let t = full.strip_suffix('Z').ok_or("notAfter is not in UTC")?;
    if t.len() != 14 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad notAfter {full:?}"));
    }
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &t[..4],
        &t[4..6],
        &t[6..8],
        &t[8..10],
        &t[10..12],
        &t[12..14]
    )
    .parse()
    .map_err(|e| format!("bad notAfter {full:?}: {e}"))
}

/// Runs the cleaner every period until dropped (the first pass once the cache has synced).
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
    let resource = ctx
        .informers
        .resource("certificates.k8s.io", "certificatesigningrequests")
        .await;
    let csrs = ctx.informers.cache::<Value>(resource.clone());
    csrs.synced().await;
    tracing::info!(collector = COLLECTOR, period = ?config.period, "started");
    let mut tick = crate::every(config.period);
    loop {
        tick.tick().await;
        metrics.pass(COLLECTOR);
        let now = ctx.clock.now();
        let doomed: Vec<(String, String, &'static str)> = csrs.read(|m| {
            m.values()
                .filter_map(|csr| match judge(csr, now) {
                    Ok(Some(reason)) => Some((
                        csr["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        csr["metadata"]["uid"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        reason,
                    )),
                    Ok(None) => None,
                    Err(e) => {
                        crate::skip(&metrics, COLLECTOR, &e);
                        None
                    }
                })
                .collect()
        });
        for (name, uid, reason) in doomed {
            let target = Target::cluster(&resource, &name, &uid);
            let options = kgc_meta::DeleteOptions::default();
            let _ = crate::delete(&ctx, &metrics, (COLLECTOR, reason), target, options).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VALID: &str = include_str!("testdata/valid.pem");
    const EXPIRED: &str = include_str!("testdata/expired.pem");

    fn now() -> jiff::Timestamp {
        "2026-06-01T12:00:00Z".parse().unwrap()
    }

    fn ago(minutes: i64) -> String {
        (now() - jiff::SignedDuration::from_mins(minutes)).to_string()
    }

    fn csr(created_min_ago: i64, conditions: &[(&str, i64)], cert: Option<&str>) -> Value {
        let mut o = json!({"metadata": {"name": "c", "uid": "u", "creationTimestamp": ago(created_min_ago)},
                           "status": {}});
        if !conditions.is_empty() {
            o["status"]["conditions"] = conditions
                .iter()
                .map(|(t, m)| json!({"type": t, "status": "True", "lastUpdateTime": ago(*m)}))
                .collect();
        }
        if let Some(c) = cert {
            o["status"]["certificate"] = json!(kgc_meta::encoding::base64(c.as_bytes()));
        }
        o
    }

    #[test]
    fn test_cleaner_with_approved_expired_csr() {
        // (upstream case name, created minutes ago, conditions, certificate, expect delete)
        type Case<'a> = (&'a str, i64, &'a [(&'a str, i64)], Option<&'a str>, bool);
        let cases: &[Case] = &[
            (
                "no delete approved not passed deadline",
                1,
                &[("Approved", 50)],
                Some(VALID),
                false,
            ),
            (
                "no delete approved not passed deadline unissued",
                1,
                &[("Approved", 50)],
                None,
                false,
            ),
            (
                "delete approved passed deadline",
                1,
                &[("Approved", 120)],
                Some(VALID),
                true,
            ),
            (
                "no delete denied not passed deadline",
                1,
                &[("Denied", 50)],
                None,
                false,
            ),
            (
                "delete denied passed deadline",
                1,
                &[("Denied", 120)],
                None,
                true,
            ),
            (
                "no delete failed not passed deadline",
                1,
                &[("Approved", 120), ("Failed", 50)],
                None,
                false,
            ),
            (
                "delete failed passed deadline",
                1,
                &[("Approved", 120), ("Failed", 120)],
                None,
                true,
            ),
            (
                "no delete pending not passed deadline",
                5 * 60,
                &[],
                None,
                false,
            ),
            ("delete pending passed deadline", 25 * 60, &[], None, true),
            (
                "no delete approved not passed deadline unexpired",
                1,
                &[("Approved", 50)],
                Some(VALID),
                false,
            ),
            (
                "delete approved not passed deadline expired",
                1,
                &[("Approved", 50)],
                Some(EXPIRED),
                true,
            ),
            (
                "delete approved passed deadline unparseable",
                1,
                &[("Approved", 120)],
                Some("garbage"),
                true,
            ),
        ];
        for (name, created, conditions, cert, want) in cases {
            let got = judge(&csr(*created, conditions, *cert), now()).unwrap();
            assert_eq!(got.is_some(), *want, "{name}: {got:?}");
        }
    }

    #[test]
    fn approved_never_issued_is_kept_however_old() {
        let got = judge(&csr(10_000, &[("Approved", 10_000)], None), now()).unwrap();
        assert_eq!(got, None);
    }

    #[test]
    fn certificates_parse_to_their_not_after() {
        let b64 = |s: &str| kgc_meta::encoding::base64(s.as_bytes());
        assert_eq!(
            not_after(&b64(EXPIRED)).unwrap(),
            "2020-01-02T00:00:00Z".parse().unwrap()
        );
        assert!(not_after(&b64(VALID)).unwrap() > "2100-01-01T00:00:00Z".parse().unwrap());
        for bad in [
            "",
            "garbage",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        ] {
            assert!(not_after(&b64(bad)).is_err(), "{bad:?}");
        }
        assert!(not_after("%%%").is_err());
        // Every truncation of a real certificate fails cleanly.
        let der = pem_block(EXPIRED).unwrap();
        for n in 0..der.len() {
            let _ = der_not_after(&der[..n]);
        }
    }

    #[test]
    fn malformed_times_leave_the_csr_alone() {
        let mut o = csr(1, &[("Denied", 120)], None);
        o["status"]["conditions"][0]["lastUpdateTime"] = json!(42);
        let e = judge(&o, now()).unwrap_err().to_string();
        assert!(e.contains("lastUpdateTime"), "{e}");
    }
}
