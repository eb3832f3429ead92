//! The payroll layout (A4): employer, employee, period, earnings,
//! deductions, totals, the CUNE in full and the QR code. Read from the
//! signed payroll XML (`NominaIndividual`, or the `Reemplazar` /
//! `Eliminar` of a `NominaIndividualDeAjuste`): what the authority
//! validated is what is printed.

use roxmltree::{Document, Node};

use super::canvas::{Align, Canvas, Style, MM};
use super::format::money;
use super::{RenderError, RenderInput};
use crate::engine::payroll::{printed_qr_text, PrintedQr};

const WIDTH: f32 = 210.0 * MM;
const HEIGHT: f32 = 297.0 * MM;
const MARGIN: f32 = 12.0 * MM;
const RIGHT: f32 = WIDTH - MARGIN;
const FOOT: f32 = 14.0 * MM;
const QR_SIZE: f32 = 34.0 * MM;

const BODY: Style = Style::regular(8.0);
const SMALL: Style = Style::regular(7.0);
const LABEL: Style = Style::grey(7.0);
const HEAD: Style = Style::bold(8.0);

/// Whether `xml` is a payroll document.
pub fn is_payroll(xml: &str) -> bool {
    let head = &xml[..xml.len().min(400)];
    head.contains("<NominaIndividual ") || head.contains("<NominaIndividualDeAjuste ")
}

/// One printed row: concept, quantity, amount.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub concept: String,
    pub quantity: String,
    pub amount: String,
}

/// What the payroll layout prints, read from the XML.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PayrollView {
    pub title: String,
    pub number: String,
    pub cune: String,
    pub generated: String,
    pub employer: String,
    pub employer_nit: String,
    pub employer_address: String,
    pub employee_name: String,
    pub employee_document: String,
    pub employee_code: String,
    pub contract: String,
    pub salary: String,
    pub period: String,
    pub days: String,
    pub hired: String,
    pub payment_dates: String,
    pub predecessor: Option<String>,
    pub earnings: Vec<Row>,
    pub deductions: Vec<Row>,
    pub total_earnings: String,
    pub total_deductions: String,
    pub net: String,
    pub software: String,
    /// The verification URL (`CodigoQR`).
    pub qr_url: String,
    /// What the printed QR code carries (payroll annex §13.1).
    pub qr_text: String,
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn attr(n: Option<Node<'_, '_>>, name: &str) -> String {
    n.and_then(|n| n.attribute(name))
        .unwrap_or_default()
        .to_string()
}

fn text(n: Option<Node<'_, '_>>) -> String {
    n.and_then(|n| n.text())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Earnings elements: (element, label, quantity attribute, amount attribute).
const EARNINGS: [(&str, &str, &str, &str); 16] = [
    (
        "Basico",
        "Salario básico",
        "DiasTrabajados",
        "SueldoTrabajado",
    ),
    (
        "Transporte",
        "Auxilio de transporte",
        "",
        "AuxilioTransporte",
    ),
    ("HED", "Horas extra diurnas", "Cantidad", "Pago"),
    ("HEN", "Horas extra nocturnas", "Cantidad", "Pago"),
    ("HRN", "Recargo nocturno", "Cantidad", "Pago"),
    (
        "HEDDF",
        "Horas extra diurnas dominicales y festivas",
        "Cantidad",
        "Pago",
    ),
    (
        "HRDDF",
        "Recargo diurno dominical y festivo",
        "Cantidad",
        "Pago",
    ),
    (
        "HENDF",
        "Horas extra nocturnas dominicales y festivas",
        "Cantidad",
        "Pago",
    ),
    (
        "HRNDF",
        "Recargo nocturno dominical y festivo",
        "Cantidad",
        "Pago",
    ),
    ("VacacionesComunes", "Vacaciones", "Cantidad", "Pago"),
    ("Primas", "Prima de servicios", "Cantidad", "Pago"),
    ("Cesantias", "Cesantías", "", "Pago"),
    ("Incapacidad", "Incapacidad", "Cantidad", "Pago"),
    ("LicenciaR", "Licencia remunerada", "Cantidad", "Pago"),
    ("Bonificacion", "Bonificación", "", "BonificacionS"),
    ("Auxilio", "Auxilio", "", "AuxilioNS"),
];

/// Deduction elements with attributes: (element, label, amount attribute).
const DEDUCTIONS: [(&str, &str, &str); 6] = [
    ("Salud", "Salud", "Deduccion"),
    ("FondoPension", "Fondo de pensión", "Deduccion"),
    ("FondoSP", "Fondo de solidaridad pensional", "DeduccionSP"),
    ("Sindicato", "Sindicato", "Deduccion"),
    ("Sancion", "Sanción", "SancionPriv"),
    ("Libranza", "Libranza", "Deduccion"),
];

/// Deductions written as element text: (element, label).
const DEDUCTION_TEXTS: [(&str, &str); 5] = [
    ("Anticipo", "Anticipo"),
    ("RetencionFuente", "Retención en la fuente"),
    ("AFC", "Ahorro AFC"),
    ("Cooperativa", "Cooperativa"),
    ("EmbargoFiscal", "Embargo fiscal"),
];

impl PayrollView {
    pub fn read(xml: &str) -> Result<PayrollView, RenderError> {
        let doc = Document::parse(xml).map_err(|e| RenderError::Xml(e.to_string()))?;
        let root = doc.root_element();
        let adjustment = root.tag_name().name() == "NominaIndividualDeAjuste";
        let (body, kind) = match (child(root, "Reemplazar"), child(root, "Eliminar")) {
            (Some(b), _) => (b, "Reemplazar"),
            (_, Some(b)) => (b, "Eliminar"),
            _ => (root, ""),
        };
        let info = child(body, "InformacionGeneral");
        let employer = child(body, "Empleador");
        let worker = child(body, "Trabajador");
        let period = child(body, "Periodo");
        let provider = child(body, "ProveedorXML");
        let predecessor = child(body, "ReemplazandoPredecesor")
            .or_else(|| child(body, "EliminandoPredecesor"))
            .map(|p| {
                format!(
                    "{} {} del {} (CUNE {})",
                    if kind == "Eliminar" {
                        "Elimina"
                    } else {
                        "Reemplaza"
                    },
                    attr(Some(p), "NumeroPred"),
                    attr(Some(p), "FechaGenPred"),
                    attr(Some(p), "CUNEPred")
                )
            });
        let name = [
            attr(worker, "PrimerNombre"),
            attr(worker, "OtrosNombres"),
            attr(worker, "PrimerApellido"),
            attr(worker, "SegundoApellido"),
        ]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
        let mut earnings = Vec::new();
        if let Some(dev) = child(body, "Devengados") {
            for n in dev.descendants().filter(|n| n.is_element()) {
                let tag = n.tag_name().name();
                if let Some((_, label, q, a)) = EARNINGS.iter().find(|(e, ..)| *e == tag) {
                    earnings.push(Row {
                        concept: label.to_string(),
                        quantity: if q.is_empty() {
                            String::new()
                        } else {
                            attr(Some(n), q)
                        },
                        amount: money(&attr(Some(n), a)),
                    });
                } else if tag == "OtroConcepto" {
                    earnings.push(Row {
                        concept: attr(Some(n), "DescripcionConcepto"),
                        quantity: String::new(),
                        amount: money(&attr(Some(n), "ConceptoS")),
                    });
                }
            }
        }
        let mut deductions = Vec::new();
        if let Some(ded) = child(body, "Deducciones") {
            for n in ded.descendants().filter(|n| n.is_element()) {
                let tag = n.tag_name().name();
                if let Some((_, label, a)) = DEDUCTIONS.iter().find(|(e, ..)| *e == tag) {
                    let label = if tag == "Libranza" {
                        format!("{label}: {}", attr(Some(n), "Descripcion"))
                    } else {
                        label.to_string()
                    };
                    let percent = attr(Some(n), "Porcentaje");
                    deductions.push(Row {
                        concept: label,
                        quantity: if percent.is_empty() {
                            String::new()
                        } else {
                            format!("{percent} %")
                        },
                        amount: money(&attr(Some(n), a)),
                    });
                } else if let Some((_, label)) = DEDUCTION_TEXTS.iter().find(|(e, _)| *e == tag) {
                    deductions.push(Row {
                        concept: label.to_string(),
                        quantity: String::new(),
                        amount: money(&text(Some(n))),
                    });
                }
            }
        }
        let title = match (adjustment, kind) {
            (false, _) => "Nómina individual electrónica".to_string(),
            (true, k) => format!("Nota de ajuste de nómina electrónica ({k})"),
        };
        let zero = || money("0");
        let total = |name: &str| {
            let t = text(child(body, name));
            if t.is_empty() {
                zero()
            } else {
                money(&t)
            }
        };
        // `CodigoQR` is the URL; a document stored with the annex's text there
        // ends it with `QRCode: <url>`.
        let codigo_qr = text(child(body, "CodigoQR"));
        let qr_url = codigo_qr
            .rsplit("QRCode: ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let delete = kind == "Eliminar";
        let raw_total = |name: &str| {
            let t = text(child(body, name));
            if delete || t.is_empty() {
                "0.00".to_string()
            } else {
                t
            }
        };
        let note_type = text(child(root, "TipoNota"));
        let qr_text = printed_qr_text(&PrintedQr {
            number: &attr(child(body, "NumeroSecuenciaXML"), "Numero"),
            gen_date: &attr(info, "FechaGen"),
            gen_time: &attr(info, "HoraGen"),
            employer_nit: &attr(employer, "NIT"),
            employee_doc: &if delete {
                "0".to_string()
            } else {
                attr(worker, "NumeroDocumento")
            },
            earnings: &raw_total("DevengadosTotal"),
            deductions: &raw_total("DeduccionesTotal"),
            net: &raw_total("ComprobanteTotal"),
            cune: &attr(info, "CUNE"),
            note_type: (!note_type.is_empty()).then_some(note_type.as_str()),
            url: &qr_url,
        });
        Ok(PayrollView {
            title,
            number: attr(child(body, "NumeroSecuenciaXML"), "Numero"),
            cune: attr(info, "CUNE"),
            generated: format!("{} {}", attr(info, "FechaGen"), attr(info, "HoraGen")),
            employer: attr(employer, "RazonSocial"),
            employer_nit: format!("NIT {}-{}", attr(employer, "NIT"), attr(employer, "DV")),
            employer_address: attr(employer, "Direccion"),
            employee_name: name,
            employee_document: attr(worker, "NumeroDocumento"),
            employee_code: attr(worker, "CodigoTrabajador"),
            contract: attr(worker, "TipoContrato"),
            salary: money(&attr(worker, "Sueldo")),
            period: format!(
                "{} a {}",
                attr(period, "FechaLiquidacionInicio"),
                attr(period, "FechaLiquidacionFin")
            ),
            days: attr(period, "TiempoLaborado"),
            hired: attr(period, "FechaIngreso"),
            payment_dates: child(body, "FechasPagos")
                .map(|f| {
                    f.children()
                        .filter(|c| c.is_element())
                        .map(|c| text(Some(c)))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
            predecessor,
            earnings,
            deductions,
            total_earnings: total("DevengadosTotal"),
            total_deductions: total("DeduccionesTotal"),
            net: total("ComprobanteTotal"),
            software: format!(
                "Proveedor de software: NIT {}-{}, software {}",
                attr(provider, "NIT"),
                attr(provider, "DV"),
                attr(provider, "SoftwareID")
            ),
            qr_url,
            qr_text,
        })
    }
}

fn room(c: &mut Canvas, y: f32, needed: f32) -> f32 {
    if y + needed > HEIGHT - FOOT {
        c.new_page();
        MARGIN + 4.0
    } else {
        y
    }
}

/// Label / value pairs, two columns.
fn pairs(c: &mut Canvas, y: f32, title: &str, rows: &[(&str, String)]) -> f32 {
    let mut y = room(c, y + 6.0, 30.0);
    c.text(MARGIN, y, HEAD, Align::Left, title);
    y += 4.0;
    c.rule(MARGIN, RIGHT, y, 0.4);
    y += 10.0;
    let half = (RIGHT - MARGIN) / 2.0;
    for (i, (label, value)) in rows.iter().enumerate() {
        if value.is_empty() {
            continue;
        }
        let x = if i % 2 == 0 { MARGIN } else { MARGIN + half };
        c.text(x, y, LABEL, Align::Left, label);
        c.text(x + 95.0, y, BODY, Align::Left, value);
        if i % 2 == 1 {
            y += 10.0;
        }
    }
    y + 10.0
}

fn table(c: &mut Canvas, y: f32, title: &str, rows: &[Row], total: (&str, &str)) -> f32 {
    let mut y = room(c, y + 6.0, 40.0);
    c.text(MARGIN, y, HEAD, Align::Left, title);
    c.text(RIGHT - 110.0, y, LABEL, Align::Right, "Cantidad / %");
    c.text(RIGHT, y, LABEL, Align::Right, "Valor");
    y += 4.0;
    c.rule(MARGIN, RIGHT, y, 0.4);
    y += 10.0;
    for r in rows {
        let lines = c.wrap(&r.concept, BODY, RIGHT - MARGIN - 200.0);
        y = room(c, y, 10.0 * lines.len() as f32);
        c.text(RIGHT - 110.0, y, BODY, Align::Right, &r.quantity);
        c.text(RIGHT, y, BODY, Align::Right, &format!("$ {}", r.amount));
        for line in lines {
            c.text(MARGIN, y, BODY, Align::Left, &line);
            y += 10.0;
        }
    }
    c.rule(RIGHT - 200.0, RIGHT, y - 6.0, 0.4);
    y += 4.0;
    c.text(RIGHT - 110.0, y, HEAD, Align::Right, total.0);
    c.text(RIGHT, y, HEAD, Align::Right, &format!("$ {}", total.1));
    y + 8.0
}

/// The A4 payroll of `input`.
pub fn render(input: &RenderInput<'_>) -> Result<Vec<u8>, RenderError> {
    let v = PayrollView::read(input.signed_xml)?;
    let mut c = Canvas::new(WIDTH)?;
    let mut y = MARGIN + 12.0;
    let employer = if v.employer.is_empty() {
        input.company.name.clone()
    } else {
        v.employer.clone()
    };
    c.text(MARGIN, y, Style::bold(13.0), Align::Left, &employer);
    y += 14.0;
    c.text(MARGIN, y, Style::bold(9.0), Align::Left, &v.employer_nit);
    y += 11.0;
    c.text(MARGIN, y, BODY, Align::Left, &v.employer_address);
    let centre = RIGHT - 55.0 * MM;
    let box_x = centre - 55.0 * MM;
    c.shade(box_x, MARGIN, RIGHT - box_x, 52.0, 0.08);
    let mut by = MARGIN + 13.0;
    for line in c.wrap(
        &v.title.to_uppercase(),
        Style::bold(9.0),
        RIGHT - box_x - 12.0,
    ) {
        c.text(centre, by, Style::bold(9.0), Align::Center, &line);
        by += 11.0;
    }
    c.text(
        centre,
        by + 2.0,
        Style::bold(12.0),
        Align::Center,
        &format!("No. {}", v.number),
    );
    c.text(
        centre,
        by + 14.0,
        BODY,
        Align::Center,
        &format!("Generada: {}", v.generated),
    );
    y = y.max(MARGIN + 52.0) + 6.0;
    if let Some(p) = &v.predecessor {
        for line in c.wrap(p, SMALL, RIGHT - MARGIN) {
            c.text(MARGIN, y, SMALL, Align::Left, &line);
            y += 9.0;
        }
    }
    if !v.employee_name.is_empty() {
        y = pairs(
            &mut c,
            y,
            "Empleado",
            &[
                ("Nombre", v.employee_name.clone()),
                ("Documento", v.employee_document.clone()),
                ("Código", v.employee_code.clone()),
                ("Tipo de contrato", v.contract.clone()),
                ("Salario", format!("$ {}", v.salary)),
                ("Fecha de ingreso", v.hired.clone()),
            ],
        );
        y = pairs(
            &mut c,
            y,
            "Periodo",
            &[
                ("Liquidación", v.period.clone()),
                ("Tiempo laborado (días)", v.days.clone()),
                ("Fechas de pago", v.payment_dates.clone()),
            ],
        );
        y = table(
            &mut c,
            y,
            "Devengados",
            &v.earnings,
            ("Total devengados", &v.total_earnings),
        );
        y = table(
            &mut c,
            y,
            "Deducciones",
            &v.deductions,
            ("Total deducciones", &v.total_deductions),
        );
    }
    y = room(&mut c, y + 4.0, 20.0);
    c.shade(RIGHT - 230.0, y - 10.0, 230.0, 16.0, 0.08);
    c.text(
        RIGHT - 110.0,
        y,
        Style::bold(10.0),
        Align::Right,
        "Neto a pagar",
    );
    c.text(
        RIGHT,
        y,
        Style::bold(10.0),
        Align::Right,
        &format!("$ {}", v.net),
    );
    y += 14.0;

    // The CUNE, the QR code, the software, the state.
    let y = room(&mut c, y + 4.0, QR_SIZE + 8.0);
    c.rule(MARGIN, RIGHT, y, 0.6);
    let top = y + 4.0;
    // The printed QR carries the annex §13.1 text, which ends with the URL.
    c.qr(MARGIN - 2.0 * MM, top, QR_SIZE, &v.qr_text)?;
    let x = MARGIN + QR_SIZE;
    let width = RIGHT - x;
    let mut ty = top + 14.0;
    c.text(x, ty, HEAD, Align::Left, "CUNE:");
    ty += 10.0;
    let code_style = Style::regular(7.0);
    for piece in c.chop(&v.cune, code_style, width) {
        c.text(x, ty, code_style, Align::Left, &piece);
        ty += 9.0;
    }
    ty += 3.0;
    let mut texts = vec![
        "Representación gráfica del documento soporte de pago de nómina electrónica".to_string(),
        v.software.clone(),
    ];
    if !input.record.accepted {
        texts.push("Estado: no validado aún por la autoridad tributaria".into());
    }
    for t in texts {
        for line in c.wrap(&t, SMALL, width) {
            c.text(x, ty, SMALL, Align::Left, &line);
            ty += 9.0;
        }
    }
    c.finish(&v.number, HEIGHT, None)
}
