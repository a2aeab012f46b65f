//! A pod's QoS class (kubernetes `pkg/apis/core/v1/helper/qos/qos.go`, `ComputePodQOS`): only
//! CPU and memory count; a pod with no request or limit is BestEffort; Guaranteed needs every
//! container to limit both and the pod's summed requests to equal its summed limits; anything
//! else is Burstable. Pod-level resources, when set, decide instead of the containers'.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
use kgc_meta::quantity::Quantity;

const COMPUTE: [&str; 2] = ["cpu", "memory"];

/// Positive CPU and memory amounts of a resource list, in thousandths.
fn positive(list: Option<&BTreeMap<String, Q>>) -> impl Iterator<Item = (&'static str, i64)> {
    COMPUTE.into_iter().filter_map(move |name| {
        let q = Quantity::parse(&list?.get(name)?.0).ok()?;
        q.milli_value().filter(|v| *v > 0).map(|v| (name, v))
    })
}

/// `Guaranteed`, `Burstable` or `BestEffort`.
pub fn class(spec: &PodSpec) -> &'static str {
    let mut requests: BTreeMap<&str, i64> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i64> = BTreeMap::new();
    let mut guaranteed = true;
    let mut add = |r: Option<&ResourceRequirements>, guaranteed: &mut bool| {
        for (name, v) in positive(r.and_then(|r| r.requests.as_ref())) {
            *requests.entry(name).or_default() += v;
        }
        let mut found = 0;
        for (name, v) in positive(r.and_then(|r| r.limits.as_ref())) {
            *limits.entry(name).or_default() += v;
            found += 1;
        }
        if found < COMPUTE.len() {
            *guaranteed = false;
        }
    };
    let pod_level = spec.resources.as_ref().filter(|r| {
        positive(r.requests.as_ref())
            .chain(positive(r.limits.as_ref()))
            .count()
            > 0
    });
    match pod_level {
        Some(r) => add(Some(r), &mut guaranteed),
        None => {
            let containers = spec
                .init_containers
                .iter()
                .flatten()
                .chain(&spec.containers);
            for c in containers {
                add(c.resources.as_ref(), &mut guaranteed);
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let equal = requests.iter().all(|(k, v)| limits.get(k) == Some(v));
    if guaranteed && equal && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Container;

    use super::*;

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        let list = |p: &[(&str, &str)]| {
            (!p.is_empty()).then(|| {
                p.iter()
                    .map(|(k, v)| ((*k).to_owned(), Q((*v).to_owned())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: list(requests),
                limits: list(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(containers: Vec<Container>) -> PodSpec {
        PodSpec {
            containers,
            ..Default::default()
        }
    }

    #[test]
    fn classes_follow_upstream_rules() {
        assert_eq!(class(&pod(vec![container(&[], &[])])), "BestEffort");
        let both = [("cpu", "100m"), ("memory", "64Mi")];
        assert_eq!(class(&pod(vec![container(&both, &both)])), "Guaranteed");
        assert_eq!(
            class(&pod(vec![container(
                &[("cpu", "0.1")],
                &[("cpu", "100m"), ("memory", "64Mi")]
            )])),
            "Burstable",
            "memory requested 0 but limited"
        );
        assert_eq!(
            class(&pod(vec![container(&[("cpu", "100m")], &[])])),
            "Burstable"
        );
        assert_eq!(
            class(&pod(vec![container(&both, &both), container(&[], &[])])),
            "Burstable",
            "one container without limits"
        );
        assert_eq!(
            class(&pod(vec![container(&[("cpu", "0")], &[])])),
            "BestEffort",
            "zero requests do not count"
        );
        assert_eq!(
            class(&pod(vec![container(&[("ephemeral-storage", "1Gi")], &[])])),
            "BestEffort"
        );
    }
}
