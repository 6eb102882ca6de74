//! A small WebDriver client (the W3C protocol, JSON over HTTP) for driving Debian's Chromium
//! through ChromeDriver, which the test command starts (`SKILL_TEST_WEBDRIVER_URL`): a session,
//! navigation, elements found by CSS selector, typing, clicking, text, screenshots.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One browser session, ended when dropped.
pub(crate) struct Session {
    http: reqwest::Client,
    base: String,
}

/// An element of the current page.
pub(crate) struct Element<'a> {
    session: &'a Session,
    id: String,
}

impl Session {
    /// A new headless Chromium, `width` × `height`.
    pub(crate) async fn start(width: u32, height: u32) -> Self {
        let driver = std::env::var("SKILL_TEST_WEBDRIVER_URL")
            .expect("SKILL_TEST_WEBDRIVER_URL names a ChromeDriver; `cargo xtask test -p skill-core` starts one");
        let binary = std::env::var("SKILL_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--window-size={width},{height}"),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": binary, "args": args},
        }}});
        let http = reqwest::Client::new();
        let answer: Value = http
            .post(format!("{driver}/session"))
            .json(&capabilities)
            .send()
            .await
            .expect("ChromeDriver answers")
            .json()
            .await
            .expect("JSON");
        let id = answer["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("a session: {answer}")).to_owned();
        Self { http, base: format!("{driver}/session/{id}") }
    }

    /// A command's value, or the driver's error.
    async fn try_command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.expect("ChromeDriver answers").json().await.expect("JSON");
        if answer["value"]["error"].is_null() { Ok(answer["value"].clone()) } else { Err(answer) }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_command(method, path, body).await.unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    pub(crate) async fn open(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }

    pub(crate) async fn url(&self) -> String {
        self.command(reqwest::Method::GET, "/url", None).await.as_str().unwrap_or_default().to_owned()
    }

    /// The elements `selector` matches now.
    pub(crate) async fn all(&self, selector: &str) -> Vec<Element<'_>> {
        let found = self
            .command(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": selector})))
            .await;
        found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|element| element[ELEMENT].as_str())
            .map(|id| Element { session: self, id: id.to_owned() })
            .collect()
    }

    /// The first element `selector` matches, waiting up to 10 s for it.
    pub(crate) async fn find(&self, selector: &str) -> Element<'_> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(element) = self.all(selector).await.into_iter().next() {
                return element;
            }
            assert!(Instant::now() < deadline, "no {selector} on {}", self.url().await);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits up to `seconds` until the text of `selector` satisfies `done`; the last text.
    pub(crate) async fn until_text(&self, selector: &str, seconds: u64, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            // The page may change under the look (a form posted, a live part replaced).
            let text = match self.all(selector).await.first() {
                Some(element) => {
                    let path = format!("/element/{}/text", element.id);
                    let read = self.try_command(reqwest::Method::GET, &path, None).await;
                    read.ok().and_then(|text| text.as_str().map(str::to_owned)).unwrap_or_default()
                }
                None => String::new(),
            };
            if done(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{selector} never became what was wanted: {text}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A PNG of the window, written to `folder/name.png` when `folder` is given.
    pub(crate) async fn screenshot(&self, folder: Option<&str>, name: &str) {
        let Some(folder) = folder else { return };
        let encoded = self.command(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD.decode(encoded.as_str().expect("base64")).expect("a PNG");
        std::fs::write(std::path::Path::new(folder).join(format!("{name}.png")), png).expect("written");
    }

    /// What `script` (the body of a function) returns, run in the page.
    pub(crate) async fn script(&self, script: &str) -> Value {
        self.command(reqwest::Method::POST, "/execute/sync", Some(json!({"script": script, "args": []}))).await
    }

    /// Whether the page fits the window's width: nothing to scroll sideways.
    pub(crate) async fn fits(&self) -> bool {
        self.script("return document.documentElement.scrollWidth <= window.innerWidth;").await == json!(true)
    }

    /// The cookies the browser holds for the page.
    pub(crate) async fn cookies(&self) -> Vec<Value> {
        self.command(reqwest::Method::GET, "/cookie", None).await.as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Ends the browser; a blocking request, as Drop cannot wait for a future.
        let base = self.base.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async { reqwest::Client::new().delete(base).send().await.ok() });
        })
        .join();
    }
}

impl Element<'_> {
    pub(crate) async fn click(&self) {
        self.session.command(reqwest::Method::POST, &format!("/element/{}/click", self.id), Some(json!({}))).await;
    }

    pub(crate) async fn type_text(&self, text: &str) {
        let path = format!("/element/{}/value", self.id);
        self.session.command(reqwest::Method::POST, &path, Some(json!({"text": text}))).await;
    }

    pub(crate) async fn text(&self) -> String {
        let path = format!("/element/{}/text", self.id);
        self.session.command(reqwest::Method::GET, &path, None).await.as_str().unwrap_or_default().to_owned()
    }

    /// A DOM property (`value` of a text box: what it holds now).
    pub(crate) async fn property(&self, name: &str) -> String {
        let path = format!("/element/{}/property/{name}", self.id);
        self.session.command(reqwest::Method::GET, &path, None).await.as_str().unwrap_or_default().to_owned()
    }

    /// Chooses the option of a `select` whose value is `value`.
    pub(crate) async fn choose(&self, value: &str) {
        let selector = format!("option[value='{value}']");
        let found = self
            .session
            .command(
                reqwest::Method::POST,
                &format!("/element/{}/element", self.id),
                Some(json!({"using": "css selector", "value": selector})),
            )
            .await;
        let id = found[ELEMENT].as_str().unwrap_or_else(|| panic!("an option {value}: {found}")).to_owned();
        Element { session: self.session, id }.click().await;
    }
}
