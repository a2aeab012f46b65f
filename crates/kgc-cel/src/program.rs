//! One compiled CEL expression: its declared variables checked at compile time, as cel-go's
//! checker refuses an undeclared reference, its cost estimated, and its evaluation.

use std::collections::BTreeSet;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::{Context, ExecutionError, Value};

use crate::cost::{self, Shape};
use crate::{Error, PER_CALL_LIMIT, library};

/// Identifiers every program may use without declaring them: CEL's type names.
const TYPE_NAMES: [&str; 11] = [
    "bool",
    "bytes",
    "double",
    "int",
    "uint",
    "string",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// A compiled expression and the variables it was declared with.
#[derive(Debug)]
pub struct Program {
    source: String,
    inner: cel::Program,
    used: BTreeSet<String>,
}

impl Program {
    /// Compiles `source` with the variables it may read. A syntax error or a reference to
    /// anything else fails with cel-go's words (`ERROR: <input>:1:1: undeclared reference to
    /// 'x' (in container '')`).
    pub fn compile(source: &str, variables: &[&str]) -> Result<Self, Error> {
        let env = library::env()?;
        let inner = env
            .compile(source)
            .map_err(|e| Error::Compile(e.to_string()))?;
        let mut used = BTreeSet::new();
        let mut bound: Vec<String> = Vec::new();
        let mut undeclared = None;
        references(
            inner.expression(),
            &mut bound,
            &mut |name: &str, id: u64| {
                if variables.contains(&name) {
                    used.insert(name.to_owned());
                } else if !TYPE_NAMES.contains(&name) && undeclared.is_none() {
                    undeclared = Some((name.to_owned(), id));
                }
            },
        );
        if let Some((name, id)) = undeclared {
            let (line, column, text) = location(source, inner.source_info().offset_for(id));
            return Err(Error::Compile(format!(
                "ERROR: <input>:{line}:{}: undeclared reference to '{name}' (in container '')\n | {text}\n | {}^",
                column + 1,
                ".".repeat(column),
            )));
        }
        Ok(Self {
            source: source.to_owned(),
            inner,
            used,
        })
    }

    /// The source it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression reads `variable` (a transition rule reads `oldSelf`).
    pub fn uses(&self, variable: &str) -> bool {
        self.used.contains(variable)
    }

    /// The type of the result when the expression's outermost form decides it (a literal, a
    /// list or map, arithmetic or string concatenation of literals). cel-rust has no type
    /// checker; this catches what cel-go's would refuse as "must evaluate to bool" in the
    /// obvious cases, and evaluation refuses the rest.
    pub fn obvious_type(&self) -> Option<&'static str> {
        literal_type(&self.inner.expression().expr)
    }

    /// The worst-case cost of one evaluation with variables of these shapes.
    pub fn estimate(&self, variables: &[(&str, Shape)]) -> u64 {
        let mut scope: Vec<(String, Shape)> = variables
            .iter()
            .map(|(n, s)| ((*n).to_owned(), s.clone()))
            .collect();
        cost::estimate(self.inner.expression(), &mut scope).0
    }

    /// Charges one evaluation with variables of these shapes to `budget`, as upstream charges
    /// an evaluation's actual cost (cel-rust counts none as it goes, so it is estimated on the
    /// actual sizes): over [`PER_CALL_LIMIT`] the call is cancelled ([`Error::CostLimit`],
    /// charged the limit, where cel-go stops), and a charge over what is left of `budget` spends
    /// it ([`Error::OutOfBudget`]). Nothing is to be evaluated after an error.
    pub fn charge(&self, shapes: &[(&str, Shape)], budget: &mut u64) -> Result<(), Error> {
        let cost = self.estimate(shapes);
        let charged = cost.min(PER_CALL_LIMIT);
        if charged > *budget {
            *budget = 0;
            return Err(Error::OutOfBudget);
        }
        *budget -= charged;
        if cost > PER_CALL_LIMIT {
            return Err(Error::CostLimit);
        }
        Ok(())
    }

    /// Evaluates the expression as admission runs it, charged first to `budget` (see
    /// [`Self::charge`]) on the shapes of the variables it reads.
    pub fn evaluate_within(
        &self,
        variables: &[(&str, Value)],
        budget: &mut u64,
    ) -> Result<Value, Error> {
        let shapes: Vec<(&str, Shape)> = variables
            .iter()
            .filter(|(name, _)| self.used.contains(*name))
            .map(|(name, value)| (*name, Shape::of_cel(value)))
            .collect();
        self.charge(&shapes, budget)?;
        self.evaluate(variables)
    }

    /// Evaluates the expression with these variable values.
    pub fn evaluate(&self, variables: &[(&str, Value)]) -> Result<Value, Error> {
        let mut context = Context::with_env(library::env()?);
        for (name, value) in variables {
            context.add_variable_from_value(*name, value.clone());
        }
        self.inner.execute(&context).map_err(evaluation_error)
    }
}

fn literal_type(expr: &Expr) -> Option<&'static str> {
    use cel::common::ast::LiteralValue as L;
    match expr {
        Expr::Literal(l) => Some(match l {
            L::Boolean(_) => "bool",
            L::Int(_) => "int",
            L::UInt(_) => "uint",
            L::Double(_) => "double",
            L::String(_) => "string",
            L::Bytes(_) => "bytes",
            L::Null => "null_type",
        }),
        Expr::List(_) => Some("list(dyn)"),
        Expr::Map(_) => Some("map(dyn, dyn)"),
        Expr::Call(c)
            if matches!(c.func_name.as_str(), "_+_" | "_-_" | "_*_" | "_/_" | "_%_")
                && c.target.is_none() =>
        {
            let types: Vec<_> = c.args.iter().map(|a| literal_type(&a.expr)).collect();
            types
                .first()
                .copied()
                .flatten()
                .filter(|t| types.iter().all(|x| x == &Some(*t)))
        }
        _ => None,
    }
}

/// cel-go's words for an evaluation error where they differ from cel-rust's.
fn evaluation_error(e: ExecutionError) -> Error {
    Error::Evaluation(match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        // The library's own words (cel-go's `types.NewErr`), without cel-rust's prefix.
        ExecutionError::FunctionError { message, .. } => message,
        ExecutionError::IndexOutOfBounds(i) => {
            format!("index out of bounds: {}", crate::value::to_json(&i))
        }
        other => other.to_string(),
    })
}

/// Calls `found` with each free identifier of `expr` (those no comprehension binds).
fn references(expr: &IdedExpr, bound: &mut Vec<String>, found: &mut impl FnMut(&str, u64)) {
    match &expr.expr {
        Expr::Ident(name) => {
            if !bound.iter().any(|b| b == name) {
                found(name, expr.id);
            }
        }
        Expr::Select(s) => references(&s.operand, bound, found),
        Expr::Call(c) => {
            // `format.dns1123Label()`: the target names a namespace of functions.
            let namespace = c.target.as_deref().filter(|t| {
                matches!(&t.expr, Expr::Ident(n) if library::NAMESPACES.contains(&n.as_str())
                    && !bound.iter().any(|b| b == n))
            });
            let target = c.target.as_deref().filter(|_| namespace.is_none());
            for e in target.into_iter().chain(c.args.iter()) {
                references(e, bound, found);
            }
        }
        Expr::List(l) => {
            for e in &l.elements {
                references(e, bound, found);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    references(&e.key, bound, found);
                    references(&e.value, bound, found);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    references(&f.value, bound, found);
                }
            }
        }
        Expr::Comprehension(c) => {
            references(&c.iter_range, bound, found);
            references(&c.accu_init, bound, found);
            let depth = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            references(&c.loop_cond, bound, found);
            references(&c.loop_step, bound, found);
            references(&c.result, bound, found);
            bound.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The 1-based line, 0-based column and text of the line at a character offset.
fn location(source: &str, offset: Option<(u32, u32)>) -> (usize, usize, String) {
    let start = offset.map_or(0, |(s, _)| s as usize);
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in source.chars().enumerate().take(start) {
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let text = source
        .chars()
        .skip(line_start)
        .take_while(|c| *c != '\n')
        .collect();
    (line, start - line_start, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(source: &str) -> Value {
        Program::compile(source, &[])
            .and_then(|p| p.evaluate(&[]))
            .unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    /// The cost of an evaluation is priced on its actual inputs before it runs: over the
    /// per-call limit it is cel-go's cancellation, over what is left of the budget the budget's
    /// error, and otherwise the budget pays for it.
    #[test]
    fn evaluations_within_their_cost_limits() {
        let p = Program::compile("object.all(x, object.all(y, x + y > 0))", &["object"]).unwrap();
        let list = |n: i64| Value::List(std::sync::Arc::new((1..=n).map(Value::Int).collect()));
        let mut budget = 1_000_000;
        assert_eq!(
            p.evaluate_within(&[("object", list(10))], &mut budget)
                .unwrap(),
            Value::Bool(true)
        );
        let spent = 1_000_000 - budget;
        assert!(spent > 100 && spent < 1_000, "{spent}");
        // Cancelled where cel-go stops: charged the limit.
        let mut budget = 10_000_000;
        let err = p
            .evaluate_within(&[("object", list(2_000))], &mut budget)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "operation cancelled: actual cost limit exceeded"
        );
        assert_eq!(budget, 9_000_000);
        let mut budget = spent - 1;
        let err = p
            .evaluate_within(&[("object", list(10))], &mut budget)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "validation failed due to running out of cost budget, no further validation rules will be run"
        );
        assert_eq!(budget, 0);
    }

    #[test]
    fn the_kubernetes_list_library() {
        assert_eq!(eval("[1, 2, 2, 3].isSorted()"), Value::Bool(true));
        assert_eq!(eval("['b', 'a'].isSorted()"), Value::Bool(false));
        assert_eq!(eval("[1, 2, 3].sum()"), Value::Int(6));
        assert_eq!(eval("[1.5, 2.0].sum()"), Value::Float(3.5));
        assert_eq!(eval("[3, 1, 2].min()"), Value::Int(1));
        assert_eq!(eval("[3, 1, 2].max()"), Value::Int(3));
        assert_eq!(eval("[1, 2, 1].indexOf(1)"), Value::Int(0));
        assert_eq!(eval("[1, 2, 1].lastIndexOf(1)"), Value::Int(2));
        assert_eq!(eval("[1, 2].indexOf(5)"), Value::Int(-1));
        assert_eq!(eval("'abc'.indexOf('c')"), Value::Int(2));
    }

    #[test]
    fn standard_functions_and_macros() {
        assert_eq!(
            eval("'abc'.startsWith('a') && 'abc'.endsWith('c') && 'abc'.contains('b')"),
            Value::Bool(true)
        );
        assert_eq!(
            eval("[1, 2, 3].all(x, x > 0) && [1, 2].exists(x, x == 2)"),
            Value::Bool(true)
        );
        assert_eq!(eval("[1, 2, 3].exists_one(x, x > 2)"), Value::Bool(true));
        assert_eq!(eval("[1, 2].map(x, x * 2) == [2, 4]"), Value::Bool(true));
        assert_eq!(
            eval("[1, 2, 3].filter(x, x > 1).size() == 2"),
            Value::Bool(true)
        );
        assert_eq!(
            eval("int('7') + 1 == 8 && string(1) == '1' && double(1) == 1.0 && uint(2) == 2u"),
            Value::Bool(true)
        );
        assert_eq!(eval("'a1'.matches('^[a-z][0-9]$')"), Value::Bool(true));
        assert_eq!(
            eval("has({'a': 1}.a) && !has({'a': 1}.b)"),
            Value::Bool(true)
        );
        assert_eq!(eval("'ABC'.lowerAscii() == 'abc'"), Value::Bool(true));
    }

    #[test]
    fn undeclared_references_do_not_compile() {
        let err = Program::compile("self.x > 0 && other", &["self"])
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "compilation failed: ERROR: <input>:1:15: undeclared reference to 'other' (in container '')\n | self.x > 0 && other\n | ..............^"
        );
        assert!(Program::compile("self.all(x, x > 0)", &["self"]).is_ok());
        assert!(Program::compile("self.x >", &["self"]).is_err());
    }

    #[test]
    fn obvious_types() {
        let t = |s: &str| {
            Program::compile(s, &["x"])
                .map(|p| p.obvious_type())
                .ok()
                .flatten()
        };
        assert_eq!(t("'a'"), Some("string"));
        assert_eq!(t("1 + 2"), Some("int"));
        assert_eq!(t("[1]"), Some("list(dyn)"));
        assert_eq!(t("true"), Some("bool"));
        assert_eq!(t("x.y"), None);
        assert_eq!(t("x + 1"), None);
    }

    #[test]
    fn cost_grows_with_nesting() {
        let p = Program::compile("self.all(x, self.all(y, x == y))", &["self"])
            .map_err(|e| e.to_string());
        let Ok(p) = p else { panic!("compile") };
        let list = |n| Shape {
            max_size: n,
            element: Some(Box::new(Shape::scalar())),
            ..Shape::default()
        };
        let small = p.estimate(&[("self", list(10))]);
        let big = p.estimate(&[("self", list(1000))]);
        assert!(small < 1_000, "{small}");
        assert!(big > 1_000_000, "{big}");
    }
}
