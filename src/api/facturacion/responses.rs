//! Answers of the unified invoicing API (spec 4.1, 2.3).

use emisor_store::{state, DocumentRecord, EVENT_STANDING_KEY};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::numbers::json_number;

/// `documento` of the synchronous answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentSummary {
    pub id: u64,
    pub prefijo: String,
    pub numero: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cufe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub total: Option<serde_json::Number>,
}

/// 200 answer of `POST /facturacion` (and `reenviar`).
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedResponse {
    pub documento: DocumentSummary,
    pub xml: String,
    pub cufe: String,
    /// `CUFE-SHA384`, `CUDE-SHA384` or `CUDS-SHA384`.
    pub cufe_scheme: String,
    pub qr_url: String,
    /// The authority's answer (spec 2.4); `null` when not transmitted.
    #[schema(value_type = Option<Object>)]
    pub transmission: Option<serde_json::Value>,
    pub id_estado_documento: u8,
    pub estado: &'static str,
}

impl IssuedResponse {
    /// `{"success":true,"message":…,"data":…}` around this answer, as
    /// `serde_json` writes [`Envelope`](crate::http::envelope::Envelope) of
    /// it (field order, numbers, escapes), in one buffer sized for the XML,
    /// which is escaped once, eight bytes at a time. This answer is most of
    /// the bytes an HTTP worker writes per document.
    pub fn envelope_json(&self, message: &str) -> Result<Vec<u8>, serde_json::Error> {
        // Escapes (`\"` for each attribute quote) add ~5% to a signed XML.
        let mut out = Vec::with_capacity(self.xml.len() + self.xml.len() / 8 + 1024);
        out.extend_from_slice(b"{\"success\":true,\"message\":");
        serde_json::to_writer(&mut out, message)?;
        out.extend_from_slice(b",\"data\":{\"documento\":");
        serde_json::to_writer(&mut out, &self.documento)?;
        out.extend_from_slice(b",\"xml\":");
        crate::http::json::escape::push_str(&mut out, &self.xml);
        out.extend_from_slice(b",\"cufe\":");
        crate::http::json::escape::push_str(&mut out, &self.cufe);
        out.extend_from_slice(b",\"cufe_scheme\":");
        crate::http::json::escape::push_str(&mut out, &self.cufe_scheme);
        out.extend_from_slice(b",\"qr_url\":");
        crate::http::json::escape::push_str(&mut out, &self.qr_url);
        out.extend_from_slice(b",\"transmission\":");
        serde_json::to_writer(&mut out, &self.transmission)?;
        out.extend_from_slice(b",\"id_estado_documento\":");
        serde_json::to_writer(&mut out, &self.id_estado_documento)?;
        out.extend_from_slice(b",\"estado\":");
        crate::http::json::escape::push_str(&mut out, self.estado);
        out.extend_from_slice(b"}}");
        Ok(out)
    }
}

/// 202 answer of `POST /facturacion` with `async: true`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedResponse {
    pub documento: DocumentSummary,
    pub cufe: String,
    pub cufe_scheme: String,
    pub qr_url: String,
    pub job_id: String,
    pub poll_url: String,
}

/// The 202 envelope carries `status: 202` too (spec 2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedEnvelope {
    pub success: bool,
    pub status: u16,
    pub message: String,
    pub data: QueuedResponse,
}

#[derive(Debug, Serialize, ToSchema, Default)]
#[allow(non_snake_case)]
pub struct TaxResponse {
    pub isValid: bool,
    pub statusCode: String,
    pub statusDescription: String,
}

/// The document record (spec 2.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentStatus {
    pub id: u64,
    pub prefijo: String,
    pub numero: String,
    pub id_tipo_documento: u8,
    pub id_estado_documento: u8,
    pub estado: &'static str,
    pub cufe: Option<String>,
    pub qr_url: Option<String>,
    pub tax_track_id: Option<String>,
    pub tax_response: Option<TaxResponse>,
    #[schema(value_type = f64)]
    pub total: serde_json::Number,
    pub fecha_emision: String,
    pub created_at: String,
    pub updated_at: String,
    /// Transmission attempts so far.
    pub intentos: u32,
    /// The invoice's standing from the events the authority lists on it:
    /// `reclamada`, `aceptada` or `acuse_sin_aceptacion`; absent while none
    /// is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estado_eventos: Option<String>,
    /// The events the authority lists on the invoice (any party's), oldest
    /// first, as the events sweep learned them.
    pub eventos: Vec<TaxEvent>,
}

/// An event registered on the invoice, as the authority lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaxEvent {
    /// The authority's event code (`030`…).
    pub codigo_evento: String,
    pub nombre_evento: String,
    /// Its date (`YYYY-MM-DD`) and time, as the authority gives them.
    pub fecha_evento: String,
    pub hora_evento: String,
    pub numero_evento: String,
    pub cude_evento: String,
    /// Who registered it (NIT), and for whom.
    pub nit_emisor: Option<String>,
    pub nit_receptor: Option<String>,
}

pub fn summary(doc: &DocumentRecord, with_total: bool) -> DocumentSummary {
    DocumentSummary {
        id: doc.id,
        prefijo: doc.prefix.clone(),
        numero: doc.number.to_string(),
        cufe: with_total.then(|| doc.code.clone()).flatten(),
        total: with_total.then(|| json_number(&doc.total)),
    }
}

pub fn status_record(doc: &DocumentRecord) -> DocumentStatus {
    let tax_response = doc.transmission.as_ref().map(|t| TaxResponse {
        isValid: t["isValid"].as_bool().unwrap_or(false),
        statusCode: t["statusCode"].as_str().unwrap_or_default().to_string(),
        statusDescription: t["statusDescription"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    });
    let ts =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    DocumentStatus {
        id: doc.id,
        prefijo: doc.prefix.clone(),
        numero: doc.number.to_string(),
        id_tipo_documento: doc.document_type,
        id_estado_documento: doc.state,
        estado: state::name(doc.state),
        cufe: doc.code.clone(),
        qr_url: doc.qr_url.clone(),
        tax_track_id: doc.track_id.clone(),
        tax_response,
        total: json_number(&doc.total),
        fecha_emision: doc.issue_date.to_string(),
        created_at: ts(doc.created_at),
        updated_at: ts(doc.updated_at),
        intentos: doc.attempts,
        estado_eventos: doc.list_keys.get(EVENT_STANDING_KEY).cloned(),
        eventos: doc
            .authority_events
            .iter()
            .map(|e| TaxEvent {
                codigo_evento: e.code.clone(),
                nombre_evento: e.name.clone(),
                fecha_evento: e.date.clone(),
                hora_evento: e.time.clone(),
                numero_evento: e.number.clone(),
                cude_evento: e.cude.clone(),
                nit_emisor: e.issuer_nit.clone(),
                nit_receptor: e.recipient_nit.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::envelope::Envelope;

    fn answer(
        xml: &str,
        with_total: bool,
        transmission: Option<serde_json::Value>,
    ) -> IssuedResponse {
        IssuedResponse {
            documento: DocumentSummary {
                id: 18_446_744_073_709_551_615,
                prefijo: "SETP\"\\".into(),
                numero: "990000001".into(),
                cufe: with_total.then(|| "ab12\u{1}".to_string()),
                total: with_total.then(|| json_number("1234567.10")),
            },
            xml: xml.into(),
            cufe: "c\u{7f}ufé".into(),
            cufe_scheme: "CUFE-SHA384".into(),
            qr_url: "https://catalogo-vpfe.dian.gov.co/document/searchqr?documentkey=x&y=\"z\""
                .into(),
            transmission,
            id_estado_documento: 255,
            estado: state::name(1),
        }
    }

    /// The hand-written envelope is what serde_json writes for
    /// `Envelope<IssuedResponse>`, byte for byte.
    #[test]
    fn the_written_envelope_is_serde_jsons() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Invoice a='1' b=\"<&gt;\">\r\n\tBogotá \\ \u{0}\u{8}\u{c}\u{1f}\u{7f} €</Invoice>";
        let transmission = serde_json::json!({"isValid": false, "statusCode": "99", "n": 1.50, "errors": ["a\"b", null]});
        for message in [
            "Documento generado (no transmitido)",
            "Documento emitido; la transmisión se reintentará",
            "\"\n",
        ] {
            for (xml, with_total, t) in [
                (xml.to_string(), true, None),
                (xml.repeat(50), false, Some(transmission.clone())),
                (String::new(), true, Some(serde_json::Value::Null)),
            ] {
                let a = answer(&xml, with_total, t);
                let expected = serde_json::to_vec(&Envelope {
                    success: true,
                    message: message.to_string(),
                    data: &a,
                })
                .unwrap();
                assert_eq!(
                    String::from_utf8(a.envelope_json(message).unwrap()).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
    }
}
