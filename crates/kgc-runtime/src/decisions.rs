//! The collectors' decision history: what the owner-reference collector and the lifecycle
//! collectors deleted or orphaned, when and why, kept in one bounded ring per process and served
//! on `/debug/gc/decisions` so `kgc why` can say why an object that is gone went.
//!
//! kube-controller-manager keeps no such history (its reasons live only in the logs, at a
//! verbosity rarely enabled); the events it records name the owner, not the collected object.
//! Memory is bounded twice: by the number of decisions kept and by the length of each reason.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use kgc_meta::time::Timestamp;
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

    fn matches(&self, d: &Kept) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.namespace, d.field(3))
            && eq(&self.name, d.field(4))
            && eq(&self.uid, d.field(5))
            && eq(&self.kind, d.field(2))
    }
}

/// A decision as [`Decisions::record`] takes it: borrowed, the time unformatted and the reason
/// still to be written, so that recording one formats nothing and allocates nothing once the
/// ring is full (it reuses the text of the decision it forgets).
pub struct Record<'a> {
    pub time: Timestamp,
    pub collector: &'a str,
    pub action: Action,
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub propagation_policy: Option<&'a str>,
    pub reason: &'a dyn std::fmt::Display,
}

/// The text fields of a [`Decision`], in this order, in one string.
const FIELDS: usize = 7;

/// A decision as the ring keeps it: its text in one string (`ends` marks where each field
/// ends), its time formatted only when read. A ring of ten thousand [`Decision`]s cost the
/// collector eight allocations to record and eight frees to forget per collected object.
struct Kept {
    time: Timestamp,
    action: Action,
    policy: bool,
    text: String,
    ends: [u32; FIELDS],
}

impl Kept {
    fn field(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// Writes `r` over this one's text, keeping its allocation.
    fn write(&mut self, r: &Record<'_>) {
        use std::fmt::Write;
        self.time = r.time;
        self.action = r.action;
        self.policy = r.propagation_policy.is_some();
        self.text.clear();
        let fields = [
            r.collector,
            r.api_version,
            r.kind,
            r.namespace,
            r.name,
            r.uid,
            r.propagation_policy.unwrap_or_default(),
        ];
        for (i, f) in fields.into_iter().enumerate() {
            self.text.push_str(f);
            self.ends[i] = self.text.len() as u32;
        }
        let mut reason = Cut {
            out: &mut self.text,
            room: MAX_REASON,
            cut: false,
        };
        let _ = write!(reason, "{}", r.reason);
        if reason.cut {
            self.text.push('…');
        }
    }

    fn reason(&self) -> &str {
        &self.text[self.ends[FIELDS - 1] as usize..]
    }

    fn decision(&self) -> Decision {
        Decision {
            time: kgc_meta::time::format_time(self.time),
            collector: self.field(0).to_owned(),
            action: self.action,
            api_version: self.field(1).to_owned(),
            kind: self.field(2).to_owned(),
            namespace: self.field(3).to_owned(),
            name: self.field(4).to_owned(),
            uid: self.field(5).to_owned(),
            propagation_policy: self.policy.then(|| self.field(6).to_owned()),
            reason: self.reason().to_owned(),
        }
    }
}

/// A writer that keeps the first `room` bytes (whole characters) and then stops the formatting:
/// a reason is never written longer than it is kept, so a kept decision's reused text never
/// grows past its bound.
struct Cut<'a> {
    out: &'a mut String,
    room: usize,
    cut: bool,
}

impl std::fmt::Write for Cut<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if s.len() <= self.room {
            self.out.push_str(s);
            self.room -= s.len();
            return Ok(());
        }
        let mut end = self.room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.out.push_str(&s[..end]);
        self.room = 0;
        self.cut = true;
        Err(std::fmt::Error)
    }
}

/// The bounded history, oldest first. Cheap to clone; every clone records into the same ring.
#[derive(Clone)]
pub struct Decisions {
    ring: Arc<Mutex<VecDeque<Kept>>>,
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

    /// Records a decision, forgetting the oldest when full (and reusing its text).
    pub fn record(&self, r: Record<'_>) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let mut kept = if ring.len() == self.capacity {
            ring.pop_front()
        } else {
            None
        }
        .unwrap_or_else(|| Kept {
            time: r.time,
            action: r.action,
            policy: false,
            text: String::new(),
            ends: [0; FIELDS],
        });
        kept.write(&r);
        ring.push_back(kept);
    }

    /// The decisions `filter` matches, oldest first.
    pub fn query(&self, filter: &Filter) -> Vec<Decision> {
        self.ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|k| filter.matches(k))
            .map(Kept::decision)
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

    /// Records `d` as a collector would.
    fn record(to: &Decisions, d: &Decision) {
        to.record(Record {
            time: d.time.parse().unwrap(),
            collector: &d.collector,
            action: d.action,
            api_version: &d.api_version,
            kind: &d.kind,
            namespace: &d.namespace,
            name: &d.name,
            uid: &d.uid,
            propagation_policy: d.propagation_policy.as_deref(),
            reason: &d.reason,
        });
    }

    #[test]
    fn keeps_the_most_recent_up_to_capacity() {
        let d = Decisions::with_capacity(3);
        // Every other one without a policy: a forgotten decision's text is reused whole.
        let made = |i: usize| Decision {
            propagation_policy: i.is_multiple_of(2).then(|| "Foreground".into()),
            reason: "r".repeat(i),
            ..decision(&format!("c{i}"), &format!("u{i}"))
        };
        for i in 0..5 {
            record(&d, &made(i));
        }
        assert_eq!(d.query(&Filter::default()), [made(2), made(3), made(4)]);
    }

    #[test]
    fn filters_by_every_given_field() {
        let d = Decisions::default();
        record(&d, &decision("a", "u1"));
        record(&d, &decision("b", "u2"));
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
        long.reason = "é".repeat(50 * MAX_REASON);
        record(&d, &long);
        let kept = &d.query(&Filter::default())[0].reason;
        assert!(kept.len() <= MAX_REASON + '…'.len_utf8());
        assert!(kept.ends_with('…'));
        // Not formatted in full first: the kept text's room stays near its bound.
        let ring = d.ring.lock().unwrap();
        assert!(
            ring[0].text.capacity() < 4 * MAX_REASON,
            "{}",
            ring[0].text.capacity()
        );
        drop(ring);
        // A reason of exactly the bound is kept whole.
        let mut exact = decision("b", "u");
        exact.reason = "x".repeat(MAX_REASON);
        record(&d, &exact);
        assert_eq!(d.query(&Filter::default())[0].reason, exact.reason);
    }

    #[test]
    fn serialises_as_the_endpoint_answers() {
        let d = Decisions::with_capacity(2);
        record(&d, &decision("a", "u1"));
        let json = d.to_json(&Filter::default());
        assert_eq!(json["capacity"], 2);
        assert_eq!(json["items"][0]["apiVersion"], "v1");
        assert_eq!(json["items"][0]["propagationPolicy"], "Background");
        assert_eq!(json["items"][0]["action"], "Delete");
        let back: Decision = serde_json::from_value(json["items"][0].clone()).unwrap();
        assert_eq!(back, decision("a", "u1"));
    }
}
