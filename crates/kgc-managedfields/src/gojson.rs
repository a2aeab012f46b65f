//! Byte-compatible renderings of what Go's `encoding/json` and `fmt` produce for the few strings
//! Kubernetes derives from values: `k:`/`v:` path elements, manager identifiers, the
//! last-applied annotation and the `%q`-quoted names in conflict messages.

use serde_json::Value;
use std::fmt::Write as _;

/// Encodes `v` as Go's `json.Marshal` would for an `interface{}` decoded from JSON: compact,
/// object keys sorted, and `<`, `>`, `&`, U+2028, U+2029 escaped.
pub(crate) fn encode(v: &Value) -> String {
    let mut out = String::new();
    encode_into(&mut out, v);
    out
}

pub(crate) fn encode_into(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => encode_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_into(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_str(out, k);
                out.push(':');
                encode_into(out, &map[k.as_str()]);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal, escaped the way Go's encoder escapes it.
pub(crate) fn encode_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `strconv.Quote` / `fmt.Sprintf("%q", s)`, for the printable strings Kubernetes names
/// contain.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_like_go() {
        let v = json!({"b": 1, "a": ["<x>", true, null], "c": {"z": "&", "y": 1.5}});
        assert_eq!(
            encode(&v),
            r#"{"a":["\u003cx\u003e",true,null],"b":1,"c":{"y":1.5,"z":"\u0026"}}"#
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("kubectl"), "\"kubectl\"");
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(quote("\u{1}"), "\"\\x01\"");
    }
}
