//! A small canonicalizer over `roxmltree` for VERIFYING arbitrary documents
//! (the signing hot path never parses: see `xades/sign.rs`).
//!
//! Supports Canonical XML 1.0 (inclusive) and Exclusive XML Canonicalization
//! 1.0 (with an InclusiveNamespaces PrefixList), with or without comments, on
//! (a) a whole document, optionally with one element subtree left out (the
//! enveloped-signature transform), and (b) an element subtree taken as a
//! document subset (the apex carries the namespaces it needs: inclusive = all
//! in-scope namespaces but `xml`, plus `xml:*` attributes inherited from
//! ancestors; exclusive = visibly utilized + prefix list).
//!
//! Input limits: documents must have been parsed by roxmltree with the
//! `positions` feature (the default), because roxmltree does not keep
//! prefixes; they are read back from the source text.

use std::collections::HashMap;

use roxmltree::{Node, NodeId, NodeType};

/// The XML namespace (`xml:` prefix).
pub const NS_XML: &str = "http://www.w3.org/XML/1998/namespace";

/// `http://www.w3.org/TR/2001/REC-xml-c14n-20010315`
pub const ALG_C14N: &str = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315";
/// `…#WithComments`
pub const ALG_C14N_WITH_COMMENTS: &str =
    "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments";
/// `http://www.w3.org/2001/10/xml-exc-c14n#`
pub const ALG_EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
/// `…#WithComments`
pub const ALG_EXC_C14N_WITH_COMMENTS: &str = "http://www.w3.org/2001/10/xml-exc-c14n#WithComments";

/// Which canonicalization to apply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Algorithm {
    /// Exclusive C14N (true) or inclusive C14N 1.0 (false).
    pub exclusive: bool,
    /// Keep comments (the `#WithComments` variants).
    pub with_comments: bool,
    /// Exclusive only: InclusiveNamespaces PrefixList (`#default` = default ns).
    pub inclusive_prefixes: Vec<String>,
}

impl Algorithm {
    /// Inclusive C14N 1.0 without comments.
    pub fn inclusive() -> Algorithm {
        Algorithm::default()
    }

    /// Exclusive C14N 1.0 without comments, with a PrefixList.
    pub fn exclusive(prefixes: &[&str]) -> Algorithm {
        Algorithm {
            exclusive: true,
            with_comments: false,
            inclusive_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The algorithm named by a `CanonicalizationMethod`/`Transform` URI
    /// (prefix list empty), or `None` if unsupported.
    pub fn from_uri(uri: &str) -> Option<Algorithm> {
        let (exclusive, with_comments) = match uri {
            ALG_C14N => (false, false),
            ALG_C14N_WITH_COMMENTS => (false, true),
            ALG_EXC_C14N => (true, false),
            ALG_EXC_C14N_WITH_COMMENTS => (true, true),
            _ => return None,
        };
        Some(Algorithm {
            exclusive,
            with_comments,
            inclusive_prefixes: Vec::new(),
        })
    }
}

/// Canonicalize `node`: the document root node gives the whole document, an
/// element gives that subtree as a document subset. The subtree of `exclude`
/// (if any) is left out.
pub fn canonicalize(node: Node<'_, '_>, exclude: Option<NodeId>, alg: &Algorithm) -> String {
    let mut out = String::with_capacity(node.range().len() + 64);
    canonicalize_into(node, exclude, alg, &mut out);
    out
}

/// As [`canonicalize`], appending to `out`.
pub fn canonicalize_into(
    node: Node<'_, '_>,
    exclude: Option<NodeId>,
    alg: &Algorithm,
    out: &mut String,
) {
    if Some(node.id()) == exclude {
        return;
    }
    match node.node_type() {
        NodeType::Root => {
            let mut seen_element = false;
            for c in node.children() {
                if Some(c.id()) == exclude {
                    continue;
                }
                match c.node_type() {
                    NodeType::Element => {
                        Walker::new(alg, exclude, c).run_from(c, out);
                        seen_element = true;
                    }
                    NodeType::PI | NodeType::Comment => {
                        if c.is_comment() && !alg.with_comments {
                            continue;
                        }
                        if seen_element {
                            out.push('\n');
                        }
                        write_leaf(c, out);
                        if !seen_element {
                            out.push('\n');
                        }
                    }
                    _ => {}
                }
            }
        }
        NodeType::Element => Walker::new(alg, exclude, node).run_from(node, out),
        _ => {
            if node.is_comment() && !alg.with_comments {
                return;
            }
            write_leaf(node, out);
        }
    }
}

/// Text, PI or comment node.
fn write_leaf(n: Node<'_, '_>, out: &mut String) {
    match n.node_type() {
        NodeType::Text => escape_text(n.text().unwrap_or(""), out),
        NodeType::PI => {
            if let Some(pi) = n.pi() {
                out.push_str("<?");
                out.push_str(pi.target);
                if let Some(v) = pi.value {
                    if !v.is_empty() {
                        out.push(' ');
                        out.push_str(v);
                    }
                }
                out.push_str("?>");
            }
        }
        NodeType::Comment => {
            out.push_str("<!--");
            out.push_str(n.text().unwrap_or(""));
            out.push_str("-->");
        }
        _ => {}
    }
}

/// Canonical text escaping: `&`, `<`, `>`, CR.
pub fn escape_text(s: &str, out: &mut String) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\r' => "&#xD;",
            _ => continue,
        };
        out.push_str(s.get(last..i).unwrap_or(""));
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(s.get(last..).unwrap_or(""));
}

/// Canonical attribute-value escaping: `&`, `<`, `"`, TAB, LF, CR.
pub fn escape_attr(s: &str, out: &mut String) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'"' => "&quot;",
            b'\t' => "&#x9;",
            b'\n' => "&#xA;",
            b'\r' => "&#xD;",
            _ => continue,
        };
        out.push_str(s.get(last..i).unwrap_or(""));
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(s.get(last..).unwrap_or(""));
}

/// Qualified name of an element as written in the source.
fn element_qname<'i>(n: Node<'_, 'i>) -> std::borrow::Cow<'i, str> {
    let local = n.tag_name().name();
    let text = n.document().input_text();
    let start = n.range().start + 1;
    if let Some(rest) = text.get(start..) {
        let end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
            .unwrap_or(rest.len());
        if let Some(q) = rest.get(..end) {
            let matches = match q.split_once(':') {
                Some((_, l)) => l == local,
                None => q == local,
            };
            if matches {
                return std::borrow::Cow::Borrowed(q);
            }
        }
    }
    // Fallback (e.g. element from an entity expansion): any prefix bound to the URI.
    match n.tag_name().namespace() {
        Some(ns) if n.default_namespace() != Some(ns) => match n.lookup_prefix(ns) {
            Some(p) if !p.is_empty() => std::borrow::Cow::Owned(format!("{p}:{local}")),
            _ => std::borrow::Cow::Owned(local.to_string()),
        },
        _ => std::borrow::Cow::Owned(local.to_string()),
    }
}

fn prefix_of(qname: &str) -> &str {
    qname.split_once(':').map(|(p, _)| p).unwrap_or("")
}

/// Qualified name of an attribute as written in the source.
fn attr_qname<'i>(el: Node<'_, 'i>, a: &roxmltree::Attribute<'_, 'i>) -> std::borrow::Cow<'i, str> {
    let local = a.name();
    let text = el.document().input_text();
    if let Some(q) = text.get(a.range_qname()) {
        let matches = match q.split_once(':') {
            Some((_, l)) => l == local,
            None => q == local,
        };
        if matches {
            return std::borrow::Cow::Borrowed(q);
        }
    }
    match a.namespace() {
        Some(NS_XML) => std::borrow::Cow::Owned(format!("xml:{local}")),
        Some(ns) => match el.lookup_prefix(ns) {
            Some(p) if !p.is_empty() => std::borrow::Cow::Owned(format!("{p}:{local}")),
            _ => std::borrow::Cow::Owned(local.to_string()),
        },
        None => std::borrow::Cow::Owned(local.to_string()),
    }
}

/// The namespace prefixes an element declares itself (`xmlns` gives ""),
/// read from its start tag in the source: roxmltree only gives the
/// namespaces in scope. `None` when the source does not show the element
/// (then every namespace in scope is taken as declared).
fn declared_prefixes<'i>(el: Node<'_, 'i>) -> Option<Vec<&'i str>> {
    let text = el.document().input_text();
    let b = text.as_bytes();
    let start = el.range().start;
    if b.get(start) != Some(&b'<') {
        return None;
    }
    let mut found = Vec::new();
    let mut i = start + 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'>' => return Some(found),
            b'"' | b'\'' => {
                let close = b.get(i + 1..)?.iter().position(|&q| q == c)?;
                i += close + 2;
                continue;
            }
            _ if c.is_ascii_whitespace() => {
                let rest = text.get(i + 1..)?;
                if let Some(after) = rest.strip_prefix("xmlns") {
                    if let Some(named) = after.strip_prefix(':') {
                        let len = named
                            .find(|ch: char| ch == '=' || ch.is_ascii_whitespace())
                            .unwrap_or(named.len());
                        found.push(named.get(..len)?);
                    } else if after.starts_with(|ch: char| ch == '=' || ch.is_ascii_whitespace()) {
                        found.push("");
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Prefix → URI bindings with an undo log, one mark per open element: the
/// namespaces in scope, and those rendered by output ancestors, are kept
/// per level instead of being looked up again for every element.
#[derive(Default)]
struct Bindings {
    map: HashMap<String, String>,
    undo: Vec<(String, Option<String>)>,
    marks: Vec<usize>,
}

impl Bindings {
    fn get(&self, prefix: &str) -> Option<&str> {
        self.map.get(prefix).map(String::as_str)
    }

    fn set(&mut self, prefix: &str, uri: &str) {
        let old = self.map.insert(prefix.to_string(), uri.to_string());
        self.undo.push((prefix.to_string(), old));
    }

    fn open(&mut self) {
        self.marks.push(self.undo.len());
    }

    fn close(&mut self) {
        let mark = self.marks.pop().unwrap_or(0);
        while self.undo.len() > mark {
            if let Some((prefix, old)) = self.undo.pop() {
                match old {
                    Some(uri) => self.map.insert(prefix, uri),
                    None => self.map.remove(&prefix),
                };
            }
        }
    }
}

struct Walker<'a> {
    alg: &'a Algorithm,
    exclude: Option<NodeId>,
    apex: NodeId,
    /// Namespaces in scope at the element being written ("" = default; an
    /// empty URI is an undeclared default).
    in_scope: Bindings,
    /// Namespace declarations rendered by output ancestors.
    rendered: Bindings,
}

enum Step<'a, 'i> {
    Open(Node<'a, 'i>),
    Close(Node<'a, 'i>),
}

impl<'a> Walker<'a> {
    fn new(alg: &'a Algorithm, exclude: Option<NodeId>, apex: Node<'_, '_>) -> Walker<'a> {
        Walker {
            alg,
            exclude,
            apex: apex.id(),
            in_scope: Bindings::default(),
            rendered: Bindings::default(),
        }
    }

    /// In-scope URI of `prefix`; `None` when unbound (an empty default
    /// counts as unbound).
    fn bound(&self, prefix: &str) -> Option<&str> {
        self.in_scope.get(prefix).filter(|u| !u.is_empty())
    }

    fn run_from(mut self, apex: Node<'_, '_>, out: &mut String) {
        let mut todo: Vec<Step<'_, '_>> = vec![Step::Open(apex)];
        while let Some(step) = todo.pop() {
            match step {
                Step::Open(n) => {
                    if Some(n.id()) == self.exclude {
                        continue;
                    }
                    match n.node_type() {
                        NodeType::Element => {
                            let qname = element_qname(n);
                            self.start_tag(n, &qname, out);
                            todo.push(Step::Close(n));
                            for c in n.children().rev() {
                                todo.push(Step::Open(c));
                            }
                        }
                        NodeType::Comment if !self.alg.with_comments => {}
                        _ => write_leaf(n, out),
                    }
                }
                Step::Close(n) => {
                    out.push_str("</");
                    out.push_str(&element_qname(n));
                    out.push('>');
                    self.rendered.close();
                    self.in_scope.close();
                }
            }
        }
    }

    /// Brings the namespaces in scope to `el`'s: all of them at the apex,
    /// else the ones it declares. Returns the prefixes that changed.
    fn enter_scope<'i>(&mut self, el: Node<'_, 'i>, is_apex: bool) -> Vec<&'i str> {
        self.in_scope.open();
        let declared = if is_apex { None } else { declared_prefixes(el) };
        match declared {
            Some(prefixes) => {
                for p in &prefixes {
                    let uri = el
                        .namespaces()
                        .find(|ns| ns.name().unwrap_or("") == *p)
                        .map(|ns| ns.uri())
                        .unwrap_or("");
                    self.in_scope.set(p, uri);
                }
                prefixes
            }
            None => {
                let mut all = Vec::new();
                for ns in el.namespaces() {
                    let p = ns.name().unwrap_or("");
                    self.in_scope.set(p, ns.uri());
                    all.push(p);
                }
                all
            }
        }
    }

    fn start_tag(&mut self, el: Node<'_, '_>, qname: &str, out: &mut String) {
        let is_apex = el.id() == self.apex;
        let changed = self.enter_scope(el, is_apex);
        let mut decls: Vec<(String, String)> = Vec::new();

        if self.alg.exclusive {
            // Visibly utilized prefixes, then the PrefixList.
            let mut prefixes: Vec<String> = vec![prefix_of(qname).to_string()];
            for a in el.attributes() {
                let q = attr_qname(el, &a);
                let p = prefix_of(&q);
                if !p.is_empty() && !prefixes.iter().any(|x| x == p) {
                    prefixes.push(p.to_string());
                }
            }
            for p in &self.alg.inclusive_prefixes {
                let p = if p == "#default" { "" } else { p.as_str() };
                if !prefixes.iter().any(|x| x == p) {
                    prefixes.push(p.to_string());
                }
            }
            for p in prefixes {
                if p == "xml" {
                    continue;
                }
                self.decide(&p, &mut decls);
            }
        } else {
            // Output ancestors rendered every namespace in scope (the walk
            // writes each element from the apex down), so only the apex and
            // the prefixes an element declares can differ from them.
            let mut have_default = false;
            for p in changed {
                if self.in_scope.get(p) == Some(NS_XML) {
                    continue;
                }
                if p.is_empty() {
                    have_default = true;
                }
                self.decide(p, &mut decls);
            }
            if is_apex && !have_default {
                self.decide("", &mut decls);
            }
        }
        decls.sort_by(|a, b| a.0.cmp(&b.0));
        decls.dedup_by(|a, b| a.0 == b.0);

        out.push('<');
        out.push_str(qname);
        for (p, u) in &decls {
            if p.is_empty() {
                out.push_str(" xmlns=\"");
            } else {
                out.push_str(" xmlns:");
                out.push_str(p);
                out.push_str("=\"");
            }
            escape_attr(u, out);
            out.push('"');
        }

        // Attributes: (namespace URI, local name) order.
        let mut attrs: Vec<(&str, String, String, String)> = el
            .attributes()
            .map(|a| {
                (
                    a.namespace().unwrap_or(""),
                    a.name().to_string(),
                    attr_qname(el, &a).into_owned(),
                    a.value().to_string(),
                )
            })
            .collect();
        if is_apex && !self.alg.exclusive {
            // C14N 1.0: xml:* attributes of omitted ancestors are inherited.
            for anc in el.ancestors().skip(1).filter(|n| n.is_element()) {
                for a in anc.attributes() {
                    if a.namespace() == Some(NS_XML)
                        && !attrs.iter().any(|x| x.0 == NS_XML && x.1 == a.name())
                    {
                        attrs.push((
                            NS_XML,
                            a.name().to_string(),
                            format!("xml:{}", a.name()),
                            a.value().to_string(),
                        ));
                    }
                }
            }
        }
        attrs.sort_by(|a, b| (a.0, a.1.as_str()).cmp(&(b.0, b.1.as_str())));
        for (_, _, q, v) in &attrs {
            out.push(' ');
            out.push_str(q);
            out.push_str("=\"");
            escape_attr(v, out);
            out.push('"');
        }
        out.push('>');

        self.rendered.open();
        for (p, u) in &decls {
            self.rendered.set(p, u);
        }
    }

    /// Decide whether the namespace bound to `prefix` must be declared here.
    fn decide(&self, prefix: &str, decls: &mut Vec<(String, String)>) {
        match self.bound(prefix) {
            Some(uri) => {
                if self.rendered.get(prefix) != Some(uri) {
                    decls.push((prefix.to_string(), uri.to_string()));
                }
            }
            None => {
                // Only the default namespace can be undeclared (xmlns="").
                if prefix.is_empty() && self.rendered.get("").is_some_and(|u| !u.is_empty()) {
                    decls.push((String::new(), String::new()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::process::Command;
    use std::sync::OnceLock;

    /// Content with the usual traps: prefixes whose order differs from their
    /// URIs' order, a prefix rebound to another URI, a redundant redeclaration,
    /// an unused declaration, `xmlns=""`, attributes in namespaces, quotes,
    /// TAB/LF/CR in attributes, CR/CRLF in text, CDATA, PIs, comments, empty
    /// elements, non-ASCII, `xml:*` attributes to inherit.
    fn body() -> String {
        [
            "<child xmlns:r=\"urn:r\" xmlns:unused=\"urn:unused\" Id=\"C1\" attr = 'single \"dq\" &apos; >' ",
            "tab=\"a&#9;b&#10;c&#13;d\tz\ny\" z:b=\"1\" a:a=\"2\">text &amp; &lt; &gt; \" ' &#13; crlf\r\nhere\rthere ",
            "<![CDATA[cdata <&>]]> ñandú € &#x10000;\n",
            "    <inner xmlns=\"\" Id=\"I1\" a:x=\"v\"><deep xmlns=\"urn:def2\"/><e/><z:q/></inner>\n",
            "    <r:rebound xmlns:r=\"urn:r2\" Id=\"R1\" r:at=\"x\"><?inner-pi  some data ?><!-- inner comment --><r:k xmlns:r=\"urn:r2\"/></r:rebound>\n",
            "    <sp xml:space=\"preserve\">  </sp>\n",
            "  </child>",
        ]
        .concat()
    }

    const ROOT_OPEN: &str = "<r:root xmlns:r=\"urn:r\" xmlns=\"urn:def\" xmlns:z=\"urn:a\" xmlns:a=\"urn:z\" xml:lang=\"es\" z:attr=\"1\" a:attr=\"2\" plain=\"p\">\n  ";

    fn document(signature: &str) -> String {
        [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<?pi-before data?>\n<!-- comment before -->\n",
            ROOT_OPEN,
            &body(),
            signature,
            "\n</r:root>\n<!-- after -->\n<?pi-after?>\n",
        ]
        .concat()
    }

    fn signature(uri: &str, transforms: &str) -> String {
        format!(
            "<ds:Signature xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"><ds:SignedInfo><ds:CanonicalizationMethod Algorithm=\"{ALG_C14N}\"/>\
             <ds:SignatureMethod Algorithm=\"http://www.w3.org/2001/04/xmldsig-more#rsa-sha256\"/>\
             <ds:Reference URI=\"{uri}\"><ds:Transforms>{transforms}</ds:Transforms>\
             <ds:DigestMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#sha256\"/>\
             <ds:DigestValue>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</ds:DigestValue></ds:Reference></ds:SignedInfo>\
             <ds:SignatureValue>AAAA</ds:SignatureValue></ds:Signature>"
        )
    }

    use crate::testing::tool;

    fn cert_pem() -> &'static tempfile::NamedTempFile {
        static CERT: OnceLock<tempfile::NamedTempFile> = OnceLock::new();
        CERT.get_or_init(|| {
            let (der, pw) =
                crate::engine::signing_key::generate_self_signed("c14n test", "1", 2).unwrap();
            let k = crate::engine::signing_key::SigningKey::from_pkcs12(&der, &pw).unwrap();
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(&k.certificate_pem().unwrap()).unwrap();
            f
        })
    }

    /// What xmlsec1 digests for the single reference of `xml`
    /// (`--store-references` prints the pre-digest data).
    fn xmlsec_predigest(xml: &str) -> String {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(xml.as_bytes()).unwrap();
        let out = Command::new("xmlsec1")
            .args([
                "--verify",
                "--store-references",
                "--enabled-reference-uris",
                "empty,same-doc",
            ])
            .args([
                "--id-attr:Id",
                "urn:def:child",
                "--id-attr:Id",
                "inner",
                "--id-attr:Id",
                "urn:r2:rebound",
            ])
            .arg("--pubkey-cert-pem")
            .arg(cert_pem().path())
            .arg(f.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let start_mark = "== PreDigest data - start buffer:\n";
        let start = text
            .find(start_mark)
            .unwrap_or_else(|| panic!("no predigest in:\n{text}"))
            + start_mark.len();
        let end = text[start..]
            .find("\n== PreDigest data - end buffer")
            .unwrap()
            + start;
        text[start..end].to_string()
    }

    fn xmllint(xml: &str, flag: &str) -> String {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(xml.as_bytes()).unwrap();
        let out = Command::new("xmllint")
            .arg(flag)
            .arg(f.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn by_id<'a, 'i>(doc: &'a roxmltree::Document<'i>, id: &str) -> Node<'a, 'i> {
        doc.descendants()
            .find(|n| n.attribute("Id") == Some(id))
            .unwrap()
    }

    fn signature_node<'a, 'i>(doc: &'a roxmltree::Document<'i>) -> Node<'a, 'i> {
        doc.descendants()
            .find(|n| n.tag_name().name() == "Signature")
            .unwrap()
    }

    const C14N_T: &str =
        "<ds:Transform Algorithm=\"http://www.w3.org/TR/2001/REC-xml-c14n-20010315\"/>";
    const ENV_T: &str =
        "<ds:Transform Algorithm=\"http://www.w3.org/2000/09/xmldsig#enveloped-signature\"/>";
    fn exc_t(prefixes: &str) -> String {
        if prefixes.is_empty() {
            "<ds:Transform Algorithm=\"http://www.w3.org/2001/10/xml-exc-c14n#\"/>".to_string()
        } else {
            format!(
                "<ds:Transform Algorithm=\"http://www.w3.org/2001/10/xml-exc-c14n#\">\
                 <ec:InclusiveNamespaces xmlns:ec=\"http://www.w3.org/2001/10/xml-exc-c14n#\" PrefixList=\"{prefixes}\"/></ds:Transform>"
            )
        }
    }

    #[test]
    fn subtrees_match_xmlsec1() {
        if !tool("xmlsec1") {
            eprintln!("SKIPPED subtrees_match_xmlsec1: xmlsec1 not installed");
            return;
        }
        for id in ["C1", "I1", "R1"] {
            let cases: Vec<(String, Algorithm)> = vec![
                (C14N_T.to_string(), Algorithm::inclusive()),
                (String::new(), Algorithm::inclusive()),
                (exc_t(""), Algorithm::exclusive(&[])),
                (
                    exc_t("r #default z"),
                    Algorithm::exclusive(&["r", "#default", "z"]),
                ),
            ];
            for (transforms, alg) in cases {
                let xml = document(&signature(&format!("#{id}"), &transforms));
                let doc = roxmltree::Document::parse(&xml).unwrap();
                let ours = canonicalize(by_id(&doc, id), None, &alg);
                let theirs = xmlsec_predigest(&xml);
                assert_eq!(ours, theirs, "subtree #{id} with {alg:?}");
            }
        }
    }

    #[test]
    fn enveloped_whole_document_matches_xmlsec1() {
        if !tool("xmlsec1") {
            eprintln!("SKIPPED enveloped_whole_document_matches_xmlsec1: xmlsec1 not installed");
            return;
        }
        let cases: Vec<(String, Algorithm)> = vec![
            (ENV_T.to_string(), Algorithm::inclusive()),
            (format!("{ENV_T}{C14N_T}"), Algorithm::inclusive()),
            (format!("{ENV_T}{}", exc_t("")), Algorithm::exclusive(&[])),
            (
                format!("{ENV_T}{}", exc_t("a #default")),
                Algorithm::exclusive(&["a", "#default"]),
            ),
        ];
        for (transforms, alg) in cases {
            let xml = document(&signature("", &transforms));
            let doc = roxmltree::Document::parse(&xml).unwrap();
            let ours = canonicalize(doc.root(), Some(signature_node(&doc).id()), &alg);
            let theirs = xmlsec_predigest(&xml);
            assert_eq!(ours, theirs, "enveloped with {alg:?}");
        }
    }

    #[test]
    fn whole_document_matches_xmllint() {
        if !tool("xmllint") {
            eprintln!("SKIPPED whole_document_matches_xmllint: xmllint not installed");
            return;
        }
        let sig = signature("", ENV_T);
        let with_sig = document(&sig);
        let without_sig = document("");
        let doc = roxmltree::Document::parse(&with_sig).unwrap();
        let excl = Some(signature_node(&doc).id());
        for (flag, exclusive) in [("--c14n", false), ("--exc-c14n", true)] {
            let alg = Algorithm {
                exclusive,
                with_comments: true,
                inclusive_prefixes: vec![],
            };
            assert_eq!(
                canonicalize(doc.root(), None, &alg),
                xmllint(&with_sig, flag),
                "{flag}"
            );
            // Excluding the element == removing it from the text.
            assert_eq!(
                canonicalize(doc.root(), excl, &alg),
                xmllint(&without_sig, flag),
                "{flag} excl"
            );
        }
    }

    #[test]
    fn known_answers() {
        let doc = roxmltree::Document::parse(
            "<a xmlns='urn:x' xmlns:p='urn:p'><b xmlns:p='urn:p' p:y='2' x='1'/><p:c xmlns=''><d/></p:c></a>",
        )
        .unwrap();
        let root = doc.root_element();
        assert_eq!(
            canonicalize(doc.root(), None, &Algorithm::inclusive()),
            "<a xmlns=\"urn:x\" xmlns:p=\"urn:p\"><b x=\"1\" p:y=\"2\"></b><p:c xmlns=\"\"><d></d></p:c></a>"
        );
        let c = root.last_element_child().unwrap();
        assert_eq!(
            canonicalize(c, None, &Algorithm::inclusive()),
            "<p:c xmlns:p=\"urn:p\"><d></d></p:c>"
        );
        assert_eq!(
            canonicalize(c, None, &Algorithm::exclusive(&[])),
            "<p:c xmlns:p=\"urn:p\"><d></d></p:c>"
        );
        let b = root.first_element_child().unwrap();
        assert_eq!(
            canonicalize(b, None, &Algorithm::exclusive(&[])),
            "<b xmlns=\"urn:x\" xmlns:p=\"urn:p\" x=\"1\" p:y=\"2\"></b>"
        );
        assert_eq!(
            canonicalize(root, Some(b.id()), &Algorithm::exclusive(&[])),
            "<a xmlns=\"urn:x\"><p:c xmlns:p=\"urn:p\"><d xmlns=\"\"></d></p:c></a>"
        );
    }

    /// Prefixes rebound, the default namespace undeclared and declared
    /// again, deep and then back out: the namespaces kept per level give
    /// what xmllint gives, inclusive and exclusive.
    #[test]
    fn nested_rebinding_matches_xmllint() {
        if !tool("xmllint") {
            eprintln!("SKIPPED nested_rebinding_matches_xmllint: xmllint not installed");
            return;
        }
        let mut xml = String::from(
            "<r xmlns=\"urn:d0\" xmlns:a=\"urn:a0\" xmlns:b=\"urn:b0\" xmlns:u=\"urn:unused\">",
        );
        for i in 1..40 {
            let decl = match i % 5 {
                0 => format!(" xmlns:a=\"urn:a{i}\""),
                1 => " xmlns=\"\"".to_string(),
                2 => format!(" xmlns=\"urn:d{i}\" xmlns:b=\"urn:b0\""),
                3 => " xmlns:a=\"urn:a0\"".to_string(),
                _ => String::new(),
            };
            xml.push_str(&format!(
                "<a:e{i}{decl} b:x=\"{i}\"><b:s/><s xmlns:c=\"urn:c{i}\"><c:t c:y=\"1\"/></s>"
            ));
        }
        for i in (1..40).rev() {
            xml.push_str(&format!("<after{i}/><b:after/></a:e{i}>"));
        }
        xml.push_str("<last/></r>");
        let doc = roxmltree::Document::parse(&xml).unwrap();
        for (flag, exclusive) in [("--c14n", false), ("--exc-c14n", true)] {
            let alg = Algorithm {
                exclusive,
                with_comments: true,
                inclusive_prefixes: vec![],
            };
            assert_eq!(
                canonicalize(doc.root(), None, &alg),
                xmllint(&xml, flag),
                "{flag}"
            );
        }
    }
}
