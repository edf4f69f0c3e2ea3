//! Extractors that parse what a route takes from its path and query string once, before the
//! handler runs: a value that does not parse is a 400 `invalid-request` (declared for every such
//! route in the OpenAPI document by `openapi::declare_refusals`), never a check in a handler.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::problem::ApiError;

/// A route's one path parameter, a UUID.
pub struct Id(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Id, ApiError> {
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        parse_id(&text).map(Id)
    }
}

/// A route's query parameters, deserialized into `T`.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params<T>, ApiError> {
        let Query(params) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        Ok(Params(params))
    }
}

/// A UUID, or a 400 naming the text that is not one.
pub fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::BadRequest(format!("{text:?} is not a UUID")))
}
