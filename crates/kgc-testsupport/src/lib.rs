//! The harness of kgc's integration tests: it spawns the real `kgc serve` (and `kgc controller`)
//! binary and drives it over HTTP with kube-rs, raw requests and the machine's `kubectl`.
//!
//! Every [`Server`] gets its own temporary directory (data dir, server log and kubectl cache), a
//! free port (`--listen 127.0.0.1:0`, parsed from the `listening on` line) and is killed when
//! dropped. A test that panics prints the tail of the server log.
//!
//! Only the integration tests of the `kgc` package know where Cargo built its binary
//! (`env!("CARGO_BIN_EXE_kgc")`), so each test binary names it once with [`bind_kgc!`], which
//! also makes [`Server`] mean a server of that binary:
//!
//! ```ignore
//! kgc_testsupport::bind_kgc!();
//! use kgc_testsupport::*;
//!
//! #[tokio::test]
//! async fn creates() {
//!     let s = Server::start().await;
//!     let ns = fresh_namespace(&s.client(), "t").await;
//! }
//! ```
#![forbid(unsafe_code)]

mod audit;
mod binary;
mod controller;
mod election;
mod etcd;
mod gc;
mod http;
mod kubectl;
mod namespace;
pub mod pods;
mod process;
mod server;
mod wait;

pub use audit::AuditLog;
pub use binary::KgcBinary;
pub use controller::Controller;
pub use election::{ELECTION_TIMINGS, lease_holder};
pub use etcd::EtcdCluster;
pub use gc::{gc_graph, graph_observed, is_not_found, uid_of};
pub use http::{
    RawResponse, WatchLines, api_error, assert_status, counter_in, http_get, metrics_counter,
    metrics_text, raw, store_revision,
};
pub use kubectl::run_kubectl;
pub use namespace::{create_namespace, fresh_namespace, typed, unique};
pub use server::{SIMULATORS, Server, add_user, copy_pki};
pub use wait::{consistently, eventually, next_within, poll, try_next_within};
