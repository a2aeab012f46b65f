//! `metadata.managedFields` entries: decoding, manager identity, encoding order, the cap on
//! update managers (apimachinery `managedfields/internal/managedfields.go`, `capmanagers.go`).

use crate::{Error, FieldSet};
use kgc_meta::gojson;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The operation of a managedFields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write: create, update, patch.
    Update,
}

impl Operation {
    /// `"Apply"` or `"Update"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who an entry belongs to. Upstream keys entries by the JSON of the entry without fields and
/// time, and without the apiVersion for appliers: one entry per (manager, Apply, subresource)
/// and per (manager, Update, apiVersion, subresource).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ManagerKey {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    /// Empty for appliers.
    pub(crate) api_version: String,
    pub(crate) subresource: String,
}

impl ManagerKey {
    pub(crate) fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> Self {
        ManagerKey {
            manager: if manager.is_empty() {
                "unknown".to_string()
            } else {
                manager.to_string()
            },
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_string(),
            },
            subresource: subresource.to_string(),
        }
    }

    /// Upstream's `BuildManagerIdentifier`: Go's JSON of the entry's remaining fields.
    pub(crate) fn identifier(&self) -> String {
        let mut out = String::from("{");
        let mut sep = "";
        let mut field = |out: &mut String, name: &str, value: &str| {
            out.push_str(sep);
            gojson::write_json_string(out, name);
            out.push(':');
            gojson::write_json_string(out, value);
            sep = ",";
        };
        if !self.manager.is_empty() {
            field(&mut out, "manager", &self.manager);
        }
        field(&mut out, "operation", self.operation.as_str());
        if !self.api_version.is_empty() {
            field(&mut out, "apiVersion", &self.api_version);
        }
        if !self.subresource.is_empty() {
            field(&mut out, "subresource", &self.subresource);
        }
        out.push('}');
        out
    }
}

/// One decoded `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ManagedFieldsEntry {
    /// The field manager.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The apiVersion the fields are expressed in.
    pub api_version: String,
    /// RFC 3339 time of the manager's last change, as stored.
    pub time: Option<String>,
    /// "" for the main resource.
    pub subresource: String,
    /// The owned fields.
    pub fields: FieldSet,
}

impl ManagedFieldsEntry {
    /// Decodes one entry with upstream's checks (`DecodeManagedFields`).
    pub fn from_json(v: &Value, index: usize) -> Result<Self, Error> {
        let Value::Object(m) = v else {
            return Err(Error::ManagedFields(format!(
                "managed fields entry {index} is not an object"
            )));
        };
        let s = |name: &str| m.get(name).and_then(Value::as_str).unwrap_or("");
        let operation = match s("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => {
                return Err(Error::ManagedFields(
                    "operation must be `Apply` or `Update`".into(),
                ));
            }
        };
        if s("apiVersion").is_empty() {
            return Err(Error::ManagedFields("apiVersion must not be empty".into()));
        }
        match s("fieldsType") {
            "FieldsV1" => {}
            "" => {
                return Err(Error::ManagedFields(format!(
                    "missing fieldsType in managed fields entry {index}"
                )));
            }
            other => {
                return Err(Error::ManagedFields(format!(
                    "invalid fieldsType {other:?} in managed fields entry {index}"
                )));
            }
        }
        let fields = match m.get("fieldsV1") {
            Some(f) => FieldSet::from_fields_v1(f).map_err(|e| {
                Error::ManagedFields(format!("error decoding set of entry {index}: {e}"))
            })?,
            None => FieldSet::new(),
        };
        Ok(ManagedFieldsEntry {
            manager: s("manager").to_string(),
            operation,
            api_version: s("apiVersion").to_string(),
            time: m.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: s("subresource").to_string(),
            fields,
        })
    }

    /// The wire form: `{manager, operation, apiVersion, time?, fieldsType, fieldsV1,
    /// subresource?}`.
    pub fn to_json(&self) -> Value {
        entry_json(
            &self.manager,
            self.operation,
            &self.api_version,
            self.time.as_deref(),
            &self.subresource,
            &self.fields,
        )
    }
}

/// The wire form of an entry (see [`ManagedFieldsEntry::to_json`]), from borrowed parts.
fn entry_json(
    manager: &str,
    operation: Operation,
    api_version: &str,
    time: Option<&str>,
    subresource: &str,
    fields: &FieldSet,
) -> Value {
    let mut m = Map::new();
    if !manager.is_empty() {
        m.insert("manager".into(), Value::from(manager));
    }
    m.insert("operation".into(), Value::from(operation.as_str()));
    m.insert("apiVersion".into(), Value::from(api_version));
    if let Some(t) = time {
        m.insert("time".into(), Value::from(t));
    }
    m.insert("fieldsType".into(), Value::from("FieldsV1"));
    m.insert("fieldsV1".into(), fields.to_fields_v1());
    if !subresource.is_empty() {
        m.insert("subresource".into(), Value::from(subresource));
    }
    Value::Object(m)
}

/// Decodes `metadata.managedFields` (absent or null: no entries).
pub fn decode_managed_fields(v: Option<&Value>) -> Result<Vec<ManagedFieldsEntry>, Error> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| ManagedFieldsEntry::from_json(item, i))
            .collect(),
        Some(_) => Err(Error::ManagedFields("managedFields must be a list".into())),
    }
}

/// A manager's owned fields.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) set: FieldSet,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
}

/// All managers of an object, keyed by identity.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managers {
    pub(crate) map: BTreeMap<ManagerKey, Entry>,
}

impl Managers {
    pub(crate) fn decode(v: Option<&Value>) -> Result<Managers, Error> {
        let mut out = Managers::default();
        for e in decode_managed_fields(v)? {
            let key = ManagerKey {
                manager: e.manager,
                operation: e.operation,
                api_version: match e.operation {
                    Operation::Apply => String::new(),
                    Operation::Update => e.api_version.clone(),
                },
                subresource: e.subresource,
            };
            out.map.insert(
                key,
                Entry {
                    set: e.fields,
                    api_version: e.api_version,
                    time: e.time,
                },
            );
        }
        Ok(out)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The union of every manager's set.
    pub(crate) fn union_all(&self) -> FieldSet {
        let mut out = FieldSet::new();
        for e in self.map.values() {
            out.union_in_place(&e.set);
        }
        out
    }

    /// Entries in upstream's order: Apply before Update, then by time (seconds), manager,
    /// apiVersion and subresource.
    pub(crate) fn encode(&self) -> Vec<(&ManagerKey, &Entry)> {
        let mut entries: Vec<(&ManagerKey, &Entry)> = self.map.iter().collect();
        entries.sort_by_cached_key(|(k, e)| {
            (
                k.operation,
                unix_seconds(e.time.as_deref()),
                &k.manager,
                &e.api_version,
                &k.subresource,
            )
        });
        entries
    }

    /// Writes the entries into `obj.metadata.managedFields`, or removes the field when there are
    /// none.
    pub(crate) fn write_to(&self, obj: &mut Value) {
        let entries = self.encode();
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        if entries.is_empty() {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("managedFields");
            }
            return;
        }
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(
                "managedFields".into(),
                Value::Array(
                    entries
                        .into_iter()
                        .map(|(k, e)| {
                            entry_json(
                                &k.manager,
                                k.operation,
                                &e.api_version,
                                e.time.as_deref(),
                                &k.subresource,
                                &e.set,
                            )
                        })
                        .collect(),
                ),
            );
        }
    }

    /// Merges the oldest Update entries into per-apiVersion `ancient-changes` buckets until at
    /// most `max` Update entries remain (`capmanagers.go`).
    pub(crate) fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerKey> = self
            .map
            .keys()
            .filter(|k| k.operation == Operation::Update)
            .cloned()
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|a, b| {
            let ta = unix_seconds(self.map[a].time.as_deref());
            let tb = unix_seconds(self.map[b].time.as_deref());
            ta.cmp(&tb)
                .then_with(|| a.identifier().cmp(&b.identifier()))
        });
        let mut first_of_version: BTreeMap<String, ManagerKey> = BTreeMap::new();
        let mut length = updaters.len();
        for key in updaters {
            if length <= max {
                break;
            }
            let Some(entry) = self.map.get(&key).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerKey::new("ancient-changes", Operation::Update, &version, "");
            match first_of_version.get(&version) {
                Some(first) => {
                    if !self.map.contains_key(&bucket)
                        && let Some(s) = self.map.remove(first)
                    {
                        self.map.insert(bucket.clone(), s);
                    }
                    if let Some(b) = self.map.get_mut(&bucket) {
                        b.set = entry.set.union(&b.set);
                        b.api_version = version;
                        b.time = entry.time.clone();
                    }
                    if key != bucket {
                        self.map.remove(&key);
                    }
                    length -= 1;
                }
                None => {
                    first_of_version.insert(version, key);
                }
            }
        }
    }
}

/// Seconds since the epoch of an RFC 3339 timestamp; 0 when absent or unparsable (upstream
/// sorts entries without time first).
pub(crate) fn unix_seconds(t: Option<&str>) -> i64 {
    t.and_then(parse_rfc3339).unwrap_or(0)
}

fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + min * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-03-01T12:30:15Z"), Some(1_709_296_215));
        assert_eq!(
            parse_rfc3339("2024-03-01T13:30:15.123+01:00"),
            Some(1_709_296_215)
        );
        assert_eq!(parse_rfc3339("garbage"), None);
    }

    #[test]
    fn identifiers_match_upstream() {
        assert_eq!(
            ManagerKey::new("kubectl", Operation::Apply, "v1", "").identifier(),
            r#"{"manager":"kubectl","operation":"Apply"}"#
        );
        assert_eq!(
            ManagerKey::new("m", Operation::Update, "apps/v1", "status").identifier(),
            r#"{"manager":"m","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
    }
}
