//! The command line's jsonnet variables, as qbec reads its `--vm:*` flags
//! (splunk/qbec `internal/vmexternals/externals.go`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::Error;

/// A variable's value: a string, or jsonnet code evaluated for its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Str(String),
    Code(String),
}

/// One of qbec's `--vm:*` variable flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    ExtStr,
    ExtStrFile,
    ExtCode,
    ExtCodeFile,
    TlaStr,
    TlaStrFile,
    TlaCode,
    TlaCodeFile,
}

impl Flag {
    /// The flag's name after `--vm:`.
    pub fn name(self) -> &'static str {
        match self {
            Flag::ExtStr => "ext-str",
            Flag::ExtStrFile => "ext-str-file",
            Flag::ExtCode => "ext-code",
            Flag::ExtCodeFile => "ext-code-file",
            Flag::TlaStr => "tla-str",
            Flag::TlaStrFile => "tla-str-file",
            Flag::TlaCode => "tla-code",
            Flag::TlaCodeFile => "tla-code-file",
        }
    }

    fn is_tla(self) -> bool {
        matches!(
            self,
            Flag::TlaStr | Flag::TlaStrFile | Flag::TlaCode | Flag::TlaCodeFile
        )
    }

    fn is_code(self) -> bool {
        matches!(
            self,
            Flag::ExtCode | Flag::ExtCodeFile | Flag::TlaCode | Flag::TlaCodeFile
        )
    }

    fn is_file(self) -> bool {
        matches!(
            self,
            Flag::ExtStrFile | Flag::ExtCodeFile | Flag::TlaStrFile | Flag::TlaCodeFile
        )
    }
}

/// The external variables and top-level arguments the command line sets; a later flag for
/// the same name wins, as with qbec.
#[derive(Debug, Clone, Default)]
pub struct ExtVars {
    pub(crate) ext: BTreeMap<String, Value>,
    pub(crate) tla: BTreeMap<String, Value>,
}

impl ExtVars {
    /// Adds one flag's value: `NAME=VALUE`, or `NAME` alone to take the value from the
    /// environment variable NAME (qbec's and jsonnet's rule); the `-file` flags take
    /// `NAME=FILE` and read the file.
    pub fn add(&mut self, flag: Flag, spec: &str) -> Result<(), Error> {
        let bad = |message: String| Error::Flag {
            flag: flag.name(),
            value: spec.to_owned(),
            message,
        };
        let (name, value) = match spec.split_once('=') {
            Some((name, file)) if flag.is_file() => {
                let text = std::fs::read_to_string(Path::new(file))
                    .map_err(|e| bad(format!("reading {file}: {e}")))?;
                (name, text)
            }
            None if flag.is_file() => {
                return Err(bad(format!("no filename specified for {spec}")));
            }
            Some((name, value)) => (name, value.to_owned()),
            None => {
                let value = std::env::var(spec)
                    .map_err(|_| bad(format!("no value found from environment for {spec}")))?;
                (spec, value)
            }
        };
        if name.is_empty() {
            return Err(bad("no variable name".to_owned()));
        }
        let value = if flag.is_code() {
            Value::Code(value)
        } else {
            Value::Str(value)
        };
        let map = if flag.is_tla() {
            &mut self.tla
        } else {
            &mut self.ext
        };
        map.insert(name.to_owned(), value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_values_files_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("v.txt");
        std::fs::write(&file, "from-file").unwrap();
        let mut v = ExtVars::default();
        v.add(Flag::ExtStr, "a=1=2").unwrap();
        v.add(Flag::ExtCode, "b={x: 1}").unwrap();
        v.add(Flag::ExtStrFile, &format!("c={}", file.display()))
            .unwrap();
        v.add(Flag::TlaCode, "t=true").unwrap();
        // PATH is set wherever tests run.
        v.add(Flag::ExtStr, "PATH").unwrap();
        assert_eq!(v.ext["a"], Value::Str("1=2".into()));
        assert_eq!(v.ext["b"], Value::Code("{x: 1}".into()));
        assert_eq!(v.ext["c"], Value::Str("from-file".into()));
        assert!(matches!(&v.ext["PATH"], Value::Str(p) if !p.is_empty()));
        assert_eq!(v.tla["t"], Value::Code("true".into()));
        let err = v
            .add(Flag::ExtStr, "KGC_QBEC_SURELY_UNSET")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--vm:ext-str") && err.contains("no value found from environment"),
            "{err}"
        );
        let err = v.add(Flag::ExtCodeFile, "x").unwrap_err().to_string();
        assert!(err.contains("no filename"), "{err}");
    }
}
