//! A small W3C WebDriver client over HTTP/1.1 on a plain `TcpStream` (the driver listens on
//! 127.0.0.1): sessions, elements, clicks, scripts and screenshots, with waits that poll the
//! page until what they wait for shows (bounded: a hang fails, naming what never showed).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a wait polls before the test fails: a guard against a hang, not a measurement.
const PATIENCE: Duration = Duration::from_secs(120);

/// One request; tried again (up to five times) when the connection closes without an answer:
/// `tauri-driver` proxies to `WebKitWebDriver` over pooled connections, and one that went stale
/// drops the request before it is sent on (an answer, even an error, is never retried).
fn request(base: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut tries = 0;
    loop {
        match exchange(base, method, path, body) {
            Err(Dropped) if tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(Dropped) => return Err(format!("{method} {path}: no answer")),
            Ok(answer) => return answer,
        }
    }
}

/// The connection closed without an answer.
struct Dropped;

fn exchange(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Result<Value, String>, Dropped> {
    match send(base, method, path, body) {
        Ok(raw) if raw.is_empty() => Err(Dropped),
        Ok(raw) => Ok(parse(&raw)),
        Err(err) => Ok(Err(err)),
    }
}

fn send(base: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Vec<u8>, String> {
    let authority = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(authority).map_err(|err| err.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .map_err(|err| err.to_string())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|err| err.to_string())?;
    Ok(raw)
}

fn parse(raw: &[u8]) -> Result<Value, String> {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| format!("no HTTP head in {:?}", String::from_utf8_lossy(raw)))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let mut payload = raw[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let value: Value = serde_json::from_slice(&payload).map_err(|err| err.to_string())?;
    let status_ok = head.starts_with("http/1.1 2");
    if status_ok {
        Ok(value["value"].clone())
    } else {
        Err(value["value"].to_string())
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = data.windows(2).position(|window| window == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
    out
}

/// One WebDriver session: the app started by the driver, its one window.
pub(crate) struct Session {
    base: String,
    id: String,
}

impl Session {
    /// Starts `application` through the driver at `base` (waiting for the driver to listen).
    pub(crate) fn start(base: &str, application: &str) -> Session {
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "tauri:options": {"application": application}
        }}});
        let started = Instant::now();
        loop {
            match request(base, "POST", "/session", Some(&capabilities)) {
                Ok(value) => {
                    let id = value["sessionId"].as_str().unwrap().to_owned();
                    return Session {
                        base: base.to_owned(),
                        id,
                    };
                }
                Err(err) if started.elapsed() < PATIENCE => {
                    let _ = err;
                    std::thread::sleep(Duration::from_millis(250));
                }
                Err(err) => panic!("no WebDriver session: {err}"),
            }
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        request(
            &self.base,
            method,
            &format!("/session/{}{path}", self.id),
            body.as_ref(),
        )
    }

    /// Runs `script` (a function body) in the page with `args`.
    pub(crate) fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .unwrap_or_else(|err| panic!("script failed: {err}"))
    }

    fn poll(&self, what: &str, mut check: impl FnMut() -> bool) {
        let started = Instant::now();
        while !check() {
            if started.elapsed() > PATIENCE {
                let page = self.text("body");
                panic!("never showed: {what}\npage:\n{page}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn text(&self, selector: &str) -> String {
        self.script(
            "const el = document.querySelector(arguments[0]); return el ? el.innerText : null",
            json!([selector]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    pub(crate) fn wait_for_text(&self, selector: &str, text: &str) {
        self.poll(&format!("`{text}` in {selector}"), || {
            self.text(selector).contains(text)
        });
    }

    pub(crate) fn wait_for_element(&self, selector: &str) {
        self.wait_for_count(selector, 1);
    }

    pub(crate) fn wait_for_count(&self, selector: &str, count: u64) {
        self.poll(&format!("{count} × {selector}"), || {
            self.script(
                "return document.querySelectorAll(arguments[0]).length",
                json!([selector]),
            )
            .as_u64()
                >= Some(count)
        });
    }

    pub(crate) fn wait_for_attribute(&self, selector: &str, attribute: &str, value: &str) {
        self.poll(&format!("{selector}[{attribute}={value}]"), || {
            self.script(
                "const el = document.querySelector(arguments[0]); \
                 return el ? el.getAttribute(arguments[1]) : null",
                json!([selector, attribute]),
            ) == json!(value)
        });
    }

    /// Clicks the first element `selector` finds, as a user does (WebDriver's element click).
    pub(crate) fn click(&self, selector: &str) {
        let found = self
            .call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": selector})),
            )
            .unwrap_or_else(|err| panic!("no {selector}: {err}"));
        let element = found[ELEMENT].as_str().unwrap().to_owned();
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .unwrap_or_else(|err| panic!("cannot click {selector}: {err}"));
    }

    /// Saves a PNG of the window.
    ///
    /// WebKitGTK takes a screenshot after the page's next paint, and a page with nothing new to
    /// draw does not paint (no compositing under Xvfb): the request would wait for whatever
    /// changes the page next (here: the resumed run's model call failing after five minutes).
    /// So the page gets a reason to paint: a one-pixel mark in its corner, nearly transparent,
    /// redrawn every frame for up to five seconds, removed after the shot.
    pub(crate) fn screenshot(&self, path: &Path) {
        self.script(
            "const mark = document.createElement('div'); mark.id = 'webdriver-paint'; \
             mark.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;\
             pointer-events:none;background:rgba(0,0,0,0.01)'; document.body.append(mark); \
             const until = performance.now() + 5000; let odd = false; \
             const tick = () => { if (!mark.isConnected || performance.now() > until) return; \
             odd = !odd; mark.style.opacity = odd ? '0.5' : '1'; requestAnimationFrame(tick) }; \
             requestAnimationFrame(tick)",
            json!([]),
        );
        let data = self
            .call("GET", "/screenshot", None)
            .unwrap_or_else(|err| panic!("no screenshot: {err}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .unwrap();
        std::fs::write(path, bytes).unwrap();
        self.script(
            "document.getElementById('webdriver-paint')?.remove()",
            json!([]),
        );
    }

    /// Ends the session: the driver closes the app.
    pub(crate) fn quit(self) {
        let _ = self.call("DELETE", "", None);
    }
}
