//! `matches` (CEL's standard function) and Kubernetes' regex library (kubernetes/apiserver
//! `pkg/cel/library/regex.go`: `find`, `findAll`), all with Go's RE2 meaning: the schema's
//! `pattern` and these share kgc-meta's compiled, ASCII-classed expressions.

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{Env, ExecutionError, Value};
use kgc_meta::schema::compile_pattern;

use super::{error, function, int_arg, string_arg};

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload(
        "matches",
        "matches",
        vec![STRING_TYPE, STRING_TYPE],
        matches,
    )?;
    env.add_member_overload(
        "matches",
        "matches_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        matches,
    )?;
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

/// cel-go fails `matches` with the bare compile error; `find` and `findAll` prefix it
/// (`Illegal regex: …`).
fn compiled(pattern: &str, function: &str, prefix: &str) -> Result<regex::Regex, ExecutionError> {
    compile_pattern(pattern).map_err(|e| error(function, format!("{prefix}{e}")))
}

function!(matches, |args: &[Value]| {
    let text = string_arg(args, 0, "matches")?;
    let re = compiled(string_arg(args, 1, "matches")?, "matches", "")?;
    Ok(Value::Bool(re.is_match(text)))
});

function!(find, |args: &[Value]| {
    let text = string_arg(args, 0, "find")?;
    let re = compiled(string_arg(args, 1, "find")?, "find", "Illegal regex: ")?;
    Ok(Value::from(re.find(text).map_or("", |m| m.as_str())))
});

function!(find_all, |args: &[Value]| {
    let text = string_arg(args, 0, "findAll")?;
    let re = compiled(
        string_arg(args, 1, "findAll")?,
        "findAll",
        "Illegal regex: ",
    )?;
    // Go's FindAllString: a negative limit is no limit.
    let limit = if args.len() > 2 {
        int_arg(args, 2, "findAll")?
    } else {
        -1
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(Value::List(std::sync::Arc::new(
        re.find_iter(text)
            .take(limit)
            .map(|m| Value::from(m.as_str()))
            .collect(),
    )))
});

#[cfg(test)]
mod tests {
    use crate::library::tests::{eval, eval_err};
    use cel::Value;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        assert_eq!(eval("'٣'.matches('^\\\\d$')"), Value::Bool(false));
        assert_eq!(eval("'7'.matches('^\\\\d$')"), Value::Bool(true));
        assert_eq!(eval("matches('é', '^\\\\w$')"), Value::Bool(false));
        assert_eq!(eval("'a1'.matches('^[a-z][0-9]$')"), Value::Bool(true));
        assert_eq!(
            eval_err("'a'.matches('(a')"),
            "error parsing regexp: missing closing ): `(a`"
        );
    }

    /// kubernetes/apiserver `pkg/cel/library/library_compatibility_test.go` and the library's
    /// documented examples.
    #[test]
    fn find_and_find_all() {
        assert_eq!(eval("'abc 123'.find('[0-9]+')"), Value::from("123"));
        assert_eq!(eval("'abc 123'.find('xyz')"), Value::from(""));
        assert_eq!(
            eval("'123 abc 456'.findAll('[0-9]+') == ['123', '456']"),
            Value::Bool(true)
        );
        assert_eq!(
            eval("'123 abc 456'.findAll('[0-9]+', 1) == ['123']"),
            Value::Bool(true)
        );
        assert_eq!(
            eval("'123 abc 456'.findAll('xyz') == []"),
            Value::Bool(true)
        );
        assert_eq!(eval("'a b'.findAll('\\\\w', 0) == []"), Value::Bool(true));
        assert_eq!(
            eval_err("'x'.find('[')"),
            "Illegal regex: error parsing regexp: missing closing ]: `[`"
        );
    }
}
