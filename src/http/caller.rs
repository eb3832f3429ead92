//! Who is calling: the context an authenticated API key gives a request
//! (its company, environment and user), held by the key cache of the state
//! and taken by handlers as an extractor.

use std::future::{ready, Ready};

use actix_web::{FromRequest, HttpMessage, HttpRequest};
use emisor_store::{CompanyId, Environment};

use super::error::ApiError;
use crate::issuing::issue::Caller;

/// Who is calling, derived from the key.
#[derive(Debug, Clone)]
pub struct AuthContext {
    pub key_id: u64,
    pub company_id: CompanyId,
    pub company_name: String,
    pub nit: String,
    pub environment: Environment,
    pub user_id: Option<u64>,
    /// Requests per minute for this key.
    pub rate_limit: u32,
}

impl AuthContext {
    /// The key's company, environment and user, for issuing.
    pub fn caller(&self) -> Caller {
        Caller {
            company: self.company_id,
            environment: self.environment,
            user: self.user_id,
        }
    }

    /// The key's company and environment: what its documents belong to.
    pub fn owner(&self) -> (CompanyId, Environment) {
        (self.company_id, self.environment)
    }

    /// `doc` is of the key's company and environment.
    pub fn owns(&self, doc: &emisor_store::DocumentRecord) -> bool {
        doc.belongs_to(self.company_id, self.environment)
    }

    /// 403 unless `id_empresa` is the key's own company.
    pub fn ensure_company(&self, id_empresa: CompanyId) -> Result<(), ApiError> {
        if id_empresa == self.company_id {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "id_empresa {id_empresa} is not the company of this API key"
            )))
        }
    }
}

impl FromRequest for AuthContext {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(
            req.extensions()
                .get::<AuthContext>()
                .cloned()
                .ok_or(ApiError::InvalidApiKey),
        )
    }
}
