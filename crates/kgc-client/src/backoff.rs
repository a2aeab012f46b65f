//! Jittered exponential back-off with a reset after a healthy spell: what a watch waits before
//! it is re-opened after failing or expiring.
//!
//! The model is client-go's reflector (`kubernetes/kubernetes
//! staging/src/k8s.io/client-go/tools/cache/reflector.go`, `NewReflectorWithOptions`): 800 ms
//! doubling to 30 s, each delay stretched by a random 0–100 %, and back to 800 ms once no
//! back-off was needed for 2 minutes (`wait.NewExponentialBackoffManager`,
//! `staging/src/k8s.io/apimachinery/pkg/util/wait/backoff.go`). Without it, a watch the server
//! keeps refusing is re-opened as fast as the server answers: against a server whose RBAC and
//! storage watches answered with an error, `kgc controller` re-opened each ten times a second.
//!
//! Time is tokio's, so tests drive it with paused time.

use std::time::Duration;

use tokio::time::Instant;

/// A back-off schedule and where it stands. One per retried thing (one per watch): each has its
/// own history.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    factor: f64,
    /// Each delay is stretched by up to this fraction of itself, at random, so that the many
    /// watches that failed together do not come back together.
    jitter: f64,
    /// After this long without a back-off the schedule starts again from `initial`.
    reset_after: Duration,
    /// The delay (before jitter) the next back-off waits, unless it is reset first.
    next: Duration,
    /// When the last back-off was asked for.
    last: Option<Instant>,
}

impl Backoff {
    /// A schedule from `initial` multiplied by `factor` up to `cap`, stretched by up to `jitter`
    /// of itself, reset after `reset_after` without a back-off.
    pub fn new(
        initial: Duration,
        cap: Duration,
        factor: f64,
        jitter: f64,
        reset_after: Duration,
    ) -> Self {
        Self {
            initial,
            cap,
            factor,
            jitter,
            reset_after,
            next: initial,
            last: None,
        }
    }

    /// client-go's reflector schedule: 800 ms doubling to 30 s, jitter 1.0 (so the waits settle
    /// between 30 and 60 s), reset after 2 minutes without a failure.
    pub fn reflector() -> Self {
        Self::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            2.0,
            1.0,
            Duration::from_secs(120),
        )
    }

    /// How long to wait now, moving the schedule on (`Backoff()` in client-go's
    /// `exponentialBackoffManagerImpl`): the schedule starts over when the previous back-off was
    /// asked for longer than `reset_after` ago.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_none_or(|last| now.duration_since(last) > self.reset_after)
        {
            self.next = self.initial;
        }
        self.last = Some(now);
        let base = self.next;
        self.next = base.mul_f64(self.factor).min(self.cap);
        if self.jitter > 0.0 {
            base + base.mul_f64(self.jitter * fastrand::f64())
        } else {
            base
        }
    }

    /// Waits the next delay.
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact() -> Backoff {
        Backoff::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            2.0,
            0.0,
            Duration::from_secs(120),
        )
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn doubles_up_to_the_cap() {
        let mut b = exact();
        let mut got = Vec::new();
        for _ in 0..9 {
            let d = b.next_delay();
            got.push(d);
            tokio::time::sleep(d).await;
        }
        assert_eq!(
            got,
            [
                ms(800),
                ms(1600),
                ms(3200),
                ms(6400),
                ms(12800),
                ms(25600),
                ms(30000),
                ms(30000),
                ms(30000)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn starts_over_after_a_healthy_spell_only() {
        let mut b = exact();
        b.wait().await;
        b.wait().await;
        assert_eq!(b.next_delay(), ms(3200));
        // Healthy, but not for long enough: the schedule goes on.
        tokio::time::advance(Duration::from_secs(100)).await;
        assert_eq!(b.next_delay(), ms(6400));
        // Healthy for longer than the reset period since the last back-off: from the start.
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(b.next_delay(), ms(800));
        assert_eq!(b.next_delay(), ms(1600));
    }

    #[tokio::test(start_paused = true)]
    async fn failing_for_ever_never_resets() {
        // Waits of 30-60 s are shorter than the 2-minute reset: a lasting failure stays slow.
        let mut b = Backoff::reflector();
        for _ in 0..20 {
            b.wait().await;
        }
        let d = b.next_delay();
        assert!(
            d >= Duration::from_secs(30) && d < Duration::from_secs(60),
            "{d:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_stretches_each_delay_by_at_most_its_factor() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            let mut b = Backoff::reflector();
            let first = b.next_delay();
            let second = b.next_delay();
            assert!(first >= ms(800) && first < ms(1600), "{first:?}");
            assert!(second >= ms(1600) && second < ms(3200), "{second:?}");
            seen.insert(first);
        }
        assert!(seen.len() > 1, "the delays are spread");
    }
}
