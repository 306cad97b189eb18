//! A tiny HTTP/1.1 server on 127.0.0.1 for the provider runs: records each request (head and
//! JSON body) and answers with what the handler returns, whole or in pieces. (The adapter
//! crates' tests carry a fuller copy with hanging replies for their cancel tests.)

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
    /// Status and content type, then each piece written and flushed on its own; the body ends
    /// when the connection closes.
    Pieces {
        status: u16,
        content_type: &'static str,
        pieces: Vec<Vec<u8>>,
    },
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Self {
        Reply::Pieces {
            status,
            content_type: "application/json",
            pieces: vec![body.to_string().into_bytes()],
        }
    }

    /// A server-sent-events body cut into the given pieces.
    pub fn sse(pieces: Vec<String>) -> Self {
        Reply::Pieces {
            status: 200,
            content_type: "text/event-stream",
            pieces: pieces.into_iter().map(String::into_bytes).collect(),
        }
    }
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

pub struct TestServer {
    addr: SocketAddr,
    requests: mpsc::UnboundedReceiver<Recorded>,
}

impl TestServer {
    /// Starts serving; `handler` gets each request and its 0-based number. Connections are
    /// served concurrently (delegated agents call the model at the same time).
    pub async fn start(
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (request_tx, requests) = mpsc::unbounded_channel();
        let handler: Arc<Handler> = Arc::new(handler);
        let counter = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = handler.clone();
                let request_tx = request_tx.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    serve(stream, handler, counter, request_tx).await;
                });
            }
        });
        Self { addr, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next request the server received.
    pub async fn next_request(&mut self) -> Recorded {
        self.requests.recv().await.unwrap()
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Arc<Handler>,
    counter: Arc<AtomicUsize>,
    request_tx: mpsc::UnboundedSender<Recorded>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let number = counter.fetch_add(1, Ordering::SeqCst);
    let Reply::Pieces {
        status,
        content_type,
        pieces,
    } = handler(&request, number);
    let _ = request_tx.send(request);
    let head = format!(
        "HTTP/1.1 {status} Status\r\nconnection: close\r\ncontent-type: {content_type}\r\n\r\n"
    );
    let _ = stream.write_all(head.as_bytes()).await;
    for piece in pieces {
        if stream.write_all(&piece).await.is_err() {
            return;
        }
        let _ = stream.flush().await;
        tokio::task::yield_now().await;
    }
    let _ = stream.shutdown().await;
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
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
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
        path,
        headers,
        body,
    })
}
