//! The one shape of HTTP-level errors: a status code and `{"message": "..."}`.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// An HTTP-level error answer (the request was not an AdmissionReview scion
/// could answer at the AdmissionReview level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "message": self.message }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}
