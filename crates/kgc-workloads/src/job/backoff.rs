//! The back-off before a Job replaces failed pods (`kubernetes/kubernetes pkg/controller/job/
//! backoff_utils.go`): each failure since the last success doubles the wait, from 10 s up to
//! 6 min, counted from when the last failed pod finished.

use std::time::Duration;

use jiff::Timestamp;

/// Upstream `DefaultJobPodFailureBackOff`.
pub const BASE: Duration = Duration::from_secs(10);
/// Upstream `MaxJobPodFailureBackOff`.
pub const MAX: Duration = Duration::from_secs(6 * 60);

/// A Job's failures since its last success (upstream `backoffRecord`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    failures_after_last_success: u32,
    last_failure: Option<Timestamp>,
}

impl Record {
    /// The record once newly finished pods are counted, given when each finished (upstream
    /// `newBackoffRecord`): failures after the latest success add up; a success resets.
    pub fn observe(self, succeeded: &[Timestamp], failed: &[Timestamp]) -> Self {
        let last_success = succeeded.iter().max().copied();
        let after: Vec<Timestamp> = failed
            .iter()
            .copied()
            .filter(|f| last_success.is_none_or(|s| *f > s))
            .collect();
        let count = u32::try_from(after.len()).unwrap_or(u32::MAX);
        match last_success {
            None if after.is_empty() => self,
            None => Self {
                failures_after_last_success: self.failures_after_last_success.saturating_add(count),
                last_failure: after.iter().max().copied().max(self.last_failure),
            },
            Some(_) => Self {
                failures_after_last_success: count,
                last_failure: after.iter().max().copied(),
            },
        }
    }

    /// How long to wait yet before creating pods (upstream `getRemainingTime`).
    pub fn remaining(&self, now: Timestamp) -> Duration {
        let Some(last) = self.last_failure else {
            return Duration::ZERO;
        };
        if self.failures_after_last_success == 0 {
            return Duration::ZERO;
        }
        let mut backoff = BASE;
        for _ in 1..self.failures_after_last_success {
            backoff = backoff.saturating_mul(2);
            if backoff >= MAX {
                backoff = MAX;
                break;
            }
        }
        let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or(Duration::ZERO);
        backoff.saturating_sub(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn doubles_from_the_last_failure_and_resets_on_success() {
        let r = Record::default().observe(&[], &[t(100)]);
        assert_eq!(r.remaining(t(104)), Duration::from_secs(6));
        let r = r.observe(&[], &[t(120)]);
        assert_eq!(r.remaining(t(120)), Duration::from_secs(20));
        assert_eq!(r.remaining(t(200)), Duration::ZERO);
        let many = (0..10).fold(r, |r, i| r.observe(&[], &[t(300 + i)]));
        assert_eq!(many.remaining(t(309)), MAX);
        let reset = many.observe(&[t(400)], &[t(399)]);
        assert_eq!(reset.remaining(t(400)), Duration::ZERO);
        let after = many.observe(&[t(400)], &[t(401)]);
        assert_eq!(after.remaining(t(401)), BASE);
    }
}
