//! Kubernetes' format library (kubernetes/apiserver `pkg/cel/library/format.go`): named
//! formats (`format.dns1123Label()`, `format.named('uri')` …) whose `validate(s)` is
//! `optional.none()` for a valid string, else the list of what is wrong, in the words of the
//! apimachinery validators (kgc-meta's) and of the CRD formats.

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{Env, Value};
use kgc_meta::validation as names;

use super::{function, opaque, opaque_arg, string_arg};
use crate::value::optional;

/// One named format: its library name and its validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// The formats upstream names (`ConstantFormats`).
const FORMATS: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// apimachinery's `maskTrailingDash`: a generated-name prefix may end in `-`.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(_) if s.len() > 1 => format!("{}a", &s[..s.len() - 2]),
        _ => s.to_owned(),
    }
}

impl Format {
    fn validate(self, s: &str) -> Vec<String> {
        let crd = |name: &str, message: &str| {
            if kgc_meta::schema::check_format(name, s) == Some(true) {
                vec![]
            } else {
                vec![message.to_owned()]
            }
        };
        match self.0 {
            "dns1123Label" => names::is_dns1123_label(s),
            "dns1123Subdomain" => names::is_dns1123_subdomain(s),
            "dns1035Label" => names::is_dns1035_label(s),
            "qualifiedName" => names::is_qualified_name(s),
            "dns1123LabelPrefix" => names::is_dns1123_label(&mask_trailing_dash(s)),
            "dns1123SubdomainPrefix" => names::is_dns1123_subdomain(&mask_trailing_dash(s)),
            "dns1035LabelPrefix" => names::is_dns1035_label(&mask_trailing_dash(s)),
            "labelValue" => names::is_label_value(s),
            "uri" => super::url::parse_url(s, true).err().into_iter().collect(),
            "uuid" => crd("uuid", "does not match the UUID format"),
            "byte" => crd("byte", "invalid base64"),
            "date" => crd("date", "invalid date"),
            _ => crd("datetime", "invalid datetime"),
        }
    }
}

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let format_type = || Type::new_opaque_type("kubernetes.NamedFormat");
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        format_type(),
        vec![STRING_TYPE],
        validate,
    )?;
    macro_rules! constant {
        ($($name:ident),*) => {$(
            function!(#[allow(non_snake_case, reason = "named as the CEL function")] $name, |_: &[Value]| Ok(opaque(Format(stringify!($name)))));
            env.add_overload(concat!("format.", stringify!($name)), concat!("format.", stringify!($name)), vec![], $name)?;
        )*};
    }
    constant!(
        dns1123Label,
        dns1123Subdomain,
        dns1035Label,
        qualifiedName,
        dns1123LabelPrefix,
        dns1123SubdomainPrefix,
        dns1035LabelPrefix,
        labelValue,
        uri,
        uuid,
        byte,
        date,
        datetime
    );
    Ok(())
}

function!(named, |args: &[Value]| {
    let name = string_arg(args, 0, "format.named")?;
    let found = FORMATS.iter().find(|f| **f == name);
    Ok(optional(found.map(|f| opaque(Format(f)))))
});

function!(validate, |args: &[Value]| {
    let format = opaque_arg::<Format>(args, 0, "validate")?;
    let errors = format.validate(string_arg(args, 1, "validate")?);
    Ok(optional((!errors.is_empty()).then(|| {
        Value::List(std::sync::Arc::new(
            errors.into_iter().map(Value::from).collect(),
        ))
    })))
});

#[cfg(test)]
mod tests {
    use crate::library::tests::eval;
    use cel::Value;

    /// Cases of kubernetes/apiserver `pkg/cel/library/format_test.go`.
    #[test]
    fn the_format_library() {
        let t = |s: &str| assert_eq!(eval(s), Value::Bool(true), "{s}");
        t("!format.dns1123Label().validate('my-label-name').hasValue()");
        t("format.dns1123Label().validate('MY_LABEL').hasValue()");
        t("!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()");
        t("!format.dns1035Label().validate('my-label-name').hasValue()");
        t("format.dns1035Label().validate('1abc').hasValue()");
        t("!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()");
        t("!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()");
        t("!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()");
        t("!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()");
        t("!format.labelValue().validate('my-cool-label-Value').hasValue()");
        t("!format.uri().validate('http://example.com').hasValue()");
        t(
            "format.uri().validate('example').value() == ['parse \"example\": invalid URI for request']",
        );
        t("!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()");
        t("format.uuid().validate('123e4567').value() == ['does not match the UUID format']");
        t("!format.byte().validate('aGVsbG8=').hasValue()");
        t("format.byte().validate('aGVsbG8').value() == ['invalid base64']");
        t("!format.date().validate('2021-01-01').hasValue()");
        t("format.date().validate('2021-13-01').value() == ['invalid date']");
        t("!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()");
        t("format.datetime().validate('2021-01-01').value() == ['invalid datetime']");
        t("format.named('dns1123Label').hasValue()");
        t("!format.named('nope').hasValue()");
        t(
            "format.named('dns1123Label').value().validate('a_b').value() == ['a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \\'-\\', and must start and end with an alphanumeric character (e.g. \\'my-name\\',  or \\'123-abc\\', regex used for validation is \\'[a-z0-9]([-a-z0-9]*[a-z0-9])?\\')']",
        );
    }
}
