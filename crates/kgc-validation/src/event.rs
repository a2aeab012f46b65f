//! core/v1 Event and events.k8s.io/v1 Event, following kubernetes/kubernetes
//! `pkg/apis/core/validation/events.go` (`ValidateEventCreate`, `ValidateEventUpdate`,
//! `legacyValidateEvent`, `validateV1EventSeries`).
//!
//! Both API versions are validated as the one internal `core.Event` (the object as stored, in
//! core/v1's names: the store passes the group the request came through), so errors name the
//! internal fields (`involvedObject.namespace`, `message`, `source`, `count`) even for
//! events.k8s.io requests, exactly as kube-apiserver reports them. Requests through core/v1
//! get only the legacy rules; events.k8s.io/v1 adds the strict ones.

use kgc_meta::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use crate::field::{Errors, IMMUTABLE, go_struct, typed};
use crate::json::{Json, same};

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// The internal `core.Event` fields validation reads, whichever API version carried them.
struct Event<'a> {
    namespace: &'a str,
    involved_object: &'a Value,
    reason: &'a str,
    message: &'a str,
    source: &'a Value,
    first_timestamp: &'a Value,
    last_timestamp: &'a Value,
    count: i64,
    event_type: &'a str,
    event_time: &'a Value,
    series: &'a Value,
    action: &'a str,
    related: &'a Value,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
}

impl<'a> Event<'a> {
    /// Read from the object as stored (core/v1 names, which are the internal type's): an
    /// events.k8s.io/v1 Event has been renamed on its way in.
    fn from_json(obj: &'a Value) -> Self {
        Self {
            namespace: obj.at("metadata").str_of("namespace"),
            involved_object: obj.at("involvedObject"),
            reason: obj.str_of("reason"),
            message: obj.str_of("message"),
            source: obj.at("source"),
            first_timestamp: obj.at("firstTimestamp"),
            last_timestamp: obj.at("lastTimestamp"),
            count: obj.int_of("count"),
            event_type: obj.str_of("type"),
            event_time: obj.at("eventTime"),
            series: obj.at("series"),
            action: obj.str_of("action"),
            related: obj.at("related"),
            reporting_controller: obj.str_of("reportingComponent"),
            reporting_instance: obj.str_of("reportingInstance"),
        }
    }

    fn has_source(&self) -> bool {
        !self.source.str_of("component").is_empty() || !self.source.str_of("host").is_empty()
    }
}

/// An Event create or update (`ValidateEventCreate`, `ValidateEventUpdate`); `events_api` is
/// true for events.k8s.io requests (upstream's `requestVersion`), `obj` and `old` as stored.
pub(crate) fn event(obj: &Value, old: Option<&Value>, events_api: bool, errs: &mut Errors) {
    let e = Event::from_json(obj);
    legacy(&e, events_api, errs);
    if !events_api {
        return;
    }
    match old {
        None => strict_create(&e, errs),
        Some(old) => strict_update(&e, &Event::from_json(old), errs),
    }
}

/// `legacyValidateEvent`.
fn legacy(e: &Event<'_>, events_api: bool, errs: &mut Errors) {
    let involved_ns = e.involved_object.str_of("namespace");
    let controller_field = if events_api {
        "reportingController"
    } else {
        "source"
    };
    if e.event_time.is_null() {
        let ok = if involved_ns.is_empty() {
            matches!(e.namespace, "" | "default")
        } else {
            e.namespace == involved_ns
        };
        if !ok {
            errs.invalid(
                "involvedObject.namespace",
                involved_ns,
                "does not match event.namespace",
            );
        }
    } else {
        if involved_ns.is_empty() && !matches!(e.namespace, "default" | "kube-system") {
            errs.invalid(
                "involvedObject.namespace",
                involved_ns,
                "does not match event.namespace",
            );
        }
        if e.reporting_controller.is_empty() {
            errs.required(controller_field, "");
        }
        errs.invalid_each(
            controller_field,
            e.reporting_controller,
            is_qualified_name(e.reporting_controller),
        );
        for (path, v, limit) in [
            (
                "reportingInstance",
                e.reporting_instance,
                REPORTING_INSTANCE_LIMIT,
            ),
            ("action", e.action, ACTION_LIMIT),
            ("reason", e.reason, REASON_LIMIT),
        ] {
            if v.is_empty() {
                errs.required(path, "");
            }
            if v.len() > limit {
                errs.invalid(path, "", format!("can have at most {limit} characters"));
            }
        }
        if e.message.len() > NOTE_LIMIT {
            errs.invalid(
                "message",
                "",
                format!("can have at most {NOTE_LIMIT} characters"),
            );
        }
    }
    errs.invalid_each("namespace", e.namespace, is_dns1123_subdomain(e.namespace));
}

/// `validateV1EventSeries`.
fn series(e: &Event<'_>, errs: &mut Errors) {
    if e.series.is_null() {
        return;
    }
    if e.series.int_of("count") < 2 {
        errs.invalid("series.count", "", "should be at least 2");
    }
    if e.series.at("lastObservedTime").is_null() {
        errs.required("series.lastObservedTime", "");
    }
}

/// The strict create rules of events.k8s.io/v1.
fn strict_create(e: &Event<'_>, errs: &mut Errors) {
    series(e, errs);
    if e.event_time.is_null() {
        errs.required("eventTime", "");
    }
    if !matches!(e.event_type, "Normal" | "Warning") {
        errs.invalid("type", "", format!("has invalid value: {}", e.event_type));
    }
    if !e.first_timestamp.is_null() {
        errs.invalid("firstTimestamp", "", "needs to be unset");
    }
    if !e.last_timestamp.is_null() {
        errs.invalid("lastTimestamp", "", "needs to be unset");
    }
    if e.count != 0 {
        errs.invalid("count", "", "needs to be unset");
    }
    if e.has_source() {
        errs.invalid("source", "", "needs to be unset");
    }
}

/// The strict update rules of events.k8s.io/v1: only the series may change. (Upstream checks
/// `reason` twice, so a changed reason is reported twice.)
fn strict_update(e: &Event<'_>, old: &Event<'_>, errs: &mut Errors) {
    let fixed = |errs: &mut Errors, path: &str, new: &str, was: &str| {
        if new != was {
            errs.invalid(path, new, IMMUTABLE);
        }
    };
    if !same(e.series, old.series) {
        series(e, errs);
    }
    errs.immutable("involvedObject", e.involved_object, old.involved_object);
    fixed(errs, "reason", e.reason, old.reason);
    fixed(errs, "message", e.message, old.message);
    if !same(e.source, old.source) {
        let source = go_struct(&[
            ("Component", typed(e.source.str_of("component"))),
            ("Host", typed(e.source.str_of("host"))),
        ]);
        errs.invalid_raw("source", source, IMMUTABLE);
    }
    errs.immutable("firstTimestamp", e.first_timestamp, old.first_timestamp);
    errs.immutable("lastTimestamp", e.last_timestamp, old.last_timestamp);
    if e.count != old.count {
        errs.invalid_int("count", e.count, IMMUTABLE);
    }
    fixed(errs, "reason", e.reason, old.reason);
    fixed(errs, "type", e.event_type, old.event_type);
    if micros(e.event_time) != micros(old.event_time) {
        errs.invalid_json("eventTime", e.event_time, IMMUTABLE);
    }
    fixed(errs, "action", e.action, old.action);
    errs.immutable("related", e.related, old.related);
    fixed(
        errs,
        "reportingController",
        e.reporting_controller,
        old.reporting_controller,
    );
    fixed(
        errs,
        "reportingInstance",
        e.reporting_instance,
        old.reporting_instance,
    );
}

/// A `MicroTime` rounded to microseconds (upstream tolerates sub-microsecond changes).
fn micros(v: &Value) -> Option<i128> {
    let t: jiff::Timestamp = v.as_str()?.parse().ok()?;
    let ns = t.as_nanosecond();
    Some((ns + 500).div_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(obj: &Value, old: Option<&Value>, events_api: bool) -> Vec<String> {
        crate::testutil::messages(|e| event(obj, old, events_api, e))
    }

    /// `TestValidateEventForCoreV1Events`.
    #[test]
    fn test_validate_event_for_core_v1_events() {
        let legacy = json!({"metadata": {"name": "e", "namespace": "ns"}, "involvedObject": {"namespace": "ns"}, "reason": "r", "message": "m"});
        assert!(run(&legacy, None, false).is_empty());
        assert_eq!(
            run(
                &json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "other"}}),
                None,
                false
            ),
            vec![
                "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
            ]
        );
        // An event with eventTime must say who reported it.
        assert_eq!(
            run(
                &json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}, "eventTime": "2024-01-01T00:00:00.000000Z"}),
                None,
                false
            ),
            vec![
                "source: Required value",
                "source: Invalid value: \"\": name part must be non-empty",
                "source: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
    }

    /// `TestValidateEventForNewV1Events`.
    #[test]
    fn test_validate_event_for_new_v1_events() {
        // As stored: events.k8s.io/v1's fields renamed to core/v1's.
        let good = json!({"metadata": {"name": "e", "namespace": "ns"}, "involvedObject": {"namespace": "ns"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingComponent": "k8s.io/kubelet", "reportingInstance": "node-1",
            "action": "Pulling", "reason": "Pulled", "type": "Normal"});
        assert!(run(&good, None, true).is_empty());
        let mut bad = good.clone();
        bad["type"] = json!("Info");
        bad["count"] = json!(3);
        bad["series"] = json!({"count": 1});
        assert_eq!(
            run(&bad, None, true),
            vec![
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "count: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut changed = good.clone();
        changed["message"] = json!("new note");
        changed["series"] = json!({"count": 2, "lastObservedTime": "2024-01-01T00:01:00.000000Z"});
        assert_eq!(
            run(&changed, Some(&good), true),
            vec!["message: Invalid value: \"new note\": field is immutable"]
        );
    }
}
