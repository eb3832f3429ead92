//! JSON → the engine's payroll document (spec 2.12, 4.5). A missing
//! required field is a 422 naming it; the engine's own checks name engine
//! fields, renamed here to the caller's ([`caller_field`]).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::model::{
    AjusteRequest, Deduccion, Devengado, Empleado, Empleador, LugarGeneracion, NominaRequest, Pago,
    Periodo, Totales,
};
use crate::engine::payroll::model::{
    DeclaredTotals, Deduction, DeductionKind, Earning, EarningKind, Employee, EmployerOverride,
    Payment, PayrollDocument, PayrollKind, Period, Place, Predecessor,
};
use crate::http::error::{ApiError, ApiResult};
use crate::issuing::error::FieldError;
use crate::issuing::payroll::PayrollRequest;

/// Earnings sections of spec 2.12.
pub const EARNINGS: [(&str, EarningKind); 15] = [
    ("BASICO", EarningKind::Basic),
    ("TRANSPORTE", EarningKind::Transport),
    ("HED", EarningKind::OvertimeDay),
    ("HEN", EarningKind::OvertimeNight),
    ("HRD", EarningKind::SurchargeHolidayDay),
    ("HRN", EarningKind::SurchargeNight),
    ("SND", EarningKind::SurchargeHolidayNight),
    ("VACACIONES", EarningKind::Vacation),
    ("PRIMAS", EarningKind::Bonus),
    ("CESANTIAS", EarningKind::Severance),
    ("INCAPACIDAD", EarningKind::SickLeave),
    ("LICENCIA", EarningKind::Leave),
    ("BONIFICACION", EarningKind::Premium),
    ("AUXILIO", EarningKind::Aid),
    ("OTRO", EarningKind::Other),
];

/// Deduction sections of spec 2.12.
pub const DEDUCTIONS: [(&str, DeductionKind); 11] = [
    ("SALUD", DeductionKind::Health),
    ("FONDO_PENSION", DeductionKind::Pension),
    ("FONDO_SP", DeductionKind::SolidarityFund),
    ("SINDICATO", DeductionKind::Union),
    ("SANCION", DeductionKind::Sanction),
    ("LIBRANZA", DeductionKind::Loan),
    ("ANTICIPO", DeductionKind::Advance),
    ("RETENCION", DeductionKind::Withholding),
    ("AFC", DeductionKind::Afc),
    ("COOPERATIVA", DeductionKind::Cooperative),
    ("EMBARGO", DeductionKind::Garnishment),
];

/// `INDIVIDUAL` or `AJUSTE` (the list's `tipo`).
pub fn tipo_name(kind: PayrollKind) -> &'static str {
    if kind == PayrollKind::Individual {
        "INDIVIDUAL"
    } else {
        "AJUSTE"
    }
}

/// The caller's path of an engine field (`period.days_worked` →
/// `periodo.tiempo_laborado_dias`); unknown names pass through.
pub fn caller_field(engine: &str) -> String {
    let mut out = Vec::new();
    let mut parent = "";
    for segment in engine.split('.') {
        let (name, index) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        let mapped = match (parent, name) {
            ("", "earnings") => "devengados",
            ("", "deductions") => "deducciones",
            ("", "period") => "periodo",
            ("", "employee") => "empleado",
            ("", "declared") => "totales",
            ("", "novelty") => "cune_nov",
            ("", "exchange_rate") => "trm",
            ("", "currency") => "tipo_moneda",
            ("", "generation_time") => "hora_gen",
            ("", "payroll_period") => "periodo_nomina",
            ("", "payment") => "pago",
            ("", "notes") => "notas",
            ("", "prefix") => "prefijo",
            ("", "predecessor") => "cune_referencia",
            ("earnings", "amount") | ("deductions", "amount") => "valor_total",
            ("earnings", "kind") | ("deductions", "kind") => "seccion",
            ("earnings", "quantity") => "cantidad",
            ("earnings", "description") | ("deductions", "description") => "descripcion",
            ("period", "days_worked") => "tiempo_laborado_dias",
            ("period", "settlement_start") => "fecha_liquidacion_inicio",
            ("period", "settlement_end") => "fecha_liquidacion_fin",
            ("period", "hired") => "fecha_ingreso",
            ("period", "retired") => "fecha_retiro",
            ("declared", "earnings") => "devengados",
            ("declared", "deductions") => "deducciones",
            ("declared", "net") => "comprobante",
            ("employee", "id_number") => "numero_documento",
            ("employee", "id_type") => "tipo_documento",
            ("employee", "first_name") => "primer_nombre",
            ("employee", "other_names") => "otros_nombres",
            ("employee", "first_surname") => "primer_apellido",
            ("employee", "second_surname") => "segundo_apellido",
            ("employee", "worker_type") => "tipo_trabajador",
            ("employee", "worker_subtype") => "sub_tipo_trabajador",
            ("employee", "contract_type") => "tipo_contrato",
            ("employee", "code") => "codigo_trabajador",
            ("employee", "salary") => "sueldo",
            ("employee", "work_address") => "lugar_trabajo_direccion",
            ("payment", "form") => "forma",
            ("payment", "method") => "metodo",
            (_, other) => other,
        };
        out.push(format!("{mapped}{index}"));
        parent = name;
    }
    out.join(".")
}

/// Collects the 422s of one request.
#[derive(Default)]
struct Problems(Vec<FieldError>);

impl Problems {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    fn required<T: Clone>(&mut self, value: &Option<T>, field: &str) -> Option<T> {
        if value.is_none() {
            self.add(field, "is required");
        }
        value.clone()
    }

    fn text(&mut self, value: &Option<String>, field: &str) -> String {
        match value.as_deref().map(str::trim) {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => {
                self.add(field, "is required");
                String::new()
            }
        }
    }

    fn finish<T>(self, value: T) -> ApiResult<T> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::validation_list(crate::issuing::request::cap(
                self.0,
            )))
        }
    }
}

fn employee(p: &mut Problems, e: &Option<Empleado>) -> Employee {
    let Some(e) = e else {
        p.add("empleado", "is required");
        return Employee::default();
    };
    let code = |v: &Option<String>, default: &str| {
        v.clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| default.to_string())
    };
    Employee {
        id_type: code(&e.tipo_documento, "13"),
        id_number: p.text(&e.numero_documento, "empleado.numero_documento"),
        first_name: p.text(&e.primer_nombre, "empleado.primer_nombre"),
        other_names: e.otros_nombres.clone(),
        first_surname: p.text(&e.primer_apellido, "empleado.primer_apellido"),
        second_surname: e.segundo_apellido.clone(),
        worker_type: code(&e.tipo_trabajador, "01"),
        worker_subtype: code(&e.sub_tipo_trabajador, "00"),
        high_risk_pension: e.alto_riesgo_pension.unwrap_or(false),
        integral_salary: e.salario_integral.unwrap_or(false),
        code: e.codigo_trabajador.clone(),
        contract_type: code(&e.tipo_contrato, "2"),
        salary: e.sueldo,
        work_country: e.lugar_trabajo_pais.clone(),
        work_department: e.lugar_trabajo_departamento.clone(),
        work_municipality: e.lugar_trabajo_municipio.clone(),
        work_address: e.lugar_trabajo_direccion.clone(),
        email: e.correo.clone(),
    }
}

fn period(p: &mut Problems, v: &Option<Periodo>) -> Period {
    let placeholder = NaiveDate::MIN;
    let Some(v) = v else {
        p.add("periodo", "is required");
        return Period {
            hired: None,
            retired: None,
            settlement_start: placeholder,
            settlement_end: placeholder,
            days_worked: 1,
        };
    };
    Period {
        hired: v.fecha_ingreso,
        retired: v.fecha_retiro,
        settlement_start: p
            .required(
                &v.fecha_liquidacion_inicio,
                "periodo.fecha_liquidacion_inicio",
            )
            .unwrap_or(placeholder),
        settlement_end: p
            .required(&v.fecha_liquidacion_fin, "periodo.fecha_liquidacion_fin")
            .unwrap_or(placeholder),
        days_worked: p
            .required(&v.tiempo_laborado_dias, "periodo.tiempo_laborado_dias")
            .unwrap_or(1),
    }
}

fn earnings(p: &mut Problems, lines: &[Devengado]) -> Vec<Earning> {
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        let field = |f: &str| format!("devengados[{i}].{f}");
        let Some(section) = l.seccion.as_deref() else {
            p.add(field("seccion"), "is required");
            continue;
        };
        let Some(kind) = EARNINGS
            .iter()
            .find(|(name, _)| *name == section.trim().to_ascii_uppercase())
            .map(|(_, k)| *k)
        else {
            p.add(
                field("seccion"),
                format!(
                    "unknown section `{section}`; one of {}",
                    EARNINGS.map(|(n, _)| n).join(", ")
                ),
            );
            continue;
        };
        // Spec 4.5 rule 4: the value of BASICO and TRANSPORTE defaults to
        // their own amount fields.
        let fallback = match kind {
            EarningKind::Basic => l.sueldo_trabajado,
            EarningKind::Transport => l.auxilio_transporte,
            _ => None,
        };
        let Some(amount) = l.valor_total.or(fallback) else {
            let also = match kind {
                EarningKind::Basic => " (or sueldo_trabajado)",
                EarningKind::Transport => " (or auxilio_transporte)",
                _ => "",
            };
            p.add(field("valor_total"), format!("is required{also}"));
            continue;
        };
        let quantity = match kind {
            EarningKind::Basic => l.dias_trabajados.map(Decimal::from),
            _ => l.cantidad,
        };
        if kind == EarningKind::Basic && l.dias_trabajados.is_some_and(|d| d < 1) {
            p.add(field("dias_trabajados"), "must be at least 1");
        }
        out.push(Earning {
            kind,
            description: l.descripcion.clone(),
            amount,
            quantity,
            percent: l.porcentaje,
        });
    }
    out
}

fn deductions(p: &mut Problems, lines: &[Deduccion]) -> Vec<Deduction> {
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        let field = |f: &str| format!("deducciones[{i}].{f}");
        let Some(section) = l.seccion.as_deref() else {
            p.add(field("seccion"), "is required");
            continue;
        };
        let Some(kind) = DEDUCTIONS
            .iter()
            .find(|(name, _)| *name == section.trim().to_ascii_uppercase())
            .map(|(_, k)| *k)
        else {
            p.add(
                field("seccion"),
                format!(
                    "unknown section `{section}`; one of {}",
                    DEDUCTIONS.map(|(n, _)| n).join(", ")
                ),
            );
            continue;
        };
        let Some(amount) = l.valor_total else {
            p.add(field("valor_total"), "is required");
            continue;
        };
        out.push(Deduction {
            kind,
            description: l.descripcion.clone(),
            percent: l.porcentaje,
            base: l.base_calculo,
            amount,
        });
    }
    out
}

fn declared(t: &Option<Totales>) -> DeclaredTotals {
    let t = t.clone().unwrap_or_default();
    DeclaredTotals {
        earnings: t.devengados,
        deductions: t.deducciones,
        net: t.comprobante,
    }
}

fn place(l: &Option<LugarGeneracion>) -> Place {
    let l = l.clone().unwrap_or_default();
    Place {
        country: l.pais,
        department: l.departamento,
        municipality: l.municipio,
        language: l.idioma,
    }
}

fn employer(e: &Option<Empleador>) -> EmployerOverride {
    let e = e.clone().unwrap_or_default();
    EmployerOverride {
        name: e.razon_social,
        country: e.pais,
        department: e.departamento,
        municipality: e.municipio,
        address: e.direccion,
    }
}

fn payment(pago: &Option<Pago>) -> Payment {
    let pago = pago.clone().unwrap_or_default();
    let default = Payment::default();
    Payment {
        form: pago.forma.unwrap_or(default.form),
        method: pago.metodo.unwrap_or(default.method),
        bank: pago.banco,
        account_type: pago.tipo_cuenta,
        account_number: pago.numero_cuenta,
    }
}

/// `tipo_moneda` (default COP) and `trm`, required with another currency.
fn currency(p: &mut Problems, tipo: &Option<String>, trm: Option<Decimal>) -> String {
    let c = tipo
        .as_deref()
        .map(|c| c.trim().to_ascii_uppercase())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "COP".into());
    if c != "COP" && trm.is_none() {
        p.add("trm", "is required when tipo_moneda is not COP");
    }
    c
}

/// A `POST /nomina/enviar` body as a payroll to issue.
pub fn to_individual(req: &NominaRequest) -> ApiResult<PayrollRequest> {
    let mut p = Problems::default();
    let employee = employee(&mut p, &req.empleado);
    let period = period(&mut p, &req.periodo);
    let earnings = match &req.devengados {
        Some(lines) => earnings(&mut p, lines),
        None => {
            p.add("devengados", "is required");
            Vec::new()
        }
    };
    let deductions = deductions(&mut p, req.deducciones.as_deref().unwrap_or_default());
    let novelty = if req.novedad == Some(true) {
        let cune = req.cune_nov.as_deref().map(str::trim).unwrap_or_default();
        if cune.is_empty() {
            p.add("cune_nov", "is required when novedad is true");
        }
        Some(cune.to_string())
    } else {
        None
    };
    let currency = currency(&mut p, &req.tipo_moneda, req.trm);
    let document = PayrollDocument {
        kind: PayrollKind::Individual,
        employee,
        period,
        earnings,
        deductions,
        declared: declared(&req.totales),
        notes: req.notas.clone().unwrap_or_default(),
        novelty,
        generation_date: req.fecha_gen,
        generation_time: req.hora_gen.clone(),
        payroll_period: req.periodo_nomina.clone().unwrap_or_else(|| "1".into()),
        currency,
        exchange_rate: req.trm,
        place: place(&req.lugar_generacion),
        employer: employer(&req.empleador),
        payment: payment(&req.pago),
        payment_dates: req.fechas_pagos.clone().unwrap_or_default(),
        rounding: req.redondeo,
        predecessor: None,
    };
    let list_keys = list_keys(&document);
    p.finish(PayrollRequest {
        document,
        transmit: req.transmit.unwrap_or(true),
        prefix: req.prefijo.clone(),
        fields: caller_field,
        list_keys,
    })
}

/// The list keys of a payroll: `tipo` (indexed, the list's filter) and
/// the employee's document number (shown in lists).
fn list_keys(doc: &PayrollDocument) -> BTreeMap<String, String> {
    let mut keys = BTreeMap::new();
    keys.insert("tipo".to_string(), tipo_name(doc.kind).to_string());
    if !doc.employee.id_number.is_empty() {
        keys.insert("empleado".to_string(), doc.employee.id_number.clone());
    }
    keys
}

/// The adjustment's kind from `tipo_nota` (1 replace, default; 2 delete).
pub fn adjustment_kind(tipo_nota: Option<i64>) -> ApiResult<PayrollKind> {
    match tipo_nota {
        None | Some(1) => Ok(PayrollKind::Replace),
        Some(2) => Ok(PayrollKind::Delete),
        Some(_) => Err(ApiError::validation(
            "tipo_nota",
            "must be 1 (replace) or 2 (delete)",
        )),
    }
}

/// A `POST /nomina/ajuste` body, with the original's defaults already
/// filled in (see `ajuste.rs`), as a payroll to issue.
pub fn to_adjustment(req: &AjusteRequest) -> ApiResult<PayrollRequest> {
    let kind = adjustment_kind(req.tipo_nota)?;
    let mut p = Problems::default();
    let cune = p.text(&req.cune_referencia, "cune_referencia");
    let number = p.text(&req.numero_referencia, "numero_referencia");
    let generated = p
        .required(&req.fecha_referencia, "fecha_referencia")
        .unwrap_or(NaiveDate::MIN);
    let employee = employee(&mut p, &req.empleado);
    let period = match (&req.periodo, kind) {
        (None, PayrollKind::Delete) => Period {
            hired: None,
            retired: None,
            settlement_start: generated,
            settlement_end: generated,
            days_worked: 1,
        },
        (v, _) => period(&mut p, v),
    };
    let (earnings, deductions) = if kind == PayrollKind::Delete {
        (Vec::new(), Vec::new())
    } else {
        (
            earnings(&mut p, req.devengados.as_deref().unwrap_or_default()),
            deductions(&mut p, req.deducciones.as_deref().unwrap_or_default()),
        )
    };
    let currency = currency(&mut p, &req.tipo_moneda, req.trm);
    let document = PayrollDocument {
        kind,
        employee,
        period,
        earnings,
        deductions,
        declared: declared(&req.totales),
        notes: req.notas.clone().unwrap_or_default(),
        novelty: None,
        generation_date: req.fecha_gen,
        generation_time: req.hora_gen.clone(),
        payroll_period: req.periodo_nomina.clone().unwrap_or_else(|| "1".into()),
        currency,
        exchange_rate: req.trm,
        place: place(&req.lugar_generacion),
        employer: employer(&req.empleador),
        payment: payment(&req.pago),
        payment_dates: req.fechas_pagos.clone().unwrap_or_default(),
        rounding: None,
        predecessor: Some(Predecessor {
            number,
            cune,
            generated,
        }),
    };
    let list_keys = list_keys(&document);
    p.finish(PayrollRequest {
        document,
        transmit: req.transmit.unwrap_or(true),
        prefix: req.prefijo.clone(),
        fields: caller_field,
        list_keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_fields_are_named_as_the_caller_named_them() {
        assert_eq!(
            caller_field("period.days_worked"),
            "periodo.tiempo_laborado_dias"
        );
        assert_eq!(
            caller_field("earnings[2].amount"),
            "devengados[2].valor_total"
        );
        assert_eq!(caller_field("declared.net"), "totales.comprobante");
        assert_eq!(caller_field("novelty"), "cune_nov");
        assert_eq!(caller_field("deductions"), "deducciones");
        assert_eq!(caller_field("certificado"), "certificado");
    }
}
