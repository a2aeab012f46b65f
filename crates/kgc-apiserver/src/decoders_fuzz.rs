//! A fuzz test of every request decoder, run for a fixed number of cases in CI: object bodies in
//! JSON, YAML and protobuf, and patches of every type applied to a stored object, each followed by
//! the typed decoding admission runs. Whatever the bytes, nothing panics, and memory stays
//! bounded: the decoded value is never much larger than the bytes it came from, a patch result
//! never larger than a request may be, and the process's peak memory grows by little over the
//! whole run.
//!
//! Inputs are raw bytes, structure-aware enough to get past the first byte: fragments of JSON,
//! YAML and Kubernetes protobuf spliced together and mutated.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::admission::{self, FieldValidation, Written};
use crate::request::{RequestInfo, Verb};

/// Cases per run; `PROPTEST_CASES` raises it for a longer hunt.
const CASES: u32 = 2_000;

/// The pieces inputs are made of.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "true",
    "1e308",
    "-0",
    "1.5",
    "3000000000",
    "\"spec\"",
    "\"metadata\"",
    "\"name\"",
    "\"replicas\"",
    "\"containers\"",
    "\"data\"",
    "\"op\"",
    "\"add\"",
    "\"copy\"",
    "\"from\"",
    "\"path\"",
    "\"/spec\"",
    "\"/metadata/labels\"",
    "\"value\"",
    "\"$patch\"",
    "\"delete\"",
    "\"$retainKeys\"",
    "\"$setElementOrder/containers\"",
    "\"2024-01-01T00:00:00Z\"",
    "\"1Gi\"",
    "\"YWJj\"",
    "\\u0000",
    "- ",
    "\n",
    "  ",
    "a: b\n",
    "&a [*a, *a]",
    "!!binary",
    "k8s\u{0}",
    "\u{0a}\u{08}\u{0a}\u{02}v1",
    "\u{12}\u{04}Pod",
];

fn input() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop::sample::select(FRAGMENTS).prop_map(|f| f.as_bytes().to_vec());
    let raw = prop::collection::vec(any::<u8>(), 0..8);
    prop::collection::vec(prop_oneof![3 => fragment, 1 => raw], 0..40)
        .prop_map(|parts| parts.concat())
}

fn deployments() -> (kgc_meta::ResourceInfo, RequestInfo) {
    let info = kgc_meta::Catalog::builtin()
        .get("apps", "v1", "deployments")
        .map(|i| (**i).clone())
        .expect("built in");
    let req = RequestInfo {
        group: "apps".into(),
        version: "v1".into(),
        namespace: Some("ns".into()),
        resource: "deployments".into(),
        name: Some("d".into()),
        subresource: None,
        verb: Verb::Patch,
    };
    (info, req)
}

fn stored() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// The peak resident memory of this process so far (Linux), in bytes.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

/// An upper bound on what a value costs, from its serialized length.
fn size(v: &Value) -> usize {
    kgc_patch::serialized_len(v)
}

fn exercise(bytes: &[u8]) {
    let (info, req) = deployments();
    for media in [
        "application/json",
        "application/yaml",
        kgc_proto::MEDIA_TYPE,
    ] {
        if let Ok(mut decoded) = crate::body::decode(media, bytes) {
            // Every value stands for at least one input byte, but for the few a YAML alias or
            // a protobuf default can add.
            assert!(size(&decoded.value) <= 64 * bytes.len() + 64, "{media}");
            let _ = admission::admit(
                &info,
                &req,
                FieldValidation::Strict,
                Written::Object,
                &mut decoded.value,
                None,
                Vec::new(),
            );
        }
    }
    let Ok(patch) = crate::strict::from_json(bytes) else {
        return;
    };
    for media in [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let mut target = stored();
        if crate::handlers::patch::apply_patch(&info, "d", media, &mut target, &patch.value).is_ok()
        {
            assert!(size(&target) <= crate::body::MAX_BODY, "{media}");
            let _ = admission::admit(
                &info,
                &req,
                FieldValidation::Warn,
                Written::Patch,
                &mut target,
                None,
                Vec::new(),
            );
        }
    }
}

#[test]
fn request_decoders_never_panic_and_stay_bounded() {
    let before = peak_rss();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CASES);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&input(), |bytes| {
            exercise(&bytes);
            Ok(())
        })
        .unwrap();
    // A copy chain, a billion laughs or an exponential merge would show here.
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 256 << 20, "peak memory grew by {grown} bytes");
}

/// The classic amplifications, by hand: a YAML billion laughs, a deep nest, a JSON patch copy
/// chain.
#[test]
fn known_amplifications_are_refused_or_bounded() {
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
        g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    if let Ok(d) = crate::body::decode("application/yaml", laughs.as_bytes()) {
        assert!(size(&d.value) < 16 << 20, "a billion laughs decoded whole");
    }
    let deep = "[".repeat(100_000);
    assert!(crate::body::decode("application/json", deep.as_bytes()).is_err());
    let chain: Vec<Value> = (0..30)
        .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
        .collect();
    exercise(Value::Array(chain).to_string().as_bytes());
}
