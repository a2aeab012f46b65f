//! The native functions qbec gives jsonnet (`std.native('parseYaml')(text)`), from splunk/qbec
//! `vm/internal/natives/nativefuncs.go`: `parseJson` (one value) and `parseYaml` (every
//! non-empty document, always as a list). The others (regular expressions, helm templates,
//! label selectors) are not provided; calling one is jsonnet's "undefined native" error.

use std::any::Any;

use jrsonnet_evaluator::function::builtin::Builtin;
use jrsonnet_evaluator::function::{
    CallLocation, FunctionSignature, ParamDefault, ParamName, ParamParse,
};
use jrsonnet_evaluator::{RuntimeError, Thunk, Val};
use jrsonnet_gcmodule::Trace;

#[derive(Trace, Clone, Copy)]
pub(crate) enum Native {
    ParseJson,
    ParseYaml,
}

impl Native {
    pub(crate) const ALL: [Native; 2] = [Native::ParseJson, Native::ParseYaml];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Native::ParseJson => "parseJson",
            Native::ParseYaml => "parseYaml",
        }
    }

    /// qbec's parameter name.
    fn param(self) -> &'static str {
        match self {
            Native::ParseJson => "json",
            Native::ParseYaml => "yaml",
        }
    }
}

impl Builtin for Native {
    fn name(&self) -> &str {
        Native::name(*self)
    }

    fn params(&self) -> FunctionSignature {
        FunctionSignature::new(
            [ParamParse::new(
                ParamName::Named(self.param().into()),
                ParamDefault::None,
            )]
            .into(),
        )
    }

    fn call(
        &self,
        _loc: CallLocation<'_>,
        args: &[Option<Thunk<Val>>],
    ) -> jrsonnet_evaluator::Result<Val> {
        let fail = |message: String| RuntimeError(format!("{}: {message}", self.name()).into());
        let arg = match args.first() {
            Some(Some(thunk)) => thunk.evaluate()?,
            _ => return Err(fail("argument missing".to_owned()).into()),
        };
        let text = arg
            .as_str()
            .ok_or_else(|| fail("the argument must be a string".to_owned()))?;
        match self {
            Native::ParseJson => {
                serde_json::from_str(&text).map_err(|e| fail(e.to_string()).into())
            }
            Native::ParseYaml => {
                let docs: Vec<Val> =
                    serde_saphyr::from_multiple(&text).map_err(|e| fail(e.to_string()))?;
                let docs: Vec<Val> = docs
                    .into_iter()
                    .filter(|d| !matches!(d, Val::Null))
                    .collect();
                Ok(Val::Arr(docs.into()))
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
