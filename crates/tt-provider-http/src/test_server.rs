//! A tiny HTTP/1.1 server on 127.0.0.1 for provider tests: records each request (head and JSON
//! body) and answers with what the test's handler returns, whole, in pieces, or never. Shared by
//! both HTTP adapters' tests through the `test-support` feature; never in a shipped build.

// Test support: a server that cannot bind or a test that reads past the last request is a
// failed test, so unwrapping here is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status, extra headers and a body sent with `Content-Length`.
    Whole {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Status and headers, then each piece written and flushed on its own; the body ends when
    /// the connection closes, or, with `then_hang`, never (the close is reported on `closed`).
    Pieces {
        status: u16,
        headers: Vec<(String, String)>,
        pieces: Vec<Vec<u8>>,
        then_hang: bool,
    },
    /// Never answers; reports on `closed` once the client closes the connection.
    Hang,
    /// Headers, then `piece` over and over until the client goes away: a model that never
    /// stops generating.
    Forever {
        headers: Vec<(String, String)>,
        piece: Vec<u8>,
    },
    /// Headers, then `piece` every `every` until the client goes away: a server that never
    /// goes silent long enough for the idle timeout, and never finishes.
    Trickle {
        headers: Vec<(String, String)>,
        piece: Vec<u8>,
        every: std::time::Duration,
    },
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Self {
        Reply::Whole {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Whole {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Whole {
                    status,
                    headers,
                    body,
                }
            }
            Reply::Pieces {
                status,
                mut headers,
                pieces,
                then_hang,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Pieces {
                    status,
                    headers,
                    pieces,
                    then_hang,
                }
            }
            Reply::Hang => Reply::Hang,
            Reply::Forever { mut headers, piece } => {
                headers.push((name.into(), value.into()));
                Reply::Forever { headers, piece }
            }
            Reply::Trickle {
                mut headers,
                piece,
                every,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Trickle {
                    headers,
                    piece,
                    every,
                }
            }
        }
    }

    /// A server-sent-events body cut into the given pieces.
    pub fn sse(pieces: Vec<String>) -> Self {
        Reply::Pieces {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces: pieces.into_iter().map(String::into_bytes).collect(),
            then_hang: false,
        }
    }

    /// The same pieces, then the connection stays open without another byte.
    pub fn then_hang(self) -> Self {
        match self {
            Reply::Pieces {
                status,
                headers,
                pieces,
                ..
            } => Reply::Pieces {
                status,
                headers,
                pieces,
                then_hang: true,
            },
            other => other,
        }
    }
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

pub struct TestServer {
    addr: SocketAddr,
    requests: mpsc::UnboundedReceiver<Recorded>,
    closed: mpsc::UnboundedReceiver<()>,
}

impl TestServer {
    /// Starts serving; `handler` gets each request and its 0-based number.
    pub async fn start(
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (request_tx, requests) = mpsc::unbounded_channel();
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let handler: Arc<Handler> = Arc::new(handler);
        let counter = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = handler.clone();
                let request_tx = request_tx.clone();
                let closed_tx = closed_tx.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    serve(stream, handler, counter, request_tx, closed_tx).await;
                });
            }
        });
        Self {
            addr,
            requests,
            closed,
        }
    }

    /// A server whose every answer is `reply`.
    pub async fn always(reply: Reply) -> Self {
        Self::start(move |_, _| reply.clone()).await
    }

    /// A server that answers the n-th request with `replies[n]`.
    pub async fn sequence(replies: Vec<Reply>) -> Self {
        Self::start(move |_, n| replies.get(n).cloned().unwrap_or(Reply::Hang)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next request the server received.
    pub async fn next_request(&mut self) -> Recorded {
        self.requests.recv().await.unwrap()
    }

    /// Waits until a hanging connection was closed by the client.
    pub async fn client_closed(&mut self) {
        self.closed.recv().await.unwrap();
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Arc<Handler>,
    counter: Arc<AtomicUsize>,
    request_tx: mpsc::UnboundedSender<Recorded>,
    closed_tx: mpsc::UnboundedSender<()>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let number = counter.fetch_add(1, Ordering::SeqCst);
    let reply = handler(&request, number);
    let _ = request_tx.send(request);
    match reply {
        Reply::Whole {
            status,
            headers,
            body,
        } => {
            let mut head = head(status, &headers);
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
        Reply::Pieces {
            status,
            headers,
            pieces,
            then_hang,
        } => {
            let mut head = head(status, &headers);
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.flush().await;
            for piece in pieces {
                if stream.write_all(&piece).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
                tokio::task::yield_now().await;
            }
            if then_hang {
                wait_for_close(&mut stream, &closed_tx).await;
                return;
            }
        }
        Reply::Hang => {
            wait_for_close(&mut stream, &closed_tx).await;
            return;
        }
        Reply::Forever { headers, piece } => {
            repeat_until_closed(&mut stream, &headers, &piece, None, &closed_tx).await;
            return;
        }
        Reply::Trickle {
            headers,
            piece,
            every,
        } => {
            repeat_until_closed(&mut stream, &headers, &piece, Some(every), &closed_tx).await;
            return;
        }
    }
    let _ = stream.shutdown().await;
}

/// Sends a 200 head with `headers`, then `piece` again and again (every `every`, else as fast
/// as the client reads) until the client goes away, then reports it.
async fn repeat_until_closed(
    stream: &mut TcpStream,
    headers: &[(String, String)],
    piece: &[u8],
    every: Option<std::time::Duration>,
    closed_tx: &mpsc::UnboundedSender<()>,
) {
    let mut head = head(200, headers);
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    loop {
        if stream.write_all(piece).await.is_err() || stream.flush().await.is_err() {
            let _ = closed_tx.send(());
            return;
        }
        match every {
            Some(every) => tokio::time::sleep(every).await,
            None => tokio::task::yield_now().await,
        }
    }
}

/// Reads until the client closes the connection, then reports it.
async fn wait_for_close(stream: &mut TcpStream, closed_tx: &mpsc::UnboundedSender<()>) {
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = closed_tx.send(());
}

fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut head = format!("HTTP/1.1 {status} Status\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = data.windows(4).position(|window| window == b"\r\n\r\n") {
            break pos;
        }
        let read = stream.read(&mut buf).await.ok()?;
        if read == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..read]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut buf).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..read]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}
