//! The document engine: pure domain code that turns a validated document into
//! exactly what the tax authority accepts (UBL 2.1 XML, code, XAdES signature,
//! ZIP). No actor, HTTP or store in sight, so it can be unit-tested, fuzzed and
//! benchmarked directly.

// Cryptography and codes.
pub mod c14n;
pub mod codes;
pub mod date_text;
pub mod events;
pub mod exact;
pub mod signing_key;
pub mod stack_text;
pub mod xades;

// Document model, totals and XML.
pub mod limits;
pub mod model;
pub mod package;
pub mod payroll;
pub mod pipeline;
pub mod totals;
pub mod ubl;
pub mod validate;
pub mod xml_limits;
pub mod xml_writer;
pub mod zip_writer;
