//! `kgc`: Kubernetes garbage collection, complete, in one binary.
#![forbid(unsafe_code)]

mod add_user;
mod admin;
mod controller;
mod controllers;
mod data_dir;
mod deploy_cmd;
mod election;
mod encryption;
mod gc_cmd;
mod join;
mod kubelet;
mod lifecycle;
mod migrate;
mod node_cmd;
mod node_stop_cmd;
mod nodes;
mod qbec_app;
mod rate_limit;
mod secure;
mod serve;
mod serve_leading;
mod signals;
mod sync_cmd;
mod tls;
mod tree_cmd;
mod why_cmd;

use clap::{Parser, Subcommand};

/// mimalloc, not the system allocator: `kgc node gc` plans over snapshots of millions of small
/// strings, and `kgc serve` decodes and frees a JSON tree per request; glibc's malloc keeps
/// freed chunks in lists it later merges at random across the heap; with mimalloc a planning
/// pass over 400,000 containers went from 476 to about 300 ms (docs/BENCHMARKS.md).
///
/// Built without transparent huge pages (the crate's `no_thp`: mimalloc does not `madvise`
/// its arenas `MADV_HUGEPAGE`): it purges freed ranges after a second and touches them again,
/// and each touch of an emptied 2 MiB range had the kernel zero a whole huge page
/// (`clear_page_erms` under `do_huge_pmd_anonymous_page`, 18-21% of `kgc serve`'s samples
/// under 16 writers). Same binary, alternating, `MIMALLOC_ALLOW_THP=1`/`0`: server CPU per pod
/// create 0.77 of it without a quota, 0.83 with one (docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    Serve(Box<serve::Args>),
    /// Run the owner-reference garbage collector against any Kubernetes API server, with
    /// leader election among replicas.
    Controller(controller::Args),
    /// Inspect the garbage collector (`kgc gc graph`).
    Gc(gc_cmd::Args),
    /// Print what `kgc apply` would apply from the same arguments (kustomizations built as
    /// `kubectl kustomize` builds them), as a YAML stream; with `--app`/`--env`, stamped as
    /// the set stamps it.
    Build(deploy_cmd::BuildArgs),
    /// Apply manifests with server-side apply, then prune what the source no longer has.
    Apply(deploy_cmd::ApplyArgs),
    /// Show what `kgc apply` would create, change and delete, as a unified diff.
    Diff(deploy_cmd::DiffArgs),
    /// Delete what the source no longer has, without applying.
    Prune(deploy_cmd::PruneArgs),
    /// Write the reviewed plan of an apply (`kgc apply --plan FILE` executes exactly it).
    Plan(deploy_cmd::PlanArgs),
    /// Delete every object of an app's environment (and tag), and its parent.
    Delete(deploy_cmd::PruneArgs),
    /// Sync a git repository's manifests into a set, every interval (Flux's loop): apply, prune,
    /// record the revision (`kgc sync status|suspend|resume`).
    Sync(Box<sync_cmd::SyncArgs>),
    /// Node garbage collection over the CRI: the kubelet's image and container GC as a
    /// command (`kgc node gc|snapshot|simulate`); stop and start simulated nodes
    /// (`kgc node stop|start NAME`).
    Node(node_cmd::Args),
    /// The ownership tree under an object (`--owners`: above it), with what the garbage
    /// collector reads in it: deletions, finalizers, blocking and invalid references.
    Tree(tree_cmd::Args),
    /// Why an object is kept, will be collected, is held in deletion, or was collected
    /// (`kgc why KIND/NAME`); exit 4 while a finalizer holds its deletion.
    Why(why_cmd::Args),
    /// Print a shell completion script (`source <(kgc completion bash)`).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Parses durations such as `30s`, `5m`, `1h`, `250ms`.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected a number with ms, s, m or h"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {s:?}: use ms, s, m or h"
            ));
        }
    };
    std::time::Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

/// Colour in the logs only where a person reads them: on a terminal, and not when `NO_COLOR`
/// is set to anything (no-color.org); a log file or a pipe gets plain text.
fn log_colour() -> bool {
    use std::io::IsTerminal as _;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    // kube-client's builder logs a failed connection at ERROR before returning the error that
    // `run` then prints as `kgc: error: …`: one cause, said once (RUST_LOG still shows it).
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,kube_client::client::builder=off"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(log_colour())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Runs the command. A failure is one line per cause on stderr (`kgc: error: what failed`,
/// then `  caused by: why`), never a backtrace, whatever `RUST_BACKTRACE` says: those are for
/// kgc's developers, who ask with `KGC_BACKTRACE=1`. Exit status 1, or 2 for `kgc diff` (whose
/// 1 means "differences", as `kubectl diff`'s); a usage error too (see [`usage_error`]).
fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse().and_then(|cli| cli.command.check().map(|()| cli)) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    init_logging(cli.log_format);
    let developer = std::env::var_os("KGC_BACKTRACE").is_some_and(|v| v == "1");
    if !developer {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("kgc: internal error: {info}");
        }));
    }
    let failure = match cli.command {
        Command::Diff(_) => std::process::ExitCode::from(deploy_cmd::EXIT_DIFF_ERROR),
        _ => std::process::ExitCode::FAILURE,
    };
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if developer => {
            eprintln!("kgc: error: {e:?}");
            failure
        }
        Err(e) => {
            for line in error_lines(&e) {
                eprintln!("{line}");
            }
            explain_exit(&e).unwrap_or(failure)
        }
    }
}

/// Prints a usage error (an unknown flag, a missing argument) or the help or version asked for.
/// The error exits with the command's error status, as kubectl's usage errors exit 1: never
/// clap's 2, which is "changed" for `kgc apply --exit-code` and `kgc sync --once`.
fn usage_error(e: &clap::Error) -> std::process::ExitCode {
    // Nothing more can be said when stderr is gone.
    let _ = e.print();
    if !e.use_stderr() {
        return std::process::ExitCode::SUCCESS;
    }
    match subcommand(std::env::args_os().skip(1)).as_deref() {
        Some("diff") => std::process::ExitCode::from(deploy_cmd::EXIT_DIFF_ERROR),
        _ => std::process::ExitCode::FAILURE,
    }
}

/// The subcommand `args` name: the first that is neither a flag nor `--log-format`'s value
/// (the one global option taking one).
fn subcommand(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<String> {
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        if arg == "--log-format" {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

impl Command {
    /// What clap cannot check: `kgc why`'s and `kgc tree`'s `KIND/NAME` (`kgc why cm` names no
    /// object), a usage error before any connection, as kubectl's `error: …`.
    fn check(&self) -> Result<(), clap::Error> {
        let (name, target) = match self {
            Command::Why(a) => ("why", a.target()),
            Command::Tree(a) => ("tree", a.target()),
            _ => return Ok(()),
        };
        kgc_explain::resolve::parse_reference(target)
            .map(|_| ())
            .map_err(|e| {
                use clap::CommandFactory as _;
                let mut cli = Cli::command();
                cli.build();
                let message = e.to_string();
                match cli.find_subcommand_mut(name) {
                    Some(command) => {
                        command.error(clap::error::ErrorKind::ValueValidation, message)
                    }
                    None => cli.error(clap::error::ErrorKind::ValueValidation, message),
                }
            })
    }
}

/// The distinct exit status of `kgc tree`/`kgc why` for an unknown kind or a missing object.
fn explain_exit(e: &anyhow::Error) -> Option<std::process::ExitCode> {
    e.chain()
        .find_map(|c| c.downcast_ref::<kgc_explain::Error>())
        .and_then(|x| u8::try_from(x.exit_code()).ok())
        .map(std::process::ExitCode::from)
}

/// `kgc: error: …` and a `  caused by: …` line per further cause, leaving out a cause whose
/// text the line before already includes (an error that embeds its source in its message).
/// A refused connection is kubectl's one line alone: what was being done when the server was
/// down adds nothing a person needs.
fn error_lines(e: &anyhow::Error) -> Vec<String> {
    if let Some(refused) = e.chain().find_map(kgc_client::Refused::find) {
        return vec![format!("kgc: error: {refused}")];
    }
    let mut lines: Vec<String> = Vec::new();
    let mut last = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !last.is_empty() && last.contains(&text) {
            continue;
        }
        lines.push(match lines.is_empty() {
            true => format!("kgc: error: {text}"),
            false => format!("  caused by: {text}"),
        });
        last = text;
    }
    lines
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // `kgc sync` may give up on a git fetch (`--fetch-timeout`) whose blocking thread cannot be
    // cancelled: once the command is done, that thread must not keep the process alive, as
    // dropping the runtime would. Other commands' blocking work (the store's) is waited for.
    let detach_blocking = matches!(cli.command, Command::Sync(_));
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Controller(args) => controller::run(args).await,
            Command::Gc(args) => gc_cmd::run(args).await,
            Command::Build(args) => deploy_cmd::build(args).await,
            Command::Apply(args) => deploy_cmd::apply(args).await,
            Command::Diff(args) => deploy_cmd::diff(args).await,
            Command::Prune(args) => deploy_cmd::prune(args).await,
            Command::Plan(args) => deploy_cmd::plan(args).await,
            Command::Delete(args) => deploy_cmd::delete(args).await,
            Command::Sync(args) => sync_cmd::run(*args).await,
            Command::Node(args) => node_cmd::run(args).await,
            Command::Tree(args) => tree_cmd::run(args).await,
            Command::Why(args) => why_cmd::run(args).await,
            Command::Completion { shell } => {
                use clap::CommandFactory;
                // Generated into memory: clap_complete panics on a write error, and a reader
                // that stops early (`| head`) is no error.
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut Cli::command(), "kgc", &mut script);
                match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                    _ => Ok(()),
                }
            }
        }
    });
    if detach_blocking {
        runtime.shutdown_background();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_errors_command_is_the_first_word_not_a_flag_or_its_value() {
        let words = |s: &str| {
            s.split(' ')
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            subcommand(words("--log-format json diff --bogus")).as_deref(),
            Some("diff")
        );
        assert_eq!(subcommand(words("-h apply")).as_deref(), Some("apply"));
        assert_eq!(subcommand(words("--bogus")), None);
    }

    #[test]
    fn an_error_is_one_line_per_cause_without_repeats() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(io)
            .context("/x: no such file")
            .context("reading the plan");
        assert_eq!(
            error_lines(&e),
            [
                "kgc: error: reading the plan",
                "  caused by: /x: no such file"
            ]
        );
    }
}
