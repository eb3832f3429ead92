//! Sending and checking.

use super::*;

/// What came back.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Option<Value>,
}

impl Answer {
    pub(super) fn accepted(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends the requests, checks every answer, and keeps the tally.
pub(super) struct Probe<'a> {
    pub(super) app: &'a TestApp,
    pub(super) key: String,
    pub(super) sent: usize,
    pub(super) by_status: BTreeMap<u16, usize>,
    /// Requests sent when each section started.
    pub(super) sections: Vec<(&'static str, usize)>,
    pub(super) failures: Vec<String>,
}

impl<'a> Probe<'a> {
    pub(super) fn new(app: &'a TestApp) -> Self {
        Probe {
            app,
            key: app.sk_test(),
            sent: 0,
            by_status: BTreeMap::new(),
            sections: Vec::new(),
            failures: Vec::new(),
        }
    }

    pub(super) fn section(&mut self, name: &'static str) {
        self.sections.push((name, self.sent));
    }

    /// `facturacion 1234, clientes 56 …`
    pub(super) fn tally(&self) -> String {
        let ends = self.sections.iter().skip(1).map(|s| s.1).chain([self.sent]);
        self.sections
            .iter()
            .zip(ends)
            .map(|((name, start), end)| format!("{name} {}", end - start))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn fail(&mut self, what: &str, why: String) {
        self.failures.push(format!("{what}: {why}"));
    }

    /// Sends and checks: no 5xx, every error in the envelope.
    pub(super) fn send(&mut self, what: &str, req: RequestBuilder) -> Answer {
        self.sent += 1;
        let res = match req.send() {
            Ok(r) => r,
            Err(e) => {
                self.fail(what, format!("no answer: {e}"));
                return Answer {
                    status: 0,
                    body: None,
                };
            }
        };
        let status = res.status().as_u16();
        *self.by_status.entry(status).or_default() += 1;
        let text = res.text().unwrap_or_default();
        let body: Option<Value> = serde_json::from_str(&text).ok();
        if status >= 500 {
            self.fail(what, format!("{status}: {}", abbreviate(&text)));
        } else if status >= 400 {
            let envelope = body.as_ref().is_some_and(|b| {
                b["success"] == false
                    && b["error"]["code"].as_str().is_some_and(|c| !c.is_empty())
                    && b["message"].as_str().is_some_and(|m| !m.is_empty())
            });
            if !envelope {
                self.fail(
                    what,
                    format!("{status} not in the envelope: {}", abbreviate(&text)),
                );
            }
        }
        Answer { status, body }
    }

    /// A request that must have been refused.
    pub(super) fn refused(&mut self, what: &str, a: &Answer, must: bool) {
        if must && a.accepted() {
            self.fail(what, format!("accepted ({}): a 4xx was due", a.status));
        }
    }

    /// The answer to a mutated body: refused when it must be, and a key
    /// given twice refused as malformed JSON naming the key.
    pub(super) fn judged(&mut self, what: &str, a: &Answer, m: &Mutation) {
        self.refused(what, a, m.must_refuse);
        if let Some(key) = &m.duplicate {
            let body = a.body.clone().unwrap_or_default();
            let named = body["message"]
                .as_str()
                .is_some_and(|msg| msg.contains(&format!("duplicate key `{key}`")));
            if a.status != 400 || body["error"]["code"] != "MALFORMED_JSON" || !named {
                self.fail(
                    what,
                    format!("{}: {body}, not MALFORMED_JSON naming `{key}`", a.status),
                );
            }
        }
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.app.url)
    }

    /// A request with credentials: the admin token, or the API key.
    pub(super) fn request(&self, method: Method, path: &str, admin: bool) -> RequestBuilder {
        let req = self.app.client.request(method, self.url(path));
        if admin {
            req.bearer_auth(self.app.admin_token())
        } else {
            req.header("X-Api-Key", &self.key)
        }
    }

    /// A keyed request.
    pub(super) fn keyed(
        &mut self,
        method: Method,
        path: &str,
        ct: Option<&str>,
        body: Vec<u8>,
    ) -> Answer {
        let what = format!(
            "{method} {path} [{}]",
            abbreviate(&String::from_utf8_lossy(&body))
        );
        let mut req = self.request(method, path, false);
        if let Some(ct) = ct {
            req = req.header("Content-Type", ct);
        }
        self.send(&what, req.body(body))
    }

    pub(super) fn get(&mut self, path: &str) -> Answer {
        self.keyed(Method::GET, path, None, Vec::new())
    }

    pub(super) fn post_json(&mut self, path: &str, what: &str, body: impl Into<Vec<u8>>) -> Answer {
        let req = self
            .request(Method::POST, path, false)
            .header("Content-Type", "application/json")
            .body(body.into());
        self.send(&format!("POST {path} {what}"), req)
    }

    /// An admin request.
    pub(super) fn admin(
        &mut self,
        method: Method,
        path: &str,
        what: &str,
        body: impl Into<Vec<u8>>,
    ) -> Answer {
        let what = format!("{method} {path} {what}");
        let req = self
            .request(method, path, true)
            .header("Content-Type", "application/json")
            .body(body.into());
        self.send(&what, req)
    }

    /// A JSON endpoint fed every whole-body attack, the wrong content types
    /// and an over-1-MiB body streamed without a length. `valid` makes a
    /// fresh valid body (unique where that matters); `on_accept` sees every
    /// accepted request's body and answer.
    pub(super) fn body_attacks(
        &mut self,
        method: Method,
        path: &str,
        admin: bool,
        valid: &mut dyn FnMut() -> String,
        on_accept: &mut dyn FnMut(&str, &Answer),
    ) {
        let sample = valid();
        for attack in body_attacks(&sample) {
            let what = format!("{method} {path} {}", attack.what);
            let req = self
                .request(method.clone(), path, admin)
                .header("Content-Type", "application/json")
                .body(attack.body.clone());
            let a = self.send(&what, req);
            self.refused(&what, &a, attack.must_refuse);
            if a.accepted() {
                on_accept(&String::from_utf8_lossy(&attack.body), &a);
            }
        }
        // The content type is not looked at: JSON is JSON, and not-JSON is
        // refused whatever it claims to be.
        for ct in WRONG_CONTENT_TYPES {
            for body in [valid(), "{".to_string()] {
                let what = format!("{method} {path} content type {ct:?}: {body:.20}");
                let mut req = self.request(method.clone(), path, admin);
                if let Some(ct) = ct {
                    req = req.header("Content-Type", ct);
                }
                let a = self.send(&what, req.body(body.clone()));
                self.refused(&what, &a, body == "{");
                if a.accepted() {
                    on_accept(&body, &a);
                }
            }
        }
        // Chunked: no Content-Length to refuse up front.
        let big = format!(r#"{{"pad":"{}",{}"#, "x".repeat(1_100_000), &sample[1..]);
        let req = self
            .request(method.clone(), path, admin)
            .header("Content-Type", "application/json")
            .body(Body::new(std::io::Cursor::new(big.into_bytes())));
        let what = format!("{method} {path} chunked over 1 MiB");
        let a = self.send(&what, req);
        if a.status != 413 && a.status != 0 {
            self.fail(&what, format!("answered {}, not 413", a.status));
        }
    }
}
