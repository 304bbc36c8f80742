//! Access to the web front when the coordinator requires tokens (`grind serve` with
//! authentication): every page, API call and `/metrics` needs an admin token, sent as
//! `Authorization: Bearer <token>` (tools, `grind watch`, Prometheus' `authorization`
//! setting) or as the `grind_token` cookie (browsers). The page shown on a refused request
//! has a form that posts the token to `/login`, which checks it and answers with the cookie
//! (`HttpOnly`: scripts on the pages cannot read it; `SameSite=Strict`; `Secure` over
//! HTTPS). Without authentication the front is open, like the gRPC API.

use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use maud::{html, DOCTYPE};
use std::sync::Arc;

use crate::auth::{Authenticator, Role};

/// Where the token form posts to.
pub const LOGIN_PATH: &str = "/login";

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

/// Checks an `Authorization` value for the admin role; the refusal's reason on failure.
fn check_admin(auth: &Authenticator, authorization: Option<&str>) -> Result<(), String> {
    let mut metadata = HeaderMap::new();
    if let Some(value) = authorization.and_then(|b| HeaderValue::from_str(b).ok()) {
        metadata.insert(header::AUTHORIZATION, value);
    }
    auth.check(
        &tonic::metadata::MetadataMap::from_headers(metadata),
        Role::Admin,
    )
    .map(|_| ())
    .map_err(|status| status.message().to_string())
}

/// Middleware: lets requests with an admin token through, refuses the others (401, with the
/// token form); answers the form's posts to [`LOGIN_PATH`].
pub async fn require_admin(
    State(auth): State<Arc<Authenticator>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::POST && request.uri().path() == LOGIN_PATH {
        return login(&auth, request).await;
    }
    match check_admin(&auth, bearer(request.headers()).as_deref()) {
        Ok(()) => next.run(request).await,
        Err(reason) => {
            let here = request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string();
            refused(StatusCode::UNAUTHORIZED, &reason, &here)
        }
    }
}

/// The token form's fields.
#[derive(serde::Deserialize)]
struct LoginForm {
    token: String,
    #[serde(default)]
    next: String,
}

/// Checks the posted token; sets the cookie and sends the browser back where it was.
async fn login(auth: &Authenticator, request: Request) -> Response {
    let https = request.uri().scheme_str() == Some("https")
        || request
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok())
            .is_some_and(|o| o.starts_with("https://"));
    let form = match Form::<LoginForm>::from_request(request, &()).await {
        Ok(Form(form)) => form,
        Err(e) => return refused(StatusCode::BAD_REQUEST, &e.body_text(), "/"),
    };
    let next = local_path(&form.next);
    let token = form.token.trim();
    if let Err(reason) = check_admin(auth, Some(&format!("Bearer {token}"))) {
        return refused(StatusCode::UNAUTHORIZED, &reason, next);
    }
    let cookie = format!(
        "grind_token={token}; Path=/; HttpOnly; SameSite=Strict{}",
        if https { "; Secure" } else { "" }
    );
    match HeaderValue::from_str(&cookie) {
        Ok(cookie) => (
            StatusCode::SEE_OTHER,
            [
                (
                    header::LOCATION,
                    HeaderValue::from_str(next).unwrap_or(HeaderValue::from_static("/")),
                ),
                (header::SET_COOKIE, cookie),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response(),
        Err(_) => refused(
            StatusCode::BAD_REQUEST,
            "the token has characters a cookie cannot hold",
            next,
        ),
    }
}

/// `next` when it is a path on this site, else `/` (the form cannot send a browser elsewhere).
fn local_path(next: &str) -> &str {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control);
    if local {
        next
    } else {
        "/"
    }
}

/// The token form, with why the request was refused; it returns the browser to `here`.
fn refused(code: StatusCode, reason: &str, here: &str) -> Response {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "grind: token needed" }
            }
            body {
                h1 { "grind" }
                p { "This coordinator needs an admin token (" (reason) ")." }
                form method="post" action=(LOGIN_PATH) {
                    input type="hidden" name="next" value=(here);
                    p { label { "Admin token " input name="token" type="password" autocomplete="off" placeholder="grind_..." required; } }
                    p { button { "Open" } }
                }
                p { "The token is kept by this browser as a cookie for this site, out of reach of scripts." }
            }
        }
    };
    (
        code,
        [(header::CACHE_CONTROL, "no-store")],
        Html(page.into_string()),
    )
        .into_response()
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

    #[test]
    fn login_returns_only_to_local_paths() {
        assert_eq!(local_path("/campaigns/3?x=1"), "/campaigns/3?x=1");
        for outside in [
            "https://evil.example/",
            "//evil.example/",
            "/\\evil",
            "",
            "x",
        ] {
            assert_eq!(local_path(outside), "/", "{outside:?}");
        }
    }
}
