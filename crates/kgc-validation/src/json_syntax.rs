//! Go's `json.Unmarshal(data, &map[string]interface{}{})` as a yes/no with its error text, which
//! `ValidateSecret` echoes for `.dockercfg` and `.dockerconfigjson` payloads. The syntax pass
//! mirrors `encoding/json/scanner.go` (its messages name the offending byte and what the scanner
//! was looking for); a well-formed value that is not an object fails as the decoder reports it.

/// What the scanner expects next, as Go's scanner states name it.
#[derive(Clone, Copy)]
enum Container {
    Object,
    Array,
}

/// Go's `quoteChar`: the byte in single quotes, escaped as `strconv.Quote` would.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        _ => {
            let q = kgc_meta::gojson::go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

const EOF: &str = "unexpected end of JSON input";
/// `maxNestingDepth` in Go's scanner.
const MAX_DEPTH: usize = 10_000;

struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while self
            .b
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            self.pos += 1;
        }
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = *self.b.get(self.pos).ok_or(EOF)?;
        self.pos += 1;
        Ok(c)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// A string body after its opening quote.
    fn string(&mut self) -> Result<(), String> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(invalid(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// A number whose first byte (`-` or a digit) was consumed.
    fn number(&mut self, first: u8) -> Result<(), String> {
        let lead = if first == b'-' { self.next()? } else { first };
        match lead {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            c => return Err(invalid(c, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            match self.next()? {
                c if c.is_ascii_digit() => self.digits(),
                c => return Err(invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            let mut c = self.next()?;
            if matches!(c, b'+' | b'-') {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<(), String> {
        for expected in word.bytes().skip(1) {
            let c = self.next()?;
            if c != expected {
                return Err(invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(expected)),
                ));
            }
        }
        Ok(())
    }
}

/// The kind of the top-level value, for the decode error.
#[derive(Clone, Copy)]
enum TopKind {
    Object,
    Other(&'static str),
    Null,
}

/// Checks `data` as Go's `checkValid` does; returns the kind of the top-level value.
fn check_valid(data: &[u8]) -> Result<TopKind, String> {
    let mut s = Scanner { b: data, pos: 0 };
    let mut stack: Vec<Container> = Vec::new();
    let mut top = None;
    // Whether a value is expected (true) or a delimiter after one (false).
    let mut want_value = true;
    loop {
        s.skip_ws();
        if want_value {
            let c = s.next()?;
            let kind = match c {
                b'{' | b'[' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err("exceeded max depth".to_owned());
                    }
                    s.skip_ws();
                    let close = if c == b'{' { b'}' } else { b']' };
                    if c == b'{' {
                        stack.push(Container::Object);
                    } else {
                        stack.push(Container::Array);
                    }
                    top.get_or_insert(if c == b'{' {
                        TopKind::Object
                    } else {
                        TopKind::Other("array")
                    });
                    if s.peek() == Some(close) {
                        s.pos += 1;
                        stack.pop();
                        want_value = false;
                        if stack.is_empty() {
                            break;
                        }
                        continue;
                    }
                    if c == b'{' {
                        object_key(&mut s)?;
                    }
                    continue;
                }
                b'"' => {
                    s.string()?;
                    TopKind::Other("string")
                }
                b'-' | b'0'..=b'9' => {
                    s.number(c)?;
                    TopKind::Other("number")
                }
                b't' => {
                    s.literal("true")?;
                    TopKind::Other("bool")
                }
                b'f' => {
                    s.literal("false")?;
                    TopKind::Other("bool")
                }
                b'n' => {
                    s.literal("null")?;
                    TopKind::Null
                }
                c => return Err(invalid(c, "looking for beginning of value")),
            };
            top.get_or_insert(kind);
            want_value = false;
            if stack.is_empty() {
                break;
            }
            continue;
        }
        // After a value inside a container.
        let Some(container) = stack.last().copied() else {
            break;
        };
        let c = s.next()?;
        match (container, c) {
            (Container::Object, b',') => {
                s.skip_ws();
                object_key(&mut s)?;
                want_value = true;
            }
            (Container::Array, b',') => want_value = true,
            (Container::Object, b'}') | (Container::Array, b']') => {
                stack.pop();
                if stack.is_empty() {
                    break;
                }
            }
            (Container::Object, c) => return Err(invalid(c, "after object key:value pair")),
            (Container::Array, c) => return Err(invalid(c, "after array element")),
        }
    }
    s.skip_ws();
    if let Some(c) = s.peek() {
        return Err(invalid(c, "after top-level value"));
    }
    Ok(top.unwrap_or(TopKind::Null))
}

/// A key string and its colon; the value follows.
fn object_key(s: &mut Scanner<'_>) -> Result<(), String> {
    match s.next()? {
        b'"' => s.string()?,
        c => return Err(invalid(c, "looking for beginning of object key string")),
    }
    s.skip_ws();
    match s.next()? {
        b':' => Ok(()),
        c => Err(invalid(c, "after object key")),
    }
}

/// `json.Unmarshal(data, &map[string]interface{}{})`: `Err` with Go's message when it fails.
pub(crate) fn unmarshal_into_map(data: &[u8]) -> Result<(), String> {
    match check_valid(data)? {
        TopKind::Object | TopKind::Null => Ok(()),
        TopKind::Other(kind) => Err(format!(
            "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_go_accepts() {
        for ok in [
            r#"{}"#,
            r#" {"auths": {"r": {"auth": "eA=="}}} "#,
            r#"{"a": [1, -2.5e+3, true, false, null, "x\u00e9\n"]}"#,
            "null",
        ] {
            assert_eq!(unmarshal_into_map(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn reports_go_scanner_errors() {
        for (input, want) in [
            ("", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{a",
                "invalid character 'a' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                r#"{"a":1 "b"}"#,
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("[01]", "invalid character '1' after array element"),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "1ex",
                "invalid character 'x' in exponent of numeric literal",
            ),
            ("tru", "unexpected end of JSON input"),
            (
                "nul!",
                "invalid character '!' in literal null (expecting 'l')",
            ),
            ("\"\\q\"", "invalid character 'q' in string escape code"),
            (
                "\"\\u12x4\"",
                "invalid character 'x' in \\u hexadecimal character escape",
            ),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            (
                "{'a':1}",
                "invalid character '\\'' looking for beginning of object key string",
            ),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "\"s\"",
                "json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                "12",
                "json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
        ] {
            assert_eq!(
                unmarshal_into_map(input.as_bytes()),
                Err(want.to_owned()),
                "{input:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = "[".repeat(20_000);
        assert_eq!(
            unmarshal_into_map(deep.as_bytes()),
            Err("exceeded max depth".to_owned())
        );
    }
}
