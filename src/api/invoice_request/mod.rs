//! The unified invoice request: the JSON body of `POST /facturacion`
//! ([`request`], with its customer, [`customer`]), its examples, and its
//! mapping onto issuing's domain request ([`mapping`]). The other invoicing
//! families are views of it: the Spanish API, support documents and POS
//! write their bodies as a unified request and map them with its rules
//! ([`translate`] renames the refusals back to the family's fields), so a
//! rule of the unified API holds for all of them.
//!
//! A module of its own, below the families and beside none of them: a
//! family imports it, never another family. It stays under `api` rather than
//! beside `issuing` because it is the API's language, not the domain's: the
//! caller's JSON shapes and field names, refused in the API's envelope
//! (`crate::http::error`); issuing only ever sees the `DocumentRequest` it
//! produces.

pub mod buyer;
pub mod customer;
pub mod examples;
pub mod mapping;
pub mod request;
pub mod translate;
