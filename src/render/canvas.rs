//! Drawing primitives over printpdf: text measured with the font's own
//! widths, rules, shaded boxes and QR codes, placed from the top-left of a
//! page (layouts think top-down; PDF counts from the bottom, and a thermal
//! strip only knows its height once everything is placed). The pages
//! become one PDF with a single font subset of the characters they use.

use std::collections::BTreeSet;

use printpdf::{
    Color, LinePoint, Mm, Op, PaintMode, ParsedFont, PdfDocument, PdfFontHandle, PdfPage,
    PdfSaveOptions, Point, Polygon, PolygonRing, Pt, Rgb, TextItem, TextRenderingMode,
    WindingOrder,
};
use qrcode::{Color as QrColor, EcLevel, QrCode};

use super::font::{self, FontMetrics, REPLACEMENT};
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
    /// Dark rectangles, all filled as one path.
    Modules(Vec<[f32; 4]>),
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
    /// word longer than a line).
    pub fn wrap(&self, text: &str, style: Style, width: f32) -> Vec<String> {
        let mut lines = Vec::new();
        for paragraph in text.split('\n') {
            let mut line = String::new();
            for word in paragraph.split_whitespace() {
                let candidate = if line.is_empty() {
                    word.to_string()
                } else {
                    format!("{line} {word}")
                };
                if self.metrics.width(&candidate, style.size) <= width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                // A word wider than the line is cut where it must be.
                let mut rest = word.to_string();
                while self.metrics.width(&rest, style.size) > width {
                    let cut = self.fitting_prefix(&rest, style, width);
                    let tail = rest.split_off(cut);
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

    /// Byte length of the longest prefix of `s` that fits `width` (at least
    /// one character).
    fn fitting_prefix(&self, s: &str, style: Style, width: f32) -> usize {
        let mut end = 0;
        for (i, c) in s.char_indices() {
            let next = i + c.len_utf8();
            if end > 0 && self.metrics.width(&s[..next], style.size) > width {
                break;
            }
            end = next;
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
    /// top-left corner at (`x`, `y`). Error correction M: what the printed
    /// documents of the authority use, and it scans from paper.
    pub fn qr(&mut self, x: f32, y: f32, size: f32, data: &str) -> Result<(), RenderError> {
        let code = QrCode::with_error_correction_level(data.as_bytes(), EcLevel::M)
            .map_err(|e| RenderError::Qr(e.to_string()))?;
        let n = code.width();
        let module = size / (n + 2 * QR_QUIET_ZONE) as f32;
        let colors = code.to_colors();
        let mut rects = Vec::new();
        for row in 0..n {
            let mut col = 0;
            while col < n {
                if colors[row * n + col] != QrColor::Dark {
                    col += 1;
                    continue;
                }
                // One rectangle per run of dark modules: fewer path segments.
                let start = col;
                while col < n && colors[row * n + col] == QrColor::Dark {
                    col += 1;
                }
                rects.push([
                    x + (QR_QUIET_ZONE + start) as f32 * module,
                    y + (QR_QUIET_ZONE + row) as f32 * module,
                    (col - start) as f32 * module,
                    module,
                ]);
            }
        }
        self.current().items.push(Item::Modules(rects));
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
        let subset = self.metrics.subset(&self.chars)?;
        let mut warnings = Vec::new();
        let parsed = ParsedFont::from_bytes(&subset, 0, &mut warnings)
            .ok_or_else(|| RenderError::Font("the font subset does not parse".into()))?;
        let mut doc = PdfDocument::new(title);
        let font = PdfFontHandle::External(doc.add_font(&parsed));
        let count = self.pages.len();
        let mut pages = Vec::with_capacity(count);
        for (i, page) in self.pages.into_iter().enumerate() {
            let h = match last_height {
                Some(last) if i + 1 == count => last,
                _ => height,
            };
            let ops = page_ops(page, h, &font);
            pages.push(PdfPage::new(Mm(self.width / MM), Mm(h / MM), ops));
        }
        doc.with_pages(pages);
        let opts = PdfSaveOptions {
            // The font is subset already; printpdf would embed the whole file.
            subset_fonts: false,
            image_optimization: None,
            ..PdfSaveOptions::default()
        };
        let mut warnings = Vec::new();
        Ok(doc.save(&opts, &mut warnings))
    }
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

fn black() -> Color {
    grey(1.0)
}

fn point(x: f32, y: f32) -> LinePoint {
    LinePoint {
        p: Point { x: Pt(x), y: Pt(y) },
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

/// The page's items as PDF operations, `y` turned bottom-up.
fn page_ops(page: Page, height: f32, font: &PdfFontHandle) -> Vec<Op> {
    let mut ops = Vec::with_capacity(page.items.len() * 6);
    for item in page.items {
        match item {
            Item::Text {
                x,
                baseline,
                style,
                text,
            } => {
                // Bold is the regular face filled and stroked: one font
                // to subset and embed.
                let color = if style.grey > 0.0 {
                    grey(1.0 - style.grey)
                } else {
                    black()
                };
                ops.push(Op::StartTextSection);
                ops.push(Op::SetFillColor { col: color.clone() });
                if style.bold {
                    ops.push(Op::SetTextRenderingMode {
                        mode: TextRenderingMode::FillStroke,
                    });
                    ops.push(Op::SetOutlineColor { col: color });
                    ops.push(Op::SetOutlineThickness {
                        pt: Pt(style.size * 0.04),
                    });
                }
                ops.push(Op::SetFont {
                    font: font.clone(),
                    size: Pt(style.size),
                });
                ops.push(Op::SetTextCursor {
                    pos: Point {
                        x: Pt(x),
                        y: Pt(height - baseline),
                    },
                });
                ops.push(Op::ShowText {
                    items: vec![TextItem::Text(text)],
                });
                if style.bold {
                    ops.push(Op::SetTextRenderingMode {
                        mode: TextRenderingMode::Fill,
                    });
                }
                ops.push(Op::EndTextSection);
            }
            Item::Rule { x1, x2, y, width } => {
                ops.push(Op::SetOutlineColor { col: grey(0.6) });
                ops.push(Op::SetOutlineThickness { pt: Pt(width) });
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
                ops.push(Op::SetFillColor { col: grey(g) });
                ops.push(Op::DrawPolygon {
                    polygon: Polygon {
                        rings: vec![rect_ring(x, height - y - h, w, h)],
                        mode: PaintMode::Fill,
                        winding_order: WindingOrder::NonZero,
                    },
                });
            }
            Item::Modules(rects) => {
                ops.push(Op::SetFillColor { col: black() });
                ops.push(Op::DrawPolygon {
                    polygon: Polygon {
                        rings: rects
                            .into_iter()
                            .map(|[x, y, w, h]| rect_ring(x, height - y - h, w, h))
                            .collect(),
                        mode: PaintMode::Fill,
                        winding_order: WindingOrder::NonZero,
                    },
                });
            }
        }
    }
    ops
}
