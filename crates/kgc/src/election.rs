//! The `--leader-elect*` flags of `kgc controller` and `kgc serve`, with client-go's names and
//! defaults (`component-base/config/options/leaderelectionconfig.go`: lease 15 s, renew
//! deadline 10 s, retry 2 s).

use std::time::Duration;

use kgc_runtime::leader_election::Config;

#[derive(clap::Args, Clone, Debug)]
pub struct ElectionArgs {
    /// Elect a leader among replicas on a Lease before running the controllers; only the
    /// leader runs them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long a standby waits, after the lease was last renewed, before taking it.
    #[arg(long, default_value = "15s", value_parser = crate::parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops its controllers.
    #[arg(long, default_value = "10s", value_parser = crate::parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to take, and the leader to renew, the lease.
    #[arg(long, default_value = "2s", value_parser = crate::parse_duration)]
    leader_elect_retry_period: Duration,
}

impl ElectionArgs {
    /// client-go's `NewLeaderElector` checks, as errors naming the flags.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.leader_elect
                || self.leader_elect_renew_deadline < self.leader_elect_lease_duration,
            "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
        );
        anyhow::ensure!(
            !self.leader_elect || self.leader_elect_retry_period < self.leader_elect_renew_deadline,
            "--leader-elect-retry-period must be shorter than --leader-elect-renew-deadline"
        );
        Ok(())
    }

    /// The elector's configuration for the lease `namespace/name`, campaigning as `identity`.
    pub fn config(&self, namespace: &str, name: &str, identity: &str) -> Config {
        Config {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        }
    }
}
