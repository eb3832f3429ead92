//! XAdES-EPES enveloped signature (the authority's policy v2).
//! INTERFACE SKELETON: filled in by the engine-crypto work.
