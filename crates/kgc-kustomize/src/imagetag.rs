//! `images:` (kustomize's `ImageTagTransformer` over `api/filters/imagetag`): an image whose
//! name matches gets a new name, tag, tag suffix or digest. As upstream, two passes: the
//! legacy one, every `containers`/`initContainers` list found anywhere in an object (not in
//! CRDs), then the images table's fields.

use serde_json::Value;

use crate::fieldspec::FieldSpec;
use crate::kustomization::Image;
use crate::resource::Resource;

pub fn apply(resources: &mut [Resource], image: &Image, specs: &[FieldSpec]) -> Result<(), String> {
    for r in resources.iter_mut() {
        if r.id().kind == "CustomResourceDefinition" {
            continue;
        }
        find_containers(&mut r.object, image);
        for spec in specs {
            spec.apply(&mut r.object, None, &mut |v| update(v, image))?;
        }
    }
    Ok(())
}

/// kustomize's `LegacyFilter`: every `containers`/`initContainers` list, at any depth.
fn find_containers(node: &mut Value, image: &Image) {
    match node {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                find_containers(value, image);
                if (key == "containers" || key == "initContainers")
                    && let Value::Array(items) = value
                {
                    for item in items {
                        if let Some(v) = item.get_mut("image")
                            && v.is_string()
                        {
                            let _ = update(v, image);
                        }
                    }
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| find_containers(i, image)),
        _ => {}
    }
}

/// kustomize's `imageTagUpdater.SetImageValue`.
fn update(v: &mut Value, image: &Image) -> Result<(), String> {
    let Some(value) = v.as_str() else {
        return Err("wrong node kind: expected ScalarNode".to_owned());
    };
    if !matches(value, &image.name) {
        return Ok(());
    }
    let (name, tag, digest) = split(value);
    let mut name = name.to_owned();
    let (mut tag, mut digest) = (tag.to_owned(), digest.to_owned());
    if !image.new_name.is_empty() {
        name = image.new_name.clone();
    }
    if !image.new_tag.is_empty() && !image.digest.is_empty() {
        tag = image.new_tag.clone();
        digest = image.digest.clone();
    } else if !image.new_tag.is_empty() {
        tag = image.new_tag.clone();
        digest.clear();
    } else if !image.digest.is_empty() {
        tag.clear();
        digest = image.digest.clone();
    } else if !image.tag_suffix.is_empty() {
        tag.push_str(&image.tag_suffix);
        digest.clear();
    }
    if !tag.is_empty() {
        name = format!("{name}:{tag}");
    }
    if !digest.is_empty() {
        name = format!("{name}@{digest}");
    }
    *v = Value::String(name);
    Ok(())
}

/// kustomize's `image.IsImageMatched` (`api/internal/image/image.go`): `value` is `name`,
/// then an optional `:tag`, then an optional `@sha256:digest`, both of
/// `[a-zA-Z0-9_.{}-]` characters.
fn matches(value: &str, name: &str) -> bool {
    let allowed = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.{}-".contains(c))
    };
    let Some(rest) = value.strip_prefix(name) else {
        return false;
    };
    let (tag, digest) = match rest.split_once('@') {
        Some((tag, digest)) => (tag, Some(digest)),
        None => (rest, None),
    };
    let tag_ok = tag.is_empty() || tag.strip_prefix(':').is_some_and(allowed);
    let digest_ok = digest.is_none_or(|d| d.strip_prefix("sha256:").is_some_and(allowed));
    tag_ok && digest_ok
}

/// kustomize's `image.Split`: name, tag and digest; a `:` before the first `/` is a
/// registry's port, not a tag.
fn split(image: &str) -> (&str, &str, &str) {
    let offset = match image.find('/') {
        Some(i) if i > 0 => i,
        _ => 0,
    };
    let search = &image[offset..];
    let at = search.find('@').map(|i| i + offset);
    let colon = search.find(':').map(|i| i + offset);
    match (colon, at) {
        (None, None) => (image, "", ""),
        (c, Some(at)) if c.is_none_or(|c| at < c) => (&image[..at], "", &image[at + 1..]),
        (Some(c), Some(at)) => (&image[..c], &image[c + 1..at], &image[at + 1..]),
        (Some(c), None) => (&image[..c], &image[c + 1..], ""),
        (None, Some(_)) => (image, "", ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use serde_json::json;

    #[test]
    fn split_handles_ports_tags_and_digests() {
        assert_eq!(split("nginx"), ("nginx", "", ""));
        assert_eq!(split("nginx:1.2"), ("nginx", "1.2", ""));
        assert_eq!(split("reg:5000/nginx:1.2"), ("reg:5000/nginx", "1.2", ""));
        assert_eq!(split("nginx@sha256:ab"), ("nginx", "", "sha256:ab"));
        assert_eq!(split("nginx:1@sha256:ab"), ("nginx", "1", "sha256:ab"));
    }

    #[test]
    fn new_name_and_tag_in_containers_and_init_containers() {
        let mut rs = vec![Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"template": {"spec": {
                "initContainers": [{"name": "i", "image": "busybox"}],
                "containers": [{"name": "c", "image": "nginx:1.0"}, {"name": "d", "image": "nginxx"}]}}}}),
        )];
        let image = Image {
            name: "nginx".into(),
            new_name: "reg/nginx".into(),
            new_tag: "2.0".into(),
            ..Image::default()
        };
        apply(&mut rs, &image, &TransformerConfig::builtin().images).unwrap();
        let b = Image {
            name: "busybox".into(),
            digest: "sha256:00".into(),
            ..Image::default()
        };
        apply(&mut rs, &b, &TransformerConfig::builtin().images).unwrap();
        let spec = &rs[0].object["spec"]["template"]["spec"];
        assert_eq!(spec["containers"][0]["image"], "reg/nginx:2.0");
        assert_eq!(spec["containers"][1]["image"], "nginxx");
        assert_eq!(spec["initContainers"][0]["image"], "busybox@sha256:00");
    }
}
