//! The LimitRanger admission plugin (kubernetes/kubernetes
//! `plugin/pkg/admission/limitranger/admission.go`).
//!
//! A namespace's LimitRanges give its containers `default` limits and `defaultRequest` requests
//! (what a container leaves unset is filled in on pod creation, and the pod is annotated
//! `kubernetes.io/limit-ranger` with what was set), and bound what its containers, its pods and
//! its PersistentVolumeClaims may ask for (`min`, `max`, `maxLimitRequestRatio`). A pod is
//! checked when it is created only (its containers' resources cannot change afterwards); a claim
//! on create and update. A refusal is upstream's 403, worded word for word
//! (`pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2`).
//!
//! It runs before the kind's validation, so a default it fills in is validated as if the user
//! had written it, and before ResourceQuota, which charges what it filled in.

use std::collections::BTreeMap;

use kgc_meta::quantity::Quantity;
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::{Map, Value};

use crate::request::RequestInfo;
use crate::serviceaccount_admission::forbidden;

/// The annotation naming what the plugin set (upstream `limitRangerAnnotation`).
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// What the plugin looks at: pods and claims, not their subresources.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Pod,
    Claim,
}

fn target(info: &ResourceInfo, req: &RequestInfo) -> Option<Target> {
    if !info.group.is_empty() || info.custom || req.subresource.is_some() {
        return None;
    }
    match info.plural.as_str() {
        "pods" => Some(Target::Pod),
        "persistentvolumeclaims" => Some(Target::Claim),
        _ => None,
    }
}

impl crate::ApiServer {
    /// The plugin on the creation of `obj`: a pod gets its defaults, then pods and claims are
    /// checked against every LimitRange of the namespace.
    pub(crate) fn admit_limit_ranger_create(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &mut Value,
    ) -> Result<(), Status> {
        let Some(target) = target(info, req) else {
            return Ok(());
        };
        let ranges = self.limit_ranges(req)?;
        if ranges.is_empty() {
            return Ok(());
        }
        if target == Target::Pod {
            kgc_meta::defaults::apply("", "Pod", obj);
            for range in &ranges {
                set_defaults(range, obj);
            }
        }
        check(&info.group_resource(), target, &ranges, obj)
    }

    /// The plugin on an update of `obj`: only claims are checked (a pod's containers cannot
    /// change their resources).
    pub(crate) fn validate_limit_ranger_update(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &Value,
    ) -> Result<(), Status> {
        if target(info, req) != Some(Target::Claim) {
            return Ok(());
        }
        let ranges = self.limit_ranges(req)?;
        check(&info.group_resource(), Target::Claim, &ranges, obj)
    }

    /// The request namespace's LimitRanges, by name.
    fn limit_ranges(&self, req: &RequestInfo) -> Result<Vec<Value>, Status> {
        let opts = kgc_store::ListOptions {
            namespace: req.namespace.clone(),
            ..Default::default()
        };
        let list = self
            .store
            .list(&GroupResource::new("", "limitranges"), &opts)
            .map_err(|e| Status::internal(format!("listing LimitRanges: {e}")))?;
        Ok(list.items.iter().map(|o| o.value()).collect())
    }
}

/// Runs the checks of each range in turn: the first range refusing refuses the object.
fn check(gr: &GroupResource, target: Target, ranges: &[Value], obj: &Value) -> Result<(), Status> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    for range in ranges {
        let errs = match target {
            Target::Pod => pod_errors(range, obj),
            Target::Claim => claim_errors(range, obj),
        };
        if let Some(why) = aggregate(errs) {
            return Err(forbidden(gr, name, why));
        }
    }
    Ok(())
}

/// `utilerrors.NewAggregate(...).Error()` of the messages, when there are any.
fn aggregate(errs: Vec<String>) -> Option<String> {
    (!errs.is_empty()).then(|| kgc_meta::validation::join_aggregate(errs))
}

/// The range's items of one type.
fn items<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    range["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |i| i["type"].as_str() == Some(kind))
}

/// A resource list as `(name, quantity)` pairs in name order; what does not parse is skipped
/// (typed decoding has refused it already).
fn list(v: &Value) -> Vec<(&str, Quantity)> {
    let mut out: Vec<(&str, Quantity)> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Quantity::from_json(q).ok().map(|q| (k.as_str(), q)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// `defaultContainerResourceRequirements` and `mergePodResourceRequirements`: each container and
/// init container gets the range's Container `default` limits and `defaultRequest` requests it
/// lacks; the annotation says what was set.
fn set_defaults(range: &Value, pod: &mut Value) {
    let mut limits = Map::new();
    let mut requests = Map::new();
    for item in items(range, "Container") {
        for (field, into) in [("default", &mut limits), ("defaultRequest", &mut requests)] {
            if let Some(m) = item[field].as_object() {
                into.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (field, prefix) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod["spec"][field].as_array_mut() else {
            continue;
        };
        for c in containers.iter_mut().filter(|c| c.is_object()) {
            let cname = c["name"].as_str().unwrap_or_default().to_owned();
            let set_requests = merge(c, "requests", &requests);
            let set_limits = merge(c, "limits", &limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {prefix} {cname}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!(
                    "{} limit for {prefix} {cname}",
                    set_limits.join(", ")
                ));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let meta = &mut pod["metadata"];
    if !meta["annotations"].is_object() {
        meta["annotations"] = Value::Object(Map::new());
    }
    meta["annotations"][ANNOTATION] =
        Value::from(format!("LimitRanger plugin set: {}", notes.join("; ")));
}

/// Fills the keys of `defaults` that the container's `resources.<field>` lacks; returns them,
/// sorted.
fn merge(container: &mut Value, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    if defaults.is_empty() {
        return Vec::new();
    }
    if !container["resources"].is_object() {
        container["resources"] = Value::Object(Map::new());
    }
    let into = &mut container["resources"][field];
    if !into.is_object() {
        *into = Value::Object(Map::new());
    }
    let Some(m) = into.as_object_mut() else {
        return Vec::new();
    };
    let mut set: Vec<String> = defaults
        .keys()
        .filter(|k| !m.contains_key(*k))
        .cloned()
        .collect();
    for k in &set {
        m.insert(k.clone(), defaults[k].clone());
    }
    set.sort();
    set
}

/// `PodValidateLimitFunc`: every container and init container against the Container items,
/// the pod's totals against the Pod items.
fn pod_errors(range: &Value, pod: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let spec = &pod["spec"];
    let containers = |field: &str| spec[field].as_array().cloned().unwrap_or_default();
    for item in range["spec"]["limits"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("Container") => {
                for c in containers("containers")
                    .iter()
                    .chain(containers("initContainers").iter())
                {
                    let requests = list(&c["resources"]["requests"]);
                    let limits = list(&c["resources"]["limits"]);
                    bounds(item, "Container", &requests, &limits, &mut errs);
                }
            }
            Some("Pod") => {
                let (requests, limits) = (pod_total(spec, "requests"), pod_total(spec, "limits"));
                bounds(item, "Pod", &borrow(&requests), &borrow(&limits), &mut errs);
            }
            _ => {}
        }
    }
    errs
}

/// A list of owned names as the borrowed pairs the checks take.
fn borrow(list: &[(String, Quantity)]) -> Vec<(&str, Quantity)> {
    list.iter().map(|(n, q)| (n.as_str(), q.clone())).collect()
}

/// `PersistentVolumeClaimValidateLimitFunc`: the claim's requests against `min` and `max` (its
/// `limits` are not the user's input).
fn claim_errors(range: &Value, claim: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let requests = list(&claim["spec"]["resources"]["requests"]);
    for item in items(range, "PersistentVolumeClaim") {
        for (name, min) in list(&item["min"]) {
            errs.extend(min_error(
                "PersistentVolumeClaim",
                name,
                &min,
                &requests,
                &[],
            ));
        }
        for (name, max) in list(&item["max"]) {
            let req = find(&requests, name);
            let what = "PersistentVolumeClaim";
            match req {
                None => errs.push(format!(
                    "maximum {name} usage per {what} is {max}.  No request is specified"
                )),
                Some(r) if exceeds(r, &max) => errs.push(format!(
                    "maximum {name} usage per {what} is {max}, but request is {r}"
                )),
                Some(_) => {}
            }
        }
    }
    errs
}

fn find<'a>(list: &'a [(&str, Quantity)], name: &str) -> Option<&'a Quantity> {
    list.iter().find(|(n, _)| *n == name).map(|(_, q)| q)
}

/// The `min`, `max` and `maxLimitRequestRatio` of one item against observed requests and
/// limits (`minConstraint`, `maxConstraint`, `limitRequestRatioConstraint`).
fn bounds(
    item: &Value,
    what: &str,
    requests: &[(&str, Quantity)],
    limits: &[(&str, Quantity)],
    errs: &mut Vec<String>,
) {
    for (name, min) in list(&item["min"]) {
        errs.extend(min_error(what, name, &min, requests, limits));
    }
    for (name, max) in list(&item["max"]) {
        let (req, lim) = (find(requests, name), find(limits, name));
        match lim {
            None => errs.push(format!(
                "maximum {name} usage per {what} is {max}.  No limit is specified"
            )),
            Some(l) if exceeds(l, &max) => errs.push(format!(
                "maximum {name} usage per {what} is {max}, but limit is {l}"
            )),
            Some(_) => match req {
                Some(r) if exceeds(r, &max) => errs.push(format!(
                    "maximum {name} usage per {what} is {max}, but request is {r}"
                )),
                _ => {}
            },
        }
    }
    for (name, ratio) in list(&item["maxLimitRequestRatio"]) {
        errs.extend(ratio_error(what, name, &ratio, requests, limits));
    }
}

fn min_error(
    what: &str,
    name: &str,
    min: &Quantity,
    requests: &[(&str, Quantity)],
    limits: &[(&str, Quantity)],
) -> Option<String> {
    let Some(r) = find(requests, name) else {
        return Some(format!(
            "minimum {name} usage per {what} is {min}.  No request is specified"
        ));
    };
    if exceeds(min, r) {
        return Some(format!(
            "minimum {name} usage per {what} is {min}, but request is {r}"
        ));
    }
    match find(limits, name) {
        Some(l) if exceeds(min, l) => Some(format!(
            "minimum {name} usage per {what} is {min}, but limit is {l}"
        )),
        _ => None,
    }
}

fn ratio_error(
    what: &str,
    name: &str,
    ratio: &Quantity,
    requests: &[(&str, Quantity)],
    limits: &[(&str, Quantity)],
) -> Option<String> {
    let (req, lim) = (find(requests, name), find(limits, name));
    let (r, l) = compared(req, lim, ratio);
    if req.is_none() || r == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {what} is {ratio}, but no request is specified or request is 0"
        ));
    }
    if lim.is_none() || l == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {what} is {ratio}, but no limit is specified or limit is 0"
        ));
    }
    let shown = l as f64 / r as f64;
    let (observed, allowed) = match ratio.milli_value() {
        Some(m) => (shown * 1000.0, m as f64),
        None => (shown, ratio.value().unwrap_or(i64::MAX) as f64),
    };
    (observed > allowed).then(|| {
        format!(
            "{name} max limit to request ratio per {what} is {ratio}, but provided ratio is {shown:.6}"
        )
    })
}

/// `requestLimitEnforcedValues`: the request and limit in thousandths when every value fits,
/// else in units (rounded up, as Go's `Value`).
fn compared(req: Option<&Quantity>, lim: Option<&Quantity>, enforced: &Quantity) -> (i64, i64) {
    let milli = |q: Option<&Quantity>| q.map_or(Some(0), Quantity::milli_value);
    match (milli(req), milli(lim), enforced.milli_value()) {
        (Some(r), Some(l), Some(_)) => (r, l),
        _ => {
            let unit = |q: Option<&Quantity>| q.map_or(0, |q| q.value().unwrap_or(i64::MAX));
            (unit(req), unit(lim))
        }
    }
}

/// `observed > enforced` as upstream compares them (thousandths where they fit).
fn exceeds(observed: &Quantity, enforced: &Quantity) -> bool {
    match (observed.milli_value(), enforced.milli_value()) {
        (Some(o), Some(e)) => o > e,
        _ => observed.value().unwrap_or(i64::MAX) > enforced.value().unwrap_or(i64::MAX),
    }
}

/// A pod's total of `field` (`requests` or `limits`), as the plugin's `podRequests` and
/// `podLimits` compute it: the regular containers and sidecars summed, raised to what any
/// regular init container needs beside the sidecars started before it.
fn pod_total(spec: &Value, field: &str) -> Vec<(String, Quantity)> {
    let mut sum = Totals::default();
    let mut sidecars = Totals::default();
    let mut init_max = Totals::default();
    for c in spec["containers"].as_array().into_iter().flatten() {
        sum.add(&c["resources"][field]);
    }
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        if c["restartPolicy"].as_str() == Some("Always") {
            sum.add(&c["resources"][field]);
            sidecars.add(&c["resources"][field]);
            init_max.max(&sidecars);
        } else {
            let mut one = sidecars.clone();
            one.add(&c["resources"][field]);
            init_max.max(&one);
        }
    }
    sum.max(&init_max);
    sum.into_list()
}

/// Resource totals in thousandths, remembering whether each was written in binary units (so a
/// sum of `Mi` prints in `Mi`, as Go's `Quantity.Add` keeps the first operand's format).
#[derive(Clone, Default)]
struct Totals(BTreeMap<String, (i128, bool)>);

impl Totals {
    fn add(&mut self, list: &Value) {
        for (name, q) in list.as_object().into_iter().flatten() {
            let Ok(parsed) = Quantity::from_json(q) else {
                continue;
            };
            let milli = i128::from(parsed.milli_value().unwrap_or(i64::MAX));
            let binary = q.as_str().is_some_and(|s| s.ends_with('i'));
            let e = self.0.entry(name.clone()).or_insert((0, binary));
            e.0 = e.0.saturating_add(milli);
        }
    }

    fn max(&mut self, other: &Totals) {
        for (name, &(v, binary)) in &other.0 {
            let e = self.0.entry(name.clone()).or_insert((v, binary));
            if v > e.0 {
                *e = (v, binary);
            }
        }
    }

    fn into_list(self) -> Vec<(String, Quantity)> {
        self.0
            .into_iter()
            .filter_map(|(name, (milli, binary))| {
                let q = Quantity::parse(&render(milli, binary)).ok()?;
                Some((name, q))
            })
            .collect()
    }
}

/// A total as a quantity string: in the largest binary unit dividing it when its parts were
/// binary, else in thousandths (which the quantity prints canonically).
fn render(milli: i128, binary: bool) -> String {
    if binary && milli % 1000 == 0 {
        let bytes = milli / 1000;
        for (suffix, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            let unit = 1i128 << shift;
            if bytes != 0 && bytes % unit == 0 {
                return format!("{}{suffix}", bytes / unit);
            }
        }
        return bytes.to_string();
    }
    format!("{milli}m")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(limits: Value) -> Value {
        json!({"spec": {"limits": limits}})
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn defaults_fill_what_containers_lack_and_annotate_it() {
        let r = range(
            json!([{"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
            "defaultRequest": {"cpu": "100m"}}]),
        );
        let mut p = pod(
            json!([{"name": "nginx", "image": "nginx", "resources": {"limits": {"memory": "64Mi"}}}]),
        );
        p["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox"}]);
        set_defaults(&r, &mut p);
        assert_eq!(
            p["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "100m"}})
        );
        assert_eq!(
            p["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container nginx; cpu limit for container nginx; \
             cpu request for init container init; cpu, memory limit for init container init"
        );
    }

    #[test]
    fn container_bounds_are_worded_as_upstream() {
        let r =
            range(json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "10Mi"}}]));
        let p = pod(
            json!([{"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"memory": "20Mi"}}}]),
        );
        assert_eq!(
            pod_errors(&r, &p),
            ["maximum cpu usage per Container is 1, but limit is 2"]
        );
        let p = pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1"}}}]));
        assert_eq!(
            aggregate(pod_errors(&r, &p)).unwrap(),
            "minimum memory usage per Container is 10Mi.  No request is specified"
        );
        let r = range(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]));
        let p = pod(
            json!([{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "250m"}}}]),
        );
        assert_eq!(
            pod_errors(&r, &p),
            ["cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"]
        );
    }

    #[test]
    fn pod_totals_sum_containers_and_take_the_largest_init_container() {
        let r = range(json!([{"type": "Pod", "max": {"memory": "1Gi"}}]));
        let mut p = pod(json!([
            {"name": "a", "resources": {"limits": {"memory": "512Mi"}}},
            {"name": "b", "resources": {"limits": {"memory": "768Mi"}}},
        ]));
        assert_eq!(
            pod_errors(&r, &p),
            ["maximum memory usage per Pod is 1Gi, but limit is 1280Mi"]
        );
        p["spec"]["containers"] =
            json!([{"name": "a", "resources": {"limits": {"memory": "512Mi"}}}]);
        p["spec"]["initContainers"] =
            json!([{"name": "i", "resources": {"limits": {"memory": "2Gi"}}}]);
        assert_eq!(
            pod_errors(&r, &p),
            ["maximum memory usage per Pod is 1Gi, but limit is 2Gi"]
        );
    }

    #[test]
    fn claims_are_bounded_by_their_request() {
        let r = range(
            json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}}]),
        );
        let claim = |size: &str| json!({"spec": {"resources": {"requests": {"storage": size}}}});
        assert!(claim_errors(&r, &claim("2Gi")).is_empty());
        assert_eq!(
            claim_errors(&r, &claim("10Gi")),
            ["maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"]
        );
        assert_eq!(
            aggregate(claim_errors(&r, &json!({"spec": {}}))).unwrap(),
            "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, \
             maximum storage usage per PersistentVolumeClaim is 5Gi.  No request is specified]"
        );
    }
}
