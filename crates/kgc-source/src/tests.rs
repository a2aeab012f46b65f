//! Fetches from real repositories made by the `git` binary in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

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
        let output = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "kgc")
            .env("GIT_AUTHOR_EMAIL", "kgc@example.invalid")
            .env("GIT_COMMITTER_NAME", "kgc")
            .env("GIT_COMMITTER_EMAIL", "kgc@example.invalid")
            .output()
            .expect("git runs");
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

    let fetched = fetch::fetch(&source, cache.path()).unwrap();
    assert!(fetched.transferred);
    assert_eq!(fetched.commit.to_string(), first);

    let again = fetch::fetch(&source, cache.path()).unwrap();
    assert!(!again.transferred, "an unchanged ref transfers no objects");
    assert_eq!(again.commit.to_string(), first);
    assert_eq!(
        std::fs::read_dir(cache.path()).unwrap().count(),
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
    let repo: PathBuf = std::fs::read_dir(cache.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
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
}
