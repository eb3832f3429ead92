//! The tax authority: SOAP client, WS-Security, simulator. (to be written)
