//! The Kubernetes CEL library on top of CEL's standard one (kubernetes/apiserver
//! `pkg/cel/library`): lists, regular expressions, quantities, IPs and CIDRs, URLs, named
//! formats, authorization checks, and the extended string functions (cel-go `ext.Strings`, which kube-apiserver
//! includes: `lowerAscii`, `split`, `replace`, `trim`, `substring`, …).
//!
//! cel-rust's `regex` feature is left off so that `matches` is kgc's ([`regex`]): Go's RE2
//! meaning, as the schema's `pattern` has it.

use std::sync::{Arc, LazyLock};

use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use crate::Error;

pub mod authz;
mod format;
mod lists;
mod net;
mod quantity;
mod regex;
mod url;

/// The namespaces of the library's qualified functions (`format.dns1123Label()`,
/// `ip.isCanonical(…)`, `optional.of(…)`): a call on one of these names is not a variable.
pub(crate) const NAMESPACES: [&str; 3] = ["format", "ip", "optional"];

/// The environment every kgc program compiles and runs in; built once.
pub(crate) fn env() -> Result<Arc<Env>, Error> {
    static ENV: LazyLock<Result<Arc<Env>, String>> =
        LazyLock::new(|| build().map(Arc::new).map_err(|e| e.to_string()));
    ENV.clone().map_err(Error::Compile)
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    lists::declare(&mut env)?;
    regex::declare(&mut env)?;
    quantity::declare(&mut env)?;
    net::declare(&mut env)?;
    url::declare(&mut env)?;
    format::declare(&mut env)?;
    authz::declare(&mut env)?;
    Ok(env)
}

/// Declares `fn $name`, a cel-rust function running `$body` on its arguments as plain values.
macro_rules! function {
    ($(#[$attr:meta])* $name:ident, $body:expr) => {
        $(#[$attr])*
        fn $name<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            super::with_values(args, $body)
        }
    };
}
use function;

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

/// The `i`th argument as a string.
fn string_arg<'a>(args: &'a [Value], i: usize, function: &str) -> Result<&'a str, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_str()),
        _ => Err(no_such_overload(function)),
    }
}

/// The `i`th argument as an int.
fn int_arg(args: &[Value], i: usize, function: &str) -> Result<i64, ExecutionError> {
    match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        _ => Err(no_such_overload(function)),
    }
}

/// The `i`th argument as a value of one of the library's types.
fn opaque_arg<'a, T: Opaque>(
    args: &'a [Value],
    i: usize,
    function: &str,
) -> Result<&'a T, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<T>()
            .ok_or_else(|| no_such_overload(function)),
        _ => Err(no_such_overload(function)),
    }
}

/// A value of one of the library's types.
fn opaque(value: impl Opaque) -> Value {
    Value::Opaque(Arc::new(value))
}

fn no_such_overload(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "no such overload")
}

/// An error worded by the library (cel-go's `types.NewErr`): evaluation reports the message alone.
fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

#[cfg(test)]
pub(crate) mod tests {
    use cel::Value;

    use crate::Program;

    /// The value of an expression without variables.
    pub(crate) fn eval(source: &str) -> Value {
        Program::compile(source, &[])
            .and_then(|p| p.evaluate(&[]))
            .unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    /// The error an expression without variables fails with.
    pub(crate) fn eval_err(source: &str) -> String {
        match Program::compile(source, &[]).and_then(|p| p.evaluate(&[])) {
            Ok(v) => panic!("{source}: {v:?}"),
            Err(e) => e.to_string(),
        }
    }
}
