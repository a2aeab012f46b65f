//! placeholder
use crate::Context;
use kgc_client::Cluster;
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub gone_after: Option<std::time::Duration>,
}
pub async fn run<C: Cluster>(_ctx: Context<C>, _config: Config) {}
