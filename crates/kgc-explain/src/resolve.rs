//! `KIND/NAME` to a served resource, as kubectl resolves a resource argument: a plural, singular
//! or kind name (any case), or a short name, optionally qualified by its group
//! (`deployments.apps`, `certificate.cert-manager.io`) or version and group
//! (`deployments.v1.apps`). kubectl's RESTMapper picks among resources of the same name in
//! several groups by discovery order (the core group first: `events` is core's, not
//! `events.k8s.io`'s), so full names do too; a short name several resources claim is an error
//! naming them, where kubectl would silently take the first (kubernetes/kubernetes
//! `staging/src/k8s.io/client-go/restmapper/shortcut.go`).

use std::sync::Arc;

use kgc_meta::ResourceInfo;

use crate::{Error, Result};

/// The `KIND` and `NAME` of `KIND/NAME`, or of the two arguments `KIND NAME`.
pub fn parse_reference(args: &[String]) -> Result<(String, String)> {
    match args {
        [one] => match one.split_once('/') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok((kind.to_owned(), name.to_owned()))
            }
            _ => Err(Error::BadReference(one.clone())),
        },
        [kind, name] if !kind.contains('/') && !name.contains('/') => {
            Ok((kind.clone(), name.clone()))
        }
        _ => Err(Error::BadReference(args.join(" "))),
    }
}

/// The listable resource `kind` names among `resources` (in discovery order).
pub fn resolve(resources: &[Arc<ResourceInfo>], kind: &str) -> Result<Arc<ResourceInfo>> {
    if let Some(r) = by_name(resources, kind) {
        return Ok(r);
    }
    let wanted = Wanted::new(kind);
    let short: Vec<&Arc<ResourceInfo>> = resources
        .iter()
        .filter(|r| wanted.in_scope(r))
        .filter(|r| {
            r.short_names
                .iter()
                .any(|s| s.eq_ignore_ascii_case(wanted.name))
        })
        .collect();
    match short.as_slice() {
        [] => Err(Error::UnknownKind(kind.to_owned())),
        [one] => Ok(Arc::clone(one)),
        many => Err(Error::Ambiguous {
            name: kind.to_owned(),
            candidates: many.iter().map(|r| qualified(r)).collect(),
        }),
    }
}

/// The resource `kind` names by plural, singular or kind (not by short name): the first in
/// discovery order.
pub fn by_name(resources: &[Arc<ResourceInfo>], kind: &str) -> Option<Arc<ResourceInfo>> {
    let wanted = Wanted::new(kind);
    resources
        .iter()
        .filter(|r| wanted.in_scope(r))
        .find(|r| {
            r.plural.eq_ignore_ascii_case(wanted.name)
                || r.singular.eq_ignore_ascii_case(wanted.name)
                || r.kind.eq_ignore_ascii_case(wanted.name)
        })
        .cloned()
}

/// A resource argument split into its name and its `group` or `version.group` qualifier.
struct Wanted<'a> {
    name: &'a str,
    qualifier: Option<&'a str>,
}

impl<'a> Wanted<'a> {
    fn new(kind: &'a str) -> Self {
        match kind.split_once('.') {
            Some((name, q)) => Self {
                name,
                qualifier: Some(q),
            },
            None => Self {
                name: kind,
                qualifier: None,
            },
        }
    }

    fn in_scope(&self, r: &ResourceInfo) -> bool {
        r.supports("list")
            && match self.qualifier {
                None => true,
                Some(q) if q.eq_ignore_ascii_case(&r.group) => true,
                // `resource.version.group` (and `resource.version` for the core group).
                Some(q) => q.split_once('.').map_or_else(
                    || r.group.is_empty() && r.serves_version(q),
                    |(v, g)| g.eq_ignore_ascii_case(&r.group) && r.serves_version(v),
                ),
            }
    }
}

/// `plural.group` (just `plural` in the core group): the name that picks exactly this resource.
pub fn qualified(r: &ResourceInfo) -> String {
    if r.group.is_empty() {
        r.plural.clone()
    } else {
        format!("{}.{}", r.plural, r.group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::Catalog;

    fn resources() -> Vec<Arc<ResourceInfo>> {
        Catalog::builtin().resources().cloned().collect()
    }

    #[test]
    fn kubectl_names() {
        let rs = resources();
        for name in [
            "deploy",
            "deployment",
            "Deployment",
            "deployments",
            "deployments.apps",
            "deployment.v1.apps",
        ] {
            let r = resolve(&rs, name).unwrap();
            assert_eq!(
                (r.group.as_str(), r.plural.as_str()),
                ("apps", "deployments"),
                "{name}"
            );
        }
        assert_eq!(resolve(&rs, "po").unwrap().plural, "pods");
        assert_eq!(resolve(&rs, "events").unwrap().group, "");
        assert_eq!(
            resolve(&rs, "events.events.k8s.io").unwrap().group,
            "events.k8s.io"
        );
    }

    #[test]
    fn unknown_and_ambiguous() {
        let mut rs = resources();
        assert!(matches!(
            resolve(&rs, "widgets"),
            Err(Error::UnknownKind(_))
        ));
        let mut a = (*resolve(&rs, "deploy").unwrap()).clone();
        a.group = "example.com".into();
        rs.push(Arc::new(a));
        let Err(Error::Ambiguous { candidates, .. }) = resolve(&rs, "deploy") else {
            panic!("expected ambiguity");
        };
        assert_eq!(candidates, ["deployments.apps", "deployments.example.com"]);
        assert_eq!(resolve(&rs, "deploy.apps").unwrap().group, "apps");
    }

    #[test]
    fn references() {
        let one = |s: &str| parse_reference(&[s.to_owned()]);
        assert_eq!(one("deploy/web").unwrap(), ("deploy".into(), "web".into()));
        assert!(one("web").is_err());
        assert!(one("a/b/c").is_err());
        assert_eq!(
            parse_reference(&["pod".into(), "p".into()]).unwrap(),
            ("pod".into(), "p".into())
        );
    }
}
