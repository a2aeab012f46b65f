//! Kubernetes' URL library (kubernetes/apiserver `pkg/cel/library/urls.go`): `url(s)`,
//! `isURL(s)`, and on a URL `getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`. A URL is what Go's `url.ParseRequestURI` accepts (an absolute
//! URI or an absolute path), taken apart as `url.Parse` does.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::{Key, Opaque};
use cel::{Env, Value};

use super::{error, function, opaque, opaque_arg, string_arg};

/// A parsed `kubernetes.URL`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    /// The path as written (still escaped), and as Go's `Path` has it (unescaped).
    raw_path: String,
    path: String,
    raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

fn url_type() -> Type {
    Type::new_opaque_type("kubernetes.URL")
}

pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], parse)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    for (name, id, f) in [
        (
            "getScheme",
            "url_get_scheme",
            get_scheme as cel::common::functions::Function,
        ),
        ("getHost", "url_get_host", get_host),
        ("getHostname", "url_get_hostname", get_hostname),
        ("getPort", "url_get_port", get_port),
        ("getEscapedPath", "url_get_escaped_path", get_escaped_path),
        ("getQuery", "url_get_query", get_query),
    ] {
        env.add_member_overload(name, id, url_type(), vec![], f)?;
    }
    Ok(())
}

/// Go's `url.ParseRequestURI` (`via_request`) or `url.Parse` after the fragment is cut; the
/// error is Go's (`parse "x": invalid URI for request`).
pub(crate) fn parse_url(raw: &str, via_request: bool) -> Result<Url, String> {
    let wrap = |why: String| format!("parse {raw:?}: {why}");
    let fail = |why: &str| Err(wrap(why.to_owned()));
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return fail("net/url: invalid control character in URL");
    }
    if raw.is_empty() && via_request {
        return fail("empty url");
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".into();
        url.raw_path = "*".into();
        return Ok(url);
    }
    let mut rest = raw;
    // getScheme
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return fail("missing protocol scheme"),
            ':' => {
                url.scheme = raw[..i].to_ascii_lowercase();
                rest = &raw[i + 1..];
                break;
            }
            _ => break,
        }
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.into();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL (`mailto:x`): no host, no path.
            return Ok(url);
        }
        if via_request {
            return fail("invalid URI for request");
        }
        if rest.split('/').next().is_some_and(|s| s.contains(':')) {
            return fail("first path segment in URL cannot contain colon");
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, path) = after.find('/').map_or((after, ""), |i| after.split_at(i));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        check_host(host).map_err(wrap)?;
        url.host = unescape(host, false).map_err(wrap)?;
        rest = path;
    }
    url.path = unescape(rest, false).map_err(wrap)?;
    url.raw_path = rest.into();
    Ok(url)
}

/// Go's `parseHost` checks: a bracketed IPv6 literal, and a port of digits only.
fn check_host(host: &str) -> Result<(), String> {
    let port = if let Some(inner) = host.strip_prefix('[') {
        let Some(close) = inner.find(']') else {
            return Err("missing ']' in host".into());
        };
        &inner[close + 1..]
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    let valid = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(format!("invalid port {port:?} after host"))
    }
}

/// Go's `unescape`: `%XX` decoded (an invalid one is `invalid URL escape "%zz"`), `+` a space
/// in a query.
fn unescape(s: &str, query: bool) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
                let Some(hex) = hex else {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("invalid URL escape {bad:?}"));
                };
                let text = std::str::from_utf8(hex).unwrap_or("00");
                out.push(u8::from_str_radix(text, 16).unwrap_or(0));
                i += 3;
            }
            b'+' if query => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `shouldEscape(c, encodePath)`.
fn path_escapes(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c))
}

impl Url {
    /// Go's `EscapedPath`: the path as written when it is a valid escaping of the path, else
    /// the path escaped.
    fn escaped_path(&self) -> String {
        let valid = self
            .raw_path
            .bytes()
            .all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !path_escapes(c));
        if valid && unescape(&self.raw_path, false).as_deref() == Ok(self.path.as_str()) {
            return self.raw_path.clone();
        }
        let mut out = String::new();
        for c in self.path.bytes() {
            if path_escapes(c) {
                out.push_str(&format!("%{c:02X}"));
            } else {
                out.push(char::from(c));
            }
        }
        out
    }

    fn hostname(&self) -> &str {
        let (host, _) = self.split_port();
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    fn port(&self) -> &str {
        self.split_port().1
    }

    /// Go's `splitHostPort`: the port is what follows the last colon after any `]`.
    fn split_port(&self) -> (&str, &str) {
        let host = self.host.as_str();
        match host.rfind(':') {
            Some(i)
                if !host[i..].contains(']')
                    && (!host.starts_with('[') || host[..i].ends_with(']')) =>
            {
                (&host[..i], &host[i + 1..])
            }
            _ => (host, ""),
        }
    }

    /// Go's `Query()`: `k=v` pairs split at `&`, unescaped; a pair with `;` or a bad escape is
    /// dropped.
    fn query(&self) -> HashMap<String, Vec<String>> {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for pair in self
            .raw_query
            .split('&')
            .filter(|p| !p.is_empty() && !p.contains(';'))
        {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Ok(k), Ok(v)) = (unescape(k, true), unescape(v, true)) {
                out.entry(k).or_default().push(v);
            }
        }
        out
    }
}

function!(parse, |args: &[Value]| {
    let raw = string_arg(args, 0, "url")?;
    let wrap = |e: String| {
        error(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    };
    parse_url(raw, true).map_err(wrap)?;
    // As upstream, parsed again without the fragment, which ParseRequestURI keeps in the path.
    let without_fragment = raw.split_once('#').map_or(raw, |(u, _)| u);
    parse_url(without_fragment, false).map(opaque).map_err(wrap)
});

function!(is_url, |args: &[Value]| {
    Ok(Value::Bool(
        parse_url(string_arg(args, 0, "isURL")?, true).is_ok(),
    ))
});

fn this<'a>(args: &'a [Value], function: &str) -> Result<&'a Url, cel::ExecutionError> {
    opaque_arg::<Url>(args, 0, function)
}

function!(get_scheme, |args: &[Value]| Ok(Value::from(
    this(args, "getScheme")?.scheme.as_str()
)));
function!(get_host, |args: &[Value]| Ok(Value::from(
    this(args, "getHost")?.host.as_str()
)));
function!(get_hostname, |args: &[Value]| Ok(Value::from(
    this(args, "getHostname")?.hostname()
)));
function!(get_port, |args: &[Value]| Ok(Value::from(
    this(args, "getPort")?.port()
)));
function!(get_escaped_path, |args: &[Value]| {
    Ok(Value::from(this(args, "getEscapedPath")?.escaped_path()))
});
function!(get_query, |args: &[Value]| {
    let query: HashMap<Key, Value> = this(args, "getQuery")?
        .query()
        .into_iter()
        .map(|(k, v)| {
            let values: Vec<Value> = v.into_iter().map(Value::from).collect();
            (Key::String(Arc::new(k)), Value::List(Arc::new(values)))
        })
        .collect();
    Ok(Value::from(query))
});

#[cfg(test)]
mod tests {
    use crate::library::tests::{eval, eval_err};
    use cel::Value;

    /// The examples of kubernetes/apiserver `pkg/cel/library/urls.go` and its tests.
    #[test]
    fn the_url_library() {
        let t = |s: &str| assert_eq!(eval(s), Value::Bool(true), "{s}");
        t("isURL('https://user:pass@example.com:80/path?query=val#fragment')");
        t("isURL('/absolute-path')");
        t("!isURL('https://a:b:c/')");
        t("!isURL('../relative-path')");
        t("url('/path').getScheme() == ''");
        t("url('https://example.com/').getScheme() == 'https'");
        t("url('https://example.com:80/').getHost() == 'example.com:80'");
        t("url('https://example.com/').getHost() == 'example.com'");
        t("url('https://[::1]:80/').getHost() == '[::1]:80'");
        t("url('https://[::1]/').getHost() == '[::1]'");
        t("url('/path').getHost() == ''");
        t("url('https://example.com:80/').getHostname() == 'example.com'");
        t("url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'");
        t("url('https://[::1]:80/').getHostname() == '::1'");
        t("url('/path').getHostname() == ''");
        t("url('https://example.com:80/').getPort() == '80'");
        t("url('https://example.com/').getPort() == ''");
        t("url('/path').getPort() == ''");
        t("url('https://example.com/path').getEscapedPath() == '/path'");
        t(
            "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
        );
        t("url('https://example.com').getEscapedPath() == ''");
        t(
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        );
        t(
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
        );
        t("url('https://example.com/path?').getQuery() == {}");
        t("url('https://example.com/path').getQuery() == {}");
        t("url('https://example.com/a#frag').getEscapedPath() == '/a'");
        assert_eq!(
            eval_err("url('../relative-path')"),
            "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"
        );
        assert_eq!(
            eval_err("url('https://a:b:c/')"),
            "URL parse error during conversion from string: parse \"https://a:b:c/\": invalid port \":c\" after host"
        );
    }
}
