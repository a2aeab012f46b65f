//! Real kubectl v1.32 protobuf bodies (see tests/fixtures/README.md) decode to exactly the JSON
//! kubectl itself prints for the same object.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn check(name: &str) {
    let dir = fixtures_dir();
    let body = std::fs::read(dir.join(format!("{name}.pb"))).unwrap();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    let decoded = kgc_proto::decode(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        decoded,
        expected,
        "{name}: decoded\n{}\nexpected\n{}",
        serde_json::to_string_pretty(&decoded).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap()
    );
}

macro_rules! fixtures {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*

        #[test]
        fn every_fixture_file_has_a_test() {
            let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
                .unwrap()
                .filter_map(|entry| {
                    let path = entry.unwrap().path();
                    (path.extension()? == "pb").then(|| path.file_stem().unwrap().to_string_lossy().into_owned())
                })
                .collect();
            names.sort();
            let mut tested = vec![$($name),*];
            tested.sort();
            assert_eq!(names, tested);
        }
    };
}

fixtures! {
    configmap => "configmap",
    configmap_empty => "configmap-empty",
    secret_generic => "secret-generic",
    secret_docker_registry => "secret-docker-registry",
    secret_tls => "secret-tls",
    namespace => "namespace",
    deployment => "deployment",
    deployment_zero_replicas => "deployment-zero",
    service_clusterip => "service-clusterip",
    service_clusterip_headless => "service-clusterip-headless",
    service_nodeport => "service-nodeport",
    service_externalname => "service-externalname",
    job => "job",
    job_from_cronjob => "job-from-cronjob",
    cronjob => "cronjob",
    serviceaccount => "serviceaccount",
    role => "role",
    rolebinding => "rolebinding",
    clusterrole => "clusterrole",
    clusterrole_aggregation => "clusterrole-aggregation",
    clusterrolebinding => "clusterrolebinding",
    quota => "quota",
    priorityclass => "priorityclass",
    priorityclass_zero => "priorityclass-zero",
    pdb_min_available => "pdb-min-available",
    pdb_max_unavailable => "pdb-max-unavailable",
    ingress => "ingress",
    pod_debug_copy => "pod-debug-copy",
    pod_debug_node => "pod-debug-node",
    token_request => "token",
}

/// Spot checks of the shapes the brief calls out, independent of the expected files.
#[test]
fn json_shapes_follow_the_kubernetes_json_api() {
    let decode = |name: &str| {
        kgc_proto::decode(&std::fs::read(fixtures_dir().join(format!("{name}.pb"))).unwrap())
            .unwrap()
    };
    let empty = decode("configmap-empty");
    assert_eq!(
        empty,
        serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "empty", "creationTimestamp": null}})
    );
    let cm = decode("configmap");
    assert_eq!(cm["binaryData"]["bin"], "AP/+YmluYXJ5gA==");
    let zero = decode("deployment-zero");
    assert_eq!(zero["spec"]["replicas"], 0, "a *int32 set to 0 is kept");
    assert_eq!(
        zero["spec"]["strategy"],
        serde_json::json!({}),
        "non-pointer structs are kept"
    );
    let pdb = decode("pdb-max-unavailable");
    assert_eq!(pdb["spec"]["maxUnavailable"], "50%");
    assert_eq!(decode("pdb-min-available")["spec"]["minAvailable"], 2);
    let quota = decode("quota");
    assert_eq!(quota["spec"]["hard"]["cpu"], "1500m");
    let node = decode("pod-debug-node");
    assert_eq!(
        node["spec"]["volumes"][0],
        serde_json::json!({"name": "host-root", "hostPath": {"path": "/"}}),
        "VolumeSource is inlined"
    );
}
