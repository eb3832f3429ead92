//! Electronic POS receipt 20 (root `Invoice`, CUDE with the PIN, with
//! `sts:InvoiceControl`) and its credit adjustment note 94 (root
//! `CreditNote`). Without a named customer the API passes
//! [`crate::engine::model::Party::final_consumer`]; a tip is a
//! document-level charge.
//!
//! The receipt carries, between `sts:DianExtensions` and the signature,
//! the three extensions of the equivalent-documents annex (Res. 000165 de
//! 2023, numerals 8.2.1 and 10.2.1; rules DEPD11 and DEPD21, protocol.md
//! §7.5b): the software's maker, the buyer's benefits and the point of
//! sale, each a wrapper with one group of `Name`/`Value` pairs in the root's
//! namespace, filled as decisions.md §5 "POS extension values" says. The
//! adjustment note carries only `sts:DianExtensions` (with
//! `sts:InvoiceSource`, as the authority's `DIAN_UBL_Structures.xsd` and the
//! annex's example have it) and the signature, and names the receipt's
//! type, 20, in its billing reference.

use super::common::{expect_kind, fmt_amount, write_document};
use super::{BuildInput, UblError};
use crate::engine::model::{DocumentKind, PointOfSale};
use crate::engine::xml_writer::XmlWriter;

/// `TipoCaja` of every receipt.
const REGISTER_TYPE: &str = "POS";

pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    expect_kind(
        input.doc.kind,
        &[DocumentKind::Pos, DocumentKind::PosAdjustment],
    )?;
    write_document(input)
}

/// One extension: `<wrapper><group>Name Value …</group></wrapper>`. The
/// names are compared literally by the authority (`UbicaciónCaja` and
/// `CódigoVenta` keep their accents, rules DEPD27 and DEPD33).
fn extension(w: &mut XmlWriter, wrapper: &str, group: &str, pairs: &[(&str, &str)]) {
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.open(wrapper);
    w.open(group);
    for (name, value) in pairs {
        w.el("Name", name);
        w.el("Value", value);
    }
    w.end(group);
    w.end(wrapper);
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
}

/// The receipt's three extensions: the software's maker, the buyer's
/// benefits (buyer's identification and name, 0 points) and the point of
/// sale (register, the company's address, cashier, `POS`, the receipt's
/// number and its subtotal).
pub fn write_pos_extensions(w: &mut XmlWriter, input: &BuildInput<'_>) {
    let maker = &input.ctx.software.maker;
    extension(
        w,
        "FabricanteSoftware",
        "InformacionDelFabricanteDelSoftware",
        &[
            ("NombreApellido", &maker.person_name),
            ("RazonSocial", &maker.company_name),
            ("NombreSoftware", &maker.software_name),
        ],
    );
    let buyer = &input.doc.counterparty;
    extension(
        w,
        "BeneficiosComprador",
        "InformacionBeneficiosComprador",
        &[
            ("Codigo", &buyer.id_number),
            ("NombresApellidos", &buyer.name),
            ("Puntos", "0"),
        ],
    );
    let default = PointOfSale::default();
    let pos = input.doc.point_of_sale.as_ref().unwrap_or(&default);
    let location = input
        .ctx
        .company
        .address
        .as_ref()
        .map(|a| a.line.as_str())
        .unwrap_or_default();
    let number = input.ctx.document_number();
    let subtotal = fmt_amount(input.totals.line_extension);
    extension(
        w,
        "PuntoVenta",
        "InformacionCajaVenta",
        &[
            ("PlacaCaja", &pos.register_id),
            ("UbicaciónCaja", location),
            ("Cajero", &pos.cashier_id),
            ("TipoCaja", REGISTER_TYPE),
            ("CódigoVenta", &number),
            ("SubTotal", &subtotal),
        ],
    );
}
