//! Kubernetes' quantity library (kubernetes/apiserver `pkg/cel/library/quantity.go`):
//! `quantity(s)`, `isQuantity(s)`, and on a quantity `sign`, `isInteger`, `asInteger`,
//! `asApproximateFloat`, `compareTo`, `isLessThan`, `isGreaterThan`, `add`, `sub` (with a
//! quantity or an int). Not yet `mul`, `div` and `divInt` (kubernetes 1.34).

use cel::common::types::{INT_TYPE, STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{Env, Value};
use kgc_meta::quantity::Quantity as Q;

use super::{error, function, int_arg, opaque, opaque_arg, string_arg};

/// A `kubernetes.Quantity` value; equal by value as upstream's `Equal` (`1k == 1000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quantity(pub(crate) Q);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn quantity_type() -> Type {
    Type::new_opaque_type("kubernetes.Quantity")
}

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let q = quantity_type;
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], parse)?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_overload("sign", "quantity_sign", vec![q()], sign)?;
    env.add_member_overload("sign", "quantity_sign_member", q(), vec![], sign)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        as_float,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], less)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        greater,
    )?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub)?;
    Ok(())
}

fn this<'a>(args: &'a [Value], function: &str) -> Result<&'a Q, cel::ExecutionError> {
    opaque_arg::<Quantity>(args, 0, function).map(|q| &q.0)
}

/// The second operand: a quantity, or an int as `resource.NewQuantity(n, DecimalExponent)`.
fn operand(args: &[Value], function: &str) -> Result<Q, cel::ExecutionError> {
    match args.get(1) {
        Some(Value::Int(_)) => Ok(Q::from_i64(int_arg(args, 1, function)?)),
        _ => opaque_arg::<Quantity>(args, 1, function).map(|q| q.0.clone()),
    }
}

function!(parse, |args: &[Value]| {
    let s = string_arg(args, 0, "quantity")?;
    Q::parse(s)
        .map(|q| opaque(Quantity(q)))
        .map_err(|e| error("quantity", e))
});

function!(is_quantity, |args: &[Value]| {
    Ok(Value::Bool(
        Q::parse(string_arg(args, 0, "isQuantity")?).is_ok(),
    ))
});

function!(sign, |args: &[Value]| Ok(Value::Int(
    this(args, "sign")?.sign()
)));

function!(is_integer, |args: &[Value]| {
    Ok(Value::Bool(this(args, "isInteger")?.as_int64().is_some()))
});

function!(as_integer, |args: &[Value]| {
    this(args, "asInteger")?
        .as_int64()
        .map(Value::Int)
        .ok_or_else(|| error("asInteger", "cannot convert value to integer"))
});

function!(as_float, |args: &[Value]| {
    Ok(Value::Float(
        this(args, "asApproximateFloat")?.as_approximate_float(),
    ))
});

function!(compare_to, |args: &[Value]| {
    let a = this(args, "compareTo")?;
    Ok(Value::Int(a.cmp(&operand(args, "compareTo")?) as i64))
});

function!(less, |args: &[Value]| {
    Ok(Value::Bool(
        *this(args, "isLessThan")? < operand(args, "isLessThan")?,
    ))
});

function!(greater, |args: &[Value]| {
    Ok(Value::Bool(
        *this(args, "isGreaterThan")? > operand(args, "isGreaterThan")?,
    ))
});

function!(add, |args: &[Value]| {
    let sum = this(args, "add")?.add(&operand(args, "add")?);
    Ok(opaque(Quantity(sum)))
});

function!(sub, |args: &[Value]| {
    let difference = this(args, "sub")?.sub(&operand(args, "sub")?);
    Ok(opaque(Quantity(difference)))
});

#[cfg(test)]
mod tests {
    use crate::library::tests::{eval, eval_err};
    use cel::Value;

    /// Cases of kubernetes/apiserver `pkg/cel/library/quantity_test.go`.
    #[test]
    fn the_quantity_library() {
        let t = |s: &str| assert_eq!(eval(s), Value::Bool(true), "{s}");
        t("quantity('12Mi') == quantity('12Mi')");
        t("quantity('1k') == quantity('1000')");
        t("isQuantity('20')");
        t("isQuantity('20M')");
        t("!isQuantity('')");
        t("!isQuantity('1.1.1')");
        t("quantity('50k').isGreaterThan(quantity('50M')) == false");
        t("quantity('50M').isGreaterThan(quantity('50k'))");
        t("quantity('50k').isLessThan(quantity('50M'))");
        t("quantity('200M').compareTo(quantity('0.2G')) == 0");
        t("quantity('50M').compareTo(quantity('50Mi')) == -1");
        t("quantity('50Mi').compareTo(quantity('50M')) == 1");
        t("quantity('50k').add(quantity('20')) == quantity('50.02k')");
        t("quantity('50k').add(20) == quantity('50020')");
        t("quantity('50k').sub(quantity('20')) == quantity('49.98k')");
        t("quantity('50k').sub(20) == quantity('49980')");
        t("quantity('50k').sub(quantity('50k')) == quantity('0')");
        t("quantity('50k').isInteger()");
        t("!quantity('9999999999999999999999999999999999999G').isInteger()");
        t("!quantity('50m').isInteger()");
        t("quantity('50k').asInteger() == 50000");
        t("quantity('50k').asApproximateFloat() == 50000.0");
        t("quantity('5.5k').asApproximateFloat() == 5500.0");
        t("quantity('50k').sign() == 1");
        t("sign(quantity('-50k')) == -1");
        t("quantity('0').sign() == 0");
        assert_eq!(
            eval_err("quantity('50m').asInteger()"),
            "cannot convert value to integer"
        );
        assert_eq!(
            eval_err("quantity('x')"),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }
}
