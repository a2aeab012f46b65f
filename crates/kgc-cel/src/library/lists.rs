//! Kubernetes' list library (kubernetes/apiserver `pkg/cel/library/lists.go`): `isSorted`,
//! `sum`, `min`, `max`, `indexOf`, `lastIndexOf`.

use std::cmp::Ordering;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, Value};

use super::with_values;

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let list = |env: &mut Env, name: &str, args, f| {
        env.add_member_overload(name, &format!("list.{name}"), LIST_TYPE, args, f)
    };
    list(env, "isSorted", vec![], is_sorted)?;
    list(env, "sum", vec![], sum)?;
    list(env, "min", vec![], min)?;
    list(env, "max", vec![], max)?;
    list(env, "indexOf", vec![DYN_TYPE], index_of)?;
    list(env, "lastIndexOf", vec![DYN_TYPE], last_index_of)?;
    Ok(())
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
