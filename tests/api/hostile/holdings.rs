//! What the server holds, before and after.

use super::*;

pub(super) fn data(res: reqwest::blocking::Response) -> Value {
    let (status, body) = json(res);
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// Numbering (next number by prefix), subscription usage and customers.
#[derive(Debug, PartialEq)]
pub(super) struct Holdings {
    pub(super) next: BTreeMap<String, u64>,
    pub(super) used: u64,
    pub(super) customers: BTreeSet<String>,
}

pub(super) fn holdings(app: &TestApp) -> Holdings {
    let key = app.sk_test();
    let next = (1..=10)
        .map(|tipo| {
            let d = data(app.get(&format!("/v1/api/facturacion/consecutivo/{tipo}"), &key));
            (
                d["prefijo"].as_str().unwrap().to_string(),
                d["siguiente"].as_u64().unwrap(),
            )
        })
        .collect();
    let used = data(app.get("/v1/api/facturacion/suscripcion", &key))["usados"]
        .as_u64()
        .unwrap();
    let mut customers = BTreeSet::new();
    for page in 1.. {
        let d = data(app.get(&format!("/v1/api/clientes?limit=100&page={page}"), &key));
        let items = d["items"].as_array().unwrap();
        customers.extend(
            items
                .iter()
                .map(|c| c["identification_number"].as_str().unwrap().to_string()),
        );
        if items.len() < 100 {
            break;
        }
    }
    Holdings {
        next,
        used,
        customers,
    }
}

/// What accepted requests legitimately changed.
#[derive(Default)]
pub(super) struct Accepted {
    /// Numbers of the accepted documents, by prefix.
    pub(super) numbers: BTreeMap<String, Vec<u64>>,
    pub(super) documents: u64,
    /// Identification numbers of customers written.
    pub(super) customers: BTreeSet<String>,
}

impl Accepted {
    pub(super) fn document(&mut self, sent: &str, a: &Answer) {
        let data = &a.body.as_ref().expect("accepted document answers JSON")["data"];
        // The unified answer nests the record in `documento`; the Spanish
        // one is flat.
        let d = if data["documento"].is_object() {
            &data["documento"]
        } else {
            data
        };
        let prefix = d["prefijo"].as_str().expect("prefijo").to_string();
        let number = d["numero"]
            .as_str()
            .and_then(|n| n.parse().ok())
            .expect("numero");
        self.numbers.entry(prefix).or_default().push(number);
        self.documents += 1;
        // The server parsed it, so it is JSON.
        if let Ok(body) = serde_json::from_str::<Value>(sent) {
            if let Some(id) = body["customer"]["identification_number"].as_str() {
                self.customers.insert(id.trim().to_string());
            }
            if let Some(id) = spanish_customer(&body) {
                self.customers.insert(id);
            }
        }
    }

    pub(super) fn customer(&mut self, a: &Answer) {
        let d = &a.body.as_ref().expect("accepted customer answers JSON")["data"];
        if let Some(id) = d["identification_number"].as_str() {
            self.customers.insert(id.to_string());
        }
    }

    /// Everything `after` differs from `before` by, explained.
    pub(super) fn explains(&self, before: &Holdings, after: &Holdings) -> Vec<String> {
        let mut problems = Vec::new();
        for (prefix, numbers) in &self.numbers {
            if !before.next.contains_key(prefix) {
                problems.push(format!(
                    "documents accepted with unknown prefix {prefix}: {numbers:?}"
                ));
            }
        }
        for (prefix, from) in &before.next {
            let to = after.next[prefix];
            let mut got = self.numbers.get(prefix).cloned().unwrap_or_default();
            got.sort_unstable();
            let expected: Vec<u64> = (*from..to).collect();
            if got != expected {
                problems.push(format!(
                    "{prefix}: numbering went from {from} to {to}, accepted documents have {got:?}"
                ));
            }
        }
        if after.used != before.used + self.documents {
            problems.push(format!(
                "subscription usage went from {} to {}, {} documents accepted",
                before.used, after.used, self.documents
            ));
        }
        let expected: BTreeSet<String> = before.customers.union(&self.customers).cloned().collect();
        if after.customers != expected {
            problems.push(format!(
                "customers: {:?} appeared, {:?} expected",
                after
                    .customers
                    .difference(&before.customers)
                    .collect::<Vec<_>>(),
                self.customers
                    .difference(&before.customers)
                    .collect::<Vec<_>>()
            ));
        }
        problems
    }
}
