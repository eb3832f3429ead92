//! The canonical JSON of a request body, read from its text: what
//! `serde_json::to_writer` writes for the `Value` of the body (keys sorted
//! at every level, no whitespace, strings escaped as serde_json escapes
//! them, numbers as written — `arbitrary_precision` keeps their text),
//! without building that `Value`. The issuing path hashed and stored this
//! form by parsing every body twice (to a `Value`, then to the request);
//! now the request is read from the text once and this pass copies it.
//!
//! It runs on a body the typed parse accepted, and gives up (`None`) on
//! anything it does not expect — a key twice in an object, a lone
//! surrogate, more than [`MAX_DEPTH`] levels — so the caller can fall back
//! to the `Value` path, whose answer (an error, mostly) is the reference.

use std::borrow::Cow;

use super::escape::push_str;

/// serde_json's own recursion limit: a deeper body never parses anyway.
const MAX_DEPTH: usize = 128;

/// The canonical form of `body`, or `None` (see the module).
pub fn canonical(body: &[u8]) -> Option<Vec<u8>> {
    let mut r = Reader { b: body, i: 0 };
    let mut out = Vec::with_capacity(body.len());
    r.value(&mut out, 0)?;
    r.skip_ws();
    (r.i == body.len()).then_some(out)
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'{' => self.object(out, depth),
            b'[' => self.array(out, depth),
            b'"' => {
                let s = self.string()?;
                push_str(out, &s);
                Some(())
            }
            b't' => self.literal(out, b"true"),
            b'f' => self.literal(out, b"false"),
            b'n' => self.literal(out, b"null"),
            _ => self.number(out),
        }
    }

    fn literal(&mut self, out: &mut Vec<u8>, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then_some(())?;
        out.extend_from_slice(word);
        self.i = end;
        Some(())
    }

    /// `-?digits(.digits)?([eE][+-]?digits)?`, copied as serde_json keeps
    /// it: as written, but for the exponent, always `e` and a sign.
    fn number(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        self.digits()?;
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        out.extend_from_slice(self.b.get(start..self.i)?);
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            out.push(b'e');
            match self.peek() {
                Some(sign @ (b'+' | b'-')) => {
                    self.i += 1;
                    out.push(sign);
                }
                _ => out.push(b'+'),
            }
            let digits = self.i;
            self.digits()?;
            out.extend_from_slice(self.b.get(digits..self.i)?);
        }
        Some(())
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    fn array(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        self.i += 1;
        out.push(b'[');
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            out.push(b']');
            return Some(());
        }
        loop {
            self.value(out, depth + 1)?;
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    out.push(b',');
                }
                b']' => {
                    self.i += 1;
                    out.push(b']');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Members are written to one scratch buffer as read, then copied out
    /// in key order.
    fn object(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        self.i += 1;
        let mut scratch = Vec::new();
        let mut members: Vec<(Cow<'a, str>, usize, usize)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
        } else {
            loop {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.eat(b':')?;
                let start = scratch.len();
                self.value(&mut scratch, depth + 1)?;
                members.push((key, start, scratch.len()));
                self.skip_ws();
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        // serde_json's map is a BTreeMap<String, _>: byte order of keys.
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if members.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        out.push(b'{');
        for (n, (key, start, end)) in members.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            push_str(out, key);
            out.push(b':');
            out.extend_from_slice(scratch.get(*start..*end)?);
        }
        out.push(b'}');
        Some(())
    }

    /// A string's text: borrowed when it has no escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.i += 1;
        let start = self.i;
        loop {
            match self.peek()? {
                b'"' => {
                    let raw = std::str::from_utf8(self.b.get(start..self.i)?).ok()?;
                    self.i += 1;
                    return Some(Cow::Borrowed(raw));
                }
                b'\\' => break,
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
        let mut text = std::str::from_utf8(self.b.get(start..self.i)?)
            .ok()?
            .to_string();
        loop {
            let run = self.i;
            while !matches!(self.peek()?, b'"' | b'\\') {
                if self.peek()? < 0x20 {
                    return None;
                }
                self.i += 1;
            }
            text.push_str(std::str::from_utf8(self.b.get(run..self.i)?).ok()?);
            if self.peek()? == b'"' {
                self.i += 1;
                return Some(Cow::Owned(text));
            }
            self.i += 1;
            let escaped = self.peek()?;
            self.i += 1;
            match escaped {
                b'"' => text.push('"'),
                b'\\' => text.push('\\'),
                b'/' => text.push('/'),
                b'b' => text.push('\u{8}'),
                b'f' => text.push('\u{c}'),
                b'n' => text.push('\n'),
                b'r' => text.push('\r'),
                b't' => text.push('\t'),
                b'u' => text.push(self.unicode_escape()?),
                _ => return None,
            }
        }
    }

    /// After `\u`: four hex digits, or a surrogate pair of two escapes.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            if self.b.get(self.i..self.i + 2)? != b"\\u" {
                return None;
            }
            self.i += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        } else {
            char::from_u32(first)
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
        let v = u32::from_str_radix(digits, 16).ok()?;
        // from_str_radix takes a sign; JSON does not.
        if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What the issuing path wrote before: the body's `Value`, written out.
    fn via_value(body: &str) -> Option<Vec<u8>> {
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        Some(serde_json::to_vec(&v).unwrap())
    }

    fn same(body: &str) {
        let ours = canonical(body.as_bytes());
        assert_eq!(
            ours.as_deref().map(String::from_utf8_lossy),
            via_value(body).as_deref().map(String::from_utf8_lossy),
            "{body}"
        );
    }

    #[test]
    fn writes_what_the_value_of_the_body_writes() {
        for body in [
            r#"{}"#,
            r#"[]"#,
            r#" { "b" : 1 , "a" : [ 1 , 2.50 , -0 , -0.0 , 1E+2 , 1E2 , 1e5 , 3e-7 , 0.5E-03 , -12 , 10000000000000000000000 , -9223372036854775809 ] } "#,
            r#"{"z":{"y":{"x":[{"b":null,"a":true}],"w":false}},"aa":"","a":"x"}"#,
            r#"{"s":"tab\there \"quoted\" back\\slash \/ \b\f\n\r \u0001 \u001F \u007f"}"#,
            r#"{"ñandú":"café","é":"\u00e9\u00E9","emoji":"\ud83d\ude00 😀","B":1,"a":2,"_":3}"#,
            r#"{"\u0061":1,"b\n":2}"#,
            "{\"id_tipo_documento\":1,\"invoice_lines\":[{\"price_amount\":\"1000.00\"}]}\n",
        ] {
            same(body);
        }
    }

    #[test]
    fn an_invoice_body_is_canonical_as_before() {
        let body = r#"{
          "id_tipo_documento": 1, "referencia_externa": "POS-000123",
          "customer": {"identification_number": "800197268", "name": "Cliente \"Uno\" S.A.S.",
                       "email": "compras@cliente.co", "address": "Cra 7 # 12-34\nBogotá"},
          "payment_form": {"payment_form_id": 1, "payment_method_id": 10},
          "legal_monetary_totals": {"line_extension_amount": 1500.00, "payable_amount": "1785.00"},
          "invoice_lines": [
            {"description": "Café 500 g", "invoiced_quantity": 2, "price_amount": 750.0,
             "tax_totals": [{"tax_code": "01", "percent": 19.00, "taxable_amount": 1500, "tax_amount": 285}]},
            {"description": "Bolsa", "invoiced_quantity": 1, "price_amount": 0, "tax_totals": []}
          ]
        }"#;
        same(body);
    }

    /// Random bodies: nested objects and arrays, keys in any order, any
    /// whitespace, strings with every kind of escape, numbers in every form.
    #[test]
    fn random_bodies_are_written_as_their_value_writes_them() {
        use rand::{Rng, SeedableRng};
        fn ws(r: &mut rand::rngs::StdRng, out: &mut String) {
            for _ in 0..r.gen_range(0..3) {
                out.push([' ', '\n', '\t', '\r'][r.gen_range(0..4)]);
            }
        }
        fn string(r: &mut rand::rngs::StdRng, out: &mut String) {
            const CHARS: &[char] = &[
                'a', 'Z', '0', ' ', 'ñ', 'é', '€', '😀', '"', '\\', '/', '\n', '\t', '\u{1}',
                '\u{7f}', '\u{8}', '\u{c}', '\r',
            ];
            out.push('"');
            for _ in 0..r.gen_range(0..6) {
                let c = CHARS[r.gen_range(0..CHARS.len())];
                match (c, r.gen_range(0..3)) {
                    ('"', _) => out.push_str("\\\""),
                    ('\\', _) => out.push_str("\\\\"),
                    (c, _) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
                    ('/', 0) => out.push_str("\\/"),
                    (c, 0) => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{:04x}", u));
                        }
                    }
                    (c, _) => out.push(c),
                }
            }
            out.push('"');
        }
        fn value(r: &mut rand::rngs::StdRng, depth: usize, out: &mut String) {
            ws(r, out);
            let pick = if depth > 3 {
                r.gen_range(2..6)
            } else {
                r.gen_range(0..6)
            };
            match pick {
                0 => {
                    out.push('{');
                    let n = r.gen_range(0..4);
                    let mut keys: Vec<String> = Vec::new();
                    for i in 0..n {
                        if i > 0 {
                            out.push(',');
                        }
                        ws(r, out);
                        let mut k = String::new();
                        string(r, &mut k);
                        let plain: String = serde_json::from_str(&k).unwrap();
                        if keys.contains(&plain) {
                            k = format!("\"k{i}\"");
                        }
                        keys.push(serde_json::from_str(&k).unwrap());
                        out.push_str(&k);
                        ws(r, out);
                        out.push(':');
                        value(r, depth + 1, out);
                    }
                    ws(r, out);
                    out.push('}');
                }
                1 => {
                    out.push('[');
                    for i in 0..r.gen_range(0..4) {
                        if i > 0 {
                            out.push(',');
                        }
                        value(r, depth + 1, out);
                    }
                    out.push(']');
                }
                2 => string(r, out),
                3 => {
                    const NUMBERS: &[&str] = &[
                        "0",
                        "-0",
                        "7",
                        "-12",
                        "1.50",
                        "0.001",
                        "1E3",
                        "2e-2",
                        "3E+04",
                        "18446744073709551616",
                        "-9223372036854775809",
                        "123456789012345678901234.5",
                    ];
                    out.push_str(NUMBERS[r.gen_range(0..NUMBERS.len())]);
                }
                4 => out.push_str(["true", "false"][r.gen_range(0..2)]),
                _ => out.push_str("null"),
            }
            ws(r, out);
        }
        let mut r = rand::rngs::StdRng::seed_from_u64(20261124);
        for _ in 0..5000 {
            let mut body = String::new();
            value(&mut r, 0, &mut body);
            assert!(via_value(&body).is_some(), "not JSON: {body}");
            same(&body);
        }
    }

    #[test]
    fn gives_up_where_the_value_path_decides() {
        for body in [
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"b":1,"b":1}}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":1}x"#,
            r#"{"a":01x}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":"\u+123"}"#,
            "{\"a\":\"raw\u{1}control\"}",
            r#"{"a":tru}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"[1,]"#,
        ] {
            assert_eq!(canonical(body.as_bytes()), None, "{body}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(canonical(deep.as_bytes()), None);
    }
}
