//! ZIP packaging with the authority's file names (protocol.md §5.1):
//!
//! ```text
//! {pp}{NIT10}{ppp}{aa}{dddddddd}.xml     the document
//! z{NIT10}{ppp}{aa}{dddddddd}.zip        the ZIP sent to the authority
//! ad{NIT10}{ppp}{aa}{dddddddd}.xml       the AttachedDocument
//! ```
//!
//! `NIT10` is the issuer's NIT without check digit, left-padded with zeros to
//! 10 digits; `ppp` the provider code, `000` (own software); `aa` the last
//! two digits of the year; `dddddddd` the consecutive of files sent in the
//! year as 8 hexadecimal digits (lower case), as the payroll annex states
//! for its names. The authority does not enforce these names (only that the
//! ZIP's name ends in `.zip`), so the choices below are ours:
//!
//! | Kind | `pp` |
//! |---|---|
//! | 1 sales, 6 export, 7 contingency T03, 8 contingency T04 | `fv` |
//! | 2 credit note | `nc` |
//! | 3 debit note | `nd` |
//! | 4 support document | `ds` |
//! | 5 support-document adjustment | `nds` (as ApiDian) |
//! | 9 POS receipt | `pos` |
//! | 10 POS adjustment | `npos` |
//!
//! One XML per ZIP (the synchronous operation accepts no more).

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, FixedOffset, Timelike};
use thiserror::Error;

use super::model::DocumentKind;
use super::zip_writer::{self, DosDateTime};

/// DEFLATE level. Level 1 is about twice as fast as level 6 on a signed
/// invoice (`pipeline::tests::cost_of_building_and_zipping_a_five_line_invoice`;
/// figures in docs/performance.md); the few KB it adds are nothing next to a
/// SOAP round trip, and the ZIP is sent once.
pub const DEFLATE_LEVEL: i64 = 1;

/// Provider code `ppp`: own software.
pub const PROVIDER_CODE: &str = "000";

#[derive(Debug, Error)]
pub enum PackageError {
    /// Not produced since the ZIP is written by [`zip_writer`]; kept so the
    /// type stays as callers know it.
    #[error("zip: {0}")]
    Zip(#[from] zip::result::ZipError),
    #[error("zip io: {0}")]
    Io(#[from] std::io::Error),
}

/// `pp` of a document kind (table above).
pub fn file_prefix(kind: DocumentKind) -> &'static str {
    match kind {
        DocumentKind::Invoice
        | DocumentKind::ExportInvoice
        | DocumentKind::ContingencyT03
        | DocumentKind::ContingencyT04 => "fv",
        DocumentKind::CreditNote => "nc",
        DocumentKind::DebitNote => "nd",
        DocumentKind::SupportDocument => "ds",
        DocumentKind::SupportAdjustment => "nds",
        DocumentKind::Pos => "pos",
        DocumentKind::PosAdjustment => "npos",
    }
}

/// The three names of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileNames {
    pub xml: String,
    pub zip: String,
    pub attached: String,
}

/// NIT without anything but digits, left-padded to 10 (longer NITs are kept
/// whole), written at the end of `out`.
fn push_nit10(out: &mut String, nit: &str) {
    let digits = nit.bytes().filter(u8::is_ascii_digit).count();
    out.extend(std::iter::repeat_n('0', 10usize.saturating_sub(digits)));
    out.extend(nit.chars().filter(char::is_ascii_digit));
}

/// Names for a document of `kind` issued by `nit` in `year`, with the
/// year's file consecutive. Each name is made at its length (no `String`
/// grows): three a document.
pub fn file_names(kind: DocumentKind, nit: &str, year: i32, consecutive: u32) -> FileNames {
    let name = |head: &str, ext: &str| {
        let mut out = String::with_capacity(head.len() + nit.len().max(10) + 17);
        out.push_str(head);
        push_nit10(&mut out, nit);
        out.push_str(PROVIDER_CODE);
        let _ = write!(out, "{:02}{consecutive:08x}", year.rem_euclid(100));
        out.push_str(ext);
        out
    };
    FileNames {
        xml: name(file_prefix(kind), ".xml"),
        zip: name("z", ".zip"),
        attached: name("ad", ".xml"),
    }
}

fn zip_time(at: DateTime<FixedOffset>) -> DosDateTime {
    DosDateTime::new(
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
    )
}

/// A ZIP holding one file, deflated at [`DEFLATE_LEVEL`], stamped with
/// `modified` (local time as written).
pub fn zip_single(
    name: &str,
    content: &[u8],
    modified: DateTime<FixedOffset>,
) -> Result<Vec<u8>, PackageError> {
    zip_single_at_level(name, content, modified, DEFLATE_LEVEL)
}

/// [`zip_single`] with an explicit level (for measurements).
pub fn zip_single_at_level(
    name: &str,
    content: &[u8],
    modified: DateTime<FixedOffset>,
    level: i64,
) -> Result<Vec<u8>, PackageError> {
    let level = u32::try_from(level.clamp(0, 9)).unwrap_or(1);
    Ok(zip_writer::single_entry(
        name,
        content,
        zip_time(modified),
        level,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read};
    use std::process::Command;
    use zip::CompressionMethod;

    #[test]
    fn names_follow_the_pattern() {
        let n = file_names(DocumentKind::Invoice, "900000001", 2025, 990000001);
        assert_eq!(n.xml, "fv0900000001000253b023381.xml");
        assert_eq!(n.zip, "z0900000001000253b023381.zip");
        assert_eq!(n.attached, "ad0900000001000253b023381.xml");
        let n = file_names(DocumentKind::SupportAdjustment, "800.197.268", 2009, 12);
        assert_eq!(n.xml, "nds080019726800009".to_string() + "0000000c.xml");
        // A NIT of more than ten digits is kept whole.
        let n = file_names(DocumentKind::Invoice, "123-456789012", 2026, 255);
        assert_eq!(n.zip, "z12345678901200026000000ff.zip");
        let prefixes: Vec<_> = DocumentKind::ALL.iter().map(|k| file_prefix(*k)).collect();
        assert_eq!(
            prefixes,
            ["fv", "nc", "nd", "ds", "nds", "fv", "fv", "fv", "pos", "npos"]
        );
    }

    fn at() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2025-03-14T10:20:30-05:00").unwrap()
    }

    fn body() -> String {
        "<Invoice>ñ</Invoice>".repeat(200)
    }

    #[test]
    fn zip_round_trips_one_file() {
        let body = body();
        let bytes = zip_single("fv1.xml", body.as_bytes(), at()).unwrap();
        assert!(bytes.len() < body.len());
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        assert_eq!(archive.len(), 1);
        let mut f = archive.by_index(0).unwrap();
        assert_eq!(f.name(), "fv1.xml");
        assert_eq!(f.compression(), CompressionMethod::Deflated);
        assert_eq!(f.crc32(), crc32fast::hash(body.as_bytes()));
        assert_eq!(f.size(), body.len() as u64);
        assert_eq!(f.unix_mode(), Some(0o100_644));
        let t = f.last_modified().unwrap();
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2025, 3, 14, 10, 20, 30)
        );
        let mut s = String::new();
        // `read_to_string` checks the CRC at the end of the entry.
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, body);
    }

    #[test]
    fn a_corrupted_crc_is_detected() {
        let body = body();
        let mut bytes = zip_single("fv1.xml", body.as_bytes(), at()).unwrap();
        // CRC-32 in the central directory header (what the reader trusts).
        let central = bytes.len() - 22 - 46 - "fv1.xml".len();
        bytes[central + 16] ^= 0xff;
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut s = Vec::new();
        assert!(archive.by_index(0).unwrap().read_to_end(&mut s).is_err());
    }

    #[test]
    fn non_ascii_names_round_trip_as_utf8() {
        let bytes = zip_single("factura-ñandú.xml", b"<a/>", at()).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        assert_eq!(archive.by_index(0).unwrap().name(), "factura-ñandú.xml");
    }

    #[test]
    fn out_of_range_dates_fall_back_to_1980() {
        let old = DateTime::parse_from_rfc3339("1970-01-01T00:00:00-05:00").unwrap();
        let bytes = zip_single("a.xml", b"<a/>", old).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let f = archive.by_index(0).unwrap();
        let t = f.last_modified().unwrap();
        assert_eq!((t.year(), t.month(), t.day()), (1980, 1, 1));
    }

    #[test]
    fn the_simulator_opens_it() {
        let body = body();
        let bytes = zip_single("fv0900000001000253b023381.xml", body.as_bytes(), at()).unwrap();
        let entries = crate::authority::simulator::package::xml_entries(&bytes).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "fv0900000001000253b023381.xml");
        assert_eq!(entries[0].bytes, body.as_bytes());
    }

    fn temp_zip(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.zip");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn python_zipfile_reads_it() {
        let body = body();
        let bytes = zip_single("fvñ1.xml", body.as_bytes(), at()).unwrap();
        let (_dir, path) = temp_zip(&bytes);
        let script = "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             assert z.testzip() is None\n\
             (i,) = z.infolist()\n\
             sys.stdout.buffer.write(('%s|%s|%d|%d|%08x|%s|' % (i.filename, i.date_time, \
             i.compress_type, i.file_size, i.CRC, i.flag_bits & 0x800)).encode())\n\
             sys.stdout.buffer.write(z.read(i))\n";
        let out = match Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(&path)
            .output()
        {
            Ok(out) => out,
            Err(e) => {
                eprintln!("skipped: python3 not runnable ({e})");
                return;
            }
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = format!(
            "fvñ1.xml|(2025, 3, 14, 10, 20, 30)|8|{}|{:08x}|2048|{body}",
            body.len(),
            crc32fast::hash(body.as_bytes())
        );
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn unzip_tests_it() {
        let bytes = zip_single("fv1.xml", body().as_bytes(), at()).unwrap();
        let (_dir, path) = temp_zip(&bytes);
        match Command::new("unzip").arg("-t").arg(&path).output() {
            Ok(out) => assert!(
                out.status.success(),
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("skipped: unzip not runnable ({e})"),
        }
    }
}
