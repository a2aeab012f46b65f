//! The Kubernetes CEL library on top of CEL's standard one (kubernetes/apiserver
//! `pkg/cel/library`): the list functions (`lists.go`: `isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf`), and the extended string functions (cel-go `ext.Strings`, which
//! kube-apiserver includes: `lowerAscii`, `split`, `replace`, `trim`, `substring`, …).
//!
//! `matches` is cel-rust's, on the `regex` crate: unlike Go's RE2 (and unlike the schema's
//! `pattern`, see kgc-meta `schema::go_ascii`), its `\d`, `\w` and `\s` also match non-ASCII
//! characters; cel-rust declares it in its standard library, which cannot be overridden.

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, Value};

use crate::Error;

/// The environment every kgc program compiles and runs in; built once.
pub(crate) fn env() -> Result<Arc<Env>, Error> {
    static ENV: LazyLock<Result<Arc<Env>, String>> =
        LazyLock::new(|| build().map(Arc::new).map_err(|e| e.to_string()));
    ENV.clone().map_err(Error::Compile)
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    let list = |env: &mut Env, name: &str, args, f| {
        env.add_member_overload(name, &format!("list.{name}"), LIST_TYPE, args, f)
    };
    list(&mut env, "isSorted", vec![], is_sorted)?;
    list(&mut env, "sum", vec![], sum)?;
    list(&mut env, "min", vec![], min)?;
    list(&mut env, "max", vec![], max)?;
    list(&mut env, "indexOf", vec![DYN_TYPE], index_of)?;
    list(&mut env, "lastIndexOf", vec![DYN_TYPE], last_index_of)?;
    Ok(env)
}

/// Runs `f` on the arguments as plain values.
fn with_values<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&[Value]) -> Result<Value, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let values = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let out: Box<dyn cel::common::value::Val> = f(&values)?.try_into()?;
    Ok(CowVal::Owned(out))
}

fn items<'a>(args: &'a [Value], function: &str) -> Result<&'a [Value], ExecutionError> {
    match args.first() {
        Some(Value::List(items)) => Ok(items.as_slice()),
        _ => Err(ExecutionError::function_error(
            function,
            "receiver is not a list",
        )),
    }
}

/// CEL's ordering of two values of one type; values of different types do not compare.
fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| ExecutionError::ValuesNotComparable(a.clone(), b.clone()))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| {
        let items = items(args, "isSorted")?;
        for pair in items.windows(2) {
            if compare(&pair[0], &pair[1])? == Ordering::Greater {
                return Ok(Value::Bool(false));
            }
        }
        Ok(Value::Bool(true))
    })
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| {
        let items = items(args, "sum")?;
        let overflow = || ExecutionError::function_error("sum", "integer overflow");
        let Some(first) = items.first() else {
            return Ok(Value::Int(0));
        };
        let mut total = match first {
            Value::Int(_) | Value::UInt(_) | Value::Float(_) => first.clone(),
            other => return Err(ExecutionError::unsupported_target_type(other.clone())),
        };
        for item in &items[1..] {
            total = match (&total, item) {
                (Value::Int(a), Value::Int(b)) => {
                    Value::Int(a.checked_add(*b).ok_or_else(overflow)?)
                }
                (Value::UInt(a), Value::UInt(b)) => {
                    Value::UInt(a.checked_add(*b).ok_or_else(overflow)?)
                }
                (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
                (_, other) => return Err(ExecutionError::unsupported_target_type(other.clone())),
            };
        }
        Ok(total)
    })
}

fn extreme(args: &[Value], function: &str, keep: Ordering) -> Result<Value, ExecutionError> {
    let items = items(args, function)?;
    let Some(mut best) = items.first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    for item in &items[1..] {
        if compare(item, best)? == keep {
            best = item;
        }
    }
    Ok(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| extreme(args, "min", Ordering::Less))
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| extreme(args, "max", Ordering::Greater))
}

fn position(args: &[Value], function: &str, last: bool) -> Result<Value, ExecutionError> {
    let items = items(args, function)?;
    let wanted = args
        .get(1)
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let found = if last {
        items.iter().rposition(|i| i == wanted)
    } else {
        items.iter().position(|i| i == wanted)
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| position(args, "indexOf", false))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_values(args, |args| position(args, "lastIndexOf", true))
}
