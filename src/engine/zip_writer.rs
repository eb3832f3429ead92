//! A ZIP archive holding exactly one DEFLATE-compressed file, written by hand
//! (APPNOTE.TXT 6.3.x §4.3): local file header, compressed data, one central
//! directory header, end of central directory. No ZIP64, no data
//! descriptor, no extra fields, no comments.
//!
//! Why not the `zip` crate: it builds a new DEFLATE compressor per file, and
//! the compressor's state (dictionary, hash chains, code buffers: hundreds
//! of KB) is allocated, zeroed and released on every document, a sizeable
//! share of the cost of issuing one (docs/performance.md). Here each thread
//! keeps one [`flate2::Compress`] and `reset()`s it between documents, so
//! nothing but the output is allocated. flate2 runs on its zlib-rs backend
//! (root `Cargo.toml`), faster than miniz_oxide's at level 1 on signed XML.
//! The sizes and CRC are known before the headers are final (the whole
//! content is in memory), so the local header is written with placeholders
//! and patched once the data is compressed.

use std::cell::RefCell;
use std::io;

use flate2::{Compress, Compression, FlushCompress, Status};

const LOCAL_HEADER_SIGNATURE: u32 = 0x0403_4b50;
const CENTRAL_HEADER_SIGNATURE: u32 = 0x0201_4b50;
const END_OF_CENTRAL_DIRECTORY_SIGNATURE: u32 = 0x0605_4b50;
const LOCAL_HEADER_LEN: usize = 30;
const CENTRAL_HEADER_LEN: usize = 46;
const END_OF_CENTRAL_DIRECTORY_LEN: usize = 22;
/// 2.0: DEFLATE.
const VERSION_NEEDED: u16 = 20;
/// Upper byte 3: Unix, so that the external attributes carry a mode
/// (as the `zip` crate wrote); lower byte: spec 2.0.
const VERSION_MADE_BY: u16 = (3 << 8) | 20;
/// Bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
const METHOD_DEFLATE: u16 = 8;
/// `-rw-r--r--` regular file, in the upper 16 bits of the external attributes.
const EXTERNAL_ATTRIBUTES: u32 = 0o100_644 << 16;

/// An MS-DOS date and time (2-second resolution, local time as written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DosDateTime {
    pub date: u16,
    pub time: u16,
}

impl DosDateTime {
    /// 1980-01-01 00:00:00, the earliest representable instant (what the
    /// `zip` crate writes when a time cannot be represented).
    pub const EPOCH: DosDateTime = DosDateTime {
        date: (1 << 5) | 1,
        time: 0,
    };

    /// From calendar fields; [`Self::EPOCH`] outside 1980–2107 or with a
    /// field out of range. Odd seconds round down.
    pub fn new(year: i32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Self {
        let valid = (1980..=2107).contains(&year)
            && (1..=12).contains(&month)
            && (1..=31).contains(&day)
            && hour < 24
            && minute < 60
            && second < 61;
        if !valid {
            return Self::EPOCH;
        }
        // The ranges above make every field fit its bits.
        let second = second.min(59);
        let date = (((year - 1980) as u32) << 9) | (month << 5) | day;
        let time = (hour << 11) | (minute << 5) | (second / 2);
        DosDateTime {
            date: date as u16,
            time: time as u16,
        }
    }
}

thread_local! {
    /// One raw-DEFLATE compressor per thread, with its level.
    static COMPRESSOR: RefCell<Option<(u32, Compress)>> = const { RefCell::new(None) };
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Raw-DEFLATEs `content` at `level` onto the end of `out`, with this
/// thread's compressor.
fn deflate_into(content: &[u8], level: u32, out: &mut Vec<u8>) -> io::Result<()> {
    COMPRESSOR.with(|cell| {
        // A re-entrant call (impossible today) would find the compressor
        // borrowed: it gets a fresh one rather than a panic.
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return deflate_with(
                &mut Compress::new(Compression::new(level), false),
                content,
                out,
            );
        };
        let compress = match &mut *slot {
            Some((l, c)) if *l == level => {
                c.reset();
                c
            }
            other => {
                &mut other
                    .insert((level, Compress::new(Compression::new(level), false)))
                    .1
            }
        };
        let result = deflate_with(compress, content, out);
        if result.is_err() {
            // Whatever state a failure left is not reused.
            *slot = None;
        }
        result
    })
}

fn deflate_with(compress: &mut Compress, content: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    loop {
        let consumed = usize::try_from(compress.total_in())
            .map_err(|_| invalid("content too large"))?
            .min(content.len());
        if out.capacity() - out.len() < 64 {
            out.reserve(content.len().saturating_sub(consumed) / 2 + 1024);
        }
        let status = compress
            .compress_vec(
                content.get(consumed..).unwrap_or_default(),
                out,
                FlushCompress::Finish,
            )
            .map_err(io::Error::other)?;
        match status {
            Status::StreamEnd => return Ok(()),
            // Out of output space (or nothing done for lack of it): grow.
            Status::Ok | Status::BufError => {
                out.reserve(out.capacity().max(1024));
            }
        }
    }
}

/// A ZIP archive with one file `name` holding `content`, DEFLATE-compressed
/// at `level` (0–9), stamped `modified`.
pub fn single_entry(
    name: &str,
    content: &[u8],
    modified: DosDateTime,
    level: u32,
) -> io::Result<Vec<u8>> {
    let name_len = u16::try_from(name.len()).map_err(|_| invalid("file name too long"))?;
    let uncompressed = u32::try_from(content.len())
        .map_err(|_| invalid("file too large for ZIP without ZIP64"))?;
    if uncompressed == u32::MAX {
        return Err(invalid("file too large for ZIP without ZIP64"));
    }
    let crc = crc32fast::hash(content);

    let headers =
        LOCAL_HEADER_LEN + CENTRAL_HEADER_LEN + END_OF_CENTRAL_DIRECTORY_LEN + 2 * name.len();
    // Level 1 leaves signed XML at well under half its size.
    let mut out = Vec::with_capacity(headers + content.len() / 2 + 256);

    // Local file header; CRC and sizes at 14..26 are patched below.
    put_u32(&mut out, LOCAL_HEADER_SIGNATURE);
    put_u16(&mut out, VERSION_NEEDED);
    put_u16(&mut out, FLAG_UTF8);
    put_u16(&mut out, METHOD_DEFLATE);
    put_u16(&mut out, modified.time);
    put_u16(&mut out, modified.date);
    put_u32(&mut out, crc);
    put_u32(&mut out, 0); // compressed size, patched
    put_u32(&mut out, uncompressed);
    put_u16(&mut out, name_len);
    put_u16(&mut out, 0); // extra field length
    out.extend_from_slice(name.as_bytes());

    let data_start = out.len();
    deflate_into(content, level.min(9), &mut out)?;
    let compressed = u32::try_from(out.len() - data_start)
        .ok()
        .filter(|c| *c != u32::MAX)
        .ok_or_else(|| invalid("compressed file too large for ZIP without ZIP64"))?;
    // The local header's compressed size, known now.
    out.get_mut(18..22)
        .ok_or_else(|| invalid("the local header is cut short"))?
        .copy_from_slice(&compressed.to_le_bytes());

    // Central directory: one header.
    let central_start =
        u32::try_from(out.len()).map_err(|_| invalid("archive too large for ZIP without ZIP64"))?;
    put_u32(&mut out, CENTRAL_HEADER_SIGNATURE);
    put_u16(&mut out, VERSION_MADE_BY);
    put_u16(&mut out, VERSION_NEEDED);
    put_u16(&mut out, FLAG_UTF8);
    put_u16(&mut out, METHOD_DEFLATE);
    put_u16(&mut out, modified.time);
    put_u16(&mut out, modified.date);
    put_u32(&mut out, crc);
    put_u32(&mut out, compressed);
    put_u32(&mut out, uncompressed);
    put_u16(&mut out, name_len);
    put_u16(&mut out, 0); // extra field length
    put_u16(&mut out, 0); // comment length
    put_u16(&mut out, 0); // disk number start
    put_u16(&mut out, 0); // internal attributes
    put_u32(&mut out, EXTERNAL_ATTRIBUTES);
    put_u32(&mut out, 0); // offset of the local header
    out.extend_from_slice(name.as_bytes());
    let central_len = u32::try_from(out.len())
        .map_err(|_| invalid("archive too large for ZIP without ZIP64"))?
        - central_start;

    // End of central directory.
    put_u32(&mut out, END_OF_CENTRAL_DIRECTORY_SIGNATURE);
    put_u16(&mut out, 0); // this disk
    put_u16(&mut out, 0); // disk with the central directory
    put_u16(&mut out, 1); // entries on this disk
    put_u16(&mut out, 1); // entries in all
    put_u32(&mut out, central_len);
    put_u32(&mut out, central_start);
    put_u16(&mut out, 0); // comment length
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read};

    fn le16(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    #[test]
    fn dos_date_time_packs_fields_and_falls_back_to_1980() {
        let t = DosDateTime::new(2025, 3, 14, 10, 20, 31);
        assert_eq!(t.date, (45 << 9) | (3 << 5) | 14);
        assert_eq!(t.time, (10 << 11) | (20 << 5) | 15);
        assert_eq!(
            DosDateTime::new(1979, 12, 31, 23, 59, 59),
            DosDateTime::EPOCH
        );
        assert_eq!(DosDateTime::new(2108, 1, 1, 0, 0, 0), DosDateTime::EPOCH);
        assert_eq!(DosDateTime::new(2025, 13, 1, 0, 0, 0), DosDateTime::EPOCH);
        let last = DosDateTime::new(2107, 12, 31, 23, 59, 58);
        assert_eq!(last.date, (127 << 9) | (12 << 5) | 31);
    }

    #[test]
    fn layout_is_one_local_header_data_central_header_and_end() {
        let name = "fvñ.xml";
        let content = b"<a>hello hello hello hello</a>".repeat(50);
        let at = DosDateTime::new(2025, 3, 14, 10, 20, 30);
        let z = single_entry(name, &content, at, 1).unwrap();
        let n = name.len();
        assert_eq!(le32(&z, 0), LOCAL_HEADER_SIGNATURE);
        assert_eq!(le16(&z, 6), FLAG_UTF8);
        assert_eq!(le16(&z, 8), METHOD_DEFLATE);
        assert_eq!((le16(&z, 10), le16(&z, 12)), (at.time, at.date));
        assert_eq!(le32(&z, 14), crc32fast::hash(&content));
        let compressed = le32(&z, 18) as usize;
        assert_eq!(le32(&z, 22) as usize, content.len());
        assert_eq!(le16(&z, 26) as usize, n);
        assert_eq!(&z[30..30 + n], name.as_bytes());
        let central = 30 + n + compressed;
        assert_eq!(le32(&z, central), CENTRAL_HEADER_SIGNATURE);
        assert_eq!(le32(&z, central + 42), 0);
        let end = z.len() - 22;
        assert_eq!(end, central + 46 + n);
        assert_eq!(le32(&z, end), END_OF_CENTRAL_DIRECTORY_SIGNATURE);
        assert_eq!(le32(&z, end + 12) as usize, 46 + n);
        assert_eq!(le32(&z, end + 16) as usize, central);
        // The data inflates back to the content.
        let mut inflated = Vec::new();
        flate2::read::DeflateDecoder::new(&z[30 + n..central])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, content);
    }

    #[test]
    fn reused_compressor_gives_identical_archives_and_switches_level() {
        let at = DosDateTime::new(2025, 1, 2, 3, 4, 5);
        let a = b"<x>abcdefabcdef</x>".repeat(300);
        let b = b"<y>zzzz</y>".repeat(10);
        let first = single_entry("a.xml", &a, at, 1).unwrap();
        let _ = single_entry("b.xml", &b, at, 1).unwrap();
        let at6 = single_entry("a.xml", &a, at, 6).unwrap();
        assert_eq!(single_entry("a.xml", &a, at, 1).unwrap(), first);
        let mut archive = zip::ZipArchive::new(Cursor::new(at6)).unwrap();
        let mut s = Vec::new();
        archive.by_index(0).unwrap().read_to_end(&mut s).unwrap();
        assert_eq!(s, a);
    }

    #[test]
    fn empty_and_incompressible_contents_round_trip() {
        let at = DosDateTime::EPOCH;
        // A pseudo-random buffer larger than the initial reservation forces
        // the output to grow.
        let mut x: u32 = 0x1234_5678;
        let noise: Vec<u8> = (0..300_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        for content in [&b""[..], &noise[..]] {
            let z = single_entry("e.xml", content, at, 1).unwrap();
            let mut archive = zip::ZipArchive::new(Cursor::new(z)).unwrap();
            let mut f = archive.by_index(0).unwrap();
            assert_eq!(f.crc32(), crc32fast::hash(content));
            let mut s = Vec::new();
            f.read_to_end(&mut s).unwrap();
            assert_eq!(s, content);
        }
    }

    #[test]
    fn overlong_name_is_refused() {
        let name = "a".repeat(70_000);
        assert!(single_entry(&name, b"x", DosDateTime::EPOCH, 1).is_err());
    }
}
