//! Byte-compatible renderings of what Go's `encoding/json` and `strconv.Quote` produce, for the
//! strings Kubernetes derives from values: `field.Error` values, `%q`-quoted names in messages,
//! `k:`/`v:` managedFields path elements and the last-applied annotation.

use std::fmt::Write as _;

use serde_json::Value;

/// Go `strconv.Quote` (what `%q` prints): printable characters stay, the rest are escaped.
pub fn go_quote(s: &str) -> String {
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
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the ASCII space, but no
/// other spaces, controls, format characters, private-use characters or noncharacters.
pub fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c as u32,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0xD800..=0xDFFF
            | 0xE000..=0xF8FF
            | 0xFDD0..=0xFDEF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE..=0xFFFF
            | 0xF0000..=0x10FFFF
    )
}

/// Go `encoding/json` output for a value: object keys sorted, HTML-sensitive characters escaped.
/// This is how `field.Error` renders a bad value that is not a plain Go string or number.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, v);
    out
}

/// [`go_json`] appended to `out`, for callers building a larger string.
pub fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                if let Some(item) = m.get(*k) {
                    write_go_json(out, item);
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string literal as Go's `encoding/json` writes it (with HTML escaping on).
pub fn json_string(s: &str) -> String {
    let mut out = String::new();
    write_json_string(&mut out, s);
    out
}

/// A JSON string literal as Go's `encoding/json` writes it (with HTML escaping on), appended
/// to `out`.
pub fn write_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\tc\u{1}\u{7f}"), r#""a\nb\tc\x01\x7f""#);
        assert_eq!(go_quote("héllo ✓"), "\"héllo ✓\"");
        assert_eq!(go_quote("\u{200b}\u{a0}"), r#""\u200b\u00a0""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
    }

    #[test]
    fn encodes_like_go() {
        let v = json!({"b": 1, "a": ["<x>", true, null], "c": {"z": "&", "y": 1.5}});
        assert_eq!(
            go_json(&v),
            r#"{"a":["\u003cx\u003e",true,null],"b":1,"c":{"y":1.5,"z":"\u0026"}}"#
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("kubectl"), "\"kubectl\"");
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
    }
}
