//! Credentials for a fetch, Flux's `GitRepository.spec.secretRef` without the Secret: an ssh key
//! file, or an HTTP token read from a file or the environment at every fetch (so a rotated token
//! is picked up by the next run). Tokens are never logged: they only reach gix's credential
//! callback.

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

    /// The value of git's `core.sshCommand` for a key file, if this is one.
    pub(crate) fn ssh_command(&self) -> Option<String> {
        match self {
            Auth::SshKey(key) => Some(ssh_command(key)),
            _ => None,
        }
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
    fn ssh_key_becomes_a_quoted_ssh_command() {
        assert_eq!(
            Auth::SshKey("/keys/deploy key".into())
                .ssh_command()
                .unwrap(),
            "ssh -i '/keys/deploy key' -o IdentitiesOnly=yes"
        );
        assert_eq!(
            ssh_command(Path::new("/k/it's")),
            r"ssh -i '/k/it'\''s' -o IdentitiesOnly=yes"
        );
        assert_eq!(Auth::Default.ssh_command(), None);
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
