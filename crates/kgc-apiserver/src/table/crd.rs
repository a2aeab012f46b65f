//! Custom resources: a CRD's `additionalPrinterColumns`, evaluated with the JSONPath subset
//! apiextensions-apiserver pkg/registry/customresource/tableconvertor uses.

use jiff::Timestamp;
use kgc_meta::ResourceInfo;
use serde_json::{Value, json};

use super::cell::*;
use super::column::{CREATED_DOC, NAME};
use super::duration::human_duration;

pub(super) fn custom_columns(info: &ResourceInfo) -> Vec<Value> {
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

pub(super) fn custom_cells(info: &ResourceInfo, obj: &Value, now: Timestamp) -> Vec<Value> {
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
pub(super) struct JsonPath(Vec<Step>);

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
}
