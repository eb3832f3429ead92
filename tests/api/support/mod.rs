//! What the integration tests share: the server under test ([`app`]), its
//! simulator and flows ([`flow`], [`external_sim`]), the external checkers
//! ([`checkers`]), asynchronous load and its checks ([`async_load`]), request bodies ([`bodies`], [`payroll`]), events
//! ([`events`]), crashes ([`crash`]), a private PostgreSQL ([`pg`]), several
//! nodes on one database ([`nodes`]) and the test clock ([`clock`]).

pub mod app;
pub mod async_load;
pub mod bodies;
pub mod checkers;
pub mod clock;
pub mod crash;
pub mod events;
pub mod external_sim;
pub mod flow;
pub mod nodes;
pub mod payroll;
pub mod pg;
