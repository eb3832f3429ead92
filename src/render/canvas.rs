//! Drawing primitives over printpdf: text measured with the font's own
//! widths, rules, shaded boxes and QR codes, placed from the top-left of a
//! page (layouts think top-down; PDF counts from the bottom, and a thermal
//! strip only knows its height once everything is placed). The pages
//! become one PDF with a single font subset of the characters they use.

use std::collections::{BTreeMap, BTreeSet};

use printpdf::{
    Color, DictItem, ExternalStream, ExternalXObject, LinePoint, Mm, Op, PaintMode, PdfDocument,
    PdfFontHandle, PdfPage, PdfSaveOptions, Point, Polygon, PolygonRing, Pt, Rgb, TextItem,
    TextRenderingMode, WindingOrder, XObjectTransform,
};
use qrcode::EcLevel;

use super::font::{self, FontMetrics, REPLACEMENT};
use super::qr;
use super::RenderError;

/// Points in a millimetre.
pub const MM: f32 = 72.0 / 25.4;

/// Modules of white around a QR code, as the standard asks.
const QR_QUIET_ZONE: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
    Center,
}

/// How text looks: size in points, bold or not, grey level (0 black).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub size: f32,
    pub bold: bool,
    pub grey: f32,
}

impl Style {
    pub const fn regular(size: f32) -> Style {
        Style {
            size,
            bold: false,
            grey: 0.0,
        }
    }
    pub const fn bold(size: f32) -> Style {
        Style {
            size,
            bold: true,
            grey: 0.0,
        }
    }
    pub const fn grey(size: f32) -> Style {
        Style {
            size,
            bold: false,
            grey: 0.35,
        }
    }
}

enum Item {
    Text {
        x: f32,
        baseline: f32,
        style: Style,
        text: String,
    },
    Rule {
        x1: f32,
        x2: f32,
        y: f32,
        width: f32,
    },
    Shade {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        grey: f32,
    },
    /// A QR code: its top-left corner, its side in points and in modules
    /// (quiet zone included), and its dark rectangles in modules (column,
    /// row from the top, width, height).
    Qr {
        x: f32,
        y: f32,
        size: f32,
        side: u32,
        rects: Vec<[u32; 4]>,
    },
}

/// One page being laid out.
#[derive(Default)]
pub struct Page {
    items: Vec<Item>,
}

/// Pages sharing a font; [`Canvas::finish`] makes the PDF.
pub struct Canvas {
    pub metrics: &'static FontMetrics,
    chars: BTreeSet<char>,
    pub width: f32,
    pages: Vec<Page>,
    /// The page being drawn on.
    at: usize,
}

impl Canvas {
    /// A document of pages `width` points wide.
    pub fn new(width: f32) -> Result<Canvas, RenderError> {
        Ok(Canvas {
            metrics: font::metrics()?,
            chars: BTreeSet::new(),
            width,
            pages: vec![Page::default()],
            at: 0,
        })
    }

    pub fn new_page(&mut self) {
        self.pages.push(Page::default());
        self.at = self.pages.len() - 1;
    }

    /// Draws with `f` on every page in turn (page numbers), then goes back
    /// to the last one.
    pub fn on_each_page(&mut self, mut f: impl FnMut(&mut Canvas, usize)) {
        for i in 0..self.pages.len() {
            self.at = i;
            f(self, i);
        }
        self.at = self.pages.len().saturating_sub(1);
    }

    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    fn current(&mut self) -> &mut Page {
        if self.at >= self.pages.len() {
            self.pages.push(Page::default());
            self.at = self.pages.len() - 1;
        }
        // `at` was just brought within `pages`.
        #[allow(clippy::indexing_slicing)]
        &mut self.pages[self.at]
    }

    /// `text` as the font can draw it: controls become spaces, characters
    /// the font lacks become [`REPLACEMENT`].
    fn printable(&self, text: &str) -> String {
        text.chars()
            .map(|c| {
                if c.is_control() {
                    ' '
                } else if self.metrics.has(c) {
                    c
                } else {
                    REPLACEMENT
                }
            })
            .collect()
    }

    pub fn width_of(&self, text: &str, style: Style) -> f32 {
        self.metrics.width(text, style.size)
    }

    /// Text with its baseline at `baseline` (from the top), `x` being its
    /// left edge, right edge or centre.
    pub fn text(&mut self, x: f32, baseline: f32, style: Style, align: Align, text: &str) {
        let text = self.printable(text);
        if text.trim().is_empty() {
            return;
        }
        let w = self.metrics.width(&text, style.size);
        let x = match align {
            Align::Left => x,
            Align::Right => x - w,
            Align::Center => x - w / 2.0,
        };
        self.chars.extend(text.chars());
        self.current().items.push(Item::Text {
            x,
            baseline,
            style,
            text,
        });
    }

    /// `text` cut into lines no wider than `width` (at spaces, or inside a
    /// word longer than a line). One pass: every character is measured
    /// once, and each line's width is kept running (a width is the sum of
    /// its characters'), so a long unbroken word costs its length, not its
    /// length times its lines.
    pub fn wrap(&self, text: &str, style: Style, width: f32) -> Vec<String> {
        let m = self.metrics;
        let fits = |units: u64| m.points(units, style.size) <= width;
        let space = m.advance(' ');
        let mut lines = Vec::new();
        for paragraph in text.split('\n') {
            let mut line = String::new();
            let mut line_units = 0u64;
            for word in paragraph.split_whitespace() {
                let word_units: u64 = word.chars().map(|c| m.advance(c)).sum();
                let joined = if line.is_empty() {
                    word_units
                } else {
                    line_units + space + word_units
                };
                if fits(joined) {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(word);
                    line_units = joined;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                // A word wider than the line is cut where it must be; what
                // is left of it starts the next line.
                line_units = 0;
                for c in word.chars() {
                    let u = m.advance(c);
                    if !line.is_empty() && !fits(line_units + u) {
                        lines.push(std::mem::take(&mut line));
                        line_units = 0;
                    }
                    line.push(c);
                    line_units += u;
                }
            }
            if !line.is_empty() || lines.is_empty() {
                lines.push(line);
            }
        }
        lines
    }

    /// Byte length of the longest prefix of `s` that fits `width` (at least
    /// one character), its width kept running.
    fn fitting_prefix(&self, s: &str, style: Style, width: f32) -> usize {
        let mut end = 0;
        let mut units = 0u64;
        for (i, c) in s.char_indices() {
            units += self.metrics.advance(c);
            if end > 0 && self.metrics.points(units, style.size) > width {
                break;
            }
            end = i + c.len_utf8();
        }
        end.max(s.chars().next().map_or(0, char::len_utf8))
    }

    /// `text` cut into pieces of at most `width` each, without looking for
    /// spaces (a document code).
    pub fn chop(&self, text: &str, style: Style, width: f32) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let cut = self.fitting_prefix(rest, style, width);
            out.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        out
    }

    /// A horizontal rule.
    pub fn rule(&mut self, x1: f32, x2: f32, y: f32, width: f32) {
        self.current().items.push(Item::Rule { x1, x2, y, width });
    }

    /// A grey box with its top-left corner at (`x`, `y`).
    pub fn shade(&mut self, x: f32, y: f32, w: f32, h: f32, grey: f32) {
        self.current().items.push(Item::Shade { x, y, w, h, grey });
    }

    /// The QR code of `data`, `size` points wide quiet zone included, its
    /// top-left corner at (`x`, `y`). Error correction M: a smudged print
    /// still scans, and the modules stay large enough for a phone.
    pub fn qr(&mut self, x: f32, y: f32, size: f32, data: &str) -> Result<(), RenderError> {
        let code = qr::encode(data.as_bytes(), EcLevel::M)?;
        let n = code.width;
        let quiet = QR_QUIET_ZONE as u32;
        // Runs of dark modules per row, a run continuing the same run of
        // the row above growing that rectangle: fewer, taller rectangles.
        let mut rects: Vec<[u32; 4]> = Vec::new();
        // (start, end) column span → index in `rects` of its open rectangle.
        let mut open: Vec<((usize, usize), usize)> = Vec::new();
        for row in 0..n {
            let mut next_open = Vec::new();
            let mut col = 0;
            while col < n {
                if !code.is_dark(row, col) {
                    col += 1;
                    continue;
                }
                let start = col;
                while col < n && code.is_dark(row, col) {
                    col += 1;
                }
                let span = (start, col);
                match open.iter().find(|(s, _)| *s == span) {
                    Some(&(_, i)) => {
                        if let Some(rect) = rects.get_mut(i) {
                            rect[3] += 1;
                        }
                        next_open.push((span, i));
                    }
                    None => {
                        rects.push([
                            quiet + start as u32,
                            quiet + row as u32,
                            (col - start) as u32,
                            1,
                        ]);
                        next_open.push((span, rects.len() - 1));
                    }
                }
            }
            open = next_open;
        }
        self.current().items.push(Item::Qr {
            x,
            y,
            size,
            side: n as u32 + 2 * quiet,
            rects,
        });
        Ok(())
    }

    /// The PDF: every page `height` points tall (the last one
    /// `last_height`, for a strip whose length follows its content).
    pub fn finish(
        self,
        title: &str,
        height: f32,
        last_height: Option<f32>,
    ) -> Result<Vec<u8>, RenderError> {
        let parsed = self.metrics.subset_font(&self.chars)?;
        let mut doc = PdfDocument::new(title);
        let font = PdfFontHandle::External(doc.add_font(&parsed));
        let count = self.pages.len();
        let mut pages = Vec::with_capacity(count);
        for (i, page) in self.pages.into_iter().enumerate() {
            let h = match last_height {
                Some(last) if i + 1 == count => last,
                _ => height,
            };
            let ops = page_ops(page, h, &font, &mut doc);
            pages.push(PdfPage::new(Mm(self.width / MM), Mm(h / MM), ops));
        }
        doc.with_pages(pages);
        let opts = PdfSaveOptions {
            // Streams are compressed below, faster than printpdf would.
            optimize: false,
            // The font is subset already; printpdf would embed the whole file.
            subset_fonts: false,
            image_optimization: None,
            ..PdfSaveOptions::default()
        };
        let mut warnings = Vec::new();
        let mut pdf = doc.to_lopdf_document(&opts, &mut warnings);
        compress_streams(&mut pdf);
        let mut out = Vec::with_capacity(32 * 1024);
        pdf.save_to(&mut out)
            .map_err(|e| RenderError::Font(format!("writing the PDF: {e}")))?;
        Ok(out)
    }
}

/// Deflates every stream that may be (the font program, the pages'
/// content, the QR code, the character map). printpdf's own pass uses
/// level 9, a large share of a render; level 2 takes a fraction of its time
/// for a slightly larger file, and level 1 (static Huffman codes only) a
/// much larger one (figures in docs/performance.md).
fn compress_streams(pdf: &mut lopdf::Document) {
    use std::io::Write;
    for object in pdf.objects.values_mut() {
        let lopdf::Object::Stream(stream) = object else {
            continue;
        };
        if !stream.allows_compression || stream.dict.get(b"Filter").is_ok() {
            continue;
        }
        let mut encoder = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(stream.content.len() / 2),
            flate2::Compression::new(STREAM_LEVEL),
        );
        let Ok(compressed) = encoder
            .write_all(&stream.content)
            .and_then(|()| encoder.finish())
        else {
            continue;
        };
        if compressed.len() < stream.content.len() {
            stream.dict.set("Filter", "FlateDecode");
            stream.set_content(compressed);
        }
    }
}

/// DEFLATE level of the PDF's streams (see [`compress_streams`]).
const STREAM_LEVEL: u32 = 2;

/// A QR code as a form XObject in module units, one module a unit, its
/// origin at the bottom-left of the quiet zone: a path of integer
/// rectangles written here, filled black once. As drawing operations it
/// would be two thirds of an invoice's page content, every coordinate a
/// float formatted on the way out; here it is a few kilobytes of small
/// integers.
fn qr_form(side: u32, rects: &[[u32; 4]]) -> ExternalXObject {
    let mut content = Vec::with_capacity(rects.len() * 14 + 8);
    content.extend_from_slice(b"0 g\n");
    for &[col, row, w, h] in rects {
        // Rows count from the top; the form's y from the bottom.
        for v in [col, side - row - h, w, h] {
            push_number(&mut content, v);
            content.push(b' ');
        }
        content.extend_from_slice(b"re\n");
    }
    content.extend_from_slice(b"f\n");
    let side = DictItem::Int(i64::from(side));
    let dict = BTreeMap::from([
        ("Type".to_string(), DictItem::Name(b"XObject".to_vec())),
        ("Subtype".to_string(), DictItem::Name(b"Form".to_vec())),
        (
            "BBox".to_string(),
            DictItem::Array(vec![DictItem::Int(0), DictItem::Int(0), side.clone(), side]),
        ),
    ]);
    ExternalXObject {
        stream: ExternalStream {
            dict,
            content,
            compress: true,
        },
        width: None,
        height: None,
        dpi: None,
    }
}

/// `v` in decimal (a QR code's side is at most a few hundred modules).
fn push_number(out: &mut Vec<u8>, v: u32) {
    use std::io::Write;
    // Writing to a vector cannot fail.
    let _ = write!(out, "{v}");
}

fn grey(level: f32) -> Color {
    let v = 1.0 - level;
    Color::Rgb(Rgb {
        r: v,
        g: v,
        b: v,
        icc_profile: None,
    })
}

/// To a hundredth of a point: shorter numbers in the content stream,
/// nothing a printer or a reader could tell apart.
fn round(v: f32) -> f32 {
    (v * 100.0).round() / 100.0
}

fn point(x: f32, y: f32) -> LinePoint {
    LinePoint {
        p: Point {
            x: Pt(round(x)),
            y: Pt(round(y)),
        },
        bezier: false,
    }
}

fn rect_ring(x: f32, y: f32, w: f32, h: f32) -> PolygonRing {
    PolygonRing {
        points: vec![
            point(x, y),
            point(x + w, y),
            point(x + w, y + h),
            point(x, y + h),
        ],
    }
}

/// The graphics state already set in a page's content stream: an operator
/// is written only when it changes what is set (they persist across text
/// objects), which keeps the stream, and its compression, short.
#[derive(Default)]
struct GraphicsState {
    /// Darkness of the fill and stroke colours.
    fill: Option<f32>,
    stroke: Option<f32>,
    line_width: Option<f32>,
    font_size: Option<f32>,
    stroked_text: bool,
}

impl GraphicsState {
    fn fill(&mut self, ops: &mut Vec<Op>, level: f32) {
        if self.fill != Some(level) {
            self.fill = Some(level);
            ops.push(Op::SetFillColor { col: grey(level) });
        }
    }

    fn stroke(&mut self, ops: &mut Vec<Op>, level: f32, width: f32) {
        if self.stroke != Some(level) {
            self.stroke = Some(level);
            ops.push(Op::SetOutlineColor { col: grey(level) });
        }
        let width = round(width);
        if self.line_width != Some(width) {
            self.line_width = Some(width);
            ops.push(Op::SetOutlineThickness { pt: Pt(width) });
        }
    }
}

/// The page's items as PDF operations, `y` turned bottom-up.
fn page_ops(page: Page, height: f32, font: &PdfFontHandle, doc: &mut PdfDocument) -> Vec<Op> {
    let mut ops = Vec::with_capacity(page.items.len() * 4);
    let mut gs = GraphicsState::default();
    for item in page.items {
        match item {
            Item::Text {
                x,
                baseline,
                style,
                text,
            } => {
                let level = 1.0 - style.grey;
                ops.push(Op::StartTextSection);
                gs.fill(&mut ops, level);
                // Bold is the regular face filled and stroked: one font
                // to subset and embed.
                if style.bold {
                    gs.stroke(&mut ops, level, style.size * 0.04);
                }
                if style.bold != gs.stroked_text {
                    gs.stroked_text = style.bold;
                    ops.push(Op::SetTextRenderingMode {
                        mode: if style.bold {
                            TextRenderingMode::FillStroke
                        } else {
                            TextRenderingMode::Fill
                        },
                    });
                }
                if gs.font_size != Some(style.size) {
                    gs.font_size = Some(style.size);
                    ops.push(Op::SetFont {
                        font: font.clone(),
                        size: Pt(style.size),
                    });
                }
                ops.push(Op::SetTextCursor {
                    pos: Point {
                        x: Pt(round(x)),
                        y: Pt(round(height - baseline)),
                    },
                });
                ops.push(Op::ShowText {
                    items: vec![TextItem::Text(text)],
                });
                ops.push(Op::EndTextSection);
            }
            Item::Rule { x1, x2, y, width } => {
                gs.stroke(&mut ops, 0.6, width);
                ops.push(Op::DrawLine {
                    line: printpdf::Line {
                        points: vec![point(x1, height - y), point(x2, height - y)],
                        is_closed: false,
                    },
                });
            }
            Item::Shade {
                x,
                y,
                w,
                h,
                grey: g,
            } => {
                gs.fill(&mut ops, g);
                ops.push(Op::DrawPolygon {
                    polygon: Polygon {
                        rings: vec![rect_ring(x, height - y - h, w, h)],
                        mode: PaintMode::Fill,
                        winding_order: WindingOrder::NonZero,
                    },
                });
            }
            Item::Qr {
                x,
                y,
                size,
                side,
                rects,
            } => {
                let id = doc.add_xobject(&qr_form(side, &rects));
                let module = size / side as f32;
                ops.push(Op::UseXobject {
                    id,
                    transform: XObjectTransform {
                        translate_x: Some(Pt(x)),
                        translate_y: Some(Pt(height - y - size)),
                        scale_x: Some(module),
                        scale_y: Some(module),
                        ..XObjectTransform::default()
                    },
                });
            }
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qr_form_is_integer_rectangles_from_the_bottom() {
        let form = qr_form(29, &[[4, 4, 7, 1], [4, 5, 1, 5], [12, 0, 10, 3]]);
        assert_eq!(
            String::from_utf8(form.stream.content).unwrap(),
            "0 g\n4 24 7 1 re\n4 19 1 5 re\n12 26 10 3 re\nf\n"
        );
        assert_eq!(
            form.stream.dict.get("BBox"),
            Some(&DictItem::Array(vec![
                DictItem::Int(0),
                DictItem::Int(0),
                DictItem::Int(29),
                DictItem::Int(29)
            ]))
        );
        let mut out = Vec::new();
        for v in [0, 7, 10, 4_294_967_295] {
            push_number(&mut out, v);
            out.push(b' ');
        }
        assert_eq!(out, b"0 7 10 4294967295 ");
    }

    /// The wrapping as it was first written: a candidate line measured
    /// whole for each word, an over-long word cut by measuring its rest again
    /// for every line. Right, but quadratic in a long word; the reference
    /// the one-pass wrap must agree with.
    fn reference_wrap(c: &Canvas, text: &str, style: Style, width: f32) -> Vec<String> {
        let w = |s: &str| c.metrics.width(s, style.size);
        let prefix = |s: &str| {
            let mut end = 0;
            for (i, ch) in s.char_indices() {
                let next = i + ch.len_utf8();
                if end > 0 && w(&s[..next]) > width {
                    break;
                }
                end = next;
            }
            end.max(s.chars().next().map_or(0, char::len_utf8))
        };
        let mut lines = Vec::new();
        for paragraph in text.split('\n') {
            let mut line = String::new();
            for word in paragraph.split_whitespace() {
                let candidate = if line.is_empty() {
                    word.to_string()
                } else {
                    format!("{line} {word}")
                };
                if w(&candidate) <= width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                let mut rest = word.to_string();
                while w(&rest) > width {
                    let tail = rest.split_off(prefix(&rest));
                    lines.push(std::mem::replace(&mut rest, tail));
                }
                line = rest;
            }
            if !line.is_empty() || lines.is_empty() {
                lines.push(line);
            }
        }
        lines
    }

    #[test]
    fn one_pass_wrap_agrees_with_the_reference() {
        let c = Canvas::new(200.0).unwrap();
        let long = "W".repeat(700);
        let mixed = format!(
            "Servicio {long} de consultoría\n\nñandú {} fin",
            "ab".repeat(90)
        );
        let texts = [
            "",
            " ",
            "una línea corta",
            "Descripción del producto con varias palabras que no caben en una sola línea del documento",
            long.as_str(),
            mixed.as_str(),
            "a\nb\n\nc",
            "日本語テキスト 🙂 ∑ sin glifo",
        ];
        for style in [Style::regular(7.5), Style::bold(9.0)] {
            for width in [1.0, 40.0, 120.5, 400.0] {
                for text in texts {
                    assert_eq!(
                        c.wrap(text, style, width),
                        reference_wrap(&c, text, style, width),
                        "{text:?} at {width}"
                    );
                }
            }
        }
        // `chop` (codes) cuts where the reference's prefix does.
        let code = "0123456789abcdef".repeat(6);
        let chopped = c.chop(&code, Style::regular(7.0), 60.0);
        assert_eq!(chopped.concat(), code);
        assert!(chopped
            .iter()
            .all(|piece| piece.chars().count() == 1
                || c.width_of(piece, Style::regular(7.0)) <= 60.0));
    }
}
