//! Access to the web front when the coordinator requires tokens (`grind serve` with
//! authentication): every page, API call and `/metrics` needs an admin token, sent as
//! `Authorization: Bearer <token>` (tools, `grind watch`, Prometheus' `authorization`
//! setting) or as the `grind_token` cookie (browsers: the page shown on a refused request
//! sets it from a form, in the browser only). Without authentication the front is open, like
//! the gRPC API.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use std::sync::Arc;

use crate::auth::{Authenticator, Role};

/// The bearer token of a request: its `Authorization` header, else its `grind_token` cookie.
fn bearer(headers: &HeaderMap) -> Option<String> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        return value.to_str().ok().map(str::to_string);
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("grind_token="))
        .map(|token| format!("Bearer {token}"))
}

/// Middleware: lets requests with an admin token through, refuses the others (401).
pub async fn require_admin(
    State(auth): State<Arc<Authenticator>>,
    request: Request,
    next: Next,
) -> Response {
    let mut metadata = HeaderMap::new();
    if let Some(value) = bearer(request.headers()).and_then(|b| HeaderValue::from_str(&b).ok()) {
        metadata.insert(header::AUTHORIZATION, value);
    }
    match auth.check(
        &tonic::metadata::MetadataMap::from_headers(metadata),
        Role::Admin,
    ) {
        Ok(_) => next.run(request).await,
        Err(status) => (
            StatusCode::UNAUTHORIZED,
            [(header::CACHE_CONTROL, "no-store")],
            Html(login_page(status.message())),
        )
            .into_response(),
    }
}

fn login_page(reason: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>grind: token needed</title></head>\
         <body style=\"font:16px system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem\">\
         <h1>grind</h1><p>This coordinator needs an admin token ({}).</p>\
         <form onsubmit=\"document.cookie='grind_token='+encodeURIComponent(this.t.value.trim())+\
         ';path=/;SameSite=Strict'+(location.protocol==='https:'?';Secure':'');location.reload();return false\">\
         <input name=\"t\" type=\"password\" autocomplete=\"off\" placeholder=\"grind_...\" \
         style=\"width:100%;padding:.5rem;font-size:1rem\"><p><button>Open</button></p></form>\
         <p style=\"color:#5f6b76\">The token stays in this browser (a cookie for this site).</p>\
         </body></html>",
        super::html::esc(reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_header_then_the_cookie() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; grind_token=grind_x"),
        );
        assert_eq!(bearer(&h).as_deref(), Some("Bearer grind_x"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer grind_y"),
        );
        assert_eq!(bearer(&h).as_deref(), Some("Bearer grind_y"));
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
