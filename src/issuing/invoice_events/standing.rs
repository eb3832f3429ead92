//! Where a received invoice stands in the legal order of its receipt
//! events (030 → 032 → one of 031, 033, 034; protocol.md §7.5) and the
//! deadline that applies (decisions.md "Business days"). Read with the
//! rules an event registered now meets ([`order::check`],
//! [`register::within_window`], the calendar's windows), so what the
//! console shows is what the API would answer.

use chrono::NaiveDate;
use emisor_store::ReceivedInvoice;

use super::register::{self, receipt_date};
use super::title::counted;
use crate::engine::events::calendar::{claim_window_last_day, tacit_acceptance_from};
use crate::engine::events::{order, EventKind};

/// The receipt events in their legal order.
pub const RECEIPT_ORDER: [EventKind; 5] = [
    EventKind::Acknowledgement,
    EventKind::GoodsReceipt,
    EventKind::Claim,
    EventKind::ExpressAcceptance,
    EventKind::TacitAcceptance,
];

/// The step the invoice is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// No acknowledgement (030) yet.
    AwaitingAcknowledgement,
    /// Acknowledged; the goods' receipt (032) is next.
    AwaitingGoodsReceipt,
    /// Goods received: a claim (031) or an express acceptance (033)
    /// within the window, a tacit acceptance (034) after it.
    AwaitingOutcome,
    /// Settled by a claim, an express or a tacit acceptance.
    Settled(EventKind),
}

/// The window that follows the goods' receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// The goods' receipt (032) the window counts from.
    pub receipt: NaiveDate,
    /// Last day of a claim (031) or an express acceptance (033).
    pub last_day: NaiveDate,
    /// First day of a tacit acceptance (034).
    pub tacit_from: NaiveDate,
    /// Calendar days from today to `last_day` (negative once past).
    pub days_left: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub stage: Stage,
    /// The receipt events that count (accepted or being sent), in order.
    pub done: Vec<EventKind>,
    /// The receipt events that may be registered today.
    pub possible: Vec<EventKind>,
    /// The window while the buyer's answer is open.
    pub deadline: Option<Deadline>,
}

impl Standing {
    /// The window's last day is `within` days away or less, and not past.
    pub fn due_within(&self, within: i64) -> bool {
        self.deadline
            .is_some_and(|d| (0..=within).contains(&d.days_left))
    }
}

/// Where `t` stands on `today` (Colombia).
pub fn standing(t: &ReceivedInvoice, today: NaiveDate) -> Standing {
    let done = counted(t);
    let outcome = done.iter().copied().find(|k| k.is_outcome());
    let stage = match outcome {
        Some(k) => Stage::Settled(k),
        None if done.contains(&EventKind::GoodsReceipt) => Stage::AwaitingOutcome,
        None if done.contains(&EventKind::Acknowledgement) => Stage::AwaitingGoodsReceipt,
        None => Stage::AwaitingAcknowledgement,
    };
    let possible = RECEIPT_ORDER
        .into_iter()
        .filter(|k| {
            order::check(&done, *k).is_ok() && register::within_window(t, *k, today).is_ok()
        })
        .collect();
    let deadline = (stage == Stage::AwaitingOutcome)
        .then(|| receipt_date(t))
        .flatten()
        .map(|receipt| {
            let last_day = claim_window_last_day(receipt);
            Deadline {
                receipt,
                last_day,
                tacit_from: tacit_acceptance_from(receipt),
                days_left: (last_day - today).num_days(),
            }
        });
    Standing {
        stage,
        done: done
            .into_iter()
            .filter(|k| RECEIPT_ORDER.contains(k))
            .collect(),
        possible,
        deadline,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{FixedOffset, TimeZone, Utc};
    use emisor_store::{CopyCheck, Environment, EventState, InvoiceEvent, PartyRef};

    use super::*;

    fn event(kind: EventKind, on: NaiveDate) -> InvoiceEvent {
        let offset = FixedOffset::west_opt(5 * 3600).unwrap();
        let at = offset
            .from_local_datetime(&on.and_hms_opt(10, 0, 0).unwrap())
            .unwrap();
        InvoiceEvent {
            id: 1,
            code: kind.api_code().into(),
            authority_code: kind.authority_code().into(),
            name: kind.name().into(),
            number: "1".into(),
            cude: String::new(),
            issued_at: at,
            company_id: 2,
            environment: Environment::Test,
            sender: PartyRef::default(),
            receiver: PartyRef::default(),
            state: EventState::Accepted,
            attempts: 1,
            transmission: None,
            details: serde_json::Value::Null,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    fn invoice(events: Vec<InvoiceEvent>) -> ReceivedInvoice {
        ReceivedInvoice {
            id: 1,
            version: 1,
            cufe: "c".into(),
            environment: Environment::Test,
            number: "SETP1".into(),
            type_code: "01".into(),
            issue_date: day(2026, 11, 2),
            due_date: None,
            currency: "COP".into(),
            total: "100.00".into(),
            vendor: PartyRef::default(),
            buyer: PartyRef::default(),
            holder: PartyRef::default(),
            uploaded_by: None,
            document_id: None,
            eligible: false,
            authority_copy: CopyCheck::default(),
            events,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn an_invoice_goes_through_the_legal_order() {
        let today = day(2026, 11, 24);
        let fresh = standing(&invoice(vec![]), today);
        assert_eq!(fresh.stage, Stage::AwaitingAcknowledgement);
        assert_eq!(fresh.possible, vec![EventKind::Acknowledgement]);
        assert_eq!(fresh.deadline, None);

        let acked = standing(
            &invoice(vec![event(EventKind::Acknowledgement, today)]),
            today,
        );
        assert_eq!(acked.stage, Stage::AwaitingGoodsReceipt);
        assert_eq!(acked.possible, vec![EventKind::GoodsReceipt]);

        let settled = standing(
            &invoice(vec![
                event(EventKind::Acknowledgement, today),
                event(EventKind::GoodsReceipt, today),
                event(EventKind::ExpressAcceptance, today),
            ]),
            today,
        );
        assert_eq!(settled.stage, Stage::Settled(EventKind::ExpressAcceptance));
        assert!(settled.possible.is_empty());
        assert_eq!(settled.deadline, None);
    }

    #[test]
    fn the_window_after_the_goods_receipt_is_the_calendars() {
        // 032 on Tuesday 24 Nov 2026: 031/033 through Sunday 29, 034 from
        // Monday 30 (decisions.md "Business days").
        let receipt = day(2026, 11, 24);
        let t = invoice(vec![
            event(EventKind::Acknowledgement, receipt),
            event(EventKind::GoodsReceipt, receipt),
        ]);
        let open = standing(&t, day(2026, 11, 27));
        assert_eq!(open.stage, Stage::AwaitingOutcome);
        let d = open.deadline.unwrap();
        assert_eq!(d.last_day, day(2026, 11, 29));
        assert_eq!(d.tacit_from, day(2026, 11, 30));
        assert_eq!(d.days_left, 2);
        assert!(open.due_within(3));
        assert!(!open.due_within(1));
        assert_eq!(
            open.possible,
            vec![EventKind::Claim, EventKind::ExpressAcceptance]
        );

        let closed = standing(&t, day(2026, 11, 30));
        assert_eq!(closed.deadline.unwrap().days_left, -1);
        assert!(!closed.due_within(3));
        assert_eq!(closed.possible, vec![EventKind::TacitAcceptance]);
    }
}
