//! The Spanish answer (spec 2.9): the document's code under its own name
//! (`cufe`, `cude` for notes and POS, `cuds` for support documents), the
//! totals by the answer's names, `estado_tax` by state (decisions.md §5),
//! and where its files are.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use emisor_store::DocumentRecord;
use rust_decimal::Decimal;
use serde::Serialize;
use utoipa::ToSchema;

use super::mapping::AnswerTotals;
use crate::engine::model::Document;
use crate::http::documents::estado_tax;
use crate::http::envelope;
use crate::http::numbers::json_number;
use crate::issuing::issue::Issued;

/// `data` of a Spanish answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpanishAnswer {
    pub id: u64,
    /// Prefix and number (`SETP990000001`).
    pub consecutivo: String,
    pub prefijo: String,
    pub numero: String,
    /// Invoices and exports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cufe: Option<String>,
    /// Credit and debit notes, POS receipts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cude: Option<String>,
    /// Support documents and their adjustment notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuds: Option<String>,
    pub qr_url: String,
    #[schema(value_type = f64)]
    pub subtotal: serde_json::Number,
    #[schema(value_type = f64)]
    pub total_impuestos: serde_json::Number,
    #[schema(value_type = f64)]
    pub total_retenciones: serde_json::Number,
    /// Invoices and notes: subtotal + taxes; support documents: subtotal −
    /// withholdings.
    #[schema(value_type = f64)]
    pub total: serde_json::Number,
    /// Health documents: the user's copay.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub copago: Option<serde_json::Number>,
    /// What is left to pay (`cbc:PayableAmount`) when it differs from
    /// `total`: a health invoice's `total` less the copay paid in advance.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub total_a_pagar: Option<serde_json::Number>,
    /// Foreign-currency documents (exports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moneda: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub tasa_cambio: Option<serde_json::Number>,
    /// `Borrador`, `Aceptado`, `En Cola`, `Rechazado`, `Esperando tax`, `Dead Letter`.
    pub estado_tax: &'static str,
    pub id_estado_documento: u8,
    pub xml_url: String,
    pub pdf_url: String,
    /// The authority's answer (spec 2.4) when it was transmitted now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub transmision: Option<serde_json::Value>,
    /// Queued (`asincrono: true`): the job and where to follow it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_url: Option<String>,
}

/// The 202 envelope carries `status: 202` (spec 2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedSpanishEnvelope {
    pub success: bool,
    pub status: u16,
    pub message: String,
    pub data: SpanishAnswer,
}

fn number(d: Decimal) -> serde_json::Number {
    json_number(&d.round_dp(2).to_string())
}

/// What the answer says of the document beyond its record.
#[derive(Debug, Clone)]
pub struct AnswerFacts {
    pub totals: Option<AnswerTotals>,
    pub copay: Option<Decimal>,
    pub currency: Option<(String, Decimal)>,
}

impl AnswerFacts {
    pub fn of(document: &Document, totals: Option<AnswerTotals>) -> AnswerFacts {
        AnswerFacts {
            totals,
            copay: document.health.as_ref().and_then(|h| h.copay),
            currency: document
                .exchange_rate
                .as_ref()
                .filter(|_| document.currency != "COP")
                .map(|x| (document.currency.clone(), x.rate)),
        }
    }
}

fn answer(doc: &DocumentRecord, facts: &AnswerFacts) -> SpanishAnswer {
    let code = doc.code.clone();
    let scheme = doc.code_scheme.as_deref().unwrap_or_default();
    let (cufe, cude, cuds) = match scheme {
        "CUDE-SHA384" => (None, code, None),
        "CUDS-SHA384" => (None, None, code),
        _ => (code, None, None),
    };
    let t = facts.totals;
    let base = crate::http::BASE;
    SpanishAnswer {
        id: doc.id,
        consecutivo: doc.full_number(),
        prefijo: doc.prefix.clone(),
        numero: doc.number.to_string(),
        cufe,
        cude,
        cuds,
        qr_url: doc.qr_url.clone().unwrap_or_default(),
        subtotal: number(t.map(|t| t.subtotal).unwrap_or_default()),
        total_impuestos: number(t.map(|t| t.taxes).unwrap_or_default()),
        total_retenciones: number(t.map(|t| t.withholdings).unwrap_or_default()),
        total: t
            .map(|t| number(t.total))
            .unwrap_or_else(|| json_number(&doc.total)),
        copago: facts.copay.map(number),
        total_a_pagar: t
            .filter(|t| t.payable != t.total)
            .map(|t| number(t.payable)),
        moneda: facts.currency.as_ref().map(|(c, _)| c.clone()),
        tasa_cambio: facts
            .currency
            .as_ref()
            .map(|(_, r)| json_number(&r.to_string())),
        estado_tax: estado_tax(doc.state),
        id_estado_documento: doc.state,
        xml_url: format!("{base}/facturacion/{}/xml", doc.id),
        pdf_url: format!("{base}/facturacion/{}/pdf", doc.id),
        transmision: None,
        job_id: None,
        poll_url: None,
    }
}

/// The HTTP answer of an issued document.
pub fn response(issued: Issued, facts: &AnswerFacts) -> HttpResponse {
    match issued {
        Issued::Done {
            doc, transmission, ..
        } => {
            let message = match &transmission {
                None => "Documento generado (no transmitido)",
                Some(t) if t.accepted() => "Documento emitido y aceptado",
                Some(t) if t.retryable => "Documento emitido; la transmisión se reintentará",
                Some(_) => "Documento emitido y rechazado por tax",
            };
            let mut data = answer(&doc, facts);
            data.transmision = transmission.and_then(|t| serde_json::to_value(*t).ok());
            envelope::ok(message, data)
        }
        Issued::Queued { doc, job_id } => {
            let mut data = answer(&doc, facts);
            data.job_id = Some(job_id.to_string());
            data.poll_url = Some(format!(
                "{}/facturacion/{}/status?id_empresa={}",
                crate::http::BASE,
                doc.id,
                doc.company_id
            ));
            HttpResponse::build(StatusCode::ACCEPTED).json(QueuedSpanishEnvelope {
                success: true,
                status: 202,
                message: "Documento en cola para transmisión".into(),
                data,
            })
        }
    }
}
