//! Field ownership for server-side apply: `metadata.managedFields`, the structured merge of an
//! applied configuration, conflicts between managers, and ownership tracking for ordinary
//! writes. Pure: no I/O and no clock (the caller passes the time).
//!
//! The semantics follow upstream's `sigs.k8s.io/structured-merge-diff` (`merge/update.go`,
//! `typed/`, `fieldpath/`) as wired by apimachinery's `pkg/util/managedfields/internal`
//! (`fieldmanager.go` and the managers it stacks):
//!
//! * [`apply`]: the configuration is merged into the live object (objects field by field, set
//!   and map lists item by item, everything else replaced); the applier's fields become exactly
//!   the fields of the configuration; fields it applied last time and no longer applies are
//!   removed unless some manager (applier or updater) still owns them; every field the write
//!   changes and another manager owns is a conflict, an error unless `force`, in which case the
//!   other manager loses it. Equal values are not conflicts: both managers then own the field.
//!   An explicit `null` in the configuration unsets the field (and the applier owns it).
//! * [`update`]: the fields that differ between the old and the new object go to the writer (an
//!   `Update` entry per manager and apiVersion) and are taken from everyone else; fields the
//!   write removes leave every set.
//! * An object without managedFields is tracked from its creation; an existing object without
//!   them is not tracked by updates, and its first apply attributes its current fields to
//!   `before-first-apply` first. At most ten `Update` entries are kept (older ones merge into
//!   `ancient-changes`). The manager `kubectl` upgrades from client-side apply: conflicts on
//!   fields the last-applied annotation records with the live value are forced, and the
//!   annotation follows the applied configuration.
//!
//! What the engine cannot know from JSON alone comes from the caller's [`Schema`]: list types
//! and atomic maps. Every object is treated as a struct (see [`Schema`]).
//!
//! Where this differs from upstream, deliberately:
//! * No schema means no struct/map distinction: an `Update` that adds an object field owns the
//!   field itself (`"."`), as upstream does for maps and custom resources but not for Go
//!   structs that are always present (`spec` of a built-in); an applied free-form map with
//!   object values (`x-kubernetes-preserve-unknown-fields`) is owned through its leaves.
//! * An applied `null` where nothing is set is no change (upstream conflicts with the owner of
//!   the absent field); over a value it is a change as upstream. Nulls never reach the result.
//! * Pruning never removes what the applied configuration mentions, so an explicit `[]` or `{}`
//!   stays and applying the same configuration twice is a fixed point.
//! * Objects are not converted between apiVersions: entries of other versions are compared
//!   against the same JSON (enough where versions differ only by `apiVersion`).
//! * An entry that gains ownership without the object changing gets the time when it has none.
#![forbid(unsafe_code)]

mod error;
mod fieldpath;
mod lastapplied;
mod managed;
mod schema;
mod typed;

pub use error::{Conflict, Error};
pub use fieldpath::{FieldSet, Path, PathElement, compare_values, values_equal};
pub use lastapplied::LAST_APPLIED_ANNOTATION;
pub use managed::{ManagedFieldsEntry, Operation, decode_managed_fields};
pub use schema::{DefaultSchema, ListType, Schema};

use managed::{Entry, ManagerKey, Managers};
use serde_json::{Map, Value};

/// Who writes, and when.
#[derive(Clone, Copy, Debug)]
pub struct Manager<'a> {
    /// The field manager (`fieldManager`, or the User-Agent prefix); "" is recorded as
    /// `unknown`.
    pub name: &'a str,
    /// The apiVersion of the request (`apps/v1`).
    pub api_version: &'a str,
    /// The time of the write, RFC 3339 (`2024-05-01T12:00:00Z`).
    pub time: &'a str,
    /// "" for the main resource, else the subresource (`status`, `scale`).
    pub subresource: &'a str,
}

/// Upstream's `DefaultMaxUpdateManagers`.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager that receives an untracked object's existing fields on its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

impl FieldSet {
    /// Every leaf field and list item of `obj` (what applying `obj` owns): upstream's
    /// `ToFieldSet`. Fails on list-map items without their key and on duplicate list items.
    pub fn from_object(obj: &Value, schema: &dyn Schema) -> Result<FieldSet, Error> {
        typed::to_field_set(obj, schema, true)
    }

    /// The paths no manager ever owns (upstream `stripmeta.go`): `apiVersion`, `kind`, and in
    /// `metadata` the node itself, `name`, `namespace`, `creationTimestamp`, `selfLink`, `uid`,
    /// `clusterName`, `generation`, `managedFields` and `resourceVersion`.
    pub fn never_owned() -> FieldSet {
        never_owned().clone()
    }
}

/// [`FieldSet::never_owned`], built once.
fn never_owned() -> &'static FieldSet {
    static NEVER_OWNED: std::sync::OnceLock<FieldSet> = std::sync::OnceLock::new();
    NEVER_OWNED.get_or_init(|| {
        let mut s = FieldSet::new();
        s.insert(&[PathElement::field("apiVersion")]);
        s.insert(&[PathElement::field("kind")]);
        s.insert(&[PathElement::field("metadata")]);
        for f in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            s.insert(&[PathElement::field("metadata"), PathElement::field(f)]);
        }
        s
    })
}

/// Server-side apply.
///
/// Merges `config` (the applied configuration as JSON; `metadata.managedFields` must be absent
/// or null) into `live` (None when the apply creates the object) and returns the new object with
/// `metadata.managedFields` updated. Conflicts (another manager owns a field whose live value
/// differs from the applied one) fail with [`Error::Conflicts`] unless `force`, which moves the
/// fields to `manager`. Fields this manager applied before and no longer applies are removed
/// unless another manager owns them. The same manager's `Update` entries are other managers as
/// far as conflicts go (as upstream).
///
/// System metadata the configuration sets to `null` (`creationTimestamp: null` from
/// `kubectl create --dry-run -o yaml`) keeps its live value; non-null values are passed through
/// for the server to validate (immutable fields, `resourceVersion` preconditions). The time of
/// the applier's entry changes only when the object changes (or the entry has none yet).
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &Manager,
    force: bool,
    schema: &dyn Schema,
) -> Result<Value, Error> {
    if !config.is_object() {
        return Err(Error::Invalid(
            "the apply configuration must be a JSON object".into(),
        ));
    }
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|v| !v.is_null())
    {
        return Err(Error::Invalid("metadata.managedFields must be nil".into()));
    }
    if let Some(v) = config.get("apiVersion").and_then(Value::as_str)
        && !manager.api_version.is_empty()
        && v != manager.api_version
    {
        return Err(Error::Invalid(format!(
            "Incorrect version specified in apply patch. Specified patch version: {v}, \
             expected: {}",
            manager.api_version
        )));
    }
    let mut live_obj = match live {
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(Error::Invalid(
                "the live object must be a JSON object".into(),
            ));
        }
        None => Value::Object(Map::new()),
    };
    let mut managers = Managers::decode(managed_fields_of(&live_obj))?;
    remove_managed_fields(&mut live_obj);
    let ignored = schema.reset_fields(manager.subresource);
    let config_set = typed::to_field_set(config, schema, true)?;

    if managers.is_empty() && live.is_some() {
        let key = ManagerKey::new(
            BEFORE_FIRST_APPLY,
            Operation::Update,
            manager.api_version,
            manager.subresource,
        );
        let empty = Value::Object(Map::new());
        record_update(
            &empty,
            &live_obj,
            &mut managers,
            &key,
            manager,
            schema,
            &ignored,
        )?;
    }

    let key = ManagerKey::new(manager.name, Operation::Apply, "", manager.subresource);
    let attempt = |force: bool| {
        apply_core(
            &live_obj,
            config,
            &config_set,
            &managers,
            &key,
            manager,
            force,
            schema,
            &ignored,
        )
    };
    let (mut out, managers) = match attempt(force)? {
        Ok(done) => done,
        Err(conflicts) => {
            let allowed = if manager.name == lastapplied::KUBECTL_MANAGER {
                lastapplied::allowed_conflicts(&live_obj, manager.api_version, schema)
            } else {
                None
            };
            let remaining: Vec<RawConflict> = match &allowed {
                Some(allowed) => conflicts
                    .into_iter()
                    .filter(|c| !allowed.has(&c.path.0))
                    .collect(),
                None => conflicts,
            };
            if !remaining.is_empty() {
                return Err(Error::Conflicts(
                    remaining
                        .into_iter()
                        .map(RawConflict::into_public)
                        .collect(),
                ));
            }
            match attempt(true)? {
                Ok(done) => done,
                Err(_) => unreachable!("a forced apply has no conflicts"),
            }
        }
    };
    if manager.name == lastapplied::KUBECTL_MANAGER {
        lastapplied::update_annotation(&mut out, config);
    }
    managers.write_to(&mut out);
    Ok(out)
}

/// A non-apply write (create, update, patch).
///
/// Fields that differ between `old` (None on create) and `new` become owned by `manager` with
/// operation `Update` and are taken from every other manager; fields the write removes leave
/// every manager. Returns `new` with `metadata.managedFields` updated.
///
/// Which managedFields count, as upstream: for a subresource write, always the stored ones;
/// otherwise `[]` (or a single empty entry) in `new` resets them, other non-empty valid ones in
/// `new` replace the stored ones, and anything else (absent, null, undecodable) keeps the stored
/// ones. An existing object without managedFields is not tracked (the result has none).
///
/// Errors only on malformed objects (a list-map item without its key); the server then keeps
/// the stored managedFields, as [`update_or_keep`] does.
pub fn update(
    old: Option<&Value>,
    new: &Value,
    manager: &Manager,
    schema: &dyn Schema,
) -> Result<Value, Error> {
    let mut new = new.clone();
    track_update(old, &mut new, manager, schema)?;
    Ok(new)
}

/// [`update`], falling back on error to `new` with the stored managedFields of `old` (upstream's
/// `UpdateNoErrors`), so a write never fails because of field tracking.
pub fn update_or_keep(
    old: Option<&Value>,
    new: &Value,
    manager: &Manager,
    schema: &dyn Schema,
) -> Value {
    update_or_keep_owned(old, new.clone(), manager, schema)
}

/// [`update_or_keep`] for a caller that owns `new`: the object is updated in place instead of
/// copied.
pub fn update_or_keep_owned(
    old: Option<&Value>,
    mut new: Value,
    manager: &Manager,
    schema: &dyn Schema,
) -> Value {
    if track_update(old, &mut new, manager, schema).is_err() {
        remove_managed_fields(&mut new);
        if let (Some(stored), Some(Value::Object(meta))) = (
            old.and_then(managed_fields_of).cloned(),
            new.get_mut("metadata"),
        ) {
            meta.insert("managedFields".into(), stored);
        }
    }
    new
}

/// [`update`] in place: `new`'s managedFields are replaced by the tracked ones. On error `new`
/// is unchanged, except that its managedFields may be gone.
fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &Manager,
    schema: &dyn Schema,
) -> Result<(), Error> {
    if !new.is_object() {
        return Err(Error::Invalid(
            "the new object must be a JSON object".into(),
        ));
    }
    let empty = Value::Object(Map::new());
    // The old object is compared as it is: comparisons skip `metadata.managedFields`.
    let old_obj = match old {
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(Error::Invalid(
                "the old object must be a JSON object".into(),
            ));
        }
        None => &empty,
    };
    let stored = || Managers::decode(managed_fields_of(old_obj)).unwrap_or_default();
    let mut managers = if !manager.subresource.is_empty() {
        stored()
    } else {
        let sent = managed_fields_of(new);
        if is_reset(sent) {
            Managers::default()
        } else {
            match Managers::decode(sent) {
                Ok(m) if !m.is_empty() => m,
                _ => stored(),
            }
        }
    };
    remove_managed_fields(new);
    if managers.is_empty() && old.is_some() {
        return Ok(());
    }
    let ignored = schema.reset_fields(manager.subresource);
    let key = ManagerKey::new(
        manager.name,
        Operation::Update,
        manager.api_version,
        manager.subresource,
    );
    record_update(old_obj, new, &mut managers, &key, manager, schema, &ignored)?;
    managers.cap_update_managers(MAX_UPDATE_MANAGERS);
    managers.write_to(new);
    Ok(())
}

/// A conflict before it is made printable.
struct RawConflict {
    key: ManagerKey,
    api_version: String,
    path: Path,
}

impl RawConflict {
    fn into_public(self) -> Conflict {
        Conflict::new(&self.key, &self.api_version, self.path.to_string())
    }
}

/// Upstream's `Updater.Apply` plus the wrappers that strip metadata and stamp the time.
#[allow(clippy::too_many_arguments)]
fn apply_core(
    live: &Value,
    config: &Value,
    config_set: &FieldSet,
    managers: &Managers,
    key: &ManagerKey,
    manager: &Manager,
    force: bool,
    schema: &dyn Schema,
    ignored: &FieldSet,
) -> Result<Result<(Value, Managers), Vec<RawConflict>>, Error> {
    let mut managers = managers.clone();
    let mut merged = typed::merge(live, config, schema)?;
    restore_system_metadata(&mut merged, live);

    let previous = managers.map.get(key).cloned();
    managers.map.insert(
        key.clone(),
        Entry {
            set: config_set.recursive_difference(ignored),
            api_version: manager.api_version.to_string(),
            time: previous.as_ref().and_then(|e| e.time.clone()),
        },
    );
    if let Some(last) = previous.as_ref().map(|e| &e.set).filter(|s| !s.is_empty()) {
        let last = last.with_named_fields_as_members();
        let owned = managers.union_all().with_named_fields_as_members();
        let mentioned = typed::mentioned_paths(config, schema)?;
        typed::prune(&mut merged, &last, &owned, &mentioned, schema);
    }

    if let Err(conflicts) = resolve_ownership(
        live,
        &merged,
        &mut managers,
        Some(key),
        force,
        true,
        schema,
        ignored,
    )? {
        return Ok(Err(conflicts));
    }
    typed::drop_applied_nulls(&mut merged, config, schema);

    let changed = !values_equal(live, &merged);
    if let Some(e) = managers.map.get_mut(key) {
        e.set.difference_in_place(never_owned());
        if e.set.is_empty() {
            managers.map.remove(key);
        } else if changed || e.time.is_none() {
            e.time = Some(manager.time.to_string());
        }
    }
    Ok(Ok((merged, managers)))
}

/// Upstream's `Updater.Update` for the writer `key`, with the `managedFieldsUpdater` behaviour:
/// the entry only changes (and gets the new time) when the write changed something.
#[allow(clippy::too_many_arguments)]
fn record_update(
    old: &Value,
    new: &Value,
    managers: &mut Managers,
    key: &ManagerKey,
    manager: &Manager,
    schema: &dyn Schema,
    ignored: &FieldSet,
) -> Result<(), Error> {
    let cmp = match resolve_ownership(old, new, managers, None, true, false, schema, ignored)? {
        Ok(cmp) => cmp,
        Err(_) => unreachable!("a forced update has no conflicts"),
    };
    // (modified ∪ added) − removed − never owned; the comparison already excludes `ignored`.
    let mut set = cmp.modified.union_owned(cmp.added);
    set.difference_in_place(&cmp.removed);
    set.difference_in_place(never_owned());
    if set.is_empty() {
        return Ok(());
    }
    let entry = managers.map.entry(key.clone()).or_insert_with(|| Entry {
        set: FieldSet::new(),
        api_version: String::new(),
        time: None,
    });
    entry.set = set.union_owned(std::mem::take(&mut entry.set));
    entry.api_version = manager.api_version.to_string();
    entry.time = Some(manager.time.to_string());
    Ok(())
}

/// Upstream's `Updater.update`: every manager but `workflow` loses the fields the write changes
/// (conflicts, unless `force`) and the fields it removes. For applies (`applying`), an applied
/// `null` where nothing is set is no change (upstream would see an added field and conflict).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn resolve_ownership(
    old: &Value,
    new: &Value,
    managers: &mut Managers,
    workflow: Option<&ManagerKey>,
    force: bool,
    applying: bool,
    schema: &dyn Schema,
    ignored: &FieldSet,
) -> Result<Result<typed::Comparison, Vec<RawConflict>>, Error> {
    let mut cmp = typed::compare(old, new, applying, schema)?;
    cmp.exclude(ignored);
    let is_other = |k: &ManagerKey| Some(k) != workflow;
    if managers.map.keys().any(is_other) {
        let changed = cmp.modified.union(&cmp.added);
        if !force {
            let mut others: Vec<(&ManagerKey, &Entry)> =
                managers.map.iter().filter(|(k, _)| is_other(k)).collect();
            others.sort_by_cached_key(|(k, _)| k.identifier());
            let mut conflicts = Vec::new();
            for (k, e) in others {
                for path in e.set.intersection(&changed).paths() {
                    conflicts.push(RawConflict {
                        key: k.clone(),
                        api_version: e.api_version.clone(),
                        path,
                    });
                }
            }
            if !conflicts.is_empty() {
                return Ok(Err(conflicts));
            }
        }
        // Each loses what it shared with the change (its intersection with `changed`).
        for (k, e) in managers.map.iter_mut() {
            if is_other(k) {
                e.set.difference_in_place(&changed);
            }
        }
    }
    if !cmp.removed.is_empty() {
        for (k, e) in managers.map.iter_mut() {
            if is_other(k) {
                e.set.difference_in_place(&cmp.removed);
            }
        }
    }
    managers.map.retain(|_, e| !e.set.is_empty());
    Ok(Ok(cmp))
}

/// Metadata the server owns; an applied `null` must not unset it.
const SYSTEM_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

fn restore_system_metadata(merged: &mut Value, live: &Value) {
    let Some(Value::Object(live_meta)) = live.get("metadata") else {
        return;
    };
    let Some(Value::Object(meta)) = merged.get_mut("metadata") else {
        return;
    };
    for f in SYSTEM_METADATA {
        if let Some(v) = live_meta.get(f)
            && meta.get(f).is_none_or(Value::is_null)
        {
            meta.insert(f.to_string(), v.clone());
        }
    }
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

fn remove_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

/// `[]`, or a single entry with nothing set, resets managedFields (`isResetManagedFields`).
fn is_reset(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(m)] => m.values().all(|v| match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            }),
            _ => false,
        },
        _ => false,
    }
}
