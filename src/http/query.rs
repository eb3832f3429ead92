//! Query strings: our own extractor so a bad parameter is a 422 naming it,
//! in the envelope.

use std::future::{ready, Ready};

use actix_web::{FromRequest, HttpRequest};
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct Query<T>(pub T);

impl<T> std::ops::Deref for Query<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(parse(req.query_string()).map(Query))
    }
}

pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if let Some(field) = inner
            .strip_prefix("missing field `")
            .and_then(|r| r.strip_suffix('`'))
        {
            ApiError::validation(field, "is required")
        } else {
            let field = if path.is_empty() || path == "." {
                "query".into()
            } else {
                path
            };
            ApiError::validation(field, format!("invalid value: {inner}"))
        }
    })
}

fn form_urlencoded_parse(q: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(q.as_bytes())
}

/// Paging of every list (decisions.md §4): page ≥ 1, 1 ≤ limit ≤ 100.
pub fn paging(page: Option<u32>, limit: Option<u32>) -> Result<(u32, u32), ApiError> {
    let page = page.unwrap_or(1);
    let limit = limit.unwrap_or(20);
    if page == 0 {
        return Err(ApiError::validation("page", "must be at least 1"));
    }
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation("limit", "must be between 1 and 100"));
    }
    Ok((page, limit))
}

/// The query of a plain paged list (received invoices, eligible invoices):
/// `page`, `limit` and the caller's `id_empresa`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct PageQuery {
    pub page: Option<u32>,
    pub limit: Option<u32>,
    pub id_empresa: Option<u64>,
}

/// The query of every document list (decisions.md §4): `page` (default 1),
/// `limit` (default 20, at most 100), issue dates `fecha_desde` and
/// `fecha_hasta` (`YYYY-MM-DD`, Colombia time, inclusive) and `estado`.
/// A family's own filters (`proveedor`, `id_caja`…) and `id_empresa` come
/// from a second extractor on the same query string.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page number, from 1 (default 1).
    pub page: Option<u32>,
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// First issue date, `YYYY-MM-DD` (Colombia time), inclusive.
    pub fecha_desde: Option<String>,
    /// Last issue date, `YYYY-MM-DD` (Colombia time), inclusive.
    pub fecha_hasta: Option<String>,
    /// State id `1`-`6` (spec 3.1), or several separated by commas.
    pub estado: Option<String>,
}

impl ListParams {
    fn date(field: &str, value: Option<&str>) -> Result<Option<chrono::NaiveDate>, ApiError> {
        value
            .filter(|v| !v.is_empty())
            .map(|v| {
                chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                    .map_err(|_| ApiError::validation(field, "must be a date YYYY-MM-DD"))
            })
            .transpose()
    }

    /// The issue-date range, checked (`fecha_desde` not after `fecha_hasta`).
    pub fn dates(
        &self,
    ) -> Result<(Option<chrono::NaiveDate>, Option<chrono::NaiveDate>), ApiError> {
        let from = Self::date("fecha_desde", self.fecha_desde.as_deref())?;
        let to = Self::date("fecha_hasta", self.fecha_hasta.as_deref())?;
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err(ApiError::validation(
                    "fecha_desde",
                    "must not be after fecha_hasta",
                ));
            }
        }
        Ok((from, to))
    }

    /// `estado` as state ids 1-6 (empty: every state). Families whose
    /// states have names (payroll) read `estado` themselves.
    pub fn states(&self) -> Result<Vec<u8>, ApiError> {
        let Some(estado) = self.estado.as_deref().filter(|e| !e.is_empty()) else {
            return Ok(Vec::new());
        };
        estado
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|n| (1..=6).contains(n))
                    .ok_or_else(|| {
                        ApiError::validation(
                            "estado",
                            "must be a state id 1-6 (or several, comma separated)",
                        )
                    })
            })
            .collect()
    }

    /// The store's query for the key's company and environment, with the
    /// family's `keys` and `states` as the caller read them.
    pub fn query_with_states(
        &self,
        ctx: &super::auth::AuthContext,
        family: emisor_store::Family,
        states: Vec<u8>,
        keys: Vec<(String, String)>,
    ) -> Result<emisor_store::ListQuery, ApiError> {
        let (page, limit) = paging(self.page, self.limit)?;
        let (from, to) = self.dates()?;
        Ok(emisor_store::ListQuery {
            company_id: ctx.company_id,
            environment: ctx.environment,
            family,
            from,
            to,
            states,
            keys,
            page,
            limit,
        })
    }

    /// [`query_with_states`](Self::query_with_states) with `estado` as ids.
    pub fn query(
        &self,
        ctx: &super::auth::AuthContext,
        family: emisor_store::Family,
        keys: Vec<(String, String)>,
    ) -> Result<emisor_store::ListQuery, ApiError> {
        let states = self.states()?;
        self.query_with_states(ctx, family, states, keys)
    }
}

/// A page as every list answers it: `data: {items, page, limit, total}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

impl<T> ListPage<T> {
    /// The store's page with each item rendered by `item`.
    pub fn of<R>(page: emisor_store::Page<R>, item: impl FnMut(R) -> T) -> Self {
        ListPage {
            items: page.items.into_iter().map(item).collect(),
            page: page.page,
            limit: page.limit,
            total: page.total,
        }
    }
}
