//! An object read only as deep as a DELETE needs.
//!
//! A DELETE changes nothing outside `metadata` (namespaces and CRDs aside, which the store
//! parses whole), and of a pod it reads only `spec.nodeName`,
//! `spec.terminationGracePeriodSeconds` and `status.phase`. So instead of parsing the whole
//! object into a `serde_json::Value` and serializing all of it again, it parses `metadata` and
//! those three fields, and writes the new text as the stored text with `metadata` replaced. For
//! a pod this is most of what its deletion cost (the collector deletes pods by the hundred
//! thousand in a Deployment cascade).
//!
//! The result is the text a whole parse, change and serialization would give: the store only
//! ever holds text its serializer wrote (a `Value` with sorted keys, compact), so the members
//! around `metadata` are already in that form.

use std::ops::Range;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::object::{Meta, StoredObject};

/// What a pod's grace period depends on besides the request (upstream `podStrategy`
/// `CheckGracefulDelete`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PodFacts {
    /// `spec.nodeName` is a non-empty string.
    pub scheduled: bool,
    /// `spec.terminationGracePeriodSeconds`, when an integer.
    pub termination_grace: Option<i64>,
    /// `status.phase` is `Succeeded` or `Failed`.
    pub terminal: bool,
}

impl PodFacts {
    /// The facts of a whole pod.
    pub fn of(pod: &Value) -> Self {
        let spec = |k: &str| pod.get("spec").and_then(|s| s.get(k));
        Self::new(
            spec("nodeName"),
            spec("terminationGracePeriodSeconds"),
            pod.get("status").and_then(|s| s.get("phase")),
        )
    }

    fn new(node_name: Option<&Value>, grace: Option<&Value>, phase: Option<&Value>) -> Self {
        Self {
            scheduled: node_name
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty()),
            termination_grace: grace.and_then(Value::as_i64),
            terminal: matches!(phase.and_then(Value::as_str), Some("Succeeded" | "Failed")),
        }
    }

    /// The facts from the text of `spec` and `status`; a member that is not an object has none
    /// of the fields, as in a whole parse.
    fn read(spec: Option<&RawValue>, status: Option<&RawValue>) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Spec {
            node_name: Option<Value>,
            termination_grace_period_seconds: Option<Value>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Status {
            phase: Option<Value>,
        }
        // A derived struct also reads a JSON array; only an object has fields here.
        fn object<'a, T: Deserialize<'a> + Default>(raw: Option<&'a RawValue>) -> T {
            raw.filter(|r| r.get().starts_with('{'))
                .and_then(|r| serde_json::from_str(r.get()).ok())
                .unwrap_or_default()
        }
        let spec: Spec = object(spec);
        let status: Status = object(status);
        Self::new(
            spec.node_name.as_ref(),
            spec.termination_grace_period_seconds.as_ref(),
            status.phase.as_ref(),
        )
    }
}

/// The top-level members a DELETE reads, as spans of the stored text.
#[derive(Default)]
struct Members<'a> {
    metadata: Option<&'a RawValue>,
    spec: Option<&'a RawValue>,
    status: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Read<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Read<'a> {
            type Value = Members<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                use serde::de::Error;
                let mut out = Members::default();
                // Keys borrowed from the text: an escaped key fails the read, and the caller
                // parses the object whole instead.
                while let Some(key) = map.next_key::<&'de str>()? {
                    let slot = match key {
                        "metadata" => &mut out.metadata,
                        "spec" => &mut out.spec,
                        "status" => &mut out.status,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if slot.replace(map.next_value()?).is_some() {
                        return Err(A::Error::custom(format!("duplicate member {key}")));
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Read(std::marker::PhantomData))
    }
}

/// An object with only its `metadata` parsed.
#[derive(Debug)]
pub(crate) struct Shallow {
    metadata: Map<String, Value>,
    /// Where the stored text's `metadata` value is.
    span: Range<usize>,
    pub pod: PodFacts,
}

impl Shallow {
    /// Reads `stored`; `None` when its text is not an object with a `metadata` object (the
    /// caller then parses it whole).
    pub fn read(stored: &StoredObject) -> Option<Self> {
        let raw: &str = &stored.raw;
        let members: Members<'_> = serde_json::from_str(raw).ok()?;
        let meta = members.metadata?.get();
        let metadata: Map<String, Value> = serde_json::from_str(meta).ok()?;
        // `meta` is a slice of `raw`: its offset is the difference of the addresses.
        let start = (meta.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)?;
        let span = start..start + meta.len();
        (raw.get(span.clone())? == meta).then(|| Self {
            metadata,
            span,
            pod: PodFacts::read(members.spec, members.status),
        })
    }

    /// Whether `metadata` is still as stored.
    pub fn unchanged(&self, stored: &StoredObject) -> bool {
        stored
            .raw
            .get(self.span.clone())
            .and_then(|m| serde_json::from_str::<Map<String, Value>>(m).ok())
            .is_some_and(|m| m == self.metadata)
    }

    /// The object's text: the stored text with `metadata` replaced.
    pub fn text(&self, stored: &StoredObject) -> serde_json::Result<String> {
        // `metadata` is written in place, into room for the stored text and what a write adds
        // to it (a deletionTimestamp, a finalizer): serialized apart it grew by doubling and
        // was then copied, every delete and every status write paying the reallocations.
        let mut out = Vec::with_capacity(stored.raw.len() + 128);
        out.extend_from_slice(&stored.raw.as_bytes()[..self.span.start]);
        serde_json::to_writer(&mut out, &self.metadata)?;
        out.extend_from_slice(&stored.raw.as_bytes()[self.span.end..]);
        String::from_utf8(out).map_err(serde::ser::Error::custom)
    }

    /// The whole object: the stored one with this `metadata`.
    pub fn into_whole(self, stored: &StoredObject) -> Value {
        let mut whole = stored.value();
        *whole.meta_mut() = self.metadata;
        whole
    }
}

impl Meta for Shallow {
    fn meta(&self) -> Option<&Map<String, Value>> {
        Some(&self.metadata)
    }

    fn meta_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(v: Value) -> std::sync::Arc<StoredObject> {
        StoredObject::from_value(&v).expect("stored")
    }

    #[test]
    fn pod_facts_read_as_a_whole_parse_does() {
        for pod in [
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 5,
                            "containers": [{"name": "c", "image": "nginx"}]},
                   "status": {"phase": "Running"}}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": {"nodeName": ""}, "status": {"phase": "Failed"}}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": {"nodeName": 7, "terminationGracePeriodSeconds": "5"},
                   "status": {"phase": "Succeeded"}}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": ["n1", 5], "status": ["Failed"]}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": null, "status": "x"}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"},
                   "spec": {"nodeName": null, "terminationGracePeriodSeconds": -2.5}}),
            json!({"metadata": {"name": "p", "resourceVersion": "1"}}),
        ] {
            let s = stored(pod.clone());
            let shallow = Shallow::read(&s).expect("readable");
            assert_eq!(shallow.pod, PodFacts::of(&pod), "{pod}");
        }
    }

    #[test]
    fn changed_metadata_writes_what_a_whole_serialization_would() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p\"q", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         "labels": {"a": "b"}, "generation": 1,
                         "annotations": {"note": "\"metadata\":{} \\u0041"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx",
                     "args": ["a\nb", "ü"]}], "x": 1.5e300},
            "status": {"phase": "Running", "metadata": {"name": "decoy"}}});
        let s = stored(pod.clone());
        let mut shallow = Shallow::read(&s).expect("readable");
        assert!(shallow.unchanged(&s));
        fn change(doc: &mut impl Meta) {
            doc.set("deletionTimestamp", "2026-01-01T00:00:00Z");
            doc.set("deletionGracePeriodSeconds", 0);
            doc.set("resourceVersion", "8");
        }
        let mut whole = pod.clone();
        change(&mut whole);
        change(&mut shallow);
        assert!(!shallow.unchanged(&s));
        assert_eq!(
            shallow.text(&s).expect("text"),
            serde_json::to_string(&whole).expect("json")
        );
        assert_eq!(shallow.into_whole(&s), whole);
    }

    #[test]
    fn only_an_object_with_a_metadata_object_reads_shallow() {
        assert!(
            Shallow::read(&stored(
                json!({"metadata": {"name": "a", "resourceVersion": "1"}})
            ))
            .is_some()
        );
        let no_meta = StoredObject {
            namespace: String::new(),
            name: String::new(),
            uid: String::new(),
            resource_version: 1,
            deleting: false,
            labels: Default::default(),
            raw: r#"{"kind":"Pod","spec":{}}"#.into(),
        };
        assert!(Shallow::read(&no_meta).is_none());
        let twice = StoredObject {
            raw: r#"{"metadata":{"name":"a"},"metadata":{"name":"b"}}"#.into(),
            ..no_meta
        };
        assert!(Shallow::read(&twice).is_none());
    }
}
