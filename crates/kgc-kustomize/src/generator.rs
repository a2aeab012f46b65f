//! `configMapGenerator` and `secretGenerator` (kustomize's `ConfigMapArgs`/`SecretArgs`,
//! `kubernetes-sigs/kustomize api/internal/generators/{configmap,secret,utils}.go` and the
//! key-value sources of `api/kv/kv.go`), the content hash appended to generated names
//! (`api/hasher/hasher.go`) and the `behavior: merge|replace` of a generator over an object
//! a base generated (`api/resmap/reswrangler.go` `appendReplaceOrMerge`).
//!
//! The hash is not added here: kustomize adds it once, at the top of the build, after every
//! transformer has run (`api/internal/target/kusttarget.go` `addHashesToNames`), because a
//! prefix or suffix changes the name the hash covers. A generated object that wants one
//! carries kustomize's internal annotation [`NEEDS_HASH_ANNOTATION`] until
//! [`add_hash_suffixes`] consumes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::fs::Loader;
use crate::resource::Resource;

/// kustomize's build annotation marking a generated object whose name gets the content hash
/// (`api/internal/utils/annotations.go` `BuildAnnotationsGenAddHashSuffix`).
pub const NEEDS_HASH_ANNOTATION: &str = "internal.config.kubernetes.io/needsHashSuffix";

/// The prefix of kustomize's build annotations, which a merge or replace takes from the base's
/// object, never from the generator's (`api/resource/resource.go` `BuildAnnotations`).
const BUILD_ANNOTATION_PREFIX: &str = "internal.config.kubernetes.io/";

/// One entry of `configMapGenerator` or `secretGenerator`. Unknown fields are let through:
/// the same arguments come in a built-in plugin config (`generators:`), next to its
/// `apiVersion`, `kind` and `metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GeneratorArgs {
    #[serde(default)]
    pub namespace: String,
    /// The name before any prefix, suffix or hash.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub behavior: Behavior,
    /// `key=value`; the value may be wrapped in matching single or double quotes.
    #[serde(default)]
    pub literals: Vec<String>,
    /// `path` (the key is its base name) or `key=path`.
    #[serde(default)]
    pub files: Vec<String>,
    /// `.env` files: `KEY=value` lines.
    #[serde(default)]
    pub envs: Vec<String>,
    /// The older, singular form of `envs`, read after them.
    #[serde(default)]
    pub env: String,
    /// Per-generator options, over the kustomization's `generatorOptions`.
    #[serde(default)]
    pub options: Option<GeneratorOptions>,
    /// Secrets only: the Secret's `type` (`Opaque` when empty).
    #[serde(default, rename = "type")]
    pub secret_type: String,
}

/// `generatorOptions` (kustomize's `types.GeneratorOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorOptions {
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub disable_name_suffix_hash: bool,
    #[serde(default)]
    pub immutable: bool,
}

impl GeneratorOptions {
    /// kustomize's `MergeGlobalOptionsIntoLocal`: the generator's own labels and annotations
    /// win; the global ones fill the keys it lacks; either flag set sets it.
    pub fn merged(local: Option<&GeneratorOptions>, global: Option<&GeneratorOptions>) -> Self {
        let mut out = local.cloned().unwrap_or_default();
        let Some(global) = global else {
            return out;
        };
        for (mine, theirs) in [
            (&mut out.labels, &global.labels),
            (&mut out.annotations, &global.annotations),
        ] {
            if let Some(theirs) = theirs {
                let mine = mine.get_or_insert_with(BTreeMap::new);
                for (k, v) in theirs {
                    mine.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        out.disable_name_suffix_hash |= global.disable_name_suffix_hash;
        out.immutable |= global.immutable;
        out
    }
}

/// What a generator does when its object already exists (kustomize's `GenerationBehavior`;
/// an unknown word is "unspecified", as there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(from = "String")]
pub enum Behavior {
    #[default]
    Unspecified,
    Create,
    Merge,
    Replace,
}

impl From<String> for Behavior {
    fn from(s: String) -> Behavior {
        match s.as_str() {
            "create" => Behavior::Create,
            "merge" => Behavior::Merge,
            "replace" => Behavior::Replace,
            _ => Behavior::Unspecified,
        }
    }
}

/// ConfigMap or Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ConfigMap,
    Secret,
}

impl Kind {
    /// The kustomization field that lists these generators.
    fn field(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configMapGenerator",
            Kind::Secret => "secretGenerator",
        }
    }
}

/// A generated object, and how it goes into the build's resources ([`absorb`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub resource: Resource,
    pub behavior: Behavior,
    /// The kustomization file and the generator's field, for errors.
    file: PathBuf,
    field: String,
}

/// Runs one generator: `args` is entry `index` of `kind`'s list in the kustomization `file`,
/// whose files `loader` reads; `global` is the kustomization's `generatorOptions`.
pub fn generate(
    loader: &Loader<'_>,
    file: &Path,
    kind: Kind,
    index: usize,
    args: &GeneratorArgs,
    global: Option<&GeneratorOptions>,
) -> Result<Generated, Error> {
    let field = format!("{}[{index}]", kind.field());
    let invalid = |field: String, message: String| Error::Invalid {
        file: file.to_owned(),
        field,
        message,
    };
    if args.name.is_empty() {
        // kustomize says "configmap" for both kinds.
        return Err(invalid(
            format!("{field}.name"),
            "a configmap must have a name".into(),
        ));
    }
    let pairs = load_pairs(loader, file, &field, args)?;
    let mut seen = BTreeMap::new();
    for (key, value) in pairs {
        if seen.insert(key.clone(), value).is_some() {
            return Err(invalid(
                field.clone(),
                format!("configmap {} illegally repeats the key `{key}`", args.name),
            ));
        }
    }

    let options = GeneratorOptions::merged(args.options.as_ref(), global);
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(args.name));
    if !args.namespace.is_empty() {
        metadata.insert("namespace".into(), json!(args.namespace));
    }
    let mut object = json!({"apiVersion": "v1", "kind": format!("{kind:?}")});
    match kind {
        Kind::ConfigMap => {
            let mut data = Map::new();
            let mut binary = Map::new();
            for (key, value) in seen {
                match String::from_utf8(value) {
                    Ok(text) => data.insert(key, Value::String(text)),
                    Err(e) => binary.insert(key, Value::String(encode_base64(e.as_bytes()))),
                };
            }
            if !data.is_empty() {
                object["data"] = Value::Object(data);
            }
            if !binary.is_empty() {
                object["binaryData"] = Value::Object(binary);
            }
        }
        Kind::Secret => {
            let secret_type = if args.secret_type.is_empty() {
                "Opaque"
            } else {
                &args.secret_type
            };
            object["type"] = json!(secret_type);
            object["data"] = Value::Object(
                seen.into_iter()
                    .map(|(k, v)| (k, Value::String(encode_base64(&v))))
                    .collect(),
            );
        }
    }
    let mut annotations: BTreeMap<String, String> = options.annotations.clone().unwrap_or_default();
    if let Some(labels) = options.labels.filter(|l| !l.is_empty()) {
        metadata.insert("labels".into(), json!(labels));
    }
    if !options.disable_name_suffix_hash {
        annotations.insert(NEEDS_HASH_ANNOTATION.into(), "enabled".into());
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), json!(annotations));
    }
    object["metadata"] = Value::Object(metadata);
    if options.immutable {
        object["immutable"] = Value::Bool(true);
    }
    Ok(Generated {
        resource: Resource::new(object),
        behavior: args.behavior,
        file: file.to_owned(),
        field,
    })
}

/// The key-value pairs in kustomize's order: env files, then literals, then files.
fn load_pairs(
    loader: &Loader<'_>,
    file: &Path,
    field: &str,
    args: &GeneratorArgs,
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let invalid = |field: String, message: String| Error::Invalid {
        file: file.to_owned(),
        field,
        message,
    };
    let mut pairs = Vec::new();
    let envs = args
        .envs
        .iter()
        .chain(std::iter::once(&args.env).filter(|e| !e.is_empty()));
    for (i, env) in envs.enumerate() {
        let bytes = loader.read(env)?;
        pairs.extend(env_pairs(&bytes).map_err(|m| invalid(format!("{field}.envs[{i}]"), m))?);
    }
    for (i, literal) in args.literals.iter().enumerate() {
        let (key, value) = literal
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| {
                invalid(
                    format!("{field}.literals[{i}]"),
                    format!("invalid literal source {literal}, expected key=value"),
                )
            })?;
        pairs.push((key.to_owned(), unquote(value).as_bytes().to_vec()));
    }
    for (i, source) in args.files.iter().enumerate() {
        let (key, path) =
            file_source(source).map_err(|m| invalid(format!("{field}.files[{i}]"), m))?;
        pairs.push((key, loader.read(path)?));
    }
    Ok(pairs)
}

/// kustomize's `removeQuotes`: one pair of matching quotes around the whole value goes.
fn unquote(value: &str) -> &str {
    let b = value.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &value[1..value.len() - 1]
    } else {
        value
    }
}

/// kustomize's `ParseFileSource`: `path` or `key=path`.
fn file_source(source: &str) -> Result<(String, &str), String> {
    match source.matches('=').count() {
        0 => {
            let base = source
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("");
            Ok((base.to_owned(), source))
        }
        1 => match source.split_once('=') {
            Some(("", path)) => Err(format!(
                "missing key name for file path {path:?} in source {source:?}"
            )),
            Some((key, "")) => Err(format!(
                "missing file path for key name {key:?} in source {source:?}"
            )),
            Some((key, path)) => Ok((key.to_owned(), path)),
            None => Err(format!("invalid file source {source:?}")),
        },
        _ => Err(format!(
            "source {source:?} key name or file path contains '='"
        )),
    }
}

/// An env file's pairs (kustomize's `keyValuesFromLines`): a byte-order mark on the first line
/// is dropped; leading whitespace is trimmed; blank lines and `#` comments are skipped;
/// `KEY=value` splits at the first `=` (nothing else is trimmed, and `export` is not special);
/// a line without `=` is a key with an empty value, a line starting with `=` is skipped.
fn env_pairs(content: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut pairs = Vec::new();
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    let content = content.strip_suffix(b"\n").unwrap_or(content);
    if content.is_empty() {
        return Ok(pairs);
    }
    for (number, line) in content.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = std::str::from_utf8(line)
            .map_err(|_| format!("line {} has invalid utf8 bytes", number + 1))?;
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        // kustomize takes an empty key for a blank line.
        if !key.is_empty() {
            pairs.push((key.to_owned(), value.as_bytes().to_vec()));
        }
    }
    Ok(pairs)
}

/// Standard base64, broken into lines of 70 characters each ending in a newline when it is
/// longer than one line (kyaml's `encodeBase64` in `yaml/datamap.go`).
fn encode_base64(bytes: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    if encoded.len() < 70 {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / 70 + 1);
    for chunk in encoded.as_bytes().chunks(70) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        out.push('\n');
    }
    out
}

/// Puts a generated object into the build's resources as kustomize's `appendReplaceOrMerge`
/// does: with no object of its id (current or any previous), it is appended unless its
/// behavior is merge or replace; over exactly one, merge or replace takes that object's place.
pub fn absorb(resources: &mut Vec<Resource>, generated: Generated) -> Result<(), Error> {
    let Generated {
        resource,
        behavior,
        file,
        field,
    } = generated;
    let id = resource.id();
    let invalid = |message: String| Error::Invalid {
        file: file.clone(),
        field: field.clone(),
        message,
    };
    let matches: Vec<usize> = resources
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.previous
                .iter()
                .chain(std::iter::once(&r.id()))
                .any(|other| id.same(other))
        })
        .map(|(i, _)| i)
        .collect();
    match (matches.as_slice(), behavior) {
        ([], Behavior::Merge | Behavior::Replace) => Err(invalid(format!(
            "id {} does not exist; cannot merge or replace",
            id.display()
        ))),
        ([], _) => {
            resources.push(resource);
            Ok(())
        }
        ([i], Behavior::Merge | Behavior::Replace) => {
            let old = &resources[*i];
            resources[*i] = merge(old, resource, behavior);
            Ok(())
        }
        ([_], _) => Err(invalid(format!(
            "id {} exists; behavior must be merge or replace",
            id.display()
        ))),
        (many, _) => Err(invalid(format!(
            "found {} objects that could accept merge of {}",
            many.len(),
            id.display()
        ))),
    }
}

/// The generator's object `new` over the base's `old`: the name, namespace and build
/// annotations (the hash mark kept only when both want it) are the base's, labels and
/// annotations are merged with the generator's winning; a merge also merges `data` and
/// `binaryData` the same way (kustomize's `CopyMergeMetaDataFieldsFrom`, `MergeDataMapFrom`).
fn merge(old: &Resource, mut new: Resource, behavior: Behavior) -> Resource {
    let meta = |r: &Value, key: &str| -> Map<String, Value> {
        r.pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut labels = meta(&old.object, "labels");
    labels.extend(meta(&new.object, "labels"));
    let old_annotations = meta(&old.object, "annotations");
    let new_annotations = meta(&new.object, "annotations");
    let wants_hash = new_annotations.contains_key(NEEDS_HASH_ANNOTATION);
    let mut annotations = old_annotations.clone();
    annotations.extend(new_annotations);
    // Build annotations are the base's alone.
    annotations.retain(|k, _| !k.starts_with(BUILD_ANNOTATION_PREFIX));
    annotations.extend(
        old_annotations
            .into_iter()
            .filter(|(k, _)| k.starts_with(BUILD_ANNOTATION_PREFIX)),
    );
    if !wants_hash {
        annotations.remove(NEEDS_HASH_ANNOTATION);
    }

    if behavior == Behavior::Merge {
        for key in ["data", "binaryData"] {
            let mut merged = old
                .object
                .get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            merged.extend(
                new.object
                    .get(key)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            );
            set_or_remove(&mut new.object, key, merged);
        }
    }
    if let Some(metadata) = new.object.get_mut("metadata") {
        set_or_remove(metadata, "labels", labels);
        set_or_remove(metadata, "annotations", annotations);
        for key in ["name", "namespace"] {
            match old.object["metadata"].get(key) {
                Some(v) if v.as_str().is_some_and(|s| !s.is_empty()) => {
                    metadata[key] = v.clone();
                }
                _ => {
                    if let Some(m) = metadata.as_object_mut() {
                        m.remove(key);
                    }
                }
            }
        }
    }
    new.previous = old.previous.clone();
    new
}

/// Sets `key` of an object to `map`, or removes it when `map` is empty (kyaml clears a field
/// set to nothing).
fn set_or_remove(object: &mut Value, key: &str, map: Map<String, Value>) {
    if let Some(object) = object.as_object_mut() {
        if map.is_empty() {
            object.remove(key);
        } else {
            object.insert(key.to_owned(), Value::Object(map));
        }
    }
}

/// kustomize's `HashTransformer`: every object marked [`NEEDS_HASH_ANNOTATION`] gets
/// `-<hash>` appended to its name (its id before is kept in `previous`), and loses the mark.
/// The build calls this once, at its top level, after all transformers and before name
/// references are fixed.
pub fn add_hash_suffixes(resources: &mut [Resource]) -> Result<(), Error> {
    for r in resources.iter_mut() {
        let marked = r
            .object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(NEEDS_HASH_ANNOTATION));
        if !marked {
            continue;
        }
        if let Some(annotations) = r
            .object
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.remove(NEEDS_HASH_ANNOTATION);
            if annotations.is_empty()
                && let Some(m) = r.object["metadata"].as_object_mut()
            {
                m.remove("annotations");
            }
        }
        let hash = hash_suffix(&r.object)?;
        let id = r.id();
        r.object["metadata"]["name"] = Value::String(format!("{}-{hash}", id.name));
        r.previous.push(id);
    }
    Ok(())
}

/// The ten-character content hash kustomize appends to a generated name
/// (`api/hasher/hasher.go`): the SHA-256 of a JSON encoding of the ConfigMap's `data` and
/// `binaryData`, or the Secret's `type`, `data` and `stringData`, its first ten hex digits
/// with `0 1 3 a e` mapped to `g h k m t` so that it never reads as a number or a word.
pub fn hash_suffix(object: &Value) -> Result<String, Error> {
    let field = |key: &str| -> Value {
        match object.get(key) {
            None | Some(Value::Null) => Value::String(String::new()),
            Some(v) => v.clone(),
        }
    };
    // kustomize looks the name up as one field called `metadata/name`, which no object has:
    // the name it hashes is always empty, so a prefix or suffix never changes the hash.
    let name = Value::String(String::new());
    let encoded = match object.get("kind").and_then(Value::as_str) {
        Some("ConfigMap") => {
            let mut m = Map::new();
            m.insert("kind".into(), json!("ConfigMap"));
            m.insert("name".into(), name);
            m.insert("data".into(), field("data"));
            if let Some(b) = object.get("binaryData").filter(|b| b.is_object()) {
                m.insert("binaryData".into(), b.clone());
            }
            go_json(&Value::Object(m))
        }
        Some("Secret") => {
            let mut m = Map::new();
            m.insert("kind".into(), json!("Secret"));
            m.insert("type".into(), field("type"));
            m.insert("name".into(), name);
            m.insert("data".into(), field("data"));
            if let Some(s) = object.get("stringData").filter(|s| s.is_object()) {
                m.insert("stringData".into(), s.clone());
            }
            go_json(&Value::Object(m))
        }
        // kustomize hashes other kinds (from generator plugins) through Go's encoding of its
        // YAML node, which no plain object reproduces; only ConfigMaps and Secrets are generated
        // here.
        other => {
            return Err(Error::Invalid {
                file: PathBuf::new(),
                field: "kind".into(),
                message: format!(
                    "no content hash for kind {}: only ConfigMaps and Secrets are generated",
                    other.unwrap_or("")
                ),
            });
        }
    };
    let digest = Sha256::digest(encoded.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(hex[..10]
        .chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect())
}

/// Go's `json.Marshal` of a decoded value: keys sorted, and strings escaped as Go escapes
/// them (`<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes), which the hash depends on.
fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, value);
    out
}

fn write_go_json(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, k);
                out.push(':');
                write_go_json(out, v);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, v);
            }
            out.push(']');
        }
        Value::String(s) => write_go_string(out, s),
        other => out.push_str(&other.to_string()),
    }
}

fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::Disk;

    /// The fixture of a `kubectl kustomize` run whose output the tests expect.
    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, bytes: &[u8]| {
            std::fs::write(dir.path().join(name), bytes).expect("write");
        };
        write("app.env", b"A=1\n# comment\n  export B = 2\nC\n\nD=\"q\"\n");
        write("file.txt", b"hello\nworld\n");
        write("bin.dat", b"\xff\xfe\x00bin");
        write("long.txt", &[b'x'; 100]);
        dir
    }

    fn args(yaml: &str) -> GeneratorArgs {
        serde_saphyr::from_str(yaml).expect("generator args")
    }

    fn global() -> GeneratorOptions {
        serde_saphyr::from_str("labels:\n  g: global\n  l: global\n").expect("options")
    }

    /// Generates, hashes and prints one object.
    fn build(dir: &Path, kind: Kind, yaml: &str) -> String {
        let loader = Loader::new(&Disk, dir);
        let g = generate(
            &loader,
            &dir.join("kustomization.yaml"),
            kind,
            0,
            &args(yaml),
            Some(&global()),
        )
        .expect("generate");
        let mut resources = vec![g.resource];
        add_hash_suffixes(&mut resources).expect("hash");
        crate::yaml::value_to_string(&resources[0].object)
    }

    fn error(dir: &Path, kind: Kind, yaml: &str) -> String {
        let loader = Loader::new(&Disk, dir);
        generate(&loader, Path::new("k.yaml"), kind, 0, &args(yaml), None)
            .expect_err("an error")
            .to_string()
    }

    #[test]
    fn literals_are_unquoted_and_split_at_the_first_equals() {
        let dir = fixture();
        assert_eq!(
            build(
                dir.path(),
                Kind::ConfigMap,
                "name: lit\nliterals:\n- a=1\n- b=\"quoted\"\n- c='single'\n- d=x=y\n"
            ),
            "apiVersion: v1\ndata:\n  a: \"1\"\n  b: quoted\n  c: single\n  d: x=y\n\
             kind: ConfigMap\nmetadata:\n  labels:\n    g: global\n    l: global\n  \
             name: lit-62bmgk9ghc\n"
        );
    }

    #[test]
    fn files_are_keyed_by_base_name_and_binary_content_goes_to_binary_data() {
        let dir = fixture();
        assert_eq!(
            build(
                dir.path(),
                Kind::ConfigMap,
                "name: files\nfiles:\n- file.txt\n- other=file.txt\n- bin.dat\n"
            ),
            "apiVersion: v1\nbinaryData:\n  bin.dat: //4AYmlu\ndata:\n  file.txt: |\n    \
             hello\n    world\n  other: |\n    hello\n    world\nkind: ConfigMap\nmetadata:\n  \
             labels:\n    g: global\n    l: global\n  name: files-55tbh87m97\n"
        );
    }

    #[test]
    fn env_files_keep_everything_after_the_first_equals() {
        let dir = fixture();
        assert_eq!(
            build(
                dir.path(),
                Kind::ConfigMap,
                "name: envs\nenvs:\n- app.env\n"
            ),
            "apiVersion: v1\ndata:\n  A: \"1\"\n  C: \"\"\n  D: '\"q\"'\n  'export B ': ' 2'\n\
             kind: ConfigMap\nmetadata:\n  labels:\n    g: global\n    l: global\n  \
             name: envs-5c8m295hb5\n"
        );
    }

    #[test]
    fn local_options_win_over_global_ones() {
        let dir = fixture();
        assert_eq!(
            build(
                dir.path(),
                Kind::ConfigMap,
                "name: opts\nliterals:\n- a=b\noptions:\n  labels:\n    l: v\n  annotations:\n    \
                 an: v\n  immutable: true\n"
            ),
            "apiVersion: v1\ndata:\n  a: b\nimmutable: true\nkind: ConfigMap\nmetadata:\n  \
             annotations:\n    an: v\n  labels:\n    g: global\n    l: v\n  \
             name: opts-4h2mbtbbt6\n"
        );
        assert_eq!(
            build(
                dir.path(),
                Kind::ConfigMap,
                "name: nohash\nnamespace: ns1\nliterals:\n- a=b\noptions:\n  \
                 disableNameSuffixHash: true\n"
            ),
            "apiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  labels:\n    \
             g: global\n    l: global\n  name: nohash\n  namespace: ns1\n"
        );
    }

    #[test]
    fn empty_generators_hash_their_missing_data() {
        let dir = fixture();
        assert_eq!(
            build(dir.path(), Kind::ConfigMap, "name: empty\n"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    g: global\n    \
             l: global\n  name: empty-6ct58987ht\n"
        );
        assert_eq!(
            build(dir.path(), Kind::Secret, "name: esec\n"),
            "apiVersion: v1\ndata: {}\nkind: Secret\nmetadata:\n  labels:\n    g: global\n    \
             l: global\n  name: esec-46f8b28mk5\ntype: Opaque\n"
        );
    }

    #[test]
    fn secrets_are_base64_in_lines_of_70() {
        let dir = fixture();
        assert_eq!(
            build(
                dir.path(),
                Kind::Secret,
                "name: sec\nliterals:\n- a=1\nfiles:\n- long.txt\n"
            ),
            "apiVersion: v1\ndata:\n  a: MQ==\n  long.txt: |\n    \
             eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eH\n    \
             h4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eA==\n\
             kind: Secret\nmetadata:\n  labels:\n    g: global\n    l: global\n  \
             name: sec-244k4d857b\ntype: Opaque\n"
        );
        assert_eq!(
            build(
                dir.path(),
                Kind::Secret,
                "name: tls\ntype: kubernetes.io/tls\nliterals:\n- tls.crt=c\n- tls.key=k\n"
            ),
            "apiVersion: v1\ndata:\n  tls.crt: Yw==\n  tls.key: aw==\nkind: Secret\n\
             metadata:\n  labels:\n    g: global\n    l: global\n  name: tls-d94tkf5ft2\n\
             type: kubernetes.io/tls\n"
        );
    }

    #[test]
    fn bad_sources_are_kustomize_errors() {
        let dir = fixture();
        let d = dir.path();
        assert_eq!(
            error(d, Kind::ConfigMap, "name: x\nliterals:\n- a=1\n- a=2\n"),
            "k.yaml: configMapGenerator[0]: configmap x illegally repeats the key `a`"
        );
        assert_eq!(
            error(d, Kind::ConfigMap, "name: x\nliterals:\n- =1\n"),
            "k.yaml: configMapGenerator[0].literals[0]: invalid literal source =1, expected \
             key=value"
        );
        assert_eq!(
            error(d, Kind::Secret, "name: x\nliterals:\n- noeq\n"),
            "k.yaml: secretGenerator[0].literals[0]: invalid literal source noeq, expected \
             key=value"
        );
        assert_eq!(
            error(d, Kind::ConfigMap, "name: x\nfiles:\n- a=b=c\n"),
            "k.yaml: configMapGenerator[0].files[0]: source \"a=b=c\" key name or file path \
             contains '='"
        );
        assert_eq!(
            error(d, Kind::ConfigMap, "literals:\n- a=1\n"),
            "k.yaml: configMapGenerator[0].name: a configmap must have a name"
        );
        assert!(error(d, Kind::ConfigMap, "name: x\nfiles:\n- ../x\n").contains("security"));
        let typo: Result<GeneratorOptions, _> = serde_saphyr::from_str("label:\n  a: b\n");
        assert!(typo.is_err());
    }

    #[test]
    fn global_options_fill_what_the_generator_lacks() {
        let local: GeneratorOptions =
            serde_saphyr::from_str("labels:\n  a: local\n").expect("options");
        let global: GeneratorOptions = serde_saphyr::from_str(
            "labels:\n  a: global\n  b: global\nannotations:\n  c: global\n\
             disableNameSuffixHash: true\n",
        )
        .expect("options");
        let merged = GeneratorOptions::merged(Some(&local), Some(&global));
        assert_eq!(
            merged.labels,
            Some(BTreeMap::from([
                ("a".to_owned(), "local".to_owned()),
                ("b".to_owned(), "global".to_owned())
            ]))
        );
        assert_eq!(
            merged.annotations,
            Some(BTreeMap::from([("c".to_owned(), "global".to_owned())]))
        );
        assert!(merged.disable_name_suffix_hash && !merged.immutable);
    }

    /// The base's generated objects after its `namePrefix: b-` and `namespace: bns`.
    fn base_resources(dir: &Path) -> Vec<Resource> {
        let loader = Loader::new(&Disk, dir);
        let file = dir.join("kustomization.yaml");
        let mut out = Vec::new();
        for (kind, yaml) in [
            (
                Kind::ConfigMap,
                "name: m\nliterals:\n- a=base\n- b=base\noptions:\n  labels:\n    \
                 from: base\n    both: base\n  annotations:\n    ba: x\n",
            ),
            (Kind::ConfigMap, "name: r\nliterals:\n- a=base\n"),
            (Kind::Secret, "name: s\nliterals:\n- a=base\n"),
        ] {
            let g = generate(&loader, &file, kind, 0, &args(yaml), None).expect("generate");
            // kustomize's namespace transformer runs before the prefix one; each keeps the id
            // it changed.
            let mut r = g.resource;
            r.previous.push(r.id());
            r.object["metadata"]["namespace"] = json!("bns");
            r.previous.push(r.id());
            let name = format!("b-{}", r.id().name);
            r.object["metadata"]["name"] = json!(name);
            absorb(&mut out, Generated { resource: r, ..g }).expect("absorb");
        }
        out
    }

    #[test]
    fn merge_and_replace_take_the_base_objects_place() {
        let dir = fixture();
        let loader = Loader::new(&Disk, dir.path());
        let file = dir.path().join("kustomization.yaml");
        let mut resources = base_resources(dir.path());
        for (kind, yaml) in [
            (
                Kind::ConfigMap,
                "name: m\nnamespace: bns\nbehavior: merge\nliterals:\n- b=over\n- c=over\n\
                 options:\n  labels:\n    both: over\n",
            ),
            (
                Kind::ConfigMap,
                "name: r\nnamespace: bns\nbehavior: replace\nliterals:\n- z=over\n",
            ),
            (
                Kind::Secret,
                "name: s\nnamespace: bns\nbehavior: merge\ntype: kubernetes.io/foo\n\
                 literals:\n- b=over\n",
            ),
        ] {
            let g = generate(&loader, &file, kind, 0, &args(yaml), None).expect("generate");
            absorb(&mut resources, g).expect("absorb");
        }
        add_hash_suffixes(&mut resources).expect("hash");
        let objects: Vec<Value> = resources.iter().map(|r| r.object.clone()).collect();
        // `kubectl kustomize overlay` of the same base and overlay.
        assert_eq!(
            crate::yaml::to_string(&objects),
            "apiVersion: v1\ndata:\n  a: base\n  b: over\n  c: over\nkind: ConfigMap\n\
             metadata:\n  annotations:\n    ba: x\n  labels:\n    both: over\n    \
             from: base\n  name: b-m-cf6dd49k98\n  namespace: bns\n---\napiVersion: v1\n\
             data:\n  z: over\nkind: ConfigMap\nmetadata:\n  name: b-r-hdk4gmf6f2\n  \
             namespace: bns\n---\napiVersion: v1\ndata:\n  a: YmFzZQ==\n  b: b3Zlcg==\n\
             kind: Secret\nmetadata:\n  name: b-s-5m2g5gd562\n  namespace: bns\n\
             type: kubernetes.io/foo\n"
        );
        assert_eq!(resources[0].original_id().name, "m");
    }

    #[test]
    fn behavior_must_fit_what_exists() {
        let dir = fixture();
        let loader = Loader::new(&Disk, dir.path());
        let file = Path::new("k.yaml");
        let mut resources = base_resources(dir.path());
        let g = |yaml: &str| {
            generate(&loader, file, Kind::ConfigMap, 1, &args(yaml), None).expect("generate")
        };
        assert_eq!(
            absorb(&mut resources, g("name: nope\nbehavior: merge\n"))
                .expect_err("missing")
                .to_string(),
            "k.yaml: configMapGenerator[1]: id ConfigMap.v1.[noGrp]/nope.[noNs] does not \
             exist; cannot merge or replace"
        );
        assert_eq!(
            absorb(&mut resources, g("name: m\nnamespace: bns\n"))
                .expect_err("exists")
                .to_string(),
            "k.yaml: configMapGenerator[1]: id ConfigMap.v1.[noGrp]/m.bns exists; behavior \
             must be merge or replace"
        );
        // Any id the object had counts: `m` without a namespace was its original one.
        assert!(absorb(&mut resources, g("name: m\n")).is_err());
        absorb(&mut resources, g("name: other\n")).expect("created");
        assert_eq!(resources.len(), 4);
    }

    #[test]
    fn env_files_with_a_bom_crlf_and_odd_lines() {
        let dir = fixture();
        std::fs::write(
            dir.path().join("e.env"),
            b"\xef\xbb\xbfA=1\r\nB = two words \r\n  # c\r\nexport C=\"q\"\r\n=bad\r\n",
        )
        .expect("write");
        std::fs::create_dir(dir.path().join("dir")).expect("mkdir");
        std::fs::write(dir.path().join("dir/f.txt"), b"x").expect("write");
        let loader = Loader::new(&Disk, dir.path());
        let g = generate(
            &loader,
            Path::new("k.yaml"),
            Kind::ConfigMap,
            0,
            &args("name: e\nenvs:\n- e.env\nfiles:\n- dir/f.txt\n"),
            None,
        )
        .expect("generate");
        let mut resources = vec![g.resource];
        add_hash_suffixes(&mut resources).expect("hash");
        // `kubectl kustomize` of the same.
        assert_eq!(
            crate::yaml::value_to_string(&resources[0].object),
            "apiVersion: v1\ndata:\n  A: \"1\"\n  'B ': ' two words '\n  export C: '\"q\"'\n  \
             f.txt: x\nkind: ConfigMap\nmetadata:\n  name: e-gh7c88bb85\n"
        );
    }

    #[test]
    fn a_merge_hashes_only_when_the_base_did_too() {
        let dir = fixture();
        let loader = Loader::new(&Disk, dir.path());
        let file = Path::new("k.yaml");
        let g = |yaml: &str| {
            generate(&loader, file, Kind::ConfigMap, 0, &args(yaml), None).expect("generate")
        };
        let mut resources = Vec::new();
        absorb(
            &mut resources,
            g("name: m\nliterals:\n- a=1\noptions:\n  disableNameSuffixHash: true\n"),
        )
        .expect("base");
        absorb(
            &mut resources,
            g("name: m\nbehavior: merge\nliterals:\n- b=2\n"),
        )
        .expect("merge");
        add_hash_suffixes(&mut resources).expect("hash");
        // `kubectl kustomize` of the same base and overlay.
        assert_eq!(
            crate::yaml::value_to_string(&resources[0].object),
            "apiVersion: v1\ndata:\n  a: \"1\"\n  b: \"2\"\nkind: ConfigMap\nmetadata:\n  name: m\n"
        );
    }

    /// Names from kustomize's own tests (`api/krusty/configmaps_test.go`,
    /// `generatormergeandreplace_test.go`): the hash covers the data only.
    #[test]
    fn hashes_match_kustomizes_tests() {
        let cm = |data: Value| json!({"kind": "ConfigMap", "data": data});
        let opaque = |data: Value| json!({"kind": "Secret", "type": "Opaque", "data": data});
        let hellos = encode_base64(&b"\xffhello".repeat(30));
        for (object, hash) in [
            (
                cm(json!({"fruit": "Indian Gooseberry", "year": "2020", "crisis": "true"})),
                "79t79mt227",
            ),
            (
                cm(
                    json!({"fruit": "Indian Gooseberry", "year": "2020", "crisis": "true",
                          "month": "12"}),
                ),
                "bk46gm59c6",
            ),
            (cm(json!({"foo": "bar"})), "798k5k7g9f"),
            (cm(json!({"foo": "override-bar"})), "hc6g9dk6g9"),
            (cm(json!({"hello": "world"})), "dc6fm46dhm"),
            (
                cm(json!({"initial.txt": "greetings\neveryone\n",
                          "final.txt": "different\nbehavior\n"})),
                "tt4769fb52",
            ),
            (cm(json!({"TEST": "this is a 'test'"})), "k9cc55dfm5"),
            (cm(json!({"TEST": "'"})), "m8t7bmb6g2"),
            (
                json!({"kind": "ConfigMap", "binaryData": {"data.bin": hellos}}),
                "96gmmt6gt5",
            ),
            (
                opaque(json!({"password": "c29tZXB3", "username": "YWRtaW4="})),
                "bgd6bkgdm2",
            ),
            (
                opaque(json!({"password": "c29tZXB3", "username": "YWRtaW4=",
                              "proxy": "aGFwcm94eQ=="})),
                "k2k4692t9g",
            ),
        ] {
            assert_eq!(hash_suffix(&object).expect("hash"), hash, "{object}");
        }
        assert!(hellos.starts_with(
            "/2hlbGxv/2hlbGxv/2hlbGxv/2hlbGxv/2hlbGxv/2hlbGxv/2hlbGxv/2hlbGxv/2hlbG\nxv/"
        ));
        assert!(hellos.ends_with("\nhlbGxv/2hlbGxv/2hlbGxv/2hlbGxv\n"));
    }

    #[test]
    fn only_config_maps_and_secrets_have_a_hash() {
        assert!(hash_suffix(&json!({"kind": "Service"})).is_err());
        // kustomize's hash of an empty ConfigMap, whatever its name.
        assert_eq!(
            hash_suffix(&json!({"kind": "ConfigMap", "metadata": {"name": "x"}})).expect("hash"),
            "6ct58987ht"
        );
    }

    #[test]
    fn go_json_escapes_html_and_line_separators() {
        assert_eq!(
            go_json(&json!({"b": "<a&b>\u{2028}\u{1}\u{8}", "a": [1, true, null]})),
            "{\"a\":[1,true,null],\"b\":\"\\u003ca\\u0026b\\u003e\\u2028\\u0001\\b\"}"
        );
    }
}
