//! `meta.k8s.io` Table responses: the server-side printing behind `kubectl get`.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the server's
//! columns verbatim, so every cell here is formatted as kube-apiserver formats it:
//!
//! - built-in kinds follow the printers of `pkg/printers/internalversion/printers.go` (1.32),
//!   always in their wide form (the server generates `Wide: true`; kubectl hides priority-1
//!   columns unless `-o wide`);
//! - kinds without a printer (Role, ClusterRole, LimitRange, CustomResourceDefinition, …) get the
//!   default `Name` / `Created At` of apiserver `pkg/registry/rest/table.go`;
//! - custom resources get `Name` plus the CRD's `additionalPrinterColumns` (or `Age` when there
//!   are none), evaluated with a JSONPath subset as apiextensions' `tableconvertor` does;
//! - ages are `duration.HumanDuration` (apimachinery `pkg/util/duration`).
//!
//! kgc stores objects without the API defaulting of a real cluster, so where a printer would show
//! a defaulted field (a Deployment's `spec.replicas`, a Service's `spec.type`, a port's protocol,
//! a Pod's `status.phase`, …) the upstream default is assumed when the field is absent. The output
//! then matches what a real cluster shows for the same manifest.
//!
//! Objects are read as untyped JSON and nothing here panics on malformed input: a missing or
//! mistyped field prints as the zero value upstream would print (`0`, `""`, `<none>`,
//! `<unknown>`).

// Until the handlers call into this module, only the tests do.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use jiff::{SignedDuration, Timestamp};
use kgc_meta::ResourceInfo;
use kgc_store::StoredObject;
use serde_json::{Map, Value, json};

/// Which object each row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// `"object": null`.
    None,
    /// A `PartialObjectMetadata` with the object's `metadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; absent or empty means `Metadata`. The error is
    /// the message of upstream's 400 BadRequest.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(Self::Metadata),
            "None" => Ok(Self::None),
            "Object" => Ok(Self::Object),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// Whether an Accept header asks for a Table (any of v1 / v1beta1), and which version to answer.
///
/// Media ranges are tried by descending `q`, in header order among equals, as apiserver's
/// negotiation does. The first range that is a JSON Table request in `meta.k8s.io` v1 or v1beta1
/// wins; a plain range the server can answer (`application/json`, `*/*`, …) met first means no
/// Table. Table requests in other media types or group-versions are skipped.
pub(crate) fn wants_table(accept: &str) -> Option<&'static str> {
    struct Clause<'a> {
        q: f32,
        media: String,
        as_: Option<&'a str>,
        g: Option<&'a str>,
        v: Option<&'a str>,
    }
    let mut clauses: Vec<Clause<'_>> = Vec::new();
    for part in accept.split(',') {
        let mut pieces = part.split(';');
        let media = pieces
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if media.is_empty() {
            continue;
        }
        let mut clause = Clause {
            q: 1.0,
            media,
            as_: None,
            g: None,
            v: None,
        };
        for param in pieces {
            let Some((k, v)) = param.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => clause.q = v.parse().unwrap_or(0.0),
                "as" => clause.as_ = Some(v),
                "g" => clause.g = Some(v),
                "v" => clause.v = Some(v),
                _ => {}
            }
        }
        if clause.q > 0.0 {
            clauses.push(clause);
        }
    }
    // A stable sort: equal q keeps header order.
    clauses.sort_by(|a, b| b.q.total_cmp(&a.q));
    for c in &clauses {
        match c.as_ {
            Some(kind) => {
                if kind == "Table" && c.g == Some("meta.k8s.io") && c.media == "application/json" {
                    match c.v {
                        Some("v1") => return Some("v1"),
                        Some("v1beta1") => return Some("v1beta1"),
                        _ => {}
                    }
                }
            }
            None => {
                if matches!(
                    c.media.as_str(),
                    "application/json"
                        | "application/yaml"
                        | "application/vnd.kubernetes.protobuf"
                        | "application/*"
                        | "*/*"
                ) {
                    return None;
                }
            }
        }
    }
    None
}

/// Column definitions for a resource (with priority 1 columns for -o wide).
pub(crate) fn columns(info: &ResourceInfo) -> Vec<Value> {
    match printer_for(info) {
        Printer::Custom => custom_columns(info),
        p => p.columns().iter().map(Col::to_json).collect(),
    }
}

/// One row for one object (cells as upstream prints them; `now` for ages). A row's
/// `PartialObjectMetadata` is in `meta.k8s.io/v1`; [`table`] uses the table's own version.
#[cfg(test)]
pub(crate) fn row(
    info: &ResourceInfo,
    obj: &Value,
    include: &IncludeObject,
    now: Timestamp,
) -> Value {
    row_in(info, printer_for(info), obj, include, now, "v1")
}

/// A whole Table body for stored objects. `with_columns=false` for watch events after the first:
/// upstream sets `NoHeaders` there and `columnDefinitions` is `null`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn table<I>(
    info: &ResourceInfo,
    objects: I,
    version: &str,
    resource_version: &str,
    continue_token: Option<&str>,
    include: &IncludeObject,
    with_columns: bool,
    now: Timestamp,
) -> Value
where
    I: IntoIterator,
    I::Item: Borrow<StoredObject>,
{
    let values: Vec<Value> = objects.into_iter().map(|o| o.borrow().value()).collect();
    table_of_values(
        info,
        &values,
        version,
        resource_version,
        continue_token,
        include,
        with_columns,
        now,
    )
}

/// [`table`] over objects already decoded (a single GET, a watch event's object).
#[allow(clippy::too_many_arguments)]
pub(crate) fn table_of_values<'a, I>(
    info: &ResourceInfo,
    objects: I,
    version: &str,
    resource_version: &str,
    continue_token: Option<&str>,
    include: &IncludeObject,
    with_columns: bool,
    now: Timestamp,
) -> Value
where
    I: IntoIterator<Item = &'a Value>,
{
    let version = if version == "v1beta1" {
        "v1beta1"
    } else {
        "v1"
    };
    let printer = printer_for(info);
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|o| row_in(info, printer, o, include, now, version))
        .collect();
    let mut metadata = Map::new();
    if !resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), resource_version.into());
    }
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        metadata.insert("continue".into(), token.into());
    }
    let column_definitions = if with_columns {
        Value::Array(columns(info))
    } else {
        Value::Null
    };
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

fn row_in(
    info: &ResourceInfo,
    printer: Printer,
    obj: &Value,
    include: &IncludeObject,
    now: Timestamp,
    version: &str,
) -> Value {
    let cells = printer.cells(info, obj, now);
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    if printer == Printer::Pod {
        let (reason, message) = match st(&obj["status"]["phase"]) {
            "Succeeded" => ("Succeeded", "The pod has completed successfully."),
            "Failed" => ("Failed", "The pod failed."),
            _ => ("", ""),
        };
        if !reason.is_empty() {
            row.insert(
                "conditions".into(),
                json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]),
            );
        }
    }
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let metadata = match &obj["metadata"] {
                Value::Object(m) => Value::Object(m.clone()),
                _ => Value::Object(Map::new()),
            };
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": metadata,
            })
        }
    };
    row.insert("object".into(), object);
    Value::Object(row)
}

// ---------------------------------------------------------------------------------------------
// Durations and timestamps

/// apimachinery `duration.HumanDuration`: about two significant figures.
pub(crate) fn human_duration(d: SignedDuration) -> String {
    // Go truncates toward zero (`int(d.Seconds())`), as `as_secs` does.
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), which `metav1.Time.IsZero` reports as unset.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// A `metav1.Time` / `MicroTime`; `None` when absent, unparsable or Go's zero time.
fn timestamp(v: &Value) -> Option<Timestamp> {
    let t: Timestamp = v.as_str()?.parse().ok()?;
    (t.as_second() != GO_ZERO_TIME).then_some(t)
}

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
fn since(v: &Value, now: Timestamp) -> String {
    match timestamp(v) {
        Some(t) => human_duration(now.duration_since(t)),
        None => "<unknown>".into(),
    }
}

fn age(obj: &Value, now: Timestamp) -> Value {
    Value::String(since(&obj["metadata"]["creationTimestamp"], now))
}

// ---------------------------------------------------------------------------------------------
// Tolerant accessors

fn st(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A string field, or `default` when absent or empty.
fn st_or<'a>(v: &'a Value, default: &'a str) -> &'a str {
    match v.as_str() {
        Some(s) if !s.is_empty() => s,
        _ => default,
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| v.as_f64().map(|f| f as i64))
        .unwrap_or(0)
}

fn int_or(v: &Value, default: i64) -> i64 {
    if v.is_number() { int(v) } else { default }
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn map_len(v: &Value) -> usize {
    v.as_object().map_or(0, Map::len)
}

fn name(obj: &Value) -> Value {
    Value::String(st(&obj["metadata"]["name"]).to_owned())
}

fn deleting(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

/// A `resource.Quantity` as text (`.String()`); zero when absent. Quantities are printed as
/// written, not canonicalized.
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".into(),
    }
}

/// An `IntOrString` as text.
fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
fn format_labels(v: &Value) -> String {
    let Some(m) = v.as_object() else {
        return "<none>".into();
    };
    let sorted: BTreeMap<&str, &str> = m.iter().map(|(k, v)| (k.as_str(), st(v))).collect();
    let s = sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    if s.is_empty() { "<none>".into() } else { s }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key, set values sorted.
/// `Err` for an invalid operator or value count.
fn label_selector_string(sel: &Value) -> Result<String, ()> {
    if sel.is_null() {
        return Ok(String::new());
    }
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", st(v))));
        }
    }
    for expr in arr(&sel["matchExpressions"]) {
        let key = st(&expr["key"]);
        let mut values: Vec<&str> = arr(&expr["values"]).iter().map(st).collect();
        values.sort_unstable();
        let text = match st(&expr["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return Err(());
                }
                let word = if op == "In" { "in" } else { "notin" };
                format!("{key} {word} ({})", values.join(","))
            }
            "Exists" if values.is_empty() => key.to_owned(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key.to_owned(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
fn format_label_selector(sel: &Value) -> String {
    match label_selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// `layoutContainerCells`: container names and images, comma-joined.
fn container_cells(containers: &Value) -> (Value, Value) {
    let list = arr(containers);
    let names = list
        .iter()
        .map(|c| st(&c["name"]))
        .collect::<Vec<_>>()
        .join(",");
    let images = list
        .iter()
        .map(|c| st(&c["image"]))
        .collect::<Vec<_>>()
        .join(",");
    (Value::String(names), Value::String(images))
}

/// `listWithMoreString`.
fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let ret = list.join(",");
    if more {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}

// ---------------------------------------------------------------------------------------------
// Column definitions

struct Col {
    name: &'static str,
    ty: &'static str,
    format: &'static str,
    priority: i32,
    description: &'static str,
}

impl Col {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        priority: 0,
        description,
    }
}

const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        priority: 1,
        description,
    }
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";
const SELECTOR_DOC: &str = "A label query over pods that should match the replica count. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    priority: 0,
    description: NAME_DOC,
};
const AGE: Col = col("Age", "string", CREATED_DOC);
const CONTAINERS: Col = wide("Containers", "string", CONTAINERS_DOC);
const IMAGES: Col = wide("Images", "string", IMAGES_DOC);
const SELECTOR: Col = wide("Selector", "string", SELECTOR_DOC);

const POD_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    wide(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName.",
    ),
    wide(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness.",
    ),
];

const DEPLOYMENT_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    col(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICA_SET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas.",
    ),
    col(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas.",
    ),
    col(
        "Ready",
        "integer",
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const STATEFUL_SET_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod.",
    ),
    col(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    col(
        "Up-to-date",
        "integer",
        "The total number of nodes that are running updated daemon pod",
    ),
    col(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
    ),
    col(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const JOB_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const CRON_JOB_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Schedule",
        "string",
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    col(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    col(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.",
    ),
    col(
        "Active",
        "integer",
        "A list of pointers to currently running jobs.",
    ),
    col(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const SERVICE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Type",
        "string",
        "type determines how the Service is exposed. Defaults to ClusterIP.",
    ),
    col(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    col(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    col(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service.",
    ),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];

const INGRESS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

const ENDPOINTS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets.",
    ),
    AGE,
];

const NODE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide(
        "Internal-IP",
        "string",
        "List of addresses reachable to the node.",
    ),
    wide(
        "External-IP",
        "string",
        "List of addresses reachable to the node.",
    ),
    wide(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];

const EVENT_COLUMNS: &[Col] = &[
    col(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    col(
        "Type",
        "string",
        "Type of this event (Normal, Warning), new types could be added in the future",
    ),
    col(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    col("Object", "string", "The object that this event is about."),
    wide(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
    ),
    wide(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
    ),
    col(
        "Message",
        "string",
        "A human-readable description of the status of this operation.",
    ),
    wide(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    wide(
        "Count",
        "string",
        "The number of times this event has occurred.",
    ),
    Col {
        priority: 1,
        ..NAME
    },
];

const NAMESPACE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the namespace"),
    AGE,
];

const SECRET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data.",
    ),
    col(
        "Data",
        "string",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'.",
    ),
    AGE,
];

const SERVICE_ACCOUNT_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    AGE,
];

const PERSISTENT_VOLUME_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity.",
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted.",
    ),
    col(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
    ),
    col(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim.",
    ),
    col(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
    ),
    col("StorageClass", "string", "StorageClass of the pv"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    col(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
    ),
];

const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Status",
        "string",
        "phase represents the current phase of PersistentVolumeClaim.",
    ),
    col(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    col(
        "Capacity",
        "string",
        "capacity represents the actual resources of the underlying volume.",
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has.",
    ),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim.",
    ),
];

const HPA_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Reference",
        "string",
        "scaleTargetRef points to the target resource to scale.",
    ),
    col(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to calculate the desired replica count.",
    ),
    col(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
    ),
    col(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
    ),
    col(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler.",
    ),
    AGE,
];

const CONFIG_MAP_COLUMNS: &[Col] = &[
    NAME,
    col("Data", "string", "Data contains the configuration data."),
    AGE,
];

const NETWORK_POLICY_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.",
    ),
    AGE,
];

const ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Role",
        "string",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
    ),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    ),
];

const CLUSTER_ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Role",
        "string",
        "RoleRef can only reference a ClusterRole in the global namespace.",
    ),
    AGE,
    wide("Users", "string", "Users in the clusterRoleBinding"),
    wide("Groups", "string", "Groups in the clusterRoleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    ),
];

const CSR_COLUMNS: &[Col] = &[
    NAME,
    AGE,
    col("SignerName", "string", "Requested signer for the request."),
    col("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
    col(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of the issued certificate.",
    ),
    col(
        "Condition",
        "string",
        "Conditions applied to the request, such as approval or denial.",
    ),
];

const LEASE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease.",
    ),
    AGE,
];

const STORAGE_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Provisioner",
        "string",
        "provisioner indicates the type of the provisioner.",
    ),
    col(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
    ),
    col(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
    ),
    AGE,
];

const CONTROLLER_REVISION_COLUMNS: &[Col] = &[
    NAME,
    col("Controller", "string", "Controller of the object"),
    col(
        "Revision",
        "string",
        "Revision indicates the revision of the state represented by Data.",
    ),
    AGE,
];

const RESOURCE_QUOTA_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];

const PRIORITY_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Value",
        "integer",
        "value represents the integer value of this priority class.",
    ),
    col(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority.",
    ),
];

const ENDPOINT_SLICE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    col(
        "Ports",
        "string",
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    col(
        "Endpoints",
        "string",
        "endpoints is a list of unique endpoints in this slice.",
    ),
    AGE,
];

const PDB_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

const POD_TEMPLATE_COLUMNS: &[Col] = &[
    NAME,
    col("Containers", "string", CONTAINERS_DOC),
    col("Images", "string", IMAGES_DOC),
    col("Pod Labels", "string", "The labels for the pod template."),
];

const INGRESS_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

/// `rest.defaultTableConvertor`: kinds without a printer of their own.
const DEFAULT_COLUMNS: &[Col] = &[NAME, col("Created At", "date", CREATED_DOC)];

// ---------------------------------------------------------------------------------------------
// Printers

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Printer {
    Pod,
    PodTemplate,
    Service,
    ReplicationController,
    Namespace,
    ConfigMap,
    Secret,
    Endpoints,
    ServiceAccount,
    PersistentVolume,
    PersistentVolumeClaim,
    Node,
    Event,
    ResourceQuota,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    ControllerRevision,
    Job,
    CronJob,
    HorizontalPodAutoscaler,
    Lease,
    CertificateSigningRequest,
    RoleBinding,
    ClusterRoleBinding,
    Ingress,
    IngressClass,
    NetworkPolicy,
    PodDisruptionBudget,
    StorageClass,
    EndpointSlice,
    PriorityClass,
    /// A custom resource: Name plus the CRD's printer columns.
    Custom,
    /// Name and Created At.
    Default,
}

fn printer_for(info: &ResourceInfo) -> Printer {
    use Printer as P;
    if info.custom {
        return P::Custom;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => P::Pod,
        ("", "PodTemplate") => P::PodTemplate,
        ("", "Service") => P::Service,
        ("", "ReplicationController") => P::ReplicationController,
        ("", "Namespace") => P::Namespace,
        ("", "ConfigMap") => P::ConfigMap,
        ("", "Secret") => P::Secret,
        ("", "Endpoints") => P::Endpoints,
        ("", "ServiceAccount") => P::ServiceAccount,
        ("", "PersistentVolume") => P::PersistentVolume,
        ("", "PersistentVolumeClaim") => P::PersistentVolumeClaim,
        ("", "Node") => P::Node,
        ("" | "events.k8s.io", "Event") => P::Event,
        ("", "ResourceQuota") => P::ResourceQuota,
        ("apps" | "extensions", "Deployment") => P::Deployment,
        ("apps" | "extensions", "ReplicaSet") => P::ReplicaSet,
        ("apps", "StatefulSet") => P::StatefulSet,
        ("apps" | "extensions", "DaemonSet") => P::DaemonSet,
        ("apps", "ControllerRevision") => P::ControllerRevision,
        ("batch", "Job") => P::Job,
        ("batch", "CronJob") => P::CronJob,
        ("autoscaling", "HorizontalPodAutoscaler") => P::HorizontalPodAutoscaler,
        ("coordination.k8s.io", "Lease") => P::Lease,
        ("certificates.k8s.io", "CertificateSigningRequest") => P::CertificateSigningRequest,
        ("rbac.authorization.k8s.io", "RoleBinding") => P::RoleBinding,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => P::ClusterRoleBinding,
        ("networking.k8s.io" | "extensions", "Ingress") => P::Ingress,
        ("networking.k8s.io", "IngressClass") => P::IngressClass,
        ("networking.k8s.io", "NetworkPolicy") => P::NetworkPolicy,
        ("policy", "PodDisruptionBudget") => P::PodDisruptionBudget,
        ("storage.k8s.io", "StorageClass") => P::StorageClass,
        ("discovery.k8s.io", "EndpointSlice") => P::EndpointSlice,
        ("scheduling.k8s.io", "PriorityClass") => P::PriorityClass,
        _ => P::Default,
    }
}

impl Printer {
    fn columns(self) -> &'static [Col] {
        use Printer as P;
        match self {
            P::Pod => POD_COLUMNS,
            P::PodTemplate => POD_TEMPLATE_COLUMNS,
            P::Service => SERVICE_COLUMNS,
            // Same columns as replica sets, with the RC's own field docs upstream.
            P::ReplicationController | P::ReplicaSet => REPLICA_SET_COLUMNS,
            P::Namespace => NAMESPACE_COLUMNS,
            P::ConfigMap => CONFIG_MAP_COLUMNS,
            P::Secret => SECRET_COLUMNS,
            P::Endpoints => ENDPOINTS_COLUMNS,
            P::ServiceAccount => SERVICE_ACCOUNT_COLUMNS,
            P::PersistentVolume => PERSISTENT_VOLUME_COLUMNS,
            P::PersistentVolumeClaim => PERSISTENT_VOLUME_CLAIM_COLUMNS,
            P::Node => NODE_COLUMNS,
            P::Event => EVENT_COLUMNS,
            P::ResourceQuota => RESOURCE_QUOTA_COLUMNS,
            P::Deployment => DEPLOYMENT_COLUMNS,
            P::StatefulSet => STATEFUL_SET_COLUMNS,
            P::DaemonSet => DAEMON_SET_COLUMNS,
            P::ControllerRevision => CONTROLLER_REVISION_COLUMNS,
            P::Job => JOB_COLUMNS,
            P::CronJob => CRON_JOB_COLUMNS,
            P::HorizontalPodAutoscaler => HPA_COLUMNS,
            P::Lease => LEASE_COLUMNS,
            P::CertificateSigningRequest => CSR_COLUMNS,
            P::RoleBinding => ROLE_BINDING_COLUMNS,
            P::ClusterRoleBinding => CLUSTER_ROLE_BINDING_COLUMNS,
            P::Ingress => INGRESS_COLUMNS,
            P::IngressClass => INGRESS_CLASS_COLUMNS,
            P::NetworkPolicy => NETWORK_POLICY_COLUMNS,
            P::PodDisruptionBudget => PDB_COLUMNS,
            P::StorageClass => STORAGE_CLASS_COLUMNS,
            P::EndpointSlice => ENDPOINT_SLICE_COLUMNS,
            P::PriorityClass => PRIORITY_CLASS_COLUMNS,
            P::Custom | P::Default => DEFAULT_COLUMNS,
        }
    }

    fn cells(self, info: &ResourceInfo, o: &Value, now: Timestamp) -> Vec<Value> {
        use Printer as P;
        match self {
            P::Pod => pod_cells(o, now),
            P::PodTemplate => {
                let (names, images) = container_cells(&o["template"]["spec"]["containers"]);
                vec![
                    name(o),
                    names,
                    images,
                    format_labels(&o["template"]["metadata"]["labels"]).into(),
                ]
            }
            P::Service => service_cells(o, now),
            P::ReplicationController => {
                let spec = &o["spec"];
                let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
                vec![
                    name(o),
                    int_or(&spec["replicas"], 1).into(),
                    int(&o["status"]["replicas"]).into(),
                    int(&o["status"]["readyReplicas"]).into(),
                    age(o, now),
                    names,
                    images,
                    format_labels(&spec["selector"]).into(),
                ]
            }
            P::Namespace => vec![
                name(o),
                st_or(&o["status"]["phase"], "Active").into(),
                age(o, now),
            ],
            P::ConfigMap => vec![
                name(o),
                (map_len(&o["data"]) + map_len(&o["binaryData"])).into(),
                age(o, now),
            ],
            P::Secret => {
                // The real server folds stringData into data on write.
                let mut keys: BTreeSet<&str> = BTreeSet::new();
                for field in ["data", "stringData"] {
                    if let Some(m) = o[field].as_object() {
                        keys.extend(m.keys().map(String::as_str));
                    }
                }
                vec![
                    name(o),
                    st_or(&o["type"], "Opaque").into(),
                    keys.len().into(),
                    age(o, now),
                ]
            }
            P::Endpoints => vec![name(o), format_endpoints(o).into(), age(o, now)],
            P::ServiceAccount => vec![name(o), arr(&o["secrets"]).len().into(), age(o, now)],
            P::PersistentVolume => persistent_volume_cells(o, now),
            P::PersistentVolumeClaim => persistent_volume_claim_cells(o, now),
            P::Node => node_cells(o, now),
            P::Event => event_cells(info, o, now),
            P::ResourceQuota => resource_quota_cells(o, now),
            P::Deployment => {
                let spec = &o["spec"];
                let status = &o["status"];
                let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
                let selector = label_selector_string(&spec["selector"])
                    .unwrap_or_else(|()| "<invalid>".into());
                vec![
                    name(o),
                    format!(
                        "{}/{}",
                        int(&status["readyReplicas"]),
                        int_or(&spec["replicas"], 1)
                    )
                    .into(),
                    int(&status["updatedReplicas"]).into(),
                    int(&status["availableReplicas"]).into(),
                    age(o, now),
                    names,
                    images,
                    selector.into(),
                ]
            }
            P::ReplicaSet => {
                let spec = &o["spec"];
                let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
                vec![
                    name(o),
                    int_or(&spec["replicas"], 1).into(),
                    int(&o["status"]["replicas"]).into(),
                    int(&o["status"]["readyReplicas"]).into(),
                    age(o, now),
                    names,
                    images,
                    format_label_selector(&spec["selector"]).into(),
                ]
            }
            P::StatefulSet => {
                let spec = &o["spec"];
                let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
                vec![
                    name(o),
                    format!(
                        "{}/{}",
                        int(&o["status"]["readyReplicas"]),
                        int_or(&spec["replicas"], 1)
                    )
                    .into(),
                    age(o, now),
                    names,
                    images,
                ]
            }
            P::DaemonSet => {
                let spec = &o["spec"];
                let status = &o["status"];
                let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
                vec![
                    name(o),
                    int(&status["desiredNumberScheduled"]).into(),
                    int(&status["currentNumberScheduled"]).into(),
                    int(&status["numberReady"]).into(),
                    int(&status["updatedNumberScheduled"]).into(),
                    int(&status["numberAvailable"]).into(),
                    format_labels(&spec["template"]["spec"]["nodeSelector"]).into(),
                    age(o, now),
                    names,
                    images,
                    format_label_selector(&spec["selector"]).into(),
                ]
            }
            P::ControllerRevision => controller_revision_cells(o, now),
            P::Job => job_cells(o, now),
            P::CronJob => cron_job_cells(o, now),
            P::HorizontalPodAutoscaler => hpa_cells(o, now),
            P::Lease => vec![
                name(o),
                st(&o["spec"]["holderIdentity"]).into(),
                age(o, now),
            ],
            P::CertificateSigningRequest => csr_cells(o, now),
            P::RoleBinding | P::ClusterRoleBinding => role_binding_cells(o, now),
            P::Ingress => ingress_cells(o, now),
            P::IngressClass => {
                let params = &o["spec"]["parameters"];
                let parameters = if params.is_object() {
                    let mut p = st(&params["kind"]).to_owned();
                    if let Some(group) = params["apiGroup"].as_str() {
                        p = format!("{p}.{group}");
                    }
                    format!("{p}/{}", st(&params["name"]))
                } else {
                    "<none>".into()
                };
                vec![
                    name(o),
                    st(&o["spec"]["controller"]).into(),
                    parameters.into(),
                    age(o, now),
                ]
            }
            P::NetworkPolicy => vec![
                name(o),
                // A missing podSelector prints as the empty selector: `<none>`.
                format_label_selector(&o["spec"]["podSelector"]).into(),
                age(o, now),
            ],
            P::PodDisruptionBudget => vec![
                name(o),
                int_or_string(&o["spec"]["minAvailable"])
                    .unwrap_or_else(|| "N/A".into())
                    .into(),
                int_or_string(&o["spec"]["maxUnavailable"])
                    .unwrap_or_else(|| "N/A".into())
                    .into(),
                int(&o["status"]["disruptionsAllowed"]).into(),
                age(o, now),
            ],
            P::StorageClass => {
                let annotations = &o["metadata"]["annotations"];
                let is_default = st(&annotations["storageclass.kubernetes.io/is-default-class"])
                    == "true"
                    || st(&annotations["storageclass.beta.kubernetes.io/is-default-class"])
                        == "true";
                let mut n = st(&o["metadata"]["name"]).to_owned();
                if is_default {
                    n.push_str(" (default)");
                }
                vec![
                    n.into(),
                    st(&o["provisioner"]).into(),
                    st_or(&o["reclaimPolicy"], "Delete").into(),
                    st_or(&o["volumeBindingMode"], "Immediate").into(),
                    o["allowVolumeExpansion"].as_bool().unwrap_or(false).into(),
                    age(o, now),
                ]
            }
            P::EndpointSlice => endpoint_slice_cells(o, now),
            P::PriorityClass => vec![
                name(o),
                int(&o["value"]).into(),
                o["globalDefault"].as_bool().unwrap_or(false).into(),
                age(o, now),
                st_or(&o["preemptionPolicy"], "PreemptLowerPriority").into(),
            ],
            P::Custom => custom_cells(info, o, now),
            P::Default => vec![
                name(o),
                match timestamp(&o["metadata"]["creationTimestamp"]) {
                    Some(t) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string().into(),
                    // Go formats the zero time.
                    None => "0001-01-01T00:00:00Z".into(),
                },
            ],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pods

fn pod_cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let mut restarts: i64 = 0;
    let mut restartable_init_restarts: i64 = 0;
    let mut total_containers = arr(&spec["containers"]).len();
    let mut ready_containers = 0usize;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_init_restart: Option<Timestamp> = None;

    // The pod registry sets phase Pending on create.
    let phase = st_or(&status["phase"], "Pending");
    let mut reason = st_or(&status["reason"], phase).to_owned();

    for condition in arr(&status["conditions"]) {
        if st(&condition["type"]) == "PodScheduled" && st(&condition["reason"]) == "SchedulingGated"
        {
            reason = "SchedulingGated".into();
        }
    }

    let init_specs = arr(&spec["initContainers"]);
    let restartable = |container_name: &str| {
        init_specs
            .iter()
            .any(|c| st(&c["name"]) == container_name && st(&c["restartPolicy"]) == "Always")
    };
    total_containers += init_specs
        .iter()
        .filter(|c| st(&c["restartPolicy"]) == "Always")
        .count();

    let later =
        |current: Option<Timestamp>, candidate: &Value| match (current, timestamp(candidate)) {
            (Some(c), Some(t)) if t > c => Some(t),
            (None, Some(t)) => Some(t),
            (c, _) => c,
        };

    let mut initializing = false;
    for (i, container) in arr(&status["initContainerStatuses"]).iter().enumerate() {
        let count = int(&container["restartCount"]);
        restarts += count;
        let last_terminated = &container["lastState"]["terminated"];
        if last_terminated.is_object() {
            last_restart = later(last_restart, &last_terminated["finishedAt"]);
        }
        let is_restartable = restartable(st(&container["name"]));
        if is_restartable {
            restartable_init_restarts += count;
            if last_terminated.is_object() {
                last_restartable_init_restart = later(
                    last_restartable_init_restart,
                    &last_terminated["finishedAt"],
                );
            }
        }
        let state = &container["state"];
        let terminated = &state["terminated"];
        let waiting = &state["waiting"];
        if terminated.is_object() && int(&terminated["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && container["started"].as_bool() == Some(true) {
            if container["ready"].as_bool() == Some(true) {
                ready_containers += 1;
            }
            continue;
        }
        if terminated.is_object() {
            let r = st(&terminated["reason"]);
            reason = if r.is_empty() {
                let signal = int(&terminated["signal"]);
                if signal != 0 {
                    format!("Init:Signal:{signal}")
                } else {
                    format!("Init:ExitCode:{}", int(&terminated["exitCode"]))
                }
            } else {
                format!("Init:{r}")
            };
        } else if waiting.is_object()
            && !st(&waiting["reason"]).is_empty()
            && st(&waiting["reason"]) != "PodInitializing"
        {
            reason = format!("Init:{}", st(&waiting["reason"]));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = arr(&status["conditions"])
        .iter()
        .find(|c| st(&c["type"]) == "Initialized")
        .is_some_and(|c| st(&c["status"]) == "True");
    if !initializing || initialized {
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for container in arr(&status["containerStatuses"]).iter().rev() {
            restarts += int(&container["restartCount"]);
            let last_terminated = &container["lastState"]["terminated"];
            if last_terminated.is_object() {
                last_restart = later(last_restart, &last_terminated["finishedAt"]);
            }
            let state = &container["state"];
            let terminated = &state["terminated"];
            let waiting_reason = st(&state["waiting"]["reason"]);
            if state["waiting"].is_object() && !waiting_reason.is_empty() {
                reason = waiting_reason.to_owned();
            } else if terminated.is_object() && !st(&terminated["reason"]).is_empty() {
                reason = st(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                let signal = int(&terminated["signal"]);
                reason = if signal != 0 {
                    format!("Signal:{signal}")
                } else {
                    format!("ExitCode:{}", int(&terminated["exitCode"]))
                };
            } else if container["ready"].as_bool() == Some(true) && state["running"].is_object() {
                has_running = true;
                ready_containers += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = arr(&status["conditions"])
                .iter()
                .any(|c| st(&c["type"]) == "Ready" && st(&c["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    if deleting(pod) && st(&status["reason"]) == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting(pod) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(now.duration_since(t)))
        }
        _ => restarts.to_string(),
    };

    let pod_ip = arr(&status["podIPs"])
        .first()
        .map(|p| st(&p["ip"]))
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| st(&status["podIP"]));
    let gates = arr(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let conditions = arr(&status["conditions"]);
        let true_conditions = gates
            .iter()
            .filter(|gate| {
                let wanted = st(&gate["conditionType"]);
                conditions
                    .iter()
                    .find(|c| st(&c["type"]) == wanted)
                    .is_some_and(|c| st(&c["status"]) == "True")
            })
            .count();
        format!("{true_conditions}/{}", gates.len())
    };

    vec![
        name(pod),
        format!("{ready_containers}/{total_containers}").into(),
        reason.into(),
        restarts_cell.into(),
        age(pod, now),
        if pod_ip.is_empty() { "<none>" } else { pod_ip }.into(),
        st_or(&spec["nodeName"], "<none>").into(),
        st_or(&status["nominatedNodeName"], "<none>").into(),
        readiness_gates.into(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Services, ingresses, endpoints

/// `loadBalancerStatusStringer` in its wide form (the server always prints wide).
fn load_balancer_ingress(status: &Value) -> String {
    let set: BTreeSet<&str> = arr(&status["ingress"])
        .iter()
        .filter_map(|i| {
            let ip = st(&i["ip"]);
            let host = st(&i["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn service_cells(svc: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &svc["spec"];
    // The real server defaults type ClusterIP and protocol TCP.
    let svc_type = st_or(&spec["type"], "ClusterIP");
    let cluster_ip = arr(&spec["clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| spec["clusterIP"].as_str().filter(|s| !s.is_empty()))
        .unwrap_or("<none>");
    let external_ips: Vec<&str> = arr(&spec["externalIPs"]).iter().map(st).collect();
    let external_ip = match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_owned()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(&svc["status"]["loadBalancer"]);
            if !external_ips.is_empty() {
                let mut results: Vec<&str> = Vec::new();
                if !lb.is_empty() {
                    results.extend(lb.split(','));
                }
                results.extend(external_ips.iter().copied());
                results.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_owned()
            }
        }
        "ExternalName" => st(&spec["externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = arr(&spec["ports"])
        .iter()
        .map(|p| {
            let port = int(&p["port"]);
            let protocol = st_or(&p["protocol"], "TCP");
            let node_port = int(&p["nodePort"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    };
    vec![
        name(svc),
        svc_type.into(),
        cluster_ip.into(),
        external_ip.into(),
        ports.into(),
        age(svc, now),
        format_labels(&spec["selector"]).into(),
    ]
}

fn ingress_cells(ing: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &ing["spec"];
    let class = spec["ingressClassName"].as_str().unwrap_or("<none>");
    // formatHosts, quirks included: at most three hosts, the rest counted by rule.
    let rules = arr(&spec["rules"]);
    let max = 3;
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == max {
            more = true;
        }
        let host = st(&rule["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_owned()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - max)
    } else {
        hosts.join(",")
    };
    let ports = if arr(&spec["tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(ing),
        class.into(),
        hosts.into(),
        load_balancer_ingress(&ing["status"]["loadBalancer"]).into(),
        ports.into(),
        age(ing, now),
    ]
}

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints` with all ports.
fn format_endpoints(ep: &Value) -> String {
    let subsets = arr(&ep["subsets"]);
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(&ss["addresses"]);
        let ports = arr(&ss["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for addr in addresses {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(st(&addr["ip"]).to_owned());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for addr in addresses {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(&addr["ip"]), int(&port["port"])));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

fn endpoint_slice_cells(slice: &Value, now: Timestamp) -> Vec<Value> {
    let max = 3;
    let (mut ports, mut more, mut count) = (Vec::new(), false, 0usize);
    for port in arr(&slice["ports"]) {
        if ports.len() < max {
            let text = if port["port"].is_number() {
                int(&port["port"]).to_string()
            } else if let Some(n) = port["name"].as_str() {
                n.to_owned()
            } else {
                "*".to_owned()
            };
            ports.push(text);
        } else if ports.len() == max {
            more = true;
        }
        count += 1;
    }
    let ports_text = list_with_more(&ports, more, count, max);
    let (mut endpoints, mut more, mut count) = (Vec::new(), false, 0usize);
    for endpoint in arr(&slice["endpoints"]) {
        for address in arr(&endpoint["addresses"]) {
            if endpoints.len() < max {
                endpoints.push(st(address).to_owned());
            } else if endpoints.len() == max {
                more = true;
            }
            count += 1;
        }
    }
    vec![
        name(slice),
        st(&slice["addressType"]).into(),
        ports_text.into(),
        list_with_more(&endpoints, more, count, max).into(),
        age(slice, now),
    ]
}

// ---------------------------------------------------------------------------------------------
// Nodes, volumes, quotas

fn node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    let status = &node["status"];
    // Later duplicates win, as in upstream's condition map.
    let ready = arr(&status["conditions"])
        .iter()
        .rev()
        .find(|c| st(&c["type"]) == "Ready");
    let mut states: Vec<&str> = vec![match ready {
        Some(c) if st(&c["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"].as_bool() == Some(true) {
        states.push("SchedulingDisabled");
    }
    let mut roles: BTreeSet<&str> = BTreeSet::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if k == "kubernetes.io/role" && !st(v).is_empty() {
                roles.insert(st(v));
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        arr(&status["addresses"])
            .iter()
            .find(|a| st(&a["type"]) == kind)
            .map_or("<none>", |a| st(&a["address"]))
            .to_owned()
    };
    let info = &status["nodeInfo"];
    vec![
        name(node),
        states.join(",").into(),
        roles.into(),
        age(node, now),
        st(&info["kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        st_or(&info["osImage"], "<unknown>").into(),
        st_or(&info["kernelVersion"], "<unknown>").into(),
        st_or(&info["containerRuntimeVersion"], "<unknown>").into(),
    ]
}

/// `helper.GetAccessModesAsString`.
fn access_modes(modes: &Value) -> String {
    let modes: Vec<&str> = arr(modes).iter().map(st).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The storage class of a PV or PVC: the beta annotation wins over `spec.storageClassName`.
fn storage_class(obj: &Value) -> String {
    let annotation = &obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"];
    match annotation.as_str() {
        Some(class) => class.to_owned(),
        None => st(&obj["spec"]["storageClassName"]).to_owned(),
    }
}

fn persistent_volume_cells(pv: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pv["spec"];
    let claim = &spec["claimRef"];
    let claim = if claim.is_object() {
        format!("{}/{}", st(&claim["namespace"]), st(&claim["name"]))
    } else {
        String::new()
    };
    let phase = if deleting(pv) {
        "Terminating"
    } else {
        st_or(&pv["status"]["phase"], "Pending")
    };
    vec![
        name(pv),
        quantity(&spec["capacity"]["storage"]).into(),
        access_modes(&spec["accessModes"]).into(),
        st_or(&spec["persistentVolumeReclaimPolicy"], "Retain").into(),
        phase.into(),
        claim.into(),
        storage_class(pv).into(),
        st_or(&spec["volumeAttributesClassName"], "<unset>").into(),
        st(&pv["status"]["reason"]).into(),
        age(pv, now),
        st_or(&spec["volumeMode"], "Filesystem").into(),
    ]
}

fn persistent_volume_claim_cells(pvc: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pvc["spec"];
    let status = &pvc["status"];
    let phase = if deleting(pvc) {
        "Terminating"
    } else {
        st_or(&status["phase"], "Pending")
    };
    let volume = st(&spec["volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(&status["capacity"]["storage"]),
            access_modes(&status["accessModes"]),
        )
    };
    vec![
        name(pvc),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        storage_class(pvc).into(),
        st_or(&spec["volumeAttributesClassName"], "<unset>").into(),
        age(pvc, now),
        st_or(&spec["volumeMode"], "Filesystem").into(),
    ]
}

fn resource_quota_cells(rq: &Value, now: Timestamp) -> Vec<Value> {
    let status = &rq["status"];
    let hard: BTreeMap<&str, &Value> = status["hard"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default();
    let (mut requests, mut limits) = (String::new(), String::new());
    for (resource, hard_qty) in hard {
        let used = quantity(&status["used"][resource]);
        let w = if resource.starts_with("limits.") {
            &mut limits
        } else {
            &mut requests
        };
        let _ = write!(w, "{resource}: {used}/{}, ", quantity(hard_qty));
    }
    vec![
        name(rq),
        requests.trim_end_matches(", ").into(),
        limits.trim_end_matches(", ").into(),
        age(rq, now),
    ]
}

// ---------------------------------------------------------------------------------------------
// Events

fn event_cells(info: &ResourceInfo, ev: &Value, now: Timestamp) -> Vec<Value> {
    // events.k8s.io/v1 renames the core fields; both print through the same internal type.
    let new_api = info.group == "events.k8s.io";
    let field = |core: &'static str, events: &'static str| {
        if new_api { &ev[events] } else { &ev[core] }
    };
    let first_ts = field("firstTimestamp", "deprecatedFirstTimestamp");
    let last_ts = field("lastTimestamp", "deprecatedLastTimestamp");
    let first = if timestamp(first_ts).is_none() {
        since(&ev["eventTime"], now)
    } else {
        since(first_ts, now)
    };
    let mut last = if timestamp(last_ts).is_none() {
        first.clone()
    } else {
        since(last_ts, now)
    };
    let mut count = int(field("count", "deprecatedCount"));
    let series = &ev["series"];
    if series.is_object() {
        last = since(&series["lastObservedTime"], now);
        count = int(&series["count"]);
    } else if count == 0 {
        count = 1;
    }
    let involved = field("involvedObject", "regarding");
    let kind = st(&involved["kind"]).to_lowercase();
    let target = match st(&involved["name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let source = field("source", "deprecatedSource");
    let component = st_or(
        &source["component"],
        st(field("reportingComponent", "reportingController")),
    );
    let instance = st_or(&source["host"], st(&ev["reportingInstance"]));
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        last.into(),
        st(&ev["type"]).into(),
        st(&ev["reason"]).into(),
        target.into(),
        st(&involved["fieldPath"]).into(),
        source.into(),
        st(field("message", "note")).trim().into(),
        first.into(),
        count.into(),
        name(ev),
    ]
}

// ---------------------------------------------------------------------------------------------
// Workloads

fn job_cells(job: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &job["spec"];
    let status = &job["status"];
    let succeeded = int(&status["succeeded"]);
    let completions = if spec["completions"].is_number() {
        format!("{succeeded}/{}", int(&spec["completions"]))
    } else {
        let parallelism = int(&spec["parallelism"]);
        if parallelism > 1 {
            format!("{succeeded}/1 of {parallelism}")
        } else {
            format!("{succeeded}/1")
        }
    };
    let duration = match (
        timestamp(&status["startTime"]),
        timestamp(&status["completionTime"]),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.duration_since(start)),
    };
    let has = |kind: &str| {
        arr(&status["conditions"])
            .iter()
            .find(|c| st(&c["type"]) == kind)
            .is_some_and(|c| st(&c["status"]) == "True")
    };
    let state = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = container_cells(&spec["template"]["spec"]["containers"]);
    vec![
        name(job),
        state.into(),
        completions.into(),
        duration.into(),
        age(job, now),
        names,
        images,
        format_label_selector(&spec["selector"]).into(),
    ]
}

fn cron_job_cells(cj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &cj["spec"];
    let last_schedule = if timestamp(&cj["status"]["lastScheduleTime"]).is_some() {
        since(&cj["status"]["lastScheduleTime"], now)
    } else {
        "<none>".into()
    };
    // The real server defaults suspend to false.
    let suspend = match spec["suspend"].as_bool() {
        Some(true) => "True",
        _ => "False",
    };
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = container_cells(&job_spec["template"]["spec"]["containers"]);
    vec![
        name(cj),
        st(&spec["schedule"]).into(),
        spec["timeZone"].as_str().unwrap_or("<none>").into(),
        suspend.into(),
        arr(&cj["status"]["active"]).len().into(),
        last_schedule.into(),
        age(cj, now),
        names,
        images,
        format_label_selector(&job_spec["selector"]).into(),
    ]
}

fn controller_revision_cells(cr: &Value, now: Timestamp) -> Vec<Value> {
    let controller = arr(&cr["metadata"]["ownerReferences"])
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
        .map_or_else(
            || "<none>".to_owned(),
            |r| {
                let group = st(&r["apiVersion"]).rsplit_once('/').map_or("", |(g, _)| g);
                let kind = st(&r["kind"]);
                let group_kind = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                if kind.is_empty() && group.is_empty() {
                    st(&r["name"]).to_owned()
                } else {
                    format!("{}/{}", group_kind.to_lowercase(), st(&r["name"]))
                }
            },
        );
    vec![
        name(cr),
        controller.into(),
        int(&cr["revision"]).into(),
        age(cr, now),
    ]
}

/// `formatHPAMetrics` over autoscaling/v2 metric specs and statuses.
fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let max = 2;
    let mut list: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i).unwrap_or(&Value::Null);
        let text = match st(&spec["type"]) {
            t @ ("External" | "Object") => {
                let key = if t == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = &spec[key]["target"];
                let current = &status[key]["current"];
                if !target["averageValue"].is_null() {
                    let cur = if current["averageValue"].is_null() {
                        "<unknown>".to_owned()
                    } else {
                        quantity(&current["averageValue"])
                    };
                    format!("{cur}/{} (avg)", quantity(&target["averageValue"]))
                } else {
                    let cur = if status[key].is_object() {
                        quantity(&current["value"])
                    } else {
                        "<unknown>".to_owned()
                    };
                    format!("{cur}/{}", quantity(&target["value"]))
                }
            }
            "Pods" => {
                let cur = if status["pods"].is_object() {
                    quantity(&status["pods"]["current"]["averageValue"])
                } else {
                    "<unknown>".to_owned()
                };
                format!(
                    "{cur}/{}",
                    quantity(&spec["pods"]["target"]["averageValue"])
                )
            }
            t @ ("Resource" | "ContainerResource") => {
                let key = if t == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let source = &spec[key];
                let target = &source["target"];
                let current = &status[key];
                let resource = st(&source["name"]);
                if !target["averageValue"].is_null() {
                    let cur = if current.is_object() {
                        quantity(&current["current"]["averageValue"])
                    } else {
                        "<unknown>".to_owned()
                    };
                    format!("{resource}: {cur}/{}", quantity(&target["averageValue"]))
                } else {
                    let cur = if current["current"]["averageUtilization"].is_number() {
                        format!("{}%", int(&current["current"]["averageUtilization"]))
                    } else {
                        "<unknown>".to_owned()
                    };
                    let tgt = if target["averageUtilization"].is_number() {
                        format!("{}%", int(&target["averageUtilization"]))
                    } else {
                        "<auto>".to_owned()
                    };
                    format!("{resource}: {cur}/{tgt}")
                }
            }
            _ => "<unknown type>".to_owned(),
        };
        list.push(text);
    }
    let count = list.len();
    if count > max {
        list.truncate(max);
        return format!("{} + {} more...", list.join(", "), count - max);
    }
    list.join(", ")
}

fn hpa_cells(hpa: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &hpa["spec"];
    let target = &spec["scaleTargetRef"];
    let reference = format!("{}/{}", st(&target["kind"]), st(&target["name"]));
    // autoscaling/v2 defaulting: minReplicas 1 and, without metrics, 80% CPU utilization.
    let cpu = |utilization: &Value| {
        json!({
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
        })
    };
    let specs = match arr(&spec["metrics"]) {
        // autoscaling/v1 shape.
        [] if spec["targetCPUUtilizationPercentage"].is_number() => {
            vec![cpu(&spec["targetCPUUtilizationPercentage"])]
        }
        [] => vec![cpu(&json!(80))],
        m => m.to_vec(),
    };
    let metrics = hpa_metrics(&specs, arr(&hpa["status"]["currentMetrics"]));
    vec![
        name(hpa),
        reference.into(),
        metrics.into(),
        int_or(&spec["minReplicas"], 1).to_string().into(),
        int(&spec["maxReplicas"]).into(),
        int(&hpa["status"]["currentReplicas"]).into(),
        age(hpa, now),
    ]
}

// ---------------------------------------------------------------------------------------------
// Certificates and RBAC

fn csr_cells(csr: &Value, now: Timestamp) -> Vec<Value> {
    let (mut approved, mut denied, mut failed) = (false, false, false);
    for c in arr(&csr["status"]["conditions"]) {
        match st(&c["type"]) {
            "Approved" => approved = true,
            "Denied" => denied = true,
            "Failed" => failed = true,
            _ => {}
        }
    }
    let mut condition = if denied {
        "Denied"
    } else if approved {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if failed {
        condition.push_str(",Failed");
    }
    if !st(&csr["status"]["certificate"]).is_empty() {
        condition.push_str(",Issued");
    }
    let spec = &csr["spec"];
    let requested = if spec["expirationSeconds"].is_number() {
        human_duration(SignedDuration::from_secs(int(&spec["expirationSeconds"])))
    } else {
        "<none>".into()
    };
    vec![
        name(csr),
        age(csr, now),
        st_or(&spec["signerName"], "<none>").into(),
        st(&spec["username"]).into(),
        requested.into(),
        condition.into(),
    ]
}

fn role_binding_cells(rb: &Value, now: Timestamp) -> Vec<Value> {
    let role_ref = &rb["roleRef"];
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in arr(&rb["subjects"]) {
        let n = st(&subject["name"]);
        match st(&subject["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{n}", st(&subject["namespace"]))),
            "User" => users.push(n.to_owned()),
            "Group" => groups.push(n.to_owned()),
            _ => {}
        }
    }
    vec![
        name(rb),
        format!("{}/{}", st(&role_ref["kind"]), st(&role_ref["name"])).into(),
        age(rb, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        sas.join(", ").into(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Custom resources

fn custom_columns(info: &ResourceInfo) -> Vec<Value> {
    let mut cols = vec![NAME.to_json()];
    if info.printer_columns.is_empty() {
        // apiextensions serves a default Age column when a version declares none.
        cols.push(json!({
            "name": "Age",
            "type": "date",
            "format": "",
            "description": CREATED_DOC,
            "priority": 0,
        }));
        return cols;
    }
    for c in &info.printer_columns {
        let description = if c.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                c.json_path
            )
        } else {
            c.description.clone()
        };
        cols.push(json!({
            "name": c.name,
            "type": c.type_,
            "format": c.format,
            "description": description,
            "priority": c.priority,
        }));
    }
    cols
}

fn custom_cells(info: &ResourceInfo, obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut cells = vec![name(obj)];
    if info.printer_columns.is_empty() {
        cells.push(age(obj, now));
        return cells;
    }
    for c in &info.printer_columns {
        let first = JsonPath::parse(&c.json_path)
            .ok()
            .and_then(|p| p.first(obj).cloned());
        cells.push(match first {
            None => Value::Null,
            Some(v) => custom_cell(&c.type_, &v, now),
        });
    }
    cells
}

/// apiextensions `cellForJSONValue`, with `string` columns printed as JSONPath prints them.
fn custom_cell(ty: &str, value: &Value, now: Timestamp) -> Value {
    match (ty, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(s)) => Value::String(s.clone()),
        ("string", Value::Number(n)) => Value::String(go_number(n)),
        ("string", Value::Bool(b)) => Value::String(b.to_string()),
        ("string", v) => Value::String(v.to_string()),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => i.into(),
            None => (n.as_f64().unwrap_or(0.0) as i64).into(),
        },
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => {
            if s.is_empty() || s == "null" {
                return "<unknown>".into();
            }
            match s.parse::<Timestamp>() {
                Ok(t) if t.as_second() == GO_ZERO_TIME => "<unknown>".into(),
                Ok(t) => human_duration(now.duration_since(t)).into(),
                Err(_) => "<invalid>".into(),
            }
        }
        _ => Value::Null,
    }
}

/// A JSON number as Go's `fmt.Print` shows an unstructured value (int64 or float64).
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

/// One step of the JSONPath subset CRD printer columns use: `.a.b`, `['a.b']`, `[0]`, `[-1]`,
/// `[*]`, `.*` and filters `[?(@.a.b == "x")]` (also `!=`, `<`, `<=`, `>`, `>=`, and a bare
/// `[?(@.a)]` for presence). Missing keys yield no result, as with `AllowMissingKeys(true)`.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wildcard,
    Filter {
        path: Vec<String>,
        test: Option<(String, Value)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct JsonPath(Vec<Step>);

impl JsonPath {
    fn parse(path: &str) -> Result<Self, ()> {
        let mut s = path.trim();
        if let Some(inner) = s.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            s = inner.trim();
        }
        s = s.strip_prefix('$').unwrap_or(s);
        if !s.is_empty() && !s.starts_with('.') && !s.starts_with('[') {
            // A leading field without a dot (`spec.replicas`).
            return Self::parse(&format!(".{s}"));
        }
        let chars: Vec<char> = s.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    match chars.get(i) {
                        None => break,
                        Some('.') => return Err(()), // recursive descent: unsupported
                        Some('*') => {
                            steps.push(Step::Wildcard);
                            i += 1;
                        }
                        Some('[') => {}
                        Some(_) => {
                            let mut field = String::new();
                            while let Some(&c) = chars.get(i) {
                                match c {
                                    '\\' if i + 1 < chars.len() => {
                                        field.push(chars[i + 1]);
                                        i += 2;
                                    }
                                    '.' | '[' => break,
                                    _ => {
                                        field.push(c);
                                        i += 1;
                                    }
                                }
                            }
                            steps.push(Step::Field(field));
                        }
                    }
                }
                '[' => {
                    let start = i + 1;
                    let mut depth = 0i32;
                    let mut quote: Option<char> = None;
                    let mut end = None;
                    let mut j = start;
                    while j < chars.len() {
                        let c = chars[j];
                        match quote {
                            Some(q) if c == q => quote = None,
                            Some(_) => {}
                            None => match c {
                                '\'' | '"' => quote = Some(c),
                                '(' => depth += 1,
                                ')' => depth -= 1,
                                ']' if depth == 0 => {
                                    end = Some(j);
                                    break;
                                }
                                _ => {}
                            },
                        }
                        j += 1;
                    }
                    let end = end.ok_or(())?;
                    let inner: String = chars[start..end].iter().collect();
                    steps.push(Self::bracket(inner.trim())?);
                    i = end + 1;
                }
                _ => return Err(()),
            }
        }
        Ok(Self(steps))
    }

    fn bracket(inner: &str) -> Result<Step, ()> {
        if inner == "*" {
            return Ok(Step::Wildcard);
        }
        if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
            return Self::filter(filter.trim());
        }
        if let Some(quoted) = unquote(inner) {
            return Ok(Step::Field(quoted));
        }
        inner.parse::<i64>().map(Step::Index).map_err(|_| ())
    }

    fn filter(expr: &str) -> Result<Step, ()> {
        let (lhs, test) = match ["==", "!=", "<=", ">=", "<", ">"]
            .iter()
            .filter_map(|op| expr.find(op).map(|at| (at, *op)))
            .min_by_key(|(at, op)| (*at, std::cmp::Reverse(op.len())))
        {
            Some((at, op)) => {
                let rhs = expr[at + op.len()..].trim();
                let literal = if let Some(s) = unquote(rhs) {
                    Value::String(s)
                } else {
                    serde_json::from_str::<Value>(rhs).map_err(|_| ())?
                };
                (expr[..at].trim(), Some((op.to_owned(), literal)))
            }
            None => (expr, None),
        };
        let rest = lhs.strip_prefix('@').ok_or(())?;
        let JsonPath(steps) = if rest.is_empty() {
            JsonPath(Vec::new())
        } else {
            JsonPath::parse(rest)?
        };
        let path = steps
            .into_iter()
            .map(|s| match s {
                Step::Field(f) => Ok(f),
                _ => Err(()),
            })
            .collect::<Result<Vec<_>, ()>>()?;
        Ok(Step::Filter { path, test })
    }

    /// Every match, in document order.
    fn eval<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let mut current = vec![root];
        for step in &self.0 {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Field(f) => {
                        if let Some(x) = v.as_object().and_then(|m| m.get(f)) {
                            next.push(x);
                        }
                    }
                    Step::Index(i) => {
                        if let Some(a) = v.as_array() {
                            let len = i64::try_from(a.len()).unwrap_or(i64::MAX);
                            let at = if *i < 0 { len + i } else { *i };
                            if let Some(x) = usize::try_from(at).ok().and_then(|at| a.get(at)) {
                                next.push(x);
                            }
                        }
                    }
                    Step::Wildcard => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Filter { path, test } => {
                        for item in arr(v) {
                            let mut target = Some(item);
                            for f in path {
                                target = target.and_then(|t| t.as_object()?.get(f));
                            }
                            let keep = match (target, test) {
                                (None, _) => false,
                                (Some(_), None) => true,
                                (Some(t), Some((op, lit))) => compare(t, op, lit),
                            };
                            if keep {
                                next.push(item);
                            }
                        }
                    }
                }
            }
            current = next;
        }
        current
    }

    fn first<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        self.eval(root).into_iter().next()
    }
}

fn unquote(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    if bytes.len() >= 2
        && (bytes[0] == b'\'' || bytes[0] == b'"')
        && bytes[bytes.len() - 1] == bytes[0]
    {
        Some(s[1..s.len() - 1].to_owned())
    } else {
        None
    }
}

fn compare(left: &Value, op: &str, right: &Value) -> bool {
    use std::cmp::Ordering;
    let ordering = match (left, right) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        _ => None,
    };
    match (op, ordering) {
        ("==", Some(o)) => o == Ordering::Equal,
        ("!=", Some(o)) => o != Ordering::Equal,
        ("!=", None) => true,
        ("<", Some(o)) => o == Ordering::Less,
        ("<=", Some(o)) => o != Ordering::Greater,
        (">", Some(o)) => o == Ordering::Greater,
        (">=", Some(o)) => o != Ordering::Less,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::Catalog;
    use kgc_meta::catalog::PrinterColumn;

    const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    fn now() -> Timestamp {
        "2025-06-01T12:00:00Z".parse().unwrap()
    }

    /// An RFC 3339 time `secs` seconds before [`now`].
    fn ago(secs: i64) -> String {
        (now() - SignedDuration::from_secs(secs)).to_string()
    }

    fn info(group: &str, plural: &str) -> ResourceInfo {
        Catalog::builtin()
            .resources()
            .find(|r| r.group == group && r.plural == plural)
            .map(|r| (**r).clone())
            .unwrap_or_else(|| panic!("no {plural}.{group} in the catalog"))
    }

    fn cells(info: &ResourceInfo, obj: &Value) -> Vec<Value> {
        let r = row(info, obj, &IncludeObject::None, now());
        r["cells"].as_array().unwrap().clone()
    }

    fn column_names(info: &ResourceInfo) -> Vec<(String, i64)> {
        columns(info)
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["priority"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    fn names_at(info: &ResourceInfo, priority: i64) -> Vec<String> {
        column_names(info)
            .into_iter()
            .filter(|(_, p)| *p == priority)
            .map(|(n, _)| n)
            .collect()
    }

    fn meta(name: &str, age_secs: i64) -> Value {
        json!({"name": name, "namespace": "ns", "uid": "u-1", "creationTimestamp": ago(age_secs)})
    }

    // --- durations -------------------------------------------------------------------------

    #[test]
    fn table_human_duration_matches_apimachinery() {
        let cases: &[(i64, &str)] = &[
            (-5, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (310, "5m10s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 3 * 3600, "2d3h"),
            (8 * 86400, "8d"),
            (400 * 86400, "400d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 10 * 86400, "2y10d"),
            (8 * 365 * 86400 + 100 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(
                human_duration(SignedDuration::from_secs(*secs)),
                *want,
                "{secs}s"
            );
        }
        // Go truncates toward zero: -1.5s is "0s".
        assert_eq!(human_duration(SignedDuration::from_millis(-1500)), "0s");
    }

    #[test]
    fn table_age_is_unknown_without_creation_timestamp() {
        let ns = info("", "namespaces");
        let c = cells(&ns, &json!({"metadata": {"name": "a"}}));
        assert_eq!(c[2], "<unknown>");
        let c = cells(
            &ns,
            &json!({"metadata": {"name": "a", "creationTimestamp": "0001-01-01T00:00:00Z"}}),
        );
        assert_eq!(c[2], "<unknown>");
    }

    // --- Accept negotiation ----------------------------------------------------------------

    #[test]
    fn table_wants_table_on_kubectl_accept() {
        assert_eq!(wants_table(KUBECTL_ACCEPT), Some("v1"));
        assert_eq!(
            wants_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"),
            Some("v1beta1")
        );
        assert_eq!(
            wants_table("application/json; as=Table; v=v1; g=meta.k8s.io"),
            Some("v1")
        );
        assert_eq!(wants_table("application/json"), None);
        assert_eq!(wants_table("*/*"), None);
        assert_eq!(wants_table(""), None);
        // A plain type preferred by q wins.
        assert_eq!(
            wants_table("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json"),
            None
        );
        assert_eq!(
            wants_table("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io"),
            Some("v1")
        );
        // Other conversions, groups, versions and media types are not Tables.
        assert_eq!(
            wants_table(
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
            ),
            None
        );
        assert_eq!(
            wants_table("application/json;as=Table;v=v2;g=meta.k8s.io"),
            None
        );
        assert_eq!(wants_table("application/json;as=Table;v=v1"), None);
        assert_eq!(
            wants_table(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
            ),
            Some("v1")
        );
        assert_eq!(
            wants_table("application/json;as=Table;v=v1;g=meta.k8s.io;q=0"),
            None
        );
    }

    #[test]
    fn table_include_object_parse() {
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse(Some("")), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(
            IncludeObject::parse(Some("all")),
            Err("unrecognized includeObject value: \"all\"".to_owned())
        );
    }

    // --- pods ------------------------------------------------------------------------------

    fn pod(spec: Value, status: Value) -> Value {
        json!({"metadata": meta("p", 300), "spec": spec, "status": status})
    }

    fn two_containers() -> Value {
        json!({"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "j"}]})
    }

    #[test]
    fn table_pod_columns() {
        let pods = info("", "pods");
        assert_eq!(
            names_at(&pods, 0),
            ["Name", "Ready", "Status", "Restarts", "Age"]
        );
        assert_eq!(
            names_at(&pods, 1),
            ["IP", "Node", "Nominated Node", "Readiness Gates"]
        );
        let cols = columns(&pods);
        assert_eq!(cols[0]["format"], "name");
        assert_eq!(cols[0]["type"], "string");
        assert_eq!(cols[3]["type"], "string");
        assert_eq!(cols[1]["format"], "");
        assert!(
            cols[0]["description"]
                .as_str()
                .unwrap()
                .starts_with("Name must be unique")
        );
    }

    #[test]
    fn table_pod_running_and_ready_counts() {
        let pods = info("", "pods");
        let p = pod(
            two_containers(),
            json!({
                "phase": "Running",
                "podIP": "10.0.0.7",
                "podIPs": [{"ip": "10.0.0.7"}],
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                    {"name": "b", "ready": false, "restartCount": 0, "state": {"running": {}}},
                ],
            }),
        );
        let c = cells(&pods, &p);
        assert_eq!(
            c,
            vec![
                json!("p"),
                json!("1/2"),
                json!("Running"),
                json!("0"),
                json!("5m"),
                json!("10.0.0.7"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
            ]
        );
    }

    #[test]
    fn table_pod_without_status_is_pending() {
        let pods = info("", "pods");
        let p = json!({"metadata": meta("p", 5), "spec": {"containers": [{"name": "a"}], "nodeName": "n1"}});
        let c = cells(&pods, &p);
        assert_eq!(c[1], "0/1");
        assert_eq!(c[2], "Pending");
        assert_eq!(c[3], "0");
        assert_eq!(c[4], "5s");
        assert_eq!(c[5], "<none>");
        assert_eq!(c[6], "n1");
    }

    #[test]
    fn table_pod_restarts_with_last_restart_age() {
        let pods = info("", "pods");
        let p = pod(
            two_containers(),
            json!({
                "phase": "Running",
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                     "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}},
                    {"name": "b", "ready": true, "restartCount": 1, "state": {"running": {}},
                     "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(90)}}},
                ],
            }),
        );
        let c = cells(&pods, &p);
        assert_eq!(c[1], "2/2");
        assert_eq!(c[3], "3 (90s ago)");
        // Restarts without a recorded termination print the bare count.
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 4, "state": {"running": {}}}]}),
        );
        assert_eq!(cells(&pods, &p)[3], "4");
    }

    #[test]
    fn table_pod_waiting_and_terminated_reasons() {
        let pods = info("", "pods");
        let status = |state: Value| {
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 5, "state": state}]})
        };
        let spec = json!({"containers": [{"name": "a"}]});
        let reason = |state: Value| cells(&pods, &pod(spec.clone(), status(state)))[2].clone();
        assert_eq!(
            reason(json!({"waiting": {"reason": "CrashLoopBackOff"}})),
            "CrashLoopBackOff"
        );
        assert_eq!(
            reason(json!({"waiting": {"reason": "ContainerCreating"}})),
            "ContainerCreating"
        );
        assert_eq!(
            reason(json!({"terminated": {"reason": "OOMKilled", "exitCode": 137}})),
            "OOMKilled"
        );
        assert_eq!(reason(json!({"terminated": {"exitCode": 3}})), "ExitCode:3");
        assert_eq!(
            reason(json!({"terminated": {"exitCode": 0, "signal": 9}})),
            "Signal:9"
        );
        // An empty waiting reason leaves the phase.
        assert_eq!(reason(json!({"waiting": {}})), "Running");
    }

    #[test]
    fn table_pod_completed_and_failed() {
        let pods = info("", "pods");
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
        );
        let r = row(&pods, &p, &IncludeObject::None, now());
        assert_eq!(r["cells"][1], "0/1");
        assert_eq!(r["cells"][2], "Completed");
        assert_eq!(r["conditions"][0]["type"], "Completed");
        assert_eq!(r["conditions"][0]["reason"], "Succeeded");
        assert_eq!(r["object"], Value::Null);

        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Failed", "containerStatuses": [
                {"name": "a", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
        );
        let r = row(&pods, &p, &IncludeObject::None, now());
        assert_eq!(r["cells"][2], "Error");
        assert_eq!(r["conditions"][0]["reason"], "Failed");

        // Running pods carry no row conditions.
        let p = pod(json!({"containers": []}), json!({"phase": "Running"}));
        assert!(
            row(&pods, &p, &IncludeObject::None, now())
                .get("conditions")
                .is_none()
        );
    }

    #[test]
    fn table_pod_completed_with_running_container() {
        let pods = info("", "pods");
        let statuses = json!([
            {"name": "a", "ready": true, "state": {"running": {}}},
            {"name": "b", "ready": false, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        ]);
        let p = pod(
            two_containers(),
            json!({"phase": "Running", "containerStatuses": statuses}),
        );
        assert_eq!(cells(&pods, &p)[2], "NotReady");
        let p = pod(
            two_containers(),
            json!({"phase": "Running", "containerStatuses": statuses,
                   "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(cells(&pods, &p)[2], "Running");
    }

    #[test]
    fn table_pod_terminating_and_unknown() {
        let pods = info("", "pods");
        let mut p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "state": {"running": {}}}]}),
        );
        p["metadata"]["deletionTimestamp"] = json!(ago(-30));
        assert_eq!(cells(&pods, &p)[2], "Terminating");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(&pods, &p)[2], "Unknown");
        // Terminal pods keep their reason while being deleted.
        let mut p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
        );
        p["metadata"]["deletionTimestamp"] = json!(ago(0));
        assert_eq!(cells(&pods, &p)[2], "Completed");
    }

    #[test]
    fn table_pod_init_containers() {
        let pods = info("", "pods");
        let spec = json!({
            "initContainers": [{"name": "i1"}, {"name": "i2"}],
            "containers": [{"name": "a"}],
        });
        let with = |init: Value| {
            cells(
                &pods,
                &pod(
                    spec.clone(),
                    json!({"phase": "Pending", "initContainerStatuses": init,
                           "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
                ),
            )
        };
        let c = with(json!([
            {"name": "i1", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "i2", "restartCount": 1, "state": {"running": {}}},
        ]));
        assert_eq!(c[2], "Init:1/2");
        assert_eq!(c[1], "0/1");
        assert_eq!(c[3], "1");
        let c = with(
            json!([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]),
        );
        assert_eq!(c[2], "Init:Error");
        let c = with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}]));
        assert_eq!(c[2], "Init:ExitCode:2");
        let c =
            with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2, "signal": 15}}}]));
        assert_eq!(c[2], "Init:Signal:15");
        let c = with(json!([{"name": "i1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]));
        assert_eq!(c[2], "Init:CrashLoopBackOff");
        let c = with(json!([{"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}}]));
        assert_eq!(c[2], "Init:0/2");
        // All init containers done: the main containers decide.
        let c = with(json!([
            {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
            {"name": "i2", "state": {"terminated": {"exitCode": 0}}},
        ]));
        assert_eq!(c[2], "PodInitializing");
    }

    #[test]
    fn table_pod_sidecar_counts_as_container() {
        let pods = info("", "pods");
        let p = pod(
            json!({
                "initContainers": [{"name": "side", "restartPolicy": "Always"}],
                "containers": [{"name": "a"}],
            }),
            json!({
                "phase": "Running",
                "conditions": [{"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [{"name": "side", "started": true, "ready": true, "restartCount": 2,
                    "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(200)}}}],
                "containerStatuses": [{"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}}}],
            }),
        );
        let c = cells(&pods, &p);
        assert_eq!(c[1], "2/2");
        assert_eq!(c[2], "Running");
        assert_eq!(c[3], "3 (3m20s ago)");
    }

    #[test]
    fn table_pod_scheduling_gated_and_readiness_gates() {
        let pods = info("", "pods");
        let p = pod(
            json!({"containers": [{"name": "a"}],
                   "readinessGates": [{"conditionType": "x/one"}, {"conditionType": "x/two"}]}),
            json!({"phase": "Pending", "nominatedNodeName": "n2", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
                {"type": "x/one", "status": "True"},
                {"type": "x/two", "status": "False"},
            ]}),
        );
        let c = cells(&pods, &p);
        assert_eq!(c[2], "SchedulingGated");
        assert_eq!(c[7], "n2");
        assert_eq!(c[8], "1/2");
    }

    // --- workloads ---------------------------------------------------------------------------

    #[test]
    fn table_deployment_columns_and_cells() {
        let d = info("apps", "deployments");
        assert_eq!(
            names_at(&d, 0),
            ["Name", "Ready", "Up-to-date", "Available", "Age"]
        );
        assert_eq!(names_at(&d, 1), ["Containers", "Images", "Selector"]);
        let obj = json!({
            "metadata": meta("web", 2 * 86400 + 3 * 3600),
            "spec": {
                "replicas": 3,
                "selector": {
                    "matchLabels": {"tier": "front", "app": "web"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                         {"key": "gone", "operator": "DoesNotExist"}],
                },
                "template": {"spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.27"},
                    {"name": "log", "image": "busybox"},
                ]}},
            },
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        assert_eq!(
            cells(&d, &obj),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("2d3h"),
                json!("nginx,log"),
                json!("nginx:1.27,busybox"),
                json!("app=web,env in (dev,prod),!gone,tier=front"),
            ]
        );
        // A fresh deployment without status or replicas: 0/1 (replicas default to 1).
        let fresh =
            json!({"metadata": meta("x", 1), "spec": {"selector": {"matchLabels": {"a": "b"}}}});
        let c = cells(&d, &fresh);
        assert_eq!(c[1], "0/1");
        assert_eq!(c[2], 0);
        assert_eq!(c[7], "a=b");
        let bad = json!({"metadata": meta("x", 1), "spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}});
        assert_eq!(cells(&d, &bad)[7], "<invalid>");
    }

    #[test]
    fn table_replica_set_stateful_set_daemon_set() {
        let rs = info("apps", "replicasets");
        assert_eq!(
            names_at(&rs, 0),
            ["Name", "Desired", "Current", "Ready", "Age"]
        );
        let obj = json!({"metadata": meta("rs", 30), "spec": {"replicas": 2, "selector": {}},
                         "status": {"replicas": 2, "readyReplicas": 1}});
        let c = cells(&rs, &obj);
        assert_eq!(c[1..4], [json!(2), json!(2), json!(1)]);
        assert_eq!(c[7], "<none>");

        let sts = info("apps", "statefulsets");
        assert_eq!(names_at(&sts, 0), ["Name", "Ready", "Age"]);
        let obj = json!({"metadata": meta("db", 30), "spec": {"replicas": 3}, "status": {"readyReplicas": 3}});
        assert_eq!(cells(&sts, &obj)[1], "3/3");

        let ds = info("apps", "daemonsets");
        assert_eq!(
            names_at(&ds, 0),
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age"
            ]
        );
        let obj = json!({"metadata": meta("agent", 30),
            "spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                       "updatedNumberScheduled": 3, "numberAvailable": 2}});
        let c = cells(&ds, &obj);
        assert_eq!(
            c[1..7],
            [
                json!(3),
                json!(3),
                json!(2),
                json!(3),
                json!(2),
                json!("kubernetes.io/os=linux")
            ]
        );
        assert_eq!(c[10], "<none>");

        let rc = info("", "replicationcontrollers");
        let obj = json!({"metadata": meta("rc", 30), "spec": {"selector": {"app": "x"}}});
        let c = cells(&rc, &obj);
        assert_eq!(c[1], 1);
        assert_eq!(c[7], "app=x");
    }

    #[test]
    fn table_jobs_and_cron_jobs() {
        let jobs = info("batch", "jobs");
        assert_eq!(
            names_at(&jobs, 0),
            ["Name", "Status", "Completions", "Duration", "Age"]
        );
        let done = json!({"metadata": meta("j", 600),
            "spec": {"completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
            "status": {"succeeded": 1, "startTime": ago(600), "completionTime": ago(595),
                       "conditions": [{"type": "Complete", "status": "True"}]}});
        let c = cells(&jobs, &done);
        assert_eq!(
            c[1..5],
            [json!("Complete"), json!("1/1"), json!("5s"), json!("10m")]
        );
        assert_eq!(c[7], "batch.kubernetes.io/controller-uid=u");
        let running = json!({"metadata": meta("j", 600), "spec": {"parallelism": 3},
            "status": {"startTime": ago(130)}});
        let c = cells(&jobs, &running);
        assert_eq!(
            c[1..4],
            [json!("Running"), json!("0/1 of 3"), json!("2m10s")]
        );
        let failed = json!({"metadata": meta("j", 1), "spec": {"completions": 2},
            "status": {"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}});
        assert_eq!(
            cells(&jobs, &failed)[1..4],
            [json!("Failed"), json!("0/2"), json!("")]
        );
        let mut suspended = json!({"metadata": meta("j", 1), "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(cells(&jobs, &suspended)[1], "Suspended");
        suspended["metadata"]["deletionTimestamp"] = json!(ago(0));
        assert_eq!(cells(&jobs, &suspended)[1], "Terminating");

        let cj = info("batch", "cronjobs");
        assert_eq!(
            names_at(&cj, 0),
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age"
            ]
        );
        let obj = json!({"metadata": meta("c", 3600), "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
            "status": {"active": [{"name": "c-1"}], "lastScheduleTime": ago(45)}});
        let c = cells(&cj, &obj);
        assert_eq!(
            c,
            vec![
                json!("c"),
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("45s"),
                json!("60m"),
                json!("c"),
                json!("busybox"),
                json!("<none>"),
            ]
        );
        let never =
            json!({"metadata": meta("c", 1), "spec": {"suspend": true, "timeZone": "Etc/UTC"}});
        let c = cells(&cj, &never);
        assert_eq!(
            c[2..6],
            [json!("Etc/UTC"), json!("True"), json!(0), json!("<none>")]
        );
    }

    #[test]
    fn table_hpa_and_controller_revision_and_pdb() {
        let hpa = info("autoscaling", "horizontalpodautoscalers");
        let obj = json!({"metadata": meta("h", 60), "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
            ]},
            "status": {"currentReplicas": 2, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "12m"}}}]}});
        let c = cells(&hpa, &obj);
        assert_eq!(
            c[1..6],
            [
                json!("Deployment/web"),
                json!("cpu: 12%/50%, memory: <unknown>/100Mi + 1 more..."),
                json!("1"),
                json!(5),
                json!(2)
            ]
        );
        let bare = json!({"metadata": meta("h", 60), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 4}});
        let c = cells(&hpa, &bare);
        assert_eq!(c[2], "cpu: <unknown>/80%");
        assert_eq!(c[3], "2");

        let cr = info("apps", "controllerrevisions");
        let obj = json!({"metadata": {"name": "web-5d", "creationTimestamp": ago(10), "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 3});
        assert_eq!(
            cells(&cr, &obj)[1..3],
            [json!("statefulset.apps/web"), json!(3)]
        );
        assert_eq!(cells(&cr, &json!({"metadata": {"name": "x"}}))[1], "<none>");

        let pdb = info("policy", "poddisruptionbudgets");
        let obj = json!({"metadata": meta("b", 10), "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            cells(&pdb, &obj)[1..4],
            [json!("50%"), json!("N/A"), json!(1)]
        );
        let obj = json!({"metadata": meta("b", 10), "spec": {"maxUnavailable": 1}});
        assert_eq!(
            cells(&pdb, &obj)[1..4],
            [json!("N/A"), json!("1"), json!(0)]
        );
    }

    // --- core and networking kinds -----------------------------------------------------------

    #[test]
    fn table_services() {
        let svc = info("", "services");
        assert_eq!(
            names_at(&svc, 0),
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age"
            ]
        );
        assert_eq!(names_at(&svc, 1), ["Selector"]);
        let obj = json!({"metadata": meta("web", 90), "spec": {
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
            "ports": [{"port": 80}, {"port": 443, "nodePort": 30443, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            cells(&svc, &obj),
            vec![
                json!("web"),
                json!("ClusterIP"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80/TCP,443:30443/TCP,53/UDP"),
                json!("90s"),
                json!("app=web"),
            ]
        );
        let lb = json!({"metadata": meta("lb", 1), "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 31000}]}});
        let c = cells(&svc, &lb);
        assert_eq!(
            c[1..5],
            [
                json!("LoadBalancer"),
                json!("<none>"),
                json!("<pending>"),
                json!("80:31000/TCP")
            ]
        );
        let mut ready = lb.clone();
        ready["status"] = json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a.example"}]}});
        ready["spec"]["externalIPs"] = json!(["198.51.100.1"]);
        assert_eq!(cells(&svc, &ready)[3], "203.0.113.9,a.example,198.51.100.1");
        let ext = json!({"metadata": meta("ext", 1), "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        let c = cells(&svc, &ext);
        assert_eq!(
            c[2..5],
            [json!("<none>"), json!("db.example.com"), json!("<none>")]
        );
        assert_eq!(c[6], "<none>");
    }

    #[test]
    fn table_namespaces_configmaps_secrets_serviceaccounts() {
        let ns = info("", "namespaces");
        assert_eq!(names_at(&ns, 0), ["Name", "Status", "Age"]);
        assert_eq!(cells(&ns, &json!({"metadata": meta("a", 10)}))[1], "Active");
        assert_eq!(
            cells(
                &ns,
                &json!({"metadata": meta("a", 10), "status": {"phase": "Terminating"}})
            )[1],
            "Terminating"
        );

        let cm = info("", "configmaps");
        assert_eq!(names_at(&cm, 0), ["Name", "Data", "Age"]);
        let obj = json!({"metadata": meta("c", 10), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(cells(&cm, &obj), vec![json!("c"), json!(3), json!("10s")]);

        let secret = info("", "secrets");
        assert_eq!(names_at(&secret, 0), ["Name", "Type", "Data", "Age"]);
        let obj = json!({"metadata": meta("s", 10), "data": {"a": "MQ=="}, "stringData": {"a": "1", "b": "2"}});
        assert_eq!(cells(&secret, &obj)[1..3], [json!("Opaque"), json!(2)]);
        let obj = json!({"metadata": meta("s", 10), "type": "kubernetes.io/tls"});
        assert_eq!(
            cells(&secret, &obj)[1..3],
            [json!("kubernetes.io/tls"), json!(0)]
        );

        let sa = info("", "serviceaccounts");
        assert_eq!(names_at(&sa, 0), ["Name", "Secrets", "Age"]);
        assert_eq!(cells(&sa, &json!({"metadata": meta("default", 10)}))[1], 0);
    }

    #[test]
    fn table_nodes() {
        let nodes = info("", "nodes");
        assert_eq!(
            names_at(&nodes, 0),
            ["Name", "Status", "Roles", "Age", "Version"]
        );
        let obj = json!({
            "metadata": {"name": "n1", "creationTimestamp": ago(86400 * 3),
                         "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "n1"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12 (bookworm)"}},
        });
        assert_eq!(
            cells(&nodes, &obj),
            vec![
                json!("n1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,master"),
                json!("3d"),
                json!("v1.32.0"),
                json!("172.18.0.2"),
                json!("<none>"),
                json!("Debian GNU/Linux 12 (bookworm)"),
                json!("<unknown>"),
                json!("<unknown>"),
            ]
        );
        let c = cells(&nodes, &json!({"metadata": {"name": "n2"}}));
        assert_eq!(c[1..3], [json!("Unknown"), json!("<none>")]);
        let c = cells(
            &nodes,
            &json!({"metadata": {"name": "n2"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
        );
        assert_eq!(c[1], "NotReady");
    }

    #[test]
    fn table_events_core_and_events_api() {
        let ev = info("", "events");
        assert_eq!(
            names_at(&ev, 0),
            ["Last Seen", "Type", "Reason", "Object", "Message"]
        );
        assert_eq!(
            names_at(&ev, 1),
            ["Subobject", "Source", "First Seen", "Count", "Name"]
        );
        assert_eq!(columns(&ev)[9]["format"], "name");
        let obj = json!({"metadata": meta("p.17a", 600), "type": "Normal", "reason": "Scheduled",
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
            "source": {"component": "default-scheduler"}, "message": "Successfully assigned ns/p to n1\n",
            "firstTimestamp": ago(600), "lastTimestamp": ago(60), "count": 3});
        assert_eq!(
            cells(&ev, &obj),
            vec![
                json!("60s"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p"),
                json!("spec.containers{a}"),
                json!("default-scheduler"),
                json!("Successfully assigned ns/p to n1"),
                json!("10m"),
                json!(3),
                json!("p.17a"),
            ]
        );
        // A new-style event: eventTime, no count, reporting controller and instance.
        let obj = json!({"metadata": meta("e", 5), "type": "Warning", "reason": "BackOff",
            "involvedObject": {"kind": "Node"}, "eventTime": "2025-06-01T11:58:59.500000Z",
            "reportingComponent": "kubelet", "reportingInstance": "n1", "message": "m"});
        let c = cells(&ev, &obj);
        assert_eq!(c[0], "60s");
        assert_eq!(c[3], "node");
        assert_eq!(c[5], "kubelet, n1");
        assert_eq!(c[8], 1);

        let ev2 = info("events.k8s.io", "events");
        let obj = json!({"metadata": meta("e", 5), "type": "Normal", "reason": "Pulled",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "eventTime": ago(300),
            "reportingController": "kubelet", "reportingInstance": "n1",
            "series": {"count": 7, "lastObservedTime": ago(20)}});
        let c = cells(&ev2, &obj);
        assert_eq!(
            c[..9],
            [
                json!("20s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/p"),
                json!(""),
                json!("kubelet, n1"),
                json!("pulled"),
                json!("5m"),
                json!(7)
            ]
        );
    }

    #[test]
    fn table_volumes_and_storage() {
        let pv = info("", "persistentvolumes");
        assert_eq!(
            names_at(&pv, 0),
            [
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age"
            ]
        );
        let obj = json!({"metadata": {"name": "pv1", "creationTimestamp": ago(60)},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                     "claimRef": {"namespace": "ns", "name": "data"}, "storageClassName": "standard"},
            "status": {"phase": "Bound"}});
        assert_eq!(
            cells(&pv, &obj),
            vec![
                json!("pv1"),
                json!("10Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Bound"),
                json!("ns/data"),
                json!("standard"),
                json!("<unset>"),
                json!(""),
                json!("60s"),
                json!("Filesystem"),
            ]
        );
        let pvc = info("", "persistentvolumeclaims");
        let pending = json!({"metadata": meta("data", 60), "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}});
        assert_eq!(
            cells(&pvc, &pending)[1..7],
            [
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("<unset>")
            ]
        );
        let mut bound = pending.clone();
        bound["spec"]["volumeName"] = json!("pv1");
        bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
        bound["metadata"]["annotations"] =
            json!({"volume.beta.kubernetes.io/storage-class": "fast"});
        assert_eq!(
            cells(&pvc, &bound)[1..6],
            [
                json!("Bound"),
                json!("pv1"),
                json!("1Gi"),
                json!("RWO"),
                json!("fast")
            ]
        );
        bound["metadata"]["deletionTimestamp"] = json!(ago(0));
        assert_eq!(cells(&pvc, &bound)[1], "Terminating");

        let sc = info("storage.k8s.io", "storageclasses");
        let obj = json!({"metadata": {"name": "standard", "creationTimestamp": ago(60),
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            cells(&sc, &obj),
            vec![
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(false),
                json!("60s"),
            ]
        );

        let rq = info("", "resourcequotas");
        let obj = json!({"metadata": meta("q", 60), "status": {
            "hard": {"requests.cpu": "2", "pods": "10", "limits.memory": "2Gi", "limits.cpu": "4"},
            "used": {"requests.cpu": "500m", "pods": "3", "limits.cpu": "1"}}});
        assert_eq!(
            cells(&rq, &obj)[1..3],
            [
                json!("pods: 3/10, requests.cpu: 500m/2"),
                json!("limits.cpu: 1/4, limits.memory: 0/2Gi")
            ]
        );
    }

    #[test]
    fn table_networking_rbac_and_others() {
        let ing = info("networking.k8s.io", "ingresses");
        assert_eq!(
            names_at(&ing, 0),
            ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
        );
        let obj = json!({"metadata": meta("i", 60), "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example"}, {"host": "b.example"}, {}, {"host": "c.example"}, {"host": "d.example"}],
            "tls": [{"hosts": ["a.example"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}});
        assert_eq!(
            cells(&ing, &obj)[1..5],
            [
                json!("nginx"),
                json!("a.example,b.example,c.example + 2 more..."),
                json!("10.0.0.1"),
                json!("80, 443")
            ]
        );
        assert_eq!(
            cells(&ing, &json!({"metadata": meta("i", 1)}))[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );

        let np = info("networking.k8s.io", "networkpolicies");
        assert_eq!(
            cells(
                &np,
                &json!({"metadata": meta("n", 1), "spec": {"podSelector": {}}})
            )[1],
            "<none>"
        );
        assert_eq!(
            cells(
                &np,
                &json!({"metadata": meta("n", 1), "spec": {"podSelector": {"matchLabels": {"role": "db"}}}})
            )[1],
            "role=db"
        );

        let rb = info("rbac.authorization.k8s.io", "rolebindings");
        assert_eq!(names_at(&rb, 0), ["Name", "Role", "Age"]);
        assert_eq!(names_at(&rb, 1), ["Users", "Groups", "ServiceAccounts"]);
        let obj = json!({"metadata": meta("rb", 60), "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ns", "name": "ci"}]});
        assert_eq!(
            cells(&rb, &obj)[1..6],
            [
                json!("ClusterRole/view"),
                json!("60s"),
                json!("alice, bob"),
                json!("devs"),
                json!("ns/ci")
            ]
        );
        let crb = info("rbac.authorization.k8s.io", "clusterrolebindings");
        assert_eq!(cells(&crb, &obj)[1], "ClusterRole/view");

        let lease = info("coordination.k8s.io", "leases");
        assert_eq!(names_at(&lease, 0), ["Name", "Holder", "Age"]);
        let obj = json!({"metadata": meta("l", 5), "spec": {"holderIdentity": "kgc-1"}});
        assert_eq!(cells(&lease, &obj)[1], "kgc-1");

        let csr = info("certificates.k8s.io", "certificatesigningrequests");
        assert_eq!(
            names_at(&csr, 0),
            [
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition"
            ]
        );
        let obj = json!({"metadata": meta("c", 5), "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
            "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}});
        assert_eq!(
            cells(&csr, &obj)[1..6],
            [
                json!("5s"),
                json!("kubernetes.io/kube-apiserver-client"),
                json!("alice"),
                json!("24h"),
                json!("Approved,Issued")
            ]
        );
        let pending = json!({"metadata": meta("c", 5), "spec": {}});
        assert_eq!(
            cells(&csr, &pending)[2..6],
            [
                json!("<none>"),
                json!(""),
                json!("<none>"),
                json!("Pending")
            ]
        );

        let pc = info("scheduling.k8s.io", "priorityclasses");
        let obj = json!({"metadata": meta("high", 5), "value": 1000000, "globalDefault": true});
        assert_eq!(
            cells(&pc, &obj),
            vec![
                json!("high"),
                json!(1000000),
                json!(true),
                json!("5s"),
                json!("PreemptLowerPriority")
            ]
        );

        let ep = info("", "endpoints");
        let obj = json!({"metadata": meta("web", 5), "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(
            cells(&ep, &obj)[1],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."
        );
        let obj = json!({"metadata": meta("web", 5), "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]});
        assert_eq!(cells(&ep, &obj)[1], "[fd00::1]:80");
        assert_eq!(
            cells(&ep, &json!({"metadata": meta("web", 5)}))[1],
            "<none>"
        );

        let eps = info("discovery.k8s.io", "endpointslices");
        assert_eq!(
            names_at(&eps, 0),
            ["Name", "AddressType", "Ports", "Endpoints", "Age"]
        );
        let obj = json!({"metadata": meta("web-abc", 5), "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "metrics"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]}]});
        assert_eq!(
            cells(&eps, &obj)[1..4],
            [
                json!("IPv4"),
                json!("80,metrics,* + 1 more..."),
                json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")
            ]
        );
        assert_eq!(
            cells(&eps, &json!({"metadata": meta("e", 1)}))[2..4],
            [json!("<unset>"), json!("<unset>")]
        );
    }

    #[test]
    fn table_default_columns_for_kinds_without_printer() {
        for (group, plural) in [
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("", "limitranges"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
        ] {
            let i = info(group, plural);
            let cols = columns(&i);
            assert_eq!(cols.len(), 2, "{plural}");
            assert_eq!(cols[0]["name"], "Name");
            assert_eq!(cols[0]["format"], "name");
            assert_eq!(cols[1]["name"], "Created At");
            assert_eq!(cols[1]["type"], "date");
            let obj =
                json!({"metadata": {"name": "x", "creationTimestamp": "2024-03-04T05:06:07Z"}});
            assert_eq!(
                cells(&i, &obj),
                vec![json!("x"), json!("2024-03-04T05:06:07Z")]
            );
        }
    }

    // --- custom resources ------------------------------------------------------------------

    fn custom(columns: Vec<PrinterColumn>) -> ResourceInfo {
        let mut i = info("apps", "deployments");
        i.group = "example.com".into();
        i.kind = "Widget".into();
        i.plural = "widgets".into();
        i.custom = true;
        i.printer_columns = columns;
        i
    }

    fn pc(name: &str, ty: &str, path: &str, priority: i32) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            type_: ty.into(),
            format: String::new(),
            description: String::new(),
            priority,
            json_path: path.into(),
        }
    }

    #[test]
    fn table_custom_resource_without_printer_columns() {
        let w = custom(Vec::new());
        let cols = columns(&w);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0]["name"], "Name");
        assert_eq!(cols[0]["format"], "name");
        assert_eq!(cols[1]["name"], "Age");
        assert_eq!(cols[1]["type"], "date");
        assert_eq!(
            cells(&w, &json!({"metadata": meta("w1", 700)})),
            vec![json!("w1"), json!("11m")]
        );
    }

    #[test]
    fn table_custom_resource_printer_columns() {
        let mut described = pc("Replicas", "integer", ".spec.replicas", 0);
        described.description = "How many".into();
        let w = custom(vec![
            described,
            pc(
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
                0,
            ),
            pc(
                "Reason",
                "string",
                ".status.conditions[?(@.type=='Ready')].reason",
                1,
            ),
            pc("First", "string", ".spec.items[*].name", 0),
            pc("Second", "string", ".spec.items[1].name", 0),
            pc("Last", "string", ".spec.items[-1].name", 0),
            pc("Ratio", "number", ".spec.ratio", 0),
            pc("Enabled", "boolean", ".spec.enabled", 0),
            pc("Obj", "string", ".spec.selector", 0),
            pc("Count", "string", ".spec.replicas", 0),
            pc("Missing", "string", ".spec.nothing.here", 0),
            pc("Mistyped", "integer", ".spec.name", 0),
            pc("Created", "date", ".metadata.creationTimestamp", 0),
            pc("Bad date", "date", ".spec.name", 0),
            pc(
                "Dotted",
                "string",
                ".metadata.labels.app\\.kubernetes\\.io/name",
                0,
            ),
            pc(
                "Bracket",
                "string",
                ".metadata.labels['app.kubernetes.io/name']",
                0,
            ),
        ]);
        let cols = columns(&w);
        assert_eq!(cols.len(), 17);
        assert_eq!(cols[1]["name"], "Replicas");
        assert_eq!(cols[1]["type"], "integer");
        assert_eq!(cols[1]["description"], "How many");
        assert_eq!(
            cols[2]["description"],
            "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status"
        );
        assert_eq!(cols[3]["priority"], 1);

        let mut m = meta("w1", 3600 * 5);
        m["labels"] = json!({"app.kubernetes.io/name": "widget"});
        let obj = json!({
            "metadata": m,
            "spec": {"replicas": 3, "ratio": 0.5, "enabled": true, "name": "n",
                     "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                     "selector": {"matchLabels": {"x": "y"}}},
            "status": {"conditions": [
                {"type": "Synced", "status": "False", "reason": "Nope"},
                {"type": "Ready", "status": "True", "reason": "AllGood"},
            ]},
        });
        assert_eq!(
            cells(&w, &obj),
            vec![
                json!("w1"),
                json!(3),
                json!("True"),
                json!("AllGood"),
                json!("a"),
                json!("b"),
                json!("c"),
                json!(0.5),
                json!(true),
                json!("{\"matchLabels\":{\"x\":\"y\"}}"),
                json!("3"),
                Value::Null,
                Value::Null,
                json!("5h"),
                json!("<invalid>"),
                json!("widget"),
                json!("widget"),
            ]
        );
        // No status at all: the status columns are null, not errors.
        let bare = json!({"metadata": meta("w2", 1), "spec": {}});
        let c = cells(&w, &bare);
        assert_eq!(c.len(), 17);
        assert_eq!(c[2], Value::Null);
        assert_eq!(c[1], Value::Null);
    }

    #[test]
    fn table_jsonpath_parser() {
        assert_eq!(
            JsonPath::parse(".a.b[0]['c.d'][*]"),
            Ok(JsonPath(vec![
                Step::Field("a".into()),
                Step::Field("b".into()),
                Step::Index(0),
                Step::Field("c.d".into()),
                Step::Wildcard,
            ]))
        );
        assert_eq!(JsonPath::parse("{.spec.x}"), JsonPath::parse(".spec.x"));
        assert_eq!(JsonPath::parse("$.spec.x"), JsonPath::parse(".spec.x"));
        assert_eq!(JsonPath::parse("spec.x"), JsonPath::parse(".spec.x"));
        assert!(JsonPath::parse("..x").is_err());
        assert!(JsonPath::parse(".a[").is_err());
        assert!(JsonPath::parse(".a[x]").is_err());
        let doc = json!({"items": [{"n": 1, "ok": true}, {"n": 5}, {"n": 9, "ok": false}]});
        let eval = |p: &str| {
            JsonPath::parse(p)
                .unwrap()
                .eval(&doc)
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(eval(".items[?(@.n > 4)].n"), vec![json!(5), json!(9)]);
        assert_eq!(eval(".items[?(@.n<=5)].n"), vec![json!(1), json!(5)]);
        assert_eq!(eval(".items[?(@.n != 5)].n"), vec![json!(1), json!(9)]);
        assert_eq!(eval(".items[?(@.ok)].n"), vec![json!(1), json!(9)]);
        assert_eq!(eval(".items[?(@.ok == true)].n"), vec![json!(1)]);
        assert_eq!(eval(".items[5].n"), Vec::<Value>::new());
        assert_eq!(eval(".items.n"), Vec::<Value>::new());
    }

    // --- rows and tables ---------------------------------------------------------------------

    fn stored(obj: &Value, rv: u64) -> StoredObject {
        let m = &obj["metadata"];
        StoredObject {
            namespace: st(&m["namespace"]).to_owned(),
            name: st(&m["name"]).to_owned(),
            uid: st(&m["uid"]).to_owned(),
            resource_version: rv,
            deleting: false,
            labels: BTreeMap::new(),
            raw: obj.to_string().into_boxed_str(),
        }
    }

    #[test]
    fn table_rows_carry_partial_object_metadata() {
        let cm = info("", "configmaps");
        let mut m = meta("c", 10);
        m["labels"] = json!({"app": "x"});
        m["resourceVersion"] = json!("42");
        let obj =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"k": "v"}});
        let r = row(&cm, &obj, &IncludeObject::default(), now());
        assert_eq!(
            r["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
        );
        let r = row(&cm, &obj, &IncludeObject::Object, now());
        assert_eq!(r["object"], obj);
        let r = row(&cm, &obj, &IncludeObject::None, now());
        assert_eq!(r["object"], Value::Null);
        assert!(r.as_object().unwrap().contains_key("object"));
    }

    #[test]
    fn table_whole_body() {
        let pods = info("", "pods");
        let a = json!({"metadata": meta("a", 10), "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
        let b = json!({"metadata": meta("b", 20), "spec": {"containers": [{"name": "c"}]}});
        let objects = vec![stored(&a, 5), stored(&b, 6)];
        let t = table(
            &pods,
            &objects,
            "v1",
            "17",
            Some("tok"),
            &IncludeObject::Metadata,
            true,
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "17", "continue": "tok"})
        );
        assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 9);
        let rows = t["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["cells"][0], "a");
        assert_eq!(rows[1]["cells"][2], "Pending");
        assert_eq!(rows[1]["object"]["metadata"]["name"], "b");
        for r in rows {
            assert_eq!(r["cells"].as_array().unwrap().len(), 9);
        }

        // A watch event after the first: no column definitions, v1beta1 partial metadata.
        let arcs = [std::sync::Arc::new(stored(&a, 5))];
        let t = table(
            &pods,
            arcs.iter().map(|a| &**a),
            "v1beta1",
            "5",
            None,
            &IncludeObject::Metadata,
            false,
            now(),
        );
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["columnDefinitions"], Value::Null);
        assert_eq!(t["metadata"], json!({"resourceVersion": "5"}));
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

        // An empty list.
        let t = table_of_values(
            &pods,
            &[],
            "v1",
            "",
            Some(""),
            &IncludeObject::None,
            true,
            now(),
        );
        assert_eq!(t["rows"], json!([]));
        assert_eq!(t["metadata"], json!({}));
    }

    #[test]
    fn table_garbage_objects_never_panic() {
        let garbage = [
            json!(null),
            json!("text"),
            json!(42),
            json!([1, 2]),
            json!({}),
            json!({"metadata": 5, "spec": "x", "status": [1]}),
            json!({
                "metadata": {"name": 7, "creationTimestamp": "yesterday", "deletionTimestamp": 3,
                             "labels": [], "annotations": "a", "ownerReferences": {"x": 1}},
                "spec": {"containers": "no", "initContainers": [null, 1, {"restartPolicy": 5}],
                         "replicas": "three", "selector": {"matchLabels": [1], "matchExpressions": [{"operator": "In"}]},
                         "ports": [{"port": "eighty", "nodePort": -1}], "type": 5, "rules": [null],
                         "metrics": [{"type": "Resource"}, {"type": "External"}, {"type": "Object", "object": 1}, {"type": "Pods"}],
                         "capacity": {"storage": {}}, "accessModes": "RWO", "claimRef": "c",
                         "template": {"spec": {"containers": [1, {"name": []}]}}, "completions": "1",
                         "expirationSeconds": -5, "podSelector": "x", "tls": {}, "readinessGates": [1]},
                "status": {"phase": 1, "conditions": [null, {"type": 5}], "containerStatuses": [null, {"state": "x", "restartCount": "2"},
                           {"lastState": {"terminated": {"finishedAt": 12}}, "restartCount": 1e300}],
                           "initContainerStatuses": [{"state": {"terminated": {"exitCode": "x"}}}],
                           "podIPs": [null], "hard": {"cpu": [1]}, "used": 5, "loadBalancer": {"ingress": [1]},
                           "currentMetrics": "m", "active": 3, "startTime": "2025-13-45T00:00:00Z"},
                "subsets": [{"addresses": [1], "ports": [null]}], "endpoints": [{"addresses": [1, null]}],
                "ports": [null], "involvedObject": "o", "series": {"count": "many"}, "roleRef": 1, "subjects": [1],
                "data": [], "secrets": "s", "value": "v", "revision": {}
            }),
        ];
        let mut infos: Vec<ResourceInfo> = Catalog::builtin()
            .resources()
            .map(|r| (**r).clone())
            .collect();
        infos.push(custom(Vec::new()));
        infos.push(custom(vec![
            pc("A", "integer", ".spec.replicas", 0),
            pc("B", "date", ".status.startTime", 0),
            pc("C", "string", "[[[", 0),
            pc("D", "string", ".status.conditions[?(@.type==)].x", 0),
            pc("E", "number", ".spec.ports[*].port", 0),
            pc("F", "mystery", ".spec", 0),
        ]));
        for i in &infos {
            let n = columns(i).len();
            for g in &garbage {
                for include in [
                    IncludeObject::None,
                    IncludeObject::Metadata,
                    IncludeObject::Object,
                ] {
                    let r = row(i, g, &include, now());
                    assert_eq!(
                        r["cells"].as_array().map(Vec::len),
                        Some(n),
                        "{} cells for {g}",
                        i.plural
                    );
                }
            }
        }
    }

    #[test]
    fn table_every_builtin_row_matches_its_columns() {
        let obj = json!({"metadata": meta("x", 1)});
        for i in Catalog::builtin().resources() {
            let cols = columns(i);
            assert!(!cols.is_empty(), "{}", i.plural);
            for c in &cols {
                for key in ["name", "type", "format", "description", "priority"] {
                    assert!(c.get(key).is_some(), "{} column lacks {key}", i.plural);
                }
            }
            let name_cols: Vec<_> = cols.iter().filter(|c| c["format"] == "name").collect();
            assert_eq!(name_cols.len(), 1, "{}", i.plural);
            assert_eq!(cells(i, &obj).len(), cols.len(), "{}", i.plural);
        }
    }
}
