//! Exclusive XML canonicalization 1.0 without comments
//! (`http://www.w3.org/2001/10/xml-exc-c14n#`) of one element subtree of a
//! parsed document, with an `InclusiveNamespaces` prefix list.
//!
//! Used to verify WS-Security signatures of incoming requests, where the
//! element and attribute prefixes must be the ones of the source text
//! (roxmltree keeps only namespace URIs, so prefixes are read back from the
//! source through node positions).

use roxmltree::{Node, NodeType};

/// Deepest nesting accepted below the apex (untrusted input).
const MAX_DEPTH: usize = 256;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum C14nError {
    #[error("the node to canonicalize is not an element")]
    NotElement,
    #[error("cannot read the qualified name of an element or attribute")]
    QName,
    #[error("the element nesting is too deep")]
    TooDeep,
}

/// Canonical form of `node` and its descendants. `inclusive_prefixes` is the
/// `PrefixList` of `ec:InclusiveNamespaces` (`#default` names the default
/// namespace).
pub fn canonicalize(node: Node<'_, '_>, inclusive_prefixes: &[&str]) -> Result<String, C14nError> {
    if !node.is_element() {
        return Err(C14nError::NotElement);
    }
    let inclusive: Vec<&str> = inclusive_prefixes
        .iter()
        .map(|p| if *p == "#default" { "" } else { *p })
        .collect();
    let mut out = String::new();
    write_element(node, &inclusive, &[], 0, &mut out)?;
    Ok(out)
}

/// Splits a whitespace separated `PrefixList` attribute.
pub fn prefix_list(value: &str) -> Vec<&str> {
    value.split_whitespace().collect()
}

fn element_qname<'i>(node: Node<'_, 'i>) -> Result<&'i str, C14nError> {
    let text = node.document().input_text();
    let rest = text
        .get(node.range().start..)
        .and_then(|s| s.strip_prefix('<'))
        .ok_or(C14nError::QName)?;
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .ok_or(C14nError::QName)?;
    let qname = rest.get(..end).ok_or(C14nError::QName)?;
    let local = qname.rsplit(':').next().unwrap_or(qname);
    if local != node.tag_name().name() {
        return Err(C14nError::QName);
    }
    Ok(qname)
}

fn prefix_of(qname: &str) -> &str {
    match qname.split_once(':') {
        Some((p, _)) => p,
        None => "",
    }
}

/// In-scope namespace URI for `prefix` ("" = default), "" when undeclared.
fn in_scope_uri<'a>(node: Node<'a, '_>, prefix: &str) -> Option<&'a str> {
    node.namespaces()
        .find(|ns| ns.name().unwrap_or("") == prefix)
        .map(|ns| ns.uri())
}

fn write_element(
    node: Node<'_, '_>,
    inclusive: &[&str],
    rendered: &[(String, String)],
    depth: usize,
    out: &mut String,
) -> Result<(), C14nError> {
    if depth > MAX_DEPTH {
        return Err(C14nError::TooDeep);
    }
    let text = node.document().input_text();
    let qname = element_qname(node)?;

    // Attributes with their qualified names from the source.
    let mut attrs: Vec<(&str, &str, &str, &str)> = Vec::new(); // (ns, local, qname, value)
    for a in node.attributes() {
        let aq = text.get(a.range_qname()).ok_or(C14nError::QName)?;
        attrs.push((a.namespace().unwrap_or(""), a.name(), aq, a.value()));
    }
    attrs.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));

    // Visibly utilized prefixes plus the inclusive ones in scope.
    let mut candidates: Vec<&str> = vec![prefix_of(qname)];
    for (_, _, aq, _) in &attrs {
        if aq.contains(':') {
            candidates.push(prefix_of(aq));
        }
    }
    for p in inclusive {
        if in_scope_uri(node, p).is_some() {
            candidates.push(p);
        }
    }
    candidates.retain(|p| *p != "xml" && *p != "xmlns");
    candidates.sort_unstable();
    candidates.dedup();

    let mut now_rendered: Vec<(String, String)> = rendered.to_vec();
    let mut decls: Vec<(String, String)> = Vec::new();
    for p in candidates {
        let uri = in_scope_uri(node, p).unwrap_or("");
        let previous = rendered
            .iter()
            .rev()
            .find(|(rp, _)| rp == p)
            .map(|(_, u)| u.as_str());
        let emit = match previous {
            Some(prev) => prev != uri,
            // An undeclared default namespace needs no `xmlns=""` unless an
            // output ancestor declared a non-empty one (handled above).
            None => !uri.is_empty(),
        };
        if emit {
            decls.push((p.to_string(), uri.to_string()));
            now_rendered.push((p.to_string(), uri.to_string()));
        }
    }

    out.push('<');
    out.push_str(qname);
    for (p, uri) in &decls {
        if p.is_empty() {
            out.push_str(" xmlns=\"");
        } else {
            out.push_str(" xmlns:");
            out.push_str(p);
            out.push_str("=\"");
        }
        out.push_str(&super::escape_attr(uri));
        out.push('"');
    }
    for (_, _, aq, value) in &attrs {
        out.push(' ');
        out.push_str(aq);
        out.push_str("=\"");
        out.push_str(&super::escape_attr(value));
        out.push('"');
    }
    out.push('>');
    for child in node.children() {
        match child.node_type() {
            NodeType::Element => write_element(child, inclusive, &now_rendered, depth + 1, out)?,
            NodeType::Text => out.push_str(&super::escape_text(child.text().unwrap_or(""))),
            NodeType::PI => {
                if let Some(pi) = child.pi() {
                    out.push_str("<?");
                    out.push_str(pi.target);
                    if let Some(v) = pi.value {
                        out.push(' ');
                        out.push_str(v);
                    }
                    out.push_str("?>");
                }
            }
            NodeType::Comment | NodeType::Root => {}
        }
    }
    out.push_str("</");
    out.push_str(qname);
    out.push('>');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c14n(xml: &str, tag: &str, incl: &[&str]) -> String {
        let doc = roxmltree::Document::parse(xml).expect("parse");
        let node = doc
            .descendants()
            .find(|n| n.tag_name().name() == tag)
            .expect("tag");
        canonicalize(node, incl).expect("c14n")
    }

    #[test]
    fn renders_only_visibly_utilized_namespaces() {
        let xml = r#"<a:Root xmlns:a="urn:a" xmlns:b="urn:b" xmlns:c="urn:c"><b:Child  c:z="1" y='2' ><x/></b:Child></a:Root>"#;
        assert_eq!(
            c14n(xml, "Child", &[]),
            r#"<b:Child xmlns:b="urn:b" xmlns:c="urn:c" y="2" c:z="1"><x></x></b:Child>"#
        );
        assert_eq!(
            c14n(xml, "Child", &["a"]),
            r#"<b:Child xmlns:a="urn:a" xmlns:b="urn:b" xmlns:c="urn:c" y="2" c:z="1"><x></x></b:Child>"#
        );
    }

    #[test]
    fn does_not_repeat_namespaces_of_output_ancestors() {
        let xml = r#"<p:A xmlns:p="urn:p"><p:B><q:C xmlns:q="urn:q"><q:D/></q:C></p:B></p:A>"#;
        assert_eq!(
            c14n(xml, "B", &[]),
            r#"<p:B xmlns:p="urn:p"><q:C xmlns:q="urn:q"><q:D></q:D></q:C></p:B>"#
        );
    }

    #[test]
    fn default_namespace_and_escaping() {
        let xml = "<A xmlns=\"urn:d\"><B a=\"x&amp;y&#9;\">1 &lt; 2 &gt; 0<!-- c --><![CDATA[&]]></B></A>";
        assert_eq!(
            c14n(xml, "B", &[]),
            "<B xmlns=\"urn:d\" a=\"x&amp;y&#x9;\">1 &lt; 2 &gt; 0&amp;</B>"
        );
    }

    #[test]
    fn attribute_order_is_namespace_then_local_name() {
        let xml = r#"<r xmlns:z="urn:a" xmlns:a="urn:z"><e b="1" a="2" z:c="3" a:a="4"/></r>"#;
        assert_eq!(
            c14n(xml, "e", &[]),
            r#"<e xmlns:a="urn:z" xmlns:z="urn:a" a="2" b="1" z:c="3" a:a="4"></e>"#
        );
    }
}
