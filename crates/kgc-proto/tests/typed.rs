//! `typed::decode` against the typed clients, over every built-in kind kgc serves: realistic
//! bodies, randomly mutated (a value of another JSON type, a dropped field, `null`, a float or an
//! out-of-range number, garbage in a string such as a time, quantity or base64 field, an unknown
//! key). Whatever the decoder accepts without missing required fields, normalized, must
//! deserialize into k8s-openapi's type and validate with the official Python client's model.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::Command;

use kgc_proto::typed::{Decoded, decode};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

/// Realistic, valid objects of every kind tested, keyed by a name.
const MANIFESTS: &str = include_str!("manifests.json");

fn manifests() -> Vec<Value> {
    let Value::Object(map) = serde_json::from_str::<Value>(MANIFESTS).unwrap() else {
        panic!("manifests.json holds an object");
    };
    map.into_iter().map(|(_, manifest)| manifest).collect()
}

/// Every `(apiVersion, kind)` kgc's built-in catalog serves that the schema knows, and the
/// PodTemplate.
fn tested_kinds() -> BTreeSet<(String, String)> {
    let known: BTreeSet<(&str, &str)> = kgc_proto::supported_kinds().collect();
    let catalog = kgc_meta::catalog::Catalog::builtin();
    let mut kinds: BTreeSet<(String, String)> = catalog
        .resources()
        .flat_map(|info| {
            info.versions.iter().map(|version| {
                let api_version = if info.group.is_empty() {
                    version.clone()
                } else {
                    format!("{}/{version}", info.group)
                };
                (api_version, info.kind.clone())
            })
        })
        .filter(|(api_version, kind)| known.contains(&(api_version.as_str(), kind.as_str())))
        .collect();
    kinds.insert(("v1".into(), "PodTemplate".into()));
    kinds
}

/// Deserializes `obj` into k8s-openapi's type of `api_version`/`kind`; `None` for a kind not
/// listed here.
fn k8s_openapi(api_version: &str, kind: &str, obj: &Value) -> Option<Result<(), String>> {
    macro_rules! types {
        ($($ty:ty),* $(,)?) => {
            $(
                if <$ty as k8s_openapi::Resource>::API_VERSION == api_version
                    && <$ty as k8s_openapi::Resource>::KIND == kind
                {
                    return Some(serde_json::from_value::<$ty>(obj.clone()).map(drop).map_err(|e| e.to_string()));
                }
            )*
        };
    }
    use k8s_openapi::api::*;
    types!(
        core::v1::Pod,
        core::v1::Service,
        core::v1::ReplicationController,
        core::v1::Namespace,
        core::v1::ConfigMap,
        core::v1::Secret,
        core::v1::Endpoints,
        core::v1::ServiceAccount,
        core::v1::PersistentVolume,
        core::v1::PersistentVolumeClaim,
        core::v1::Node,
        core::v1::Event,
        core::v1::LimitRange,
        core::v1::ResourceQuota,
        core::v1::PodTemplate,
        apps::v1::Deployment,
        apps::v1::ReplicaSet,
        apps::v1::StatefulSet,
        apps::v1::DaemonSet,
        apps::v1::ControllerRevision,
        batch::v1::Job,
        batch::v1::CronJob,
        autoscaling::v1::HorizontalPodAutoscaler,
        autoscaling::v2::HorizontalPodAutoscaler,
        coordination::v1::Lease,
        certificates::v1::CertificateSigningRequest,
        rbac::v1::Role,
        rbac::v1::RoleBinding,
        rbac::v1::ClusterRole,
        rbac::v1::ClusterRoleBinding,
        networking::v1::Ingress,
        networking::v1::NetworkPolicy,
        policy::v1::PodDisruptionBudget,
        storage::v1::StorageClass,
        discovery::v1::EndpointSlice,
        events::v1::Event,
        scheduling::v1::PriorityClass,
        authentication::v1::TokenReview,
        authentication::v1::SelfSubjectReview,
        authorization::v1::SubjectAccessReview,
        authorization::v1::LocalSubjectAccessReview,
        authorization::v1::SelfSubjectAccessReview,
        authorization::v1::SelfSubjectRulesReview,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    );
    None
}

fn type_of(obj: &Value) -> (String, String) {
    (
        obj["apiVersion"].as_str().unwrap().to_owned(),
        obj["kind"].as_str().unwrap().to_owned(),
    )
}

/// One random change to a body.
#[derive(Clone, Debug)]
enum Mutation {
    /// The node becomes a value of (usually) another JSON type.
    Retype(Value),
    /// The node is removed from its object or list.
    Drop,
    /// A number becomes another (a float, out of an integer's range).
    Number(Value),
    /// A string becomes garbage (or another plausible time, quantity, base64 text).
    Garbage(String),
    /// An object gets an unknown key.
    Unknown(String, Value),
}

/// A mutation and which of the eligible nodes it applies to.
fn mutation() -> impl Strategy<Value = (prop::sample::Index, Mutation)> {
    let scalar = prop_oneof![
        Just(json!(null)),
        Just(json!("s")),
        Just(json!("80")),
        Just(json!(1)),
        Just(json!(1.5)),
        Just(json!(-1)),
        Just(json!(true)),
        Just(json!([])),
        Just(json!({})),
        Just(json!([1, "a", null])),
        Just(json!({"a": 1})),
        Just(json!(["x"])),
    ];
    let number = prop_oneof![
        Just(json!(0.5)),
        Just(json!(2.0)),
        Just(json!(2_147_483_648u64)),
        Just(json!(-2_147_483_649i64)),
        Just(json!(u64::MAX)),
        Just(json!(1e300)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(256)),
        Just(json!(-0.0)),
    ];
    let garbage = prop_oneof![
        Just("yesterday".to_owned()),
        Just("2024-13-01T00:00:00Z".to_owned()),
        Just("2024-01-01T00:00:00+01:00".to_owned()),
        Just("2024-01-01T00:00:00.123456789Z".to_owned()),
        Just("2024-01-01T00:00:00.123456Z".to_owned()),
        Just("0001-01-01T00:00:00Z".to_owned()),
        Just("0000-12-31T23:00:00-02:00".to_owned()),
        Just("9999-12-31T23:59:59Z".to_owned()),
        Just("1x".to_owned()),
        Just("0.5Ti".to_owned()),
        Just("+1".to_owned()),
        Just("1e3".to_owned()),
        Just("1000m".to_owned()),
        Just("1000E".to_owned()),
        Just(" 1 ".to_owned()),
        Just(String::new()),
        Just("not base64".to_owned()),
        Just("Zg".to_owned()),
        Just("Zm9v\nYmFy".to_owned()),
        Just("Zh==".to_owned()),
        "[ -~]{0,12}",
    ];
    let mutation = prop_oneof![
        3 => scalar.clone().prop_map(Mutation::Retype),
        2 => Just(Mutation::Drop),
        2 => Just(Mutation::Retype(Value::Null)),
        2 => number.prop_map(Mutation::Number),
        4 => garbage.prop_map(Mutation::Garbage),
        1 => ("[a-zA-Z]{1,8}", scalar).prop_map(|(key, value)| Mutation::Unknown(key, value)),
    ];
    (any::<prop::sample::Index>(), mutation)
}

/// JSON pointers of every node of `value` (the root's `apiVersion` and `kind` aside: the API
/// server checks those against the request's path before decoding).
fn nodes(value: &Value, pointer: &mut String, out: &mut Vec<String>) {
    let len = pointer.len();
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if pointer.is_empty() && (key == "apiVersion" || key == "kind") {
                    continue;
                }
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                out.push(pointer.clone());
                nodes(child, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointer.push_str(&format!("/{i}"));
                out.push(pointer.clone());
                nodes(child, pointer, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

fn apply(obj: &mut Value, (which, mutation): &(prop::sample::Index, Mutation)) {
    let mut all = Vec::new();
    nodes(obj, &mut String::new(), &mut all);
    let eligible: Vec<&String> = all
        .iter()
        .filter(|p| {
            let node = obj.pointer(p).unwrap();
            match mutation {
                Mutation::Retype(_) | Mutation::Drop => true,
                Mutation::Number(_) => node.is_number(),
                Mutation::Garbage(_) => node.is_string(),
                Mutation::Unknown(..) => node.is_object(),
            }
        })
        .collect();
    if eligible.is_empty() {
        return;
    }
    let pointer = eligible[which.index(eligible.len())].clone();
    match mutation {
        Mutation::Retype(v) | Mutation::Number(v) => {
            *obj.pointer_mut(&pointer).unwrap() = v.clone()
        }
        Mutation::Garbage(s) => *obj.pointer_mut(&pointer).unwrap() = Value::String(s.clone()),
        Mutation::Unknown(key, v) => {
            if let Some(Value::Object(map)) = obj.pointer_mut(&pointer) {
                map.insert(key.clone(), v.clone());
            }
        }
        Mutation::Drop => {
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            let last = last.replace("~1", "/").replace("~0", "~");
            match obj.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.remove(&last);
                }
                Value::Array(items) => {
                    items.remove(last.parse::<usize>().unwrap());
                }
                _ => unreachable!("a parent is a container"),
            }
        }
    }
}

/// Decodes `body` and checks what an accepted body becomes; returns it when it is complete (no
/// missing required field), for the Python client.
fn check(body: &Value) -> Result<Option<Value>, TestCaseError> {
    let (api_version, kind) = type_of(body);
    let mut obj = body.clone();
    let Ok(decoded) = decode(&api_version, &kind, &mut obj).expect("a built-in kind") else {
        return Ok(None);
    };
    // The stored object decodes again, and normalizing it once more changes nothing. (Not
    // always to itself: a pointer to the zero time is printed `null`, which then decodes to nil
    // and is left out, as in Go.)
    let mut again = obj.clone();
    let second = decode(&api_version, &kind, &mut again).unwrap();
    prop_assert!(second.is_ok(), "{second:?} for the stored {obj}");
    prop_assert_eq!(&second.unwrap().unknown_fields, &Vec::<String>::new());
    let mut third = again.clone();
    prop_assert!(decode(&api_version, &kind, &mut third).unwrap().is_ok());
    prop_assert_eq!(&third, &again);
    if !decoded.missing_required.is_empty() {
        return Ok(None);
    }
    let openapi = k8s_openapi(&api_version, &kind, &obj).expect("a k8s-openapi type");
    prop_assert!(
        openapi.is_ok(),
        "k8s-openapi refuses what decode accepted: {:?}\nbody: {body}\nstored: {obj}",
        openapi
    );
    Ok(Some(obj))
}

#[test]
fn every_tested_kind_has_a_manifest_and_a_k8s_openapi_type() {
    let manifests = manifests();
    for (api_version, kind) in tested_kinds() {
        let manifest = manifests
            .iter()
            .find(|m| type_of(m) == (api_version.clone(), kind.clone()))
            .unwrap_or_else(|| panic!("no manifest for {api_version} {kind}"));
        assert!(
            k8s_openapi(&api_version, &kind, manifest).is_some(),
            "no k8s-openapi type for {api_version} {kind}"
        );
    }
    assert!(tested_kinds().len() >= 40, "{:?}", tested_kinds());
}

#[test]
fn the_manifests_decode_cleanly() {
    for manifest in manifests() {
        let (api_version, kind) = type_of(&manifest);
        let mut obj = manifest.clone();
        let decoded = decode(&api_version, &kind, &mut obj).unwrap();
        assert_eq!(decoded, Ok(Decoded::default()), "{api_version} {kind}");
        assert_eq!(
            k8s_openapi(&api_version, &kind, &obj),
            Some(Ok(())),
            "{api_version} {kind}"
        );
    }
}

/// What kubectl's own encoding/json printed (the protobuf fixtures' expected JSON) is what Go
/// would store: decoding it changes nothing.
#[test]
fn objects_go_printed_decode_to_themselves() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let printed: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let (api_version, kind) = type_of(&printed);
        let mut obj = printed.clone();
        let decoded = decode(&api_version, &kind, &mut obj).unwrap();
        assert_eq!(decoded, Ok(Decoded::default()), "{}", path.display());
        assert_eq!(obj, printed, "{}", path.display());
        count += 1;
    }
    assert!(count >= 30, "only {count} fixtures");
}

/// The property, then the same objects through the Python client.
#[test]
fn accepted_mutations_are_readable_by_typed_clients() {
    let manifests = manifests();
    let tested = tested_kinds();
    let manifests: Vec<Value> = manifests
        .into_iter()
        .filter(|m| tested.contains(&type_of(m)))
        .collect();
    let accepted = RefCell::new(BTreeSet::new());
    for manifest in &manifests {
        let complete = check(manifest).unwrap().expect("a manifest is complete");
        accepted.borrow_mut().insert(complete.to_string());
    }
    let strategy = (
        any::<prop::sample::Index>(),
        prop::collection::vec(mutation(), 1..=3),
    );
    // 1500 cases take a few seconds in debug; PROPTEST_CASES asks for more.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(1500);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |(which, mutations)| {
            let mut body = manifests[which.index(manifests.len())].clone();
            for m in &mutations {
                apply(&mut body, m);
            }
            if let Some(complete) = check(&body)? {
                accepted.borrow_mut().insert(complete.to_string());
            }
            Ok(())
        })
        .unwrap();
    python_client(&accepted.into_inner());
}

/// Validates the objects with `tests/python_client.py`; a missing interpreter or package skips.
fn python_client(objects: &BTreeSet<String>) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for obj in objects {
        writeln!(file, "{obj}").unwrap();
    }
    file.flush().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python_client.py");
    let output = match Command::new("python3")
        .arg(script)
        .arg(file.path())
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            println!("python client check skipped: cannot run python3 ({e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{}", stdout.trim_end());
}
