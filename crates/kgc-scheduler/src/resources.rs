//! Resource amounts as the scheduler counts them: CPU in millicores, memory and
//! ephemeral-storage in bytes, any other (extended resources, hugepages) in whole units
//! (kubernetes/kubernetes pkg/scheduler/framework/types.go `Resource`), and a pod's requests as
//! upstream computes them (k8s.io/component-helpers resource/helpers.go `PodRequests`).

use kgc_meta::quantity::Quantity;
use serde_json::Value;

/// Amounts of every resource, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Other resources (`example.com/gpu`, `hugepages-2Mi`), sorted by name.
    pub scalar: Vec<(String, i64)>,
}

/// The CPU and memory a container without requests counts as when spreading pods
/// (pkg/scheduler/util/pod_resources.go `DefaultMilliCPURequest`, `DefaultMemoryRequest`).
pub const DEFAULT_MILLI_CPU: i64 = 100;
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

impl Resources {
    /// A `ResourceList` (`{"cpu": "500m", …}`); `pods` is not a resource a pod requests and is
    /// left out. A malformed quantity is the error, naming the resource.
    pub fn from_list(list: &Value) -> Result<Self, String> {
        let mut r = Resources::default();
        let Some(map) = list.as_object() else {
            return Ok(r);
        };
        for (name, v) in map {
            let q = Quantity::from_json(v).map_err(|e| format!("{name}: {v}: {e}"))?;
            match name.as_str() {
                "cpu" => r.milli_cpu = q.scaled_value(-3),
                "memory" => r.memory = q.scaled_value(0),
                "ephemeral-storage" => r.ephemeral_storage = q.scaled_value(0),
                "pods" => {}
                other => r.set_scalar(other, q.scaled_value(0)),
            }
        }
        Ok(r)
    }

    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.iter().all(|(_, v)| *v == 0)
    }

    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    fn set_scalar(&mut self, name: &str, v: i64) {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1 = v,
            Err(i) => self.scalar.insert(i, (name.to_owned(), v)),
        }
    }

    /// `self += other` (`sign` 1) or `self -= other` (`sign` -1).
    pub fn add(&mut self, other: &Resources, sign: i64) {
        self.milli_cpu += sign * other.milli_cpu;
        self.memory += sign * other.memory;
        self.ephemeral_storage += sign * other.ephemeral_storage;
        for (n, v) in &other.scalar {
            let cur = self.scalar(n);
            self.set_scalar(n, cur + sign * v);
        }
    }

    /// Each amount the larger of the two (`maxResourceList`).
    fn max(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (n, v) in &other.scalar {
            let cur = self.scalar(n);
            self.set_scalar(n, cur.max(*v));
        }
    }
}

/// What a pod asks of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRequests {
    pub requests: Resources,
    /// CPU and memory with the defaults for containers that ask for none, for scoring only
    /// (`NonZeroRequested`).
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
}

/// A container's requests: `resources.requests`, and its limits where a request is missing
/// (the API's defaulting sets requests from limits; a stored object may predate it).
fn container_requests(c: &Value) -> Result<Resources, String> {
    let name = c["name"].as_str().unwrap_or_default();
    let at = |e: String| format!("container {name:?}: resources: {e}");
    let mut list = c["resources"]["limits"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(req) = c["resources"]["requests"].as_object() {
        list.extend(req.clone());
    }
    Resources::from_list(&Value::Object(list)).map_err(at)
}

/// `PodRequests`: the sum over containers and sidecars (restartable init containers), or the
/// largest init container with the sidecars started before it if larger, plus the overhead.
pub fn pod_requests(spec: &Value) -> Result<PodRequests, String> {
    let empty = Vec::new();
    let list = |f: &str| spec[f].as_array().unwrap_or(&empty);
    let mut reqs = Resources::default();
    let (mut non_zero_cpu, mut non_zero_memory) = (0, 0);
    let mut non_zero = |r: &Resources| {
        non_zero_cpu += if r.milli_cpu == 0 {
            DEFAULT_MILLI_CPU
        } else {
            r.milli_cpu
        };
        non_zero_memory += if r.memory == 0 {
            DEFAULT_MEMORY
        } else {
            r.memory
        };
    };
    for c in list("containers") {
        let r = container_requests(c)?;
        non_zero(&r);
        reqs.add(&r, 1);
    }
    let mut sidecars = Resources::default();
    let mut init = Resources::default();
    for c in list("initContainers") {
        let r = container_requests(c)?;
        let at_start = if c["restartPolicy"] == "Always" {
            non_zero(&r);
            reqs.add(&r, 1);
            sidecars.add(&r, 1);
            sidecars.clone()
        } else {
            let mut tmp = r;
            tmp.add(&sidecars, 1);
            tmp
        };
        init.max(&at_start);
    }
    reqs.max(&init);
    let overhead = Resources::from_list(&spec["overhead"]).map_err(|e| format!("overhead: {e}"))?;
    reqs.add(&overhead, 1);
    Ok(PodRequests {
        requests: reqs,
        non_zero_cpu: non_zero_cpu + overhead.milli_cpu,
        non_zero_memory: non_zero_memory + overhead.memory,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requests_are_the_sum_or_the_largest_init_container_plus_overhead() {
        let spec = json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "200m", "example.com/gpu": "1"}}},
            ],
            "initContainers": [
                {"name": "i", "resources": {"requests": {"cpu": "1", "memory": "10Mi"}}},
            ],
            "overhead": {"cpu": "10m"},
        });
        let r = pod_requests(&spec).unwrap();
        assert_eq!(r.requests.milli_cpu, 1010);
        assert_eq!(r.requests.memory, 1 << 30);
        assert_eq!(r.requests.scalar("example.com/gpu"), 1);
        assert_eq!(r.non_zero_memory, (1 << 30) + DEFAULT_MEMORY);
    }

    #[test]
    fn sidecars_add_to_the_sum_and_to_later_init_containers() {
        let spec = json!({
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                {"name": "i", "resources": {"requests": {"cpu": "200m"}}},
            ],
        });
        assert_eq!(pod_requests(&spec).unwrap().requests.milli_cpu, 250);
    }

    #[test]
    fn a_malformed_quantity_names_its_container() {
        let spec =
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]});
        let e = pod_requests(&spec).unwrap_err();
        assert!(e.starts_with("container \"a\": resources: cpu:"), "{e}");
    }
}
