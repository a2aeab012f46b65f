//! Name rules, worded as apimachinery words them: DNS-1123 labels and subdomains, DNS-1035
//! labels, qualified names and label values (kubernetes/apimachinery pkg/util/validation
//! validation.go), and which of them `metadata.name` follows per kind
//! (pkg/api/validation/generic.go `NameIsDNSSubdomain` & co., path/name.go
//! `ValidatePathSegmentName`).

use std::fmt::Write as _;

/// Name rules differ per kind (most kinds: DNS-1123 subdomain; namespaces: DNS-1123 label;
/// services: DNS-1035 label upstream; RBAC roles/bindings: path segment name), and the rule also
/// decides how `generateName` is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, and every custom resource.
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: namespaces.
    Dns1123Label,
    /// `NameIsDNS1035Label`: services (a label that must start with a letter).
    Dns1035Label,
    /// `ValidatePathSegmentName`: RBAC roles and bindings, whose names only have to survive
    /// being a URL path segment.
    PathSegment,
}

/// The detail messages (upstream wording) for a `metadata.name` under `rule`; empty if valid.
pub fn validate_name(rule: NameRule, name: &str) -> Vec<String> {
    name_errors(rule, name, false)
}

/// `prefix` is upstream's flag for `generateName`, which gets random characters appended and may
/// therefore end in '-'.
pub(crate) fn name_errors(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    if rule == NameRule::PathSegment {
        return path_segment_errors(name, prefix);
    }
    let masked;
    let name = if prefix {
        masked = mask_trailing_dash(name);
        masked.as_str()
    } else {
        name
    };
    match rule {
        NameRule::Dns1123Label => is_dns1123_label(name),
        NameRule::Dns1035Label => is_dns1035_label(name),
        NameRule::Dns1123Subdomain | NameRule::PathSegment => is_dns1123_subdomain(name),
    }
}

/// Upstream `maskTrailingDash`: a trailing '-' (and, as upstream slices it, the byte before it)
/// is replaced by 'a' so the prefix can be checked with the full-name rule.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => {
            let mut chars = rest.chars();
            match chars.next_back() {
                // Dropping a multi-byte character would hide it from the check; upstream would
                // have produced invalid UTF-8 there, which fails the check, so keep it.
                Some(c) if c.is_ascii() => format!("{}a", chars.as_str()),
                _ => format!("{rest}a"),
            }
        }
        _ => name.to_owned(),
    }
}

fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

/// `TotalAnnotationSizeLimitB`: keys plus values, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Upstream `MaxLenError` (1.32 says "characters" although it counts bytes).
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Upstream `RegexError`, including its quirk of rendering examples as `'a',  or 'b', `.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        let _ = write!(s, "'{e}', ");
    }
    let _ = write!(s, "regex used for validation is '{fmt}')");
    s
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn dns_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn dns1035_label_shape(s: &str) -> bool {
    dns_label_shape(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

fn dns_subdomain_shape(s: &str) -> bool {
    s.split('.').all(dns_label_shape)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn qualified_name_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Upstream `IsDNS1123Subdomain`: detail messages, empty if `value` is valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !dns_subdomain_shape(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream `IsDNS1123Label`: detail messages, empty if `value` is valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !dns_label_shape(value) {
        if dns_subdomain_shape(value) {
            // A valid subdomain that is not a label can only be failing on its dots.
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Upstream `IsDNS1035Label`: detail messages, empty if `value` is valid.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !dns1035_label_shape(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Upstream `IsQualifiedName` (label keys, annotation keys, finalizer names): an optional
/// DNS-subdomain prefix and '/', then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !qualified_name_shape(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Upstream `IsValidLabelValue`: empty, or a qualified-name-shaped string of at most 63 bytes.
pub fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !qualified_name_shape(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// The upstream messages the tests of this module and of `objectmeta` compare against.
#[cfg(test)]
pub(crate) mod messages {
    pub(crate) const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    pub(crate) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    pub(crate) const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    pub(crate) const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    pub(crate) const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
}

#[cfg(test)]
mod tests {
    use super::messages::*;
    use super::*;

    #[test]
    fn dns_rules() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(is_dns1123_subdomain("a").is_empty());
        assert_eq!(is_dns1123_subdomain("Foo"), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain(""), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain("a..b"), vec![SUBDOMAIN_MSG]);
        assert_eq!(is_dns1123_subdomain("a-.b"), vec![SUBDOMAIN_MSG]);
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            vec!["must be no more than 253 characters".to_owned()]
        );
        assert!(is_dns1123_subdomain(&"a".repeat(253)).is_empty());

        assert!(is_dns1123_label("my-name").is_empty());
        assert!(is_dns1123_label("123-abc").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(is_dns1123_label("-a"), vec![LABEL_MSG]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(
            is_dns1123_label(&"A".repeat(64)),
            vec![
                "must be no more than 63 characters".to_owned(),
                LABEL_MSG.to_owned()
            ]
        );

        assert!(is_dns1035_label("abc-123").is_empty());
        assert_eq!(is_dns1035_label("1abc"), vec![DNS1035_MSG]);
    }

    #[test]
    fn qualified_names_and_label_values() {
        for ok in ["a", "A", "a.b_c-D", "example.com/MyName", "k8s.io/x", "a/b"] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        assert_eq!(is_qualified_name("app:monolith"), vec![NAME_PART_MSG]);
        assert_eq!(
            is_qualified_name(""),
            vec![
                "name part must be non-empty".to_owned(),
                NAME_PART_MSG.to_owned()
            ]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            is_qualified_name("Example.com/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );

        assert!(is_label_value("").is_empty());
        assert!(is_label_value("MyValue").is_empty());
        assert!(is_label_value("my_value-1.2").is_empty());
        assert_eq!(is_label_value("-x"), vec![LABEL_VALUE_MSG]);
        assert_eq!(is_label_value("a b"), vec![LABEL_VALUE_MSG]);
        assert_eq!(
            is_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn name_rules() {
        assert!(validate_name(NameRule::Dns1123Subdomain, "a.b").is_empty());
        assert_eq!(
            validate_name(NameRule::Dns1123Label, "a.b"),
            vec!["must not contain dots"]
        );
        assert_eq!(
            validate_name(NameRule::Dns1035Label, "1a"),
            vec![DNS1035_MSG]
        );
        assert!(validate_name(NameRule::PathSegment, "system:admin").is_empty());
        assert_eq!(
            validate_name(NameRule::PathSegment, ".."),
            vec!["may not be '..'"]
        );
        assert_eq!(
            validate_name(NameRule::PathSegment, "."),
            vec!["may not be '.'"]
        );
        assert_eq!(
            validate_name(NameRule::PathSegment, "a/b%c"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        // generateName: the prefix form.
        assert!(name_errors(NameRule::PathSegment, "..", true).is_empty());
        assert!(name_errors(NameRule::Dns1123Subdomain, "web-", true).is_empty());
        assert!(name_errors(NameRule::Dns1123Label, "web-", true).is_empty());
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "-", true),
            vec![SUBDOMAIN_MSG]
        );
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "Web-", true),
            vec![SUBDOMAIN_MSG]
        );
        assert_eq!(
            name_errors(NameRule::Dns1123Subdomain, "wé-", true),
            vec![SUBDOMAIN_MSG]
        );
    }
}
