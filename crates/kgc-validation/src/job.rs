//! batch/v1 Job, following kubernetes/kubernetes `pkg/apis/batch/validation/validation.go`
//! (`ValidateJob`, `validateGeneratedSelector`, `ValidateJobSpec`, `validateJobSpec`,
//! `validatePodFailurePolicy`, `validateSuccessPolicy`, `ValidateJobSpecUpdate`,
//! `validatePodTemplateUpdate`, `validateCompletions`, `validateJobStatus`,
//! `ValidateJobStatusUpdate`, `validateIndexesFormat`) with the options
//! `pkg/registry/batch/job/strategy.go` passes under 1.32's default gates (`JobManagedBy`,
//! `JobSuccessPolicy`, `ElasticIndexedJob`, `JobMutableNodeSchedulingDirectives` on).
//!
//! The selector rules assume the registry's `PrepareForCreate` ran first (it generates
//! `spec.selector` and the `controller-uid` / `job-name` template labels unless
//! `manualSelector` is true).

use std::collections::BTreeSet;

use kgc_meta::gojson::go_json;
use kgc_meta::validation::{is_dns1123_label, is_qualified_name};
use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, same};
use crate::labels::{Selector, render_labels, render_selector, validate_required_selector};
use crate::pod::validate_template;

const MAX_PARALLELISM_INDEXED: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_HIGH_COMPLETIONS: i64 = 10_000;

/// A Job create, update or `status` update.
pub(crate) fn job(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    match op {
        Op::Create => {
            generated_selector(obj, errs);
            job_spec(obj.at("spec"), &Path::new("spec"), errs);
            let spec = obj.at("spec");
            if spec.str_of("completionMode") == "Indexed"
                && let Some(c) = spec.opt_int("completions").filter(|c| *c > 0)
            {
                let name = obj.at("metadata").str_of("name");
                let host = format!("{name}-{}", c - 1);
                if !is_dns1123_label(&host).is_empty() {
                    errs.invalid(
                        "metadata.name",
                        name,
                        format!("will not able to create pod with invalid DNS label: {host}"),
                    );
                }
            }
        }
        Op::Subresource("status", old) => status_update(obj, old, errs),
        Op::Subresource(..) => {}
        Op::Update(old) => spec_update(obj.at("spec"), old.at("spec"), old, errs),
    }
}

/// `validateGeneratedSelector`: a generated selector must select the generated labels.
fn generated_selector(obj: &Value, errs: &mut Errors) {
    let spec = obj.at("spec");
    if spec.opt_bool("manualSelector") == Some(true) || spec.at("selector").is_null() {
        return;
    }
    let meta = obj.at("metadata");
    let (uid, name) = (meta.str_of("uid"), meta.str_of("name"));
    if uid.is_empty() {
        errs.required("metadata.uid", "");
    }
    let template_meta = spec.at("template").at("metadata");
    for (label, want) in [
        ("controller-uid", uid),
        ("job-name", name),
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
    ] {
        let labels = Path::new("spec.template.metadata.labels");
        let p = labels.key(label);
        match template_meta
            .at("labels")
            .get(label)
            .and_then(Value::as_str)
        {
            None => errs.required(p, want),
            Some(v) if v != want => errs.invalid_raw(
                p,
                render_labels(template_meta, "labels"),
                format!("must be '{want}'"),
            ),
            Some(_) => {}
        }
    }
    let expected = serde_json::json!({"labels": {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }});
    if let Some(sel) = Selector::from_json(spec.at("selector"))
        && !sel.matches(&expected, "labels")
    {
        errs.invalid_raw(
            "spec.selector",
            render_selector(spec.at("selector")),
            "`selector` not auto-generated",
        );
    }
}

/// `ValidateJobSpec`: the shared spec rules plus the selector.
fn job_spec(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    validate_job_spec(spec, path, errs);
    let sel = spec.at("selector");
    validate_required_selector(sel, &path.child("selector"), errs);
    if let Some(selector) = Selector::from_json(sel)
        && !selector.matches(spec.at("template").at("metadata"), "labels")
    {
        errs.invalid_raw(
            path.child("template").child("metadata").child("labels"),
            render_labels(spec.at("template").at("metadata"), "labels"),
            "`selector` does not match template `labels`",
        );
    }
}

/// `validateJobSpec`, which CronJob job templates share.
pub(crate) fn validate_job_spec(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(n) = spec.opt_int(field) {
            errs.nonnegative(path.child(field), n);
        }
    }
    let max_failed = spec.opt_int("maxFailedIndexes");
    let per_index = spec.opt_int("backoffLimitPerIndex");
    let completions = spec.opt_int("completions");
    let parallelism = spec.opt_int("parallelism");
    if max_failed.is_some() && per_index.is_none() {
        errs.required(
            path.child("backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        );
    }
    if let Some(m) = spec.opt_str("managedBy") {
        managed_by(m, &path.child("managedBy"), errs);
    }
    let mode = spec.opt_str("completionMode");
    if let Some(mode) = mode {
        if !matches!(mode, "NonIndexed" | "Indexed") {
            errs.not_supported_typed(
                path.child("completionMode"),
                mode,
                &["NonIndexed", "Indexed"],
            );
        }
        if mode == "Indexed" {
            indexed_limits(completions, parallelism, max_failed, per_index, path, errs);
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(n) = per_index {
            errs.invalid_int(
                path.child("backoffLimitPerIndex"),
                n,
                "requires indexed completion mode",
            );
        }
        if let Some(n) = max_failed {
            errs.invalid_int(
                path.child("maxFailedIndexes"),
                n,
                "requires indexed completion mode",
            );
        }
    }
    if spec.has("podFailurePolicy") {
        pod_failure_policy(spec, &path.child("podFailurePolicy"), errs);
    }
    if spec.has("successPolicy") {
        if mode != Some("Indexed") {
            errs.invalid_json(
                path.child("successPolicy"),
                spec.at("successPolicy"),
                "requires indexed completion mode",
            );
        } else {
            success_policy(spec, &path.child("successPolicy"), errs);
        }
    }
    if let Some(policy) = spec.opt_str("podReplacementPolicy") {
        let p = path.child("podReplacementPolicy");
        if spec.has("podFailurePolicy") {
            if policy != "Failed" {
                errs.not_supported_typed(p, policy, &["Failed"]);
            }
        } else if !matches!(policy, "Failed" | "TerminatingOrFailed") {
            errs.not_supported_typed(p, policy, &["Failed", "TerminatingOrFailed"]);
        }
    }
    let template_path = path.child("template");
    validate_template(spec.at("template"), &template_path, errs);
    let restart = spec.at("template").at("spec").str_of("restartPolicy");
    let template_spec = template_path.child("spec");
    let rp = template_spec.child("restartPolicy");
    match restart {
        "Always" | "" => errs.required(rp, "valid values: \"OnFailure\", \"Never\""),
        "OnFailure" | "Never" => {
            if spec.has("podFailurePolicy") && restart != "Never" {
                errs.invalid_typed(
                    rp,
                    restart,
                    "only \"Never\" is supported when podFailurePolicy is specified",
                );
            }
        }
        other => errs.not_supported_typed(rp, other, &["OnFailure", "Never"]),
    }
}

/// `IsDomainPrefixedPath` plus the length limit of `managedBy`.
fn managed_by(m: &str, path: &Path<'_>, errs: &mut Errors) {
    match m.split_once('/') {
        Some((host, rest)) => {
            let host_errs = kgc_meta::validation::is_dns1123_subdomain(host);
            errs.invalid_each(path, host, host_errs);
            let valid_path = rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b));
            if !valid_path {
                errs.invalid(
                    path,
                    rest,
                    "Invalid path: must match the regex [A-Za-z0-9/\\-._~%!$&'()*+,;=:]+",
                );
            }
        }
        None => errs.invalid(
            path,
            m,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ),
    }
    if m.len() > 63 {
        errs.too_long(path, 63);
    }
}

fn indexed_limits(
    completions: Option<i64>,
    parallelism: Option<i64>,
    max_failed: Option<i64>,
    per_index: Option<i64>,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    if completions.is_none() {
        errs.required(path.child("completions"), "when completion mode is Indexed");
    }
    if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_INDEXED) {
        errs.invalid_int(
            path.child("parallelism"),
            p,
            format!("must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed"),
        );
    }
    if let (Some(c), Some(m)) = (completions, max_failed)
        && m > c
    {
        errs.invalid_int(
            path.child("maxFailedIndexes"),
            m,
            "must be less than or equal to completions",
        );
    }
    if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
        errs.invalid_int(
            path.child("maxFailedIndexes"),
            m,
            format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
        );
    }
    if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
        if max_failed.is_none() {
            errs.required(
                path.child("maxFailedIndexes"),
                format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            );
        }
        let high = format!(
            "when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        );
        if let Some(p) = parallelism.filter(|p| *p > PARALLELISM_LIMIT_HIGH_COMPLETIONS) {
            errs.invalid_int(
                path.child("parallelism"),
                p,
                format!(
                    "must be less than or equal to {PARALLELISM_LIMIT_HIGH_COMPLETIONS} {high}"
                ),
            );
        }
        if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_HIGH_COMPLETIONS) {
            errs.invalid_int(
                path.child("maxFailedIndexes"),
                m,
                format!(
                    "must be less than or equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {high}"
                ),
            );
        }
    }
}

/// `validatePodFailurePolicy` and its rules.
fn pod_failure_policy(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    let rules = spec.at("podFailurePolicy").list("rules");
    let rules_path = path.child("rules");
    if rules.len() > 20 {
        errs.too_many(rules_path, rules.len(), 20);
    }
    let pod = spec.at("template").at("spec");
    let containers: BTreeSet<&str> = pod
        .list("containers")
        .iter()
        .chain(pod.list("initContainers"))
        .map(|c| c.str_of("name"))
        .collect();
    const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
    for (i, rule) in rules.iter().enumerate() {
        let rp = rules_path.index(i);
        let ap = rp.child("action");
        match rule.str_of("action") {
            "" => errs.required(
                ap,
                "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
            ),
            "FailIndex" if !spec.has("backoffLimitPerIndex") => {
                errs.invalid_typed(
                    ap,
                    "FailIndex",
                    "requires the backoffLimitPerIndex to be set",
                );
            }
            a if !ACTIONS.contains(&a) => errs.not_supported_typed(ap, a, &ACTIONS),
            _ => {}
        }
        let on_exit = rule.at("onExitCodes");
        let on_conditions = rule.list("onPodConditions");
        if !on_exit.is_null() {
            on_exit_codes(on_exit, &containers, &rp.child("onExitCodes"), errs);
        }
        if !on_conditions.is_empty() {
            let cp = rp.child("onPodConditions");
            if on_conditions.len() > 20 {
                errs.too_many(cp, on_conditions.len(), 20);
            }
            for (j, pattern) in on_conditions.iter().enumerate() {
                let pp = cp.index(j);
                let t = pattern.str_of("type");
                errs.invalid_each(pp.child("type"), t, is_qualified_name(t));
                match pattern.str_of("status") {
                    "" => errs.required(
                        pp.child("status"),
                        "valid values: [\"False\" \"True\" \"Unknown\"]",
                    ),
                    "True" | "False" | "Unknown" => {}
                    s => errs.not_supported_typed(
                        pp.child("status"),
                        s,
                        &["False", "True", "Unknown"],
                    ),
                }
            }
        }
        match (on_exit.is_null(), on_conditions.is_empty()) {
            (false, false) => errs.invalid_omit(
                rp,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ),
            (true, true) => errs.invalid_omit(
                rp,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ),
            _ => {}
        }
    }
}

fn on_exit_codes(req: &Value, containers: &BTreeSet<&str>, path: &Path<'_>, errs: &mut Errors) {
    let op = req.str_of("operator");
    match op {
        "" => errs.required(path.child("operator"), "valid values: [\"In\" \"NotIn\"]"),
        "In" | "NotIn" => {}
        other => errs.not_supported_typed(path.child("operator"), other, &["In", "NotIn"]),
    }
    if let Some(name) = req.opt_str("containerName")
        && !containers.contains(name)
    {
        errs.invalid(
            path.child("containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        );
    }
    let vp = path.child("values");
    let values: Vec<i64> = req
        .list("values")
        .iter()
        .map(|v| v.as_i64().unwrap_or(0))
        .collect();
    if values.is_empty() {
        errs.invalid_json(vp, req.at("values"), "at least one value is required");
    } else if values.len() > 255 {
        errs.too_many(vp, values.len(), 255);
    }
    let mut seen = BTreeSet::new();
    for (j, v) in values.iter().enumerate() {
        let p = vp.index(j);
        if op == "In" && *v == 0 {
            errs.invalid_int(p, 0, "must not be 0 for the In operator");
        }
        if !seen.insert(*v) {
            errs.duplicate_raw(p, v.to_string());
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        errs.invalid_json(vp, req.at("values"), "must be ordered");
    }
}

/// `validateSuccessPolicy` and its rules.
fn success_policy(spec: &Value, path: &Path<'_>, errs: &mut Errors) {
    let rules = spec.at("successPolicy").list("rules");
    let rules_path = path.child("rules");
    if rules.is_empty() {
        errs.required(
            rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        );
    }
    if rules.len() > 20 {
        errs.too_many(rules_path, rules.len(), 20);
    }
    let completions = spec.int_of("completions");
    for (i, rule) in rules.iter().enumerate() {
        let rp = rules_path.index(i);
        let (count, indexes) = (
            rule.opt_int("succeededCount"),
            rule.opt_str("succeededIndexes"),
        );
        if count.is_none() && indexes.is_none() {
            errs.required(
                rp,
                "at least one of succeededCount or succeededIndexes must be specified",
            );
        }
        let mut total = 0;
        if let Some(ix) = indexes {
            let ip = rp.child("succeededIndexes");
            if ix.len() > 64 * 1024 {
                errs.too_long(ip, 64 * 1024);
            }
            match indexes_format(ix, completions) {
                Ok(t) => total = t,
                Err(e) => errs.invalid(ip, ix, format!("error parsing succeededIndexes: {e}")),
            }
        }
        if let Some(c) = count {
            let cp = rp.child("succeededCount");
            errs.nonnegative(cp, c);
            if c > completions {
                errs.invalid_int(
                    cp,
                    c,
                    format!("must be less than or equal to {completions} (the number of specified completions)"),
                );
            }
            if indexes.is_some() && c > total {
                errs.invalid_int(
                    cp,
                    c,
                    format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                );
            }
        }
    }
}

/// `parseIndexInterval`: `x` or `x-y`, below `completions`, increasing.
fn index_interval(s: &str, completions: i64) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            kgc_meta::gojson::go_quote(s)
        ));
    }
    let parse = |p: &str| -> Result<i64, String> {
        let n = p.parse::<i64>().map_err(|_| {
            format!(
                "cannot convert string to integer for index: {}",
                kgc_meta::gojson::go_quote(p)
            )
        })?;
        if n >= completions {
            return Err(format!(
                "too large index: {}",
                kgc_meta::gojson::go_quote(p)
            ));
        }
        Ok(n)
    };
    let x = parse(parts[0])?;
    match parts.get(1) {
        Some(y) => {
            let y = parse(y)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
        None => Ok((x, x)),
    }
}

/// `validateIndexesFormat`: the number of indexes in a `1,3-5` list.
fn indexes_format(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in s.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(l) = last
            && l >= x
        {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// `validateFailedIndexesNotOverlapCompleted`.
fn overlap(completed: &str, failed: &str, completions: i64) -> Option<String> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let ok = |s: &str| -> Vec<(i64, i64)> {
        s.split(',')
            .filter_map(|i| index_interval(i, completions).ok())
            .collect()
    };
    let (c, f) = (ok(completed), ok(failed));
    let (mut ci, mut fi) = (0, 0);
    while ci < c.len() && fi < f.len() {
        let ((cx, cy), (fx, fy)) = (c[ci], f[fi]);
        if cx <= fy && fx <= cy {
            return Some(format!(
                "failedIndexes and completedIndexes overlap at index: {}",
                cx.max(fx)
            ));
        }
        if cx <= fx {
            ci += 1;
        } else {
            fi += 1;
        }
    }
    None
}

/// `ValidateJobSpecUpdate` with `validatePodTemplateUpdate` and `validateCompletions`.
fn spec_update(spec: &Value, old: &Value, old_job: &Value, errs: &mut Errors) {
    job_spec(spec, &Path::new("spec"), errs);
    let (c, oc) = (spec.at("completions"), old.at("completions"));
    if spec.str_of("completionMode") == "Indexed" {
        if !same(c, oc)
            && let Some(n) = c.as_i64()
            && Some(n) != spec.opt_int("parallelism")
        {
            errs.invalid_int(
                "spec.completions",
                n,
                "can only be modified in tandem with spec.parallelism",
            );
        }
    } else {
        errs.immutable("spec.completions", c, oc);
    }
    let (sel, old_sel) = (spec.at("selector"), old.at("selector"));
    if !same(sel, old_sel) {
        errs.invalid_raw(
            "spec.selector",
            render_selector(sel),
            crate::field::IMMUTABLE,
        );
    }
    // A suspended Job that never started may change its scheduling directives.
    let mutable_scheduling =
        spec.opt_bool("suspend") == Some(true) && old_job.at("status").at("startTime").is_null();
    let mut old_template = old.at("template").clone();
    if mutable_scheduling {
        let new_template = spec.at("template");
        for (outer, field) in [
            ("spec", "nodeSelector"),
            ("spec", "tolerations"),
            ("spec", "schedulingGates"),
            ("metadata", "annotations"),
            ("metadata", "labels"),
        ] {
            if let Some(o) = old_template.get_mut(outer).and_then(Value::as_object_mut) {
                match new_template.at(outer).get(field) {
                    Some(v) => o.insert(field.to_owned(), v.clone()),
                    None => o.remove(field),
                };
            }
        }
        let node_affinity = new_template
            .at("spec")
            .at("affinity")
            .at("nodeAffinity")
            .clone();
        if let Some(spec) = old_template.get_mut("spec").and_then(Value::as_object_mut) {
            let affinity = spec
                .entry("affinity")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(a) = affinity.as_object_mut() {
                a.insert("nodeAffinity".to_owned(), node_affinity);
            }
        }
    }
    errs.immutable("spec.template", spec.at("template"), &old_template);
    for field in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.immutable(
            Path::new("spec").child(field),
            spec.at(field),
            old.at(field),
        );
    }
}

fn condition_true(job: &Value, kind: &str) -> bool {
    job.at("status")
        .list("conditions")
        .iter()
        .any(|c| c.str_of("type") == kind && c.str_of("status") == "True")
}

/// The terminal-state facts the status rules compare between old and new.
struct Facts {
    complete: bool,
    failed: bool,
    failure_target: bool,
    success_criteria_met: bool,
}

impl Facts {
    fn of(job: &Value) -> Self {
        Self {
            complete: condition_true(job, "Complete"),
            failed: condition_true(job, "Failed"),
            failure_target: condition_true(job, "FailureTarget"),
            success_criteria_met: condition_true(job, "SuccessCriteriaMet"),
        }
    }

    fn finished(&self) -> bool {
        self.complete || self.failed
    }
}

/// `ValidateJobStatusUpdate` with the options the 1.32 strategy derives: each rule applies only
/// when the fields it reads changed, so a status write unrelated to an old violation passes.
fn status_update(job: &Value, old: &Value, errs: &mut Errors) {
    let (s, os) = (job.at("status"), old.at("status"));
    let spec = job.at("spec");
    let (new, was) = (Facts::of(job), Facts::of(old));
    let changed = |f: &str| !same(s.at(f), os.at(f));
    let indexed = spec.str_of("completionMode") == "Indexed";
    let finished_changed = new.finished() != was.finished();
    let complete_changed = new.complete != was.complete;
    let failed_changed = new.failed != was.failed;
    let target_changed = new.failure_target != was.failure_target;
    let criteria_changed = new.success_criteria_met != was.success_criteria_met;
    let completion_time_changed = changed("completionTime");
    let start_time_changed = changed("startTime");

    for f in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(n) = s.opt_int(f) {
            errs.nonnegative(Path::new("status").child(f), n);
        }
    }
    let uncounted = s.at("uncountedTerminatedPods");
    let mut seen = BTreeSet::new();
    let uncounted_path = Path::new("status.uncountedTerminatedPods");
    for kind in ["succeeded", "failed"] {
        let kind_path = uncounted_path.child(kind);
        for (i, uid) in uncounted.list(kind).iter().enumerate() {
            let uid = uid.as_str().unwrap_or_default();
            let p = kind_path.index(i);
            if uid.is_empty() {
                errs.invalid_typed(p, uid, "must not be empty");
            } else if !seen.insert(uid) {
                errs.duplicate_raw(p, typed(uid));
            }
        }
    }
    let conditions = "status.conditions";
    if (complete_changed || failed_changed) && new.complete && new.failed {
        errs.invalid_omit(
            conditions,
            "cannot set Complete=True and Failed=true conditions",
        );
    }
    if (complete_changed || target_changed) && new.complete && new.failure_target {
        errs.invalid_omit(
            conditions,
            "cannot set Complete=True and FailureTarget=true conditions",
        );
    }
    let completion_time = s.at("completionTime");
    if (complete_changed || completion_time_changed) && !completion_time.is_null() && !new.complete
    {
        errs.invalid_json(
            "status.completionTime",
            completion_time,
            "cannot set completionTime when there is no Complete=True condition",
        );
    }
    if (complete_changed || completion_time_changed) && completion_time.is_null() && new.complete {
        errs.required(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        );
    }
    let start_time = s.at("startTime");
    if (start_time_changed || completion_time_changed)
        && let (Some(st), Some(ct)) = (start_time.as_str(), completion_time.as_str())
        && timestamp(ct) < timestamp(st)
    {
        errs.invalid_json(
            "status.completionTime",
            completion_time,
            "completionTime cannot be set before startTime",
        );
    }
    let failed_indexes_changed = changed("failedIndexes");
    let completed_indexes_changed = changed("completedIndexes");
    if (failed_changed || failed_indexes_changed) && new.failed && !new.failure_target {
        errs.invalid_omit(
            conditions,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        );
    }
    if (complete_changed || criteria_changed) && new.complete && !new.success_criteria_met {
        errs.invalid_omit(
            conditions,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        );
    }
    let active = s.int_of("active");
    if (finished_changed || changed("active")) && active > 0 && new.finished() {
        errs.invalid_int(
            "status.active",
            active,
            "active>0 is invalid for finished job",
        );
    }
    let suspended_empty =
        spec.opt_bool("suspend") == Some(true) && spec.opt_int("completions") == Some(0);
    if (finished_changed || start_time_changed)
        && !suspended_empty
        && start_time.is_null()
        && new.finished()
    {
        errs.required("status.startTime", "startTime is required for finished job");
    }
    if (finished_changed || changed("uncountedTerminatedPods"))
        && new.finished()
        && uncounted.list("failed").len() + uncounted.list("succeeded").len() > 0
    {
        errs.invalid_raw(
            "status.uncountedTerminatedPods",
            go_struct(&[
                ("Succeeded", go_json(uncounted.at("succeeded"))),
                ("Failed", go_json(uncounted.at("failed"))),
            ]),
            "uncountedTerminatedPods needs to be empty for finished job",
        );
    }
    let completions = spec.opt_int("completions");
    let completed = s.str_of("completedIndexes");
    if completed_indexes_changed
        && let Some(c) = completions
        && let Err(e) = indexes_format(completed, c)
    {
        errs.invalid(
            "status.completedIndexes",
            completed,
            format!("error parsing completedIndexes: {e}"),
        );
    }
    let failed_indexes = s.opt_str("failedIndexes");
    if failed_indexes_changed
        && spec.has("backoffLimitPerIndex")
        && let (Some(c), Some(f)) = (completions, failed_indexes)
        && let Err(e) = indexes_format(f, c)
    {
        errs.invalid_typed(
            "status.failedIndexes",
            f,
            format!("error parsing failedIndexes: {e}"),
        );
    }
    if completed_indexes_changed && !completed.is_empty() && !indexed {
        errs.invalid(
            "status.completedIndexes",
            completed,
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        );
    }
    if failed_indexes_changed
        && !spec.has("backoffLimitPerIndex")
        && let Some(f) = failed_indexes
    {
        errs.invalid(
            "status.failedIndexes",
            f,
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        );
    }
    if (failed_indexes_changed || completed_indexes_changed)
        && let (Some(c), Some(f)) = (completions, failed_indexes)
        && let Some(e) = overlap(completed, f, c)
    {
        errs.invalid("status.failedIndexes", f, e);
    }
    let terminating = s.opt_int("terminating");
    if (finished_changed || changed("terminating"))
        && let Some(t) = terminating.filter(|t| *t > 0)
        && new.finished()
    {
        errs.invalid_int(
            "status.terminating",
            t,
            "terminating>0 is invalid for finished job",
        );
    }
    if (changed("ready") || changed("active"))
        && let Some(r) = s.opt_int("ready").filter(|r| *r > active)
    {
        errs.invalid_int("status.ready", r, "cannot set more ready pods than active");
    }
    if new.success_criteria_met && new.failed {
        errs.invalid_omit(
            conditions,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        );
    }
    if new.success_criteria_met && new.failure_target {
        errs.invalid_omit(
            conditions,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        );
    }
    if spec.has("successPolicy") && !new.success_criteria_met && new.complete {
        errs.invalid_omit(
            conditions,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        );
    }
    for (kind, was_true, is_true) in [
        ("Failed", was.failed, new.failed),
        ("Complete", was.complete, new.complete),
        ("FailureTarget", was.failure_target, new.failure_target),
    ] {
        if was_true && !is_true {
            errs.invalid_omit(
                conditions,
                format!("cannot disable the terminal {kind}=True condition"),
            );
        }
    }
    let (failed, old_failed) = (s.int_of("failed"), os.int_of("failed"));
    if failed < old_failed {
        errs.invalid_int(
            "status.failed",
            failed,
            "cannot decrease the failed counter",
        );
    }
    let scalable = indexed && spec.opt_int("completions") == spec.opt_int("parallelism");
    let (succeeded, old_succeeded) = (s.int_of("succeeded"), os.int_of("succeeded"));
    if !scalable && succeeded < old_succeeded {
        errs.invalid_int(
            "status.succeeded",
            succeeded,
            "cannot decrease the succeeded counter",
        );
    }
    let old_completion = os.at("completionTime");
    if !completion_time.is_null()
        && !old_completion.is_null()
        && !same(completion_time, old_completion)
    {
        errs.invalid_json(
            "status.completionTime",
            completion_time,
            "completionTime cannot be mutated",
        );
    }
    if start_time_changed && !os.at("startTime").is_null() && spec.opt_bool("suspend") != Some(true)
    {
        errs.required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        );
    }
    if was.success_criteria_met && !new.success_criteria_met {
        errs.invalid_omit(
            conditions,
            "cannot disable the SuccessCriteriaMet=True condition",
        );
    }
    if was.complete && !was.success_criteria_met && new.success_criteria_met {
        errs.invalid_omit(
            conditions,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        );
    }
}

/// An RFC 3339 timestamp as comparable seconds (unparsable ones compare as the epoch).
fn timestamp(s: &str) -> i64 {
    s.parse::<jiff::Timestamp>().map_or(0, |t| t.as_second())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::set;
    use serde_json::json;

    pub(crate) fn valid() -> Value {
        json!({"metadata": {"name": "pi", "namespace": "ns", "uid": "u1"}, "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": {"metadata": {"labels": {
                "batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
                "controller-uid": "u1", "job-name": "pi"}},
                "spec": {"containers": [{"name": "c", "image": "perl", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
                    "restartPolicy": "Never", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}},
        }})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(job, obj, old, sub)
    }

    /// `TestValidateJob`.
    #[test]
    fn test_validate_job() {
        assert!(run(&valid(), None, None).is_empty());
        assert_eq!(
            run(
                &set(
                    set(
                        set(valid(), "/spec/parallelism", json!(-1)),
                        "/spec/completions",
                        json!(-1)
                    ),
                    "/spec/backoffLimit",
                    json!(-1)
                ),
                None,
                None
            ),
            vec![
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.completions: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/template/spec/restartPolicy",
                    json!("Always")
                ),
                None,
                None
            ),
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/completionMode", json!("Parallel")),
                None,
                None
            ),
            vec![
                "spec.completionMode: Unsupported value: \"Parallel\": supported values: \"NonIndexed\", \"Indexed\""
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/template/metadata/labels/job-name",
                    json!("other")
                ),
                None,
                None
            ),
            vec![
                "spec.template.metadata.labels[job-name]: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u1\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"u1\",\"job-name\":\"other\"}: must be 'pi'",
            ]
        );
        let manual = set(
            set(valid(), "/spec/manualSelector", json!(true)),
            "/spec/selector",
            json!({"matchLabels": {"a": "b"}}),
        );
        assert_eq!(
            run(&manual, None, None),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u1\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"u1\",\"job-name\":\"pi\"}: `selector` does not match template `labels`"
            ]
        );
        let indexed = set(
            set(valid(), "/spec/completionMode", json!("Indexed")),
            "/spec/completions",
            Value::Null,
        );
        assert_eq!(
            run(&indexed, None, None),
            vec!["spec.completions: Required value: when completion mode is Indexed"]
        );
        let pfp = set(
            valid(),
            "/spec/podFailurePolicy",
            json!({"rules": [
                {"action": "Explode", "onExitCodes": {"operator": "In", "values": [3, 0, 1, 1]}},
                {"action": "Ignore"},
            ]}),
        );
        assert_eq!(
            run(&pfp, None, None),
            vec![
                "spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 1",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,0,1,1]: must be ordered",
                "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ]
        );
    }

    /// `TestValidateJobUpdate`.
    #[test]
    fn test_validate_job_update() {
        let old = valid();
        assert!(
            run(
                &set(valid(), "/spec/parallelism", json!(3)),
                Some(&old),
                None
            )
            .is_empty()
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/completions", json!(2)),
                Some(&old),
                None
            ),
            vec!["spec.completions: Invalid value: 2: field is immutable"]
        );
        let image = set(
            valid(),
            "/spec/template/spec/containers/0/image",
            json!("perl:2"),
        );
        let got = run(&image, Some(&old), None);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].starts_with("spec.template: Invalid value: {"),
            "{got:?}"
        );
        assert!(got[0].ends_with("}: field is immutable"), "{got:?}");
        // A suspended Job that has not started may change its node selector.
        let suspended = set(valid(), "/spec/suspend", json!(true));
        let moved = set(
            suspended.clone(),
            "/spec/template/spec/nodeSelector",
            json!({"zone": "a"}),
        );
        assert!(run(&moved, Some(&suspended), None).is_empty());
        let indexed = set(
            set(
                set(valid(), "/spec/completionMode", json!("Indexed")),
                "/spec/completions",
                json!(4),
            ),
            "/spec/parallelism",
            json!(4),
        );
        assert!(
            run(
                &set(
                    set(indexed.clone(), "/spec/completions", json!(6)),
                    "/spec/parallelism",
                    json!(6)
                ),
                Some(&indexed),
                None
            )
            .is_empty()
        );
        assert_eq!(
            run(
                &set(indexed.clone(), "/spec/completions", json!(6)),
                Some(&indexed),
                None
            ),
            vec![
                "spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism"
            ]
        );
    }

    /// `TestValidateJobUpdateStatus` (the JobManagedBy-era rules).
    #[test]
    fn test_validate_job_update_status() {
        let old = set(
            valid(),
            "/status",
            json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"}),
        );
        let done = set(
            valid(),
            "/status",
            json!({
            "succeeded": 1, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
        );
        assert!(run(&done, Some(&old), Some("status")).is_empty());
        let bare = set(
            valid(),
            "/status",
            json!({"active": 1, "startTime": "2024-01-01T00:00:00Z",
            "conditions": [{"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(
            run(&bare, Some(&old), Some("status")),
            vec![
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
            ]
        );
        let undo = set(
            valid(),
            "/status",
            json!({"succeeded": 0, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}),
        );
        assert_eq!(
            run(&undo, Some(&done), Some("status")),
            vec![
                "status.completionTime: Invalid value: \"2024-01-01T00:01:00Z\": cannot set completionTime when there is no Complete=True condition",
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
            ]
        );
    }

    #[test]
    fn index_lists_parse_as_upstream() {
        assert_eq!(indexes_format("1,3-5,7", 10), Ok(5));
        assert_eq!(
            indexes_format("3,1", 10),
            Err("non-increasing order, previous: 3, current: 1".to_owned())
        );
        assert_eq!(
            indexes_format("1-2-3", 10).map_err(|e| e.contains("at most two parts")),
            Err(true)
        );
        assert_eq!(
            indexes_format("12", 10),
            Err("too large index: \"12\"".to_owned())
        );
        assert_eq!(
            overlap("1-3", "0,2", 10),
            Some("failedIndexes and completedIndexes overlap at index: 2".to_owned())
        );
    }
}
