//! Reading the ZIP a client sends (protocol.md §5.1): the XML entries, with
//! bounds on count and size since the bytes are untrusted.

use std::io::{Cursor, Read};

/// Most XML documents in one ZIP (async sends, "inferior a 51").
pub const MAX_XML_PER_ZIP: usize = 50;
/// Largest uncompressed XML read.
pub const MAX_XML_BYTES: u64 = 8 * 1024 * 1024;
/// Most entries looked at.
const MAX_ENTRIES: usize = 200;

/// One XML document of the ZIP (folders stripped from the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlEntry {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The XML entries of `zip`, or a reason fit for a rule 89 rejection.
pub fn xml_entries(zip: &[u8]) -> Result<Vec<XmlEntry>, String> {
    std::panic::catch_unwind(|| read(zip))
        .unwrap_or_else(|_| Err("El archivo ZIP no se puede leer.".to_string()))
}

fn read(zip: &[u8]) -> Result<Vec<XmlEntry>, String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip))
        .map_err(|e| format!("El archivo ZIP no se puede leer: {e}."))?;
    if archive.len() > MAX_ENTRIES {
        return Err("El archivo ZIP contiene demasiados archivos.".into());
    }
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let file = archive
            .by_index(i)
            .map_err(|e| format!("El archivo ZIP no se puede leer: {e}."))?;
        if file.is_dir() {
            continue;
        }
        let full = file.name().to_string();
        let name = full.rsplit(['/', '\\']).next().unwrap_or(&full).to_string();
        if !name.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        if out.len() == MAX_XML_PER_ZIP {
            return Err(format!(
                "El archivo ZIP contiene más de {MAX_XML_PER_ZIP} documentos."
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_XML_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("El archivo {name} no se puede descomprimir: {e}."))?;
        if bytes.len() as u64 > MAX_XML_BYTES {
            return Err(format!("El archivo {name} es demasiado grande."));
        }
        out.push(XmlEntry { name, bytes });
    }
    if out.is_empty() {
        return Err("El archivo ZIP no contiene documentos XML.".into());
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in files {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .expect("start");
        w.write_all(bytes).expect("write");
    }
    w.finish().expect("finish").into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_xml_entries_and_strips_folders() {
        let z = zip_of(&[("a/b/fv1.xml", b"<a/>"), ("readme.txt", b"x")]);
        let e = xml_entries(&z).expect("entries");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].name, "fv1.xml");
        assert_eq!(e[0].bytes, b"<a/>");
    }

    #[test]
    fn rejects_garbage_and_empty() {
        assert!(xml_entries(b"not a zip").is_err());
        assert!(xml_entries(&[]).is_err());
        assert!(xml_entries(&zip_of(&[("x.txt", b"1")])).is_err());
        let many: Vec<(String, Vec<u8>)> = (0..51)
            .map(|i| (format!("{i}.xml"), b"<a/>".to_vec()))
            .collect();
        let refs: Vec<(&str, &[u8])> = many
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        assert!(xml_entries(&zip_of(&refs)).is_err());
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Untrusted bytes never panic the ZIP reader, the fact reader or the
        /// request verifier.
        #[test]
        fn untrusted_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = super::xml_entries(&bytes);
            let text = String::from_utf8_lossy(&bytes);
            let _ = super::super::document::DocumentFacts::read(&text);
            if let Ok(doc) = roxmltree::Document::parse(&text) {
                let _ = crate::authority::soap::wssec::verify_request(&doc, chrono::Utc::now());
            }
            let _ = crate::authority::soap::response::parse_status_zip(&text);
        }
    }
}
