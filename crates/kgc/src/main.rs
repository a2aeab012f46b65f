//! `kgc`: Kubernetes garbage collection, complete, in one binary.
#![forbid(unsafe_code)]

mod serve;

use clap::{Parser, Subcommand};

/// Kubernetes garbage collection, complete, in one binary.
#[derive(Parser)]
#[command(name = "kgc", version, about)]
struct Cli {
    /// Log format on stderr. Levels come from RUST_LOG (default: info).
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded, Kubernetes-compatible API server with every collector built in.
    Serve(serve::Args),
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
        }
    })
}
