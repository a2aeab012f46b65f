//! Which commit of the repository to read: Flux's `GitRepositoryRef` (branch, tag or commit;
//! `fluxcd/source-controller api/v1/gitrepository_types.go`), and the revision string it yields.

use std::fmt;

use gix::ObjectId;

/// `--branch`, `--tag` or `--commit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Branch(String),
    Tag(String),
    /// A full 40-hex commit id: commits are immutable, so a cached one is never fetched again.
    Commit(String),
}

impl Reference {
    /// The full ref name on the remote; `None` for a commit, fetched by id.
    pub(crate) fn full_name(&self) -> Option<String> {
        match self {
            Reference::Branch(b) => Some(format!("refs/heads/{b}")),
            Reference::Tag(t) => Some(format!("refs/tags/{t}")),
            Reference::Commit(_) => None,
        }
    }

    /// The fetch refspec: the ref into the same name in the bare cache (a mirror of what was
    /// asked for), or the bare commit id.
    pub(crate) fn refspec(&self) -> String {
        match (self.full_name(), self) {
            (Some(name), _) => format!("+{name}:{name}"),
            (None, Reference::Commit(id)) => id.clone(),
            (None, _) => unreachable!("only a commit has no ref name"),
        }
    }

    /// Rejects what git would refuse anyway, with an error naming the reference, before any
    /// network round trip.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            Reference::Commit(id) => {
                if id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(())
                } else {
                    Err(format!("commit {id:?} is not a full 40-hex commit id"))
                }
            }
            Reference::Branch(name) | Reference::Tag(name) => {
                let full = self.full_name().unwrap_or_default();
                match gix::refs::FullName::try_from(full.as_str()) {
                    Ok(_) if !name.is_empty() => Ok(()),
                    _ => Err(format!("{self} is not a valid reference name")),
                }
            }
        }
    }

    /// Flux v2's revision: `<branch or tag>@sha1:<hex>`, or `sha1:<hex>` for a commit
    /// (`fluxcd/pkg git/git.go`, `Commit.String`).
    pub(crate) fn revision(&self, commit: ObjectId) -> String {
        match self {
            Reference::Branch(name) | Reference::Tag(name) => format!("{name}@sha1:{commit}"),
            Reference::Commit(_) => format!("sha1:{commit}"),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Branch(b) => write!(f, "branch {b}"),
            Reference::Tag(t) => write!(f, "tag {t}"),
            Reference::Commit(c) => write!(f, "commit {c}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refspecs_mirror_the_ref_or_name_the_commit() {
        assert_eq!(
            Reference::Branch("main".into()).refspec(),
            "+refs/heads/main:refs/heads/main"
        );
        assert_eq!(
            Reference::Tag("v1.0".into()).refspec(),
            "+refs/tags/v1.0:refs/tags/v1.0"
        );
        let id = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(Reference::Commit(id.into()).refspec(), id);
    }

    #[test]
    fn revisions_take_flux_v2_form() {
        let id = ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
        assert_eq!(
            Reference::Branch("main".into()).revision(id),
            format!("main@sha1:{id}")
        );
        assert_eq!(
            Reference::Tag("v1.0".into()).revision(id),
            format!("v1.0@sha1:{id}")
        );
        assert_eq!(
            Reference::Commit(id.to_string()).revision(id),
            format!("sha1:{id}")
        );
    }

    #[test]
    fn invalid_references_are_refused() {
        assert!(Reference::Commit("abc123".into()).validate().is_err());
        assert!(Reference::Commit("g".repeat(40)).validate().is_err());
        assert!(Reference::Branch("".into()).validate().is_err());
        assert!(Reference::Branch("a..b".into()).validate().is_err());
        assert!(Reference::Branch("feature/x".into()).validate().is_ok());
        assert!(Reference::Tag("v1.0".into()).validate().is_ok());
    }
}
