//! Compiled regular expressions, kept per thread: a list of a thousand items under one
//! `pattern` compiles it once, not a thousand times.

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
            cache.insert(pattern.to_owned(), Regex::new(pattern).ok());
        }
        cache
            .get(pattern)
            .and_then(Option::as_ref)
            .is_some_and(|re| re.is_match(value))
    })
}
