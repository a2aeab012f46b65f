//! An audit log for a spawned `kgc serve`: the policy written to a temporary directory, the
//! `--audit-log-path`/`--audit-policy-file` arguments naming it, and the events read back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::wait::eventually;

/// A policy file and the log a server is to write under it (both gone when dropped).
pub struct AuditLog {
    _dir: tempfile::TempDir,
    policy: PathBuf,
    log: PathBuf,
}

impl AuditLog {
    /// An audit log under the `audit.k8s.io/v1 Policy` `policy` (YAML).
    pub fn new(policy: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (policy_file, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
        std::fs::write(&policy_file, policy).expect("writing the audit policy");
        Self {
            _dir: dir,
            policy: policy_file,
            log,
        }
    }

    /// `args` and the arguments that make `kgc serve` write this log.
    pub fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = args.to_vec();
        all.extend([
            "--audit-log-path",
            self.log.to_str().expect("a UTF-8 path"),
            "--audit-policy-file",
            self.policy.to_str().expect("a UTF-8 path"),
        ]);
        all
    }

    pub fn path(&self) -> &Path {
        &self.log
    }

    /// The events written so far.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an event per line"))
            .collect()
    }

    /// Waits (20 s at most) for an event matching `pick` at `stage`, and returns every event
    /// matching `pick`.
    pub async fn wait_for(&self, stage: &str, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
        eventually(&format!("a {stage} event"), Duration::from_secs(20), || {
            let found = self.events().iter().any(|e| pick(e) && e["stage"] == stage);
            async move { found }
        })
        .await;
        self.events().into_iter().filter(|e| pick(e)).collect()
    }
}
