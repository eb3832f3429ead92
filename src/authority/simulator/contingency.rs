//! Contingency periods (decisions.md §5 "Contingency T04"). The authority
//! accepts a type-04 invoice only when its signing time falls in a
//! contingency period it declared (rule CTG01, `ValidateContingency`:
//! `xades:SigningTime` to the minute against the active periods). The
//! simulator keeps such periods and starts with one open period covering
//! its whole run, so T04 works until a test closes it. That period is open
//! at both ends: a T04 drafted before the in-process simulator restarted
//! with the server, and sent after, is in it too.
//!
//! * `POST /__sim/contingency` `{"from", "to"}` (ISO 8601) declares one
//!   (`to` may be left out: open until ended);
//! * `DELETE /__sim/contingency` ends them all;
//! * `GET /__sim/contingency` lists them.

use std::sync::{Mutex, PoisonError};

use actix_web::{web, HttpResponse};
use chrono::{DateTime, DurationRound, FixedOffset, NaiveDateTime, TimeDelta};
use roxmltree::Document;
use serde::{Deserialize, Serialize};

use super::document::{DocumentFacts, Family};
use super::server::SimShared;

pub const CTG01: &str = "Regla: CTG01, Rechazo: La fecha y hora de firmado del documento no corresponde a un período de contingencia establecido por la DIAN.";

/// One declared period; an absent end leaves it open on that side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Period {
    pub from: Option<DateTime<FixedOffset>>,
    pub to: Option<DateTime<FixedOffset>>,
}

/// The period the simulator starts with.
const WHOLE_RUN: Period = Period {
    from: None,
    to: None,
};

impl Period {
    /// The validator compares to the minute (it drops the seconds of the
    /// signing time).
    fn covers(&self, signed: DateTime<FixedOffset>) -> bool {
        let to_minute =
            |at: DateTime<FixedOffset>| at.duration_trunc(TimeDelta::minutes(1)).unwrap_or(at);
        let minute = to_minute(signed);
        self.from.is_none_or(|from| minute >= to_minute(from))
            && self.to.is_none_or(|to| minute <= to)
    }
}

/// The periods one simulator knows.
#[derive(Debug)]
pub struct ContingencyPeriods {
    periods: Mutex<Vec<Period>>,
}

impl Default for ContingencyPeriods {
    /// One period covering the simulator's whole run.
    fn default() -> Self {
        ContingencyPeriods {
            periods: Mutex::new(vec![WHOLE_RUN]),
        }
    }
}

impl ContingencyPeriods {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Period>> {
        self.periods.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn declare(&self, period: Period) {
        self.lock().push(period);
    }

    pub fn end_all(&self) {
        self.lock().clear();
    }

    pub fn list(&self) -> Vec<Period> {
        self.lock().clone()
    }

    /// Back to how it started (`POST /__sim/reset`).
    pub fn reset(&self) {
        *self.lock() = vec![WHOLE_RUN];
    }

    pub fn covers(&self, signed: DateTime<FixedOffset>) -> bool {
        self.lock().iter().any(|p| p.covers(signed))
    }

    /// CTG01 for a type-04 invoice whose signing time is in no period (or
    /// unreadable); every other document passes.
    pub fn check(&self, xml: &str, facts: &DocumentFacts) -> Result<(), String> {
        if facts.family != Family::Invoice || facts.type_code != "04" {
            return Ok(());
        }
        match signing_time(xml) {
            Some(at) if self.covers(at) => Ok(()),
            _ => Err(CTG01.into()),
        }
    }
}

/// `xades:SigningTime` of a signed document.
pub fn signing_time(xml: &str) -> Option<DateTime<FixedOffset>> {
    let doc = Document::parse(xml).ok()?;
    let node = doc
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "SigningTime")?;
    DateTime::parse_from_rfc3339(node.text()?.trim()).ok()
}

/// An ISO 8601 instant: with its offset, or a local time of Colombia (the
/// authority declares its periods in local time).
fn instant(text: &str) -> Option<DateTime<FixedOffset>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at);
    }
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M"))
        .ok()?;
    local
        .and_local_timezone(FixedOffset::west_opt(5 * 3600)?)
        .single()
}

#[derive(Debug, Deserialize)]
struct Declare {
    from: String,
    #[serde(default)]
    to: Option<String>,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/__sim/contingency")
            .route(web::post().to(declare))
            .route(web::delete().to(end_all))
            .route(web::get().to(list)),
    );
}

fn bad_request(message: &str) -> HttpResponse {
    HttpResponse::BadRequest().json(serde_json::json!({ "error": message }))
}

async fn declare(shared: web::Data<SimShared>, body: web::Json<Declare>) -> HttpResponse {
    let Some(from) = instant(&body.from) else {
        return bad_request("from must be an ISO 8601 date and time");
    };
    let to = match body.to.as_deref().map(instant) {
        None => None,
        Some(Some(to)) if to >= from => Some(to),
        Some(Some(_)) => return bad_request("to must not be before from"),
        Some(None) => return bad_request("to must be an ISO 8601 date and time"),
    };
    shared.contingency.declare(Period {
        from: Some(from),
        to,
    });
    HttpResponse::Ok().json(shared.contingency.list())
}

async fn end_all(shared: web::Data<SimShared>) -> HttpResponse {
    shared.contingency.end_all();
    HttpResponse::Ok().json(shared.contingency.list())
}

async fn list(shared: web::Data<SimShared>) -> HttpResponse {
    HttpResponse::Ok().json(shared.contingency.list())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    #[test]
    fn periods_cover_to_the_minute_and_end_when_told() {
        let p = ContingencyPeriods::default();
        assert!(p.covers(at("2019-02-15T07:00:05-05:00")), "open");
        assert!(p.covers(at("2031-01-01T00:00:00Z")), "open");
        p.end_all();
        assert!(!p.covers(at("2024-02-15T08:00:00-05:00")));
        p.declare(Period {
            from: Some(at("2024-03-01T10:00:30-05:00")),
            to: Some(at("2024-03-01T12:00:00-05:00")),
        });
        assert!(
            p.covers(at("2024-03-01T10:00:05-05:00")),
            "its first minute"
        );
        assert!(!p.covers(at("2024-03-01T09:59:59-05:00")));
        assert!(p.covers(at("2024-03-01T15:30:00Z")), "11:30 in Bogotá");
        assert!(p.covers(at("2024-03-01T12:00:59-05:00")), "its last minute");
        assert!(!p.covers(at("2024-03-01T12:01:00-05:00")));
        p.reset();
        assert_eq!(p.list(), [WHOLE_RUN]);
        assert!(p.covers(at("2024-02-15T08:00:00-05:00")));
    }

    use super::super::test_set::tests::{context, registry, signed, verdict};
    use crate::engine::model::DocumentKind;
    use crate::fixtures;

    #[test]
    fn ctg01_a_t04_signed_outside_every_contingency_period() {
        let t04 = DocumentKind::ContingencyT04;
        let xml = signed(t04, &context(t04), |x| x);
        let invoice = signed(
            DocumentKind::Invoice,
            &context(DocumentKind::Invoice),
            |x| x,
        );
        let registry = registry();
        let periods = ContingencyPeriods::default();
        assert!(
            verdict(&registry, &periods, &xml).is_empty(),
            "the open period"
        );
        periods.end_all();
        assert_eq!(verdict(&registry, &periods, &xml), [CTG01]);
        assert!(
            verdict(&registry, &periods, &invoice).is_empty(),
            "other invoices need no period"
        );
        let signed_at = signing_time(&xml).unwrap();
        periods.declare(Period {
            from: Some(signed_at - TimeDelta::hours(1)),
            to: Some(signed_at + TimeDelta::minutes(1)),
        });
        assert!(verdict(&registry, &periods, &xml).is_empty(), "declared");
        periods.end_all();
        periods.declare(Period {
            from: Some(signed_at + TimeDelta::minutes(2)),
            to: None,
        });
        assert_eq!(
            verdict(&registry, &periods, &xml),
            [CTG01],
            "declared after it"
        );
    }

    #[actix_web::test]
    async fn contingency_periods_are_declared_listed_and_ended_over_http() {
        let sim =
            fixtures::Sim::start([], crate::authority::simulator::SimOptions::default()).await;
        let client = awc::Client::default();
        let url = sim.url("/__sim/contingency");
        let list = |body: serde_json::Value| body.as_array().map(Vec::len).unwrap_or(99);
        let mut res = client.get(&url).send().await.unwrap();
        let initial: serde_json::Value = res.json().await.unwrap();
        assert_eq!(list(initial.clone()), 1, "one period covering the run");
        assert!(
            initial[0]["from"].is_null() && initial[0]["to"].is_null(),
            "{initial}"
        );

        let mut res = client
            .post(&url)
            .send_json(
                &serde_json::json!({"from": "2024-03-01T10:00:00-05:00", "to": "2024-03-01T12:00"}),
            )
            .await
            .unwrap();
        assert!(res.status().is_success());
        let after: serde_json::Value = res.json().await.unwrap();
        assert_eq!(after[1]["from"], "2024-03-01T10:00:00-05:00", "{after}");
        assert_eq!(after[1]["to"], "2024-03-01T12:00:00-05:00", "local time");

        for bad in [
            serde_json::json!({"from": "ayer"}),
            serde_json::json!({"from": "2024-03-01T10:00:00Z", "to": "2024-03-01T09:00:00Z"}),
        ] {
            let res = client.post(&url).send_json(&bad).await.unwrap();
            assert_eq!(res.status().as_u16(), 400, "{bad}");
        }

        let mut res = client.delete(&url).send().await.unwrap();
        let ended: serde_json::Value = res.json().await.unwrap();
        assert_eq!(list(ended), 0);
        let mut res = client.get(&url).send().await.unwrap();
        assert_eq!(list(res.json().await.unwrap()), 0);
        // A reset goes back to how the simulator started.
        sim.reset().await;
        let mut res = client.get(&url).send().await.unwrap();
        assert_eq!(list(res.json().await.unwrap()), 1);
        sim.stop().await;
    }

    #[test]
    fn instants_with_an_offset_or_in_local_time() {
        assert_eq!(
            instant("2024-03-01T10:00:00-05:00"),
            instant("2024-03-01T10:00:00")
        );
        assert_eq!(instant("2024-03-01T15:00:00Z"), instant("2024-03-01T10:00"));
        assert!(instant("ayer").is_none());
    }
}
