//! How the long-running commands (`kgc serve`, `kgc controller`, `kgc node`) learn they
//! must stop.

use std::future::Future;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called, not when it is
/// first polled: a command calls it before it announces that it is ready, so a supervisor's
/// SIGTERM sent right after the announcement is always a clean stop, never the default kill.
pub fn shutdown() -> anyhow::Result<impl Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
