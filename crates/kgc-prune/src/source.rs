//! Sources: files and directories of YAML or JSON manifests, and kustomizations.
//!
//! Each file is a *component* (qbec's unit): its objects carry the `kgc.io/component`
//! annotation, and `--component` filters on it. Documents are split on `---` lines so that every
//! error names the file and the line of the document, and `List` kinds are flattened. Nothing is
//! sent anywhere from here: a bad file fails the run before the first write.
//!
//! A directory holding a kustomization file (`kustomization.yaml`, `.yml`, `Kustomization`) is
//! built as `kubectl kustomize` builds it (kgc-kustomize) and is one component, named after the
//! directory; inside a plain directory, such a subdirectory is built the same way instead of
//! being walked, as Flux's generated kustomization includes it as a base
//! (`fluxcd/pkg/kustomize` `generator.go`).

use std::path::{Path, PathBuf};

use kgc_kustomize::fs::Disk;
use serde_json::Value;

use crate::Error;

/// One object read from a source file.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceObject {
    /// The component: the file's path relative to the argument it was found under, without
    /// its extension (a file argument is named by its stem).
    pub component: String,
    pub file: PathBuf,
    /// The 1-based line the object's document starts at; 0 for an object a kustomization
    /// built (kustomize keeps no lines), whose `file` is the kustomization file.
    pub line: usize,
    pub object: Value,
}

impl SourceObject {
    /// `file:line` (the file alone for a kustomization's object), for messages.
    pub fn origin(&self) -> String {
        match self.line {
            0 => self.file.display().to_string(),
            line => format!("{}:{line}", self.file.display()),
        }
    }
}

/// Where manifests come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file, or a directory's `.yaml`, `.yml` and `.json` files in name order, its
    /// subdirectories too when `recursive` (kubectl's `-f DIR` reads one level, `-R` all).
    Path { path: PathBuf, recursive: bool },
    /// Standard input (`-f -`), read once: component `stdin`.
    Stdin,
}

/// What [`Input::Stdin`] is called in components and messages.
pub const STDIN: &str = "stdin";

/// How inputs are read beyond their files.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run the generators of a `.flux.yaml` (Flux v1's `--manifest-generation`); without it a
    /// path that one applies to is refused.
    pub manifest_generation: bool,
    /// The repository's root: a `.flux.yaml` is looked for up to it, and shown relative to it
    /// [default: the enclosing git work tree; shown relative to the current directory].
    pub repository_root: Option<PathBuf>,
}

/// Reads every input, in the order given.
pub fn load(inputs: &[Input], options: &Options) -> Result<Vec<SourceObject>, Error> {
    let mut out = Vec::new();
    for input in inputs {
        let (root, recursive) = match input {
            Input::Stdin => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                    Error::Io {
                        path: PathBuf::from(STDIN),
                        source: e,
                    }
                })?;
                parse(&text, Path::new(STDIN), STDIN, &mut out)?;
                continue;
            }
            Input::Path { path, recursive } => (path, *recursive),
        };
        let meta = std::fs::metadata(root).map_err(|e| Error::Io {
            path: root.clone(),
            source: e,
        })?;
        if generate(root, options, &mut out)? {
            continue;
        }
        if meta.is_dir() {
            if let Some(file) = kgc_kustomize::find(&Disk, root)? {
                kustomize(root, &file, &file_name(root), &mut out)?;
                continue;
            }
            let mut found = Vec::new();
            walk(root, recursive, &mut found)?;
            for f in found {
                match f {
                    Found::File(file) => {
                        let rel = file.strip_prefix(root).unwrap_or(&file).with_extension("");
                        load_file(&file, &rel.to_string_lossy(), &mut out)?;
                    }
                    Found::Kustomization { dir, file } => {
                        let rel = dir.strip_prefix(root).unwrap_or(&dir);
                        kustomize(&dir, &file, &rel.to_string_lossy(), &mut out)?;
                    }
                }
            }
        } else if kgc_kustomize::kustomization::FILE_NAMES
            .iter()
            .any(|n| root.file_name().is_some_and(|f| f == *n))
        {
            // `-f overlays/prod/kustomization.yaml` means the kustomization, not a manifest.
            let dir = root.parent().unwrap_or(Path::new("."));
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            kustomize(dir, root, &file_name(dir), &mut out)?;
        } else {
            let stem = root
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            load_file(root, &stem, &mut out)?;
        }
    }
    Ok(out)
}

/// What a directory walk finds: manifest files, and kustomizations to build whole.
enum Found {
    File(PathBuf),
    Kustomization { dir: PathBuf, file: PathBuf },
}

/// A path's last component, for naming the component of a kustomization given as an
/// argument (`overlays/prod` is `prod`); the absolute path's for `.`.
fn file_name(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let name = path.file_name().or_else(|| absolute.file_name());
    name.map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Builds the kustomization of `dir` (its file is `file`, for messages): every object is of
/// `component`, and its origin is the kustomization file (kustomize keeps no line numbers).
fn kustomize(
    dir: &Path,
    file: &Path,
    component: &str,
    out: &mut Vec<SourceObject>,
) -> Result<(), Error> {
    for object in kgc_kustomize::build(&Disk, dir)? {
        push(object, file, component, 0, out)?;
    }
    Ok(())
}

/// The component of generated objects: the stem of the `.flux.yaml`, as if the objects were
/// a file of the generated directory.
pub const GENERATED: &str = ".flux";

/// Flux v1's manifest generation (crate `kgc-manifestgen`): when a `.flux.yaml` applies to
/// `path` (at it or above it), its generators' output replaces the path's files, parsed as a
/// file's and patched by a `patchUpdated` patch file, as component [`GENERATED`]; returns
/// whether it did. Refused (an error naming `--manifest-generation`) when not enabled.
fn generate(path: &Path, options: &Options, out: &mut Vec<SourceObject>) -> Result<bool, Error> {
    let asked = kgc_manifestgen::Options {
        enabled: options.manifest_generation,
        root: options.repository_root.clone(),
        ..kgc_manifestgen::Options::default()
    };
    let kgc_manifestgen::Plan::Generate(generation) = kgc_manifestgen::plan(path, &asked)? else {
        return Ok(false);
    };
    let generated = generation.run()?;
    let file = PathBuf::from(format!(
        "{} (generated)",
        generation.config_file().display()
    ));
    let start = out.len();
    parse(&generated.text, &file, GENERATED, out)?;
    generated.patch(out[start..].iter_mut().map(|o| &mut o.object))?;
    Ok(true)
}

fn walk(dir: &Path, recursive: bool, files: &mut Vec<Found>) -> Result<(), Error> {
    let io = |e| Error::Io {
        path: dir.to_owned(),
        source: e,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if let Some(file) = kgc_kustomize::find(&Disk, &path)? {
                files.push(Found::Kustomization { dir: path, file });
            } else if recursive {
                walk(&path, recursive, files)?;
            }
        } else if is_manifest(&path) {
            files.push(Found::File(path));
        }
    }
    Ok(())
}

/// Whether a file is read as manifests: `.yaml`, `.yml` and `.json` (kubectl's extensions),
/// but never a `.flux.yaml`, which says how to generate them.
pub fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    ) && path.file_name() != Some(std::ffi::OsStr::new(kgc_manifestgen::CONFIG_FILENAME))
}

fn load_file(file: &Path, component: &str, out: &mut Vec<SourceObject>) -> Result<(), Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::Io {
        path: file.to_owned(),
        source: e,
    })?;
    parse(&text, file, component, out)
}

/// The objects of one file's text.
fn parse(
    text: &str,
    file: &Path,
    component: &str,
    out: &mut Vec<SourceObject>,
) -> Result<(), Error> {
    for (line, doc) in documents(text) {
        let bad = |line: usize, message: String| Error::Source {
            file: file.to_owned(),
            line,
            message,
        };
        let value: Value = serde_saphyr::from_str(doc).map_err(|e| yaml_error(file, line, &e))?;
        match value {
            Value::Null => {}
            Value::Object(_) => push(value, file, component, line, out)?,
            other => {
                return Err(bad(
                    line,
                    format!("a document must be an object, not {}", type_name(&other)),
                ));
            }
        }
    }
    Ok(())
}

/// A YAML error in `file`, whose text parsed began on line `first_line`: one line,
/// `FILE:LINE: message`, the line counted in the whole file.
pub fn yaml_error(file: &Path, first_line: usize, e: &serde_saphyr::Error) -> Error {
    let at = e.location().map_or(0, |l| l.line() as usize);
    Error::Source {
        file: file.to_owned(),
        line: first_line + at.saturating_sub(1),
        message: yaml_message(e),
    }
}

/// A YAML error's message alone, on one line: serde-saphyr's `Display` draws a code frame
/// (the lines around the error, `^` under its column) and ends in `at line L, column C`.
fn yaml_message(e: &serde_saphyr::Error) -> String {
    use std::borrow::Cow;

    use serde_saphyr::{DefaultMessageFormatter, Localizer, Location, MessageFormatter};

    /// English, without the location suffix.
    struct Unlocated;
    impl Localizer for Unlocated {
        fn attach_location<'a>(&self, base: Cow<'a, str>, _: Location) -> Cow<'a, str> {
            base
        }
    }
    struct Plain;
    impl MessageFormatter for Plain {
        fn localizer(&self) -> &dyn Localizer {
            &Unlocated
        }
        fn format_message<'a>(&self, err: &'a serde_saphyr::Error) -> Cow<'a, str> {
            DefaultMessageFormatter.format_message(err)
        }
    }
    e.render_with_options(serde_saphyr::render_options! {
        formatter: &Plain,
        snippets: serde_saphyr::SnippetMode::Off,
    })
}

/// Adds `value`, flattening `List` kinds (`v1/List` and `*List` with `items`).
fn push(
    value: Value,
    file: &Path,
    component: &str,
    line: usize,
    out: &mut Vec<SourceObject>,
) -> Result<(), Error> {
    let bad = |message: String| Error::Source {
        file: file.to_owned(),
        line,
        message,
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List") && value.get("items").is_some() {
        let Some(Value::Array(items)) = value.get("items").cloned() else {
            return Err(bad(format!("{kind}: items must be a list")));
        };
        for item in items {
            if !item.is_object() {
                return Err(bad(format!(
                    "{kind}: every item must be an object, not {}",
                    type_name(&item)
                )));
            }
            push(item, file, component, line, out)?;
        }
        return Ok(());
    }
    let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
    if field("apiVersion").is_empty() {
        return Err(bad(format!(
            "object {:?} has no apiVersion",
            display_name(&value)
        )));
    }
    if field("kind").is_empty() {
        return Err(bad(format!(
            "object {:?} has no kind",
            display_name(&value)
        )));
    }
    let name = crate::str_at(&value, "/metadata/name");
    if name.is_empty() {
        let hint = if value.pointer("/metadata/generateName").is_some() {
            " (generateName is not supported: a generated name cannot be tracked across runs)"
        } else {
            ""
        };
        return Err(bad(format!("{} has no metadata.name{hint}", field("kind"))));
    }
    out.push(SourceObject {
        component: component.to_owned(),
        file: file.to_owned(),
        line,
        object: value,
    });
    Ok(())
}

fn display_name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Splits a YAML stream into documents with their 1-based starting lines. A line that starts
/// with `---` (followed by nothing, a space or a tab) begins a document; `...` ends one.
fn documents(text: &str) -> Vec<(usize, &str)> {
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut offset = 0usize;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let marker = |m: &str| {
            trimmed == m || (trimmed.starts_with(m) && trimmed[3..].starts_with([' ', '\t']))
        };
        if marker("---") || marker("...") {
            docs.push((start_line, &text[start..offset]));
            start = offset + line.len();
            start_line = i + 2;
            if marker("---") && !trimmed[3..].trim().is_empty() {
                // `--- {inline: doc}`: the rest of the line belongs to the next document.
                start = offset + 3;
                start_line = i + 1;
            }
        }
        offset += line.len();
    }
    docs.push((start_line, &text[start..]));
    docs.into_iter()
        .filter(|(_, d)| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(path: PathBuf) -> Input {
        Input::Path {
            path,
            recursive: true,
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn directories_yield_components_with_lines() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "web.yaml",
            "# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        );
        write(
            dir.path(),
            "db/list.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}]}"#,
        );
        write(dir.path(), "README.md", "not a manifest");
        let objs = load(&[tree(dir.path().to_owned())], &Options::default()).unwrap();
        let got: Vec<_> = objs
            .iter()
            .map(|o| {
                (
                    o.component.as_str(),
                    o.line,
                    o.object["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, [("db/list", 1, "s"), ("web", 1, "a"), ("web", 8, "b")]);
        // kubectl's `-f DIR` without `-R`: the directory's own files only.
        let flat = Input::Path {
            path: dir.path().to_owned(),
            recursive: false,
        };
        let objs = load(&[flat], &Options::default()).unwrap();
        assert_eq!(objs.len(), 2);
        assert!(objs.iter().all(|o| o.component == "web"));
    }

    #[test]
    fn invalid_yaml_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(
            dir.path(),
            "bad.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [unclosed\n",
        );
        let err = load(&[tree(f.clone())], &Options::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.yaml:"), "{err}");
        let Error::Source { line, .. } =
            load(&[tree(dir.path().join("bad.yaml"))], &Options::default()).unwrap_err()
        else {
            panic!()
        };
        assert!((5..=7).contains(&line), "line {line}");
    }

    #[test]
    fn objects_without_kind_or_name_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(
            dir.path(),
            "a.yaml",
            "apiVersion: v1\nmetadata: {name: x}\n",
        );
        assert!(
            load(&[tree(f.clone())], &Options::default())
                .unwrap_err()
                .to_string()
                .contains("has no kind")
        );
        let f = write(dir.path(), "b.yaml", "apiVersion: v1\nkind: ConfigMap\n");
        let err = load(&[tree(f.clone())], &Options::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("b.yaml:1") && err.contains("no metadata.name"),
            "{err}"
        );
        let f = write(dir.path(), "c.yaml", "- 1\n");
        assert!(
            load(&[tree(f.clone())], &Options::default())
                .unwrap_err()
                .to_string()
                .contains("must be an object")
        );
    }

    #[test]
    fn document_markers() {
        let docs = documents("a: 1\n--- \nb: 2\n...\n--- {c: 3}\n");
        assert_eq!(docs, [(1, "a: 1\n"), (3, "b: 2\n"), (5, " {c: 3}\n")]);
    }
}
