//! Indexed Jobs (`kubernetes/kubernetes pkg/controller/job/indexed_job_utils.go`): each pod
//! runs one completion index in `[0, completions)`; the Job succeeds once every index has a
//! succeeded pod, and records them in `status.completedIndexes` as intervals (`1,3-5,7`).

use std::collections::BTreeSet;

use super::pod::JobPod;

/// The set of indexes `s` names, those below `completions` (upstream `parseIndexesFromString`);
/// unparsable parts are skipped.
pub fn parse(s: &str, completions: i32) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
            None => (part.parse(), part.parse()),
        };
        if let (Ok(a), Ok(b)) = (first, last) {
            out.extend((a.max(0)..=b.min(completions - 1)).filter(|i| *i >= 0));
        }
    }
    out
}

/// `indexes` as upstream's interval string (`orderedIntervals.String`).
pub fn format(indexes: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = indexes.iter().copied().peekable();
    while let Some(first) = it.next() {
        let mut last = first;
        while it.peek() == Some(&(last + 1)) {
            last = it.next().unwrap_or(last);
        }
        parts.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
    }
    parts.join(",")
}

/// The first `n` indexes neither succeeded nor held by an active pod (upstream
/// `firstPendingIndexes`).
pub fn pending(
    completions: i32,
    succeeded: &BTreeSet<i32>,
    active: &[&JobPod],
    n: usize,
) -> Vec<i32> {
    let running: BTreeSet<i32> = active.iter().filter_map(|p| p.index).collect();
    (0..completions)
        .filter(|i| !succeeded.contains(i) && !running.contains(i))
        .take(n)
        .collect()
}

/// Active pods to remove whatever the counts say: those without a valid index, and all but
/// one of those sharing an index (upstream `appendDuplicatedIndexPodsForRemoval`).
pub fn surplus<'a>(active: &[&'a JobPod], completions: i32) -> Vec<&'a JobPod> {
    let mut seen = BTreeSet::new();
    active
        .iter()
        .filter(|p| match p.index {
            Some(i) if i < completions => !seen.insert(i),
            _ => true,
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use kgc_runtime::informer::View;

    use super::*;

    #[test]
    fn intervals_round_trip() {
        let s = parse("0,2-4,7,9-8,x", 8);
        assert_eq!(s, BTreeSet::from([0, 2, 3, 4, 7]));
        assert_eq!(format(&s), "0,2-4,7");
        assert_eq!(format(&BTreeSet::new()), "");
        assert_eq!(parse("5-20", 7), BTreeSet::from([5, 6]));
    }

    fn pod(index: Option<i32>) -> JobPod {
        let mut annotations = serde_json::Map::new();
        if let Some(i) = index {
            annotations.insert(super::super::COMPLETION_INDEX.into(), i.to_string().into());
        }
        JobPod::view(&serde_json::json!({
            "metadata": {"name": "p", "uid": format!("{index:?}"), "annotations": annotations},
        }))
        .unwrap()
    }

    #[test]
    fn pending_skips_succeeded_and_running_and_surplus_finds_duplicates() {
        let (one, other_one, none, high) = (pod(Some(1)), pod(Some(1)), pod(None), pod(Some(9)));
        let succeeded = BTreeSet::from([0]);
        assert_eq!(pending(4, &succeeded, &[&one], 5), [2, 3]);
        assert_eq!(pending(4, &succeeded, &[], 1), [1]);
        let extra = surplus(&[&one, &other_one, &none, &high], 4);
        assert_eq!(extra.len(), 3);
        assert!(std::ptr::eq(extra[0], &other_one));
    }
}
