//! `kgc build` (issue 29): a kustomize tree of 2,000 objects (a base of 500 and three overlays
//! of it, with generators and patches) built by `kgc build` against `kubectl kustomize` of the
//! same tree in the same run, alternating (goal: ≤ 1/5 of its time); and a qbec app of 500
//! objects in 10 jsonnet components rendered by `kgc build --env` (goal: ≤ 1 s). No server:
//! both read files only.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::Bench;
use crate::sync::timed;

/// Objects of the base; each overlay builds the same number again.
const BASE_OBJECTS: usize = 500;
/// Runs of each command, alternating; the median is reported.
const RUNS: usize = 5;
const OVERLAYS: [&str; 3] = ["dev", "staging", "prod"];
/// qbec's app: components and objects in all.
const COMPONENTS: usize = 10;
const QBEC_OBJECTS: usize = 500;

fn write(root: &Path, file: &str, text: &str) -> anyhow::Result<()> {
    let p = root.join(file);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(p, text)?;
    Ok(())
}

/// The base: per app, a Deployment, a Service, a ServiceAccount and a ConfigMap generator
/// (four objects an app, 125 apps), in one file per app; the overlays add a namespace, a
/// prefix, labels, an image tag, a generator merge and a strategic-merge and a JSON patch.
fn kustomize_tree(root: &Path) -> anyhow::Result<()> {
    let apps = BASE_OBJECTS / 4;
    let mut resources = String::from("resources:\n");
    let mut generators = String::from("configMapGenerator:\n");
    for a in 0..apps {
        let file = format!("app-{a:03}.yaml");
        resources.push_str(&format!("- {file}\n"));
        generators.push_str(&format!(
            "- name: app-{a:03}-config\n  literals: [LOG_LEVEL=info, INDEX={a}]\n"
        ));
        write(
            root,
            &format!("base/{file}"),
            &format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{a:03}\n  labels: {{app: app-{a:03}}}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: app-{a:03}}}\n  template:\n    metadata:\n      labels: {{app: app-{a:03}}}\n    spec:\n      serviceAccountName: app-{a:03}\n      containers:\n      - name: main\n        image: registry.example/app:1.0\n        envFrom:\n        - configMapRef: {{name: app-{a:03}-config}}\n        ports:\n        - {{containerPort: 8080, name: http}}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app-{a:03}\nspec:\n  selector: {{app: app-{a:03}}}\n  ports:\n  - {{port: 80, targetPort: http}}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app-{a:03}\n"
            ),
        )?;
    }
    write(
        root,
        "base/kustomization.yaml",
        &format!("{resources}{generators}commonLabels: {{tier: web}}\n"),
    )?;
    for env in OVERLAYS {
        write(
            root,
            &format!("overlays/{env}/kustomization.yaml"),
            &format!(
                "namespace: {env}\nnamePrefix: {env}-\nresources: [../../base]\n\
                 labels:\n- pairs: {{env: {env}}}\n  includeSelectors: false\n\
                 images:\n- name: registry.example/app\n  newTag: \"2.0-{env}\"\n\
                 configMapGenerator:\n- name: app-000-config\n  behavior: merge\n  literals: [ENV={env}]\n\
                 patches:\n- target: {{kind: Deployment}}\n  patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {{name: any}}\n    spec:\n      template:\n        spec:\n          containers:\n          - name: main\n            resources: {{limits: {{memory: 256Mi}}}}\n\
                 - target: {{kind: Service}}\n  patch: |-\n    - {{op: add, path: /metadata/annotations, value: {{env: {env}}}}}\n"
            ),
        )?;
    }
    Ok(())
}

/// A qbec app: 10 jsonnet components of 50 ConfigMaps each, built from a library function
/// and an external variable, in two environments.
fn qbec_app(root: &Path) -> anyhow::Result<()> {
    write(
        root,
        "qbec.yaml",
        "apiVersion: qbec.io/v1alpha1\nkind: App\nmetadata:\n  name: bench\nspec:\n  libPaths: [lib]\n  vars:\n    external:\n    - name: replicas\n      default: 2\n  environments:\n    dev:\n      defaultNamespace: dev\n      context: bench\n    prod:\n      defaultNamespace: prod\n      context: bench\n",
    )?;
    write(
        root,
        "lib/objects.libsonnet",
        "{\n  configMap(name, i):: {\n    apiVersion: 'v1',\n    kind: 'ConfigMap',\n    metadata: { name: name, labels: { index: std.toString(i), env: std.extVar('qbec.io/env') } },\n    data: { ['key-%d' % k]: std.md5(name + k) for k in std.range(0, 9) } + { replicas: std.toString(std.extVar('replicas')) },\n  },\n}\n",
    )?;
    let per = QBEC_OBJECTS / COMPONENTS;
    for c in 0..COMPONENTS {
        write(
            root,
            &format!("components/part-{c:02}.jsonnet"),
            &format!(
                "local o = import 'objects.libsonnet';\n{{\n  ['cm-%d' % i]: o.configMap('c{c:02}-cm-%03d' % i, i) for i in std.range(0, {})\n}}\n",
                per - 1
            ),
        )?;
    }
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

impl Bench {
    pub(crate) async fn build(&mut self) -> anyhow::Result<()> {
        println!(
            "\n== kgc build: a kustomize tree of {} objects (a base of {BASE_OBJECTS} and three overlays: generators, patches), `kgc build` against `kubectl kustomize`, {RUNS} runs each, alternating; a qbec app of {QBEC_OBJECTS} objects in {COMPONENTS} jsonnet components",
            BASE_OBJECTS * 4
        );
        let dir = self.tempdir("build")?;
        let tree = dir.path().join("kustomize");
        kustomize_tree(&tree)?;
        let dirs: Vec<String> = std::iter::once("base".to_owned())
            .chain(OVERLAYS.iter().map(|e| format!("overlays/{e}")))
            .collect();
        let (mut kgc, mut kubectl) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let mut took = Duration::ZERO;
            for d in &dirs {
                let mut c = Command::new(&self.kgc);
                c.arg("build").arg(tree.join(d)).env("RUST_LOG", "warn");
                took += timed(&mut c, "kgc build")?;
            }
            kgc.push(took);
            let mut took = Duration::ZERO;
            for d in &dirs {
                let mut c = Command::new("kubectl");
                c.arg("kustomize").arg(tree.join(d));
                took += timed(&mut c, "kubectl kustomize")?;
            }
            kubectl.push(took);
        }
        let (kgc, kubectl) = (median(kgc), median(kubectl));
        let ratio = kgc.as_secs_f64() / kubectl.as_secs_f64();
        println!(
            "  kgc build {}, kubectl kustomize {} (ratio {ratio:.2})",
            ms(kgc),
            ms(kubectl)
        );
        let row = self.row(
            format!(
                "kgc build, kustomize tree of {} objects (base + 3 overlays)",
                BASE_OBJECTS * 4
            ),
            format!("{} (ratio to kubectl kustomize {ratio:.2})", ms(kgc)),
        );
        row.target = "≤ 1/5 of kubectl kustomize's time".into();
        row.met = Some(ratio <= 0.2);
        row.reference = format!("kubectl kustomize: {}", ms(kubectl));

        let app = dir.path().join("qbec");
        qbec_app(&app)?;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let mut c = Command::new(&self.kgc);
            c.current_dir(&app)
                .args(["build", "--env", "dev"])
                .env("RUST_LOG", "warn");
            runs.push(timed(&mut c, "kgc build --env dev (qbec)")?);
        }
        let took = median(runs);
        println!("  qbec app: kgc build --env dev {}", ms(took));
        let row = self.row(
            format!(
                "kgc build, qbec app of {QBEC_OBJECTS} objects in {COMPONENTS} jsonnet components"
            ),
            ms(took),
        );
        row.target = "≤ 1 s".into();
        row.met = Some(took <= Duration::from_secs(1));
        Ok(())
    }
}
