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
    static COMPILED: RefCell<HashMap<String, Option<Regex>>> = RefCell::new(HashMap::new());
}

/// Whether `pattern` matches anywhere in `value` (Go's `regexp.MatchString`); a pattern that
/// does not compile matches nothing.
pub fn is_match(pattern: &str, value: &str) -> bool {
    COMPILED.with(|cell| {
        let mut cache = cell.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= CAPACITY {
                cache.clear();
            }
            cache.insert(pattern.to_owned(), Regex::new(&go_ascii(pattern)).ok());
        }
        cache
            .get(pattern)
            .and_then(Option::as_ref)
            .is_some_and(|re| re.is_match(value))
    })
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
