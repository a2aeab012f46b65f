//! Finding, refusing and running `.flux.yaml` generators in real directories.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Error, Options, Plan, plan};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn enabled(root: &Path) -> Options {
    Options {
        enabled: true,
        root: Some(root.to_owned()),
        ..Options::default()
    }
}

fn generation(target: &Path, options: &Options) -> crate::Generation {
    match plan(target, options).unwrap() {
        Plan::Generate(g) => g,
        Plan::Read => panic!("{} is read, not generated", target.display()),
    }
}

fn names(text: &str) -> Vec<String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    docs.iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\n";

#[test]
fn generators_run_in_the_target_path_and_their_outputs_are_one_stream() {
    let repo = tempfile::tempdir().unwrap();
    // One .flux.yaml at the top serves staging/; commands run in staging/.
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated:\n  generators:\n  - command: cat cm.yaml\n  - command: \"printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: %s}' \\\"$(basename \\\"$PWD\\\")\\\"\"\n",
    );
    write(repo.path(), "staging/cm.yaml", CM);
    let g = generation(&repo.path().join("staging"), &enabled(repo.path()));
    assert_eq!(g.config_file(), Path::new(".flux.yaml"));
    let out = g.run().unwrap();
    assert_eq!(names(&out.text), ["from-file", "staging"]);
}

#[test]
fn a_config_above_the_root_or_below_the_target_does_not_apply() {
    let outer = tempfile::tempdir().unwrap();
    write(
        outer.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'true'}]}\n",
    );
    let repo = outer.path().join("repo");
    write(&repo, "app/cm.yaml", CM);
    assert!(matches!(
        plan(&repo.join("app"), &enabled(&repo)).unwrap(),
        Plan::Read
    ));

    // Below the target: refused, naming the directory to sync instead.
    write(
        &repo,
        "app/overlay/.flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'true'}]}\n",
    );
    let err = plan(&repo.join("app"), &enabled(&repo))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "app/overlay/.flux.yaml: below the synced path app, where it does not apply (a .flux.yaml applies to its own directory and those below it); sync app/overlay itself"
    );
    // … unless it only says scanForFiles.
    write(
        &repo,
        "app/overlay/.flux.yaml",
        "version: 1\nscanForFiles: {}\n",
    );
    assert!(matches!(
        plan(&repo.join("app"), &enabled(&repo)).unwrap(),
        Plan::Read
    ));
}

#[test]
fn without_the_flag_a_generating_config_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "deploy/.flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'touch ran'}]}\n",
    );
    let disabled = Options {
        root: Some(repo.path().to_owned()),
        ..Options::default()
    };
    for target in ["deploy", "", "deploy/.flux.yaml"] {
        let err = plan(&repo.path().join(target), &disabled)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "deploy/.flux.yaml: manifest generation is disabled; pass --manifest-generation to run its generators",
            "{target}"
        );
    }
    assert!(!repo.path().join("deploy/ran").exists());
    // scanForFiles generates nothing: read, flag or not.
    write(
        repo.path(),
        "deploy/.flux.yaml",
        "version: 1\nscanForFiles: {}\n",
    );
    assert!(matches!(
        plan(&repo.path().join("deploy"), &disabled).unwrap(),
        Plan::Read
    ));
    // An invalid config is reported as such.
    write(repo.path(), "deploy/.flux.yaml", "version: 3\n");
    let err = plan(&repo.path().join("deploy"), &disabled)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "deploy/.flux.yaml: version: must be 1, not 3");
}

#[test]
fn the_enclosing_git_work_tree_bounds_the_lookup() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: cat cm.yaml}]}\n",
    );
    write(repo.path(), "env/cm.yaml", CM);
    let options = Options {
        enabled: true,
        ..Options::default()
    };
    let g = generation(&repo.path().join("env"), &options);
    assert_eq!(names(&g.run().unwrap().text), ["from-file"]);
}

#[test]
fn a_failing_generator_reports_its_exit_code_and_stderr() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated:\n  generators:\n  - command: \"echo partial; echo 'Error: chart not found' >&2; echo second line >&2; exit 3\"\n  - command: touch never\n",
    );
    let err = generation(repo.path(), &enabled(repo.path()))
        .run()
        .unwrap_err();
    let Error::Failed { ref stderr, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(stderr, "Error: chart not found\nsecond line\n");
    assert_eq!(
        err.to_string(),
        ".flux.yaml: generator \"echo partial; echo 'Error: chart not found' >&2; echo second line >&2; exit 3\" failed with exit code 3; stderr: Error: chart not found | second line"
    );
    // The first failure stops the run.
    assert!(!repo.path().join("never").exists());

    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'yes | head -c 100000 >&2; exit 1'}]}\n",
    );
    let Error::Failed { stderr, .. } = generation(repo.path(), &enabled(repo.path()))
        .run()
        .unwrap_err()
    else {
        panic!()
    };
    assert!(
        stderr.starts_with('…') && stderr.len() <= crate::generator::STDERR_KEPT + 4,
        "{}",
        stderr.len()
    );
}

/// Whether a process is gone (or a zombie, which runs nothing).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_generator_past_its_timeout_is_killed_with_its_children() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated:\n  generators:\n  - command: \"sleep 300 & echo $! > child.pid; wait\"\n    timeout: 1s\n",
    );
    let started = Instant::now();
    let err = generation(repo.path(), &enabled(repo.path()))
        .run()
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(err, Error::Failed { failure: crate::generator::Failure::TimedOut(t), .. } if t == Duration::from_secs(1)),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("did not finish within 1s"),
        "{err}"
    );
    let pid = std::fs::read_to_string(repo.path().join("child.pid")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(pid.trim()) {
        assert!(
            Instant::now() < deadline,
            "the generator's child {pid} lives on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_background_process_holding_stdout_counts_against_the_timeout() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'sleep 300 &', timeout: 1s}]}\n",
    );
    let err = generation(repo.path(), &enabled(repo.path()))
        .run()
        .unwrap_err();
    assert!(
        err.to_string().contains("did not finish within 1s"),
        "{err}"
    );
}

#[test]
fn output_past_the_limit_fails_the_generator() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: 'yes'}]}\n",
    );
    let options = Options {
        max_output: 1 << 20,
        ..enabled(repo.path())
    };
    let err = generation(repo.path(), &options)
        .run()
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        ".flux.yaml: generator \"yes\" printed more than 1 MiB; its processes were killed"
    );
    write(
        repo.path(),
        ".flux.yaml",
        "version: 1\ncommandUpdated: {generators: [{command: \"printf '\\\\377'\"}]}\n",
    );
    let err = generation(repo.path(), &options)
        .run()
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("printed something that is not UTF-8 text"),
        "{err}"
    );
}

#[test]
fn patch_updated_applies_the_patch_file_to_the_generated_objects() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "app/.flux.yaml",
        "version: 1\npatchUpdated:\n  generators: [{command: cat base.yaml}]\n  patchFile: patches/flux-patch.yaml\n",
    );
    write(
        repo.path(),
        "app/base.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  template: {spec: {containers: [{name: app, image: 'app:1'}]}}\n",
    );
    let options = enabled(repo.path());
    let target = repo.path().join("app");
    // The patch file's directory must exist; the file itself may not yet.
    let err = generation(&target, &options).run().unwrap_err().to_string();
    assert_eq!(
        err,
        "app/.flux.yaml: patchFile patches/flux-patch.yaml: its directory does not exist"
    );
    std::fs::create_dir(target.join("patches")).unwrap();
    let out = generation(&target, &options).run().unwrap();
    let mut docs: Vec<Value> = serde_saphyr::from_multiple(&out.text).unwrap();
    out.patch(docs.iter_mut()).unwrap();
    assert_eq!(docs[0]["spec"]["replicas"], 1);

    write(
        &target,
        "patches/flux-patch.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template: {spec: {containers: [{name: app, image: 'app:2'}]}}\n",
    );
    let out = generation(&target, &options).run().unwrap();
    let mut docs: Vec<Value> = serde_saphyr::from_multiple(&out.text).unwrap();
    out.patch(docs.iter_mut()).unwrap();
    assert_eq!(
        docs[0]["spec"]["template"]["spec"]["containers"][0]["image"],
        "app:2"
    );
    assert_eq!(docs[0]["spec"]["replicas"], 1);
}
