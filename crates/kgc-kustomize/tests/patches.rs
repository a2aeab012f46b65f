//! Patches cross-checked against `kubectl kustomize` (kustomize v5.5): each case writes a
//! kustomization of plain resources and patches, applies the patches with this crate's
//! functions to the resources (read here, not through the build), and compares the objects
//! with kubectl's. Bad inputs: both refuse, ours in one line naming the file, with the gist of
//! kustomize's message.

use std::path::Path;
use std::process::Command;

use kgc_kustomize::fs::{Disk, Loader};
use kgc_kustomize::openapi::Schemas;
use kgc_kustomize::patch::{self, Patch};
use kgc_kustomize::resource::Resource;
use serde::Deserialize;
use serde_json::Value;

/// The fields of a kustomization these tests use.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Kustomization {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    patches: Vec<Patch>,
    #[serde(default)]
    patches_strategic_merge: Vec<String>,
    #[serde(default)]
    patches_json6902: Vec<Patch>,
    #[serde(default)]
    openapi: Option<Value>,
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write fixture");
    }
}

/// The objects `kubectl kustomize dir` prints, or its stderr.
fn kubectl(dir: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("kubectl's output parses");
    Ok(sorted(docs.into_iter().filter(|d| !d.is_null()).collect()))
}

/// Ours: the resources read, then the patch fields in kustomize's order of transformers
/// (`patchesStrategicMerge`, `patches`, `patchesJson6902`).
fn ours(dir: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization");
    let k: Kustomization = serde_saphyr::from_str(&text).map_err(|e| e.to_string())?;
    let loader = Loader::new(&Disk, dir);
    let mut resources = Vec::new();
    for file in &k.resources {
        let text = std::fs::read_to_string(dir.join(file)).expect("resource file");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("resources parse");
        resources.extend(docs.into_iter().filter(|d| !d.is_null()).map(Resource::new));
    }
    let schemas = Schemas::load(&loader, k.openapi.as_ref()).map_err(|e| e.to_string())?;
    let run = |resources: &mut Vec<Resource>| -> Result<(), kgc_kustomize::Error> {
        patch::apply_patches_strategic_merge(
            resources,
            &k.patches_strategic_merge,
            &loader,
            &schemas,
        )?;
        patch::apply_patches(resources, &k.patches, &loader, &schemas)?;
        patch::apply_patches_json6902(resources, &k.patches_json6902, &loader)
    };
    run(&mut resources).map_err(|e| e.to_string())?;
    Ok(sorted(resources.into_iter().map(|r| r.object).collect()))
}

/// Objects in a fixed order (kubectl sorts by kind; the comparison is about the objects).
fn sorted(mut objects: Vec<Value>) -> Vec<Value> {
    objects.sort_by_key(|o| {
        (
            o["kind"].as_str().unwrap_or_default().to_owned(),
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    });
    objects
}

fn same_as_kubectl(files: &[(&str, &str)]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), files);
    let want = kubectl(dir.path()).unwrap_or_else(|e| panic!("kubectl kustomize: {e}"));
    let have = ours(dir.path()).unwrap_or_else(|e| panic!("ours: {e}"));
    if have != want {
        let show = |v: &[Value]| serde_json::to_string_pretty(v).unwrap_or_default();
        panic!(
            "differs from kubectl kustomize\n--- kgc\n{}\n--- kubectl\n{}",
            show(&have),
            show(&want)
        );
    }
    have
}

/// Our error and kubectl's, for input both must refuse.
fn both_refuse(files: &[(&str, &str)]) -> (String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), files);
    let theirs = match kubectl(dir.path()) {
        Ok(v) => panic!("kubectl kustomize accepted it: {v:?}"),
        Err(e) => e,
    };
    let ours = match ours(dir.path()) {
        Ok(v) => panic!("ours accepted it: {v:?}"),
        Err(e) => e,
    };
    assert!(!ours.contains('\n'), "one line: {ours}");
    (ours, theirs)
}

const DEPLOYMENTS: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
  annotations: {team: blue}
  finalizers: [example.com/a]
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {disk: ssd, zone: a}
      containers:
      - name: app
        image: app:1
        args: [--old]
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
        ports:
        - {containerPort: 8080}
      - name: sidecar
        image: side:1
      volumes:
      - name: data
        emptyDir: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api, tier: back}
  annotations: {team: red}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: api:1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: jobs
  labels: {app: worker, tier: back}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: worker:1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: "1"}
"#;

#[test]
fn strategic_merge_of_containers_by_name() {
    let out = same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: containers.yaml\n",
        ),
        (
            "containers.yaml",
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  finalizers: [example.com/b]
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:2
        args: [--new]
        env:
        - {name: B, value: "20"}
        - {name: C, value: "3"}
        ports:
        - {containerPort: 9090}
      - name: extra
        image: extra:1
      nodeSelector: {zone: null, rack: r1}
"#,
        ),
    ]);
    let web = out.iter().find(|o| o["metadata"]["name"] == "web").unwrap();
    let names: Vec<&str> = web["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "extra", "sidecar"]);
}

#[test]
fn strategic_merge_delete_and_replace() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patchesStrategicMerge:
- |-
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
  $patch: delete
- replace.yaml
patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: api
    spec:
      template:
        spec:
          containers:
          - $patch: replace
          - name: only
            image: only:1
"#,
        ),
        (
            "replace.yaml",
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      nodeSelector:
        $patch: replace
        pool: big
      containers:
      - name: sidecar
        $patch: delete
      - name: app
        $patch: replace
        image: ignored-by-kustomize
      volumes:
      - name: data
        $patch: delete
"#,
        ),
    ]);
}

#[test]
fn json6902_operations() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- path: ops.yaml
  target: {kind: Deployment, name: web}
- patch: '[{"op": "test", "path": "/spec/replicas", "value": 2}, {"op": "replace", "path": "/spec/replicas", "value": 7}]'
  target: {name: api}
patchesJson6902:
- target: {version: v1, kind: Service, name: web}
  patch: |-
    - op: add
      path: /spec/type
      value: NodePort
"#,
        ),
        (
            "ops.yaml",
            r#"- op: add
  path: /spec/template/spec/containers/0/env/-
  value: {name: Z, value: "26"}
- op: replace
  path: /spec/replicas
  value: 4
- op: remove
  path: /spec/template/spec/containers/1
- op: move
  from: /metadata/annotations/team
  path: /metadata/annotations/owner
- op: copy
  from: /metadata/labels/app
  path: /metadata/labels/copied
- op: test
  path: /spec/template/spec/containers/0/image
  value: app:1
- op: replace
  path: /spec/paused
  value: true
- op: copy
  from: /spec/nothing
  path: /spec/copiedNull
"#,
        ),
    ]);
}

#[test]
fn targets_by_kind_name_regex_labels_annotations_and_namespace() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- target: {kind: Deployment}
  patch: |-
    - op: add
      path: /metadata/annotations
      value: {all: "yes"}
- target: {name: "w.*"}
  patch: |-
    kind: Anything
    metadata:
      name: ignored
      labels: {w: "yes"}
- target: {labelSelector: "tier in (back),app!=worker"}
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: x
    spec:
      replicas: 10
- target: {annotationSelector: all=yes, name: web|api}
  patch: |-
    - op: add
      path: /metadata/labels/annotated
      value: "true"
- target: {namespace: jobs}
  patch: |-
    - op: add
      path: /metadata/labels/jobs
      value: "true"
- target: {namespace: default, kind: Service}
  patch: |-
    - op: add
      path: /metadata/labels/defaultns
      value: "true"
- target: {group: apps, version: v1, kind: Deploy.*, name: api}
  patch: |-
    - op: add
      path: /metadata/labels/gvk
      value: "true"
"#,
        ),
    ]);
}

const CUSTOM: &str = r#"apiVersion: example.com/v1
kind: Pipeline
metadata:
  name: build
spec:
  steps:
  - {name: fetch, image: git:1}
  - {name: compile, image: gcc:1}
  tags: [a, b]
  settings: {retries: 1, timeout: 10}
"#;

const CUSTOM_PATCH: &str = r#"apiVersion: example.com/v1
kind: Pipeline
metadata:
  name: build
spec:
  steps:
  - {name: compile, image: gcc:2}
  - {name: test, image: test:1}
  tags: [c]
  settings: {retries: 3}
"#;

#[test]
fn a_custom_resource_without_schema_replaces_lists() {
    let out = same_as_kubectl(&[
        ("pipeline.yaml", CUSTOM),
        ("patch.yaml", CUSTOM_PATCH),
        (
            "kustomization.yaml",
            "resources: [pipeline.yaml]\npatches:\n- path: patch.yaml\n",
        ),
    ]);
    assert_eq!(out[0]["spec"]["steps"].as_array().unwrap().len(), 2);
}

#[test]
fn a_custom_resource_with_openapi_merges_lists_by_key() {
    let out = same_as_kubectl(&[
        ("pipeline.yaml", CUSTOM),
        ("deployments.yaml", DEPLOYMENTS),
        ("patch.yaml", CUSTOM_PATCH),
        (
            "schema.yaml",
            r##"definitions:
  com.example.v1.Pipeline:
    type: object
    x-kubernetes-group-version-kind:
    - {group: example.com, version: v1, kind: Pipeline}
    properties:
      spec: {$ref: "#/definitions/com.example.v1.PipelineSpec"}
  com.example.v1.PipelineSpec:
    type: object
    properties:
      steps:
        type: array
        items: {$ref: "#/definitions/com.example.v1.Step"}
        x-kubernetes-patch-strategy: merge
        x-kubernetes-patch-merge-key: name
      tags:
        type: array
        items: {type: string}
        x-kubernetes-patch-strategy: merge
  com.example.v1.Step:
    type: object
    properties:
      name: {type: string}
      image: {type: string}
"##,
        ),
        (
            "kustomization.yaml",
            r#"resources: [pipeline.yaml, deployments.yaml]
openapi:
  path: schema.yaml
patches:
- path: patch.yaml
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      template:
        spec:
          containers:
          - name: app
            image: app:3
"#,
        ),
    ]);
    let pipeline = out.iter().find(|o| o["kind"] == "Pipeline").unwrap();
    assert_eq!(pipeline["spec"]["steps"].as_array().unwrap().len(), 3);
    // The custom schema replaces the built-in one: containers are no longer merged by name.
    let web = out.iter().find(|o| o["metadata"]["name"] == "web").unwrap();
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_name_change_with_allow_name_change() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- target: {kind: Deployment, name: web}
  options: {allowNameChange: true}
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web-renamed
- target: {kind: Deployment, name: api}
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: not-applied
      namespace: not-either
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: 9
"#,
        ),
    ]);
}

#[test]
fn a_missing_patch_file() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: missing.yaml\n",
        ),
    ]);
    let gist = "failed to get the patch file from path(missing.yaml)";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(
        ours.contains(gist) && ours.contains("kustomization.yaml: patches[0].path"),
        "{ours}"
    );
}

#[test]
fn a_malformed_patch() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        ("bad.yaml", "spec: [unclosed\n"),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: bad.yaml\n",
        ),
    ]);
    let gist = "unable to parse SM or JSON patch";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(ours.contains(gist) && ours.contains("bad.yaml"), "{ours}");
}

#[test]
fn a_failing_json6902_operation() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        ("ops.yaml", "- op: remove\n  path: /spec/nothere\n"),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: ops.yaml\n  target: {name: api}\n",
        ),
    ]);
    let gist = "error in remove for path: '/spec/nothere'";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(ours.contains(gist) && ours.contains("ops.yaml"), "{ours}");
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        ("ops.yaml", "- {op: test, path: /spec/replicas, value: 5}\n"),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: ops.yaml\n  target: {name: api}\n",
        ),
    ]);
    let gist = "testing value /spec/replicas failed: test failed";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(ours.contains(gist) && ours.contains("ops.yaml"), "{ours}");
}

#[test]
fn a_strategic_merge_patch_matching_nothing() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: nope
"#,
        ),
    ]);
    for gist in [
        "no resource matches strategic merge patch",
        "no matches for Id Deployment.v1.apps/nope.[noNs]",
    ] {
        assert!(theirs.contains(gist), "{theirs}");
        assert!(ours.contains(gist), "{ours}");
    }
}

#[test]
fn strategic_merge_across_built_in_kinds() {
    same_as_kubectl(&[
        (
            "resources.yaml",
            r#"apiVersion: v1
kind: Service
metadata: {name: svc, namespace: prod}
spec:
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: https, port: 443, protocol: TCP}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
          - {name: init, image: init:1}
          containers:
          - name: job
            image: job:1
            env:
            - {name: A, value: "1"}
            - {name: B, value: "2"}
            volumeMounts:
            - {name: v, mountPath: /v}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce]}
  template:
    spec:
      containers:
      - {name: db, image: db:1}
      tolerations:
      - {key: a, operator: Exists}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing}
spec:
  rules:
  - host: a.example.com
  - host: b.example.com
"#,
        ),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- patch: |-
    apiVersion: v1
    kind: Service
    metadata: {name: svc, namespace: prod}
    spec:
      ports:
      - {port: 443, name: tls}
      - {port: 8443, name: alt}
- patch: |-
    apiVersion: batch/v1
    kind: CronJob
    metadata: {name: cron}
    spec:
      jobTemplate:
        spec:
          template:
            spec:
              initContainers:
              - {name: init2, image: init:2}
              containers:
              - name: job
                env:
                - {name: A, $patch: delete}
                - {name: C, value: "3"}
                volumeMounts:
                - {mountPath: /w, name: w}
                resources:
                  limits: {cpu: "1"}
- patch: |-
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db}
    spec:
      volumeClaimTemplates:
      - metadata: {name: other}
      template:
        spec:
          tolerations:
          - {key: b, operator: Exists}
          containers:
          - name: db
            ports:
            - {containerPort: 5432, protocol: TCP}
- patch: |-
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    metadata: {name: ing, annotations: {x: "1"}}
    spec:
      rules:
      - host: c.example.com
"#,
        ),
    ]);
}

/// Items without their merge key, and ports keyed by port and protocol: kustomize's (kyaml's)
/// loose matching loses some items, and kgc prints the same.
#[test]
fn strategic_merge_of_items_missing_keys() {
    same_as_kubectl(&[
        (
            "dep.yaml",
            r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: a
        env:
        - {name: A, value: "1"}
        - {value: nokey}
        ports:
        - {containerPort: 80}
        - {containerPort: 53, protocol: UDP}
        - {containerPort: 53, protocol: TCP}
      topologySpreadConstraints:
      - {topologyKey: zone, whenUnsatisfiable: DoNotSchedule, maxSkew: 1}
"#,
        ),
        (
            "kustomization.yaml",
            r#"resources: [dep.yaml]
patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: d}
    spec:
      template:
        spec:
          containers:
          - name: a
            env:
            - {name: B, value: "2"}
            ports:
            - {containerPort: 53, name: dns}
            - {containerPort: 81, protocol: TCP}
          topologySpreadConstraints:
          - {topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, maxSkew: 2}
          - {topologyKey: zone, maxSkew: 3}
"#,
        ),
    ]);
}

/// A patch text that opens with `[` is JSON to kustomize: a YAML flow list is refused.
#[test]
fn a_yaml_flow_list_is_not_a_json_patch() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- patch: '[{op: add, path: /spec/paused, value: true}]'\n  target: {kind: Deployment}\n",
        ),
    ]);
    let gist = "unable to parse SM or JSON patch";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(
        ours.contains(gist) && ours.contains("patches[0].patch"),
        "{ours}"
    );
}

/// A strategic merge patch is read as a resource: without a name it is refused, target or not.
#[test]
fn a_strategic_merge_patch_without_name() {
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- patch: '{kind: Deployment, spec: {paused: true}}'\n  target: {kind: Deployment}\n",
        ),
    ]);
    let gist = "unable to parse SM or JSON patch";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(
        ours.contains(gist) && ours.contains("patches[0].patch"),
        "{ours}"
    );
}

/// kustomize walks the whole object a strategic merge patch touches: merged lists are rebuilt
/// even where the patch does not reach (an item without its key drops the others), and
/// explicit nulls stay.
#[test]
fn strategic_merge_walks_the_whole_object() {
    same_as_kubectl(&[
        (
            "dep.yaml",
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  creationTimestamp: null
spec:
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
    spec:
      containers:
      - name: a
        image: A
        resources: {}
        env:
        - {name: A, value: "1"}
        - {value: nokey}
status: {}
"#,
        ),
        (
            "kustomization.yaml",
            r#"resources: [dep.yaml]
patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: d}
    spec: {replicas: 2}
"#,
        ),
    ]);
}

#[test]
fn a_kind_change_and_a_targeted_delete() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        (
            "kustomization.yaml",
            r#"resources: [resources.yaml]
patches:
- target: {kind: Deployment, name: worker}
  options: {allowKindChange: true, allowNameChange: true}
  patch: |-
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: worker-set
    spec:
      serviceName: worker
- target: {labelSelector: tier=back, kind: Deployment}
  patch: |-
    kind: Deployment
    metadata:
      name: any
    $patch: delete
"#,
        ),
    ]);
}

/// An empty patch file does nothing with a target, and wants one without.
#[test]
fn an_empty_patch_file() {
    same_as_kubectl(&[
        ("resources.yaml", DEPLOYMENTS),
        ("empty.yaml", ""),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: empty.yaml\n  target: {kind: Deployment}\n",
        ),
    ]);
    let (ours, theirs) = both_refuse(&[
        ("resources.yaml", DEPLOYMENTS),
        ("empty.yaml", ""),
        (
            "kustomization.yaml",
            "resources: [resources.yaml]\npatches:\n- path: empty.yaml\n",
        ),
    ]);
    let gist = "must specify a target for JSON patch";
    assert!(theirs.contains(gist), "{theirs}");
    assert!(ours.contains(gist) && ours.contains("empty.yaml"), "{ours}");
}
