//! Scoring the nodes that fit, as the default profile's resource plugins do
//! (kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/least_allocated.go and
//! balanced_allocation.go): CPU and memory, counting requests-less containers at the defaults,
//! each plugin from 0 to 100 with weight 1. The highest total wins; ties are broken at random,
//! as upstream's `selectHost` does (reservoir sampling).

use crate::filter::Usage;
use crate::node::Node;
use crate::pod::Spec;

const MAX_SCORE: i64 = 100;

/// The node's score for the pod.
pub fn score(pod: &Spec, node: &Node, usage: &Usage) -> i64 {
    let cpu = (
        usage.non_zero_cpu + pod.requests.non_zero_cpu,
        node.allocatable.milli_cpu,
    );
    let memory = (
        usage.non_zero_memory + pod.requests.non_zero_memory,
        node.allocatable.memory,
    );
    least_allocated(&[cpu, memory]) + balanced(&[cpu, memory])
}

/// `leastResourceScorer`: the free share of each resource, averaged.
fn least_allocated(resources: &[(i64, i64)]) -> i64 {
    let per = |(requested, capacity): (i64, i64)| {
        if capacity == 0 || requested > capacity {
            0
        } else {
            (capacity - requested) * MAX_SCORE / capacity
        }
    };
    resources.iter().map(|r| per(*r)).sum::<i64>() / resources.len() as i64
}

/// `balancedResourceScorer`: 100 × (1 − the standard deviation of the requested shares).
fn balanced(resources: &[(i64, i64)]) -> i64 {
    let shares: Vec<f64> = resources
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(r, c)| (*r as f64 / *c as f64).min(1.0))
        .collect();
    if shares.len() < 2 {
        return MAX_SCORE;
    }
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    let variance = shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / shares.len() as f64;
    ((1.0 - variance.sqrt()) * MAX_SCORE as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emptier_and_more_balanced_nodes_score_higher() {
        assert_eq!(least_allocated(&[(0, 1000), (0, 1000)]), 100);
        assert_eq!(least_allocated(&[(500, 1000), (250, 1000)]), 62);
        assert_eq!(balanced(&[(500, 1000), (500, 1000)]), 100);
        assert_eq!(balanced(&[(1000, 1000), (0, 1000)]), 50);
    }
}
