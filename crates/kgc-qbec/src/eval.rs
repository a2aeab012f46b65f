//! Rendering an environment: qbec's variables, the components evaluated in parallel, their
//! values walked for objects (splunk/qbec `internal/eval/eval.go`, `internal/cmd/app.go` and
//! `env.go` for the variables).
//!
//! Jsonnet runs on worker threads that the caller never joins: one that has not finished at
//! the deadline is abandoned (left to spin until the process exits, which for the CLI is at
//! once) and the render fails naming its component, so endless jsonnet cannot hang a deploy.
//! jrsonnet's values are reference-counted and bound to their thread, so each worker builds
//! its own evaluator and sends back plain JSON.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use jrsonnet_evaluator::trace::{CompactFormat, PathResolver, TraceFormat};
use jrsonnet_evaluator::{
    AsPathLike, FileImportResolver, IStr, ImportResolver, SourcePath, State, Val, apply_tla,
    in_description_frame, stack::limit_stack_depth, tla::TlaArg,
};
use jrsonnet_gcmodule::Acyclic;
use serde_json::Value;

use crate::app::{App, Component};
use crate::vars::{ExtVars, Value as VarValue};
use crate::{Error, walk};

/// Bounds on jsonnet evaluation.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The whole render's deadline: far above what real apps take (a 500-object app renders
    /// in well under a second), low enough that a runaway recursion fails the command
    /// instead of hanging it.
    pub timeout: Duration,
    /// Jsonnet's call depth (go-jsonnet's default `MaxStack`, which qbec keeps).
    pub max_stack: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(30),
            max_stack: 500,
        }
    }
}

/// One Kubernetes object of a component.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// qbec's component name.
    pub component: String,
    /// The component's (first) file.
    pub file: PathBuf,
    pub object: Value,
}

/// qbec's names of the variables it sets for every evaluation
/// (`internal/model/external-names.go`).
const VAR_ENV: &str = "qbec.io/env";
const VAR_TAG: &str = "qbec.io/tag";
const VAR_DEFAULT_NS: &str = "qbec.io/defaultNs";
const VAR_CLEAN_MODE: &str = "qbec.io/cleanMode";
const VAR_ENV_PROPERTIES: &str = "qbec.io/envProperties";

/// Stack for a worker: jrsonnet grows its stack on demand (stacker), this is the start.
const WORKER_STACK: usize = 16 << 20;
/// Frames of jsonnet's stack trace kept in an error.
const TRACE_FRAMES: usize = 5;

impl App {
    /// Renders an environment's components: the objects, sorted as qbec sorts them
    /// (component, namespace, kind, name). `tag` is kgc's `--tag`, qbec's `qbec.io/tag`.
    pub fn render(
        &self,
        env: &str,
        tag: Option<&str>,
        vars: &ExtVars,
        limits: &Limits,
    ) -> Result<Vec<Rendered>, Error> {
        let names = self.components(env)?;
        let ext = self.ext_vars(env, tag, vars, limits)?;
        let tlas = self.tla_vars(vars)?;
        let components: Vec<Component> = names
            .iter()
            .filter_map(|n| self.components.get(*n).cloned())
            .collect();
        let ctx = Arc::new(EvalContext {
            root: self.root.clone(),
            lib_paths: self.lib_paths.clone(),
            ext,
            tlas,
            max_stack: limits.max_stack,
        });
        let results = run(
            ctx,
            components
                .into_iter()
                .map(|c| (c.name.clone(), Job::Component(c))),
            limits.timeout,
        )?;
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(Done::Objects(objects)) => out.extend(objects),
                Ok(Done::Json(_)) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => {}
            1 => return Err(errors.remove(0)),
            _ => return Err(Error::Many(errors)),
        }
        let key = |r: &Rendered| {
            let s = |p: &str| r.object.pointer(p).and_then(Value::as_str).unwrap_or("");
            (
                r.component.clone(),
                s("/metadata/namespace").to_owned(),
                s("/kind").to_owned(),
                s("/metadata/name").to_owned(),
            )
        };
        out.sort_by_cached_key(key);
        Ok(out)
    }

    /// The external variables of an evaluation (qbec's `AppContext.init` and
    /// `EnvContext.EvalContext`): the command line's, declared defaults for the rest (a
    /// string default is a string, any other is code), qbec's own, then the computed
    /// variables, each evaluated in order with those before it.
    fn ext_vars(
        &self,
        env: &str,
        tag: Option<&str>,
        vars: &ExtVars,
        limits: &Limits,
    ) -> Result<BTreeMap<String, VarValue>, Error> {
        for name in vars.ext.keys() {
            if !self.external.iter().any(|v| &v.name == name) {
                return Err(Error::Undeclared {
                    kind: "external",
                    name: name.clone(),
                });
            }
        }
        let mut ext = vars.ext.clone();
        for v in &self.external {
            let value = match &v.default {
                _ if ext.contains_key(&v.name) => continue,
                // qbec warns and leaves it unset: std.extVar fails if the code reads it.
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) => VarValue::Str(s.clone()),
                Some(other) => VarValue::Code(other.to_string()),
            };
            ext.insert(v.name.clone(), value);
        }
        let qbec = [
            (VAR_ENV, VarValue::Str(env.to_owned())),
            (VAR_TAG, VarValue::Str(tag.unwrap_or_default().to_owned())),
            (
                VAR_DEFAULT_NS,
                VarValue::Str(self.default_namespace(env, tag)?),
            ),
            (VAR_CLEAN_MODE, VarValue::Str("off".to_owned())),
            (
                VAR_ENV_PROPERTIES,
                VarValue::Code(self.properties(env)?.to_string()),
            ),
        ];
        ext.extend(qbec.map(|(k, v)| (k.to_owned(), v)));
        for c in &self.computed {
            ext.insert(
                c.name.clone(),
                VarValue::Code(format!(
                    "error 'variable {} has not yet been computed'",
                    c.name
                )),
            );
        }
        for c in &self.computed {
            let ctx = Arc::new(EvalContext {
                root: self.root.clone(),
                lib_paths: self.lib_paths.clone(),
                ext: ext.clone(),
                tlas: BTreeMap::new(),
                max_stack: limits.max_stack,
            });
            let name = format!("<{}>", c.name);
            let job = Job::Code {
                name: name.clone(),
                code: c.code.clone(),
            };
            let mut results = run(ctx, [(name, job)], limits.timeout)?;
            let json = match results.pop() {
                Some(Ok(Done::Json(json))) => json,
                Some(Err(e)) => return Err(e),
                _ => continue,
            };
            ext.insert(c.name.clone(), VarValue::Code(json.to_string()));
        }
        Ok(ext)
    }

    /// The top-level arguments the command line sets; each must be declared.
    fn tla_vars(&self, vars: &ExtVars) -> Result<BTreeMap<String, VarValue>, Error> {
        for name in vars.tla.keys() {
            if !self.top_level.contains(name) {
                return Err(Error::Undeclared {
                    kind: "top level",
                    name: name.clone(),
                });
            }
        }
        Ok(vars.tla.clone())
    }
}

/// What a worker needs to build its evaluator.
struct EvalContext {
    root: PathBuf,
    lib_paths: Vec<PathBuf>,
    ext: BTreeMap<String, VarValue>,
    tlas: BTreeMap<String, VarValue>,
    max_stack: usize,
}

enum Job {
    Component(Component),
    /// Inline code (a computed variable), named for messages.
    Code {
        name: String,
        code: String,
    },
}

enum Done {
    Objects(Vec<Rendered>),
    Json(Value),
}

enum Message {
    Started(usize),
    Finished(usize, Result<Done, Error>),
}

/// Runs the jobs on up to one worker per core, returning each job's result in job order;
/// at the deadline, the jobs still running are abandoned and named in the error.
fn run(
    ctx: Arc<EvalContext>,
    jobs: impl IntoIterator<Item = (String, Job)>,
    timeout: Duration,
) -> Result<Vec<Result<Done, Error>>, Error> {
    let deadline = Instant::now() + timeout;
    let (names, jobs): (Vec<String>, Vec<Job>) = jobs.into_iter().unzip();
    let queue = Arc::new(Mutex::new(
        jobs.into_iter().enumerate().collect::<VecDeque<_>>(),
    ));
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(names.len());
    let (tx, rx) = mpsc::channel();
    for _ in 0..workers {
        let (queue, tx, worker_ctx) = (queue.clone(), tx.clone(), ctx.clone());
        let spawned = std::thread::Builder::new()
            .name("jsonnet".to_owned())
            .stack_size(WORKER_STACK)
            .spawn(move || worker(&worker_ctx, &queue, &tx));
        if let Err(e) = spawned {
            return Err(Error::Io {
                path: ctx.root.clone(),
                source: e,
            });
        }
    }
    drop(tx);
    let mut results: Vec<Option<Result<Done, Error>>> = names.iter().map(|_| None).collect();
    let mut running = vec![false; names.len()];
    let mut left = names.len();
    while left > 0 {
        let wait = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Message::Started(i)) => running[i] = true,
            Ok(Message::Finished(i, result)) => {
                running[i] = false;
                results[i] = Some(result);
                left -= 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The queue is emptied so that idle workers stop; running ones are dropped.
                if let Ok(mut q) = queue.lock() {
                    q.clear();
                }
                return Err(Error::Timeout {
                    components: names
                        .iter()
                        .zip(&running)
                        .filter(|(_, r)| **r)
                        .map(|(n, _)| n.clone())
                        .collect(),
                    limit: timeout,
                });
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(names
        .into_iter()
        .zip(results)
        .map(|(name, r)| {
            // A worker that died (a panic in the evaluator) leaves its job without a result.
            r.unwrap_or_else(|| {
                Err(Error::Jsonnet {
                    component: name,
                    file: PathBuf::new(),
                    message: "the jsonnet evaluator failed (see above)".to_owned(),
                })
            })
        })
        .collect())
}

fn worker(ctx: &EvalContext, queue: &Mutex<VecDeque<(usize, Job)>>, tx: &mpsc::Sender<Message>) {
    let _depth = limit_stack_depth(ctx.max_stack);
    let state = new_state(ctx);
    let _entered = state.enter();
    loop {
        let next = queue.lock().ok().and_then(|mut q| q.pop_front());
        let Some((i, job)) = next else { return };
        if tx.send(Message::Started(i)).is_err() {
            return;
        }
        let result = match job {
            Job::Component(c) => component(ctx, &state, &c).map(Done::Objects),
            Job::Code { name, code } => code_value(ctx, &state, &name, &code).map(Done::Json),
        };
        if tx.send(Message::Finished(i, result)).is_err() {
            return;
        }
    }
}

/// Imports as go-jsonnet's `FileImporter` resolves them (qbec's VM): beside the importing
/// file, then the library paths, the last first. Inline code (ext code, computed variables)
/// imports as a file in the app's root would, as qbec documents for computed variables.
#[derive(Acyclic)]
struct Imports {
    root: PathBuf,
    files: FileImportResolver,
}

impl ImportResolver for Imports {
    fn resolve_from(
        &self,
        from: &SourcePath,
        path: &dyn AsPathLike,
    ) -> jrsonnet_evaluator::Result<SourcePath> {
        match from.path() {
            Some(_) => self.files.resolve_from(from, path),
            None => {
                let root = SourcePath::new(jrsonnet_ir::SourceDirectory::new(self.root.clone()));
                self.files.resolve_from(&root, path)
            }
        }
    }

    fn load_file_contents(&self, resolved: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        self.files.load_file_contents(resolved)
    }
}

fn new_state(ctx: &EvalContext) -> State {
    let init = jrsonnet_stdlib::ContextInitializer::new(PathResolver::Relative(ctx.root.clone()));
    for (name, value) in &ctx.ext {
        let arg = match value {
            VarValue::Str(s) => TlaArg::String(s.as_str().into()),
            VarValue::Code(c) => TlaArg::InlineCode(c.clone()),
        };
        init.settings_mut()
            .ext_vars
            .insert(name.as_str().into(), arg);
    }
    for native in crate::natives::Native::ALL {
        init.add_native(native.name(), native);
    }
    let mut builder = State::builder();
    builder
        .import_resolver(Imports {
            root: ctx.root.clone(),
            files: FileImportResolver::new(ctx.lib_paths.iter().rev().cloned().collect()),
        })
        .context_initializer(init);
    builder.build()
}

/// A jsonnet error as one line naming the file, then the first frames of jsonnet's trace.
fn jsonnet_error(
    ctx: &EvalContext,
    component: &str,
    file: &Path,
    e: &jrsonnet_evaluator::Error,
) -> Error {
    let format = CompactFormat {
        resolver: PathResolver::Relative(ctx.root.clone()),
        max_trace: TRACE_FRAMES,
        padding: 2,
    };
    let text = format.format(e).unwrap_or_else(|_| e.to_string());
    let mut lines: Vec<&str> = text.lines().collect();
    let frames = lines.len().saturating_sub(1);
    lines.truncate(TRACE_FRAMES + 1);
    let mut message = lines.join("\n");
    if frames > TRACE_FRAMES {
        message.push_str(&format!(
            "\n  ... and {} more frames",
            frames - TRACE_FRAMES
        ));
    }
    Error::Jsonnet {
        component: component.to_owned(),
        file: relative(&ctx.root, file),
        message,
    }
}

fn relative(root: &Path, file: &Path) -> PathBuf {
    file.strip_prefix(root).unwrap_or(file).to_owned()
}

/// A component's objects: each file's value (a jsonnet file's with the component's
/// top-level arguments; a YAML file's documents as a list), one value when there is one file,
/// a list of them otherwise, walked as qbec walks it.
fn component(ctx: &EvalContext, state: &State, c: &Component) -> Result<Vec<Rendered>, Error> {
    let mut values = Vec::with_capacity(c.files.len());
    for file in &c.files {
        let parse_error = |message: String| Error::Parse {
            component: c.name.clone(),
            file: relative(&ctx.root, file),
            message,
        };
        let value = match file.extension().and_then(|e| e.to_str()) {
            Some("yaml") => {
                let text = read(file)?;
                let docs: Vec<Value> =
                    serde_saphyr::from_multiple(&text).map_err(|e| parse_error(e.to_string()))?;
                Value::Array(docs)
            }
            Some("json") => {
                let text = read(file)?;
                serde_json::from_str(&text).map_err(|e| parse_error(e.to_string()))?
            }
            _ => {
                #[expect(
                    clippy::mutable_key_type,
                    reason = "jrsonnet's apply_tla takes its interned strings as keys; their hash never changes"
                )]
                let tlas: HashMap<IStr, TlaArg> = c
                    .tlas
                    .iter()
                    .filter_map(|name| {
                        let arg = match ctx.tlas.get(name)? {
                            VarValue::Str(s) => TlaArg::String(s.as_str().into()),
                            VarValue::Code(code) => TlaArg::InlineCode(code.clone()),
                        };
                        Some((IStr::from(name.as_str()), arg))
                    })
                    .collect();
                state
                    .import(file.as_path())
                    .and_then(|v| apply_tla(&tlas, v))
                    .and_then(|v| to_json(&v))
                    .map_err(|e| jsonnet_error(ctx, &c.name, file, &e))?
            }
        };
        values.push(value);
    }
    let value = if values.len() == 1 {
        values.pop().unwrap_or_default()
    } else {
        Value::Array(values)
    };
    let file = relative(
        &ctx.root,
        c.files.first().map_or(Path::new(""), PathBuf::as_path),
    );
    let objects = walk::objects(value).map_err(|message| Error::Object {
        component: c.name.clone(),
        file: file.clone(),
        message,
    })?;
    Ok(objects
        .into_iter()
        .map(|object| Rendered {
            component: c.name.clone(),
            file: file.clone(),
            object,
        })
        .collect())
}

fn read(file: &Path) -> Result<String, Error> {
    std::fs::read_to_string(file).map_err(|source| Error::Io {
        path: file.to_owned(),
        source,
    })
}

/// Inline code's value (a computed variable), evaluated as a file in the app's root.
fn code_value(ctx: &EvalContext, state: &State, name: &str, code: &str) -> Result<Value, Error> {
    state
        .evaluate_snippet(name, code)
        .and_then(|v| to_json(&v))
        .map_err(|e| jsonnet_error(ctx, name, &ctx.root.join(crate::FILE_NAME), &e))
}

/// A jsonnet value as JSON, as jsonnet manifests it: hidden fields left out, integers
/// without a fraction; errors keep jsonnet's trace, with the field or index that raised
/// them as a frame.
fn to_json(v: &Val) -> jrsonnet_evaluator::Result<Value> {
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Str(s) => Value::String(s.to_string()),
        Val::Num(n) => {
            let n = n.get();
            if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                #[expect(clippy::cast_possible_truncation, reason = "an integer within 2^53")]
                Value::from(n as i64)
            } else {
                serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
            }
        }
        Val::Arr(a) => {
            let mut out = Vec::with_capacity(a.len() as usize);
            for (i, item) in a.iter().enumerate() {
                out.push(in_description_frame(
                    || format!("array index [{i}]"),
                    || to_json(&item?),
                )?);
            }
            Value::Array(out)
        }
        Val::Obj(o) => {
            let mut out = serde_json::Map::new();
            for (field, value) in o.iter() {
                let json = in_description_frame(
                    || format!("object field {field:?}"),
                    || to_json(&value?),
                )?;
                out.insert(field.to_string(), json);
            }
            Value::Object(out)
        }
        Val::Func(_) => {
            return Err(
                jrsonnet_evaluator::RuntimeError("tried to manifest function".into()).into(),
            );
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Flag;
    use crate::app::tests::tree;
    use serde_json::json;

    const APP: &str = "apiVersion: qbec.io/v1alpha1
kind: App
metadata: {name: shop}
spec:
  libPaths: [lib, vendor]
  vars:
    external:
      - {name: replicas, default: 1}
      - {name: image, default: nginx}
      - {name: unset}
    topLevel:
      - {name: size, components: [sized]}
    computed:
      - {name: full, code: \"std.extVar('image') + ':' + std.extVar('qbec.io/env')\"}
  baseProperties: {tier: base}
  environments:
    dev: {context: kind-dev, defaultNamespace: shop-dev, excludes: [sized]}
    prod: {server: 'https://prod', defaultNamespace: shop, properties: {tier: gold}}
";

    fn names(rendered: &[Rendered]) -> Vec<String> {
        rendered
            .iter()
            .map(|r| {
                format!(
                    "{}/{}",
                    r.component,
                    r.object["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    fn app_with(components: &[(&str, &str)]) -> (tempfile::TempDir, App) {
        let mut files = vec![
            ("qbec.yaml", APP),
            // go-jsonnet searches the library paths last first.
            ("lib/util.libsonnet", "error 'the last library path wins'"),
            (
                "vendor/util.libsonnet",
                "{ cm(name, data):: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name}, data: data} }",
            ),
            // Named by qbec.yaml; the prod environment's.
            ("components/sized.jsonnet", "[]"),
        ];
        files.extend_from_slice(components);
        let dir = tree(&files);
        let app = App::load(dir.path()).unwrap();
        (dir, app)
    }

    fn render(app: &App, env: &str, flags: &[(Flag, &str)]) -> Result<Vec<Rendered>, Error> {
        let mut vars = ExtVars::default();
        for (f, v) in flags {
            vars.add(*f, v)?;
        }
        app.render(env, None, &vars, &Limits::default())
    }

    #[test]
    fn components_render_with_qbecs_variables_defaults_and_flags() {
        let (_dir, app) = app_with(&[
            (
                "components/web.jsonnet",
                "local u = import 'util.libsonnet';
                 { config: u.cm('web', {
                     env: std.extVar('qbec.io/env'), ns: std.extVar('qbec.io/defaultNs'),
                     tag: std.extVar('qbec.io/tag'), clean: std.extVar('qbec.io/cleanMode'),
                     replicas: std.toString(std.extVar('replicas') + 1), image: std.extVar('image'),
                     full: std.extVar('full'), tier: std.extVar('qbec.io/envProperties').tier }) }",
            ),
            (
                "components/sized.jsonnet",
                "function(size='s') [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'sized-' + size}}]",
            ),
            (
                "components/static.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: two}}\n",
            ),
        ]);
        let dev = render(&app, "dev", &[]).unwrap();
        assert_eq!(names(&dev), ["static/one", "static/two", "web/web"]);
        assert_eq!(dev[2].file, Path::new("components/web.jsonnet"));
        assert_eq!(
            dev[2].object["data"],
            json!({"env": "dev", "ns": "shop-dev", "tag": "", "clean": "off", "replicas": "2",
                   "image": "nginx", "full": "nginx:dev", "tier": "base"})
        );
        let prod = render(
            &app,
            "prod",
            &[
                (Flag::ExtCode, "replicas=5"),
                (Flag::ExtStr, "image=httpd"),
                (Flag::TlaStr, "size=xl"),
            ],
        )
        .unwrap();
        assert_eq!(
            names(&prod),
            ["sized/sized-xl", "static/one", "static/two", "web/web"]
        );
        let data = &prod[3].object["data"];
        assert_eq!(
            (&data["replicas"], &data["full"], &data["tier"], &data["ns"]),
            (
                &json!("6"),
                &json!("httpd:prod"),
                &json!("gold"),
                &json!("shop")
            )
        );
    }

    #[test]
    fn inline_code_imports_from_the_app_root_and_qbecs_natives_parse() {
        let (_dir, app) = app_with(&[
            ("config/replicas.libsonnet", "7"),
            ("config/extra.yaml", "a: 1\n---\n---\n- b\n"),
            (
                "components/web.jsonnet",
                "local docs = std.native('parseYaml')(importstr '../config/extra.yaml');
                 {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'web'},
                  data: {n: std.toString(std.extVar('replicas')), docs: std.toString(docs),
                         json: std.toString(std.native('parseJson')('{\"a\": [1]}'))}}",
            ),
        ]);
        let dev = render(
            &app,
            "dev",
            &[(Flag::ExtCode, "replicas=import 'config/replicas.libsonnet'")],
        )
        .unwrap();
        assert_eq!(
            dev[0].object["data"],
            json!({"n": "7", "docs": "[{\"a\": 1}, [\"b\"]]", "json": "{\"a\": [1]}"})
        );
    }

    #[test]
    fn undeclared_variables_and_unknown_environments_are_refused() {
        let (_dir, app) = app_with(&[("components/a.json", "{}")]);
        let err = render(&app, "dev", &[(Flag::ExtStr, "imgae=x")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "specified external variable 'imgae' not declared for app"
        );
        let err = render(&app, "dev", &[(Flag::TlaStr, "x=1")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "specified top level variable 'x' not declared for app"
        );
        let err = render(&app, "qa", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid environment \"qa\": the app has dev, prod"
        );
    }

    #[test]
    fn jsonnet_errors_name_the_file_and_line() {
        let (_dir, app) = app_with(&[(
            "components/bad.jsonnet",
            "local x = 1;\n{\n  a: error 'broken here',\n}\n",
        )]);
        let err = render(&app, "dev", &[]).unwrap_err().to_string();
        let first = err.lines().next().unwrap();
        assert!(
            first.starts_with("components/bad.jsonnet: component bad: ")
                && first.contains("broken here"),
            "{err}"
        );
        assert!(err.contains("components/bad.jsonnet:3:"), "{err}");
        assert!(err.lines().count() <= 2 + TRACE_FRAMES, "{err}");
    }

    #[test]
    fn values_that_are_not_objects_name_the_component() {
        let (_dir, app) = app_with(&[("components/leaf.jsonnet", "{ a: { b: [1] } }")]);
        let err = render(&app, "dev", &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            "components/leaf.jsonnet: component leaf: non-kubernetes object found while evaluating path \"$.a.b[0]\" (found a number)"
        );
    }

    #[test]
    fn endless_jsonnet_fails_at_the_deadline_naming_the_component() {
        let (_dir, app) = app_with(&[
            (
                "components/endless.jsonnet",
                "std.foldl(function(acc, x) acc + x, std.range(0, 2e9), 0)",
            ),
            ("components/fine.json", "[]"),
        ]);
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let started = Instant::now();
        let err = app
            .render("dev", None, &ExtVars::default(), &limits)
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            matches!(&err, Error::Timeout { components, .. } if components == &["endless"]),
            "{err}"
        );
        // Deep recursion stops at the stack limit instead.
        let (_dir, app) = app_with(&[(
            "components/deep.jsonnet",
            "local f(n) = if n == 0 then [] else [f(n - 1)]; f(100000)",
        )]);
        let err = render(&app, "dev", &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("components/deep.jsonnet: component deep:"),
            "{err}"
        );
    }
}
