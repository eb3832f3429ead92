//! The one typeface of every PDF: DejaVu Sans (licence beside it in
//! `fonts/`), compiled in. Its character map and advance widths are read
//! once; each document embeds only the glyphs it uses, subset on the spot,
//! so a PDF carries a few KB of font instead of the 740 KB file.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use allsorts::binary::read::ReadScope;
use allsorts::font_data::FontData;
use allsorts::subset::{subset, CmapTarget, SubsetProfile};
use allsorts::tables::cmap::Cmap;
use allsorts::tables::{FontTableProvider, HeadTable, HheaTable, HmtxTable, MaxpTable};
use allsorts::tag;

use super::RenderError;

/// DejaVu Sans 2.37 (Bitstream Vera licence, `fonts/LICENSE-DejaVu.txt`).
const FONT_BYTES: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

/// What layout needs of the font: which glyph draws a character and how
/// wide it is.
pub struct FontMetrics {
    glyphs: HashMap<char, u16>,
    /// Advance of each glyph id, in font units.
    advances: Vec<u16>,
    units_per_em: f32,
}

static METRICS: OnceLock<Result<FontMetrics, String>> = OnceLock::new();

/// The font's metrics, read on first use.
pub fn metrics() -> Result<&'static FontMetrics, RenderError> {
    METRICS
        .get_or_init(|| FontMetrics::read(FONT_BYTES))
        .as_ref()
        .map_err(|e| RenderError::Font(e.clone()))
}

/// Stands in for a character the font lacks.
pub const REPLACEMENT: char = '?';

impl FontMetrics {
    fn read(bytes: &[u8]) -> Result<FontMetrics, String> {
        let data = ReadScope::new(bytes)
            .read::<FontData<'_>>()
            .map_err(|e| e.to_string())?;
        let provider = data.table_provider(0).map_err(|e| e.to_string())?;
        let table = |t| provider.read_table_data(t).map_err(|e| e.to_string());
        let head_data = table(tag::HEAD)?;
        let head = ReadScope::new(&head_data)
            .read::<HeadTable>()
            .map_err(|e| e.to_string())?;
        let maxp_data = table(tag::MAXP)?;
        let maxp = ReadScope::new(&maxp_data)
            .read::<MaxpTable>()
            .map_err(|e| e.to_string())?;
        let hhea_data = table(tag::HHEA)?;
        let hhea = ReadScope::new(&hhea_data)
            .read::<HheaTable>()
            .map_err(|e| e.to_string())?;
        let hmtx_data = table(tag::HMTX)?;
        let hmtx = ReadScope::new(&hmtx_data)
            .read_dep::<HmtxTable<'_>>((
                usize::from(maxp.num_glyphs),
                usize::from(hhea.num_h_metrics),
            ))
            .map_err(|e| e.to_string())?;
        let advances = (0..maxp.num_glyphs)
            .map(|g| hmtx.horizontal_advance(g).unwrap_or(0))
            .collect();
        let cmap_data = table(tag::CMAP)?;
        let cmap = ReadScope::new(&cmap_data)
            .read::<Cmap<'_>>()
            .map_err(|e| e.to_string())?;
        let (_, subtable) = allsorts::font::read_cmap_subtable(&cmap)
            .map_err(|e| e.to_string())?
            .ok_or("the font has no Unicode character map")?;
        let mut glyphs = HashMap::new();
        subtable
            .mappings_fn(|cp, gid| {
                if let Some(c) = char::from_u32(cp) {
                    glyphs.insert(c, gid);
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(FontMetrics {
            glyphs,
            advances,
            units_per_em: f32::from(head.units_per_em),
        })
    }

    /// Whether the font draws `c`.
    pub fn has(&self, c: char) -> bool {
        self.glyphs.contains_key(&c)
    }

    /// Width of `text` at `size` points, in points (characters the font
    /// lacks measure as [`REPLACEMENT`], which is what gets drawn).
    pub fn width(&self, text: &str, size: f32) -> f32 {
        let units: u32 = text
            .chars()
            .map(|c| {
                let gid = self
                    .glyphs
                    .get(&c)
                    .or_else(|| self.glyphs.get(&REPLACEMENT))
                    .copied()
                    .unwrap_or(0);
                u32::from(self.advances.get(usize::from(gid)).copied().unwrap_or(0))
            })
            .sum();
        units as f32 * size / self.units_per_em
    }

    /// A font program holding only the glyphs of `chars` (and `.notdef`),
    /// with a Unicode character map of its own.
    pub fn subset(&self, chars: &BTreeSet<char>) -> Result<Vec<u8>, RenderError> {
        let mut ids: Vec<u16> = chars
            .iter()
            .filter_map(|c| self.glyphs.get(c).copied())
            .filter(|g| *g != 0)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        // `.notdef` first, as the subsetter requires.
        ids.insert(0, 0);
        let data = ReadScope::new(FONT_BYTES)
            .read::<FontData<'_>>()
            .map_err(|e| RenderError::Font(e.to_string()))?;
        let provider = data
            .table_provider(0)
            .map_err(|e| RenderError::Font(e.to_string()))?;
        subset(&provider, &ids, &SubsetProfile::Pdf, CmapTarget::Unicode)
            .map_err(|e| RenderError::Font(e.to_string()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn spanish_letters_are_in_the_font_and_have_width() {
        let m = metrics().unwrap();
        for c in "áéíóúÁÉÍÓÚñÑüÜ¿¡°$€".chars() {
            assert!(m.has(c), "{c} missing");
        }
        let w = m.width("Bogotá", 10.0);
        assert!(w > 20.0 && w < 60.0, "{w}");
        // The replacement stands in for what the font lacks.
        assert_eq!(m.width("\u{10FFFD}", 10.0), m.width("?", 10.0));
    }

    #[test]
    fn a_subset_is_small_and_keeps_its_characters() {
        let m = metrics().unwrap();
        let chars: BTreeSet<char> = "Nómina Bogotá 0123456789".chars().collect();
        let bytes = m.subset(&chars).unwrap();
        assert!(bytes.len() < 40_000, "{} bytes", bytes.len());
        let mut warnings = Vec::new();
        let parsed = printpdf::ParsedFont::from_bytes(&bytes, 0, &mut warnings).unwrap();
        for c in chars {
            assert!(
                parsed.lookup_glyph_index(c as u32).is_some(),
                "{c} lost in the subset"
            );
        }
    }
}
