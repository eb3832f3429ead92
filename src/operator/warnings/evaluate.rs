//! What runs out for one company, from its records (pure): each resolution's
//! numbers left and, from its recent rate, the days until they run out;
//! each resolution's validity end; the certificate's expiry; the month's
//! plan use. An entry is `en_alerta` when it crossed a threshold of
//! `[warnings]`; its [`Entry::key`] names that crossing.

use chrono::{DateTime, NaiveDate, Utc};
use emisor_store::{CertificateRecord, NumberingResolution};
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::WarningSettings;

/// Kinds of warning, as `tipo` names them and `/metrics` counts them.
pub const NUMBERING: &str = "numeracion";
pub const VALIDITY: &str = "vigencia_resolucion";
pub const CERTIFICATE: &str = "certificado";
pub const PLAN: &str = "plan";
pub const KINDS: [&str; 4] = [NUMBERING, VALIDITY, CERTIFICATE, PLAN];

const DAY_S: i64 = 86_400;

/// How far back a numbering's rate is read, and the least span it needs.
pub const RATE_WINDOW_S: i64 = 7 * DAY_S;
pub const RATE_MIN_SPAN_S: i64 = DAY_S;

/// A resolution as the warnings see it: its next number, and the number
/// that was next at an earlier instant (for the rate), when known.
#[derive(Debug, Clone)]
pub struct ResolutionFacts {
    pub resolution: NumberingResolution,
    pub next: u64,
    /// `(unix seconds, next number then)`, the oldest sample of the window.
    pub earlier: Option<(i64, u64)>,
}

/// Everything the evaluation reads for one company.
#[derive(Debug, Clone)]
pub struct CompanyFacts {
    pub company: u64,
    pub resolutions: Vec<ResolutionFacts>,
    pub certificate: Option<CertificateRecord>,
    /// `YYYYMM`, its documents so far and its limit.
    pub period: u32,
    pub used: u64,
    pub limit: u64,
}

/// The `alertas` of a company's admin answer.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Alertas {
    /// The thresholds they were judged with (`[warnings]`).
    pub umbral_porcentaje: u8,
    pub umbral_dias: u32,
    /// Numbers left in each current resolution.
    pub numeracion: Vec<Numeracion>,
    /// Each resolution's validity end (those ended more than `umbral_dias`
    /// ago are left out).
    pub vigencias: Vec<Vigencia>,
    pub certificado: Option<Certificado>,
    pub plan: Plan,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Numeracion {
    pub id_resolucion: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub desde: u64,
    pub hasta: u64,
    pub restantes: u64,
    /// Numbers taken over the last days (up to 7) and over how many whole
    /// days; null until the service has watched the resolution a day.
    pub usados_recientes: Option<u64>,
    pub dias_observados: Option<u64>,
    /// At that rate, whole days until the numbers run out; null when
    /// unknown or when none were taken.
    pub dias_para_agotarse: Option<u64>,
    pub en_alerta: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Vigencia {
    pub id_resolucion: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub vigencia_hasta: String,
    /// Days from today (Colombia) to its last valid day; negative once ended.
    pub dias_restantes: i64,
    pub en_alerta: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Certificado {
    pub serial: String,
    pub sujeto: String,
    pub vence: String,
    /// Whole days until it expires; negative once expired.
    pub dias_restantes: i64,
    pub en_alerta: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Plan {
    /// `YYYYMM`.
    pub periodo: u32,
    pub limite: u64,
    pub usados: u64,
    pub disponibles: u64,
    pub en_alerta: bool,
}

/// One warning in force: its kind, the crossing it names (the key it is
/// remembered by) and its details.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: &'static str,
    pub key: String,
    pub detail: serde_json::Value,
}

/// `part` is at most `percent` % of `whole`.
fn at_most_percent(part: u64, whole: u64, percent: u8) -> bool {
    u128::from(part) * 100 <= u128::from(whole) * u128::from(percent)
}

/// Numbers left when `next` is the next to give: `hasta - next + 1` (none
/// past the range).
fn left(r: &NumberingResolution, next: u64) -> u64 {
    if next > r.to {
        0
    } else {
        r.to - next.max(r.from) + 1
    }
}

fn numbering(f: &ResolutionFacts, w: &WarningSettings, now_s: i64) -> Numeracion {
    let r = &f.resolution;
    let restantes = left(r, f.next);
    let size = r.to - r.from + 1;
    let rate = f.earlier.and_then(|(at, then)| {
        let span = now_s - at;
        (span >= RATE_MIN_SPAN_S).then(|| (f.next.saturating_sub(then), span))
    });
    let dias_para_agotarse = rate.and_then(|(used, span)| {
        (used > 0).then(|| {
            let days = u128::from(restantes) * span as u128 / (u128::from(used) * DAY_S as u128);
            u64::try_from(days).unwrap_or(u64::MAX)
        })
    });
    let en_alerta = at_most_percent(restantes, size, w.percent_left)
        || dias_para_agotarse.is_some_and(|d| d <= u64::from(w.days_before));
    Numeracion {
        id_resolucion: r.id,
        id_tipo_documento: r.document_type,
        prefijo: r.prefix.clone(),
        desde: r.from,
        hasta: r.to,
        restantes,
        usados_recientes: rate.map(|(used, _)| used),
        dias_observados: rate.map(|(_, span)| (span / DAY_S) as u64),
        dias_para_agotarse,
        en_alerta,
    }
}

/// Evaluates a company on `today` (Colombia) at `now`.
pub fn evaluate(
    facts: &CompanyFacts,
    w: &WarningSettings,
    today: NaiveDate,
    now: DateTime<Utc>,
) -> Alertas {
    let days_before = i64::from(w.days_before);
    let mut numeracion = Vec::new();
    let mut vigencias = Vec::new();
    for f in &facts.resolutions {
        let r = &f.resolution;
        let dias_restantes = (r.valid_to - today).num_days();
        if dias_restantes < -days_before {
            continue; // long ended: a newer resolution serves its types
        }
        vigencias.push(Vigencia {
            id_resolucion: r.id,
            id_tipo_documento: r.document_type,
            prefijo: r.prefix.clone(),
            vigencia_hasta: r.valid_to.to_string(),
            dias_restantes,
            en_alerta: dias_restantes <= days_before,
        });
        if dias_restantes >= 0 {
            numeracion.push(numbering(f, w, now.timestamp()));
        }
    }
    let certificado = facts.certificate.as_ref().map(|c| {
        let dias_restantes = (c.not_after - now).num_days();
        Certificado {
            serial: c.serial.clone(),
            sujeto: c.subject.clone(),
            vence: c.not_after.to_rfc3339(),
            dias_restantes,
            en_alerta: c.not_after - now <= chrono::Duration::days(days_before),
        }
    });
    let disponibles = facts.limit.saturating_sub(facts.used);
    Alertas {
        umbral_porcentaje: w.percent_left,
        umbral_dias: w.days_before,
        numeracion,
        vigencias,
        certificado,
        plan: Plan {
            periodo: facts.period,
            limite: facts.limit,
            usados: facts.used,
            disponibles,
            en_alerta: at_most_percent(disponibles, facts.limit, w.percent_left),
        },
    }
}

fn detail(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

impl Alertas {
    /// The warnings in force, each under the key of its crossing: a new
    /// certificate, another month or another resolution is a new crossing.
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for n in self.numeracion.iter().filter(|n| n.en_alerta) {
            out.push(Entry {
                kind: NUMBERING,
                key: format!("{NUMBERING}:{}", n.id_resolucion),
                detail: detail(n),
            });
        }
        for v in self.vigencias.iter().filter(|v| v.en_alerta) {
            out.push(Entry {
                kind: VALIDITY,
                key: format!("{VALIDITY}:{}:{}", v.id_resolucion, v.vigencia_hasta),
                detail: detail(v),
            });
        }
        if let Some(c) = self.certificado.as_ref().filter(|c| c.en_alerta) {
            out.push(Entry {
                kind: CERTIFICATE,
                key: format!("{CERTIFICATE}:{}:{}", c.serial, c.vence),
                detail: detail(c),
            });
        }
        if self.plan.en_alerta {
            out.push(Entry {
                kind: PLAN,
                key: format!("{PLAN}:{}", self.plan.periodo),
                detail: detail(&self.plan),
            });
        }
        out
    }
}

/// Whether a number just taken may have crossed the numbering threshold
/// (the cheap look on the issuing path; the watcher judges the rest).
pub fn number_may_warn(from: u64, to: u64, number: u64, percent_left: u8) -> bool {
    let size = to.saturating_sub(from) + 1;
    let left = to.saturating_sub(number);
    at_most_percent(left, size, percent_left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn settings() -> WarningSettings {
        WarningSettings {
            percent_left: 10,
            days_before: 30,
            check_interval_s: 3600,
        }
    }

    fn resolution(id: u64, from: u64, to: u64, valid_to: NaiveDate) -> NumberingResolution {
        serde_json::from_value(serde_json::json!({
            "id": id, "company_id": 1, "document_type": 1, "resolution_number": "18760000001",
            "resolution_date": "2026-01-01", "prefix": "FE", "from": from, "to": to,
            "valid_from": "2026-01-01", "valid_to": valid_to, "technical_key": "k",
            "created_at": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    }

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn facts(resolutions: Vec<ResolutionFacts>, used: u64, limit: u64) -> CompanyFacts {
        CompanyFacts {
            company: 1,
            resolutions,
            certificate: None,
            period: 202611,
            used,
            limit,
        }
    }

    #[test]
    fn ten_percent_left_of_a_range_warns_and_more_does_not() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let r = resolution(3, 1, 100, day("2027-06-30"));
        // 89 taken, next 90: 11 left (11 %).
        let mut f = ResolutionFacts {
            resolution: r,
            next: 90,
            earlier: None,
        };
        let a = evaluate(
            &facts(vec![f.clone()], 0, 10),
            &settings(),
            day("2026-11-28"),
            now,
        );
        assert_eq!(a.numeracion[0].restantes, 11);
        assert!(!a.numeracion[0].en_alerta);
        assert!(a.entries().is_empty(), "{:?}", a.entries());
        f.next = 91; // 10 left
        let a = evaluate(
            &facts(vec![f.clone()], 0, 10),
            &settings(),
            day("2026-11-28"),
            now,
        );
        assert_eq!(a.numeracion[0].restantes, 10);
        assert_eq!(a.entries()[0].key, "numeracion:3");
        f.next = 101; // none left
        let a = evaluate(&facts(vec![f], 0, 10), &settings(), day("2026-11-28"), now);
        assert_eq!(a.numeracion[0].restantes, 0);
        assert!(number_may_warn(1, 100, 91, 10));
        assert!(!number_may_warn(1, 100, 89, 10));
    }

    #[test]
    fn the_recent_rate_projects_the_end_of_the_numbers() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let r = resolution(3, 1, 10_000, day("2027-06-30"));
        // 200 taken in the last 2 days; 5 000 left: 50 days.
        let two_days_ago = now.timestamp() - 2 * DAY_S;
        let f = ResolutionFacts {
            resolution: r,
            next: 5_001,
            earlier: Some((two_days_ago, 4_801)),
        };
        let a = evaluate(
            &facts(vec![f.clone()], 0, 10),
            &settings(),
            day("2026-11-28"),
            now,
        );
        let n = &a.numeracion[0];
        assert_eq!(
            (n.usados_recientes, n.dias_observados),
            (Some(200), Some(2))
        );
        assert_eq!(n.dias_para_agotarse, Some(50));
        assert!(!n.en_alerta);
        // 400 in 2 days: 25 days left, within 30.
        let faster = ResolutionFacts {
            earlier: Some((two_days_ago, 4_601)),
            ..f.clone()
        };
        let a = evaluate(
            &facts(vec![faster], 0, 10),
            &settings(),
            day("2026-11-28"),
            now,
        );
        assert_eq!(a.numeracion[0].dias_para_agotarse, Some(25));
        assert!(a.numeracion[0].en_alerta);
        // Watched less than a day: no rate.
        let young = ResolutionFacts {
            earlier: Some((now.timestamp() - 3600, 4_601)),
            ..f
        };
        let a = evaluate(
            &facts(vec![young], 0, 10),
            &settings(),
            day("2026-11-28"),
            now,
        );
        assert_eq!(a.numeracion[0].dias_para_agotarse, None);
    }

    #[test]
    fn validity_certificate_and_plan() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let today = day("2026-11-28");
        let soon = ResolutionFacts {
            resolution: resolution(4, 1, 100, day("2026-12-28")),
            next: 1,
            earlier: None,
        };
        let later = ResolutionFacts {
            resolution: resolution(5, 1, 100, day("2026-12-29")),
            next: 1,
            earlier: None,
        };
        let long_ended = ResolutionFacts {
            resolution: resolution(6, 1, 100, day("2026-10-01")),
            next: 1,
            earlier: None,
        };
        let mut f = facts(vec![soon, later, long_ended], 9_000, 10_000);
        let a = evaluate(&f, &settings(), today, now);
        let days: Vec<(u64, i64, bool)> = a
            .vigencias
            .iter()
            .map(|v| (v.id_resolucion, v.dias_restantes, v.en_alerta))
            .collect();
        assert_eq!(days, [(4, 30, true), (5, 31, false)]);
        assert!(a.plan.en_alerta, "1 000 of 10 000 left");
        f.used = 8_999;
        assert!(!evaluate(&f, &settings(), today, now).plan.en_alerta);
        let keys: Vec<String> = a.entries().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["vigencia_resolucion:4:2026-12-28", "plan:202611"]);
    }
}
