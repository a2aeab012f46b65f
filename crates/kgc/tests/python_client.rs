//! The official Kubernetes Python client (`pip install kubernetes==37.0.2`) against `kgc serve`:
//! create, list, watch (a stream with a timeout), patch, scale, delete with each propagation
//! policy, a custom resource through CustomObjectsApi, and reading, patching and deleting a
//! `system:*` ClusterRole (the client percent-encodes the colon). The script is
//! `tests/python/smoke.py`; it raises on the first failed expectation.
//!
//! The server runs as users run it (HTTPS, client-certificate authentication, RBAC), so the client's
//! TLS verification and certificate authentication are exercised too.
//!
//! When the client is not installed the test fails naming the pip package (never skips).

kgc_testsupport::bind_kgc!();

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kgc_testsupport::*;

const PIP_HINT: &str = "the Python client smoke test needs python3 with the official Kubernetes \
     client: `pip install kubernetes==37.0.2` (.ci/run installs it)";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/smoke.py")
}

/// Fails naming the pip package when `import kubernetes` does not work.
fn require_client() {
    let out = std::process::Command::new("python3")
        .args(["-c", "import kubernetes; print(kubernetes.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("running python3 failed ({e}); {PIP_HINT}"));
    assert!(
        out.status.success(),
        "`import kubernetes` failed: {}\n{PIP_HINT}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn python_client_smoke() {
    require_client();
    // As users run it: TLS verified against the server's CA, a client certificate, RBAC.
    let s = Server::start_secure(&["--in-memory"]).await;
    let ns = unique("py");
    let mut cmd = tokio::process::Command::new("python3");
    cmd.arg(script())
        .arg(s.kubeconfig_path())
        .arg(&ns)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawning python3");
    let out = match tokio::time::timeout(Duration::from_secs(120), child.wait_with_output()).await {
        Ok(out) => out.expect("running python3"),
        Err(_) => panic!("the Python client smoke test did not finish within 120 s"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python client smoke test failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let steps: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        steps,
        [
            "create and read",
            "list with a label selector",
            "patch: strategic, merge, json",
            "watch",
            "scale subresource",
            "delete: Background, Foreground, Orphan",
            "custom resources",
            "names with a colon",
            "version and discovery",
            "OK",
        ],
        "stderr:\n{stderr}"
    );
}
