//! A JSON string written exactly as serde_json writes it, faster on long
//! text. The signed XML (~17 kB) goes back to the caller as a JSON string;
//! serde_json looks at it one byte at a time, this looks at sixteen bytes
//! at a time (SSE2 on x86-64, one `unsafe` call that every x86-64 CPU
//! satisfies) and copies the runs that need no escape whole.

/// Appends `s` to `out` as a JSON string, quotes included, byte for byte
/// what `serde_json::to_writer(out, s)` appends: `"` and `\` escaped with a
/// backslash, `\b \f \n \r \t` by name, other bytes below 0x20 as `\u00xx`
/// (lowercase hex), everything else (DEL, non-ASCII UTF-8) as it is.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `bytes[start..]` is not written yet.
    let mut start = 0;
    let mut chunks = bytes.chunks_exact(16);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut mask = escape_mask(chunk);
        while mask != 0 {
            let i = at + mask.trailing_zeros() as usize;
            start = write_escaped(out, bytes, start, i);
            mask &= mask - 1;
        }
        at += 16;
    }
    for (k, &b) in chunks.remainder().iter().enumerate() {
        if escape(b).is_some() {
            start = write_escaped(out, bytes, start, at + k);
        }
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
}

/// Writes `bytes[start..i]` and the escape of `bytes[i]`; returns where the
/// text not yet written starts.
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8], start: usize, i: usize) -> usize {
    out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
    if let Some(escaped) = bytes.get(i).copied().and_then(escape) {
        escaped.write(out);
    }
    i + 1
}

/// Bit `k` set when `chunk[k]` needs an escape (below 0x20, `"` or `\\`).
#[cfg(target_arch = "x86_64")]
fn escape_mask(chunk: &[u8]) -> u32 {
    // SAFETY: SSE2 is part of x86-64 itself: every x86-64 CPU has it.
    unsafe { sse2_mask(chunk) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn sse2_mask(chunk: &[u8]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        _mm_set_epi64x,
    };
    let half = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk.get(k..k + 8).unwrap_or(&[0; 8]));
        i64::from_le_bytes(w)
    };
    let v = _mm_set_epi64x(half(8), half(0));
    let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
    let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
    // Unsigned: max(b, 0x1f) == 0x1f exactly when b <= 0x1f.
    let below = _mm_set1_epi8(0x1f);
    let control = _mm_cmpeq_epi8(_mm_max_epu8(v, below), below);
    _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
}

#[cfg(not(target_arch = "x86_64"))]
fn escape_mask(chunk: &[u8]) -> u32 {
    portable_mask(chunk)
}

/// [`escape_mask`] one byte at a time.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable_mask(chunk: &[u8]) -> u32 {
    chunk
        .iter()
        .enumerate()
        .filter(|(_, &b)| escape(b).is_some())
        .fold(0, |mask, (k, _)| mask | 1 << k)
}

enum Escaped {
    Short(u8),
    Unicode(u8),
}

impl Escaped {
    fn write(self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let hex = |nibble: u8| HEX.get(usize::from(nibble)).copied().unwrap_or(b'0');
        match self {
            Escaped::Short(c) => out.extend_from_slice(&[b'\\', c]),
            Escaped::Unicode(b) => {
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex(b >> 4), hex(b & 0xf)])
            }
        }
    }
}

fn escape(b: u8) -> Option<Escaped> {
    Some(match b {
        b'"' => Escaped::Short(b'"'),
        b'\\' => Escaped::Short(b'\\'),
        0x08 => Escaped::Short(b'b'),
        0x0c => Escaped::Short(b'f'),
        b'\n' => Escaped::Short(b'n'),
        b'\r' => Escaped::Short(b'r'),
        b'\t' => Escaped::Short(b't'),
        0..=0x1f => Escaped::Unicode(b),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        push_str(&mut out, s);
        out
    }

    #[test]
    fn every_byte_value_as_serde_json_writes_it() {
        for c in (0u32..0x250).filter_map(char::from_u32) {
            // Alone, and at each position of a word and across words.
            for pad in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(pad), "ü".repeat(pad % 3));
                assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap(), "{s:?}");
            }
        }
        for s in [
            "",
            "\"",
            "\\",
            "<a b=\"1\">x</a>",
            "\u{7f}\u{1f}\u{0}",
            "Bogotá ñ €",
        ] {
            assert_eq!(ours(s), serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn a_signed_xml_like_text() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Invoice xmlns=\"urn:oasis\">\r\n\t<cbc:Note>Calle 1 # 2-3 &lt;Bogotá&gt; \\ \u{1}\u{8}\u{c}</cbc:Note><ds:SignatureValue>MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA</ds:SignatureValue></Invoice>".repeat(40);
        assert_eq!(ours(&xml), serde_json::to_vec(&xml).unwrap());
    }

    #[test]
    fn the_mask_of_every_byte_at_every_position() {
        for b in 0..=255u8 {
            for k in 0..16 {
                let mut chunk = [b'a'; 16];
                chunk[k] = b;
                assert_eq!(escape_mask(&chunk), portable_mask(&chunk), "{b:#x} at {k}");
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_as_serde_json_writes_it(s in "\\PC*|[\\x00-\\x7f]*|[\"\\\\<>a\\x00-\\x1f]*") {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }
    }
}
