//! Events on invoices (protocol.md §1.7, §7.5; spec 2.13, 4.6, 4.7;
//! decisions.md §5 "Events", "Registry codes", "Business days"): the event
//! codes as the API and the authority number them, the order they must
//! follow, the business-day calendar of the tacit acceptance, the
//! ApplicationResponse builder and the reading of a received invoice.
//! Pure: no store, no HTTP, no actors.

pub mod application_response;
pub mod calendar;
pub mod order;
pub mod received;
pub mod terms;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

/// One event the API registers. The receipt events keep the authority's
/// code; the circulation events are numbered as spec 4.7 does and carry the
/// authority's own code in the XML (decisions.md "Registry codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// 030 acuse de recibo.
    Acknowledgement,
    /// 031 reclamo.
    Claim,
    /// 032 recibo del bien o prestación del servicio.
    GoodsReceipt,
    /// 033 aceptación expresa.
    ExpressAcceptance,
    /// 034 aceptación tácita.
    TacitAcceptance,
    /// API 035 (authority 036): inscripción como título valor.
    Registration,
    /// API 036 (authority 037): endoso en propiedad.
    EndorsementProperty,
    /// API 037 (authority 038): endoso en garantía.
    EndorsementGuarantee,
    /// API 038 (authority 039): endoso en procuración.
    EndorsementProcuration,
}

/// Every kind, in code order.
pub const ALL: [EventKind; 9] = [
    EventKind::Acknowledgement,
    EventKind::Claim,
    EventKind::GoodsReceipt,
    EventKind::ExpressAcceptance,
    EventKind::TacitAcceptance,
    EventKind::Registration,
    EventKind::EndorsementProperty,
    EventKind::EndorsementGuarantee,
    EventKind::EndorsementProcuration,
];

impl EventKind {
    /// The code the API shows (`codigo_evento`).
    pub fn api_code(self) -> &'static str {
        match self {
            EventKind::Acknowledgement => "030",
            EventKind::Claim => "031",
            EventKind::GoodsReceipt => "032",
            EventKind::ExpressAcceptance => "033",
            EventKind::TacitAcceptance => "034",
            EventKind::Registration => "035",
            EventKind::EndorsementProperty => "036",
            EventKind::EndorsementGuarantee => "037",
            EventKind::EndorsementProcuration => "038",
        }
    }

    /// The authority's `ResponseCode` (`codigo_evento_tax`).
    pub fn authority_code(self) -> &'static str {
        match self {
            EventKind::Registration => "036",
            EventKind::EndorsementProperty => "037",
            EventKind::EndorsementGuarantee => "038",
            EventKind::EndorsementProcuration => "039",
            other => other.api_code(),
        }
    }

    /// The event's name (`nombre_evento`), as the authority's list names it.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Acknowledgement => "Acuse de recibo de la Factura Electrónica de Venta",
            EventKind::Claim => "Reclamo de la Factura Electrónica de Venta",
            EventKind::GoodsReceipt => "Recibo del bien y/o prestación del servicio",
            EventKind::ExpressAcceptance => "Aceptación expresa",
            EventKind::TacitAcceptance => "Aceptación tácita",
            EventKind::Registration => {
                "Inscripción de la factura electrónica de venta como título valor"
            }
            EventKind::EndorsementProperty => "Endoso en propiedad",
            EventKind::EndorsementGuarantee => "Endoso en garantía",
            EventKind::EndorsementProcuration => "Endoso en procuración",
        }
    }

    /// A registry code as a caller writes it: `035`-`038` or its name
    /// (`inscripcion`, `endoso_propiedad`, `endoso_garantia`,
    /// `endoso_procuracion`).
    pub fn registry_from_api(code: &str) -> Option<EventKind> {
        match code.trim() {
            "035" | "inscripcion" => Some(EventKind::Registration),
            "036" | "endoso_propiedad" => Some(EventKind::EndorsementProperty),
            "037" | "endoso_garantia" => Some(EventKind::EndorsementGuarantee),
            "038" | "endoso_procuracion" => Some(EventKind::EndorsementProcuration),
            _ => None,
        }
    }

    /// The kind of an authority `ResponseCode` (what the simulator reads).
    pub fn from_authority_code(code: &str) -> Option<EventKind> {
        ALL.into_iter().find(|k| k.authority_code() == code)
    }

    /// 030-033: the buyer's.
    pub fn is_buyer_event(self) -> bool {
        matches!(
            self,
            EventKind::Acknowledgement
                | EventKind::Claim
                | EventKind::GoodsReceipt
                | EventKind::ExpressAcceptance
        )
    }

    /// 036-038 of the API: an endorsement to `endosatario`.
    pub fn is_endorsement(self) -> bool {
        matches!(
            self,
            EventKind::EndorsementProperty
                | EventKind::EndorsementGuarantee
                | EventKind::EndorsementProcuration
        )
    }

    /// The events that settle the buyer's answer (one of them, once).
    pub fn is_outcome(self) -> bool {
        matches!(
            self,
            EventKind::Claim | EventKind::ExpressAcceptance | EventKind::TacitAcceptance
        )
    }
}

/// Claim concepts of event 031 (protocol.md §7.4).
pub const CLAIM_CONCEPTS: [(&str, &str); 4] = [
    ("01", "Documento con inconsistencias"),
    ("02", "Mercancía no entregada totalmente"),
    ("03", "Mercancía entregada parcialmente"),
    ("04", "Servicio no prestado"),
];

/// The concept text of a claim code (`01`-`04`; `1`-`4` accepted).
pub fn claim_concept(code: &str) -> Option<(&'static str, &'static str)> {
    let code = code.trim();
    let padded = if code.len() == 1 {
        format!("0{code}")
    } else {
        code.to_string()
    };
    CLAIM_CONCEPTS.into_iter().find(|(c, _)| *c == padded)
}
