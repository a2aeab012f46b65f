//! Discovery documents, aggregated (v2) and legacy, and the OpenAPI v3 stub kubectl validates
//! against (kube-apiserver's `staging/src/k8s.io/apiserver/pkg/endpoints/discovery`).
//!
//! Everything here is derived from the catalog on each request; the documents are small, and
//! deriving them means a CRD appears and disappears without any cache to invalidate.

use kgc_meta::catalog::{ResourceInfo, api_version, compare_versions};
use kgc_meta::{Catalog, Scope};
use serde_json::{Value, json};

/// The discovery media type of aggregated discovery for `version` (`v2` or `v2beta1`).
pub fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

/// Which aggregated discovery version the `Accept` header asks for, if any; the first one
/// listed wins, as clients list their preference first.
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if has("as=APIGroupDiscoveryList") && has("g=apidiscovery.k8s.io") {
            if has("v=v2") {
                return Some("v2");
            }
            if has("v=v2beta1") {
                return Some("v2beta1");
            }
        }
    }
    None
}

fn verbs(r: &ResourceInfo) -> Vec<&str> {
    r.verbs.iter().map(String::as_str).collect()
}

fn scope(r: &ResourceInfo) -> &'static str {
    match r.scope {
        Scope::Namespaced => "Namespaced",
        Scope::Cluster => "Cluster",
    }
}

/// `APIVersions` for `/api`.
pub fn legacy_core(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_doc(catalog: &Catalog, group: &str) -> Value {
    let versions: Vec<Value> = catalog
        .group_versions(group)
        .iter()
        .map(|v| json!({"groupVersion": api_version(group, v), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// `APIGroupList` for `/apis`.
pub fn legacy_groups(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| group_doc(catalog, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `APIGroup` for `/apis/{group}`.
pub fn legacy_group(catalog: &Catalog, group: &str) -> Option<Value> {
    if group.is_empty() || !catalog.groups().iter().any(|g| g == group) {
        return None;
    }
    let mut doc = group_doc(catalog, group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `APIResourceList` for `/api/v1` or `/apis/{group}/{version}`.
pub fn legacy_resources(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in catalog
        .resources()
        .filter(|r| r.group == group && r.serves_version(version))
    {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced(),
            "kind": r.kind,
            "verbs": verbs(r),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        for s in &r.subresources {
            let mut sub = json!({
                "name": format!("{}/{}", r.plural, s.name),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": s.kind,
                "verbs": s.verbs,
            });
            if s.group != r.group || s.version != version {
                sub["group"] = json!(s.group);
                sub["version"] = json!(s.version);
            }
            resources.push(sub);
        }
    }
    if resources.is_empty() {
        return None;
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version(group, version),
        "resources": resources,
    }))
}

/// `APIGroupDiscoveryList` for `/api` (core only) or `/apis` (every other group).
pub fn aggregated(catalog: &Catalog, core: bool, disco_version: &str) -> Value {
    let mut items = Vec::new();
    for group in catalog.groups().iter().filter(|g| g.is_empty() == core) {
        let mut versions = Vec::new();
        for version in catalog.group_versions(group) {
            let resources: Vec<Value> = catalog
                .resources()
                .filter(|r| &r.group == group && r.serves_version(&version))
                .map(|r| {
                    let mut entry = json!({
                        "resource": r.plural,
                        "responseKind": {"group": r.group, "version": version, "kind": r.kind},
                        "scope": scope(r),
                        "singularResource": r.singular,
                        "verbs": verbs(r),
                    });
                    if !r.short_names.is_empty() {
                        entry["shortNames"] = json!(r.short_names);
                    }
                    if !r.categories.is_empty() {
                        entry["categories"] = json!(r.categories);
                    }
                    let subs: Vec<Value> = r
                        .subresources
                        .iter()
                        .map(|s| {
                            let v = if s.group == r.group {
                                version.as_str()
                            } else {
                                s.version.as_str()
                            };
                            json!({
                                "subresource": s.name,
                                "responseKind": {"group": s.group, "version": v, "kind": s.kind},
                                "verbs": s.verbs,
                            })
                        })
                        .collect();
                    if !subs.is_empty() {
                        entry["subresources"] = json!(subs);
                    }
                    entry
                })
                .collect();
            versions
                .push(json!({"version": version, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({"metadata": {"name": group}, "versions": versions}));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{disco_version}"),
        "metadata": {},
        "items": items,
    })
}

/// Every served group-version as (group, version), core first.
fn group_versions(catalog: &Catalog) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for g in catalog.groups() {
        let mut versions = catalog.group_versions(g);
        versions.sort_by(|a, b| compare_versions(b, a));
        for v in versions {
            out.push((g.clone(), v));
        }
    }
    out
}

fn openapi_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A content hash, so clients can cache a document until the catalog changes.
pub fn etag(body: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    format!("{:016X}", h.finish())
}

/// The `/openapi/v3` root: one entry per group-version.
pub fn openapi_root(catalog: &Catalog) -> Value {
    let mut paths = serde_json::Map::new();
    for (g, v) in group_versions(catalog) {
        let doc = openapi_doc(catalog, &g, &v).unwrap_or(Value::Null);
        let hash = etag(doc.to_string().as_bytes());
        let path = openapi_path(&g, &v);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The stub OpenAPI v3 document of one group-version: a PATCH operation per resource declaring
/// its kind and the `fieldValidation` parameter, which is all kubectl's validator looks for.
/// `requestBody` is left out on purpose.
pub fn openapi_doc(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    for r in catalog
        .resources()
        .filter(|r| r.group == group && r.serves_version(version))
    {
        let prefix = format!("/{}", openapi_path(group, version));
        let path = if r.namespaced() {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        paths.insert(
            path,
            json!({"patch": {
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.kind},
                "x-kubernetes-action": "patch",
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "OK"}},
            }}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::GIT_VERSION},
        "components": {"schemas": {}},
        "paths": paths,
    }))
}

/// The OpenAPI v2 protobuf subtype kubectl ≤ 1.26 asks for (gnostic's `openapi_v2.Document`),
/// in both spellings kube-openapi accepts.
pub const OPENAPI_V2_PROTOBUF_ACCEPT: [&str; 2] = [
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
];
/// The Content-Type kube-openapi answers with: Go's MIME parser rejects the `@` form.
pub const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// A stub OpenAPI v2 document (`swagger: "2.0"`, title, version, no paths, no definitions).
/// kubectl 1.20 downloads it to validate `create -f`/`apply -f`; finding no definition for a
/// kind, its validator lets the object through and the server validates, as with the v3 stub.
pub fn openapi_v2(protobuf: bool) -> Vec<u8> {
    if !protobuf {
        return json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": crate::GIT_VERSION}, "paths": {}})
            .to_string()
            .into_bytes();
    }
    // openapi_v2.Document { swagger = 1; info = 2 (Info { title = 1; version = 2 }); paths = 8 }
    fn string_field(out: &mut Vec<u8>, number: u8, s: &str) {
        out.push(number << 3 | 2);
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }
    let mut info = Vec::new();
    string_field(&mut info, 1, "Kubernetes");
    string_field(&mut info, 2, crate::GIT_VERSION);
    let mut doc = Vec::new();
    string_field(&mut doc, 1, "2.0");
    doc.push(2 << 3 | 2);
    doc.push(info.len() as u8);
    doc.extend_from_slice(&info);
    doc.extend_from_slice(&[8 << 3 | 2, 0]);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_v2_stub_encodes_a_gnostic_document() {
        let pb = openapi_v2(true);
        assert_eq!(&pb[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(pb[5], 0x12);
        assert_eq!(&pb[pb.len() - 2..], &[0x42, 0]);
        let j: Value = serde_json::from_slice(&openapi_v2(false)).unwrap();
        assert_eq!(j["swagger"], "2.0");
    }

    #[test]
    fn accept_negotiation() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(kubectl), Some("v2"));
        assert_eq!(wants_aggregated("application/json, */*"), None);
        assert_eq!(
            wants_aggregated(
                "application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io"
            ),
            Some("v2beta1")
        );
    }

    #[test]
    fn documents_cover_the_catalog() {
        let c = Catalog::builtin();
        let core = legacy_resources(&c, "", "v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pods") && names.contains(&"pods/status"));
        let apps = legacy_resources(&c, "apps", "v1").unwrap();
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(
            (scale["group"].as_str(), scale["kind"].as_str()),
            (Some("autoscaling"), Some("Scale"))
        );
        let agg = aggregated(&c, false, "v2");
        assert_eq!(agg["items"][0]["metadata"]["name"], "apps");
        assert!(legacy_group(&c, "apps").is_some());
        assert!(legacy_group(&c, "nope").is_none());
        assert!(legacy_resources(&c, "apps", "v9").is_none());
        let root = openapi_root(&c);
        assert!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
        let doc = openapi_doc(&c, "", "v1").unwrap();
        assert!(doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"].is_object());
    }
}
