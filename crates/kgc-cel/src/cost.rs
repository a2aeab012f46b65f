//! Worst-case cost of a program from the sizes its inputs may have: cel-go's cost estimator
//! (`checker/cost.go`) as kube-apiserver feeds it (apiextensions-apiserver
//! `pkg/apiserver/schema/cel/model`: every string, list and map bounded by its `maxLength`,
//! `maxItems`, `maxProperties`, or else by what fits in the largest request).
//!
//! The model follows cel-go's: reading a variable or a field costs 1, a call 1 plus its
//! arguments, a string operation one tenth of the string's length, a list operation (`in`,
//! `isSorted`, `sum`, `indexOf`, equality) the list's length, and a comprehension (`all`,
//! `exists`, `map`, `filter`) its range plus, for each element, its condition and step.

use std::collections::BTreeMap;

use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use crate::MAX_REQUEST_SIZE_BYTES;

/// What is known of a value's size: its largest length (characters of a string, elements of a
/// list, entries of a map), and the shapes of what it holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// Largest length, 0 for a scalar.
    pub max_size: u64,
    /// The elements of a list, the values of a map with arbitrary keys.
    pub element: Option<Box<Shape>>,
    /// The declared properties of an object.
    pub properties: BTreeMap<String, Shape>,
}

/// The fewest bytes a value of the schema takes in JSON (apiextensions-apiserver
/// `estimateMinSizeJSON`): what bounds the number of items of an unbounded list or map.
fn min_size(schema: &Value) -> u64 {
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => 4,
        Some("integer" | "number") => 1,
        Some("string") => 2 + schema.get("minLength").and_then(Value::as_u64).unwrap_or(0),
        Some("array" | "object") => 2,
        _ => 1,
    }
}

impl Shape {
    /// A scalar, or anything of which nothing is known but that it costs a constant.
    pub fn scalar() -> Self {
        Self::default()
    }

    /// The largest values a structural schema admits.
    pub fn of_schema(schema: &Value) -> Self {
        let bound = |key: &str, unbounded: u64| {
            schema.get(key).and_then(Value::as_u64).unwrap_or(unbounded)
        };
        let available = MAX_REQUEST_SIZE_BYTES - 2;
        if schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return Self {
                max_size: available,
                ..Self::default()
            };
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => Self {
                max_size: bound("maxLength", available),
                ..Self::default()
            },
            Some("array") => {
                let items = schema.get("items").unwrap_or(&Value::Null);
                Self {
                    max_size: bound("maxItems", available / (min_size(items) + 1)),
                    element: Some(Box::new(Self::of_schema(items))),
                    properties: BTreeMap::new(),
                }
            }
            Some("object") => {
                let properties: BTreeMap<String, Shape> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), Self::of_schema(v)))
                    .collect();
                match schema.get("additionalProperties").filter(|a| a.is_object()) {
                    Some(values) => Self {
                        max_size: bound("maxProperties", available / (min_size(values) + 4)),
                        element: Some(Box::new(Self::of_schema(values))),
                        properties,
                    },
                    None if schema
                        .get("x-kubernetes-preserve-unknown-fields")
                        .and_then(Value::as_bool)
                        == Some(true) =>
                    {
                        Self {
                            max_size: available / 5,
                            element: Some(Box::new(Self::unknown(available))),
                            properties,
                        }
                    }
                    None => Self {
                        max_size: properties.len() as u64,
                        element: None,
                        properties,
                    },
                }
            }
            Some(_) => Self::scalar(),
            None => Self::unknown(available),
        }
    }

    /// Anything at all within `bytes` (an untyped, preserved value).
    fn unknown(bytes: u64) -> Self {
        Self {
            max_size: bytes,
            element: None,
            properties: BTreeMap::new(),
        }
    }

    /// The sizes of an actual value: what its evaluation may cost at most.
    pub fn of_value(value: &Value) -> Self {
        match value {
            Value::String(s) => Self {
                max_size: s.chars().count() as u64,
                ..Self::default()
            },
            Value::Array(items) => Self {
                max_size: items.len() as u64,
                element: Some(Box::new(join(items.iter().map(Self::of_value)))),
                properties: BTreeMap::new(),
            },
            Value::Object(map) => Self {
                max_size: map.len() as u64,
                element: Some(Box::new(join(map.values().map(Self::of_value)))),
                properties: map
                    .iter()
                    .map(|(k, v)| (k.clone(), Self::of_value(v)))
                    .collect(),
            },
            _ => Self::scalar(),
        }
    }

    /// The sizes of an actual CEL value (an admission expression's variables, which have no
    /// schema): what its evaluation may cost at most.
    pub fn of_cel(value: &cel::Value) -> Self {
        match value {
            cel::Value::String(s) => Self {
                max_size: s.chars().count() as u64,
                ..Self::default()
            },
            cel::Value::Bytes(b) => Self {
                max_size: b.len() as u64,
                ..Self::default()
            },
            cel::Value::List(items) => Self {
                max_size: items.len() as u64,
                element: Some(Box::new(join(items.iter().map(Self::of_cel)))),
                properties: BTreeMap::new(),
            },
            cel::Value::Map(map) => Self {
                max_size: map.map.len() as u64,
                element: Some(Box::new(join(map.map.values().map(Self::of_cel)))),
                properties: map
                    .map
                    .iter()
                    .filter_map(|(k, v)| match k {
                        cel::objects::Key::String(k) => Some((k.to_string(), Self::of_cel(v))),
                        _ => None,
                    })
                    .collect(),
            },
            _ => Self::scalar(),
        }
    }

    /// The shape of `field` of a value of this shape.
    fn field(&self, field: &str) -> Shape {
        self.properties
            .get(field)
            .cloned()
            .or_else(|| self.element.as_deref().cloned())
            .unwrap_or_else(|| Self::unknown(self.max_size))
    }

    fn element(&self) -> Shape {
        self.element
            .as_deref()
            .cloned()
            .unwrap_or_else(|| Self::unknown(self.max_size))
    }
}

/// The smallest shape covering all of `shapes`.
fn join(shapes: impl Iterator<Item = Shape>) -> Shape {
    shapes.fold(Shape::scalar(), |acc, s| {
        let element = match (acc.element, s.element) {
            (Some(a), Some(b)) => Some(Box::new(join([*a, *b].into_iter()))),
            (a, b) => a.or(b),
        };
        let mut properties = acc.properties;
        for (k, v) in s.properties {
            let merged = match properties.remove(&k) {
                Some(old) => join([old, v].into_iter()),
                None => v,
            };
            properties.insert(k, merged);
        }
        Shape {
            max_size: acc.max_size.max(s.max_size),
            element,
            properties,
        }
    })
}

/// What one `authorizer` check costs.
const AUTHZ_CHECK_COST: u64 = 350_000;

/// One tenth of a length, rounded up: cel-go's cost of traversing a string.
fn tenth(n: u64) -> u64 {
    n.div_ceil(10)
}

/// Estimates `expr` with the variables in `scope`; returns its cost and the shape of its result.
pub(crate) fn estimate(expr: &IdedExpr, scope: &mut Vec<(String, Shape)>) -> (u64, Shape) {
    match &expr.expr {
        Expr::Literal(LiteralValue::String(s)) => (
            0,
            Shape {
                max_size: s.inner().chars().count() as u64,
                ..Shape::default()
            },
        ),
        Expr::Literal(_) | Expr::Unspecified => (0, Shape::scalar()),
        Expr::Ident(name) => {
            let shape = scope
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
                .unwrap_or_default();
            (1, shape)
        }
        Expr::Select(select) => {
            let (cost, operand) = estimate(&select.operand, scope);
            (cost.saturating_add(1), operand.field(&select.field))
        }
        Expr::List(list) => {
            let mut cost = 10u64;
            let mut shapes = Vec::new();
            for e in &list.elements {
                let (c, s) = estimate(e, scope);
                cost = cost.saturating_add(c);
                shapes.push(s);
            }
            let max_size = shapes.len() as u64;
            (
                cost,
                Shape {
                    max_size,
                    element: Some(Box::new(join(shapes.into_iter()))),
                    properties: BTreeMap::new(),
                },
            )
        }
        Expr::Map(map) => {
            let mut cost = 30u64;
            for entry in &map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(e) = &entry.expr {
                    cost = cost
                        .saturating_add(estimate(&e.key, scope).0)
                        .saturating_add(estimate(&e.value, scope).0);
                }
            }
            (
                cost,
                Shape {
                    max_size: map.entries.len() as u64,
                    ..Shape::default()
                },
            )
        }
        Expr::Struct(_) => (40, Shape::scalar()),
        Expr::Call(call) => {
            let mut cost = 0u64;
            let mut shapes = Vec::new();
            for e in call.target.as_deref().into_iter().chain(call.args.iter()) {
                let (c, s) = estimate(e, scope);
                cost = cost.saturating_add(c);
                shapes.push(s);
            }
            let size = |i: usize| shapes.get(i).map_or(0, |s: &Shape| s.max_size);
            let (own, result) = match call.func_name.as_str() {
                // Both branches' costs: an upper bound of the one taken.
                "_&&_" | "_||_" | "_?_:_" | "!_" | "-_" => {
                    (0, shapes.last().cloned().unwrap_or_default())
                }
                "_[_]" => (1, shapes.first().map(|s| s.element()).unwrap_or_default()),
                // An authorization check's fixed price (kubernetes/apiserver
                // `pkg/cel/library/cost.go`): two fit in one expression's budget.
                "check" => (AUTHZ_CHECK_COST, Shape::scalar()),
                "@in" => (1u64.saturating_add(size(1)), Shape::scalar()),
                "contains" | "startsWith" | "endsWith" | "matches" | "find" | "findAll"
                | "indexOf" | "lastIndexOf" | "lowerAscii" | "upperAscii" | "trim" | "split"
                | "replace" | "substring" | "isSorted" | "sum" | "min" | "max" | "distinct"
                | "join" => (
                    1u64.saturating_add(list_cost(&call.func_name, size(0))),
                    shapes.first().map(Shape::element).unwrap_or_default(),
                ),
                "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (
                    1u64.saturating_add(tenth(size(0).min(size(1)))),
                    Shape::scalar(),
                ),
                "_+_" => (
                    1u64.saturating_add(tenth(size(0).saturating_add(size(1)))),
                    Shape {
                        max_size: size(0).saturating_add(size(1)),
                        element: shapes.first().and_then(|s| s.element.clone()),
                        properties: BTreeMap::new(),
                    },
                ),
                "string" | "bytes" => (
                    1u64.saturating_add(tenth(size(0))),
                    shapes.first().cloned().unwrap_or_default(),
                ),
                _ => (1, Shape::scalar()),
            };
            (cost.saturating_add(own), result)
        }
        Expr::Comprehension(c) => {
            let (range_cost, range) = estimate(&c.iter_range, scope);
            let (init_cost, init) = estimate(&c.accu_init, scope);
            let iterations = range.max_size;
            let element = range.element();
            let depth = scope.len();
            scope.push((c.iter_var.clone(), element.clone()));
            if let Some(v2) = &c.iter_var2 {
                scope.push((v2.clone(), element));
            }
            // The accumulator of `map` and `filter` grows up to one element per iteration.
            let accu = Shape {
                max_size: init.max_size.saturating_add(iterations),
                element: init.element.clone(),
                properties: BTreeMap::new(),
            };
            scope.push((c.accu_var.clone(), accu));
            let (cond, _) = estimate(&c.loop_cond, scope);
            let (step, step_shape) = estimate(&c.loop_step, scope);
            let (result_cost, mut result) = estimate(&c.result, scope);
            scope.truncate(depth);
            if result.max_size == 0 && step_shape.max_size > 0 {
                result = step_shape;
            }
            let per_item = cond.saturating_add(step);
            let cost = range_cost
                .saturating_add(init_cost)
                .saturating_add(result_cost)
                .saturating_add(iterations.saturating_mul(per_item));
            (cost, result)
        }
    }
}

/// What a function over a whole list or string costs beyond the call: its length for the list
/// functions and `in`, one tenth of it for the string functions.
fn list_cost(function: &str, size: u64) -> u64 {
    match function {
        "isSorted" | "sum" | "min" | "max" | "distinct" | "join" => size,
        _ => tenth(size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unbounded_lists_are_bounded_by_the_request_size() {
        let shape = Shape::of_schema(&json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(shape.max_size, (MAX_REQUEST_SIZE_BYTES - 2) / 3);
        let bounded = Shape::of_schema(
            &json!({"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}}),
        );
        assert_eq!(bounded.max_size, 4);
        assert_eq!(bounded.element().max_size, 8);
    }

    #[test]
    fn a_value_s_shape_is_its_actual_size() {
        let shape = Shape::of_value(&json!({"a": ["xy", "xyz"]}));
        assert_eq!(shape.field("a").max_size, 2);
        assert_eq!(shape.field("a").element().max_size, 3);
    }
}
