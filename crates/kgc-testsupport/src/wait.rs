//! Waiting with deadlines: polling until a condition holds (or checking that it keeps
//! holding), and taking the next item of a watch stream.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt, TryStream, TryStreamExt};

/// Waits for `cond` to hold, polling every 20 ms, up to `deadline`.
pub async fn eventually<F, Fut>(what: &str, deadline: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let until = Instant::now() + deadline;
    loop {
        if cond().await {
            return;
        }
        if Instant::now() > until {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `wait.Poll` / `wait.PollImmediate`: polls `cond` every `interval` until it holds; false on
/// timeout.
pub async fn poll<F, Fut>(
    interval: Duration,
    timeout: Duration,
    immediate: bool,
    mut cond: F,
) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    if !immediate {
        tokio::time::sleep(interval).await;
    }
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() + interval > deadline {
            return false;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Asserts that `cond` holds at every check (every 50 ms) for `period` (upstream's `wait.Poll`
/// loops that fail on the first counter-example and time out as success).
pub async fn consistently<F, Fut>(what: &str, period: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + period;
    loop {
        assert!(cond().await, "{what} stopped holding");
        if Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The next item of a stream, failing the test after `deadline`.
pub async fn next_within<S, T>(stream: &mut S, deadline: Duration, what: &str) -> T
where
    S: Stream<Item = T> + Unpin,
{
    match tokio::time::timeout(deadline, stream.next()).await {
        Ok(Some(v)) => v,
        Ok(None) => panic!("the stream ended while waiting for {what}"),
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

/// Like [`next_within`] for fallible streams.
pub async fn try_next_within<S, T, E>(stream: &mut S, deadline: Duration, what: &str) -> T
where
    S: TryStream<Ok = T, Error = E> + Unpin,
    E: std::fmt::Debug,
{
    match tokio::time::timeout(deadline, stream.try_next()).await {
        Ok(Ok(Some(v))) => v,
        Ok(Ok(None)) => panic!("the stream ended while waiting for {what}"),
        Ok(Err(e)) => panic!("stream error while waiting for {what}: {e:?}"),
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}
