//! A linear pre-scan of untrusted XML, before any parser sees it: element
//! depth, element count and namespace declarations are bounded first.
//! roxmltree copies every prefix in scope into each element that declares
//! one, and canonicalisation is done per element over the namespaces in
//! scope, so both grow faster than the input with these three; and a parse
//! already running cannot be stopped. A received invoice needs far less
//! than the limits (about 15 levels, 1,000 elements for a few hundred
//! lines, 20 declarations).
//!
//! The scan only counts: comments, CDATA sections, processing instructions
//! and quoted attribute values are skipped, and whatever it does not
//! understand is left for the parser to refuse.

/// What an untrusted document may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest element nesting (the root is level 1).
    pub max_depth: usize,
    pub max_elements: usize,
    /// `xmlns` and `xmlns:p` attributes, over the whole document.
    pub max_namespace_declarations: usize,
}

/// The limits of an uploaded invoice (and of the authority's copy of one).
pub const RECEIVED_INVOICE: Limits = Limits {
    max_depth: 100,
    max_elements: 100_000,
    max_namespace_declarations: 100,
};

/// Why a document is refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("elements nest deeper than {0} levels")]
    TooDeep(usize),
    #[error("it has more than {0} elements")]
    TooManyElements(usize),
    #[error("it declares more than {0} namespaces")]
    TooManyNamespaces(usize),
}

/// What the scan counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    pub max_depth: usize,
    pub elements: usize,
    pub namespace_declarations: usize,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// Scans `xml` once; the first limit passed ends the scan.
pub fn check(xml: &str, limits: &Limits) -> Result<Shape, LimitError> {
    let b = xml.as_bytes();
    let mut shape = Shape::default();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(off) = b.get(i..).and_then(|r| r.iter().position(|&c| c == b'<')) {
        i += off;
        let rest = b.get(i..).unwrap_or_default();
        let skip_to =
            |end: &[u8], from: usize| find(b, end, from).map_or(b.len(), |at| at + end.len());
        if rest.starts_with(b"<!--") {
            i = skip_to(b"-->", i + 4);
        } else if rest.starts_with(b"<![CDATA[") {
            i = skip_to(b"]]>", i + 9);
        } else if rest.starts_with(b"<?") {
            i = skip_to(b"?>", i + 2);
        } else if rest.starts_with(b"<!") {
            // A DTD: the parser refuses those.
            i = skip_to(b">", i + 2);
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = skip_to(b">", i + 2);
        } else {
            shape.elements += 1;
            if shape.elements > limits.max_elements {
                return Err(LimitError::TooManyElements(limits.max_elements));
            }
            depth += 1;
            if depth > limits.max_depth {
                return Err(LimitError::TooDeep(limits.max_depth));
            }
            shape.max_depth = shape.max_depth.max(depth);
            let (end, empty, declarations) = start_tag(b, i + 1);
            shape.namespace_declarations += declarations;
            if shape.namespace_declarations > limits.max_namespace_declarations {
                return Err(LimitError::TooManyNamespaces(
                    limits.max_namespace_declarations,
                ));
            }
            if empty {
                depth -= 1;
            }
            i = end;
        }
    }
    Ok(shape)
}

/// A start tag from just after its `<`: where it ends (after its `>`),
/// whether it is empty (`/>`), and how many namespaces it declares.
fn start_tag(b: &[u8], mut i: usize) -> (usize, bool, usize) {
    let mut declarations = 0;
    let mut last = 0u8;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' | b'\'' => {
                i = find(b, &[c], i + 1).map_or(b.len(), |at| at + 1);
                last = c;
                continue;
            }
            b'>' => return (i + 1, last == b'/', declarations),
            _ if c.is_ascii_whitespace() => {
                // An attribute name starts after white space.
                let name = b.get(i + 1..).unwrap_or_default();
                if name.starts_with(b"xmlns")
                    && matches!(
                        name.get(5),
                        Some(b':' | b'=' | b' ' | b'\t' | b'\r' | b'\n')
                    )
                {
                    declarations += 1;
                }
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            last = c;
        }
        i += 1;
    }
    (b.len(), false, declarations)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        max_depth: 3,
        max_elements: 6,
        max_namespace_declarations: 2,
    };

    #[test]
    fn counts_what_the_parser_will_see() {
        let xml = "<?xml version=\"1.0\"?><!-- <x><y> --><a xmlns=\"u\" b='>' c=\"xmlns:q='1'\">\
                   <b xmlns:p = \"v\"/><![CDATA[<c><d>]]><?pi <e>?><c><d/></c>text &lt; </a>";
        let shape = check(xml, &SMALL).unwrap();
        assert_eq!(
            shape,
            Shape {
                max_depth: 3,
                elements: 4,
                namespace_declarations: 2
            }
        );
        // The parser agrees on the elements.
        let doc = roxmltree::Document::parse(xml).unwrap();
        assert_eq!(doc.descendants().filter(|n| n.is_element()).count(), 4);
    }

    #[test]
    fn each_limit_refuses() {
        assert_eq!(
            check("<a><b><c><d/></c></b></a>", &SMALL),
            Err(LimitError::TooDeep(3))
        );
        assert_eq!(
            check("<a><b/><b/><b/><b/><b/><b/></a>", &SMALL),
            Err(LimitError::TooManyElements(6))
        );
        assert_eq!(
            check("<a xmlns='1' xmlns:a='2'><b xmlns:c='3'/></a>", &SMALL),
            Err(LimitError::TooManyNamespaces(2))
        );
        // Siblings do not add depth; closed elements give it back.
        assert!(check("<a><b><c/></b><b><c/></b></a>", &SMALL).is_ok());
    }

    #[test]
    fn hostile_shapes_end_fast_and_broken_input_is_the_parser_s() {
        // Nested elements each declaring a prefix (cubic in roxmltree).
        let mut deep = String::new();
        for i in 0..5000 {
            deep.push_str(&format!("<p{i}:a xmlns:p{i}=\"u\">"));
        }
        assert_eq!(
            check(&deep, &RECEIVED_INVOICE),
            Err(LimitError::TooDeep(100))
        );
        for broken in ["<a", "<a b='", "<!--", "<![CDATA[", "<?", "</", "<a/"] {
            assert!(check(broken, &SMALL).is_ok(), "{broken}");
        }
    }
}
