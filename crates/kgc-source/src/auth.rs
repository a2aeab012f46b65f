//! Credentials for a fetch, Flux's `GitRepository.spec.secretRef` without the Secret: an ssh key
//! file, or an HTTP token read from a file or the environment at every fetch (so a rotated token
//! is picked up by the next run). Tokens are never logged: they only reach gix's credential
//! callback.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use gix::credentials::helper::Action;
use gix::credentials::protocol::Outcome;
use gix::sec::identity::Account;
use gix::url::Scheme;

use crate::Error;

/// Where the credentials of a fetch come from.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Auth {
    /// What git does: ssh-agent and `~/.ssh` for ssh, credential helpers for https.
    #[default]
    Default,
    /// An ssh private key file, used alone (`-i KEY -o IdentitiesOnly=yes`).
    SshKey(PathBuf),
    /// An HTTP(S) token (GitHub/GitLab personal or app token) in a file; surrounding whitespace
    /// is ignored.
    TokenFile(PathBuf),
    /// An HTTP(S) token in an environment variable.
    TokenEnv(String),
}

/// The user name sent with a token when the URL names none: GitHub takes any name with a
/// personal token and needs this one with an app installation token; GitLab takes any name.
const TOKEN_USER: &str = "x-access-token";

impl Auth {
    /// Refuses credentials that the URL's transport cannot use, so a typo in `--git` does not
    /// silently fall back to anonymous access.
    pub(crate) fn check_scheme(&self, url: &str, scheme: &Scheme) -> Result<(), Error> {
        let invalid = |reason: &str| Error::Invalid {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        match (self, scheme) {
            (Auth::Default, _) => Ok(()),
            (Auth::SshKey(_), Scheme::Ssh) => Ok(()),
            (Auth::SshKey(_), _) => {
                Err(invalid("an ssh key needs an ssh:// or user@host:path URL"))
            }
            (Auth::TokenFile(_) | Auth::TokenEnv(_), Scheme::Http | Scheme::Https) => Ok(()),
            (Auth::TokenFile(_) | Auth::TokenEnv(_), _) => {
                Err(invalid("a token needs an https:// URL"))
            }
        }
    }

    /// Points the cache repository's in-memory configuration (never its file: the key may
    /// change between runs) at a key file, as `git -c core.sshCommand=…` would.
    pub(crate) fn configure(&self, repo: &mut gix::Repository) -> gix::Result<()> {
        if let Auth::SshKey(key) = self {
            let mut config = repo.config_snapshot_mut();
            config.set_value(
                &gix::config::tree::Core::SSH_COMMAND,
                ssh_command(key).as_str(),
            )?;
        }
        Ok(())
    }

    /// The HTTP account for a token, if this is one; `user` is the URL's own user name.
    pub(crate) fn http_account(
        &self,
        url: &str,
        user: Option<&str>,
    ) -> Result<Option<Account>, Error> {
        let (token, from) = match self {
            Auth::Default | Auth::SshKey(_) => return Ok(None),
            Auth::TokenFile(path) => {
                let token = std::fs::read_to_string(path).map_err(|source| Error::Credentials {
                    url: url.to_owned(),
                    from: path.display().to_string(),
                    source,
                })?;
                (token, path.display().to_string())
            }
            Auth::TokenEnv(var) => {
                let token = std::env::var(var).map_err(|e| Error::Credentials {
                    url: url.to_owned(),
                    from: format!("${var}"),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, e),
                })?;
                (token, format!("${var}"))
            }
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::Credentials {
                url: url.to_owned(),
                from,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "the token is empty"),
            });
        }
        Ok(Some(Account {
            username: user
                .filter(|u| !u.is_empty())
                .unwrap_or(TOKEN_USER)
                .to_owned(),
            password: token.to_owned(),
            oauth_refresh_token: None,
        }))
    }
}

/// `url` for errors, logs, records and events: the password of its user info
/// (`https://user:TOKEN@host/…`) becomes `***`, and so does a lone http(s) user, which GitHub
/// and GitLab accept as a token (`https://TOKEN@host/…`); ssh's user (`ssh://git@host`) is no
/// secret and stays.
pub fn redact(url: &str) -> Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Cow::Borrowed(url);
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return Cow::Borrowed(url);
    };
    let user = match authority[..at].split_once(':') {
        Some((name, _)) => format!("{name}:***"),
        None if scheme.starts_with("http") => "***".to_owned(),
        None => return Cow::Borrowed(url),
    };
    Cow::Owned(format!("{scheme}://{user}{}", &rest[at..]))
}

/// gix's credential callback for a token: every `get` gets the account; nothing is stored or
/// erased, since the token is not ours to keep.
pub(crate) fn answer(account: &Account, action: Action) -> Option<Outcome> {
    match action {
        Action::Get(context) => Some(Outcome {
            identity: account.clone(),
            next: context.into(),
        }),
        Action::Store(_) | Action::Erase(_) => None,
    }
}

/// `ssh -i 'KEY' -o IdentitiesOnly=yes`: git runs `core.sshCommand` through the shell, so the
/// path is single-quoted (a `'` in it closed, escaped and reopened).
fn ssh_command(key: &Path) -> String {
    let quoted = key.display().to_string().replace('\'', r"'\''");
    format!("ssh -i '{quoted}' -o IdentitiesOnly=yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_key_becomes_the_repository_ssh_command() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = gix::init_bare(dir.path()).unwrap();
        Auth::SshKey("/keys/deploy key".into())
            .configure(&mut repo)
            .unwrap();
        assert_eq!(
            repo.config_snapshot()
                .string("core.sshCommand")
                .unwrap()
                .to_string(),
            "ssh -i '/keys/deploy key' -o IdentitiesOnly=yes"
        );
        let on_disk = std::fs::read_to_string(dir.path().join("config")).unwrap();
        assert!(!on_disk.contains("sshCommand"), "{on_disk}");
        assert_eq!(
            ssh_command(Path::new("/k/it's")),
            r"ssh -i '/k/it'\''s' -o IdentitiesOnly=yes"
        );
    }

    #[test]
    fn a_token_answers_every_get_and_stores_nothing() {
        let account = Account {
            username: "u".into(),
            password: "p".into(),
            oauth_refresh_token: None,
        };
        let outcome = answer(&account, Action::get_for_url("https://h/r")).unwrap();
        assert_eq!(outcome.identity, account);
        assert!(answer(&account, Action::Store("x".into())).is_none());
        assert!(answer(&account, Action::Erase("x".into())).is_none());
    }

    #[test]
    fn passwords_in_urls_are_masked() {
        assert_eq!(
            redact("https://bot:s3cr3t@h.example/o/r.git"),
            "https://bot:***@h.example/o/r.git"
        );
        assert_eq!(
            redact("https://bot@h.example/a:b@c"),
            "https://***@h.example/a:b@c"
        );
        assert_eq!(redact("https://tok@host/r.git"), "https://***@host/r.git");
        assert_eq!(redact("ssh://git@host/r.git"), "ssh://git@host/r.git");
        assert_eq!(redact("https://host/a@b/r.git"), "https://host/a@b/r.git");
        assert_eq!(redact("https://h.example/o/r"), "https://h.example/o/r");
        assert_eq!(redact("git@h.example:o/r.git"), "git@h.example:o/r.git");
        assert_eq!(redact("/srv/git/r"), "/srv/git/r");
    }

    #[test]
    fn credentials_must_fit_the_transport() {
        let key = Auth::SshKey("/k".into());
        assert!(key.check_scheme("u", &Scheme::Ssh).is_ok());
        assert!(key.check_scheme("u", &Scheme::Https).is_err());
        let token = Auth::TokenEnv("T".into());
        assert!(token.check_scheme("u", &Scheme::Https).is_ok());
        assert!(token.check_scheme("u", &Scheme::Ssh).is_err());
        assert!(Auth::Default.check_scheme("u", &Scheme::File).is_ok());
    }

    #[test]
    fn token_file_is_trimmed_and_sent_as_password() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cr3t\n").unwrap();
        let account = Auth::TokenFile(file.clone())
            .http_account("https://h/r", None)
            .unwrap()
            .unwrap();
        assert_eq!(
            (account.username.as_str(), account.password.as_str()),
            (TOKEN_USER, "s3cr3t")
        );
        let account = Auth::TokenFile(file)
            .http_account("https://h/r", Some("bot"))
            .unwrap()
            .unwrap();
        assert_eq!(account.username, "bot");

        std::fs::write(dir.path().join("empty"), "\n").unwrap();
        let err = Auth::TokenFile(dir.path().join("empty"))
            .http_account("https://h/r", None)
            .unwrap_err();
        assert!(err.to_string().contains("https://h/r"), "{err}");
        let err = Auth::TokenFile(dir.path().join("missing"))
            .http_account("https://h/r", None)
            .unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        let err = Auth::TokenEnv("KGC_SOURCE_TEST_UNSET_TOKEN".into())
            .http_account("https://h/r", None)
            .unwrap_err();
        assert!(
            err.to_string().contains("$KGC_SOURCE_TEST_UNSET_TOKEN"),
            "{err}"
        );
    }
}
