//! `kgc serve --clock-offset` moves every time the server writes or judges against, not only
//! creation timestamps: the managedFields times of a write and the AGE column of a Table
//! follow the same clock.

kgc_testsupport::bind_kgc!();

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kgc_testsupport::{fresh_namespace, typed};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::Value;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

async fn create(client: &Client, ns: &str, name: &str) -> ConfigMap {
    let cm: ConfigMap = typed(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    }));
    Api::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .expect("creating a ConfigMap")
}

/// A GET answered as a `meta.k8s.io/v1` Table.
async fn table(client: &Client, path: &str) -> Value {
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, TABLE)
        .body(Vec::new())
        .expect("building a request");
    let text = client.request_text(req).await.expect("a Table");
    serde_json::from_str(&text).expect("a JSON Table")
}

#[tokio::test]
async fn managed_fields_times_and_table_ages_follow_the_clock_offset() {
    let mut s = Server::start_with(&[]).await;
    let ns = fresh_namespace(&s.client(), "clock").await;
    create(&s.client(), &ns, "before").await;

    s.restart_with(&["--clock-offset", "2h"]).await;
    let c = s.client();

    // Created two hours ago as the server's clock has it: `duration.HumanDuration` of 2h.
    let one = table(&c, &format!("/api/v1/namespaces/{ns}/configmaps/before")).await;
    assert_eq!(one["rows"][0]["cells"][2], "120m", "{one}");
    let list = table(&c, &format!("/api/v1/namespaces/{ns}/configmaps")).await;
    assert_eq!(list["rows"][0]["cells"][2], "120m", "{list}");

    // A write now stamps managedFields with the same shifted time as creationTimestamp.
    let cm = create(&c, &ns, "after").await;
    let created = cm
        .metadata
        .creation_timestamp
        .expect("a creationTimestamp")
        .0;
    let fields = cm.metadata.managed_fields.expect("managedFields");
    let written = fields[0].time.as_ref().expect("a managedFields time").0;
    assert!(
        written.duration_since(created).abs() <= SignedDuration::from_secs(1),
        "managedFields time {written} vs creationTimestamp {created}"
    );
    let ahead = written.duration_since(Timestamp::now());
    assert!(
        ahead >= SignedDuration::from_mins(119),
        "managedFields time {written} is only {ahead:?} ahead of the system clock"
    );
    let fresh = table(&c, &format!("/api/v1/namespaces/{ns}/configmaps/after")).await;
    let age = fresh["rows"][0]["cells"][2].as_str().unwrap_or_default();
    assert!(
        age.ends_with('s') && !age.contains('m'),
        "age {age} of a new object"
    );
}
