//! Code lists the mapping checks against: note concepts (spec 2.8),
//! operation types per kind (protocol.md §7.3), tax codes (§7.6), currencies
//! (ISO 4217 numeric), Colombian departments (DIVIPOLA), Incoterms.

use crate::engine::model::DocumentKind;

/// Concept codes and their text (`cac:DiscrepancyResponse`) for a note kind.
pub(super) fn concepts(kind: DocumentKind) -> &'static [(&'static str, &'static str)] {
    match kind {
        DocumentKind::CreditNote | DocumentKind::PosAdjustment => &[
            (
                "1",
                "Devolución parcial de los bienes y/o no aceptación parcial del servicio",
            ),
            ("2", "Anulación de factura electrónica"),
            ("3", "Rebaja o descuento parcial o total"),
            ("4", "Ajuste de precio"),
            ("5", "Otros"),
        ],
        DocumentKind::DebitNote => &[
            ("1", "Intereses"),
            ("2", "Gastos por cobrar"),
            ("3", "Cambio del valor"),
            ("4", "Otros"),
        ],
        DocumentKind::SupportAdjustment => &[
            ("1", "Devolución o anulación"),
            ("2", "Anulación por no cobro"),
            ("3", "Ajuste de precio"),
        ],
        _ => &[],
    }
}

/// Operation types (`id_tipo_operacion`, the spec's codes) a kind accepts.
/// Export invoices ignore the field (always 10 in the XML), and type 2 with
/// `10` is an export. On invoices `11` is the health sector and `12` cargo
/// transport (written as the authority's codes, decisions.md §5); `09` AIU,
/// `10` standard, `13` foreign-exchange, `15`/`16` currency purchase/sale are
/// the authority's own (annex numeral 13.1.5.1, protocol.md §7.3). Notes
/// accept the health sector too. For support documents `11` is the
/// authority's non-resident vendor.
pub(super) fn operation_types(kind: DocumentKind) -> &'static [&'static str] {
    match kind {
        DocumentKind::Invoice | DocumentKind::ContingencyT03 | DocumentKind::ContingencyT04 => {
            &["09", "10", "11", "12", "13", "15", "16"]
        }
        DocumentKind::CreditNote => &["20", "11"],
        DocumentKind::DebitNote => &["30", "11"],
        DocumentKind::PosAdjustment => &["20"],
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => &["10", "11"],
        DocumentKind::Pos => &["10"],
        DocumentKind::ExportInvoice => &[],
    }
}

/// `11` on an invoice or an invoice note is the health sector.
pub(super) fn is_health_operation(kind: DocumentKind, op: &str) -> bool {
    op == "11"
        && matches!(
            kind,
            DocumentKind::Invoice
                | DocumentKind::ContingencyT03
                | DocumentKind::ContingencyT04
                | DocumentKind::CreditNote
                | DocumentKind::DebitNote
        )
}

/// `12` on an invoice is cargo transport.
pub(super) fn is_transport_operation(kind: DocumentKind, op: &str) -> bool {
    op == "12"
        && matches!(
            kind,
            DocumentKind::Invoice | DocumentKind::ContingencyT03 | DocumentKind::ContingencyT04
        )
}

/// `4` → `04`: list codes are two digits.
pub(super) fn two_digits(code: &str) -> String {
    if code.len() == 1 && code.bytes().all(|b| b.is_ascii_digit()) {
        format!("0{code}")
    } else {
        code.to_string()
    }
}

/// Spanish name of a country (ISO 3166-1 alpha-2), for `cac:Country/cbc:Name`
/// of a foreign address; the countries a Colombian exporter meets most.
pub(super) fn country_name(code: &str) -> Option<&'static str> {
    Some(match code {
        "AR" => "Argentina",
        "AU" => "Australia",
        "AW" => "Aruba",
        "BE" => "Bélgica",
        "BO" => "Bolivia",
        "BR" => "Brasil",
        "CA" => "Canadá",
        "CH" => "Suiza",
        "CL" => "Chile",
        "CN" => "China",
        "CO" => "Colombia",
        "CR" => "Costa Rica",
        "CU" => "Cuba",
        "CW" => "Curazao",
        "DE" => "Alemania",
        "DO" => "República Dominicana",
        "EC" => "Ecuador",
        "ES" => "España",
        "FR" => "Francia",
        "GB" => "Reino Unido",
        "GT" => "Guatemala",
        "HN" => "Honduras",
        "IN" => "India",
        "IT" => "Italia",
        "JP" => "Japón",
        "KR" => "Corea del Sur",
        "MX" => "México",
        "NI" => "Nicaragua",
        "NL" => "Países Bajos",
        "PA" => "Panamá",
        "PE" => "Perú",
        "PR" => "Puerto Rico",
        "PT" => "Portugal",
        "PY" => "Paraguay",
        "SV" => "El Salvador",
        "TR" => "Turquía",
        "US" => "Estados Unidos",
        "UY" => "Uruguay",
        "VE" => "Venezuela",
        _ => return None,
    })
}

/// Tax scheme codes of protocol.md §7.6 (withholdings included).
pub(super) const TAX_CODES: &[&str] = &[
    "01", "02", "03", "04", "05", "06", "07", "20", "21", "22", "23", "24", "25", "26", "30", "32",
    "33", "34", "35", "36", "ZZ",
];

pub(super) fn is_withholding(code: &str) -> bool {
    matches!(code, "05" | "06" | "07")
}

/// `1` → `01`: tax codes are two characters.
pub(super) fn normalize_tax_code(code: &str) -> String {
    let c = code.trim();
    if c.len() == 1 && c.bytes().all(|b| b.is_ascii_digit()) {
        format!("0{c}")
    } else {
        c.to_ascii_uppercase()
    }
}

/// ISO 4217 numeric → alphabetic, for the currencies a Colombian exporter
/// meets; others are sent as `exchange_rate.source_currency`.
const CURRENCIES: &[(u16, &str)] = &[
    (32, "ARS"),
    (36, "AUD"),
    (68, "BOB"),
    (124, "CAD"),
    (152, "CLP"),
    (156, "CNY"),
    (170, "COP"),
    (188, "CRC"),
    (203, "CZK"),
    (208, "DKK"),
    (214, "DOP"),
    (320, "GTQ"),
    (340, "HNL"),
    (344, "HKD"),
    (348, "HUF"),
    (356, "INR"),
    (376, "ILS"),
    (392, "JPY"),
    (410, "KRW"),
    (484, "MXN"),
    (554, "NZD"),
    (558, "NIO"),
    (578, "NOK"),
    (590, "PAB"),
    (600, "PYG"),
    (604, "PEN"),
    (643, "RUB"),
    (702, "SGD"),
    (710, "ZAR"),
    (752, "SEK"),
    (756, "CHF"),
    (784, "AED"),
    (826, "GBP"),
    (840, "USD"),
    (858, "UYU"),
    (928, "VES"),
    (949, "TRY"),
    (978, "EUR"),
    (985, "PLN"),
    (986, "BRL"),
];

/// `id_tipo_moneda` (numeric or alphabetic) → ISO 4217 alphabetic code.
pub(super) fn currency(id: &str) -> Result<String, String> {
    let id = id.trim();
    if let Ok(n) = id.parse::<u16>() {
        return CURRENCIES
            .iter()
            .find(|(num, _)| *num == n)
            .map(|(_, alpha)| (*alpha).to_string())
            .ok_or_else(|| {
                format!(
                    "unknown ISO 4217 numeric code {n}; send exchange_rate.source_currency instead"
                )
            });
    }
    if is_currency_code(id) {
        Ok(id.to_string())
    } else {
        Err("must be an ISO 4217 code: numeric (840) or alphabetic (\"USD\")".into())
    }
}

pub(super) fn is_currency_code(s: &str) -> bool {
    s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase())
}

/// Department (`cbc:CountrySubentity`) of a DIVIPOLA department code.
pub(crate) fn department_name(code: &str) -> Option<&'static str> {
    Some(match code {
        "05" => "Antioquia",
        "08" => "Atlántico",
        "11" => "Bogotá",
        "13" => "Bolívar",
        "15" => "Boyacá",
        "17" => "Caldas",
        "18" => "Caquetá",
        "19" => "Cauca",
        "20" => "Cesar",
        "23" => "Córdoba",
        "25" => "Cundinamarca",
        "27" => "Chocó",
        "41" => "Huila",
        "44" => "La Guajira",
        "47" => "Magdalena",
        "50" => "Meta",
        "52" => "Nariño",
        "54" => "Norte de Santander",
        "63" => "Quindío",
        "66" => "Risaralda",
        "68" => "Santander",
        "70" => "Sucre",
        "73" => "Tolima",
        "76" => "Valle del Cauca",
        "81" => "Arauca",
        "85" => "Casanare",
        "86" => "Putumayo",
        "88" => "Archipiélago de San Andrés, Providencia y Santa Catalina",
        "91" => "Amazonas",
        "94" => "Guainía",
        "95" => "Guaviare",
        "97" => "Vaupés",
        "99" => "Vichada",
        _ => return None,
    })
}

/// Incoterms 2020, 2010 and the older ones the authority's list keeps.
pub(super) const INCOTERMS: &[&str] = &[
    "EXW", "FCA", "FAS", "FOB", "CFR", "CIF", "CPT", "CIP", "DAP", "DPU", "DDP", "DAT", "DAF",
    "DES", "DEQ", "DDU",
];
