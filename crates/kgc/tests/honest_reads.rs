//! Reads at the revision they name: kube-apiserver's `resourceVersion` / `resourceVersionMatch` /
//! `continue` table for GET, LIST and WATCH, with upstream's codes and texts (issue 17, item 5),
//! and watches whose initial state is the state they started at (item 4).

kgc_testsupport::bind_kgc!();

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(15);

fn configmap(name: &str) -> ConfigMap {
    typed(json!({"metadata": {"name": name}, "data": {"v": "1"}}))
}

async fn create(api: &Api<ConfigMap>, name: &str) -> u64 {
    rv_of(
        &api.create(&PostParams::default(), &configmap(name))
            .await
            .unwrap(),
    )
}

/// A fresh server (started with `args`) and a fresh namespace of it, with its ConfigMaps API and
/// path.
async fn setup(args: &[&str], prefix: &str) -> (Server, Api<ConfigMap>, String) {
    let s = Server::start_with(args).await;
    let ns = fresh_namespace(&s.client(), prefix).await;
    let api = Api::namespaced(s.client(), &ns);
    (s, api, format!("/api/v1/namespaces/{ns}/configmaps"))
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// `name → data.v` of a LIST body's items.
fn contents(list: &Value) -> BTreeMap<String, String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["data"]["v"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn list_rv(list: &Value) -> u64 {
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// A `GET` through the kube client (which retries a 504 or 429 by itself).
async fn get(s: &Server, path: &str) -> RawResponse {
    s.raw("GET", path, None, "").await
}

/// A `GET` over its own connection, without the retries kube-rs makes on a 504 or 429.
async fn plain_get(s: &Server, path: &str) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = s.url().strip_prefix("http://").expect("an http:// server");
    let mut conn = tokio::net::TcpStream::connect(host)
        .await
        .expect("connecting");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.expect("writing");
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.expect("reading");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let mut headers = http::HeaderMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(
                http::HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
                http::HeaderValue::from_str(v.trim()).unwrap(),
            );
        }
    }
    RawResponse {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

/// The JSON inside a continue token (base64url without padding).
fn token_json(token: &str) -> Value {
    let std = token.replace('-', "+").replace('_', "/");
    let padded = format!("{std}{}", "=".repeat((4 - std.len() % 4) % 4));
    let bytes = kgc_meta::encoding::base64_decode(&padded).expect("base64url");
    serde_json::from_slice(&bytes).expect("a JSON token")
}

#[tokio::test]
async fn garbage_resource_version_is_a_bad_request() {
    let (s, api, base) = setup(&["--in-memory"], "garbage").await;
    create(&api, "cm").await;
    let invalid = |v: &str| {
        format!(
            r#"resourceVersion: Invalid value: "{v}": strconv.ParseUint: parsing "{v}": invalid syntax"#
        )
    };
    for (query, message) in [
        // LIST: the storage layer's 400.
        (
            "?resourceVersion=garbage",
            format!("invalid resource version: {}", invalid("garbage")),
        ),
        (
            "?resourceVersion=garbage&limit=1",
            format!("invalid resource version: {}", invalid("garbage")),
        ),
        (
            "?resourceVersion=-1",
            format!("invalid resource version: {}", invalid("-1")),
        ),
        // GET and WATCH: upstream's text (its code there is a 500, kubernetes/kubernetes#139485).
        ("/cm?resourceVersion=garbage", invalid("garbage")),
        ("?watch=true&resourceVersion=garbage", invalid("garbage")),
    ] {
        let r = get(&s, &format!("{base}{query}")).await;
        assert_status(&r, 400, "BadRequest", &message);
    }
}

#[tokio::test]
async fn invalid_resource_version_combinations_are_upstreams_422s() {
    let (s, api, base) = setup(&["--in-memory"], "combos").await;
    let invalid = |errors: &str| format!("ListOptions.meta.k8s.io \"\" is invalid: {errors}");
    for (query, errors) in [
        (
            "resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Latest",
            "resourceVersionMatch: Unsupported value: \"Latest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
        (
            "watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            "watch=true&sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
    ] {
        let r = get(&s, &format!("{base}?{query}")).await;
        assert_status(&r, 422, "Invalid", &invalid(errors));
        let details = &r.json()["details"];
        assert_eq!(details["group"], "meta.k8s.io", "{query}");
        assert_eq!(details["kind"], "ListOptions", "{query}");
        assert_eq!(
            details["causes"][0]["field"],
            errors.split(':').next().unwrap(),
            "{query}"
        );
    }
    // The storage layer's 400s.
    let token = ListParams::default().limit(1);
    create(&api, "a").await;
    create(&api, "b").await;
    let page = api.list(&token).await.unwrap();
    let t = page.metadata.continue_.unwrap();
    let r = get(
        &s,
        &format!("{base}?limit=1&continue={t}&resourceVersion=5"),
    )
    .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "specifying resource version is not allowed when using continue",
    );
    let r = get(
        &s,
        &format!("{base}?limit=1&continue={t}&resourceVersion=0"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn invalid_continue_token_is_a_bad_request() {
    let (s, _, base) = setup(&["--in-memory"], "badtoken").await;
    let r = get(&s, &format!("{base}?limit=1&continue=not*base64")).await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 3",
    );
    // A token naming a path outside the collection.
    let evil = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi9zZWNyZXRzIn0";
    assert_eq!(token_json(evil)["start"], "../secrets");
    let r = get(&s, &format!("{base}?limit=1&continue={evil}")).await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "invalid continue token: continue key is not valid: ../secrets",
    );
}

#[tokio::test]
async fn exact_list_serves_the_revision_it_names() {
    let (s, api, base) = setup(&["--in-memory"], "exact").await;
    create(&api, "a").await;
    let at = create(&api, "b").await;
    let before: BTreeMap<String, String> =
        [("a".into(), "1".into()), ("b".into(), "1".into())].into();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    create(&api, "c").await;

    let r = get(
        &s,
        &format!("{base}?resourceVersion={at}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let list = r.json();
    assert_eq!(list_rv(&list), at);
    assert_eq!(contents(&list), before);
    // The legacy form: a first page asked for at a revision is exact too, and so is every page
    // after it.
    let r = get(&s, &format!("{base}?resourceVersion={at}&limit=1")).await;
    let first = r.json();
    assert_eq!((list_rv(&first), contents(&first).len()), (at, 1));
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = get(&s, &format!("{base}?limit=1&continue={token}"))
        .await
        .json();
    assert_eq!(list_rv(&second), at);
    let mut paged = contents(&first);
    paged.extend(contents(&second));
    assert_eq!(paged, before);
    // "Not older than" and "any" read the current state.
    for query in [
        format!("resourceVersion={at}&resourceVersionMatch=NotOlderThan"),
        format!("resourceVersion={at}"),
        "resourceVersion=0".to_owned(),
        String::new(),
    ] {
        let now = get(&s, &format!("{base}?{query}")).await.json();
        let want: BTreeMap<String, String> =
            [("a".into(), "2".into()), ("c".into(), "1".into())].into();
        assert_eq!(contents(&now), want, "{query}");
        assert!(list_rv(&now) > at, "{query}");
    }
    // GET is "not older than": the current object.
    let r = get(&s, &format!("{base}/a?resourceVersion={at}")).await;
    assert_eq!(r.json()["data"]["v"], "2");
}

#[tokio::test]
async fn continued_pages_do_not_mix_revisions() {
    let (_server, api, _) = setup(&["--in-memory"], "pages").await;
    for name in ["a", "b", "c", "d", "e", "f"] {
        create(&api, name).await;
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let at = first.metadata.resource_version.clone().unwrap();
    let mut token = first.metadata.continue_.clone().unwrap();
    // The token is upstream's: base64url JSON naming the version, the revision and the next key.
    let decoded = token_json(&token);
    assert_eq!(decoded["v"], "meta.k8s.io/v1");
    assert_eq!(decoded["rv"].to_string(), at);
    assert_eq!(decoded["start"], "b\u{0}");
    // Changes on both sides of the page boundary.
    api.delete("a", &DeleteParams::default()).await.unwrap();
    api.delete("e", &DeleteParams::default()).await.unwrap();
    api.patch(
        "d",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    create(&api, "cc").await;
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    loop {
        let page = api
            .list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .unwrap();
        assert_eq!(page.metadata.resource_version.as_deref(), Some(at.as_str()));
        for o in &page.items {
            assert_eq!(o.data.as_ref().unwrap()["v"], "1", "{o:?}");
            names.push(o.metadata.name.clone().unwrap());
        }
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(t) => token = t,
            None => break,
        }
    }
    assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
}

#[tokio::test]
async fn expired_continue_token_is_gone() {
    let (s, api, base) = setup(&["--in-memory", "--watch-cache-size", "5"], "gone").await;
    for name in ["a", "b", "c"] {
        create(&api, name).await;
    }
    let first = get(&s, &format!("{base}?limit=1")).await.json();
    let at = list_rv(&first);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    for i in 0..10 {
        create(&api, &format!("z{i}")).await;
    }
    let r = get(&s, &format!("{base}?limit=1&continue={token}")).await;
    assert_status(
        &r,
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    );
    // The Status carries a token of the same position at the latest revision (rv -1).
    let fresh = r.json()["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    let decoded = token_json(&fresh);
    assert_eq!(decoded["rv"], -1);
    assert_eq!(decoded["start"], token_json(&token)["start"]);
    let rest = get(&s, &format!("{base}?limit=100&continue={fresh}")).await;
    assert_eq!(rest.status, 200, "{}", rest.text());
    let rest = rest.json();
    assert!(list_rv(&rest) > at);
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["b", "c"]);
    assert_eq!(names.len(), 12);

    // An exact list at a revision that has left the history.
    let r = get(
        &s,
        &format!("{base}?resourceVersion={at}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_status(
        &r,
        410,
        "Expired",
        "The resourceVersion for the provided list is too old.",
    );
}

#[tokio::test]
async fn future_resource_version_is_too_large() {
    let (s, api, base) = setup(&["--in-memory"], "future").await;
    let now = create(&api, "cm").await;
    let future = now + 1_000;
    let started = std::time::Instant::now();
    let paths = [
        format!("{base}?resourceVersion={future}"),
        format!("{base}?resourceVersion={future}&resourceVersionMatch=Exact"),
        format!("{base}/cm?resourceVersion={future}"),
    ];
    // Over plain HTTP: kube-rs retries a 504 by itself.
    let (list, exact, one) = tokio::join!(
        plain_get(&s, &paths[0]),
        plain_get(&s, &paths[1]),
        plain_get(&s, &paths[2]),
    );
    // The watch cache waits up to 3 s for the revision before giving up.
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    for r in [&list, &exact, &one] {
        let body = r.json();
        let current: u64 = body["message"]
            .as_str()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(current >= now);
        assert_status(
            r,
            504,
            "Timeout",
            &format!("Timeout: Too large resource version: {future}, current: {current}"),
        );
        assert_eq!(
            body["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        assert_eq!(
            body["details"]["causes"][0]["message"],
            "Too large resource version"
        );
        assert_eq!(body["details"]["retryAfterSeconds"], 1);
        assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    }
    // A streaming watch not older than it: the same Status as an ERROR event.
    let mut w = s
        .raw_watch(&format!(
            "{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={future}"
        ))
        .await;
    let e = next_within(&mut w, T, "the ERROR event").await;
    assert_eq!(e["type"], "ERROR", "{e}");
    assert_eq!(e["object"]["code"], 504, "{e}");
    assert_eq!(e["object"]["reason"], "Timeout", "{e}");
    assert!(w.next().await.is_none(), "the watch ends after its ERROR");

    // A revision reached while the read waits is served.
    let next = now + 2;
    let path = format!("{base}?resourceVersion={next}");
    let (r, _) = tokio::join!(get(&s, &path), async {
        create(&api, "w1").await;
        create(&api, "w2").await;
    });
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(list_rv(&r.json()) >= next);
}

#[tokio::test]
async fn resource_version_zero_lists_everything_at_once() {
    let (s, api, base) = setup(&["--in-memory"], "any").await;
    for i in 0..5 {
        create(&api, &format!("cm-{i}")).await;
    }
    // Upstream serves `resourceVersion=0` whole from its cache, whatever the limit
    // (cacher `computeListLimit`), as client-go informers expect.
    let r = get(&s, &format!("{base}?limit=2&resourceVersion=0"))
        .await
        .json();
    assert_eq!(contents(&r).len(), 5);
    assert!(r["metadata"].get("continue").is_none(), "{r}");
    let r = get(&s, &format!("{base}?limit=2")).await.json();
    assert_eq!(contents(&r).len(), 2);
}

#[tokio::test]
async fn watch_initial_events_are_the_state_it_started_at() {
    let (s, api, base) = setup(&["--in-memory"], "initial").await;
    let n = 300;
    for i in 0..n {
        create(&api, &format!("cm-{i:03}")).await;
    }
    let mut w = s
        .raw_watch(&format!("{base}?watch=true&resourceVersion=0"))
        .await;
    // Changes while the initial state is still being read: they follow it as events.
    api.patch(
        "cm-250",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    api.delete("cm-299", &DeleteParams::default())
        .await
        .unwrap();
    let mut initial = BTreeMap::new();
    for _ in 0..n {
        let e = next_within(&mut w, T, "an initial ADDED").await;
        assert_eq!(e["type"], "ADDED", "{e}");
        initial.insert(
            e["object"]["metadata"]["name"].as_str().unwrap().to_owned(),
            e["object"]["data"]["v"].as_str().unwrap().to_owned(),
        );
    }
    assert_eq!(initial.len(), n);
    assert!(
        initial.values().all(|v| v == "1"),
        "the state at the watch's start"
    );
    let e = next_within(&mut w, T, "MODIFIED cm-250").await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("MODIFIED"), Some("cm-250"))
    );
    let e = next_within(&mut w, T, "DELETED cm-299").await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("cm-299"))
    );
}
