//! Upstream's slow start (`kubernetes/kubernetes pkg/controller/replicaset/replica_set.go`
//! `slowStartBatch`, the same loop in `job/job_controller.go` `manageJob` and
//! `daemon/daemon_controller.go` `syncNodes`, and `statefulset/stateful_set_control.go`
//! `slowStartBatch` with its `MaxBatchSize`): a controller with many writes to make makes them
//! in batches of 1, 2, 4, … at once, and stops after the first batch in which one failed.
//!
//! Why: the writes of one sync usually fail for one shared reason (a quota, a template the API
//! refuses, a terminating namespace), so a ReplicaSet short of 500 pods whose pods are refused
//! makes one failing request per sync, not 500, and records one `FailedCreate` Event, not 500.
//! A sync that succeeds doubles its way to the whole amount in log₂ rounds.

use std::future::Future;

use futures::future::join_all;

/// What a slow start did: how many writes succeeded (the rest failed or were never tried,
/// `items.len() - succeeded` of them), and the first failure of the batch that stopped it.
#[derive(Debug)]
pub struct Outcome<E> {
    pub succeeded: usize,
    pub error: Option<E>,
}

/// Calls `write` on each of `items` in batches of 1, 2, 4, … (doubling, at most `max_batch`
/// at once; `usize::MAX` for no cap), every call of a batch at once, in the items' order;
/// after a batch with a failure, the items left are not tried.
///
/// A `max_batch` of 1 makes the writes one at a time, stopping at the first failure: the
/// StatefulSet controller's monotonic (`OrderedReady`) order.
pub async fn slow_start_batch<'a, T, F, Fut, E>(
    items: &'a [T],
    max_batch: usize,
    write: F,
) -> Outcome<E>
where
    F: Fn(&'a T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut outcome = Outcome {
        succeeded: 0,
        error: None,
    };
    let cap = max_batch.max(1);
    let (mut done, mut batch) = (0, 1);
    while done < items.len() {
        let size = batch.min(items.len() - done);
        let results = join_all(items[done..done + size].iter().map(&write)).await;
        done += size;
        for r in results {
            match r {
                Ok(()) => outcome.succeeded += 1,
                Err(e) => {
                    outcome.error.get_or_insert(e);
                }
            }
        }
        if outcome.error.is_some() {
            break;
        }
        batch = batch.saturating_mul(2).min(cap);
    }
    outcome
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;

    /// Runs a slow start over `n` items where `fails` fail; the batches as the items each
    /// started together (every write takes a millisecond of paused time, so a batch's writes
    /// start at one instant and the next batch's a millisecond later), and the outcome.
    async fn run(n: usize, max_batch: usize, fails: &[usize]) -> (Vec<Vec<usize>>, Outcome<usize>) {
        let items: Vec<usize> = (0..n).collect();
        let started: Mutex<Vec<(Instant, usize)>> = Mutex::default();
        let outcome = slow_start_batch(&items, max_batch, |i| {
            started.lock().unwrap().push((Instant::now(), *i));
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                if fails.contains(i) { Err(*i) } else { Ok(()) }
            }
        })
        .await;
        let mut batches: Vec<(Instant, Vec<usize>)> = Vec::new();
        for (t, i) in started.into_inner().unwrap() {
            match batches.last_mut() {
                Some((at, b)) if *at == t => b.push(i),
                _ => batches.push((t, vec![i])),
            }
        }
        (batches.into_iter().map(|(_, b)| b).collect(), outcome)
    }

    fn sizes(batches: &[Vec<usize>]) -> Vec<usize> {
        batches.iter().map(Vec::len).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn batches_double_up_to_what_is_left() {
        let (batches, outcome) = run(20, usize::MAX, &[]).await;
        assert_eq!(sizes(&batches), [1, 2, 4, 8, 5]);
        assert_eq!(batches.concat(), (0..20).collect::<Vec<_>>(), "in order");
        assert_eq!((outcome.succeeded, outcome.error), (20, None));
    }

    #[tokio::test(start_paused = true)]
    async fn the_batch_with_a_failure_is_the_last() {
        // Items 3..7 are the third batch; 4 and 6 fail, the other two of it succeed.
        let (batches, outcome) = run(500, usize::MAX, &[4, 6]).await;
        assert_eq!(sizes(&batches), [1, 2, 4]);
        assert_eq!(outcome.succeeded, 5);
        assert_eq!(outcome.error, Some(4), "the first failure of the batch");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_from_the_start_costs_one_write() {
        let all: Vec<usize> = (0..500).collect();
        let (batches, outcome) = run(500, usize::MAX, &all).await;
        assert_eq!(sizes(&batches), [1]);
        assert_eq!((outcome.succeeded, outcome.error), (0, Some(0)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cap_bounds_each_batch_not_the_total() {
        // The StatefulSet controller's MaxBatchSize of 500: 1 + 2 + … + 256 = 511, then 500s.
        let (batches, outcome) = run(2000, 500, &[]).await;
        assert_eq!(
            sizes(&batches),
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 500, 489]
        );
        assert_eq!(outcome.succeeded, 2000);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cap_of_one_is_one_at_a_time_until_the_first_failure() {
        let (batches, outcome) = run(5, 1, &[2]).await;
        assert_eq!(batches, [vec![0], vec![1], vec![2]]);
        assert_eq!((outcome.succeeded, outcome.error), (2, Some(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_to_write_writes_nothing() {
        let (batches, outcome) = run(0, usize::MAX, &[]).await;
        assert!(batches.is_empty());
        assert_eq!((outcome.succeeded, outcome.error), (0, None));
    }
}
