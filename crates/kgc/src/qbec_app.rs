//! qbec apps as a deploy target (crate `kgc-qbec`): in a directory with a `qbec.yaml` (or with
//! `--app-dir`), `kgc apply|diff|prune|plan|delete|build --env ENV` need no `kgc.yaml`: the app
//! is `metadata.name`, an environment's `defaultNamespace` and `context` stand in for the
//! project's, and the components rendered for the environment are the sources, each object
//! of qbec's component. The `--vm:*` flags are qbec's, spelled as qbec spells them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use kgc_prune::source::SourceObject;
use kgc_qbec::{App, ExtVars, Flag, Limits};

/// qbec's flags.
#[derive(clap::Args, Clone, Default)]
pub struct QbecFlags {
    /// The qbec app's directory, holding qbec.yaml [default: the current directory, when it
    /// has a qbec.yaml and no kgc.yaml or manifests are named].
    #[arg(long = "app-dir", value_name = "DIR")]
    pub(crate) app_dir: Option<PathBuf>,
    /// A qbec external string variable: NAME=VALUE, or NAME to take the environment's $NAME.
    #[arg(long = "vm:ext-str", value_name = "NAME[=VALUE]")]
    ext_str: Vec<String>,
    /// A qbec external string variable from a file: NAME=FILE.
    #[arg(long = "vm:ext-str-file", value_name = "NAME=FILE")]
    ext_str_file: Vec<String>,
    /// A qbec external code variable: NAME=CODE, or NAME to take the environment's $NAME.
    #[arg(long = "vm:ext-code", value_name = "NAME[=CODE]")]
    ext_code: Vec<String>,
    /// A qbec external code variable from a file: NAME=FILE.
    #[arg(long = "vm:ext-code-file", value_name = "NAME=FILE")]
    ext_code_file: Vec<String>,
    /// A top-level string argument, for the components qbec.yaml gives it to.
    #[arg(long = "vm:tla-str", value_name = "NAME[=VALUE]")]
    tla_str: Vec<String>,
    /// A top-level string argument from a file: NAME=FILE.
    #[arg(long = "vm:tla-str-file", value_name = "NAME=FILE")]
    tla_str_file: Vec<String>,
    /// A top-level code argument: NAME=CODE, or NAME to take the environment's $NAME.
    #[arg(long = "vm:tla-code", value_name = "NAME[=CODE]")]
    tla_code: Vec<String>,
    /// A top-level code argument from a file: NAME=FILE.
    #[arg(long = "vm:tla-code-file", value_name = "NAME=FILE")]
    tla_code_file: Vec<String>,
}

impl QbecFlags {
    fn vars(&self) -> anyhow::Result<ExtVars> {
        let mut vars = ExtVars::default();
        let all = [
            (Flag::ExtStr, &self.ext_str),
            (Flag::ExtStrFile, &self.ext_str_file),
            (Flag::ExtCode, &self.ext_code),
            (Flag::ExtCodeFile, &self.ext_code_file),
            (Flag::TlaStr, &self.tla_str),
            (Flag::TlaStrFile, &self.tla_str_file),
            (Flag::TlaCode, &self.tla_code),
            (Flag::TlaCodeFile, &self.tla_code_file),
        ];
        for (flag, values) in all {
            for v in values {
                vars.add(flag, v)?;
            }
        }
        Ok(vars)
    }

    fn any_var(&self) -> bool {
        [
            &self.ext_str,
            &self.ext_str_file,
            &self.ext_code,
            &self.ext_code_file,
            &self.tla_str,
            &self.tla_str_file,
            &self.tla_code,
            &self.tla_code_file,
        ]
        .iter()
        .any(|v| !v.is_empty())
    }
}

/// A loaded app and the command line's variables, before the environment is known.
pub(crate) struct Loaded {
    pub(crate) app: App,
    vars: ExtVars,
}

/// The target's qbec app: `--app-dir`'s, else the current directory's when it has a
/// qbec.yaml and the target has no project file and names no manifests.
pub(crate) fn load(
    flags: &QbecFlags,
    project_flag: bool,
    has_project: bool,
    has_paths: bool,
) -> anyhow::Result<Option<Loaded>> {
    let dir = match &flags.app_dir {
        Some(dir) => {
            if has_paths || project_flag {
                anyhow::bail!(
                    "--app-dir renders the qbec app: pass no manifests or --project with it"
                );
            }
            dir.clone()
        }
        None if !has_project && !has_paths && Path::new(kgc_qbec::FILE_NAME).exists() => {
            eprintln!("kgc: using the qbec app {}", kgc_qbec::FILE_NAME);
            PathBuf::from(".")
        }
        None if flags.any_var() => {
            anyhow::bail!("--vm:* flags are for qbec apps: no qbec.yaml here (pass --app-dir)")
        }
        None => return Ok(None),
    };
    let app = App::load(&dir)?;
    Ok(Some(Loaded {
        app,
        vars: flags.vars()?,
    }))
}

impl Loaded {
    /// Each environment as the project file would declare it, for the project file it stands
    /// in for; an unknown `env` is qbec's error. An environment that names its API server
    /// instead of a context keeps the server: as with qbec, the kubeconfig context whose
    /// cluster has it is looked up when a cluster is contacted ([`context_for_server`]), so
    /// that `kgc build` reads no kubeconfig.
    pub(crate) fn environments(
        &self,
        env: Option<&str>,
        tag: Option<&str>,
    ) -> anyhow::Result<Vec<QbecEnvironment>> {
        if let Some(env) = env {
            self.app.components(env)?;
        }
        self.app
            .environments()
            .into_iter()
            .map(|name| {
                let context = self.app.context(name)?.map(str::to_owned);
                let server = match context {
                    Some(_) => None,
                    None => self.app.server(name)?.map(str::to_owned),
                };
                Ok(QbecEnvironment {
                    name: name.to_owned(),
                    context,
                    server,
                    namespace: self.app.default_namespace(name, tag)?,
                })
            })
            .collect()
    }

    /// The target's sources: the environment's components rendered.
    pub(crate) fn into_source(self, env: &str, tag: Option<&str>) -> Source {
        Source {
            app: self.app,
            vars: self.vars,
            env: env.to_owned(),
            tag: tag.map(str::to_owned),
        }
    }
}

/// One environment of a qbec app: its context, or else its API server, and its namespace.
pub(crate) struct QbecEnvironment {
    pub(crate) name: String,
    pub(crate) context: Option<String>,
    pub(crate) server: Option<String>,
    pub(crate) namespace: String,
}

/// A qbec app and environment, rendered by [`crate::deploy_cmd::read_sources`].
pub(crate) struct Source {
    app: App,
    vars: ExtVars,
    env: String,
    tag: Option<String>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("qbec::Source")
            .field("app", &self.app.file())
            .field("env", &self.env)
            .finish()
    }
}

impl Source {
    pub(crate) fn render(&self) -> anyhow::Result<Vec<SourceObject>> {
        let rendered = self.app.render(
            &self.env,
            self.tag.as_deref(),
            &self.vars,
            &Limits::default(),
        )?;
        Ok(rendered
            .into_iter()
            .map(|r| SourceObject {
                component: r.component,
                file: r.file,
                line: 0,
                object: r.object,
            })
            .collect())
    }
}

/// The kubeconfig context whose cluster's server is `server` (qbec's lookup for an
/// environment's `server`): one, or an error naming them all.
pub(crate) fn context_for_server(
    kubeconfig: Option<&Path>,
    server: &str,
) -> anyhow::Result<String> {
    let kc = match kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path)
            .with_context(|| format!("reading the kubeconfig {}", path.display()))?,
        None => kube::config::Kubeconfig::read().context("reading the kubeconfig")?,
    };
    let same = |s: &str| s.trim_end_matches('/') == server.trim_end_matches('/');
    let clusters: Vec<&str> = kc
        .clusters
        .iter()
        .filter(|c| {
            c.cluster
                .as_ref()
                .and_then(|c| c.server.as_deref())
                .is_some_and(same)
        })
        .map(|c| c.name.as_str())
        .collect();
    let contexts: Vec<&str> = kc
        .contexts
        .iter()
        .filter(|c| {
            c.context
                .as_ref()
                .is_some_and(|c| clusters.contains(&c.cluster.as_str()))
        })
        .map(|c| c.name.as_str())
        .collect();
    match contexts.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => anyhow::bail!("no kubeconfig context has the server {server}: pass --context"),
        many => anyhow::bail!(
            "several kubeconfig contexts have the server {server} ({}): pass --context",
            many.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::deploy_cmd::tests::target;
    use crate::deploy_cmd::{read_sources, resolve};

    #[test]
    fn a_qbec_app_stands_in_for_the_project_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |file: &str, text: &str| {
            let p = dir.path().join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "qbec.yaml",
            "apiVersion: qbec.io/v1alpha1\nkind: App\nmetadata: {name: shop}\nspec:\n  vars: {external: [{name: n, default: a}]}\n  environments:\n    dev: {context: kind-dev, defaultNamespace: shop-dev}\n    prod: {context: prod, excludes: [web]}\n",
        );
        write(
            "components/web.jsonnet",
            "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'web-' + std.extVar('n')}}",
        );
        let d = dir.path().to_str().unwrap();
        let r = resolve(
            &target(&["--app-dir", d, "--env", "dev", "--vm:ext-str=n=b"]),
            true,
        )
        .unwrap();
        assert_eq!(r.identity.describe(), "app=shop,env=dev");
        assert_eq!(
            (r.namespace.as_str(), r.context.as_deref()),
            ("shop-dev", Some("kind-dev"))
        );
        let sources = read_sources(&r).unwrap();
        assert_eq!(sources.len(), 1);
        assert_eq!(sources[0].component, "web");
        assert_eq!(sources[0].object["metadata"]["name"], "web-b");
        // Flags win over the environment; prod has no web.
        let r = resolve(&target(&["--app-dir", d, "--env", "prod", "-n", "x"]), true).unwrap();
        assert_eq!(r.namespace, "x");
        assert!(read_sources(&r).unwrap().is_empty());
        let err = resolve(&target(&["--app-dir", d, "--env", "qa"]), true)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "invalid environment \"qa\": the app has dev, prod");
        let err = resolve(&target(&["--app-dir", d, "--env", "dev", "some/dir"]), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--app-dir"), "{err}");
    }
}
