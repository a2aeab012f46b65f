//! `resourceVersion`, `resourceVersionMatch`, `continue` and `sendInitialEvents`: which state a
//! GET, LIST or WATCH reads, as kube-apiserver decides it (the table of
//! https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list,
//! `kubernetes/apiserver pkg/storage/cacher/delegator.go` `ShouldDelegateList`, `cacher.go`
//! `computeListLimit`, `etcd3/store.go` `GetList`), with upstream's refusals: the 422s of
//! `kubernetes/apimachinery pkg/apis/meta/internalversion/validation/validation.go`
//! `ValidateListOptions` and the 400s of the storage layer.

use kgc_meta::gojson::go_quote;
use kgc_meta::{FieldError, Status};
use kgc_store::{Continue, ReadFrom};

use crate::request::Query;

const EXACT: &str = "Exact";
const NOT_OLDER_THAN: &str = "NotOlderThan";

/// The parameters, as sent (an empty value counts as absent, as Go's zero values do).
struct Params<'a> {
    resource_version: &'a str,
    resource_version_match: &'a str,
    continue_token: &'a str,
    /// `sendInitialEvents` is a `*bool` upstream: present (either value) or not.
    send_initial_events: Option<bool>,
}

impl<'a> Params<'a> {
    fn of(query: &'a Query) -> Self {
        Self {
            resource_version: query.get("resourceVersion").unwrap_or(""),
            resource_version_match: query.get("resourceVersionMatch").unwrap_or(""),
            continue_token: query.get("continue").unwrap_or(""),
            send_initial_events: query
                .get("sendInitialEvents")
                .map(|_| query.flag("sendInitialEvents")),
        }
    }

    /// `resourceVersion` as a number (`""` and `"0"` are 0), or why not: upstream's
    /// `APIObjectVersioner.ParseResourceVersion` field error.
    fn revision(&self) -> Result<u64, String> {
        parse_resource_version(self.resource_version)
    }
}

/// Go's `strconv.ParseUint(v, 10, 64)` on a resourceVersion, failing with the field error
/// upstream's versioner returns (`resourceVersion: Invalid value: "x": strconv.ParseUint: …`).
fn parse_resource_version(v: &str) -> Result<u64, String> {
    if v.is_empty() {
        return Ok(0);
    }
    let mut n: u64 = 0;
    for c in v.bytes() {
        let problem = if !c.is_ascii_digit() {
            "invalid syntax"
        } else if let Some(next) = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(c - b'0')))
        {
            n = next;
            continue;
        } else {
            "value out of range"
        };
        return Err(FieldError::invalid(
            "resourceVersion",
            v,
            format!("strconv.ParseUint: parsing {}: {problem}", go_quote(v)),
        )
        .to_string());
    }
    Ok(n)
}

/// A malformed resourceVersion on a GET or WATCH. Upstream answers these with a 500 carrying the
/// field error (the cacher returns the versioner's error unconverted: kubernetes/kubernetes
/// issue 139485); kgc answers 400, the code of the same mistake on a LIST, with upstream's text.
fn bad_resource_version(error: String) -> Status {
    Status::bad_request(error)
}

/// `ListOptions.meta.k8s.io "" is invalid: …`, as the handlers wrap `ValidateListOptions`.
fn invalid(errors: &[FieldError]) -> Result<(), Status> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid("meta.k8s.io", "ListOptions", "", errors))
    }
}

/// How a LIST is served.
#[derive(Debug, PartialEq, Eq)]
pub struct ListRead {
    pub read: ReadFrom,
    /// `resourceVersion=0` is served whole from the cache upstream: `limit` is ignored.
    pub ignore_limit: bool,
}

/// Resolves the parameters of a LIST of a collection in `namespace` (`None`: across namespaces
/// or cluster-scoped); `limited`: the request has a positive `limit`.
pub fn list(query: &Query, namespace: Option<&str>, limited: bool) -> Result<ListRead, Status> {
    let p = Params::of(query);
    let mut errors = Vec::new();
    let field = "resourceVersionMatch";
    if !p.resource_version_match.is_empty() {
        if p.resource_version.is_empty() {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !p.continue_token.is_empty() {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if ![EXACT, NOT_OLDER_THAN].contains(&p.resource_version_match) {
            errors.push(FieldError::not_supported(
                field,
                p.resource_version_match,
                &[EXACT, NOT_OLDER_THAN, ""],
            ));
        }
        if p.resource_version_match == EXACT && p.resource_version == "0" {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if p.send_initial_events.is_some() {
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    invalid(&errors)?;
    let rv = p
        .revision()
        .map_err(|e| Status::bad_request(format!("invalid resource version: {e}")))?;
    if !p.continue_token.is_empty() {
        let token = Continue::decode(p.continue_token, namespace)?;
        if !matches!(p.resource_version, "" | "0") {
            return Err(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        return Ok(ListRead {
            read: ReadFrom::Continue(token),
            ignore_limit: false,
        });
    }
    let exact = p.resource_version_match == EXACT
        // The legacy form: a first page asked for at a revision is served at exactly it.
        || (p.resource_version_match.is_empty() && limited && rv > 0);
    let read = match rv {
        0 => ReadFrom::Latest,
        rv if exact => ReadFrom::Exact(rv),
        rv => ReadFrom::NotOlderThan(rv),
    };
    Ok(ListRead {
        read,
        ignore_limit: p.resource_version == "0",
    })
}

/// Resolves the `resourceVersion` of a GET: the revision the store must have reached first.
pub fn get(query: &Query) -> Result<Option<u64>, Status> {
    let rv = Params::of(query).revision().map_err(bad_resource_version)?;
    Ok((rv > 0).then_some(rv))
}

/// Where a WATCH starts.
#[derive(Debug, PartialEq, Eq)]
pub enum WatchFrom {
    /// The current state as ADDED events first, then the changes after it.
    Initial,
    /// The changes after the current revision only (`sendInitialEvents=false` with
    /// `resourceVersion` unset or `0`).
    Now,
    /// The changes after this revision.
    After(u64),
}

/// How a WATCH is served.
#[derive(Debug, PartialEq, Eq)]
pub struct WatchStart {
    pub from: WatchFrom,
    /// `sendInitialEvents=true`: the initial state ends with the `k8s.io/initial-events-end`
    /// bookmark.
    pub send_initial_events: bool,
    /// The revision the initial state must not be older than.
    pub wait_for: Option<u64>,
}

/// Resolves the parameters of a WATCH.
pub fn watch(query: &Query) -> Result<WatchStart, Status> {
    let p = Params::of(query);
    let mut errors = Vec::new();
    let field = "resourceVersionMatch";
    let m = p.resource_version_match;
    if p.send_initial_events.is_some() && m != NOT_OLDER_THAN {
        errors.push(FieldError::forbidden(
            field,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !m.is_empty() {
        if p.send_initial_events.is_none() {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != NOT_OLDER_THAN {
            errors.push(FieldError::not_supported(field, m, &[NOT_OLDER_THAN]));
        }
        if !p.continue_token.is_empty() {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    invalid(&errors)?;
    let rv = p.revision().map_err(bad_resource_version)?;
    let send_initial_events = p.send_initial_events == Some(true);
    let from = match p.send_initial_events {
        Some(true) => WatchFrom::Initial,
        _ if rv > 0 => WatchFrom::After(rv),
        Some(false) => WatchFrom::Now,
        None => WatchFrom::Initial,
    };
    Ok(WatchStart {
        from,
        send_initial_events,
        wait_for: (send_initial_events && rv > 0).then_some(rv),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(Some(s))
    }

    #[test]
    fn resource_versions_parse_as_go_parses_them() {
        assert_eq!(parse_resource_version(""), Ok(0));
        assert_eq!(parse_resource_version("0"), Ok(0));
        assert_eq!(parse_resource_version("0042"), Ok(42));
        assert_eq!(
            parse_resource_version("garbage").unwrap_err(),
            r#"resourceVersion: Invalid value: "garbage": strconv.ParseUint: parsing "garbage": invalid syntax"#
        );
        assert_eq!(
            parse_resource_version("-1").unwrap_err(),
            r#"resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax"#
        );
        assert_eq!(
            parse_resource_version("18446744073709551616").unwrap_err(),
            r#"resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range"#
        );
        assert_eq!(parse_resource_version("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn list_reads_follow_the_table() {
        let read = |s: &str| list(&q(s), Some("ns"), s.contains("limit=")).unwrap();
        assert_eq!(read("").read, ReadFrom::Latest);
        assert_eq!(read("limit=5").read, ReadFrom::Latest);
        let any = read("resourceVersion=0&limit=500");
        assert_eq!((any.read, any.ignore_limit), (ReadFrom::Latest, true));
        assert_eq!(read("resourceVersion=7").read, ReadFrom::NotOlderThan(7));
        assert_eq!(read("resourceVersion=7&limit=2").read, ReadFrom::Exact(7));
        assert_eq!(
            read("resourceVersion=7&resourceVersionMatch=NotOlderThan&limit=2").read,
            ReadFrom::NotOlderThan(7)
        );
        assert_eq!(
            read("resourceVersion=7&resourceVersionMatch=Exact").read,
            ReadFrom::Exact(7)
        );
    }

    #[test]
    fn invalid_list_options_are_upstreams_422s() {
        let err = |s: &str| list(&q(s), None, false).unwrap_err();
        let e = err("resourceVersionMatch=Exact");
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        assert_eq!(
            err("resourceVersion=0&resourceVersionMatch=Exact").message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
        );
        assert_eq!(
            err("resourceVersion=1&resourceVersionMatch=Newest").message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""
        );
        assert_eq!(
            err("resourceVersionMatch=NotOlderThan&continue=x").message,
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided]"
        );
        assert_eq!(
            err("sendInitialEvents=true").message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
        );
        let e = err("resourceVersion=garbage");
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            r#"invalid resource version: resourceVersion: Invalid value: "garbage": strconv.ParseUint: parsing "garbage": invalid syntax"#
        );
    }

    #[test]
    fn a_continued_list_takes_no_resource_version() {
        let token = Continue::decode(
            &Continue {
                revision: Some(9),
                start: ("ns".into(), "a\0".into()),
            }
            .encode(Some("ns")),
            Some("ns"),
        )
        .unwrap();
        let t = token.encode(Some("ns"));
        let read = list(
            &q(&format!("continue={t}&resourceVersion=0")),
            Some("ns"),
            false,
        )
        .unwrap();
        assert_eq!(read.read, ReadFrom::Continue(token));
        let e = list(
            &q(&format!("continue={t}&resourceVersion=3")),
            Some("ns"),
            false,
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "specifying resource version is not allowed when using continue"
            )
        );
    }

    #[test]
    fn watch_parameters_follow_the_table() {
        let start = |s: &str| watch(&q(s)).unwrap();
        assert_eq!(start("").from, WatchFrom::Initial);
        assert_eq!(start("resourceVersion=0").from, WatchFrom::Initial);
        assert_eq!(start("resourceVersion=5").from, WatchFrom::After(5));
        assert_eq!(
            start("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=5"),
            WatchStart {
                from: WatchFrom::Initial,
                send_initial_events: true,
                wait_for: Some(5)
            }
        );
        assert_eq!(
            start("sendInitialEvents=false&resourceVersionMatch=NotOlderThan").from,
            WatchFrom::Now
        );

        let err = |s: &str| watch(&q(s)).unwrap_err().message;
        assert_eq!(
            err("resourceVersionMatch=NotOlderThan"),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        );
        assert_eq!(
            err("sendInitialEvents=true"),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        assert_eq!(
            err("sendInitialEvents=true&resourceVersionMatch=Exact"),
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
        );
        let e = watch(&q("resourceVersion=garbage")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                r#"resourceVersion: Invalid value: "garbage": strconv.ParseUint: parsing "garbage": invalid syntax"#
            )
        );
    }
}
