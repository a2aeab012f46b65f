//! Client-side rate limiting, as client-go's `flowcontrol.NewTokenBucketRateLimiter` behind
//! `--kube-api-qps` and `--kube-api-burst`: a process pointed at a production API server must
//! not send it thousands of requests a second (kube-controller-manager's defaults are 20 and
//! 30). A token bucket of `burst` tokens refilled at `qps` a second; a request takes one, and
//! waits for it when there is none. 429 answers with `Retry-After` (API Priority and Fairness)
//! are retried by kube-rs's own retry layer, which every [`kube::Client`] built from a
//! `kube::Config` carries.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// How fast a client may send requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttle {
    /// Requests a second, sustained; 0 or less: unlimited.
    pub qps: f32,
    /// Requests that may go at once after a quiet spell (at least 1).
    pub burst: u32,
}

impl Throttle {
    /// The tower layer to put on a `kube::client::ClientBuilder`; `None` when unlimited.
    pub fn layer(self) -> Option<ThrottleLayer> {
        (self.qps > 0.0).then(|| ThrottleLayer {
            bucket: Arc::new(Mutex::new(Bucket::new(self, Instant::now()))),
        })
    }
}

/// The token bucket itself, apart from time so that it is testable.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    capacity: f64,
    per_second: f64,
    at: Instant,
}

impl Bucket {
    fn new(t: Throttle, now: Instant) -> Self {
        let capacity = f64::from(t.burst.max(1));
        Bucket {
            tokens: capacity,
            capacity,
            per_second: f64::from(t.qps),
            at: now,
        }
    }

    /// Takes a token, or says how long until there is one.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - self.tokens) / self.per_second,
            ))
        }
    }
}

/// See [`Throttle::layer`].
#[derive(Clone)]
pub struct ThrottleLayer {
    bucket: Arc<Mutex<Bucket>>,
}

impl<S> tower::Layer<S> for ThrottleLayer {
    type Service = ThrottleService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ThrottleService {
            inner,
            bucket: Arc::clone(&self.bucket),
            wait: None,
            holding: false,
        }
    }
}

/// Holds each request in `poll_ready` until the bucket has a token for it. The service sits
/// inside the client's buffer, so requests queue there in order while they wait.
pub struct ThrottleService<S> {
    inner: S,
    bucket: Arc<Mutex<Bucket>>,
    wait: Option<Pin<Box<Sleep>>>,
    /// A token taken for the next call.
    holding: bool,
}

impl<S: Clone> Clone for ThrottleService<S> {
    fn clone(&self) -> Self {
        ThrottleService {
            inner: self.inner.clone(),
            bucket: Arc::clone(&self.bucket),
            wait: None,
            holding: false,
        }
    }
}

impl<S, R> tower::Service<R> for ThrottleService<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.holding {
            if let Some(wait) = self.wait.as_mut() {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            let taken = self
                .bucket
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(Instant::now());
            match taken {
                Ok(()) => self.holding = true,
                Err(after) => self.wait = Some(Box::pin(tokio::time::sleep(after))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.holding = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_goes_at_once_then_qps_a_second() {
        let t0 = Instant::now();
        let mut b = Bucket::new(
            Throttle {
                qps: 20.0,
                burst: 30,
            },
            t0,
        );
        for _ in 0..30 {
            assert_eq!(b.take(t0), Ok(()));
        }
        let wait = b.take(t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(50));
        assert_eq!(b.take(t0 + wait), Ok(()));
        // A quiet spell refills no more than the burst.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..30 {
            assert_eq!(b.take(later), Ok(()));
        }
        assert!(b.take(later).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn requests_wait_for_tokens() {
        use tower::{Service, ServiceExt};
        let layer = Throttle {
            qps: 10.0,
            burst: 2,
        }
        .layer()
        .unwrap();
        let mut svc = tower::Layer::layer(
            &layer,
            tower::service_fn(|()| async { Ok::<_, std::convert::Infallible>(()) }),
        );
        let start = Instant::now();
        for _ in 0..12 {
            svc.ready().await.unwrap().call(()).await.unwrap();
        }
        // 2 at once, then 10 more at 10 a second.
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert!(Throttle { qps: 0.0, burst: 1 }.layer().is_none());
    }
}
