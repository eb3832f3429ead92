//! A tiny XML writer that emits inclusive
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
//! Written straight into one `String`: no per-element allocation (open
//! element names live in one buffer), attributes copied and sorted only when
//! not already in canonical order.

use std::borrow::Cow;
use std::cmp::Ordering;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum XmlWriteError {
    /// `Io` and `Utf8` are no longer produced (the writer appends to a
    /// `String`); kept so the type stays as callers know it.
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

/// Appends `s` escaped as [`escape_text`] does.
fn push_text(out: &mut String, s: &str) {
    push_escaped(out, s, |b| match b {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'>' => Some("&gt;"),
        b'\r' => Some("&#xD;"),
        _ => None,
    });
}

/// Appends `s` escaped as [`escape_attr`] does.
fn push_attr(out: &mut String, s: &str) {
    push_escaped(out, s, |b| match b {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'"' => Some("&quot;"),
        b'\t' => Some("&#x9;"),
        b'\n' => Some("&#xA;"),
        b'\r' => Some("&#xD;"),
        _ => None,
    });
}

/// Appends `s`, replacing each ASCII byte `entity` maps. Runs between
/// replacements are copied whole; they start and end next to an ASCII byte,
/// so on `char` boundaries.
#[inline]
fn push_escaped(out: &mut String, s: &str, entity: impl Fn(u8) -> Option<&'static str>) {
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        if let Some(e) = entity(b) {
            out.push_str(&s[from..i]);
            out.push_str(e);
            from = i + 1;
        }
    }
    out.push_str(&s[from..]);
}

/// Canonical order of (unqualified) attributes: unprefixed attributes have
/// no namespace and sort first, by local name; prefixed ones (we write none
/// besides namespace declarations) follow by qualified name.
fn attr_order(a: &(&str, &str), b: &(&str, &str)) -> Ordering {
    let ap = a.0.contains(':');
    let bp = b.0.contains(':');
    ap.cmp(&bp).then_with(|| a.0.cmp(b.0))
}

/// Writer of canonical XML.
pub struct XmlWriter {
    out: String,
    /// Names of the open elements, one after another; `open_at` holds where
    /// each starts.
    open_names: String,
    open_at: Vec<usize>,
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
            out: String::with_capacity(bytes),
            open_names: String::with_capacity(256),
            open_at: Vec::with_capacity(16),
            error: None,
        }
    }

    /// `<?xml version="1.0" encoding="UTF-8" standalone="no"?>` (not part of
    /// the canonical form; the signer skips it).
    pub fn declaration(&mut self) {
        self.out
            .push_str("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>");
    }

    fn push_attribute(&mut self, key_prefix: &str, key: &str, value: &str) {
        self.out.push(' ');
        self.out.push_str(key_prefix);
        self.out.push_str(key);
        self.out.push_str("=\"");
        push_attr(&mut self.out, value);
        self.out.push('"');
    }

    /// `<name ns attrs>`, not recorded as open.
    fn open_tag(&mut self, name: &str, ns: &[(&str, &str)], attrs: &[(&str, &str)]) {
        self.out.push('<');
        self.out.push_str(name);
        for (prefix, uri) in ns {
            if prefix.is_empty() {
                self.push_attribute("xmlns", "", uri);
            } else {
                self.push_attribute("xmlns:", prefix, uri);
            }
        }
        let in_order = attrs
            .iter()
            .zip(attrs.iter().skip(1))
            .all(|(a, b)| attr_order(a, b) != Ordering::Greater);
        if in_order {
            for (k, v) in attrs {
                self.push_attribute("", k, v);
            }
        } else {
            let mut sorted: Vec<(&str, &str)> = attrs.to_vec();
            sorted.sort_by(attr_order);
            for (k, v) in sorted {
                self.push_attribute("", k, v);
            }
        }
        self.out.push('>');
    }

    fn start_with(&mut self, name: &str, ns: &[(&str, &str)], attrs: &[(&str, &str)]) {
        self.open_tag(name, ns, attrs);
        self.open_at.push(self.open_names.len());
        self.open_names.push_str(name);
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
        let open = self.open_at.pop();
        let matches = open.is_some_and(|at| self.open_names.get(at..) == Some(name));
        if !matches && self.error.is_none() {
            self.error = Some(XmlWriteError::Unbalanced {
                expected: open
                    .and_then(|at| self.open_names.get(at..))
                    .unwrap_or_default()
                    .to_string(),
                got: name.to_string(),
            });
        }
        if let Some(at) = open {
            self.open_names.truncate(at);
        }
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
    }

    /// Character content, escaped.
    pub fn text(&mut self, text: &str) {
        push_text(&mut self.out, text);
    }

    /// `<name attrs>text</name>`.
    /// Balanced by construction, so it skips the open-element stack
    /// (most elements are leaves).
    pub fn leaf(&mut self, name: &str, attrs: &[(&str, &str)], text: &str) {
        self.open_tag(name, &[], attrs);
        self.text(text);
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
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
        if let Some(&at) = self.open_at.last() {
            return Err(XmlWriteError::Unbalanced {
                expected: self.open_names.get(at..).unwrap_or_default().to_string(),
                got: String::new(),
            });
        }
        Ok(self.out)
    }
}

#[cfg(test)]
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
