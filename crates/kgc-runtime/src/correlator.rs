//! The event correlator: what every event recorder of the process files through, so that
//! repeated and similar events do not multiply, as client-go's recorder does
//! (kubernetes/kubernetes `staging/src/k8s.io/client-go/tools/record/events_cache.go`):
//!
//! - the aggregator: once 10 events that differ only in their message come from one source
//!   about one object (same type and reason) within 10 minutes, further ones are filed as one
//!   event, `(combined from similar events): <message>`, counted;
//! - the logger: an exact repeat of an event already filed is a patch of its `count`,
//!   `lastTimestamp` and `message`, not a new Event;
//! - the spam filter: a token bucket per source and object (25 events, then one per 5
//!   minutes); an event beyond it is dropped.
//!
//! It is one per process ([`correlator`]), so the scheduler, the workload controllers and the
//! node simulator share its counts and buckets as the components of one kubelet or controller
//! manager share theirs. Its memory is bounded: each cache starts over past [`REMEMBERED`]
//! entries, as upstream's LRU caches forget, and [`Correlator::forget`] drops an object's
//! entries when it is gone.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use kgc_meta::time::{Timestamp, format_time};
use serde_json::{Value, json};

/// Similar events from one source about one object before they are aggregated
/// (`defaultAggregateMaxEvents`).
const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long similar events are remembered for aggregation (`defaultAggregateIntervalInSeconds`).
const AGGREGATE_INTERVAL_SECS: i64 = 600;
/// The spam filter's burst (`defaultSpamBurst`).
const SPAM_BURST: f64 = 25.0;
/// The spam filter's refill: one event per 5 minutes (`defaultSpamQPS`).
const SPAM_QPS: f64 = 1.0 / 300.0;
/// Entries each cache holds before it starts over (upstream's LRUs hold 4,096; this also
/// counts the scheduler's unschedulable pods, whose events repeat for as long as they wait).
pub const REMEMBERED: usize = 10_000;
/// The prefix of an aggregated event's message.
const COMBINED: &str = "(combined from similar events): ";

/// What to do with an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Create this Event (the one given, or an aggregate of similar ones).
    Create(Value),
    /// The event repeats one filed as `name`: merge-patch it with `patch`. If it is gone
    /// (deleted, or expired), create `event`, the whole Event as it now stands, instead.
    Patch {
        namespace: String,
        name: String,
        patch: Value,
        event: Value,
    },
    /// Dropped by the spam filter.
    Skip,
}

/// One observed event, for the logger.
struct Observation {
    name: String,
    count: i64,
    first_timestamp: Value,
}

/// Similar events seen for one aggregate key.
struct Similar {
    messages: HashSet<String>,
    last: Timestamp,
}

/// A token bucket.
struct Bucket {
    tokens: f64,
    last: Timestamp,
}

/// The entries about one involved object, so that forgetting it is one removal instead of a
/// scan of every entry (the scheduler forgets each pod it binds).
#[derive(Default)]
struct Entries {
    similar: HashMap<String, Similar>,
    observed: HashMap<String, Observation>,
    buckets: HashMap<String, Bucket>,
}

impl Entries {
    fn is_empty(&self) -> bool {
        self.similar.is_empty() && self.observed.is_empty() && self.buckets.is_empty()
    }
}

/// How many entries each of the three caches holds across all objects.
#[derive(Default)]
struct Counts {
    similar: usize,
    observed: usize,
    buckets: usize,
}

#[derive(Default)]
struct Caches {
    /// By [`object_id`].
    objects: HashMap<String, Entries>,
    counts: Counts,
}

/// The process's correlator; see the module's documentation.
#[derive(Default)]
pub struct Correlator {
    caches: Mutex<Caches>,
}

/// The one correlator of this process.
pub fn correlator() -> &'static Correlator {
    static ONE: OnceLock<Correlator> = OnceLock::new();
    ONE.get_or_init(Correlator::default)
}

fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_default()
}

/// The object an event is about, as [`Correlator::forget`] names it.
fn object_id(namespace: &str, name: &str) -> String {
    format!("{namespace}\u{1}{name}")
}

/// The source and involved object of a core/v1 Event, joined with `rest`: the spam filter's
/// key (`getSpamKey`) without `rest`, the aggregator's and the logger's with it.
fn key(event: &Value, rest: &[&str]) -> String {
    let mut key = [
        text(event, &["source", "component"]),
        text(event, &["source", "host"]),
        text(event, &["involvedObject", "kind"]),
        text(event, &["involvedObject", "namespace"]),
        text(event, &["involvedObject", "name"]),
        text(event, &["involvedObject", "uid"]),
        text(event, &["involvedObject", "apiVersion"]),
    ]
    .join("\u{0}");
    for r in rest {
        key.push('\u{0}');
        key.push_str(r);
    }
    key
}

impl Correlator {
    /// Decides how `event` (a whole core/v1 Event, its namespace, name, `count: 1` and
    /// timestamps set) is filed at `now`, as upstream's `EventCorrelate` does: aggregated,
    /// then observed, then filtered.
    pub fn correlate(&self, mut event: Value, now: Timestamp) -> Correlated {
        let object = object_id(
            text(&event, &["involvedObject", "namespace"]),
            text(&event, &["involvedObject", "name"]),
        );
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        caches.bound();
        let Caches { objects, counts } = &mut *caches;
        let entries = objects.entry(object).or_default();
        let key = entries.aggregate(counts, &mut event, now);
        let decision = entries.observe(counts, event, key, now);
        if entries.spam(counts, &decision, now) {
            return Correlated::Skip;
        }
        decision
    }

    /// Forgets the entries about the object `namespace`/`name` (it is gone, or what its events
    /// reported is over), so that memory follows the live objects.
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(gone) = caches.objects.remove(&object_id(namespace, name)) {
            caches.counts.similar -= gone.similar.len();
            caches.counts.observed -= gone.observed.len();
            caches.counts.buckets -= gone.buckets.len();
        }
    }

    /// Forgets the Event filed as `name` (it could not be written), so that its next
    /// repeat is created rather than patched.
    pub fn forget_event(&self, namespace: &str, name: &str) {
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        let in_namespace = format!("{namespace}\u{1}");
        let Caches { objects, counts } = &mut *caches;
        for (_, entries) in objects
            .iter_mut()
            .filter(|(id, _)| id.starts_with(&in_namespace))
        {
            let before = entries.observed.len();
            entries.observed.retain(|_, o| o.name != name);
            counts.observed -= before - entries.observed.len();
        }
    }
}

impl Caches {
    /// Starts a cache over once it holds [`REMEMBERED`] entries, as upstream's LRUs forget;
    /// each start-over costs a pass over the objects, once per [`REMEMBERED`] insertions.
    fn bound(&mut self) {
        let full = |count: usize| count >= REMEMBERED;
        let (similar, observed, buckets) = (
            full(self.counts.similar),
            full(self.counts.observed),
            full(self.counts.buckets),
        );
        if !(similar || observed || buckets) {
            return;
        }
        for entries in self.objects.values_mut() {
            if similar {
                entries.similar.clear();
            }
            if observed {
                entries.observed.clear();
            }
            if buckets {
                entries.buckets.clear();
            }
        }
        self.objects.retain(|_, e| !e.is_empty());
        if similar {
            self.counts.similar = 0;
        }
        if observed {
            self.counts.observed = 0;
        }
        if buckets {
            self.counts.buckets = 0;
        }
    }
}

impl Entries {
    /// `EventAggregate`: the key the logger observes `event` under; an aggregate replaces
    /// `event` once its similar events are many.
    fn aggregate(&mut self, counts: &mut Counts, event: &mut Value, now: Timestamp) -> String {
        let aggregate_key = key(
            event,
            &[
                text(event, &["type"]),
                text(event, &["reason"]),
                text(event, &["reportingComponent"]),
                text(event, &["reportingInstance"]),
            ],
        );
        let message = text(event, &["message"]).to_owned();
        let similar = self
            .similar
            .entry(aggregate_key.clone())
            .or_insert_with(|| {
                counts.similar += 1;
                Similar {
                    messages: HashSet::new(),
                    last: now,
                }
            });
        if now.duration_since(similar.last).as_secs() > AGGREGATE_INTERVAL_SECS {
            similar.messages.clear();
        }
        similar.last = now;
        similar.messages.insert(message.clone());
        if similar.messages.len() < AGGREGATE_MAX_EVENTS {
            return key(
                event,
                &[
                    text(event, &["involvedObject", "fieldPath"]),
                    text(event, &["type"]),
                    text(event, &["reason"]),
                    &message,
                ],
            );
        }
        // Keep the set bounded: one out, as upstream's `PopAny`.
        if let Some(any) = similar.messages.iter().next().cloned() {
            similar.messages.remove(&any);
        }
        let time = format_time(now);
        let name = format!(
            "{}.{:x}",
            text(event, &["involvedObject", "name"]),
            now.as_nanosecond().max(0)
        );
        event["metadata"]["name"] = Value::from(name);
        event["message"] = Value::from(format!("{COMBINED}{message}"));
        event["count"] = Value::from(1);
        event["firstTimestamp"] = Value::from(time.as_str());
        event["lastTimestamp"] = Value::from(time);
        aggregate_key
    }

    /// `eventObserve`: a first sighting is created; a repeat patches the Event filed first.
    fn observe(
        &mut self,
        counts: &mut Counts,
        mut event: Value,
        key: String,
        now: Timestamp,
    ) -> Correlated {
        let namespace = text(&event, &["metadata", "namespace"]).to_owned();
        match self.observed.get_mut(&key) {
            Some(seen) => {
                seen.count += 1;
                let last = format_time(now);
                event["metadata"]["name"] = Value::from(seen.name.as_str());
                event["count"] = Value::from(seen.count);
                event["firstTimestamp"] = seen.first_timestamp.clone();
                event["lastTimestamp"] = Value::from(last.as_str());
                let patch = json!({
                    "count": seen.count,
                    "lastTimestamp": last,
                    "message": event["message"],
                });
                Correlated::Patch {
                    namespace,
                    name: seen.name.clone(),
                    patch,
                    event,
                }
            }
            None => {
                counts.observed += 1;
                self.observed.insert(
                    key,
                    Observation {
                        name: text(&event, &["metadata", "name"]).to_owned(),
                        count: event["count"].as_i64().unwrap_or(1),
                        first_timestamp: event["firstTimestamp"].clone(),
                    },
                );
                Correlated::Create(event)
            }
        }
    }

    /// `EventSourceObjectSpamFilter.Filter`: whether the event is dropped, its source and
    /// object having spent their tokens.
    fn spam(&mut self, counts: &mut Counts, decision: &Correlated, now: Timestamp) -> bool {
        let event = match decision {
            Correlated::Create(e) | Correlated::Patch { event: e, .. } => e,
            Correlated::Skip => return true,
        };
        let bucket = self.buckets.entry(key(event, &[])).or_insert_with(|| {
            counts.buckets += 1;
            Bucket {
                tokens: SPAM_BURST,
                last: now,
            }
        });
        let elapsed = now.duration_since(bucket.last).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed * SPAM_QPS).min(SPAM_BURST);
        bucket.last = now;
        if bucket.tokens < 1.0 {
            return true;
        }
        bucket.tokens -= 1.0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::time::SignedDuration;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn event(object: &str, reason: &str, message: &str, now: Timestamp) -> Value {
        let time = format_time(now);
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{object}.{:x}", now.as_nanosecond()), "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": object, "uid": "u", "apiVersion": "v1"},
            "reason": reason, "message": message, "type": "Warning",
            "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
            "firstTimestamp": time, "lastTimestamp": time, "count": 1,
        })
    }

    #[test]
    fn exact_repeats_are_counted_on_the_first_event() {
        let c = Correlator::default();
        let Correlated::Create(first) =
            c.correlate(event("p", "FailedScheduling", "m", at(0)), at(0))
        else {
            panic!("the first event is created");
        };
        for n in 2..=4 {
            let now = at(n * 10);
            match c.correlate(event("p", "FailedScheduling", "m", now), now) {
                Correlated::Patch { name, patch, .. } => {
                    assert_eq!(name, first["metadata"]["name"]);
                    assert_eq!(patch["count"], n);
                    assert_eq!(patch["lastTimestamp"], format_time(now));
                }
                other => panic!("expected a patch, got {other:?}"),
            }
        }
    }

    #[test]
    fn similar_events_are_aggregated_after_ten() {
        let c = Correlator::default();
        let mut created = 0;
        let mut aggregate = None;
        for n in 0..20 {
            let now = at(n);
            match c.correlate(event("p", "R", &format!("message {n}"), now), now) {
                Correlated::Create(e) => {
                    created += 1;
                    if n == 9 {
                        aggregate = Some(e);
                    }
                }
                Correlated::Patch { patch, .. } => {
                    assert!(n > 9, "patched at {n}");
                    assert_eq!(
                        patch["message"],
                        format!("(combined from similar events): message {n}")
                    );
                    assert_eq!(patch["count"], n - 8);
                }
                Correlated::Skip => panic!("skipped at {n}"),
            }
        }
        // Nine distinct events, then the tenth starts one aggregate that counts the rest.
        assert_eq!(created, 10);
        assert_eq!(
            aggregate.unwrap()["message"],
            "(combined from similar events): message 9"
        );
        // Ten minutes of quiet: distinct messages are filed one by one again.
        let later = at(20).checked_add(SignedDuration::from_secs(601)).unwrap();
        assert!(matches!(
            c.correlate(event("p", "R", "message 0", later), later),
            Correlated::Patch { .. }
        ));
        assert!(matches!(
            c.correlate(event("p", "R", "fresh", later), later),
            Correlated::Create(_)
        ));
    }

    #[test]
    fn the_spam_filter_allows_a_burst_of_25_then_one_per_five_minutes() {
        let c = Correlator::default();
        let mut passed = 0;
        for n in 0..40 {
            // A different reason each time: no aggregation, no repeats, only the bucket.
            if c.correlate(event("p", &format!("R{n}"), "m", at(0)), at(0)) != Correlated::Skip {
                passed += 1;
            }
        }
        assert_eq!(passed, 25);
        assert_eq!(
            c.correlate(event("p", "late", "m", at(299)), at(299)),
            Correlated::Skip
        );
        assert_ne!(
            c.correlate(event("p", "later", "m", at(301)), at(301)),
            Correlated::Skip
        );
        // Another object has its own bucket.
        assert_ne!(
            c.correlate(event("q", "R0", "m", at(0)), at(0)),
            Correlated::Skip
        );
    }

    /// Objects with entries, then the similar, observed and bucket entries counted.
    fn held(c: &Correlator) -> (usize, usize, usize, usize) {
        let caches = c.caches.lock().unwrap();
        let Counts {
            similar,
            observed,
            buckets,
        } = caches.counts;
        (caches.objects.len(), similar, observed, buckets)
    }

    #[test]
    fn forgetting_an_object_keeps_the_others_and_the_counts_true() {
        let c = Correlator::default();
        c.correlate(event("p", "R", "m", at(0)), at(0));
        let Correlated::Create(q) = c.correlate(event("q", "R", "m", at(0)), at(0)) else {
            panic!("the first event is created");
        };
        c.forget("ns", "p");
        c.forget("ns", "missing");
        assert_eq!(held(&c), (1, 1, 1, 1));
        assert!(matches!(
            c.correlate(event("q", "R", "m", at(1)), at(1)),
            Correlated::Patch { .. }
        ));
        c.forget_event("ns", "another");
        assert_eq!(c.caches.lock().unwrap().counts.observed, 1);
        c.forget_event("ns", q["metadata"]["name"].as_str().unwrap());
        assert_eq!(c.caches.lock().unwrap().counts.observed, 0);
    }

    #[test]
    fn each_cache_starts_over_past_its_bound() {
        let c = Correlator::default();
        for n in 0..REMEMBERED {
            c.correlate(event(&format!("p{n}"), "R", "m", at(0)), at(0));
        }
        // The next event finds every cache full: they start over, holding only its entries.
        c.correlate(event("last", "R", "m", at(0)), at(0));
        assert_eq!(held(&c), (1, 1, 1, 1));
    }

    #[test]
    fn forgetting_an_object_starts_its_events_afresh() {
        let c = Correlator::default();
        c.correlate(event("p", "R", "m", at(0)), at(0));
        c.forget("ns", "p");
        assert!(matches!(
            c.correlate(event("p", "R", "m", at(1)), at(1)),
            Correlated::Create(_)
        ));
    }
}
