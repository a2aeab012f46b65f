//! When the loop runs next: every interval after a success, sooner after a failure, doubling
//! from [`Backoff::BASE`] up to the interval (controller-runtime's per-item exponential
//! back-off, capped at the interval as kustomize-controller's `retryInterval` defaults to it).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    interval: Duration,
    failures: u32,
}

impl Backoff {
    /// The first retry's delay.
    pub const BASE: Duration = Duration::from_secs(1);

    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            failures: 0,
        }
    }

    /// The wait before the next run, after a run that `failed` or not.
    pub fn next(&mut self, failed: bool) -> Duration {
        if !failed {
            self.failures = 0;
            return self.interval;
        }
        self.failures = self.failures.saturating_add(1);
        let factor = 1u32.checked_shl(self.failures - 1).unwrap_or(u32::MAX);
        Self::BASE
            .checked_mul(factor)
            .unwrap_or(self.interval)
            .min(self.interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_on_failure_capped_at_the_interval_and_resets_on_success() {
        let mut b = Backoff::new(Duration::from_secs(10));
        let waits: Vec<u64> = (0..6).map(|_| b.next(true).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 10, 10]);
        assert_eq!(b.next(false), Duration::from_secs(10));
        assert_eq!(b.next(true), Duration::from_secs(1));
        // Many failures never overflow.
        for _ in 0..100 {
            b.next(true);
        }
        assert_eq!(b.next(true), Duration::from_secs(10));
        // An interval shorter than the base is the cap.
        let mut short = Backoff::new(Duration::from_millis(500));
        assert_eq!(short.next(true), Duration::from_millis(500));
    }
}
