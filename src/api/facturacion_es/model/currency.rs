//! The currency (`moneda`, `tasa_cambio`) and the delivery terms
//! (`incoterms`) of an export.

use chrono::NaiveDate;

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use crate::api::invoice_request::request::{Delivery, ExchangeRateRequest};

/// The currency, its exchange rate and the delivery terms.
pub(super) struct Currency {
    pub(super) moneda: Option<String>,
    pub(super) exchange_rate: Option<ExchangeRateRequest>,
    pub(super) delivery: Option<Delivery>,
}

pub(super) fn read_currency(
    top: &Obj<'_>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Currency> {
    let moneda = top.code(&["moneda"], p)?;
    if moneda.is_some() {
        names.set("id_tipo_moneda", "moneda");
    }
    let exchange_rate = read_exchange_rate(top, names, p)?;
    let incoterms = top.text(&["incoterms"], p)?;
    if incoterms.is_some() {
        names.set("delivery.delivery_terms", "incoterms");
    }
    Ok(Currency {
        moneda: moneda.map(|(_, m)| m),
        exchange_rate,
        delivery: incoterms.map(|(_, t)| Delivery {
            delivery_terms: Some(t.to_string()),
        }),
    })
}

/// `tasa_cambio`: `{moneda_origen, moneda_destino, tasa, fecha}`.
fn read_exchange_rate(
    top: &Obj<'_>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Option<ExchangeRateRequest>> {
    names.set("exchange_rate", "tasa_cambio");
    let today = || crate::issuing::context::colombia_now().date_naive();
    let Some((_, m)) = top.object(&["tasa_cambio"], p)? else {
        return Ok(None);
    };
    let x = Obj {
        map: m,
        path: "tasa_cambio",
    };
    names.set("exchange_rate.source_currency", "tasa_cambio.moneda_origen");
    names.set(
        "exchange_rate.target_currency",
        "tasa_cambio.moneda_destino",
    );
    names.set("exchange_rate.calculation_rate", "tasa_cambio.tasa");
    names.set("exchange_rate.date", "tasa_cambio.fecha");
    let source = x
        .text(&["moneda_origen"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    let target = x
        .text(&["moneda_destino"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    let rate = x.decimal(&["tasa"], p)?.map(|(_, d)| d);
    let date: Option<NaiveDate> = x.date(&["fecha"], p)?.map(|(_, d)| d);
    match rate {
        Some(r) => Ok(Some(ExchangeRateRequest {
            source_currency: source,
            target_currency: target,
            calculation_rate: r,
            date: date.unwrap_or_else(today),
        })),
        None => {
            p.push(
                "tasa_cambio.tasa",
                "es obligatorio: pesos por unidad de la moneda",
            );
            Ok(None)
        }
    }
}
