//! The authority's web-service operations (protocol.md §4.2).

/// Target namespace of the service (`wcf` prefix).
pub const WCF_NS: &str = "http://wcf.dian.colombia";
/// Action URIs are this prefix followed by the operation name.
pub const ACTION_PREFIX: &str = "http://wcf.dian.colombia/IWcfDianCustomerServices/";

/// The operations this service implements (client and simulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Operation {
    SendBillSync,
    SendBillAsync,
    SendTestSetAsync,
    GetStatus,
    GetStatusZip,
    SendNominaSync,
    SendEventUpdateStatus,
    GetNumberingRange,
    /// The signed XML of an accepted document, by its code.
    GetXmlByDocumentKey,
    /// A buyer's registered name and email, by identification (Res.
    /// 000202/2025).
    GetAcquirer,
    /// The events registered on an invoice, by its CUFE.
    GetStatusEvent,
}

impl Operation {
    pub const ALL: [Operation; 11] = [
        Operation::SendBillSync,
        Operation::SendBillAsync,
        Operation::SendTestSetAsync,
        Operation::GetStatus,
        Operation::GetStatusZip,
        Operation::SendNominaSync,
        Operation::SendEventUpdateStatus,
        Operation::GetNumberingRange,
        Operation::GetXmlByDocumentKey,
        Operation::GetAcquirer,
        Operation::GetStatusEvent,
    ];

    /// The operation's name, also the local name of its request element.
    pub fn name(self) -> &'static str {
        match self {
            Operation::SendBillSync => "SendBillSync",
            Operation::SendBillAsync => "SendBillAsync",
            Operation::SendTestSetAsync => "SendTestSetAsync",
            Operation::GetStatus => "GetStatus",
            Operation::GetStatusZip => "GetStatusZip",
            Operation::SendNominaSync => "SendNominaSync",
            Operation::SendEventUpdateStatus => "SendEventUpdateStatus",
            Operation::GetNumberingRange => "GetNumberingRange",
            Operation::GetXmlByDocumentKey => "GetXmlByDocumentKey",
            Operation::GetAcquirer => "GetAcquirer",
            Operation::GetStatusEvent => "GetStatusEvent",
        }
    }

    /// Request parameters, in order (protocol.md §4.2).
    pub fn parameters(self) -> &'static [&'static str] {
        match self {
            Operation::SendBillSync | Operation::SendBillAsync => &["fileName", "contentFile"],
            Operation::SendTestSetAsync => &["fileName", "contentFile", "testSetId"],
            Operation::GetStatus
            | Operation::GetStatusZip
            | Operation::GetXmlByDocumentKey
            | Operation::GetStatusEvent => &["trackId"],
            Operation::SendNominaSync | Operation::SendEventUpdateStatus => &["contentFile"],
            Operation::GetNumberingRange => &["accountCode", "accountCodeT", "softwareCode"],
            Operation::GetAcquirer => &["identificationType", "identificationNumber"],
        }
    }

    /// Whether the request carries a ZIP `fileName`.
    pub fn has_file_name(self) -> bool {
        self.parameters().contains(&"fileName")
    }

    /// Whether the request carries a ZIP at all.
    pub fn carries_zip(self) -> bool {
        self.parameters().contains(&"contentFile")
    }

    /// Synchronous document operations accept exactly one XML in the ZIP.
    pub fn is_sync_send(self) -> bool {
        matches!(
            self,
            Operation::SendBillSync | Operation::SendNominaSync | Operation::SendEventUpdateStatus
        )
    }

    pub fn action(self) -> String {
        format!("{ACTION_PREFIX}{}", self.name())
    }

    pub fn response_action(self) -> String {
        format!("{ACTION_PREFIX}{}Response", self.name())
    }

    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.name() == name)
    }

    pub fn from_action(action: &str) -> Option<Operation> {
        action
            .strip_prefix(ACTION_PREFIX)
            .and_then(Operation::from_name)
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip() {
        for op in Operation::ALL {
            assert_eq!(Operation::from_action(&op.action()), Some(op));
            assert!(op.response_action().ends_with("Response"));
        }
        assert_eq!(
            Operation::SendBillSync.action(),
            "http://wcf.dian.colombia/IWcfDianCustomerServices/SendBillSync"
        );
        assert_eq!(Operation::from_action("http://x/SendBillSync"), None);
    }
}
