//! The `.flux.yaml` file (`fluxcd/flux pkg/manifests/configfile.go`): `version: 1` and exactly
//! one of `commandUpdated`, `patchUpdated` or `scanForFiles`, checked against the rules of
//! fluxd's JSON schema (`configSchemaYAML`), each broken rule one line naming the field.
//!
//! Stricter than the schema where it only lets mistakes through: an unknown top-level field
//! (a misspelt `comandUpdated`), an empty generator list or an empty command is an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::Error;

/// A parsed `.flux.yaml`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    pub mode: Mode,
}

/// What the config asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// Generators whose output is the manifests. fluxd also runs the `updaters` for image
    /// automation, which kgc does not do: they are checked and otherwise ignored.
    CommandUpdated { generators: Vec<Command> },
    /// Generators, then the strategic merge patches of `patchFile` (relative to the target
    /// path) applied to their output.
    PatchUpdated {
        generators: Vec<Command>,
        patch_file: PathBuf,
    },
    /// Read the path's YAML files, as if there were no `.flux.yaml` (it resets one above).
    ScanForFiles,
}

/// One command (`definitions.command` of the schema).
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// Run with `/bin/sh -c`.
    pub command: String,
    /// Its own timeout; fluxd honours one of at least a second, else uses the default.
    pub timeout: Option<Duration>,
}

impl ConfigFile {
    /// Parses and validates `text`, the content of `file` (named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<ConfigFile, Error> {
        let bad = |message: String| Error::Config {
            file: file.to_owned(),
            message,
        };
        let value: Value = serde_saphyr::from_str(text).map_err(|e| bad(e.to_string()))?;
        let Value::Object(top) = value else {
            return Err(bad(format!(
                "must be a mapping with `version: 1`, not {}",
                type_name(&value)
            )));
        };
        const MODES: [&str; 3] = ["commandUpdated", "patchUpdated", "scanForFiles"];
        for key in top.keys() {
            if key != "version" && !MODES.contains(&key.as_str()) {
                return Err(bad(format!(
                    "unknown field {key:?} (a .flux.yaml has version and one of commandUpdated, patchUpdated or scanForFiles)"
                )));
            }
        }
        match top.get("version") {
            None => return Err(bad("version: required (version: 1)".into())),
            Some(v) if v.as_u64() == Some(1) => {}
            Some(v) => return Err(bad(format!("version: must be 1, not {v}"))),
        }
        let given: Vec<&str> = MODES.into_iter().filter(|m| top.contains_key(*m)).collect();
        let mode = match given.as_slice() {
            [] => {
                return Err(bad(
                    "needs one of commandUpdated, patchUpdated or scanForFiles".into(),
                ));
            }
            [one] => *one,
            several => {
                return Err(bad(format!(
                    "{}: only one may be given",
                    several.join(" and ")
                )));
            }
        };
        let mode = match mode {
            "commandUpdated" => {
                let s = section(&top, mode).map_err(bad)?;
                only(s, mode, &["generators", "updaters"]).map_err(bad)?;
                if let Some(u) = s.get("updaters") {
                    updaters(u).map_err(bad)?;
                }
                Mode::CommandUpdated {
                    generators: generators(s, mode).map_err(bad)?,
                }
            }
            "patchUpdated" => {
                let s = section(&top, mode).map_err(bad)?;
                only(s, mode, &["generators", "patchFile"]).map_err(bad)?;
                let patch_file = match s.get("patchFile") {
                    Some(Value::String(p)) if !p.is_empty() => PathBuf::from(p),
                    Some(other) => {
                        return Err(bad(format!(
                            "patchUpdated.patchFile: must be a path, not {}",
                            type_name(other)
                        )));
                    }
                    None => return Err(bad("patchUpdated.patchFile: required".into())),
                };
                Mode::PatchUpdated {
                    generators: generators(s, mode).map_err(bad)?,
                    patch_file,
                }
            }
            _ => {
                // `scanForFiles: {}` (the schema forbids any field in it).
                let s = section(&top, mode).map_err(bad)?;
                only(s, mode, &[]).map_err(bad)?;
                Mode::ScanForFiles
            }
        };
        Ok(ConfigFile { mode })
    }
}

/// The mapping under `name`.
fn section<'a>(top: &'a Map<String, Value>, name: &str) -> Result<&'a Map<String, Value>, String> {
    match &top[name] {
        Value::Object(m) => Ok(m),
        other => Err(format!(
            "{name}: must be a mapping, not {}",
            type_name(other)
        )),
    }
}

/// An error for any field of `map` (at `at`) not in `allowed` (`additionalProperties: false`).
fn only(map: &Map<String, Value>, at: &str, allowed: &[&str]) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) if allowed.is_empty() => Err(format!("{at}.{k}: unknown field ({at} takes none)")),
        Some(k) => Err(format!(
            "{at}.{k}: unknown field (expected {})",
            allowed.join(" or ")
        )),
    }
}

fn generators(map: &Map<String, Value>, at: &str) -> Result<Vec<Command>, String> {
    let at = format!("{at}.generators");
    let Some(list) = map.get("generators") else {
        return Err(format!("{at}: required"));
    };
    let Value::Array(items) = list else {
        return Err(format!("{at}: must be a list, not {}", type_name(list)));
    };
    if items.is_empty() {
        return Err(format!("{at}: empty, so nothing would be generated"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| command(item, &format!("{at}[{i}]")))
        .collect()
}

fn updaters(list: &Value) -> Result<(), String> {
    let Value::Array(items) = list else {
        return Err(format!(
            "commandUpdated.updaters: must be a list, not {}",
            type_name(list)
        ));
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("commandUpdated.updaters[{i}]");
        let Value::Object(u) = item else {
            return Err(format!("{at}: must be a mapping, not {}", type_name(item)));
        };
        for field in ["containerImage", "policy"] {
            if let Some(c) = u.get(field) {
                command(c, &format!("{at}.{field}"))?;
            }
        }
    }
    Ok(())
}

fn command(item: &Value, at: &str) -> Result<Command, String> {
    let Value::Object(c) = item else {
        return Err(format!(
            "{at}: must be a mapping with a command, not {}",
            type_name(item)
        ));
    };
    only(c, at, &["command", "timeout"])?;
    let command = match c.get("command") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(format!("{at}.command: empty")),
        Some(other) => {
            return Err(format!(
                "{at}.command: must be a string, not {}",
                type_name(other)
            ));
        }
        None => return Err(format!("{at}.command: required")),
    };
    let timeout = match c.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let d = go_duration(s).ok_or_else(|| {
                format!("{at}.timeout: {s:?} is not a duration (e.g. 90s, 2m, 1h30m)")
            })?;
            // fluxd's `execGenerators` ignores a timeout under a second.
            (d >= Duration::from_secs(1)).then_some(d)
        }
        Some(other) => {
            return Err(format!(
                "{at}.timeout: must be a duration such as 90s, not {}",
                type_name(other)
            ));
        }
    };
    Ok(Command { command, timeout })
}

/// A Go duration (`time.ParseDuration`, which `metav1.Duration` uses): decimal numbers with
/// units, `1h30m`, `1.5s`, `300ms`; `0` alone. Negative durations are not timeouts.
pub fn go_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[u..];
        total += number * seconds;
    }
    Duration::try_from_secs_f64(total).ok()
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(text, Path::new("deploy/.flux.yaml")).map_err(|e| e.to_string())
    }

    fn command(c: &str, timeout: Option<u64>) -> Command {
        Command {
            command: c.into(),
            timeout: timeout.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_three_modes_parse() {
        let c = parse(
            "version: 1\ncommandUpdated:\n  generators:\n  - command: helm template .\n    timeout: 1m30s\n  - {command: cat extra.yaml, timeout: 500ms}\n  updaters:\n  - containerImage: {command: set-image}\n    policy: {command: set-policy}\n",
        )
        .unwrap();
        assert_eq!(
            c.mode,
            Mode::CommandUpdated {
                generators: vec![
                    command("helm template .", Some(90)),
                    command("cat extra.yaml", None)
                ]
            }
        );
        let c = parse("version: 1\npatchUpdated:\n  generators: [{command: kustomize build .}]\n  patchFile: flux-patch.yaml\n").unwrap();
        assert_eq!(
            c.mode,
            Mode::PatchUpdated {
                generators: vec![command("kustomize build .", None)],
                patch_file: "flux-patch.yaml".into()
            }
        );
        assert_eq!(
            parse("version: 1\nscanForFiles: {}\n").unwrap().mode,
            Mode::ScanForFiles
        );
    }

    #[test]
    fn invalid_configs_name_the_file_and_field() {
        let cases = [
            ("[1]", "must be a mapping with `version: 1`, not a list"),
            (
                "commandUpdated: {generators: [{command: x}]}",
                "version: required",
            ),
            ("version: 2\nscanForFiles: {}", "version: must be 1, not 2"),
            (
                "version: 1",
                "needs one of commandUpdated, patchUpdated or scanForFiles",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{command: x}]}\nscanForFiles: {}",
                "commandUpdated and scanForFiles: only one may be given",
            ),
            (
                "version: 1\ncomandUpdated: {}",
                "unknown field \"comandUpdated\"",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{command: x}], patchFile: p.yaml}",
                "commandUpdated.patchFile: unknown field (expected generators or updaters)",
            ),
            (
                "version: 1\ncommandUpdated: {}",
                "commandUpdated.generators: required",
            ),
            (
                "version: 1\ncommandUpdated: {generators: []}",
                "commandUpdated.generators: empty",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{cmd: x}]}",
                "commandUpdated.generators[0].cmd: unknown field",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{timeout: 1s}]}",
                "commandUpdated.generators[0].command: required",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{command: [a]}]}",
                "commandUpdated.generators[0].command: must be a string, not a list",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{command: x, timeout: soon}]}",
                "commandUpdated.generators[0].timeout: \"soon\" is not a duration",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [x]}",
                "commandUpdated.generators[0]: must be a mapping with a command, not a string",
            ),
            (
                "version: 1\ncommandUpdated: {generators: [{command: x}], updaters: [{policy: {}}]}",
                "commandUpdated.updaters[0].policy.command: required",
            ),
            (
                "version: 1\npatchUpdated: {generators: [{command: x}]}",
                "patchUpdated.patchFile: required",
            ),
            (
                "version: 1\nscanForFiles: {x: 1}",
                "scanForFiles.x: unknown field (scanForFiles takes none)",
            ),
            (
                "version: 1\nscanForFiles:",
                "scanForFiles: must be a mapping, not null",
            ),
            ("version: 1\nversion: 1\n: [", "deploy/.flux.yaml: "),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("deploy/.flux.yaml: "), "{text}: {err}");
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(go_duration("300ms"), Some(Duration::from_millis(300)));
        assert_eq!(go_duration("0"), Some(Duration::ZERO));
        for bad in ["", "5", "1d", "-1s", "s", "1.2.3s"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }
}
