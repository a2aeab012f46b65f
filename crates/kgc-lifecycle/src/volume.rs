//! placeholder
use crate::Context;
use kgc_client::Cluster;
#[derive(Debug, Clone, Default)]
pub struct Config {}
pub async fn run<C: Cluster>(_ctx: Context<C>, _config: Config) {}
