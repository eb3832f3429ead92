//! The order of an invoice's events (protocol.md §7.5, spec 4.6, 4.7):
//! 030 → 032 → one of 031/033/034; the registration as a title (API 035)
//! once 030, 032 and 033 or 034 are in and no claim; an endorsement by a
//! holder who registered the title since it last changed hands. After an
//! endorsement in property the new holder files a subsequent registration
//! (the authority's 363/364) before endorsing (decisions.md "Events",
//! "Registry terms"). `done` lists the events that count, in the order they
//! were registered: accepted by the authority or waiting to be sent (a
//! rejected one does not).

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
    /// An endorsement by a holder who has not registered the title since it
    /// last changed hands (the authority's LGC24, LGC27, LGC30).
    #[error("event {event} needs the holder's own registration of the title (035) since its latest endorsement: after an endorsement in property the new holder files a subsequent registration first")]
    Unregistered { event: &'static str },
}

/// Which registration a 035 is (decisions.md "Registry terms").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationStage {
    /// The first registration as a title (361 general, 362 direct).
    First,
    /// The new holder's, after an endorsement in property (363, 364).
    Subsequent,
}

/// The circulation so far: the latest registration and endorsements.
struct Circulation {
    /// Index in `done` of the latest registration, property endorsement and
    /// endorsement of any kind.
    last_registration: Option<usize>,
    last_property: Option<usize>,
    last_endorsement: Option<usize>,
}

fn circulation(done: &[EventKind]) -> Circulation {
    let last = |pred: &dyn Fn(EventKind) -> bool| done.iter().rposition(|k| pred(*k));
    Circulation {
        last_registration: last(&|k| k == Registration),
        last_property: last(&|k| k == EndorsementProperty),
        last_endorsement: last(&|k| k.is_endorsement()),
    }
}

/// Whether the registration `next` would be is the first or a subsequent
/// one (meaningful when [`check`] allows it).
pub fn registration_stage(done: &[EventKind]) -> RegistrationStage {
    if done.contains(&Registration) {
        RegistrationStage::Subsequent
    } else {
        RegistrationStage::First
    }
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
        Acknowledgement | GoodsReceipt if has(done, next) => {
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
            let c = circulation(done);
            if c.last_registration.is_some() {
                // A subsequent registration: the title changed hands since
                // the latest one.
                return match (c.last_property, c.last_registration) {
                    (Some(p), Some(r)) if p > r => Ok(()),
                    _ => Err(OrderError::AlreadyRegistered(code)),
                };
            }
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
            let c = circulation(done);
            let unregistered = OrderError::Unregistered { event: code };
            let Some(r) = c.last_registration else {
                return Err(unregistered);
            };
            // The holder registered since the title last changed hands
            // (LGC24); a guarantee or procuration also since the latest
            // endorsement of any kind (LGC27, LGC30).
            let since = if next == EndorsementProperty {
                c.last_property
            } else {
                c.last_endorsement
            };
            match since {
                Some(e) if e > r => Err(unregistered),
                _ => Ok(()),
            }
        }
    }
}

/// Eligible for the first registration as a title (spec 4.7
/// `facturas-elegibles`); the payment form is the caller's to check.
pub fn eligible_for_registration(done: &[EventKind]) -> bool {
    !done.contains(&Registration) && check(done, Registration).is_ok()
}
