//! Fetches from real repositories made by the `git` binary in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Artifact, Auth, Error, GitRepository, Reference, fetch};

/// A repository made by `git`, independent of the machine's git configuration.
struct Origin {
    dir: tempfile::TempDir,
}

impl Origin {
    fn new() -> Origin {
        let origin = Origin {
            dir: tempfile::tempdir().unwrap(),
        };
        origin.git(&["-c", "init.defaultBranch=main", "init", "-q"]);
        origin
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        self.git_with_input(args, b"")
    }

    fn git_with_input(&self, args: &[&str], input: &[u8]) -> String {
        let mut child = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "kgc")
            .env("GIT_AUTHOR_EMAIL", "kgc@example.invalid")
            .env("GIT_COMMITTER_NAME", "kgc")
            .env("GIT_COMMITTER_EMAIL", "kgc@example.invalid")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("git runs");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// Writes `files` (a `None` content removes the file) and commits them; returns the commit.
    fn commit(&self, files: &[(&str, Option<&[u8]>)]) -> String {
        for (path, content) in files {
            let full = self.path().join(path);
            match content {
                Some(content) => {
                    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                    std::fs::write(full, content).unwrap();
                }
                None => std::fs::remove_file(full).unwrap(),
            }
        }
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", "change"]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Commits index entries `(mode, blob, path)` made with git's plumbing: names and entries
    /// that a work tree cannot easily hold (non-UTF-8 names, gitlinks, thousands of files).
    fn commit_entries(&self, entries: &[(&str, &str, Vec<u8>)]) -> String {
        let mut input = Vec::new();
        for (mode, blob, path) in entries {
            input.extend_from_slice(format!("{mode} {blob}\t").as_bytes());
            input.extend_from_slice(path);
            input.push(0);
        }
        self.git_with_input(&["update-index", "-z", "--add", "--index-info"], &input);
        self.git(&["commit", "-q", "-m", "entries"]);
        self.git(&["rev-parse", "HEAD"])
    }

    fn blob(&self, content: &[u8]) -> String {
        self.git_with_input(&["hash-object", "-w", "--stdin"], content)
    }

    fn source(&self, reference: Reference, paths: &[&str]) -> GitRepository {
        GitRepository {
            url: self.path().display().to_string(),
            reference,
            paths: paths.iter().map(|p| p.to_string()).collect(),
            auth: Auth::Default,
        }
    }
}

fn main() -> Reference {
    Reference::Branch("main".into())
}

/// The commit a fetch resolved to, and whether it received any object.
fn transfer(source: &GitRepository, cache: &Path) -> (String, bool) {
    let fetched = fetch::fetch(source, cache).unwrap();
    (fetched.commit.to_string(), fetched.transferred)
}

/// The cache repositories in `cache`.
fn repositories(cache: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(cache).unwrap().map(|e| e.unwrap().path());
    entries
        .filter(|p| p.extension().is_some_and(|e| e == "git"))
        .collect()
}

fn paths(artifact: &Artifact) -> Vec<&str> {
    artifact.files.iter().map(|f| f.path.as_str()).collect()
}

const CM: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";

fn layout(origin: &Origin) -> String {
    origin.commit(&[
        ("z.yaml", Some(CM)),
        ("README.md", Some(b"# not a manifest")),
        ("deploy/base/a.yml", Some(CM)),
        ("deploy/base/b.json", Some(b"{}")),
        ("deploy/base/notes.txt", Some(b"x")),
        ("deploy/prod/c.yaml", Some(CM)),
        ("deploy/prod/deep/d.yaml", Some(CM)),
    ])
}

#[test]
fn first_fetch_reads_every_manifest_of_the_branch_sorted() {
    let origin = Origin::new();
    let head = layout(&origin);
    let cache = tempfile::tempdir().unwrap();
    let artifact = origin.source(main(), &[]).fetch(cache.path()).unwrap();
    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert_eq!(artifact.commit, head);
    assert_eq!(
        paths(&artifact),
        [
            "deploy/base/a.yml",
            "deploy/base/b.json",
            "deploy/prod/c.yaml",
            "deploy/prod/deep/d.yaml",
            "z.yaml"
        ]
    );
    assert_eq!(artifact.files[4].content, CM);
}

#[test]
fn refetch_sees_a_new_commit_and_transfers_nothing_when_unchanged() {
    let origin = Origin::new();
    let first = origin.commit(&[("a.yaml", Some(CM))]);
    let cache = tempfile::tempdir().unwrap();
    let source = origin.source(main(), &[]);

    assert_eq!(transfer(&source, cache.path()), (first.clone(), true));
    let again = transfer(&source, cache.path());
    assert_eq!(
        again,
        (first, false),
        "an unchanged ref transfers no objects"
    );
    assert_eq!(
        repositories(cache.path()).len(),
        1,
        "one cache repository per URL"
    );

    let second = origin.commit(&[("a.yaml", None), ("b.yaml", Some(CM))]);
    let artifact = source.fetch(cache.path()).unwrap();
    assert_eq!(artifact.commit, second);
    assert_eq!(paths(&artifact), ["b.yaml"]);
}

#[test]
fn tags_and_commits_take_flux_revisions() {
    let origin = Origin::new();
    let v1 = origin.commit(&[("a.yaml", Some(CM))]);
    origin.git(&["tag", "-a", "-m", "release", "v1.0"]);
    origin.git(&["tag", "light"]);
    let v2 = origin.commit(&[("b.yaml", Some(CM))]);
    let cache = tempfile::tempdir().unwrap();

    let tagged = origin
        .source(Reference::Tag("v1.0".into()), &[])
        .fetch(cache.path())
        .unwrap();
    assert_eq!(
        (tagged.revision.as_str(), paths(&tagged)),
        (format!("v1.0@sha1:{v1}").as_str(), vec!["a.yaml"])
    );
    let light = origin
        .source(Reference::Tag("light".into()), &[])
        .fetch(cache.path())
        .unwrap();
    assert_eq!(light.revision, format!("light@sha1:{v1}"));

    let branch = origin.source(main(), &[]).fetch(cache.path()).unwrap();
    assert_eq!(branch.revision, format!("main@sha1:{v2}"));
    // Fetched by id from a fresh cache, and from the cache that already has it.
    for cache in [
        tempfile::tempdir().unwrap().path().to_owned(),
        cache.path().to_owned(),
    ] {
        let pinned = origin
            .source(Reference::Commit(v1.clone()), &[])
            .fetch(&cache)
            .unwrap();
        assert_eq!(
            (pinned.revision, pinned.commit.as_str()),
            (format!("sha1:{v1}"), v1.as_str())
        );
    }
}

#[test]
fn paths_select_directories_and_files() {
    let origin = Origin::new();
    layout(&origin);
    let cache = tempfile::tempdir().unwrap();
    let fetch = |p: &[&str]| origin.source(main(), p).fetch(cache.path());

    assert_eq!(
        paths(&fetch(&["deploy/prod"]).unwrap()),
        ["deploy/prod/c.yaml", "deploy/prod/deep/d.yaml"]
    );
    assert_eq!(
        paths(&fetch(&["./deploy/base/"]).unwrap()),
        ["deploy/base/a.yml", "deploy/base/b.json"]
    );
    assert_eq!(
        paths(&fetch(&["z.yaml", "deploy/prod/deep", "deploy/prod"]).unwrap()),
        ["deploy/prod/c.yaml", "deploy/prod/deep/d.yaml", "z.yaml"],
        "overlapping paths give each file once"
    );
    assert_eq!(
        paths(&fetch(&["/deploy/prod/deep/d.yaml"]).unwrap()),
        ["deploy/prod/deep/d.yaml"]
    );
    assert_eq!(paths(&fetch(&["."]).unwrap()).len(), 5);
}

#[test]
fn a_missing_path_or_reference_is_an_error_naming_it() {
    let origin = Origin::new();
    let head = layout(&origin);
    let cache = tempfile::tempdir().unwrap();
    let url = origin.path().display().to_string();
    let err = |reference: Reference, p: &[&str]| {
        origin.source(reference, p).fetch(cache.path()).unwrap_err()
    };

    let missing = err(main(), &["deploy/prod", "deploy/x"]);
    assert!(matches!(missing, Error::PathNotFound { .. }));
    assert_eq!(
        missing.to_string(),
        format!("path deploy/x does not exist at main@sha1:{head} of {url}")
    );
    assert!(matches!(
        err(main(), &["z.yaml/inner"]),
        Error::PathNotFound { .. }
    ));
    assert!(
        err(main(), &["README.md"])
            .to_string()
            .contains("README.md at main@sha1:")
    );
    assert!(
        err(main(), &["../etc"])
            .to_string()
            .contains("outside the repository")
    );

    let branch = err(Reference::Branch("nope".into()), &[]);
    assert_eq!(
        branch.to_string(),
        format!("branch nope not found in {url}")
    );
    let tag = err(Reference::Tag("v9".into()), &[]);
    assert_eq!(tag.to_string(), format!("tag v9 not found in {url}"));
    let commit = err(Reference::Commit("0".repeat(40)), &[]);
    assert!(commit.to_string().contains(&url), "{commit}");
    assert!(matches!(
        err(Reference::Commit("abc".into()), &[]),
        Error::Invalid { .. }
    ));

    let nowhere = GitRepository {
        url: "/nonexistent/repo".into(),
        ..origin.source(main(), &[])
    };
    let err = nowhere.fetch(cache.path()).unwrap_err();
    assert!(
        err.to_string().starts_with("fetching /nonexistent/repo"),
        "{err}"
    );
}

#[test]
fn file_urls_and_plain_paths_fetch_alike() {
    let origin = Origin::new();
    let head = origin.commit(&[("a.yaml", Some(CM))]);
    let cache = tempfile::tempdir().unwrap();
    let file_url = GitRepository {
        url: format!("file://{}", origin.path().display()),
        ..origin.source(main(), &[])
    };
    let artifact = file_url.fetch(cache.path()).unwrap();
    assert_eq!(
        (artifact.commit.as_str(), paths(&artifact)),
        (head.as_str(), vec!["a.yaml"])
    );
    assert_eq!(
        artifact,
        origin.source(main(), &[]).fetch(cache.path()).unwrap()
    );
}

#[test]
fn links_resolve_within_the_repository_only() {
    let origin = Origin::new();
    origin.commit(&[("real/a.yaml", Some(CM)), ("docs/readme.md", Some(b"x"))]);
    std::os::unix::fs::symlink("../real/a.yaml", origin.path().join("docs/alias.yaml")).unwrap();
    std::os::unix::fs::symlink("real", origin.path().join("linked")).unwrap();
    std::os::unix::fs::symlink("readme.md", origin.path().join("docs/other.md")).unwrap();
    origin.commit(&[]);
    let cache = tempfile::tempdir().unwrap();
    let fetch = |p: &[&str]| origin.source(main(), p).fetch(cache.path());

    let artifact = fetch(&["docs"]).unwrap();
    assert_eq!(paths(&artifact), ["docs/alias.yaml"]);
    assert_eq!(artifact.files[0].content, CM);
    assert_eq!(
        paths(&fetch(&["linked"]).unwrap()),
        ["linked/a.yaml"],
        "an explicit path follows links"
    );
    assert_eq!(
        paths(&fetch(&[]).unwrap()),
        ["docs/alias.yaml", "real/a.yaml"],
        "directory links are not walked"
    );

    std::os::unix::fs::symlink("/etc/passwd", origin.path().join("docs/passwd.yaml")).unwrap();
    std::os::unix::fs::symlink("../../etc/hosts", origin.path().join("docs/hosts.yaml")).unwrap();
    origin.commit(&[]);
    let err = fetch(&["docs"]).unwrap_err();
    assert!(
        err.to_string().contains("a link outside the repository"),
        "{err}"
    );
}

#[test]
fn oversized_and_binary_manifests_are_errors() {
    let origin = Origin::new();
    origin.commit(&[
        ("bin/x.yaml", Some(&[0xff, 0xfe, 0x00])),
        ("ok/a.yaml", Some(CM)),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let fetch = |p: &[&str]| origin.source(main(), p).fetch(cache.path());
    assert!(fetch(&["ok"]).is_ok());
    let err = fetch(&["bin"]).unwrap_err();
    assert!(
        err.to_string().starts_with("bin/x.yaml at main@sha1:")
            && err.to_string().ends_with(": not UTF-8"),
        "{err}"
    );

    let big = vec![b'#'; (crate::MAX_MANIFEST_BYTES + 1) as usize];
    origin.commit(&[("big/x.yaml", Some(&big))]);
    let err = fetch(&["big"]).unwrap_err();
    assert!(err.to_string().contains("more than the 8 MiB"), "{err}");
}

#[test]
fn a_broken_cache_is_made_anew() {
    let origin = Origin::new();
    let head = origin.commit(&[("a.yaml", Some(CM))]);
    let cache = tempfile::tempdir().unwrap();
    origin.source(main(), &[]).fetch(cache.path()).unwrap();
    let [repo] = &repositories(cache.path())[..] else {
        panic!("one cache repository")
    };
    std::fs::remove_dir_all(repo.join("objects")).unwrap();
    assert_eq!(
        origin
            .source(main(), &[])
            .fetch(cache.path())
            .unwrap()
            .commit,
        head
    );
}

#[test]
fn an_unreachable_remote_is_a_fetch_error_naming_it() {
    let cache = tempfile::tempdir().unwrap();
    let source = GitRepository {
        url: "ssh://git@127.0.0.1:1/repo.git".into(),
        reference: main(),
        paths: vec![],
        auth: Auth::SshKey("/nonexistent/kgc-key".into()),
    };
    let err = source.fetch(cache.path()).unwrap_err();
    assert_eq!(err.to_string(), "fetching ssh://git@127.0.0.1:1/repo.git");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the transport's cause is kept"
    );

    let https = GitRepository {
        url: "https://bot:s3cr3t@127.0.0.1:1/repo.git".into(),
        auth: Auth::Default,
        ..source
    };
    let err = https.fetch(cache.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "fetching https://bot:***@127.0.0.1:1/repo.git"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn a_force_pushed_branch_is_followed() {
    let origin = Origin::new();
    let first = origin.commit(&[("a.yaml", Some(CM))]);
    let cache = tempfile::tempdir().unwrap();
    let source = origin.source(main(), &[]);
    assert_eq!(source.fetch(cache.path()).unwrap().commit, first);

    origin.git(&["commit", "-q", "--amend", "-m", "rewritten"]);
    let rewritten = origin.git(&["rev-parse", "HEAD"]);
    assert_ne!(rewritten, first);
    assert_eq!(source.fetch(cache.path()).unwrap().commit, rewritten);

    origin.git(&["reset", "-q", "--hard", &first]);
    assert_eq!(
        transfer(&source, cache.path()),
        (first, false),
        "a cached tip is not fetched again"
    );
}

#[test]
fn runs_sharing_a_cache_take_turns() {
    let origin = Origin::new();
    let head = layout(&origin);
    let cache = tempfile::tempdir().unwrap();
    let source = origin.source(main(), &[]);
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| source.fetch(cache.path())))
            .collect();
        for run in runs {
            assert_eq!(run.join().unwrap().unwrap().commit, head);
        }
    });
}

#[test]
fn submodules_and_non_utf8_names_are_not_read() {
    let origin = Origin::new();
    let cm = origin.blob(CM);
    let commit = origin.commit(&[("a.yaml", Some(CM))]);
    origin.commit_entries(&[("160000", &commit, b"sub".to_vec())]);
    let cache = tempfile::tempdir().unwrap();
    let fetch = |p: &[&str]| origin.source(main(), p).fetch(cache.path());
    assert_eq!(
        paths(&fetch(&[]).unwrap()),
        ["a.yaml"],
        "a submodule is not walked"
    );
    let err = fetch(&["sub"]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("a submodule, which kgc does not fetch"),
        "{err}"
    );

    origin.commit_entries(&[
        ("100644", &cm, b"bad/\xff.yaml".to_vec()),
        ("100644", &cm, b"bad/\xff.png".to_vec()),
        ("100644", &cm, b"ok/\xff.md".to_vec()),
    ]);
    assert_eq!(
        paths(&fetch(&["ok"]).unwrap()),
        Vec::<&str>::new(),
        "only manifests need UTF-8 names"
    );
    let err = fetch(&["bad"]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("bad/\u{fffd}.yaml at main@sha1:"),
        "{err}"
    );
    assert!(err.to_string().ends_with(": not UTF-8"), "{err}");
}

#[test]
fn more_than_the_file_limit_is_an_error() {
    let origin = Origin::new();
    let cm = origin.blob(CM);
    let entries: Vec<_> = (0..=crate::MAX_FILES)
        .map(|i| ("100644", cm.as_str(), format!("many/{i}.yaml").into_bytes()))
        .collect();
    origin.commit_entries(&entries);
    let cache = tempfile::tempdir().unwrap();
    let err = origin.source(main(), &[]).fetch(cache.path()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooManyFiles {
                limit: crate::MAX_FILES,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .ends_with("more than 20000 manifest files under the given paths"),
        "{err}"
    );
}

#[test]
fn a_work_tree_holds_the_whole_commit_and_nothing_outside_it() {
    use std::os::unix::fs::PermissionsExt;
    let origin = Origin::new();
    origin.commit(&[
        (".flux.yaml", Some(b"version: 1\n")),
        ("deploy/a.yaml", Some(CM)),
        ("deploy/gen.sh", Some(b"#!/bin/sh\ncat a.yaml\n")),
        ("chart/templates/_helpers.tpl", Some(b"{{/* */}}")),
    ]);
    let script = origin.path().join("deploy/gen.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("../deploy/a.yaml", origin.path().join("chart/a.yaml")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", origin.path().join("chart/passwd")).unwrap();
    std::os::unix::fs::symlink("../..", origin.path().join("chart/up")).unwrap();
    origin.commit(&[]);
    origin.commit_entries(&[(
        "160000",
        &origin.git(&["rev-parse", "HEAD"]),
        b"sub".to_vec(),
    )]);

    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let artifact = origin
        .source(main(), &["deploy"])
        .fetch_into(cache.path(), work.path())
        .unwrap();
    assert_eq!(
        paths(&artifact),
        [".flux.yaml", "deploy/a.yaml"],
        "the paths' manifests and the .flux.yaml above them"
    );
    let w = work.path();
    assert_eq!(
        std::fs::read(w.join(".flux.yaml")).unwrap(),
        b"version: 1\n"
    );
    assert_eq!(
        std::fs::read(w.join("chart/templates/_helpers.tpl")).unwrap(),
        b"{{/* */}}"
    );
    let mode = std::fs::metadata(w.join("deploy/gen.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable blobs stay executable");
    assert_eq!(
        std::fs::read(w.join("chart/a.yaml")).unwrap(),
        CM,
        "a link within is kept"
    );
    assert!(
        std::fs::symlink_metadata(w.join("chart/passwd")).is_err(),
        "a link outside is not"
    );
    assert!(std::fs::symlink_metadata(w.join("chart/up")).is_err());
    assert!(w.join("sub").is_dir(), "a submodule is an empty directory");
    assert_eq!(std::fs::read_dir(w.join("sub")).unwrap().count(), 0);
    assert!(!w.join(".git").exists());
}

#[test]
fn the_flux_config_nearest_above_a_path_is_in_its_artifact() {
    let origin = Origin::new();
    origin.commit(&[
        (".flux.yaml", Some(b"version: 1\n")),
        ("staging/app/a.yaml", Some(CM)),
        ("yamls/.flux.yaml", Some(b"version: 1\nscanForFiles: {}\n")),
        ("yamls/deep/b.yaml", Some(CM)),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let fetch = |p: &[&str]| origin.source(main(), p).fetch(cache.path()).unwrap();
    assert_eq!(
        paths(&fetch(&["staging/app"])),
        [".flux.yaml", "staging/app/a.yaml"]
    );
    assert_eq!(
        paths(&fetch(&["yamls/deep"])),
        ["yamls/.flux.yaml", "yamls/deep/b.yaml"],
        "only the nearest"
    );
    assert_eq!(
        paths(&fetch(&["yamls"])),
        ["yamls/.flux.yaml", "yamls/deep/b.yaml"]
    );
    assert_eq!(
        paths(&fetch(&["staging/app/a.yaml"])),
        ["staging/app/a.yaml"],
        "a file path has none"
    );
}
