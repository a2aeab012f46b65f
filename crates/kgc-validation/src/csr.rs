//! certificates.k8s.io/v1 CertificateSigningRequest, following kubernetes/kubernetes
//! `pkg/apis/certificates/validation/validation.go` (`validateCertificateSigningRequest`,
//! `validateCSR`, `validateConditions`, `validateCertificate`,
//! `validateCertificateSigningRequestUpdate`, `getValidationOptions`), `ValidateSignerName` in
//! `pkg/apis/core/validation/validation.go`, `certificates.ParseCSR` and Go's `encoding/pem`.

use base64::Engine as _;
use kgc_meta::gojson::{go_json, go_quote};
use kgc_meta::validation::{is_dns1123_label, is_dns1123_subdomain};
use serde_json::Value;
use x509_parser::prelude::{FromDer, X509CertificationRequest, X509Error};

use crate::Op;
use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, strings};

const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// `allValidUsages`, sorted as `sets.List` returns them.
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// One block of Go's `pem.Decode`.
struct PemBlock {
    label: String,
    has_headers: bool,
    bytes: Vec<u8>,
}

/// Go's `pem.Decode` applied repeatedly: every well-formed block in `data`, in order (text
/// around and between blocks, and malformed blocks, are skipped as Go skips them).
fn pem_blocks(data: &[u8]) -> Vec<PemBlock> {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(label) = lines[i]
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.trim_end().strip_suffix("-----"))
        else {
            i += 1;
            continue;
        };
        let end = format!("-----END {label}-----");
        let Some(offset) = lines[i + 1..].iter().position(|l| l.trim_end() == end) else {
            i += 1;
            continue;
        };
        let body = &lines[i + 1..i + 1 + offset];
        let has_headers = body.first().is_some_and(|l| l.contains(':'));
        let b64: String = body
            .iter()
            .skip_while(|l| l.contains(':'))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) {
            blocks.push(PemBlock {
                label: label.to_owned(),
                has_headers,
                bytes,
            });
            i += offset + 2;
        } else {
            i += 1;
        }
    }
    blocks
}

/// A `[]byte` field's decoded value.
fn bytes_of(v: &Value, field: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.str_of(field))
        .unwrap_or_default()
}

/// `validateCSR`: a `CERTIFICATE REQUEST` PEM block holding a request whose signature checks.
fn check_request(pem: &[u8]) -> Result<(), String> {
    let block = pem_blocks(pem)
        .into_iter()
        .next()
        .filter(|b| b.label == "CERTIFICATE REQUEST")
        .ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let (rest, csr) = X509CertificationRequest::from_der(&block.bytes)
        .map_err(|_| "x509: malformed certificate request".to_owned())?;
    if !rest.is_empty() {
        return Err("asn1: syntax error: trailing data".to_owned());
    }
    csr.verify_signature().map_err(|e| match e {
        X509Error::SignatureUnsupportedAlgorithm => {
            "x509: cannot verify signature: algorithm unimplemented".to_owned()
        }
        _ => {
            let key_oid = csr
                .certification_request_info
                .subject_pki
                .algorithm
                .algorithm
                .to_id_string();
            match key_oid.as_str() {
                "1.2.840.113549.1.1.1" => "crypto/rsa: verification error",
                "1.2.840.10045.2.1" => "x509: ECDSA verification failure",
                "1.3.101.112" => "x509: Ed25519 verification failure",
                _ => "x509: cannot verify signature: algorithm unimplemented",
            }
            .to_owned()
        }
    })
}

/// `validateCertificate`: only `CERTIFICATE` blocks without headers, each holding certificates.
fn check_certificate(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let blocks = pem_blocks(pem);
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".to_owned());
    }
    for b in blocks {
        if b.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                go_quote(&b.label)
            ));
        }
        if b.has_headers {
            return Err("no PEM block headers are permitted".to_owned());
        }
        let mut rest: &[u8] = &b.bytes;
        if rest.is_empty() {
            return Err("found CERTIFICATE PEM block containing 0 certificates".to_owned());
        }
        while !rest.is_empty() {
            rest = x509_parser::parse_x509_certificate(rest)
                .map_err(|_| "x509: malformed certificate".to_owned())?
                .0;
        }
    }
    Ok(())
}

/// `ValidateSignerName`.
fn signer_name(name: &str, errs: &mut Errors) {
    const PATH: &str = "spec.signerName";
    if name.is_empty() {
        errs.required(PATH, "");
        return;
    }
    let Some((domain, path)) = name.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        errs.invalid(
            PATH,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        );
        return;
    };
    if domain.len() > 253 {
        errs.too_long(PATH, 253);
    }
    // Only the first bad label is reported: the others would repeat the same messages.
    let first_bad = |segment: &str, check: fn(&str) -> Vec<String>, errs: &mut Errors| {
        if let Some((lbl, msgs)) = segment
            .split('.')
            .map(|l| (l, check(l)))
            .find(|(_, m)| !m.is_empty())
        {
            for m in msgs {
                errs.invalid(
                    PATH,
                    segment,
                    format!("validating label {}: {m}", go_quote(lbl)),
                );
            }
        }
    };
    first_bad(domain, is_dns1123_label, errs);
    if !domain.contains('.') {
        errs.invalid(
            PATH,
            domain,
            "should be a domain with at least two segments separated by dots",
        );
    }
    first_bad(path, is_dns1123_subdomain, errs);
    let max = 253 + (253 + 63 + 1) + 1;
    if name.len() > max {
        errs.too_long(PATH, max);
    }
}

/// What an update may tolerate because the stored object already had it
/// (`getValidationOptions`), and what the subresource may set.
#[derive(Default)]
struct Options {
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    duplicate_usages: bool,
    unknown_usages: bool,
    legacy_signer: bool,
    approved_and_denied: bool,
    setting_certificate: bool,
    setting_approval: bool,
}

fn condition_types(csr: &Value) -> Vec<&str> {
    csr.at("status")
        .list("conditions")
        .iter()
        .map(|c| c.str_of("type"))
        .collect()
}

fn has_duplicates(items: &[&str]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].contains(a))
}

impl Options {
    fn for_write(new: &Value, op: Op<'_>) -> Self {
        let Some(old) = op.old() else {
            return Self::default();
        };
        let subresource = match op {
            Op::Subresource(sub, _) => Some(sub),
            _ => None,
        };
        let types = condition_types(old);
        let usages = strings(old.at("spec"), "usages");
        let old_cert = bytes_of(old.at("status"), "certificate");
        Self {
            duplicate_condition_types: has_duplicates(&types),
            empty_condition_type: types.contains(&""),
            arbitrary_certificate: bytes_of(new.at("status"), "certificate") == old_cert
                || check_certificate(&old_cert).is_err(),
            duplicate_usages: has_duplicates(&usages),
            unknown_usages: usages.iter().any(|u| !USAGES.contains(u)),
            legacy_signer: old.at("spec").str_of("signerName") == LEGACY_SIGNER,
            approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
            setting_certificate: subresource == Some("status"),
            setting_approval: subresource == Some("approval"),
        }
    }
}

/// A CertificateSigningRequest create, update, or `status` / `approval` update.
pub(crate) fn certificate_signing_request(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    if matches!(op, Op::Subresource(sub, _) if !matches!(sub, "status" | "approval")) {
        return;
    }
    let opts = Options::for_write(obj, op);
    validate(obj, &opts, errs);
    if let Some(old) = op.old() {
        update(obj, old, &opts, errs);
    }
}

/// `validateCertificateSigningRequest`.
fn validate(csr: &Value, opts: &Options, errs: &mut Errors) {
    let spec = csr.at("spec");
    if let Err(e) = check_request(&bytes_of(spec, "request")) {
        errs.invalid_raw("spec.request", go_json(spec.at("request")), e);
    }
    let usages = strings(spec, "usages");
    if usages.is_empty() {
        errs.required("spec.usages", "");
    }
    if !opts.unknown_usages {
        for (i, u) in usages.iter().enumerate() {
            if !USAGES.contains(u) {
                errs.not_supported_typed(Path::new("spec.usages").index(i), u, &USAGES);
            }
        }
    }
    if !opts.duplicate_usages {
        for (i, u) in usages.iter().enumerate() {
            if usages[..i].contains(u) {
                errs.duplicate_raw(Path::new("spec.usages").index(i), typed(u));
            }
        }
    }
    let signer = spec.str_of("signerName");
    if !opts.legacy_signer && signer == LEGACY_SIGNER {
        errs.invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        );
    } else {
        signer_name(signer, errs);
    }
    if let Some(exp) = spec.opt_int("expirationSeconds")
        && exp < 600
    {
        errs.invalid_int(
            "spec.expirationSeconds",
            exp,
            "may not specify a duration less than 600 seconds (10 minutes)",
        );
    }
    conditions(csr, opts, errs);
    if !opts.arbitrary_certificate
        && let Err(e) = check_certificate(&bytes_of(csr.at("status"), "certificate"))
    {
        errs.invalid("status.certificate", "<certificate data>", e);
    }
}

/// `validateConditions`.
fn conditions(csr: &Value, opts: &Options, errs: &mut Errors) {
    let path = Path::new("status.conditions");
    let list = csr.at("status").list("conditions");
    let (mut approved, mut denied) = (false, false);
    let mut seen = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let p = path.index(i);
        let (t, status) = (c.str_of("type"), c.str_of("status"));
        if !opts.empty_condition_type && t.is_empty() {
            errs.required(p.child("type"), "");
        }
        if !matches!(status, "True" | "False" | "Unknown") {
            errs.not_supported_typed(p.child("status"), status, &["False", "True", "Unknown"]);
        }
        if !opts.approved_and_denied {
            for (kind, flag) in [("Approved", &mut approved), ("Denied", &mut denied)] {
                if t == kind {
                    *flag = true;
                    if status != "True" {
                        errs.invalid_typed(
                            p.child("status"),
                            status,
                            format!("{kind} condition may only have status=True"),
                        );
                    }
                }
            }
        }
        if !opts.duplicate_condition_types {
            if seen.contains(&t) {
                errs.duplicate_raw(p.child("type"), typed(t));
            }
            seen.push(t);
        }
    }
    if !opts.approved_and_denied && approved && denied {
        let rendered: Vec<String> = list
            .iter()
            .map(|c| {
                go_struct(&[
                    ("Type", typed(c.str_of("type"))),
                    ("Status", typed(c.str_of("status"))),
                    ("Reason", typed(c.str_of("reason"))),
                    ("Message", typed(c.str_of("message"))),
                    ("LastUpdateTime", go_json(c.at("lastUpdateTime"))),
                    ("LastTransitionTime", go_json(c.at("lastTransitionTime"))),
                ])
            })
            .collect();
        errs.invalid_raw(
            path,
            format!("[{}]", rendered.join(",")),
            "Approved and Denied conditions are mutually exclusive",
        );
    }
}

/// `validateCertificateSigningRequestUpdate`.
fn update(new: &Value, old: &Value, opts: &Options, errs: &mut Errors) {
    let count = |csr: &Value, t: &str| condition_types(csr).iter().filter(|c| **c == t).count();
    for t in ["Approved", "Denied", "Failed"] {
        if count(new, t) < count(old, t) {
            errs.forbidden(
                "status.conditions",
                format!("updates may not remove a condition of type {}", go_quote(t)),
            );
        }
    }
    if !opts.setting_approval {
        for t in ["Approved", "Denied"] {
            if count(new, t) > count(old, t) {
                errs.forbidden(
                    "status.conditions",
                    format!("updates may not add a condition of type {}", go_quote(t)),
                );
            }
        }
    }
    let (cert, old_cert) = (
        bytes_of(new.at("status"), "certificate"),
        bytes_of(old.at("status"), "certificate"),
    );
    if !opts.setting_certificate {
        if cert != old_cert {
            errs.forbidden(
                "status.certificate",
                "updates may not set certificate content",
            );
        }
    } else if !old_cert.is_empty() && cert != old_cert {
        errs.forbidden(
            "status.certificate",
            "updates may not modify existing certificate content",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request_pem() -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["example.com".to_owned()]).expect("params");
        params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem")
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn valid() -> Value {
        json!({"metadata": {"name": "csr"}, "spec": {
            "request": b64(&request_pem()), "signerName": "example.com/signer",
            "usages": ["digital signature", "client auth"], "expirationSeconds": 3600,
        }})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(certificate_signing_request, obj, old, sub)
    }

    /// `TestValidateCertificateSigningRequestCreate`.
    #[test]
    fn test_validate_certificate_signing_request_create() {
        assert!(run(&valid(), None, None).is_empty());
        let mut bad = valid();
        bad["spec"] = json!({"request": b64("not pem"), "signerName": "example.com", "usages": ["bogus", "any", "any"], "expirationSeconds": 599});
        assert_eq!(
            run(&bad, None, None),
            vec![
                format!("spec.request: Invalid value: \"{}\": PEM block type must be CERTIFICATE REQUEST", b64("not pem")),
                "spec.usages[0]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", \"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\"".to_owned(),
                "spec.usages[2]: Duplicate value: \"any\"".to_owned(),
                "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'".to_owned(),
                "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)".to_owned(),
            ]
        );
        let mut nodots = valid();
        nodots["spec"]["signerName"] = json!("example/Signer");
        assert_eq!(
            run(&nodots, None, None),
            vec![
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots",
                "spec.signerName: Invalid value: \"Signer\": validating label \"Signer\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        let mut legacy = valid();
        legacy["spec"]["signerName"] = json!(LEGACY_SIGNER);
        assert_eq!(
            run(&legacy, None, None),
            vec![
                "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"
            ]
        );
    }

    #[test]
    fn tampered_requests_fail_the_signature_check() {
        let pem = request_pem();
        let block = pem_blocks(pem.as_bytes()).remove(0);
        let mut der = block.bytes;
        // Flip a bit inside the subject's DNS name, which the signature covers.
        if let Some(pos) = der.windows(7).position(|w| w == b"example") {
            der[pos] ^= 1;
        }
        let tampered = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            base64::engine::general_purpose::STANDARD.encode(&der)
        );
        assert_eq!(
            check_request(tampered.as_bytes()),
            Err("x509: ECDSA verification failure".to_owned())
        );
        assert!(check_request(pem.as_bytes()).is_ok());
    }

    /// `TestValidateCertificateSigningRequestUpdate`: approval goes through its subresource,
    /// certificates through `status`, and neither may be taken back.
    #[test]
    fn test_validate_certificate_signing_request_update() {
        let old = valid();
        let mut approved = valid();
        approved["spec"] = old["spec"].clone();
        approved["status"] =
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "OK"}]});
        assert_eq!(
            run(&approved, Some(&old), None),
            vec![
                "status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
            ]
        );
        assert!(run(&approved, Some(&old), Some("approval")).is_empty());
        let mut both = approved.clone();
        both["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "False"}]);
        assert_eq!(
            run(&both, Some(&old), Some("approval")),
            vec![
                "status.conditions[1].status: Invalid value: \"False\": Denied condition may only have status=True",
                "status.conditions: Invalid value: [{\"Type\":\"Approved\",\"Status\":\"True\",\"Reason\":\"\",\"Message\":\"\",\"LastUpdateTime\":null,\"LastTransitionTime\":null},{\"Type\":\"Denied\",\"Status\":\"False\",\"Reason\":\"\",\"Message\":\"\",\"LastUpdateTime\":null,\"LastTransitionTime\":null}]: Approved and Denied conditions are mutually exclusive",
            ]
        );
        assert_eq!(
            run(&old, Some(&approved), Some("approval")),
            vec![
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let mut issued = approved.clone();
        issued["status"]["certificate"] = json!(b64("garbage"));
        assert_eq!(
            run(&issued, Some(&approved), Some("status")),
            vec![
                "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
            ]
        );
        let mut wrong = approved.clone();
        wrong["status"]["certificate"] = json!(b64(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        ));
        assert_eq!(
            run(&wrong, Some(&approved), Some("status")),
            vec![
                "status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"PRIVATE KEY\""
            ]
        );
        assert_eq!(
            run(&issued, Some(&approved), None),
            vec![
                "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block",
                "status.certificate: Forbidden: updates may not set certificate content",
            ]
        );
    }
}
