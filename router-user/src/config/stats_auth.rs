//! The admin listener's basic-auth credentials, from openshift/router's variables: STATS_USERNAME and
//! STATS_PASSWORD, or STATS_USERNAME_FILE and STATS_PASSWORD_FILE (read at start, used only when both are
//! set, and then instead of the plain values; the files' bytes are taken as they are, as openshift/router
//! takes them).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::admin::BasicCredentials;

#[derive(Args, Clone, Debug, Default)]
pub struct StatsAuthArgs {
    /// User name for basic auth on /metrics and /debug/*.
    #[arg(long = "stats-user", env = "STATS_USERNAME")]
    pub stats_username: Option<String>,

    /// Password for basic auth on /metrics and /debug/*.
    #[arg(long = "stats-password", env = "STATS_PASSWORD", hide_env_values = true)]
    pub stats_password: Option<String>,

    /// File holding the user name (with --stats-password-file, replaces --stats-user).
    #[arg(long = "stats-user-file", env = "STATS_USERNAME_FILE")]
    pub stats_username_file: Option<PathBuf>,

    /// File holding the password (with --stats-user-file, replaces --stats-password).
    #[arg(long = "stats-password-file", env = "STATS_PASSWORD_FILE")]
    pub stats_password_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read {variable} {path}: {source}")]
pub struct StatsAuthError {
    variable: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

impl StatsAuthArgs {
    /// The credentials to require, or `None` when neither a user name nor a password is set.
    pub fn credentials(&self) -> Result<Option<BasicCredentials>, StatsAuthError> {
        let (username, password) = match (&self.stats_username_file, &self.stats_password_file) {
            (Some(user_file), Some(password_file)) => {
                (read("STATS_USERNAME_FILE", user_file)?, read("STATS_PASSWORD_FILE", password_file)?)
            }
            _ => (self.stats_username.clone().unwrap_or_default(), self.stats_password.clone().unwrap_or_default()),
        };
        if username.is_empty() && password.is_empty() {
            return Ok(None);
        }
        Ok(Some(BasicCredentials { username, password }))
    }
}

fn read(variable: &'static str, path: &Path) -> Result<String, StatsAuthError> {
    std::fs::read_to_string(path).map_err(|source| StatsAuthError { variable, path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_replace_the_plain_values_only_when_both_are_given() {
        let dir = tempfile::tempdir().expect("temp dir");
        let user = dir.path().join("user");
        let password = dir.path().join("password");
        std::fs::write(&user, "from-file").expect("write");
        std::fs::write(&password, "file-secret").expect("write");
        let mut args = StatsAuthArgs {
            stats_username: Some("plain".into()),
            stats_password: Some("plain-secret".into()),
            stats_username_file: Some(user),
            stats_password_file: None,
        };
        let plain = args.credentials().expect("credentials").expect("set");
        assert_eq!((plain.username.as_str(), plain.password.as_str()), ("plain", "plain-secret"));
        args.stats_password_file = Some(password);
        let files = args.credentials().expect("credentials").expect("set");
        assert_eq!((files.username.as_str(), files.password.as_str()), ("from-file", "file-secret"));
        assert!(StatsAuthArgs::default().credentials().expect("credentials").is_none());
        args.stats_password_file = Some(dir.path().join("missing"));
        assert!(args.credentials().is_err());
    }
}
