//! OTLP/HTTP: `POST /v1/traces` and `POST /v1/metrics` with protobuf bodies, one request per
//! connection at a time (the hand-written HTTP/1.1 of the mock server).

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::{Inbox, OtlpRequest, Transport};
use crate::http::{read_request, response_head, ReadError};
use crate::reply::Framing;

pub(super) async fn serve(listener: TcpListener, inbox: Inbox) {
    while let Ok((mut stream, _)) = listener.accept().await {
        let inbox = inbox.clone();
        tokio::spawn(async move { while answer(&mut stream, &inbox).await {} });
    }
}

/// Answers one request; whether the connection stays open.
async fn answer(stream: &mut TcpStream, inbox: &Inbox) -> bool {
    let request = match read_request(stream).await {
        Ok(request) => request,
        Err(ReadError::Closed) => return false,
        Err(ReadError::Bad(status, message)) => {
            write(stream, status, "text/plain", message.as_bytes()).await;
            return false;
        }
    };
    let signal = match (request.method.as_str(), request.path()) {
        ("POST", "/v1/traces") => "traces",
        ("POST", "/v1/metrics") => "metrics",
        _ => {
            write(stream, 404, "text/plain", b"not an OTLP path").await;
            return true;
        }
    };
    let content_type = request
        .headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .map(|(_, v)| v.as_str());
    if content_type != Some("application/x-protobuf") {
        write(
            stream,
            415,
            "text/plain",
            b"only application/x-protobuf bodies are accepted",
        )
        .await;
        return true;
    }
    let received = OtlpRequest {
        transport: Transport::Http,
        signal,
        headers: request.headers,
        body: request.body,
    };
    match inbox.take(received) {
        // An empty Export…ServiceResponse is zero bytes of protobuf.
        Ok(()) => write(stream, 200, "application/x-protobuf", b"").await,
        Err(message) => write(stream, 400, "text/plain", message.as_bytes()).await,
    }
    true
}

async fn write(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) {
    let headers = [("content-type".to_owned(), content_type.to_owned())];
    let head = response_head(status, &headers, Framing::Length, body.len(), true);
    let _ = stream.write_all(&head).await;
    let _ = stream.write_all(body).await;
}
