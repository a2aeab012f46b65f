//! Which `kgc` executable the harness runs. Cargo tells only the integration tests of the `kgc`
//! package where it built the binary (`CARGO_BIN_EXE_kgc`, at compile time), so a test binary
//! names it once with [`bind_kgc!`](crate::bind_kgc) and every helper takes it from the type.

use std::process::{Command, Stdio};

/// A `kgc` executable: implemented by the type [`bind_kgc!`](crate::bind_kgc) declares.
pub trait KgcBinary {
    /// The executable's path.
    const PATH: &'static str;

    /// A `kgc` command, for invocations the harness has no helper for.
    fn command() -> Command {
        Command::new(Self::PATH)
    }

    /// `kgc ARGS` run to its end with its log off (stderr holds only what it prints on
    /// failure) and no stdin: whether it succeeded, its stdout and its stderr.
    fn run(args: &[&str]) -> (bool, String, String) {
        let out = Self::command()
            .args(args)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running kgc {args:?}: {e}"));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Binds the harness to the `kgc` binary Cargo built for this integration test: declares `Kgc`
/// (its [`KgcBinary`]) and `Server`, a [`Server`](crate::Server) of that binary, which shadows
/// the generic one a `use kgc_testsupport::*` imports.
#[macro_export]
macro_rules! bind_kgc {
    () => {
        /// The `kgc` executable Cargo built for this package's integration tests.
        pub enum Kgc {}

        impl $crate::KgcBinary for Kgc {
            const PATH: &'static str = env!("CARGO_BIN_EXE_kgc");
        }

        /// A `kgc serve` of [`Kgc`].
        pub type Server = $crate::Server<Kgc>;
    };
}
