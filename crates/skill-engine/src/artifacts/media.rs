//! Media types as artifacts keep and serve them (RFC 9110 §8.3.1): the essence `type/subtype`
//! in lower case and, of the parameters, only `charset`, whose value is a token, in lower case —
//! `Text/HTML; charset=UTF-8; foo=bar` is kept as `text/html; charset=utf-8`. What does not parse
//! as a media type is refused, so nothing but that form reaches a `Content-Type`.

/// The longest media type accepted, in bytes, as written.
pub const MAX_MEDIA_TYPE: usize = 200;

/// `text` in the form artifacts keep; why it is not a media type otherwise.
pub fn normalized(text: &str) -> Result<String, String> {
    if text.len() > MAX_MEDIA_TYPE {
        return Err(format!("a media type is at most {MAX_MEDIA_TYPE} bytes"));
    }
    let mut cursor = Cursor { bytes: text.trim_matches([' ', '\t']).as_bytes(), at: 0 };
    let kind = cursor.token().ok_or("a media type starts with its type, a token, such as text")?;
    if !cursor.eat(b'/') {
        return Err("a media type is type/subtype, such as text/csv".to_owned());
    }
    let subtype = cursor.token().ok_or("the subtype after `/` is a token, such as csv")?;
    let mut charset: Option<String> = None;
    loop {
        cursor.spaces();
        if cursor.done() {
            break;
        }
        if !cursor.eat(b';') {
            return Err(format!("after {kind}/{subtype}, only parameters follow, each after `;`"));
        }
        cursor.spaces();
        if cursor.done() || cursor.peek() == Some(b';') {
            continue;
        }
        let name = cursor.token().ok_or("a parameter is name=value, its name a token")?;
        if !cursor.eat(b'=') {
            return Err(format!("the parameter {name} has no `=value`"));
        }
        let value = match cursor.peek() {
            Some(b'"') => cursor
                .quoted()
                .ok_or_else(|| format!("the quoted value of {name} does not end, or holds a control character"))?,
            _ => cursor.token().ok_or_else(|| format!("the value of {name} is a token or a quoted string"))?.to_owned(),
        };
        if name.eq_ignore_ascii_case("charset") {
            if charset.is_some() {
                return Err("charset is given twice".to_owned());
            }
            if value.is_empty() || !value.bytes().all(is_tchar) {
                return Err(format!("the charset {value:?} is not a token (letters, digits and !#$%&'*+-.^_`|~)"));
            }
            charset = Some(value.to_ascii_lowercase());
        }
    }
    let essence = format!("{}/{}", kind.to_ascii_lowercase(), subtype.to_ascii_lowercase());
    Ok(match charset {
        Some(charset) => format!("{essence}; charset={charset}"),
        None => essence,
    })
}

/// What a stored media type is served as: its normalized form, or `application/octet-stream`
/// for one that does not parse (a row written before media types were kept normalized).
pub fn served(stored: &str) -> String {
    normalized(stored).unwrap_or_else(|_| "application/octet-stream".to_owned())
}

/// A token's characters (RFC 9110 §5.6.2).
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let eaten = self.peek() == Some(byte);
        self.at += usize::from(eaten);
        eaten
    }

    fn spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// One or more token characters.
    fn token(&mut self) -> Option<&'a str> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        // Token characters are ASCII: the slice is text.
        std::str::from_utf8(&self.bytes[start..self.at]).ok().filter(|token| !token.is_empty())
    }

    /// A quoted string, its escapes undone; `None` when it does not end or holds a control
    /// character.
    fn quoted(&mut self) -> Option<String> {
        self.eat(b'"');
        let mut value = Vec::new();
        loop {
            let byte = self.peek()?;
            self.at += 1;
            match byte {
                b'"' => return Some(String::from_utf8_lossy(&value).into_owned()),
                b'\\' => {
                    let escaped = self.peek().filter(|&b| b == b'\t' || !b.is_ascii_control())?;
                    self.at += 1;
                    value.push(escaped);
                }
                b'\t' => value.push(byte),
                _ if byte.is_ascii_control() => return None,
                _ => value.push(byte),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::normalized;

    #[test]
    fn a_media_type_is_kept_as_its_essence_and_charset() {
        let kept = |text: &str| normalized(text).unwrap_or_else(|why| panic!("{text:?}: {why}"));
        assert_eq!(kept("Text/HTML; charset=UTF-8; foo=bar"), "text/html; charset=utf-8");
        assert_eq!(kept("text/csv"), "text/csv");
        assert_eq!(kept("  application/JSON  "), "application/json");
        assert_eq!(kept("text/plain;charset=\"utf-8\""), "text/plain; charset=utf-8");
        assert_eq!(kept("text/plain ; format=flowed ;; CHARSET=iso-8859-1 ;"), "text/plain; charset=iso-8859-1");
        assert_eq!(kept("image/svg+xml; name=\"a \\\"b\\\";c\""), "image/svg+xml");
        assert_eq!(kept("application/vnd.ms-excel"), "application/vnd.ms-excel");
        assert_eq!(super::served("TEXT/HTML;x=1"), "text/html");
        assert_eq!(super::served("text/html\"><script>"), "application/octet-stream");
    }

    #[test]
    fn what_is_not_a_media_type_is_refused_saying_why() {
        let refused = |text: &str| normalized(text).expect_err(text);
        assert!(refused("plain").contains("type/subtype"));
        assert!(refused("text/").contains("subtype"));
        assert!(refused("/html").contains("type"));
        assert!(refused("text/html, text/plain").contains("parameters"));
        assert!(refused("text/html garbage").contains("parameters"));
        assert!(refused("text/html; charset").contains("`=value`"));
        assert!(refused("text/html; charset=\"utf 8\"").contains("not a token"));
        assert!(refused("text/html; charset=\"\"").contains("not a token"));
        assert!(refused("text/html; charset=a; charset=b").contains("twice"));
        assert!(refused("text/html; x=\"open").contains("does not end"));
        assert!(refused("text/html; x=\"a\u{1}b\"").contains("does not end"));
        assert!(refused("text/html; x=a\u{0}").contains("parameters"));
        assert!(refused("text/html\r\nX-Injected: 1").contains("parameters"));
        assert!(refused("tëxt/html").contains("type"));
        assert!(refused(&format!("text/{}", "a".repeat(200))).contains("200 bytes"));
    }
}
