//! The audit log, as kube-apiserver writes it with `--audit-log-path` and
//! `--audit-policy-file` (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/endpoints/filters/audit.go`,
//! `pkg/audit/request.go`, the log backend `plugin/pkg/audit/log/backend.go`, its rotation by
//! `gopkg.in/natefinch/lumberjack.v2`).
//!
//! Each request the policy ([`kgc_audit`]) audits gets `audit.k8s.io/v1 Event`s, one JSON line
//! each: `RequestReceived` when it arrives, `ResponseStarted` when a watch's headers are sent,
//! `ResponseComplete` when its answer is written, `Panic` when its handler panicked. Events go
//! through a bounded buffer to one writer thread: upstream's `blocking` mode with a bound — a
//! request waits for room only when [`BUFFER`] events are already waiting for a slow disk.
//! Admission adds annotations to the request's event through [`annotate`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, Method};
use kgc_audit::{Decision, Level, Policy, Stage};
use serde_json::{Map, Value, json};

/// Events waiting for the writer before requests wait for room.
pub const BUFFER: usize = 10_000;

/// Rotation of the log file (`--audit-log-maxsize`, `--audit-log-maxbackup`,
/// `--audit-log-maxage`), as lumberjack rotates: a zero size means lumberjack's 100 MB, zero
/// backups or age keep every old file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rotation {
    pub max_size_mb: u64,
    pub max_backups: usize,
    pub max_age_days: u64,
}

/// The audit log: the policy and the writer's buffer.
pub struct AuditLog {
    policy: Policy,
    tx: tokio::sync::mpsc::Sender<String>,
}

impl AuditLog {
    /// Reads the policy file and starts the writer of `path` (`-`: standard output).
    pub fn open(policy_file: &Path, path: &str, rotation: Rotation) -> Result<Self, crate::Error> {
        let audit = |reason: String| crate::Error::Audit(reason);
        let text = std::fs::read_to_string(policy_file)
            .map_err(|e| audit(format!("{}: {e}", policy_file.display())))?;
        let policy =
            Policy::parse(&text).map_err(|e| audit(format!("{}: {e}", policy_file.display())))?;
        let mut out: Box<dyn Write + Send> = if path == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                Rotating::open(PathBuf::from(path), rotation)
                    .map_err(|e| audit(format!("{path}: {e}")))?,
            )
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(BUFFER);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Some(line) = rx.blocking_recv() {
                    if let Err(e) = out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
                        tracing::error!(error = %e, "writing the audit log");
                    }
                }
            })
            .map_err(|e| audit(e.to_string()))?;
        Ok(Self { policy, tx })
    }

    /// The event of a request, if the policy audits it.
    pub(crate) fn begin(&self, r: Received<'_>) -> Option<Event> {
        let attrs = crate::authz::attributes(r.user, r.method, r.path, r.query);
        let (groups, name) = (attrs.user.groups.clone(), attrs.user.name.clone());
        let decision = self.policy.evaluate(&kgc_audit::Attributes {
            user: &name,
            groups: &groups,
            verb: &attrs.verb,
            resource: attrs
                .resource_request
                .then(|| kgc_audit::ResourceAttributes {
                    group: &attrs.api_group,
                    resource: &attrs.resource,
                    subresource: &attrs.subresource,
                    namespace: &attrs.namespace,
                    name: &attrs.name,
                }),
            path: r.path,
        });
        if decision.level == Level::None {
            return None;
        }
        let mut ev = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": decision.level.as_str(),
            "auditID": r.audit_id,
            "requestURI": r.uri,
            "verb": attrs.verb,
            "user": user_json(r.user),
            "sourceIPs": r.source_ips,
            "requestReceivedTimestamp": now(),
        });
        if let Some(agent) = r.headers.get("user-agent").and_then(|h| h.to_str().ok()) {
            ev["userAgent"] = json!(agent);
        }
        if let Some(imp) = r.impersonated {
            ev["impersonatedUser"] = user_json(imp);
        }
        if attrs.resource_request {
            let mut o = Map::new();
            for (k, v) in [
                ("resource", &attrs.resource),
                ("namespace", &attrs.namespace),
                ("name", &attrs.name),
                ("apiGroup", &attrs.api_group),
                ("apiVersion", &api_version(r.path)),
                ("subresource", &attrs.subresource),
            ] {
                if !v.is_empty() {
                    o.insert(k.into(), json!(v));
                }
            }
            ev["objectRef"] = Value::Object(o);
        }
        Some(Event {
            ev,
            decision,
            annotations: Arc::default(),
        })
    }

    /// Writes `event` at `stage` (unless the policy omits that stage), waiting for room only
    /// when the buffer is full.
    pub(crate) async fn emit(&self, event: &Event, stage: Stage) {
        if let Some(line) = event.line(stage) {
            let _ = self.tx.send(line).await;
        }
    }

    /// As [`Self::emit`] where a request cannot wait (a watch's end): a full buffer drops it.
    pub(crate) fn emit_now(&self, event: &Event, stage: Stage) {
        if let Some(line) = event.line(stage)
            && self.tx.try_send(line).is_err()
        {
            tracing::warn!(
                stage = stage.as_str(),
                "the audit buffer is full: event dropped"
            );
        }
    }
}

/// What the audit filter knows of a request when it arrives.
pub(crate) struct Received<'a> {
    pub audit_id: &'a str,
    pub method: &'a Method,
    pub path: &'a str,
    pub uri: &'a str,
    pub query: &'a crate::request::Query,
    pub headers: &'a HeaderMap,
    pub source_ips: Vec<String>,
    /// The authenticated user (`system:unsecured` on the insecure port).
    pub user: &'a kgc_auth::UserInfo,
    /// Who the request acts as, when it impersonates.
    pub impersonated: Option<&'a kgc_auth::UserInfo>,
}

/// One request's event, filled in as the request goes.
pub(crate) struct Event {
    ev: Value,
    decision: Decision,
    annotations: Annotations,
}

type Annotations = Arc<Mutex<Map<String, Value>>>;

tokio::task_local! {
    /// The level of the request's event and its annotations.
    static CURRENT: (Level, Annotations);
}

/// Adds an annotation to the event of the request being served (admission's
/// `AddAnnotation`); nothing when the request is not audited. The first value of a key stays.
pub(crate) fn annotate(key: String, value: String) {
    annotate_at(Level::Metadata, key, value);
}

/// [`annotate`] for an annotation recorded only in events of `level` and above (admission's
/// `AddAnnotationWithLevel`: a mutating webhook's patch needs `Request`).
pub(crate) fn annotate_at(level: Level, key: String, value: String) {
    let _ = CURRENT.try_with(|(at, a)| {
        if *at >= level {
            a.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_insert(Value::String(value));
        }
    });
}

/// Writes a watch's `ResponseComplete` when its stream is dropped: ended, or the client gone.
pub(crate) struct CompleteOnDrop {
    log: Arc<AuditLog>,
    event: Event,
}

impl CompleteOnDrop {
    pub fn new(log: Arc<AuditLog>, event: Event) -> Self {
        Self { log, event }
    }
}

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        self.log.emit_now(&self.event, Stage::ResponseComplete);
    }
}

impl Event {
    pub fn audit_id(&self) -> &str {
        self.ev["auditID"].as_str().unwrap_or_default()
    }

    pub fn level(&self) -> Level {
        self.decision.level
    }

    /// Runs `f` with [`annotate`] adding to this event.
    pub async fn scope<F: std::future::Future>(&self, f: F) -> F::Output {
        CURRENT
            .scope((self.decision.level, Arc::clone(&self.annotations)), f)
            .await
    }

    pub fn annotate(&self, key: &str, value: &str) {
        self.annotations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.into(), json!(value));
    }

    /// `requestObject` (level `Request` and up): the body, decoded (JSON, YAML, protobuf) and
    /// written as JSON.
    pub fn request_object(&mut self, body: Option<Value>) {
        if self.decision.level < Level::Request {
            return;
        }
        if let Some(mut v) = body {
            // What the URL did not name, the object does (`LogRequestObject`).
            if let Some(o) = self.ev.get_mut("objectRef").and_then(Value::as_object_mut) {
                for k in ["namespace", "name", "uid", "resourceVersion"] {
                    if let Some(x) = v["metadata"][k].as_str().filter(|x| !x.is_empty()) {
                        o.entry(k).or_insert_with(|| json!(x));
                    }
                }
            }
            self.strip(&mut v);
            self.ev["requestObject"] = v;
        }
    }

    /// The response's status: `{metadata, code}`, or for a `Status` its bounded fields
    /// (`LogResponseObject`); with `RequestResponse`, the JSON body as `responseObject`.
    pub fn response(&mut self, code: u16, body: Option<&[u8]>) {
        let parsed = body.and_then(|b| serde_json::from_slice::<Value>(b).ok());
        let mut status = json!({"metadata": {}, "code": code});
        if let Some(v) = parsed.as_ref().filter(|v| v["kind"] == "Status") {
            for k in ["status", "message", "reason", "details"] {
                if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
                    status[k] = x.clone();
                }
            }
        }
        self.ev["responseStatus"] = status;
        if self.decision.level >= Level::RequestResponse
            && let Some(mut v) = parsed
        {
            self.strip(&mut v);
            self.ev["responseObject"] = v;
        }
    }

    /// The status of a request refused 401 (filters/authn_audit.go): the credentials tried.
    pub fn unauthenticated(&mut self, attempted: &str) {
        self.ev["responseStatus"] = json!({"metadata": {}, "message": attempted, "code": 401});
    }

    /// The `Panic` event's status (`WithPanicRecovery`'s words).
    pub fn panicked(&mut self, message: &str) {
        self.ev["responseStatus"] = json!({"metadata": {}, "status": "Failure",
            "message": format!("APIServer panic'd: {message}"), "reason": "InternalError", "code": 500});
    }

    /// `omitManagedFields`: an object's (or a list's items') `metadata.managedFields` dropped.
    fn strip(&self, v: &mut Value) {
        if !self.decision.omit_managed_fields {
            return;
        }
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        for item in v
            .get_mut("items")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(m) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
        }
    }

    /// The JSON line of the event at `stage`; `None` when the policy omits it. Only the final
    /// stages carry the response and the annotations, as upstream's.
    fn line(&self, stage: Stage) -> Option<String> {
        if !self.decision.records(stage) {
            return None;
        }
        let mut ev = self.ev.clone();
        ev["stage"] = json!(stage.as_str());
        ev["stageTimestamp"] = json!(now());
        if stage == Stage::RequestReceived {
            if let Some(o) = ev.as_object_mut() {
                o.remove("responseStatus");
                o.remove("responseObject");
            }
        } else if stage != Stage::ResponseStarted || ev.get("responseStatus").is_some() {
            let a = self
                .annotations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if !a.is_empty() {
                ev["annotations"] = Value::Object(a);
            }
        }
        if stage == Stage::ResponseStarted
            && let Some(o) = ev.as_object_mut()
        {
            o.remove("responseObject");
        }
        let mut line = ev.to_string();
        line.push('\n');
        Some(line)
    }
}

fn user_json(u: &kgc_auth::UserInfo) -> Value {
    // authentication/v1 UserInfo: every field omitted when empty (`{}` for no user).
    let mut o = json!({});
    if !u.name.is_empty() {
        o["username"] = json!(u.name);
    }
    if !u.uid.is_empty() {
        o["uid"] = json!(u.uid);
    }
    if !u.groups.is_empty() {
        o["groups"] = json!(u.groups);
    }
    if !u.extra.is_empty() {
        o["extra"] = json!(u.extra);
    }
    o
}

/// The API version a resource path names (`/api/v1/…`, `/apis/GROUP/VERSION/…`).
fn api_version(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["api", v, ..] => (*v).to_owned(),
        ["apis", _, v, ..] => (*v).to_owned(),
        _ => String::new(),
    }
}

/// `metav1.MicroTime`: UTC with microseconds.
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// A log file rotated as lumberjack rotates it: past the size limit it is renamed
/// `NAME-<UTC time>.EXT` and a new one opened; old files beyond the count or age limits go.
struct Rotating {
    path: PathBuf,
    file: std::fs::File,
    size: u64,
    max_bytes: u64,
    rotation: Rotation,
}

impl Rotating {
    fn open(path: PathBuf, rotation: Rotation) -> std::io::Result<Self> {
        let mb = if rotation.max_size_mb == 0 {
            100
        } else {
            rotation.max_size_mb
        };
        Self::with_limit(path, rotation, mb * 1024 * 1024)
    }

    fn with_limit(path: PathBuf, rotation: Rotation, max_bytes: u64) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = Self::open_file(&path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            path,
            file,
            size,
            max_bytes,
            rotation,
        })
    }

    fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
        let mut o = std::fs::OpenOptions::new();
        o.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        o.open(path)
    }

    /// `NAME`, `EXT` (with its dot) of the log file.
    fn parts(&self) -> (String, String) {
        let file = self
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = self
            .path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let stem = file[..file.len() - ext.len()].to_owned();
        (stem, ext)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let (stem, ext) = self.parts();
        let stamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H-%M-%S%.3f");
        let backup = self.path.with_file_name(format!("{stem}-{stamp}{ext}"));
        std::fs::rename(&self.path, backup)?;
        self.file = Self::open_file(&self.path)?;
        self.size = 0;
        self.prune(&stem, &ext);
        Ok(())
    }

    /// Removes the old files beyond `--audit-log-maxbackup` and older than
    /// `--audit-log-maxage` days (by the time in their names).
    fn prune(&self, stem: &str, ext: &str) {
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let prefix = format!("{stem}-");
        let mut backups: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let stamp = name.strip_prefix(&prefix)?.strip_suffix(ext)?.to_owned();
                Some((stamp, e.path()))
            })
            .collect();
        // The stamps sort as the times they spell: newest first.
        backups.sort_by(|a, b| b.0.cmp(&a.0));
        let cutoff = (self.rotation.max_age_days > 0).then(|| {
            let age = jiff::SignedDuration::from_hours(24 * self.rotation.max_age_days as i64);
            jiff::Timestamp::now()
                .checked_sub(age)
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
                .strftime("%Y-%m-%dT%H-%M-%S%.3f")
                .to_string()
        });
        for (i, (stamp, path)) in backups.iter().enumerate() {
            let too_many = self.rotation.max_backups > 0 && i >= self.rotation.max_backups;
            let too_old = cutoff.as_ref().is_some_and(|c| stamp < c);
            if too_many || too_old {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl Write for Rotating {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_past_the_size_and_keeps_max_backups() {
        let dir = std::env::temp_dir().join(format!("kgc-audit-{}", uuid::Uuid::new_v4()));
        let path = dir.join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut w = Rotating::with_limit(path.clone(), rotation, 100).unwrap();
        for i in 0..5 {
            w.write_all(format!("{i:060}\n").as_bytes()).unwrap();
            w.write_all(format!("{i:060}\n").as_bytes()).unwrap();
            // Distinct millisecond stamps for the backups.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(names.iter().any(|n| n == "audit.log"));
        assert!(
            names
                .iter()
                .filter(|n| *n != "audit.log")
                .all(|n| n.starts_with("audit-") && n.ends_with(".log")),
            "{names:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
