//! The collectors' decision history: what the owner-reference collector and the lifecycle
//! collectors deleted or orphaned, when and why, kept in one bounded ring per process and served
//! on `/debug/gc/decisions` so `kgc why` can say why an object that is gone went.
//!
//! kube-controller-manager keeps no such history (its reasons live only in the logs, at a
//! verbosity rarely enabled); the events it records name the owner, not the collected object.
//! Memory is bounded twice: by the number of decisions kept and by the length of each reason.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Decisions a process keeps by default: the most recent ten thousand.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// Bytes of a reason kept; the rest is cut (a reason names owners, which can be many).
const MAX_REASON: usize = 1024;

/// What a collector did to the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Issued a DELETE.
    Delete,
    /// Removed an owner reference because its owner was deleted with `propagationPolicy: Orphan`.
    Orphan,
}

/// One decision of one collector about one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// When it acted (RFC 3339, the server clock).
    pub time: String,
    /// Which collector: `garbagecollector`, or a lifecycle collector's `--disable` name.
    pub collector: String,
    pub action: Action,
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The DELETE's `propagationPolicy`, when it carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
    /// Why, in words.
    pub reason: String,
}

/// Which decisions to return: every given field must match exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub kind: Option<String>,
}

impl Filter {
    /// The filter of a query string's `namespace`, `name`, `uid` and `kind` (empty: any).
    pub fn from_query<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Self {
        let field = |k: &str| get(k).filter(|v| !v.is_empty()).map(str::to_owned);
        Self {
            namespace: field("namespace"),
            name: field("name"),
            uid: field("uid"),
            kind: field("kind"),
        }
    }

    fn matches(&self, d: &Decision) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.namespace, &d.namespace)
            && eq(&self.name, &d.name)
            && eq(&self.uid, &d.uid)
            && eq(&self.kind, &d.kind)
    }
}

/// The bounded history, oldest first. Cheap to clone; every clone records into the same ring.
#[derive(Clone)]
pub struct Decisions {
    ring: Arc<Mutex<VecDeque<Decision>>>,
    capacity: usize,
}

impl Default for Decisions {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl std::fmt::Debug for Decisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decisions")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Decisions {
    /// A history keeping the last `capacity` decisions (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            ring: Arc::new(Mutex::new(VecDeque::with_capacity(capacity.min(1024)))),
            capacity,
        }
    }

    /// Records a decision, forgetting the oldest when full.
    pub fn record(&self, mut decision: Decision) {
        if decision.reason.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !decision.reason.is_char_boundary(cut) {
                cut -= 1;
            }
            decision.reason.truncate(cut);
            decision.reason.push('…');
        }
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        ring.push_back(decision);
    }

    /// The decisions `filter` matches, oldest first.
    pub fn query(&self, filter: &Filter) -> Vec<Decision> {
        self.ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|d| filter.matches(d))
            .cloned()
            .collect()
    }

    /// The answer of `/debug/gc/decisions`: `{"capacity": N, "items": [...]}`, oldest first.
    pub fn to_json(&self, filter: &Filter) -> serde_json::Value {
        serde_json::json!({"capacity": self.capacity, "items": self.query(filter)})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(name: &str, uid: &str) -> Decision {
        Decision {
            time: "2026-01-01T00:00:00Z".into(),
            collector: "garbagecollector".into(),
            action: Action::Delete,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: uid.into(),
            propagation_policy: Some("Background".into()),
            reason: "all owners absent".into(),
        }
    }

    #[test]
    fn keeps_the_most_recent_up_to_capacity() {
        let d = Decisions::with_capacity(3);
        for i in 0..5 {
            d.record(decision(&format!("c{i}"), &format!("u{i}")));
        }
        let names: Vec<String> = d
            .query(&Filter::default())
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["c2", "c3", "c4"]);
    }

    #[test]
    fn filters_by_every_given_field() {
        let d = Decisions::default();
        d.record(decision("a", "u1"));
        d.record(decision("b", "u2"));
        let by_uid = Filter {
            uid: Some("u2".into()),
            ..Filter::default()
        };
        assert_eq!(d.query(&by_uid), [decision("b", "u2")]);
        let none = Filter {
            namespace: Some("other".into()),
            name: Some("a".into()),
            ..Filter::default()
        };
        assert!(d.query(&none).is_empty());
    }

    #[test]
    fn long_reasons_are_cut_at_a_char_boundary() {
        let d = Decisions::with_capacity(1);
        let mut long = decision("a", "u");
        long.reason = "é".repeat(MAX_REASON);
        d.record(long);
        let kept = &d.query(&Filter::default())[0].reason;
        assert!(kept.len() <= MAX_REASON + '…'.len_utf8());
        assert!(kept.ends_with('…'));
    }

    #[test]
    fn serialises_as_the_endpoint_answers() {
        let d = Decisions::with_capacity(2);
        d.record(decision("a", "u1"));
        let json = d.to_json(&Filter::default());
        assert_eq!(json["capacity"], 2);
        assert_eq!(json["items"][0]["apiVersion"], "v1");
        assert_eq!(json["items"][0]["propagationPolicy"], "Background");
        assert_eq!(json["items"][0]["action"], "Delete");
        let back: Decision = serde_json::from_value(json["items"][0].clone()).unwrap();
        assert_eq!(back, decision("a", "u1"));
    }
}
