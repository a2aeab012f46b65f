//! Leader election in tests: timings short enough that a hand-over takes seconds, and who a
//! Lease names as its holder.

use k8s_openapi::api::coordination::v1::Lease;

/// `kgc serve`/`kgc controller` flags for a 3 s lease, 2 s renew deadline and 500 ms retry
/// (the defaults are 15 s, 10 s and 2 s).
pub const ELECTION_TIMINGS: [&str; 6] = [
    "--leader-elect-lease-duration",
    "3s",
    "--leader-elect-renew-deadline",
    "2s",
    "--leader-elect-retry-period",
    "500ms",
];

/// The lease's `holderIdentity` (empty when nobody holds it).
pub fn lease_holder(lease: &Lease) -> String {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}
