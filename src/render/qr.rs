//! The QR symbol of a document's verification URL: `qrcode` encodes the
//! data, places the codewords and draws the function patterns; the mask is
//! chosen here. `qrcode` chooses it by copying the symbol for each of the
//! eight masks and scoring every copy module by module through closures
//! and boxed iterators: about a millisecond for a 49-module code, most of
//! a PDF's time. Here the rows and columns are bit sets (symbols up to 128
//! modules, version 27, far more than a URL needs) and the same penalty
//! rules are counted with shifts and population counts, which picks the
//! same mask, hence the same symbol module for module (tested against
//! `qrcode`), in a few microseconds. Larger symbols take `qrcode`'s way.

use qrcode::bits::encode_auto;
use qrcode::canvas::{Canvas, Module};
use qrcode::ec::construct_codewords;
use qrcode::types::{Color, EcLevel, Version};
use qrcode::QrCode;

use super::RenderError;

/// One row or column of a symbol, bit `i` the module `i` (set: dark).
type Bits = u128;

/// The widest symbol the bit sets hold.
const MAX_WIDTH: usize = Bits::BITS as usize;

/// A QR symbol: `width` modules a side, row by row, `true` dark.
pub struct Symbol {
    pub width: usize,
    pub dark: Vec<bool>,
}

impl Symbol {
    pub fn is_dark(&self, row: usize, col: usize) -> bool {
        self.dark
            .get(row * self.width + col)
            .copied()
            .unwrap_or(false)
    }
}

/// The QR symbol of `data` at error correction `ec`, the smallest version
/// that holds it.
pub fn encode(data: &[u8], ec: EcLevel) -> Result<Symbol, RenderError> {
    let err = |e: qrcode::types::QrError| RenderError::Qr(e.to_string());
    let bits = encode_auto(data, ec).map_err(err)?;
    let version = bits.version();
    let width = usize::try_from(version.width()).map_err(|e| RenderError::Qr(e.to_string()))?;
    if !matches!(version, Version::Normal(_)) || width > MAX_WIDTH {
        let code = QrCode::with_error_correction_level(data, ec).map_err(err)?;
        return Ok(Symbol {
            width: code.width(),
            dark: code
                .to_colors()
                .into_iter()
                .map(|c| c == Color::Dark)
                .collect(),
        });
    }
    let (data_codewords, ec_codewords) =
        construct_codewords(&bits.into_bytes(), version, ec).map_err(err)?;
    let mut canvas = Canvas::new(version, ec);
    canvas.draw_all_functional_patterns();
    canvas.draw_data(&data_codewords, &ec_codewords);
    let unmasked = Unmasked::read(&canvas, width);

    let mut best: Option<(u32, Vec<Bits>)> = None;
    for mask in 0..8 {
        let rows = unmasked.masked(mask, ec);
        let score = penalty(&rows, &columns(&rows, width), width);
        // On equal penalties the first mask wins, as in `qrcode`.
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, rows));
        }
    }
    let (_, rows) = best.ok_or_else(|| RenderError::Qr("no mask".into()))?;
    let dark = rows
        .iter()
        .flat_map(|r| (0..width).map(move |x| r >> x & 1 == 1))
        .collect();
    Ok(Symbol { width, dark })
}

/// A symbol before masking, as bit rows.
struct Unmasked {
    width: usize,
    /// Dark modules.
    dark: Vec<Bits>,
    /// Modules the mask applies to: data and error correction, and the
    /// remainder bits left empty.
    maskable: Vec<Bits>,
}

impl Unmasked {
    fn read(canvas: &Canvas, width: usize) -> Unmasked {
        let mut dark = vec![0; width];
        let mut maskable = vec![0; width];
        for (y, (d, m)) in dark.iter_mut().zip(&mut maskable).enumerate() {
            for x in 0..width {
                // Coordinates below `width` ≤ 128 fit an i16.
                let module = canvas.get(x as i16, y as i16);
                if Color::from(module) == Color::Dark {
                    *d |= 1 << x;
                }
                if matches!(module, Module::Empty | Module::Unmasked(_)) {
                    *m |= 1 << x;
                }
            }
        }
        Unmasked {
            width,
            dark,
            maskable,
        }
    }

    /// The rows with mask `mask` (0 to 7, ISO/IEC 18004 numbering) applied
    /// and the format information that names it drawn.
    fn masked(&self, mask: u8, ec: EcLevel) -> Vec<Bits> {
        let n = self.width;
        let pattern = MASK_ROWS
            .get(usize::from(mask & 7))
            .unwrap_or(&MASK_ROWS[0]);
        let mut rows: Vec<Bits> = self
            .dark
            .iter()
            .zip(&self.maskable)
            .zip(pattern.iter().cycle())
            .take(n)
            .map(|((dark, maskable), inverts)| dark ^ (inverts & maskable))
            .collect();
        let info = format_info(ec, mask);
        let mut put = |x: usize, y: usize, dark: bool| {
            if let Some(row) = rows.get_mut(y) {
                if dark {
                    *row |= 1 << x;
                } else {
                    *row &= !(1 << x);
                }
            }
        };
        // Bit 14 first, along each copy (as `qrcode` places them).
        for (i, &(x, y)) in FORMAT_MAIN.iter().enumerate() {
            put(x, y, info >> (14 - i) & 1 == 1);
        }
        for (i, &(x, y)) in FORMAT_SIDE.iter().enumerate() {
            let at = |v: i16| {
                if v < 0 {
                    n - v.unsigned_abs() as usize
                } else {
                    v as usize
                }
            };
            put(at(x), at(y), info >> (14 - i) & 1 == 1);
        }
        // The dark module beside the bottom-left finder.
        put(8, n - 8, true);
        rows
    }
}

/// Every mask repeats every 12 rows (and columns): the rows of one period.
const MASK_PERIOD: usize = 12;

/// Row `y % 12` of mask `m`, bit `x` set where the mask inverts.
const MASK_ROWS: [[Bits; MASK_PERIOD]; 8] = mask_rows();

// Evaluated at compile time: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn mask_rows() -> [[Bits; MASK_PERIOD]; 8] {
    let mut rows = [[0; MASK_PERIOD]; 8];
    let mut m = 0;
    while m < 8 {
        let mut y = 0;
        while y < MASK_PERIOD {
            let mut x = 0;
            while x < MAX_WIDTH {
                if mask_bit(m as u8, x, y) {
                    rows[m][y] |= 1 << x;
                }
                x += 1;
            }
            y += 1;
        }
        m += 1;
    }
    rows
}

/// Whether mask `mask` inverts the module at column `x`, row `y`.
const fn mask_bit(mask: u8, x: usize, y: usize) -> bool {
    match mask {
        0 => (x + y).is_multiple_of(2),
        1 => y.is_multiple_of(2),
        2 => x.is_multiple_of(3),
        3 => (x + y).is_multiple_of(3),
        4 => (y / 2 + x / 3).is_multiple_of(2),
        5 => (x * y) % 2 + (x * y) % 3 == 0,
        6 => ((x * y) % 2 + (x * y) % 3).is_multiple_of(2),
        _ => ((x + y) % 2 + (x * y) % 3).is_multiple_of(2),
    }
}

/// The 15 format bits: error correction level and mask, BCH(15,5) coded
/// and XORed with 101010000010010.
fn format_info(ec: EcLevel, mask: u8) -> u16 {
    let level: u16 = match ec {
        EcLevel::L => 0b01,
        EcLevel::M => 0b00,
        EcLevel::Q => 0b11,
        EcLevel::H => 0b10,
    };
    let data = level << 3 | u16::from(mask);
    let mut rem = data << 10;
    for bit in (10..15).rev() {
        if rem >> bit & 1 == 1 {
            rem ^= 0b101_0011_0111 << (bit - 10);
        }
    }
    (data << 10 | rem) ^ 0b101_0100_0001_0010
}

/// Where the format bits go (column, row), from bit 14 down: around the
/// top-left finder, and split between the other two (negative: from the
/// far edge).
const FORMAT_MAIN: [(usize, usize); 15] = [
    (0, 8),
    (1, 8),
    (2, 8),
    (3, 8),
    (4, 8),
    (5, 8),
    (7, 8),
    (8, 8),
    (8, 7),
    (8, 5),
    (8, 4),
    (8, 3),
    (8, 2),
    (8, 1),
    (8, 0),
];
const FORMAT_SIDE: [(i16, i16); 15] = [
    (8, -1),
    (8, -2),
    (8, -3),
    (8, -4),
    (8, -5),
    (8, -6),
    (8, -7),
    (-8, 8),
    (-7, 8),
    (-6, 8),
    (-5, 8),
    (-4, 8),
    (-3, 8),
    (-2, 8),
    (-1, 8),
];

/// The columns of `rows`, bit `i` of column `x` the module of row `i`.
fn columns(rows: &[Bits], n: usize) -> Vec<Bits> {
    let mut cols = vec![0; n];
    for (y, row) in rows.iter().enumerate() {
        let mut r = *row;
        while r != 0 {
            let x = r.trailing_zeros() as usize;
            r &= r - 1;
            if let Some(col) = cols.get_mut(x) {
                *col |= 1 << y;
            }
        }
    }
    cols
}

/// Bits `0..k`.
fn low(k: usize) -> Bits {
    if k >= MAX_WIDTH {
        !0
    } else {
        (1 << k) - 1
    }
}

/// The penalty `qrcode` gives a masked symbol (rules N1 to N4 as it reads
/// them): runs of five or more, 2×2 blocks, finder-like patterns without
/// four light modules on a side, and the imbalance of dark and light.
fn penalty(rows: &[Bits], cols: &[Bits], n: usize) -> u32 {
    let mut total = 0;
    let (mut across, mut down) = (0, 0);
    for (r, c) in rows.iter().zip(cols) {
        total += runs(*r, n) + runs(*c, n);
        across += finders(*r, n);
        down += finders(*c, n);
    }
    // Each finder pattern's three middle rows (and columns) match, with the
    // edge of the symbol on one side: 9 × 40 per direction, which `qrcode`
    // takes away.
    total += across.saturating_sub(360) + down.saturating_sub(360);
    for (&a, &b) in rows.iter().zip(rows.iter().skip(1)) {
        let same = !(a ^ a >> 1) & !(b ^ b >> 1) & !(a ^ b) & low(n - 1);
        total += 3 * same.count_ones();
    }
    let dark: u32 = rows.iter().map(|r| r.count_ones()).sum();
    let ratio = dark as usize * 200 / (n * n);
    total + ratio.abs_diff(100) as u32
}

/// Rule N1 on one line of `n` modules: each run of five or more equal
/// modules costs its length less two, counted as its windows of five
/// (`len - 4`) plus two for its first one.
fn runs(line: Bits, n: usize) -> u32 {
    // Bit j: modules j and j + 1 alike.
    let alike = !(line ^ line >> 1) & low(n.saturating_sub(1));
    let five = alike & alike >> 1 & alike >> 2 & alike >> 3;
    let first = five & !(five << 1);
    five.count_ones() + 2 * first.count_ones()
}

/// Rule N3 on one line of `n` modules: 40 for each dark-light-dark×3-
/// light-dark without a dark module in the four before it or without one
/// in the four after it.
fn finders(line: Bits, n: usize) -> u32 {
    if n < 7 {
        return 0;
    }
    let light = !line;
    let mut found =
        line & light >> 1 & line >> 2 & line >> 3 & line >> 4 & light >> 5 & line >> 6 & low(n - 6);
    let mut total = 0;
    while found != 0 {
        let j = found.trailing_zeros() as usize;
        found &= found - 1;
        let k = j.min(4);
        let before = line >> (j - k) & low(k) != 0;
        let after = line.checked_shr((j + 7) as u32).unwrap_or(0) & 0xF != 0;
        if !before || !after {
            total += 40;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use qrcode::canvas::MaskPattern;

    use super::*;

    fn inputs() -> Vec<String> {
        let mut inputs: Vec<String> = vec![
            "a".into(),
            "0123456789".into(),
            "HELLO WORLD".into(),
            "Nómina electrónica — Bogotá".into(),
        ];
        for len in [40, 96, 120, 200, 400] {
            let code: String = (0..len)
                .map(|i| char::from(b"0123456789abcdef"[(i * 7 + len) % 16]))
                .collect();
            inputs.push(format!(
                "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey={code}"
            ));
        }
        inputs
    }

    fn to_bools(code: &QrCode) -> Vec<bool> {
        code.to_colors()
            .into_iter()
            .map(|c| c == Color::Dark)
            .collect()
    }

    /// Module for module what `qrcode` itself makes, for URLs of the
    /// lengths documents carry and a few odd inputs, at every level.
    #[test]
    fn the_same_symbol_as_qrcode_chooses() {
        for data in inputs() {
            for ec in [EcLevel::L, EcLevel::M, EcLevel::Q, EcLevel::H] {
                let ours = encode(data.as_bytes(), ec).unwrap();
                let theirs = QrCode::with_error_correction_level(data.as_bytes(), ec).unwrap();
                assert_eq!(ours.width, theirs.width(), "{data}");
                assert!(ours.dark == to_bools(&theirs), "{data} at {ec:?}");
            }
        }
        // Wider than the bit sets: `qrcode`'s own way, the same symbol.
        let long = "x".repeat(2000);
        let ours = encode(long.as_bytes(), EcLevel::L).unwrap();
        assert!(ours.width > MAX_WIDTH);
        let theirs = QrCode::with_error_correction_level(long.as_bytes(), EcLevel::L).unwrap();
        assert!(ours.dark == to_bools(&theirs));
    }

    /// Every mask, not only the chosen one, masks as `qrcode` does,
    /// format information included.
    #[test]
    fn each_mask_is_qrcodes() {
        let patterns = [
            MaskPattern::Checkerboard,
            MaskPattern::HorizontalLines,
            MaskPattern::VerticalLines,
            MaskPattern::DiagonalLines,
            MaskPattern::LargeCheckerboard,
            MaskPattern::Fields,
            MaskPattern::Diamonds,
            MaskPattern::Meadow,
        ];
        for data in inputs() {
            for ec in [EcLevel::L, EcLevel::M, EcLevel::Q, EcLevel::H] {
                let bits = encode_auto(data.as_bytes(), ec).unwrap();
                let version = bits.version();
                let n = version.width() as usize;
                let (d, e) = construct_codewords(&bits.into_bytes(), version, ec).unwrap();
                let mut canvas = Canvas::new(version, ec);
                canvas.draw_all_functional_patterns();
                canvas.draw_data(&d, &e);
                let unmasked = Unmasked::read(&canvas, n);
                for (mask, pattern) in patterns.into_iter().enumerate() {
                    let mut theirs = canvas.clone();
                    theirs.apply_mask(pattern);
                    let expected: Vec<bool> = theirs
                        .into_colors()
                        .into_iter()
                        .map(|c| c == Color::Dark)
                        .collect();
                    let rows = unmasked.masked(mask as u8, ec);
                    let ours: Vec<bool> = rows
                        .iter()
                        .flat_map(|r| (0..n).map(move |x| r >> x & 1 == 1))
                        .collect();
                    assert!(ours == expected, "{data} {ec:?} mask {mask}");
                }
            }
        }
    }

    /// The table of mask rows is each mask's rule on every module of the
    /// largest symbol it serves.
    #[test]
    fn masks_repeat_every_twelve_rows() {
        for mask in 0..8u8 {
            for y in 0..MAX_WIDTH {
                for x in 0..MAX_WIDTH {
                    let bit = MASK_ROWS[usize::from(mask)][y % MASK_PERIOD] >> x & 1 == 1;
                    assert_eq!(bit, mask_bit(mask, x, y), "mask {mask} at {x},{y}");
                }
            }
        }
    }

    fn line(s: &str) -> (Bits, usize) {
        let bits = s
            .chars()
            .enumerate()
            .filter(|(_, c)| *c == '#')
            .fold(0, |acc, (i, _)| acc | 1 << i);
        (bits, s.len())
    }

    #[test]
    fn runs_and_finders_score_as_the_rules_say() {
        let runs_of = |s: &str| {
            let (b, n) = line(s);
            runs(b, n)
        };
        let finders_of = |s: &str| {
            let (b, n) = line(s);
            finders(b, n)
        };
        assert_eq!(runs_of("#####.....##"), 3 + 3);
        assert_eq!(runs_of("#######"), 5);
        assert_eq!(runs_of("####.####"), 0);
        assert_eq!(runs_of("..........#"), 8);
        // At the edge: nothing before it, so it counts.
        assert_eq!(finders_of("#.###.#....."), 40);
        // Dark on both sides within four: it does not.
        assert_eq!(finders_of("#...#.###.#...#"), 0);
        // Light for four after it: it does.
        assert_eq!(finders_of("#...#.###.#....#"), 40);
    }
}
