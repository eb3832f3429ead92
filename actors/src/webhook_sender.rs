//! Webhook sender: POSTs signed JSON to a company's URL. It owns the HTTP
//! client (awc is not `Send`, so it lives on this actor's arbiter); callers
//! send a [`Deliver`] and get the status or the error back. Signing,
//! retries and the delivery log are the caller's.

use std::time::Duration;

use actix::{Actor, Context, Handler, Message, MessageResult, ResponseFuture};

use crate::{Ping, Pong};

#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<u16, String>")]
pub struct Deliver {
    pub url: String,
    pub body: Vec<u8>,
    /// Extra headers (the signature, the event name).
    pub headers: Vec<(String, String)>,
}

pub struct WebhookSender {
    client: awc::Client,
}

impl WebhookSender {
    pub fn new(timeout: Duration) -> Self {
        WebhookSender {
            client: awc::Client::builder().timeout(timeout).finish(),
        }
    }
}

impl Actor for WebhookSender {
    type Context = Context<Self>;
}

impl Handler<Deliver> for WebhookSender {
    type Result = ResponseFuture<Result<u16, String>>;

    fn handle(&mut self, d: Deliver, _: &mut Context<Self>) -> Self::Result {
        let mut req = self
            .client
            .post(&d.url)
            .insert_header(("Content-Type", "application/json"))
            .insert_header(("User-Agent", "emisor-webhooks/1"));
        for (k, v) in &d.headers {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        let fut = req.send_body(d.body);
        Box::pin(async move {
            match fut.await {
                Ok(res) => Ok(res.status().as_u16()),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}

impl Handler<Ping> for WebhookSender {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}
