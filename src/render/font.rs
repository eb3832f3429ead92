//! The one typeface of every PDF: DejaVu Sans (licence beside it in
//! `fonts/`), compiled in. Its character map and advance widths are read
//! once; each document embeds only the glyphs it uses, subset on the spot,
//! so a PDF carries a few KB of font instead of the 740 KB file.
//!
//! Subsetting reads the whole source font's glyph, name and character
//! tables (6,000 glyphs) each time; most of that work is spared by
//! subsetting from a *working font* made once, at load, of the glyphs of
//! the Latin, punctuation and currency blocks (what Spanish documents
//! print). A document with a character outside them is subset from the
//! whole font, as before.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use allsorts::binary::read::ReadScope;
use allsorts::font_data::FontData;
use allsorts::subset::{subset, CmapTarget, SubsetProfile};
use allsorts::tables::cmap::Cmap;
use allsorts::tables::{FontTableProvider, HeadTable, HheaTable, HmtxTable, MaxpTable};
use allsorts::tag;
use printpdf::{FontType, ParsedFont, PdfFontMetricsStub};

use super::RenderError;

/// DejaVu Sans 2.37 (Bitstream Vera licence, `fonts/LICENSE-DejaVu.txt`).
const FONT_BYTES: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

/// What layout needs of the font: which glyph draws a character and how
/// wide it is.
pub struct FontMetrics {
    glyphs: HashMap<char, u16>,
    /// The glyph of each character below [`DIRECT`], looked up on every
    /// character measured or drawn without hashing.
    direct: Vec<Option<u16>>,
    /// Advance of each glyph id, in font units.
    advances: Vec<u16>,
    units_per_em: f32,
    /// What a PDF's font descriptor says of the face (head, hhea),
    /// the same for every subset.
    face: Face,
    /// The font cut to [`WORKING_SET`], subset from when a document's
    /// characters are all in it.
    working: Working,
}

/// Characters below this are looked up in [`FontMetrics::direct`].
const DIRECT: u32 = 0x250;

/// The blocks of the working font: Basic Latin to Latin Extended-B,
/// spacing modifier letters, general punctuation, currency symbols and
/// letterlike symbols (№, ™).
const WORKING_SET: [(u32, u32); 5] = [
    (0x20, 0x24F),
    (0x2B0, 0x2FF),
    (0x2000, 0x206F),
    (0x20A0, 0x20CF),
    (0x2100, 0x214F),
];

/// A subset of the font made once: its program and the glyph id in it of
/// each character it holds.
struct Working {
    bytes: Vec<u8>,
    glyphs: HashMap<char, u16>,
}

/// The face-wide values of `head` and `hhea` that printpdf writes in the
/// font descriptor; a subset keeps them as they are.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Face {
    units_per_em: u16,
    bbox: [i16; 4],
    ascent: i16,
    descent: i16,
    caret_slope_rise: i16,
    caret_slope_run: i16,
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
        let direct = (0..DIRECT)
            .map(|cp| char::from_u32(cp).and_then(|c| glyphs.get(&c).copied()))
            .collect();
        let working = Working::cut(&provider, &glyphs).map_err(|e| e.to_string())?;
        Ok(FontMetrics {
            glyphs,
            direct,
            advances,
            working,
            units_per_em: f32::from(head.units_per_em),
            face: Face {
                units_per_em: head.units_per_em,
                bbox: [head.x_min, head.y_min, head.x_max, head.y_max],
                ascent: hhea.ascender,
                descent: hhea.descender,
                caret_slope_rise: hhea.caret_slope_rise,
                caret_slope_run: hhea.caret_slope_run,
            },
        })
    }

    /// The glyph that draws `c`, if the font has one.
    fn glyph(&self, c: char) -> Option<u16> {
        match self.direct.get(c as usize) {
            Some(gid) => *gid,
            None => self.glyphs.get(&c).copied(),
        }
    }

    /// Whether the font draws `c`.
    pub fn has(&self, c: char) -> bool {
        self.glyph(c).is_some()
    }

    /// Width of `text` at `size` points, in points (characters the font
    /// lacks measure as [`REPLACEMENT`], which is what gets drawn).
    pub fn width(&self, text: &str, size: f32) -> f32 {
        let units: u64 = text.chars().map(|c| self.advance(c)).sum();
        self.points(units, size)
    }

    /// The advance of `c` in font units: a text's width is the sum of its
    /// characters' (no kerning), so a width can be kept running.
    pub fn advance(&self, c: char) -> u64 {
        let gid = self
            .glyph(c)
            .or_else(|| self.glyph(REPLACEMENT))
            .unwrap_or(0);
        u64::from(self.advances.get(usize::from(gid)).copied().unwrap_or(0))
    }

    /// `units` of the font at `size` points, in points.
    pub fn points(&self, units: u64, size: f32) -> f32 {
        units as f32 * size / self.units_per_em
    }

    /// A font program holding only the glyphs of `chars` (and `.notdef`),
    /// with a Unicode character map of its own.
    pub fn subset(&self, chars: &BTreeSet<char>) -> Result<Vec<u8>, RenderError> {
        self.subset_with_ids(chars).map(|(bytes, _)| bytes)
    }

    /// The subset of `chars` as printpdf embeds it, built from what is
    /// known of it instead of parsing the program just made: glyph `i` of
    /// the subset is glyph `ids[i]` of the font, with its advance, and the
    /// face-wide values are the font's.
    pub fn subset_font(&self, chars: &BTreeSet<char>) -> Result<ParsedFont, RenderError> {
        let (bytes, ids) = self.subset_with_ids(chars)?;
        let new_id: HashMap<u16, u16> = ids
            .iter()
            .enumerate()
            .map(|(i, g)| (*g, i as u16))
            .collect();
        let codepoint_to_glyph = chars
            .iter()
            .filter_map(|c| {
                let gid = self.glyph(*c)?;
                new_id.get(&gid).map(|n| (u32::from(*c), *n))
            })
            .collect();
        let glyph_widths = ids
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let advance = self.advances.get(usize::from(*g)).copied().unwrap_or(0);
                (i as u16, advance)
            })
            .collect();
        let f = self.face;
        Ok(ParsedFont {
            original_bytes: bytes,
            font_index: 0,
            font_name: None,
            codepoint_to_glyph,
            glyph_widths,
            units_per_em: f.units_per_em,
            font_metrics: printpdf::FontMetrics {
                ascent: f.ascent,
                descent: f.descent,
            },
            font_type: FontType::TrueType,
            pdf_font_metrics: PdfFontMetricsStub {
                units_per_em: f.units_per_em,
                x_min: f.bbox[0],
                y_min: f.bbox[1],
                x_max: f.bbox[2],
                y_max: f.bbox[3],
                caret_slope_rise: f.caret_slope_rise,
                caret_slope_run: f.caret_slope_run,
                // A subset has no OS/2 table (allsorts' PDF profile):
                // printpdf's constant stem width, as when it parsed one.
                us_weight_class: 0,
            },
        })
    }

    /// The subset program of `chars` and the glyph ids, in the whole font,
    /// of its glyphs in order (`.notdef` first).
    fn subset_with_ids(&self, chars: &BTreeSet<char>) -> Result<(Vec<u8>, Vec<u16>), RenderError> {
        let font = |e: String| RenderError::Font(e);
        // (glyph in the font subset from, glyph in the whole font)
        let from_working = chars
            .iter()
            .filter(|c| self.has(**c))
            .all(|c| self.working.glyphs.contains_key(c));
        let mut pairs: Vec<(u16, u16)> = chars
            .iter()
            .filter_map(|c| {
                let whole = self.glyph(*c)?;
                let source = if from_working {
                    *self.working.glyphs.get(c)?
                } else {
                    whole
                };
                Some((source, whole))
            })
            .filter(|(g, _)| *g != 0)
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        // `.notdef` first, as the subsetter requires.
        pairs.insert(0, (0, 0));
        let source_ids: Vec<u16> = pairs.iter().map(|(s, _)| *s).collect();
        let bytes = if from_working {
            subset_of(&self.working.bytes, &source_ids)
        } else {
            subset_of(FONT_BYTES, &source_ids)
        }
        .map_err(font)?;
        Ok((bytes, pairs.into_iter().map(|(_, w)| w).collect()))
    }
}

/// The subset of the font program `font` holding glyphs `ids` (`.notdef`
/// first), renumbered in that order (the glyphs composite ones are made of
/// follow), with a Unicode character map.
fn subset_of(font: &[u8], ids: &[u16]) -> Result<Vec<u8>, String> {
    let data = ReadScope::new(font)
        .read::<FontData<'_>>()
        .map_err(|e| e.to_string())?;
    let provider = data.table_provider(0).map_err(|e| e.to_string())?;
    subset(&provider, ids, &SubsetProfile::Pdf, CmapTarget::Unicode).map_err(|e| e.to_string())
}

impl Working {
    /// The working font of the whole font `provider` whose character map
    /// is `glyphs`.
    fn cut(
        provider: &impl FontTableProvider,
        glyphs: &HashMap<char, u16>,
    ) -> Result<Working, String> {
        let mut held: Vec<(u16, char)> = glyphs
            .iter()
            .filter(|(c, g)| {
                let cp = u32::from(**c);
                **g != 0 && WORKING_SET.iter().any(|(lo, hi)| (*lo..=*hi).contains(&cp))
            })
            .map(|(c, g)| (*g, *c))
            .collect();
        held.sort_unstable();
        let mut ids: Vec<u16> = vec![0];
        let mut new_glyphs = HashMap::new();
        for (g, c) in held {
            // Several characters may share a glyph.
            if ids.last() != Some(&g) {
                ids.push(g);
            }
            new_glyphs.insert(c, (ids.len() - 1) as u16);
        }
        let bytes = subset(provider, &ids, &SubsetProfile::Pdf, CmapTarget::Unicode)
            .map_err(|e| e.to_string())?;
        Ok(Working {
            bytes,
            glyphs: new_glyphs,
        })
    }
}

#[cfg(test)]
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

    /// The font object built from what is known of the subset is what
    /// parsing the subset program gives, for every character it holds;
    /// from the working font and, with a character outside it (Ω), from
    /// the whole one.
    #[test]
    fn the_built_subset_font_is_the_parsed_one() {
        for text in [
            "Factura electrónica Nómina Bogotá ¿¡ $ € № 0123456789 ?",
            "Factura electrónica Ω Bogotá 0123456789",
        ] {
            built_is_parsed(text);
        }
    }

    fn built_is_parsed(text: &str) {
        let m = metrics().unwrap();
        let chars: BTreeSet<char> = text.chars().collect();
        let built = m.subset_font(&chars).unwrap();
        let mut warnings = Vec::new();
        let parsed =
            printpdf::ParsedFont::from_bytes(&built.original_bytes, 0, &mut warnings).unwrap();
        assert_eq!(built.original_bytes, m.subset(&chars).unwrap());
        for c in &chars {
            let gid = built.lookup_glyph_index(u32::from(*c));
            assert!(gid.is_some(), "{c} missing");
            assert_eq!(gid, parsed.lookup_glyph_index(u32::from(*c)), "{c}");
        }
        // Glyphs only composite ones are made of come after those of the
        // characters and have no width of their own to give.
        for (gid, width) in &built.glyph_widths {
            assert_eq!(Some(width), parsed.glyph_widths.get(gid), "glyph {gid}");
        }
        assert!(built.glyph_widths.len() > chars.len() / 2);
        assert_eq!(built.units_per_em, parsed.units_per_em);
        assert_eq!(built.font_metrics, parsed.font_metrics);
        assert_eq!(built.font_type, parsed.font_type);
        assert_eq!(built.pdf_font_metrics, parsed.pdf_font_metrics);
        assert_eq!(built.font_name, parsed.font_name);
    }

    /// Subsetting from the working font makes the same program as from
    /// the whole font.
    #[test]
    fn the_working_font_subsets_as_the_whole_font() {
        let m = metrics().unwrap();
        let chars: BTreeSet<char> = "Factura electrónica de venta Bogotá, D.C. ÁÉÍÓÚ ñÑ üÜ ¿¡ $ € ° º ª – — “” … 0123456789 %()"
            .chars()
            .collect();
        let (from_working, ids) = m.subset_with_ids(&chars).unwrap();
        let from_whole = subset_of(FONT_BYTES, &ids).unwrap();
        assert_eq!(from_working, from_whole);
        // Its character map is what it claims.
        let mut warnings = Vec::new();
        let working = printpdf::ParsedFont::from_bytes(&m.working.bytes, 0, &mut warnings).unwrap();
        for (c, gid) in &m.working.glyphs {
            assert_eq!(working.lookup_glyph_index(u32::from(*c)), Some(*gid), "{c}");
        }
        assert!(m.working.glyphs.len() > 300, "{}", m.working.glyphs.len());
    }
}
