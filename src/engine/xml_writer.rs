//! A tiny XML writer on top of `quick_xml::Writer` that emits inclusive
//! C14N 1.0 canonical form directly, so the signer can hash the bytes as they
//! are:
//!
//! - never a self-closing tag (`<a></a>`);
//! - attributes sorted in canonical order (unprefixed, by local name);
//!   namespace declarations only on the root, default first, then by prefix;
//! - text escaped as C14N does: `&amp; &lt; &gt;` and `\r` as `&#xD;`
//!   (quotes stay literal);
//! - attribute values escaped as C14N does: `&amp; &lt; &quot; &#x9; &#xA;
//!   &#xD;` (`>` stays literal);
//! - no indentation, no whitespace between elements.
//!
//! Content goes to quick-xml already escaped (`BytesText::from_escaped`,
//! raw `Attribute` values), so quick-xml never re-escapes it.

use std::borrow::Cow;

use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::name::QName;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum XmlWriteError {
    #[error("xml write failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("xml output is not UTF-8")]
    Utf8,
    #[error("unbalanced element: expected </{expected}>, got </{got}>")]
    Unbalanced { expected: String, got: String },
}

/// Escapes character content as inclusive C14N does.
pub fn escape_text(s: &str) -> Cow<'_, str> {
    if !s.bytes().any(|b| matches!(b, b'&' | b'<' | b'>' | b'\r')) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Escapes an attribute value as inclusive C14N does.
pub fn escape_attr(s: &str) -> Cow<'_, str> {
    if !s
        .bytes()
        .any(|b| matches!(b, b'&' | b'<' | b'"' | b'\t' | b'\n' | b'\r'))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Canonical order of (unqualified) attributes: unprefixed attributes have
/// no namespace and sort first, by local name; prefixed ones (we write none
/// besides namespace declarations) follow by qualified name.
fn attr_order(a: &(&str, &str), b: &(&str, &str)) -> std::cmp::Ordering {
    let ap = a.0.contains(':');
    let bp = b.0.contains(':');
    ap.cmp(&bp).then_with(|| a.0.cmp(b.0))
}

/// Writer of canonical XML.
pub struct XmlWriter {
    inner: quick_xml::Writer<Vec<u8>>,
    stack: Vec<String>,
    error: Option<XmlWriteError>,
}

impl Default for XmlWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl XmlWriter {
    pub fn new() -> Self {
        Self::with_capacity(16 * 1024)
    }

    pub fn with_capacity(bytes: usize) -> Self {
        XmlWriter {
            inner: quick_xml::Writer::new(Vec::with_capacity(bytes)),
            stack: Vec::with_capacity(16),
            error: None,
        }
    }

    fn emit(&mut self, event: Event<'_>) {
        if self.error.is_none() {
            if let Err(e) = self.inner.write_event(event) {
                self.error = Some(e.into());
            }
        }
    }

    /// `<?xml version="1.0" encoding="UTF-8" standalone="no"?>` (not part of
    /// the canonical form; the signer skips it).
    pub fn declaration(&mut self) {
        self.emit(Event::Decl(BytesDecl::new(
            "1.0",
            Some("UTF-8"),
            Some("no"),
        )));
    }

    fn start_with(&mut self, name: &str, ns: &[(&str, &str)], attrs: &[(&str, &str)]) {
        let mut start = BytesStart::new(name);
        for (prefix, uri) in ns {
            let key = if prefix.is_empty() {
                Cow::Borrowed("xmlns")
            } else {
                Cow::Owned(format!("xmlns:{prefix}"))
            };
            let escaped = escape_attr(uri);
            start.push_attribute(Attribute {
                key: QName(key.as_bytes()),
                value: Cow::Borrowed(escaped.as_bytes()),
            });
        }
        let mut sorted: Vec<(&str, &str)> = attrs.to_vec();
        sorted.sort_by(attr_order);
        for (k, v) in sorted {
            let escaped = escape_attr(v);
            start.push_attribute(Attribute {
                key: QName(k.as_bytes()),
                value: Cow::Borrowed(escaped.as_bytes()),
            });
        }
        self.emit(Event::Start(start));
        self.stack.push(name.to_string());
    }

    /// The root element with its namespace declarations: `default_ns` first,
    /// then `prefixed` sorted by prefix, then the other attributes.
    pub fn root_start(
        &mut self,
        name: &str,
        default_ns: &str,
        prefixed: &[(&str, &str)],
        attrs: &[(&str, &str)],
    ) {
        let mut ns: Vec<(&str, &str)> = Vec::with_capacity(prefixed.len() + 1);
        ns.push(("", default_ns));
        let mut rest = prefixed.to_vec();
        rest.sort_by(|a, b| a.0.cmp(b.0));
        ns.extend(rest);
        self.start_with(name, &ns, attrs);
    }

    /// Opens an element (attributes in any order; they are sorted).
    pub fn start(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.start_with(name, &[], attrs);
    }

    /// Opens an element without attributes.
    pub fn open(&mut self, name: &str) {
        self.start_with(name, &[], &[]);
    }

    /// Closes the innermost open element, which must be `name`.
    pub fn end(&mut self, name: &str) {
        match self.stack.pop() {
            Some(open) if open == name => {}
            other => {
                if self.error.is_none() {
                    self.error = Some(XmlWriteError::Unbalanced {
                        expected: other.unwrap_or_default(),
                        got: name.to_string(),
                    });
                }
            }
        }
        self.emit(Event::End(BytesEnd::new(name)));
    }

    /// Character content, escaped.
    pub fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let escaped = escape_text(text);
        self.emit(Event::Text(BytesText::from_escaped(escaped)));
    }

    /// `<name attrs>text</name>`.
    pub fn leaf(&mut self, name: &str, attrs: &[(&str, &str)], text: &str) {
        self.start(name, attrs);
        self.text(text);
        self.end(name);
    }

    /// `<name>text</name>`.
    pub fn el(&mut self, name: &str, text: &str) {
        self.leaf(name, &[], text);
    }

    /// The document, or the first error met.
    pub fn finish(self) -> Result<String, XmlWriteError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let Some(open) = self.stack.last() {
            return Err(XmlWriteError::Unbalanced {
                expected: open.clone(),
                got: String::new(),
            });
        }
        String::from_utf8(self.inner.into_inner()).map_err(|_| XmlWriteError::Utf8)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_c14n() {
        assert_eq!(
            escape_text("a&b<c>d\"e'f\r\n\t"),
            "a&amp;b&lt;c&gt;d\"e'f&#xD;\n\t"
        );
        assert_eq!(
            escape_attr("a&b<c>d\"e'f\r\n\t"),
            "a&amp;b&lt;c>d&quot;e'f&#xD;&#xA;&#x9;"
        );
        assert!(matches!(escape_text("plain ñ 𝄞"), Cow::Borrowed(_)));
    }

    #[test]
    fn writes_canonical_form() {
        let mut w = XmlWriter::new();
        w.declaration();
        w.root_start(
            "Invoice",
            "urn:x",
            &[("xsi", "urn:xsi"), ("cbc", "urn:cbc"), ("cac", "urn:cac")],
            &[],
        );
        w.start("cac:A", &[("z", "1"), ("schemeID", "\"4\""), ("a", "<&>")]);
        w.el("cbc:Empty", "");
        w.el("cbc:T", "x < y & z > w");
        w.end("cac:A");
        w.end("Invoice");
        let s = w.finish().unwrap();
        assert_eq!(
            s,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\
             <Invoice xmlns=\"urn:x\" xmlns:cac=\"urn:cac\" xmlns:cbc=\"urn:cbc\" xmlns:xsi=\"urn:xsi\">\
             <cac:A a=\"&lt;&amp;>\" schemeID=\"&quot;4&quot;\" z=\"1\">\
             <cbc:Empty></cbc:Empty><cbc:T>x &lt; y &amp; z &gt; w</cbc:T></cac:A></Invoice>"
        );
    }

    #[test]
    fn unbalanced_is_an_error() {
        let mut w = XmlWriter::new();
        w.open("a");
        w.end("b");
        assert!(w.finish().is_err());
        let mut w = XmlWriter::new();
        w.open("a");
        assert!(w.finish().is_err());
    }
}
