//! The YAML stream `kubectl kustomize` prints, byte for byte.
//!
//! kustomize prints each resource as `yaml.JSONToYAML(resource.MarshalJSON())`
//! (`kubernetes-sigs/kustomize api/resource/resource.go` `AsYAML`, joined by `---\n` in
//! `api/resmap/reswrangler.go` `AsYaml`: no leading and no trailing separator). `JSONToYAML`
//! (`kubernetes-sigs/yaml`) re-reads the JSON with go-yaml **v2** and marshals it again with
//! go-yaml v2's libyaml-derived emitter: so the output follows v2's rules, not v3's — YAML 1.1
//! booleans (`yes`, `on`, `y`, …) and timestamps are quoted, map keys are in v2's "natural"
//! order (digit runs compared as numbers), and lines are folded at 80 columns.
//!
//! This module re-implements the parts of that emitter a JSON value reaches
//! (`go-yaml/yaml` v2 `encode.go`, `emitterc.go`, `resolve.go`, `sorter.go`).

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// The objects as one stream, each document separated from the next by `---\n`.
pub fn to_string(objects: &[Value]) -> String {
    let mut out = String::new();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&value_to_string(object));
    }
    out
}

/// One value as one document (go-yaml v2's `yaml.Marshal`), ending in a newline.
pub fn value_to_string(value: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
        mapping_context: false,
        simple_key_context: false,
    };
    e.node(value, false, false);
    // The implicit document end.
    e.write_indent();
    e.out
}

/// go-yaml v2's emitter defaults: `best_indent` 2 and `best_width` 80.
const BEST_INDENT: i64 = 2;
const BEST_WIDTH: usize = 80;

/// The state of libyaml's emitter that the output depends on (`yaml_emitter_t`).
struct Emitter {
    out: String,
    /// Characters (not bytes) written on the current line.
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    /// The last character written is whitespace.
    whitespace: bool,
    /// Only indentation has been written on the current line.
    indention: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

/// The scalar styles of libyaml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// A line break character of the value: `\n` is written as the configured break, others
    /// as themselves (they still end the line for the column count).
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// `yaml_emitter_emit_node` for one value, with its context.
    fn node(&mut self, value: &Value, mapping: bool, simple_key: bool) {
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match value {
            Value::Object(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(map) => self.block_mapping(map),
            Value::Array(items) => self.block_sequence(items),
            Value::String(s) => {
                let style = if s.contains('\n') {
                    Style::Literal
                } else if resolves_to_string(s) && !is_base60_float(s) {
                    Style::Plain
                } else {
                    Style::DoubleQuoted
                };
                self.scalar(s, style);
            }
            Value::Null => self.scalar("null", Style::Plain),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain),
            Value::Number(n) => self.scalar(&format_number(n), Style::Plain),
        }
    }

    /// An empty map or list, which libyaml writes in flow style: `{}`, `[]`.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Value]) {
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, false, false);
        }
        self.pop_indent();
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| natural_order(a, b));
        for key in keys {
            self.write_indent();
            let analysis = analyze(key);
            // `yaml_emitter_check_simple_key`: one line of at most 128 bytes.
            let simple = !analysis.multiline && key.len() <= 128;
            let key_value = Value::String(key.clone());
            if simple {
                self.node(&key_value, true, true);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.node(&key_value, true, false);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            if let Some(value) = map.get(key) {
                self.node(value, true, false);
            }
        }
        self.pop_indent();
    }

    /// `yaml_emitter_emit_scalar`: the style chosen against what the value allows, then
    /// written one indentation step in.
    fn scalar(&mut self, value: &str, requested: Style) {
        let a = analyze(value);
        let style = self.select_style(value, &a, requested);
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    /// `yaml_emitter_select_scalar_style`.
    fn select_style(&self, value: &str, a: &Analysis, requested: Style) -> Style {
        let mut style = requested;
        if self.simple_key_context && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain {
            // Only empty collections are written in flow style, so scalars are always in
            // block context.
            if !a.block_plain_allowed {
                style = Style::SingleQuoted;
            }
            if value.is_empty() && self.simple_key_context {
                style = Style::SingleQuoted;
            }
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || self.simple_key_context) {
            style = Style::DoubleQuoted;
        }
        style
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        // libyaml's `is_bom` looks at the start of the value whatever the position: a value
        // starting with a BOM has every character escaped.
        let bom = chars.first() == Some(&'\u{FEFF}');
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{07}' => self.put('a'),
                    '\u{08}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{0B}' => self.put('v'),
                    '\u{0C}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1B}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{A0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let v = c as u32;
                        let (letter, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for d in format!("{v:0digits$X}").chars() {
                            self.put(d);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // `yaml_emitter_write_block_scalar_hints`: an indentation indicator when the value
        // starts with a space or a break, and the chomping indicator its end asks for.
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// What `yaml_emitter_analyze_scalar` finds out about a value: which styles can hold it.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str) -> Analysis {
    let chars: Vec<char> = value.chars().collect();
    if chars.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    // Only block context matters here (see `select_style`), so flow indicators are not
    // tracked.
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        let indicator = if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' | '-' => followed_by_whitespace,
                _ => false,
            }
        } else {
            match c {
                ':' => followed_by_whitespace,
                '#' => preceded_by_whitespace,
                _ => false,
            }
        };
        block_indicators |= indicator;
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = c == ' ' || c == '\t' || is_break(c);
    }

    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable`: characters outside the Basic Multilingual Plane are not.
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        && c != '\u{FEFF}'
}

/// What a plain (unquoted) scalar reads back as under go-yaml's resolution (`resolve.go`
/// `resolve`, the same code in v2 and v3 but for v2's YAML 1.1 booleans).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plain {
    Null,
    Bool(bool),
    Int(Number),
    Float(f64),
    Timestamp,
    Str,
}

impl Plain {
    /// The YAML tag, as go-yaml names it in its errors.
    pub(crate) fn tag(&self) -> &'static str {
        match self {
            Plain::Null => "!!null",
            Plain::Bool(_) => "!!bool",
            Plain::Int(_) => "!!int",
            Plain::Float(_) => "!!float",
            Plain::Timestamp => "!!timestamp",
            Plain::Str => "!!str",
        }
    }
}

/// `s` resolved as a plain scalar: with `yaml_1_1` (go-yaml v2) `y`, `yes`, `on`, `n`, `no`,
/// `off` and their capitalised forms are booleans too.
pub(crate) fn resolve(s: &str, yaml_1_1: bool) -> Plain {
    match s {
        "true" | "True" | "TRUE" => return Plain::Bool(true),
        "false" | "False" | "FALSE" => return Plain::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Plain::Null,
        ".nan" | ".NaN" | ".NAN" => return Plain::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Plain::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Plain::Float(f64::NEG_INFINITY),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" if yaml_1_1 => {
            return Plain::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" if yaml_1_1 => {
            return Plain::Bool(false);
        }
        _ => {}
    }
    match s.as_bytes()[0] {
        b'.' => go_parse_float(s).map_or(Plain::Str, Plain::Float),
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return Plain::Timestamp;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if let Some(n) = go_parse_int(&plain) {
                return Plain::Int(n);
            }
            match go_parse_float(&plain) {
                Some(f) if is_yaml_style_float(&plain) => Plain::Float(f),
                _ => Plain::Str,
            }
        }
        _ => Plain::Str,
    }
}

/// Whether `s`, written plain, would read back as a string under go-yaml v2's YAML 1.1
/// resolution: if not, the emitter quotes it.
fn resolves_to_string(s: &str) -> bool {
    resolve(s, true) == Plain::Str
}

/// The value go-yaml v3 decodes an untagged plain scalar `s` to, as JSON (kyaml's view of a
/// node it created without a tag): timestamps stay strings, as v3 leaves them when decoding
/// into an interface; so do infinities and NaN, which JSON cannot hold.
pub(crate) fn plain_value(s: &str) -> Value {
    match resolve(s, false) {
        Plain::Null => Value::Null,
        Plain::Bool(b) => Value::Bool(b),
        Plain::Int(n) => Value::Number(n),
        Plain::Float(f) => {
            Number::from_f64(f).map_or_else(|| Value::String(s.into()), Value::Number)
        }
        Plain::Timestamp | Plain::Str => Value::String(s.to_owned()),
    }
}

/// `strconv.ParseInt(s, 0, 64)`, else `strconv.ParseUint(s, 0, 64)` (which takes no sign):
/// `0x`/`0o`/`0b` or a leading `0` (octal) after an optional sign, or decimal.
fn go_parse_int(s: &str) -> Option<Number> {
    let (sign, body) = match s.as_bytes().first() {
        Some(b'+') => (Some(false), &s[1..]),
        Some(b'-') => (Some(true), &s[1..]),
        _ => (None, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = u128::from_str_radix(digits, radix).ok()?;
    match sign {
        Some(true) if v <= 1 << 63 => Some(Number::from((-(v as i128)) as i64)),
        Some(true) => None,
        _ if v <= i64::MAX as u128 => Some(Number::from(v as i64)),
        None if v <= u128::from(u64::MAX) => Some(Number::from(v as u64)),
        _ => None,
    }
}

/// go-yaml v2's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.ParseFloat(s, 64)` for the decimal forms `resolve` reaches it with (`.5`, `1e3`,
/// `-1.`): no underscores, and out of range is an error.
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let b = body.as_bytes();
    let mut i = 0;
    let mut mantissa = 0;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        mantissa += 1;
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            mantissa += 1;
            i += 1;
        }
    }
    if mantissa == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// go-yaml v2's `parseTimestamp`: `2006-1-2`, `2006-1-2T15:4:5.999999999Z07:00` (`T` or `t`)
/// and `2006-1-2 15:4:5.999999999`, as Go's `time.Parse` reads those layouts.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut i = 5;
    // One or two digits, in range.
    let num = |i: &mut usize, max: u32| -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < 2 && b[*i].is_ascii_digit() {
            *i += 1;
        }
        let v: u32 = s.get(start..*i)?.parse().ok()?;
        (*i > start && v <= max).then_some(v)
    };
    let Some(month) = num(&mut i, 12).filter(|m| *m >= 1) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 31) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days_in_month {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    if num(&mut i, 23).is_none() || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if num(&mut i, 59).is_none() || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if num(&mut i, 59).is_none() {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match &b[i..] {
        [b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-')
                && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
                && (*h1 - b'0') * 10 + (*h2 - b'0') <= 24
                && (*m1 - b'0') * 10 + (*m2 - b'0') <= 60
        }
        _ => false,
    }
}

/// go-yaml v2's `isBase60Float`: `1:20` and the like are quoted for YAML 1.1 readers.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&first) = b.first() else {
        return false;
    };
    if !(first == b'+' || first == b'-' || first.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let mut i = usize::from(first == b'+' || first == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        match (b.get(i), b.get(i + 1)) {
            (Some(b'0'..=b'5'), Some(d)) if d.is_ascii_digit() => i += 2,
            (Some(d), _) if d.is_ascii_digit() => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// A JSON number as it comes out of Go's `json.Marshal` re-read by go-yaml v2: integral
/// values print as integers while they fit 64 bits, other floats with Go's `%g` (shortest,
/// exponent form below 1e-4 and from 1e6 up: `1.5`, `1e-06`, `1.2345675e+06`).
fn format_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f.abs() < 9.2e18 {
            return (f as i64).to_string();
        }
        if f > 0.0 && f < 1.8e19 {
            return (f as u64).to_string();
        }
    }
    go_format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` for a finite value.
pub(crate) fn go_format_g(f: f64) -> String {
    // Rust's `{:e}` gives the shortest digits that read back as `f`, as Go's does.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{point}{rest}e{esign}{:02}", exp.abs());
    }
    let dp = exp + 1;
    let body = if dp <= 0 {
        format!("0.{}{digits}", "0".repeat((-dp) as usize))
    } else if dp as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(dp as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(dp as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// go-yaml v2's map key order (`sorter.go` `keyList.Less`): runs of digits compare as
/// numbers, and a letter sorts after a non-letter.
fn natural_order(a: &str, b: &str) -> Ordering {
    if less(a, b) {
        Ordering::Less
    } else if less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Expected texts are `kubectl kustomize` (v5.5) output for the same values.
    fn check(value: Value, expected: &str) {
        assert_eq!(value_to_string(&value), expected);
    }

    #[test]
    fn documents_are_separated_without_leading_or_trailing_separator() {
        let objects = [json!({"kind": "A"}), json!({"kind": "B"})];
        assert_eq!(to_string(&objects), "kind: A\n---\nkind: B\n");
        assert_eq!(to_string(&[]), "");
    }

    #[test]
    fn yaml_1_1_booleans_nulls_numbers_and_timestamps_are_double_quoted() {
        check(
            json!({"a": "yes", "e": "on", "n": "n", "y": "y", "f": "~", "g": "", "m": "null",
                   "c": "123", "k": "1.5", "l": "1e3", "t": "0x1F", "u": "0o17", "v": "017",
                   "w": "1_000", "x": "+1", "z": ".5", "p": "1.", "b": "0b101", "i": "-.inf",
                   "d": "2001-12-14", "h": "1:20", "q": "2001-12-14t21:59:43.10-05:00"}),
            "a: \"yes\"\nb: \"0b101\"\nc: \"123\"\nd: \"2001-12-14\"\ne: \"on\"\nf: \"~\"\n\
             g: \"\"\nh: \"1:20\"\ni: \"-.inf\"\nk: \"1.5\"\nl: \"1e3\"\nm: \"null\"\n\
             \"n\": \"n\"\np: \"1.\"\nq: \"2001-12-14t21:59:43.10-05:00\"\nt: \"0x1F\"\n\
             u: \"0o17\"\nv: \"017\"\nw: \"1_000\"\nx: \"+1\"\n\"y\": \"y\"\nz: \".5\"\n",
        );
    }

    #[test]
    fn look_alikes_that_are_strings_stay_plain() {
        check(
            json!({"a": "nul", "b": "NaN", "c": "<<", "d": "=x", "e": ":x", "f": "a# b"}),
            "a: nul\nb: NaN\nc: <<\nd: =x\ne: :x\nf: a# b\n",
        );
    }

    #[test]
    fn indicators_and_edge_spaces_are_single_quoted() {
        check(
            json!({"a": " lead", "b": "a: b", "c": "#x", "d": "trail ", "e": "-", "f": "'x",
                   "g": "\"x", "h": "a #b", "i": "- x", "j": "x:", "k": "@at"}),
            "a: ' lead'\nb: 'a: b'\nc: '#x'\nd: 'trail '\ne: '-'\nf: '''x'\ng: '\"x'\n\
             h: 'a #b'\ni: '- x'\nj: 'x:'\nk: '@at'\n",
        );
    }

    #[test]
    fn control_and_astral_characters_are_escaped_in_double_quotes() {
        check(
            json!({"a": "tab\there", "b": "x\u{1}y", "c": "a\r\nb", "d": "é", "e": "😀 smile"}),
            "a: \"tab\\there\"\nb: \"x\\x01y\"\nc: \"a\\r\\nb\"\nd: é\ne: \"\\U0001F600 smile\"\n",
        );
    }

    #[test]
    fn a_line_separator_breaks_a_single_quoted_line() {
        check(
            json!({"data": {"a": "l\u{2028}x"}}),
            "data:\n  a: 'l\u{2028}    x'\n",
        );
    }

    #[test]
    fn multi_line_strings_are_literal_blocks_with_their_chomping() {
        check(
            json!({"b": "hello\nworld\n", "c": "a\nb\n\n", "d": " a\nb", "e": "\nx",
                   "f": "\n", "g": "line \nnext", "h": "line\n next"}),
            "b: |\n  hello\n  world\nc: |+\n  a\n  b\n\nd: |2-\n   a\n  b\ne: |2-\n\n  x\n\
             f: |2+\n\ng: \"line \\nnext\"\nh: |-\n  line\n   next\n",
        );
    }

    /// Nested three deep, as in the kubectl run the expected text comes from.
    fn nested(inner: Value) -> Value {
        json!({"a": {"b": {"c": inner}}})
    }

    #[test]
    fn long_lines_fold_at_80_columns_but_literal_blocks_do_not() {
        let words = "word word word word word word word word word word word word word word \
                     word word word word word word word word word";
        check(
            nested(json!({"long": words, "lit": format!("first line\n{words}\n")})),
            &format!(
                "a:\n  b:\n    c:\n      lit: |\n        first line\n        {words}\n      \
                 long: word word word word word word word word word word word word word word\n        \
                 word word word word word word word word word\n"
            ),
        );
    }

    #[test]
    fn lists_sit_at_their_key_and_empty_collections_are_flow() {
        check(
            json!({"spec": {"containers": [{"name": "nginx", "args": ["a", [], {}, [1, [2, 3]]],
                   "resources": {}}], "volumes": []}}),
            "spec:\n  containers:\n  - args:\n    - a\n    - []\n    - {}\n    - - 1\n      \
             - - 2\n        - 3\n    name: nginx\n    resources: {}\n  volumes: []\n",
        );
        check(json!({}), "{}\n");
    }

    #[test]
    fn numbers_print_as_go_json_then_go_yaml_would() {
        check(
            json!([
                1.5,
                1.0,
                1e6,
                1234567.5,
                0.000001,
                0.0001,
                1e21,
                1e20,
                -2.5,
                12345678901234567890u64,
                0.1,
                null,
                true
            ]),
            "- 1.5\n- 1\n- 1000000\n- 1.2345675e+06\n- 1e-06\n- 0.0001\n- 1e+21\n- 1e+20\n\
             - -2.5\n- 12345678901234567890\n- 0.1\n- null\n- true\n",
        );
    }

    #[test]
    fn keys_sort_naturally_and_odd_keys_use_complex_syntax() {
        check(
            json!({"app10": 1, "app9": 1, "app_x": 1, "appX": 1, "app-x": 1, "App": 1,
                   "a0b": 1, "a00b": 1, "a1b": 1}),
            "App: 1\na00b: 1\na0b: 1\na1b: 1\napp-x: 1\napp_x: 1\napp9: 1\napp10: 1\nappX: 1\n",
        );
        let long = "a very long key ".repeat(9);
        let long = long.trim_end();
        check(
            nested(json!({long: "v", "multi\nline key": "v", "": "empty key"})),
            "a:\n  b:\n    c:\n      \"\": empty key\n      ? a very long key a very long key \
             a very long key a very long key a very long\n        key a very long key a very \
             long key a very long key a very long key\n      : v\n      ? |-\n        multi\n        \
             line key\n      : v\n",
        );
    }
}
