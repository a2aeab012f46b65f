//! The Warning Event a simulated node's bad input gets: on the Node, in `default` (where
//! events about cluster-scoped objects go), from `kgc-nodesim`, as client-go's recorder
//! writes a core/v1 Event (`staging/src/k8s.io/client-go/tools/record/event.go` `makeEvent`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, EventSource, Node, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

pub const COMPONENT: &str = "kgc-nodesim";

/// A Warning Event about `node`.
pub fn warning(node: &Node, reason: &str, message: String, now: Timestamp) -> Event {
    let name = node.metadata.name.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            // client-go's name: the object's, a dot, the time in nanoseconds in hex.
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(name),
            uid: node.metadata.uid.clone(),
            ..ObjectReference::default()
        },
        reason: Some(reason.into()),
        message: Some(message),
        type_: Some("Warning".into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: None,
        }),
        reporting_component: Some(COMPONENT.into()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_names_the_node() {
        let node = Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let e = warning(&node, "InvalidAnnotation", "bad".into(), now);
        assert_eq!(e.involved_object.name.as_deref(), Some("n1"));
        assert_eq!(e.involved_object.kind.as_deref(), Some("Node"));
        assert_eq!(e.metadata.name.as_deref(), Some("n1.17979cfe362a0000"));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
    }
}
