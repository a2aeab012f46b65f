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
    let wanted = kind.to_ascii_lowercase();
    let (name, qualifier) = match wanted.split_once('.') {
        Some((n, q)) => (n, Some(q)),
        None => (wanted.as_str(), None),
    };
    let in_scope = |r: &&Arc<ResourceInfo>| {
        r.supports("list")
            && match qualifier {
                None => true,
                Some(q) if q == r.group => true,
                // `resource.version.group` (and `resource.version` for the core group).
                Some(q) => q.split_once('.').map_or_else(
                    || r.group.is_empty() && r.serves_version(q),
                    |(v, g)| g == r.group && r.serves_version(v),
                ),
            }
    };
    let full = resources
        .iter()
        .filter(in_scope)
        .find(|r| r.plural == name || r.singular == name || r.kind.eq_ignore_ascii_case(name));
    if let Some(r) = full {
        return Ok(Arc::clone(r));
    }
    let short: Vec<&Arc<ResourceInfo>> = resources
        .iter()
        .filter(in_scope)
        .filter(|r| r.short_names.iter().any(|s| s.eq_ignore_ascii_case(name)))
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
