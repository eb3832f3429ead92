//! The payroll document as the engine sees it: one employee, one period,
//! earnings and deductions by concept, in English names. The API maps its
//! JSON (`devengados`, `deducciones`…) into this; the XML builder writes the
//! authority's elements from it (spec 2.12, payroll annex 1.0.6 schemas).

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

/// `TipoXML` 102 (individual) or 103 (adjustment, replace or delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PayrollKind {
    /// `NominaIndividual`, TipoXML 102.
    Individual,
    /// `NominaIndividualDeAjuste` / `Reemplazar` (TipoNota 1).
    Replace,
    /// `NominaIndividualDeAjuste` / `Eliminar` (TipoNota 2).
    Delete,
}

impl PayrollKind {
    /// `InformacionGeneral/@TipoXML`.
    pub fn xml_type(self) -> &'static str {
        match self {
            PayrollKind::Individual => "102",
            PayrollKind::Replace | PayrollKind::Delete => "103",
        }
    }

    /// `TipoNota` of an adjustment.
    pub fn note_type(self) -> Option<u8> {
        match self {
            PayrollKind::Individual => None,
            PayrollKind::Replace => Some(1),
            PayrollKind::Delete => Some(2),
        }
    }

    pub fn is_adjustment(self) -> bool {
        self != PayrollKind::Individual
    }
}

/// Earnings concepts of spec 2.12 (`devengados[].seccion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum EarningKind {
    /// Salary for the days worked (`Basico`).
    Basic,
    /// Transport aid (`Transporte/@AuxilioTransporte`).
    Transport,
    /// Daytime overtime (`HED`, 25 %).
    OvertimeDay,
    /// Night overtime (`HEN`, 75 %).
    OvertimeNight,
    /// Sunday/holiday daytime surcharge (`HRDDF`, 75 %).
    SurchargeHolidayDay,
    /// Night surcharge (`HRN`, 35 %).
    SurchargeNight,
    /// Sunday/holiday night surcharge (`HRNDF`, 110 %).
    SurchargeHolidayNight,
    Vacation,
    /// Service bonus (`Primas`).
    Bonus,
    /// Severance (`Cesantias`).
    Severance,
    /// Sick leave (`Incapacidad`).
    SickLeave,
    /// Paid leave (`LicenciaR`).
    Leave,
    /// Salary bonus (`Bonificacion/@BonificacionS`).
    Premium,
    /// Non-salary aid (`Auxilio/@AuxilioNS`).
    Aid,
    /// Any other concept (`OtroConcepto`).
    Other,
}

impl EarningKind {
    /// The legal surcharge of overtime and surcharges (percent), written
    /// when the caller gives none.
    pub fn default_percent(self) -> Option<Decimal> {
        let p = match self {
            EarningKind::OvertimeDay => 25,
            EarningKind::OvertimeNight => 75,
            EarningKind::SurchargeHolidayDay => 75,
            EarningKind::SurchargeNight => 35,
            EarningKind::SurchargeHolidayNight => 110,
            _ => return None,
        };
        Some(Decimal::from(p))
    }
}

/// Deduction concepts of spec 2.12 (`deducciones[].seccion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DeductionKind {
    Health,
    Pension,
    /// Pension solidarity fund (`FondoSP`).
    SolidarityFund,
    Union,
    Sanction,
    /// Payroll loan (`Libranza`).
    Loan,
    Advance,
    /// Withholding at source (`RetencionFuente`).
    Withholding,
    /// Savings for housing (`AFC`).
    Afc,
    Cooperative,
    /// Tax garnishment (`EmbargoFiscal`).
    Garnishment,
}

impl DeductionKind {
    /// The usual employee share (percent) written when none is given.
    pub fn default_percent(self) -> Decimal {
        match self {
            DeductionKind::Health | DeductionKind::Pension => Decimal::from(4),
            DeductionKind::SolidarityFund => Decimal::ONE,
            _ => Decimal::ZERO,
        }
    }
}

/// One earnings line. `amount` is already resolved (spec 4.5 rule 4).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Earning {
    pub kind: EarningKind,
    pub description: Option<String>,
    #[serde(with = "crate::engine::exact")]
    pub amount: Decimal,
    /// Days (`BASICO`, vacation, bonus, leave) or hours (overtime).
    #[serde(with = "crate::engine::exact::option")]
    pub quantity: Option<Decimal>,
    /// Surcharge percent of overtime; interest percent of severance.
    #[serde(with = "crate::engine::exact::option")]
    pub percent: Option<Decimal>,
}

/// One deduction line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Deduction {
    pub kind: DeductionKind,
    pub description: Option<String>,
    #[serde(with = "crate::engine::exact::option")]
    pub percent: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub base: Option<Decimal>,
    #[serde(with = "crate::engine::exact")]
    pub amount: Decimal,
}

/// The employee (`Trabajador`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Employee {
    /// `13` CC, `22` CE, `41` passport…
    pub id_type: String,
    pub id_number: String,
    pub first_name: String,
    pub other_names: Option<String>,
    pub first_surname: String,
    pub second_surname: Option<String>,
    /// `01` dependent…
    pub worker_type: String,
    pub worker_subtype: String,
    pub high_risk_pension: bool,
    pub integral_salary: bool,
    pub code: Option<String>,
    /// `1`..`5`.
    pub contract_type: String,
    /// Monthly salary; the basic line's amount when not given.
    #[serde(with = "crate::engine::exact::option")]
    pub salary: Option<Decimal>,
    pub work_country: Option<String>,
    pub work_department: Option<String>,
    pub work_municipality: Option<String>,
    pub work_address: Option<String>,
    pub email: Option<String>,
}

/// The period paid (`Periodo`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Period {
    /// Hire date; the settlement start when not given.
    pub hired: Option<NaiveDate>,
    pub retired: Option<NaiveDate>,
    pub settlement_start: NaiveDate,
    pub settlement_end: NaiveDate,
    /// `Periodo/@TiempoLaborado`: what the caller gives as
    /// `tiempo_laborado_dias`, the seniority in days the annex means (§8.3.1).
    pub days_worked: i64,
}

/// Codes of the pay period's periodicity (`InformacionGeneral/@PeriodoNomina`,
/// payroll annex table 5.5.1).
pub mod periodicity {
    pub const WEEKLY: &str = "1";
    pub const TEN_DAYS: &str = "2";
    pub const FOURTEEN_DAYS: &str = "3";
    pub const HALF_MONTH: &str = "4";
    pub const MONTHLY: &str = "5";
    pub const OTHER: &str = "6";
}

impl Period {
    /// The periodicity of the pay period (annex table 5.5.1), read from the
    /// settlement dates: a calendar month is monthly and its halves (1-15,
    /// 16-end) half-monthly, its thirds (1-10, 11-20, 21-end) ten-day
    /// periods; otherwise the length decides (7, 10, 14, 15-16, 28-31 days),
    /// and anything else is "other".
    pub fn periodicity(&self) -> &'static str {
        use periodicity::*;
        let (start, end) = (self.settlement_start, self.settlement_end);
        let days = (end - start).num_days() + 1;
        let same_month = start.year() == end.year() && start.month() == end.month();
        let month_end = end
            .succ_opt()
            .is_none_or(|next| next.month() != end.month());
        if same_month {
            let (from, to) = (start.day(), end.day());
            if from == 1 && month_end {
                return MONTHLY;
            }
            if (from == 1 && to == 15) || (from == 16 && month_end) {
                return HALF_MONTH;
            }
            if matches!((from, to), (1, 10) | (11, 20)) || (from == 21 && month_end) {
                return TEN_DAYS;
            }
        }
        match days {
            7 => WEEKLY,
            10 => TEN_DAYS,
            14 => FOURTEEN_DAYS,
            15 | 16 => HALF_MONTH,
            28..=31 => MONTHLY,
            _ => OTHER,
        }
    }
}

/// Where the document was generated (`LugarGeneracionXML`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Place {
    pub country: Option<String>,
    pub department: Option<String>,
    pub municipality: Option<String>,
    pub language: Option<String>,
}

/// The employer as the caller overrides it (`Empleador`); the company
/// fills what is not given.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct EmployerOverride {
    pub name: Option<String>,
    pub country: Option<String>,
    pub department: Option<String>,
    pub municipality: Option<String>,
    pub address: Option<String>,
}

/// How the employee is paid (`Pago`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Payment {
    pub form: String,
    pub method: String,
    pub bank: Option<String>,
    pub account_type: Option<String>,
    pub account_number: Option<String>,
}

impl Default for Payment {
    fn default() -> Self {
        Payment {
            form: "1".into(),
            method: "10".into(),
            bank: None,
            account_type: None,
            account_number: None,
        }
    }
}

/// Totals as the caller declared them (`totales`), each checked.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct DeclaredTotals {
    #[serde(with = "crate::engine::exact::option")]
    pub earnings: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub deductions: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub net: Option<Decimal>,
}

/// The payroll an adjustment replaces or deletes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Predecessor {
    /// Prefix + number (`NOM12`).
    pub number: String,
    pub cune: String,
    pub generated: NaiveDate,
}

/// One payroll document, as issued.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PayrollDocument {
    pub kind: PayrollKind,
    pub employee: Employee,
    pub period: Period,
    pub earnings: Vec<Earning>,
    pub deductions: Vec<Deduction>,
    pub declared: DeclaredTotals,
    pub notes: Vec<String>,
    /// `Novedad` with the CUNE of the earlier document.
    pub novelty: Option<String>,
    /// `FechaGen` / `HoraGen` given by the caller (otherwise the issue instant).
    pub generation_date: Option<NaiveDate>,
    /// `HH:MM:SS-05:00`.
    pub generation_time: Option<String>,
    /// The spec's `periodo_nomina`: `1` regular, `2` extraordinary. Kept
    /// with the document; the XML's `PeriodoNomina` is something else, the
    /// periodicity of the pay period ([`Period::periodicity`]).
    pub payroll_period: String,
    pub currency: String,
    #[serde(with = "crate::engine::exact::option")]
    pub exchange_rate: Option<Decimal>,
    pub place: Place,
    pub employer: EmployerOverride,
    pub payment: Payment,
    pub payment_dates: Vec<NaiveDate>,
    #[serde(with = "crate::engine::exact::option")]
    pub rounding: Option<Decimal>,
    /// The adjusted document (adjustments only).
    pub predecessor: Option<Predecessor>,
}
