//! A small HTTP/1.1 client for the web UI and API (pages, JSON, metrics, live events).

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// An answer: status, content type, headers and body text.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Answer {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

fn client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// GETs `base` + `path` (base like `http://127.0.0.1:1234`), with a 30 s limit.
pub async fn get(base: &str, path: &str) -> Answer {
    get_with(base, path, &[]).await
}

/// GETs `base` + `path` with extra request headers, with a 30 s limit.
pub async fn get_with(base: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = http::Request::get(format!("{base}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Empty::new()).expect("valid request");
    let fetch = async {
        let response = client().request(request).await.expect("HTTP GET");
        answer(response).await
    };
    tokio::time::timeout(Duration::from_secs(30), fetch)
        .await
        .unwrap_or_else(|_| panic!("GET {path} timed out"))
}

/// POSTs an `application/x-www-form-urlencoded` body (as a browser's form does, with its
/// `Origin`), with a 30 s limit.
pub async fn post_form(base: &str, path: &str, form: &str) -> Answer {
    let request = http::Request::post(format!("{base}{path}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", base)
        .body(Full::new(Bytes::from(form.to_string())))
        .expect("valid request");
    let client = Client::builder(TokioExecutor::new()).build_http();
    let send = async {
        let response = client.request(request).await.expect("HTTP POST");
        answer(response).await
    };
    tokio::time::timeout(Duration::from_secs(30), send)
        .await
        .unwrap_or_else(|_| panic!("POST {path} timed out"))
}

async fn answer<B>(response: http::Response<B>) -> Answer
where
    B: BodyExt,
    B::Error: std::fmt::Debug,
{
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    Answer {
        status,
        content_type,
        headers,
        body: String::from_utf8(body.to_vec()).expect("UTF-8 body"),
    }
}

/// Opens a streaming GET and returns the text received until `until` holds on it (or panics
/// after `timeout`).
pub async fn stream_until(
    base: &str,
    path: &str,
    timeout: Duration,
    until: impl Fn(&str) -> bool,
) -> String {
    let uri: http::Uri = format!("{base}{path}").parse().expect("valid URI");
    let read = async {
        let mut body = client().get(uri).await.expect("HTTP GET").into_body();
        let mut text = String::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("frame").into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
                if until(&text) {
                    return text;
                }
            }
        }
        panic!("stream ended before the condition held: {text}");
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or_else(|_| panic!("timed out reading {path}"))
}
