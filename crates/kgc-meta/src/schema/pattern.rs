//! Compiled regular expressions, kept per thread: a list of a thousand items under one
//! `pattern` compiles it once, not a thousand times.
//!
//! kube-apiserver matches with Go's `regexp` (RE2), whose Perl classes `\d`, `\w`, `\s` and
//! the word boundary `\b` are ASCII-only, while the `regex` crate's are Unicode: `^\d$`
//! matches `"٣"` here unless the pattern is first rewritten into Go's meaning ([`go_ascii`]).

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;

/// Patterns kept at most; past it the cache starts over, so a stream of distinct patterns (one
/// per CRD) cannot grow it without bound.
const CAPACITY: usize = 256;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
}

/// `pattern` compiled with Go's meaning of the Perl classes ([`go_ascii`]), from this thread's
/// cache; when it does not compile, Go's words for why (`error parsing regexp: missing closing
/// ): `(a``). CRD `pattern`s and CEL's `matches`, `find` and `findAll` all match through it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    COMPILED.with(|cell| {
        let mut cache = cell.borrow_mut();
        if let Some(compiled) = cache.get(pattern) {
            return compiled.clone();
        }
        if cache.len() >= CAPACITY {
            cache.clear();
        }
        let compiled = Regex::new(&go_ascii(pattern)).map_err(|e| go_regexp_error(&e, pattern));
        cache.insert(pattern.to_owned(), compiled.clone());
        compiled
    })
}

/// Whether `pattern` matches anywhere in `value` (Go's `regexp.MatchString`); a pattern that
/// does not compile matches nothing.
pub fn is_match(pattern: &str, value: &str) -> bool {
    compile(pattern).is_ok_and(|re| re.is_match(value))
}

/// A regex compile error in Go's `regexp/syntax` words where the two agree on the cause
/// (`error parsing regexp: missing closing ): `(a``); otherwise the `regex` crate's own reason.
pub(crate) fn go_regexp_error(e: &regex::Error, pattern: &str) -> String {
    let text = e.to_string();
    let reason = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(text.as_str());
    let go = if reason.contains("repetition operator missing expression") {
        "missing argument to repetition operator"
    } else if reason.contains("unclosed group") {
        "missing closing )"
    } else if reason.contains("unopened group") {
        "unexpected )"
    } else if reason.contains("unclosed character class") {
        "missing closing ]"
    } else if reason.contains("not supported") {
        "invalid or unsupported Perl syntax"
    } else if reason.contains("escape") {
        "invalid escape sequence"
    } else if reason.contains("invalid character class range") {
        "invalid character class range"
    } else {
        reason
    };
    format!("error parsing regexp: {go}: `{pattern}`")
}

/// `pattern` with Go's ASCII meaning of the Perl classes (Go `regexp/syntax` `perl_groups.go`):
/// `\d` is `[0-9]`, `\w` `[0-9A-Za-z_]`, `\s` `[\t\n\f\r ]` and their negations; `\b`/`\B`
/// the ASCII word boundary. Inside a bracket the class is nested (`[a\d]` → `[a[0-9]]`), which
/// the `regex` crate reads as the union. Every other escape is kept as written.
pub fn go_ascii(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push(c);
            break;
        };
        match next {
            'd' => out.push_str("[0-9]"),
            'D' => out.push_str("[^0-9]"),
            'w' => out.push_str("[0-9A-Za-z_]"),
            'W' => out.push_str("[^0-9A-Za-z_]"),
            's' => out.push_str("[\\t\\n\\f\\r ]"),
            'S' => out.push_str("[^\\t\\n\\f\\r ]"),
            'b' => out.push_str("(?-u:\\b)"),
            'B' => out.push_str("(?-u:\\B)"),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        assert!(is_match("^\\d$", "7"));
        assert!(!is_match("^\\d$", "٣"));
        assert!(!is_match("^\\w+$", "é"));
        assert!(is_match("^\\w+$", "a_1"));
        assert!(!is_match("^\\s$", "\u{00a0}"));
        assert!(is_match("^\\S$", "é"));
        assert!(is_match("^[a\\d]+$", "a7"));
        assert!(!is_match("^[\\d]$", "٣"));
        assert!(is_match("^[^\\d]$", "x"));
        assert!(is_match("\\bab\\b", "x ab y"));
        assert!(is_match("^\\\\d$", "\\d"));
        assert!(is_match("^\\p{Nd}$", "٣"));
    }
}
