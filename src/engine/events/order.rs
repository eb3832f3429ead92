//! The order of an invoice's events (protocol.md §7.5, spec 4.6, 4.7):
//! 030 → 032 → one of 031/033/034; the registration as a title (API 035)
//! once 030, 032 and 033 or 034 are in and no claim; endorsements after the
//! registration. `done` lists the events that count: accepted by the
//! authority or waiting to be sent (a rejected one does not).

use super::EventKind::{self, *};

/// Why an event may not follow the ones already registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("event {0} is already registered for this invoice")]
    AlreadyRegistered(&'static str),
    #[error("event {event} needs event {missing} first")]
    Missing {
        event: &'static str,
        missing: &'static str,
    },
    #[error("event {event} is not possible after event {after}")]
    Closed {
        event: &'static str,
        after: &'static str,
    },
}

fn has(done: &[EventKind], k: EventKind) -> bool {
    done.contains(&k)
}

/// Whether `next` may follow `done`.
pub fn check(done: &[EventKind], next: EventKind) -> Result<(), OrderError> {
    let code = next.api_code();
    let missing = |k: EventKind| OrderError::Missing {
        event: code,
        missing: k.api_code(),
    };
    match next {
        Acknowledgement | GoodsReceipt | Registration if has(done, next) => {
            return Err(OrderError::AlreadyRegistered(code))
        }
        _ => {}
    }
    match next {
        Acknowledgement => Ok(()),
        GoodsReceipt if !has(done, Acknowledgement) => Err(missing(Acknowledgement)),
        GoodsReceipt => Ok(()),
        Claim | ExpressAcceptance | TacitAcceptance => {
            if let Some(outcome) = done.iter().find(|k| k.is_outcome()) {
                return Err(if *outcome == next {
                    OrderError::AlreadyRegistered(code)
                } else {
                    OrderError::Closed {
                        event: code,
                        after: outcome.api_code(),
                    }
                });
            }
            if !has(done, Acknowledgement) {
                return Err(missing(Acknowledgement));
            }
            if !has(done, GoodsReceipt) {
                return Err(missing(GoodsReceipt));
            }
            Ok(())
        }
        Registration => {
            if has(done, Claim) {
                return Err(OrderError::Closed {
                    event: code,
                    after: Claim.api_code(),
                });
            }
            for k in [Acknowledgement, GoodsReceipt] {
                if !has(done, k) {
                    return Err(missing(k));
                }
            }
            if !has(done, ExpressAcceptance) && !has(done, TacitAcceptance) {
                return Err(OrderError::Missing {
                    event: code,
                    missing: "033 or 034",
                });
            }
            Ok(())
        }
        EndorsementProperty | EndorsementGuarantee | EndorsementProcuration => {
            if has(done, Registration) {
                Ok(())
            } else {
                Err(missing(Registration))
            }
        }
    }
}

/// Registered as a title? No: eligible for it (spec 4.7 `facturas-elegibles`).
pub fn eligible_for_registration(done: &[EventKind]) -> bool {
    check(done, Registration).is_ok()
}
