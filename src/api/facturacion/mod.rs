//! Unified invoicing API (spec 2.5–2.8, 4.1): `POST /facturacion` for all ten
//! document types, and the endpoints around it.

pub mod mapping;
pub mod request;
