//! The machine's `kubectl` against a [`Server`]: its path (tests never skip when it is
//! missing), runs with a deadline, and long-running invocations (`get -w`).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::server::Server;

/// How long one `kubectl` run may take.
const KUBECTL_DEADLINE: Duration = Duration::from_secs(60);

/// What to install when `kubectl` is missing.
const KUBECTL_PACKAGE_HINT: &str = "kubectl is required by the kgc integration tests but was not found on PATH: \
     install it (Debian/Ubuntu: `apt-get install kubernetes-client`; Google Cloud SDK: \
     `gcloud components install kubectl`, or the `google-cloud-cli-kubectl`/`kubectl` package)";

/// `kubectl`'s path; panics naming the package when it is missing.
fn kubectl_path() -> PathBuf {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|d| d.join("kubectl"))
                .find(|p| is_executable(p))
        })
        .clone()
        .unwrap_or_else(|| panic!("{KUBECTL_PACKAGE_HINT}"))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[track_caller]
fn assert_success(args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl<B> Server<B> {
    /// Runs `kubectl` against this server (`KUBECONFIG` and a per-server `KUBECACHEDIR`).
    pub async fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None).await
    }

    /// Runs `kubectl` with `input` on its stdin (for `-f -`).
    pub async fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        self.kubectl_with_stdin(args, Some(input)).await
    }

    /// Runs `kubectl`, asserting success; returns stdout.
    pub async fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert_success(args, &out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `kubectl` with stdin, asserting success; returns stdout.
    pub async fn kubectl_stdin_ok(&self, args: &[&str], input: &str) -> String {
        let out = self.kubectl_stdin(args, input).await;
        assert_success(args, &out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn kubectl_with_stdin(&self, args: &[&str], input: Option<&str>) -> Output {
        run_kubectl(self.kubectl_command(args), "kubectl", args, input).await
    }

    /// A `kubectl` command set up for this server, for long-running invocations (`get -w`).
    /// The child is killed when dropped.
    pub fn kubectl_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(kubectl_path());
        cmd.args(args)
            .env("KUBECONFIG", self.kubeconfig_path())
            .env("KUBECACHEDIR", self.scratch().join("kubecache"))
            .kill_on_drop(true);
        cmd
    }
}

/// Runs a kubectl `cmd` (`what` names it in failures), feeding it `input` on stdin, and waits
/// for it within a minute.
pub async fn run_kubectl(
    mut cmd: tokio::process::Command,
    what: &str,
    args: &[&str],
    input: Option<&str>,
) -> Output {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    if let Some(input) = input {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("writing {what}'s stdin: {e}"));
        drop(stdin);
    }
    match tokio::time::timeout(KUBECTL_DEADLINE, child.wait_with_output()).await {
        Ok(out) => out.unwrap_or_else(|e| panic!("running {what}: {e}")),
        Err(_) => panic!("{what} {args:?} did not finish within {KUBECTL_DEADLINE:?}"),
    }
}
